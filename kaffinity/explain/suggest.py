""" "Did you mean": labels in the input that a selector matching nothing nearly names.

A selector that matches no pod is usually a typo or a convention mix-up, not a design: the
classic is ``app: zk`` in a term while the pods carry ``app.kubernetes.io/name: zk`` (the
Kubernetes ZooKeeper tutorial). The graph rules that report such selectors (``affinity-no-match``,
``preferred-no-match``, ``pdb-no-match``) ask this module for the pods the author probably meant.

A member (a workload's pods, or a group of existing pods) is a near miss when every written
``matchLabels`` entry or ``In`` requirement it fails has a close counterpart among its labels,
and every other requirement holds:

* the same value under another key (``app=zk`` vs ``app.kubernetes.io/name=zk``), unless the
  value is too generic to mean anything (``true``, one character);
* the same key with a close value (``difflib`` ratio at least :data:`CUTOFF`: ``zookeper`` vs
  ``zookeeper``); a close key with the same value is the first case.

Requirements the API server appended (``matchLabelKeys``, :mod:`kaffinity.expand.merge`) cannot be
edited by the author, so a member that fails one of those is never suggested. Only members in
the term's namespace scope are suggested; pods that match exactly but live outside the scope are
reported apart (:func:`outside_scope`), since the likely fix there is the namespace list; and so
are workloads whose object labels (``metadata.labels``) match while their pods' do not
(:func:`object_labelled`: selectors match pods).

:func:`kaffinity.explain.unknown.unknown_pods` says when pods the input does not show might match
after all, so that the rules stay quiet: a workload fragment without pod labels, a custom
resource an operator runs pods for, a namespace the input has no pods of;
:mod:`kaffinity.explain.own_terms` finds the typo in a term meant for the workload's own pods.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kaffinity.findings import Related
from kaffinity.graph.affinity import AffinityGraph
from kaffinity.graph.members import Member, Relation
from kaffinity.k8s.model import (
    LabelSelector,
    PodAffinityTerm,
    PodDisruptionBudget,
    Requirement,
)
from kaffinity.k8s.selectors import (
    NAMESPACE_NAME_LABEL,
    namespace_in_scope,
    requirement_matches,
    selector_matches,
)

if TYPE_CHECKING:
    pass

#: How close two values must be (``difflib.SequenceMatcher.ratio``) to be offered.
CUTOFF = 0.8
#: How many near misses a hint names at most.
LIMIT = 3
#: Values too generic to say that a label under another key is the one meant.
GENERIC_VALUES = frozenset({"true", "false", "yes", "no", "on", "off", "enabled", "disabled", "none", "null"})


@dataclass(frozen=True, slots=True)
class Suggestion:
    """A member the selector nearly matches, and the edits that would make it match."""

    member: Member
    #: (what is written, what would match this member), one per failing requirement.
    changes: tuple[tuple[str, str], ...]

    @property
    def text(self) -> str:
        edits = ", ".join(f"{instead} instead of {written}" for written, instead in self.changes)
        return f"{edits} ({self.member} has {'them' if len(self.changes) > 1 else 'it'})"


@dataclass(slots=True)
class _LabelIndex:
    """Pod labels by value and by key, across the input and per namespace; object labels by pair."""

    by_value: dict[str, list[Member]]
    by_key: dict[str, list[Member]]
    ns_value: dict[tuple[str, str], list[Member]]
    ns_key: dict[tuple[str, str], list[Member]]
    object_pairs: dict[tuple[str, str], list[Member]]


def _index(graph: AffinityGraph) -> _LabelIndex:
    """The graph's members by label (once per graph)."""
    return graph.memo.get("explain.suggest.index", lambda: _label_index(graph))


def _label_index(graph: AffinityGraph) -> _LabelIndex:
    found = _LabelIndex({}, {}, {}, {}, {})
    for member in graph.members.values():
        namespace = member.namespace
        for key, value in member.labels.items():
            found.by_value.setdefault(value, []).append(member)
            found.by_key.setdefault(key, []).append(member)
            found.ns_value.setdefault((namespace, value), []).append(member)
            found.ns_key.setdefault((namespace, key), []).append(member)
        workload = member.workload
        metadata = workload.doc.data.get("metadata") if workload is not None else None
        labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
        if isinstance(labels, Mapping):
            for key, value in labels.items():
                if isinstance(value, str):
                    found.object_pairs.setdefault((str(key), value), []).append(member)
    return found


def written_selector(relation: Relation) -> LabelSelector | None:
    """The selector as the author wrote it (the relation's is merged by the API server)."""
    term = relation.term
    if isinstance(term, PodDisruptionBudget):
        return term.selector
    return term.label_selector


def owner_namespace(graph: AffinityGraph, relation: Relation) -> str:
    return graph.namespace_of(relation.owner)


def scope_namespaces(graph: AffinityGraph, relation: Relation) -> tuple[str, ...] | None:
    """The namespaces a relation reaches when they are named (None: a namespaceSelector decides)."""
    term = relation.term
    owner = owner_namespace(graph, relation)
    if isinstance(term, PodAffinityTerm):
        if term.namespace_selector is not None:
            return None
        return tuple(term.namespaces) if term.namespaces else (owner,)
    return (owner,)


def in_scope(graph: AffinityGraph, relation: Relation, member: Member) -> bool | None:
    """Whether the relation's namespaces include the member's (None: depends on unknown labels)."""
    term = relation.term
    owner = owner_namespace(graph, relation)
    if isinstance(term, PodAffinityTerm):
        return namespace_in_scope(term, owner, member.namespace, graph.namespace_labels.get(member.namespace))
    return member.namespace == owner  # spread constraints and budgets: their own namespace only


def _equalities(selector: LabelSelector) -> list[tuple[str, tuple[str, ...], str]]:
    """(key, values, text) of each matchLabels entry and In requirement."""
    found: list[tuple[str, tuple[str, ...], str]] = [
        (key, (value,), f"{key}={value}") for key, value in selector.match_labels
    ]
    for requirement in selector.match_expressions:
        if requirement.operator == "In" and requirement.values:
            values = requirement.values
            text = f"{requirement.key}={values[0]}" if len(values) == 1 else requirement_text(requirement)
            found.append((requirement.key, values, text))
    return found


def requirement_text(requirement: Requirement) -> str:
    return f"{requirement.key} in ({','.join(requirement.values)})"


def _counterpart(key: str, values: tuple[str, ...], labels: Mapping[str, str]) -> str | None:
    """The label of ``labels`` that the requirement ``key in values`` most likely meant."""
    best: tuple[float, str] | None = None
    for value in values:
        if len(value) < 2 or value.lower() in GENERIC_VALUES:
            continue
        for other_key, other_value in labels.items():
            if other_value == value and other_key not in (key, NAMESPACE_NAME_LABEL):
                score = 1.0 + difflib.SequenceMatcher(None, key, other_key).ratio()
                if best is None or score > best[0]:
                    best = (score, f"{other_key}={other_value}")
    if key in labels and key != NAMESPACE_NAME_LABEL:
        have = labels[key]
        for value in values:
            ratio = difflib.SequenceMatcher(None, value, have).ratio()
            if ratio >= CUTOFF and (best is None or ratio > best[0]):
                best = (ratio, f"{key}={have}")
    return best[1] if best is not None else None


def _near_miss(selector: LabelSelector, written: LabelSelector, member: Member) -> Suggestion | None:
    labels = member.labels
    equalities = {
        (key, values): text
        for key, values, text in _equalities(written)
        if not (key in labels and labels[key] in values)
    }
    written_expressions = len(written.match_expressions)
    for index, requirement in enumerate(selector.match_expressions):
        if requirement_matches(requirement, labels):
            continue
        if index >= written_expressions or requirement.operator != "In":
            return None  # a merged requirement, or one that is no typo of a label (NotIn, Exists...)
    changes: list[tuple[str, str]] = []
    for (key, values), text in equalities.items():
        instead = _counterpart(key, values, labels)
        if instead is None:
            return None
        changes.append((text, instead))
    return Suggestion(member, tuple(changes)) if changes else None


def near_misses(graph: AffinityGraph, relation: Relation, limit: int = LIMIT) -> list[Suggestion]:
    """The members in the relation's scope that its selector nearly matches, fewest edits first."""
    selector, written = relation.selector, written_selector(relation)
    if selector is None or written is None or selector.is_empty:
        return []
    index = _index(graph)
    seen: set[str] = set()
    candidates: list[Member] = []
    namespaces = scope_namespaces(graph, relation)
    for key, values, _ in _equalities(written):
        if namespaces is None:
            pool = (*(m for v in values for m in index.by_value.get(v, ())), *index.by_key.get(key, ()))
        else:  # only the namespaces the term reaches: never every workload of the input
            pool = (
                *(m for ns in namespaces for v in values for m in index.ns_value.get((ns, v), ())),
                *(m for ns in namespaces for m in index.ns_key.get((ns, key), ())),
            )
        for member in pool:
            if member.id not in seen:
                seen.add(member.id)
                candidates.append(member)
    found: list[Suggestion] = []
    texts: set[tuple[tuple[str, str], ...]] = set()
    for member in candidates:
        if member.id in relation.reach or in_scope(graph, relation, member) is False:
            continue
        suggestion = _near_miss(selector, written, member)
        if suggestion is not None and suggestion.changes not in texts:
            texts.add(suggestion.changes)
            found.append(suggestion)
    found.sort(key=lambda s: len(s.changes))
    return found[:limit]


def outside_scope(graph: AffinityGraph, relation: Relation, limit: int = LIMIT) -> list[Member]:
    """Other members the selector matches exactly but whose namespace the relation does not reach.

    The owner's own pods are left out (a term listing other namespaces is about other pods), and
    so is every copy of the owner (the same object in several files: same kind, namespace, name).
    """
    selector = relation.selector
    if selector is None or selector.is_empty:
        return []
    equalities = _equalities(selector)
    if not equalities:
        return []  # no label to look up: the hint is optional, a scan of every workload is not
    key, values, _ = equalities[0]
    pool = [graph.members[node] for value in values for node in graph.labelled(key, value)]
    owner = graph.members.get(relation.owner)
    found: list[Member] = []
    for member in pool:
        if (
            member.id not in relation.reach
            and (owner is None or str(member) != str(owner))
            and all(str(member) != str(other) for other in found)
            and selector_matches(selector, member.labels, graph.proposals)
            and in_scope(graph, relation, member) is False
        ):
            found.append(member)
            if len(found) == limit:
                break
    return found


def hint(graph: AffinityGraph, relation: Relation) -> tuple[str, tuple[Related, ...]]:
    """The "did you mean" part of a fix hint (empty when nothing is close), and where it points."""
    suggestions = near_misses(graph, relation)
    related: list[Related] = []
    if suggestions:
        for suggestion in suggestions:
            labels = ", ".join(instead for _, instead in suggestion.changes)
            related.append(_labels_of(suggestion.member, f"has {labels}"))
        return "did you mean " + "; or ".join(s.text for s in suggestions) + "?", tuple(related)
    elsewhere = outside_scope(graph, relation)
    if elsewhere:
        names = ", ".join(f"{member} (namespace {member.namespace})" for member in elsewhere)
        for member in elsewhere:
            related.append(_labels_of(member, f"matches, but in namespace {member.namespace}"))
        return f"pods with these labels exist outside the selector's namespaces: {names}.", tuple(related)
    objects = object_labelled(graph, relation)
    if objects:
        names = ", ".join(str(member) for member in objects)
        for member in objects:
            assert member.workload is not None
            related.append(
                Related(member.workload.doc, ("metadata", "labels"), "the object has them, its pods do not")
            )
            related.append(_labels_of(member, "the pods' labels"))
        return (
            f"{names} {'carries' if len(objects) == 1 else 'carry'} these labels on the object "
            "(metadata.labels), not on the pods (the pod template's metadata.labels), and selectors "
            "match pods: add them to the pod template.",
            tuple(related),
        )
    return "", ()


def object_labelled(graph: AffinityGraph, relation: Relation, limit: int = LIMIT) -> list[Member]:
    """Workloads in scope whose object labels, not their pods' labels, the selector matches."""
    written = written_selector(relation)
    if written is None or written.is_empty:
        return []
    equalities = _equalities(written)
    if not equalities:
        return []
    key, values, _ = equalities[0]
    index = _index(graph)
    pool = [m for value in values for m in index.object_pairs.get((key, value), ())]
    found: list[Member] = []
    owner = graph.members.get(relation.owner)
    first = [owner] if owner is not None and owner in pool else []
    for member in (*first, *(m for m in pool if m is not owner)):
        if member.id in relation.reach:
            continue
        strings = _object_labels(member)
        if (
            strings is not None
            and selector_matches(written, strings, graph.proposals)
            and in_scope(graph, relation, member) is not False
            and all(str(other) != str(member) for other in found)
        ):
            found.append(member)
            if len(found) == limit:
                break
    return found


def _object_labels(member: Member) -> dict[str, str] | None:
    """The string labels of a workload's object (metadata.labels); None for a workload with no
    pod template or no labels mapping."""
    workload = member.workload
    assert workload is not None
    if not workload.template_path:
        return None
    metadata = workload.doc.data.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    if not isinstance(labels, Mapping):
        return None
    return {str(k): str(v) for k, v in labels.items() if isinstance(v, str)}


def _labels_of(member: Member, message: str) -> Related:
    workload = member.workload if member.workload is not None else member.pods[0]
    return Related(workload.doc, (*workload.pod.metadata_path, "labels"), message)
