"""Kubernetes' list library (every version): ``isSorted``, ``sum``, ``min``, ``max``, ``indexOf``...

Upstream: ``staging/src/k8s.io/apiserver/pkg/cel/library/lists.go``. It declares one overload
per element type (``list_int_sum_int`` ...); cel-expr-python's runtime keeps one implementation
per argument kinds (a list is a list), so kaffinity declares each on ``list(dyn)`` and returns
``dyn``: an expression compiles where upstream's does (and also for element types upstream
refuses, which then fail when evaluated). Element types as upstream: ``sum`` takes int, uint,
double and duration; ``isSorted``/``min``/``max`` any comparable type (int, uint, double, bool,
duration, timestamp, string, bytes).

Where the checker knows the receiver's element type (duration, timestamp, double, uint),
``sum``/``min``/``max`` are called under a typed name (``sum`` + :data:`TYPED_SUFFIX` +
``duration``...: :func:`typed_declarations`, declared with upstream's result type): the result is
a duration, a timestamp, a uint, and an empty list's sum is upstream's zero of that type
(lists.go ``zeroValuesOfSummableTypes``). kaffinity/policy/cel/homogeneous.py finds these calls
in the checked syntax tree and environment.py renames them.

Differences left: on a receiver typed ``dyn`` (``dyn([duration('1s')]).sum()``), ``sum``,
``min`` and ``max`` of durations or timestamps are errors (a Python function declared to return
``dyn`` cannot return either to cel-cpp), a uint list's result is an int, an empty list's sum is
``0``.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence

from cel_expr_python import cel

from kaffinity.policy.cel.library import functions, overload
from kaffinity.policy.cel.values import NoSuchOverload

T = cel.Type
_COMPARABLE = (int, float, str, bytes, bytearray, datetime.timedelta, datetime.datetime)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _returnable(value: object, function: str) -> object:
    """``value``, unless cel-expr-python cannot return it as ``dyn``."""
    if isinstance(value, datetime.timedelta | datetime.datetime):
        raise ValueError(
            f"{function}() of durations or timestamps is not supported by kaffinity's CEL engine"
        )
    return value


def _check_comparable(items: Sequence[object], function: str) -> None:
    """No such overload unless every item is of a comparable type."""
    for item in items:
        if not isinstance(item, _COMPARABLE):
            raise NoSuchOverload(function, item)


def _less(left: object, right: object, function: str) -> bool:
    """``left < right``; no such overload for values that do not compare."""
    try:
        return bool(left < right)  # type: ignore[operator]
    except TypeError:
        raise NoSuchOverload(function, right) from None


def _is_sorted(items: Sequence[object]) -> bool:
    """``<list>.isSorted()``: no item less than the one before it."""
    _check_comparable(items, "isSorted")
    return not any(_less(items[index], items[index - 1], "isSorted") for index in range(1, len(items)))


def _sum(items: Sequence[object]) -> object:
    """``<list>.sum()``: numbers or durations added; 0 for an empty list."""
    if not items:
        return 0
    total = items[0]
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int | float | datetime.timedelta):
            raise NoSuchOverload("sum", item)
    for item in items[1:]:
        try:
            total = total + item  # type: ignore[operator]
        except TypeError:
            raise NoSuchOverload("sum", item) from None
        # cel-go adds one item at a time (Int.Add): an overflow on the way is an error even when
        # a later item would bring the total back (the oracle: [-5, -2^63, 7].sum()).
        if isinstance(total, int) and not _INT64_MIN <= total <= _INT64_MAX:
            raise ValueError("integer overflow")
    return _returnable(total, "sum")


def _extreme(
    name: str, prefer: Callable[[object, object], bool], *, returnable: bool = True
) -> Callable[[Sequence[object]], object]:
    """``min``/``max``: the first item no other is preferred to; an error for an empty list."""

    def pick(items: Sequence[object]) -> object:
        if not items:
            raise ValueError(f"{name} called on empty list")
        _check_comparable(items, name)
        result = items[0]
        for item in items[1:]:
            if prefer(item, result):
                result = item
        return _returnable(result, name) if returnable else result

    return pick


#: What the typed names add to ``sum``/``min``/``max`` (then the element type's name).
TYPED_SUFFIX = "_kaffinity_"
#: The element types with a typed name, the result type and the zero of ``sum``
#: (lists.go ``zeroValuesOfSummableTypes``; no ``sum`` of timestamps upstream).
_TYPED: dict[str, tuple[cel.Type, object]] = {
    "duration": (T.DURATION, datetime.timedelta(0)),
    "timestamp": (T.TIMESTAMP, None),
    "double": (T.DOUBLE, 0.0),
    "uint": (T.UINT, 0),
}
_UINT64_MAX = 2**64 - 1
#: Go's time.Duration bounds (cel-go's duration arithmetic errors past them).
_DURATION_MAX = datetime.timedelta(microseconds=(2**63 - 1) // 1000)


def _typed_sum(zero: object) -> Callable[[Sequence[object]], object]:
    """``sum`` of a list whose element type the checker knows: upstream's zero when empty."""

    def total(items: Sequence[object]) -> object:
        found = zero
        for item in items:
            found = found + item  # type: ignore[operator]
            if isinstance(found, int) and not 0 <= found <= _UINT64_MAX:
                raise ValueError("unsigned integer overflow")
            if isinstance(found, datetime.timedelta) and abs(found) > _DURATION_MAX:
                raise ValueError("duration overflow")
        return found

    return total


def typed_declarations() -> list[cel.FunctionDecl]:
    """``sum``/``min``/``max`` under their typed names (see the module's docstring)."""
    items = T.List(T.DYN)
    table: dict[str, list[cel.Overload]] = {}
    for element, (result, zero) in _TYPED.items():
        picks = {
            "min": _extreme("min", lambda a, b: _less(a, b, "min"), returnable=False),
            "max": _extreme("max", lambda a, b: _less(b, a, "max"), returnable=False),
        }
        if zero is not None:
            picks["sum"] = _typed_sum(zero)
        for name, impl in picks.items():
            typed = f"{name}{TYPED_SUFFIX}{element}"
            table[typed] = [overload(f"list_{typed}", result, [items], impl, member=True)]
    return functions(table)


def equal(left: object, right: object) -> bool:
    """CEL equality of two element values: numbers compare across types, a bool is no number."""
    if isinstance(left, bool) != isinstance(right, bool):
        return False
    return bool(left == right)


def _index_of(items: Sequence[object], item: object) -> int:
    """``<list>.indexOf(item)``: the first equal item's index, or -1."""
    return next((index for index, found in enumerate(items) if equal(found, item)), -1)


def _last_index_of(items: Sequence[object], item: object) -> int:
    """``<list>.lastIndexOf(item)``: the last equal item's index, or -1."""
    last = len(items) - 1
    return next((last - index for index, found in enumerate(reversed(items)) if equal(found, item)), -1)


def cel_equal(left: object, right: object) -> bool:
    """CEL's ``==`` (cel-go ``Equal``): numbers across types, a bool no number, lists item by item,
    maps by their keys."""
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(cel_equal(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(cel_equal(left[key], right[key]) for key in left)
    if isinstance(left, list | dict) or isinstance(right, list | dict):
        return False
    return equal(left, right)


def _includes(target: object, item: object) -> bool:
    """``<dyn>.includes(<dyn>)`` (lists.go ``includes``, version 1, Kubernetes 1.37): a list holding
    an item equal to ``item``, or any other value equal to it."""
    if isinstance(target, list):
        return any(cel_equal(found, item) for found in target)
    return cel_equal(target, item)


def _map_of(entries: Sequence[object]) -> dict[object, object]:
    """``kaffinity.mapOf([[key, value], ...])``: cel-go's ``transformMap`` result (respelled by
    :mod:`~kaffinity.policy.cel.respell`); a key twice is cel-go's "insert failed" error."""
    found: dict[object, object] = {}
    for entry in entries:
        assert isinstance(entry, list) and len(entry) == 2
        _insert(found, entry[0], entry[1])
    return found


def _map_of_maps(maps: Sequence[object]) -> dict[object, object]:
    """``kaffinity.mapOfMaps([{key: value}, ...])``: cel-go's ``transformMapEntry`` result."""
    found: dict[object, object] = {}
    for entry in maps:
        if not isinstance(entry, dict):
            raise NoSuchOverload("transformMapEntry", entry)
        for key, value in entry.items():
            _insert(found, key, value)
    return found


def _insert(found: dict[object, object], key: object, value: object) -> None:
    if key in found:
        shown = ("true" if key else "false") if isinstance(key, bool) else key
        raise ValueError(f"insert failed: key {shown} already exists")
    found[key] = value


def transform_map_declarations() -> list[cel.FunctionDecl]:
    """The functions respelled ``transformMap``/``transformMapEntry`` calls build their map with
    (cel-go ext/comprehensions.go, two-variable comprehensions, Kubernetes 1.32)."""
    pairs, maps = T.List(T.DYN), T.Map(T.DYN, T.DYN)
    return functions(
        {
            "kaffinity.mapOf": [overload("kaffinity_map_of", maps, [pairs], _map_of)],
            # list(map): an entry that is not a map is refused when compiling, as upstream's
            # cel.@mapInsert overloads refuse it
            "kaffinity.mapOfMaps": [overload("kaffinity_map_of_maps", maps, [T.List(maps)], _map_of_maps)],
        }
    )


def unwrap_declarations() -> list[cel.FunctionDecl]:
    """cel-go's ``optional.unwrap(<list>)`` and ``<list>.unwrapOpt()`` (ext/optional, Kubernetes
    1.28): cel-cpp's runtime has them, its checker does not declare them. Declared here on
    ``list(dyn)`` without a Python implementation (the runtime's is used); a list whose elements
    are known not to be optionals is refused by :mod:`~kaffinity.policy.cel.homogeneous`."""
    items = T.List(T.DYN)
    return [
        cel.FunctionDecl("optional.unwrap", [cel.Overload("optional_unwrap_list", items, [items])]),
        cel.FunctionDecl(
            "unwrapOpt", [cel.Overload("optional_unwrapOpt_list", items, [items], is_member=True)]
        ),
    ]


def includes_declarations() -> list[cel.FunctionDecl]:
    """lists.go version 1's ``includes`` (``environment/base.go``: ``library.Lists(library.ListsVersion(1))``
    from 1.37)."""
    return functions(
        {"includes": [overload("list_includes_dyn_dyn", T.BOOL, [T.DYN, T.DYN], _includes, member=True)]}
    )


def declarations() -> list[cel.FunctionDecl]:
    """lists.go's functions, on ``list(dyn)`` (and the typed names of ``sum``/``min``/``max``)."""
    items = T.List(T.DYN)
    return typed_declarations() + functions(
        {
            "isSorted": [overload("list_is_sorted_bool", T.BOOL, [items], _is_sorted, member=True)],
            "sum": [overload("list_sum", T.DYN, [items], _sum, member=True)],
            "max": [
                overload(
                    "list_max", T.DYN, [items], _extreme("max", lambda a, b: _less(b, a, "max")), member=True
                )
            ],
            "min": [
                overload(
                    "list_min", T.DYN, [items], _extreme("min", lambda a, b: _less(a, b, "min")), member=True
                )
            ],
            "indexOf": [overload("list_a_index_of_int", T.INT, [items, T.DYN], _index_of, member=True)],
            "lastIndexOf": [
                overload("list_a_last_index_of_int", T.INT, [items, T.DYN], _last_index_of, member=True)
            ],
        }
    )
