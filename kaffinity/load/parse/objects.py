"""A file's text parsed into its Kubernetes objects (:func:`parse`): each document with its
positions, the items of a List (or a typed list) flattened, duplicate keys and bad input as
problems, an unrendered Helm template as one ``helm-template`` problem."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kaffinity.load.parse.limits import DEFAULT_LIMITS, Limits
from kaffinity.load.parse.reader import _documents, _parse_errors, _problem
from kaffinity.load.parse.results import LoadProblem, SourceFile, _duplicate_problem, _offset_span
from kaffinity.load.parse.templates import _HELM_ACTION, _carries_templates, _parses_without_actions
from kaffinity.load.source import (
    COLUMN_BITS,
    DataPath,
    Document,
    DuplicateKey,
    PosDict,
    PosList,
    Span,
    locate,
)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while loading.

    Loading allocates millions of long-lived objects and no cycles; the collector's repeated
    scans of them cost more than parsing (measured on the real-world corpus: 4.2 s with it,
    1.6 s without). Nested pauses are free.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def parse(name: str, text: str, limits: Limits = DEFAULT_LIMITS) -> SourceFile:
    """Parse the text of one file into documents (List kinds flattened) and problems."""
    with gc_paused():
        return _parse(name, text, limits)


def _parse(name: str, text: str, limits: Limits) -> SourceFile:
    documents: list[Document] = []
    problems: list[LoadProblem] = []
    template: Span | None = None
    try:
        for index, (data, builder) in enumerate(_documents(text, limits)):
            if builder.template is not None and not _carries_templates(data):
                template = template or builder.template
            duplicates = tuple(builder.duplicates)
            documents.extend(_objects(name, index, data, duplicates, problems))
            problems.extend(map(_duplicate_problem, duplicates))
    except _parse_errors() as error:
        problems.append(_problem(text, error, limits))
    if "{{" in text and template is None and problems and _parses_without_actions(text):
        match = _HELM_ACTION.search(text)
        template = _offset_span(text, match.start()) if match is not None else None
    if template is not None:
        message = (
            "unrendered Helm template: lint the rendered output instead, "
            "e.g. `helm template RELEASE CHART | kaffinity lint -`"
        )
        return SourceFile(name, text, (), (LoadProblem("helm-template", message, template),))
    return SourceFile(name, text, tuple(documents), tuple(problems))


def _objects(
    name: str, index: int, data: Any, duplicates: tuple[DuplicateKey, ...], problems: list[LoadProblem]
) -> Iterator[Document]:
    """The Kubernetes objects of one document: itself, or the items of a List (a List whose
    items kubectl cannot decode adds to ``problems``)."""
    if not isinstance(data, PosDict):
        return
    yield from _flatten(name, index, data, data, (), duplicates, None, problems)


def _flatten(
    name: str,
    index: int,
    root: PosDict,
    data: PosDict,
    prefix: DataPath,
    duplicates: tuple[DuplicateKey, ...],
    list_kind: tuple[str, str] | None,
    problems: list[LoadProblem],
) -> Iterator[Document]:
    kind = data.get("kind")
    api_version = data.get("apiVersion")
    if list_kind is not None and (not kind or not api_version):
        # Typed lists from the API (`DeploymentList`) leave apiVersion/kind off their items.
        data = _with_type(data, api_version or list_kind[0], kind or list_kind[1])
        kind, api_version = data["kind"], data["apiVersion"]
    if not isinstance(kind, str) or not isinstance(api_version, str) or not kind or not api_version:
        return
    items = data.get("items")
    if kind == "List" and items is not None and not isinstance(items, PosList):
        # kubectl decodes a List's items as a list of objects (apimachinery's
        # UnstructuredJSONScheme, decodeToList: `Items []json.RawMessage`): anything else
        # fails the whole file ("cannot unmarshal ... into ... items").
        span = locate(root, (*prefix, "items"), root.span)
        problems.append(
            LoadProblem("parse-error", f"List items must be a list of objects, not {_shown(items)}", span)
        )
        return
    if kind.endswith("List") and isinstance(items, PosList):
        yield from _list_items(name, index, root, prefix, kind, api_version, items, problems)
        return
    span = locate(root, prefix or ("apiVersion",), root.span)
    yield Document(name, index, data, root, span, prefix, duplicates)


def _list_items(
    name: str,
    index: int,
    root: PosDict,
    prefix: DataPath,
    kind: str,
    api_version: str,
    items: PosList,
    problems: list[LoadProblem],
) -> Iterator[Document]:
    """The objects of a List's (or a typed list's) items; a ``List`` item that is no object adds
    to ``problems``."""
    item_kind = (api_version, kind[: -len("List")]) if kind != "List" else None
    for position, item in enumerate(items):
        path = (*prefix, "items", position)
        if isinstance(item, PosDict):
            yield from _flatten(name, index, root, item, path, (), item_kind, problems)
        elif kind == "List" and item is not None:
            # Each item is decoded into an object (a JSON object): a scalar or a list fails
            # (json.Unmarshal of null leaves the object empty: a null item is only skipped,
            # as linkerd's `inject` golden files hold them; real corpus).
            span = locate(root, path, root.span)
            message = f"List item must be an object, not {_shown(item)}"
            problems.append(LoadProblem("parse-error", message, span))


def _shown(value: Any) -> str:
    """A value's kind in words, for a message."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "a scalar"


def _with_type(data: PosDict, api_version: str, kind: str) -> PosDict:
    """A copy of a typed List's item with the apiVersion and kind of the List (placed at the item)."""
    copy = PosDict(data.span)
    copy.update(data)
    copy.pos.extend(data.pos)
    at_item = data.span.line << COLUMN_BITS | data.span.column
    for key, value in (("apiVersion", api_version), ("kind", kind)):
        if key not in copy:
            copy[key] = value
            copy.pos.append(at_item)
    return copy
