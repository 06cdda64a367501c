"""The rule ``field-unavailable`` (kaffinity/rules/field_unavailable.py): a field the chosen Kubernetes
version does not have yet, reported at the field with its data path.

Upstream: kubernetes/kubernetes ``pkg/api/pod/util.go`` (dropDisabledFields) and
``pkg/features/kube_features.go`` (when each field came).

The version the field arrives in exists only in the message: it is asserted on its words.
"""

from __future__ import annotations

import pytest

from ..kit import keys, only, position
from .validation_inputs import ANTI_MATCH_KEYS, ANTI_TERM, assert_at, lint_schema


@pytest.mark.parametrize("version", ["1.27", "1.28"])
def test_pod_affinity_match_label_keys_is_not_a_field_before_1_29(version: str) -> None:
    finding = only(lint_schema(ANTI_MATCH_KEYS, kube_version=version))
    assert_at(finding, "field-unavailable", ANTI_MATCH_KEYS, "matchLabelKeys", f"{ANTI_TERM}.matchLabelKeys")
    assert "1.29" in finding.message


@pytest.mark.parametrize("version", ["1.29", "1.31"])
def test_pod_affinity_match_label_keys_is_a_field_from_1_29(version: str) -> None:
    """The fixed variant: from 1.29 the field exists (dropped by its gate on 1.29-1.30, which
    gated-field-dropped says; kept from 1.31), so field-unavailable says nothing."""
    result = lint_schema(ANTI_MATCH_KEYS, kube_version=version)
    dropped = [("gated-field-dropped", *position(ANTI_MATCH_KEYS, "matchLabelKeys"))]
    assert keys(result) == (dropped if version == "1.29" else [])
