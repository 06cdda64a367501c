"""The examples of affinity-deadlock and affinity-conflict cite upstream: the InterPodAffinity
Filter (``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go``) and the 2015 design,
kubernetes/design-proposals-archive ``scheduling/podaffinity.md``, "A comment on symmetry". The
rules' own cases are in tests/rules/test_affinity_deadlock.py and test_affinity_conflict.py.
"""

from __future__ import annotations

import pytest

from .kit import EXAMPLES
from .rules.conflict_inputs import CONFLICT, DEADLOCK

# -- examples ------------------------------------------------------------------------------------


@pytest.mark.parametrize("rule", [DEADLOCK, CONFLICT])
def test_examples_cite_upstream(rule: str) -> None:
    for path in sorted((EXAMPLES / rule).glob("*.yaml")):
        head = path.read_text(encoding="utf-8").split("apiVersion", 1)[0]
        comment = " ".join(line.lstrip("#").strip() for line in head.splitlines())
        # The scheduler's InterPodAffinity Filter, which both rules follow, by its upstream path.
        assert "pkg/scheduler/framework/plugins/interpodaffinity/filtering.go" in comment, path


def test_symmetry_section_has_a_firing_and_a_quiet_example() -> None:
    folder = EXAMPLES / CONFLICT
    cited = {
        p.name for p in folder.glob("*.yaml") if '"A comment on symmetry"' in p.read_text(encoding="utf-8")
    }
    assert {"fail-symmetry.yaml", "pass-symmetry.yaml"} <= cited
