"""The rule ``unused-suppression`` (kaffinity/rules/unused_suppression.py): a suppression
(the ``kaffinity.io/ignore`` annotation or a ``# kaffinity: ignore[...]`` comment) that hides
nothing, reported at the annotation or the comment.

Each failing example is asserted as (rule, line, column) with its severity and data path; each
passing example (the fixed variant) finds nothing.
"""

from __future__ import annotations

import pytest

from ..kit import EXAMPLES, assert_found, example_settings, keys, lint_paths, position

RULE = "unused-suppression"
FOLDER = EXAMPLES / RULE
#: Where a finding starts (a needle and its occurrence), its severity and its data path.
Found = list[tuple[str, int | None, str, str]]


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
    path = FOLDER / name
    text = path.read_text(encoding="utf-8")
    result = lint_paths(path, **example_settings(path))
    at = [position(text, needle, occurrence) for needle, occurrence, _, _ in found]
    assert keys(result) == [(RULE, *where) for where in at]
    for where, (_, _, severity, data_path) in zip(at, found, strict=True):
        assert_found(result, RULE, *where, severity=severity, path=data_path)


@pytest.mark.parametrize("name", ["pass.yaml"])
def test_unused_suppression_not_in_the_passing_example(name: str) -> None:
    path = FOLDER / name
    assert keys(lint_paths(path, **example_settings(path))) == []
