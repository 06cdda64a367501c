"""The rule ``parse-error`` (kaffinity/rules/parse_error.py): a file kubectl cannot read (YAML
that does not parse, a duplicate key), reported where the parser stops, as an error.

Upstream: sigs.k8s.io/yaml over go-yaml v2 (kubectl's reader; tests/test_goyaml.py), which
refuses duplicate keys. More cases (loading, limits, hostile inputs) are in tests/test_loader.py
and tests/test_hostile.py.

Each failing example is asserted as (rule, line, column) with its severity and data path; each
passing example (the fixed variant) finds nothing.
"""

from __future__ import annotations

import pytest

from ..kit import EXAMPLES, assert_found, example_settings, keys, lint_paths, position

RULE = "parse-error"
FOLDER = EXAMPLES / RULE
#: Where a finding starts (a needle and its occurrence), its severity and its data path.
Found = list[tuple[str, int | None, str, str]]


#: Each failing example: for each finding, the text it starts at (the occurrence of it, or the
#: only one), its severity and data path.
FAILING = [
    (
        "fail.yaml",
        [
            (":  # expect", None, "error", ""),
        ],
    ),
    (
        "fail-duplicate-key.yaml",
        [
            ("selector:  # expect", None, "error", ""),
        ],
    ),
]


@pytest.mark.parametrize(("name", "found"), FAILING, ids=[name for name, _ in FAILING])
def test_parse_error_in_the_failing_example(name: str, found: Found) -> None:
    path = FOLDER / name
    text = path.read_text(encoding="utf-8")
    result = lint_paths(path, **example_settings(path))
    at = [position(text, needle, occurrence) for needle, occurrence, _, _ in found]
    assert keys(result) == [(RULE, *where) for where in at]
    for where, (_, _, severity, data_path) in zip(at, found, strict=True):
        assert_found(result, RULE, *where, severity=severity, path=data_path)


@pytest.mark.parametrize("name", ["pass.yaml", "pass.json"])
def test_parse_error_not_in_the_passing_example(name: str) -> None:
    path = FOLDER / name
    assert keys(lint_paths(path, **example_settings(path))) == []
