"""One lint run: the run state built once, the single-object stage's per-file results taken, the
other rules run (built-in rules first, policies second), the findings recorded and sorted.

New rules need no change here: the registry lists them.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kaffinity.config import Settings
from kaffinity.context import Context, RunState
from kaffinity.engine.record import Recorder
from kaffinity.engine.result import LOAD_ERROR, LintResult
from kaffinity.engine.single import FileResult, single_object_rules, single_object_stage
from kaffinity.findings import Finding, Severity
from kaffinity.k8s.model import Object
from kaffinity.load.parse import SourceFile
from kaffinity.load.source import Document
from kaffinity.rules import RULES
from kaffinity.rules.base import POLICY_CATEGORY, Rule, rule_enabled, severity_of

if TYPE_CHECKING:
    from kaffinity.repo.changed import Change
    from kaffinity.repo.units import Layout, Unit
    from kaffinity.simulate.cluster import Cluster


def lint(
    files: Sequence[SourceFile],
    settings: Settings,
    rules: Sequence[Rule] = RULES,
    cluster: Cluster | None = None,
    context: Context | None = None,
    reported: Collection[str] | None = None,
    layout: Layout | None = None,
    results: Sequence[FileResult] | None = None,
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
    ``results``: the single-object stage's result of each file (:mod:`kaffinity.stream`, which
    compacts the files: ``files`` are then theirs); None: input read whole, whose stage runs
    here, through the same :func:`kaffinity.engine.single.file_result`. Either way the findings of
    its rules (:func:`~kaffinity.engine.single.single_object_rules`) are taken from the results,
    suppressions and the reported files applied here as to any other.
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
        return _lint(files, settings, enabled, rules, cluster, context, reported, layout, results, change)
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
    results: Sequence[FileResult] | None,
    change: Change | None,
) -> LintResult:
    if change is not None and reported is None:
        reported = change.files
    # The run state, built once: every context of the run (one per unit) is a view over it.
    state = RunState(
        _running(settings, cluster),
        layout.membership if layout is not None else None,
        layout.places if layout is not None else None,
    )
    comments = {result.file.name: result.comments for result in results or () if result.file.compact}
    run = Recorder(
        files, settings, enabled, state, None if reported is None else frozenset(reported), layout, comments
    )
    run.change = change
    run.load_problems(cluster.files if cluster is not None else ())
    typed: dict[int, Object | None] = {}  # shared: units overlap (a base, shared files)
    if context is None:
        documents = layout.units[0].documents if layout is not None else None
        context = Context(files, settings, cluster, documents, typed, run=state)
    else:
        context.run = state
    if change is not None and change.reach is not None and not (layout is not None and layout.several):
        # --changed: the rules that read every manifest read the namespaces the change reaches.
        context = _reached(context, change.reach, typed)
    local = _local(run, context, layout, typed)
    typed = context.objects if context.objects is not None else typed
    stages = _stages(enabled, context, cluster)
    stage = single_object_rules(run.enabled.values(), settings)
    if results is None:  # read whole: the single-object stage runs here, on the run's objects
        results = single_object_stage(
            local.documents, files, settings, stage, state, typed, layout, local.expansions
        )
    taken = _taken(results, stage, run)
    units = layout.units if layout is not None and layout.several else ()

    def view(documents: Sequence[Document]) -> Context:
        """One unit's context: a view of its objects over the run state."""
        if _same(documents, context.documents):
            return context
        return Context(files, settings, cluster, documents, typed, run=state)

    _check_rules(run, stages, taken, local, context, units, view)
    run.notice(context.notices)
    if local is not context:
        run.notice(local.notices)
    run.unused_suppressions(rules)
    return _result(run, enabled, cluster, layout)


def _local(
    run: Recorder, context: Context, layout: Layout | None, typed: dict[int, Object | None]
) -> Context:
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
    return Context(
        run.files, run.settings, context.cluster, objects, context.objects or typed, run=context.run
    )


def _reached(context: Context, reach: frozenset[int], typed: dict[int, Object | None]) -> Context:
    """The context of a change's reach (:func:`kaffinity.graph.reach.reached`): its documents
    only, over the same run state (the report's context, the caller's, stays whole)."""
    documents = [doc for doc in context.documents if id(doc) in reach]
    if len(documents) == len(context.documents):
        return context
    return Context(
        context.files,
        context.settings,
        context.cluster,
        documents,
        context.objects if context.objects is not None else typed,
        run=context.run,
    )


def _taken(
    results: Sequence[FileResult], stage: Sequence[Rule], run: Recorder
) -> dict[str, list[tuple[Finding, Document | None]]]:
    """The findings of the single-object stage, by rule (every rule it ran, in the order it ran
    them), each with its document in the result's file; its internal errors and notices are the
    run's (once each: every file reports a crash of the same rule)."""
    found: dict[str, list[tuple[Finding, Document | None]]] = {rule.name: [] for rule in stage}
    if any(rule.name == "api-validation" for rule in stage):
        # The objects it checked: Context.refused reads its findings rather than validate again.
        run.state.validated.update(id(doc) for result in results for doc in result.file.documents)
    errors: dict[str, None] = {}
    notices: dict[str, None] = {}
    for result in results:
        documents = result.file.documents
        for name, index, finding in result.findings:
            found[name].append((finding, documents[index] if index is not None else None))
        errors.update(dict.fromkeys(result.internal_errors))
        notices.update(dict.fromkeys(result.notices))
    run.internal_errors.extend(errors)
    run.notices.extend(notices)
    return found


def _facts_only(
    enabled: Sequence[Rule], running: Sequence[Rule], cluster: Cluster | None
) -> tuple[list[Rule], list[Rule]]:
    """The built-in rules the engine runs for the policies' facts only, when a policy reads the
    built-in findings (``Rule.reads_findings``): every registered rule with a check that does not
    run otherwise (the facts do not change with ``select``/``ignore``), one that reads the
    declared cluster only with one; those that read one object and those that read every
    manifest."""
    if not any(rule.reads_findings for rule in enabled):
        return [], []
    names = {rule.name for rule in running}
    left = [
        rule
        for rule in RULES
        if rule.check is not None
        and rule.category != POLICY_CATEGORY
        and rule.name not in names
        and (cluster is not None or not rule.needs_cluster)
    ]
    return [rule for rule in left if not rule.needs_all_manifests], [
        rule for rule in left if rule.needs_all_manifests
    ]


@dataclass(frozen=True, slots=True)
class _Stages:
    """The rules of a run in the order they run: built-in rules first, policies second (the
    policies' facts read the built-in findings), each stage's rules in the registry's order."""

    #: Built-in rules that read one object at a time (the single-object stage's among them).
    each: list[Rule]
    #: Built-in rules that read every manifest, once per unit.
    together: list[Rule]
    #: Policies that read one object at a time, after every built-in rule.
    policies: list[Rule]
    #: Policies that read every manifest, once per unit after its built-in rules.
    unit_policies: list[Rule]
    #: Built-in rules run for the policies' facts only (:func:`_facts_only`).
    facts_each: list[Rule]
    facts_together: list[Rule]

    def ticks(self, units: int) -> int:
        per_unit = len(self.together) + len(self.unit_policies)
        return len(self.each) + len(self.policies) + per_unit * max(1, units)


def _stages(enabled: Sequence[Rule], context: Context, cluster: Cluster | None) -> _Stages:
    """The rules that run, by stage. Rules that read the declared cluster have nothing to say
    without one (and would import the offline scheduler to find that out), nor with one that
    could not all be read: its missing nodes would make every pod Pending (the parse-error says
    why, exit code 2)."""
    usable = context.cluster is not None and not any(
        problem.rule == "parse-error" for file in context.cluster.files for problem in file.problems
    )
    running = [rule for rule in enabled if rule.check is not None and (usable or not rule.needs_cluster)]
    each = [rule for rule in running if not rule.needs_all_manifests]
    together = [rule for rule in running if rule.needs_all_manifests]
    builtin_each = [rule for rule in each if rule.category != POLICY_CATEGORY]
    builtin_together = [rule for rule in together if rule.category != POLICY_CATEGORY]
    facts_each, facts_together = _facts_only(enabled, (*builtin_each, *builtin_together), cluster)
    return _Stages(
        builtin_each,
        builtin_together,
        [rule for rule in each if rule.category == POLICY_CATEGORY],
        [rule for rule in together if rule.category == POLICY_CATEGORY],
        facts_each,
        facts_together,
    )


def _check_rules(
    run: Recorder,
    stages: _Stages,
    taken: Mapping[str, list[tuple[Finding, Document | None]]],
    local: Context,
    context: Context,
    units: Sequence[Unit],
    view: Callable[[Sequence[Document]], Context],
) -> None:
    """Run the stages: the rules that read one object on ``local`` (the single-object stage's
    findings ``taken`` from its results), then unit by unit the rules that read every manifest,
    then the policies that read one object."""
    from kaffinity.load.progress import current

    progress = current()  # a command's progress indicator: which rule runs
    with progress.stage("checking rules", stages.ticks(len(units))):
        try:
            _check_stages(run, stages, taken, local, context, units, view, progress.tick)
        finally:
            run.planned()  # the fixes of the findings kept (made in a child meanwhile: plan_ahead)


def _check_stages(
    run: Recorder,
    stages: _Stages,
    taken: Mapping[str, list[tuple[Finding, Document | None]]],
    local: Context,
    context: Context,
    units: Sequence[Unit],
    view: Callable[[Sequence[Document]], Context],
    tick: Callable[[str], None],
) -> None:
    """:func:`_check_rules`' stages, each rule's progress told to ``tick``."""
    for rule in stages.each:
        tick(rule.name)
        if rule.name in taken:
            run.take(rule.name, taken[rule.name])
        else:
            run.check(rule, local)
    for rule in stages.facts_each:
        run.facts(rule, local)
    # The fixes planned for the findings so far are made in a forked child while the rules
    # that read every manifest run here (--jobs > 1).
    from kaffinity.load.parallel import default_jobs

    run.plan_ahead(run.settings.jobs or default_jobs())
    if not units:
        run.relate(context, context.documents)
        _check_unit(run, stages, context, "", tick)
    for unit in units:
        # One unit at a time: its graph and placement are dropped before the next is built.
        run.unit = unit.name
        unit_context = view(unit.documents)
        run.relate(unit_context, unit.documents)
        _check_unit(run, stages, unit_context, unit.name, tick)
        run.notice(unit_context.notices, unit.name)
    run.unit = ""
    run.related = None
    for rule in stages.policies:
        tick(rule.name)
        if rule.name in taken and rule.unit_objects:
            _take_by_unit(run, rule.name, taken[rule.name], context, units)
        elif rule.name in taken:  # a policy of the single-object stage (Rule.streams)
            run.take(rule.name, taken[rule.name])
        else:
            run.check(rule, local)


def _take_by_unit(
    run: Recorder,
    name: str,
    found: Sequence[tuple[Finding, Document | None]],
    context: Context,
    units: Sequence[Unit],
) -> None:
    """A streamed policy's findings as if it ran unit by unit (``Rule.unit_objects``): on each
    unit's objects (of an object defined again, its last definition), under the unit's name."""
    for unit_name, documents in [(unit.name, unit.documents) for unit in units] or [("", context.documents)]:
        kept = {id(doc) for doc in documents}
        run.unit = unit_name
        run.take(name, [(finding, doc) for finding, doc in found if doc is not None and id(doc) in kept])
    run.unit = ""


def _check_unit(
    run: Recorder, stages: _Stages, context: Context, unit: str, tick: Callable[[str], None]
) -> None:
    """The rules that read every manifest, on one unit's context: built-in rules, those run for
    the facts only, policies."""
    for rule in stages.together:
        tick(f"{rule.name} ({unit})" if unit else rule.name)
        run.check(rule, context)
    for rule in stages.facts_together:
        run.facts(rule, context)
    for rule in stages.unit_policies:
        tick(f"{rule.name} ({unit})" if unit else rule.name)
        run.check(rule, context)


def _result(
    run: Recorder, enabled: tuple[Rule, ...], cluster: Cluster | None, layout: Layout | None
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


def _same(one: Sequence[Document], other: Sequence[Document]) -> bool:
    """The same documents, in the same order (identity: a unit that is the whole input)."""
    return len(one) == len(other) and all(a is b for a, b in zip(one, other, strict=True))
