"""anti-affinity-no-match: a required pod anti-affinity term that matches no pod, not even its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kaffinity.explain.own_terms import silent_terms
from kaffinity.findings import Severity, Violation
from kaffinity.graph.members import RELATION_ANTI_AFFINITY, Relation
from kaffinity.k8s.compact import MODEL_FIELDS
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.context import Context


RULE_NAME = "anti-affinity-no-match"


def _describe(relation: Relation) -> tuple[str, str]:
    where = relation.topology_key or "any topology"
    return "required pod anti-affinity", f"the pods are not kept apart on {where}"


def _check(context: Context) -> Iterator[Violation]:
    return silent_terms(
        context,
        required=True,
        kinds=(RELATION_ANTI_AFFINITY,),
        describe=_describe,
        rule=RULE_NAME,
        own_values=True,
    )


RULE = Rule(
    name=RULE_NAME,
    category="graph",
    severity=Severity.WARNING,
    summary="Required pod anti-affinity that matches no pod, not even its own: it keeps nothing apart.",
    check=_check,
    needs_all_manifests=True,
    docs="""\
## What it finds
A required pod anti-affinity term whose selector, as the API server merges it with
`matchLabelKeys`, matches no workload's pods in the term's namespaces (not even the workload's
own) and no existing pod of the cluster file, when it looks like a mistake: the selector nearly
matches labels that exist in scope (`app: zk` vs `app.kubernetes.io/name: zk`; the hint names the
workload), the labels are on the workload object but not on its pods, pods with exactly these
labels run in a namespace the term does not reach, the term was meant for the workload's own
pods (below), or the input is declared complete (`--closed`, or a cluster file listing the
running pods). The same quiet cases as `preferred-no-match` apply (undeclared Namespaces,
label-less fragments, operators' pods).

A term meant for the workload's own pods, with a wrong value: its namespaces include the
workload's own, every requirement its own pods fail is an equality (`matchLabels`, `In`) on a
key they carry with another value, and that value names the workload itself: the workload's
name, the name of a Service in the input that selects its pods, or the pods' own value with
words added or dropped. The ZooKeeper tutorial once selected `app In [zk-hs]` (its headless
Service) for pods labelled `app: zk` (kubernetes/website#7700); the Pulsar chart selected
`app In [pulsar-zookeeper]` (the StatefulSet's name) for pods labelled `app: pulsar`
(apache/pulsar-helm-chart#39). Both put every replica on one node. A term that names an
unrelated value (`app In [database]` in pods labelled `app: web`) keeps away another
application that may be deployed from elsewhere, and stays quiet in an open input.

The severity is `warning`, whatever the replica count: the pods still schedule and nothing fails
at deploy; what is lost is the spreading the term promised. Errors are kept for what the API
server refuses and for pods or rollouts that certainly stay stuck.

## Why it matters
Required anti-affinity is how replicas are kept on separate nodes or zones (the InterPodAffinity
filter, `satisfyPodAntiAffinity` in
`pkg/scheduler/framework/plugins/interpodaffinity/filtering.go`). A term that matches no pod never
rejects a node: the replicas it was meant to keep apart can all land on one node, and one node
failure takes the whole quorum down.
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

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/scheduler/framework/plugins/interpodaffinity/filtering.go` (`satisfyPodAntiAffinity`)
- `pkg/scheduler/framework/types.go` (`AffinityTerm.Matches`)
- https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/
""",
    reads=MODEL_FIELDS,
)
