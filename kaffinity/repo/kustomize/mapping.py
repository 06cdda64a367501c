"""A build's objects pointed at the files that define them: the ``config.kubernetes.io/origin``
annotation kustomize adds (removed before rules see the object) names the resource file or the
kustomization that generated the object; the overlay's patches that touch an object are kept as
trees of positions (:attr:`kaffinity.repo.rendered.Rendered.patches`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from kaffinity.load.manifests import find_kustomization
from kaffinity.load.parse import Limits, SourceFile
from kaffinity.load.read import read
from kaffinity.load.source import (
    Document,
    PosDict,
    PosList,
    Span,
)
from kaffinity.repo.engines import text_of
from kaffinity.repo.origins import Entry, align, object_name, repoint, template_documents
from kaffinity.repo.sandbox import (
    confined_file,
)

ORIGIN_ANNOTATION = "config.kubernetes.io/origin"


def map_kustomize(
    built: SourceFile, wrapper: str, directory: str, kustomization: str, limits: Limits, roots: Sequence[str]
) -> tuple[SourceFile, ...]:
    origins: dict[str, SourceFile] = {}
    mapped: dict[str, list[Document]] = {}
    for doc in built.documents:
        origin = _pop_origin(doc.data)
        target = _origin_file(origin, wrapper, directory, roots) if origin is not None else None
        source = None
        if target is not None and origin is not None and "path" in origin:
            if target not in origins:
                origins[target] = read(target, limits, manifests_only=False)
            source = _find_source(doc, origins[target])
        if source is None:
            # Generated (configMapGenerator, ...): the generator's entry in the kustomization
            # that configured it; no origin (a remote resource) or its object not found: the
            # overlay's `resources`.
            generated = target is not None and origin is not None and "path" not in origin
            target = target if generated and target is not None else kustomization
            if target not in origins:
                origins[target] = read(target, limits, manifests_only=False)
            source = _kustomization_location(doc, origins[target], generated=generated)
            mapped.setdefault(target, []).append(source)
            continue
        assert target is not None  # a source was found in it
        mapped.setdefault(target, []).append(repoint(doc, source))
    files = [SourceFile(name, origins[name].text, tuple(docs), ()) for name, docs in mapped.items()]
    if built.problems:
        files.append(SourceFile(built.name, built.text, (), built.problems))
    return tuple(files)


def overlay_patches(
    kustomization: str, directory: str, files: Sequence[SourceFile], limits: Limits, roots: Sequence[str]
) -> dict[int, tuple[tuple[str, Any], ...]]:
    """The patch files of the overlay's kustomization and of the local kustomizations it builds
    on (``patches``, ``patchesStrategicMerge``, ``patchesJson6902`` entries with a ``path``), in
    the order kustomize applies them, aligned with each rendered object they touch. A
    strategic-merge patch touches the object of its kind and name; a JSON 6902 one the object
    its ``target`` names, and only its ``add``/``replace`` values count."""
    entries: list[tuple[str, dict[str, Any] | None]] = []
    for config, folder in _closure(kustomization, directory, limits, roots):
        for key in ("patches", "patchesStrategicMerge", "patchesJson6902"):
            listed = config.get(key)
            for entry in listed if isinstance(listed, list) else ():
                relative = entry.get("path") if isinstance(entry, dict) else entry
                target = entry.get("target") if isinstance(entry, dict) else None
                if isinstance(relative, str):
                    path = os.path.normpath(os.path.join(folder, relative))
                    entries.append((path, target if isinstance(target, dict) else None))
    found: dict[int, list[tuple[str, Any]]] = {}
    documents = [doc for file in files for doc in file.documents]
    for path, target in entries:
        if not confined_file(path, roots):
            continue
        raw = raw_documents(text_of(path, limits, roots), limits)
        for doc in documents:
            for tree in _patch_trees(doc, raw, target):
                found.setdefault(id(doc), []).append((path, tree))
    return {key: tuple(value) for key, value in found.items()}


#: Kustomizations of one build whose patches are read (a bound on a deep or wide tree).
_MOST_LAYERS = 64


def _closure(
    kustomization: str, directory: str, limits: Limits, roots: Sequence[str]
) -> list[tuple[dict[str, Any], str]]:
    """The overlay's kustomization and the local ones it builds on, each with its folder, in
    the order kustomize applies their patches: a kustomization's ``resources`` (and ``bases``)
    are built first, each with its own patches, then its ``components``, then its own patches
    (kubernetes-sigs/kustomize api/internal/target/kusttarget.go, ``AccumulateTarget``:
    ``accumulateResources``, ``accumulateComponents``, then the transformers). Only folders
    inside the repository; a kustomization read once."""
    ordered: list[tuple[dict[str, Any], str]] = []
    seen: set[str] = set()

    def visit(path: str, folder: str) -> None:
        real = os.path.realpath(path)
        if real in seen or len(seen) >= _MOST_LAYERS:
            return
        seen.add(real)
        config = raw_documents(text_of(path, limits, roots), limits)
        if not config or not isinstance(config[0], dict):
            return
        for key in ("resources", "bases", "components"):
            listed = config[0].get(key)
            for entry in listed if isinstance(listed, list) else ():
                if not isinstance(entry, str) or "://" in entry or entry.startswith("git@"):
                    continue
                inner = os.path.normpath(os.path.join(folder, entry))
                if os.path.isdir(inner) and (found := find_kustomization(inner)) is not None:
                    visit(found, inner)
        ordered.append((config[0], folder))

    visit(kustomization, directory)
    return ordered


def _patch_trees(doc: Document, raw: list[Any], target: dict[str, Any] | None) -> list[Any]:
    trees: list[Any] = []
    name = object_name(doc.data)
    for patch in raw:
        if isinstance(patch, PosDict) and patch.get("kind") == doc.data.get("kind"):
            own = object_name(patch)
            if own and own in name and (target is None or _targets(target, doc)):
                trees.append(_without_identity(align(doc.data, patch)))  # strategic merge
        elif isinstance(patch, PosList) and target is not None and _targets(target, doc):
            trees.extend(_json_patch_trees(doc.data, patch))
    return trees


def _without_identity(tree: Any) -> Any:
    """A strategic-merge patch's apiVersion, kind and name only say which object it patches:
    they keep the position they have in the origin file."""
    if isinstance(tree, PosDict):
        for key in ("apiVersion", "kind"):
            if key in tree:
                _remove_key(tree, key)
        metadata = tree.get("metadata")
        if isinstance(metadata, PosDict) and "name" in metadata:
            _remove_key(metadata, "name")
    return tree


def _targets(target: dict[str, Any], doc: Document) -> bool:
    kind, name = target.get("kind"), target.get("name")
    return (kind is None or kind == doc.data.get("kind")) and (
        not isinstance(name, str) or name in object_name(doc.data)
    )


def _json_patch_trees(data: Any, operations: PosList) -> list[Any]:
    """A tree per ``add``/``replace`` operation: no positions down to its ``path`` (the patch
    spells none of those fields), then its ``value`` aligned with the rendered value there."""
    trees = []
    for operation in operations:
        if not isinstance(operation, PosDict) or operation.get("op") not in ("add", "replace"):
            continue
        pointer = operation.get("path")
        position = operation.key_position("value")
        if not isinstance(pointer, str) or not pointer.startswith("/") or position is None:
            continue
        found = _pointed(data, pointer)
        if found is not None:
            steps, node = found
            trees.append(_patch_tree(align(node, operation["value"]), steps, operation, position))
    return trees


def _pointed(data: Any, pointer: str) -> tuple[list[Any], Any] | None:
    """The steps of a JSON pointer into ``data`` (``-``: the last item) and the value there;
    None when it leads nowhere."""
    steps: list[Any] = []
    node = data
    for raw_step in pointer[1:].split("/"):
        step: Any = raw_step.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            step = len(node) - 1 if step == "-" else int(step) if step.isdigit() else None
            if step is None or not 0 <= step < len(node):
                return None
        elif not isinstance(node, dict) or step not in node:
            return None
        steps.append(step)
        node = node[step]
    return steps, node


def _patch_tree(leaf: Any, steps: list[Any], operation: PosDict, position: int) -> Any:
    """``leaf`` under mappings and lists down ``steps``, placed nowhere but the operation's own
    path end: its ``value:`` key."""
    tree: Any = leaf
    for index, step in enumerate(reversed(steps)):
        holder: Any = PosDict(operation.span) if isinstance(step, str) else PosList(operation.span)
        if isinstance(step, int):
            holder.extend([None] * step)
            holder.pos.extend([None] * step)
        if isinstance(holder, PosDict):
            holder[step] = tree
        else:
            holder.append(tree)
        holder.pos.append(position if index == 0 else None)
        tree = holder
    return tree


def raw_documents(text: str, limits: Limits) -> list[Any]:
    """The documents of a YAML text with positions, whatever they hold (a kustomization without
    apiVersion/kind, a JSON 6902 patch is a list); none when it does not parse."""
    from kaffinity.load.parse.reader import _documents, _parse_errors

    try:
        return [data for data, _ in _documents(text, limits)]
    except _parse_errors():
        return []


def _pop_origin(data: Any) -> dict[str, str] | None:
    """Remove kustomize's origin annotation (and an annotations mapping it leaves empty) and
    return its top-level fields (``path``, ``repo``, ``configuredIn``)."""
    metadata = data.get("metadata") if isinstance(data, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if not isinstance(annotations, dict) or ORIGIN_ANNOTATION not in annotations:
        return None
    value = _remove_key(annotations, ORIGIN_ANNOTATION)
    if not annotations and isinstance(metadata, dict):
        _remove_key(metadata, "annotations")
    if not isinstance(value, str):
        return None
    fields: dict[str, str] = {}
    for line in value.splitlines():
        key, colon, rest = line.partition(": ")
        if colon and key in ("path", "repo", "ref", "configuredIn"):
            fields[key] = rest.strip().strip("'\"")
    return fields


def _remove_key(mapping: dict[str, Any], key: str) -> Any:
    """Remove ``key``, keeping a PosDict's positions aligned with its keys."""
    if isinstance(mapping, PosDict):
        index = list(mapping).index(key)
        if index < len(mapping.pos):
            del mapping.pos[index]
    return mapping.pop(key)


def _origin_file(origin: dict[str, Any], wrapper: str, directory: str, roots: Sequence[str]) -> str | None:
    """The file an origin names (paths are relative to the temporary kustomization), named as
    the input names its files: relative to the working directory if ``directory`` was.

    Trusted only as a regular file inside the repository (symlinks resolved): a manifest can
    carry a forged ``config.kubernetes.io/origin`` annotation of its own (kustomize keeps an
    annotation that is already there), naming any file; its lines would be printed as the
    object's source. Otherwise the object keeps its rendered position."""
    if origin.get("repo"):
        return None  # a remote base: nothing on disk to point at
    relative = origin.get("path") or origin.get("configuredIn")
    if not isinstance(relative, str):
        return None
    path = os.path.normpath(os.path.join(wrapper, relative))
    if not confined_file(path, roots):
        return None
    return path if os.path.isabs(directory) else os.path.relpath(path)


def _find_source(doc: Document, source: SourceFile) -> Document | None:
    """The document of ``source`` that ``doc`` was rendered from: same kind, and a name that
    the rendered name holds (namePrefix/nameSuffix around it); the longest such name."""
    kind = doc.data.get("kind")
    name = object_name(doc.data)
    candidates = [other for other in source.documents if other.data.get("kind") == kind]
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    named = [other for other in candidates if (own := object_name(other.data)) and own in name]
    return max(named, key=lambda other: len(object_name(other.data)), default=None)


def _kustomization_location(doc: Document, kustomization: SourceFile, *, generated: bool) -> Document:
    """``doc`` pointed at a kustomization: at the generator entry whose ``name`` the rendered
    name holds (``- name: web-config``), else at the generators' (or ``resources``) key; every
    path inside it resolves there. The kustomization need not parse as a manifest (it often
    has no apiVersion/kind), so its keys are found by indentation."""
    entries = template_documents(kustomization.text.splitlines())[0]
    name = object_name(doc.data)
    wanted = "Generator" if generated else "resources"
    section: str | None = None
    best: Entry | None = None
    fallback: Entry | None = None
    for entry in entries:
        if entry.column == 1 and entry.key is not None:
            section = entry.key
            if section.endswith(wanted) and fallback is None:
                fallback = entry
        elif (
            generated
            and section is not None
            and section.endswith(wanted)
            and entry.key == "name"
            and entry.value
            and entry.value in name
            and (best is None or len(entry.value) > len(best.value))
        ):
            best = entry
    chosen = best or fallback or (entries[0] if entries else None)
    span = Span(chosen.line, chosen.column) if chosen is not None else Span(1, 1)
    return replace(doc, file=kustomization.name, index=0, root=PosDict(span), prefix=(), span=span)
