"""TaintToleration against its upstream Filter test table, case by case.

* plugin: ``kaffinity/simulate/plugins/tainttoleration.py``
* upstream: ``pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go``
* table: ``tests/data/upstream/tainttoleration.yaml``

Every case runs through ``kaffinity place --filters TaintToleration`` (:mod:`tests.simulate.upstream`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kaffinity.simulate.framework.profile import TAINT_TOLERATION

from .upstream import check_filter_case, check_filter_table, filter_cases

PLUGIN = "tainttoleration"


def test_table_is_well_formed() -> None:
    check_filter_table(PLUGIN, TAINT_TOLERATION)


@pytest.mark.parametrize(("filters", "case"), filter_cases(PLUGIN))
def test_upstream_filter_case(tmp_path: Path, filters: str, case: dict[str, Any]) -> None:
    check_filter_case(tmp_path, filters, case)
