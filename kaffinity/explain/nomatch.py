"""Required pod affinity that nothing can satisfy: the findings of ``affinity-no-match``.

Shared with ``unschedulable``, which finds the same pods Pending on a declared cluster: each asks
:mod:`kaffinity.explain.precedence` which of the two findings is kept. Computed once per lint run.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kaffinity.explain.precedence import gives_way
from kaffinity.explain.suggest import hint, written_selector
from kaffinity.explain.unknown import nobody, unknown_pods
from kaffinity.findings import Related, Severity, Violation
from kaffinity.graph.affinity import AffinityGraph
from kaffinity.graph.members import RELATION_AFFINITY, Member, Relation, selector_text
from kaffinity.k8s.selectors import selector_matches

if TYPE_CHECKING:
    from kaffinity.context import Context

RULE = "affinity-no-match"

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
#: How many matched workloads a message names per term.
_NAMES = 3


def _never(context: Context, what: str) -> str:
    """The consequence; hedged when pods outside the input could still match (InterPodAffinity's
    ``PreFilter`` counts every pod of the cluster,
    ``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go``)."""
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
        # a pod that matches every one of its own required terms (``satisfyPodAffinity`` in
        # pkg/scheduler/framework/plugins/interpodaffinity/filtering.go).
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


def _nil_term(relation: Relation) -> Violation:
    """A required term without labelSelector: a null selector matches no pod, ever."""
    return Violation(
        relation.doc,
        relation.path,
        "required pod affinity has no labelSelector, and a null selector matches no pod, not even these: "
        "whatever else runs, these pods can never be scheduled (the first-pod exception needs a pod "
        "that matches every term)",
        fix="add a labelSelector naming the pods these must run next to, or remove the term",
        severity=Severity.ERROR,
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


def _find(context: Context) -> Iterator[Violation]:
    graph = context.graph
    startable = graph.startable
    for member in graph.workloads():
        workload = member.workload
        assert workload is not None
        if workload.pod.node_name:
            continue  # bound by spec.nodeName: the scheduler never places it, nor checks its affinity
        terms = graph.terms(member.id, RELATION_AFFINITY, required=True)
        if not terms or member.id in startable.self_match:
            continue  # nothing required, or its first pod starts by itself (satisfyPodAffinity)
        # A term without labelSelector matches no pod, in the input or not, and not the pod itself:
        # its pods are certain never to schedule (an error). api-warning says the API server's
        # words ("a null labelSelector results in matching no pod", pkg/api/pod/warnings.go); this
        # finding gives way to it only when that is at least as severe (kaffinity.explain.precedence).
        nil = [relation for relation in terms if written_selector(relation) is None]
        if nil and not gives_way(context, (RULE, Severity.ERROR), ("api-warning", None), tie_to_other=True):
            for relation in nil:
                yield _nil_term(relation)
        if any(unknown_pods(context, relation) is not None for relation in terms):
            continue  # pods the input does not show (a fragment's, an operator's) might match
        dead = [
            relation
            for relation in terms
            if written_selector(relation) is not None and relation.reach <= {member.id}
        ]
        for relation in dead:
            yield _dead_term(context, member, relation, terms)
        if not dead and not nil and not startable.candidates.get(member.id):
            yield _no_single_pod(context, member, terms)


def affinity_no_match(context: Context) -> tuple[Violation, ...]:
    """Every finding of ``affinity-no-match``, before it gives way to anything."""
    return context.memo.get("explain.nomatch.found", lambda: tuple(_find(context)))


def strongest(violations: tuple[Violation, ...]) -> dict[int, Severity | None]:
    """The highest own severity of the findings on each document (id of the document)."""
    found: dict[int, Severity | None] = {}
    for violation in violations:
        key = id(violation.doc)
        now, other = found.get(key), violation.severity
        if key not in found or (other is not None and (now is None or other.rank > now.rank)):
            found[key] = other
    return found
