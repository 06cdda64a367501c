"""The documents of a text, composed and built (:func:`_documents`, :func:`compose_nodes`,
:func:`parse_data`): the nesting checked before libyaml sees it, read again as go-yaml reads
what libyaml refuses, each document's aliasing checked; an exception made a one-line
``parse-error`` (:func:`_problem`)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from kaffinity.load.parse.builder import _Builder, _check_aliasing
from kaffinity.load.parse.goyaml import _Reading
from kaffinity.load.parse.limits import DEFAULT_LIMITS, Limits, _frames_for
from kaffinity.load.parse.results import (
    LoadError,
    LoadProblem,
    _duplicate_problem,
    _in_text,
    _offset_span,
    _reader_message,
    _span,
    _too_deep,
)

# libyaml's composer crashes the interpreter somewhere past 20,000 levels; never hand it that
# (whatever Limits.depth says: its schema caps it here).
_MAX_SCAN_DEPTH = 10_000
_COMPACT_NESTING = re.compile(r"^[ \t]*((?:[-?][ \t]+){50,})", re.M)
_COMPACT_PAIRS = ("- -", "- ?", "? -", "? ?", "\t")


def _check_nesting(text: str, limits: Limits = DEFAULT_LIMITS) -> None:
    """Refuse input nested so deep that libyaml's recursive composer would crash.

    A cheap upper bound first (counts in C); a bracket scan only for files with many brackets.
    """
    if text.count("[") + text.count("{") > limits.depth:
        depth = 0
        for match in re.finditer(r"[\[\]{}]", text):
            depth = depth + 1 if match.group() in "[{" else max(depth - 1, 0)
            if depth > _MAX_SCAN_DEPTH:
                raise _too_deep(limits, _offset_span(text, match.start()))
    if not any(pair in text for pair in _COMPACT_PAIRS):
        return  # no two block indicators in a row: no compact nesting (a regex scan costs more)
    for match in _COMPACT_NESTING.finditer(text):
        if match.group(1).count(" ") + match.group(1).count("\t") > _MAX_SCAN_DEPTH // 2:
            raise _too_deep(limits, _offset_span(text, match.start(1)))


def _documents(text: str, limits: Limits = DEFAULT_LIMITS) -> Iterator[tuple[Any, _Builder]]:
    """Compose and build each document of ``text``; raises on bad input (see :func:`parse`).

    Where libyaml refuses what go-yaml reads (:class:`_Reading`), the text is read again, and
    the documents already given are not given again."""
    _check_nesting(text, limits)
    text, refusal = _as_kubectl_reads(text)
    if refusal is not None:
        # kubectl reads the parts before the one refused, then stops (see _as_kubectl_reads)
        part, offset, message = refusal
        yield from _documents(text[:part], limits)
        raise LoadError(message, _offset_span(text, offset))
    if text and text[-1] not in "\n\r":
        # go-yaml reads the end of the input as a line break where a block scalar ends there
        # (`a: |` then `  one` with no line break after it is "one\n" for kubectl; libyaml
        # gives "one"): read the text as if it ended with one (nothing else depends on it).
        text += "\n"
    reading = _Reading(text)
    given = 0
    while True:
        try:
            for index, document in enumerate(_read(reading, limits)):
                if index >= given:
                    given += 1
                    yield document
            return
        except _yaml_errors() as error:
            if not reading.again(error):
                raise


def _document_end(line: str) -> bool:
    return line.startswith("...") and (len(line) == 3 or line[3] in " \t\r#")


#: A line that makes kubectl's splitting differ from libyaml's reading: a document end, a
#: directive, or a `---` with more than a comment after it (the scan of :func:`_as_kubectl_reads`
#: runs only where one is).
#: (Anchored at a line break, not with `^` and re.M, which tries every position: 10x slower.)
_SPLIT_MATTERS = re.compile(r"\n(?:\.\.\.|%|---[^\S\n]*[^\s#])")


def _bad_separator(line: str) -> tuple[int, str] | None:
    """A ``---`` line with more than a comment after it: where the rest starts, and why."""
    rest = line[3:].strip()
    if not rest or rest.startswith("#"):
        return None
    reason = (
        "invalid document separator: kubectl allows only a comment after --- "
        f"(invalid Yaml document separator: {rest})"
    )
    return len(line) - len(line[3:].lstrip()), reason


def _first_line_refused(line: str) -> str | None:
    """Why go-yaml refuses a part whose first line with content (no ``---`` before) is ``line``."""
    if _document_end(line):
        return (
            "a document end (...) with no document before it: kubectl refuses it "
            "(yaml: did not find expected node content)"
        )
    if line.startswith("%"):
        return (
            "a directive (%) with no --- after it in the same document: kubectl refuses it "
            "(yaml: did not find expected <document start>)"
        )
    return None


def _as_kubectl_reads(text: str) -> tuple[str, tuple[int, int, str] | None]:
    """``text`` as kubectl's splitting of it into documents leaves it for YAML, and where that
    splitting refuses it (where the part refused starts, the offset of the fault and the
    reason); for nearly every file, ``text`` and None.

    kubectl splits a stream before YAML sees it (k8s.io/apimachinery/pkg/util/yaml
    ``YAMLReader.Read``, through ``NewYAMLOrJSONDecoder`` in k8s.io/cli-runtime's
    ``StreamVisitor``): every line starting with ``---`` ends a part, and a ``---`` line that
    opens a part is kept in it. sigs.k8s.io/yaml then reads each part alone, with go-yaml v2,
    which decodes its first document only. So:

    - what follows a document end (``...``) in a part, up to the next ``---`` line, is never
      read: it is blanked here (line breaks kept, so every position stays);
    - kubectl refuses the file, after the documents before, at a ``---`` line followed by
      anything but blanks or a comment (``--- |``, ``--- !!map``, ``----``): "invalid Yaml
      document separator: <rest>", where YAML allows content;
    - and at a part whose first line that is not blank or a comment is a document end (``...``)
      or a directive (``%YAML``) with no ``---`` line opening the part: go-yaml v2's parser
      (parserc.go, ``yaml_parser_parse_document_start``) skips extra ``...`` only after a
      document and needs a ``---`` after a directive ("did not find expected node content",
      "did not find expected <document start>"), where libyaml reads the whole stream.
    """
    if not _SPLIT_MATTERS.search(text) and not _SPLIT_MATTERS.match("\n" + text[:256]):
        return text, None  # nearly every file: one scan in C
    empty = True  # nothing in the current part yet
    marker = False  # the part opens with a `---` line
    content = False  # the part has had a line that is not blank or a comment
    ended: int | None = None  # the offset after a `...` that ended the part's document
    blanked: list[tuple[int, int]] = []
    offset = 0
    refusal: tuple[int, int, str] | None = None
    part = 0  # where the current part starts
    for line in text.split("\n"):  # bufio's ReadLine: lines end at \n only
        here, offset = offset, offset + len(line) + 1
        if line.startswith("---"):
            bad = _bad_separator(line)
            if bad is not None:
                refusal = (part, here + bad[0], bad[1])
                break
            if not empty:
                if ended is not None:
                    blanked.append((ended, here))
                empty, marker, content, ended, part = True, False, False, None, offset
                continue
            marker = True
        empty = False
        if ended is not None:
            continue
        if content or marker:
            if _document_end(line):
                ended = here + len(line) + 1
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        reason = _first_line_refused(line)
        if reason is not None:
            refusal = (part, here, reason)
            break
        content = True
    else:
        if ended is not None:
            blanked.append((ended, len(text)))
    return _blank(text, blanked), refusal


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span's characters but its line breaks made spaces (positions stay)."""
    for start, stop in reversed(spans):
        if start < stop:
            text = text[:start] + re.sub(r"[^\n]", " ", text[start:stop]) + text[stop:]
    return text


def compose_nodes(text: str, limits: Limits = DEFAULT_LIMITS) -> tuple[Any, ...]:
    """The root node of every document of ``text``, composed as :func:`_documents` reads it
    (read again as go-yaml reads what libyaml refuses); raises on bad input. For writing
    files back (:mod:`kaffinity.load.edits`): the nodes' marks are the text's own."""
    _check_nesting(text, limits)
    reading = _Reading(text)
    while True:
        loader = reading.loader(limits)
        try:
            roots: list[Any] = []
            with _frames_for(limits.depth):
                while loader.check_node():
                    roots.append(loader.get_node())
            return tuple(roots)
        except _yaml_errors() as error:
            if not reading.again(error):
                raise
        finally:
            loader.dispose()
            vars(loader).clear()  # the loader refers to itself: free it now (see _read)


def _yaml_errors() -> tuple[type[Exception], ...]:
    from ruamel.yaml.error import YAMLError

    return (YAMLError,)


def _read(reading: _Reading, limits: Limits) -> Iterator[tuple[Any, _Builder]]:
    """The documents of ``reading``'s text, each composed and built."""
    loader = reading.loader(limits)
    aliases = "&" in reading.text and "*" in reading.text
    expanded = 0
    try:
        while loader.check_node():
            builder = _Builder(loader, aliases, limits)
            builder.expanded = expanded  # alias-nodes counts the whole file
            with _frames_for(limits.depth):
                node = loader.get_node()
                data = builder.build(node, 0)
            if builder.expanded > expanded:  # aliases were followed (each built once, shared)
                _check_aliasing(node)
            expanded = builder.expanded
            yield data, builder
    finally:
        loader.dispose()
        # ruamel's loader refers to itself (as its own parser, composer and constructor); break
        # the cycle so the loader is freed at once rather than by the cyclic garbage collector.
        vars(loader).clear()


def _problem(text: str, error: Exception, limits: Limits = DEFAULT_LIMITS) -> LoadProblem:
    """The one-line parse-error for an exception raised while parsing ``text``."""
    from ruamel.yaml.error import MarkedYAMLError

    if isinstance(error, LoadError):
        return LoadProblem("parse-error", error.message, error.span)
    if isinstance(error, MarkedYAMLError):
        mark = error.problem_mark or error.context_mark
        message = error.problem or "invalid YAML"
        if error.context:
            started = error.context_mark
            where = f" (started at line {started.line + 1}, column {started.column + 1})" if started else ""
            message = f"{error.context}{where}: {message}"
        return LoadProblem("parse-error", message, _in_text(text, _span(mark)) if mark else None)
    if isinstance(error, RecursionError):
        return LoadProblem("parse-error", _too_deep(limits, None).message, None)
    position = getattr(error, "position", None)
    span = _offset_span(text, position) if isinstance(position, int) else None
    return LoadProblem("parse-error", _reader_message(error), span)


def _parse_errors() -> tuple[type[Exception], ...]:
    from ruamel.yaml.error import YAMLError

    return (LoadError, YAMLError, RecursionError)


def parse_data(text: str, *, strict: bool = False) -> tuple[Any, LoadProblem | None]:
    """The data of the first document of ``text`` (a config file), or the problem; ``strict``:
    a key given twice in a mapping is the problem, as in a manifest."""
    try:
        for data, builder in _documents(text):
            if strict and builder.duplicates:
                return data, _duplicate_problem(builder.duplicates[0])
            return data, None
    except _parse_errors() as error:
        return None, _problem(text, error)
    return None, None


def documents_data(text: str) -> tuple[list[Any], LoadProblem | None, int]:
    """The value of every document of ``text`` as kubectl sends it, the problem that ended the
    reading (or None), and how many keys were given twice (which kaffinity reports, see
    :func:`~kaffinity.load.parse.results._duplicate_problem`).

    kubectl leaves out the empty and null documents of a stream (k8s.io/cli-runtime
    ``StreamVisitor.Visit``: a RawExtension that is empty or ``null``), so this does too; the
    differential tests compare these values with the oracle's (tests/differential/test_yaml.py).
    """
    values: list[Any] = []
    duplicates = 0
    try:
        for data, builder in _documents(text):
            duplicates += len(builder.duplicates)
            if data is not None:
                values.append(data)
    except _parse_errors() as error:
        return values, _problem(text, error), duplicates
    return values, None, duplicates
