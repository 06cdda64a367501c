"""kaffinity's own schemas: well-formed, and the cluster example follows the cluster schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from kaffinity.load.files import load
from kaffinity.load.resources import schema

from .kit import EXAMPLES, REPO

SCHEMAS = sorted(path.name for path in (REPO / "schemas").glob("*.json"))


@pytest.mark.parametrize("name", SCHEMAS)
def test_schema_is_valid_draft_2020_12(name: str) -> None:
    loaded = json.loads((REPO / "schemas" / name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(loaded)
    assert loaded["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema(name) == loaded  # the installed copy is the checked-in one


def _cluster_errors(path: Path) -> list[str]:
    validator = Draft202012Validator(schema("cluster.schema.json"))
    (file,) = load([str(path)])
    return [error.message for doc in file.documents for error in validator.iter_errors(doc.data)]


def test_cluster_example_follows_the_cluster_schema() -> None:
    assert _cluster_errors(EXAMPLES / "clusters" / "topology.yaml") == []


def test_cluster_schema_rejects_a_bad_pool(tmp_path: Path) -> None:
    bad = tmp_path / "cluster.yaml"
    bad.write_text(
        "apiVersion: kaffinity.io/v1alpha1\nkind: ClusterTopology\nspec:\n  zones:\n"
        "    - name: a\n      pools:\n        - {name: Gen, count: -1, taints: [{key: k, effect: Never}]}\n"
    )
    errors = _cluster_errors(bad)
    assert len(errors) == 3, errors  # the pool name's pattern, the count's minimum, the effect's enum


def test_kubernetes_schema_for_editors_selects_by_kind() -> None:
    """The top-level allOf picks the kind's entry point, as yaml-language-server applies it."""
    validator = Draft202012Validator(schema("kubernetes-1.37.schema.json"))
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "spec": {"template": {"spec": {"tolerations": [{"effect": "Never"}]}}},
    }
    assert [e.validator for e in validator.iter_errors(deployment)] == ["enum"]
    other = {"apiVersion": "example.com/v1", "kind": "Deployment", "spec": {"anything": 1}}
    assert list(validator.iter_errors(other)) == []
