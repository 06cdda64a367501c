"""The same ``--help`` and usage errors on every supported typer (pyproject.toml's range).

typer up to 0.25 renders an option's value with click's metavars (``TEXT``, ``INTEGER``,
``[error|warning|info|none]``, nothing for a flag); later typers print Python types (``<str>``,
``<bool>``, ``<list[str]>``) and prefix their validation errors with pydantic's ``Value error, ``.
:class:`Group` gives every parameter that has none an explicit, click-style metavar when typer
builds the command, and strips that prefix from a bad parameter's message.

The options panels are laid out here too (:func:`options_panel`), readable at 80 columns: typer's
table (typer/rich_utils.py, ``_print_options_panel``) has a column for the long names, the short
names, the negative names, the metavar and the help, and rich's ``Table`` shrinks the widest
wrappable columns first (rich/table.py, ``_collapse_widths``): at 80 columns the help column is
left ~19 characters, words longer than that end in "…", and a choice metavar is folded mid-word
(``[error|warning|i`` / ``nfo|none]``), even at 120 columns.
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


# The narrowest help column the table layout accepts; below it, each option's help goes on the
# lines under its names, indented (as man pages and click's plain formatter do for a long option).
_MIN_HELP = 40
# The widest a choice metavar's column gets in the table layout: wider ones wrap after a "|".
_METAVAR_COLUMN = 26
_INDENT = 4


def _wrapped(metavar: str, width: int) -> list[str]:
    """``metavar`` in lines of at most ``width`` characters, broken only after a ``|`` or at a
    space, never inside a choice (a choice longer than ``width`` gets a line of its own)."""
    pieces: list[str] = []
    piece = ""
    for character in metavar:
        piece += character
        if character in "| ":
            pieces.append(piece)
            piece = ""
    if piece:
        pieces.append(piece)
    lines = [""]
    for piece in pieces:
        if lines[-1] and len((lines[-1] + piece).rstrip()) > width:
            lines.append("")
        lines[-1] += piece
    return [line.rstrip() for line in lines]


def _range(param: Any) -> str:
    """The range typer shows beside a bounded number (``[x>=1]``), on every supported typer."""
    described = getattr(param, "_get_number_range_help_str", None)  # typer >= 0.29
    if described is not None:
        text = described()
    else:
        describe = getattr(getattr(param, "type", None), "_describe_range", None)
        text = describe() if describe is not None and not getattr(param, "count", False) else None
    return f" [{text}]" if text else ""


def _names(param: Any) -> tuple[list[str], list[str], str]:
    """(primary names, negative names, metavar) as the help shows them."""
    if getattr(param, "param_type_name", "") == "argument":
        return [metavar(param)], [], ""
    primary = sorted(param.opts, key=lambda name: not name.startswith("--"))
    negative = sorted(param.secondary_opts, key=lambda name: not name.startswith("--"))
    shown = param.metavar if param.metavar is not None else metavar(param)
    return primary, negative, (shown + _range(param)).strip()


def _table(rows: list[Any], widths: tuple[int, int], metavar_style: str) -> Any:
    """The rows as a table: names, short names, metavar (wrapped after a ``|``), help."""
    from rich.table import Table
    from rich.text import Text
    from typer import rich_utils

    table = Table(show_header=False, box=None, padding=(0, 1), pad_edge=False, expand=True)
    table.add_column(no_wrap=True)
    short_width, metavar_width = widths
    if short_width:
        table.add_column(no_wrap=True)
    if metavar_width:
        table.add_column(no_wrap=True, style=metavar_style)
    table.add_column(ratio=1)
    for primary, negative, shown, described in rows:
        cells: list[Any] = [rich_utils.highlighter(Text(primary[0]))]
        if negative:
            cells[0].append("\n").append_text(rich_utils.negative_highlighter(Text(negative[0])))
        if short_width:
            cells.append(rich_utils.highlighter(Text(", ".join(primary[1:] + negative[1:]))))
        if metavar_width:
            cells.append(Text("\n".join(_wrapped(shown, _METAVAR_COLUMN))))
        table.add_row(*cells, described)
    return table


def _stacked(rows: list[Any], inner: int, metavar_style: str) -> Any:
    """The rows as lines: names and metavar, then the help under them, indented."""
    from rich.console import Group as Lines
    from rich.padding import Padding
    from rich.text import Text
    from typer import rich_utils

    items: list[Any] = []
    for primary, negative, shown, described in rows:
        line = rich_utils.highlighter(Text(", ".join(primary)))
        if negative:
            line.append(" / ").append_text(rich_utils.negative_highlighter(Text(", ".join(negative))))
        if shown:
            lines = _wrapped(shown, max(inner - line.cell_len - 1, _METAVAR_COLUMN))
            if line.cell_len + 1 + len(lines[0]) > inner:  # the metavar starts a line of its own
                line.append("\n")
                lines = _wrapped(shown, inner - _INDENT)
                indent = " " * _INDENT
            else:
                line.append(" ")
                indent = " " * line.cell_len
            line.append(("\n" + indent).join(lines), style=metavar_style)
        items.append(line)
        items.append(Padding(described, (0, 0, 0, _INDENT)))
    return Lines(*items)


def options_panel(
    *, name: str, params: list[Any], ctx: Any, markup_mode: Any, console: Any, **_: Any
) -> None:
    """typer's ``_print_options_panel`` (the same keywords on typer 0.26 to 0.29), laid out to the
    console's width: a table when the help column gets at least ``_MIN_HELP`` characters, else
    each option's names and metavar on a line and its help under it. Words are never cut."""
    if not params:
        return
    from rich.panel import Panel
    from typer import rich_utils

    metavar_style = getattr(rich_utils, "STYLE_TYPES", getattr(rich_utils, "STYLE_METAVAR", ""))
    rows = []
    for param in params:
        primary, negative, shown = _names(param)
        described = rich_utils._get_parameter_help(param=param, ctx=ctx, markup_mode=markup_mode)
        rows.append((primary, negative, shown, described))
    inner = console.width - 4  # the panel's border and padding
    long_width = max(len(name) for row in rows for name in (*row[0][:1], *row[1][:1]))
    short_width = max((len(", ".join(row[0][1:] + row[1][1:])) for row in rows), default=0)
    metavar_width = max((len(line) for row in rows for line in _wrapped(row[2], _METAVAR_COLUMN)), default=0)
    fixed = long_width + sum(2 + width for width in (short_width, metavar_width) if width)
    if inner - fixed - 2 >= _MIN_HELP:
        body = _table(rows, (short_width, metavar_width), metavar_style)
    else:
        body = _stacked(rows, inner, metavar_style)
    console.print(
        Panel(
            body,
            border_style=getattr(rich_utils, "STYLE_OPTIONS_PANEL_BORDER", "dim"),
            title=name,
            title_align=getattr(rich_utils, "ALIGN_OPTIONS_PANEL", "left"),
        )
    )


def _laid_out(original: Any) -> Any:
    """``format_help`` with :func:`options_panel` in place of typer's (rich_utils looks its
    ``_print_options_panel`` up as a module global when it prints the help)."""

    @functools.wraps(original)
    def format_help(ctx: Any, formatter: Any) -> Any:
        try:
            from typer import rich_utils
        except ImportError:  # typer without rich: click's plain help
            return original(ctx, formatter)
        typers = getattr(rich_utils, "_print_options_panel", None)
        if typers is None:
            return original(ctx, formatter)
        rich_utils._print_options_panel = options_panel
        try:
            return original(ctx, formatter)
        finally:
            rich_utils._print_options_panel = typers

    return format_help


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
    command.format_help = _laid_out(command.format_help)
    for sub in getattr(command, "commands", {}).values():
        polish(sub)


class Group(typer.core.TyperGroup):
    """kaffinity's command group (``typer.Typer(cls=Group)``): polished once it is built."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        polish(self)

    def main(self, args: Any = None, *rest: Any, **kwargs: Any) -> Any:
        """click's ``main``, the arguments of ``lint ... --pre-commit`` rewritten first so that no
        file name is read as an option (:mod:`kaffinity.cli.precommit`)."""
        from kaffinity.cli.precommit import rewritten

        given = list(sys.argv[1:] if args is None else args)
        changed = rewritten(self, given)
        return super().main(args if changed is None else changed, *rest, **kwargs)
