"""preferred-no-match: a preferred pod (anti-)affinity term that matches no pod and does nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kaffinity.explain.own_terms import silent_terms
from kaffinity.findings import Severity, Violation
from kaffinity.graph.members import RELATION_AFFINITY, RELATION_ANTI_AFFINITY, Relation
from kaffinity.k8s.compact import MODEL_FIELDS
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.context import Context


RULE_NAME = "preferred-no-match"


def _describe(relation: Relation) -> tuple[str, str]:
    kind = "affinity" if relation.kind == RELATION_AFFINITY else "anti-affinity"
    weight = f" (weight {relation.weight})" if relation.weight is not None else ""
    return f"preferred pod {kind}{weight}", "the term never changes a node's score and does nothing"


def _check(context: Context) -> Iterator[Violation]:
    return silent_terms(
        context,
        required=False,
        kinds=(RELATION_AFFINITY, RELATION_ANTI_AFFINITY),
        describe=_describe,
        rule=RULE_NAME,
    )


RULE = Rule(
    name=RULE_NAME,
    category="graph",
    severity=Severity.INFO,
    summary="A preferred pod (anti-)affinity term that matches no pod, not even its own: it does nothing.",
    check=_check,
    needs_all_manifests=True,
    docs="""\
## What it finds
A preferred pod affinity or anti-affinity term
(`preferredDuringSchedulingIgnoredDuringExecution[].podAffinityTerm`) whose selector, as the API
server merges it with `matchLabelKeys`, matches no workload's pods in the term's namespaces (not
even the workload's own) and no existing pod of the cluster file, when it looks like a mistake:

- the selector nearly matches labels that exist in the term's namespaces (the same value under
  another key, `app: zk` vs `app.kubernetes.io/name: zk`; the same key with a close value); the
  hint says which workload has them;
- the labels are on a workload object (`metadata.labels`) but not on its pods;
- pods with exactly these labels run in a namespace the term does not reach;
- or the input is declared complete (`--closed`, or a cluster file listing the running pods).

Otherwise it stays quiet: the pods a preferred term means may be deployed from elsewhere. It also
stays quiet when a Namespace not in the input might hold matching pods, when a workload of the
input has no pod labels (a kustomize fragment), and when a custom resource in scope may make an
operator run pods. A term without `labelSelector` is left to `api-warning` (a warning, the API server's own
words), unless that does not run.

## Why it matters
A preferred term adds its weight to the score of nodes whose topology domain runs a pod the
term matches (affinity) or subtracts it (anti-affinity); symmetrically, it scores incoming pods
it matches (the scheduler's `interpodaffinity` Score; design doc "A comment on symmetry"). A
term that matches no pod changes no score: the spreading or co-location it was written for
never happens, silently. The usual cause is a label convention mix-up, such as a ZooKeeper
anti-affinity on `app: zk` while the pods carry `app.kubernetes.io/name: zk`, so the replicas
may all land on one node.

This is `info`: nothing breaks, a wish is silently ignored.

## Example
```yaml
kind: StatefulSet
spec:
  template:
    metadata:
      labels: {app.kubernetes.io/name: zk}
    spec:
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              podAffinityTerm:
                labelSelector:
                  matchLabels: {app: zk}     # matches nothing, not even these pods
                topologyKey: kubernetes.io/hostname
```

## Fix
Point the selector at the labels the pods really carry (the hint names near misses), or remove
the term.

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/scheduler/framework/plugins/interpodaffinity/scoring.go` (`PreScore`, `Score`)
- kubernetes/design-proposals-archive `scheduling/podaffinity.md`, "A comment on symmetry"
""",
    reads=MODEL_FIELDS,
)
