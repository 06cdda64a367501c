"""The limits by their names (``limits:``, ``--limit``, ``KAFFINITY_LIMITS``) and sizes as
quantities: the config file may lower a limit, only the command line and the environment raise
one (issue 31)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from kaffinity.config.settings import ConfigError, Settings

#: The limits by their names in ``limits:`` and ``--limit``, as :class:`Limits` fields.
LIMIT_NAMES = {
    "file-size": "file_size",
    "depth": "depth",
    "alias-nodes": "alias_nodes",
    "pods": "pods",
    "nodes": "nodes",
    "findings": "findings",
}
#: The most ``--limit depth`` may give: libyaml's composer recurses in C, one frame per level.
MAX_DEPTH = 10_000
LIMITS_ENV = "KAFFINITY_LIMITS"


def _raised_message(name: str, value: Any, default: Any) -> str:
    """A config that raises a limit: the checkout may lower a limit, never raise it (issue 31);
    the person running kaffinity raises it."""
    return (
        f"{value} is more than the default, {default}: a configuration file may "
        f"lower a limit, not raise it (raise it on the command line, --limit {name}={value}, or "
        f"in {LIMITS_ENV})"
    )


#: ``limits.file-size`` as a string: the schema's pattern.
_SIZE = re.compile(r"[0-9]+(\.[0-9]+)?(k|M|G|T|Ki|Mi|Gi|Ti)?")


def parse_limits(values: Sequence[str], source: str) -> dict[str, int]:
    """``NAME=VALUE`` items (``--limit pods=300000``, repeatable, or comma-separated as in
    ``KAFFINITY_LIMITS=pods=300000,file-size=64Mi``) as :class:`Limits` fields; any value,
    above the defaults too: the person running kaffinity decides (``depth`` at most
    :data:`MAX_DEPTH`). ``source`` names the option or variable in the errors."""
    changes: dict[str, int] = {}
    errors = []
    for item in (part.strip() for value in values for part in value.split(",")):
        if not item:
            continue
        name, sep, text = (part.strip() for part in item.partition("="))
        if not sep or name not in LIMIT_NAMES:
            known = ", ".join(LIMIT_NAMES)
            errors.append(f"{source}: '{item}' is not NAME=VALUE with NAME one of {known}")
            continue
        if name == "file-size":
            try:
                changes["file_size"] = parse_size(text)
            except ValueError as error:
                errors.append(f"{source}: file-size: {error}")
            continue
        most = MAX_DEPTH if name == "depth" else 2**63 - 1
        number = int(text) if text.isascii() and text.isdigit() and len(text) < 20 else 0
        if not 1 <= number <= most:
            errors.append(f"{source}: {name}: '{text}' is not a whole number from 1 to {most}")
            continue
        changes[LIMIT_NAMES[name]] = number
    if errors:
        raise ConfigError(errors)
    return changes


def with_limits(settings: Settings, options: Sequence[str] | None) -> Settings:
    """``settings`` with the limits of ``KAFFINITY_LIMITS``, then of ``--limit`` (the command
    line over the environment, both over the config file): the only ways above the defaults."""
    changes: dict[str, int] = {}
    errors: list[str] = []
    for values, source in (([os.environ.get(LIMITS_ENV, "")], LIMITS_ENV), (options or (), "--limit")):
        try:
            changes.update(parse_limits(values, source))
        except ConfigError as error:
            errors.extend(error.messages)
    if errors:
        raise ConfigError(errors)
    return replace(settings, limits=replace(settings.limits, **changes)) if changes else settings


def parse_size(value: int | str) -> int:
    """Bytes from a Kubernetes quantity (``64Mi``, ``512Ki``, ``2G``, ``1048576``); ValueError
    for anything else, and for less than one byte."""
    from kaffinity.k8s.quantity import parse_quantity

    size = parse_quantity(value)
    if size is None or size < 1:
        raise ValueError(f"'{value}' is not a size such as 64Mi, 512Ki or 1048576")
    # Capped at int64 (more than any file): int() of 1e1000000 would have a million digits.
    return min(int(size), 2**63 - 1) if size.adjusted() < 19 else 2**63 - 1
