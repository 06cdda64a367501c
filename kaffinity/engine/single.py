"""The single-object stage: the rules that read one object alone, file by file.

Most rules read one object at a time, from its own file alone (the schemas, the API server's
validation, the matchLabelKeys expansion: :func:`single_object_rules`). They run on each file
through :func:`file_result`, whose :class:`FileResult` is what the engine
(:func:`kaffinity.engine.lint`) takes their findings from: in the worker that parsed the file
(:mod:`kaffinity.stream`, ``--jobs``; the file is then compacted), or in the run's own process
for input read whole (:func:`single_object_stage`). Either way the engine receives per-file
results, and applies suppressions, the reported files and the units to them as to any other
finding (``tests/test_stream.py`` compares the two).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING, Any

from kaffinity.config import Settings
from kaffinity.context import Context, RunState
from kaffinity.engine.record import Recorder
from kaffinity.findings import Finding, Violation
from kaffinity.k8s.compact import Fields
from kaffinity.k8s.model import Object
from kaffinity.load.parse import STDIN_NAME, SourceFile
from kaffinity.load.source import Document
from kaffinity.rules.base import POLICY_CATEGORY, Rule, rule_enabled
from kaffinity.suppress import Suppression

if TYPE_CHECKING:
    from kaffinity.expand.merge import Expansions
    from kaffinity.repo.units import Layout


@dataclass(frozen=True, slots=True)
class FileResult:
    """One file after the single-object stage."""

    #: The file, compact (or whole, for stdin and input read whole); its problems as read.
    file: SourceFile
    #: (rule, index of the document in ``file.documents`` or None, finding) of each rule of
    #: :func:`single_object_rules` that ran, in the order the rules ran, before suppressions.
    findings: tuple[tuple[str, int | None, Finding], ...]
    #: The file's ``# kaffinity: ignore`` comments (read from its text, which is gone once the
    #: file is compacted; () for a file read whole: the engine reads them from its text).
    comments: tuple[Suppression, ...]
    internal_errors: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    #: The typed object of each document (None: none, or not built), on the compact documents,
    #: when the rules built them; never pickled: sending or caching them costs more than
    #: building them again (``benchmarks``), so only the process that checked the file has them.
    typed: tuple[Object | None, ...] | None = field(default=None, compare=False)

    def __reduce__(self) -> tuple[Any, ...]:
        return FileResult, (
            self.file,
            self.findings,
            self.comments,
            self.internal_errors,
            self.notices,
        )


def single_object_rules(rules: Iterable[Rule], settings: Settings) -> list[Rule]:
    """The rules of ``rules`` that the single-object stage runs, in order: those with a check
    that read one object at a time, from its own file alone, without the cluster; no policy but
    those made to run here (``Rule.streams``: :mod:`kaffinity.policy.streamed`)."""
    return [
        rule
        for rule in rules
        if rule.check is not None
        and not rule.needs_all_manifests
        and not rule.needs_cluster
        and not rule.reads_other_files
        and (rule.category != POLICY_CATEGORY or rule.streams)
        and rule_enabled(rule, settings.select, settings.ignore)
    ]


def kept_fields(rules: Iterable[Rule]) -> Fields:
    """What compaction keeps of a pod template: the union of the fields ``rules`` that run on
    compact files declare (``Rule.reads``: the rules outside this stage)."""
    kept = Fields()
    for rule in rules:
        if rule.reads is not None:
            kept |= rule.reads
    return kept


@cache
def registry_fields() -> Fields:
    """:func:`kept_fields` of the registry's rules, once."""
    from kaffinity.rules import RULES

    return kept_fields(RULES)


def file_result(
    file: SourceFile,
    settings: Settings,
    rules: Sequence[Rule],
    *,
    local: bool = True,
    compact: bool = True,
    objects: dict[int, Object | None] | None = None,
    state: RunState | None = None,
    layout: Layout | None = None,
    expansions: Expansions | None = None,
) -> FileResult:
    """The single-object stage of one parsed file: ``rules`` (:func:`single_object_rules`) if
    ``local``, then, with ``compact``, its suppression comments and the file compacted (stdin is
    kept whole: it cannot be read again for the report).

    Without ``compact`` (input read whole, in the run's process: :func:`single_object_stage`)
    the documents are the run's: ``objects`` are the run's typed objects, ``state`` its run state
    (the built-in findings go into it), ``layout`` where a rendered object's fields are written,
    ``expansions`` the run's merged selectors."""
    from kaffinity.k8s.compact import compact_file
    from kaffinity.suppress import comment_suppressions

    findings: tuple[tuple[str, int | None, Finding], ...] = ()
    errors: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    built: dict[int, Object | None] = objects if objects is not None else {}
    if local and rules and (file.documents or not compact):
        findings, errors, notices, inventoried = _run_rules(
            file, settings, rules, built, state, layout, expansions
        )
        if objects is None and not inventoried:
            built.clear()  # not built: the engine builds them, once
    if not compact:
        return FileResult(file, findings, (), errors, notices)
    comments = tuple(comment_suppressions(file.name, file.text))
    if file.name == STDIN_NAME:
        return FileResult(file, findings, comments, errors, notices)
    kept = compact_file(file, settings.workload_kinds, registry_fields())
    typed = None
    if built and all(id(doc) in built for doc in file.documents):
        # The rules built the typed objects (all of them): the compact documents take them over.
        typed = tuple(
            replace(obj, doc=small) if (obj := built[id(whole)]) is not None else None
            for whole, small in zip(file.documents, kept.documents, strict=True)
        )
    return FileResult(kept, findings, comments, errors, notices, typed)


def _run_rules(
    file: SourceFile,
    settings: Settings,
    rules: Sequence[Rule],
    objects: dict[int, Object | None],
    state: RunState | None,
    layout: Layout | None,
    expansions: Expansions | None = None,
) -> tuple[tuple[tuple[str, int | None, Finding], ...], tuple[str, ...], tuple[str, ...], bool]:
    """The rules on one file; ``objects`` gets the typed objects they built, by id() of document
    (the last item: whether they built them all, the inventory)."""
    state = state if state is not None else RunState()
    context = Context([file], settings, objects=objects, run=state, expansions=expansions)
    collector = Collector([file], settings, rules, state, layout)
    for rule in rules:
        collector.check(rule, context)
    index = {id(doc): number for number, doc in enumerate(file.documents)}
    found = tuple(
        (name, index.get(id(doc)) if doc is not None else None, finding)
        for name, doc, finding in collector.collected
    )
    return found, tuple(collector.internal_errors), tuple(context.notices), "inventory" in context.__dict__


class Collector(Recorder):
    """The recording of findings without the rest (suppressions, reported files, units): the
    single-object stage's, whose findings the engine of the run then takes
    (:meth:`Recorder.take`)."""

    def __init__(
        self,
        files: Sequence[SourceFile],
        settings: Settings,
        enabled: Sequence[Rule],
        state: RunState,
        layout: Layout | None = None,
    ) -> None:
        super().__init__(files, settings, enabled, state, layout=layout, suppressions=False)
        #: (rule, document, finding) in the order found.
        self.collected: list[tuple[str, Document | None, Finding]] = []

    def add_violation(self, rule: Rule, violation: Violation) -> None:
        self.collected.append((rule.name, violation.doc, self.placed(rule, violation)))


def single_object_stage(
    documents: Sequence[Document],
    files: Sequence[SourceFile],
    settings: Settings,
    rules: Sequence[Rule],
    state: RunState,
    objects: dict[int, Object | None],
    layout: Layout | None = None,
    expansions: Expansions | None = None,
) -> list[FileResult]:
    """The single-object stage of input read whole, in this process: :func:`file_result` of each
    file's ``documents`` (the run's objects: a rendered object has no file of its own and goes
    with the documents of the file it names), in order, without compacting them."""
    by_name: dict[str, SourceFile] = {}
    for file in files:
        by_name.setdefault(file.name, file)
    if not documents:  # the rules run all the same: one that crashes says so (exit code 3)
        return [file_result(SourceFile("", "", (), ()), settings, rules, compact=False, state=state)]
    results: list[FileResult] = []
    start = 0
    for end in range(1, len(documents) + 1):
        if end < len(documents) and documents[end].file == documents[start].file:
            continue
        part = documents[start:end]
        name = part[0].file
        own = by_name.get(name)
        whole = (
            replace(own, documents=tuple(part)) if own is not None else SourceFile(name, "", tuple(part), ())
        )
        results.append(
            file_result(
                whole,
                settings,
                rules,
                compact=False,
                objects=objects,
                state=state,
                layout=layout,
                expansions=expansions,
            )
        )
        start = end
    return results
