"""Compact models: a file's objects reduced to what the cross-object stages read.

Once the single-object stages (schema and API validation, the expansion rules, the suppression
comments) have run on a file (:mod:`kaffinity.stream`), the rules that read every manifest (the
graph, placement, rollouts) need far less of it: the identity and labels of every object, and of
the objects they model (:func:`kaffinity.k8s.model.build_object`: workloads, namespaces, nodes,
disruption budgets, priority classes, and the HorizontalPodAutoscalers the budgets read) the
scheduling fields. This module copies that part, positions included, and leaves the rest to be
freed: at 10,000 workloads, the parsed trees were most of the 450 MiB a lint held.

What is kept of a pod is declared by the readers: each rule that reads several objects (and
so runs on compact files) declares the :class:`Fields` it reads (``Rule.reads``; most read the
typed model, :data:`MODEL_FIELDS`), and compaction keeps exactly their union
(:func:`kaffinity.engine.single.kept_fields`). ``tests/test_compact_fields.py`` runs every such rule
on compact objects whose undeclared fields raise when read, and ``tests/test_stream.py`` lints the
same inputs with and without compaction and compares every finding. What is dropped:

- of every object: ``metadata.managedFields`` and the ``kubectl.kubernetes.io/last-applied-configuration``
  annotation (a copy of the whole object);
- of an object no cross-object stage reads (a ConfigMap, a Secret, a Role, a
  CustomResourceDefinition...: not one of :func:`_read_whole`'s): everything but ``apiVersion``,
  ``kind`` and ``metadata`` (its identity, labels, annotations: the suppression annotations are
  read from it);
- of a pod template (or a Pod): every pod spec field and container field no reader declares
  (volumes, security contexts, DNS, the environment, probes, commands, mounts...). What the
  scheduler's plugins read is kept: resources, ports (host ports), node selection, affinity,
  tolerations, spread, priority, overhead, the RuntimeClass and the volumes.

What is kept is copied (:func:`_copied`), so that the parsed tree is freed whole; the strings
(interned by the parser) and the positions (packed by the parser: one ``bytes`` per mapping
or sequence, :func:`kaffinity.load.source.pack`) are shared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kaffinity.k8s.model import WorkloadKind
from kaffinity.k8s.model.kinds import WORKLOAD_GROUPS, custom_workload_kind, pod_template_path
from kaffinity.load.parse import SourceFile
from kaffinity.load.source import (
    DataPath,
    Document,
    PosDict,
    PosList,
    positions,
    set_positions,
    share_positions,
)


@dataclass(frozen=True, slots=True)
class Fields:
    """The fields of a compact pod template a reader reads: of the pod spec (``pod``) and of each
    container (``container``). Everything else of a workload is kept whole (its identity,
    labels, replicas, strategy...); the pod spec and its containers are where compaction
    drops what no reader declares."""

    pod: frozenset[str] = frozenset()
    container: frozenset[str] = frozenset()

    def __or__(self, other: Fields) -> Fields:
        return Fields(self.pod | other.pod, self.container | other.container)


#: What the typed model reads of a pod template (:func:`kaffinity.k8s.model.build_object`'s pod
#: view and requests, and through it the graph, the offline scheduler's plugins, the rollouts):
#: node selection, affinity, tolerations, spread (NodeAffinity, InterPodAffinity,
#: TaintToleration, PodTopologySpread), ``resources`` and ``overhead`` (NodeResourcesFit: the
#: pod-level requests and ``resource.PodRequests``), host ports (NodePorts: the containers'
#: ``ports`` and ``hostNetwork``), ``nodeName``, ``schedulerName``, ``schedulingGates``, the
#: priority (DefaultPreemption), ``runtimeClassName`` (the RuntimeClass admission plugin),
#: ``volumes`` (VolumeBinding, VolumeZone: the claims a pod mounts); of a container its
#: ``name`` (the finding's own words), ``resources``, ``ports`` and ``restartPolicy`` (a
#: sidecar's requests add up).
MODEL_FIELDS = Fields(
    pod=frozenset(
        {
            "affinity",
            "nodeSelector",
            "tolerations",
            "topologySpreadConstraints",
            "resources",
            "overhead",
            "containers",
            "initContainers",
            "ephemeralContainers",
            "hostNetwork",
            "nodeName",
            "schedulerName",
            "schedulingGates",
            "priority",
            "priorityClassName",
            "preemptionPolicy",
            "runtimeClassName",
            "volumes",
        }
    ),
    container=frozenset({"name", "resources", "ports", "restartPolicy"}),
)
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
_METADATA_FIELDS = frozenset({"managedFields"})
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_TOP_FIELDS = ("apiVersion", "kind", "metadata")
#: Read whole, beside the modelled kinds: HorizontalPodAutoscalers, Services, and the objects
#: the volume plugins and the RuntimeClass admission plugin read (kaffinity.simulate.storage).
_WHOLE_KINDS = frozenset(
    {
        "HorizontalPodAutoscaler",
        "Service",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "StorageClass",
        "RuntimeClass",
    }
)

Keep = Callable[[str], bool]


def compact_file(
    file: SourceFile, workload_kinds: Iterable[WorkloadKind] = (), fields: Fields = MODEL_FIELDS
) -> SourceFile:
    """``file`` without its text and with its objects compacted (see the module's docstring),
    keeping of each pod template the ``fields`` its readers declare. Its problems and name stay;
    a document whose root is not a plain object or a ``List`` of objects is kept whole."""
    kinds = tuple(workload_kinds)
    roots: dict[int, Any] = {}  # id(old root) -> new root
    documents = []
    for doc in file.documents:
        new_root = roots.get(id(doc.root))
        if new_root is None:
            new_root = roots[id(doc.root)] = _compact_root(doc, file.documents, kinds, fields)
        data = _follow(new_root, doc.prefix)
        documents.append(
            Document(doc.file, doc.index, data, new_root, doc.span, doc.prefix, doc.duplicate_keys)
        )
    return SourceFile(file.name, "", tuple(documents), file.problems, file.skipped, compact=True)


def _compact_root(
    doc: Document, documents: Iterable[Document], kinds: tuple[WorkloadKind, ...], fields: Fields
) -> Any:
    if not doc.prefix:
        return compact_object(doc, kinds, fields) if isinstance(doc.data, PosDict) else _copied(doc.data)
    # Items of a List: the List's spine is copied, each item compacted in it.
    root = doc.root
    items = root.get("items") if isinstance(root, PosDict) else None
    if not isinstance(items, PosList):
        return _copied(root)
    objects = {
        item.prefix[1]: item
        for item in documents
        if item.root is root and len(item.prefix) == 2 and item.prefix[0] == "items"
    }
    new_items = _new_list(PosList)
    share_positions(new_items, items)
    for index, value in enumerate(items):
        item = objects.get(index)
        new_items.append(
            compact_object(item, kinds, fields) if item is not None and isinstance(value, PosDict) else value
        )
    return _copy_dict(root, replace={"items": new_items})


def compact_object(
    doc: Document, kinds: tuple[WorkloadKind, ...] = (), fields: Fields = MODEL_FIELDS
) -> PosDict:
    """One object's compact tree (``doc.data`` is a mapping)."""
    data: PosDict = doc.data
    if not _read_whole(doc, kinds):
        return _copy_dict(data, keep=_TOP_FIELDS.__contains__, replace=_metadata(data))
    kind, api_version = data.get("kind"), data.get("apiVersion")
    template = (
        pod_template_path(kind, api_version, kinds)
        if isinstance(kind, str) and isinstance(api_version, str)
        else None
    )
    replaced = _metadata(data)
    if template is None:
        return _copy_dict(data, replace=replaced)
    if not template:  # a Pod: the object is its own template
        return _pod(data, replaced, fields)
    head, rest = template[0], template[1:]
    child = data.get(head) if isinstance(head, str) else None
    if isinstance(head, str) and isinstance(child, PosDict):
        replaced[head] = _along(child, rest, fields)
    return _copy_dict(data, replace=replaced)


def _read_whole(doc: Document, kinds: tuple[WorkloadKind, ...]) -> bool:
    """Whether the cross-object stages read more of an object than its metadata: the kinds
    kaffinity models; HorizontalPodAutoscalers (disruption budgets, spread); Services (whose
    selector names a workload's pods in a suggestion); custom resources, which may make an
    operator run pods the input does not show (:func:`kaffinity.explain.unknown.custom_resource`)."""
    data = doc.data
    kind, api_version = data.get("kind"), data.get("apiVersion")
    if kind in _WHOLE_KINDS:
        return True
    if isinstance(api_version, str) and "/" in api_version:
        group = api_version.split("/", 1)[0]
        if "." in group and not group.endswith("k8s.io"):
            return True
    return _modelled(kind, api_version, data, kinds)


def _modelled(kind: Any, api_version: Any, data: PosDict, kinds: tuple[WorkloadKind, ...]) -> bool:
    """Whether :func:`kaffinity.k8s.model.build_object` makes a typed object of it (by kind and
    version alone, without building it: the same tests, in the same order)."""
    if not isinstance(kind, str) or not isinstance(api_version, str):
        return False
    if kind in WORKLOAD_GROUPS and api_version.startswith(WORKLOAD_GROUPS[kind]):
        return True
    if custom_workload_kind(data, kinds) is not None:
        return True
    if kind == "PriorityClass" and api_version.startswith("scheduling.k8s.io/"):
        return True
    if kind == "PodDisruptionBudget":
        return api_version == "v1" or api_version.startswith("policy/")
    return api_version == "v1" and kind in ("Namespace", "Node")


def _along(node: PosDict, path: DataPath, fields: Fields) -> PosDict:
    """``node`` with the pod template at ``path`` below it compacted."""
    if not path:
        return _pod(node, _metadata(node), fields)
    head = path[0]
    child = node.get(head) if isinstance(head, str) else None
    if not isinstance(head, str) or not isinstance(child, PosDict):
        return _copy_dict(node)
    return _copy_dict(node, replace={head: _along(child, path[1:], fields)})


def _pod(template: PosDict, replaced: dict[str, Any], fields: Fields) -> PosDict:
    """A pod template (or Pod) with its spec reduced to the declared ``fields``."""
    spec = template.get("spec")
    if isinstance(spec, PosDict):
        containers: dict[str, Any] = {}
        for name in _CONTAINER_LISTS:
            items = spec.get(name)
            if isinstance(items, PosList):
                containers[name] = _containers(items, fields.container.__contains__)
        replaced["spec"] = _copy_dict(spec, keep=fields.pod.__contains__, replace=containers)
    return _copy_dict(template, replace=replaced)


def _containers(items: PosList, keep: Keep) -> PosList:
    copied = _new_list(PosList)
    share_positions(copied, items)
    copied.extend(_copy_dict(item, keep=keep) if isinstance(item, PosDict) else item for item in items)
    return copied


def _metadata(data: PosDict) -> dict[str, Any]:
    """``{"metadata": ...}`` when the object's metadata loses a field, else ``{}``."""
    metadata = data.get("metadata")
    if not isinstance(metadata, PosDict):
        return {}
    annotations = metadata.get("annotations")
    trimmed = annotations if isinstance(annotations, PosDict) and _LAST_APPLIED in annotations else None
    if trimmed is None and not any(key in metadata for key in _METADATA_FIELDS):
        return {}
    replace: dict[str, Any] = {}
    if trimmed is not None:
        replace["annotations"] = _copy_dict(trimmed, keep=_not_last_applied)
    return {"metadata": _copy_dict(metadata, keep=_not_metadata_field, replace=replace)}


def _not_last_applied(key: str) -> bool:
    return key != _LAST_APPLIED


def _not_metadata_field(key: str) -> bool:
    return key not in _METADATA_FIELDS


def _copy_dict(
    source: PosDict, keep: Keep | None = None, replace: Mapping[str, Any] | None = None
) -> PosDict:
    """A new mapping with the kept keys of ``source`` (values from ``replace`` where given, else
    the same), in order, each with its position."""
    if keep is None and not replace:
        return _copied(source)  # type: ignore[no-any-return]
    copied = _new_dict(PosDict)  # no __init__: a compact copy makes hundreds of thousands
    held = positions(source)
    known = len(held)
    kept: list[int | None] = []
    for index, (key, value) in enumerate(source.items()):
        if keep is not None and not keep(key):
            continue
        copied[key] = replace[key] if replace is not None and key in replace else _copied(value)
        if index < known:
            kept.append(held[index])
    set_positions(copied, source.span, kept)
    return copied


def _copied(value: Any) -> Any:
    """A kept value, copied: the parsed tree is then freed whole, where sharing its kept parts
    left them scattered among freed memory that the process could not give back (188 MiB held
    after loading 10,000 workloads, against 156 MiB copied). Strings and positions (interned
    and packed by the parser) are shared.

    A mapping or sequence that aliases share in the parsed tree is copied once and shared again
    in the copy: a compact file costs memory in proportion to the file, not to what its aliases
    expand to (nothing writes into a compact document). Levels past :data:`_RECURSION` are
    copied by a loop: a value may nest as deep as the loader's ``limits.depth``."""
    kind = type(value)
    if kind is not PosDict and kind is not PosList:
        return value
    return _copy_tree(value, {}, 0)


#: Levels copied by recursion (the common case, and the fastest); deeper ones by a loop.
_RECURSION = 50


def _copy_tree(value: Any, copies: dict[int, Any], depth: int) -> Any:
    """``value`` (a PosDict or PosList) copied, sharing what ``copies`` holds already."""
    copy = copies.get(id(value))
    if copy is not None:
        return copy
    if depth > _RECURSION:
        return _copy_loop(value, copies)
    depth += 1
    if type(value) is PosDict:
        copy = copies[id(value)] = _new_dict(PosDict)
        share_positions(copy, value)
        for key, item in value.items():
            kind = type(item)
            copy[key] = (
                item if kind is not PosDict and kind is not PosList else _copy_tree(item, copies, depth)
            )
        return copy
    copy = copies[id(value)] = _new_list(PosList)
    share_positions(copy, value)
    copy.extend(
        [
            item
            if type(item) is not PosDict and type(item) is not PosList
            else _copy_tree(item, copies, depth)
            for item in value
        ]
    )
    return copy


def _copy_loop(value: Any, copies: dict[int, Any]) -> Any:
    """:func:`_copy_tree` without recursion, for what nests deeper than :data:`_RECURSION`."""
    stack: list[tuple[Any, Any]] = []
    root = _shell(value, copies, stack)
    while stack:
        source, target = stack.pop()
        if type(source) is PosDict:
            for key, item in source.items():
                kind = type(item)
                target[key] = (
                    item if kind is not PosDict and kind is not PosList else _shell(item, copies, stack)
                )
        else:
            for item in source:
                kind = type(item)
                target.append(
                    item if kind is not PosDict and kind is not PosList else _shell(item, copies, stack)
                )
    return root


def _shell(source: Any, copies: dict[int, Any], stack: list[tuple[Any, Any]]) -> Any:
    """The copy of ``source``: the one made already, or a new empty one (its span and positions
    set) put on ``stack`` to be filled."""
    copy = copies.get(id(source))
    if copy is not None:
        return copy
    copy = _new_dict(PosDict) if type(source) is PosDict else _new_list(PosList)
    share_positions(copy, source)
    copies[id(source)] = copy
    stack.append((source, copy))
    return copy


_new_dict = dict.__new__
_new_list = list.__new__


def _follow(data: Any, path: DataPath) -> Any:
    for item in path:
        data = data[item]
    return data


class Sources(Mapping[str, str]):
    """The one store that reads compact files again: the text of each file by name (a mapping),
    and the whole content of a document (:meth:`data`).

    A compact file's text is read again from disk each time it is asked for (the report asks
    once per file it shows; a rule that reads texts keeps what it needs), so that only the files
    a report or a fix shows are read twice, and the run does not hold them all again; its
    documents' whole content is read once, for the objects another file defines too (copies per
    environment are compared in full, as before compaction: :mod:`kaffinity.repo.units`). A file
    changed since it was linted reads as it is now: a text that cannot be read, as empty (the
    report shows no code frame); documents that no longer line up, as what was kept."""

    def __init__(self, files: Iterable[SourceFile]) -> None:
        self._files = {file.name: file for file in files}
        self._whole: dict[str, dict[tuple[int, DataPath], Any] | None] = {}

    def __getitem__(self, name: str) -> str:
        file = self._files[name]
        if not file.compact:
            return file.text
        from kaffinity.load.read import read_text

        _, text, problem = read_text(name)
        return "" if problem is not None else text

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)

    def data(self, doc: Document) -> Any:
        """The whole content of ``doc``: its own for a document of a file read whole."""
        file = self._files.get(doc.file)
        if file is None or not file.compact:
            return doc.data
        if doc.file not in self._whole:
            from kaffinity.load.read import read

            again = read(file.name)
            self._whole[doc.file] = (
                {(other.index, other.prefix): other.data for other in again.documents}
                if len(again.documents) == len(file.documents)
                else None
            )
        documents = self._whole[doc.file]
        if documents is None:  # changed since it was linted: what is kept is compared
            return doc.data
        return documents.get((doc.index, doc.prefix), doc.data)
