"""rollout-deadlock: a rolling update that can never finish on the declared cluster.

The rollout is simulated by :mod:`kaffinity.simulate.rollout` (the Deployment, StatefulSet and DaemonSet
controllers' steps, the offline scheduler for every new pod) from the placed state
(``Context.placement``); the rule reports a workload whose rollout reaches a state where no step
can make progress: a new pod stays Pending, and the controller will not remove an old pod (or
create another new one) while it waits. Without a declared cluster, or with ``--no-simulate``,
there is no placed state and the rule stays quiet (``revision-unscoped`` still warns about the
pattern without a cluster).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from kaffinity.findings import Related, Severity, Violation
from kaffinity.k8s.compact import MODEL_FIELDS
from kaffinity.k8s.model import PodAffinityTerm, TopologySpreadConstraint
from kaffinity.k8s.model.readers import dig
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.context import Context
    from kaffinity.simulate.place import PlacementRun
    from kaffinity.simulate.rollout.session import Blocker, Deadlock

#: How many names a list in a message shows before "and N more".
_NAMED = 4
#: The label each controller sets per revision (what matchLabelKeys should name).
_REVISION_LABEL = {
    "Deployment": "pod-template-hash",
    "StatefulSet": "controller-revision-hash",
    "DaemonSet": "controller-revision-hash",
}


def _names(names: Sequence[str]) -> str:
    shown = list(names[:_NAMED])
    if len(names) > _NAMED:
        shown.append(f"{len(names) - _NAMED} more")
    if len(shown) <= 1:
        return "".join(shown)
    return ", ".join(shown[:-1]) + " and " + shown[-1]


def _holder(blocker: Blocker) -> str:
    ref = blocker.holder.ref
    if ref.kind == "Pod":
        return f"pod {ref.namespace}/{ref.name}"
    return str(ref)


def _pods(blocker: Blocker, relation: str) -> list[str]:
    return sorted(name for name, rel in blocker.pods.items() if rel == relation)


def _because(blocker: Blocker) -> str:
    from kaffinity.simulate.rollout.session import (
        BLOCKER_AFFINITY,
        BLOCKER_ANTI,
        BLOCKER_EXISTING_ANTI,
        BLOCKER_SPREAD,
    )

    nodes = _names(blocker.nodes)
    if blocker.kind in (BLOCKER_ANTI, BLOCKER_EXISTING_ANTI):
        seen = []
        if _pods(blocker, "old"):
            seen.append("the old revision's pods")
        if _pods(blocker, "new"):
            seen.append("the new revision's pods already placed")
        other = _pods(blocker, "other")
        if other:
            seen.append(("pod " if len(other) == 1 else "pods ") + _names(other))
        what = " and ".join(seen) or "pods"
        verb = "runs" if len(blocker.pods) == 1 else "run"
        if blocker.kind == BLOCKER_ANTI:
            return (
                f"its required pod anti-affinity term ({_term_text(blocker)}) keeps it away from {what}, "
                f"which {verb} on {nodes}"
            )
        old = _pods(blocker, "old")
        if old and len(old) == len(blocker.pods):
            noun, verb = ("pod", "was") if len(old) == 1 else ("pods", "were")
            return (
                f"the old revision's {noun} {_names(old)} {verb} created with required pod anti-affinity "
                f"that selects it, which keeps it off {nodes}"
            )
        return f"the required pod anti-affinity of {_holder(blocker)} selects it and keeps it off {nodes}"
    if blocker.kind == BLOCKER_AFFINITY:
        return f"its required pod affinity term ({_term_text(blocker)}) finds no pod it selects near {nodes}"
    if blocker.kind == BLOCKER_SPREAD:
        return f"its DoNotSchedule topology spread constraint would exceed maxSkew on {nodes}"
    reasons = ", ".join(sorted(blocker.reasons))
    return f"its resource requests do not fit beside the pods already on {nodes} ({reasons})"


def _term_text(blocker: Blocker) -> str:
    term = _term(blocker)
    if isinstance(term, PodAffinityTerm):
        keys = f", matchLabelKeys {list(term.match_label_keys)}" if term.match_label_keys else ""
        return f"topologyKey {term.topology_key}{keys}"
    return "this term"


def _term(blocker: Blocker) -> PodAffinityTerm | TopologySpreadConstraint | None:
    pod = blocker.holder.pod
    affinity = pod.affinity
    groups: list[PodAffinityTerm] = []
    if affinity is not None:
        for group in (affinity.pod_affinity, affinity.pod_anti_affinity):
            if group is not None:
                groups.extend(group.required)
    for term in groups:
        if term.path == blocker.path:
            return term
    for constraint in pod.topology_spread_constraints:
        if constraint.path == blocker.path:
            return constraint
    return None


def _primary(deadlock: Deadlock) -> Blocker | None:
    """The rolled workload's own rule that blocks (where the finding goes): a term, else its
    resource requests; None when only other workloads' rules block."""
    from kaffinity.simulate.rollout.session import BLOCKER_AFFINITY, BLOCKER_ANTI, BLOCKER_SPREAD

    own = [blocker for blocker in deadlock.blockers if blocker.holder is deadlock.workload]
    for blocker in own:
        if blocker.kind in (BLOCKER_ANTI, BLOCKER_AFFINITY, BLOCKER_SPREAD):
            return blocker
    return own[0] if own else None


def _scope_hint(
    run: PlacementRun, deadlock: Deadlock, primary: Blocker, label: str, version: str, gates: dict[str, bool]
) -> str | None:
    """matchLabelKeys on the blocking term, if the simulation shows it helps.

    The old pods keep the term they were created with: the rollout that adds the key still has
    them select (and repel) the new pods by symmetry. So two rollouts are simulated: later ones
    (old and new pods both scoped) and the one that adds the key, as is or in place.
    """
    from kaffinity.k8s.fenceposts import Budget
    from kaffinity.simulate.rollout.simulation import scoped, simulate

    workload = deadlock.workload
    copy = scoped(run.sim, workload, primary.path, label)
    if copy is None:
        return None
    if simulate(run, workload, version=version, gates=gates, template=copy, settled=True) is not None:
        return None
    add = f'add "matchLabelKeys: [{label}]" to this term, so that new pods keep away from new pods only'
    if simulate(run, workload, version=version, gates=gates, template=copy) is None:
        return f"{add} (simulated: the rollout then completes)"
    in_place = Budget(0, 1, "maxSurge 0, maxUnavailable 1")
    if simulate(run, workload, version=version, gates=gates, template=copy, budget=in_place) is None:
        return (
            f"{add} (simulated: later rollouts then complete); the running pods keep the term they were "
            "created with, so the rollout that adds it must itself replace pods in place (maxSurge: 0, "
            "maxUnavailable: 1)"
        )
    return (
        f"{add} (simulated: later rollouts then complete); the running pods keep the term they were created "
        "with, so the rollout that adds it needs an old pod deleted by hand"
    )


def _fix(
    run: PlacementRun, deadlock: Deadlock, primary: Blocker | None, version: str, gates: dict[str, bool]
) -> str:
    """Changes that the simulation shows complete the rollout; a generic hint if none does."""
    from kaffinity.k8s.fenceposts import Budget
    from kaffinity.simulate.rollout.session import BLOCKER_ANTI, BLOCKER_RESOURCES
    from kaffinity.simulate.rollout.simulation import simulate

    workload = deadlock.workload
    kind = workload.ref.kind
    label = _REVISION_LABEL[kind]
    hints = []
    tried = []
    if kind in ("Deployment", "DaemonSet") and deadlock.budget.surge > 0:
        budget = Budget(0, 1, "maxSurge 0, maxUnavailable 1")
        if simulate(run, workload, version=version, gates=gates, budget=budget) is None:
            hints.append(
                "roll out with maxSurge: 0 and maxUnavailable: 1 (simulated: the rollout then completes)"
            )
        tried.append("replacing pods in place (maxSurge: 0, maxUnavailable: 1)")
    if (
        primary is not None
        and primary.kind == BLOCKER_ANTI
        and _pods(primary, "old")
        and kind != "StatefulSet"
    ):
        hint = _scope_hint(run, deadlock, primary, label, version, gates)
        if hint:
            hints.append(hint)
        tried.append(f"matchLabelKeys: [{label}]")
    if hints:
        return "; or ".join(hints)
    if any(b.kind == BLOCKER_RESOURCES for b in deadlock.blockers):
        hint = "leave room on a node for the replacement pod (or lower its requests)"
    else:
        hint = "relax the rule that keeps the new pod off every node, or add a node it may use"
    if tried:
        hint += (
            f" (simulated: {' or '.join(tried)} would not let this rollout complete on the declared cluster)"
        )
    return hint


def _message(deadlock: Deadlock) -> str:
    summary = deadlock.placement.summary(deadlock.nodes)
    from kaffinity.simulate.plugins.nodeports import REASON_PORTS

    reasons = [_because(b) for b in deadlock.blockers]
    ports = deadlock.pod.constraints.ports
    if not reasons and ports and REASON_PORTS in (deadlock.placement.reasons or ()):
        # NodePorts: one pod per node and host port, and the old pods hold them.
        taken = sorted({f"{protocol} {port}" for protocol, _, port in ports})
        reasons = [
            f"pods already hold its host port{'s' if len(taken) > 1 else ''} {', '.join(taken)} on the nodes"
        ]
    because = "; ".join(reasons) if reasons else "no node passes the scheduler's filters"
    if deadlock.no_scale_up:
        because += f" (the autoscaler cannot help: {deadlock.no_scale_up})"
    after = f" (after {deadlock.progress})" if deadlock.progress else ""
    return (
        f"the rolling update can never finish{after}: {deadlock.pod_name} stays Pending ({summary}) because "
        f"{because}; {deadlock.wait}"
    )


def _related(deadlock: Deadlock, primary: Blocker | None, run: PlacementRun) -> tuple[Related, ...]:
    workload = deadlock.workload
    related: list[Related] = []
    strategy = workload.strategy
    if strategy is not None:
        path = strategy.path if dig(workload.doc.data, strategy.path) is not None else ("spec",)
        related.append(Related(workload.doc, path, f"update strategy: {deadlock.budget.text}"))
    for blocker in deadlock.blockers:
        if blocker is primary:
            continue
        related.append(Related(blocker.doc, blocker.path, _because(blocker)))
    seen: set[tuple[int, tuple[object, ...]]] = set()
    for name in deadlock.old_nodes:
        node = run.sim.by_name[name].node
        key = (id(node.doc), tuple(node.path))
        if key in seen or len(seen) >= _NAMED:
            continue
        seen.add(key)
        related.append(Related(node.doc, node.path, f"node {name} runs an old pod"))
    return tuple(related)


def _check(context: Context) -> Iterator[Violation]:
    run = context.placement
    if run is None:
        return
    from kaffinity.simulate.rollout.simulation import outcomes

    settings = context.settings
    gates = dict(settings.feature_gates)
    found = outcomes(run, context.inventory.workloads, version=settings.kube_version, gates=gates)
    for workload in context.inventory.workloads:
        # A rollout that finishes once the autoscaler adds nodes is needs-scale-up's (info).
        deadlock = found[id(workload)].deadlock
        if deadlock is None:
            continue
        primary = _primary(deadlock)
        path = primary.path if primary is not None else ("spec",)
        if (
            primary is None
            and workload.strategy is not None
            and dig(workload.doc.data, workload.strategy.path)
        ):
            path = workload.strategy.path
        yield Violation(
            workload.doc,
            path,
            _message(deadlock),
            related=_related(deadlock, primary, run),
            fix=_fix(run, deadlock, primary, settings.kube_version, gates),
        )


RULE = Rule(
    name="rollout-deadlock",
    category="rollout",
    severity=Severity.ERROR,
    summary="A rolling update that can never finish on the declared cluster: a new pod stays Pending.",
    check=_check,
    needs_all_manifests=True,
    needs_cluster=True,
    docs="""\
## What it finds
With a declared cluster (`--cluster`), kaffinity places every pod, then rolls each Deployment,
StatefulSet and DaemonSet with the `RollingUpdate` strategy out to a new revision, one workload
at a time, replaying its controller's steps with the offline scheduler placing every new pod.
The new pods carry a new `pod-template-hash` / `controller-revision-hash`, so
`matchLabelKeys` scoping works as in the cluster. It reports a workload whose rollout reaches a
state where nothing can move: a new pod stays Pending and the controller will not remove an old
pod (or create another new one) while it waits. The message names the new pod, the scheduler's
event text, the rule that keeps it off each node (the term, reported at its line, or another
workload's term or an existing pod's, as a related location), the nodes, and why the
controller waits.

The controllers, as upstream implements them (`kaffinity/simulate/rollout/` has the details):

- **Deployment** (`pkg/controller/deployment/rolling.go`): `maxSurge` / `maxUnavailable`
  (default 25% each) are resolved as `ResolveFenceposts`: surge rounded up, unavailable rounded
  down, unavailable 1 if both are 0. New pods are created up to `replicas + maxSurge` pods in
  all; old pods are removed while more than `replicas - maxUnavailable` pods are available, a
  Pending new pod counting as unavailable. The old pod removed first is the one the ReplicaSet
  controller ranks first (unassigned, lower `pod-deletion-cost`, more pods of the Deployment on
  its node, newer).
- **StatefulSet** (`stateful_set_control.go`): from the highest ordinal down to `partition`, one
  pod deleted and recreated at a time, each waited for; `maxUnavailable` pods at once only when
  the `MaxUnavailableStatefulSet` gate is on at the target version (beta, on from 1.35) and
  `podManagementPolicy: Parallel`.
- **DaemonSet** (`pkg/controller/daemon/update.go`): with `maxSurge`, the new pod is created on
  the node beside the old one, which is deleted once the new one is available; otherwise up to
  `maxUnavailable` old pods (rounded up) are deleted and replaced.

`Recreate` and `OnDelete` cannot deadlock this way, and a paused Deployment does not roll out.
A placed pod is taken to be Ready at once, and a deleted pod to be gone at once.

It stays quiet, so that each problem is reported once, where it starts:

- without a declared cluster, or with `--no-simulate` (`revision-unscoped` still points at the
  pattern);
- for a workload whose pods do not all run before the update: that is the first problem
  (`unschedulable`, `anti-affinity-exceeds-domains`; kubernetes/kubernetes#121388, 7 replicas one
  per node on 3 nodes, is one), and a rollout stalled by it only a consequence;
- when no node could ever take the new pod (taints, node affinity, cordons on every node:
  `no-eligible-node`), whatever the rollout does;
- when the new pod only lacks room and the placed state already leaves pods Pending for want of
  room: the cluster is over capacity before any update.

On a cluster with pools that may grow (a `ClusterTopology` pool with `max`, a Karpenter
`NodePool`), a new pod that fits nowhere gets a node from the autoscaler as soon as it is
created, before the controller removes an old pod, as in the cluster: the rollout then finishes,
and `needs-scale-up` says so (information); a deadlock at a pool's max says that the autoscaler
cannot help.

## Why it matters
The Deployment never finishes: `kubectl rollout status` hangs, the Progressing condition turns
`ProgressDeadlineExceeded`, and nothing rolls back by itself. The classic case
(kubernetes/kubernetes issues #56539 and #116891; the argo-cd HA install, whose
`argocd-redis-ha-haproxy` has 3 replicas and required hostname anti-affinity, on its minimum of 3
nodes; redis-ha chart issues 6 and 249): one pod per node through required anti-affinity on the
app's own label, as many replicas as eligible nodes, and `maxUnavailable` that resolves to 0 (25%
of 3 rounds down). The surge pod must keep away from the old pods too, every node has one, and the
controller removes none of them until the surge pod is available.

Running pods keep the scheduling terms they were created with, and a running pod's required
anti-affinity also keeps matching newcomers away (symmetry, "didn't satisfy existing pods
anti-affinity rules"): a new revision that drops the term, or adds `matchLabelKeys`, still meets
the old pods' term during the rollout that introduces it (kubernetes/kubernetes#103584). With a
cluster file listing the running pods, the old revision is those pods as they are. The same
stall happens with a DaemonSet `maxSurge` whose new pod cannot sit beside the old one, when the
surge pod finds no node with room for its requests, and when a StatefulSet's recreated pod fits
nowhere (kubernetes/kubernetes#67250: reverting the template does not unblock it).

## Example
```yaml
kind: Deployment
spec:
  replicas: 3                       # 3 eligible nodes
  # strategy defaults: maxSurge 25% -> 1, maxUnavailable 25% -> 0
  template:
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: web}}
              topologyKey: kubernetes.io/hostname     # old pods block the new one
```

## Fix
The hint lists the changes the simulation shows to complete the rollout on the declared cluster:
replacing pods in place (`maxSurge: 0`, `maxUnavailable: 1`), and `matchLabelKeys:
[pod-template-hash]` on the term (KEP-3633; 1.31+, or 1.29 with the gate; for a DaemonSet
`controller-revision-hash`): each revision then keeps away from its own pods only, and the surge
pod may share a node with an old one if that node has room for both. As the running pods keep
their unscoped term, the rollout that adds the key may itself need to replace pods in place; the
hint says so. When neither helps (more replicas than nodes their rule allows, no room), relax
the rule or add capacity.

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/controller/deployment/rolling.go` and `pkg/controller/deployment/util/deployment_util.go`
  (`ResolveFenceposts`): maxSurge and maxUnavailable
- `pkg/controller/statefulset/stateful_set_control.go` and `pkg/controller/daemon/update.go`
- KEP-3633, kubernetes/enhancements `keps/sig-scheduling/3633-matchlabelkeys-to-podaffinity`,
  "Motivation"
""",
    reads=MODEL_FIELDS,
)
