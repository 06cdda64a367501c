"""The tools that render, and running them: which kustomize and Helm are there, each run confined
(:mod:`kaffinity.repo.sandbox`), the runs a limit interrupted counted, and a tool's error read as
one line at the file and line it names."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import threading
from collections.abc import Sequence

from kaffinity.load.parse import Limits
from kaffinity.load.read import read_text
from kaffinity.repo.helm_worker import one_line
from kaffinity.repo.sandbox import (
    Outcome,
    Sandbox,
    confined_file,
    run_tool,
)

# --- engines -------------------------------------------------------------------------------


def kustomize_engine() -> str | None:
    """``"kustomize"`` (a standalone binary on the PATH), ``"kubectl kustomize"``, or None."""
    if shutil.which("kustomize"):
        return "kustomize"
    if shutil.which("kubectl"):
        return "kubectl kustomize"
    return None


def helm_engine() -> str | None:
    """``"helm binary"`` (``helm`` on the PATH wins), ``"helm-python-sdk"`` (``kaffinity[helm]``), or None."""
    if shutil.which("helm"):
        return "helm binary"
    import importlib.util

    if importlib.util.find_spec("helm_python") is not None:
        return "helm-python-sdk"
    return None


# --- helpers -------------------------------------------------------------------------------


def run_render_tool(command: list[str], timeout: float, limits: Limits, sandbox: Sandbox) -> Outcome | str:
    """What a tool printed and how it ended (kaffinity.repo.sandbox.run_tool: confined, its
    output bounded by ``file-size``), or why it could not run. Run from the working folder, so
    the paths in its messages are those the user gave."""
    return counted(
        run_tool(command, sandbox, timeout=timeout, output_limit=limits.file_size, cwd=os.getcwd())
    )


#: How many tool runs of this process a limit stopped or that could not start (see
#: interruptions); and of each thread (renders run from several: --jobs).
_INTERRUPTED = [0]
_THREAD = threading.local()
_OUT_OF_MEMORY = ("out of memory", "cannot allocate memory", "MemoryError")


def interruptions(*, thread: bool = False) -> int:
    """How many tool runs of this process were stopped by a limit (time, the run's budget,
    memory, output size), ended by a signal, or could not start: the render cache
    (kaffinity.cache.rendered) keeps no render during which this count grew, as the next run
    may well render the unit. ``thread``: only those of the calling thread (a render's own,
    when several run at once)."""
    if thread:
        return int(getattr(_THREAD, "count", 0))
    return _INTERRUPTED[0]


def counted(outcome: Outcome | str) -> Outcome | str:
    if (
        isinstance(outcome, str)
        or outcome.stopped is not None
        or outcome.code < 0
        or (outcome.code != 0 and any(text in outcome.errors for text in _OUT_OF_MEMORY))
    ):
        _INTERRUPTED[0] += 1
        _THREAD.count = getattr(_THREAD, "count", 0) + 1
    return outcome


_KLOG = re.compile(r'^[EWIF]\d{4} [\d:.]+\s+\d+ \S+\] "command failed" err=(?:"(.*)"|<)$')


def first_error(errors: str) -> str:
    """The error in a tool's error output: kustomize's ``Error: ...`` line, kubectl's klog
    ``"command failed" err=...`` line (unwrapped, also its multi-line ``err=<`` form), helm's
    ``Error: ...``; the ``Error:`` prefix removed. Warnings before it are not the error: both
    kustomize and kubectl kustomize print ``# Warning: 'commonLabels' is deprecated...`` first
    (kustomize warns of deprecated fields before it builds),
    helm ``walk.go:...`` and ``WARNING:`` lines. Without such a line, the first line that is
    no warning."""
    lines = errors.splitlines()
    chosen: str | None = None
    fallback: str | None = None
    for number, raw in enumerate(lines):
        line = raw.strip()
        if not line or line.startswith(("WARNING", "Warning:", "walk.go", "#")):
            continue
        klog = _KLOG.match(line)
        if klog is not None and klog.group(1) is not None:
            chosen = klog.group(1).encode("utf-8").decode("unicode_escape", "replace")
            break
        if klog is not None:
            rest = itertools.takewhile(lambda text: text.strip() != ">", lines[number + 1 :])
            chosen = " ".join(text.strip() for text in rest)
            break
        if line.startswith(("Error: ", "error: ")):
            chosen = line[len("Error: ") :]
            break
        if fallback is None:
            fallback = line
    found = chosen if chosen is not None else fallback
    if found is None:
        return "no error message"
    if "MalformedYAMLError: " in found:  # past the chain of "accumulating resources from ..."
        found = found[found.index("MalformedYAMLError: ") :]
    return one_line(found)


def text_of(path: str, limits: Limits, roots: Sequence[str]) -> str:
    """The text of a file kaffinity reports on, when it is a regular file inside the repository."""
    if not confined_file(path, roots):
        return ""
    _, text, problem = read_text(path, limits)
    return text if problem is None else ""


def yaml_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
