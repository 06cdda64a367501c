"""The rule ``proposal-field`` (kaffinity/rules/proposal_field.py): a field only a Kubernetes proposal
(KEP) defines, reported at the field; with proposals honoured, it is validated like the field it
extends.

Upstream: kubernetes/enhancements KEP-4328 (requiredDuringSchedulingRequiredDuringExecution) and
the Gt/Lt operators of pod label selectors proposed with it.

The proposal (KEP) a field belongs to exists only in the message: it is asserted on its words.
"""

from __future__ import annotations

from ..kit import keys, only, position
from .validation_inputs import RDE, TEMPLATE, assert_at, check_schema, deployment, lint_schema

RDE_SPEC = f"""\
affinity:
  nodeAffinity:
    {RDE}:
      nodeSelectorTerms:
        - matchExpressions:
            - {{key: pool, operator: In, values: [batch]}}
"""
POD_GT_SPEC = """\
affinity:
  podAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: kubernetes.io/hostname
        labelSelector:
          matchExpressions:
            - {key: generation, operator: Gt, values: ["20"]}
"""
POD_GT_REQUIREMENT = (
    f"{TEMPLATE}.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
    ".labelSelector.matchExpressions[0]"
)


def test_required_during_execution_is_a_proposal_field() -> None:
    text = deployment(RDE_SPEC)
    finding = only(lint_schema(text))
    assert_at(finding, "proposal-field", text, RDE, f"{TEMPLATE}.affinity.nodeAffinity.{RDE}")
    assert "KEP-4328" in finding.message


def test_a_bad_value_inside_a_proposal_field_is_not_reported() -> None:
    text = deployment(RDE_SPEC.replace("operator: In", "operator: Bogus"))
    assert keys(lint_schema(text)) == [("proposal-field", *position(text, RDE))]


def test_an_unknown_field_inside_a_proposal_field_is_not_reported() -> None:
    # The unknown key sits directly in the proposal field's object: the object is moot as a whole.
    text = deployment(
        RDE_SPEC.replace("      nodeSelectorTerms:", "      nodeSelectorTermz: 1\n      nodeSelectorTerms:")
    )
    assert keys(lint_schema(text)) == [("proposal-field", *position(text, RDE))]


def test_gt_in_a_pod_affinity_selector_is_a_proposal_operator() -> None:
    text = deployment(POD_GT_SPEC)
    finding = only(lint_schema(text))
    assert_at(finding, "proposal-field", text, "operator: Gt", f"{POD_GT_REQUIREMENT}.operator")


def test_proposals_honoured_accept_both() -> None:
    check_schema(deployment(RDE_SPEC), proposals=True)
    check_schema(deployment(POD_GT_SPEC), proposals=True)


def test_proposals_honoured_validate_required_during_execution_like_the_required_selector() -> None:
    text = deployment(
        f"""\
        affinity:
          nodeAffinity:
            {RDE}:
              nodeSelectorTerms: []
        """
    )
    assert [f.rule for f in lint_schema(text).findings] == ["proposal-field"]
    finding = only(lint_schema(text, proposals=True))
    assert_at(
        finding,
        "api-validation",
        text,
        "nodeSelectorTerms",
        f"{TEMPLATE}.affinity.nodeAffinity.{RDE}.nodeSelectorTerms",
    )
    assert "must have at least one node selector term" in finding.message


def test_proposals_honoured_gt_in_a_pod_selector_takes_one_value() -> None:
    text = deployment(POD_GT_SPEC.replace('values: ["20"]', 'values: ["20", "30"]'))
    finding = only(lint_schema(text, proposals=True))
    assert_at(finding, "api-validation", text, "operator: Gt", f"{POD_GT_REQUIREMENT}.values", at="values:")
    assert "Required value" in finding.message
