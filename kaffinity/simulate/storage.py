"""The objects of a cluster that the volume plugins and the RuntimeClass admission plugin read:
PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes and RuntimeClasses, from a
capture (``kubectl get persistentvolumes,persistentvolumeclaims,storageclasses,runtimeclasses
-A -o yaml``), from manifests in the cluster file, and from the linted input (a chart's own
PVC or RuntimeClass).

Read as the API server stores them, with its defaults where a manifest leaves a field out: a
StorageClass without ``volumeBindingMode`` is ``Immediate`` (``SetDefaults_StorageClass``,
pkg/apis/storage/v1/defaults.go), a PVC without ``storageClassName`` gets the default class at
creation (the DefaultStorageClass admission plugin, plugin/pkg/admission/storage/
storageclass/setdefault: the newest class annotated ``storageclass.kubernetes.io/
is-default-class: "true"``; here the last one read). A PVC's class is its
``volume.beta.kubernetes.io/storage-class`` annotation, else ``spec.storageClassName``
(``GetPersistentVolumeClaimClass``, component-helpers/storage/volume/helpers.go).

CSINodes are read and kept: VolumeBinding reads them only to translate in-tree PVs to CSI
(``tryTranslatePVToCSI``), which changes no topology kaffinity models.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kaffinity.k8s.model import NodeSelectorTerm, Requirement, Toleration
from kaffinity.k8s.model.readers import as_labels, as_map, as_str, as_strings, mapping_items
from kaffinity.k8s.model.terms import read_quantities, read_toleration
from kaffinity.k8s.quantity import parse_quantity
from kaffinity.load.source import Document

#: ``volume.AnnBindCompleted``: the PV controller's mark on a claim it finished binding.
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
#: ``volume.AnnSelectedNode``: the node the scheduler chose for a WaitForFirstConsumer claim.
SELECTED_NODE = "volume.kubernetes.io/selected-node"
#: The beta annotation that still wins over ``spec.storageClassName``.
BETA_CLASS = "volume.beta.kubernetes.io/storage-class"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
#: ``volume.NotSupportedProvisioner``: a class whose volumes are made by hand (local PVs).
NO_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT = "WaitForFirstConsumer"


@dataclass(frozen=True, slots=True)
class StorageClass:
    name: str
    binding_mode: str
    provisioner: str
    #: ``allowedTopologies`` as node selector terms (each ``matchLabelExpressions`` entry an
    #: ``In``); empty: every node
    topologies: tuple[NodeSelectorTerm, ...]
    default: bool
    doc: Document

    @property
    def delayed(self) -> bool:
        return self.binding_mode == WAIT


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    name: str
    class_name: str
    #: ``spec.nodeAffinity.required.nodeSelectorTerms`` (None: no node affinity)
    terms: tuple[NodeSelectorTerm, ...] | None
    labels: tuple[tuple[str, str], ...]
    #: ``spec.claimRef`` (namespace, name), when reserved for or bound to a claim
    claim: tuple[str, str] | None
    capacity: Decimal | None
    access_modes: tuple[str, ...]
    phase: str
    deleting: bool
    doc: Document


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    namespace: str
    name: str
    #: the class it names ("" names none: no dynamic provisioning); None: not set, the default
    class_name: str | None
    volume_name: str
    bind_completed: bool
    selected_node: str | None
    request: Decimal | None
    access_modes: tuple[str, ...]
    phase: str
    deleting: bool
    doc: Document | None


@dataclass(frozen=True, slots=True)
class RuntimeClass:
    name: str
    #: ``overhead.podFixed``
    overhead: tuple[tuple[str, Decimal], ...]
    #: ``scheduling.nodeSelector`` and ``scheduling.tolerations``
    node_selector: tuple[tuple[str, str], ...]
    tolerations: tuple[Toleration, ...]
    doc: Document


@dataclass(slots=True)
class Storage:
    """The cluster's storage objects and RuntimeClasses, by name."""

    classes: dict[str, StorageClass] = field(default_factory=dict)
    volumes: dict[str, PersistentVolume] = field(default_factory=dict)
    claims: dict[tuple[str, str], PersistentVolumeClaim] = field(default_factory=dict)
    runtime_classes: dict[str, RuntimeClass] = field(default_factory=dict)
    csi_nodes: set[str] = field(default_factory=set)
    #: the files the cluster declares: their pods are judged as the cluster holds them (a claim
    #: missing is missing); a linted workload may mount a claim made elsewhere
    cluster_files: frozenset[str] = frozenset()
    #: the cluster file declares claims (a capture of them): a claim it lacks does not exist
    cluster_claims: bool = False

    @property
    def default_class(self) -> StorageClass | None:
        defaults = [c for c in self.classes.values() if c.default]
        return defaults[-1] if defaults else None

    def class_of(self, claim: PersistentVolumeClaim) -> str:
        """The class name of ``claim`` (``GetPersistentVolumeClaimClass``): "" for none."""
        return claim.class_name or ""

    def __bool__(self) -> bool:
        return bool(self.classes or self.volumes or self.claims or self.runtime_classes)


def read_storage(
    cluster: Iterable[Document], extra: Iterable[Document] = (), default_namespace: str = "default"
) -> Storage:
    """The storage objects and RuntimeClasses of the cluster's documents, then of ``extra`` (the
    linted input: objects it would create; the cluster's win a name both declare)."""
    storage = Storage()
    files: set[str] = set()
    for source, documents in ((True, cluster), (False, extra)):
        for doc in documents:
            if source:
                files.add(doc.file)
                before = len(storage.claims)
                _read(storage, doc, default_namespace)
                storage.cluster_claims |= len(storage.claims) > before
            else:
                _read(storage, doc, default_namespace)
    storage.cluster_files = frozenset(files)
    default = storage.default_class
    if default is not None:  # the DefaultStorageClass admission plugin, on claims naming none
        for key, claim in list(storage.claims.items()):
            if claim.class_name is None and not claim.volume_name:
                storage.claims[key] = _with_class(claim, default.name)
    return storage


def _with_class(claim: PersistentVolumeClaim, name: str) -> PersistentVolumeClaim:
    from dataclasses import replace

    return replace(claim, class_name=name)


def _read(storage: Storage, doc: Document, default_namespace: str) -> None:
    data = doc.data
    if not isinstance(data, Mapping):
        return
    kind, api = data.get("kind"), data.get("apiVersion")
    if kind == "List" and isinstance(data.get("items"), list):
        return  # a kubectl List is split into documents by the loader
    metadata = as_map(data.get("metadata"))
    name = as_str(metadata.get("name"))
    if not name:
        return
    if kind == "StorageClass" and api in ("storage.k8s.io/v1", "storage.k8s.io/v1beta1"):
        storage.classes.setdefault(name, _storage_class(name, data, doc))
    elif kind == "PersistentVolume" and api == "v1":
        storage.volumes.setdefault(name, _volume(name, data, doc))
    elif kind == "PersistentVolumeClaim" and api == "v1":
        namespace = as_str(metadata.get("namespace")) or default_namespace
        storage.claims.setdefault((namespace, name), read_claim(namespace, name, data, doc))
    elif kind == "RuntimeClass" and api in ("node.k8s.io/v1", "node.k8s.io/v1beta1"):
        storage.runtime_classes.setdefault(name, _runtime_class(name, data, doc))
    elif kind == "CSINode" and api == "storage.k8s.io/v1":
        storage.csi_nodes.add(name)


def topology_terms(raw: Any) -> tuple[NodeSelectorTerm, ...]:
    """``allowedTopologies`` as node selector terms: each ``matchLabelExpressions`` requirement
    is ``key In values`` (``TopologySelectorRequirementsAsSelector``, pkg/apis/core/v1/helper)."""
    terms = []
    for i, term in mapping_items(raw):
        requirements = tuple(
            Requirement(as_str(r.get("key")) or "", "In", as_strings(r.get("values")), (i, j))
            for j, r in mapping_items(term.get("matchLabelExpressions"))
        )
        terms.append(NodeSelectorTerm(requirements, (), (i,)))
    return tuple(terms)


def _storage_class(name: str, data: Mapping[str, Any], doc: Document) -> StorageClass:
    annotations = as_labels(as_map(data.get("metadata")).get("annotations"))
    return StorageClass(
        name,
        as_str(data.get("volumeBindingMode")) or "Immediate",
        as_str(data.get("provisioner")) or "",
        topology_terms(data.get("allowedTopologies")),
        dict(annotations).get(DEFAULT_CLASS) == "true",
        doc,
    )


def _volume(name: str, data: Mapping[str, Any], doc: Document) -> PersistentVolume:
    from kaffinity.k8s.model.terms import _node_selector_term

    metadata = as_map(data.get("metadata"))
    spec = as_map(data.get("spec"))
    annotations = dict(as_labels(metadata.get("annotations")))
    required = as_map(as_map(spec.get("nodeAffinity")).get("required"))
    terms = (
        tuple(
            _node_selector_term(term, ("spec", "nodeAffinity", "required", "nodeSelectorTerms", i))
            for i, term in mapping_items(required.get("nodeSelectorTerms"))
        )
        if required
        else None
    )
    ref = as_map(spec.get("claimRef"))
    claim_name = as_str(ref.get("name"))
    return PersistentVolume(
        name,
        annotations.get(BETA_CLASS) or as_str(spec.get("storageClassName")) or "",
        terms,
        as_labels(metadata.get("labels")),
        (as_str(ref.get("namespace")) or "", claim_name) if claim_name else None,
        read_quantities(as_map(spec.get("capacity"))).get("storage"),
        as_strings(spec.get("accessModes")),
        as_str(as_map(data.get("status")).get("phase")) or "",
        metadata.get("deletionTimestamp") is not None,
        doc,
    )


def read_claim(
    namespace: str, name: str, data: Mapping[str, Any], doc: Document | None
) -> PersistentVolumeClaim:
    """A PVC (or a StatefulSet's claim template, as the claim its controller creates)."""
    metadata = as_map(data.get("metadata"))
    spec = as_map(data.get("spec"))
    annotations = dict(as_labels(metadata.get("annotations")))
    class_name = annotations.get(BETA_CLASS)
    if class_name is None and "storageClassName" in spec:
        class_name = as_str(spec.get("storageClassName")) or ""
    requests = as_map(as_map(spec.get("resources")).get("requests"))
    return PersistentVolumeClaim(
        namespace,
        name,
        class_name,
        as_str(spec.get("volumeName")) or "",
        # metav1.HasAnnotation: the key, whatever its value (a YAML 1.1 `yes` is no string)
        BIND_COMPLETED in as_map(metadata.get("annotations")),
        annotations.get(SELECTED_NODE),
        parse_quantity(requests.get("storage")) if "storage" in requests else None,
        as_strings(spec.get("accessModes")),
        as_str(as_map(data.get("status")).get("phase")) or "",
        metadata.get("deletionTimestamp") is not None,
        doc,
    )


def _runtime_class(name: str, data: Mapping[str, Any], doc: Document) -> RuntimeClass:
    overhead = read_quantities(as_map(as_map(data.get("overhead")).get("podFixed")))
    scheduling = as_map(data.get("scheduling"))
    tolerations = tuple(
        read_toleration(raw, ("scheduling", "tolerations", i))
        for i, raw in mapping_items(scheduling.get("tolerations"))
    )
    return RuntimeClass(
        name,
        tuple(sorted(overhead.items())),
        as_labels(scheduling.get("nodeSelector")),
        tolerations,
        doc,
    )
