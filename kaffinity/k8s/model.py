"""The objects kaffinity reasons about, reduced from loaded documents to typed, immutable views.

Every workload kind becomes one view of the pods it creates (:class:`Workload`): where the pod
template is, its labels, how many replicas (with the API's defaults), the update strategy, the
selector, and every scheduling field as typed terms. Each term keeps its data path, so a rule
reports a term and the engine finds its line.

The model never fails on odd input: a field of the wrong type reads as absent (the schema rules
report it); a kind or apiVersion kaffinity does not know is not a workload.

Besides the nine built-in kinds, objects of custom resources that embed a pod template are
workloads too: the ones kaffinity knows (:data:`CUSTOM_WORKLOADS`: Argo Rollouts, OpenKruise,
KEDA, Knative, OpenShift) and those configured in ``.kaffinity.yaml`` (``workloads``, passed in
as ``workload_kinds``). See docs/workloads.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from kaffinity.k8s.quantity import CONTEXT as QUANTITY_CONTEXT
from kaffinity.k8s.quantity import parse_quantity
from kaffinity.load.source import DataPath, Document

DEFAULT_NAMESPACE = "default"
Labels = tuple[tuple[str, str], ...]

# Where each kind keeps its pod template (spec.template unless listed).
_TEMPLATE_PATHS: dict[str, DataPath] = {
    "Pod": (),
    "PodTemplate": ("template",),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}
WORKLOAD_GROUPS: dict[str, tuple[str, ...]] = {
    "Pod": ("v1",),
    "PodTemplate": ("v1",),
    "ReplicationController": ("v1",),
    "Deployment": ("apps/", "extensions/"),
    "ReplicaSet": ("apps/", "extensions/"),
    "StatefulSet": ("apps/",),
    "DaemonSet": ("apps/", "extensions/"),
    "Job": ("batch/",),
    "CronJob": ("batch/",),
}
WORKLOAD_KINDS = frozenset(WORKLOAD_GROUPS)

#: Built-in kinds that are cluster-scoped (others, custom kinds included, are taken as
#: namespaced unless the object is a Namespace).
CLUSTER_SCOPED = frozenset(
    {
        "Namespace", "Node", "PersistentVolume", "StorageClass", "ClusterRole", "ClusterRoleBinding",
        "CustomResourceDefinition", "PriorityClass", "RuntimeClass", "IngressClass", "CSIDriver",
        "CSINode", "VolumeAttachment", "APIService", "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
        "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "CertificateSigningRequest",
        "FlowSchema", "PriorityLevelConfiguration", "ComponentStatus", "DeviceClass",
        "ResourceSlice", "PodSecurityPolicy", "ClusterTrustBundle", "VolumeAttributesClass",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class WorkloadKind:
    """A kind beyond the built-in ones whose objects create pods from an embedded pod template:
    a custom resource kaffinity knows (:data:`CUSTOM_WORKLOADS`) or one configured in
    ``.kaffinity.yaml`` (``workloads``). Keyed by API group and kind, never by kind alone (an
    ``apps.kruise.io`` StatefulSet is not an ``apps/v1`` one)."""

    group: str
    kind: str
    #: The versions of the group it applies to; None: every version.
    versions: tuple[str, ...] | None
    #: Where the pod template (a core/v1 PodTemplateSpec: metadata and spec) is.
    template: DataPath
    #: How many pods run at once: the fields that say it (the first one written counts), and
    #: the count when none is written.
    replicas: tuple[DataPath, ...] = ()
    default_replicas: int = 1
    #: Job-like kinds: at most ``completions`` pods run at once (batch/v1 Job semantics).
    completions: DataPath | None = None
    #: The pods' label selector (a metav1 LabelSelector), if the kind has one.
    selector: DataPath | None = None
    #: The selector is a plain label map defaulting to the template's labels (as a ReplicationController's).
    selector_map: bool = False
    #: The built-in kind whose pods these resemble for placement: ReplicaSet (interchangeable
    #: replicas), StatefulSet (ordinal pods), DaemonSet (one pod per eligible node) or Job.
    controller: str = "ReplicaSet"
    #: Labels the kind's controller adds to every pod (see kaffinity.expand.merge.CONTROLLER_LABELS).
    controller_labels: tuple[str, ...] = ()
    #: Fields of the template's spec that are the kind's own, not a PodSpec's (not validated).
    spec_fields: frozenset[str] = frozenset()

    def matches(self, api_version: str, kind: str) -> bool:
        if kind != self.kind:
            return False
        group, _, version = api_version.rpartition("/")
        return group == self.group and (self.versions is None or version in self.versions)


_KRUISE_VERSIONS = ("v1alpha1", "v1beta1")
#: Custom resources whose objects kaffinity reads as workloads. Paths and defaults from each
#: project's Go types and defaulting functions (cited per entry); strategies are not modelled
#: (the rollout rules skip these kinds).
CUSTOM_WORKLOADS: tuple[WorkloadKind, ...] = (
    # github.com/argoproj/argo-rollouts pkg/apis/rollouts/v1alpha1/types.go RolloutSpec: Template
    # corev1.PodTemplateSpec, Replicas (*int32, "Defaults to 1"), Selector; a Rollout with
    # spec.workloadRef has no template and is not read as a workload (its Deployment is).
    # DefaultRolloutUniqueLabelKey "rollouts-pod-template-hash" is set on every pod.
    WorkloadKind(
        "argoproj.io",
        "Rollout",
        ("v1alpha1",),
        ("spec", "template"),
        (("spec", "replicas"),),
        1,
        selector=("spec", "selector"),
        controller_labels=("rollouts-pod-template-hash",),
    ),
    # github.com/openkruise/kruise apis/apps/v1alpha1/cloneset_types.go, v1beta1 likewise;
    # apis/apps/defaults SetDefaultsCloneSet: replicas 1; strategy ReCreate/InPlace*, not a
    # rolling update of Deployment's kind. cloneset utils WriteRevisionHash sets
    # controller-revision-hash and its short form as pod-template-hash; each pod gets
    # apps.kruise.io/cloneset-instance-id.
    WorkloadKind(
        "apps.kruise.io",
        "CloneSet",
        _KRUISE_VERSIONS,
        ("spec", "template"),
        (("spec", "replicas"),),
        1,
        selector=("spec", "selector"),
        controller_labels=(
            "controller-revision-hash",
            "pod-template-hash",
            "apps.kruise.io/cloneset-instance-id",
        ),
    ),
    # Advanced StatefulSet, a fork of the upstream controller: apis/apps/v1beta1/statefulset_types.go,
    # apis/apps/defaults/v1beta1.go SetDefaultsStatefulSet (replicas 1, OrderedReady); pods named
    # by ordinal with controller-revision-hash and statefulset.kubernetes.io/pod-name.
    WorkloadKind(
        "apps.kruise.io",
        "StatefulSet",
        _KRUISE_VERSIONS,
        ("spec", "template"),
        (("spec", "replicas"),),
        1,
        selector=("spec", "selector"),
        controller="StatefulSet",
        controller_labels=("controller-revision-hash", "statefulset.kubernetes.io/pod-name"),
    ),
    # Advanced DaemonSet: apis/apps/v1alpha1/daemonset_types.go (selector, template); one pod
    # per eligible node, as the upstream DaemonSet it forks.
    WorkloadKind(
        "apps.kruise.io",
        "DaemonSet",
        _KRUISE_VERSIONS,
        ("spec", "template"),
        selector=("spec", "selector"),
        controller="DaemonSet",
        controller_labels=("controller-revision-hash",),
    ),
    # KEDA: apis/keda/v1alpha1/scaledjob_types.go ScaledJobSpec.JobTargetRef *batchv1.JobSpec;
    # each Job it creates runs parallelism pods (default 1) at most completions; the Jobs are
    # batch/v1 Jobs, so kube-apiserver labels their pods (job-name, controller-uid).
    WorkloadKind(
        "keda.sh",
        "ScaledJob",
        ("v1alpha1",),
        ("spec", "jobTargetRef", "template"),
        (("spec", "jobTargetRef", "parallelism"),),
        1,
        completions=("spec", "jobTargetRef", "completions"),
        controller="Job",
        controller_labels=(
            "batch.kubernetes.io/job-name",
            "job-name",
            "batch.kubernetes.io/controller-uid",
            "controller-uid",
        ),
    ),
    # Knative Serving: pkg/apis/serving/v1/service_types.go ServiceSpec.ConfigurationSpec.Template
    # (RevisionTemplateSpec: metadata + RevisionSpec, a PodSpec inlined with Knative's own
    # fields). Pods run at the initial scale (config-autoscaler initial-scale, default 1), or the
    # template's min-scale annotation when written (pkg/apis/autoscaling/register.go
    # MinScaleAnnotation: "autoscaling.knative.dev/min-scale", or the older "minScale"). No selector.
    WorkloadKind(
        "serving.knative.dev",
        "Service",
        ("v1",),
        ("spec", "template"),
        tuple(
            ("spec", "template", "metadata", "annotations", f"autoscaling.knative.dev/{name}")
            for name in ("min-scale", "minScale")
        ),
        1,
        spec_fields=frozenset(
            ("containerConcurrency", "timeoutSeconds", "responseStartTimeoutSeconds", "idleTimeoutSeconds")
        ),
    ),
    # OpenShift: github.com/openshift/api apps/v1/types.go DeploymentConfigSpec: Template
    # *corev1.PodTemplateSpec, Replicas int32 (no default: 0 when absent), Selector
    # map[string]string (defaulted to the template's labels); each revision is a
    # ReplicationController.
    WorkloadKind(
        "apps.openshift.io",
        "DeploymentConfig",
        ("v1",),
        ("spec", "template"),
        (("spec", "replicas"),),
        0,
        selector=("spec", "selector"),
        selector_map=True,
        controller="ReplicationController",
    ),
)


def workload_kind(api_version: str, kind: str, custom: Iterable[WorkloadKind] = ()) -> WorkloadKind | None:
    """The definition of a custom workload kind: configured ones first, then kaffinity's own."""
    for definition in (*custom, *CUSTOM_WORKLOADS):
        if definition.matches(api_version, kind):
            return definition
    return None


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
    (``value``, None when not an integer) and whether it is the default for pods naming none."""

    ref: ObjectRef
    doc: Document
    value: int | None
    global_default: bool


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


def custom_workload_kind(
    data: Mapping[str, Any], workload_kinds: Iterable[WorkloadKind] = ()
) -> WorkloadKind | None:
    """The custom workload kind of an object (a custom resource's group has a dot), or None."""
    kind, api_version = data.get("kind"), data.get("apiVersion")
    if not isinstance(kind, str) or not isinstance(api_version, str):
        return None
    if "." not in api_version.partition("/")[0]:
        return None
    return workload_kind(api_version, kind, workload_kinds)


def pod_template_path(
    kind: str, api_version: str | None = None, workload_kinds: Iterable[WorkloadKind] = ()
) -> DataPath | None:
    """Where a workload kind keeps its pod template; None for other kinds. Without
    ``api_version``, the built-in kinds by name alone; with it, custom kinds too."""
    if api_version is None or (kind in WORKLOAD_GROUPS and api_version.startswith(WORKLOAD_GROUPS[kind])):
        return _TEMPLATE_PATHS.get(kind, ("spec", "template")) if kind in WORKLOAD_KINDS else None
    definition = workload_kind(api_version, kind, workload_kinds)
    return definition.template if definition is not None else None


_UNBUILT: Any = object()


def build_inventory(
    documents: Iterable[Document],
    default_namespace: str = DEFAULT_NAMESPACE,
    workload_kinds: Iterable[WorkloadKind] = (),
    cache: dict[int, Object | None] | None = None,
) -> Inventory:
    """Reduce loaded documents to the typed objects kaffinity reads. ``workload_kinds``: the
    custom workload kinds configured (Settings.workload_kinds). ``cache``: the typed view of
    each document already built, by id(document), shared by inventories of overlapping sets of
    documents (the deployment units of one run, which share their base files)."""
    custom = tuple(workload_kinds)
    docs = tuple(documents)
    workloads: list[Workload] = []
    hooks: list[Workload] = []
    namespaces: list[Namespace] = []
    nodes: list[Node] = []
    pdbs: list[PodDisruptionBudget] = []
    classes: list[PriorityClass] = []
    for doc in docs:
        if cache is None:
            obj = build_object(doc, default_namespace, custom)
        elif (obj := cache.get(id(doc), _UNBUILT)) is _UNBUILT:
            obj = cache[id(doc)] = build_object(doc, default_namespace, custom)
        if isinstance(obj, Workload):
            (hooks if is_hook(doc) else workloads).append(obj)
        elif isinstance(obj, Namespace):
            namespaces.append(obj)
        elif isinstance(obj, Node):
            nodes.append(obj)
        elif isinstance(obj, PodDisruptionBudget):
            pdbs.append(obj)
        elif isinstance(obj, PriorityClass):
            classes.append(obj)
    return Inventory(
        docs, tuple(workloads), tuple(namespaces), tuple(nodes), tuple(pdbs), tuple(classes), tuple(hooks)
    )


def priority_classes(documents: Iterable[Document]) -> tuple[PriorityClass, ...]:
    """The PriorityClass objects among ``documents`` (a cluster file's, say), and nothing else."""
    found = []
    for doc in documents:
        if isinstance(doc.data, Mapping) and doc.data.get("kind") == "PriorityClass":
            obj = build_object(doc)
            if isinstance(obj, PriorityClass):
                found.append(obj)
    return tuple(found)


def object_ref(doc: Document, default_namespace: str = DEFAULT_NAMESPACE) -> ObjectRef:
    """The object's identity; namespaced kinds get the default namespace when none is written."""
    data = doc.data
    metadata = _map(data.get("metadata"))
    kind = str(data.get("kind"))
    name = _str(metadata.get("name")) or _str(metadata.get("generateName")) or ""
    namespace: str | None = None
    if kind not in ("Namespace", "Node"):
        namespace = _str(metadata.get("namespace")) or default_namespace
    return ObjectRef(str(data.get("apiVersion")), kind, namespace, name)


def build_object(
    doc: Document, default_namespace: str = DEFAULT_NAMESPACE, workload_kinds: Iterable[WorkloadKind] = ()
) -> Object | None:
    """The typed view of one document, or None for kinds kaffinity does not read."""
    data = doc.data
    kind, api_version = data.get("kind"), data.get("apiVersion")
    if not isinstance(kind, str) or not isinstance(api_version, str):
        return None
    if kind in WORKLOAD_GROUPS and api_version.startswith(WORKLOAD_GROUPS[kind]):
        return _workload(doc, object_ref(doc, default_namespace))
    definition = custom_workload_kind(data, workload_kinds)
    if definition is not None:
        return _custom_workload(doc, object_ref(doc, default_namespace), definition)
    if kind == "PriorityClass" and api_version.startswith("scheduling.k8s.io/"):
        return _priority_class(doc)
    if api_version != "v1" and not (kind == "PodDisruptionBudget" and api_version.startswith("policy/")):
        return None
    if kind == "Namespace":
        return Namespace(object_ref(doc), doc, _labels(_map(data.get("metadata")).get("labels")))
    if kind == "Node":
        return _node(doc)
    if kind == "PodDisruptionBudget":
        spec = _map(data.get("spec"))
        return PodDisruptionBudget(
            object_ref(doc, default_namespace),
            doc,
            label_selector(spec.get("selector"), ("spec", "selector")),
            _int_or_str(spec.get("minAvailable")),
            _int_or_str(spec.get("maxUnavailable")),
        )
    return None


def _workload(doc: Document, ref: ObjectRef) -> Workload:
    data = doc.data
    kind = ref.kind
    template_path = _TEMPLATE_PATHS.get(kind, ("spec", "template"))
    template = dig(data, template_path)
    spec = _map(data.get("spec"))
    pod = _pod_view(_map(template), template_path)
    selector: LabelSelector | None
    if kind == "ReplicationController":
        # RC selectors are plain maps and default to the template's labels (core/v1 defaults).
        raw = _labels(spec.get("selector")) or pod.labels
        selector = LabelSelector(raw, (), ("spec", "selector"))
    elif kind in ("Pod", "PodTemplate", "CronJob"):
        selector = None
    else:
        selector = label_selector(spec.get("selector"), ("spec", "selector"))
    return Workload(
        ref=ref,
        doc=doc,
        replicas=_replicas(kind, data),
        selector=selector,
        strategy=_strategy(kind, spec),
        pod_management_policy=(
            _str(spec.get("podManagementPolicy")) or "OrderedReady" if kind == "StatefulSet" else None
        ),
        pod=pod,
        template_path=template_path,
    )


def _custom_workload(doc: Document, ref: ObjectRef, definition: WorkloadKind) -> Workload | None:
    """A custom resource's object as a workload; None without a pod template (an Argo Rollout
    with ``workloadRef``, a patch that sets a few fields)."""
    data = doc.data
    template = dig(data, definition.template)
    if not isinstance(template, Mapping):
        return None
    pod = _pod_view(template, definition.template)
    selector: LabelSelector | None = None
    if definition.selector is not None:
        if definition.selector_map:
            raw = _labels(dig(data, definition.selector)) or pod.labels
            selector = LabelSelector(raw, (), definition.selector)
        else:
            selector = label_selector(dig(data, definition.selector), definition.selector)
    replicas: int | None = None
    if definition.controller != "DaemonSet":
        written = next(
            (count for path in definition.replicas if (count := _count(dig(data, path))) is not None), None
        )
        replicas = definition.default_replicas if written is None else written
        if definition.completions is not None:
            completions = _int(dig(data, definition.completions))
            replicas = replicas if completions is None else min(replicas, completions)
    return Workload(
        ref=ref,
        doc=doc,
        replicas=replicas,
        selector=selector,
        strategy=None,
        pod_management_policy=(
            _str(_map(data.get("spec")).get("podManagementPolicy")) or "OrderedReady"
            if definition.controller == "StatefulSet"
            else None
        ),
        pod=pod,
        template_path=definition.template,
        custom=definition,
    )


def _count(value: Any) -> int | None:
    """An integer field, or a string of digits (an annotation such as Knative's min-scale)."""
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return _int(value)


def _priority_class(doc: Document) -> PriorityClass:
    data = doc.data
    name = _str(_map(data.get("metadata")).get("name")) or ""
    return PriorityClass(
        ObjectRef(str(data.get("apiVersion")), "PriorityClass", None, name),  # cluster-scoped
        doc,
        _int(data.get("value")),
        data.get("globalDefault") is True,
    )


def _replicas(kind: str, data: Mapping[str, Any]) -> int | None:
    spec = _map(data.get("spec"))
    if kind in ("Deployment", "ReplicaSet", "ReplicationController", "StatefulSet"):
        replicas = _int(spec.get("replicas"))
        return 1 if replicas is None else replicas
    if kind == "Pod":
        return 1
    if kind in ("Job", "CronJob"):
        job = spec if kind == "Job" else _map(dig(data, ("spec", "jobTemplate", "spec")))
        # batch/v1 defaults: parallelism 1; at most `completions` pods run at once.
        parallelism = _int(job.get("parallelism"))
        completions = _int(job.get("completions"))
        running = 1 if parallelism is None else parallelism
        return running if completions is None else min(running, completions)
    return None


def _strategy(kind: str, spec: Mapping[str, Any]) -> UpdateStrategy | None:
    """Update strategies with their API defaults (apps/v1 ``SetDefaults_*``)."""
    if kind == "Deployment":
        path: DataPath = ("spec", "strategy")
        raw = _map(spec.get("strategy"))
        kind_of = _str(raw.get("type")) or "RollingUpdate"
        if kind_of != "RollingUpdate":
            return UpdateStrategy(kind_of, None, None, None, path)
        rolling = _map(raw.get("rollingUpdate"))
        return UpdateStrategy(
            kind_of,
            _int_or_str(rolling.get("maxSurge"), "25%"),
            _int_or_str(rolling.get("maxUnavailable"), "25%"),
            None,
            path,
        )
    if kind in ("StatefulSet", "DaemonSet"):
        path = ("spec", "updateStrategy")
        raw = _map(spec.get("updateStrategy"))
        kind_of = _str(raw.get("type")) or "RollingUpdate"
        if kind_of != "RollingUpdate":
            return UpdateStrategy(kind_of, None, None, None, path)
        rolling = _map(raw.get("rollingUpdate"))
        if kind == "StatefulSet":
            partition = _int(rolling.get("partition"))
            return UpdateStrategy(
                kind_of, None, _int_or_str(rolling.get("maxUnavailable"), 1), partition or 0, path
            )
        return UpdateStrategy(
            kind_of,
            _int_or_str(rolling.get("maxSurge"), 0),
            _int_or_str(rolling.get("maxUnavailable"), 1),
            None,
            path,
        )
    return None


def _pod_view(template: Mapping[str, Any], base: DataPath) -> PodView:
    metadata = _map(template.get("metadata"))
    spec = _map(template.get("spec"))
    spec_path = (*base, "spec")
    affinity = spec.get("affinity")
    return PodView(
        labels=_labels(metadata.get("labels")),
        annotations=_labels(metadata.get("annotations")),
        node_selector=_labels(spec.get("nodeSelector")),
        affinity=_affinity(affinity, (*spec_path, "affinity")) if isinstance(affinity, Mapping) else None,
        tolerations=tuple(
            _toleration(item, (*spec_path, "tolerations", i)) for i, item in _items(spec.get("tolerations"))
        ),
        topology_spread_constraints=tuple(
            _spread(item, (*spec_path, "topologySpreadConstraints", i))
            for i, item in _items(spec.get("topologySpreadConstraints"))
        ),
        requests=tuple(sorted(pod_requests(spec).items())),
        node_name=_str(spec.get("nodeName")),
        scheduler_name=_str(spec.get("schedulerName")) or "default-scheduler",
        host_network=spec.get("hostNetwork") is True,
        metadata_path=(*base, "metadata"),
        spec_path=spec_path,
        host_ports=host_ports(spec),
        gated=bool(spec.get("schedulingGates")),
        preemption_policy=_str(spec.get("preemptionPolicy")) or "PreemptLowerPriority",
    )


#: HostPortInfo's wildcard address (pkg/scheduler/framework/types.go ``DefaultBindAllHostIP``).
ANY_HOST_IP = "0.0.0.0"


def host_ports(spec: Mapping[str, Any]) -> tuple[tuple[str, str, int], ...]:
    """The host ports a pod takes, as the NodePorts plugin reads them (``util.GetHostPorts``,
    pkg/scheduler/util: ``spec.containers`` and sidecar init containers), with the API defaults: protocol TCP,
    and with ``hostNetwork: true`` a container port without ``hostPort`` takes its
    ``containerPort`` on the host (core/v1 ``SetDefaults_Pod``). ``hostIP`` empty is
    ``0.0.0.0`` (``HostPortInfo.sanitize``)."""
    host_network = spec.get("hostNetwork") is True
    found: list[tuple[str, str, int]] = []
    for group in ("containers", "initContainers"):
        for _, container in _items(spec.get(group)):
            if group == "initContainers" and container.get("restartPolicy") != "Always":
                continue  # GetHostPorts counts sidecars only: other init containers have exited
            for _, port in _items(container.get("ports")):
                number = _int(port.get("hostPort"))
                if not number and host_network:
                    number = _int(port.get("containerPort"))
                if not number or number <= 0:
                    continue
                protocol = _str(port.get("protocol")) or "TCP"
                found.append((protocol, _str(port.get("hostIP")) or ANY_HOST_IP, number))
    return tuple(found)


def pod_requests(spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """A pod's effective requests, as the scheduler computes them.

    Source: k8s.io/component-helpers ``resource.PodRequests``: app containers plus restartable
    init containers (sidecars) add up; each other init container needs its own request plus the
    sidecars started before it; the pod needs the larger of the two, plus ``overhead``.
    Pod-level ``resources.requests`` win where set. A container's missing request defaults to
    its limit (core/v1 defaults).
    """
    pod_level = _quantities(_map(_map(spec.get("resources")).get("requests")))
    total: dict[str, Decimal] = {}
    for _, container in _items(spec.get("containers")):
        _add(total, _container_requests(container))
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for _, container in _items(spec.get("initContainers")):
        requests = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add(sidecars, requests)
        else:
            for name, value in requests.items():
                need = QUANTITY_CONTEXT.add(value, sidecars.get(name, Decimal(0)))
                init_peak[name] = max(init_peak.get(name, Decimal(0)), need)
    _add(total, sidecars)
    for name, value in init_peak.items():
        total[name] = max(total.get(name, Decimal(0)), value)
    _add(total, _quantities(_map(spec.get("overhead"))))
    total.update(pod_level)
    return total


def _container_requests(container: Mapping[str, Any]) -> dict[str, Decimal]:
    resources = _map(container.get("resources"))
    requests = _quantities(_map(resources.get("limits")))
    requests.update(_quantities(_map(resources.get("requests"))))
    return requests


def _quantities(raw: Mapping[str, Any]) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    for name, value in raw.items():
        quantity = parse_quantity(value)
        if quantity is not None:
            out[name] = quantity
    return out


def _add(total: dict[str, Decimal], more: Mapping[str, Decimal]) -> None:
    for name, value in more.items():
        total[name] = QUANTITY_CONTEXT.add(total.get(name, Decimal(0)), value)


def _affinity(raw: Mapping[str, Any], path: DataPath) -> Affinity:
    node = raw.get("nodeAffinity")
    pod = raw.get("podAffinity")
    anti = raw.get("podAntiAffinity")
    return Affinity(
        node_affinity=_node_affinity(node, (*path, "nodeAffinity")) if isinstance(node, Mapping) else None,
        pod_affinity=_pod_affinity(pod, (*path, "podAffinity")) if isinstance(pod, Mapping) else None,
        pod_anti_affinity=(
            _pod_affinity(anti, (*path, "podAntiAffinity")) if isinstance(anti, Mapping) else None
        ),
        path=path,
    )


def _node_selector(raw: Mapping[str, Any], name: str, path: DataPath) -> tuple[NodeSelectorTerm, ...] | None:
    selector = raw.get(name)
    if not isinstance(selector, Mapping):
        return None
    terms_path = (*path, name, "nodeSelectorTerms")
    return tuple(
        _node_selector_term(term, (*terms_path, i)) for i, term in _items(selector.get("nodeSelectorTerms"))
    )


def _node_affinity(raw: Mapping[str, Any], path: DataPath) -> NodeAffinity:
    required = _node_selector(raw, "requiredDuringSchedulingIgnoredDuringExecution", path)
    during_execution = _node_selector(raw, "requiredDuringSchedulingRequiredDuringExecution", path)
    preferred_path = (*path, "preferredDuringSchedulingIgnoredDuringExecution")
    preferred = tuple(
        PreferredSchedulingTerm(
            _int(item.get("weight")),
            _node_selector_term(_map(item.get("preference")), (*preferred_path, i, "preference")),
            (*preferred_path, i),
        )
        for i, item in _items(raw.get("preferredDuringSchedulingIgnoredDuringExecution"))
    )
    return NodeAffinity(required, preferred, path, during_execution)


def _node_selector_term(raw: Mapping[str, Any], path: DataPath) -> NodeSelectorTerm:
    return NodeSelectorTerm(
        _requirements(raw.get("matchExpressions"), (*path, "matchExpressions")),
        _requirements(raw.get("matchFields"), (*path, "matchFields")),
        path,
    )


def _pod_affinity(raw: Mapping[str, Any], path: DataPath) -> PodAffinity:
    required_path = (*path, "requiredDuringSchedulingIgnoredDuringExecution")
    preferred_path = (*path, "preferredDuringSchedulingIgnoredDuringExecution")
    return PodAffinity(
        required=tuple(
            _pod_affinity_term(term, (*required_path, i))
            for i, term in _items(raw.get("requiredDuringSchedulingIgnoredDuringExecution"))
        ),
        preferred=tuple(
            WeightedPodAffinityTerm(
                _int(item.get("weight")),
                _pod_affinity_term(
                    _map(item.get("podAffinityTerm")), (*preferred_path, i, "podAffinityTerm")
                ),
                (*preferred_path, i),
            )
            for i, item in _items(raw.get("preferredDuringSchedulingIgnoredDuringExecution"))
        ),
        path=path,
    )


def _pod_affinity_term(raw: Mapping[str, Any], path: DataPath) -> PodAffinityTerm:
    return PodAffinityTerm(
        label_selector=label_selector(raw.get("labelSelector"), (*path, "labelSelector")),
        namespaces=_strings(raw.get("namespaces")),
        namespace_selector=label_selector(raw.get("namespaceSelector"), (*path, "namespaceSelector")),
        topology_key=_str(raw.get("topologyKey")) or "",
        match_label_keys=_strings(raw.get("matchLabelKeys")),
        mismatch_label_keys=_strings(raw.get("mismatchLabelKeys")),
        path=path,
    )


def _toleration(raw: Mapping[str, Any], path: DataPath) -> Toleration:
    return Toleration(
        key=_str(raw.get("key")) or "",
        operator=_str(raw.get("operator")) or "Equal",
        value=_str(raw.get("value")) or "",
        effect=_str(raw.get("effect")) or "",
        path=path,
    )


def _spread(raw: Mapping[str, Any], path: DataPath) -> TopologySpreadConstraint:
    return TopologySpreadConstraint(
        max_skew=_int(raw.get("maxSkew")),
        topology_key=_str(raw.get("topologyKey")) or "",
        when_unsatisfiable=_str(raw.get("whenUnsatisfiable")) or "",
        label_selector=label_selector(raw.get("labelSelector"), (*path, "labelSelector")),
        min_domains=_int(raw.get("minDomains")),
        node_affinity_policy=_str(raw.get("nodeAffinityPolicy")),
        node_taints_policy=_str(raw.get("nodeTaintsPolicy")),
        match_label_keys=_strings(raw.get("matchLabelKeys")),
        path=path,
    )


def _node(doc: Document) -> Node:
    data = doc.data
    spec = _map(data.get("spec"))
    status = _map(data.get("status"))
    taints = tuple(
        Taint(
            _str(t.get("key")) or "",
            _str(t.get("value")) or "",
            _str(t.get("effect")) or "",
            ("spec", "taints", i),
        )
        for i, t in _items(spec.get("taints"))
    )
    return Node(
        ref=object_ref(doc),
        doc=doc,
        labels=_labels(_map(data.get("metadata")).get("labels")),
        taints=taints,
        allocatable=tuple(sorted(_quantities(_map(status.get("allocatable"))).items())),
        unschedulable=spec.get("unschedulable") is True,
    )


def label_selector(raw: Any, path: DataPath) -> LabelSelector | None:
    """A metav1 LabelSelector read from ``raw`` (None when it is not a mapping: nil)."""
    if not isinstance(raw, Mapping):
        return None
    return LabelSelector(
        _labels(raw.get("matchLabels")),
        _requirements(raw.get("matchExpressions"), (*path, "matchExpressions")),
        path,
    )


def _requirements(raw: Any, path: DataPath) -> tuple[Requirement, ...]:
    return tuple(
        Requirement(
            _str(item.get("key")) or "",
            _str(item.get("operator")) or "",
            _strings(item.get("values")),
            (*path, i),
        )
        for i, item in _items(raw)
    )


# --- lenient readers: wrong types read as absent -------------------------------------------


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _items(value: Any) -> Iterator[tuple[int, Mapping[str, Any]]]:
    if isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, Mapping):
                yield index, item


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _int_or_str(value: Any, default: int | str | None = None) -> int | str | None:
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return default


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(item for item in value if isinstance(item, str)) if isinstance(value, list) else ()


def _labels(value: Any) -> Labels:
    if not isinstance(value, Mapping):
        return ()
    return tuple((key, item) for key, item in value.items() if isinstance(item, str))


def dig(data: Any, path: DataPath) -> Any:
    """The value at ``path`` through nested mappings and lists, or None where the path breaks."""
    for item in path:
        if isinstance(data, Mapping):
            data = data.get(item)
        elif isinstance(data, list) and isinstance(item, int) and 0 <= item < len(data):
            data = data[item]
        else:
            return None
    return data
