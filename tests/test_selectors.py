"""Selector matching as apimachinery and the scheduler match (kaffinity.k8s.selectors)."""

from __future__ import annotations

import pytest

from kaffinity.k8s.model import LabelSelector, NodeSelectorTerm, Requirement, build_object
from kaffinity.k8s.selectors import node_term_matches, requirement_matches, selector_matches
from kaffinity.load.parse import parse


def _req(key: str, operator: str, *values: str) -> Requirement:
    return Requirement(key, operator, values, ())


@pytest.mark.parametrize(
    ("requirement", "labels", "expected"),
    [
        (_req("app", "In", "web", "api"), {"app": "api"}, True),
        (_req("app", "In", "web"), {}, False),
        (_req("app", "NotIn", "web"), {}, True),
        (_req("app", "NotIn", "web"), {"app": "web"}, False),
        (_req("app", "Exists"), {"app": ""}, True),
        (_req("app", "DoesNotExist"), {"app": ""}, False),
        (_req("gen", "Gt", "3"), {"gen": "4"}, True),
        (_req("gen", "Gt", "3"), {"gen": "3"}, False),
        (_req("gen", "Lt", "3"), {"gen": "-1"}, True),
        (_req("gen", "Lt", "3"), {"gen": "+2"}, True),  # Go's ParseInt takes a sign
        (_req("gen", "Gt", "3"), {"gen": "1_000"}, False),  # but no underscores (Python's int would)
        (_req("gen", "Gt", "3"), {"gen": "four"}, False),  # not a number: false, not an error
        (_req("gen", "Gt", "x"), {"gen": "4"}, False),
        (_req("gen", "Gt", "3"), {}, False),
        (_req("gen", "Gt", "3", "4"), {"gen": "9"}, False),
        (_req("app", "Equals", "web"), {"app": "web"}, False),
    ],
)
def test_requirement(requirement: Requirement, labels: dict[str, str], expected: bool) -> None:
    assert requirement_matches(requirement, labels) is expected


def test_nil_selector_matches_nothing_and_empty_matches_everything() -> None:
    assert not selector_matches(None, {"app": "web"})
    assert selector_matches(LabelSelector((), (), ()), {})
    both = LabelSelector((("app", "web"),), (_req("tier", "In", "front"),), ())
    assert selector_matches(both, {"app": "web", "tier": "front"})
    assert not selector_matches(both, {"app": "web", "tier": "back"})


def test_gt_lt_in_pod_selectors_only_with_proposals() -> None:
    numeric = LabelSelector((), (_req("generation", "Gt", "20"),), ())
    assert not selector_matches(numeric, {"generation": "25"})
    assert selector_matches(numeric, {"generation": "25"}, proposals=True)
    assert not selector_matches(numeric, {"generation": "15"}, proposals=True)


def test_node_terms() -> None:
    assert not node_term_matches(NodeSelectorTerm((), (), ()), {"a": "b"}, "n1")  # empty term
    by_name = NodeSelectorTerm((), (_req("metadata.name", "In", "n1"),), ())
    assert node_term_matches(by_name, {}, "n1")
    assert not node_term_matches(by_name, {}, "n2")


def test_model_reads_the_kep_4328_field() -> None:
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  affinity:\n    nodeAffinity:\n"
        "      requiredDuringSchedulingRequiredDuringExecution:\n        nodeSelectorTerms:\n"
        "          - matchExpressions: [{key: pool, operator: In, values: [gpu]}]\n"
    )
    pod = build_object(parse("p.yaml", text).documents[0])
    node_affinity = pod.pod.affinity.node_affinity  # type: ignore[union-attr]
    assert node_affinity is not None and node_affinity.required is None
    (term,) = node_affinity.required_during_execution or ()
    assert node_term_matches(term, {"pool": "gpu"}, "n1")
