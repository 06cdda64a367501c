"""Compact models: a file's objects reduced to what the cross-object stages read.

Once the single-object stages (schema and API validation, the expansion rules, the suppression
comments) have run on a file (:mod:`kaffinity.stream`), the rules that read every manifest (the
graph, placement, rollouts) need far less of it: the identity and labels of every object, and of
the objects they model (:func:`kaffinity.k8s.model.build_object`: workloads, namespaces, nodes,
disruption budgets, priority classes, and the HorizontalPodAutoscalers the budgets read) the
scheduling fields. This module copies that part, positions included, and leaves the rest to be
freed: at 10,000 workloads, the parsed trees were most of the 450 MiB a lint held.

What is dropped is what no cross-object stage reads (checked by ``tests/test_stream.py``, which
lints the same inputs with and without compaction and compares every finding):

- of every object: ``metadata.managedFields`` and the ``kubectl.kubernetes.io/last-applied-configuration``
  annotation (a copy of the whole object);
- of an object no cross-object stage reads (a ConfigMap, a Secret, a Role, a
  CustomResourceDefinition...: not one of :func:`_read_whole`'s): everything but ``apiVersion``,
  ``kind`` and ``metadata`` (its identity, labels, annotations: the suppression annotations are
  read from it);
- of a pod template (or a Pod): the fields the scheduler does not read, :data:`POD_FIELDS` of the
  pod spec, and of each container all but :data:`CONTAINER_FIELDS` (its environment, probes,
  commands, mounts, security context...). What the scheduler's plugins read is kept: resources,
  ports (host ports), node selection, affinity, tolerations, spread, priority, overhead.

What is kept is copied (:func:`_copied`), so that the parsed tree is freed whole; the strings
(interned by the parser) and the positions (packed in arrays by the parser) are shared.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kaffinity.k8s.model import WorkloadKind
from kaffinity.k8s.model.kinds import WORKLOAD_GROUPS, custom_workload_kind, pod_template_path
from kaffinity.load.parse import SourceFile
from kaffinity.load.source import DataPath, Document, PosDict, PosList

#: Pod spec fields no scheduler plugin, controller model or cross-object rule reads.
POD_FIELDS = frozenset(
    {
        "volumes",
        "securityContext",
        "dnsConfig",
        "dnsPolicy",
        "hostAliases",
        "imagePullSecrets",
        "readinessGates",
        "automountServiceAccountToken",
        "enableServiceLinks",
        "shareProcessNamespace",
        "subdomain",
        "hostname",
        "setHostnameAsFQDN",
        "terminationGracePeriodSeconds",
        "activeDeadlineSeconds",
        "resourceClaims",
    }
)
#: The container fields the scheduler's plugins and the cross-object rules read: the rest
#: (image, environment, probes, commands, mounts, security contexts...) is dropped. ``resources``
#: (NodeResourcesFit), ``ports`` (NodePorts: host ports), ``restartPolicy`` (a sidecar's requests
#: add up: ``resource.PodRequests``), ``name`` (the finding's own words).
CONTAINER_FIELDS = frozenset({"name", "resources", "ports", "restartPolicy"})
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
_METADATA_FIELDS = frozenset({"managedFields"})
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_TOP_FIELDS = ("apiVersion", "kind", "metadata")
_WHOLE_KINDS = frozenset({"HorizontalPodAutoscaler", "Service"})

Keep = Callable[[str], bool]


def compact_file(file: SourceFile, workload_kinds: Iterable[WorkloadKind] = ()) -> SourceFile:
    """``file`` without its text and with its objects compacted (see the module's docstring).
    Its problems and name stay; a document whose root is not a plain object or a ``List`` of
    objects is kept whole."""
    kinds = tuple(workload_kinds)
    roots: dict[int, Any] = {}  # id(old root) -> new root
    documents = []
    for doc in file.documents:
        new_root = roots.get(id(doc.root))
        if new_root is None:
            new_root = roots[id(doc.root)] = _compact_root(doc, file.documents, kinds)
        data = _follow(new_root, doc.prefix)
        documents.append(
            Document(doc.file, doc.index, data, new_root, doc.span, doc.prefix, doc.duplicate_keys)
        )
    return SourceFile(file.name, "", tuple(documents), file.problems, file.skipped, compact=True)


def _compact_root(doc: Document, documents: Iterable[Document], kinds: tuple[WorkloadKind, ...]) -> Any:
    if not doc.prefix:
        return compact_object(doc, kinds) if isinstance(doc.data, PosDict) else _copied(doc.data)
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
    new_items = PosList(items.span)
    for index, value in enumerate(items):
        item = objects.get(index)
        new_items.append(
            compact_object(item, kinds) if item is not None and isinstance(value, PosDict) else value
        )
    new_items.pos = items.pos
    return _copy_dict(root, replace={"items": new_items})


def compact_object(doc: Document, kinds: tuple[WorkloadKind, ...] = ()) -> PosDict:
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
        return _pod(data, replaced)
    head, rest = template[0], template[1:]
    child = data.get(head) if isinstance(head, str) else None
    if isinstance(head, str) and isinstance(child, PosDict):
        replaced[head] = _along(child, rest)
    return _copy_dict(data, replace=replaced)


def _read_whole(doc: Document, kinds: tuple[WorkloadKind, ...]) -> bool:
    """Whether the cross-object stages read more of an object than its metadata: the kinds
    kaffinity models; HorizontalPodAutoscalers (disruption budgets, spread); Services (whose
    selector names a workload's pods in a suggestion); custom resources, which may make an
    operator run pods the input does not show (:func:`kaffinity.explain.suggest.custom_resource`)."""
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


def _along(node: PosDict, path: DataPath) -> PosDict:
    """``node`` with the pod template at ``path`` below it compacted."""
    if not path:
        return _pod(node, _metadata(node))
    head = path[0]
    child = node.get(head) if isinstance(head, str) else None
    if not isinstance(head, str) or not isinstance(child, PosDict):
        return _copy_dict(node)
    return _copy_dict(node, replace={head: _along(child, path[1:])})


def _pod(template: PosDict, replaced: dict[str, Any]) -> PosDict:
    """A pod template (or Pod) with its spec reduced to what scheduling reads."""
    spec = template.get("spec")
    if isinstance(spec, PosDict):
        containers: dict[str, Any] = {}
        for name in _CONTAINER_LISTS:
            items = spec.get(name)
            if isinstance(items, PosList):
                containers[name] = _containers(items)
        replaced["spec"] = _copy_dict(spec, keep=_not_pod_field, replace=containers)
    return _copy_dict(template, replace=replaced)


def _not_pod_field(key: str) -> bool:
    return key not in POD_FIELDS


def _container_field(key: str) -> bool:
    return key in CONTAINER_FIELDS


def _containers(items: PosList) -> PosList:
    copied = PosList(items.span)
    copied.extend(
        _copy_dict(item, keep=_container_field) if isinstance(item, PosDict) else item for item in items
    )
    copied.pos = items.pos
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
    copied.span = source.span
    positions = source.pos
    known = len(positions)
    kept: list[int] = []
    for index, (key, value) in enumerate(source.items()):
        if keep is not None and not keep(key):
            continue
        copied[key] = replace[key] if replace is not None and key in replace else _copied(value)
        if index < known:
            kept.append(positions[index])
    copied.pos = _packed(kept)
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
        copy.span = value.span
        copy.pos = value.pos
        for key, item in value.items():
            kind = type(item)
            copy[key] = (
                item if kind is not PosDict and kind is not PosList else _copy_tree(item, copies, depth)
            )
        return copy
    copy = copies[id(value)] = _new_list(PosList)
    copy.span = value.span
    copy.pos = value.pos
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
    copy.span = source.span
    copy.pos = source.pos
    copies[id(source)] = copy
    stack.append((source, copy))
    return copy


_new_dict = dict.__new__
_new_list = list.__new__


def _packed(positions: Iterable[int | None]) -> Any:
    """Positions as an unsigned 64-bit array; a list when one is missing (None: rendered input)."""
    try:
        return array("Q", positions)
    except TypeError:
        return list(positions)


def _follow(data: Any, path: DataPath) -> Any:
    for item in path:
        data = data[item]
    return data
