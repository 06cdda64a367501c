"""The affinity graph: which workloads each scheduling term and disruption budget reaches.

Built once per lint (``Context.graph``): members, relations and the placement analysis the rules
read, and, on first use (drawing, cycles), a networkx ``MultiDiGraph`` of them:

* a vertex per workload (the pods it creates) and, when the cluster file lists running pods,
  per group of existing pods with the same namespace and labels; a vertex per
  PodDisruptionBudget;
* an edge per (term, matched pods), with the term's ``kind`` (affinity, anti-affinity,
  spread, pdb), ``required``, ``weight``, ``topology_key``, namespace ``scope`` and
  ``relation`` (the :class:`Relation`, whose ``doc`` and ``path`` place the term; ``location``
  gives file:line:column, looked up only when asked for);
* a term that matches more than :data:`FANOUT` vertices gets one edge to a *selector*
  vertex instead, and the selector vertex one ``selects`` edge to each member; identical selectors in
  the same scope share the selector vertex, so a label like ``tier: batch`` selected in every
  namespace by hundreds of workloads costs its members once, not once per term.

Matching is upstream's (``PodAffinityTerm`` API doc; the scheduler's ``AffinityTerm.Matches`` in
``pkg/scheduler/framework/types.go``): the selector kube-apiserver merges from ``matchLabelKeys`` /
``mismatchLabelKeys`` (:mod:`kaffinity.expand.merge`, with controller labels kept apart per
workload); the namespaces are the union of ``namespaces`` and ``namespaceSelector``'s, the
owner's own only when both are unset, ``namespaceSelector: {}`` every namespace; selectors on
Namespace labels are resolved against the Namespace objects of the input and of the cluster
file. A Namespace nobody declared has only its automatic ``kubernetes.io/metadata.name``
label known: a term that might reach it through other labels matches it *maybe*, which the
rules treat as "cannot rule it out". A nil selector matches nothing, ``{}`` everything.
Topology spread constraints and disruption budgets count pods of their own namespace only.

Candidates come from an index (label key → value → vertices, and namespace → vertices),
never from every pair: a term is compared with the vertices carrying one of its required
labels, or with the vertices of its namespaces when its selector requires no label.

Members and budgets are added in a canonical order (:func:`kaffinity.k8s.model.canonical_key`:
namespace, kind, name, then file and position), then the cluster's pod groups, never in the
order the files were given: every list a rule takes from the graph (who a term locks out, who
matches elsewhere, where a deadlock cycle starts), and the ``#2`` of a name given twice, are
the same whatever that order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from kaffinity.expand.merge import POD_ANTI_AFFINITY, affinity_terms, pod_labels
from kaffinity.graph.members import (
    RELATION_AFFINITY,
    RELATION_ANTI_AFFINITY,
    RELATION_PDB,
    RELATION_SELECTS,
    RELATION_SPREAD,
    Listing,
    Member,
    Relation,
    Startable,
    _labels_text,
    _scope_text,
    _selector_text,
)
from kaffinity.k8s.model import (
    LabelSelector,
    PodAffinityTerm,
    PodDisruptionBudget,
    TopologySpreadConstraint,
    Workload,
)
from kaffinity.k8s.model.objects import canonical_key
from kaffinity.k8s.selectors import namespace_in_scope, selector_matches
from kaffinity.load.source import DataPath, Document
from kaffinity.memo import Memo

if TYPE_CHECKING:
    import networkx as nx

    from kaffinity.config import Settings
    from kaffinity.expand.merge import Expansions
    from kaffinity.k8s.model import Inventory
    from kaffinity.simulate.cluster import Cluster


#: A term matching more vertices than this points at a shared selector vertex instead.
FANOUT = 16


@dataclass(slots=True)
class _Index:
    """Label key → value → member ids, key → ids, namespace → ids (in :meth:`AffinityGraph.order`)."""

    pairs: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    keys: dict[str, list[str]] = field(default_factory=dict)
    namespaces: dict[str, list[str]] = field(default_factory=dict)

    def add(self, member: Member) -> None:
        for pair in member.labels.items():
            self.pairs.setdefault(pair, []).append(member.id)
            self.keys.setdefault(pair[0], []).append(member.id)
        self.namespaces.setdefault(member.namespace, []).append(member.id)

    def narrowest(self, selector: LabelSelector, namespaces: Iterable[str] | None) -> Iterable[str]:
        """The smallest candidate list the selector's required labels or the namespaces give."""
        options: list[list[str]] = []
        for pair in selector.match_labels:
            options.append(self.pairs.get(pair, []))
        for requirement in selector.match_expressions:
            if requirement.operator == "In":
                options.append(
                    [m for value in requirement.values for m in self.pairs.get((requirement.key, value), [])]
                )
            elif requirement.operator in ("Exists", "Gt", "Lt"):
                options.append(self.keys.get(requirement.key, []))
        if namespaces is not None:
            options.append([m for ns in namespaces for m in self.namespaces.get(ns, [])])
        if not options:
            return [m for ids in self.namespaces.values() for m in ids]
        return min(options, key=len)


def _common_reach(required: list[Relation]) -> frozenset[str]:
    """The members every required affinity term of a workload reaches (all terms at once)."""
    reaches = sorted((relation.reach for relation in required), key=len)
    smallest, rest = reaches[0], reaches[1:]
    if not rest:
        return smallest
    return frozenset(vertex for vertex in smallest if all(vertex in other for other in rest))


def _spread_placeable(candidates: Mapping[str, frozenset[str]], placeable: set[str]) -> None:
    """Add to ``placeable`` every workload one of whose candidates (not itself) is placeable,
    and so on until nothing changes (each workload waits on its candidates once)."""
    waiting: dict[str, list[str]] = {}
    for vertex, vertices in candidates.items():
        if vertex in placeable:
            continue
        if any(other in placeable for other in vertices):  # not itself: it is not placeable
            placeable.add(vertex)
        else:
            for other in vertices:
                if other != vertex:
                    waiting.setdefault(other, []).append(vertex)
    queue = [vertex for vertex in placeable if vertex in waiting]
    while queue:
        for vertex in waiting.pop(queue.pop(), ()):
            if vertex not in placeable:
                placeable.add(vertex)
                if vertex in waiting:
                    queue.append(vertex)


class AffinityGraph:
    """The graph, its members and relations, and the analyses rules share."""

    def __init__(
        self,
        inventory: Inventory,
        settings: Settings,
        expansions: Expansions,
        namespace_labels: Mapping[str, Mapping[str, str]],
        cluster: Cluster | None = None,
    ) -> None:
        """The graph of ``inventory``'s workloads and budgets (and ``cluster``'s existing pods),
        with the namespaces' labels of the input, completed by the cluster's."""
        #: Values derived from the graph, built once (:mod:`kaffinity.memo`).
        self.memo = Memo()
        self.version = settings.kube_version
        self.proposals = settings.proposals
        self.default_namespace = settings.namespace
        self.expansions = expansions
        self.namespace_labels: dict[str, dict[str, str]] = {
            name: dict(labels) for name, labels in namespace_labels.items()
        }
        if cluster is not None:
            for namespace in cluster.namespaces:
                self.namespace_labels.setdefault(namespace.ref.name, dict(namespace.labels))
        self.members: dict[str, Member] = {}
        self.relations: list[Relation] = []
        self.by_owner: dict[str, list[Relation]] = {}
        self.pdbs: dict[str, PodDisruptionBudget] = {}
        self._rank: dict[str, int] = {}
        self._index = _Index()
        self._matches: dict[tuple[Any, ...], tuple[frozenset[str], frozenset[str]]] = {}
        self._scope_cache: dict[tuple[Any, ...], bool | None] = {}
        self._listings: dict[frozenset[str], Listing] = {}

        for workload in sorted(inventory.workloads, key=canonical_key):
            if workload.ref.kind != "PodTemplate":  # a template alone creates no pods
                self._add_member(self._workload_member(workload))
        if cluster is not None:
            for member in _pod_groups(cluster.pods, self.default_namespace):
                self._add_member(member)
        for member in list(self.members.values()):
            if member.workload is not None:
                self._add_terms(member)
        for pdb in sorted(inventory.pdbs, key=canonical_key):
            self._add_pdb(pdb)

    # --- building ---------------------------------------------------------------------------

    def _unique(self, name: str) -> str:
        vertex, n = name, 1
        while vertex in self.members or vertex in self.pdbs:
            n += 1
            vertex = f"{name}#{n}"
        return vertex

    def _workload_member(self, workload: Workload) -> Member:
        vertex = self._unique(str(workload.ref))
        labels = pod_labels(workload, self.version, qualified=True)
        return Member(vertex, workload.ref.namespace or self.default_namespace, labels, workload)

    def _add_member(self, member: Member) -> None:
        self._rank[member.id] = len(self.members)
        self.members[member.id] = member
        self._index.add(member)

    def _add_terms(self, member: Member) -> None:
        workload = member.workload
        assert workload is not None
        for kind, required, term in affinity_terms(workload):
            weight = None
            if not required:
                weight = _weight(workload, term.path)
            self._relate(
                member.id,
                workload.doc,
                RELATION_ANTI_AFFINITY if kind == POD_ANTI_AFFINITY else RELATION_AFFINITY,
                required,
                weight,
                term,
                self.expansions.selector(workload, term),
                member.namespace,
            )
        for constraint in workload.pod.topology_spread_constraints:
            self._relate(
                member.id,
                workload.doc,
                RELATION_SPREAD,
                constraint.when_unsatisfiable != "ScheduleAnyway",
                None,
                constraint,
                self.expansions.selector(workload, constraint),
                member.namespace,
            )

    def _add_pdb(self, pdb: PodDisruptionBudget) -> None:
        vertex = self._unique(str(pdb.ref))
        namespace = pdb.ref.namespace or self.default_namespace
        self.pdbs[vertex] = pdb
        selector = pdb.selector
        if selector is not None and selector.is_empty and pdb.ref.api_version == "policy/v1beta1":
            selector = None  # policy/v1beta1: an empty selector selects no pods (v1: every pod)
        self._relate(vertex, pdb.doc, RELATION_PDB, True, None, pdb, selector, namespace)

    def _relate(
        self,
        owner: str,
        doc: Document,
        kind: str,
        required: bool,
        weight: int | None,
        term: PodAffinityTerm | TopologySpreadConstraint | PodDisruptionBudget,
        selector: LabelSelector | None,
        namespace: str,
    ) -> None:
        pod_term = term if isinstance(term, PodAffinityTerm) else None
        scope_key = _scope_key(pod_term, namespace)
        matches, maybe = self._match(selector, pod_term, namespace, scope_key)
        path = ("spec", "selector") if isinstance(term, PodDisruptionBudget) else term.path
        topology_key = None if isinstance(term, PodDisruptionBudget) else term.topology_key
        relation = Relation(
            owner=owner,
            doc=doc,
            kind=kind,
            required=required,
            weight=weight,
            term=term,
            path=path,
            topology_key=topology_key,
            selector=selector,
            scope=_scope_text(pod_term, namespace),
            all_namespaces=pod_term is not None
            and pod_term.namespace_selector is not None
            and pod_term.namespace_selector.is_empty,
            matches=matches,
            maybe=maybe,
        )
        self.relations.append(relation)
        self.by_owner.setdefault(owner, []).append(relation)

    @cached_property
    def graph(self) -> nx.MultiDiGraph[str]:
        """The networkx graph of the members, budgets and relations, built on first use.

        The rules read the relations and :attr:`placement` directly; drawing (``kaffinity
        graph``) and cycle finding need networkx, so a lint whose rules never ask for it does not
        even import it (pre-commit starts kaffinity on every commit).
        """
        import networkx as nx

        graph: nx.MultiDiGraph[str] = nx.MultiDiGraph()
        for member in self.members.values():
            workload = member.workload
            graph.add_node(
                member.id,
                type="workload" if workload is not None else "pods",
                kind=workload.ref.kind if workload is not None else "Pod",
                name=workload.ref.name if workload is not None else str(member),
                namespace=member.namespace,
                replicas=workload.replicas if workload is not None else len(member.pods),
            )
        for vertex, pdb in self.pdbs.items():
            graph.add_node(
                vertex, type="pdb", kind=pdb.ref.kind, name=pdb.ref.name, namespace=self.namespace_of(vertex)
            )
        selector_vertices: dict[tuple[Any, ...], str] = {}
        for relation in self.relations:
            attrs = {
                "kind": relation.kind,
                "required": relation.required,
                "weight": relation.weight,
                "topology_key": relation.topology_key,
                "scope": relation.scope,
                "relation": relation,
            }
            reach = relation.reach
            if len(reach) <= FANOUT:
                for target in sorted(reach, key=self.order):
                    graph.add_edge(relation.owner, target, certain=target in relation.matches, **attrs)
                continue
            # Many matches: one shared node per matched set and selector, its members linked once.
            key = (_selector_key(relation.selector), reach)
            hub = selector_vertices.get(key)
            if hub is None:
                hub = selector_vertices[key] = f"selector:{len(selector_vertices) + 1}"
                graph.add_node(
                    hub,
                    type="selector",
                    name=f"{_selector_text(relation.selector)} in {relation.scope}",
                    members=len(reach),
                )
                for target in sorted(reach, key=self.order):
                    graph.add_edge(hub, target, kind=RELATION_SELECTS, certain=target in relation.matches)
            graph.add_edge(relation.owner, hub, **attrs)
        return graph

    def namespace_of(self, vertex: str) -> str:
        """The namespace of a member or budget."""
        member = self.members.get(vertex)
        if member is not None:
            return member.namespace
        return self.pdbs[vertex].ref.namespace or self.default_namespace

    def matching(
        self, selector: LabelSelector | None, term: PodAffinityTerm | None, namespace: str
    ) -> frozenset[str]:
        """The members a selector of an object in ``namespace`` reaches (certainly or maybe), as a
        term of the graph would (``term``: a pod (anti-)affinity term's namespaces; None: its own
        namespace, as topology spread and budgets): for an object that is not in the graph, the
        previous version of a changed one (:mod:`kaffinity.graph.changes`)."""
        matches, maybe = self._match(selector, term, namespace, _scope_key(term, namespace))
        return matches | maybe if maybe else matches

    def in_scope(self, term: PodAffinityTerm | None, owner: str, namespace: str) -> bool | None:
        """Whether a term of an object in namespace ``owner`` reaches pods in ``namespace``
        (None: it depends on labels of a Namespace nobody declared)."""
        return self._in_scope(term, _scope_key(term, owner), owner, namespace)

    def labelled(self, key: str, value: str) -> list[str]:
        """The members whose pods carry ``key=value`` (from the index; in :meth:`order`)."""
        return self._index.pairs.get((key, value), [])

    def listing(self, vertices: frozenset[str]) -> Listing:
        """``vertices`` as a :class:`Listing`, sorted once per distinct set (terms with the same
        selector and scope share one matched set)."""
        found = self._listings.get(vertices)
        if found is None:
            found = Listing.of([self.members[vertex] for vertex in sorted(vertices, key=self.order)])
            self._listings[vertices] = found
        return found

    def order(self, vertex: str) -> int:
        """A member's rank in the canonical order (workloads by :func:`kaffinity.k8s.model.canonical_key`,
        then the cluster's pod groups), so that the members a message lists, and their order, do
        not depend on the order the files were given."""
        return self._rank[vertex]

    def _match(
        self,
        selector: LabelSelector | None,
        term: PodAffinityTerm | None,
        namespace: str,
        scope_key: tuple[Any, ...],
    ) -> tuple[frozenset[str], frozenset[str]]:
        if selector is None:  # a nil selector matches nothing (LabelSelectorAsSelector)
            return frozenset(), frozenset()
        key = (_selector_key(selector), scope_key)
        found = self._matches.get(key)
        if found is not None:
            return found
        namespaces: Iterable[str] | None = None
        if term is None or (not term.namespaces and term.namespace_selector is None):
            namespaces = (namespace,)
        elif term.namespace_selector is None:
            namespaces = term.namespaces
        matches: list[str] = []
        maybe: list[str] = []
        members = self.members
        for vertex in self._index.narrowest(selector, namespaces):
            member = members[vertex]
            if not selector_matches(selector, member.labels, self.proposals):
                continue
            in_scope = self._in_scope(term, scope_key, namespace, member.namespace)
            if in_scope:
                matches.append(vertex)
            elif in_scope is None:
                maybe.append(vertex)
        found = (frozenset(matches), frozenset(maybe))
        self._matches[key] = found
        return found

    def _in_scope(
        self, term: PodAffinityTerm | None, scope_key: tuple[Any, ...], owner: str, namespace: str
    ) -> bool | None:
        if term is None:
            return namespace == owner
        key = (scope_key, namespace)
        if key not in self._scope_cache:
            self._scope_cache[key] = namespace_in_scope(
                term, owner, namespace, self.namespace_labels.get(namespace)
            )
        return self._scope_cache[key]

    # --- queries ----------------------------------------------------------------------------

    def terms(self, owner: str, kind: str | None = None, required: bool | None = None) -> list[Relation]:
        return [
            relation
            for relation in self.by_owner.get(owner, ())
            if (kind is None or relation.kind == kind) and (required is None or relation.required == required)
        ]

    def workloads(self) -> Iterator[Member]:
        return (member for member in self.members.values() if member.workload is not None)

    @cached_property
    def startable(self) -> Startable:
        """Who can be placed, given required pod affinity alone (see :class:`Startable`)."""
        candidates: dict[str, frozenset[str]] = {}
        self_match: set[str] = set()
        for member in self.workloads():
            required = self.terms(member.id, RELATION_AFFINITY, required=True)
            if not required:
                continue
            common = _common_reach(required)
            if member.id in common:
                self_match.add(member.id)
            candidates[member.id] = common
        placeable = {vertex for vertex in self.members if vertex not in candidates} | self_match
        _spread_placeable(candidates, placeable)
        return Startable(candidates, frozenset(self_match), frozenset(placeable))

    def requires(self) -> nx.DiGraph[str]:
        """The stuck workloads and who each needs (a DiGraph: an edge w → x when x could satisfy w)."""
        return self._needs

    @cached_property
    def _needs(self) -> nx.DiGraph[str]:
        import networkx as nx

        placement = self.startable
        stuck = placement.stuck()
        needs: nx.DiGraph[str] = nx.DiGraph()
        needs.add_nodes_from(stuck)
        for (
            vertex
        ) in stuck:  # in canonical order: the cycles found depend neither on hashing nor on file order
            needs.add_edges_from(
                (vertex, other)
                for other in self.listing(placement.candidates[vertex]).ids_in_order()
                if other != vertex
            )
        return needs

    def deadlocks(self) -> list[list[str]]:
        """Cycles of required affinity no member of which can start; each in order, once."""
        if not self.startable.stuck():
            return []  # the common case: no networkx needed
        import networkx as nx

        needs = self.requires()

        cycles: list[list[str]] = []
        order = self._rank
        for component in nx.strongly_connected_components(needs):
            if len(component) < 2:
                continue
            start = min(component, key=order.__getitem__)
            edges = nx.find_cycle(needs.subgraph(component), source=start)
            cycles.append([edge[0] for edge in edges])
        cycles.sort(key=lambda cycle: order[cycle[0]])
        return cycles

    def location(self, vertex: str) -> str:
        """Where a node's object is written (``file:line:column`` of its name); "" for selectors."""
        member = self.members.get(vertex)
        if member is not None:
            return _where(member.doc, ("metadata", "name"))
        pdb = self.pdbs.get(vertex)
        return _where(pdb.doc, ("metadata", "name")) if pdb is not None else ""

    @staticmethod
    def term_location(relation: Relation) -> str:
        """Where a relation's term is written (``file:line:column``)."""
        return _where(relation.doc, relation.path)


def _pod_groups(pods: Iterable[Workload], default_namespace: str) -> list[Member]:
    groups: dict[tuple[str, tuple[tuple[str, str], ...]], list[Workload]] = {}
    for pod in pods:
        namespace = pod.ref.namespace or default_namespace
        groups.setdefault((namespace, tuple(sorted(pod.pod.labels))), []).append(pod)
    members = []
    for (namespace, labels), group in groups.items():
        vertex = f"pods:{namespace}/{_labels_text(dict(labels)) or group[0].ref.name}"
        members.append(Member(vertex, namespace, dict(labels), None, tuple(group)))
    return members


def _weight(workload: Workload, path: DataPath) -> int | None:
    """The weight of a preferred term (``path`` ends in ``podAffinityTerm``)."""
    affinity = workload.pod.affinity
    if affinity is None:
        return None
    for kind in (affinity.pod_affinity, affinity.pod_anti_affinity):
        for weighted in kind.preferred if kind is not None else ():
            if weighted.term.path == path:
                return weighted.weight
    return None


def _scope_key(term: PodAffinityTerm | None, namespace: str) -> tuple[Any, ...]:
    if term is None or (not term.namespaces and term.namespace_selector is None):
        return ("own", namespace)
    selector = term.namespace_selector
    return ("listed", tuple(sorted(term.namespaces)), None if selector is None else _selector_key(selector))


def _selector_key(selector: LabelSelector | None) -> tuple[Any, ...] | None:
    if selector is None:
        return None
    return (
        tuple(sorted(selector.match_labels)),
        tuple(sorted((r.key, r.operator, tuple(sorted(r.values))) for r in selector.match_expressions)),
    )


def _where(doc: Document, path: DataPath) -> str:
    span = doc.locate(path)
    return f"{doc.file}:{span.line}:{span.column}"


def ordered(graph: AffinityGraph, vertices: Iterable[str]) -> list[Member]:
    """Members in the graph's canonical order (:meth:`AffinityGraph.order`), so messages name the same
    members, in the same order, whatever the order of the files."""
    return [graph.members[vertex] for vertex in sorted(set(vertices), key=graph.order)]
