"""The rule ``helm-template`` (kaffinity/rules/helm_template.py): a Helm template linted as a
manifest (``{{ ... }}`` outside a rendered chart), reported as info at the first template action.
Rendering charts is tested in tests/test_render*.py.

Each failing example is asserted as (rule, line, column) with its severity and data path; each
passing example (the fixed variant) finds nothing.
"""

from __future__ import annotations

import pytest

from ..kit import EXAMPLES, ExampleFindings, assert_example

RULE = "helm-template"
FOLDER = EXAMPLES / RULE
#: Where a finding starts (a needle and its occurrence), its severity and its data path.
Found = ExampleFindings


#: Each failing example: for each finding, the text it starts at (the occurrence of it, or the
#: only one), its severity and data path.
FAILING = [
    (
        "fail.yaml",
        [
            ("{{ include", None, "info", ""),
        ],
    ),
]


@pytest.mark.parametrize(("name", "found"), FAILING, ids=[name for name, _ in FAILING])
def test_helm_template_in_the_failing_example(name: str, found: Found) -> None:
    assert_example(FOLDER / name, RULE, found)


@pytest.mark.parametrize("name", ["pass.yaml"])
def test_helm_template_not_in_the_passing_example(name: str) -> None:
    assert_example(FOLDER / name, RULE, [])
