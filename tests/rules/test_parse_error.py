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

from ..kit import EXAMPLES, ExampleFindings, assert_example

RULE = "parse-error"
FOLDER = EXAMPLES / RULE
#: Where a finding starts (a needle and its occurrence), its severity and its data path.
Found = ExampleFindings


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
    assert_example(FOLDER / name, RULE, found)


@pytest.mark.parametrize("name", ["pass.yaml", "pass.json"])
def test_parse_error_not_in_the_passing_example(name: str) -> None:
    assert_example(FOLDER / name, RULE, [])
