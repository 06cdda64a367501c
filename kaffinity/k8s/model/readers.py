"""Lenient readers: a field of the wrong type reads as absent (the schema rules report it), so the
model never fails on odd input; :func:`dig` follows a data path through loaded data."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from kaffinity.load.source import DataPath

Labels = tuple[tuple[str, str], ...]


# --- lenient readers: wrong types read as absent -------------------------------------------


def as_map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def mapping_items(value: Any) -> Iterator[tuple[int, Mapping[str, Any]]]:
    if isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, Mapping):
                yield index, item


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_int_or_str(value: Any, default: int | str | None = None) -> int | str | None:
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return default


def as_strings(value: Any) -> tuple[str, ...]:
    return tuple(item for item in value if isinstance(item, str)) if isinstance(value, list) else ()


def as_labels(value: Any) -> Labels:
    if not isinstance(value, Mapping):
        return ()
    labels = tuple(_pair(key, item) for key, item in value.items() if isinstance(item, str))
    seen = _LABELS.get(labels)
    if seen is not None:
        return seen
    if len(_LABELS) >= _SHARED:
        _LABELS.clear()
    _LABELS[labels] = labels
    return labels


def _pair(key: str, value: str) -> tuple[str, str]:
    pair = (key, value)
    seen = _PAIRS.get(pair)
    if seen is not None:
        return seen
    if len(_PAIRS) >= _SHARED:
        _PAIRS.clear()
    _PAIRS[pair] = pair
    return pair


#: Labels and label pairs read so far, each kept once (the typed objects live until the report,
#: and a repository's objects repeat their labels: a workload's own, its selector's, its pods',
#: its budget's). Immutable, so shared; bounded, so a long-lived process does not grow.
_LABELS: dict[Labels, Labels] = {}
_PAIRS: dict[tuple[str, str], tuple[str, str]] = {}
_SHARED = 1 << 16


def dig(data: Any, path: DataPath) -> Any:
    """The value at ``path`` through nested mappings and lists, or None where the path breaks."""
    for item in path:
        if isinstance(data, Mapping):
            data = data.get(item)
        elif isinstance(data, list) and isinstance(item, int) and 0 <= item < len(data):
            data = data[item]
        else:
            return None
    return data
