"""The objects kaffinity reasons about as typed, immutable views: a workload (:class:`Workload`:
where its pod template is, its labels, replicas, update strategy, selector), its scheduling terms
(each keeping its data path, so a rule reports a term and the engine finds its line), namespaces,
nodes, disruption budgets, priority classes, the :class:`Inventory` of a set of documents; and
how objects are told apart and sorted (:func:`canonical_key`), Helm hooks among them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

from kaffinity.k8s.model.kinds import WorkloadKind
from kaffinity.k8s.model.readers import Labels
from kaffinity.load.source import DataPath, Document


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """apiVersion, kind, namespace (None for cluster-scoped objects) and name of an object."""

    api_version: str
    kind: str
    namespace: str | None
    name: str

    def __str__(self) -> str:
        scope = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{scope}{self.name}"


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``matchExpressions`` entry (label or node selector)."""

    key: str
    operator: str
    values: tuple[str, ...]
    path: DataPath


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A metav1 LabelSelector. Whether a selector is nil is told by its absence (None)."""

    match_labels: Labels
    match_expressions: tuple[Requirement, ...]
    path: DataPath

    @property
    def is_empty(self) -> bool:
        """``{}``: matches everything (nil, i.e. no selector, matches nothing)."""
        return not self.match_labels and not self.match_expressions


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    label_selector: LabelSelector | None
    namespaces: tuple[str, ...]
    namespace_selector: LabelSelector | None
    topology_key: str
    match_label_keys: tuple[str, ...]
    mismatch_label_keys: tuple[str, ...]
    path: DataPath


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    weight: int | None
    term: PodAffinityTerm
    path: DataPath


@dataclass(frozen=True, slots=True)
class PodAffinity:
    """podAffinity or podAntiAffinity: required and preferred terms."""

    required: tuple[PodAffinityTerm, ...]
    preferred: tuple[WeightedPodAffinityTerm, ...]
    path: DataPath


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    match_expressions: tuple[Requirement, ...]
    match_fields: tuple[Requirement, ...]
    path: DataPath


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    weight: int | None
    preference: NodeSelectorTerm
    path: DataPath


@dataclass(frozen=True, slots=True)
class NodeAffinity:
    required: tuple[NodeSelectorTerm, ...] | None
    preferred: tuple[PreferredSchedulingTerm, ...]
    path: DataPath
    #: ``requiredDuringSchedulingRequiredDuringExecution``: KEP-4328, a proposal no release
    #: accepts; analyses honour it only with ``--proposals`` (Settings.proposals).
    required_during_execution: tuple[NodeSelectorTerm, ...] | None = None


@dataclass(frozen=True, slots=True)
class Affinity:
    node_affinity: NodeAffinity | None
    pod_affinity: PodAffinity | None
    pod_anti_affinity: PodAffinity | None
    path: DataPath


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str
    path: DataPath


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    max_skew: int | None
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None
    min_domains: int | None
    node_affinity_policy: str | None
    node_taints_policy: str | None
    match_label_keys: tuple[str, ...]
    path: DataPath


@dataclass(frozen=True, slots=True)
class UpdateStrategy:
    """Deployment ``strategy`` or StatefulSet/DaemonSet ``updateStrategy``, with API defaults.

    Surge and unavailable stay as written (int or percent string); resolving them against the
    replica count is the rollout arithmetic's job.
    """

    type: str
    max_surge: int | str | None
    max_unavailable: int | str | None
    partition: int | None
    path: DataPath


@dataclass(frozen=True, slots=True)
class PodView:
    """What a workload's pods look like: metadata and every scheduling-relevant field."""

    labels: Labels
    annotations: Labels
    node_selector: Labels
    affinity: Affinity | None
    tolerations: tuple[Toleration, ...]
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...]
    requests: tuple[tuple[str, Decimal], ...]
    node_name: str | None
    scheduler_name: str
    host_network: bool
    metadata_path: DataPath
    spec_path: DataPath
    #: (protocol, hostIP, hostPort) of every container port with a host port (:func:`host_ports`)
    host_ports: tuple[tuple[str, str, int], ...] = ()
    #: ``spec.schedulingGates`` is not empty: the scheduler leaves the pod alone (KEP-3521)
    gated: bool = False
    #: ``spec.preemptionPolicy`` (core/v1 default PreemptLowerPriority)
    preemption_policy: str = "PreemptLowerPriority"


@dataclass(frozen=True, slots=True)
class Workload:
    """An object that creates pods, reduced to one view of them.

    ``replicas`` is the number of pods that run at once when rolled out, with the API defaults
    (1 for Deployments, ReplicaSets, ReplicationControllers, StatefulSets and Pods; Job and
    CronJob ``parallelism``, capped by ``completions``); None for a DaemonSet (one per eligible
    node) and a PodTemplate (creates nothing itself). A custom kind's (``custom``) follow its
    definition (:class:`WorkloadKind`).
    """

    ref: ObjectRef
    doc: Document
    replicas: int | None
    selector: LabelSelector | None
    strategy: UpdateStrategy | None
    pod_management_policy: str | None
    pod: PodView
    template_path: DataPath
    #: The definition of a custom resource kind (None for the nine built-in kinds).
    custom: WorkloadKind | None = None

    @property
    def controller(self) -> str:
        """The built-in kind whose controller creates these pods the same way (one pod per node,
        ordinal pods, interchangeable replicas...): the kind itself for a built-in kind."""
        return self.custom.controller if self.custom is not None else self.ref.kind


@dataclass(frozen=True, slots=True)
class Namespace:
    ref: ObjectRef
    doc: Document
    labels: Labels


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str
    path: DataPath


@dataclass(frozen=True, slots=True)
class Node:
    ref: ObjectRef
    doc: Document
    labels: Labels
    taints: tuple[Taint, ...]
    allocatable: tuple[tuple[str, Decimal], ...]
    unschedulable: bool
    #: Where the node is declared in ``doc``: () for a Node object, the pool of a ClusterTopology.
    path: DataPath = ()


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    ref: ObjectRef
    doc: Document
    selector: LabelSelector | None
    min_available: int | str | None
    max_unavailable: int | str | None


@dataclass(frozen=True, slots=True)
class PriorityClass:
    """A ``scheduling.k8s.io`` PriorityClass: the priority its name gives a pod
    (``value``, None when not an integer), whether it is the default for pods naming none, and
    the ``preemptionPolicy`` it gives them (``PreemptLowerPriority`` when unset, as
    ``scheduling/v1.SetDefaults_PriorityClass`` defaults it)."""

    ref: ObjectRef
    doc: Document
    value: int | None
    global_default: bool
    preemption_policy: str = "PreemptLowerPriority"


Object = Workload | Namespace | Node | PodDisruptionBudget | PriorityClass


@dataclass(frozen=True, slots=True)
class Inventory:
    """Everything kaffinity read, sorted by kind of object, in input order (the graph and the
    placement put them in canonical order: see canonical_key).

    ``workloads`` are the steady-state ones: what the graph, the disruption budgets, topology
    spread, anti-affinity counts and the placement read. Helm hooks (:func:`is_hook`) are kept
    apart in ``hooks``: the rules that lint one workload at a time read both
    (:attr:`every_workload`)."""

    documents: tuple[Document, ...]
    workloads: tuple[Workload, ...]
    namespaces: tuple[Namespace, ...]
    nodes: tuple[Node, ...]
    pdbs: tuple[PodDisruptionBudget, ...]
    priority_classes: tuple[PriorityClass, ...] = ()
    #: Workloads that are Helm hooks: run at install/upgrade/test and deleted, never running
    #: beside the release's pods (:func:`is_hook`).
    hooks: tuple[Workload, ...] = ()

    @property
    def every_workload(self) -> tuple[Workload, ...]:
        """The steady-state workloads and the hooks: for the rules that read one at a time."""
        return self.workloads + self.hooks if self.hooks else self.workloads


#: The annotation that makes a chart's object a Helm hook.
HELM_HOOK = "helm.sh/hook"


def is_hook(doc: Document) -> bool:
    """Whether an object is a Helm hook (``metadata.annotations["helm.sh/hook"]``): not a
    steady-state object of its release. Helm sorts hooks out of the release's manifest
    (helm/helm pkg/release/util/manifest_sorter.go, SortManifests), creates them at their event
    (pre-/post-install, -upgrade, -rollback, -delete, test) and waits for a Job to complete or a
    Pod to succeed before going on (pkg/action/hooks.go, execHook); it deletes them per
    ``helm.sh/hook-delete-policy``, ``before-hook-creation`` when none is given (execHook sets
    it), so a hook's pods never run beside the release's pods for long: a disruption budget,
    a spread constraint or an anti-affinity term never counts them, and the placement does
    not place them. The rules that read one object lint them as any object."""
    metadata = doc.data.get("metadata") if isinstance(doc.data, Mapping) else None
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    return isinstance(annotations, Mapping) and bool(annotations.get(HELM_HOOK))


CanonicalKey = tuple[str, str, str, str, int, tuple[int, ...]]


class Identified(Protocol):
    """An object read from a document: a workload, a namespace, a budget, a class..."""

    @property
    def ref(self) -> ObjectRef: ...

    @property
    def doc(self) -> Document: ...


def document_key(ref: ObjectRef, doc: Document) -> CanonicalKey:
    """A sort key for objects that does not depend on the order the files were given:
    (namespace, kind, name), then the file and the position in it, which tell apart objects
    that share a name (one object in a cluster, several in a repository's overlays)."""
    item = tuple(step for step in doc.prefix if isinstance(step, int))  # a List's items[i]
    return (ref.namespace or "", ref.kind, ref.name, doc.file, doc.index, item)


def canonical_key(obj: Identified) -> CanonicalKey:
    """:func:`document_key` of an object: ``sorted(objects, key=canonical_key)``."""
    return document_key(obj.ref, obj.doc)


def namespace_labels(namespaces: Iterable[Namespace]) -> dict[str, dict[str, str]]:
    """Labels per namespace name; of a name given twice, the first Namespace counts."""
    out: dict[str, dict[str, str]] = {}
    for namespace in namespaces:
        out.setdefault(namespace.ref.name, dict(namespace.labels))
    return out
