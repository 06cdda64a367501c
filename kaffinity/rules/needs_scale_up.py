"""needs-scale-up: pods that fit on the declared cluster only once an autoscaler adds nodes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kaffinity.explain.wording import name_list, pool_nodes
from kaffinity.findings import Related, Severity, Violation
from kaffinity.k8s.compact import MODEL_FIELDS
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.context import Context
    from kaffinity.simulate.cluster import Pool


def _may_grow(pool: Pool) -> str:
    """What the finding says of a pool that grew, with what is assumed of its new nodes."""
    if pool.max is not None:
        return f"{pool.word} may grow (max {pool.max})"
    if pool.allocatable is None:
        # No node of the pool to take the size from, and no instance-type catalogue offline.
        limits = (
            " (its limits count, for each new node, the requests of the pod it is added for)"
            if pool.limits
            else ""
        )
        return (
            f"{pool.word} may grow; it has no node yet, so the size of a new one is not known: kaffinity "
            f"assumes an instance type that takes the pods{limits}"
        )
    return f"{pool.word} may grow"


def _check(context: Context) -> Iterator[Violation]:
    from kaffinity.explain.pending_words import replicas_field

    run = context.placement
    if run is None:
        return
    for workload in run.queue:
        grown = [p for p in run.by_workload.get(id(workload), ()) if p.added is not None]
        if not grown:
            continue
        pools = [placement.added[1] for placement in grown if placement.added is not None]
        pods = name_list(placement.pod.name for placement in grown)
        verb = "fits" if len(grown) == 1 else "fit"
        related = tuple(
            Related(pool.doc, pool.path, _may_grow(pool))
            for pool in {pool.word: pool for pool in pools}.values()
        )
        yield Violation(
            workload.doc,
            replicas_field(workload) or workload.pod.spec_path,
            f"{pods} {verb} on no node the cluster has now: it needs {pool_nodes(pools, more=True)}, "
            "which the autoscaler adds (the pods stay Pending until the new nodes are ready, typically "
            "minutes)",
            related=related,
            fix="nothing, if scaling up is intended; else give the cluster room, or lower the replicas "
            "or requests",
        )
    yield from _rollouts(context)


def _rollouts(context: Context) -> Iterator[Violation]:
    """Rolling updates that finish only because the autoscaler adds nodes for their new pods
    (a surge pod that fits nowhere gets its node before the controller removes an old pod):
    information, at the update strategy. A rollout that stops is rollout-deadlock's."""
    from kaffinity.k8s.model.readers import dig
    from kaffinity.simulate.rollout.simulation import outcomes

    run = context.placement
    assert run is not None
    settings = context.settings
    workloads = context.inventory.workloads
    found = outcomes(run, workloads, version=settings.kube_version, gates=dict(settings.feature_gates))
    for workload in workloads:
        outcome = found[id(workload)]
        if outcome.deadlock is not None or not outcome.grown:
            continue
        pools = [pool for _, pool in outcome.grown]
        strategy = workload.strategy
        path = (
            strategy.path
            if strategy is not None and dig(workload.doc.data, strategy.path) is not None
            else ("spec",)
        )
        yield Violation(
            workload.doc,
            path,
            f"its rolling update finishes only once the autoscaler adds {pool_nodes(pools)} for its new pods "
            "(they wait Pending for the new nodes, typically minutes)",
            related=tuple(
                Related(pool.doc, pool.path, _may_grow(pool))
                for pool in {pool.word: pool for pool in pools}.values()
            ),
            fix="nothing, if that is intended; else leave room for the new pods, or roll out with "
            "maxSurge: 0",
        )


RULE = Rule(
    name="needs-scale-up",
    category="topology",
    severity=Severity.INFO,
    summary="Pods fit only once an autoscaler adds nodes to a pool that may grow.",
    check=_check,
    needs_all_manifests=True,
    needs_cluster=True,
    docs="""\
## What it finds
A workload whose pods no current node of the declared cluster takes, but a node that an
autoscaler would add does: a `ClusterTopology` pool with `max` above `count` (a
cluster-autoscaler node group), or a Karpenter `NodePool` (`karpenter.sh/v1`) within its
`limits`. kaffinity adds the node as they would -- one at a time, for a pod that fits nowhere
and that preemption cannot place, with the DaemonSet pods that run on it, never past `max`, the
NodePool limits or `limits: nodes` -- and names how many nodes of which pool it took. A NodePool
with no node yet grows too (its limits count the nodes it has: none); the size of its new node is
then not known, and the finding says what is assumed (docs/cluster.md, "Autoscaling pools").

It also reports, at the update strategy, a rolling update that finishes only because the
autoscaler adds nodes for its new pods: a surge pod that fits nowhere gets its node as soon as it
is created, before the controller removes an old pod. A rollout that stops is `rollout-deadlock`'s.

## Why it matters
Nothing is wrong: this is what autoscaling is for. But the pods wait for a new node (minutes),
and a rollout that needs one is only as fast as the cloud provider. The finding is information;
when the pool is at its max, the pods stay Pending and `unschedulable`, `rollout-deadlock` or
the other topology rules report them, saying that the autoscaler cannot help.

## Example
```yaml
# cluster: pool general, count 3, max 6
kind: Deployment
spec:
  replicas: 5      # one per node (hostname anti-affinity): 2 more nodes
```

## Fix
None needed. To keep the pods off a scale-up, give the cluster room or lower the replicas.

## References
- kubernetes/autoscaler `cluster-autoscaler/FAQ.md`, "How does scale-up work?"
- kubernetes-sigs/karpenter `pkg/apis/v1/nodepool.go` (`NodePool`, `limits`)
""",
    reads=MODEL_FIELDS,
)
