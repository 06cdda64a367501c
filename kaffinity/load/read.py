"""Reading one file: bytes within the size limit, decoded, classified (a manifest, or a file
skipped quietly, :mod:`kaffinity.load.manifests`), and parsed (:mod:`kaffinity.load.parse`).
Never raises for bad input: a file that cannot be read comes back with a problem."""

from __future__ import annotations

import os
import stat
import sys
from typing import Any

from kaffinity.load.parse import (
    DEFAULT_LIMITS,
    STDIN,
    STDIN_NAME,
    Limits,
    LoadError,
    LoadProblem,
    SourceFile,
    decode,
    parse,
)
from kaffinity.load.source import Span


def read_text(path: str, limits: Limits = DEFAULT_LIMITS) -> tuple[str, str, LoadProblem | None]:
    """Display name, decoded text and the problem if the file could not be read or decoded,
    or is larger than ``limits.file_size`` (then no more than that is read)."""
    name, raw, problem = read_bytes(path, limits)
    if problem is not None:
        return name, "", problem
    text, problem = _decoded(raw)
    return name, text, problem


def read_bytes(path: str, limits: Limits) -> tuple[str, bytes, LoadProblem | None]:
    """Display name, the bytes, and the problem if the file could not be read or is larger than
    ``limits.file_size`` (then no more than that is read)."""
    name = STDIN_NAME if path == STDIN else path
    size: int | None = None  # the size a file reports (a pipe's, or stdin's, is not known)
    try:
        if path == STDIN:
            raw = _read_up_to(sys.stdin.buffer, limits.file_size + 1)
        else:
            # Opened without blocking: a named pipe with no writer would otherwise hang the run
            # (it reads as empty instead); reads then block as usual, so `<(helm template ...)` works.
            nonblocking = getattr(os, "O_NONBLOCK", 0)
            descriptor = os.open(path, os.O_RDONLY | nonblocking)
            if nonblocking:
                os.set_blocking(descriptor, True)
            with open(descriptor, "rb") as handle:
                info = os.fstat(descriptor)
                if not stat.S_ISREG(info.st_mode):
                    raw = _read_up_to(handle, limits.file_size + 1)
                elif info.st_size <= limits.file_size:
                    raw = handle.read()
                else:
                    raw, size = b"", info.st_size  # never read
    except OSError as error:
        return name, b"", LoadProblem("parse-error", f"cannot read: {error.strerror or error}", None)
    if size is not None or len(raw) > limits.file_size:
        what = f"{_size(size)}, more" if size is not None else "more"
        message = (
            f"{what} than the limit of {_size(limits.file_size)} per file "
            "(limits: file-size; --limit file-size=SIZE or --max-file-size raises it)"
        )
        return name, b"", LoadProblem("parse-error", message, Span(1, 1))
    return name, raw, None


def _decoded(raw: bytes) -> tuple[str, LoadProblem | None]:
    try:
        return decode(raw), None
    except LoadError as error:
        return "", LoadProblem("parse-error", error.message, error.span)
    except UnicodeDecodeError as error:
        return "", LoadProblem("parse-error", f"cannot decode: {error.reason}", None)


def _read_up_to(handle: Any, limit: int) -> bytes:
    """The whole stream, or its first ``limit`` bytes, read in blocks (never a buffer of
    ``limit`` bytes for a small stream)."""
    blocks: list[bytes] = []
    total = 0
    while total < limit:
        wanted = min(1 << 20, limit - total)
        block = handle.read(wanted)
        blocks.append(block)
        total += len(block)
        if len(block) < wanted:
            # A buffered read returns less only at the end; reading again would wait for more
            # on a terminal, where the end (Ctrl-D) is not lasting.
            break
    return blocks[0] if len(blocks) == 1 else b"".join(blocks)


def _size(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{size} bytes"


def read(path: str, limits: Limits = DEFAULT_LIMITS, *, manifests_only: bool = True) -> SourceFile:
    """Read and parse one file, or stdin for ``-``.

    ``manifests_only``: a file that is not a Kubernetes manifest comes back skipped, with its
    reason (:mod:`kaffinity.load.manifests`: by name without reading it, or by content); off for
    inputs that are not manifests by design (the cluster file).
    """
    if manifests_only:
        skipped = skipped_by_name(path)
        if skipped is not None:
            return skipped
    name, raw, problem = read_bytes(path, limits)
    return from_bytes(path, name, raw, problem, limits, manifests_only=manifests_only)


def skipped_by_name(path: str) -> SourceFile | None:
    """The file skipped, unread, when its name says it is no Kubernetes manifest
    (:mod:`kaffinity.load.manifests`); None otherwise, and for stdin."""
    if path == STDIN:
        return None
    from kaffinity.load.charts import template_reason
    from kaffinity.load.manifests import skip_reason_for_name

    # Where a file is decides first: a chart's templates/ holds templates whatever their name
    # (kaffinity.load.charts), never parsed as YAML.
    reason = template_reason(path) or skip_reason_for_name(path) or _chart_file(path)
    return SourceFile(path, "", (), (), reason) if reason is not None else None


def _chart_file(path: str) -> str | None:
    """A chart's ``values.schema.json`` (helm.sh/helm/v3 pkg/chart/loader ``LoadFiles`` reads it
    as the chart's Schema): no manifest."""
    if os.path.basename(path) == "values.schema.json" and os.path.isfile(
        os.path.join(os.path.dirname(path), "Chart.yaml")
    ):
        return "Helm chart values schema"
    return None


def from_bytes(
    path: str,
    name: str,
    raw: bytes,
    problem: LoadProblem | None,
    limits: Limits = DEFAULT_LIMITS,
    *,
    manifests_only: bool = True,
) -> SourceFile:
    """:func:`read` of bytes already read (:func:`read_bytes`), the classification by name done."""
    if problem is not None:
        return SourceFile(name, "", (), (problem,))  # unreadable, or past the size limit
    text, problem = _decoded(raw)
    if problem is not None:
        file = SourceFile(name, "", (), (problem,))
        if manifests_only and path != STDIN:
            # Not text: only the bytes can say whether it was meant as a manifest.
            return _classified(file, raw.decode("utf-8", "replace"))
        return file
    file = parse(name, text, limits)
    return _classified(file, text, stdin=path == STDIN) if manifests_only else file


def _classified(file: SourceFile, text: str, *, stdin: bool = False) -> SourceFile:
    """``file``, or the same file skipped when it is no Kubernetes manifest: it holds no object,
    and its text does not look like a manifest either (a broken one is still reported). On
    stdin, which is piped to kaffinity on purpose, every problem is reported."""
    from kaffinity.load.charts import content_reason

    if not stdin:  # piped on purpose: read as it is
        # Another tool's template (cookiecutter, envsubst, Jinja): skipped, never a parse-error.
        template = content_reason(text, any(p.rule == "parse-error" for p in file.problems))
        if template is not None:
            return SourceFile(file.name, "", (), (), template)
    if file.documents:
        return file
    from kaffinity.load.manifests import looks_like_manifest

    if looks_like_manifest(text) or (stdin and file.problems):
        return file
    if file.problems:
        reason = "does not parse as YAML or JSON, and has no apiVersion and kind"
    elif text.strip():
        reason = "no Kubernetes object (no document with apiVersion and kind)"
    else:
        reason = "empty"
    return SourceFile(file.name, "", (), (), reason)
