"""The rule ``needs-preemption`` (kaffinity/rules/needs_preemption.py): a pod that schedules only
by preempting lower-priority pods, reported at its priorityClassName.

Upstream: kube-scheduler's DefaultPreemption PostFilter plugin (pkg/scheduler/framework/plugins/
defaultpreemption). More cases are in tests/test_postfilter.py and
tests/test_preemption_upstream.py.

Each failing example is asserted as (rule, line, column) with its severity and data path; each
passing example (the fixed variant) finds nothing.
"""

from __future__ import annotations

import pytest

from ..kit import EXAMPLES, ExampleFindings, assert_example

RULE = "needs-preemption"
FOLDER = EXAMPLES / RULE
#: Where a finding starts (a needle and its occurrence), its severity and its data path.
Found = ExampleFindings


#: Each failing example: for each finding, the text it starts at (the occurrence of it, or the
#: only one), its severity and data path.
FAILING = [
    (
        "fail.yaml",
        [
            ("priorityClassName:", None, "warning", "spec.template.spec.priorityClassName"),
        ],
    ),
]


@pytest.mark.parametrize(("name", "found"), FAILING, ids=[name for name, _ in FAILING])
def test_needs_preemption_in_the_failing_example(name: str, found: Found) -> None:
    assert_example(FOLDER / name, RULE, found)


@pytest.mark.parametrize("name", ["pass.yaml"])
def test_needs_preemption_not_in_the_passing_example(name: str) -> None:
    assert_example(FOLDER / name, RULE, [])
