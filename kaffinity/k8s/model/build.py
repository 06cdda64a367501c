"""Documents read into objects (:func:`build_object`, :func:`build_inventory`): a workload with the
API's defaults (replicas, update strategy), a custom workload kind through its definition, nodes,
budgets and priority classes. The model never fails on odd input: a field of the wrong type reads
as absent (the schema rules report it); a kind or apiVersion kaffinity does not know is not a
workload."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kaffinity.k8s.model.kinds import (
    DEFAULT_NAMESPACE,
    TEMPLATE_PATHS,
    WORKLOAD_GROUPS,
    WorkloadKind,
    custom_workload_kind,
)
from kaffinity.k8s.model.objects import (
    Inventory,
    LabelSelector,
    Namespace,
    Node,
    Object,
    ObjectRef,
    PodDisruptionBudget,
    PodView,
    PriorityClass,
    Taint,
    UpdateStrategy,
    Workload,
    is_hook,
)
from kaffinity.k8s.model.readers import as_int, as_int_or_str, as_labels, as_map, as_str, dig, mapping_items
from kaffinity.k8s.model.terms import (
    host_ports,
    label_selector,
    pod_requests,
    read_affinity,
    read_quantities,
    read_spread,
    read_toleration,
)
from kaffinity.load.source import DataPath, Document

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
    metadata = as_map(data.get("metadata"))
    kind = str(data.get("kind"))
    name = as_str(metadata.get("name")) or as_str(metadata.get("generateName")) or ""
    namespace: str | None = None
    if kind not in ("Namespace", "Node"):
        namespace = as_str(metadata.get("namespace")) or default_namespace
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
        return Namespace(object_ref(doc), doc, as_labels(as_map(data.get("metadata")).get("labels")))
    if kind == "Node":
        return _node(doc)
    if kind == "PodDisruptionBudget":
        spec = as_map(data.get("spec"))
        return PodDisruptionBudget(
            object_ref(doc, default_namespace),
            doc,
            label_selector(spec.get("selector"), ("spec", "selector")),
            as_int_or_str(spec.get("minAvailable")),
            as_int_or_str(spec.get("maxUnavailable")),
        )
    return None


def _workload(doc: Document, ref: ObjectRef) -> Workload:
    data = doc.data
    kind = ref.kind
    template_path = TEMPLATE_PATHS.get(kind, ("spec", "template"))
    template = dig(data, template_path)
    spec = as_map(data.get("spec"))
    pod = _pod_view(as_map(template), template_path)
    selector: LabelSelector | None
    if kind == "ReplicationController":
        # RC selectors are plain maps and default to the template's labels (core/v1 defaults).
        raw = as_labels(spec.get("selector")) or pod.labels
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
            as_str(spec.get("podManagementPolicy")) or "OrderedReady" if kind == "StatefulSet" else None
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
            raw = as_labels(dig(data, definition.selector)) or pod.labels
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
            completions = as_int(dig(data, definition.completions))
            replicas = replicas if completions is None else min(replicas, completions)
    return Workload(
        ref=ref,
        doc=doc,
        replicas=replicas,
        selector=selector,
        strategy=None,
        pod_management_policy=(
            as_str(as_map(data.get("spec")).get("podManagementPolicy")) or "OrderedReady"
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
    return as_int(value)


def _priority_class(doc: Document) -> PriorityClass:
    data = doc.data
    name = as_str(as_map(data.get("metadata")).get("name")) or ""
    return PriorityClass(
        ObjectRef(str(data.get("apiVersion")), "PriorityClass", None, name),  # cluster-scoped
        doc,
        as_int(data.get("value")),
        data.get("globalDefault") is True,
        as_str(data.get("preemptionPolicy")) or "PreemptLowerPriority",
    )


def _replicas(kind: str, data: Mapping[str, Any]) -> int | None:
    spec = as_map(data.get("spec"))
    if kind in ("Deployment", "ReplicaSet", "ReplicationController", "StatefulSet"):
        replicas = as_int(spec.get("replicas"))
        return 1 if replicas is None else replicas
    if kind == "Pod":
        return 1
    if kind in ("Job", "CronJob"):
        job = spec if kind == "Job" else as_map(dig(data, ("spec", "jobTemplate", "spec")))
        # batch/v1 defaults: parallelism 1; at most `completions` pods run at once.
        parallelism = as_int(job.get("parallelism"))
        completions = as_int(job.get("completions"))
        running = 1 if parallelism is None else parallelism
        return running if completions is None else min(running, completions)
    return None


def _strategy(kind: str, spec: Mapping[str, Any]) -> UpdateStrategy | None:
    """Update strategies with their API defaults (apps/v1 ``SetDefaults_*``)."""
    if kind == "Deployment":
        path: DataPath = ("spec", "strategy")
        raw = as_map(spec.get("strategy"))
        kind_of = as_str(raw.get("type")) or "RollingUpdate"
        if kind_of != "RollingUpdate":
            return UpdateStrategy(kind_of, None, None, None, path)
        rolling = as_map(raw.get("rollingUpdate"))
        return UpdateStrategy(
            kind_of,
            as_int_or_str(rolling.get("maxSurge"), "25%"),
            as_int_or_str(rolling.get("maxUnavailable"), "25%"),
            None,
            path,
        )
    if kind in ("StatefulSet", "DaemonSet"):
        path = ("spec", "updateStrategy")
        raw = as_map(spec.get("updateStrategy"))
        kind_of = as_str(raw.get("type")) or "RollingUpdate"
        if kind_of != "RollingUpdate":
            return UpdateStrategy(kind_of, None, None, None, path)
        rolling = as_map(raw.get("rollingUpdate"))
        if kind == "StatefulSet":
            partition = as_int(rolling.get("partition"))
            return UpdateStrategy(
                kind_of, None, as_int_or_str(rolling.get("maxUnavailable"), 1), partition or 0, path
            )
        return UpdateStrategy(
            kind_of,
            as_int_or_str(rolling.get("maxSurge"), 0),
            as_int_or_str(rolling.get("maxUnavailable"), 1),
            None,
            path,
        )
    return None


def _pod_view(template: Mapping[str, Any], base: DataPath) -> PodView:
    metadata = as_map(template.get("metadata"))
    spec = as_map(template.get("spec"))
    spec_path = (*base, "spec")
    affinity = spec.get("affinity")
    return PodView(
        labels=as_labels(metadata.get("labels")),
        annotations=as_labels(metadata.get("annotations")),
        node_selector=as_labels(spec.get("nodeSelector")),
        affinity=read_affinity(affinity, (*spec_path, "affinity")) if isinstance(affinity, Mapping) else None,
        tolerations=tuple(
            read_toleration(item, (*spec_path, "tolerations", i))
            for i, item in mapping_items(spec.get("tolerations"))
        ),
        topology_spread_constraints=tuple(
            read_spread(item, (*spec_path, "topologySpreadConstraints", i))
            for i, item in mapping_items(spec.get("topologySpreadConstraints"))
        ),
        requests=tuple(sorted(pod_requests(spec).items())),
        node_name=as_str(spec.get("nodeName")),
        scheduler_name=as_str(spec.get("schedulerName")) or "default-scheduler",
        host_network=spec.get("hostNetwork") is True,
        metadata_path=(*base, "metadata"),
        spec_path=spec_path,
        host_ports=host_ports(spec),
        gated=bool(spec.get("schedulingGates")),
        preemption_policy=as_str(spec.get("preemptionPolicy")) or "PreemptLowerPriority",
    )


def _node(doc: Document) -> Node:
    data = doc.data
    spec = as_map(data.get("spec"))
    status = as_map(data.get("status"))
    taints = tuple(
        Taint(
            as_str(t.get("key")) or "",
            as_str(t.get("value")) or "",
            as_str(t.get("effect")) or "",
            ("spec", "taints", i),
        )
        for i, t in mapping_items(spec.get("taints"))
    )
    return Node(
        ref=object_ref(doc),
        doc=doc,
        labels=as_labels(as_map(data.get("metadata")).get("labels")),
        taints=taints,
        allocatable=tuple(sorted(read_quantities(as_map(status.get("allocatable"))).items())),
        unschedulable=spec.get("unschedulable") is True,
    )
