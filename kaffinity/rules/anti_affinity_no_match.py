"""anti-affinity-no-match: a required pod anti-affinity term that matches no pod, not even its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kaffinity.findings import Severity, Violation
from kaffinity.graph import ANTI_AFFINITY, Relation
from kaffinity.rules.base import Rule
from kaffinity.suggest import silent_terms

if TYPE_CHECKING:
    from kaffinity.engine import Context


def _describe(relation: Relation) -> tuple[str, str]:
    where = relation.topology_key or "any topology"
    return "required pod anti-affinity", f"the pods are not kept apart on {where}"


def _check(context: Context) -> Iterator[Violation]:
    return silent_terms(context, required=True, kinds=(ANTI_AFFINITY,), describe=_describe)


RULE = Rule(
    name="anti-affinity-no-match",
    category="graph",
    severity=Severity.WARNING,
    summary="Required pod anti-affinity that matches no pod, not even its own: it keeps nothing apart.",
    check=_check,
    needs_context=True,
    docs="""\
## What it finds
A required pod anti-affinity term whose selector, as the API server merges it with
`matchLabelKeys`, matches no workload's pods in the term's namespaces (not even the workload's
own) and no existing pod of the cluster file, when it looks like a mistake: the selector nearly
matches labels that exist in scope (`app: zk` vs `app.kubernetes.io/name: zk`; the hint names the
workload), the labels are on the workload object but not on its pods, pods with exactly these
labels run in a namespace the term does not reach, or the input is declared complete
(`--closed`, or a cluster file listing the running pods). The same quiet cases as
`preferred-no-match` apply (undeclared Namespaces, label-less fragments, operators' pods).

## Why it matters
Required anti-affinity is how replicas are kept on separate nodes or zones (the interpodaffinity
filter, reference §D). A term that matches no pod never rejects a node: the replicas it was
meant to keep apart can all land on one node, and one node failure takes the whole quorum down.
The manifest looks protected and is not. A real example: the ZooKeeper StatefulSet of the
Kubernetes documentation selects `app: zk` while its pods carry `app.kubernetes.io/name: zk`.

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
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector:
                matchExpressions: [{key: app, operator: In, values: [zk]}]   # matches nothing
              topologyKey: kubernetes.io/hostname
```

## Fix
Point the selector at the labels the pods really carry (the hint names near misses), or remove
the term.
""",
)
