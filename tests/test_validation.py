"""Schema and API-server validation per Kubernetes version, feature gate and proposal setting.

Each test lints a small inline manifest and asserts the rule, the line and the API server's field
path of what is reported (sometimes key words of the message), never whole outputs. Upstream
behaviour is the reference: kubernetes/kubernetes ``pkg/apis/core/validation/validation.go``,
``pkg/api/pod/{util,warnings}.go``, ``pkg/registry/core/pod/strategy.go`` (the matchLabelKeys
merge) and ``pkg/features/kube_features.go``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from kaffinity.config import KUBE_VERSIONS
from kaffinity.engine import LintResult
from kaffinity.findings import Finding

from . import kit
from .kit import EXAMPLES, REPO, assert_found, findings, only, position, run
from .kit import lint_text as lint_all

TEMPLATE = "spec.template.spec"
PRE_1_31 = ("1.27", "1.28", "1.29", "1.30")
FROM_1_31 = tuple(v for v in KUBE_VERSIONS if v not in PRE_1_31)
FROM_1_34 = tuple(v for v in KUBE_VERSIONS if int(v.split(".")[1]) >= 34)


# -- manifests and lookups ---------------------------------------------------------------------


def lint_text(text: str, **settings: Any) -> LintResult:
    """These tests are about the validation rules (category schema); the expansion rules, which
    also read matchLabelKeys, have their own tests (test_expand.py)."""
    return lint_all(text, **{"select": ("schema",), **settings})


def check(text: str, *problems: kit.Problem, **settings: Any) -> LintResult:
    """kit.check with the validation rules, as :func:`lint_text`."""
    return kit.check(text, *problems, **{"select": ("schema",), **settings})


def deployment(pod_spec: str, labels: str = "{app: web}", api_version: str = "apps/v1") -> str:
    """A Deployment whose pod template spec holds ``pod_spec`` (YAML, any indentation)."""
    head = (
        f"apiVersion: {api_version}\n"
        "kind: Deployment\n"
        "metadata: {name: web}\n"
        "spec:\n"
        "  selector: {matchLabels: {app: web}}\n"
        "  template:\n"
        f"    metadata: {{labels: {labels}}}\n"
        "    spec:\n"
        "      containers: [{name: c, image: i}]\n"
    )
    return head + textwrap.indent(textwrap.dedent(pod_spec), " " * 6)


def pod(pod_spec: str, labels: str | None = "{app: web}") -> str:
    """A bare Pod (validated after the create-time merge of matchLabelKeys)."""
    head = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n"
    if labels is not None:
        head += f"  labels: {labels}\n"
    head += "spec:\n  containers: [{name: c, image: i}]\n"
    return head + textwrap.indent(textwrap.dedent(pod_spec), " " * 2)


def where(findings: list[Finding]) -> list[tuple[str, int | None, int | None, str]]:
    return [(finding.rule, finding.line, finding.column, finding.path) for finding in findings]


def assert_at(finding: Finding, rule: str, text: str, needle: str, path: str, at: str | None = None) -> None:
    """The finding is ``rule``'s, on the line of ``text`` holding ``needle``, in the column where
    ``at`` (default: ``needle``) starts on that line, at field ``path``."""
    line, column = position(text, needle)
    if at is not None:
        column = text.splitlines()[line - 1].index(at) + 1
    assert_found([finding], rule, line, column, path=path)


# -- 1. pod affinity matchLabelKeys across versions ----------------------------------------------

ANTI_MATCH_KEYS = deployment(
    """\
    affinity:
      podAntiAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {app: web}}
            topologyKey: kubernetes.io/hostname
            matchLabelKeys: [pod-template-hash]
    """
)
ANTI_TERM = f"{TEMPLATE}.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"


@pytest.mark.parametrize("version", ["1.27", "1.28"])
def test_pod_affinity_match_label_keys_is_not_a_field_before_1_29(version: str) -> None:
    finding = only(lint_text(ANTI_MATCH_KEYS, kube_version=version))
    assert_at(finding, "field-unavailable", ANTI_MATCH_KEYS, "matchLabelKeys", f"{ANTI_TERM}.matchLabelKeys")
    assert "1.29" in finding.message


@pytest.mark.parametrize("version", ["1.29", "1.30"])
def test_pod_affinity_match_label_keys_is_dropped_while_the_gate_is_alpha(version: str) -> None:
    finding = only(lint_text(ANTI_MATCH_KEYS, kube_version=version))
    assert_at(
        finding, "gated-field-dropped", ANTI_MATCH_KEYS, "matchLabelKeys", f"{ANTI_TERM}.matchLabelKeys"
    )
    assert "MatchLabelKeysInPodAffinity" in finding.message
    assert "alpha" in finding.message


@pytest.mark.parametrize("version", FROM_1_31)
def test_pod_affinity_match_label_keys_is_accepted_from_1_31(version: str) -> None:
    check(ANTI_MATCH_KEYS, kube_version=version)


@pytest.mark.parametrize("version", ["1.31", "1.32"])
def test_pod_affinity_match_label_keys_is_dropped_when_the_beta_gate_is_turned_off(version: str) -> None:
    result = lint_text(
        ANTI_MATCH_KEYS, kube_version=version, feature_gates={"MatchLabelKeysInPodAffinity": False}
    )
    finding = only(result)
    assert (finding.rule, finding.path) == ("gated-field-dropped", f"{ANTI_TERM}.matchLabelKeys")
    assert "MatchLabelKeysInPodAffinity" in finding.message


def test_mismatch_label_keys_is_dropped_with_the_same_gate() -> None:
    text = ANTI_MATCH_KEYS.replace("matchLabelKeys: [pod-template-hash]", "mismatchLabelKeys: [tenant]")
    finding = only(lint_text(text, kube_version="1.30"))
    assert_at(finding, "gated-field-dropped", text, "mismatchLabelKeys", f"{ANTI_TERM}.mismatchLabelKeys")


def test_a_dropped_field_is_not_validated_further() -> None:
    text = ANTI_MATCH_KEYS.replace("[pod-template-hash]", "['-bad-key']")
    # Dropped on 1.30: nothing is left for validation to reject.
    assert [f.rule for f in lint_text(text, kube_version="1.30").findings] == ["gated-field-dropped"]
    # Kept on 1.31: the key is validated as a label key.
    invalid = only(lint_text(text, kube_version="1.31"))
    assert (invalid.rule, invalid.path) == ("api-validation", f"{ANTI_TERM}.matchLabelKeys[0]")


def test_a_dropped_field_is_not_merged_into_a_pods_selector() -> None:
    text = pod(
        """\
        affinity:
          podAntiAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              - labelSelector: {matchLabels: {app: web}}
                topologyKey: kubernetes.io/hostname
                matchLabelKeys: [app]
        """
    )
    assert [f.rule for f in lint_text(text, kube_version="1.30").findings] == ["gated-field-dropped"]
    assert [f.rule for f in lint_text(text, kube_version="1.31").findings] == ["api-validation"]


# -- 2. topology spread matchLabelKeys: legacy and merge regimes --------------------------------

SPREAD = """\
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
    labelSelector: {matchLabels: {app: web}}
    matchLabelKeys: [app]
"""
SPREAD_DEPLOYMENT = deployment(SPREAD)
SPREAD_POD = pod(SPREAD)
SPREAD_WITHOUT_SELECTOR = SPREAD.replace("    labelSelector: {matchLabels: {app: web}}\n", "")
MERGE_GATE = "MatchLabelKeysInPodTopologySpreadSelectorMerge"


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_spread_legacy_regime_rejects_a_key_of_the_selector(version: str) -> None:
    finding = only(lint_text(SPREAD_DEPLOYMENT, kube_version=version))
    assert_at(
        finding,
        "api-validation",
        SPREAD_DEPLOYMENT,
        "matchLabelKeys",
        f"{TEMPLATE}.topologySpreadConstraints[0].matchLabelKeys[0]",
        at="app]",
    )
    assert "exists in both matchLabelKeys and labelSelector" in finding.message


def test_spread_legacy_regime_also_rejects_a_key_of_a_match_expression() -> None:
    text = SPREAD_DEPLOYMENT.replace(
        "{matchLabels: {app: web}}", "{matchExpressions: [{key: app, operator: Exists}]}"
    )
    finding = only(lint_text(text, kube_version="1.33"))
    assert finding.path == f"{TEMPLATE}.topologySpreadConstraints[0].matchLabelKeys[0]"
    assert "exists in both matchLabelKeys and labelSelector" in finding.message


@pytest.mark.parametrize("version", FROM_1_34)
def test_spread_merge_regime_accepts_the_template(version: str) -> None:
    # Templates are validated without the merge: the selector holds "app" once.
    check(SPREAD_DEPLOYMENT, kube_version=version)


@pytest.mark.parametrize("version", FROM_1_34)
def test_spread_merge_regime_rejects_the_pod_that_carries_the_label(version: str) -> None:
    finding = only(lint_text(SPREAD_POD, kube_version=version))
    # upstream appends the index to the constraint's path
    assert_at(
        finding,
        "api-validation",
        SPREAD_POD,
        "matchLabelKeys",
        "spec.topologySpreadConstraints[0][0]",
        at="app]",
    )
    assert "exists in both matchLabelKeys and labelSelector" in finding.message


def test_spread_merge_regime_accepts_a_pod_without_the_label() -> None:
    text = pod(SPREAD, labels="{tier: front}")
    check(text, kube_version="1.37")


def test_spread_merge_gate_off_brings_back_the_legacy_regime() -> None:
    gates = {MERGE_GATE: False}
    for text, path in (
        (SPREAD_DEPLOYMENT, f"{TEMPLATE}.topologySpreadConstraints[0].matchLabelKeys[0]"),
        (SPREAD_POD, "spec.topologySpreadConstraints[0].matchLabelKeys[0]"),
    ):
        finding = only(lint_text(text, kube_version="1.37", feature_gates=gates))
        assert (finding.rule, finding.path) == ("api-validation", path)
        assert "exists in both matchLabelKeys and labelSelector" in finding.message


@pytest.mark.parametrize("version", ["1.33", "1.34", "1.37"])
def test_spread_match_label_keys_without_a_selector_is_forbidden(version: str) -> None:
    text = deployment(SPREAD_WITHOUT_SELECTOR)
    result = lint_text(text, kube_version=version)
    finding = only(result, "api-validation")
    assert_at(
        finding,
        "api-validation",
        text,
        "matchLabelKeys",
        f"{TEMPLATE}.topologySpreadConstraints[0].matchLabelKeys",
    )
    assert "Forbidden" in finding.message and "labelSelector is not set" in finding.message


def test_spread_key_syntax_without_a_selector_is_checked_only_by_the_legacy_regime() -> None:
    text = deployment(SPREAD_WITHOUT_SELECTOR.replace("[app]", "['-bad-key']"))
    constraint = f"{TEMPLATE}.topologySpreadConstraints[0]"
    legacy = findings(lint_text(text, kube_version="1.33"), "api-validation")
    assert sorted(f.path for f in legacy) == [
        f"{constraint}.matchLabelKeys",
        f"{constraint}.matchLabelKeys[0]",
    ]
    merge = findings(lint_text(text, kube_version="1.34"), "api-validation")
    assert [f.path for f in merge] == [f"{constraint}.matchLabelKeys"]


def test_spread_match_label_keys_is_dropped_when_its_gate_is_off() -> None:
    result = lint_text(
        SPREAD_POD, kube_version="1.37", feature_gates={"MatchLabelKeysInPodTopologySpread": False}
    )
    finding = only(result)
    assert (finding.rule, finding.path) == (
        "gated-field-dropped",
        "spec.topologySpreadConstraints[0].matchLabelKeys",
    )


# -- 3. pod affinity: the create-time merge of a bare Pod ---------------------------------------

ANTI_POD_SPEC = """\
affinity:
  podAntiAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: web}}
        topologyKey: kubernetes.io/hostname
        matchLabelKeys: [app]
"""
POD_TERM = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"


def test_pod_affinity_key_already_in_the_selector_rejects_the_pod() -> None:
    text = pod(ANTI_POD_SPEC, labels="{app: web, tenant: a}")
    finding = only(lint_text(text))
    assert_at(finding, "api-validation", text, "matchLabelKeys", f"{POD_TERM}[0]", at="app]")
    assert "exists in both matchLabelKeys and labelSelector" in finding.message


def test_pod_affinity_merge_needs_the_pod_to_carry_the_label() -> None:
    check(pod(ANTI_POD_SPEC, labels="{tenant: a}"))
    check(pod(ANTI_POD_SPEC, labels=None))


def test_pod_affinity_key_not_in_the_selector_is_fine() -> None:
    text = pod(ANTI_POD_SPEC.replace("[app]", "[tenant]"), labels="{app: web, tenant: a}")
    check(text)


def test_pod_affinity_template_is_not_merged() -> None:
    check(deployment(ANTI_POD_SPEC))


def test_pod_affinity_key_in_both_match_and_mismatch_label_keys() -> None:
    spec = ANTI_POD_SPEC.replace(
        "matchLabelKeys: [app]", "matchLabelKeys: [tenant]\n        mismatchLabelKeys: [tenant]"
    )
    text = pod(spec, labels="{app: web}")
    finding = only(lint_text(text))
    assert_at(
        finding, "api-validation", text, " matchLabelKeys", f"{POD_TERM}.matchLabelKeys[0]", at="tenant]"
    )
    assert "exists in both matchLabelKeys and mismatchLabelKeys" in finding.message


def test_pod_affinity_match_label_keys_without_a_selector_is_forbidden() -> None:
    text = pod(
        ANTI_POD_SPEC.replace(
            "      - labelSelector: {matchLabels: {app: web}}\n        topologyKey", "      - topologyKey"
        )
    )
    finding = only(lint_text(text), "api-validation")
    assert finding.path == f"{POD_TERM}.matchLabelKeys"
    assert "labelSelector is not set" in finding.message


# -- 4. node affinity ---------------------------------------------------------------------------

NODE_REQUIRED = f"{TEMPLATE}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"


def node_required(requirement: str, kind: str = "matchExpressions") -> str:
    return deployment(
        f"""\
        affinity:
          nodeAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              nodeSelectorTerms:
                - {kind}:
                    - {requirement}
        """
    )


NEGATIVE_GT = node_required('{key: example.com/cores, operator: Gt, values: ["-5"]}')


@pytest.mark.parametrize("version", ["1.33", "1.34", "1.37"])
def test_required_node_affinity_values_are_label_values_from_1_33(version: str) -> None:
    finding = only(lint_text(NEGATIVE_GT, kube_version=version))
    assert_at(
        finding,
        "api-validation",
        NEGATIVE_GT,
        '"-5"',
        f"{NODE_REQUIRED}.nodeSelectorTerms[0].matchExpressions[0].values[0]",
    )


@pytest.mark.parametrize("version", ["1.27", "1.32"])
def test_required_node_affinity_values_are_not_checked_before_1_33(version: str) -> None:
    check(NEGATIVE_GT, kube_version=version)


@pytest.mark.parametrize("version", ["1.32", "1.33", "1.37"])
def test_preferred_node_affinity_values_are_never_checked(version: str) -> None:
    text = deployment(
        """\
        affinity:
          nodeAffinity:
            preferredDuringSchedulingIgnoredDuringExecution:
              - weight: 10
                preference:
                  matchExpressions:
                    - {key: example.com/cores, operator: Gt, values: ["-5"]}
        """
    )
    check(text, kube_version=version)


def test_node_affinity_gt_takes_exactly_one_value() -> None:
    text = node_required('{key: example.com/cores, operator: Gt, values: ["1", "2"]}')
    finding = only(lint_text(text))
    assert (finding.rule, finding.path) == (
        "api-validation",
        f"{NODE_REQUIRED}.nodeSelectorTerms[0].matchExpressions[0].values",
    )
    assert "Required value" in finding.message and "single value" in finding.message


def test_node_affinity_gt_value_need_not_be_an_integer() -> None:
    # Upstream never checks integer-ness: the term just never matches at schedule time.
    check(node_required('{key: example.com/cores, operator: Lt, values: ["many"]}'))


def test_match_fields_with_another_key_reports_only_the_key() -> None:
    # The value is not a valid node name, but with an unknown key upstream checks no values.
    text = node_required('{key: metadata.namespace, operator: In, values: ["Not_A_Node"]}', "matchFields")
    finding = only(lint_text(text))
    assert_at(
        finding,
        "api-validation",
        text,
        "metadata.namespace",
        f"{NODE_REQUIRED}.nodeSelectorTerms[0].matchFields[0].key",
        at="key:",
    )
    assert "not a valid field selector key" in finding.message


def test_match_fields_metadata_name_values_are_node_names() -> None:
    text = node_required('{key: metadata.name, operator: In, values: ["Not_A_Node"]}', "matchFields")
    finding = only(lint_text(text))
    assert finding.path == f"{NODE_REQUIRED}.nodeSelectorTerms[0].matchFields[0].values[0]"


def test_match_fields_value_count_is_checked_even_with_another_key() -> None:
    # ValidateNodeFieldSelectorRequirement checks the operator and the value count before the key.
    text = node_required('{key: metadata.namespace, operator: In, values: ["a", "b"]}', "matchFields")
    found = sorted(f.path for f in lint_text(text).findings)
    field = f"{NODE_REQUIRED}.nodeSelectorTerms[0].matchFields[0]"
    assert found == [f"{field}.key", f"{field}.values"]


# -- 5. tolerations with Lt / Gt ----------------------------------------------------------------

COMPARISON = "TaintTolerationComparisonOperators"


def toleration(operator: str, value: str) -> str:
    return pod(
        f"""\
        tolerations:
          - key: example.com/cores
            operator: {operator}
            value: {value}
            effect: NoSchedule
        """
    )


@pytest.mark.parametrize("operator", ["Lt", "Gt"])
def test_toleration_comparison_is_outside_the_enumeration_before_1_35(operator: str) -> None:
    text = toleration(operator, '"10"')
    finding = only(lint_text(text, kube_version="1.34"))
    assert_at(finding, "schema", text, "operator:", "spec.tolerations[0].operator")


@pytest.mark.parametrize("version", ["1.35", "1.36", "1.37"])
def test_toleration_comparison_needs_the_gate_from_1_35(version: str) -> None:
    text = toleration("Gt", '"10"')
    finding = only(lint_text(text, kube_version=version))
    assert_at(finding, "api-validation", text, "operator:", "spec.tolerations[0].operator")
    assert "Unsupported value" in finding.message


@pytest.mark.parametrize("value", ['"10"', '"0"', '"-5"'])
def test_toleration_comparison_with_the_gate_accepts_canonical_integers(value: str) -> None:
    text = toleration("Lt", value)
    check(text, kube_version="1.35", feature_gates={COMPARISON: True})


@pytest.mark.parametrize("value", ['"010"', '"abc"', '""', '"+5"'])
def test_toleration_comparison_with_the_gate_rejects_other_values(value: str) -> None:
    text = toleration("Lt", value)
    findings = lint_text(text, kube_version="1.35", feature_gates={COMPARISON: True}).findings
    assert findings, value
    assert {(f.rule, f.line, f.column, f.path) for f in findings} == {
        ("api-validation", *position(text, "value:"), "spec.tolerations[0].value")
    }


def test_toleration_equal_value_is_reported_on_the_operator() -> None:
    # Upstream quirk: an invalid Equal value is reported at .operator, not .value.
    text = toleration("Equal", '"-x-"')
    finding = only(lint_text(text))
    assert (finding.rule, finding.path) == ("api-validation", "spec.tolerations[0].operator")


# -- 6. proposals -------------------------------------------------------------------------------

RDE = "requiredDuringSchedulingRequiredDuringExecution"
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
    finding = only(lint_text(text))
    assert_at(finding, "proposal-field", text, RDE, f"{TEMPLATE}.affinity.nodeAffinity.{RDE}")
    assert "KEP-4328" in finding.message


def test_a_bad_value_inside_a_proposal_field_is_not_reported() -> None:
    text = deployment(RDE_SPEC.replace("operator: In", "operator: Bogus"))
    assert [f.rule for f in lint_text(text).findings] == ["proposal-field"]


def test_an_unknown_field_inside_a_proposal_field_is_not_reported() -> None:
    # The unknown key sits directly in the proposal field's object: the object is moot as a whole.
    text = deployment(
        RDE_SPEC.replace("      nodeSelectorTerms:", "      nodeSelectorTermz: 1\n      nodeSelectorTerms:")
    )
    assert [f.rule for f in lint_text(text).findings] == ["proposal-field"]


def test_gt_in_a_pod_affinity_selector_is_a_proposal_operator() -> None:
    text = deployment(POD_GT_SPEC)
    finding = only(lint_text(text))
    assert_at(finding, "proposal-field", text, "operator: Gt", f"{POD_GT_REQUIREMENT}.operator")


def test_proposals_honoured_accept_both() -> None:
    check(deployment(RDE_SPEC), proposals=True)
    check(deployment(POD_GT_SPEC), proposals=True)


def test_proposals_honoured_validate_required_during_execution_like_the_required_selector() -> None:
    text = deployment(
        f"""\
        affinity:
          nodeAffinity:
            {RDE}:
              nodeSelectorTerms: []
        """
    )
    assert [f.rule for f in lint_text(text).findings] == ["proposal-field"]
    finding = only(lint_text(text, proposals=True))
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
    finding = only(lint_text(text, proposals=True))
    assert (finding.rule, finding.path) == ("api-validation", f"{POD_GT_REQUIREMENT}.values")
    assert "Required value" in finding.message


# -- 7. schema ----------------------------------------------------------------------------------


def test_each_unknown_field_is_its_own_finding_on_its_own_line() -> None:
    text = pod(
        """\
        tolerations:
          - key: example.com/gpu
            operater: Exists
            efect: NoSchedule
        """
    )
    findings = lint_text(text).findings
    assert where(list(findings)) == [
        ("schema", *position(text, "operater"), "spec.tolerations[0].operater"),
        ("schema", *position(text, "efect"), "spec.tolerations[0].efect"),
    ]
    assert 'did you mean "operator"' in findings[0].message
    assert 'did you mean "effect"' in findings[1].message


def test_unknown_field_without_a_close_name_has_no_suggestion() -> None:
    text = pod("affinity:\n  zzzzz: {}\n")
    finding = only(lint_text(text))
    assert (finding.rule, finding.path) == ("schema", "spec.affinity.zzzzz")
    assert "did you mean" not in finding.message


def test_a_type_error_is_not_also_an_enum_error() -> None:
    text = deployment(
        """\
        topologySpreadConstraints:
          - maxSkew: 1
            topologyKey: topology.kubernetes.io/zone
            whenUnsatisfiable: 3
            labelSelector: {matchLabels: {app: web}}
        """
    )
    finding = only(lint_text(text))
    assert_at(
        finding,
        "schema",
        text,
        "whenUnsatisfiable",
        f"{TEMPLATE}.topologySpreadConstraints[0].whenUnsatisfiable",
    )


def test_a_value_outside_the_enumeration() -> None:
    text = deployment(SPREAD.replace("DoNotSchedule", "DoNotSchedul"))
    finding = only(lint_text(text))
    assert (finding.rule, finding.path) == (
        "schema",
        f"{TEMPLATE}.topologySpreadConstraints[0].whenUnsatisfiable",
    )
    assert "Unsupported value" in finding.message


def test_patch_directives_are_not_fields() -> None:
    text = deployment(
        """\
        $setElementOrder/tolerations: [{key: a}]
        affinity:
          $patch: replace
          nodeAffinity:
            $retainKeys: [requiredDuringSchedulingIgnoredDuringExecution]
        tolerations:
          - {key: a, operator: Exists, $patch: delete}
        """
    )
    check(text)


PDB = """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: VALUE
  selector: {matchLabels: {app: web}}
"""


@pytest.mark.parametrize("value", ["null", '"50%"', "2"])
def test_int_or_string_accepts_int_string_and_null(value: str) -> None:
    check(PDB.replace("VALUE", value))


@pytest.mark.parametrize("value", ["[2]", "true"])
def test_int_or_string_rejects_other_types(value: str) -> None:
    finding = only(lint_text(PDB.replace("VALUE", value)))
    assert (finding.rule, finding.line, finding.path) == ("schema", 5, "spec.minAvailable")


def test_kinds_with_an_unknown_api_version_are_not_schema_checked() -> None:
    old = deployment("affinty: {}\ntolerations: [{key: a, operater: Exists}]\n", api_version="apps/v1beta1")
    assert findings(lint_text(old), "schema") == []
    assert len(findings(lint_text(old.replace("apps/v1beta1", "apps/v1")), "schema")) == 2
    custom = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec:\n  affinty: {}\n"
    check(custom)


# -- 8. warnings --------------------------------------------------------------------------------

NULL_SELECTOR = "a null labelSelector results in matching no pod"


def test_null_label_selector_warning_in_pod_affinity_terms() -> None:
    text = deployment(
        """\
        affinity:
          podAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              - topologyKey: kubernetes.io/hostname
          podAntiAffinity:
            preferredDuringSchedulingIgnoredDuringExecution:
              - weight: 10
                podAffinityTerm:
                  topologyKey: kubernetes.io/hostname
                  labelSelector: null
        """
    )
    findings = lint_text(text).findings
    assert {(f.rule, f.path) for f in findings} == {
        (
            "api-warning",
            f"{TEMPLATE}.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector",
        ),
        (
            "api-warning",
            f"{TEMPLATE}.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
            ".podAffinityTerm.labelSelector",
        ),
    }
    assert all(NULL_SELECTOR in f.message for f in findings)


def test_null_label_selector_warning_in_a_spread_constraint() -> None:
    text = pod(
        """\
        topologySpreadConstraints:
          - maxSkew: 1
            topologyKey: topology.kubernetes.io/zone
            whenUnsatisfiable: ScheduleAnyway
        """
    )
    finding = only(lint_text(text))
    assert (finding.rule, finding.path) == ("api-warning", "spec.topologySpreadConstraints[0].labelSelector")
    assert NULL_SELECTOR in finding.message


def test_an_empty_label_selector_is_no_warning() -> None:
    text = pod(
        """\
        topologySpreadConstraints:
          - maxSkew: 1
            topologyKey: topology.kubernetes.io/zone
            whenUnsatisfiable: ScheduleAnyway
            labelSelector: {}
        """
    )
    check(text)


def test_deprecated_label_as_node_selector_key() -> None:
    text = pod("nodeSelector:\n  beta.kubernetes.io/os: linux\n")
    finding = only(lint_text(text))
    assert_at(
        finding, "api-warning", text, "beta.kubernetes.io/os", "spec.nodeSelector[beta.kubernetes.io/os]"
    )
    assert '"kubernetes.io/os"' in finding.message


def test_deprecated_label_as_node_affinity_key() -> None:
    text = node_required("{key: failure-domain.beta.kubernetes.io/zone, operator: In, values: [a]}")
    finding = only(lint_text(text))
    assert_at(
        finding,
        "api-warning",
        text,
        "failure-domain",
        f"{NODE_REQUIRED}.nodeSelectorTerms[0].matchExpressions[0].key",
        at="key:",
    )
    assert "topology.kubernetes.io/zone" in finding.message


def test_deprecated_label_as_spread_topology_key() -> None:
    text = pod(SPREAD.replace("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"))
    finding = only(lint_text(text), "api-warning")
    path = "spec.topologySpreadConstraints[0].topologyKey"
    assert_at(finding, "api-warning", text, "failure-domain", path, at="topologyKey")


def test_deprecated_label_as_pod_affinity_topology_key_is_no_warning() -> None:
    text = deployment(
        ANTI_POD_SPEC.replace("kubernetes.io/hostname", "failure-domain.beta.kubernetes.io/zone")
    )
    check(text)


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
    rules = {finding["rule"] for finding in json.loads(plain.stdout)["findings"]}
    assert rules == {"proposal-field"}


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
