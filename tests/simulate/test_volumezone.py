"""VolumeZone against its upstream Filter test table, case by case.

* plugin: ``kaffinity/simulate/plugins/volumezone.py``
* upstream: ``pkg/scheduler/framework/plugins/volumezone/volume_zone_test.go``
* table: ``tests/data/upstream/volumezone.yaml``

Every case runs through ``kaffinity place --filters VolumeZone`` (:mod:`tests.simulate.upstream`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kaffinity.simulate.framework.profile import VOLUME_ZONE

from .upstream import check_filter_case, check_filter_table, filter_cases

PLUGIN = "volumezone"


def test_table_is_well_formed() -> None:
    check_filter_table(PLUGIN, VOLUME_ZONE)


@pytest.mark.parametrize(("filters", "case"), filter_cases(PLUGIN))
def test_upstream_filter_case(tmp_path: Path, filters: str, case: dict[str, Any]) -> None:
    check_filter_case(tmp_path, filters, case)
