"""YAML values as CEL data: what an admission request's ``object`` is to kube-apiserver's CEL.

cel-expr-python takes plain ``dict``, ``list``, ``str``, ``int``, ``float``, ``bool`` and
``None`` as activation data, but not their subclasses: kaffinity's loader gives
:class:`~kaffinity.load.source.PosDict`/``PosList`` (and ruamel's round-trip loader
``CommentedMap``/``CommentedSeq``), which it refuses ("Non-CEL value type for 'object':
PosDict"). So a manifest is copied once into plain containers; convert each object once and
reuse the copy for every expression evaluated over it.

Kubernetes evaluates CEL over JSON-decoded data (``staging/src/k8s.io/apiserver/pkg/cel/common/values.go``
``UnstructuredToVal``), so the copy also gives each value the type JSON would have given it:

* a ``datetime``/``date`` (a YAML timestamp from a loader other than kaffinity's) becomes its
  RFC 3339 text, as JSON carries it;
* an integer outside int64 becomes a double (Go's JSON decoder cannot hold it as an int64);
* ``bytes`` (``!!binary``) become text, invalid UTF-8 replaced;
* a key that is not a string becomes its text (YAML-to-JSON does this);
* anything else (a set, a tuple) becomes a list or its text.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def plain(value: Any) -> Any:
    """``value`` with every mapping a plain ``dict``, sequence a ``list`` and scalar a JSON type.

    Copied without recursion: a manifest may nest as deep as the loader's ``limits.depth``,
    deeper than the interpreter's stack at three frames a level."""
    if not isinstance(value, Mapping | list | tuple | set | frozenset):
        return _leaf(value)
    root: Any = {} if isinstance(value, Mapping) else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        if isinstance(target, dict):
            for key, item in source.items():
                target[_key(key)] = _child(item, stack)
        else:
            target.extend([_child(item, stack) for item in source])
    return root


def _child(item: Any, stack: list[tuple[Any, Any]]) -> Any:
    """``item`` converted, or an empty container put on ``stack`` to be filled."""
    if isinstance(item, Mapping):
        copy: dict[str, Any] = {}
        stack.append((item, copy))
        return copy
    if isinstance(item, list | tuple | set | frozenset):
        items: list[Any] = []
        stack.append((item, items))
        return items
    return _leaf(item)


def _leaf(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is bool or kind is float or value is None:
        return value
    if kind is int:
        return value if _INT64_MIN <= value <= _INT64_MAX else float(value)
    return _scalar(value)


def _key(key: Any) -> str:
    """A mapping key as YAML-to-JSON writes it: text."""
    if isinstance(key, str):
        return str(key)
    if isinstance(key, bool):
        return "true" if key else "false"
    return "null" if key is None else str(_scalar(key))


def _scalar(value: Any) -> Any:
    """A scalar of a type JSON does not have, as JSON would carry it."""
    if isinstance(value, bool) or type(value).__name__ == "ScalarBoolean":  # ruamel's anchored bool
        return bool(value)
    if isinstance(value, int):
        return _leaf(int(value))
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def activation_data(variables: Mapping[str, Any]) -> dict[str, Any]:
    """The data to evaluate an expression over: each variable's value made :func:`plain`."""
    return {name: plain(value) for name, value in variables.items()}
