"""The rule ``controller-label-unavailable`` (kaffinity/rules/controller_label_unavailable.py): a
matchLabelKeys key naming a label the workload's controller does not set (or not yet on the
chosen version: apps.kubernetes.io/pod-index from 1.28, PodIndexLabel), reported at the key with
the right label suggested.
"""

from __future__ import annotations

from ..kit import lint_text, position
from .expand_inputs import KEP_3633_STORY_1, SPREAD_KEY_IN_SELECTOR, rules_of


def test_controller_label_unavailable_suggests_the_right_label() -> None:
    text = KEP_3633_STORY_1.replace("kind: Deployment", "kind: StatefulSet")
    (finding,) = lint_text(text, select=("controller-label-unavailable",)).findings
    assert finding.fix is not None and "controller-revision-hash" in finding.fix
    # apps.kubernetes.io/pod-index arrived in 1.28 (PodIndexLabel); spread keys exist since 1.27.
    spread = SPREAD_KEY_IN_SELECTOR.replace("kind: Deployment", "kind: StatefulSet")
    pod_index = spread.replace("[app]", "[apps.kubernetes.io/pod-index]")
    assert rules_of(pod_index, kube_version="1.27") == [
        ("controller-label-unavailable", *position(pod_index, "apps.kubernetes.io/pod-index"))
    ]
    assert rules_of(pod_index, kube_version="1.28") == []
