"""affinity-no-match: required pod affinity that no pod in the input can ever satisfy."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kaffinity.explain.precedence import gives_way, refused
from kaffinity.findings import Severity, Violation
from kaffinity.k8s.compact import MODEL_FIELDS
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.context import Context


def _check(context: Context) -> Iterator[Violation]:
    """The findings of :func:`kaffinity.explain.nomatch.affinity_no_match`, except on workloads whose
    Pending pods ``unschedulable`` reports at a higher severity (kaffinity.explain.precedence)."""
    from kaffinity.explain.nomatch import RULE as NAME
    from kaffinity.explain.nomatch import affinity_no_match, strongest

    gone = refused(context)  # never created: api-validation's finding says why, once
    found = tuple(violation for violation in affinity_no_match(context) if id(violation.doc) not in gone)
    pending = _pending(context)
    if not pending:
        yield from found
        return
    strength = strongest(found)
    for violation in found:
        key = id(violation.doc)
        if key in pending and gives_way(
            context, (NAME, strength[key]), ("unschedulable", pending[key]), tie_to_other=False
        ):
            continue
        yield violation


def _pending(context: Context) -> dict[int, Severity | None]:
    """The workloads (id of their document) whose Pending pods ``unschedulable`` reports for want
    of a pod their required affinity matches, with that finding's own severity."""
    from kaffinity.explain.precedence import reported_at

    if (
        context.cluster is None
        or not context.settings.simulate
        or reported_at(context, "unschedulable") is None
    ):
        return {}  # no simulation, or nobody to give way to: never run it for this
    from kaffinity.explain.pending import affinity_pending

    return affinity_pending(context)


RULE = Rule(
    name="affinity-no-match",
    category="graph",
    severity=Severity.WARNING,
    summary="Required pod affinity that no workload or existing pod can satisfy: the pods never schedule.",
    check=_check,
    needs_all_manifests=True,
    docs="""\
## What it finds
A required pod affinity term (`podAffinity.requiredDuringSchedulingIgnoredDuringExecution`) of
a workload that nothing in the input can satisfy:

- the term's selector (as the API server merges it with `matchLabelKeys`) matches no workload's
  pods and no existing pod of the cluster file in the term's namespaces, or only the workload's
  own pods while they do not match all of its required affinity terms;
- or every term matches something, but no single workload's pods match all the terms: the
  scheduler needs one pod that satisfies every term at once.

It stays quiet when the workload's own pods match all of its required affinity terms (the
first-pod exception below), for a Pod bound with `spec.nodeName` (the scheduler never sees it),
and whenever pods the input does not show might match:

- a term reaches a namespace the input has no pods of (`namespaces`, `namespaceSelector`),
  unless other workloads with exactly these labels run in another namespace of the input (then
  a namespace mistake is likely, and the hint names them);
- a workload in scope has no pod labels (a kustomize base or patch: its labels come later);
- a custom resource in scope looks like it makes an operator run pods (it has `replicas`,
  `image`, `resources`... in its spec).

The severity is `error` when the input is complete (`--closed`, or a cluster file listing the
running pods): then nothing else can match. A term without `labelSelector` is an `error` always:
a null selector matches no pod, in the input or not (`api-warning` also gives the API server's
warning on it).

With a declared cluster, `unschedulable` finds the same pods Pending. Of the two findings the
more severe is kept (a tie goes to this rule, which names near misses): with a cluster file that
lists no pods this rule's warning gives way to `unschedulable`'s error, which takes the hint. The
same holds whichever rules are selected and whatever severities are configured
(`kaffinity.explain.precedence`).

When the selector nearly matches labels that exist in the term's namespaces (the same value
under another key, `app: zk` vs `app.kubernetes.io/name: zk`; the same key with a close value),
the hint says which workload has them.

## Why it matters
A required affinity term admits a node only if some pod matching the term already runs in the
node's topology domain; for several terms, one pod must match them all (the scheduler's
`interpodaffinity` plugin). The only way out is the first-pod exception: when no pod anywhere
matches all the terms and the pod matches all its own terms, it may go anywhere (design doc
"Examples > Affinity": otherwise a service with affinity to itself could never start its first
pod). A pod whose terms match nothing, not even itself, stays Pending forever with
"node(s) didn't match pod affinity rules", marked UnschedulableAndUnresolvable, so preemption
does not help either.

## Example
```yaml
kind: StatefulSet
metadata: {name: zk, namespace: shop}
spec:
  template:
    metadata:
      labels: {app.kubernetes.io/name: zk}
    spec:
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector:
                matchLabels: {app: zk}        # nothing has app=zk, not even these pods
              topologyKey: topology.kubernetes.io/zone
```

## Fix
Point the selector at the labels the pods really carry (the hint names near misses). If the
term groups the workload's own pods (KEP-3633 story 1), make sure the pod template carries the
labels it selects, so that the first pod can start. If the pods it names are deployed
elsewhere, lint them together (`context:`), or make the term preferred.

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/scheduler/framework/plugins/interpodaffinity/filtering.go` (`satisfyPodAffinity`)
- `pkg/scheduler/framework/types.go` (`AffinityTerm.Matches`): namespaces and selector
- https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/
""",
    reads=MODEL_FIELDS,
)
