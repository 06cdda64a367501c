"""needs-preemption: pods that run on the declared cluster only by evicting lower-priority pods."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kaffinity.explain.wording import name_list
from kaffinity.findings import Related, Severity, Violation
from kaffinity.k8s.compact import MODEL_FIELDS
from kaffinity.k8s.model.readers import dig
from kaffinity.load.source import DataPath
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.context import Context
    from kaffinity.k8s.model import Workload

#: Victims shown in the message and as related positions.
_SHOWN = 5


def _priority_path(workload: Workload) -> DataPath:
    """Where the pod template says its priority: ``priorityClassName`` or ``priority``."""
    for field in ("priorityClassName", "priority"):
        path = (*workload.pod.spec_path, field)
        if dig(workload.doc.data, path) is not None:
            return path
    return workload.pod.spec_path


def _check(context: Context) -> Iterator[Violation]:
    run = context.placement
    if run is None:
        return
    for workload in run.queue:
        preempting = [p for p in run.by_workload.get(id(workload), ()) if p.victims]
        if not preempting:
            continue
        victims = [(victim, node) for placement in preempting for victim, node in placement.victims]
        pods = name_list(placement.pod.name for placement in preempting)
        evicted = name_list(
            (
                f"{victim.namespace}/{victim.name} (priority {victim.constraints.priority}) on {node.name}"
                for victim, node in victims
            ),
            shown=_SHOWN,
        )
        priority = preempting[0].pod.constraints.priority
        verb = "runs" if len(preempting) == 1 else "run"
        related = tuple(
            Related(
                victim.workload.doc,
                victim.workload.pod.metadata_path,
                f"evicted by preemption from {node.name}",
            )
            for victim, node in victims[:_SHOWN]
        )
        yield Violation(
            workload.doc,
            _priority_path(workload),
            f"{pods} {verb} only by preempting lower-priority pods (its priority {priority}): the scheduler "
            f"evicts {evicted}",
            related=related,
            fix="add nodes (or let an autoscaler add them) so that no pod has to be evicted; or lower the "
            "requests; if evicting them is intended, suppress this finding",
        )


RULE = Rule(
    name="needs-preemption",
    category="topology",
    severity=Severity.WARNING,
    summary="Pods run on the declared cluster only by preempting lower-priority pods.",
    check=_check,
    needs_all_manifests=True,
    needs_cluster=True,
    docs="""\
## What it finds
A workload whose pods no node of the declared cluster (`--cluster`) takes as it stands, but that
the scheduler places by **preemption**: on a node where evicting pods of lower priority makes room
(DefaultPreemption, `pkg/scheduler/framework/plugins/defaultpreemption`). The message names the
pods evicted, their priorities and their nodes.

kaffinity chooses the node and the victims as upstream does (`SelectVictimsOnNode`,
`pickOneNodeForPreemption`): only nodes whose failure removing pods can change; every pod of
lower priority removed, then put back, the most important first and those a PodDisruptionBudget
protects before the others, while the pod still fits; then the node with the fewest budget
violations, the lowest highest victim priority, the smallest priority sum, the fewest victims,
the latest start. A pod with `preemptionPolicy: Never` never preempts, and pods of equal priority
never preempt each other: those stay Pending and `unschedulable` reports them.

## Why it matters
The workload runs, at the cost of other pods: batch jobs restarted, a lower-priority service
evicted and perhaps left Pending itself. On a cluster sized for everything, preemption is a sign
that it is not: a warning, not an error, because this is what priorities are for.

## Example
```yaml
# cluster: two nodes of 4 cpu, each running a 3-cpu batch pod of priority 0
kind: Deployment
spec:
  template:
    spec:
      priorityClassName: business-critical   # value 100000
      containers:
        - resources: {requests: {cpu: "2"}}   # fits only where a batch pod goes
```

## Fix
Give the cluster room (more nodes, or an autoscaling pool with `max`), lower the requests, or,
when the eviction is intended, suppress the finding.

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go`
- https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/
""",
    reads=MODEL_FIELDS,
)
