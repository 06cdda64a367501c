"""Shared helpers: run the real command, lint in-process, read expectations from examples."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from kaffinity.config import Settings
from kaffinity.engine import LintResult, lint
from kaffinity.findings import Related, Severity, Violation
from kaffinity.load.files import load
from kaffinity.load.parse import parse
from kaffinity.rules import RULES
from kaffinity.rules.base import Rule
from kaffinity.simulate.cluster import cluster_from

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
SHARED = REPO.parent / "shared"
_EXPECT = re.compile(r"#\s*expect:\s*([a-z0-9-]+(?:\s*,\s*[a-z0-9-]+)*)")
_SETTINGS = re.compile(r"^#\s*settings:\s*(\{.*\})\s*$", re.MULTILINE)


def run_cli(
    *args: str, stdin: str | bytes | None = None, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The real command line, as a user runs it (``python -m kaffinity``)."""
    # The suite may itself run on GitHub Actions; `--format auto` must not see that by accident.
    inherited = {key: value for key, value in os.environ.items() if key != "GITHUB_ACTIONS"}
    environment = {**inherited, "NO_COLOR": "1", **(env or {})}
    data = stdin.encode() if isinstance(stdin, str) else stdin
    completed = subprocess.run(
        [sys.executable, "-m", "kaffinity", *args],
        input=data,
        capture_output=True,
        cwd=cwd,
        env=environment,
        timeout=120,
        check=False,
    )
    return subprocess.CompletedProcess(
        completed.args,
        completed.returncode,
        completed.stdout.decode("utf-8", "replace"),
        completed.stderr.decode("utf-8", "replace"),
    )


def added_lines(diff: str) -> list[str]:
    """The ``+`` lines of a unified diff (without the ``+++`` header)."""
    return [line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]


def run_json(*args: str, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    completed = run_cli("lint", "--format", "json", "--no-config", *args, **kwargs)
    assert "Traceback" not in completed.stderr, completed.stderr
    return completed.returncode, json.loads(completed.stdout)


def lint_text(
    text: str, name: str = "test.yaml", rules: Sequence[Rule] = RULES, **settings: Any
) -> LintResult:
    return lint([parse(name, text)], Settings(**settings), rules)


def lint_paths(*paths: str | Path, rules: Sequence[Rule] = RULES, **settings: Any) -> LintResult:
    """Lint as the CLI does; a ``cluster`` path (relative: to the repository) is loaded too."""
    cluster = None
    if settings.get("cluster"):
        path = Path(settings["cluster"])
        settings["cluster"] = str(path if path.is_absolute() else REPO / path)
        cluster = cluster_from(load([settings["cluster"]]))
    return lint(load([str(path) for path in paths]), Settings(**settings), rules, cluster=cluster)


def keys(result: LintResult) -> list[tuple[str, int | None, int | None]]:
    """Findings compared by (rule, line, column), never by message text."""
    return [(finding.rule, finding.line, finding.column) for finding in result.findings]


def expected(path: Path) -> list[tuple[str, int]]:
    """``# expect: rule`` markers in an example: the rule must report on that line."""
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = _EXPECT.search(line)
        if match:
            found += [(rule.strip(), number) for rule in match.group(1).split(",")]
    return sorted(found)


#: Rule categories that read several workloads (or a cluster) together: linting the examples
#: folder at once would let the examples see each other, so they are checked example by example.
CROSS_WORKLOAD = frozenset(("graph", "topology", "rollout"))


def example_settings(path: Path) -> dict[str, Any]:
    """``# settings: {"kube_version": "1.28"}`` in an example: the Settings it is linted with."""
    match = _SETTINGS.search(path.read_text(encoding="utf-8"))
    settings: dict[str, Any] = json.loads(match.group(1)) if match else {}
    return settings


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
