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
