"""``--help`` and usage errors look the same on every supported typer (kaffinity/cli/help.py): click's
metavars (``TEXT``, ``[error|warning|info|none]``), never Python types (``<bool>``, ``<str>``,
``<list[str]>``, typer >= 0.29), and no pydantic ``Value error, `` prefix. .ci/run runs this file
with the lowest declared typer (constraints/floors.txt) and with the newest."""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer.main

from kaffinity.cli import app
from kaffinity.cli.help import metavar

from .kit import run

# A type placeholder as typer >= 0.29 prints them: <bool>, <str>, <int>, <list[str]>, <path>...
_PLACEHOLDER = re.compile(r"<(bool|str|int|float|list\[|path|file|datetime|uuid)")


def _commands() -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        found.append(path)
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


def test_lint_help_shows_no_type_placeholders() -> None:
    """The real command line, wide enough that rich wraps nothing."""
    completed = run("lint", "--help", env={"COLUMNS": "300"})
    assert completed.returncode == 0, completed.stderr
    for placeholder in ("<bool>", "<str>", "<list["):
        assert placeholder not in completed.stdout
    assert "[error|warning|info|none]" in completed.stdout  # --fail-on, click's choice metavar
    assert re.search(r"--config\s+-c\s+TEXT\s", completed.stdout)
    assert re.search(r"--no-config\s+Ignore", completed.stdout)  # a flag shows no metavar


@pytest.mark.parametrize("command", _commands(), ids=lambda path: " ".join(path) or "kaffinity")
def test_every_commands_help_shows_click_metavars(command: tuple[str, ...]) -> None:
    result = run(*command, "--help", env={"COLUMNS": "300"})
    assert result.returncode == 0, result.stderr
    assert not _PLACEHOLDER.search(result.stdout), result.stdout


def test_every_parameter_has_an_explicit_metavar_or_a_click_style_type_column() -> None:
    """What help.polish did to the built command: flags show nothing, choices their values."""

    def walk(command: Any) -> None:
        for param in command.params:
            shown = param.metavar if param.metavar is not None else metavar(param)
            assert not _PLACEHOLDER.search(shown), (command.name, param.name, shown)
            if getattr(param, "is_flag", False):
                assert shown == "", (command.name, param.name)
        for sub in getattr(command, "commands", {}).values():
            walk(sub)

    walk(typer.main.get_command(app))


def test_a_bad_choice_is_reported_without_a_value_error_prefix() -> None:
    completed = run("lint", "--fail-on", "bogus", ".", env={"COLUMNS": "300"})
    assert completed.returncode == 2
    assert "Value error" not in completed.stderr
    assert "(env var:" not in completed.stderr  # click 8.2 with typer < 0.26
    assert "kaffinity: error: invalid value for '--fail-on': 'bogus' is not one of" in completed.stderr


# -- readable at 80 columns (issue 33) -----------------------------------------------------------
# typer's own table squeezed the help column to ~19 characters at 80 columns, cut six texts with
# "…" and folded choice metavars mid-word (``[error|warning|i`` / ``nfo|none]``): help.options_panel.

_BORDERS = "│╭╮╰╯─"


def _params(command: tuple[str, ...]) -> list[Any]:
    built: Any = typer.main.get_command(app)
    for name in command:
        built = built.commands[name]
    return [param for param in built.params if not getattr(param, "hidden", False)]


def _tokens(text: str) -> set[str]:
    return set(text.translate({ord(border): " " for border in _BORDERS}).split())


def _help(command: tuple[str, ...], columns: int) -> str:
    result = run(*command, "--help", env={"COLUMNS": str(columns)})
    assert result.returncode == 0, result.stderr
    return result.stdout


def _help_column(output: str, param: Any, first_word: str) -> int:
    """The column where ``param``'s help starts: on its row, or on one of the next two lines."""
    name = next((opt for opt in param.opts if opt.startswith("--")), None) or metavar(param)
    lines = output.splitlines()
    starts = re.compile(rf"│ {re.escape(name)}(?=[\s,])")
    row = next(index for index, line in enumerate(lines) if starts.match(line))
    pattern = re.compile(rf"(?<=\s){re.escape(first_word)}(?=\s|$)")
    for offset, line in enumerate(lines[row : row + 3]):
        found = pattern.search(line, len(name) + 2 if offset == 0 else 0)
        if found:
            return found.start()
    raise AssertionError(f"the help of {name} is not under it:\n{output}")


def unreadable(output: str, columns: int, params: list[Any]) -> list[str]:
    """What makes ``output`` (a command's --help at ``columns``) unreadable: a cut text, a line
    past the width, a help word or choice split across lines, a squeezed help column."""
    problems = [f"cut: {line!r}" for line in output.splitlines() if "…" in line]
    problems += [f"too wide: {line!r}" for line in output.splitlines() if len(line) > columns]
    tokens = _tokens(output)
    pieces = {piece for token in tokens for piece in re.split(r"[\[\]|]", token) if piece}
    for param in params:
        words = (param.help or "").split()
        problems += [f"split: {word!r} ({param.name})" for word in words if word not in tokens]
        shown = metavar(param)
        choices = shown.strip("[]").split("|") if "|" in shown else []
        problems += [f"split choice: {choice!r}" for choice in choices if choice not in pieces]
        if words and _help_column(output, param, words[0]) > columns - 40:
            problems.append(f"squeezed: the help of {param.name} starts past column {columns - 40}")
    return problems


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("command", _commands(), ids=lambda path: " ".join(path) or "kaffinity")
def test_every_commands_help_is_readable_at_80_and_120_columns(
    command: tuple[str, ...], columns: int
) -> None:
    output = _help(command, columns)
    assert unreadable(output, columns, _params(command)) == []
    # The command's own description and, for a group, each command's summary: whole words.
    built: Any = typer.main.get_command(app)
    for name in command:
        built = built.commands[name]
    texts = [built.help or ""] + [sub.help or "" for sub in getattr(built, "commands", {}).values()]
    tokens = _tokens(output)
    first_paragraphs = [text.split("\n\n")[0] for text in texts]
    assert [word for text in first_paragraphs for word in text.split() if word not in tokens] == []


def test_the_readability_check_finds_typers_own_layout_unreadable() -> None:
    """The check above fails on what typer printed at 80 columns before (lint --help, kept here
    as it looked): a cut text, a choice folded mid-word, a squeezed help column."""
    params = {param.name: param for param in _params(("lint",))}
    typers = (
        "│ --feature-gates                         TEXT              Gates that differ  │\n"
        "│                                                           from the defaults: │\n"
        "│                                                           Name=true,Other=f… │\n"
        "│ --fail-on                               [error|warning|i  Lowest severity    │\n"
        "│                                         nfo|none]         that fails the run │\n"
        "│                                                           (default: error).  │\n"
    )
    problems = unreadable(typers, 80, [params["feature_gates"], params["fail_on"]])
    assert any(problem.startswith("cut: ") for problem in problems)
    assert "split choice: 'info'" in problems
    assert "squeezed: the help of fail_on starts past column 40" in problems
    readable = _help(("lint",), 80)
    assert unreadable(readable, 80, [params["feature_gates"], params["fail_on"]]) == []
