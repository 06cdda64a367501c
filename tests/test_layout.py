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
    ("kaffinity.cli", "kaffinity.help", "kaffinity.precommit"),  # help and pre-commit serve the CLI
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
