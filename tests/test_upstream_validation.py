"""kaffinity's API validation against upstream Kubernetes, case by case.

``data/upstream_validation.yaml`` restates what upstream's validation tests (and a few rules of
``validation.go`` no test exercises) say about the scheduling fields of a Pod on create: affinity,
tolerations, nodeSelector and topologySpreadConstraints. Every case becomes one Pod manifest; kaffinity
must reject exactly the cases upstream rejects. Whether its finding names the same field path as
upstream's error is measured over all invalid cases rather than asserted per case.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from kaffinity.findings import Finding

from .kit import lint_text

DATA = Path(__file__).resolve().parent / "data" / "upstream_validation.yaml"
#: Findings that mean "the API server would refuse this object".
ERROR_RULES = frozenset({"schema", "api-validation", "field-unavailable", "proposal-field"})
#: The share of invalid cases whose finding must name upstream's field path.
PATH_AGREEMENT = 0.6
DEFAULT_CONTAINERS = [{"name": "c", "image": "busybox"}]


def _load_cases() -> list[dict[str, Any]]:
    cases = YAML(typ="safe", pure=True).load(DATA.read_text(encoding="utf-8"))
    assert isinstance(cases, list)
    return cases


CASES = _load_cases()
INVALID = [case for case in CASES if not case["valid"]]


def manifest(case: dict[str, Any]) -> str:
    """The Pod a case describes, as JSON text (which is YAML)."""
    metadata: dict[str, Any] = {"name": "case"}
    if case.get("labels"):
        metadata["labels"] = case["labels"]
    spec = dict(case["spec"])
    spec.setdefault("containers", DEFAULT_CONTAINERS)
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}, indent=2)


@functools.cache
def errors_for(name: str) -> tuple[Finding, ...]:
    """The findings of ``ERROR_RULES`` kaffinity reports for the case called ``name``."""
    case = next(case for case in CASES if case["name"] == name)
    gates = case.get("feature-gates") or {}
    # kit.lint_text fails on a crashed rule, which would otherwise accept every case
    result = lint_text(manifest(case), "case.yaml", kube_version=case["kube-version"], feature_gates=gates)
    return tuple(finding for finding in result.findings if finding.rule in ERROR_RULES)


def describe(findings: tuple[Finding, ...]) -> str:
    return "\n".join(f"  {f.rule} at {f.path or '(no path)'}: {f.message}" for f in findings) or "  (none)"


def starts_a_token(text: str, finding: Finding) -> bool:
    """The finding's (line, column) is where a JSON token of ``text`` starts: a key, an object,
    a list or a value (a field the case leaves out is reported at the object that lacks it)."""
    if finding.line is None or finding.column is None:
        return False
    lines = text.splitlines()
    if not 1 <= finding.line <= len(lines):
        return False
    here = lines[finding.line - 1][finding.column - 1 :]
    return bool(here) and (
        here[0] in '"{[-' or here[0].isdigit() or here.startswith(("true", "false", "null"))
    )


def path_matches(case: dict[str, Any]) -> bool:
    return any(finding.path == case["path"] for finding in errors_for(case["name"]))


def test_cases_are_well_formed() -> None:
    names = [case["name"] for case in CASES]
    assert len(names) == len(set(names)), "case names must be unique"
    for case in CASES:
        assert {"name", "source", "kube-version", "valid", "path", "spec"} <= case.keys(), case["name"]
        assert (case["path"] is None) == case["valid"], case["name"]


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_upstream_case(case: dict[str, Any]) -> None:
    errors = errors_for(case["name"])
    expectation = "accepts" if case["valid"] else f"rejects (at {case['path']})"
    assert bool(errors) == (not case["valid"]), (
        f"upstream {expectation} this Pod ({case['source']}; kube {case['kube-version']}); "
        f"kaffinity reported:\n{describe(errors)}\n{manifest(case)}"
    )
    # Each finding's location is a token of the manifest (upstream's tables give field paths,
    # not positions: the path is measured below, the position is checked here).
    assert all(starts_a_token(manifest(case), finding) for finding in errors), [
        (f.rule, f.line, f.column, f.path) for f in errors
    ]


def test_error_paths_agree_with_upstream() -> None:
    matched = [case["name"] for case in INVALID if path_matches(case)]
    missed = [f"  {case['name']}: want {case['path']}" for case in INVALID if case["name"] not in matched]
    share = len(matched) / len(INVALID)
    summary = f"{len(matched)}/{len(INVALID)} invalid cases name upstream's path ({share:.0%})"
    assert share >= PATH_AGREEMENT, f"{summary}, below {PATH_AGREEMENT:.0%}:\n" + "\n".join(missed)


# -- PodDisruptionBudgets ------------------------------------------------------------------------

BUDGETS = YAML(typ="safe", pure=True).load(
    (Path(__file__).resolve().parent / "data" / "upstream_pdb_validation.yaml").read_text(encoding="utf-8")
)


def budget(case: dict[str, Any]) -> str:
    spec = dict(case["spec"])
    spec.setdefault("selector", {"matchLabels": {"app": "web"}})
    document = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "case"}}
    return json.dumps({**document, "spec": spec}, indent=2)


@pytest.mark.parametrize("case", BUDGETS, ids=[case["name"] for case in BUDGETS])
def test_upstream_budget_case(case: dict[str, Any]) -> None:
    """Every case: the same verdict as upstream, and a finding at upstream's field path."""
    result = lint_text(budget(case), "case.yaml")
    errors = [finding for finding in result.findings if finding.rule in ERROR_RULES]
    assert all(starts_a_token(budget(case), finding) for finding in errors), [
        (f.rule, f.line, f.column, f.path) for f in errors
    ]
    if case["valid"]:
        assert errors == [], describe(tuple(errors))
    else:
        assert case["path"] in [finding.path for finding in errors], describe(tuple(errors))
