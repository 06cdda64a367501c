"""The rule ``gated-field-dropped`` (kaffinity/rules/gated_field_dropped.py): a field whose feature gate
is off on the chosen version is dropped by the API server, reported at the field; a dropped field
is neither validated further nor merged into a pod's selector.

Upstream: kubernetes/kubernetes ``pkg/api/pod/util.go`` (dropDisabledFields) and
``pkg/features/kube_features.go`` (MatchLabelKeysInPodAffinity,
MatchLabelKeysInPodTopologySpread).

The gate's name and stage appear only in the message: they are asserted on its words.
"""

from __future__ import annotations

import pytest

from kaffinity.config import KUBE_VERSIONS

from ..kit import keys, only, position
from .validation_inputs import (
    ANTI_MATCH_KEYS,
    ANTI_TERM,
    SPREAD_POD,
    assert_at,
    check_schema,
    lint_schema,
    pod,
)

PRE_1_31 = ("1.27", "1.28", "1.29", "1.30")
FROM_1_31 = tuple(v for v in KUBE_VERSIONS if v not in PRE_1_31)


@pytest.mark.parametrize("version", ["1.29", "1.30"])
def test_pod_affinity_match_label_keys_is_dropped_while_the_gate_is_alpha(version: str) -> None:
    finding = only(lint_schema(ANTI_MATCH_KEYS, kube_version=version))
    assert_at(
        finding, "gated-field-dropped", ANTI_MATCH_KEYS, "matchLabelKeys", f"{ANTI_TERM}.matchLabelKeys"
    )
    assert "MatchLabelKeysInPodAffinity" in finding.message
    assert "alpha" in finding.message


@pytest.mark.parametrize("version", FROM_1_31)
def test_pod_affinity_match_label_keys_is_accepted_from_1_31(version: str) -> None:
    check_schema(ANTI_MATCH_KEYS, kube_version=version)


@pytest.mark.parametrize("version", ["1.31", "1.32"])
def test_pod_affinity_match_label_keys_is_dropped_when_the_beta_gate_is_turned_off(version: str) -> None:
    result = lint_schema(
        ANTI_MATCH_KEYS, kube_version=version, feature_gates={"MatchLabelKeysInPodAffinity": False}
    )
    finding = only(result)
    assert_at(
        finding, "gated-field-dropped", ANTI_MATCH_KEYS, "matchLabelKeys", f"{ANTI_TERM}.matchLabelKeys"
    )
    assert "MatchLabelKeysInPodAffinity" in finding.message


def test_mismatch_label_keys_is_dropped_with_the_same_gate() -> None:
    text = ANTI_MATCH_KEYS.replace("matchLabelKeys: [pod-template-hash]", "mismatchLabelKeys: [tenant]")
    finding = only(lint_schema(text, kube_version="1.30"))
    assert_at(finding, "gated-field-dropped", text, "mismatchLabelKeys", f"{ANTI_TERM}.mismatchLabelKeys")


def test_a_dropped_field_is_not_validated_further() -> None:
    text = ANTI_MATCH_KEYS.replace("[pod-template-hash]", "['-bad-key']")
    # Dropped on 1.30: nothing is left for validation to reject.
    field = position(text, "matchLabelKeys")
    assert keys(lint_schema(text, kube_version="1.30")) == [("gated-field-dropped", *field)]
    # Kept on 1.31: the key is validated as a label key.
    invalid = only(lint_schema(text, kube_version="1.31"))
    assert_at(
        invalid, "api-validation", text, "matchLabelKeys", f"{ANTI_TERM}.matchLabelKeys[0]", at="'-bad-key'"
    )


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
    assert keys(lint_schema(text, kube_version="1.30")) == [
        ("gated-field-dropped", *position(text, "matchLabelKeys"))
    ]
    # Kept on 1.31 and merged: the key is in the selector already.
    assert keys(lint_schema(text, kube_version="1.31")) == [("api-validation", *position(text, "app]"))]


def test_spread_match_label_keys_is_dropped_when_its_gate_is_off() -> None:
    result = lint_schema(
        SPREAD_POD, kube_version="1.37", feature_gates={"MatchLabelKeysInPodTopologySpread": False}
    )
    finding = only(result)
    assert_at(
        finding,
        "gated-field-dropped",
        SPREAD_POD,
        "matchLabelKeys",
        "spec.topologySpreadConstraints[0].matchLabelKeys",
    )
