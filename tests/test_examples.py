"""Every rule has a failing and a passing example in examples/<rule>/; they are golden tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from kaffinity.rules import BY_NAME, RULES

from .kit import CROSS_WORKLOAD, EXAMPLES, POLICY_EXAMPLES, example_settings, expected, lint_paths

#: examples/policies holds policies and their fixtures: `kaffinity policy test` checks those
#: markers (tests/test_policy.py); the built-in rules find nothing there.
#: Rules whose findings need a chart folder rendered (``--render``), which a single example file
#: cannot be: their failing and passing cases are the tests named here.
RENDERED_ONLY = {"chart-dependency": "tests/test_chart_dependencies.py"}

EXAMPLE_FILES = sorted(
    p
    for p in EXAMPLES.rglob("*")
    if p.suffix in (".yaml", ".yml", ".json") and POLICY_EXAMPLES not in p.parents
)


@pytest.mark.parametrize("rule", [rule.name for rule in RULES if rule.name not in RENDERED_ONLY])
def test_every_rule_has_failing_and_passing_examples(rule: str) -> None:
    folder = EXAMPLES / rule
    failing = [p for p in folder.glob("fail*") if expected(p)]
    passing = list(folder.glob("pass*"))
    assert failing, f"examples/{rule}/ needs a fail*.yaml with '# expect: {rule}' markers"
    assert passing, f"examples/{rule}/ needs a pass*.yaml"
    assert any(r == rule for p in failing for r, _ in expected(p))


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_example_reports_exactly_its_markers(path: Path) -> None:
    """Each example is linted with the settings its ``# settings:`` line names (default: none)."""
    result = lint_paths(path, **example_settings(path))
    assert not result.internal_errors  # a rule that crashes must not pass for a quiet one
    got = sorted((finding.rule, finding.line) for finding in result.findings)
    assert got == expected(path)
    if path.name.startswith("pass"):
        assert got == []


def test_whole_examples_folder_reports_the_union_of_markers() -> None:
    """Linting the folder at once (default settings) finds what the examples find one by one.

    Except the cross-workload rules (category ``graph``): they see every example's workloads
    at once, so they are checked example by example (above) and in ``tests/rules/test_<rule>.py``.
    """
    result = lint_paths(EXAMPLES)
    got = sorted(
        (f.rule, f.file, f.line)
        for f in result.findings
        if not example_settings(Path(f.file)) and f.category not in CROSS_WORKLOAD
    )
    want = sorted(
        (rule, str(path), line)
        for path in EXAMPLE_FILES
        if not example_settings(path)
        for rule, line in expected(path)
        if BY_NAME[rule].category not in CROSS_WORKLOAD
    )
    assert got == want


def test_the_guided_tour_links_every_rule_and_example() -> None:
    """examples/README.md is the tour: each rule's docs and every one of its example files."""
    tour = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for rule in RULES:
        assert f"[`{rule.name}`](../docs/rules.md#{rule.name})" in tour, rule.name
        if rule.name in RENDERED_ONLY:
            assert f"(../{RENDERED_ONLY[rule.name]})" in tour, rule.name
            assert (EXAMPLES.parent / RENDERED_ONLY[rule.name]).is_file()
            continue
        for path in sorted((EXAMPLES / rule.name).iterdir()):
            assert f"]({rule.name}/{path.name})" in tour, path
