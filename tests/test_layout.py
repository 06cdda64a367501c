"""The layout keeps its promises (``docs/architecture.md``): layers, no circles, leaves.

* Every module belongs to one layer (:data:`LAYERS`, from the input to the command line) and
  imports only from its own layer or the ones below it.
* No import circle, between packages or inside one.
* Rule modules are leaves: they import shared helpers (``kaffinity.explain``, the graph, the
  model...) and never another rule module; nothing imports a rule module but the registry
  (``kaffinity/rules/__init__.py``).

Imports are read from the source with ``ast``, those inside functions and under
``TYPE_CHECKING`` included: a type-only import is still a dependency a reader has to follow, so
a new upward one fails here too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kaffinity"
RULES = PACKAGE / "rules"

#: The layers, lowest first: a module may import from its own layer and the ones before it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("kaffinity", "kaffinity.memo"),  # the package itself: __version__; the memo interface
    ("kaffinity.load",),
    ("kaffinity.k8s",),
    ("kaffinity.repo",),
    ("kaffinity.findings",),
    ("kaffinity.suppress",),
    ("kaffinity.config",),
    ("kaffinity.expand",),
    ("kaffinity.validate",),
    ("kaffinity.simulate",),
    ("kaffinity.graph",),
    ("kaffinity.context",),
    ("kaffinity.explain",),
    ("kaffinity.rules",),
    ("kaffinity.policy",),
    ("kaffinity.engine",),
    ("kaffinity.stream", "kaffinity.cache"),
    ("kaffinity.report",),
    ("kaffinity.run",),
    ("kaffinity.cli",),
    ("kaffinity.__main__",),
)


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imported(path: Path) -> set[str]:
    """Every kaffinity module ``path`` imports, by dotted name (``from a.b import c`` counts
    ``a.b`` and, when ``a.b.c`` is a module, ``a.b.c``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{path}: relative import"
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name in MODULES} - {_name(path)}


IMPORTS = {name: _imported(path) for name, path in MODULES.items()}


#: The package itself: its layer holds the module ``kaffinity`` alone, not every module below it.
TOP = "kaffinity"


def layer_of(module: str) -> int:
    """The index of the layer ``module`` belongs to: the most specific prefix that names one
    (:data:`TOP` names only itself); -1 when none does."""
    best, length = -1, -1
    for index, layer in enumerate(LAYERS):
        for prefix in layer:
            below = prefix != TOP and module.startswith(prefix + ".")
            if (module == prefix or below) and len(prefix) > length:
                best, length = index, len(prefix)
    return best


def test_every_module_has_a_layer() -> None:
    """Fails when a module is added that no prefix of :data:`LAYERS` names (a new top-level
    module or package): ``kaffinity`` names the package itself only (test_the_checks_would_fail)."""
    assert len(MODULES) >= 80
    assert [name for name in MODULES if layer_of(name) < 0] == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_only_from_its_layer_or_below(module: str) -> None:
    mine = layer_of(module)
    upward = sorted(name for name in IMPORTS[module] if layer_of(name) > mine)
    assert not upward, f"{module} (layer {LAYERS[mine][0]}) imports from above it: {upward}"


def _cycles() -> Iterator[list[str]]:
    graph = nx.DiGraph((module, name) for module, names in IMPORTS.items() for name in names)
    yield from nx.simple_cycles(graph)


def test_no_import_circle() -> None:
    assert [sorted(cycle) for cycle in _cycles()] == []


def test_the_checks_would_fail() -> None:
    """The checks above see what they are meant to: an upward import and a circle, made up."""
    assert layer_of("kaffinity.load.parse") < layer_of("kaffinity.engine")
    assert layer_of("kaffinity.rules.base") == layer_of("kaffinity.rules.unschedulable")
    assert layer_of("kaffinity.nowhere") == layer_of("kaffinity.nowhere.deeper") == -1  # no layer
    assert layer_of("kaffinity") == 0
    made_up = nx.DiGraph([("a", "b"), ("b", "a")])
    assert list(nx.simple_cycles(made_up))
    assert "kaffinity.load.parse" in IMPORTS["kaffinity.load.files"]  # imports are read
    assert "kaffinity.simulate.cluster" in IMPORTS["kaffinity.explain.wording"]  # TYPE_CHECKING too
    assert "kaffinity.explain.precedence" in IMPORTS["kaffinity.explain.pending"]  # lazy too


#: No module is longer than this (issue 34: "no module over about 600 lines"); a module that grows
#: past it is split along what it does, as kube-scheduler's plugin folders are. Generated data
#: (schemas/*.json) is not Python and not counted.
MAX_LINES = 600


def long_modules(modules: dict[str, Path], limit: int = MAX_LINES) -> list[tuple[str, int]]:
    """The modules of ``modules`` over ``limit`` lines, longest first."""
    counted = ((name, len(path.read_text(encoding="utf-8").splitlines())) for name, path in modules.items())
    return sorted(((name, lines) for name, lines in counted if lines > limit), key=lambda item: -item[1])


def test_no_module_over_600_lines() -> None:
    assert long_modules(MODULES) == []


def test_the_length_check_would_fail(tmp_path: Path) -> None:
    """A made-up module one line too long is found."""
    made_up = tmp_path / "long.py"
    made_up.write_text("x = 1\n" * (MAX_LINES + 1), encoding="utf-8")
    assert long_modules({"made.up": made_up}) == [("made.up", MAX_LINES + 1)]


def test_at_most_a_dozen_modules_at_the_top() -> None:
    top = [path.name for path in PACKAGE.glob("*.py")]
    assert len(top) <= 12, top


@pytest.mark.parametrize("path", [path for path in MODULES.values() if path.name == "__init__.py"])
def test_every_package_says_what_it_owns(path: Path) -> None:
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    assert docstring and len(docstring) > 60, f"{path.relative_to(PACKAGE.parent)}: no docstring"


SHARED = {"kaffinity.rules.base"}
RULE_MODULES = {name for name in MODULES if name.startswith("kaffinity.rules.") and name not in SHARED}


def test_the_rule_modules_are_found() -> None:
    assert len(RULE_MODULES) >= 30  # the check below must have something to check


@pytest.mark.parametrize("module", sorted(set(MODULES) - {"kaffinity.rules"}))
def test_no_module_but_the_registry_imports_a_rule_module(module: str) -> None:
    leaked = sorted(IMPORTS[module] & RULE_MODULES)
    assert not leaked, f"{module} imports rule module(s) {leaked}: move what they share to kaffinity.explain"


ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"


def test_the_architecture_doc_lists_the_layers_in_order() -> None:
    """docs/architecture.md's table has one row per layer, in the order the test enforces."""
    rows = [
        line.split("|")[1].split()[0].strip("`")
        for line in ARCHITECTURE.read_text(encoding="utf-8").splitlines()
        if line.startswith("| `kaffinity")
    ]
    assert rows == [layer[0] for layer in LAYERS[:-1]]  # __main__ is the entry point, not a layer


@pytest.mark.parametrize("package", [name for name, path in MODULES.items() if path.name == "__init__.py"])
def test_the_architecture_doc_names_every_package(package: str) -> None:
    assert f"`{package}`" in ARCHITECTURE.read_text(encoding="utf-8")


def test_every_package_is_installed() -> None:
    """pyproject.toml lists the packages explicitly: a new one left out works from the checkout
    but is missing from the installed wheel (as kaffinity.policy was once, in CI)."""
    import re

    text = (PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8")
    section = re.search(r"^\[tool\.setuptools\]\n(.*?)^\[", text, re.S | re.M)
    assert section is not None
    listed = set(re.findall(r'"(kaffinity(?:\.[a-z0-9_]+)*)"', section.group(1)))
    packages = {name for name, path in MODULES.items() if path.name == "__init__.py"}
    assert packages <= listed, sorted(packages - listed)


# -- nothing below the command line prints or exits ---------------------------------------------

#: Where printing and exiting belong: the command line prints a run's outcome and sets the exit
#: code; every layer below it returns data (notes, outcomes) and raises exceptions
#: (kaffinity.run.notes.RunError).
COMMAND_LINE = ("kaffinity.cli", "kaffinity.__main__")

#: Calls that print or end the process (by their dotted name as written).
_PRINTS_OR_EXITS = frozenset(
    {
        "print",
        "exit",
        "quit",
        "sys.exit",
        "os._exit",
        "typer.echo",
        "typer.secho",
        "typer.Exit",
        "typer.Abort",
        "click.echo",
        "click.secho",
        "click.Abort",
        "click.exceptions.Exit",
        "sys.stdout.write",
        "sys.stdout.writelines",
        "sys.stdout.buffer.write",
        "sys.stderr.write",
        "sys.stderr.writelines",
        "sys.stderr.buffer.write",
        "SystemExit",
    }
)

#: The libraries that print or exit for the command line: not imported below it.
_COMMAND_LINE_LIBRARIES = ("typer", "click")

#: What may print or exit below the command line, and why. Writing to a stream a module is
#: handed (a report writer given a file, the progress line given ``sys.stderr`` by the command
#: line) is not printing: it writes where its caller says, and is not matched here.
ALLOWED = {
    # A process of its own (python -c "...helm_worker import main; sys.exit(main(...))",
    # kaffinity.repo.sandbox): its stdout is the rendered chart, its stderr the failure, both
    # read by the parent; its exit code is its answer.
    ("kaffinity.repo.helm_worker", "sys.stdout.write"),
    ("kaffinity.repo.helm_worker", "sys.stderr.write"),
    ("kaffinity.repo.helm_worker", "sys.exit"),
    # A forked child that evaluates one untrusted expression under limits ends itself without
    # running the parent's exit handlers (os._exit, as a forked child must).
    ("kaffinity.policy.guard", "os._exit"),
    # The forked child that writes a cold run's cache entries (Cache.write_later) ends the same way.
    ("kaffinity.cache.store", "os._exit"),
    # The child forked after loading (--jobs: kaffinity.load.parallel.forked) sends its value and
    # ends itself the same way: the parent's buffers are not flushed twice.
    ("kaffinity.load.parallel", "os._exit"),
}


def _dotted(node: ast.expr) -> str:
    """``a.b.c`` for a name or an attribute chain, else ''."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def prints_or_exits(source: str) -> set[str]:
    """What ``source`` calls (or raises, or imports) that prints or ends the process: the calls
    of :data:`_PRINTS_OR_EXITS`, ``raise`` of one of them, a rich console's ``print``/``log``,
    and imports of typer or click."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name in _PRINTS_OR_EXITS or (
                isinstance(node.func, ast.Attribute)
                and node.func.attr in ("print", "log", "rule")
                and "console" in name.lower()  # rich's Console.print / .log / .rule
            ):
                found.add(name)
        elif isinstance(node, ast.Raise) and node.exc is not None:
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = _dotted(raised)
            if name in _PRINTS_OR_EXITS or name.endswith((".Exit", ".Abort")):
                found.add(f"raise {name}")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            modules = (
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            )
            found.update(
                f"import {module}" for module in modules if module.split(".")[0] in _COMMAND_LINE_LIBRARIES
            )
    return found


def _below_the_command_line(module: str) -> bool:
    return not any(module == top or module.startswith(top + ".") for top in COMMAND_LINE)


@pytest.mark.parametrize("module", sorted(name for name in MODULES if _below_the_command_line(name)))
def test_nothing_below_the_command_line_prints_or_exits(module: str) -> None:
    found = prints_or_exits(MODULES[module].read_text(encoding="utf-8"))
    found = {name for name in found if (module, name) not in ALLOWED}
    assert not found, f"{module} prints or exits ({sorted(found)}): return notes or raise RunError"


def test_the_allowed_printers_still_print() -> None:
    """Every exception of :data:`ALLOWED` is still needed (a stale one would hide a new call)."""
    for module, name in ALLOWED:
        assert name in prints_or_exits(MODULES[module].read_text(encoding="utf-8")), (module, name)


def test_the_print_check_would_fail() -> None:
    """The check sees what it is meant to: each way of printing or exiting, made up."""
    made_up = """
import sys, typer
from click import echo

def f(console, out):
    print("x")
    typer.echo("x", err=True)
    sys.stderr.write("x")
    console.print("x")
    out.write("x")  # a stream it was handed: allowed
    raise typer.Exit(2)

def g():
    raise SystemExit(1)

def h():
    sys.exit(2)
"""
    assert prints_or_exits(made_up) == {
        "print",
        "typer.echo",
        "sys.stderr.write",
        "console.print",
        "typer.Exit",
        "raise typer.Exit",
        "SystemExit",
        "raise SystemExit",
        "sys.exit",
        "import typer",
        "import click",
    }
    assert _below_the_command_line("kaffinity.run.lint")
    assert not _below_the_command_line("kaffinity.cli.lint")
    # The command line does print: the check reads it as it reads the others.
    assert "raise typer.Exit" in prints_or_exits(MODULES["kaffinity.cli.output"].read_text(encoding="utf-8"))


def test_the_run_layer_never_imports_the_command_line() -> None:
    """kaffinity.run is called by the command line and returns to it: a lint's paths visit the
    command line once. Nothing below it imports kaffinity.cli (the layers check it for every
    module; this names the run layer's promise)."""
    run_modules = [name for name in MODULES if name == "kaffinity.run" or name.startswith("kaffinity.run.")]
    assert len(run_modules) >= 8
    below = [name for name in MODULES if _below_the_command_line(name)]
    leaks = sorted(
        (module, name) for module in below for name in IMPORTS[module] if not _below_the_command_line(name)
    )
    assert leaks == []
