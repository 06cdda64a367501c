"""Fixtures; the helpers are in tests/kit.py (tests/README.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kaffinity.findings import Related, Severity, Violation
from kaffinity.rules import RULES
from kaffinity.rules.base import Rule


def _anti_affinity_zone_check(context: Any) -> Iterator[Violation]:
    """A stand-in for later rules: flags required anti-affinity terms on a zone key."""
    for workload in context.inventory.workloads:
        affinity = workload.pod.affinity
        if affinity is None or affinity.pod_anti_affinity is None:
            continue
        for term in affinity.pod_anti_affinity.required:
            if term.topology_key == "topology.kubernetes.io/zone":
                selector = Related(workload.doc, (*term.path, "labelSelector"), "the selector")
                yield Violation(workload.doc, (*term.path, "topologyKey"), "zone anti-affinity", (selector,))


ZONE_RULE = Rule(
    name="test-zone-anti-affinity",
    category="test",
    severity=Severity.WARNING,
    summary="Test rule.",
    docs="## What it finds\nTest.\n",
    check=_anti_affinity_zone_check,
)


@pytest.fixture
def zone_rules() -> tuple[Rule, ...]:
    """The registry plus one rule added as a module would add it: no engine change."""
    return (*RULES, ZONE_RULE)


@pytest.fixture(autouse=True, scope="session")
def _shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every run of the suite shares one cache folder (``KAFFINITY_CACHE_DIR``; one per
    pytest-xdist worker, each with its own ``tmp_path_factory``), outside the checkout, read by
    the in-process runs (``kit.run``) as by a process: runs that lint the same file with the same
    settings take each other's entries, so the whole suite exercises warm runs too (an entry is
    keyed by name, content, version and settings: a wrong hit would show as a wrong finding in
    some test)."""
    import os

    folder = tmp_path_factory.mktemp("kaffinity-cache")
    # The secret that authenticates the entries (kaffinity.cache): given, so that no test reads
    # or makes the key file of the real home folder.
    values = {
        "KAFFINITY_CACHE_DIR": str(folder),
        "KAFFINITY_CACHE_KEY": "the test suite's cache key",
        # Charts and git trees fetched (kaffinity.repo.fetch): never the user's remote cache.
        "KAFFINITY_REMOTE_CACHE": str(tmp_path_factory.mktemp("kaffinity-remote")),
    }
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


# -- the differential tests' counts (tests/differential/oracle.py) --------------------------------
# Here, not in tests/differential/conftest.py: the pytest-xdist controller collects nothing, so it
# loads only this conftest; each worker hands its counts over in ``workeroutput``.


def pytest_sessionfinish(session: pytest.Session) -> None:
    from tests.differential.oracle import COMPARED

    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: hand the counts to the controller
        workeroutput["kaffinity_compared"] = dict(COMPARED)


def pytest_testnodedown(node: object, error: object) -> None:
    from tests.differential.oracle import COMPARED

    COMPARED.update(getattr(node, "workeroutput", {}).get("kaffinity_compared", {}))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from tests.differential.oracle import COMPARED

    if COMPARED:
        counts = ", ".join(f"{area} {count}" for area, count in sorted(COMPARED.items()))
        terminalreporter.write_line(f"differential: cases compared with the oracle: {counts}")
