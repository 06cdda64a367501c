"""The code base stays ruff-clean and passes mypy --strict (the style we hold ourselves to)."""

from __future__ import annotations

import subprocess
import sys

from .kit import REPO


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, check=False
    )


def test_ruff_check_and_format() -> None:
    checked = _run("ruff", "check", "kaffinity", "tests", "benchmarks", "scripts")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    formatted = _run("ruff", "format", "--check", "kaffinity", "tests", "scripts")
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr


def test_mypy_strict() -> None:
    typed = _run("mypy")
    assert typed.returncode == 0, typed.stdout + typed.stderr
