"""Pods the input does not show: why a selector that matches nothing in the input may still match.

Two sources the affinity graph cannot see: a workload fragment without its labels (kustomize
adds them when it renders), and a custom resource whose operator creates the pods
(prometheus-operator makes the ``Prometheus`` StatefulSet). A rule about selectors that match
nothing stays quiet then (:func:`unknown_pods`): when unsure, say nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kaffinity.explain.suggest import in_scope, outside_scope, owner_namespace, scope_namespaces
from kaffinity.graph.affinity import AffinityGraph
from kaffinity.graph.members import Member, Relation
from kaffinity.k8s.model import PodAffinityTerm, WorkloadKind
from kaffinity.k8s.model.build import object_ref
from kaffinity.k8s.model.kinds import WORKLOAD_KINDS, custom_workload_kind
from kaffinity.k8s.model.readers import dig
from kaffinity.load.source import Document

if TYPE_CHECKING:
    from kaffinity.context import Context


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
    found = graph.memo.get("explain.unknown.pods", lambda: _unknowns(context))
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
