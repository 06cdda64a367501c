"""pdb-no-match: a PodDisruptionBudget whose selector matches no pod in its namespace."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kaffinity.explain.suggest import hint, owner_namespace
from kaffinity.explain.unknown import unknown_pods
from kaffinity.findings import Severity, Violation
from kaffinity.graph.members import RELATION_PDB, selector_text
from kaffinity.k8s.compact import MODEL_FIELDS
from kaffinity.rules.base import Rule
from kaffinity.validate.apiserver import budget_refused

if TYPE_CHECKING:
    from kaffinity.context import Context

_UNPROTECTED = (
    "evictions (kubectl drain, node upgrades, the cluster autoscaler) are not limited by it, so the pods "
    "it was meant to cover are unprotected"
)


def _check(context: Context) -> Iterator[Violation]:
    graph = context.graph
    cluster = context.cluster
    nobody = "no workload or existing pod" if cluster is not None and cluster.has_pods else "no workload"
    version = context.settings.kube_version
    for node, pdb in graph.pdbs.items():
        if budget_refused(pdb.doc.data, version):
            continue  # the API server refuses it (api-validation): it selects nothing
        for relation in graph.terms(node, RELATION_PDB):
            if relation.reach:
                continue
            namespace = owner_namespace(graph, relation)
            if pdb.selector is not None and unknown_pods(context, relation) is not None:
                continue  # pods the input does not show (a fragment's, an operator's) might match
            if pdb.selector is None:
                # policy/v1: "A null selector selects no objects" (PodDisruptionBudgetSpec); `{}` selects
                # the whole namespace, which the graph counts as a match.
                yield Violation(
                    pdb.doc,
                    ("spec",),
                    f"PodDisruptionBudget has no selector, and a null selector selects no pods (policy/v1); "
                    f"{_UNPROTECTED}",
                    fix="add spec.selector with the labels of the pods to protect "
                    "(selector: {} selects every pod of the namespace)",
                )
                continue
            suggestion, related = hint(graph, relation)
            fix = "point the selector at the labels the pods to protect really carry"
            if suggestion:
                fix = f"{suggestion} Otherwise {fix}"
            yield Violation(
                pdb.doc,
                relation.path,
                f"PodDisruptionBudget selects no pod: {nobody} in namespace {namespace} has "
                f"{selector_text(relation.selector)}; {_UNPROTECTED}",
                related=related,
                fix=fix,
            )


RULE = Rule(
    name="pdb-no-match",
    category="graph",
    severity=Severity.WARNING,
    summary="A PodDisruptionBudget whose selector matches no pod in its namespace: nothing is protected.",
    check=_check,
    needs_all_manifests=True,
    docs="""\
## What it finds
A PodDisruptionBudget whose `spec.selector` matches no workload's pods in the budget's namespace
and no existing pod of the cluster file; or one without `spec.selector` (policy/v1: a null
selector selects no pods, while `selector: {}` selects every pod of the namespace).

It stays quiet, when the input is not declared complete (`--closed`, or a cluster file listing
the running pods), if the input has no pods of the budget's namespace at all (the workload is
deployed from elsewhere) and no workload elsewhere carries the labels; and always when a workload
of the namespace has no pod labels (a kustomize fragment) or a custom resource there looks like
it makes an operator run pods (prometheus-operator's `Prometheus`). policy/v1beta1 (removed in
1.25) selected nothing with `selector: {}`; kaffinity reads every budget as policy/v1.

When the selector nearly matches labels that exist in the namespace (the same value under
another key, `app: zk` vs `app.kubernetes.io/name: zk`; the same key with a close value), the
hint says which workload has them; pods that match but run in another namespace are named too.

## Why it matters
The eviction API consults the budgets whose selector matches the pod being evicted
(`pkg/registry/core/pod/storage/eviction.go`). A budget that matches nothing never refuses an
eviction: `kubectl drain`, node upgrades and the cluster autoscaler may take down every replica of
the application it was written for at once, while the budget's mere presence suggests the
application is protected. Its status shows `expectedPods: 0`, which nobody looks at.

## Example
```yaml
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: zk-pdb, namespace: shop}
spec:
  maxUnavailable: 1
  selector:
    matchLabels: {app: zk}     # the StatefulSet's pods carry app.kubernetes.io/name: zk
```

## Fix
Point the selector at the labels the pods really carry (the hint names near misses). If the
workload is deployed from another repository, lint them together (`context:`).

## References
Paths without a repository name are in kubernetes/kubernetes.

- kubernetes/api `policy/v1/types.go` (`PodDisruptionBudgetSpec.Selector`): null selects no pod,
  `{}` every pod of the namespace
- `pkg/registry/core/pod/storage/eviction.go`: the budgets an eviction consults
- `pkg/controller/disruption/disruption.go` (`getExpectedPodCount`): the budget's `expectedPods`
""",
    reads=MODEL_FIELDS,
)
