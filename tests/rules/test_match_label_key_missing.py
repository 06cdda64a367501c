"""The rule ``match-label-key-missing`` (kaffinity/rules/match_label_key_missing.py): a matchLabelKeys
key the pods do not carry, which the API server's merge skips (KEP-3633), reported at the key;
quiet when the field itself is dropped (gated-field-dropped says it).
"""

from __future__ import annotations

from ..kit import position
from .expand_inputs import KEP_3633_STORY_1, rules_of


def test_missing_key_not_reported_when_the_field_is_dropped() -> None:
    text = KEP_3633_STORY_1.replace("- pod-template-hash", "- tenant")
    assert rules_of(text, kube_version="1.30") == []  # gated-field-dropped says it
    assert rules_of(text, kube_version="1.31") == [
        ("match-label-key-missing", *position(text, "tenant", 1, after="- tenant"))
    ]
    # The fixed variant: pod-template-hash, which the Deployment controller sets on every pod.
    assert rules_of(KEP_3633_STORY_1, kube_version="1.31") == []
