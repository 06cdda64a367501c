"""Helm's strvals (``--set``/``--set-string``), the subset Argo CD's Helm ``parameters`` produce:
dotted paths, ``[i]`` list indexes, ``\\.`` escapes, typed scalars (helm pkg/strvals parser.go)."""

from __future__ import annotations

import re
from typing import Any

# --- Helm's strvals (--set), the subset Argo's parameters produce -------------------------------


def strvals_set(base: dict[str, Any], name: str, value: str, *, force_string: bool) -> None:
    """helm.sh/helm/v3 pkg/strvals ``ParseInto`` (``--set``) or ``ParseIntoString``
    (``--set-string``) of ``name=value``: a dotted path, ``\\.`` an escaped dot, ``[i]`` a list
    index (lists grow with nulls), ``{a,b}`` a list; typed scalars unless a string is forced."""
    steps = _strvals_path(name)
    parsed: Any
    if value.startswith("{") and value.endswith("}"):
        parsed = [_typed(item, force_string) for item in value[1:-1].split(",")] if value[1:-1] else []
    else:
        parsed = _typed(value, force_string)
    container: Any = base
    for position, step in enumerate(steps):
        if position == len(steps) - 1:
            _strvals_put(container, step, parsed, name)
            return
        following = steps[position + 1]
        empty: Any = [] if isinstance(following, int) else {}
        current = _strvals_get(container, step, name)
        if not isinstance(current, (dict, list)) or isinstance(following, int) != isinstance(current, list):
            current = empty
            _strvals_put(container, step, current, name)
        container = current


def _strvals_get(container: Any, step: str | int, name: str) -> Any:
    if isinstance(step, int):
        if not isinstance(container, list):
            raise ValueError(f"{name}: not a list")
        return container[step] if step < len(container) else None
    if not isinstance(container, dict):
        raise ValueError(f"{name}: not a map")
    return container.get(step)


def _strvals_put(container: Any, step: str | int, value: Any, name: str) -> None:
    if isinstance(step, int):
        if not isinstance(container, list):
            raise ValueError(f"{name}: not a list")
        container.extend([None] * (step + 1 - len(container)))
        container[step] = value
    elif isinstance(container, dict):
        container[step] = value
    else:
        raise ValueError(f"{name}: not a map")


def _strvals_path(name: str) -> list[str | int]:
    """The steps of a ``--set`` key: ``a.b[0].c`` is ``a``, ``b``, 0, ``c``."""
    steps: list[str | int] = []
    current = ""
    index = 0
    while index < len(name):
        char = name[index]
        if char == "\\" and index + 1 < len(name):
            current += name[index + 1]
            index += 2
            continue
        if char == "[":
            close = name.find("]", index)
            if close < 0 or not name[index + 1 : close].isdigit():
                raise ValueError(f"bad list index in {name}")
            if int(name[index + 1 : close]) > _MAX_INDEX:
                raise ValueError(f"list index in {name} is over {_MAX_INDEX}")
            steps.extend([current] if current else [])
            current = ""
            steps.append(int(name[index + 1 : close]))
            index = close
        elif char == ".":
            steps.extend([current] if current else [])
            current = ""
        else:
            current += char
        index += 1
    steps.extend([current] if current else [])
    if not steps or not isinstance(steps[0], str):
        raise ValueError(f"bad key {name}")
    return steps


#: strvals' bound on a list index (helm pkg/strvals ``MaxIndex``).
_MAX_INDEX = 65536


def _typed(text: str, force_string: bool) -> Any:
    """strvals ``typedVal``: ``true``/``false``, ``null``, ``0`` and integers without a leading
    zero are typed; the rest are strings."""
    if force_string:
        return text
    lowered = text.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    if lowered == "null":
        return None
    if text == "0":
        return 0
    if re.fullmatch(r"-?[1-9]\d*", text) and abs(int(text)) < 2**63:
        return int(text)
    return text
