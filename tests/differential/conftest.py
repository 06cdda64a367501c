"""The oracle fixture and the count of cases compared per area (printed after the run)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from tests.differential.oracle import Oracle, OracleUnavailable, binary

#: Cases compared with the oracle in this process, per area (yaml, validate, cel, admission,
#: schedule, explain): the tests call :func:`compared` once per case.
COMPARED: Counter[str] = Counter()


def compared(area: str, count: int = 1) -> None:
    COMPARED[area] += count


@pytest.fixture(scope="session")
def oracle() -> Iterator[Oracle]:
    try:
        path = binary()
    except OracleUnavailable as reason:
        pytest.skip(str(reason))
    process = Oracle(path)
    yield process
    process.close()


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: hand the counts to the controller
        workeroutput["kaffinity_compared"] = dict(COMPARED)


def pytest_testnodedown(node: object, error: object) -> None:
    COMPARED.update(getattr(node, "workeroutput", {}).get("kaffinity_compared", {}))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if COMPARED:
        counts = ", ".join(f"{area} {count}" for area, count in sorted(COMPARED.items()))
        terminalreporter.write_line(f"differential: cases compared with the oracle: {counts}")
