"""The rule ``unused-suppression`` (kaffinity/rules/unused_suppression.py): a suppression
(the ``kaffinity.io/ignore`` annotation or a ``# kaffinity: ignore[...]`` comment) that hides
nothing, reported at the annotation or the comment.

Each failing example is asserted as (rule, line, column) with its severity and data path; each
passing example (the fixed variant) finds nothing.
"""

from __future__ import annotations

import pytest

from ..kit import EXAMPLES, ExampleFindings, assert_example

RULE = "unused-suppression"
FOLDER = EXAMPLES / RULE
#: Where a finding starts (a needle and its occurrence), its severity and its data path.
Found = ExampleFindings


#: Each failing example: for each finding, the text it starts at (the occurrence of it, or the
#: only one), its severity and data path.
FAILING = [
    (
        "fail.yaml",
        [
            ("kaffinity.io/ignore:", None, "info", "metadata.annotations[kaffinity.io/ignore]"),
            ("# kaffinity: ignore[parse-error]", None, "info", ""),
        ],
    ),
]


@pytest.mark.parametrize(("name", "found"), FAILING, ids=[name for name, _ in FAILING])
def test_unused_suppression_in_the_failing_example(name: str, found: Found) -> None:
    assert_example(FOLDER / name, RULE, found)


@pytest.mark.parametrize("name", ["pass.yaml"])
def test_unused_suppression_not_in_the_passing_example(name: str) -> None:
    assert_example(FOLDER / name, RULE, [])
