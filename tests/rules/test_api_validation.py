"""The rule ``api-validation`` (kaffinity/rules/api_validation.py): what the API server's validation
refuses, reported at the field with the API server's field path: matchLabelKeys in both regimes
(legacy and merge), pod affinity keys, node affinity values, tolerations.

Upstream: kubernetes/kubernetes ``pkg/apis/core/validation/validation.go``,
``pkg/registry/core/pod/strategy.go`` (the matchLabelKeys merge) and
``pkg/features/kube_features.go``.

The message quotes the API server's error ("exists in both matchLabelKeys and labelSelector",
"Unsupported value"): where a test asserts its words, upstream's wording is the subject.
"""

from __future__ import annotations

import pytest

from kaffinity.config import KUBE_VERSIONS

from ..kit import findings, only, position
from .validation_inputs import (
    ANTI_POD_SPEC,
    NODE_REQUIRED,
    SPREAD,
    SPREAD_POD,
    TEMPLATE,
    assert_at,
    check_schema,
    deployment,
    lint_schema,
    node_required,
    pod,
    toleration,
)

FROM_1_34 = tuple(v for v in KUBE_VERSIONS if int(v.split(".")[1]) >= 34)
SPREAD_DEPLOYMENT = deployment(SPREAD)
SPREAD_WITHOUT_SELECTOR = SPREAD.replace("    labelSelector: {matchLabels: {app: web}}\n", "")
MERGE_GATE = "MatchLabelKeysInPodTopologySpreadSelectorMerge"


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_spread_legacy_regime_rejects_a_key_of_the_selector(version: str) -> None:
    finding = only(lint_schema(SPREAD_DEPLOYMENT, kube_version=version))
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
    finding = only(lint_schema(text, kube_version="1.33"))
    assert_at(
        finding,
        "api-validation",
        text,
        "matchLabelKeys",
        f"{TEMPLATE}.topologySpreadConstraints[0].matchLabelKeys[0]",
        at="app]",
    )
    assert "exists in both matchLabelKeys and labelSelector" in finding.message


@pytest.mark.parametrize("version", FROM_1_34)
def test_spread_merge_regime_accepts_the_template(version: str) -> None:
    # Templates are validated without the merge: the selector holds "app" once.
    check_schema(SPREAD_DEPLOYMENT, kube_version=version)


@pytest.mark.parametrize("version", FROM_1_34)
def test_spread_merge_regime_rejects_the_pod_that_carries_the_label(version: str) -> None:
    finding = only(lint_schema(SPREAD_POD, kube_version=version))
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
    check_schema(text, kube_version="1.37")


def test_spread_merge_gate_off_brings_back_the_legacy_regime() -> None:
    gates = {MERGE_GATE: False}
    for text, path in (
        (SPREAD_DEPLOYMENT, f"{TEMPLATE}.topologySpreadConstraints[0].matchLabelKeys[0]"),
        (SPREAD_POD, "spec.topologySpreadConstraints[0].matchLabelKeys[0]"),
    ):
        finding = only(lint_schema(text, kube_version="1.37", feature_gates=gates))
        assert_at(finding, "api-validation", text, "matchLabelKeys", path, at="app]")
        assert "exists in both matchLabelKeys and labelSelector" in finding.message


@pytest.mark.parametrize("version", ["1.33", "1.34", "1.37"])
def test_spread_match_label_keys_without_a_selector_is_forbidden(version: str) -> None:
    text = deployment(SPREAD_WITHOUT_SELECTOR)
    result = lint_schema(text, kube_version=version)
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
    legacy = findings(lint_schema(text, kube_version="1.33"), "api-validation")
    field, key = position(text, "matchLabelKeys"), position(text, "'-bad-key'")
    assert sorted((f.line, f.column, f.path) for f in legacy) == [
        (*field, f"{constraint}.matchLabelKeys"),
        (*key, f"{constraint}.matchLabelKeys[0]"),
    ]
    merge = findings(lint_schema(text, kube_version="1.34"), "api-validation")
    assert [(f.line, f.column, f.path) for f in merge] == [(*field, f"{constraint}.matchLabelKeys")]


POD_TERM = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"


def test_pod_affinity_key_already_in_the_selector_rejects_the_pod() -> None:
    text = pod(ANTI_POD_SPEC, labels="{app: web, tenant: a}")
    finding = only(lint_schema(text))
    assert_at(finding, "api-validation", text, "matchLabelKeys", f"{POD_TERM}[0]", at="app]")
    assert "exists in both matchLabelKeys and labelSelector" in finding.message


def test_pod_affinity_merge_needs_the_pod_to_carry_the_label() -> None:
    check_schema(pod(ANTI_POD_SPEC, labels="{tenant: a}"))
    check_schema(pod(ANTI_POD_SPEC, labels=None))


def test_pod_affinity_key_not_in_the_selector_is_fine() -> None:
    text = pod(ANTI_POD_SPEC.replace("[app]", "[tenant]"), labels="{app: web, tenant: a}")
    check_schema(text)


def test_pod_affinity_template_is_not_merged() -> None:
    check_schema(deployment(ANTI_POD_SPEC))


def test_pod_affinity_key_in_both_match_and_mismatch_label_keys() -> None:
    spec = ANTI_POD_SPEC.replace(
        "matchLabelKeys: [app]", "matchLabelKeys: [tenant]\n        mismatchLabelKeys: [tenant]"
    )
    text = pod(spec, labels="{app: web}")
    finding = only(lint_schema(text))
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
    finding = only(lint_schema(text), "api-validation")
    assert_at(finding, "api-validation", text, "matchLabelKeys", f"{POD_TERM}.matchLabelKeys")
    assert "labelSelector is not set" in finding.message


NEGATIVE_GT = node_required('{key: example.com/cores, operator: Gt, values: ["-5"]}')


@pytest.mark.parametrize("version", ["1.33", "1.34", "1.37"])
def test_required_node_affinity_values_are_label_values_from_1_33(version: str) -> None:
    finding = only(lint_schema(NEGATIVE_GT, kube_version=version))
    assert_at(
        finding,
        "api-validation",
        NEGATIVE_GT,
        '"-5"',
        f"{NODE_REQUIRED}.nodeSelectorTerms[0].matchExpressions[0].values[0]",
    )


@pytest.mark.parametrize("version", ["1.27", "1.32"])
def test_required_node_affinity_values_are_not_checked_before_1_33(version: str) -> None:
    check_schema(NEGATIVE_GT, kube_version=version)


@pytest.mark.parametrize("version", ["1.32", "1.33", "1.37"])
def test_preferred_node_affinity_values_are_never_refused(version: str) -> None:
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
    if version == "1.32":
        check_schema(text, kube_version=version)
        return
    # from 1.33 (kubernetes#128212) they get a warning (GetWarningsForNodeSelectorTerm with
    # checkLabelValue; found by the oracle, issue 35)
    finding = only(lint_schema(text, kube_version=version))
    path = f"{TEMPLATE}.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
    assert_at(finding, "api-warning", text, '"-5"', f"{path}.preference.matchExpressions[0].values[0]")
    assert finding.message.startswith(f"{path}.preference.matchExpressions[0].values[0]: -5 is invalid, ")


def test_node_affinity_gt_takes_exactly_one_value() -> None:
    text = node_required('{key: example.com/cores, operator: Gt, values: ["1", "2"]}')
    finding = only(lint_schema(text))
    assert_at(
        finding,
        "api-validation",
        text,
        "operator: Gt",
        f"{NODE_REQUIRED}.nodeSelectorTerms[0].matchExpressions[0].values",
        at="values:",
    )
    assert "Required value" in finding.message and "single value" in finding.message


def test_node_affinity_gt_value_need_not_be_an_integer() -> None:
    # Upstream never checks integer-ness: the term just never matches at schedule time.
    check_schema(node_required('{key: example.com/cores, operator: Lt, values: ["many"]}'))


def test_match_fields_with_another_key_reports_only_the_key() -> None:
    # The value is not a valid node name, but with an unknown key upstream checks no values.
    text = node_required('{key: metadata.namespace, operator: In, values: ["Not_A_Node"]}', "matchFields")
    finding = only(lint_schema(text))
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
    finding = only(lint_schema(text))
    assert_at(
        finding,
        "api-validation",
        text,
        "Not_A_Node",
        f"{NODE_REQUIRED}.nodeSelectorTerms[0].matchFields[0].values[0]",
        at='"Not_A_Node"',
    )


def test_match_fields_value_count_is_checked_even_with_another_key() -> None:
    # ValidateNodeFieldSelectorRequirement checks the operator and the value count before the key.
    text = node_required('{key: metadata.namespace, operator: In, values: ["a", "b"]}', "matchFields")
    found = sorted((f.line, f.column, f.path) for f in lint_schema(text).findings)
    field = f"{NODE_REQUIRED}.nodeSelectorTerms[0].matchFields[0]"
    assert found == [
        (*position(text, "key: metadata.namespace"), f"{field}.key"),
        (*position(text, "values:"), f"{field}.values"),
    ]


# -- 5. tolerations with Lt / Gt ----------------------------------------------------------------

COMPARISON = "TaintTolerationComparisonOperators"


@pytest.mark.parametrize("version", ["1.35", "1.36", "1.37"])
def test_toleration_comparison_needs_the_gate_from_1_35(version: str) -> None:
    text = toleration("Gt", '"10"')
    finding = only(lint_schema(text, kube_version=version))
    assert_at(finding, "api-validation", text, "operator:", "spec.tolerations[0].operator")
    assert "Unsupported value" in finding.message


@pytest.mark.parametrize("value", ['"10"', '"0"', '"-5"'])
def test_toleration_comparison_with_the_gate_accepts_canonical_integers(value: str) -> None:
    text = toleration("Lt", value)
    check_schema(text, kube_version="1.35", feature_gates={COMPARISON: True})


@pytest.mark.parametrize("value", ['"010"', '"abc"', '""', '"+5"'])
def test_toleration_comparison_with_the_gate_rejects_other_values(value: str) -> None:
    text = toleration("Lt", value)
    findings = lint_schema(text, kube_version="1.35", feature_gates={COMPARISON: True}).findings
    assert findings, value
    assert {(f.rule, f.line, f.column, f.path) for f in findings} == {
        ("api-validation", *position(text, "value:"), "spec.tolerations[0].value")
    }


def test_toleration_equal_value_is_reported_on_the_operator() -> None:
    # Upstream quirk: an invalid Equal value is reported at .operator, not .value.
    text = toleration("Equal", '"-x-"')
    finding = only(lint_schema(text))
    assert_at(finding, "api-validation", text, "operator:", "spec.tolerations[0].operator")


# -- what the oracle found (tests/differential/test_validate.py, issue 35) -----------------------
#
# Each case is kube-apiserver 1.37's answer (the oracle's validate op: the kind's registry
# strategy), asserted here without the oracle: the finding's place and the field it names.

DAEMONSET = """\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: c, image: i}]
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
"""
ROLLING = "spec.updateStrategy.rollingUpdate"


@pytest.mark.parametrize(
    ("rolling", "needle", "path", "reason"),
    [
        # ValidateRollingUpdateDaemonSet: exactly one of the two is non-zero
        ("maxSurge: 1\n      maxUnavailable: 1", "maxSurge", f"{ROLLING}.maxSurge", "Invalid value"),
        # maxUnavailable defaults to 1 (SetDefaults_DaemonSet): maxSurge alone is refused
        ("maxSurge: 25%", "maxSurge", f"{ROLLING}.maxSurge", "Invalid value"),
        (
            "maxSurge: 0\n      maxUnavailable: 0",
            "maxUnavailable",
            f"{ROLLING}.maxUnavailable",
            "Required value",
        ),
        (
            "maxSurge: 0\n      maxUnavailable: 150%",
            "maxUnavailable",
            f"{ROLLING}.maxUnavailable",
            "Invalid value",
        ),
        ("maxSurge: 1\n      maxUnavailable: 0%", None, None, None),
    ],
)
def test_daemonset_rolling_update(
    rolling: str, needle: str | None, path: str | None, reason: str | None
) -> None:
    text = DAEMONSET + f"      {rolling}\n"
    if needle is None:
        check_schema(text)
        return
    finding = only(lint_schema(text))
    assert_at(finding, "api-validation", text, f"{needle}:", path, at=needle)
    assert finding.message.startswith(reason)


STRATEGY = "spec.strategy.rollingUpdate"


def _deployment_strategy(strategy: str) -> str:
    return deployment("").replace("spec:\n  selector:", f"spec:\n  strategy: {strategy}\n  selector:", 1)


@pytest.mark.parametrize(
    ("strategy", "needle", "path", "reason"),
    [
        # ValidateRollingUpdateDeployment: both zero
        ("{rollingUpdate: {maxSurge: 0, maxUnavailable: 0%}}", "maxUnavailable", f"{STRATEGY}.maxUnavailable",
         "Invalid value"),
        # ValidateDeploymentStrategy: Recreate takes no rollingUpdate
        ("{type: Recreate, rollingUpdate: {}}", "rollingUpdate", STRATEGY, "Forbidden"),
        # IsNotMoreThan100Percent: maxUnavailable only
        ("{rollingUpdate: {maxUnavailable: 101%}}", "maxUnavailable", f"{STRATEGY}.maxUnavailable",
         "Invalid value"),
    ],
)  # fmt: skip
def test_deployment_rolling_update(strategy: str, needle: str, path: str, reason: str) -> None:
    text = _deployment_strategy(strategy)
    finding = only(lint_schema(text))
    assert_at(finding, "api-validation", text, needle, path)
    assert finding.message.startswith(reason)


def test_deployment_surge_over_100_percent_is_accepted() -> None:
    check_schema(_deployment_strategy("{rollingUpdate: {maxSurge: 200%}}"))


def test_selector_that_does_not_match_the_template_labels() -> None:
    # ValidatePodTemplateSpecForReplicaSet, at the template's labels
    text = deployment("", labels="{app: api}")
    finding = only(lint_schema(text))
    assert_at(
        finding, "api-validation", text, "labels: {app: api}", "spec.template.metadata.labels", at="labels"
    )
    assert finding.message == 'Invalid value: {"app":"api"}: `selector` does not match template `labels`'


def test_empty_selector_of_a_deployment() -> None:
    text = deployment("").replace("selector: {matchLabels: {app: web}}", "selector: {}")
    finding = only(lint_schema(text))
    assert_at(finding, "api-validation", text, "selector", "spec.selector")
    assert finding.message.endswith("empty selector is invalid for deployment")


def test_empty_selector_of_a_daemonset() -> None:
    # ValidateDaemonSetSpec: refused as empty; it matches every label set, so no mismatch
    text = DAEMONSET.replace("selector: {matchLabels: {app: agent}}", "selector: {}").replace(
        "  updateStrategy:\n    type: RollingUpdate\n    rollingUpdate:\n", ""
    )
    finding = only(lint_schema(text))
    assert_at(finding, "api-validation", text, "selector", "spec.selector")
    assert finding.message.endswith("empty selector is invalid for daemonset")


def test_invalid_selector_leaves_the_template_unvalidated() -> None:
    # ValidateDeploymentSpec validates the template only when LabelSelectorAsSelector accepts the
    # selector: a bad toleration is not reported with it
    text = deployment("tolerations: [{key: a, operator: Exists, value: x}]").replace(
        "selector: {matchLabels: {app: web}}", "selector: {matchLabels: {-app: web}}"
    )
    result = lint_schema(text)
    assert sorted(f.path for f in findings(result, "api-validation")) == [
        "spec.selector",
        "spec.selector.matchLabels",
    ]


def test_template_label_errors_name_the_template_labels() -> None:
    # ValidatePodTemplateSpec: fldPath.Child("labels"), without "metadata"
    text = deployment("", labels="{app: web, tier: -x}")
    finding = only(lint_schema(text))
    assert_at(finding, "api-validation", text, "tier: -x", "spec.template.labels")


def test_replication_controller_selector_must_match() -> None:
    text = """\
apiVersion: v1
kind: ReplicationController
metadata: {name: web}
spec:
  selector: {app: web}
  template:
    metadata:
      labels: {app: api}
    spec:
      containers: [{name: c, image: i}]
"""
    finding = only(lint_schema(text))
    assert_at(
        finding, "api-validation", text, "labels: {app: api}", "spec.template.metadata.labels", at="labels"
    )


RESOURCES = f"{TEMPLATE}.containers[0].resources"


def _resources(resources: str) -> str:
    return deployment("").replace(
        "containers: [{name: c, image: i}]", f"containers: [{{name: c, image: i, resources: {resources}}}]"
    )


@pytest.mark.parametrize(
    ("resources", "path", "message"),
    [
        # validateResourceRequirements: at the requests map, not the key
        ("{requests: {memory: 300Mi}, limits: {memory: 250Mi}}", f"{RESOURCES}.requests",
         'Invalid value: "300Mi": must be less than or equal to memory limit of 250Mi'),
        # an extended resource cannot be overcommitted: its request equals its limit...
        ("{requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 2}}", f"{RESOURCES}.requests",
         'Invalid value: "1": must be equal to nvidia.com/gpu limit of 2'),
        # ... and needs one (a template's requests do not default to its limits)
        ("{requests: {nvidia.com/gpu: 1}}", f"{RESOURCES}.limits",
         "Required value: Limit must be set for non overcommitable resources"),
        # ValidateResourceQuantityValue
        ("{requests: {cpu: -1}}", f"{RESOURCES}.requests[cpu]",
         'Invalid value: "-1": must be greater than or equal to 0'),
        ("{limits: {nvidia.com/gpu: 500m}}", f"{RESOURCES}.limits[nvidia.com/gpu]",
         'Invalid value: "500m": must be an integer'),
    ],
)  # fmt: skip
def test_container_resource_requirements(resources: str, path: str, message: str) -> None:
    text = _resources(resources)
    finding = only(lint_schema(text))
    assert finding.rule == "api-validation"
    assert (finding.path, finding.message) == (path, message)
    assert finding.line == position(text, "resources")[0]


def test_a_pod_requests_default_to_its_limits() -> None:
    # SetDefaults_Pod (not a template): the GPU request is the limit
    check_schema(
        pod("").replace(
            "containers: [{name: c, image: i}]",
            "containers: [{name: c, image: i, resources: {limits: {nvidia.com/gpu: 1}}}]",
        )
    )


BUDGET = """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 50%
  maxUnavailable: 150%
  selector: {matchLabels: {app: web}}
"""


@pytest.mark.parametrize(
    ("version", "spec", "percent"),
    [
        (
            "1.33",
            "policy.PodDisruptionBudgetSpec{...}",
            'intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}',
        ),
        # from 1.34 field.Error prints such values as JSON (kubernetes#132314): the oracle's words
        (
            "1.37",
            '{"MinAvailable":"50%","Selector":{"matchLabels":{"app":"web"}},"MaxUnavailable":"150%",'
            '"UnhealthyPodEvictionPolicy":null}',
            '"150%"',
        ),
    ],
)
def test_budget_values_in_the_words_of_the_version(version: str, spec: str, percent: str) -> None:
    result = lint_schema(BUDGET, kube_version=version)
    messages = {f.path: f.message for f in findings(result, "api-validation")}
    assert messages == {
        "spec": f"Invalid value: {spec}: minAvailable and maxUnavailable cannot be both set",
        "spec.maxUnavailable": f"Invalid value: {percent}: must not be greater than 100%",
    }
