"""VolumeBinding against its upstream Filter test table, case by case.

* plugin: ``kaffinity/simulate/plugins/volumebinding.py``
* upstream: ``pkg/scheduler/framework/plugins/volumebinding/volume_binding_test.go``
* table: ``tests/data/upstream/volumebinding.yaml``

Every case runs through ``kaffinity place --filters VolumeBinding`` (:mod:`tests.simulate.upstream`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kaffinity.simulate.framework.profile import VOLUME_BINDING

from .upstream import check_filter_case, check_filter_table, filter_cases

PLUGIN = "volumebinding"


def test_table_is_well_formed() -> None:
    check_filter_table(PLUGIN, VOLUME_BINDING)


@pytest.mark.parametrize(("filters", "case"), filter_cases(PLUGIN))
def test_upstream_filter_case(tmp_path: Path, filters: str, case: dict[str, Any]) -> None:
    check_filter_case(tmp_path, filters, case)
