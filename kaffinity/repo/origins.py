"""Positions of a rendered document taken from the file it came from.

Rules read the *rendered* objects, but a finding must name the file a person edits. A rendered
:class:`~kaffinity.load.source.Document` keeps its rendered ``data`` and has
``file``/``root``/``prefix``/``span`` pointed at its origin (:func:`repoint`: aligned with the
source document item by item), so ``doc.locate(path)`` gives the nearest position recorded in the
origin file. A text that need not parse as YAML -- a Helm template with ``{{ }}`` actions, a
kustomization without apiVersion/kind -- is read by indentation (:func:`template_documents`,
:func:`template_positions`).

Positions come from the origin file only; where the origin cannot be read or its object not found,
the document keeps its rendered position (never a made-up line)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from kaffinity.load.source import (
    COLUMN_BITS,
    Document,
    PosDict,
    PosList,
    Span,
)
from kaffinity.repo.helm_worker import SEPARATOR


def object_name(data: Any) -> str:
    metadata = data.get("metadata") if isinstance(data, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""


def repoint(doc: Document, source: Document) -> Document:
    """``doc``'s rendered data, with positions taken from ``source`` (aligned item by item)."""
    root = align(doc.data, _at(source.root, source.prefix))
    return replace(doc, file=source.file, index=source.index, root=root, prefix=(), span=source.span)


def _at(root: Any, prefix: Sequence[Any]) -> Any:
    node = root
    for step in prefix:
        node = node[step]
    return node


#: Strategic-merge keys of the pod spec's lists (k8s.io/api/core/v1 types.go, `patchMergeKey`),
#: by which a rendered list item is paired with the source item it came from: a strategic-merge
#: patch adds items (kustomize puts a new container first) and so shifts indices.
_MERGE_KEYS = ("name", "containerPort", "mountPath", "devicePath", "topologyKey", "ip", "key", "port")


def align(rendered: Any, source: Any) -> Any:
    """A tree shaped like ``rendered`` holding the positions of the matching nodes of ``source``;
    what the source lacks is left out (its position is then its nearest ancestor's)."""
    if isinstance(rendered, dict) and isinstance(source, PosDict):
        out = PosDict(source.span)
        for (key, value), position in zip(source.items(), source.pos, strict=False):
            if key in rendered:
                out[key] = align(rendered[key], value)
                out.pos.append(position)
        return out
    if isinstance(rendered, list) and isinstance(source, PosList):
        items = PosList(source.span)
        for index, item in enumerate(rendered):
            match = _pair(item, index, rendered, source)
            items.append(align(item, source[match]) if match is not None else None)
            # No position: locate() stops at the list and reports its key.
            items.pos.append(source.pos[match] if match is not None else None)  # type: ignore[arg-type]
        return items
    return None


def _pair(item: Any, index: int, rendered: list[Any], source: PosList) -> int | None:
    if isinstance(item, dict):
        for key in _MERGE_KEYS:
            if key in item:
                for position, candidate in enumerate(source):
                    if isinstance(candidate, dict) and candidate.get(key) == item[key]:
                        return position
                break
    for position, candidate in enumerate(source):
        if candidate == item:
            return position
    return index if len(rendered) == len(source) else None


@dataclass(frozen=True, slots=True)
class Entry:
    """A key (``key`` set) or a list item's dash (``key`` None) on a template line."""

    line: int
    column: int
    key: str | None
    value: str = ""


#: A mapping key at the start of a line's rest: "quoted", 'quoted' or plain, then `:` and a space
#: or the end of the line (so `image: nginx:1.27` is the key `image`, and `- http://x` no key).
_KEY = re.compile(
    r"""(?:"((?:[^"\\]|\\.)*)"|'((?:[^']|'')*)'"""
    r"""|([^\s#'"{\[\]&*!|>%@`-][^#]*?|-[^\s#][^#]*?))[ \t]*:(?:[ \t]+|$)"""
)
_ACTION_ONLY = re.compile(r"^\s*\{\{.*\}\}\s*$")
_BLOCK_SCALAR = re.compile(r"^[|>][-+0-9]*\s*(?:#.*)?$")


def template_documents(lines: list[str]) -> list[list[Entry]]:
    """The keys and dashes of each ``---``-separated part of a template, with their positions."""
    blocks: list[list[Entry]] = [[]]
    scalar_indent: int | None = None  # inside a block scalar (`key: |`) deeper than this
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if scalar_indent is not None:
            if not stripped or indent > scalar_indent:
                continue
            scalar_indent = None
        if SEPARATOR.match(line):
            blocks.append([])
            continue
        if not stripped or stripped.startswith("#") or _ACTION_ONLY.match(line):
            continue
        column = indent + 1
        rest = line[indent:]
        while rest.startswith("- ") or rest == "-":
            blocks[-1].append(Entry(number, column, None))
            skipped = len(rest) - len(rest[1:].lstrip(" "))
            column += skipped
            rest = rest[skipped:]
        match = _KEY.match(rest)
        if match is None:
            continue
        key = match.group(1) if match.group(1) is not None else match.group(2)
        if key is None:
            key = match.group(3)
        elif match.group(2) is not None:
            key = key.replace("''", "'")
        value = rest[match.end() :].split(" #", 1)[0].strip()
        blocks[-1].append(Entry(number, column, key, value.strip("'\"")))
        if _BLOCK_SCALAR.match(value):
            scalar_indent = column - 1
    return blocks


def template_positions(rendered: Any, entries: Sequence[Entry]) -> Any:
    """A tree shaped like ``rendered`` with the positions its keys and items have in a template
    (``entries`` from one part of it): each key is looked for among the direct children of its
    parent's block (the shallowest keys below it), list items by their dash; what the template
    does not spell out (a block from ``toYaml .Values.x``, an ``include``) is left out, and
    resolves to its nearest ancestor: the line that includes it."""
    if not entries:
        return None
    first = entries[0]
    top = PosDict(Span(first.line, first.column))
    return _Layout(entries).fill(rendered, 0, len(entries), top)


class _Layout:
    """The entries of a template part, with where each one's block ends (computed once: a CRD
    template has tens of thousands of keys)."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        self.entries = entries
        count = len(entries)
        #: The next entry as shallow as entry i (its block ends there).
        self.ends = [count] * count
        #: The same for a key whose value is a list, whose `- ` items may stand at its column.
        self.list_ends = [count] * count
        open_plain: list[int] = []
        open_list: list[int] = []
        for j, entry in enumerate(entries):
            while open_plain and entries[open_plain[-1]].column >= entry.column:
                self.ends[open_plain.pop()] = j
            open_plain.append(j)
            while open_list and (
                entry.column < entries[open_list[-1]].column
                or (entry.column == entries[open_list[-1]].column and entry.key is not None)
            ):
                self.list_ends[open_list.pop()] = j
            open_list.append(j)

    def children(self, lo: int, hi: int, *, dashes: bool) -> list[int]:
        """The shallowest keys (or dashes) in ``lo..hi``, skipping over the blocks below them."""
        found = []
        index = lo
        while index < hi:
            found.append(index)
            index = min(self.ends[index], hi)
        wanted = [i for i in found if (self.entries[i].key is None) == dashes]
        if not wanted:
            return []
        column = min(self.entries[i].column for i in wanted)
        return [i for i in wanted if self.entries[i].column == column]

    def fill(self, rendered: Any, lo: int, hi: int, out: PosDict | None = None) -> Any:
        entries = self.entries
        if isinstance(rendered, dict):
            keys = self.children(lo, hi, dashes=False)
            if not keys:
                return None
            result = out if out is not None else PosDict(Span(entries[keys[0]].line, entries[keys[0]].column))
            for i in keys:
                entry = entries[i]
                key = entry.key
                if key is None or key not in rendered or key in result:
                    continue
                end = min(self.list_ends[i] if isinstance(rendered[key], list) else self.ends[i], hi)
                result[key] = self.fill(rendered[key], i + 1, end)
                result.pos.append(entry.line << COLUMN_BITS | entry.column)
            return result
        if isinstance(rendered, list):
            dashes = self.children(lo, hi, dashes=True)
            if not dashes:
                return None
            items = PosList(Span(entries[dashes[0]].line, entries[dashes[0]].column))
            pairs = self.pair(rendered, dashes, hi)
            for index, item in enumerate(rendered):
                dash = pairs.get(index)
                if dash is None:
                    items.append(None)
                    items.pos.append(None)  # type: ignore[arg-type] # no position: the list's
                    continue
                items.append(self.fill(item, dash + 1, min(self.ends[dash], hi)))
                items.pos.append(entries[dash].line << COLUMN_BITS | entries[dash].column)
            return items
        return None

    def pair(self, rendered: list[Any], dashes: list[int], hi: int) -> dict[int, int]:
        """Rendered items to template dashes: by a merge key spelled out literally (``- name:
        web``), then by order when as many items as dashes are left, else a lone dash (a
        ``range``) takes the rest."""
        entries = self.entries
        literals: list[dict[str, str]] = []
        for dash in dashes:
            literal = {}
            for i in self.children(dash + 1, min(self.ends[dash], hi), dashes=False):
                key = entries[i].key
                if key in _MERGE_KEYS and "{{" not in entries[i].value:
                    literal[key] = entries[i].value
            literals.append(literal)
        return _pair_literals(rendered, dashes, literals)


def _pair_literals(rendered: list[Any], dashes: list[int], literals: list[dict[str, str]]) -> dict[int, int]:
    pairs: dict[int, int] = {}
    used: set[int] = set()
    for index, item in enumerate(rendered):
        if not isinstance(item, dict):
            continue
        for position, literal in enumerate(literals):
            if position in used:
                continue
            key = next((key for key in _MERGE_KEYS if key in item and key in literal), None)
            if key is not None and literal[key] == str(item[key]):
                pairs[index] = dashes[position]
                used.add(position)
                break
    rest = [index for index in range(len(rendered)) if index not in pairs]
    free = [dashes[position] for position in range(len(dashes)) if position not in used]
    if len(rest) == len(free):
        pairs.update(zip(rest, free, strict=True))
    elif len(dashes) == 1 and not used:
        pairs.update(dict.fromkeys(rest, dashes[0]))
    return pairs
