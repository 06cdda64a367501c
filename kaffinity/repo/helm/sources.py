"""Rendered Helm output mapped back to its templates by the ``# Source: <chart>/templates/x.yaml``
comments (helm template prints them; the SDK's output gets them too), positions found in the
template text by indentation, since a template with ``{{ }}`` actions is seldom YAML. The same
mapping serves rendered output piped on stdin; where a template is not on disk,
:meth:`kaffinity.repo.rendered.Rendered.origin` names it."""

from __future__ import annotations

import bisect
import functools
import itertools
import os
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from kaffinity.load.parse import DEFAULT_LIMITS, Limits, LoadProblem, SourceFile
from kaffinity.load.read import read_text
from kaffinity.load.source import (
    DataPath,
    Document,
    PosDict,
    PosList,
    Span,
    unpack,
)
from kaffinity.repo.helm_worker import SEPARATOR
from kaffinity.repo.origins import Entry, object_name, template_documents, template_positions
from kaffinity.repo.rendered import RENDER_PROBLEM, Rendered, Section
from kaffinity.repo.sandbox import (
    confined_file,
    repository_root,
)

_SOURCE_COMMENT = re.compile(r"^# Source: (\S.*?)\s*$", re.M)
_SUPPRESSION_COMMENT = re.compile(r"(?:^|(?<=\s))#\s*kaffinity:\s*ignore\[[^\]]*\].*$")


# --- `# Source:` mapping -------------------------------------------------------------------


def map_helm_sources(
    file: SourceFile,
    chart_root: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    roots: Sequence[str] | None = None,
) -> Rendered:
    """Point the documents of rendered Helm output at the templates its ``# Source:`` comments name.

    A template is looked for under ``chart_root`` (``<chart>/templates/x.yaml`` is
    ``chart_root/templates/x.yaml``; a subchart's ``<chart>/charts/sub/...`` likewise), else
    relative to the working directory (as ``<chart>/templates/x.yaml``, or as
    ``templates/x.yaml`` when the working directory is the chart). A mapped document's
    positions are found in the template text by indentation (:func:`template_positions`); the
    template's text comes with it, so ``# kaffinity: ignore[...]`` comments there apply.
    Documents with no ``# Source:``, whose template is not on disk, or whose part of the template
    cannot be told, stay in ``file`` at their rendered position; :meth:`Rendered.origin` then
    names their template. Templates are read only inside ``roots`` (default: the repository
    around the working folder, :func:`kaffinity.repo.sandbox.repository_root`).
    """
    started = time.perf_counter()
    parts = _sources_by_line(file.text)
    if not parts:
        return Rendered(file.name, None, (file,), time.perf_counter() - started)
    starts = [part[0] for part in parts]
    origins = [_source_of(parts, starts, doc) for doc in file.documents]
    confined = tuple(roots) if roots else (repository_root(chart_root or "."),)
    templates = _Templates(file, origins, chart_root, limits, confined)
    texts = templates.texts
    mapped: dict[str, list[Document]] = {}
    kept: list[Document] = []
    sections: list[Section] = []
    moved: list[tuple[int, int]] = []  # the lines of the documents pointed at their template
    # A key given twice in the output: every object kept (the later value read, as go-yaml v2
    # decodes for sigs.k8s.io/yaml), and the duplicate reported at its template line.
    duplicates: dict[str, list[LoadProblem]] = {}
    placed: set[Span] = set()
    for doc, origin in zip(file.documents, origins, strict=True):
        if origin is None:
            kept.append(doc)
            continue
        template, first, last = origin
        path, repointed = templates.repoint(doc, template)
        if path is None or repointed is None:
            kept.append(doc)
            sections.append(Section(file.name, first, last, path or template))
        else:
            mapped.setdefault(path, []).append(repointed)
            moved.append((first, last))
            for duplicate in doc.duplicate_keys:
                where = _key_path(doc.data, duplicate.key, duplicate.span)
                if where is not None:
                    placed.add(duplicate.span)
                    span = _later_key(texts[path] or "", duplicate.key, repointed.locate(where))
                    problem = _rendered_duplicate(duplicate.key, span)
                    duplicates.setdefault(path, []).append(problem)
    problems = tuple(
        problem
        for problem in file.problems
        if not (problem.span in placed and problem.message.startswith("mapping key "))
    )
    files = [
        SourceFile(path, texts[path] or "", tuple(docs), tuple(duplicates.get(path, ())))
        for path, docs in mapped.items()
    ]
    if kept or problems:
        text = _without_suppressions(file.text, moved)
        files.insert(0, SourceFile(file.name, text, tuple(kept), problems))
    return Rendered(file.name, None, tuple(files), time.perf_counter() - started, tuple(sections))


def _key_path(data: Any, key: str, span: Span) -> DataPath | None:
    """The data path of ``key`` in ``data`` where the parser recorded it at ``span`` (the later
    of a key given twice: kaffinity.load.parse keeps that position). Without recursion."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, PosDict):
            if key in node and (position := node.key_position(key)) is not None and unpack(position) == span:
                return (*path, key)
            stack.extend((value, (*path, name)) for name, value in node.items())
        elif isinstance(node, PosList):
            stack.extend((value, (*path, index)) for index, value in enumerate(node))
    return None


def _later_key(text: str, key: str, span: Span) -> Span:
    """The template line of the later of a key given twice: the positions of a rendered object
    are found in its template by key (the first such key), so the same key again below it, at
    the same indentation and in the same block, is the one Helm's output repeats. ``span``
    itself when there is none (the key repeated through an include or a value)."""
    lines = text.splitlines()
    indent = span.column - 1
    if not 0 < span.line <= len(lines) or not lines[span.line - 1][indent:].startswith(f"{key}:"):
        return span
    for number in range(span.line, len(lines)):
        line = lines[number]
        stripped = line.lstrip()
        if not stripped or stripped.startswith(("#", "{{")):
            continue
        depth = len(line) - len(stripped)
        if depth < indent:
            break
        if depth == indent and stripped.startswith(f"{key}:"):
            return Span(number + 1, span.column)
    return span


def _rendered_duplicate(key: str, span: Span) -> LoadProblem:
    """A key given twice in an object a template rendered. Helm reads the manifest leniently
    (sigs.k8s.io/yaml over go-yaml v2, non-strict: the later value wins), but ``helm install``
    and ``helm upgrade`` validate it strictly by default (helm/helm pkg/kube/client.go, Build:
    ``metav1.FieldValidationStrict`` unless --disable-openapi-validation; kubectl's
    cmdutil Factory.Validator adds ``validation.NoDoubleKeySchema``), so they refuse the release;
    ``kubectl apply`` does too (``--validate=strict``). Reported at the template line, every
    object of the chart still linted with the later value."""
    message = (
        f'mapping key "{key}" given twice in the rendered object: helm install refuses it '
        "(strict validation); the later value is read"
    )
    return LoadProblem(RENDER_PROBLEM, message, span)


class _Templates:
    """The templates the documents of rendered output came from: their text (read once), and
    which object of each template and kind a document is."""

    def __init__(
        self,
        file: SourceFile,
        origins: Sequence[tuple[str, int, int] | None],
        chart_root: str | None,
        limits: Limits,
        roots: Sequence[str],
    ) -> None:
        self.chart_root = chart_root
        self.limits = limits
        self.roots = roots
        self.counts = Counter(
            (origin[0], doc.data.get("kind"))
            for doc, origin in zip(file.documents, origins, strict=True)
            if origin
        )
        self.totals = Counter(origin[0] for origin in origins if origin)
        self.seen: Counter[tuple[str, Any]] = Counter()
        self.seen_of_template: Counter[str] = Counter()
        self.texts: dict[str, str | None] = {}

    def repoint(self, doc: Document, template: str) -> tuple[str | None, Document | None]:
        """The template's path on disk (None: not found), and ``doc`` pointed at its position there
        (None: the template could not be read, or its part cannot be told)."""
        kind = doc.data.get("kind")
        ordinal = self.seen[(template, kind)]
        self.seen[(template, kind)] += 1
        order = (self.seen_of_template[template], self.totals[template])
        self.seen_of_template[template] += 1
        path = template_path(template, self.chart_root, self.roots)
        if path is None:
            return None, None
        if path not in self.texts:
            _, read_back, problem = read_text(path, self.limits)
            self.texts[path] = read_back if problem is None else None
        text = self.texts[path]
        if text is None:
            return path, None
        return path, _repoint_template(doc, path, text, ordinal, self.counts[(template, kind)], order)


def _without_suppressions(text: str, ranges: Sequence[tuple[int, int]]) -> str:
    """``text`` with the ``# kaffinity: ignore[...]`` comments of the lines in ``ranges`` removed:
    helm copies a template's comments into its output, and a comment whose document now points at
    the template (where the same comment applies) must not also stand, unused, in the stream."""
    if "kaffinity:" not in text or not ranges:
        return text
    lines = text.split("\n")
    for first, last in ranges:
        for number in range(first, min(last, len(lines)) + 1):
            line = lines[number - 1]
            if "kaffinity:" in line:
                lines[number - 1] = _SUPPRESSION_COMMENT.sub("", line).rstrip()
    return "\n".join(lines)


def _sources_by_line(text: str) -> list[tuple[int, int, str | None]]:
    """The rendered stream's documents as (first line, last line, template or None), in order;
    empty when no ``# Source:`` comment is in it."""
    if "# Source: " not in text:
        return []
    separators = [text.count("\n", 0, match.start()) + 1 for match in SEPARATOR.finditer(text)]
    bounds = [1, *(line for line in separators if line > 1), text.count("\n") + 2]
    parts: list[tuple[int, int, str | None]] = [
        (start, end - 1, None) for start, end in itertools.pairwise(bounds)
    ]
    starts = [part[0] for part in parts]
    for match in _SOURCE_COMMENT.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        index = bisect.bisect_right(starts, line) - 1
        first, last, template = parts[index]
        if template is None:  # the first `# Source:` of a document names it
            parts[index] = (first, last, match.group(1))
    return parts


def _source_of(
    parts: list[tuple[int, int, str | None]], starts: list[int], doc: Document
) -> tuple[str, int, int] | None:
    line = getattr(doc.root, "span", doc.span).line
    index = bisect.bisect_right(starts, line) - 1
    if index < 0:
        return None
    first, last, template = parts[index]
    return (template, first, last) if template is not None else None


def template_path(template: str, chart_root: str | None, roots: Sequence[str]) -> str | None:
    """The file on disk that a ``# Source:`` path names, or None. Only a regular file inside
    the repository: rendered output (a chart's own, or piped on stdin) can carry any
    ``# Source:`` comment, ``../../etc/passwd`` too, and the file's lines would be printed."""
    parts = template.split("/")
    candidates = []
    if chart_root is not None and len(parts) > 1:
        candidates.append(os.path.join(chart_root, *parts[1:]))
    candidates.append(os.path.join(*parts))
    if len(parts) > 1 and os.path.isfile("Chart.yaml"):
        candidates.append(os.path.join(*parts[1:]))
    for candidate in candidates:
        if confined_file(candidate, roots):
            return os.path.normpath(candidate)
    return None


def _repoint_template(
    doc: Document, path: str, text: str, ordinal: int, count: int, order: tuple[int, int]
) -> Document | None:
    blocks = _template_blocks(text)
    block = _choose_block(blocks, doc.data.get("kind"), object_name(doc.data), ordinal, count, order)
    if block is None:
        if any(blocks):
            return None
        # The whole object comes from a named template (`{{ include "x.podMonitor" . }}`): every
        # path is at the line that includes it.
        match = _INCLUDE_LINE.search(text)
        if match is None:
            return None
        line = text.count("\n", 0, match.start()) + 1
        span = Span(line, match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1)
        return replace(doc, file=path, index=0, root=PosDict(span), prefix=(), span=span)
    index, entries = block
    root = template_positions(doc.data, entries)
    if not isinstance(root, PosDict):
        return None
    span = root.span
    for key in ("apiVersion", "kind"):
        position = root.key_position(key)
        if position is not None:
            span = unpack(position)
            break
    return replace(doc, file=path, index=index, root=root, prefix=(), span=span)


@functools.lru_cache(maxsize=64)
def _template_blocks(text: str) -> list[list[Entry]]:
    """:func:`template_documents` of a template's text, once per template (a ``range`` renders
    many objects from one)."""
    return template_documents(text.splitlines())


_INCLUDE_LINE = re.compile(r"\{\{-?\s*(?:include|template)\s")


def _choose_block(
    blocks: list[list[Entry]], kind: Any, name: str, ordinal: int, count: int, order: tuple[int, int]
) -> tuple[int, list[Entry]] | None:
    """The part of a template (between ``---`` lines) that rendered the ``ordinal``-th object of
    this kind from it (of ``count``; ``order``: its position among all the objects the template
    rendered, and their number): among the parts whose literal ``kind:`` is that kind, the
    one whose ``metadata.name`` pattern fits the rendered name best (most literal characters),
    else by order when every such part rendered; with no such part, the only part whose kind is
    not spelled out."""
    usable = [(index, entries) for index, entries in enumerate(blocks) if entries]
    kinds = [_top_value(entries, "kind") for _, entries in usable]
    of_kind = [part for part, literal in zip(usable, kinds, strict=True) if literal == kind]
    if len(of_kind) == 1:
        return of_kind[0]  # also a `range` that renders several objects from one part
    if len(of_kind) > 1:
        return _by_name(of_kind, name, ordinal, count)
    return _unknown_kind(usable, kinds, order)


def _by_name(
    of_kind: list[tuple[int, list[Entry]]], name: str, ordinal: int, count: int
) -> tuple[int, list[Entry]] | None:
    """Of the parts of the kind, the one whose ``metadata.name`` fits best, else by order when
    every such part rendered."""
    fits = [(_name_fit(entries, name), (index, entries)) for index, entries in of_kind]
    best = max(fit for fit, _ in fits)
    chosen = [part for fit, part in fits if fit == best]
    if best >= 0 and len(chosen) == 1:
        return chosen[0]
    return of_kind[ordinal] if len(of_kind) == count and ordinal < len(of_kind) else None


def _unknown_kind(
    usable: list[tuple[int, list[Entry]]], kinds: list[str | None], order: tuple[int, int]
) -> tuple[int, list[Entry]] | None:
    """No part spells the kind: the only part whose kind is not spelled out; for kinds the
    template computes (`kind: {{ ternary "Role" "ClusterRole" ... }}`), by order, when every
    part rendered one object."""
    unknown = [
        part for part, literal in zip(usable, kinds, strict=True) if literal is None or "{{" in literal
    ]
    if len(unknown) == 1:
        return unknown[0]
    ordinal, total = order
    return usable[ordinal] if unknown and len(usable) == total and ordinal < total else None


def _top_value(entries: Sequence[Entry], key: str) -> str | None:
    return next((entry.value for entry in entries if entry.key == key and entry.column == 1), None)


_ACTION = re.compile(r"\{\{.*?\}\}")


def _name_fit(entries: Sequence[Entry], name: str) -> int:
    """How well a part's ``metadata.name`` fits the rendered name: the number of its literal
    characters when its pattern (actions as wildcards) matches, -1 when it does not or is absent."""
    in_metadata = False
    for entry in entries:
        if entry.column == 1:
            in_metadata = entry.key == "metadata"
        elif in_metadata and entry.key == "name":
            literal = _ACTION.split(entry.value)
            pattern = ".*".join(re.escape(piece) for piece in literal)
            return sum(map(len, literal)) if re.fullmatch(pattern, name, re.S) else -1
    return -1
