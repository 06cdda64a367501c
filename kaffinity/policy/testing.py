"""``kaffinity policy test``: policies checked against fixtures, as ``gator verify`` and
``kyverno test`` check theirs.

A test folder holds policies and fixtures side by side:

- a file whose documents are ``kaffinity.io/v1alpha1`` Policies is a policy file;
- any other YAML or JSON file is a fixture.

Each fixture marks the lines a policy must report with ``# expect: <policy>[, <policy>...]``,
as kaffinity's own examples do. A fixture passes when the policies report exactly on the marked
lines: nothing missing and nothing more. Built-in rules do not run, so a fixture tests the
policies alone. Each fixture is linted on its own, so fixtures never see each other.

A fixture may name the cluster it is linted on, for policies that read where its pods land
(the ``kaffinity`` facts): ``# settings: {"cluster": "../clusters/topology.yaml"}`` on a line
of its own, the path relative to the fixture (as kaffinity's examples do).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kaffinity.config import Settings, error_at
from kaffinity.load.files import load
from kaffinity.load.parse import SourceFile
from kaffinity.policy.admission import is_admission
from kaffinity.policy.check import CATEGORY, policy_rules, reserved_names
from kaffinity.policy.load import API_VERSION, KIND, policies_in, read_policy_files
from kaffinity.rules.base import Rule

#: ``# expect: a, b`` on a line: policies a and b report on that line.
EXPECT = re.compile(r"#\s*expect:\s*([a-z0-9.-]+(?:\s*,\s*[a-z0-9.-]+)*)")
#: ``# settings: {"cluster": "path"}``: the declared cluster a fixture is linted on.
SETTINGS = re.compile(r"^#\s*settings:\s*(\{.*\})\s*$", re.MULTILINE)


@dataclass
class FixtureResult:
    """One fixture: the (policy, line) pairs it marks and those the policies reported."""

    file: str
    expected: list[tuple[str, int]]
    reported: list[tuple[str, int, int, str]]  # policy, line, column, message
    load_errors: list[str] = field(default_factory=list)

    @property
    def missing(self) -> list[tuple[str, int]]:
        got = {(rule, line) for rule, line, _, _ in self.reported}
        return [pair for pair in self.expected if pair not in got]

    @property
    def unexpected(self) -> list[tuple[str, int, int, str]]:
        wanted = set(self.expected)
        return [item for item in self.reported if (item[0], item[1]) not in wanted]

    @property
    def passed(self) -> bool:
        return not self.missing and not self.unexpected and not self.load_errors


@dataclass
class TestRun:
    """Every fixture's result, and the policies' own problems (file:line:column: error: ...)."""

    fixtures: list[FixtureResult]
    policy_errors: list[str]
    policies: int


def expected(text: str) -> list[tuple[str, int]]:
    """The (policy, line) pairs the ``# expect:`` markers of ``text`` ask for, in order."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            found += [(name.strip(), number) for name in match.group(1).split(",")]
    return sorted(found)


#: The engine's ``lint`` (files, settings, rules, cluster): given by the caller, which sits
#: above it.
Linter = Callable[[Sequence[SourceFile], Settings, Sequence[Rule], Any], Any]


def run_tests(
    paths: Sequence[str], settings: Settings, lint: Linter, extra_policies: Sequence[str] = ()
) -> TestRun:
    """Load the policies and fixtures under ``paths`` (and the policies of ``extra_policies``),
    then lint each fixture with the policies alone (``lint``: the engine's)."""
    files = load(list(paths), limits=settings.limits, gitignore=settings.gitignore, manifests_only=False)
    policy_files = [file for file in files if _is_policy_file(file)]
    fixtures = [file for file in files if file not in policy_files]
    # The policy files are read once, with the fixtures; only --policy's are read here.
    extra, missing = read_policy_files(extra_policies)
    loaded = policies_in([*policy_files, *extra], reserved_names())
    loaded.errors[:0] = missing
    rules, errors = policy_rules(loaded, settings)
    loaded.errors.extend(errors)
    results = []
    for fixture in fixtures:
        problems = [error_at(fixture.name, problem.span, problem.message) for problem in fixture.problems]
        cluster, trouble = _cluster(fixture, settings)
        if trouble:
            results.append(FixtureResult(fixture.name, expected(fixture.text), [], [*problems, trouble]))
            continue
        result = lint([fixture], settings, rules, cluster)
        reported = sorted(
            (finding.rule, finding.line or 0, finding.column or 0, finding.message)
            for finding in result.findings
            if finding.category == CATEGORY
        )
        results.append(FixtureResult(fixture.name, expected(fixture.text), reported, problems))
    return TestRun(results, loaded.errors, len(loaded.names))


def _cluster(fixture: SourceFile, settings: Settings) -> tuple[Any, str | None]:
    """The cluster a fixture's ``# settings:`` line names (None: none), or what is wrong with it."""
    from kaffinity.simulate.cluster import cluster_from

    match = SETTINGS.search(fixture.text)
    if match is None:
        return None, None
    line = fixture.text[: match.start()].count("\n") + 1
    try:
        wanted = json.loads(match.group(1))
    except json.JSONDecodeError as error:
        return None, f"{fixture.name}:{line}:1: error: # settings: is not a JSON object: {error.msg}"
    path = wanted.get("cluster") if isinstance(wanted, dict) else None
    if not isinstance(path, str):
        return None, f'{fixture.name}:{line}:1: error: # settings: names no cluster ("cluster": "path")'
    path = os.path.join(os.path.dirname(fixture.name), path)
    if not os.path.exists(path):
        return None, f"{fixture.name}:{line}:1: error: cluster file {path} not found"
    files = load([path], limits=settings.limits, gitignore=False, manifests_only=False)
    return cluster_from(files, settings.namespace, settings.limits.nodes), None


def _is_policy_file(file: SourceFile) -> bool:
    """A file that holds a kaffinity Policy or a ValidatingAdmissionPolicy or binding; its
    other documents are params."""
    return any(
        is_admission(doc.data)
        or (
            isinstance(doc.data, dict)
            and doc.data.get("apiVersion") == API_VERSION
            and doc.data.get("kind") == KIND
        )
        for doc in file.documents
    )
