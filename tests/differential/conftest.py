"""The oracle fixture (the count of cases compared per area: ``oracle.compared``, printed by
the hooks in tests/conftest.py, which the pytest-xdist controller loads)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.differential.oracle import Oracle, OracleUnavailable, binary


@pytest.fixture(scope="session")
def oracle() -> Iterator[Oracle]:
    try:
        path = binary()
    except OracleUnavailable as reason:
        pytest.skip(str(reason))
    process = Oracle(path)
    yield process
    process.close()
