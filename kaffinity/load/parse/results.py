"""What parsing hands out: :class:`SourceFile` with its documents and :class:`LoadProblem`\\ s;
:class:`LoadError` and the position of what went wrong (from a reader's mark, an offset in the
text, a byte offset); file bytes decoded as YAML allows (:func:`decode`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kaffinity.load.parse.limits import Limits
from kaffinity.load.source import Document, DuplicateKey, Span

STDIN = "-"
STDIN_NAME = "<stdin>"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True, slots=True)
class LoadProblem:
    """Input that could not be used: rule ``parse-error`` or ``helm-template``."""

    rule: str
    message: str
    span: Span | None


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file (or stdin) as loaded: its text, its objects and what went wrong.

    ``skipped``: why the file is not a Kubernetes manifest (:mod:`kaffinity.load.manifests`), or None
    for a manifest. A skipped file has no text, documents or problems: nothing in it is linted
    or reported, and reports count it apart (``summary.skipped``).
    """

    name: str
    text: str
    documents: tuple[Document, ...]
    problems: tuple[LoadProblem, ...]
    skipped: str | None = None
    #: Compacted after the single-object stage (:mod:`kaffinity.k8s.compact`): ``text`` is gone
    #: (read again from the file where a report shows it) and the documents hold only what the
    #: rules that read every manifest read.
    compact: bool = False


class LoadError(Exception):
    def __init__(self, message: str, span: Span | None) -> None:
        super().__init__(message)
        self.message = message
        self.span = span


def _recursive(node: Any) -> LoadError:
    """go-yaml refuses an alias inside the node it names ("anchor 'x' value contains itself")."""
    return LoadError("an alias refers to the node that holds it (a recursive anchor)", _span(node.start_mark))


def _too_deep(limits: Limits, span: Span | None) -> LoadError:
    return LoadError(f"nesting deeper than {limits.depth} levels (limits: depth)", span)


def _span(mark: Any) -> Span:
    return Span(mark.line + 1, mark.column + 1)


def _in_text(text: str, span: Span) -> Span:
    """``span`` kept inside ``text``: the C reader ends a file without a final newline with one
    of its own, and marks the end of input on the line after it, which the file does not have;
    that is the end of the last line."""
    breaks = list(re.finditer("\r\n|[\r\n\x85\u2028\u2029]", text))  # YAML 1.1's, as the reader
    if span.line <= len(breaks) + 1:
        return span
    return Span(len(breaks) + 1, len(text) - (breaks[-1].end() if breaks else 0) + 1)


def _offset_span(text: str, offset: int) -> Span:
    line_start = text.rfind("\n", 0, offset) + 1
    return Span(text.count("\n", 0, offset) + 1, offset - line_start + 1)


def decode(raw: bytes) -> str:
    """Decode file bytes as YAML allows (UTF-8, or UTF-16/32 with a byte order mark)."""
    if raw.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return raw.decode("utf-32")
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16")
    if b"\x00" in raw:
        offset = raw.index(b"\x00")
        raise LoadError("binary file (NUL byte), not YAML or JSON", _byte_span(raw, offset))
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise LoadError(
            f"not valid UTF-8 (byte 0x{raw[error.start]:02x})", _byte_span(raw, error.start)
        ) from None


def _byte_span(raw: bytes, offset: int) -> Span:
    line_start = raw.rfind(b"\n", 0, offset) + 1
    column = len(raw[line_start:offset].decode("utf-8", "replace")) + 1
    return Span(raw.count(b"\n", 0, offset) + 1, column)


def _duplicate_problem(duplicate: DuplicateKey) -> LoadProblem:
    """A key given twice in one mapping. kubectl refuses the file: its YAML decoding is strict
    ("yaml: unmarshal errors: mapping key "x" already defined at line N"), and so is the API
    server's field validation, kubectl's default (``--validate=strict``; ``warn``/``ignore``
    would apply the later value, which is what kaffinity lints the document with)."""
    message = f'mapping key "{duplicate.key}" already defined at line {duplicate.first.line}'
    return LoadProblem("parse-error", message, duplicate.span)


def _reader_message(error: Exception) -> str:
    reason = getattr(error, "reason", None)
    return f"cannot read input: {reason}" if reason else str(error).splitlines()[0]
