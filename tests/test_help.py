"""``--help`` and usage errors look the same on every supported typer (kaffinity/help.py): click's
metavars (``TEXT``, ``[error|warning|info|none]``), never Python types (``<bool>``, ``<str>``,
``<list[str]>``, typer >= 0.29), and no pydantic ``Value error, `` prefix. .ci/run runs this file
with the lowest declared typer (constraints/floors.txt) and with the newest."""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from kaffinity.cli import app
from kaffinity.help import metavar

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
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert not _PLACEHOLDER.search(result.output), result.output


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
