"""The declared cluster (``--cluster FILE|DIR`` or ``cluster:`` in the config).

A cluster file holds what ``kubectl get nodes,pods,namespaces -A -o yaml`` prints (a ``List``
or plain documents): Nodes, Namespaces, and existing Pods, bound to a node by
``spec.nodeName``; also PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes and
RuntimeClasses (:mod:`kaffinity.simulate.storage`: what the volume plugins and the RuntimeClass
admission plugin read). Pods that have finished (``status.phase`` Succeeded or Failed) no longer
count: the scheduler's snapshot drops them, so they neither match nor block anyone.

It may also hold kaffinity's compact form, ``apiVersion: kaffinity.io/v1alpha1, kind:
ClusterTopology`` (``schemas/cluster.schema.json``): node pools per zone, each expanded into
``count`` Nodes named ``<pool>-<zone>-<i>`` carrying the well-known labels the kubelet and the
cloud provider set (``kubernetes.io/hostname``, ``topology.kubernetes.io/zone`` and ``/region``;
API doc "Well-Known Labels, Annotations and Taints"), the pool's labels, taints and allocatable.
A compact document that breaks the schema is a load error (exit 2) naming its line.

The files are loaded like manifests (same loader, same one-line errors); their objects are
never linted, only consulted.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from typing import Any

from kaffinity.k8s.labels import HOSTNAME, REGION, ZONE
from kaffinity.k8s.model import (
    Inventory,
    Namespace,
    Node,
    ObjectRef,
    PodDisruptionBudget,
    Taint,
    Workload,
    build_inventory,
)
from kaffinity.k8s.quantity import parse_quantity
from kaffinity.load.parse import DEFAULT_LIMITS, LoadProblem, SourceFile
from kaffinity.load.source import DataPath, Document
from kaffinity.simulate.storage import Storage, read_storage

_FINISHED = ("Succeeded", "Failed")
COMPACT_API_VERSION = "kaffinity.io/v1alpha1"
COMPACT_KIND = "ClusterTopology"


@dataclass(frozen=True, slots=True)
class Cluster:
    files: tuple[SourceFile, ...]
    nodes: tuple[Node, ...]
    namespaces: tuple[Namespace, ...]
    #: Pods bound to a node and still running: the cluster's existing pods.
    pods: tuple[Workload, ...]
    #: Node groups an autoscaler may grow (compact pools with ``max``, Karpenter NodePools).
    pools: tuple[Pool, ...] = ()
    #: The cluster's PodDisruptionBudgets (preemption avoids the victims they protect).
    pdbs: tuple[PodDisruptionBudget, ...] = ()

    @property
    def has_pods(self) -> bool:
        return bool(self.pods)


def storage_of(cluster: Cluster, extra: Iterable[Document] = ()) -> Storage:
    """The PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes and RuntimeClasses
    the cluster files declare, then those of ``extra`` (the linted input: what it creates)."""
    return read_storage((doc for file in cluster.files for doc in file.documents), extra)


def cluster_from(
    files: Sequence[SourceFile], default_namespace: str = "default", max_nodes: int = DEFAULT_LIMITS.nodes
) -> Cluster:
    """The cluster ``files`` declare. Past ``max_nodes`` nodes in total (``limits: nodes``), the
    document that passes it is a ``parse-error`` naming the limit and no compact document is
    expanded: the count is taken before any node is built."""
    invalid: set[int] = set()  # id() of compact documents that break the schema: not expanded
    validated = tuple(_validated(file, invalid) for file in files)
    documents = [doc for file in validated for doc in file.documents]
    inventory: Inventory = build_inventory(documents, default_namespace)
    validated, refused = _counted(validated, invalid, inventory.nodes, max_nodes)
    if refused:
        invalid.update(id(doc) for doc in documents)
    pods = tuple(
        workload
        for workload in inventory.workloads
        if workload.ref.kind == "Pod" and workload.pod.node_name and not finished(workload)
    )
    nodes = [] if refused else list(inventory.nodes)
    pools: list[Pool] = []
    for doc in documents:  # none when refused: every document is then in ``invalid``
        if _is_compact(doc.data) and id(doc) not in invalid:
            nodes.extend(expand_topology(doc))
            pools.extend(compact_pools(doc))
    if not refused:
        pools.extend(karpenter_pools(documents, nodes))
    return Cluster(validated, tuple(nodes), inventory.namespaces, pods, tuple(pools), inventory.pdbs)


def declared_nodes(doc: Document) -> int:
    """How many Nodes a ClusterTopology document declares (without building them)."""
    spec = doc.data.get("spec")
    if not isinstance(spec, Mapping):
        return 0
    total = sum(
        1 for _, raw in _items(spec.get("nodes")) if isinstance(raw.get("name"), str) and raw.get("name")
    )
    for _, zone in _items(spec.get("zones")):
        if not isinstance(zone.get("name"), str) or not zone.get("name"):
            continue
        for _, pool in _items(zone.get("pools")):
            count = pool.get("count")
            if isinstance(pool.get("name"), str) and isinstance(count, int) and not isinstance(count, bool):
                total += max(count, 0)
    return total


def _counted(
    files: tuple[SourceFile, ...], invalid: set[int], objects: Sequence[Node], limit: int
) -> tuple[tuple[SourceFile, ...], bool]:
    """``files``, with a load problem where the nodes declared pass ``limit`` (``objects``: the
    Node objects, counted first, then each compact document's pools); and whether they do."""
    total = len(objects)
    problem: LoadProblem | None = None
    name = ""
    if total > limit:  # Node objects alone: the first one past the limit
        node = objects[limit]
        message = f"this cluster declares {total:,} nodes, more than the {limit:,} allowed (limits: nodes)"
        problem, name = LoadProblem("parse-error", message, node.doc.locate(node.path)), node.doc.file
    for file in files if problem is None else ():
        for doc in file.documents:
            if not _is_compact(doc.data) or id(doc) in invalid:
                continue
            total += declared_nodes(doc)
            if total > limit:
                where = ("spec", "zones") if isinstance(doc.data.get("spec"), Mapping) else ()
                message = (
                    f"this cluster declares at least {total:,} nodes, more than the {limit:,} allowed "
                    "(limits: nodes)"
                )
                problem, name = LoadProblem("parse-error", message, doc.locate(where)), file.name
                break
        if problem is not None:
            break
    if problem is None:
        return files, False
    index = next((i for i, file in enumerate(files) if file.name == name), 0)
    out = list(files)
    out[index] = dataclasses.replace(out[index], problems=(*out[index].problems, problem))
    return tuple(out), True


def finished(pod: Workload) -> bool:
    """A pod whose ``status.phase`` is Succeeded or Failed: the scheduler no longer sees it."""
    status = pod.doc.data.get("status")
    return isinstance(status, dict) and status.get("phase") in _FINISHED


def _is_compact(data: Any) -> bool:
    return (
        isinstance(data, Mapping)
        and data.get("kind") == COMPACT_KIND
        and data.get("apiVersion") == COMPACT_API_VERSION
    )


# --- the compact form --------------------------------------------------------------------


@cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    from kaffinity.load.resources import schema

    return Draft202012Validator(schema("cluster.schema.json"))


def _validated(file: SourceFile, invalid: set[int]) -> SourceFile:
    """``file`` with a load problem for each compact document that breaks the schema (whose
    ``id()`` goes into ``invalid``)."""
    problems: list[LoadProblem] = []
    for doc in file.documents:
        if isinstance(doc.data, Mapping) and doc.data.get("kind") == COMPACT_KIND:
            from kaffinity.load.schema_words import said

            for error in sorted(_validator().iter_errors(doc.data), key=lambda e: list(e.absolute_path)):
                path = tuple(error.absolute_path)
                where = ".".join(str(part) for part in path) or "(document)"
                problems.append(
                    LoadProblem(
                        "parse-error", f"invalid {COMPACT_KIND} at {where}: {said(error)}", doc.locate(path)
                    )
                )
                invalid.add(id(doc))
                break  # one clear line per document
            else:
                bad = _bad_quantity(doc.data) or _bad_size(doc.data)
                if bad is not None:
                    path, error = bad
                    where = ".".join(str(part) for part in path)
                    message = f"invalid {COMPACT_KIND} at {where}: {error}"
                    problems.append(LoadProblem("parse-error", message, doc.locate(path)))
                    invalid.add(id(doc))
    return dataclasses.replace(file, problems=file.problems + tuple(problems)) if problems else file


def _bad_size(data: Mapping[str, Any]) -> tuple[DataPath, str] | None:
    """A pool whose ``max`` is below its ``count`` (or ``min``): no autoscaler accepts that."""
    spec = data.get("spec")
    if not isinstance(spec, Mapping):
        return None
    for z, zone in _items(spec.get("zones")):
        for p, pool in _items(zone.get("pools")):
            most = pool.get("max")
            if not isinstance(most, int):
                continue
            for field in ("count", "min"):
                value = pool.get(field)
                if isinstance(value, int) and value > most:
                    return ("spec", "zones", z, "pools", p, "max"), f"max {most} is below {field} {value}"
    return None


def _bad_quantity(data: Mapping[str, Any]) -> tuple[DataPath, str] | None:
    """The first allocatable quantity of a compact document that does not parse (as
    ``resource.ParseQuantity`` would refuse it in a Node's status), with the parser's error."""
    from kaffinity.k8s.quantity import quantity_error

    spec = data.get("spec")
    if not isinstance(spec, Mapping):
        return None
    owners: list[tuple[Mapping[str, Any], DataPath]] = [
        (pool, ("spec", "zones", z, "pools", p))
        for z, zone in _items(spec.get("zones"))
        for p, pool in _items(zone.get("pools"))
    ]
    owners += [(node, ("spec", "nodes", n)) for n, node in _items(spec.get("nodes"))]
    for owner, path in owners:
        resources = owner.get("allocatable")
        if isinstance(resources, Mapping):
            for key, value in resources.items():
                error = quantity_error(value)
                if error is not None:
                    return (*path, "allocatable", key), f"{value!r} is no quantity: {error}"
    return None


def _zone_pools(doc: Document) -> Iterator[tuple[DataPath, str, int, Mapping[str, Any], dict[str, str]]]:
    """Each well-formed pool of a ClusterTopology, per zone: its path, name, ``count``, raw
    mapping and the labels its nodes share (the common ones, the pool's, zone and region)."""
    spec = _mapping(doc.data.get("spec"))
    common = _strings(spec.get("labels"))
    for z, zone in _items(spec.get("zones")):
        name = zone.get("name")
        if not isinstance(name, str) or not name:
            continue
        region = zone.get("region")
        for p, pool in _items(zone.get("pools")):
            pool_name, count = pool.get("name"), pool.get("count")
            if not isinstance(pool_name, str) or not isinstance(count, int) or isinstance(count, bool):
                continue
            labels = {**common, **_strings(pool.get("labels")), ZONE: name}
            if isinstance(region, str) and region:
                labels[REGION] = region
            yield ("spec", "zones", z, "pools", p), f"{pool_name}-{name}-", max(count, 0), pool, labels


def expand_topology(doc: Document) -> Iterator[Node]:
    """The Nodes a ClusterTopology document declares, in order (zones, pools, then nodes)."""
    spec = _mapping(doc.data.get("spec"))
    common = _strings(spec.get("labels"))
    for path, prefix, count, pool, labels in _zone_pools(doc):
        for i in range(count):
            node_name = f"{prefix}{i}"
            yield _compact_node(doc, node_name, {**labels, HOSTNAME: node_name}, pool, path)
    for n, raw in _items(spec.get("nodes")):
        single = raw.get("name")
        if isinstance(single, str) and single:
            labels = {**common, HOSTNAME: single, **_strings(raw.get("labels"))}
            yield _compact_node(doc, single, labels, raw, ("spec", "nodes", n))


def _compact_node(
    doc: Document, name: str, labels: Mapping[str, str], raw: Mapping[str, Any], path: DataPath
) -> Node:
    taints = _taints(raw, path)
    allocatable: dict[str, Decimal] = {}
    resources = raw.get("allocatable")
    if isinstance(resources, Mapping):
        for key, value in resources.items():
            quantity = parse_quantity(value)
            if quantity is not None:
                allocatable[str(key)] = quantity
    return Node(
        ref=ObjectRef("v1", "Node", None, name),
        doc=doc,
        labels=tuple(labels.items()),
        taints=taints,
        allocatable=tuple(sorted(allocatable.items())),
        unschedulable=raw.get("unschedulable") is True,
        path=path,
    )


# --- autoscaling ----------------------------------------------------------------------------


KARPENTER_API = "karpenter.sh/v1"
KARPENTER_POOL_LABEL = "karpenter.sh/nodepool"
KARPENTER_CAPACITY_TYPE = "karpenter.sh/capacity-type"
#: The label values Karpenter's nodes carry when a NodePool leaves them open and the pod asks for
#: none, as assumed here (its defaults: on-demand capacity, amd64, linux).
KARPENTER_DEFAULTS = {
    KARPENTER_CAPACITY_TYPE: "on-demand",
    "kubernetes.io/arch": "amd64",
    "kubernetes.io/os": "linux",
}
#: Well-known labels whose value Karpenter chooses for each node from the instance types and
#: offerings (``v1.WellKnownLabels``, kubernetes-sigs/karpenter pkg/apis/v1/labels.go): a NodePool
#: that does not constrain one takes the value the pod's nodeSelector or required node affinity
#: asks for (the NodeClaim's requirements are the pool's and the pod's together), else the default.
KARPENTER_OPEN = (
    ZONE,
    REGION,
    "node.kubernetes.io/instance-type",
    "kubernetes.io/arch",
    "kubernetes.io/os",
    KARPENTER_CAPACITY_TYPE,
)
#: The value a node of a NodePool with an ``Exists`` requirement has when the pod asks for none
#: (Karpenter makes one up: a random number, ``Requirement.Any`` in kubernetes-sigs/karpenter
#: pkg/scheduling/requirement.go; only that the label exists matters).
KARPENTER_ANY = "kaffinity-any"
#: How many label choices of a NodePool's requirements are tried for one pod (zones x values).
MAX_VARIANTS = 64


@dataclass(frozen=True, slots=True)
class Pool:
    """A node group an autoscaler may grow: what a new node looks like and how far it may grow.

    ``variants``: the label sets a new node may have (one per zone of a compact pool; a
    Karpenter NodePool's requirement values, zone by zone), each without its hostname.
    ``allocatable`` None: the size of a new node is not known (its resources go unchecked).
    """

    name: str
    kind: str  # "ClusterTopology" or "NodePool"
    doc: Document
    path: DataPath
    variants: tuple[tuple[tuple[str, str], ...], ...]
    taints: tuple[Taint, ...]
    allocatable: tuple[tuple[str, Decimal], ...] | None
    #: the nodes it has now
    count: int
    #: the most nodes it may have (None: no count limit, only ``limits``)
    max: int | None
    #: Karpenter ``spec.limits``: the most of each resource its nodes may hold together
    limits: tuple[tuple[str, Decimal], ...] = ()
    #: Karpenter ``spec.weight``: pools are tried from the highest
    weight: int = 0
    #: node name prefix of the nodes it adds
    prefix: str = ""
    #: Karpenter: the label keys a new node takes the pod's value for (well-known labels the
    #: NodePool leaves open, ``Exists`` requirements), each with the values ``NotIn`` excludes
    open: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def word(self) -> str:
        """How messages name it: ``NodePool default``, ``pool general in zone eu-west-1a``."""
        if self.kind == "NodePool":
            return f"NodePool {self.name}"
        zone = dict(self.variants[0]).get(ZONE) if self.variants else None
        return f"pool {self.name} in zone {zone}" if zone else f"pool {self.name}"


def compact_pools(doc: Document) -> Iterator[Pool]:
    """The pools of a ClusterTopology with ``max`` (cluster-autoscaler node groups: one per pool
    and zone, as node groups are per zone)."""
    for path, prefix, count, pool, labels in _zone_pools(doc):
        most = pool.get("max")
        if not isinstance(most, int) or isinstance(most, bool):
            continue
        template = _compact_node(doc, "template", labels, pool, path)
        yield Pool(
            str(pool.get("name")),
            COMPACT_KIND,
            doc,
            path,
            (tuple(labels.items()),),
            template.taints,
            template.allocatable if isinstance(pool.get("allocatable"), Mapping) else None,
            count,
            max(most, 0),
            prefix=prefix,
        )


def karpenter_pools(documents: Sequence[Document], nodes: Sequence[Node]) -> Iterator[Pool]:
    """Karpenter ``karpenter.sh/v1`` NodePools: a new node carries the template's labels and
    taints (``startupTaints`` are lifted once the node is ready, so scheduling ignores them) and
    one value of each ``In`` requirement, in each zone the requirements allow (else the zones of
    the cluster's nodes); the labels the pool leaves open take the pod's value
    (:attr:`Pool.open`, chosen in :mod:`kaffinity.simulate.framework.autoscaler`); its size is
    that of the pool's existing nodes (label ``karpenter.sh/nodepool``), unknown without one.
    ``spec.limits`` caps what its nodes hold."""
    zones = sorted({label for node in nodes for key, label in node.labels if key == ZONE})
    for doc in documents:
        found = _node_pool(doc)
        if found is not None:
            name, spec = found
            yield _karpenter_pool(doc, name, spec, zones, nodes)


def _node_pool(doc: Document) -> tuple[str, Mapping[str, Any]] | None:
    """The name and spec of a Karpenter NodePool; None for another document or one without."""
    data = doc.data
    if (
        not isinstance(data, Mapping)
        or data.get("kind") != "NodePool"
        or data.get("apiVersion") != KARPENTER_API
    ):
        return None
    metadata = data.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    spec = data.get("spec")
    if not isinstance(name, str) or not name or not isinstance(spec, Mapping):
        return None
    return name, spec


def _karpenter_pool(
    doc: Document, name: str, spec: Mapping[str, Any], zones: list[str], nodes: Sequence[Node]
) -> Pool:
    """One NodePool as a pool: its new nodes' label variants, the labels left to the pod,
    taints, size and limits."""
    template = _mapping(spec.get("template"))
    meta = _mapping(template.get("metadata"))
    pod_spec = _mapping(template.get("spec"))
    fixed = _strings(meta.get("labels"))
    labels = {**KARPENTER_DEFAULTS, **fixed, KARPENTER_POOL_LABEL: name}
    choices, open_keys = _choices(pod_spec, zones, labels, set(fixed))
    keys = sorted(choices)
    variants = [
        tuple({**labels, **dict(zip(keys, combo, strict=True))}.items())
        for combo in itertools.islice(itertools.product(*(choices[k] for k in keys)), MAX_VARIANTS)
    ]
    own = [node for node in nodes if (KARPENTER_POOL_LABEL, name) in node.labels]
    sized = next((node for node in own if node.allocatable), None)
    weight = spec.get("weight")
    return Pool(
        name,
        "NodePool",
        doc,
        ("spec",),
        tuple(variants) or (tuple(labels.items()),),
        _taints(pod_spec, ("spec", "template", "spec")),
        sized.allocatable if sized is not None else None,
        len(own),
        None,
        _karpenter_limits(spec.get("limits")),
        weight if isinstance(weight, int) and not isinstance(weight, bool) else 0,
        prefix=f"{name}-",
        open=tuple(sorted(open_keys.items())),
    )


def _choices(
    pod_spec: Mapping[str, Any], zones: list[str], labels: dict[str, str], fixed: set[str]
) -> tuple[dict[str, list[str]], dict[str, tuple[str, ...]]]:
    """The values a new node may take per label key (the cluster's zones, narrowed by the
    template's ``In`` and ``NotIn`` requirements), and the keys it takes the pod's value for,
    each with the values ``NotIn`` excludes: the well-known labels no requirement or template
    label (``fixed``) fixes (:data:`KARPENTER_OPEN`) and the ``Exists`` requirements (whose key gets
    :data:`KARPENTER_ANY` in ``labels`` when the pod asks for no value). ``DoesNotExist`` drops
    the key. A ``NotIn`` that excludes a default of :data:`KARPENTER_DEFAULTS` drops that default
    (another value is picked when a pod asks for one). ``Gt``/``Lt`` (instance generations and
    sizes) are not read: the instance types are not known offline."""
    choices: dict[str, list[str]] = {ZONE: list(zones)} if zones else {}
    open_keys: dict[str, tuple[str, ...]] = {key: () for key in KARPENTER_OPEN if key not in fixed}
    for _, requirement in _items(pod_spec.get("requirements")):
        key, operator = requirement.get("key"), requirement.get("operator")
        raw_values = requirement.get("values")
        values = [v for v in raw_values if isinstance(v, str)] if isinstance(raw_values, list) else []
        if not isinstance(key, str):
            continue
        if operator == "In" and values:
            choices[key] = values
            open_keys.pop(key, None)
        elif operator == "NotIn":
            if key in choices:
                choices[key] = [v for v in choices[key] if v not in values]
            if key in open_keys:
                open_keys[key] = (*open_keys[key], *values)
            if labels.get(key) in values:
                labels.pop(key)
        elif operator == "Exists":
            if key not in choices and key not in labels:
                open_keys.setdefault(key, ())
                labels[key] = KARPENTER_ANY
        elif operator == "DoesNotExist":
            choices.pop(key, None)
            labels.pop(key, None)
            open_keys.pop(key, None)
    return choices, open_keys


def _karpenter_limits(raw: Any) -> tuple[tuple[str, Decimal], ...]:
    """``spec.limits``: the quantities that parse, by resource name."""
    limits: dict[str, Decimal] = {}
    if isinstance(raw, Mapping):
        for key, value in raw.items():
            quantity = parse_quantity(value)
            if quantity is not None:
                limits[str(key)] = quantity
    return tuple(sorted(limits.items()))


def _taints(owner: Mapping[str, Any], path: DataPath) -> tuple[Taint, ...]:
    """The ``taints`` of a pool, a node or a NodePool template, with their positions."""
    return tuple(
        Taint(
            str(t.get("key", "")),
            str(t.get("value", "") or ""),
            str(t.get("effect", "")),
            (*path, "taints", i),
        )
        for i, t in _items(owner.get("taints"))
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _items(value: Any) -> Iterator[tuple[int, Mapping[str, Any]]]:
    if isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, Mapping):
                yield index, item


def _strings(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {str(key): item for key, item in value.items() if isinstance(item, str)}
