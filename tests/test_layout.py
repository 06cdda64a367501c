"""The layout keeps its promises (issue 20): rule modules are leaves.

A rule module imports shared helpers (``kaffinity.wording``, ``kaffinity.pending``, the model, the
graph...) and never another rule module; nothing outside ``kaffinity/rules/`` imports a rule module
but the registry (``kaffinity/rules/__init__.py``). Read from the source with ``ast``, imports
inside functions and under ``TYPE_CHECKING`` included, so a new such import fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kaffinity"
RULES = PACKAGE / "rules"
SHARED = {"kaffinity.rules.base"}


def _imported(path: Path) -> set[str]:
    """Every module ``path`` imports, by its dotted name (``from a.b import c`` counts ``a.b`` and,
    when ``a.b.c`` is a module, ``a.b.c``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _rule_modules() -> set[str]:
    return {
        f"kaffinity.rules.{path.stem}"
        for path in RULES.glob("*.py")
        if path.stem != "__init__" and f"kaffinity.rules.{path.stem}" not in SHARED
    }


def test_the_rule_modules_are_found() -> None:
    assert len(_rule_modules()) >= 30  # the check below must have something to check


#: Every module but the registry (``rules/__init__.py``), the one place that lists the rules.
MODULES = sorted(path for path in PACKAGE.rglob("*.py") if path != RULES / "__init__.py")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_but_the_registry_imports_a_rule_module(path: Path) -> None:
    own = f"kaffinity.rules.{path.stem}" if path.parent == RULES else None
    leaked = sorted((_imported(path) & _rule_modules()) - {own})
    where = path.relative_to(PACKAGE)
    assert not leaked, f"{where} imports rule module(s) {leaked}: move what they share to a shared module"


#: The modules above the engine: the command line and the reports of its result.
ABOVE_ENGINE = {PACKAGE / "cli.py", PACKAGE / "__main__.py", *(PACKAGE / "report").glob("*.py")}


def test_the_reports_are_found() -> None:
    assert len(ABOVE_ENGINE) >= 7 and all(path.exists() for path in ABOVE_ENGINE)


@pytest.mark.parametrize(
    "path",
    [path for path in MODULES if path not in ABOVE_ENGINE and path != PACKAGE / "engine.py"],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_only_the_command_line_and_the_reports_import_the_engine(path: Path) -> None:
    """What a rule and its helpers read is :class:`kaffinity.context.Context`, below them; the
    engine that runs the rules imports them, so nothing below it may import it back."""
    assert "kaffinity.engine" not in _imported(path), f"{path.relative_to(PACKAGE)} imports kaffinity.engine"
