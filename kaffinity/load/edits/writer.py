"""Rendering new values in the style of their document (:class:`_Writer`): block or flow, the
document's mapping step and dash column, plain scalars where they read back as themselves,
double quotes otherwise, the file's newlines (see :mod:`kaffinity.load.edits`)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from kaffinity.load.edits.nodes import YamlNode, _Found, _is_mapping, _is_scalar, _Layout
from kaffinity.load.edits.text import Edit

_LINE_BREAK = re.compile(r"[\r\n]")
# Line breaks that YAML 1.1 knows but line-end searches here do not: refuse around them.
_OTHER_BREAKS = re.compile("[\x85\u2028\u2029]")
_INDICATORS = frozenset(":#,[]{}&*!|>'\"%@`")
_LEADING = frozenset("-?<=~ ")
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}
_COLON = re.compile(r"[ \t]*:(?=[ \t]+\Z)")
_REST_OF_LINE = re.compile(r"[ \t]*(?:#.*)?\Z")


class _Unsupported(Exception):
    """A value or layout this module does not write."""


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
