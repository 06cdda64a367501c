"""Minimal text edits to YAML files: every byte outside the inserted text stays as it was.

Dumping a file back (even with ruamel's round-trip mode) re-indents and re-quotes most real
manifests, so ``kaffinity fix`` and ``kaffinity expand --format yaml`` splice text instead. The
node to change is found with ruamel's C composer, whose marks give exact character offsets, and
the new text is rendered to match its surroundings:

- A new entry of a *block mapping* goes on new line(s) right after the line on which the last
  entry's content ends (a trailing comment stays on that line; comment and blank lines after it
  stay after the insertion), at the column of the mapping's keys. A block scalar (``|``, ``>``)
  as last value ends at the start of a later line: the entry is inserted there.
- New items of a *block sequence* go on new lines after the last item's content, their dash at
  the column of the existing dashes, content after ``- ``.
- In *flow* collections ``, key: value`` / ``, item`` is inserted right after the last value;
  an empty ``{}`` / ``[]`` is filled in (``{key: value}``). An empty ``{}`` that is the value of
  a block mapping key on the same line (``labelSelector: {}``) becomes a block mapping on the
  following lines, one mapping step deeper than the key.

Rendering conventions for new values:

- Block context: a mapping is written as ``key: value`` lines, nested mappings indented by the
  document's mapping step (detected, default 2); a list of scalars given directly as the new
  entry's value is written in flow style (``matchLabelKeys: [pod-template-hash]``), every other
  list as ``- item`` lines; a block list under a key has its dashes at the key's column
  (kubectl style) or indented, as the document's existing block lists under keys mostly are
  (default: the key's column). Mappings in lists are compact: ``- key: app`` with the other
  keys aligned after the ``- ``. Empty collections are ``{}`` / ``[]``.
- Flow context: ``{k: v, ...}`` / ``[a, b]``; in a JSON document (flow root) or a flow
  collection whose existing scalars are double-quoted, everything is written as JSON.
- Scalars are plain when that is unambiguous (it reads back as the same string under YAML 1.1
  as Kubernetes reads it, and holds no indicator character), otherwise double-quoted.
- Newlines follow the file (``\\r\\n`` if the line written after uses it); a file without a
  trailing newline keeps having none.
- ``comment`` becomes a trailing `` # comment`` on the first inserted line; flow insertions have
  no line of their own and drop it.

Every edit is checked before it is returned: the edited document must load (with the project's
loader) as exactly the original data plus the change, or the function returns None. Only that
document is loaded again, so that a file with many edits costs linear time. Edits are
refused (None) also when the path breaks, a node on the way or at the end is shared through a
YAML alias, the target has a merge key (``<<``), is of the wrong kind, or the layout is odd.
A document that is a Kubernetes object (``apiVersion`` and ``kind``) is checked by loading it
the way ``kaffinity lint`` does; a document the loader keeps no object of (a JSON 6902 patch's operations,
a chart's values file) by the same loader's builder, every document kept.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeAlias

from kaffinity.load.source import DataPath

#: A node of ruamel's composer (``ruamel.yaml.nodes.Node``); ruamel is imported only when used.
YamlNode: TypeAlias = Any

_LINE_BREAK = re.compile(r"[\r\n]")
# Line breaks that YAML 1.1 knows but line-end searches here do not: refuse around them.
_OTHER_BREAKS = re.compile("[\x85\u2028\u2029]")
_INDICATORS = frozenset(":#,[]{}&*!|>'\"%@`")
_LEADING = frozenset("-?<=~ ")
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}
_COLON = re.compile(r"[ \t]*:(?=[ \t]+\Z)")
_REST_OF_LINE = re.compile(r"[ \t]*(?:#.*)?\Z")


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace ``text[start:end]`` (character offsets) with ``text``; a pure insertion if start == end."""

    start: int
    end: int
    text: str


class _Unsupported(Exception):
    """A value or layout this module does not write."""


# --- locating nodes ------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4)  # a large file's nodes take far more memory than its text
def compose(text: str) -> tuple[YamlNode, ...]:
    """The root node of every YAML document of ``text`` (empty if the text does not parse)."""
    from kaffinity.load.parse import compose_nodes
    from kaffinity.load.parse.reader import _parse_errors

    try:
        return compose_nodes(text)
    except _parse_errors():
        return ()


@dataclass(frozen=True, slots=True)
class _Layout:
    """One document's root node, its aliased nodes and its indentation habits. The root is kept
    here so that the node ids below stay valid whatever ``compose`` has cached."""

    root: YamlNode
    shared: frozenset[int]  # id() of nodes reached more than once (through aliases)
    # (id(node), id(parent), position in parent) of each shared node where it stands in the text
    # (its anchor); elsewhere (an alias) its marks point back at the anchor.
    anchors: frozenset[tuple[int, int, int]]
    step: int  # indentation of a block mapping under a key, relative to the key
    dash: int  # column of a block sequence's dashes under a key, relative to the key
    json: bool  # the document is a flow collection (a JSON file)


def _children(node: YamlNode) -> list[YamlNode]:
    """A collection's nodes in text order (a mapping's keys and values alternating)."""
    if _is_mapping(node):
        return [child for pair in node.value for child in pair]
    if _is_sequence(node):
        return list(node.value)
    return []


def _sites(root: YamlNode) -> tuple[dict[int, tuple[int, int, int]], set[int]]:
    """Where each node first stands, (id(node), id(parent), position in parent), and the id() of
    the nodes reached more than once (through aliases). Walked in text order, so the first visit
    of a shared node is where its anchor stands."""
    sites: dict[int, tuple[int, int, int]] = {}
    shared: set[int] = set()
    walk: list[tuple[YamlNode, int, int]] = [(root, 0, 0)]
    while walk:
        node, parent, position = walk.pop()
        if id(node) in sites:
            shared.add(id(node))
            continue
        sites[id(node)] = (id(node), parent, position)
        children = _children(node)
        walk.extend((child, id(node), index) for index, child in reversed(list(enumerate(children))))
    return sites, shared


def _indentation(root: YamlNode, shared: set[int]) -> tuple[int, int]:
    """The document's habits, by majority of the block collections under a key: how far a
    mapping is indented (2 when none says), and where a sequence's dashes stand (0)."""
    steps: Counter[int] = Counter()
    dashes: Counter[int] = Counter()
    stack = [root]
    visited: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in visited or id(node) in shared:
            continue
        visited.add(id(node))
        if _is_mapping(node):
            for key, value in node.value:
                stack += (key, value)
                if not node.flow_style:
                    _count_offset(key, value, shared, steps, dashes)
        elif _is_sequence(node):
            stack.extend(node.value)
    step = steps.most_common(1)[0][0] if steps else 2
    dash = dashes.most_common(1)[0][0] if dashes else 0
    return step, dash


def _count_offset(
    key: YamlNode, value: YamlNode, shared: set[int], steps: Counter[int], dashes: Counter[int]
) -> None:
    """Count the offset of a block collection on the lines below its key (not a shared one)."""
    if id(value) in shared or value.start_mark.line <= key.start_mark.line:
        return
    offset = value.start_mark.column - key.start_mark.column
    if _is_mapping(value) and not value.flow_style and offset > 0:
        steps[offset] += 1
    elif _is_sequence(value) and not value.flow_style and offset >= 0:
        dashes[offset] += 1


@functools.lru_cache(maxsize=8)
def _line_starts(text: str) -> tuple[int, ...]:
    """The offset at which each line of ``text`` starts (a str caches its hash: a lookup of the
    same text is cheap)."""
    return (0, *(match.end() for match in re.finditer("\n", text)))


def line_of(text: str, offset: int) -> int:
    """The 1-based line of ``offset`` in ``text``, without counting the lines before it each
    time: a lint plans one edit per finding, and a file of a thousand workloads has thousands
    (counting made the hints quadratic in the file's size)."""
    return bisect.bisect_right(_line_starts(text), offset)


@functools.lru_cache(maxsize=64)
def _layout(text: str, doc_index: int) -> _Layout | None:
    roots = compose(text)
    if not 0 <= doc_index < len(roots):
        return None
    root = roots[doc_index]
    sites, shared = _sites(root)
    step, dash = _indentation(root, shared)
    json = (_is_mapping(root) or _is_sequence(root)) and bool(root.flow_style)
    anchors = frozenset(sites[node_id] for node_id in shared)
    return _Layout(root, frozenset(shared), anchors, step, dash, json)


def _is_mapping(node: YamlNode) -> bool:
    return bool(node.id == "mapping")


def _is_sequence(node: YamlNode) -> bool:
    return bool(node.id == "sequence")


def _is_scalar(node: YamlNode) -> bool:
    return bool(node.id == "scalar")


def _key(node: YamlNode) -> str | None:
    """A key as the loader reads it (None for a merge key ``<<`` or a non-scalar key)."""
    from kaffinity.load.parse import resolve_plain
    from kaffinity.load.parse.scalars import _key_string

    if not _is_scalar(node):
        return None
    value: str = node.value
    if node.style:
        return value
    if value == "<<":
        return None
    return _key_string(resolve_plain(value))


@dataclass(frozen=True, slots=True)
class _Found:
    node: YamlNode
    parent: YamlNode | None  # the mapping holding ``node`` as a value, if any
    key: YamlNode | None  # the key node of ``node`` in ``parent``
    layout: _Layout


def _find(text: str, doc_index: int, path: DataPath) -> _Found | None:
    layout = _layout(text, doc_index)
    if layout is None:
        return None
    node = layout.root
    parent = key_node = None
    for item in path:
        if isinstance(item, str) and _is_mapping(node):
            match = None
            for key, value in node.value:
                if _key(key) == item:
                    match = key, value  # a repeated key: the later one wins, as in the loader
            if match is None:
                return None
            parent, (key_node, node) = node, match
        elif isinstance(item, int) and not isinstance(item, bool) and _is_sequence(node):
            if not 0 <= item < len(node.value):
                return None
            parent = key_node = None
            node = node.value[item]
        else:
            return None
        if id(node) in layout.shared or (key_node is not None and id(key_node) in layout.shared):
            return None
    return _Found(node, parent, key_node, layout)


def find_node(text: str, doc_index: int, path: DataPath) -> YamlNode | None:
    """The node at ``path`` (keys and indices from the root of document ``doc_index``).

    None if the path breaks, or if the node or one on the way is shared through an alias.
    """
    found = _find(text, doc_index, path)
    return None if found is None else found.node


# --- public edits --------------------------------------------------------------------------------


def add_entry(
    text: str, doc_index: int, mapping_path: DataPath, key: str, value: Any, comment: str | None = None
) -> Edit | None:
    """Add ``key: value`` as the last entry of the mapping at ``mapping_path``, or None."""
    found = _find(text, doc_index, mapping_path)
    if found is None or not _is_mapping(found.node) or not isinstance(key, str):
        return None
    mapping = found.node
    if any(_key(existing) in (key, None) for existing, _ in mapping.value):
        return None  # the key is there already, or a merge key (or complex key) is in play
    try:
        edit = _Writer(text, found.layout, comment).add_entry(found, key, value)
        expected = _plain(value)
    except _Unsupported:
        return None
    return _checked(text, edit, doc_index, mapping_path, lambda old: _with_entry(old, key, expected))


def append_items(
    text: str, doc_index: int, sequence_path: DataPath, items: list[Any], comment: str | None = None
) -> Edit | None:
    """Append ``items`` at the end of the sequence at ``sequence_path``, or None."""
    found = _find(text, doc_index, sequence_path)
    if found is None or not _is_sequence(found.node) or not isinstance(items, list | tuple) or not items:
        return None
    try:
        edit = _Writer(text, found.layout, comment).append_items(found.node, list(items))
        expected = _plain(list(items))
    except _Unsupported:
        return None
    return _checked(text, edit, doc_index, sequence_path, lambda old: [*old, *expected])


def fill_null(text: str, doc_index: int, path: DataPath, value: Any) -> Edit | None:
    """Give the mapping entry at ``path`` whose value is null (``key:``, ``key: null``,
    ``key: ~``, or an explicit ``? key`` without a value) the value ``value``, in flow style;
    or None. The null scalar is replaced; an empty one gets the value after its colon (or a
    new ``: value`` line under the ``?``)."""
    from kaffinity.load.parse import resolve_plain

    found = _find(text, doc_index, path)
    if found is None or found.key is None or not _is_scalar(found.node):
        return None
    node = found.node
    if node.style or resolve_plain(node.value) is not None:
        return None  # (a tag such as ``!!str`` on the null is caught by the check below)
    try:
        writer = _Writer(text, found.layout, None)
        written = writer.flow(value)
        expected = _plain(value)
    except _Unsupported:
        return None
    start, end = node.start_mark.index, node.end_mark.index
    if node.value:  # null, Null, NULL, ~
        edit = Edit(start, end, written)
    else:
        key_end = found.key.end_mark.index
        colon = text.find(":", key_end, max(start, key_end))
        if colon >= 0 and text.startswith(" ", colon + 1):  # "key: " -> "key: value"
            edit = Edit(colon + 2, colon + 2, written)
        elif colon >= 0:
            edit = Edit(colon + 1, colon + 1, " " + written)
        else:  # "? key" alone: the value on a line of its own, its ":" under the "?"
            line_start = max(text.rfind("\n", 0, key_end), text.rfind("\r", 0, key_end)) + 1
            question = text.rfind("?", line_start, key_end)
            if question < 0 or found.parent is None or found.parent.flow_style:
                return None
            try:
                newline = writer.newline(writer.line_end(key_end))
            except _Unsupported:
                return None
            edit = Edit(key_end, key_end, f"{newline}{' ' * (question - line_start)}: {written}")
    return _checked(text, edit, doc_index, path, lambda old: expected if old is None else _fail())


def _fail() -> Any:
    raise TypeError("the value is not null")


def apply(text: str, edits: Iterable[Edit]) -> str:
    """Apply edits made on ``text``; ValueError if two overlap or start at the same offset
    (two insertions at one place have no defined order)."""
    ordered = sorted(edits, key=lambda edit: (edit.start, edit.end))
    pieces: list[str] = []
    done = 0
    previous: Edit | None = None
    for edit in ordered:
        if not 0 <= edit.start <= edit.end <= len(text):
            raise ValueError(f"edit {edit} is outside the text ({len(text)} characters)")
        if previous is not None and (edit.start < previous.end or edit.start == previous.start):
            raise ValueError(f"edits overlap: {previous} and {edit}")
        pieces += (text[done : edit.start], edit.text)
        done = edit.end
        previous = edit
    pieces.append(text[done:])
    return "".join(pieces)


# --- verification --------------------------------------------------------------------------------


def verify(text: str, new_text: str, doc_index: int, path: DataPath, update: Callable[[Any], Any]) -> bool:
    """Whether ``new_text`` loads as ``text`` with the value at ``path`` of document
    ``doc_index`` replaced by ``update(old value)`` and nothing else changed (key order and
    scalar types included). Both texts are loaded with :func:`kaffinity.load.parse.parse`."""
    old, new = _loaded(text), _loaded(new_text)
    if old is None or new is None or doc_index not in old or list(old) != list(new):
        return False
    for index, data in old.items():
        if index != doc_index and not _same(data, new[index]):
            return False
    try:
        expected = _replaced(_plain(old[doc_index]), path, update)
    except (KeyError, IndexError, TypeError):
        return False
    return _same(expected, new[doc_index])


@functools.lru_cache(maxsize=8)
def _loaded(text: str) -> dict[int, Any] | None:
    """The root data of each document of ``text`` that the loader keeps, by index."""
    from kaffinity.load.parse import parse

    source = parse("<edit>", text)
    if source.problems:
        return None
    found = {document.index: document.root for document in source.documents}
    if found:
        return found
    # A document that is no object (a JSON 6902 patch's list of operations, a chart's values
    # file): the loader's own builder reads it as it reads a manifest, with no object kept.
    from kaffinity.load.parse.reader import _documents, _parse_errors

    try:
        return dict(enumerate(data for data, _ in _documents(text)))
    except _parse_errors():
        return None


def _checked(
    text: str, edit: Edit, doc_index: int, path: DataPath, update: Callable[[Any], Any]
) -> Edit | None:
    """``edit`` if it passes :func:`verify`, run on the edited document alone: the edit lies
    inside it and the text around it is unchanged, so checking the whole file again for each
    edit (quadratic on a file of many workloads) would add nothing."""
    root = compose(text)[doc_index]  # only its marks are used
    start = max(text.rfind("\n", 0, root.start_mark.index), text.rfind("\r", 0, root.start_mark.index)) + 1
    end: int = root.end_mark.index
    if not start <= edit.start <= edit.end <= end:
        return None
    old = text[start:end]
    new = old[: edit.start - start] + edit.text + old[edit.end - start :]
    return edit if verify(old, new, 0, path, update) else None


def _with_entry(old: Any, key: str, value: Any) -> dict[str, Any]:
    if not isinstance(old, dict) or key in old:
        raise TypeError("not a mapping without the key")
    return {**old, key: value}


def _replaced(data: Any, path: DataPath, update: Callable[[Any], Any]) -> Any:
    if not path:
        return update(data)
    head, rest = path[0], path[1:]
    if isinstance(data, dict) and isinstance(head, str):
        return {**data, head: _replaced(data[head], rest, update)}
    if isinstance(data, list) and isinstance(head, int) and 0 <= head < len(data):
        return [*data[:head], _replaced(data[head], rest, update), *data[head + 1 :]]
    raise KeyError(head)


def _plain(data: Any) -> Any:
    """A copy as plain dicts and lists (key order kept), made without recursion: a document
    may nest as deep as the loader's ``limits.depth``."""
    if not isinstance(data, dict | list | tuple):
        return data
    root: Any = {} if isinstance(data, dict) else []
    stack: list[tuple[Any, Any]] = [(data, root)]
    while stack:
        source, target = stack.pop()
        pairs = source.items() if isinstance(source, dict) else enumerate(source)
        for key, value in pairs:
            copy: Any = value
            if isinstance(value, dict | list | tuple):
                copy = {} if isinstance(value, dict) else []
                stack.append((value, copy))
            if isinstance(target, dict):
                target[key] = copy
            else:
                target.append(copy)
    return root


def same_data(left: Any, right: Any) -> bool:
    """Equal, whatever the order of mapping keys, with the same scalar types (``1 != True !=
    1.0``): whether a value written in a file is the one a tool rendered (kustomize and Helm
    write keys in an order of their own)."""
    return _same(left, right, ordered=False)


def _same(left: Any, right: Any, *, ordered: bool = True) -> bool:
    """Equal, with the same key order and the same scalar types (``1 != True != 1.0``).
    Compared without recursion, and each pair of containers once (aliases share them)."""
    stack: list[tuple[Any, Any]] = [(left, right)]
    seen: set[tuple[int, int]] = set()
    while stack:
        left, right = stack.pop()
        if isinstance(left, dict | list):
            pair = (id(left), id(right))
            if pair in seen:
                continue
            seen.add(pair)
            if isinstance(left, dict):
                if not isinstance(right, dict) or len(left) != len(right):
                    return False
                if (list(left) != list(right)) if ordered else any(key not in right for key in left):
                    return False
                stack.extend((value, right[key]) for key, value in left.items())
            else:
                if not isinstance(right, list) or len(left) != len(right):
                    return False
                stack.extend(zip(left, right, strict=True))
        elif type(left) is not type(right) or not (
            left == right or (left != left and right != right)  # noqa: PLR0124 - NaN
        ):
            return False
    return True


# --- rendering -----------------------------------------------------------------------------------


def _quote(text: str) -> str:
    """A double-quoted scalar, valid YAML (and JSON for the characters JSON can hold)."""
    out = ['"']
    for char in text:
        escape = _ESCAPES.get(char)
        if escape is not None:
            out.append(escape)
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    out.append('"')
    return "".join(out)


def _is_plain(text: str) -> bool:
    """Whether ``text`` can be written unquoted and read back (YAML 1.1, any context) as itself."""
    from kaffinity.load.parse import resolve_plain

    return (
        text != ""
        and text.isprintable()
        and text[0] not in _LEADING
        and text[-1] != " "
        and _INDICATORS.isdisjoint(text)
        and _TIMESTAMP.match(text) is None
        and not text.startswith(("---", "..."))  # document markers at the start of a line
        and resolve_plain(text) == text
    )


class _Writer:
    """Renders values and builds the edit for one target, in the style of its document."""

    def __init__(self, text: str, layout: _Layout, comment: str | None) -> None:
        self.text = text
        self.layout = layout
        self.json = layout.json
        words = " ".join(comment.split()) if comment else ""
        self.comment = f" # {words}" if words else ""

    # values

    def scalar(self, value: Any) -> str:
        if isinstance(value, str):
            return value if not self.json and _is_plain(value) else _quote(value)
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            from kaffinity.load.parse import resolve_plain

            written = repr(value)
            if math.isfinite(value) and resolve_plain(written) == value:
                return written
        raise _Unsupported(f"cannot write {value!r}")

    def key(self, key: Any) -> str:
        if not isinstance(key, str):
            raise _Unsupported(f"mapping key {key!r} is not a string")
        return self.scalar(key)

    def flow(self, value: Any) -> str:
        if isinstance(value, dict):
            return "{" + ", ".join(f"{self.key(k)}: {self.flow(v)}" for k, v in value.items()) + "}"
        if isinstance(value, list | tuple):
            return "[" + ", ".join(self.flow(item) for item in value) + "]"
        return self.scalar(value)

    def entry_lines(self, key: Any, value: Any, top: bool) -> list[str]:
        name = self.key(key)
        if isinstance(value, dict) and value:
            step = " " * self.layout.step
            return [f"{name}:", *(step + line for line in self.mapping_lines(value))]
        if isinstance(value, list | tuple) and value:
            if top and not any(isinstance(item, dict | list | tuple) for item in value):
                return [f"{name}: {self.flow(value)}"]
            dash = " " * self.layout.dash
            return [f"{name}:", *(dash + line for line in self.sequence_lines(value))]
        return [f"{name}: {self.flow(value)}"]

    def mapping_lines(self, value: dict[Any, Any]) -> list[str]:
        return [line for key, item in value.items() for line in self.entry_lines(key, item, top=False)]

    def sequence_lines(self, items: Iterable[Any]) -> list[str]:
        lines: list[str] = []
        for item in items:
            if isinstance(item, dict) and item:
                inner = self.mapping_lines(item)
            elif isinstance(item, list | tuple) and item:
                inner = self.sequence_lines(item)
            else:
                lines.append("- " + self.flow(item))
                continue
            lines.append("- " + inner[0])
            lines += ("  " + line for line in inner[1:])
        return lines

    # positions

    def newline(self, at: int) -> str:
        """The line break used at ``at`` (or the file's first one)."""
        match = _LINE_BREAK.search(self.text, at) or _LINE_BREAK.search(self.text)
        if match is None:
            return "\n"
        return "\r\n" if self.text.startswith("\r\n", match.start()) else match.group()

    def line_end(self, at: int) -> int:
        match = _LINE_BREAK.search(self.text, at)
        end = len(self.text) if match is None else match.start()
        if _OTHER_BREAKS.search(self.text, at, end):
            raise _Unsupported("unusual line break")
        return end

    def content_end(self, node: YamlNode) -> tuple[int, bool]:
        """Where the content of ``node`` ends, and whether that is the start of a line (after a
        block scalar) rather than inside one."""
        while True:
            if _is_scalar(node):
                end: int = node.end_mark.index
                at_line_start = node.style in ("|", ">") and (end == 0 or self.text[end - 1] in "\r\n")
                return end, at_line_start
            if node.flow_style or not node.value:
                return node.end_mark.index, False
            node = self.last_child(node)

    def last_child(self, node: YamlNode) -> YamlNode:
        """The last value or item of a non-empty collection, if its marks are its own: an alias
        (``key: *ref``) carries the marks of its anchor, elsewhere in the text."""
        if _is_mapping(node):
            position, child = 2 * len(node.value) - 1, node.value[-1][1]
        else:
            position, child = len(node.value) - 1, node.value[-1]
        if id(child) in self.layout.shared and (id(child), id(node), position) not in self.layout.anchors:
            raise _Unsupported("ends with an alias")
        return child

    def insert_lines(self, after: YamlNode, lines: list[str], column: int) -> Edit:
        """New block lines at ``column``, after the line where the content of ``after`` ends."""
        indent = " " * column
        lines = [indent + line for line in lines]
        lines[0] += self.comment
        end, at_line_start = self.content_end(after)
        if at_line_start:
            newline = "\r\n" if self.text.endswith("\r\n", 0, end) else self.newline(end - 1)
            return Edit(end, end, newline.join(lines) + newline)
        end = self.line_end(end)
        newline = self.newline(end)
        return Edit(end, end, newline + newline.join(lines))

    def flow_items(self, node: YamlNode, pieces: list[str]) -> Edit:
        """Fill a flow collection: after its last value, or inside it if empty."""
        if node.value:
            end = self.content_end(self.last_child(node))[0]
            return Edit(end, end, "".join(", " + piece for piece in pieces))
        opening = "{" if _is_mapping(node) else "["
        at = self.text.find(opening, node.start_mark.index, node.end_mark.index)
        if at < 0:
            raise _Unsupported("no opening bracket")
        return Edit(at + 1, at + 1, ", ".join(pieces))

    def quoted_children(self, node: YamlNode) -> bool:
        scalars = [
            child
            for pair in (node.value if _is_mapping(node) else [(item,) for item in node.value])
            for child in pair
            if _is_scalar(child)
        ]
        return bool(scalars) and all(child.style == '"' for child in scalars)

    # edits

    def add_entry(self, found: _Found, key: str, value: Any) -> Edit:
        mapping = found.node
        if mapping.flow_style:
            self.json = self.json or self.quoted_children(mapping)
            if not mapping.value:
                block = self.empty_flow_as_block(found, key, value)
                if block is not None:
                    return block
            return self.flow_items(mapping, [f"{self.key(key)}: {self.flow(value)}"])
        columns = {self.entry_column(existing) for existing, _ in mapping.value}
        if len(columns) != 1:
            raise _Unsupported("keys at different columns")
        return self.insert_lines(mapping, self.entry_lines(key, value, top=True), columns.pop())

    def entry_column(self, key: YamlNode) -> int:
        """The column where a block mapping's entry starts: its key's, or for an explicit key
        (``? labelSelector`` / ``: value``, YAML 1.2 spec 8.2.2 "Block Mappings",
        ``ns-l-block-map-explicit-entry``) the column of its ``?`` indicator, which is the
        mapping's indentation (the key itself stands after ``? ``). A new entry written at the
        key's column would be more indented than the mapping, and not one of its entries."""
        start: int = key.start_mark.index
        line_start = max(self.text.rfind("\n", 0, start), self.text.rfind("\r", 0, start)) + 1
        before = self.text[line_start:start]
        stripped = before.rstrip(" \t")
        if stripped.endswith("?") and stripped[:-1].strip(" \t-") == "" and len(stripped) < len(before):
            # "? key" on a line of its own, or as the first entry of a compact "- ? key" item
            return int(key.start_mark.column) - (len(before) - len(stripped)) - 1
        return int(key.start_mark.column)

    def empty_flow_as_block(self, found: _Found, key: str, value: Any) -> Edit | None:
        """``labelSelector: {}`` -> ``labelSelector:`` and the new entry as a block mapping."""
        parent, key_node, mapping = found.parent, found.key, found.node
        if parent is None or key_node is None or parent.flow_style or self.json:
            return None
        start, end = mapping.start_mark.index, mapping.end_mark.index
        key_end = key_node.end_mark.index
        colon = _COLON.match(self.text, key_end, start)
        if self.text[start : start + 1] != "{" or colon is None:
            return None
        line_end = self.line_end(end)
        rest = self.text[end:line_end]
        if _REST_OF_LINE.match(rest) is None:
            return None
        column = key_node.start_mark.column + self.layout.step
        lines = [" " * column + line for line in self.entry_lines(key, value, top=True)]
        lines[0] += self.comment
        newline = self.newline(line_end)
        if not rest:
            return Edit(colon.end(), end, newline + newline.join(lines))
        return Edit(colon.end(), line_end, rest + newline + newline.join(lines))

    def append_items(self, sequence: YamlNode, items: list[Any]) -> Edit:
        if sequence.flow_style:
            self.json = self.json or self.quoted_children(sequence)
            return self.flow_items(sequence, [self.flow(item) for item in items])
        return self.insert_lines(sequence, self.sequence_lines(items), self.dash_column(sequence))

    def dash_column(self, sequence: YamlNode) -> int:
        start: int = sequence.start_mark.index
        if self.text.startswith("-", start):
            return int(sequence.start_mark.column)
        first = sequence.value[0]
        item_start = first.start_mark.index
        line_start = max(self.text.rfind("\n", 0, item_start), self.text.rfind("\r", 0, item_start)) + 1
        dash = self.text.rfind("-", line_start, item_start)
        if dash < 0 or self.text[dash + 1 : item_start].strip(" ") or id(first) in self.layout.shared:
            raise _Unsupported("cannot find the dash of the first item")
        return dash - line_start
