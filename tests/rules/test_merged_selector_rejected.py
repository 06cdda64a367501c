"""The rule ``merged-selector-rejected`` (kaffinity/rules/merged_selector_rejected.py): from 1.34 the
API server accepts a template whose topology spread matchLabelKeys repeat a key of the selector
and refuses every pod after its merge (``pkg/registry/core/pod/strategy.go``,
MatchLabelKeysInPodTopologySpreadSelectorMerge); reported at the key.
"""

from __future__ import annotations

import pytest

from ..kit import keys, lint_text, position
from .expand_inputs import SPREAD_KEY_IN_SELECTOR, rules_of


@pytest.mark.parametrize(
    ("version", "rule"), [("1.33", "api-validation"), ("1.34", "merged-selector-rejected")]
)
def test_spread_key_in_selector_rejected_where_the_merge_happens(version: str, rule: str) -> None:
    """Up to 1.33 the template itself is refused (legacy check); from 1.34 the template is
    accepted and every pod is refused after kube-apiserver's merge."""
    result = lint_text(SPREAD_KEY_IN_SELECTOR, kube_version=version, select=("schema", "expansion"))
    assert keys(result) == [(rule, *position(SPREAD_KEY_IN_SELECTOR, "app]"))]


def test_merged_selector_rejected_needs_the_pod_to_carry_the_key() -> None:
    text = SPREAD_KEY_IN_SELECTOR.replace("matchLabelKeys: [app]", "matchLabelKeys: [tier]")
    # The fixed variant: a key the pods do not carry is not merged (match-label-key-missing says so).
    assert rules_of(text) == [("match-label-key-missing", *position(text, "tier]"))]
