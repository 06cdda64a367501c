"""NodeUnschedulable against its upstream Filter test table, case by case.

* plugin: ``kaffinity/simulate/plugins/nodeunschedulable.py``
* upstream: ``pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable_test.go``
* table: ``tests/data/upstream/nodeunschedulable.yaml``

Every case runs through ``kaffinity place --filters NodeUnschedulable`` (:mod:`tests.simulate.upstream`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kaffinity.simulate.framework.profile import NODE_UNSCHEDULABLE

from .upstream import check_filter_case, check_filter_table, filter_cases

PLUGIN = "nodeunschedulable"


def test_table_is_well_formed() -> None:
    check_filter_table(PLUGIN, NODE_UNSCHEDULABLE)


@pytest.mark.parametrize(("filters", "case"), filter_cases(PLUGIN))
def test_upstream_filter_case(tmp_path: Path, filters: str, case: dict[str, Any]) -> None:
    check_filter_case(tmp_path, filters, case)
