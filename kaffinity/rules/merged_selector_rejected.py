"""merged-selector-rejected: a template the API server accepts, whose every pod it rejects."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kaffinity.expand.merge import pod_labels
from kaffinity.findings import Severity, Violation
from kaffinity.k8s.model.readers import dig
from kaffinity.load.source import format_path
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.context import Context

# Kinds whose controller creates the pods (a PodTemplate creates none; a bare Pod is validated
# with the merge already, and the API server refuses it at `kubectl apply`).
_CREATORS = frozenset(
    ("Deployment", "ReplicaSet", "ReplicationController", "StatefulSet", "DaemonSet", "Job", "CronJob")
)


def _check(context: Context) -> Iterator[Violation]:
    from kaffinity.validate.apiserver import API_VALIDATION, Target, validate

    settings = context.settings
    target = Target(settings.kube_version, dict(settings.feature_gates), settings.proposals)
    for workload in context.inventory.every_workload:
        kind = workload.ref.kind
        if workload.controller not in _CREATORS or not context.expansions.of(workload).applied:
            continue
        template = dig(workload.doc.data, workload.template_path)
        if not isinstance(template, dict):
            continue
        metadata = template.get("metadata")
        # The pod as the controller creates it: the template, with the controller's labels
        # (any valid value stands in for a hash nobody knows yet).
        created: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                **(metadata if isinstance(metadata, dict) else {}),
                "labels": pod_labels(workload, target.version, unknown="0"),
            },
            "spec": template.get("spec"),
        }
        prefix = format_path(workload.template_path) + "."
        accepted = {
            (p.field, p.message)
            for p in validate(workload.doc.data, target, settings.workload_kinds)
            if p.rule == API_VALIDATION
        }
        for problem in validate(created, target):
            field = prefix + problem.field
            if problem.rule != API_VALIDATION or (field, problem.message) in accepted:
                continue
            yield Violation(
                workload.doc,
                (*workload.template_path, *problem.path),
                f"kube-apiserver accepts this {kind} but rejects every pod it creates, once "
                f"matchLabelKeys are merged into the selector: {field}: {problem.message}; the "
                "rollout never progresses (FailedCreate events)",
                fix="remove the key from matchLabelKeys (the labelSelector already selects on it), "
                "or take it out of the labelSelector",
                field=field,
            )


RULE = Rule(
    name="merged-selector-rejected",
    category="expansion",
    severity=Severity.ERROR,
    summary="The template is accepted, but every pod it creates is rejected after the selector merge.",
    check=_check,
    docs="""\
## What it finds
A workload's pod template that passes validation, while the pods its controller creates fail
it: kube-apiserver merges `matchLabelKeys` into the label selector only when a Pod is created
(`podStrategy.PrepareForCreate`), and validates the merged selector then. The usual cause is a
`matchLabelKeys` key that the `labelSelector` already names ("exists in both matchLabelKeys and
labelSelector", `validateMatchLabelKeysAndMismatchLabelKeys` in
`pkg/apis/core/validation/validation.go`): the template is stored as written, each created pod holds
the key twice. kaffinity validates the pod each controller would create (template labels plus the
controller's run-time labels) and reports what the template alone does not show.

For topology spread constraints this applies from 1.34, when the API server merges (gate
`MatchLabelKeysInPodTopologySpreadSelectorMerge`); before, the template itself is rejected
(`api-validation`).

## Why it matters
`kubectl apply` succeeds and the Deployment exists, but its ReplicaSet cannot create a single
pod: `kubectl describe rs` shows `FailedCreate` events, and the rollout waits until its
progress deadline. Nothing in CI catches it without a cluster.

## Example
```yaml
kind: Deployment
...
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - labelSelector:
        matchLabels: {app: web}
      matchLabelKeys: [app]      # pods: "exists in both matchLabelKeys and labelSelector"
      topologyKey: kubernetes.io/hostname
```

## Fix
Remove the key from `matchLabelKeys` (the selector already requires its value) or from the
`labelSelector`.

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/registry/core/pod/strategy.go` (`PrepareForCreate`): the merge happens when a Pod is created,
  never for a template
- `pkg/apis/core/validation/validation.go` (`validateMatchLabelKeysAndMismatchLabelKeys`)
- KEP-3633, kubernetes/enhancements `keps/sig-scheduling/3633-matchlabelkeys-to-podaffinity`,
  "Design Details"
""",
)
