"""The differential oracle (``oracle/``, issue 35): built once, asked over JSON lines.

Upstream's own Go code (kube-apiserver's validation and CEL environment, the validating admission
policy plugin, kube-scheduler) answers the same question kaffinity answers; the tests under
``tests/differential/`` compare the two answers.

Where the binary comes from, in order:

1. ``KAFFINITY_ORACLE``: a binary built beforehand (``.ci/run`` builds it once, before the suite);
2. a build of ``oracle/`` into ``$XDG_CACHE_HOME/kaffinity-oracle/<hash of its sources>/`` (or
   ``~/.cache``), made once per source content and shared by the pytest-xdist workers under a
   file lock; the Go module and build caches make a rebuild take seconds;
3. no ``go`` on the PATH: the tests skip and say why.

How many cases a property compares: ``KAFFINITY_DIFFERENTIAL_EXAMPLES`` (default
:data:`DEFAULT_EXAMPLES`; the long mode is ``KAFFINITY_DIFFERENTIAL_EXAMPLES=2000``).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import threading
from collections import Counter
from pathlib import Path
from typing import Any

SOURCES = Path(__file__).resolve().parents[2] / "oracle"

#: Cases a hypothesis property compares per run, unless KAFFINITY_DIFFERENTIAL_EXAMPLES says.
DEFAULT_EXAMPLES = 150


def examples(default: int = DEFAULT_EXAMPLES) -> int:
    """The number of generated cases per property (the long mode raises it)."""
    value = os.environ.get("KAFFINITY_DIFFERENTIAL_EXAMPLES")
    return int(value) if value else default


#: Cases compared with the oracle in this process, per area (yaml, validate, cel, admission,
#: schedule, explain): the tests call :func:`compared` once per case; tests/conftest.py's hooks
#: gather the workers' counts and print them after the run.
COMPARED: Counter[str] = Counter()


def compared(area: str, count: int = 1) -> None:
    COMPARED[area] += count


class OracleUnavailable(Exception):
    """Why the oracle cannot run here (the tests skip with this reason)."""


def _source_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(SOURCES.iterdir()):
        if path.suffix in {".go", ".mod", ".sum"}:
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def binary() -> Path:
    """The oracle's binary: the one given, or one built from ``oracle/`` (cached by content)."""
    given = os.environ.get("KAFFINITY_ORACLE")
    if given:
        path = Path(given)
        if not path.is_file():
            raise OracleUnavailable(f"KAFFINITY_ORACLE={given} is not a file")
        return path
    go = shutil.which("go")
    if go is None:
        raise OracleUnavailable(
            "no `go` on the PATH: the oracle (oracle/README.md) needs Go 1.26 and the Go module proxy"
        )
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = home / "kaffinity-oracle" / _source_hash()
    folder.mkdir(parents=True, exist_ok=True)
    built = folder / "oracle"
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build for every pytest-xdist worker
        if not built.is_file():
            partial = folder / "oracle.partial"
            done = subprocess.run(
                [go, "build", "-o", str(partial), "."],
                cwd=SOURCES,
                capture_output=True,
                text=True,
                timeout=1800,
                check=False,
            )
            if done.returncode != 0:
                raise OracleUnavailable(f"the oracle does not build: {done.stderr.strip()[-2000:]}")
            partial.rename(built)
    return built


class Oracle:
    """One oracle process, asked one request at a time (answers come back in order)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._process = self._start()

    def _start(self) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [str(self.path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """The oracle's answer to one request (a dead process is restarted once)."""
        line = json.dumps(request) + "\n"
        with self._lock:
            for attempt in (1, 2):
                process = self._process
                assert process.stdin is not None and process.stdout is not None
                try:
                    process.stdin.write(line)
                    process.stdin.flush()
                    answer = process.stdout.readline()
                except (BrokenPipeError, OSError):
                    answer = ""
                if answer:
                    result: dict[str, Any] = json.loads(answer)
                    return result
                process.kill()
                process.wait()
                if attempt == 2:
                    raise RuntimeError(f"the oracle died on {line[:500]}")
                self._process = self._start()
        raise AssertionError("unreachable")

    def ask_all(self, *requests: dict[str, Any]) -> list[dict[str, Any]]:
        return [self.ask(request) for request in requests]

    def close(self) -> None:
        process = self._process
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
