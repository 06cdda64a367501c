"""affinity-no-match: required pod affinity that no pod in the input can ever satisfy."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kaffinity.findings import Related, Severity, Violation
from kaffinity.graph import AFFINITY, AffinityGraph, Member, Relation, selector_text
from kaffinity.rules.base import Rule
from kaffinity.selectors import selector_matches
from kaffinity.suggest import hint, nobody, unknown_pods, written_selector

if TYPE_CHECKING:
    from kaffinity.engine import Context

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
#: How many matched workloads a message names per term.
_NAMES = 3


def _never(context: Context, what: str) -> str:
    """The consequence; hedged when pods outside the input could still match (reference §D)."""
    if context.complete:
        return "these pods can never be scheduled"
    return f"unless a pod outside the input {what}, these pods can never be scheduled"


def _names(graph: AffinityGraph, nodes: frozenset[str]) -> str:
    members = sorted((graph.members[node] for node in nodes), key=lambda m: graph.order(m.id))
    names = ", ".join(str(member) for member in members[:_NAMES])
    more = len(members) - _NAMES
    return names + (f" and {more} more" if more > 0 else "")


def _labels_related(member: Member, message: str) -> Related:
    assert member.workload is not None
    return Related(member.workload.doc, (*member.workload.pod.metadata_path, "labels"), message)


def _dead_term(context: Context, member: Member, relation: Relation, terms: list[Relation]) -> Violation:
    """Case (a): the term reaches nothing, or only the workload's own pods while they cannot start."""
    graph = context.graph
    selector = selector_text(relation.selector)
    related: list[Related] = []
    if member.id in relation.reach:
        # Its own pods match this term but not all of the terms: the first-pod exception needs
        # a pod that matches every one of its own required terms (interpodaffinity Filter, §D).
        failing = [other for other in terms if member.id not in other.reach]
        related += [
            Related(other.doc, (*other.path, "labelSelector"), "this pod's own labels do not match this term")
            for other in failing
        ]
        message = (
            f"required pod affinity matches only this workload's own pods ({selector} in {relation.scope}), "
            f"and they do not match all of its required affinity terms, so the first-pod exception does "
            f"not apply; {_never(context, 'matches this term')}"
        )
    else:
        own = selector_matches(relation.selector, member.labels, graph.proposals)
        why = (
            "their own namespace is outside the term's namespaces" if own else "their own labels do not match"
        )
        message = (
            f"required pod affinity matches no pod: {nobody(context)} in {relation.scope} has {selector}; "
            f"{_never(context, 'has them')} ({why}, so the first-pod exception does not apply)"
        )
        if not own:
            related.append(_labels_related(member, "this pod's labels, which the term does not match"))
    suggestion, where = hint(graph, relation)
    mentioned = {(id(other.doc), other.path) for other in where}
    related = [other for other in related if (id(other.doc), other.path) not in mentioned] + list(where)
    fix = (
        "point the selector (and namespaces) at the pods these must run next to, or make the term "
        "preferred; if it is meant to group this workload's own pods, give the pod template the "
        "selected labels so the first pod can start"
    )
    if suggestion:
        fix = f"{suggestion} Otherwise {fix}"
    return Violation(
        relation.doc,
        (*relation.path, "labelSelector"),
        message,
        related=tuple(related),
        fix=fix,
        severity=Severity.ERROR if context.complete else None,
    )


def _no_single_pod(context: Context, member: Member, terms: list[Relation]) -> Violation:
    """Case (b): each term matches someone, but no single pod matches all the terms."""
    graph = context.graph
    workload = member.workload
    assert workload is not None and workload.pod.affinity is not None
    pod_affinity = workload.pod.affinity.pod_affinity
    assert pod_affinity is not None
    parts = []
    related = []
    for number, relation in enumerate(terms, start=1):
        matched = _names(graph, relation.reach)
        parts.append(f"term {number} ({selector_text(relation.selector)}) matches {matched}")
        related.append(Related(relation.doc, (*relation.path, "labelSelector"), f"matches {matched}"))
    message = (
        f"no single pod matches all {len(terms)} required pod affinity terms, and the scheduler needs one "
        f"pod that satisfies every term: {'; '.join(parts)}; {_never(context, 'matches every term')} "
        "(their own labels do not match every term, so the first-pod exception does not apply)"
    )
    fix = (
        "if the pods must run next to different workloads, require only the one that carries both sets of "
        "labels, or turn the other terms into preferred ones"
    )
    return Violation(
        workload.doc,
        (*pod_affinity.path, _REQUIRED),
        message,
        related=tuple(related),
        fix=fix,
        severity=Severity.ERROR if context.complete else None,
    )


def _check(context: Context) -> Iterator[Violation]:
    graph = context.graph
    placement = graph.placement
    for member in graph.workloads():
        workload = member.workload
        assert workload is not None
        if workload.pod.node_name:
            continue  # bound by spec.nodeName: the scheduler never places it, nor checks its affinity
        terms = graph.terms(member.id, AFFINITY, required=True)
        if not terms or member.id in placement.self_match:
            continue  # nothing required, or the first-pod exception lets its first pod start (§D)
        # A term without labelSelector matches no pod; api-warning reports it ("a null labelSelector
        # results in matching no pod", pkg/api/pod/warnings.go), so it is not reported twice.
        nil = any(written_selector(relation) is None for relation in terms)
        if any(unknown_pods(context, relation) is not None for relation in terms):
            continue  # pods the input does not show (a fragment's, an operator's) might match
        dead = [
            relation
            for relation in terms
            if written_selector(relation) is not None and relation.reach <= {member.id}
        ]
        for relation in dead:
            yield _dead_term(context, member, relation, terms)
        if not dead and not nil and not placement.candidates.get(member.id):
            yield _no_single_pod(context, member, terms)


RULE = Rule(
    name="affinity-no-match",
    category="graph",
    severity=Severity.WARNING,
    summary="Required pod affinity that no workload or existing pod can satisfy: the pods never schedule.",
    check=_check,
    needs_context=True,
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

A term without `labelSelector` is left to `api-warning`. The severity is `error` when the input
is complete (`--closed`, or a cluster file listing the running pods): then nothing else can
match.

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
""",
)
