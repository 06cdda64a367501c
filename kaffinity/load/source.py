"""Source positions: documents as loaded, with the line and column of every key and item.

Positions travel with the data. A mapping is a :class:`PosDict` (a plain ``dict`` that also
remembers where each key stood), a sequence a :class:`PosList` (where each item started), so a
rule can name any data path and the engine finds the nearest recorded position for it.
Lines and columns are 1-based and counted from the start of the file, whatever the document.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import MutableSequence, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from struct import Struct
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


class _Positions:
    """What :class:`PosDict` and :class:`PosList` share: their own span and their keys' or items'
    positions, packed until written (see :class:`PosDict`)."""

    __slots__ = ()
    _span: Span | None
    _pos: Any

    def __init__(self, span: Span) -> None:
        super().__init__()
        # The slots are the subclasses' own: a dict or list base cannot share a layout.
        self._span = span  # type: ignore[misc]
        self._pos = []

    @property
    def span(self) -> Span:
        return _span_of(self)  # type: ignore[arg-type]

    @span.setter
    def span(self, value: Span) -> None:
        _set_span(self, value)  # type: ignore[arg-type]

    @property
    def pos(self) -> MutableSequence[int]:
        return _opened(self)  # type: ignore[arg-type]

    @pos.setter
    def pos(self, value: MutableSequence[int]) -> None:
        _set_pos(self, value)  # type: ignore[arg-type]


class PosDict(_Positions, dict[str, Any]):
    """A mapping that remembers its own position (``span``) and that of each key (``pos``).

    ``pos[i]`` is the packed position (see :func:`unpack`) of the i-th key in insertion order:
    a sequence beside the dict costs far less than a second dict, and positions are looked up
    only when a finding is placed. What the parser, compaction and the cache build is *packed*:
    the span and every position in one ``bytes`` (:func:`pack`; 8 bytes a position and 33 for
    the whole, where a Span tuple, its line's int and an ``array`` cost about 170). Reading
    ``pos`` opens it (an ``array('Q')`` from then on, which may be written); the readers that
    only read use :func:`positions` and :func:`key_position`, which leave it packed. Rendered
    objects, which may lack a position (None), keep a list.
    """

    __slots__ = ("_pos", "_span")

    def __reduce__(self) -> tuple[Any, ...]:
        # Sent between processes (``--jobs``): a plain dict pickles in C, so one Python call per
        # mapping rebuilds it, instead of the slots protocol's generic (and far slower) path.
        packed = self._pos
        if packed.__class__ is bytes:
            return _packed_dict, (packed, dict(self))
        return _posdict, (tuple(self.span), packed, dict(self))

    def key_position(self, key: str) -> int | None:
        for index, candidate in enumerate(self):
            if candidate == key:
                return _position(self, index)
        return None


class PosList(_Positions, list[Any]):
    """A sequence that remembers its own position and that of each item (packed; see
    :func:`unpack` and :class:`PosDict`)."""

    __slots__ = ("_pos", "_span")

    def __reduce__(self) -> tuple[Any, ...]:
        packed = self._pos
        if packed.__class__ is bytes:
            return _packed_list, (packed, list(self))
        return _poslist, (tuple(self.span), packed, list(self))


Positioned: TypeAlias = PosDict | PosList

#: One packed position as :func:`pack` stores it (native byte order, as ``array('Q')``).
_ITEM = Struct("=Q")
_ITEM_SIZE = _ITEM.size
_unpack_item = _ITEM.unpack_from
#: The narrow format (:func:`packed`): 4 bytes a position, ``line << 16 | column``.
_NARROW = Struct("=I")
_NARROW_SIZE = _NARROW.size
_unpack_narrow = _NARROW.unpack_from
#: Where the low 16-bit halves of a position's column and line stand among the four 16-bit words
#: of its native 8 bytes (column first in little-endian order, line first in big-endian).
_LOW_WORDS = 0 if sys.byteorder == "little" else 1


def packed(items: Sequence[int]) -> bytes:
    """Packed positions (``line << COLUMN_BITS | column`` each, the span first) in one ``bytes``:
    4 bytes each when every line and column is under 65536 (nearly always), with one byte more
    to say so (an odd length); else 8 bytes each (an even length). The narrow bytes are the wide
    ones' low 16-bit halves, taken in C: no Python call per position."""
    wide = array("Q", items).tobytes()
    words = memoryview(wide).cast("H")
    if any(words[1 - _LOW_WORDS :: 2]):  # a line or column of 65536 or more
        return wide
    return words[_LOW_WORDS::2].tobytes() + b"\0"


def _widened(narrow: int) -> int:
    return (narrow >> 16) << COLUMN_BITS | (narrow & 0xFFFF)


def pack(span: Span, positions: Sequence[int | None]) -> bytes | None:
    """``span`` and ``positions`` in one ``bytes`` (the span first; :func:`packed`), or None if
    one of them cannot be packed (a missing position, a number out of range)."""
    line, column = span
    if line.__class__ is not int or column.__class__ is not int or not 0 <= column <= _COLUMN_MASK:
        return None
    try:
        return packed([line << COLUMN_BITS | column, *positions])  # type: ignore[list-item]
    except (TypeError, OverflowError):
        return None


def set_positions(node: Positioned, span: Span, positions: Sequence[int | None]) -> None:
    """Give ``node`` its span and positions: packed when they can be (:func:`pack`), else
    as a list."""
    packed = pack(span, positions)
    if packed is not None:
        node._pos, node._span = packed, None
    else:
        node._pos, node._span = list(positions), span


def set_packed(node: Positioned, packed: bytes) -> None:
    """Give ``node`` the span and positions :func:`pack` packed in ``packed``."""
    node._pos, node._span = packed, None


def share_positions(node: Positioned, source: Positioned) -> None:
    """Give ``node`` the span and positions of ``source`` (shared: packed ones are never
    written; open ones are shared as they were before packing existed)."""
    node._pos, node._span = source._pos, source._span


def positions(node: Positioned) -> Sequence[int | None]:
    """The positions of ``node``'s keys or items, to read (a packed node stays packed; a narrow
    one gives a list of them widened)."""
    held = node._pos
    if held.__class__ is bytes:
        if len(held) & 1:  # narrow (see packed)
            return list(map(_widened, memoryview(held)[_NARROW_SIZE:-1].cast("I")))
        return memoryview(held).cast("Q")[1:]
    return held  # type: ignore[no-any-return]


def _position(node: Positioned, index: int) -> int | None:
    held = node._pos
    if held.__class__ is bytes:
        if len(held) & 1:
            offset = (index + 1) * _NARROW_SIZE
            return _widened(_unpack_narrow(held, offset)[0]) if offset < len(held) - 1 else None
        offset = (index + 1) * _ITEM_SIZE
        return _unpack_item(held, offset)[0] if offset < len(held) else None
    return held[index] if index < len(held) else None


def _span_of(node: Positioned) -> Span:
    span = node._span
    if span is None:
        held = node._pos
        if len(held) & 1:
            narrow: int = _unpack_narrow(held, 0)[0]
            return _new_tuple(Span, (narrow >> 16, narrow & 0xFFFF))
        wide: int = _unpack_item(held, 0)[0]
        return _new_tuple(Span, (wide >> COLUMN_BITS, wide & _COLUMN_MASK))
    return span


def _opened(node: Positioned) -> MutableSequence[int]:
    """``node``'s positions as a sequence that may be written: a packed node is opened."""
    held = node._pos
    if held.__class__ is bytes:
        node._span = _span_of(node)
        node._pos = held = array("Q", positions(node))
    return held  # type: ignore[no-any-return]


def _set_span(node: Positioned, span: Span) -> None:
    if getattr(node, "_pos", None).__class__ is bytes:
        _opened(node)
    node._span = span


def _set_pos(node: Positioned, value: MutableSequence[int]) -> None:
    if getattr(node, "_pos", None).__class__ is bytes:
        node._span = _span_of(node)
    node._pos = value


def _posdict(span: Span, pos: MutableSequence[int], items: dict[str, Any]) -> PosDict:
    # Unpickled by the hundred thousand (the cache, --jobs): no __init__ call, no Span.__new__
    # call (the span comes as the tuple it is), each a Python frame less.
    result = _new_dict(PosDict)
    result.update(items)
    result._span = _new_tuple(Span, span)
    result._pos = pos
    return result


def _poslist(span: Span, pos: MutableSequence[int], items: list[Any]) -> PosList:
    result = _new_list(PosList)
    result.extend(items)
    result._span = _new_tuple(Span, span)
    result._pos = pos
    return result


def _packed_dict(packed: bytes, items: dict[str, Any]) -> PosDict:
    result = _new_dict(PosDict)
    result.update(items)
    result._span = None
    result._pos = packed
    return result


def _packed_list(packed: bytes, items: list[Any]) -> PosList:
    result = _new_list(PosList)
    result.extend(items)
    result._span = None
    result._pos = packed
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
            position = _position(node, item)
        else:
            break
        if position is not None:
            best, depth = unpack(position), step
        node = node[item]
    return depth, best
