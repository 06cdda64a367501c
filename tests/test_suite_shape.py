"""The suite asserts positions: at least 80% of the test functions that lint assert where.

Issue 34 (item 6): lint tests assert (rule, line, column) and the finding's data, message text
only where wording is the subject. This file measures it over every test module (``tests/**/
test_*.py``), reading the source with ``ast``, and fails below :data:`TARGET`. Run
``python -m tests.test_suite_shape`` to print the numbers.

What is counted, precisely:

* **A test** is a test *function* (``def test_*`` at module level or in a ``Test*`` class), not
  a parametrized case: a table of 40 cases is one test.
* Its **reach** is its own body plus, transitively, the functions of the same module it calls by
  name (module-level helpers, nested functions, ``self.``/``cls.`` methods), those of the suite's
  modules it imports from with a relative import (``from .validation_inputs import assert_at``)
  and the fixtures of the same module it takes as parameters. Helpers of ``tests/kit.py`` are
  primitives, not reach.
* **It lints** when its reach calls one of :data:`LINTERS` (``kit.lint_text``, ``lint_paths``,
  ``check``, ``run_json``, ``lint_json``, ``assert_example``, the engine's ``lint``, a rule's
  ``.check``), or ``run`` or ``run_raw`` with the literal ``"lint"`` as first
  argument, **and** looks at what was found: calls one of :data:`READERS` (``kit.findings``,
  ``only``, ``keys``, ``lines``, ``check``, ``assert_found``, ``expected``, ``assert_example``),
  reads :data:`FOUND` as an attribute or a key (``findings``, ``rule``, ``ruleId``, ``message``,
  ``line``, ``column``...), or names a rule (a string that is a rule's name, or holds one with a
  hyphen, as ``"pdb-overlap" in completed.stdout``). A test that lints to check an exit code, a
  cache entry or a file written is about the run, not about findings, and is not counted
  (``--all`` counts every test that lints).
* **It asserts positions** when its reach calls one of :data:`POSITIONAL` (``kit.check``,
  ``assert_found``, ``keys``, ``lines``, ``expected``, ``assert_example``: they compare (rule,
  line, column) or (rule, line)), or reads a finding's position: an attribute
  ``.line``/``.column`` or a subscript ``["line"]``/``["column"]``/``["startLine"]``/
  ``["startColumn"]`` (the JSON and SARIF reports).
* **A message-substring assertion** (reported, not gated) is an ``assert "text" in X`` (or
  ``not in``) whose right side reads ``message``/``messages`` (attribute, subscript or name).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kaffinity.rules import BY_NAME

TESTS = Path(__file__).resolve().parent
TARGET = 0.80

#: Calls that lint: by bare name or as an attribute (``kit.check``, ``engine.lint``, ``rule.check``).
LINTERS = frozenset(("lint_text", "lint_paths", "check", "run_json", "lint_json", "lint", "assert_example"))
#: Commands that lint when their first argument is the literal ``"lint"``.
COMMANDS = frozenset(("run", "run_raw"))
#: Kit helpers that read findings.
READERS = frozenset(
    ("findings", "only", "keys", "lines", "check", "assert_found", "expected", "assert_example")
)
#: What was found, as an attribute (``Finding``) or a key (JSON, SARIF).
FOUND = frozenset(("findings", "results", "rule", "ruleId", "message", "line", "column"))
#: Kit helpers that compare findings by position.
POSITIONAL = frozenset(("check", "assert_found", "keys", "lines", "expected", "assert_example"))
#: A finding's position, as an attribute (``Finding``) or a key (JSON, SARIF).
POSITION_ATTRIBUTES = frozenset(("line", "column"))
POSITION_KEYS = frozenset(("line", "column", "startLine", "startColumn"))
MESSAGE_NAMES = frozenset(("message", "messages"))
RULE_NAMES = frozenset(BY_NAME)
HYPHENATED = tuple(name for name in RULE_NAMES if "-" in name)

Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class Shape:
    """The numbers of a set of modules: the lint tests, those asserting positions, and the
    message-substring assertions; ``lint_only`` names the lint tests without positions."""

    tests: int = 0
    lint: int = 0
    positions: int = 0
    message_substrings: int = 0
    lint_only: list[str] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.positions / self.lint if self.lint else 1.0

    def add(self, other: Shape) -> None:
        self.tests += other.tests
        self.lint += other.lint
        self.positions += other.positions
        self.message_substrings += other.message_substrings
        self.lint_only += other.lint_only


def _called_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _local_name(call: ast.Call) -> str | None:
    """The module-local function a call may reach: ``helper()``, ``self.helper()``."""
    if isinstance(call.func, ast.Name):
        return call.func.id
    if (
        isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id in ("self", "cls")
    ):
        return call.func.attr
    return None


def _lints(call: ast.Call) -> bool:
    name = _called_name(call)
    if name in LINTERS:
        return True
    if name in COMMANDS and call.args:
        first = call.args[0]
        return isinstance(first, ast.Constant) and first.value == "lint"
    return False


def _reads_position(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in POSITION_ATTRIBUTES
    if isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(key, ast.Constant) and key.value in POSITION_KEYS
    return False


def _reads_found(node: ast.AST) -> bool:
    if isinstance(node, ast.Call):
        return _called_name(node) in READERS
    if isinstance(node, ast.Attribute):
        return node.attr in FOUND
    if isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(key, ast.Constant) and key.value in FOUND
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value in RULE_NAMES or any(name in node.value for name in HYPHENATED)
    return False


def _reads_message(node: ast.AST) -> bool:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Attribute) and inner.attr in MESSAGE_NAMES:
            return True
        if isinstance(inner, ast.Name) and inner.id in MESSAGE_NAMES:
            return True
        if isinstance(inner, ast.Subscript):
            key = inner.slice
            if isinstance(key, ast.Constant) and key.value in MESSAGE_NAMES:
                return True
    return False


def _message_substrings(function: Function) -> int:
    count = 0
    for node in ast.walk(function):
        if not isinstance(node, ast.Assert):
            continue
        for compare in ast.walk(node.test):
            if not isinstance(compare, ast.Compare) or not isinstance(compare.left, ast.Constant):
                continue
            if not isinstance(compare.left.value, str):
                continue
            for op, right in zip(compare.ops, compare.comparators, strict=True):
                if isinstance(op, ast.In | ast.NotIn) and _reads_message(right):
                    count += 1
    return count


@dataclass
class _Facts:
    lints: bool = False
    reads: bool = False
    positions: bool = False
    calls: set[str] = field(default_factory=set)


def _facts(function: Function) -> _Facts:
    facts = _Facts()
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            facts.lints |= _lints(node)
            facts.positions |= _called_name(node) in POSITIONAL
            local = _local_name(node)
            if local is not None:
                facts.calls.add(local)
        facts.reads |= _reads_found(node)
        facts.positions |= _reads_position(node)
    return facts


def _functions(tree: ast.Module) -> Iterator[Function]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _tests(tree: ast.Module) -> Iterator[tuple[str, Function]]:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            yield node.name, node
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for member in node.body:
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef) and member.name.startswith(
                    "test"
                ):
                    yield f"{node.name}.{member.name}", member


def _is_fixture(function: Function) -> bool:
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute) and target.attr == "fixture":
            return True
        if isinstance(target, ast.Name) and target.id == "fixture":
            return True
    return False


def _module_facts(tree: ast.Module) -> tuple[dict[str, _Facts], set[str]]:
    """The facts of each function of a module by name, and the names of its fixtures."""
    facts: dict[str, _Facts] = {}
    fixtures: set[str] = set()
    for function in _functions(tree):
        found = _facts(function)
        known = facts.setdefault(function.name, _Facts())
        known.lints |= found.lints
        known.reads |= found.reads
        known.positions |= found.positions
        known.calls |= found.calls
        if _is_fixture(function):
            fixtures.add(function.name)
    return facts, fixtures


def _folded(facts: dict[str, _Facts]) -> dict[str, _Facts]:
    """Each function's facts together with those of the functions of its module it reaches."""
    folded = {}
    for name in facts:
        reach, pending = {name}, [name]
        while pending:
            for called in facts[pending.pop()].calls:
                if called in facts and called not in reach:
                    reach.add(called)
                    pending.append(called)
        folded[name] = _Facts(
            lints=any(facts[item].lints for item in reach),
            reads=any(facts[item].reads for item in reach),
            positions=any(facts[item].positions for item in reach),
        )
    return folded


def helper_facts(root: Path = TESTS) -> dict[str, dict[str, _Facts]]:
    """The facts of the functions of every module of the suite but the kit (whose helpers are
    primitives), by module name (``validation_inputs``, ``test_context``), each with what it
    reaches in its own module: a test reaches the helpers it imports with a relative import."""
    return {
        path.stem: _folded(_module_facts(ast.parse(path.read_text(encoding="utf-8")))[0])
        for path in sorted(root.rglob("*.py"))
        if path.name != "kit.py"
    }


def measure_source(
    source: str,
    name: str = "<module>",
    *,
    every: bool = False,
    helpers: dict[str, dict[str, _Facts]] | None = None,
) -> Shape:
    """The :class:`Shape` of one test module's source; with ``every``, a test that lints counts
    whether it reads findings or not; ``helpers`` (:func:`helper_facts`) are the functions of
    the modules it may import from."""
    tree = ast.parse(source)
    facts, fixtures = _module_facts(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level and node.module and helpers:
            imported = helpers.get(node.module.rsplit(".", 1)[-1], {})
            for alias in node.names:
                if alias.name in imported:
                    facts.setdefault(alias.asname or alias.name, imported[alias.name])
    shape = Shape()
    for test_name, test in _tests(tree):
        shape.tests += 1
        shape.message_substrings += _message_substrings(test)
        reach = {test.name} | {arg.arg for arg in test.args.args if arg.arg in fixtures}
        pending = list(reach)
        while pending:
            for called in facts[pending.pop()].calls:
                if called in facts and called not in reach:
                    reach.add(called)
                    pending.append(called)
        reached = [facts[item] for item in reach]
        if any(item.lints for item in reached) and (every or any(item.reads for item in reached)):
            shape.lint += 1
            if any(item.positions for item in reached):
                shape.positions += 1
            else:
                shape.lint_only.append(f"{name}::{test_name}")
    return shape


def modules(root: Path = TESTS) -> list[Path]:
    return sorted(root.rglob("test_*.py"))


def measure(paths: Iterable[Path], *, every: bool = False) -> Shape:
    total = Shape()
    helpers = helper_facts()
    for path in paths:
        source = path.read_text(encoding="utf-8")
        total.add(measure_source(source, str(path.relative_to(TESTS)), every=every, helpers=helpers))
    return total


def summary(shape: Shape) -> str:
    return (
        f"{shape.tests} test functions; {shape.lint} lint; {shape.positions} of them assert positions "
        f"({shape.share:.0%}); {shape.message_substrings} message-substring assertions"
    )


# -- the tests -----------------------------------------------------------------------------------


def test_most_lint_tests_assert_positions() -> None:
    """The gate: at least 80% of the test functions that lint assert (rule, line, column)."""
    shape = measure(modules())
    assert shape.lint > 0
    print(summary(shape))
    assert shape.share >= TARGET, summary(shape) + "\nwithout positions:\n" + "\n".join(shape.lint_only)


MESSAGE_ONLY = """
from .kit import lint_text, check

def helper(text):
    return lint_text(text)

def test_message_only():
    result = helper("kind: Pod")
    assert "no node" in result.findings[0].message

def test_clean():
    check("kind: Pod")
"""


def test_a_lint_test_asserting_only_a_message_is_counted_against() -> None:
    """The measure can fail: a module whose one lint test reads only a message is at 50%."""
    shape = measure_source(MESSAGE_ONLY, "made_up.py")
    assert (shape.tests, shape.lint, shape.positions, shape.message_substrings) == (2, 2, 1, 1)
    assert shape.lint_only == ["made_up.py::test_message_only"]
    assert shape.share < TARGET


POSITIONS = """
import pytest
from tests import kit

@pytest.fixture
def result():
    return kit.run_json("x.yaml")

def test_json(result):
    assert [f["line"] for f in result[1]["findings"]] == [3]

def test_cli():
    completed = kit.run("lint", "x.yaml")
    assert "pdb-overlap" in completed.stdout

def test_exit_code():
    assert kit.run("lint", "x.yaml").returncode == 1

def test_not_linting():
    assert kit.position("a", "a") == (1, 1)

class TestRule:
    def test_rule(self):
        found = self.lint()
        assert found[0].column == 4

    def lint(self):
        return kit.lint_text("kind: Pod").findings
"""


def test_fixtures_methods_and_commands_are_followed() -> None:
    """A fixture that lints, a ``run("lint", ...)`` and a method that lints count as linting;
    a test that lints nothing, or lints and reads only the exit code, is not counted (but is
    with ``every``)."""
    shape = measure_source(POSITIONS, "made_up.py")
    assert (shape.tests, shape.lint, shape.positions) == (5, 3, 2)
    assert shape.lint_only == ["made_up.py::test_cli"]
    every = measure_source(POSITIONS, "made_up.py", every=True)
    assert (every.lint, every.lint_only) == (4, ["made_up.py::test_cli", "made_up.py::test_exit_code"])


INPUTS = """
from ..kit import keys, lint_text

def lint_it(text):
    return lint_text(text)

def at(result):
    return keys(result)
"""

USES = """
from .made_inputs import at, lint_it

def test_positions():
    assert at(lint_it("kind: Pod")) == []

def test_message():
    assert lint_it("kind: Pod").findings[0].message == "m"
"""


def test_helpers_imported_from_another_module_of_the_suite_are_followed() -> None:
    """``from .made_inputs import lint_it``: the helper lints and ``at`` compares positions there."""
    helpers = {"made_inputs": _folded(_module_facts(ast.parse(INPUTS))[0])}
    shape = measure_source(USES, "made_up.py", helpers=helpers)
    assert (shape.lint, shape.positions, shape.lint_only) == (2, 1, ["made_up.py::test_message"])
    assert measure_source(USES, "made_up.py").lint == 0  # without them nothing is seen to lint


if __name__ == "__main__":
    import sys

    measured = measure(modules(), every="--all" in sys.argv)
    print(summary(measured))
    print("\n".join(measured.lint_only))
