"""Validation as a stage: feature gates and Kubernetes versions on the command line, and the
checked-in JSON schemas per version (the rules of category schema have their own files under
tests/rules/).

Upstream behaviour is the reference: kubernetes/kubernetes ``pkg/features/kube_features.go`` (the
gates, their stages and locks) and the OpenAPI documents the schemas are generated from.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from kaffinity.config import KUBE_VERSIONS

from .kit import EXAMPLES, REPO, keys, position, run
from .rules.validation_inputs import RDE

# -- 9. feature gates and versions on the command line ------------------------------------------

CLEAN = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: i}]\n"


@pytest.fixture
def clean_file(tmp_path: Path) -> str:
    path = tmp_path / "clean.yaml"
    path.write_text(CLEAN, encoding="utf-8")
    return str(path)


def refused(*args: str) -> str:
    """Run the command, expect the one-line refusal of exit code 2, return it."""
    completed = run("lint", "--no-config", *args)
    assert completed.returncode == 2, (completed.stdout, completed.stderr)
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1, completed.stderr
    return lines[0]


def test_cli_refuses_to_unlock_a_locked_gate(clean_file: str) -> None:
    line = refused(
        "--kube-version", "1.33", "--feature-gates", "MatchLabelKeysInPodAffinity=false", clean_file
    )
    assert "locked" in line and "MatchLabelKeysInPodAffinity" in line


def test_cli_refuses_a_removed_gate(clean_file: str) -> None:
    line = refused(
        "--kube-version", "1.32", "--feature-gates", "MinDomainsInPodTopologySpread=true", clean_file
    )
    assert "MinDomainsInPodTopologySpread" in line


def test_cli_refuses_a_typo_of_a_gate(clean_file: str) -> None:
    line = refused("--feature-gates", "MatchLabelKeysInPodAfinity=true", clean_file)
    assert "did you mean" in line and "MatchLabelKeysInPodAffinity" in line


def test_cli_accepts_an_unrelated_gate(clean_file: str) -> None:
    completed = run("lint", "--no-config", "--feature-gates", "SidecarContainers=true", clean_file)
    assert completed.returncode == 0, (completed.stdout, completed.stderr)


def test_cli_refuses_an_unknown_version(clean_file: str) -> None:
    line = refused("--kube-version", "1.26", clean_file)
    assert "1.26" in line


def test_cli_proposals_flag() -> None:
    example = str(EXAMPLES / "proposal-field" / "pass.yaml")
    honoured = run("lint", "--no-config", "--format", "json", "--proposals", example)
    assert honoured.returncode == 0, honoured.stdout
    assert json.loads(honoured.stdout)["findings"] == []
    plain = run("lint", "--no-config", "--format", "json", example)
    assert plain.returncode == 1
    text = Path(example).read_text(encoding="utf-8")
    assert keys(json.loads(plain.stdout)) == [
        ("proposal-field", *position(text, RDE)),
        ("proposal-field", *position(text, "operator: Gt")),
    ]


# -- 10. the generated schemas ------------------------------------------------------------------

SCHEMA_FILES = sorted((REPO / "schemas").glob("kubernetes-*.schema.json"))


def load_schema(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def test_there_is_one_schema_per_known_version() -> None:
    assert [path.name for path in SCHEMA_FILES] == [f"kubernetes-{v}.schema.json" for v in KUBE_VERSIONS]


def test_checked_in_schemas_match_the_generator() -> None:
    completed = subprocess.run(
        [sys.executable, "scripts/generate_schemas.py", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda path: path.name)
def test_generated_schema_is_valid_and_documented(path: Path) -> None:
    schema = load_schema(path)
    Draft202012Validator.check_schema(schema)
    undocumented = [
        f"{name}.{prop}"
        for name, definition in schema["$defs"].items()
        if name.startswith("io.k8s.")
        for prop, sub in (definition.get("properties") or {}).items()
        if not sub.get("description")
    ]
    assert undocumented == []


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda path: path.name)
def test_generated_schema_marks_the_proposals(path: Path) -> None:
    defs = load_schema(path)["$defs"]
    field = defs["io.k8s.api.core.v1.NodeAffinity"]["properties"][RDE]
    assert "x-kaffinity-proposal" in field
    assert "KEP-4328" in field["x-kaffinity-proposal"]
    operators = [
        definition["properties"]["operator"]["x-kaffinity-proposal-values"]
        for definition in defs.values()
        if "x-kaffinity-proposal-values" in (definition.get("properties") or {}).get("operator", {})
    ]
    assert [sorted(values) for values in operators] == [["Gt", "Lt"]]
