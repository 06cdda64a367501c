"""The runs of ``kaffinity policy test`` (the policies against their fixtures,
kaffinity.policy.testing) and ``policy check`` (the policies themselves, kaffinity.policy.review):
each returns what it found; the command line words and prints it."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from kaffinity.load.display import quote_name
from kaffinity.run.notes import RunError
from kaffinity.run.workspace import run_rules

if TYPE_CHECKING:
    from collections.abc import Sequence

    from kaffinity.config import Settings
    from kaffinity.policy.review import Problem
    from kaffinity.policy.testing import TestRun


def check_paths(paths: Sequence[str]) -> None:
    """A path that does not exist is a usage error, before the settings are read."""
    for path in paths:
        if not os.path.exists(path):
            raise RunError(f"kaffinity: error: {quote_name(path)}: not found")


def policy_test_run(paths: Sequence[str], settings: Settings, policies: Sequence[str]) -> TestRun:
    """Each fixture linted with the policies alone, its findings against its ``# expect:`` lines."""
    from kaffinity.policy.testing import run_tests

    return run_tests(paths, settings, run_rules, tuple(policies))


def policy_check_run(paths: Sequence[str], settings: Settings) -> list[Problem]:
    """The problems of the policies themselves."""
    from kaffinity.policy.review import review

    return list(review(paths, settings))
