"""The rule ``needs-scale-up`` (kaffinity/rules/needs_scale_up.py): pods that stay Pending until
the cluster autoscaler (or Karpenter) adds a node, reported as info at ``spec.replicas``.

Upstream: kubernetes/autoscaler cluster-autoscaler's scale-up simulation; Karpenter's
NodePools. More cases are in tests/test_postfilter.py.

Each failing example is asserted as (rule, line, column) with its severity and data path; each
passing example (the fixed variant) finds nothing.
"""

from __future__ import annotations

import pytest

from ..kit import EXAMPLES, ExampleFindings, assert_example

RULE = "needs-scale-up"
FOLDER = EXAMPLES / RULE
#: Where a finding starts (a needle and its occurrence), its severity and its data path.
Found = ExampleFindings


#: Each failing example: for each finding, the text it starts at (the occurrence of it, or the
#: only one), its severity and data path.
FAILING = [
    (
        "fail.yaml",
        [
            ("replicas: 5", None, "info", "spec.replicas"),
        ],
    ),
    (
        "fail-karpenter.yaml",
        [
            ("replicas: 5", None, "info", "spec.replicas"),
        ],
    ),
]


@pytest.mark.parametrize(("name", "found"), FAILING, ids=[name for name, _ in FAILING])
def test_needs_scale_up_in_the_failing_example(name: str, found: Found) -> None:
    assert_example(FOLDER / name, RULE, found, others=True)


@pytest.mark.parametrize("name", ["pass.yaml", "pass-karpenter.yaml"])
def test_needs_scale_up_not_in_the_passing_example(name: str) -> None:
    assert_example(FOLDER / name, RULE, [])
