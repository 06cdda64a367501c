"""The same ``--help`` and usage errors on every supported typer (pyproject.toml's range).

typer up to 0.25 renders an option's value with click's metavars (``TEXT``, ``INTEGER``,
``[error|warning|info|none]``, nothing for a flag); later typers print Python types (``<str>``,
``<bool>``, ``<list[str]>``) and prefix their validation errors with pydantic's ``Value error, ``.
:class:`Group` gives every parameter that has none an explicit, click-style metavar when typer
builds the command, and strips that prefix from a bad parameter's message.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import typer
import typer.core

_PREFIX = "Value error, "


def _choices(param: Any) -> list[str]:
    descriptor = getattr(param, "type_descriptor", None)  # typer >= 0.29 (no click types)
    if descriptor is not None:
        found = descriptor.choices if descriptor.is_choice else None
    else:
        found = getattr(getattr(param, "type", None), "choices", None)
    return [str(getattr(choice, "value", choice)) for choice in found or ()]


def _is_integer(param: Any) -> bool:
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is not None:
        return descriptor.annotation is int or bool(getattr(descriptor, "is_ranged", False))
    return str(getattr(getattr(param, "type", None), "name", "")).startswith("integer")


def metavar(param: Any) -> str:
    """What typer 0.24's help shows for the parameter's value (click's metavar)."""
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return ""
    choices = _choices(param)
    if choices:
        return "[" + "|".join(choices) + "]"
    if getattr(param, "param_type_name", "") == "argument":
        name = str(param.metavar or param.name).upper()
        if not param.required:
            name = f"[{name}]"
        return name + ("..." if param.nargs != 1 else "")
    return "INTEGER" if _is_integer(param) else "TEXT"


def _without_prefix(process: Any) -> Any:
    @functools.wraps(process)
    def processed(ctx: Any, value: Any) -> Any:
        try:
            return process(ctx, value)
        except typer.BadParameter as error:
            if error.message.startswith(_PREFIX):
                error.message = error.message.removeprefix(_PREFIX)
            raise

    return processed


def _polish_param(param: Any) -> None:
    if getattr(param, "param_type_name", "") != "argument":
        if param.metavar is None:
            param.metavar = metavar(param)
    elif hasattr(param, "type_descriptor"):
        # typer >= 0.29 shows an argument's type (<list[str]>) whatever its metavar and writes
        # its name in the usage line ([paths]...); a metavar would be bracketed again, so the
        # type column and the usage line are given what earlier typers show there.
        shown = metavar(param)
        param.display_type_rich = lambda ctx: shown
        param.get_usage_pieces = lambda ctx: [shown]
    param.process_value = _without_prefix(param.process_value)


def polish(command: Any) -> None:
    """Every parameter of ``command`` and its subcommands: an explicit metavar, plain errors."""
    for param in command.params:
        _polish_param(param)
    get_help_option = command.get_help_option

    def help_option(ctx: Any) -> Any:
        option = get_help_option(ctx)
        if option is not None and option.metavar is None:
            option.metavar = ""  # a flag (typer >= 0.29 shows <bool>)
        return option

    command.get_help_option = help_option
    for sub in getattr(command, "commands", {}).values():
        polish(sub)


class Group(typer.core.TyperGroup):
    """kaffinity's command group (``typer.Typer(cls=Group)``): polished once it is built."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        polish(self)

    def main(self, args: Any = None, *rest: Any, **kwargs: Any) -> Any:
        """click's ``main``, the arguments of ``lint ... --pre-commit`` rewritten first so that no
        file name is read as an option (:mod:`kaffinity.precommit`)."""
        from kaffinity.precommit import rewritten

        given = list(sys.argv[1:] if args is None else args)
        changed = rewritten(self, given)
        return super().main(args if changed is None else changed, *rest, **kwargs)
