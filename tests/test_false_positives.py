"""Findings a corpus of real manifests showed to be false, and the typo class that was missed.

Each case is built from a real file (trimmed fixtures in examples/, the source named in them)."""

from __future__ import annotations

import textwrap

from .kit import EXAMPLES, findings, keys, lint_paths, lint_text, position


def test_linkerd_ha_rollout_finishes_on_a_cluster_of_as_many_nodes() -> None:
    """The arithmetic agrees with the rollout simulation: three nodes, three replicas, no deadlock."""
    path = EXAMPLES / "revision-unscoped" / "fail-max-unavailable.yaml"
    result = lint_paths(
        path, select=("rollout-deadlock", "unschedulable"), cluster="examples/clusters/rollout-deadlock.yaml"
    )
    assert keys(result) == []


# -- budgets the API server refuses: api-validation, and nothing else ---------------------------


def test_refused_budgets_are_api_validation_errors_only() -> None:
    """polaris' minAvailable 150% (and a budget with both fields): four api-validation errors at
    upstream's field paths; pdb-blocks-eviction and pdb-overlap, which reported them, are quiet."""
    result = lint_paths(EXAMPLES / "api-validation" / "fail-pdb.yaml")
    assert [(f.rule, f.line, f.column, f.path) for f in findings(result)] == [
        ("api-validation", 29, 3, "spec.minAvailable"),
        ("api-validation", 40, 3, "spec.minAvailable"),
        ("api-validation", 41, 3, "spec.maxUnavailable"),
        ("api-validation", 41, 3, "spec"),
    ]


def test_refused_budget_that_selects_nothing_is_not_pdb_no_match() -> None:
    text = textwrap.dedent(
        """\
        apiVersion: policy/v1
        kind: PodDisruptionBudget
        metadata: {name: web}
        spec:
          maxUnavailable: 150%
          selector: {matchLabels: {app: web}}
        """
    )
    assert keys(lint_text(text, closed=True)) == [("api-validation", *position(text, "maxUnavailable"))]
    valid = text.replace("150%", "50%")
    assert keys(lint_text(valid, closed=True)) == [("pdb-no-match", *position(valid, "selector"))]
