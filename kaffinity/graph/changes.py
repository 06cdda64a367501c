"""The objects a change relates to (``lint --changed``), and why: the relation index.

A change to one object can break another that did not change: renaming a pod label breaks the
required pod affinity of another Deployment that selected the old label, and after the change
that term selects nothing at all, so the relation exists only in the previous version. So each
relation is looked for both ways and in both versions of the changed files
(:class:`kaffinity.repo.changed.Change`): a term or budget of another object that selects the
changed object's pods before (their labels at ``HEAD``) or now (``selects``, ``budget``); a term
or budget of the changed object, before or now, that selects another's pods (``selected-by``,
``budget``); a HorizontalPodAutoscaler over a changed workload or a changed one over another
(``autoscaler``); with a declared cluster, any change to what the scheduler reads of a workload's
pods changes where the unit's pods go (``placement``).

Built from what the run has already built for the unit: the affinity graph's relations (each
term and budget with the members it reaches) and its label index, which answers for the previous
versions' selectors as for any term (:meth:`AffinityGraph.matching`). Every relation is read
once and compared with the few changed objects: linear in the unit's size, never pairwise.
Objects are matched by identity (kind, namespace, name).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kaffinity.findings import (
    CAUSE_AUTOSCALER,
    CAUSE_BUDGET,
    CAUSE_PLACEMENT,
    CAUSE_SELECTED_BY,
    CAUSE_SELECTS,
    MAX_CAUSES,
    Cause,
)
from kaffinity.k8s.model import ObjectRef, PodAffinityTerm, PodDisruptionBudget, Workload, build_object
from kaffinity.k8s.model.build import object_ref
from kaffinity.k8s.selectors import selector_matches
from kaffinity.load.source import Document, format_path

if TYPE_CHECKING:
    from kaffinity.config import Settings
    from kaffinity.graph.affinity import AffinityGraph
    from kaffinity.graph.members import Relation as GraphRelation
    from kaffinity.repo.changed import Change

#: An object's identity: kind, namespace (None: cluster-scoped), name.
Key = tuple[str, "str | None", str]

_HPA = "HorizontalPodAutoscaler"


def identity(ref: ObjectRef) -> Key:
    return (ref.kind, ref.namespace, ref.name)


#: The findings on an object that a change of the pods its term or budget selects can cause, or
#: of the pods a changed term selects: placement (``topology``) and rollouts (``rollout``).
_MOVED = frozenset(("topology", "rollout"))
_ROLLOUT = frozenset(("rollout",))


@dataclass(frozen=True, slots=True)
class Link:
    """One cause of the findings on a related object, and which of its findings it explains:
    those at or below the data path ``path`` (the term that selects the changed pods: its
    ``affinity-no-match``, not the object's unrelated ``replicas-not-spread``), or of the rule
    categories ``categories``; None: any."""

    cause: Cause
    path: str | None = None
    categories: frozenset[str] | None = None

    def admits(self, path: str, category: str) -> bool:
        if self.path is not None and not (_within(path, self.path) or _within(self.path, path)):
            return False
        return self.categories is None or category in self.categories


def _within(path: str, outer: str) -> bool:
    """Whether data path ``path`` is ``outer`` or below it (a preferred term's finding may be at
    its weighted entry, the term one level below)."""
    return bool(outer) and (path == outer or path.startswith((outer + ".", outer + "[")))


@dataclass(slots=True)
class Related:
    """The objects of one unit a change relates to, by identity, each with its links; and, when
    the change moves the unit's pods on the declared cluster, the causes of that."""

    causes: dict[Key, list[Link]] = field(default_factory=dict)
    placement: tuple[Cause, ...] = ()

    def add(
        self, key: Key, cause: Cause, path: str | None = None, categories: frozenset[str] | None = None
    ) -> None:
        found = self.causes.setdefault(key, [])
        link = Link(cause, path, categories)
        if link not in found and len(found) < 4 * MAX_CAUSES:
            found.append(link)

    def of(self, key: Key, path: str, category: str) -> list[Cause]:
        """The causes of a finding on object ``key`` at data path ``path`` of rule category
        ``category``."""
        return [link.cause for link in self.causes.get(key, ()) if link.admits(path, category)]


def related(
    graph: AffinityGraph,
    documents: Sequence[Document],
    change: Change,
    settings: Settings,
    *,
    present: Collection[str],
    placement: bool,
) -> Related:
    """What ``change`` relates to among ``documents`` (one unit's, whose affinity graph is
    ``graph``). ``present``: the files that have objects now (in any unit): the previous
    version of a changed file that has none now belongs to every unit. ``placement``: the unit's
    pods are placed on a declared cluster (placement findings can move with the change)."""
    found = Related()
    files = change.files
    here = {doc.file for doc in documents}
    old_docs = [
        doc for file, docs in change.previous.items() if file in here or file not in present for doc in docs
    ]
    if not (files & here or old_docs):
        return found
    namespace = settings.namespace
    old: list[tuple[Workload | PodDisruptionBudget, str]] = []
    for doc in old_docs:
        obj = build_object(doc, namespace, settings.workload_kinds)
        if isinstance(obj, (Workload, PodDisruptionBudget)):
            old.append((obj, doc.file))
    changed = {
        vertex: member.workload.ref
        for vertex, member in graph.members.items()
        if member.workload is not None and member.workload.doc.file in files
    }
    changed.update({vertex: pdb.ref for vertex, pdb in graph.pdbs.items() if pdb.doc.file in files})
    _selecting_now(graph, changed, found)
    _selected_now(graph, changed, found)
    _previous(graph, old, changed, settings, found)
    scaled = {identity(obj.ref): (file, obj.ref) for obj, file in old}
    scaled.update({identity(ref): (_file_of(graph, vertex), ref) for vertex, ref in changed.items()})
    _autoscalers(documents, old_docs, files, scaled, namespace, found)
    if placement:
        found.placement = _moved(graph, changed, old)
    return found


def _ref_of(graph: AffinityGraph, vertex: str) -> ObjectRef | None:
    member = graph.members.get(vertex)
    if member is not None:
        return member.workload.ref if member.workload is not None else None
    pdb = graph.pdbs.get(vertex)
    return pdb.ref if pdb is not None else None


def _file_of(graph: AffinityGraph, vertex: str) -> str:
    member = graph.members.get(vertex)
    if member is not None:
        return member.doc.file
    return graph.pdbs[vertex].doc.file


def _selecting_now(graph: AffinityGraph, changed: Mapping[str, ObjectRef], found: Related) -> None:
    """The terms and budgets of unchanged objects that select a changed object's pods now."""
    if not changed:
        return

    for relation in graph.relations:
        if relation.owner in changed:
            continue
        reach = relation.reach
        for vertex, ref in changed.items():
            if vertex in reach:
                owner = _ref_of(graph, relation.owner)
                if owner is not None:
                    _owner_link(found, identity(owner), relation, Cause(_file_of(graph, vertex), "", ref))
                break


def _owner_link(found: Related, owner: Key, relation: GraphRelation, cause: Cause) -> None:
    """The link of an unchanged term or budget that selects (or selected) changed pods: every
    finding of a budget; of a term, those at or below the term."""
    from kaffinity.graph.members import RELATION_PDB

    if relation.kind == RELATION_PDB:
        found.add(owner, replace(cause, relation=CAUSE_BUDGET))
    else:
        found.add(owner, replace(cause, relation=CAUSE_SELECTS), path=format_path(relation.path))


def _selected_now(graph: AffinityGraph, changed: Mapping[str, ObjectRef], found: Related) -> None:
    """The objects a changed object's terms and budgets select now."""
    from kaffinity.graph.members import RELATION_PDB

    for vertex, ref in changed.items():
        file = _file_of(graph, vertex)
        for relation in graph.by_owner.get(vertex, ()):
            budget = relation.kind == RELATION_PDB
            cause = Cause(file, CAUSE_BUDGET if budget else CAUSE_SELECTED_BY, ref)
            _reached(graph, relation.reach, vertex, cause, found, _ROLLOUT if budget else _MOVED)


def _reached(
    graph: AffinityGraph,
    reach: Iterable[str],
    owner: str,
    cause: Cause,
    found: Related,
    categories: frozenset[str],
) -> None:
    """The objects a changed term or budget selects: their placement and rollout findings
    (``categories``) can move with it."""
    for target in reach:
        if target == owner:
            continue
        ref = _ref_of(graph, target)
        if ref is not None:
            found.add(identity(ref), cause, categories=categories)


def _previous(
    graph: AffinityGraph,
    old: Sequence[tuple[Workload | PodDisruptionBudget, str]],
    changed: Mapping[str, ObjectRef],
    settings: Settings,
    found: Related,
) -> None:
    """The relations of the previous versions: the unchanged terms and budgets that selected a
    changed workload's pods by their labels at ``HEAD``, and the objects the previous terms and
    budgets of a changed object selected."""
    if not old:
        return
    from kaffinity.expand.merge import affinity_terms, pod_labels

    version, proposals = settings.kube_version, settings.proposals
    # The previous pods, indexed by each of their labels: a relation is compared only with those
    # that carry one label its selector requires (all of them when it requires none).
    pods: list[tuple[Workload, str, str, Mapping[str, str]]] = []
    by_pair: dict[tuple[str, str], list[int]] = {}
    for obj, file in old:
        if isinstance(obj, PodDisruptionBudget):
            ns = obj.ref.namespace or settings.namespace
            selector = obj.selector
            if selector is not None and selector.is_empty and obj.ref.api_version == "policy/v1beta1":
                selector = None
            cause = Cause(file, CAUSE_BUDGET, obj.ref)
            _reached(graph, graph.matching(selector, None, ns), "", cause, found, _ROLLOUT)
            continue
        if obj.ref.kind == "PodTemplate":
            continue
        ns = obj.ref.namespace or settings.namespace
        labels = pod_labels(obj, version, qualified=True)
        for pair in labels.items():
            by_pair.setdefault(pair, []).append(len(pods))
        pods.append((obj, file, ns, labels))
        cause = Cause(file, CAUSE_SELECTED_BY, obj.ref)
        for _, _, term in affinity_terms(obj):
            reach = graph.matching(graph.expansions.selector(obj, term), term, ns)
            _reached(graph, reach, "", cause, found, _MOVED)
        for constraint in obj.pod.topology_spread_constraints:
            selector = graph.expansions.selector(obj, constraint)
            _reached(graph, graph.matching(selector, None, ns), "", cause, found, _MOVED)
    if pods:
        _selected_before(graph, pods, by_pair, changed, proposals, found)


def _selected_before(
    graph: AffinityGraph,
    pods: Sequence[tuple[Workload, str, str, Mapping[str, str]]],
    by_pair: Mapping[tuple[str, str], list[int]],
    changed: Mapping[str, ObjectRef],
    proposals: bool,
    found: Related,
) -> None:
    """The unchanged terms and budgets that selected the previous pods of a changed workload
    (``pods``: workload, file, namespace, labels; ``by_pair``: their indexes by label)."""

    everyone = range(len(pods))
    for relation in graph.relations:
        if relation.owner in changed or relation.selector is None:
            continue
        selector = relation.selector
        candidates: Iterable[int] = (
            by_pair.get(selector.match_labels[0], ()) if selector.match_labels else everyone
        )
        owner_ns = graph.namespace_of(relation.owner)
        term = relation.term if isinstance(relation.term, PodAffinityTerm) else None
        for index in candidates:
            workload, file, ns, labels = pods[index]
            if not selector_matches(selector, labels, proposals):
                continue
            if (graph.in_scope(term, owner_ns, ns) is False) if term is not None else ns != owner_ns:
                continue
            owner = _ref_of(graph, relation.owner)
            if owner is not None:
                _owner_link(found, identity(owner), relation, Cause(file, "", workload.ref))


def _autoscalers(
    documents: Iterable[Document],
    old_docs: Iterable[Document],
    files: Collection[str],
    changed: Mapping[Key, tuple[str, ObjectRef]],
    namespace: str,
    found: Related,
) -> None:
    """HorizontalPodAutoscalers (``spec.scaleTargetRef``, in their own namespace): a changed one
    relates to the workload it scales (now or before); a changed workload to its autoscaler."""
    for doc in (*documents, *old_docs):
        if doc.data.get("kind") != _HPA:
            continue
        target = _scale_target(doc, namespace)
        if target is None:
            continue
        ref = object_ref(doc, namespace)
        if doc.file in files:
            found.add(target, Cause(doc.file, CAUSE_AUTOSCALER, ref))
        else:
            hit = changed.get(target)
            if hit is not None:
                found.add(identity(ref), Cause(hit[0], CAUSE_AUTOSCALER, hit[1]))


def _scale_target(doc: Document, default_namespace: str) -> Key | None:
    data: Any = doc.data
    spec, metadata = data.get("spec"), data.get("metadata")
    target = spec.get("scaleTargetRef") if isinstance(spec, Mapping) else None
    if not isinstance(target, Mapping) or not isinstance(target.get("kind"), str):
        return None
    namespace = metadata.get("namespace") if isinstance(metadata, Mapping) else None
    scope = namespace if isinstance(namespace, str) and namespace else default_namespace
    return (target["kind"], scope, str(target.get("name")))


def _moved(
    graph: AffinityGraph,
    changed: Mapping[str, ObjectRef],
    old: Sequence[tuple[Workload | PodDisruptionBudget, str]],
) -> tuple[Cause, ...]:
    """The changed workloads whose pods, as the scheduler reads them, differ from their previous
    version (or that are new or gone): where the unit's pods go may differ with them."""
    before = {identity(obj.ref): (obj, file) for obj, file in old if isinstance(obj, Workload)}
    causes: list[Cause] = []
    seen: set[Key] = set()
    for vertex, ref in changed.items():
        member = graph.members.get(vertex)
        if member is None or member.workload is None:
            continue
        key = identity(ref)
        seen.add(key)
        previous = before.get(key)
        if previous is None or _placed(previous[0]) != _placed(member.workload):
            causes.append(Cause(member.doc.file, CAUSE_PLACEMENT, ref))
    causes.extend(
        Cause(file, CAUSE_PLACEMENT, workload.ref)
        for key, (workload, file) in before.items()
        if key not in seen
    )
    return tuple(causes[:MAX_CAUSES])


def _placed(workload: Workload) -> tuple[Any, ...]:
    """What the offline scheduler reads of a workload's pods (not their annotations)."""
    pod = workload.pod
    return (
        workload.replicas,
        workload.strategy,
        pod.labels,
        pod.node_selector,
        pod.affinity,
        pod.tolerations,
        pod.topology_spread_constraints,
        pod.requests,
        pod.node_name,
        pod.scheduler_name,
        pod.host_network,
        pod.host_ports,
        pod.gated,
        pod.preemption_policy,
    )
