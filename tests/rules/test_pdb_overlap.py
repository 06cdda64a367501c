"""The rule ``pdb-overlap`` (kaffinity/rules/pdb_overlap.py): two PodDisruptionBudgets selecting the same
pods, which the eviction API refuses to evict (``pkg/registry/core/pod/storage/eviction.go``:
"This pod has more than one PodDisruptionBudget"), reported at each selector.

The other budgets are asserted by the related locations; the pods they share and the eviction
API's refusal exist only as the message's wording, the subject where a test reads it.
"""

from __future__ import annotations

from typing import Any

from kaffinity.findings import Severity

from ..kit import keys
from .graph_policy_inputs import OVERLAP, doc_at, doc_line, graph_workload, lint_objects, related_lines


def pdb(name: str, namespace: str, selector: dict[str, Any] | None, api: str = "policy/v1") -> dict[str, Any]:
    spec: dict[str, Any] = {"maxUnavailable": 1}
    if selector is not None:
        spec["selector"] = selector
    return {
        "apiVersion": api,
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


# -- pdb-overlap ----------------------------------------------------------------------------------


def test_two_budgets_on_the_same_pods_are_each_reported_at_their_selector() -> None:
    web = graph_workload("web", "shop", {"app": "web", "tier": "frontend"})
    admin = graph_workload("admin", "shop", {"app": "admin", "tier": "frontend"})
    objects = [
        web,
        admin,
        pdb("web", "shop", {"matchLabels": {"app": "web"}}),
        pdb("frontend", "shop", {"matchLabels": {"tier": "frontend"}}),
    ]
    result = lint_objects(*objects, rule=OVERLAP)
    assert keys(result) == [(OVERLAP, *doc_at(tuple(objects), index, '"selector"')) for index in (2, 3)]
    assert [f.path for f in result] == ["spec.selector", "spec.selector"]
    first, second = result
    assert (
        "frontend" in first.message
        and "StatefulSet/shop/web" in first.message
        and "admin" not in first.message
    )
    assert "more than one PodDisruptionBudget" in first.message
    assert related_lines(first) == [doc_line(3)]
    assert related_lines(second) == [doc_line(2)]
    assert all(f.severity is Severity.WARNING for f in result)


def test_three_budgets_name_both_others() -> None:
    web = graph_workload("web", "shop", {"app": "web", "tier": "frontend", "team": "a"})
    objects = [
        web,
        pdb("one", "shop", {"matchLabels": {"app": "web"}}),
        pdb("two", "shop", {"matchLabels": {"tier": "frontend"}}),
        pdb("three", "shop", {}),
    ]
    result = lint_objects(*objects, rule=OVERLAP)
    assert keys(result) == [(OVERLAP, *doc_at(tuple(objects), index, '"selector"')) for index in (1, 2, 3)]
    # The others in (namespace, kind, name) order, not in the order they were written: three, two.
    assert related_lines(result[0]) == [doc_line(3), doc_line(2)]


def test_disjoint_other_namespace_nil_v1beta1_empty_and_scaled_to_zero_are_quiet() -> None:
    objects = [
        graph_workload("web", "shop", {"app": "web", "tier": "frontend"}),
        graph_workload("idle", "shop", {"app": "idle", "tier": "idle"}, replicas=0),
        pdb("web", "shop", {"matchLabels": {"app": "web"}}),
        pdb("other-ns", "elsewhere", {"matchLabels": {"app": "web"}}),
        pdb("nil", "shop", None),
        # policy/v1beta1: an empty selector selects no pod (changed in policy/v1)
        pdb("old-empty", "shop", {}, api="policy/v1beta1"),
        pdb("idle-a", "shop", {"matchLabels": {"app": "idle"}}),
        pdb("idle-b", "shop", {"matchLabels": {"tier": "idle"}}),
    ]
    assert keys(lint_objects(*objects, rule=OVERLAP)) == []


def test_the_same_budget_twice_is_one_object_not_an_overlap() -> None:
    """Two documents with one name are variants of one object (overlays, fixtures linted together)."""
    objects = [
        graph_workload("web", "shop", {"app": "web"}),
        pdb("web", "shop", {"matchLabels": {"app": "web"}}),
        pdb("web", "shop", {"matchLabels": {"app": "web"}}),
    ]
    assert keys(lint_objects(*objects, rule=OVERLAP)) == []


def test_existing_pods_of_a_cluster_file_count() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "legacy-0",
            "namespace": "shop",
            "labels": {"app": "legacy", "tier": "frontend"},
        },
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]},
    }
    objects = [
        pdb("legacy", "shop", {"matchLabels": {"app": "legacy"}}),
        pdb("frontend", "shop", {"matchLabels": {"tier": "frontend"}}),
    ]
    result = lint_objects(*objects, rule=OVERLAP, cluster=[pod])
    assert keys(result) == [(OVERLAP, *doc_at(tuple(objects), index, '"selector"')) for index in (0, 1)]
    assert "1 existing pod in shop (app=legacy,tier=frontend)" in result[0].message
