"""The engine: select rules, run their checks, place findings, apply suppressions, sort.

Rules yield data paths; the engine maps each path to the nearest recorded position in the
document (never a made-up line 1), attaches the object, applies the configured severity, and
drops what a suppression covers. New rules need no change here: the registry lists them.
"""

from __future__ import annotations

import gc
import os
import traceback
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kaffinity.config import Settings
from kaffinity.context import Context
from kaffinity.findings import (
    CAUSE_NAMES,
    CAUSE_RENDERED_FROM,
    MAX_CAUSES,
    MAX_RELATED,
    Cause,
    Finding,
    Location,
    Severity,
    Violation,
    anchor_of,
)
from kaffinity.k8s.model import Object, ObjectRef
from kaffinity.k8s.model.build import object_ref
from kaffinity.k8s.model.kinds import pod_template_path
from kaffinity.load.parse import SourceFile
from kaffinity.load.source import DataPath, Document, Span, format_path
from kaffinity.rules import RULES
from kaffinity.rules.base import POLICY_CATEGORY, Rule, finding_fact, rule_enabled, severity_of
from kaffinity.suppress import Suppression, annotation_suppressions, comment_suppressions

if TYPE_CHECKING:
    from kaffinity.graph.changes import Related
    from kaffinity.load.edits import Edit
    from kaffinity.repo.changed import Change
    from kaffinity.repo.rendering import RenderSummary
    from kaffinity.repo.units import Layout
    from kaffinity.simulate.cluster import Cluster


@dataclass(frozen=True, slots=True)
class Checked:
    """One file after the single-object stage."""

    #: The file, compact (or whole, for stdin); its problems as read.
    file: SourceFile
    #: (rule, index of the document in ``file.documents`` or None, finding) of each rule of
    #: :func:`streamed_rules` that ran, in the order the rules ran, before suppressions.
    findings: tuple[tuple[str, int | None, Finding], ...]
    #: The file's ``# kaffinity: ignore`` comments (read from its text, which is gone).
    comments: tuple[Suppression, ...]
    internal_errors: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    #: The typed object of each document (None: none, or not built), on the compact documents,
    #: when the rules built them; never pickled: sending or caching them costs more than
    #: building them again (``benchmarks``), so only the process that checked the file has them.
    typed: tuple[Object | None, ...] | None = field(default=None, compare=False)

    def __reduce__(self) -> tuple[Any, ...]:
        return Checked, (
            self.file,
            self.findings,
            self.comments,
            self.internal_errors,
            self.notices,
        )


def streamed_rules(rules: Iterable[Rule], settings: Settings) -> list[Rule]:
    """The rules of ``rules`` that the single-object stage runs, in order: those with a check
    that read one object at a time, from its own file alone, without the cluster; no policy."""
    return [
        rule
        for rule in rules
        if rule.check is not None
        and not rule.needs_all_manifests
        and not rule.needs_cluster
        and not rule.reads_other_files
        and rule.category != POLICY_CATEGORY
        and rule_enabled(rule, settings.select, settings.ignore)
    ]


#: The rule of input that could not be read or parsed: always reported, and the run exits 2.
LOAD_ERROR = "parse-error"
#: The exit code of a run in which kaffinity itself failed (a rule crashed): not 2, which bad input
#: gets, so that a bug cannot pass for a user's mistake.
INTERNAL_ERROR = 3


@dataclass(frozen=True, slots=True)
class NewOnly:
    """What ``--new-from-rev REV`` or ``--baseline FILE`` left out of a result: ``against`` is
    ``rev`` or ``baseline``, ``ref`` the revision or the file, ``known`` the findings that were
    there already (not shown), ``fixed`` the baseline's entries that no longer occur."""

    against: str
    ref: str
    known: int
    fixed: int = 0

    @property
    def phrase(self) -> str:
        """``12 findings also at main`` / ``12 findings in the baseline``, for the summaries."""
        what = f"{self.known} finding{'s' if self.known != 1 else ''}"
        if self.against == "baseline":
            return f"{what} in the baseline"
        return (
            f"{what} also at {self.ref}"
            if self.against == "rev"
            else f"{what} in the baseline or at {self.ref}"
        )


@dataclass(frozen=True, slots=True)
class LintResult:
    findings: tuple[Finding, ...]
    rules: tuple[Rule, ...]
    files: int
    documents: int
    suppressed: int
    load_errors: bool
    internal_errors: tuple[str, ...] = ()
    severities: dict[str, Severity] = field(default_factory=dict)
    #: The deployment units the input was read as, when there were several (kaffinity.repo.units).
    units: tuple[str, ...] = ()
    #: Files read and skipped: not Kubernetes manifests (``SourceFile.skipped``); not in ``files``.
    skipped: int = 0
    #: Work left undone because it passed a limit (``limits:``): one line each, naming the limit.
    notices: tuple[str, ...] = ()
    #: Findings left out of the report by ``--min-severity`` (they still decide the exit code).
    hidden: int = 0
    #: What was rendered and what was read as written (``kaffinity lint``; the reports count it).
    render: RenderSummary | None = None
    #: Findings left out because they were there before (``--new-from-rev``, ``--baseline``).
    new_only: NewOnly | None = None

    def failed(self, threshold: Severity | None) -> bool:
        return threshold is not None and any(f.severity.reaches(threshold) for f in self.findings)

    @property
    def exit_code(self) -> int:
        """3 when a rule crashed (a bug, whatever else happened), 2 when an input could not be
        read or parsed, else 0 (findings decide 1 against ``--fail-on``, in the CLI)."""
        return INTERNAL_ERROR if self.internal_errors else 2 if self.load_errors else 0


def lint(
    files: Sequence[SourceFile],
    settings: Settings,
    rules: Sequence[Rule] = RULES,
    cluster: Cluster | None = None,
    context: Context | None = None,
    reported: Collection[str] | None = None,
    layout: Layout | None = None,
    checked: Mapping[str, Checked] | None = None,
    change: Change | None = None,
) -> LintResult:
    """Run every enabled rule over the loaded files (and consult the declared cluster, if any).

    ``cluster``: the declared cluster, for a new context. ``context``: one built by the caller
    over the same files (and with the cluster, its one source then), whose derived views (the
    graph) the caller reads afterwards; by default a new one. ``reported``: the names of the files to
    report on (``--changed``); the other files are context, read by the rules but not reported
    on, except where a finding names a reported file among its related places. None: all.
    ``layout``: the deployment units (:mod:`kaffinity.repo.units`): the rules that read every
    manifest run once per unit, the others once per object; None: the files are one unit.
    ``checked``: by file name, what the single-object stage found in each file already
    (:mod:`kaffinity.stream`: the files are then compact, without their text); the rules it ran
    (:func:`kaffinity.stream.streamed_rules`) are not run again, their findings are taken as they
    are, suppressions and the reported files applied here as to any other.
    ``change`` (``--changed``; its files are ``reported``): also reported, each with its
    :class:`~kaffinity.findings.Cause`, the findings of the units rendered from a changed file
    and those of the objects a changed object relates to (:mod:`kaffinity.graph.changes`).
    """
    if context is not None:
        if cluster is not None:
            raise TypeError("lint: give the cluster in the context, not beside it")
        cluster = context.cluster
    enabled = tuple(rule for rule in rules if rule_enabled(rule, settings.select, settings.ignore))
    # The rules' own objects (inventory, graph, placement) live as long as the run and hold no
    # cycles worth collecting early, so the collector is paused while they run: at 100,000
    # workloads its passes over them cost 40% of the graph stage and grew faster than the
    # input. It is not frozen here (``gc.freeze``; the loader and the command freeze what lives
    # until the process exits): unfreezing afterwards put whatever was frozen, garbage of a
    # caller's earlier runs included, into the oldest generation without counting it towards
    # its next collection, so a process that lints again and again (the fuzzer's long mode, a
    # library user) grew by about 36 KB per run with a cluster, 24 GB in an hour.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _lint(files, settings, enabled, rules, cluster, context, reported, layout, checked, change)
    finally:
        if collecting:
            gc.enable()


def _running(settings: Settings, cluster: Cluster | None) -> dict[str, tuple[Severity | None, Severity]]:
    """Every registered rule that runs with these settings, by name: (its configured severity,
    rule over category, or None; its own). What :mod:`kaffinity.explain.precedence` reads to
    decide which of two findings about the same pods is kept."""
    configured = settings.severity
    return {
        rule.name: (configured.get(rule.name) or configured.get(rule.category), rule.severity)
        for rule in RULES
        if rule.check is not None
        and rule_enabled(rule, settings.select, settings.ignore)
        and not (rule.needs_cluster and cluster is None)
    }


def _lint(
    files: Sequence[SourceFile],
    settings: Settings,
    enabled: tuple[Rule, ...],
    rules: Sequence[Rule],
    cluster: Cluster | None,
    context: Context | None,
    reported: Collection[str] | None,
    layout: Layout | None,
    checked: Mapping[str, Checked] | None = None,
    change: Change | None = None,
) -> LintResult:
    if change is not None and reported is None:
        reported = change.files
    run = _Run(files, settings, enabled, None if reported is None else frozenset(reported), layout, checked)
    run.change = change
    run.load_problems(cluster.files if cluster is not None else ())
    typed: dict[int, Object | None] = {}  # shared: units overlap (a base, shared files)
    if context is None:
        documents = layout.units[0].documents if layout is not None else None
        context = Context(files, settings, cluster, documents, typed)
    running = _running(settings, cluster)
    context.running = running
    context.found, context.found_rules = run.found, run.found_rules
    context.run_cache = run.run_cache
    context.rendered, context.places = run.membership, run.places
    local = _local(run, context, layout, typed)
    typed = context.objects if context.objects is not None else typed
    each, together = _checked(enabled, context)
    streamed: dict[str, list[tuple[Finding, Document | None]]] = {}
    if checked is not None:
        streamed = _streamed(files, checked, run)
    units = layout.units if layout is not None and layout.several else ()
    from kaffinity.load.progress import current

    progress = current()  # a command's progress indicator: which rule runs
    with progress.stage("checking rules", len(each) + len(together) * max(1, len(units))):
        for rule in each:
            progress.tick(rule.name)
            if rule.name in streamed:
                run.take(rule.name, streamed[rule.name])
            else:
                run.check(rule, local)
        if not units:
            run.relate(context, context.documents)
            for rule in together:
                progress.tick(rule.name)
                run.check(rule, context)
        for unit in units:
            # One unit at a time: its graph and placement are dropped before the next is built.
            run.unit = unit.name
            unit_context = (
                context
                if _same(unit.documents, context.documents)
                else Context(files, settings, cluster, unit.documents, typed)
            )
            unit_context.running = running
            unit_context.found, unit_context.found_rules = run.found, run.found_rules
            unit_context.run_cache = run.run_cache
            unit_context.rendered, unit_context.places = run.membership, run.places
            run.relate(unit_context, unit.documents)
            for rule in together:
                progress.tick(f"{rule.name} ({unit.name})")
                run.check(rule, unit_context)
            run.notice(unit_context.notices, unit.name)
        run.unit = ""
        run.related = None
    run.notice(context.notices)
    if local is not context:
        run.notice(local.notices)
    run.unused_suppressions(rules)
    return _result(run, enabled, cluster, layout)


def _local(run: _Run, context: Context, layout: Layout | None, typed: dict[int, Object | None]) -> Context:
    """The context of the rules that read one object at a time: every object once (of a unit's
    copy, the file's own); in a pre-commit run only the reported files: the context is the
    whole repository, and validating it all would be wasted work."""
    objects: Sequence[Document] | None = layout.documents if layout is not None else None
    if not run.everything:
        # With --changed, the objects of the units rendered from a changed file too: they are
        # not what they were, wherever they point.
        touched = run.change.units if run.change is not None else {}
        membership = run.membership
        objects = [
            doc
            for doc in (objects if objects is not None else context.documents)
            if doc.file in run.reported or any(unit in touched for unit in membership.get(id(doc), ()))
        ]
    if objects is None or _same(objects, context.documents):
        return context
    local = Context(run.files, run.settings, context.cluster, objects, context.objects or typed)
    local.running = context.running
    local.found, local.found_rules = context.found, context.found_rules
    local.run_cache = context.run_cache
    local.rendered, local.places = context.rendered, context.places
    return local


def _streamed(
    files: Sequence[SourceFile], checked: Mapping[str, Checked], run: _Run
) -> dict[str, list[tuple[Finding, Document | None]]]:
    """The findings of the single-object stage, by rule (every rule it ran, in the order it ran
    them), each with its document in the compact files; its internal errors and notices are the
    run's (once each: every file reports a crash of the same rule)."""
    found: dict[str, list[tuple[Finding, Document | None]]] = {
        rule.name: [] for rule in streamed_rules(run.enabled.values(), run.settings)
    }
    errors: dict[str, None] = {}
    notices: dict[str, None] = {}
    for file in files:
        result = checked.get(file.name)
        if result is None:
            continue
        for name, index, finding in result.findings:
            found[name].append((finding, file.documents[index] if index is not None else None))
        errors.update(dict.fromkeys(result.internal_errors))
        notices.update(dict.fromkeys(result.notices))
    run.internal_errors.extend(errors)
    run.notices.extend(notices)
    return found


def _checked(enabled: Sequence[Rule], context: Context) -> tuple[list[Rule], list[Rule]]:
    """The rules that run, those that read one object at a time and those that read every
    manifest. Rules that read the declared cluster have nothing to say without one (and would
    import the offline scheduler to find that out), nor with one that could not all be read:
    its missing nodes would make every pod Pending (the parse-error says why, exit code 2)."""
    usable = context.cluster is not None and not any(
        problem.rule == "parse-error" for file in context.cluster.files for problem in file.problems
    )
    checked = [rule for rule in enabled if rule.check is not None and (usable or not rule.needs_cluster)]
    each = [rule for rule in checked if not rule.needs_all_manifests]
    together = [rule for rule in checked if rule.needs_all_manifests]
    return each, together


def _result(
    run: _Run, enabled: tuple[Rule, ...], cluster: Cluster | None, layout: Layout | None
) -> LintResult:
    """The run's findings in order, with what the reports say about the run."""
    files, settings = run.files, run.settings
    shown = files if run.everything else [file for file in files if file.name in run.reported]
    skipped = sum(1 for file in shown if file.skipped is not None)
    # A load error is reported whatever the selection: its rule is listed with the run's rules.
    from kaffinity.rules import BY_NAME

    forced = sorted({finding.rule for finding in run.findings} - set(run.enabled))
    shown_rules = enabled + tuple(BY_NAME[name] for name in forced)
    merged = run.merged()  # before the notices are read: it adds that of limits: findings
    return LintResult(
        findings=tuple(sorted(merged, key=Finding.sort_key)),
        rules=shown_rules,
        files=len(shown) - skipped,
        skipped=skipped,
        documents=sum(len(file.documents) for file in shown),
        suppressed=run.suppressed,
        load_errors=any(
            problem.rule == LOAD_ERROR
            for file in (*shown, *(cluster.files if cluster is not None else ()))
            for problem in file.problems
        ),
        internal_errors=tuple(run.internal_errors),
        severities={
            rule.name: severity_of(rule, settings) if rule.name in run.enabled else rule.severity
            for rule in shown_rules
        },
        units=tuple(unit.name for unit in layout.units) if layout is not None and layout.several else (),
        notices=tuple(run.notices),
    )


def _with_causes(finding: Finding, more: Sequence[Cause]) -> Finding:
    """``finding`` with the causes of its copy in another unit too (at most MAX_CAUSES)."""
    return replace(finding, because=tuple(dict.fromkeys((*finding.because, *more)))[:MAX_CAUSES])


def _same(one: Sequence[Document], other: Sequence[Document]) -> bool:
    """The same documents, in the same order (identity: a unit that is the whole input)."""
    return len(one) == len(other) and all(a is b for a, b in zip(one, other, strict=True))


#: Fix plans one run makes for its findings' hints (kaffinity.rules.revision_unscoped: a file of
#: a thousand workloads has thousands of findings; planning each made lint ten times slower).
PLANS_PER_RUN = 200


class _Run:
    """The mutable state of one lint run (kept out of the rules)."""

    def __init__(
        self,
        files: Sequence[SourceFile],
        settings: Settings,
        enabled: Sequence[Rule],
        reported: frozenset[str] | None = None,
        layout: Layout | None = None,
        checked: Mapping[str, Checked] | None = None,
        *,
        suppressions: bool = True,
    ) -> None:
        self.settings = settings
        #: The unit whose rules run now ("" outside units); its findings name it.
        self.unit = ""
        #: Rendered objects whose fields an overlay patch may have set (kaffinity.repo.units).
        self.places = layout.places if layout is not None else {}
        #: The unit of each rendered object (a finding on it names the unit that built it).
        self.membership = layout.membership if layout is not None else {}
        #: The files reported on; None: every file.
        self.reported = reported if reported is not None else frozenset(file.name for file in files)
        self.everything = reported is None
        #: ``--changed``: the change (set by the caller), and what it relates to in the unit
        #: whose rules run now (:meth:`relate`).
        self.change: Change | None = None
        self.related: Related | None = None
        self._present: frozenset[str] | None = None
        self.enabled = {rule.name: rule for rule in enabled}
        #: The built-in rules' findings by id() of their document, and the rules that ran
        #: (Context.found, Context.found_rules).
        self.found: dict[int, list[dict[str, object]]] = {}
        self.found_rules: set[str] = set()
        #: Context.run_cache: one per run.
        self.run_cache: dict[str, object] = {}
        self.findings: list[Finding] = []
        #: Each finding's place in ``findings`` by its position (:meth:`_key`).
        self.positions: dict[tuple[object, ...], int] = {}
        #: Findings past ``limits: findings``, not kept.
        self.dropped = 0
        #: Fixes still planned for a hint (Violation.plan): each costs about a millisecond (the
        #: term's document loaded again to verify the edit), so a run plans the first
        #: PLANS_PER_RUN; the others keep the violation's own hint, which promises no edit.
        self.plans_left = PLANS_PER_RUN
        self.notices: list[str] = []
        self.suppressed = 0
        self.internal_errors: list[str] = []
        self.comments: dict[str, dict[int, list[Suppression]]] = {}
        self.all_suppressions: list[Suppression] = []
        self.annotations: dict[int, list[Suppression]] = {}
        self.files = files
        if suppressions:  # the single-object stage's collector applies none
            self._read_comments(files, checked)
            self._read_annotations(files, layout)

    def _read_comments(self, files: Sequence[SourceFile], checked: Mapping[str, Checked] | None) -> None:
        """The suppression comments of each file, by the lines they cover (read by the
        single-object stage, for the files it checked: their text is gone)."""
        read: set[str] = set()
        for file in files:
            if file.name in read:  # a file and the rendered objects that point at it: once
                continue
            read.add(file.name)
            by_line: dict[int, list[Suppression]] = {}
            result = checked.get(file.name) if checked is not None else None
            comments = result.comments if result is not None else comment_suppressions(file.name, file.text)
            for suppression in comments:
                self.all_suppressions.append(suppression)
                # A comment covers its own line and the line below it.
                for line in (suppression.span.line, suppression.span.line + 1):
                    by_line.setdefault(line, []).append(suppression)
            if by_line:
                self.comments[file.name] = by_line

    def _read_annotations(self, files: Sequence[SourceFile], layout: Layout | None) -> None:
        """The suppression annotations of each object (of its pod template too)."""
        documents: dict[int, Document] = {id(doc): doc for file in files for doc in file.documents}
        if layout is not None:  # rendered objects are documents of no file
            documents.update((id(doc), doc) for doc in layout.documents)
        for doc in documents.values():
            kind, api_version = doc.data.get("kind"), doc.data.get("apiVersion")
            template = (
                pod_template_path(kind, api_version, self.settings.workload_kinds)
                if isinstance(kind, str) and isinstance(api_version, str)
                else None
            )
            found = list(annotation_suppressions(doc, [template] if template else []))
            if found:
                self.annotations[id(doc)] = found
                self.all_suppressions.extend(found)

    def load_problems(self, cluster: Sequence[SourceFile] = ()) -> None:
        """The loader's problems, as findings: those of the reported files and of the cluster.

        A load error (``parse-error``: input that could not be read or parsed) is always
        reported, at its own severity (error), whatever ``--select``/``--ignore``, ``severity:``
        and suppressions say: the run exits 2 because of it, and must say why. Other problems
        (``helm-template``) are findings like any other.
        """
        from kaffinity.rules import BY_NAME

        for always, files in ((False, self.files), (True, cluster)):
            for file in files:
                for problem in file.problems:
                    if problem.rule == LOAD_ERROR:
                        rule = BY_NAME[LOAD_ERROR]
                        finding = self._finding(rule, file.name, problem.span, problem.message)
                        self.add(replace(finding, severity=rule.severity), always=always, load_error=True)
                        continue
                    enabled = self.enabled.get(problem.rule)
                    if enabled is not None:
                        finding = self._finding(enabled, file.name, problem.span, problem.message)
                        self.add(finding, always=always)

    def relate(self, context: Context, documents: Sequence[Document]) -> None:
        """What the change relates to among one unit's ``documents`` (:attr:`related`): nothing
        to find, and the unit's graph not built for it, when the unit holds no changed file and
        no previous version of one."""
        self.related = None
        change = self.change
        if change is None:
            return
        if self._present is None:
            self._present = frozenset(doc.file for doc in context.documents) | frozenset(
                doc.file for file in self.files for doc in file.documents
            )
        here = {doc.file for doc in documents}
        present = self._present
        if not (change.files & here or any(f in here or f not in present for f in change.previous)):
            return
        from kaffinity.graph.changes import related

        placement = context.cluster is not None and self.settings.simulate
        try:
            self.related = related(
                context.graph, documents, change, self.settings, present=present, placement=placement
            )
        except Exception as error:  # noqa: BLE001 - the findings of the changed files still count
            where = traceback.extract_tb(error.__traceback__)[-1]
            self.internal_errors.append(
                f"internal error relating the change: {type(error).__name__}: {error} "
                f"({where.filename}:{where.lineno}); please report it"
            )

    def because(self, finding: Finding) -> tuple[Cause, ...] | None:
        """Why a finding is reported with ``--changed``: () for one in a changed file; the causes
        of one elsewhere (:class:`~kaffinity.findings.Cause`); None: not reported."""
        if finding.file in self.reported:
            return ()
        causes: list[Cause] = []
        change = self.change
        if change is not None:
            units = (self.unit,) if self.unit else finding.units
            for unit in units:
                causes.extend(
                    Cause(file, CAUSE_RENDERED_FROM, unit=unit) for file in change.units.get(unit, ())
                )
            if not units and change.units:
                # A build that failed: its parse-error is at the unit's kustomization or chart.
                folder = os.path.normpath(os.path.dirname(finding.file))
                for unit, files in change.units.items():
                    if os.path.normpath(unit.split(" (", 1)[0]) == folder:
                        causes.extend(Cause(file, CAUSE_RENDERED_FROM, unit=unit) for file in files)
            related = self.related
            if related is not None and finding.object is not None:
                obj = finding.object
                causes.extend(related.of((obj.kind, obj.namespace, obj.name), finding.path, finding.category))
                rule = self.enabled.get(finding.rule)
                if related.placement and rule is not None and rule.needs_cluster:
                    causes.extend(related.placement)
        causes.extend(
            Cause(place.file, CAUSE_NAMES) for place in finding.related if place.file in self.reported
        )
        if not causes:
            return None
        return tuple(dict.fromkeys(causes))[:MAX_CAUSES]

    def check(self, rule: Rule, context: Context) -> None:
        assert rule.check is not None
        try:
            for violation in rule.check(context):
                self.add_violation(rule, violation)
            if rule.category != POLICY_CATEGORY:
                self.found_rules.add(rule.name)
        except Exception as error:  # noqa: BLE001 - a broken rule must not lose the other findings
            where = traceback.extract_tb(error.__traceback__)[-1]
            self.internal_errors.append(
                f"internal error in rule {rule.name}: {type(error).__name__}: {error} "
                f"({where.filename}:{where.lineno}); please report it"
            )

    def take(self, name: str, found: Iterable[tuple[Finding, Document | None]]) -> None:
        """Add the findings another process placed for rule ``name`` (kaffinity.stream), on the
        documents given: their units and suppression annotations are this run's."""
        self.found_rules.add(name)
        for placed, doc in found:
            finding = placed
            if doc is not None and not self.unit and id(doc) in self.membership:
                finding = replace(finding, units=self.membership[id(doc)])
            self.add(finding, self.annotations.get(id(doc), ()) if doc is not None else ())

    def add_violation(self, rule: Rule, violation: Violation) -> None:
        doc = violation.doc
        finding = self.placed(rule, violation)
        if not self.unit and id(doc) in self.membership:
            finding = replace(finding, units=self.membership[id(doc)])
        self.add(finding, self.annotations.get(id(doc), ()), plan=violation.plan)

    def placed(self, rule: Rule, violation: Violation) -> Finding:
        """The finding of a violation: at the position of its path (in the overlay patch that set
        the field, for a rendered object), with its related places and object."""
        doc = violation.doc
        span = doc.locate(violation.path)
        if rule.category != POLICY_CATEGORY:
            self.found.setdefault(id(doc), []).append(finding_fact(rule, violation, span.line))
        file, span = self._where(doc, violation.path, span)
        # A related place goes the same way: the value an overlay patch set is shown in the patch,
        # not at the base line the patch replaced (issue 33).
        related = tuple(
            Location(*self._where(other.doc, other.path), format_path(other.path), other.message)
            for other in violation.related[:MAX_RELATED]
        )
        return self._finding(
            rule,
            file,
            span,
            violation.message,
            path=violation.field if violation.field is not None else format_path(violation.path),
            obj=object_ref(doc, self.settings.namespace),
            related=related,
            fix=violation.fix,
            edit=violation.edit,
            edit_file=violation.edit_file,
            severity=violation.severity,
            anchor=anchor_of(doc.data, violation.path),
        )

    def _where(self, doc: Document, path: DataPath, span: Span | None = None) -> tuple[str, Span]:
        """Where a data path of a document is shown: for a rendered object, in the overlay patch
        that set the field, if one did; else at its position in the document's own file."""
        place = self.places.get(id(doc))
        if place is not None:
            found = place(doc, path)
            if found is not None:
                return found
        return doc.file, span if span is not None else doc.locate(path)

    def add(
        self,
        finding: Finding,
        annotations: Iterable[Suppression] = (),
        *,
        always: bool = False,
        load_error: bool = False,
        plan: Callable[[], tuple[str, Edit | None, str | None]] | None = None,
    ) -> None:
        """Record a finding unless an annotation on its object or a comment covers it, or it
        concerns only context files (neither it nor a related place is in a reported file, nor
        does the change relate to it: :meth:`because`).
        ``load_error``: no suppression covers it. ``plan``: the finding's hint and fix
        (Violation.plan), computed here for a finding that is kept, once."""
        if not (always or self.everything):
            because = self.because(finding)
            if because is None:
                return
            if because:
                finding = replace(finding, because=because)
        if load_error:
            self.findings.append(finding)
            return
        comments = self.comments.get(finding.file, {}).get(finding.line or 0, [])
        covering = [
            (suppression, name)
            for suppression in (*annotations, *comments)
            if (name := suppression.covers(finding.rule, finding.category)) is not None
        ]
        if covering:
            for suppression, name in covering:
                suppression.used.add(name)
            self.suppressed += 1
        else:
            if self.unit:
                finding = replace(finding, units=(self.unit,))
            # One YAML node reached through many aliases is reported once: its copies differ
            # in their data paths only (an alias bomb under alias-nodes made 141,000 findings).
            key = self._key(finding)
            index = self.positions.get(key)
            if index is not None:
                first = self.findings[index]
                if finding.units and not set(finding.units) <= set(first.units):
                    first = replace(first, units=(*first.units, *finding.units))
                    self.findings[index] = first
                if finding.because and not set(finding.because) <= set(first.because):
                    self.findings[index] = _with_causes(first, finding.because)
            elif len(self.findings) >= self.settings.limits.findings:
                self.dropped += 1
            else:
                if plan is not None and self.plans_left > 0:
                    self.plans_left -= 1
                    hint, edit, edit_file = plan()
                    finding = replace(finding, fix=hint, edit=edit, edit_file=edit_file)
                self.positions[key] = len(self.findings)
                self.findings.append(finding)

    @staticmethod
    def _key(finding: Finding) -> tuple[object, ...]:
        """Where a finding is and what it says, not its data path: the copies an alias makes of a
        node are one place in the file (kubectl's error names that place once, too)."""
        return (finding.file, finding.line, finding.column, finding.rule, finding.message)

    def notice(self, messages: list[str], unit: str = "") -> None:
        """Take the notices of a context (each once: a context may serve several units)."""
        self.notices.extend(f"{unit}: {message}" if unit else message for message in messages)
        messages.clear()

    def merged(self) -> list[Finding]:
        """The findings, each once: a finding of several units names them all (a shared base)."""
        out: dict[tuple[object, ...], Finding] = {}
        for finding in self.findings:
            key = self._key(finding)
            first = out.get(key)
            if first is None:
                out[key] = finding
            else:
                if finding.units and not set(finding.units) <= set(first.units):
                    out[key] = first = replace(first, units=(*first.units, *finding.units))
                if finding.because and not set(finding.because) <= set(first.because):
                    out[key] = _with_causes(first, finding.because)
        if self.dropped:
            self.notices.append(
                f"{self.dropped:,} more findings were not reported: a run reports at most "
                f"{self.settings.limits.findings:,} (limits: findings)"
            )
        return list(out.values())

    def _finding(
        self,
        rule: Rule,
        file: str,
        span: Span | None,
        message: str,
        *,
        path: str = "",
        obj: ObjectRef | None = None,
        related: tuple[Location, ...] = (),
        fix: str | None = None,
        edit: Edit | None = None,
        edit_file: str | None = None,
        severity: Severity | None = None,
        anchor: str = "",
    ) -> Finding:
        return Finding(
            file=file,
            line=span.line if span is not None else None,
            column=span.column if span is not None else None,
            rule=rule.name,
            message=message,
            severity=severity_of(rule, self.settings, severity),
            category=rule.category,
            path=path,
            object=obj,
            related=related,
            fix=fix,
            edit=edit,
            edit_file=edit_file,
            anchor=anchor,
        )

    def unused_suppressions(self, rules: Sequence[Rule]) -> None:
        rule = self.enabled.get("unused-suppression")
        if rule is None:
            return
        enabled_categories = {r.category for r in self.enabled.values()}
        known = {"all"} | {r.name for r in rules} | {r.category for r in rules}
        for suppression in self.all_suppressions:
            for name in suppression.names:
                if name in suppression.used:
                    continue
                if name not in known:
                    message = f"'{name}' is not a rule or category; this suppression does nothing"
                    fix = "correct the rule name, or remove it"
                elif name in self.enabled or name in enabled_categories or name == "all":
                    message = f"nothing to suppress: no '{name}' finding here"
                    fix = "remove the suppression"
                else:
                    continue  # the rule did not run, so it cannot be known to be unused
                doc = suppression.doc
                self.findings.append(
                    self._finding(
                        rule,
                        suppression.file,
                        suppression.span,
                        message,
                        path=format_path(suppression.path) if doc is not None else "",
                        obj=object_ref(doc, self.settings.namespace) if doc is not None else None,
                        fix=fix,
                    )
                )


class Collector(_Run):
    """The engine's placing of findings without the rest (suppressions, reported files, units):
    the single-object stage's, in the process that parsed the file (:mod:`kaffinity.stream`),
    whose findings the engine of the run then takes (:meth:`_Run.take`)."""

    def __init__(self, files: Sequence[SourceFile], settings: Settings, enabled: Sequence[Rule]) -> None:
        super().__init__(files, settings, enabled, suppressions=False)
        #: (rule, document, finding) in the order found.
        self.collected: list[tuple[str, Document | None, Finding]] = []

    def add_violation(self, rule: Rule, violation: Violation) -> None:
        self.collected.append((rule.name, violation.doc, self.placed(rule, violation)))
