"""The kit's in-process runner (``kit.run``) is the command line: what ``python -m kaffinity``
prints and exits with, byte for byte, and it leaves the test's process as it found it.

Most tests run the command in process (tests/README.md); these compare it with the real
process (``kit.run_process``, which is also the one test of ``python -m kaffinity`` itself).
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from pathlib import Path

import pytest

from .kit import EXAMPLES, run, run_process, run_raw

FAIL = str(EXAMPLES / "revision-unscoped" / "fail.yaml")
CLUSTER = str(EXAMPLES / "clusters" / "unschedulable.yaml")


@pytest.mark.parametrize(
    "args",
    [
        ("lint", "--no-config", "--no-cache", FAIL),
        ("lint", "--no-config", "--no-cache", "--format", "json", "--cluster", CLUSTER, FAIL),
        ("lint", "--bogus"),  # a usage error: main()'s one line, not click's
        ("place", "--no-config", "--cluster", CLUSTER, FAIL),
        ("--version",),
    ],
    ids=["text", "json-cluster", "usage-error", "place", "version"],
)
def test_in_process_is_the_process(args: tuple[str, ...]) -> None:
    here, there = run(*args), run_process(*args)
    assert (here.returncode, here.stdout, here.stderr) == (there.returncode, there.stdout, there.stderr)


def test_stdin_and_the_working_folder_reach_the_command(tmp_path: Path) -> None:
    text = Path(FAIL).read_text(encoding="utf-8")
    args = (
        "lint",
        "--no-config",
        "--no-cache",
        "--fail-on",
        "warning",
        "-",
        "--stdin-filename",
        "app/web.yaml",
    )
    here = run(*args, stdin=text, cwd=tmp_path)
    there = run_process(*args, stdin=text, cwd=tmp_path)
    assert (here.returncode, here.stdout) == (there.returncode, there.stdout) == (1, there.stdout)
    assert "app/web.yaml:" in here.stdout


def test_the_process_state_is_the_tests_again(tmp_path: Path) -> None:
    """What a run changes (the environment, the working folder, the streams, the arguments, the
    signal handlers, the frozen objects) is restored, even when the command fails."""
    before = (
        dict(os.environ),
        os.getcwd(),
        (sys.stdin, sys.stdout, sys.stderr),
        list(sys.argv),
        signal.getsignal(signal.SIGINT),
        sys.getrecursionlimit(),
    )
    run("lint", "--no-config", FAIL, cwd=tmp_path, env={"KAFFINITY_CEL_TIME_LIMIT": "1"})
    run_raw("lint", "--no-config", "nowhere.yaml", cwd=tmp_path, env={"HOME": str(tmp_path)})
    after = (
        dict(os.environ),
        os.getcwd(),
        (sys.stdin, sys.stdout, sys.stderr),
        list(sys.argv),
        signal.getsignal(signal.SIGINT),
        sys.getrecursionlimit(),
    )
    assert after == before
    assert gc.get_freeze_count() == 0 and gc.isenabled()
