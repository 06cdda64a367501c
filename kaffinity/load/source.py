"""Source positions: documents as loaded, with the line and column of every key and item.

Positions travel with the data. A mapping is a :class:`PosDict` (a plain ``dict`` that also
remembers where each key stood), a sequence a :class:`PosList` (where each item started), so a
rule can name any data path and the engine finds the nearest recorded position for it.
Lines and columns are 1-based and counted from the start of the file, whatever the document.
"""

from __future__ import annotations

from collections.abc import MutableSequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple, TypeAlias

PathItem: TypeAlias = str | int
DataPath: TypeAlias = tuple[PathItem, ...]


class Span(NamedTuple):
    """A 1-based line and column in a file."""

    line: int
    column: int


#: Positions are stored packed in one int, ``line << COLUMN_BITS | column``: a large manifest
#: set has millions of them, and one int costs a third of a (line, column) tuple.
COLUMN_BITS = 32
_COLUMN_MASK = (1 << COLUMN_BITS) - 1


def unpack(position: int) -> Span:
    return Span(position >> COLUMN_BITS, position & _COLUMN_MASK)


class PosDict(dict[str, Any]):
    """A mapping that remembers the position of each key.

    ``pos[i]`` is the packed position (see :func:`unpack`) of the i-th key in insertion order:
    a list beside the dict costs far less than a second dict, and positions are looked up only
    when a finding is placed. The parser makes it an ``array('Q')`` (8 bytes a position, where a
    list holds a pointer to an int of 32); rendered objects, which may lack a position (None),
    keep a list.
    """

    __slots__ = ("pos", "span")

    def __init__(self, span: Span) -> None:
        super().__init__()
        self.span = span
        self.pos: MutableSequence[int] = []

    def __reduce__(self) -> tuple[Any, ...]:
        # Sent between processes (``--jobs``): a plain dict pickles in C, so one Python call per
        # mapping rebuilds it, instead of the slots protocol's generic (and far slower) path.
        return _posdict, (tuple(self.span), self.pos, dict(self))

    def key_position(self, key: str) -> int | None:
        for index, candidate in enumerate(self):
            if candidate == key:
                return self.pos[index] if index < len(self.pos) else None
        return None


class PosList(list[Any]):
    """A sequence that remembers the position of each item (packed; see :func:`unpack`)."""

    __slots__ = ("pos", "span")

    def __init__(self, span: Span) -> None:
        super().__init__()
        self.span = span
        self.pos: MutableSequence[int] = []

    def __reduce__(self) -> tuple[Any, ...]:
        return _poslist, (tuple(self.span), self.pos, list(self))


def _posdict(span: Span, pos: MutableSequence[int], items: dict[str, Any]) -> PosDict:
    # Unpickled by the hundred thousand (the cache, --jobs): no __init__ call, no Span.__new__
    # call (the span comes as the tuple it is), each a Python frame less.
    result = _new_dict(PosDict)
    result.update(items)
    result.span = _new_tuple(Span, span)
    result.pos = pos
    return result


def _poslist(span: Span, pos: MutableSequence[int], items: list[Any]) -> PosList:
    result = _new_list(PosList)
    result.extend(items)
    result.span = _new_tuple(Span, span)
    result.pos = pos
    return result


_new_dict = dict.__new__
_new_list = list.__new__
_new_tuple = tuple.__new__


def format_path(path: DataPath) -> str:
    """Render a data path as ``spec.template.spec.affinity...[0].topologyKey``."""
    out: list[str] = []
    for item in path:
        if isinstance(item, int):
            out.append(f"[{item}]")
        elif not _is_plain_segment(item):
            out.append(f"[{item}]")  # as Go's field.Path renders a map key
        else:
            out.append(f".{item}" if out else item)
    return "".join(out)


@lru_cache(maxsize=4096)  # a manifest set's keys are few; paths are rendered by the million
def _is_plain_segment(item: str) -> bool:
    return item != "" and all(c.isalnum() or c in "_-" for c in item)


@dataclass(frozen=True, slots=True)
class DuplicateKey:
    """A key given twice in one mapping (the later value wins, as in go-yaml): the position of
    the later one, and of the first."""

    key: str
    span: Span
    first: Span


@dataclass(frozen=True, slots=True)
class Document:
    """One object of a file: a YAML/JSON document, or one item of a ``kind: List`` document.

    ``index`` counts documents in the file from 0. For an item of a List, ``root`` is the whole
    List document and ``prefix`` the data path of the item in it (``("items", 3)``); otherwise
    ``root is data`` and ``prefix == ()``. Positions are always looked up from the root, so they
    are counted from the start of the file.
    """

    file: str
    index: int
    data: Any
    root: Any
    span: Span
    prefix: DataPath = ()
    duplicate_keys: tuple[DuplicateKey, ...] = field(default=(), compare=False)

    def __reduce__(self) -> tuple[Any, ...]:
        # Unpickled by the ten thousand (the cache, --jobs): the constructor, in one call, beats
        # the generic slots protocol of dataclasses, which walks the fields for each object.
        return Document, (
            self.file,
            self.index,
            self.data,
            self.root,
            self.span,
            self.prefix,
            self.duplicate_keys,
        )

    def locate(self, path: DataPath) -> Span:
        """The position of ``path`` (relative to this object), or of its nearest recorded ancestor."""
        return locate(self.root, self.prefix + tuple(path), self.span)


def locate(data: Any, path: DataPath, default: Span) -> Span:
    """Follow ``path`` through ``data`` and return the deepest recorded position on the way."""
    return locate_depth(data, path, default)[1]


def locate_depth(data: Any, path: DataPath, default: Span) -> tuple[int, Span]:
    """:func:`locate`, also telling how many steps of ``path`` the position found is for (0:
    the root's): a rendered object compares where its origin and a patch spell a path."""
    best: Span = getattr(data, "span", default)
    depth, node = 0, data
    for step, item in enumerate(path, start=1):
        if isinstance(node, PosDict) and isinstance(item, str) and item in node:
            position = node.key_position(item)
        elif isinstance(node, PosList) and isinstance(item, int) and 0 <= item < len(node):
            position = node.pos[item]
        else:
            break
        if position is not None:
            best, depth = unpack(position), step
        node = node[item]
    return depth, best
