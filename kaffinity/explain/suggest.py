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

:func:`unknown_pods` says when pods the input does not show might match after all, so that the
rules stay quiet: a workload fragment without pod labels, a custom resource an operator runs pods
for, a namespace the input has no pods of.
"""

from __future__ import annotations

import difflib
import re
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kaffinity.explain.precedence import gives_way
from kaffinity.findings import Related, Violation
from kaffinity.graph.affinity import AffinityGraph, Member, Relation, selector_text
from kaffinity.k8s.model import LabelSelector, PodAffinityTerm, PodDisruptionBudget, Requirement, WorkloadKind
from kaffinity.k8s.model.build import object_ref
from kaffinity.k8s.model.kinds import WORKLOAD_KINDS, custom_workload_kind
from kaffinity.k8s.model.readers import dig
from kaffinity.k8s.selectors import (
    NAMESPACE_NAME_LABEL,
    namespace_in_scope,
    requirement_matches,
    selector_matches,
)
from kaffinity.load.source import Document

if TYPE_CHECKING:
    from kaffinity.context import Context

#: How close two values must be (``difflib.SequenceMatcher.ratio``) to be offered.
CUTOFF = 0.8
#: How many near misses a hint names at most.
LIMIT = 3
#: Values too generic to say that a label under another key is the one meant.
_GENERIC = frozenset({"true", "false", "yes", "no", "on", "off", "enabled", "disabled", "none", "null"})


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


_INDEXES: weakref.WeakKeyDictionary[AffinityGraph, _LabelIndex] = weakref.WeakKeyDictionary()


def _index(graph: AffinityGraph) -> _LabelIndex:
    found = _INDEXES.get(graph)
    if found is None:
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
        _INDEXES[graph] = found
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
            text = f"{requirement.key}={values[0]}" if len(values) == 1 else _text(requirement)
            found.append((requirement.key, values, text))
    return found


def _text(requirement: Requirement) -> str:
    return f"{requirement.key} in ({','.join(requirement.values)})"


def _counterpart(key: str, values: tuple[str, ...], labels: Mapping[str, str]) -> str | None:
    """The label of ``labels`` that the requirement ``key in values`` most likely meant."""
    best: tuple[float, str] | None = None
    for value in values:
        if len(value) < 2 or value.lower() in _GENERIC:
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


# --- pods the input does not show -------------------------------------------------------------

#: API groups of the built-in kinds (``kubectl api-resources``); another group with a dot in its
#: name is a custom resource's.
_BUILTIN_GROUPS = frozenset(
    {
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "flowcontrol.apiserver.k8s.io",
        "internal.apiserver.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
        "storagemigration.k8s.io",
        "kaffinity.io",  # kaffinity's own ClusterTopology
    }
)
#: Keys in a custom resource's spec that say an operator runs pods for it (Prometheus,
#: Alertmanager, Kafka, OpenTelemetryCollector... have replicas, image, resources, podMetadata).
_POD_KEYS = frozenset(
    {
        "replicas",
        "image",
        "containers",
        "template",
        "podTemplate",
        "podMetadata",
        "affinity",
        "nodeSelector",
        "tolerations",
        "resources",
        "topologySpreadConstraints",
    }
)
#: Controllers whose pod template must carry labels (their selector must match them, and a
#: ReplicationController's defaults to them): such a workload without pod labels cannot be created
#: as written, so it is a fragment (a kustomize base or patch) whose labels come later.
_SELECTOR_REQUIRED = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "ReplicationController")


def _runs_pods(data: Any, depth: int = 0) -> bool:
    if not isinstance(data, Mapping) or depth > 3:
        return False
    return any(key in _POD_KEYS or _runs_pods(value, depth + 1) for key, value in data.items())


def custom_resource(doc: Document, workload_kinds: Iterable[WorkloadKind] = ()) -> bool:
    """Whether the document is a custom resource that looks like it makes an operator run pods
    the input does not show (not a custom workload kind: its pods are in the graph)."""
    api_version, kind = doc.data.get("apiVersion"), doc.data.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str) or "/" not in api_version:
        return False
    group = api_version.split("/", 1)[0]
    if "." not in group or group in _BUILTIN_GROUPS or kind in WORKLOAD_KINDS:
        return False
    definition = custom_workload_kind(doc.data, workload_kinds)
    if definition is not None and isinstance(dig(doc.data, definition.template), Mapping):
        return False
    return _runs_pods(doc.data.get("spec"))


def fragment(member: Member) -> bool:
    """Whether a workload's pod labels are unknown: the input holds only a fragment of it."""
    workload = member.workload
    if workload is None:
        return False
    return workload.ref.kind in _SELECTOR_REQUIRED and not workload.pod.labels


@dataclass(slots=True)
class _Unknowns:
    fragments: dict[str, list[Member]]  # by namespace
    custom: dict[str, list[Document]]  # custom resources that may run pods, by namespace
    described: frozenset[str]  # the namespaces of every workload and existing pod


_UNKNOWNS: weakref.WeakKeyDictionary[AffinityGraph, _Unknowns] = weakref.WeakKeyDictionary()


def _unknowns(context: Context) -> _Unknowns:
    """The workload fragments and custom resources of the input, by namespace (once per graph)."""
    graph = context.graph
    workloads = list(graph.workloads())
    # A fragment named like a complete workload is a patch of it (kustomize patches): its
    # pods carry the complete workload's labels, which the graph already has.
    complete = {_ref_key(m) for m in workloads if not fragment(m)}
    fragments: dict[str, list[Member]] = {}
    for member in workloads:
        if fragment(member) and _ref_key(member) not in complete:
            fragments.setdefault(member.namespace, []).append(member)
    custom: dict[str, list[Document]] = {}
    for doc in context.inventory.documents:
        if custom_resource(doc, context.settings.workload_kinds):
            namespace = object_ref(doc, graph.default_namespace).namespace or graph.default_namespace
            custom.setdefault(namespace, []).append(doc)
    return _Unknowns(fragments, custom, frozenset(member.namespace for member in graph.members.values()))


def unknown_pods(context: Context, relation: Relation) -> str | None:
    """Why pods the input does not show might match in the relation's namespaces (None: none can).

    Two sources the graph cannot see: a workload fragment without its labels (kustomize adds them
    when it renders), and a custom resource whose operator creates the pods (prometheus-operator
    makes the ``Prometheus`` StatefulSet). A rule about selectors that match nothing stays quiet
    then: when unsure, say nothing.
    """
    graph = context.graph
    found = _UNKNOWNS.get(graph)
    if found is None:
        found = _UNKNOWNS[graph] = _unknowns(context)
    named = scope_namespaces(graph, relation)
    # Scope depends on the namespace alone: test each namespace once, never each object.
    for namespace, members in found.fragments.items():
        if (named is None or namespace in named) and in_scope(graph, relation, members[0]) is not False:
            return f"{members[0]} has no pod labels in the input"
    for namespace, docs in found.custom.items():
        probe = Member("", namespace, {})
        if (named is None or namespace in named) and in_scope(graph, relation, probe) is not False:
            return f"{object_ref(docs[0], graph.default_namespace)} may make its operator run matching pods"
    if context.complete:
        return None
    why = _undescribed(graph, relation, found.described)
    if why is not None and not outside_scope(graph, relation, limit=1):
        # Other workloads' matching pods elsewhere in the input are evidence of a namespace
        # mistake: report then. (Its own pods outside the namespaces it lists are no evidence.)
        return why
    return None


def _undescribed(graph: AffinityGraph, relation: Relation, described: frozenset[str]) -> str | None:
    """Whether the relation reaches namespaces whose pods the input does not show at all.

    A repository describes the namespaces it deploys to; pods in other namespaces are deployed
    from elsewhere, so a selector that reaches such a namespace may well match (unless the input
    is declared complete: ``--closed``, or a cluster file listing the running pods).
    """
    term = relation.term
    if isinstance(term, PodAffinityTerm):
        selector = term.namespace_selector
        if selector is not None and selector.is_empty:
            return "the term reaches every namespace, and the input shows the pods of only some"
        if selector is not None:
            return "namespaces the input does not describe may carry the labels its namespaceSelector selects"
        missing = [namespace for namespace in term.namespaces if namespace not in described]
        if missing:
            return f"the input shows no pods of namespace {missing[0]}"
        return None
    namespace = owner_namespace(graph, relation)
    if namespace not in described:
        return f"the input shows no pods of namespace {namespace}"
    return None


def _ref_key(member: Member) -> tuple[str, str, str]:
    assert member.workload is not None
    ref = member.workload.ref
    return (ref.kind, ref.namespace or "", ref.name)


def nobody(context: Context) -> str:
    """Who was searched: the input's workloads, and the cluster's running pods when listed."""
    cluster = context.cluster
    return "no workload or existing pod" if cluster is not None and cluster.has_pods else "no workload"


# --- a term meant for the workload's own pods ---------------------------------------------------

_TOKEN = re.compile(r"[-_./]+")


def _tokens(value: str) -> frozenset[str]:
    return frozenset(token for token in _TOKEN.split(value.lower()) if token)


def _services(context: Context, member: Member) -> list[str]:
    """The names of the Services in the input that select the member's pods (same namespace)."""
    found = []
    for doc in context.inventory.documents:
        data = doc.data
        if data.get("kind") != "Service" or data.get("apiVersion") != "v1":
            continue
        spec = data.get("spec")
        selector = spec.get("selector") if isinstance(spec, Mapping) else None
        if not isinstance(selector, Mapping) or not selector:
            continue
        ref = object_ref(doc, context.graph.default_namespace)
        namespace = ref.namespace or context.graph.default_namespace
        if namespace == member.namespace and all(
            member.labels.get(str(key)) == str(value) for key, value in selector.items()
        ):
            found.append(ref.name)
    return found


def _names_the_workload(value: str, own: str, names: Mapping[str, str]) -> str | None:
    """Why ``value`` (written where the pods carry ``own``) names the workload itself, or None:
    the name of the workload or of a Service that selects its pods (``zk-hs``, the ZooKeeper
    tutorial's headless Service), or the pods' own value with words added or dropped
    (``pulsar-zookeeper`` for ``pulsar``: the chart's release-component name). ``names``: each
    name and what it names."""
    if value.lower() in _GENERIC or len(value) < 2:
        return None
    if value in names:
        return f"{value} is the name of {names[value]}"
    written, carried = _tokens(value), _tokens(own)
    if written and carried and (carried <= written or written <= carried):
        return f"{value} is {own} with words {'added' if carried <= written else 'dropped'}"
    return None


def own_typo(context: Context, member: Member, relation: Relation) -> str:
    """The hint for a required anti-affinity term meant for the workload's own pods, with a wrong
    value; "" when the term does not look like one.

    The term matches no pod anywhere (the caller checks), its namespaces include the workload's
    own, every written requirement the own pods fail is an equality (``matchLabels``, ``In``) on a
    key they carry with another value, and each such value names the workload itself
    (:func:`_names_the_workload`). A term meant to repel another application deployed elsewhere
    (``app In [database]`` in ``app: web``) names something else, and stays quiet.
    """
    workload = member.workload
    written = written_selector(relation)
    if workload is None or written is None or written.is_empty:
        return ""
    graph = context.graph
    if in_scope(graph, relation, member) is not True:
        return ""
    labels = member.labels
    failing: list[tuple[str, tuple[str, ...], str]] = []
    for key, value in written.match_labels:
        if labels.get(key) != value:
            if key not in labels:
                return ""
            failing.append((f"{key}={value}", (value,), key))
    for requirement in written.match_expressions:
        if requirement_matches(requirement, labels):
            continue
        if requirement.operator != "In" or requirement.key not in labels:
            return ""
        failing.append((_text(requirement), requirement.values, requirement.key))
    if not failing:
        return ""
    names = {name: f"Service {name}, which selects these pods" for name in _services(context, member)}
    names[workload.ref.name] = f"this {workload.ref.kind}"
    edits, reasons = [], []
    for text, values, key in failing:
        why = next((w for v in values if (w := _names_the_workload(v, labels[key], names))), None)
        if why is None:
            return ""
        edits.append(f"{key}={labels[key]} instead of {text}")
        reasons.append(why)
    return (
        f"did you mean {', '.join(edits)}? This workload's own pods carry "
        f"{', '.join(f'{key}={labels[key]}' for _, _, key in failing)} ({'; '.join(reasons)}), and no "
        "pod carries what the term selects, so it keeps nothing apart."
    )


def silent_terms(
    context: Context,
    *,
    required: bool,
    kinds: tuple[str, ...],
    describe: Callable[[Relation], tuple[str, str]],
    rule: str,
    own_values: bool = False,
) -> Iterator[Violation]:
    """Findings on terms of ``kinds`` that match no pod, not even their own, and look like a mistake.

    ``describe`` names the term ("preferred pod affinity (weight 5)") and what its silence means.
    ``own_values``: a term meant for the workload's own pods with a wrong value is such a mistake
    too (:func:`own_typo`). ``rule``: whose findings these are (a term without labelSelector is
    api-warning's, unless this rule is the more severe: :mod:`kaffinity.explain.precedence`). Shared by
    preferred-no-match and anti-affinity-no-match.
    """
    graph = context.graph
    for member in graph.workloads():
        workload = member.workload
        assert workload is not None
        for relation in graph.terms(member.id, required=required):
            if relation.kind not in kinds or relation.reach:
                continue
            # A term without labelSelector matches no pod either: api-warning says so in the API
            # server's words ("a null labelSelector results in matching no pod",
            # pkg/api/pod/warnings.go); this finding gives way unless it is the more severe.
            if written_selector(relation) is None:
                if not gives_way(context, (rule, None), ("api-warning", None), tie_to_other=True):
                    what, consequence = describe(relation)
                    yield Violation(
                        relation.doc,
                        relation.path,
                        f"{what} has no labelSelector, and a null selector matches no pod; {consequence}",
                        fix="add a labelSelector naming the pods it means, or remove the term",
                    )
                continue
            if unknown_pods(context, relation) is not None:
                continue  # pods the input does not show (a fragment's, an operator's) might match
            suggestion, where = hint(graph, relation)
            if not suggestion and own_values:
                suggestion = own_typo(context, member, relation)
            if not suggestion and not context.complete:
                # Without a sign of a mistake, the pods it means may come from another repository
                # (a cache, a metrics agent): a finding about a correct manifest is still noise.
                continue
            what, consequence = describe(relation)
            message = (
                f"{what} matches no pod: {nobody(context)} in {relation.scope} has "
                f"{selector_text(relation.selector)}, not even this one; {consequence}"
            )
            fix = "point the selector at the labels the pods it means really carry, or remove the term"
            if suggestion:
                fix = f"{suggestion} Otherwise {fix}"
            related = (
                Related(workload.doc, (*workload.pod.metadata_path, "labels"), "this pod's labels"),
                *where,
            )
            yield Violation(
                relation.doc, (*relation.path, "labelSelector"), message, related=related, fix=fix
            )
