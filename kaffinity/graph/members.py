"""What the affinity graph (:mod:`kaffinity.graph.affinity`) is made of, as data: its vertices
(:class:`Member`: a workload's pods, or a group of existing pods), its relations (:class:`Relation`:
one term or budget and the vertices it reaches, of a ``RELATION_*`` kind), the canonical
listing of a set of members for messages (:class:`Listing`), which workloads can start
(:class:`Startable`), the nesting of well-known topology keys (:func:`within`), and selectors,
scopes and labels in words (:func:`selector_text`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from kaffinity.k8s.labels import HOSTNAME, REGION, ZONE
from kaffinity.k8s.model import (
    LabelSelector,
    PodAffinityTerm,
    PodDisruptionBudget,
    TopologySpreadConstraint,
    Workload,
)
from kaffinity.k8s.selectors import NAMESPACE_NAME_LABEL
from kaffinity.load.source import DataPath, Document

RELATION_AFFINITY, RELATION_ANTI_AFFINITY, RELATION_SPREAD, RELATION_PDB, RELATION_SELECTS = (
    "affinity",
    "anti-affinity",
    "spread",
    "pdb",
    "selects",
)


#: Well-known topology keys from the smallest domain to the largest; a pod on one node is in
#: that node's zone and region (``kubernetes.io/hostname`` ⊂ zone ⊂ region).
_LEVELS: dict[str, int] = {
    HOSTNAME: 0,
    ZONE: 1,
    "failure-domain.beta.kubernetes.io/zone": 1,
    REGION: 2,
    "failure-domain.beta.kubernetes.io/region": 2,
}


def within(inner: str, outer: str) -> bool:
    """Whether sharing an ``inner`` domain implies sharing the ``outer`` one (same or nested key)."""
    if inner == outer:
        return True
    a, b = _LEVELS.get(inner), _LEVELS.get(outer)
    return a is not None and b is not None and a <= b


@dataclass(frozen=True, slots=True, eq=False)
class Member:
    """Pods a selector can match: one workload's, or a group of the cluster's existing pods."""

    id: str
    namespace: str
    labels: Mapping[str, str]
    workload: Workload | None = None
    #: The existing pods of a group (from the cluster file); empty for a workload.
    pods: tuple[Workload, ...] = ()

    @property
    def existing(self) -> bool:
        return self.workload is None

    @property
    def doc(self) -> Document:
        return self.workload.doc if self.workload is not None else self.pods[0].doc

    def __str__(self) -> str:
        if self.workload is not None:
            return str(self.workload.ref)
        count, labels = len(self.pods), _labels_text(self.labels)
        return f"{count} existing pod{'s' if count != 1 else ''} in {self.namespace} ({labels})"


@dataclass(frozen=True, slots=True, eq=False)
class Listing:
    """A set of members in the canonical order (:meth:`AffinityGraph.order`), named, for messages
    that list the first few and count the rest: built once per distinct set
    (:meth:`AffinityGraph.listing`), not sorted again for each of the many terms that match the
    same set (N workloads whose terms all match each other would take quadratic time)."""

    members: tuple[Member, ...]
    ids: frozenset[str]
    names: tuple[str, ...]  # str(member)
    #: ``ends[i]``: the index past the run of members that share ``members[i]``'s namespace.
    ends: tuple[int, ...]
    copies: Mapping[str, int]  # members per name (a name given twice)
    #: Distinct names per namespace (a name tells its namespace: names never cross namespaces).
    per_namespace: Mapping[str, int]

    @classmethod
    def of(cls, members: Sequence[Member]) -> Listing:
        names = tuple(str(member) for member in members)
        ends = [0] * len(members)
        end = len(members)
        for index in range(len(members) - 1, -1, -1):
            if index + 1 < len(members) and members[index + 1].namespace != members[index].namespace:
                end = index + 1
            ends[index] = end
        copies: dict[str, int] = {}
        per_namespace: dict[str, int] = {}
        for member, name in zip(members, names, strict=True):
            if name not in copies:
                per_namespace[member.namespace] = per_namespace.get(member.namespace, 0) + 1
            copies[name] = copies.get(name, 0) + 1
        return cls(
            tuple(members),
            frozenset(member.id for member in members),
            names,
            tuple(ends),
            copies,
            per_namespace,
        )

    def ids_in_order(self) -> Iterator[str]:
        return (member.id for member in self.members)

    def first(
        self, shown: int, skip: Member | None = None, other_than: str | None = None
    ) -> tuple[list[Member], list[str], int]:
        """Leaving out member ``skip`` and the members of namespace ``other_than``: the first
        ``shown`` members, the first ``shown`` distinct names, and how many distinct names there
        are (what :func:`kaffinity.rules.all_namespaces_anti_affinity.name_list` needs), in time
        that does not grow with the set: runs of the left-out namespace are skipped whole."""
        members: list[Member] = []
        names: list[str] = []
        seen: set[str] = set()
        index, size = 0, len(self.members)
        while index < size and (len(members) < shown or len(names) < shown):
            member = self.members[index]
            if member.namespace == other_than:
                index = self.ends[index]
                continue
            name = self.names[index]
            index += 1
            if member is skip:
                continue
            if len(members) < shown:
                members.append(member)
            if name not in seen and len(names) < shown:
                seen.add(name)
                names.append(name)
        if other_than is not None:
            count = len(self.copies) - self.per_namespace.get(other_than, 0)
        else:
            count = len(self.copies)
        if skip is not None and other_than is None and skip.id in self.ids and self.copies[str(skip)] == 1:
            count -= 1
        return members, names, count


@dataclass(frozen=True, slots=True, eq=False)
class Relation:
    """One term (or budget) and the vertices (member ids) it matches."""

    owner: str  # vertex (member id) of the workload (or budget) that holds the term
    doc: Document
    kind: str  # AFFINITY, ANTI_AFFINITY, SPREAD or PDB
    required: bool
    weight: int | None
    term: PodAffinityTerm | TopologySpreadConstraint | PodDisruptionBudget
    path: DataPath  # of the term in ``doc``
    topology_key: str | None
    selector: LabelSelector | None  # merged, as the scheduler evaluates it
    scope: str  # the namespaces the term reaches, in words
    all_namespaces: bool
    matches: frozenset[str]  # member ids the term certainly matches
    maybe: frozenset[str]  # would match if an undeclared Namespace has the labels it selects

    @property
    def reach(self) -> frozenset[str]:
        # The matched set itself when nothing is maybe (the common case): shared, not copied.
        return self.matches | self.maybe if self.maybe else self.matches


@dataclass(slots=True)
class Startable:
    """Which workloads' pods can be placed at all, as far as required pod affinity goes.

    The scheduler admits a pod with required affinity on a node whose domains hold, for every
    term, a pod matching *all* terms; or, when no pod anywhere matches them all, if the pod
    matches all its own terms (the self-match exception; interpodaffinity ``Filter``). So a
    workload can start once any workload it could follow has started, or by itself if it
    matches its own terms: a least fixpoint over the graph, computed with a worklist.
    """

    #: Per workload with required affinity: who can satisfy it, the workload itself left in when
    #: its terms match it (not copied without it for each workload: the sets are shared, and N
    #: workloads whose terms match each other would cost N copies of N, quadratic). Whether it can
    #: follow itself is :attr:`self_match`.
    candidates: dict[str, frozenset[str]]
    self_match: frozenset[str]
    placeable: frozenset[str]

    def stuck(self) -> list[str]:
        return [vertex for vertex in self.candidates if vertex not in self.placeable]


def _scope_text(term: PodAffinityTerm | None, namespace: str) -> str:
    if term is None or (not term.namespaces and term.namespace_selector is None):
        return f"namespace {namespace}"
    parts = []
    if term.namespaces:
        parts.append("namespace" + ("s " if len(term.namespaces) > 1 else " ") + ", ".join(term.namespaces))
    selector = term.namespace_selector
    if selector is not None:
        if selector.is_empty:
            return "all namespaces"
        parts.append(f"namespaces labelled {_selector_text(selector)}")
    return " and ".join(parts)


def _selector_text(selector: LabelSelector | None) -> str:
    if selector is None:
        return "(no selector)"
    if selector.is_empty:
        return "{} (everything)"
    parts = [f"{key}={value}" for key, value in selector.match_labels]
    for r in selector.match_expressions:
        if r.operator in ("Exists", "DoesNotExist"):
            parts.append(r.key if r.operator == "Exists" else f"!{r.key}")
        else:
            parts.append(f"{r.key} {r.operator.lower()} ({','.join(r.values)})")
    return ",".join(parts)


def selector_text(selector: LabelSelector | None) -> str:
    """A selector in kubectl's ``-l`` syntax (``app=web,tier in (a,b)``)."""
    return _selector_text(selector)


def _labels_text(labels: Mapping[str, str]) -> str:
    return ",".join(f"{key}={value}" for key, value in labels.items() if key != NAMESPACE_NAME_LABEL)
