"""Reading what libyaml refuses and go-yaml v2 reads (so kubectl and kube-apiserver do): a `:`
inside a plain scalar of a flow collection (:func:`_flow_colons`), an anchor defined again
(:class:`_EventComposer`); and ruamel's C composer, with its implicit tags left generic
(:func:`_composer`). :class:`_Reading` reads a file again, within a bound, as go-yaml would."""

from __future__ import annotations

import re
from typing import Any

from kaffinity.load.parse.limits import DEFAULT_LIMITS, Limits
from kaffinity.load.parse.results import _span, _too_deep
from kaffinity.load.parse.scalars import _IMPLICIT, _MAP, _SEQ

# --- go-yaml's plain scalars in flow collections -------------------------------------------------
#
# go-yaml v2 ends a plain scalar at `:` only when a blank follows it, in flow collections too
# (gopkg.in/yaml.v2 v2.4.0 scannerc.go, yaml_parser_scan_plain_scalar: "Check for indicators
# that may end a plain scalar": `:` followed by is_blankz, or in the flow context `,?[]{}`), so
# `[frontend:80]` is one string and `{image: nginx:1.27}` a one-key mapping. The libyaml inside
# ruamel.yaml.clib refuses a `:` followed by anything else there ("found unexpected ':'", a
# check of libyaml 0.1 that go-yaml does not have). Such a file is read again with each of
# those `:` replaced by a stand-in character (one character for one, so every line and column
# stays) that :class:`_EventComposer` turns back into `:` in the scalars.

#: Private-use characters, one of which the text does not hold, stand in for `:`.
_STAND_INS = tuple(chr(code) for code in range(0xE000, 0xE010))
#: How often a file is read again: once for all the `:` that :func:`_flow_colons` finds and
#: once for anchors defined again, then once for each `:` it missed (found at the reader's own
#: error), as long as the readings past those two stay within ``_REREAD_CHARACTERS`` in all:
#: no input costs more than a few readings of the largest file allowed.
_RETRIES = 32
_REREAD_CHARACTERS = 8 << 20
_BLANKZ = frozenset(" \t\r\n\x85\u2028\u2029")
_BREAKS = frozenset("\r\n\x85\u2028\u2029")
_FLOW_INDICATORS = frozenset(",?[]{}")
_SPACES = re.compile(r"[ \t]*")
_INDENT = re.compile(r" *")
_ANCHOR_CHARS = re.compile(r"[0-9A-Za-z_-]*")
_TAG_END = re.compile(r"[ \t\r\n\x85\u2028\u2029,\[\]{}]|\Z")
_LINE_END = re.compile(r"[\r\n\x85\u2028\u2029]|\Z")
_SINGLE_QUOTED = re.compile(r"'[^']*(?:''[^']*)*(?:'|\Z)")
_DOUBLE_QUOTED = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)', re.S)
# Where a plain scalar of the block context may end: `:` before a blank, a comment, a line end.
_BLOCK_PLAIN_END = re.compile(r":(?=[ \t\r\n\x85\u2028\u2029]|\Z)|[ \t]#|[\r\n\x85\u2028\u2029]|\Z")
# The next character of a plain scalar in a flow collection that may end it or be a `:`.
_FLOW_PLAIN_STOP = re.compile(r"[:,?\[\]{}\s\x85\u2028\u2029]|\Z")
_BLANKS_AFTER = re.compile(r"[ \t\r\n\x85\u2028\u2029]*")
_BLOCK_SCALAR_INDENT = re.compile(r"[|>][+-]?([1-9]?)")


def _end(pattern: re.Pattern[str], text: str, position: int) -> int:
    """Where ``pattern`` (which matches the empty string or the end) stops matching at ``position``."""
    match = pattern.match(text, position)
    return match.end() if match else position


def _next(pattern: re.Pattern[str], text: str, position: int) -> int:
    """Where ``pattern`` (which matches at the end, ``\\Z``) first matches from ``position``."""
    match = pattern.search(text, position)
    return match.start() if match else len(text)


def _after_line(text: str, end: int) -> int:
    """The start of the line after the line break at ``end``."""
    return end + (2 if text.startswith("\r\n", end) else 1)


def _flow_colons(text: str) -> list[int]:
    """The offsets of the `:` characters that go-yaml reads inside a plain scalar of a flow
    collection and that are followed by a non-blank: the ones libyaml refuses.

    One pass over the tokens as go-yaml's scanner sees them (comments, quoted and block
    scalars, flow levels). Only a file that libyaml refused is scanned, and a `:` taken here
    that is in fact inside a scalar of another kind (a block scalar this scan misjudged) gets
    its character back all the same; a `:` missed is found at the reader's next error.
    """
    scan = _FlowScan(text)
    while scan.position < scan.size:
        scan.step()
    return scan.colons


class _FlowScan:
    """The state of :func:`_flow_colons`."""

    __slots__ = ("colons", "flow", "line_start", "parent", "position", "size", "text", "token_column")

    def __init__(self, text: str) -> None:
        self.text = text
        self.size = len(text)
        self.colons: list[int] = []
        self.position = 0
        self.line_start = 0
        self.flow = 0  # the flow collections open
        self.parent = -1  # the indentation of the block node that holds what comes next
        self.token_column = 0  # where the last node of the line started

    def step(self) -> None:
        """Go past the blanks, comment, line break or token at ``position``."""
        text, position = self.text, self.position
        char = text[position]
        if char in " \t":
            self.position = _end(_SPACES, text, position)
        elif char in _BREAKS:
            self.new_line(_after_line(text, position))
        elif char == "#":
            self.position = _next(_LINE_END, text, position)
        elif self.flow == 0 and position == self.line_start and self.line_marker(char):
            return
        else:
            self.token(char)

    def new_line(self, start: int) -> None:
        self.position = self.line_start = start
        if self.flow == 0:
            self.parent = _end(_INDENT, self.text, start) - start - 1

    def line_marker(self, char: str) -> bool:
        """Go past a document marker or a directive at the start of a line, if there is one."""
        text, position = self.text, self.position
        if text.startswith(("---", "..."), position) and (
            position + 3 >= self.size or text[position + 3] in _BLANKZ
        ):
            self.position, self.parent = position + 3, -1
            return True
        if char == "%":
            self.position = _next(_LINE_END, text, position)
            return True
        return False

    def token(self, char: str) -> None:
        text, position = self.text, self.position
        column = position - self.line_start
        following = text[position + 1] if position + 1 < self.size else "\n"
        if char in "[{":
            self.token_column = column if self.flow == 0 else self.token_column
            self.flow += 1
            self.position += 1
        elif char in "]}":
            self.flow = max(self.flow - 1, 0)
            self.position += 1
        elif self.flow and char in ",?:":
            self.position += 1  # go-yaml: in a flow collection, `?` and `:` start no plain scalar
        elif char in "-?:" and following in _BLANKZ:
            self.parent = self.token_column if char == ":" else column
            self.position += 1
        elif char in "&*":
            self.position = _end(_ANCHOR_CHARS, text, position + 1)
        elif char == "!":
            end = text.find(">", position) + 1 if following == "<" else _next(_TAG_END, text, position + 1)
            self.position = end if end > position else self.size
        elif char in "'\"":
            self.token_column = column
            self.position = _end(_SINGLE_QUOTED if char == "'" else _DOUBLE_QUOTED, text, position)
        elif self.flow:
            self.position = self.flow_plain(position)
        elif char in "|>":
            self.new_line(self.block_scalar_end(position))
        else:
            self.token_column = column
            self.position = _next(_BLOCK_PLAIN_END, text, position + 1)

    def flow_plain(self, position: int) -> int:
        """The end of the plain scalar at ``position`` in a flow collection, as go-yaml's
        yaml_parser_scan_plain_scalar ends it; its `:` not followed by a blank are kept."""
        text, size = self.text, self.size
        position += 1  # its first character is its own, whatever it is (`-x`)
        while True:
            stop = _next(_FLOW_PLAIN_STOP, text, position)
            if stop >= size:
                return size
            char = text[stop]
            if char in _FLOW_INDICATORS:
                return stop
            if char == ":":
                if stop + 1 >= size or text[stop + 1] in _BLANKZ:
                    return stop
                self.colons.append(stop)
                position = stop + 1
                continue
            # Blanks: the scalar goes on unless a comment, a document marker or an indicator
            # that ends it comes next.
            after = _end(_BLANKS_AFTER, text, stop)
            if after >= size or text[after] == "#" or text[after] in _FLOW_INDICATORS:
                return stop
            if text[after] == ":" and (after + 1 >= size or text[after + 1] in _BLANKZ):
                return stop
            if text.startswith(("---", "..."), after) and text[after - 1] in _BREAKS:
                return stop
            position = after

    def block_scalar_end(self, position: int) -> int:
        """The start of the first line after the block scalar (``|``, ``>``) whose header is at
        ``position``: libyaml's yaml_parser_scan_block_scalar and its indentation rules."""
        text, size, parent = self.text, self.size, self.parent
        header = _BLOCK_SCALAR_INDENT.match(text, position)
        digit = header.group(1) if header else ""
        line_end = _next(_LINE_END, text, position)
        if line_end >= size:
            return size
        position = _after_line(text, line_end)
        if digit:
            indent = parent + int(digit) if parent >= 0 else int(digit)
        else:
            indent, scan = 0, position
            while scan < size:  # leading empty lines may set the indentation
                spaces = _end(_INDENT, text, scan)
                end = _next(_LINE_END, text, spaces)
                indent = max(indent, spaces - scan)
                if spaces != end or end >= size:
                    break
                scan = _after_line(text, end)
            indent = max(indent, parent + 1, 1)
        while position < size:
            spaces = _end(_INDENT, text, position)
            end = _next(_LINE_END, text, spaces)
            if spaces != end and spaces - position < indent:
                return position
            if end >= size:
                return size
            position = _after_line(text, end)
        return size


def _composer(text: str) -> Any:
    """ruamel's C composer, minus its implicit tag resolution: we resolve plain scalars
    ourselves (YAML 1.1, as Kubernetes does), so every implicit tag is left generic.

    The composer calls three Python hooks per node; they are made as cheap as they can be
    (measured on the benchmark corpus: composing takes 0.64x the time of the stock
    ``CSafeLoader``). ``resolve`` hands out one shared ``Tag`` per kind, so no node builds its
    own; the YAML-path resolver hooks, unused here, are C builtins that do nothing with their
    arguments instead of Python methods.
    """
    return _composers()[0](text)


def _composers() -> tuple[Any, Any]:
    """The C composer (:func:`_composer`) and :class:`_EventComposer`'s class, built once."""
    global _COMPOSERS  # noqa: PLW0603 - built once, on first use, to keep start-up light
    if _COMPOSERS is None:
        from ruamel.yaml.cyaml import CSafeLoader
        from ruamel.yaml.nodes import MappingNode, ScalarNode
        from ruamel.yaml.tag import Tag

        scalar_tag, map_tag, seq_tag = Tag(suffix=_IMPLICIT), Tag(suffix=_MAP), Tag(suffix=_SEQ)

        class Composer(CSafeLoader):
            descend_resolver = staticmethod(slice)  # type: ignore[assignment]  # slice(parent, index): a C no-op
            ascend_resolver = staticmethod(tuple)  # type: ignore[assignment]  # tuple(): likewise

            def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
                if kind is ScalarNode:
                    return scalar_tag
                return map_tag if kind is MappingNode else seq_tag

        _COMPOSERS = (Composer, _event_composer_class(Composer, scalar_tag, map_tag, seq_tag))
    return _COMPOSERS


_COMPOSERS: tuple[Any, Any] | None = None


def _event_composer_class(base: Any, scalar_tag: Any, map_tag: Any, seq_tag: Any) -> Any:
    """:class:`_EventComposer` on top of the C composer ``base`` (its events, its constructor)."""
    from ruamel.yaml.composer import ComposerError
    from ruamel.yaml.events import (
        AliasEvent,
        MappingEndEvent,
        MappingStartEvent,
        ScalarEvent,
        SequenceEndEvent,
        StreamEndEvent,
        StreamStartEvent,
    )
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

    class _EventComposer(base):  # type: ignore[misc]
        """Composes nodes from libyaml's events in Python, as go-yaml's parser does
        (gopkg.in/yaml.v2 v2.4.0 decode.go, ``parser.anchor`` and ``parser.alias``): an anchor
        defined again replaces the earlier one for the aliases after it, where the C composer
        refuses the file ("found duplicate anchor"); and ``stand_in`` (see
        :func:`_flow_colons`) is read back as the `:` it stands for. Slower than the C
        composer: only a file that the C composer refused is read with it."""

        stand_in: str | None = None
        depth_limit: int = DEFAULT_LIMITS.depth

        def check_node(self) -> bool:
            if self.check_event(StreamStartEvent):
                self.get_event()
            return not self.check_event(StreamEndEvent)

        def get_node(self) -> Any:
            self.get_event()  # the document's start
            anchors: dict[str, Any] = {}
            node = self._node(anchors, 0)
            self.get_event()  # its end
            return node

        def _node(self, anchors: dict[str, Any], depth: int) -> Any:
            event = self.get_event()
            kind = event.__class__
            if kind is AliasEvent:
                node = anchors.get(event.anchor)
                if node is None:
                    raise ComposerError(
                        None, None, f"found undefined alias {event.anchor!r}", event.start_mark
                    )
                return node
            if depth > self.depth_limit:
                raise _too_deep(Limits(depth=self.depth_limit), _span(event.start_mark))
            if kind is ScalarEvent:
                value = event.value
                if self.stand_in is not None and self.stand_in in value:
                    value = value.replace(self.stand_in, ":")
                tag = event.tag
                node = ScalarNode(
                    scalar_tag if tag is None or tag == "!" else tag,
                    value,
                    event.start_mark,
                    event.end_mark,
                    style=event.style,
                )
                if event.anchor is not None:
                    anchors[event.anchor] = node
                return node
            mapping = kind is MappingStartEvent
            node = (MappingNode if mapping else SequenceNode)(
                map_tag if mapping else seq_tag, [], event.start_mark, None, flow_style=event.flow_style
            )
            if event.anchor is not None:  # before its content, as go-yaml: an alias inside
                anchors[event.anchor] = node  # is the recursion the builder refuses
            end = MappingEndEvent if mapping else SequenceEndEvent
            items = node.value
            while not self.check_event(end):
                if mapping:
                    key = self._node(anchors, depth + 1)
                    items.append((key, self._node(anchors, depth + 1)))
                else:
                    items.append(self._node(anchors, depth + 1))
            node.end_mark = self.get_event().end_mark
            return node

    return _EventComposer


class _Reading:
    """How a file's text is read: by the C composer, then again as go-yaml reads what libyaml
    refused (a `:` inside a plain scalar of a flow collection, an anchor defined twice)."""

    __slots__ = ("events", "retries", "stand_in", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.events = False
        self.stand_in: str | None = None
        self.retries = 0

    def loader(self, limits: Limits) -> Any:
        if not self.events:
            return _composer(self.text)
        loader = _composers()[1](self.text)
        loader.stand_in = self.stand_in
        loader.depth_limit = limits.depth
        return loader

    def again(self, error: Exception) -> bool:
        """Whether to read again after ``error``, changed to read what go-yaml reads there."""
        from ruamel.yaml.composer import ComposerError
        from ruamel.yaml.scanner import ScannerError

        if self.retries >= _RETRIES or (
            self.retries >= 2 and (self.retries - 1) * len(self.text) > _REREAD_CHARACTERS
        ):
            return False
        if isinstance(error, ComposerError) and (error.context or "").startswith("found duplicate anchor"):
            self.events = True
        elif (
            isinstance(error, ScannerError) and error.problem == "found unexpected ':'" and error.problem_mark
        ):
            index = error.problem_mark.index
            if not 0 <= index < len(self.text) or self.text[index] != ":":
                return False
            if self.stand_in is None:
                self.stand_in = next((char for char in _STAND_INS if char not in self.text), None)
                if self.stand_in is None:
                    return False
                offsets = [*_flow_colons(self.text), index]
            else:
                offsets = [index]
            chars = list(self.text) if len(offsets) > 1 else None
            if chars is None:
                self.text = self.text[:index] + self.stand_in + self.text[index + 1 :]
            else:
                for offset in offsets:
                    if chars[offset] == ":":
                        chars[offset] = self.stand_in
                self.text = "".join(chars)
            self.events = True
        else:
            return False
        self.retries += 1
        return True
