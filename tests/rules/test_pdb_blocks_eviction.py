"""The rule ``pdb-blocks-eviction`` (kaffinity/rules/pdb_blocks_eviction.py): a
PodDisruptionBudget that lets no pod be evicted (a drain waits forever), reported at its
minAvailable or maxUnavailable.

Upstream: the eviction API (pkg/registry/core/pod/storage/eviction.go) and the disruption
controller's disruptionsAllowed (pkg/controller/disruption). Budgets the API server refuses are
api-validation's (tests/rules/test_api_validation.py, tests/test_false_positives.py).

Each failing example is asserted as (rule, line, column) with its severity and data path; each
passing example (the fixed variant) finds nothing.
"""

from __future__ import annotations

import pytest

from ..kit import EXAMPLES, ExampleFindings, assert_example

RULE = "pdb-blocks-eviction"
FOLDER = EXAMPLES / RULE
#: Where a finding starts (a needle and its occurrence), its severity and its data path.
Found = ExampleFindings


#: Each failing example: for each finding, the text it starts at (the occurrence of it, or the
#: only one), its severity and data path.
FAILING = [
    (
        "fail.yaml",
        [
            ("minAvailable: 1 #", None, "warning", "spec.minAvailable"),
            ("maxUnavailable: 0 #", None, "warning", "spec.maxUnavailable"),
            ("minAvailable: 80% #", None, "warning", "spec.minAvailable"),
            ("maxUnavailable: 1 #", None, "warning", "spec.maxUnavailable"),
        ],
    ),
    (
        "fail-cluster.yaml",
        [
            ("maxUnavailable: 1 #", None, "warning", "spec.maxUnavailable"),
            ("maxUnavailable: 50% #", None, "warning", "spec.maxUnavailable"),
        ],
    ),
]


@pytest.mark.parametrize(("name", "found"), FAILING, ids=[name for name, _ in FAILING])
def test_pdb_blocks_eviction_in_the_failing_example(name: str, found: Found) -> None:
    assert_example(FOLDER / name, RULE, found)


@pytest.mark.parametrize("name", ["pass.yaml", "pass-cluster.yaml"])
def test_pdb_blocks_eviction_not_in_the_passing_example(name: str) -> None:
    assert_example(FOLDER / name, RULE, [])
