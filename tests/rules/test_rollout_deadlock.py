"""The rule ``rollout-deadlock`` (kaffinity/rules/rollout_deadlock.py): a rolling update whose new
pod can never be placed while the old ones hold their nodes, reported as an error at what blocks it
(the required anti-affinity term, the containers' requests, the strategy).

Upstream: the Deployment controller's rolling update (pkg/controller/deployment/rolling.go,
reconcileNewReplicaSet / reconcileOldReplicaSets), the DaemonSet's maxSurge and the StatefulSet
controller. More cases are in tests/test_rollout.py.

Each failing example is asserted as (rule, line, column) with its severity and data path; each
passing example (the fixed variant) finds nothing.
"""

from __future__ import annotations

import pytest

from ..kit import EXAMPLES, ExampleFindings, assert_example

RULE = "rollout-deadlock"
FOLDER = EXAMPLES / RULE
#: Where a finding starts (a needle and its occurrence), its severity and its data path.
Found = ExampleFindings


#: Each failing example: for each finding, the text it starts at (the occurrence of it, or the
#: only one), its severity and data path.
FAILING = [
    (
        "fail.yaml",
        [
            (
                "labelSelector: # expect",
                None,
                "error",
                "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]",
            ),
        ],
    ),
    (
        "fail-no-room.yaml",
        [
            ("containers:", None, "error", "spec.template.spec.containers"),
        ],
    ),
    (
        "fail-removed-affinity.yaml",
        [
            ("strategy:", None, "error", "spec.strategy"),
        ],
    ),
    (
        "fail-statefulset.yaml",
        [
            (
                "labelSelector: # expect",
                None,
                "error",
                "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]",
            ),
        ],
    ),
]


@pytest.mark.parametrize(("name", "found"), FAILING, ids=[name for name, _ in FAILING])
def test_rollout_deadlock_in_the_failing_example(name: str, found: Found) -> None:
    assert_example(FOLDER / name, RULE, found, others=True)


@pytest.mark.parametrize("name", ["pass.yaml", "pass-in-place.yaml"])
def test_rollout_deadlock_not_in_the_passing_example(name: str) -> None:
    assert_example(FOLDER / name, RULE, [])
