"""NodeName against its upstream Filter test table, case by case.

* plugin: ``kaffinity/simulate/plugins/nodename.py``
* upstream: ``pkg/scheduler/framework/plugins/nodename/node_name_test.go``
* table: ``tests/data/upstream/nodename.yaml``

Every case runs through ``kaffinity place --filters NodeName`` (:mod:`tests.simulate.upstream`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kaffinity.simulate.framework.profile import NODE_NAME

from .upstream import check_filter_case, check_filter_table, filter_cases

PLUGIN = "nodename"


def test_table_is_well_formed() -> None:
    check_filter_table(PLUGIN, NODE_NAME)


@pytest.mark.parametrize(("filters", "case"), filter_cases(PLUGIN))
def test_upstream_filter_case(tmp_path: Path, filters: str, case: dict[str, Any]) -> None:
    check_filter_case(tmp_path, filters, case)
