"""The rule ``needs-scale-up`` (kaffinity/rules/needs_scale_up.py): pods that stay Pending until
the cluster autoscaler (or Karpenter) adds a node, reported as info at ``spec.replicas``.

Upstream: kubernetes/autoscaler cluster-autoscaler's scale-up simulation; Karpenter's
NodePools. More cases are in tests/test_postfilter.py.

Each failing example is asserted as (rule, line, column) with its severity and data path; each
passing example (the fixed variant) finds nothing.
"""

from __future__ import annotations

import pytest

from ..kit import EXAMPLES, assert_found, example_settings, keys, lint_paths, position

RULE = "needs-scale-up"
FOLDER = EXAMPLES / RULE
#: Where a finding starts (a needle and its occurrence), its severity and its data path.
Found = list[tuple[str, int | None, str, str]]


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
    path = FOLDER / name
    text = path.read_text(encoding="utf-8")
    result = lint_paths(path, **example_settings(path))
    at = [position(text, needle, occurrence) for needle, occurrence, _, _ in found]
    assert [key for key in keys(result) if key[0] == RULE] == [(RULE, *where) for where in at]
    for where, (_, _, severity, data_path) in zip(at, found, strict=True):
        assert_found(result, RULE, *where, severity=severity, path=data_path)


@pytest.mark.parametrize("name", ["pass.yaml", "pass-karpenter.yaml"])
def test_needs_scale_up_not_in_the_passing_example(name: str) -> None:
    path = FOLDER / name
    assert keys(lint_paths(path, **example_settings(path))) == []
