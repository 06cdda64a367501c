"""The JSON form of a file's trees and the typed readers of an entry's fields, shared by the
cache of files (:mod:`kaffinity.cache.entries`) and of rendered units
(:mod:`kaffinity.cache.rendered`). Reading builds nothing but this module's own objects, each
field's type checked: a wrong shape is a ValueError (a miss), never code run.
"""

from __future__ import annotations

from array import array as _wide
from sys import intern
from typing import Any

from kaffinity.load.source import _COLUMN_MASK, COLUMN_BITS, PosDict, PosList, Span, pack, set_packed
from kaffinity.load.source import positions as positions_of

# --- the format of an entry -----------------------------------------------------------------------
#
# JSON: the C codec of the standard library, which builds dicts, lists, strings, numbers and
# nothing else. A file's trees (PosDict, PosList) are JSON objects: a PosDict's keys and values,
# then one more member, last, that holds its position and those of its keys ([line, column,
# [positions]]); a PosList is an object of that one member, with its items ([line, column,
# [positions], [items]]). Everything around the trees (documents, findings, suppressions,
# problems) is JSON arrays, rebuilt field by field with their types checked.

#: Strings up to this long are interned, as the parser interns them.
_INTERNED = 253
_SCALARS = frozenset({str, int, float, bool, type(None)})
_new_dict = dict.__new__
_new_list = list.__new__
_new_tuple = tuple.__new__


class _Unfit(Exception):
    """A value this format does not hold: the entry is not written (nor the file sent so)."""


def _tree(value: Any) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    scalars = _SCALARS
    if kind is PosDict:
        out = {key: item if type(item) in scalars else _tree(item) for key, item in value.items()}
        last = ""
        while last in out:
            last += "\0"
        span = value.span
        out[last] = [span[0], span[1], list(positions_of(value))]
        return out
    if kind is PosList:
        items = [item if type(item) in scalars else _tree(item) for item in value]
        span = value.span
        return {"": [span[0], span[1], list(positions_of(value)), items]}
    raise _Unfit(kind.__name__)


def _node(pairs: dict[str, Any]) -> Any:
    """A PosDict or PosList from its JSON object (see the format above); ValueError if it is not
    one. Called for every mapping and sequence of every file read from the cache: few checks."""
    if not pairs:
        raise ValueError("an empty object")
    meta = pairs.popitem()[1]  # the last member (the JSON decoder keeps the order)
    if type(meta) is not list or not 3 <= len(meta) <= 4:
        raise ValueError("not a tree")
    line, column, positions = meta[0], meta[1], meta[2]
    if type(line) is not int or type(column) is not int or type(positions) is not list:
        raise ValueError("not a position")
    # The span and the positions packed in one bytes (kaffinity.load.source.packed), as the parser
    # keeps them, without a Span or a call per node (this runs for every node of a warm run); a
    # missing position (rendered input): a list, as kaffinity.k8s.compact keeps.
    packed = None
    if 0 <= column <= _COLUMN_MASK:
        try:
            packed = _wide("Q", [line << COLUMN_BITS | column, *positions]).tobytes()
        except (TypeError, OverflowError):
            packed = None
    if packed is None and (
        None not in positions
        or pack(_new_tuple(Span, (line, column)), [item for item in positions if item is not None]) is None
    ):
        raise ValueError("not a position")
    node: Any
    # Keys and short strings interned, as the parser interns them (kaffinity.load.parse.builder):
    # JSON gives each file its own copies, and what is kept lives until the report.
    if len(meta) == 3:
        node = _new_dict(PosDict)
        values: Any = [
            intern(item) if type(item) is str and len(item) <= _INTERNED else item for item in pairs.values()
        ]
        node.update(zip(map(intern, pairs), values, strict=True))
    else:
        values = meta[3]
        if pairs or type(values) is not list:
            raise ValueError("not a list")
        node = _new_list(PosList)
        node.extend(
            [intern(item) if type(item) is str and len(item) <= _INTERNED else item for item in values]
        )
    if list in set(map(type, values)):  # a JSON array is never a value of a tree
        raise ValueError("a list in a tree")
    if packed is None:
        node.span = _new_tuple(Span, (line, column))
        node.pos = positions
    else:
        set_packed(node, packed)
    return node


def _interned(text: str) -> str:
    return intern(text) if len(text) <= _INTERNED else text


def _index(value: Any, size: int) -> int:
    if type(value) is not int or not 0 <= value < size:
        raise ValueError("not an index")
    return value


def _is(value: Any, *kinds: type) -> Any:
    if type(value) not in kinds:
        raise ValueError(f"{type(value).__name__}, not {kinds}")
    return value


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(_is(item, str) for item in _is(value, list))


def _span_of(value: Any) -> Any:
    line, column = _is(value, list)
    return Span(_is(line, int), _is(column, int))


def _optional_span(value: Any) -> Any:
    return None if value is None else _span_of(value)


def _data_path(value: Any) -> tuple[str | int, ...]:
    return tuple(_is(item, str, int) for item in _is(value, list))


def _duplicate_keys(value: Any) -> tuple[Any, ...]:
    """A document's duplicate keys as an entry stores them (this cache's and the render cache's)."""
    from kaffinity.load.source import DuplicateKey

    return tuple(
        DuplicateKey(_is(key, str), _span_of([line, column]), _span_of([first, at]))
        for key, line, column, first, at in (_is(item, list) for item in _is(value, list))
    )


def _load_problems(value: Any) -> tuple[Any, ...]:
    """A file's load problems as an entry stores them (this cache's and the render cache's)."""
    from kaffinity.load.parse import LoadProblem

    return tuple(
        LoadProblem(_is(rule, str), _is(message, str), _optional_span(span))
        for rule, message, span in (_is(item, list) for item in _is(value, list))
    )


def _child(node: Any, step: str | int) -> Any:
    """One step of a document's path (see :class:`~kaffinity.load.source.Document`): a key of a
    mapping, an index of a sequence; ValueError otherwise."""
    if type(node) is PosDict and type(step) is str:
        return node[step]
    if type(node) is PosList and type(step) is int and step >= 0:
        return node[step]
    raise ValueError("not a document's path")
