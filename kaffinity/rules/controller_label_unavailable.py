"""controller-label-unavailable: a run-time controller label that this workload's pods never get."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kaffinity.expand.merge import UNAVAILABLE, instead
from kaffinity.explain.wording import lost
from kaffinity.findings import Severity, Violation
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.context import Context


def _check(context: Context) -> Iterator[Violation]:
    for workload in context.inventory.every_workload:
        kind = workload.ref.kind
        for term in context.expansions.of(workload).terms:
            for use in term.ignored:
                if use.ignored != UNAVAILABLE:
                    continue
                other = instead(use.key, kind)
                if other is not None:
                    fix = f"use '{other}', which the {kind} controller sets to one value per revision"
                else:
                    fix = f"remove '{use.key}', or add a label of your own to the pod template and name it"
                yield Violation(
                    workload.doc,
                    (*term.path, use.field, use.index),
                    f"the pods of this {kind} never carry '{use.key}' ({use.reason}): kube-apiserver "
                    f"ignores the key, so {lost(term, use)}",
                    fix=fix,
                )


RULE = Rule(
    name="controller-label-unavailable",
    category="expansion",
    severity=Severity.WARNING,
    summary="A controller's run-time label that this workload's controller never sets.",
    check=_check,
    docs="""\
## What it finds
A `matchLabelKeys` / `mismatchLabelKeys` key that is a label some controller adds at run time,
used by a workload whose controller does not add it:

| label | set on the pods of |
|---|---|
| `pod-template-hash` | Deployments (the Deployment controller, per ReplicaSet) |
| `controller-revision-hash` | StatefulSets, DaemonSets (per ControllerRevision) |
| `pod-template-generation` | DaemonSets (deprecated) |
| `statefulset.kubernetes.io/pod-name` | StatefulSets (per pod) |
| `apps.kubernetes.io/pod-index` | StatefulSets, from 1.28 (PodIndexLabel) |
| `batch.kubernetes.io/job-name`, `…/controller-uid` | Jobs and CronJob Jobs, 1.27+, no `manualSelector` |
| `job-name`, `controller-uid` | the same, older names |
| `batch.kubernetes.io/job-completion-index` | Indexed Jobs, from 1.28 |

(Sources: the Deployment, StatefulSet, DaemonSet and Job controllers; the Job strategy's
`generateSelector` in kube-apiserver.) Bare Pods, ReplicaSets and ReplicationControllers get none.

Workloads of custom resources get what their own controller sets (docs/workloads.md): an Argo
Rollout's pods carry `rollouts-pod-template-hash` (not `pod-template-hash`); an OpenKruise
CloneSet's `controller-revision-hash`, `pod-template-hash` and `apps.kruise.io/cloneset-instance-id`;
an Advanced StatefulSet's `controller-revision-hash` and `statefulset.kubernetes.io/pod-name`; a
KEDA ScaledJob's pods the Job labels.

## Why it matters
`matchLabelKeys: [pod-template-hash]` is the well-known fix for rolling updates of Deployments
(KEP-3633 story 1, KEP-3243); copied into a StatefulSet or DaemonSet it does nothing, because
their pods carry `controller-revision-hash` instead. The API server ignores the key silently and
the term goes on counting every revision.

## Example
```yaml
kind: StatefulSet
...
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
    labelSelector: {matchLabels: {app: db}}
    matchLabelKeys: [pod-template-hash]    # StatefulSet pods have controller-revision-hash
```

## Fix
Use the label the workload's controller sets (`controller-revision-hash` for StatefulSets and
DaemonSets, `pod-template-hash` for Deployments, `rollouts-pod-template-hash` for Argo Rollouts),
or remove the key.

## References
Paths without a repository name are in kubernetes/kubernetes.

- kubernetes/api `apps/v1/types.go` (`DefaultDeploymentUniqueLabelKey`,
  `ControllerRevisionHashLabelKey`, `StatefulSetPodNameLabel`, `PodIndexLabel`) and
  `batch/v1/types.go` (`JobNameLabel`, `ControllerUidLabel`)
- `pkg/registry/batch/job/strategy.go` (`generateSelector`)
- https://kubernetes.io/docs/reference/labels-annotations-taints/
""",
)
