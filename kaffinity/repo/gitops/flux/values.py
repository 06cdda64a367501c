"""A HelmRelease's values as helm-controller merges them -- ``valuesFrom`` then ``values``
(helm-controller internal/chartutil/values.go, ``ChartValuesFromReferences``) -- and where each
value a template reads is written, so a finding about it lands on the HelmRelease's line."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from kaffinity.load.source import Document
from kaffinity.repo.gitops.flux.index import (
    DEFAULT_VALUES_KEY,
    Index,
    as_string,
    is_helm_release,
    namespace_of,
    object_data,
    object_name,
    spec_of,
)
from kaffinity.repo.gitops.releases import NotRendered


def merge_values(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` merged into ``base`` (mappings merged key by key, anything else replaced),
    as helm-controller's pkg/runtime/transform ``MergeMaps``."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_values(out[key], value)
        else:
            out[key] = value
    return out


def release_values(doc: Document, index: Index) -> dict[str, Any] | NotRendered:
    """The values helm-controller gives the chart: each ``valuesFrom`` in order (a ConfigMap's
    or Secret's ``valuesKey``, default ``values.yaml``, merged; or set at ``targetPath``), then
    ``spec.values`` (internal/chartutil/values.go ``ChartValuesFromReferences``)."""
    from kaffinity.load.parse import parse_data

    spec = spec_of(doc.data)
    namespace = namespace_of(doc.data)
    values: dict[str, Any] = {}
    for reference in spec.get("valuesFrom") or ():
        if not isinstance(reference, dict):
            continue
        kind, name = str(reference.get("kind")), str(reference.get("name"))
        optional = reference.get("optional") is True
        found = index.get(kind, namespace, name) if kind in ("ConfigMap", "Secret") else None
        if found is None:
            if optional:
                continue
            return NotRendered(f"its valuesFrom {kind} {namespace}/{name} is not in the repository")
        data = object_data(found)
        key = as_string(reference.get("valuesKey")) or DEFAULT_VALUES_KEY
        if key not in data.values:
            if key in data.sealed or optional:
                continue  # encrypted (SOPS): its values are unknown here, the rest renders
            return NotRendered(f"its valuesFrom {kind} {namespace}/{name} has no key {key}")
        target = as_string(reference.get("targetPath"))
        if target is not None:
            values = _set_path(values, target, data.values[key])
            continue
        parsed, problem = parse_data(data.values[key])
        if problem is not None:
            return NotRendered(
                f"its valuesFrom {kind} {namespace}/{name} key {key} is not YAML: {problem.message}"
            )
        if isinstance(parsed, dict):
            values = merge_values(values, plain(parsed))
    inline = spec.get("values")
    if isinstance(inline, dict):
        values = merge_values(values, plain(inline))
    return values


def plain(value: Any) -> Any:
    """Loaded data as plain dicts and lists (JSON for the values file)."""
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def _set_path(values: dict[str, Any], path: str, value: str) -> dict[str, Any]:
    """``value`` set at the dotted ``path`` as helm-controller's ``ReplacePathValue`` sets it
    (internal/chartutil/values.go): quoted, a string; else as ``helm --set path=value`` types
    it (strvals ``ParseInto``): true/false, integers, null, anything else a string."""
    typed: Any = value
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        typed = value.strip("'\"")  # quoted: a string (helm-controller ReplacePathValue)
    elif value in ("true", "false"):
        typed = value == "true"
    elif value == "null":
        typed = None
    elif re.fullmatch(r"-?[1-9][0-9]*|0", value):
        typed = int(value)
    keys = [key for key in re.split(r"(?<!\\)\.", path) if key]
    update: Any = typed
    for key in reversed(keys):
        update = {key.replace("\\.", "."): update}
    return merge_values(values, update) if isinstance(update, dict) else values


_VALUES_REFERENCE = re.compile(r"\.Values\.([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*)")


def values_locations(doc: Document, rendered: Any, index: Index) -> dict[int, tuple[tuple[str, Any], ...]]:
    """Where the HelmRelease's ``spec.values`` set what a template line reads: a field rendered
    from ``replicas: {{ .Values.replicaCount }}`` is reported at ``replicaCount:`` of the
    HelmRelease when its values set it (through :meth:`Rendered.patch_location`, as an overlay's
    patch is), else on the template. Only a line that reads one value, directly, is followed."""
    from kaffinity.load.source import COLUMN_BITS, PosDict, locate_depth

    values_path = ("spec", "values")
    if not isinstance(spec_of(doc.data).get("values"), dict):
        return {}
    written = _as_written(doc, index)
    if written is None:
        return {}
    locations: dict[int, tuple[tuple[str, Any], ...]] = {}
    for file in rendered.files:
        lines = file.text.splitlines()
        for item in file.documents:
            tree: PosDict = PosDict(item.span)
            for path, line in _key_lines(item.root, ()):
                if not 0 < line <= len(lines):
                    continue
                references = set(_VALUES_REFERENCE.findall(lines[line - 1]))
                if len(references) != 1:
                    continue
                steps = values_path + tuple(references.pop().split("."))
                # The file's line, if the file's value is the one rendered (not an overlay's).
                if _dig(written.data, steps, _MISSING) != _dig(doc.data, steps, None):
                    continue
                depth, span = locate_depth(written.root, written.prefix + steps, written.span)
                if depth == len(written.prefix + steps):
                    _put(tree, path, span.line << COLUMN_BITS | span.column)
            if tree:
                locations[id(item)] = ((written.file, tree),)
    return locations


_MISSING = object()


def _dig(data: Any, path: Sequence[str], default: Any) -> Any:
    for step in path:
        if not isinstance(data, dict) or step not in data:
            return default
        data = data[step]
    return data


def _as_written(doc: Document, index: Index) -> Document | None:
    """The HelmRelease as its file spells it (a rendered overlay's object keeps the base's file
    name): the document of that kind and name, with the file's own positions."""
    from kaffinity.load.read import read

    if not os.path.isfile(doc.file):
        return None
    for candidate in read(doc.file, index.inputs.limits).documents:
        data = candidate.data
        if is_helm_release(data) and object_name(data) == object_name(doc.data):
            return candidate
    return None


def _key_lines(node: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], int]]:
    """Each data path of a position tree and the line recorded for it."""
    from kaffinity.load.source import COLUMN_BITS, PosDict, PosList

    if isinstance(node, PosDict):
        for (key, child), position in zip(node.items(), node.pos, strict=False):
            if position is not None:
                yield (*path, key), position >> COLUMN_BITS
            yield from _key_lines(child, (*path, key))
    elif isinstance(node, PosList):
        for number, (child, position) in enumerate(zip(node, node.pos, strict=False)):
            if position is not None:
                yield (*path, number), position >> COLUMN_BITS
            yield from _key_lines(child, (*path, number))


def _put(tree: Any, path: tuple[Any, ...], position: int) -> None:
    """Record ``position`` at ``path`` of a position tree, making the nodes on the way."""
    from kaffinity.load.source import PosDict, PosList

    node = tree
    for number, step in enumerate(path):
        last = number == len(path) - 1
        if isinstance(step, str) and isinstance(node, PosDict):
            if step not in node:
                nxt = (
                    PosList(node.span)
                    if not last and isinstance(path[number + 1], int)
                    else PosDict(node.span)
                )
                node[step] = nxt
                node.pos.append(None)  # type: ignore[arg-type]
            if last:
                node.pos[list(node).index(step)] = position
            node = node[step]
        elif isinstance(step, int) and isinstance(node, PosList):
            while len(node) <= step:
                node.append(PosDict(node.span))
                node.pos.append(None)  # type: ignore[arg-type]
            if last:
                node.pos[step] = position
            elif not last and isinstance(path[number + 1], int) and not isinstance(node[step], PosList):
                node[step] = PosList(node.span)
            node = node[step]
        else:
            return
