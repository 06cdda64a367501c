"""The engine's record of a run's findings: each placed at the position of its data path, its
related places and object attached, suppressions applied, kept to the reported files (and the
causes of ``--changed``), merged across deployment units, limited.

Rules yield data paths; the recorder maps each path to the nearest recorded position in the
document (never a made-up line 1), attaches the object, applies the configured severity, and
drops what a suppression covers.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, TypeAlias

from kaffinity.config import Settings
from kaffinity.context import Context, RunState
from kaffinity.engine.result import LOAD_ERROR
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
from kaffinity.k8s.model import ObjectRef
from kaffinity.k8s.model.build import object_ref
from kaffinity.k8s.model.kinds import pod_template_path
from kaffinity.load.parse import SourceFile
from kaffinity.load.source import DataPath, Document, Span, format_path
from kaffinity.rules.base import POLICY_CATEGORY, Rule, finding_fact, severity_of
from kaffinity.suppress import Suppression, annotation_suppressions, comment_suppressions

if TYPE_CHECKING:
    from kaffinity.graph.changes import Related
    from kaffinity.load.edits import Edit
    from kaffinity.repo.changed import Change
    from kaffinity.repo.units import Layout


def with_causes(finding: Finding, more: Sequence[Cause]) -> Finding:
    """``finding`` with the causes of its copy in another unit too (at most MAX_CAUSES)."""
    return replace(finding, because=tuple(dict.fromkeys((*finding.because, *more)))[:MAX_CAUSES])


#: Fix plans one run makes for its findings' hints (kaffinity.rules.revision_unscoped: a file of
#: a thousand workloads has thousands of findings; planning each made lint ten times slower).
PLANS_PER_RUN = 200
#: Fewer plans than this are made in this process: forking a child for them does not pay.
MIN_FORKED_PLANS = 16

#: A finding's hint and fix (Violation.plan), and what making one gives: the three, or the line
#: of the internal error it raised.
Plan: TypeAlias = Callable[[], tuple[str, "Edit | None", "str | None"]]
Made: TypeAlias = tuple[str, "Edit | None", "str | None"] | str


class Recorder:
    """The findings of one lint run as they are recorded: placed at their positions, suppressed,
    kept to the reported files, merged across units (the mutable state the rules never see)."""

    def __init__(
        self,
        files: Sequence[SourceFile],
        settings: Settings,
        enabled: Sequence[Rule],
        state: RunState,
        reported: frozenset[str] | None = None,
        layout: Layout | None = None,
        comments: Mapping[str, Sequence[Suppression]] | None = None,
        *,
        suppressions: bool = True,
    ) -> None:
        self.settings = settings
        #: What the rules share for the run: the built-in findings so far go into it.
        self.state = state
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
        self.findings: list[Finding] = []
        #: Each finding's place in ``findings`` by its position (:meth:`_key`).
        self.positions: dict[tuple[object, ...], int] = {}
        #: Findings past ``limits: findings``, not kept.
        self.dropped = 0
        #: Fixes still planned for a hint (Violation.plan): each costs about a millisecond (the
        #: term's document loaded again to verify the edit), so a run plans the first
        #: PLANS_PER_RUN; the others keep the violation's own hint, which promises no edit.
        self.plans_left = PLANS_PER_RUN
        #: The plans kept and not made yet: (index of the finding in ``findings``, rule, plan),
        #: made by :meth:`planned` (those :meth:`plan_ahead` handed to a child by then: ``_ahead``).
        self.plans: list[tuple[int, str, Plan]] = []
        self._ahead: tuple[int, Callable[[], list[Made]]] | None = None
        self.notices: list[str] = []
        self.suppressed = 0
        self.internal_errors: list[str] = []
        self.comments: dict[str, dict[int, list[Suppression]]] = {}
        self.all_suppressions: list[Suppression] = []
        self.annotations: dict[int, list[Suppression]] = {}
        self.files = files
        if suppressions:  # the single-object stage's collector applies none
            self._read_comments(files, comments or {})
            self._read_annotations(files, layout)

    def _read_comments(self, files: Sequence[SourceFile], read: Mapping[str, Sequence[Suppression]]) -> None:
        """The suppression comments of each file, by the lines they cover: ``read`` by the
        single-object stage, for a file it compacted (its text is gone), else from its text."""
        done: set[str] = set()
        for file in files:
            if file.name in done:  # a file and the rendered objects that point at it: once
                continue
            done.add(file.name)
            by_line: dict[int, list[Suppression]] = {}
            known = read.get(file.name)
            comments = known if known is not None else comment_suppressions(file.name, file.text)
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
                self.state.found_rules.add(rule.name)
        except Exception as error:  # noqa: BLE001 - a broken rule must not lose the other findings
            where = traceback.extract_tb(error.__traceback__)[-1]
            self.internal_errors.append(
                f"internal error in rule {rule.name}: {type(error).__name__}: {error} "
                f"({where.filename}:{where.lineno}); please report it"
            )

    def facts(self, rule: Rule, context: Context) -> None:
        """Run a built-in rule the settings leave out, for the policies' facts only: its findings
        go into the run state (:attr:`RunState.found`), not the report; a crash is not reported
        (the rule does not run)."""
        assert rule.check is not None
        found = self.state.found
        try:
            violations = list(rule.check(context))
        except Exception:  # noqa: BLE001 - the engine reports a rule that crashes, when it runs it
            return
        for violation in violations:
            doc = violation.doc
            found.setdefault(id(doc), []).append(
                finding_fact(rule, violation, doc.locate(violation.path).line)
            )
        self.state.found_rules.add(rule.name)

    def take(self, name: str, found: Iterable[tuple[Finding, Document | None]]) -> None:
        """Add the findings the single-object stage placed for rule ``name``, on the
        documents given: their units and suppression annotations are this run's."""
        self.state.found_rules.add(name)
        refused = self.state.refused if name == "api-validation" else None
        rule = self.enabled.get(name)
        # The policies' facts (kaffinity.findings) of a built-in rule's findings: the run streams
        # its policies only without select/ignore/severity (kaffinity.policy.streamed), so the
        # finding's severity is the rule's own, as placed() records it.
        facts = (
            self.state.found
            if rule is not None
            and rule.category != POLICY_CATEGORY
            and any(other.reads_findings for other in self.enabled.values())
            else None
        )
        for placed, doc in found:
            if refused is not None and doc is not None:
                refused.add(id(doc))
            if facts is not None and doc is not None:
                facts.setdefault(id(doc), []).append(
                    {
                        "rule": name,
                        "severity": placed.severity.value,
                        "line": placed.line,
                        "message": placed.message,
                    }
                )
            finding = placed
            if doc is not None and not self.unit and id(doc) in self.membership:
                finding = replace(finding, units=self.membership[id(doc)])
            self.add(finding, self.annotations.get(id(doc), ()) if doc is not None else ())

    def add_violation(self, rule: Rule, violation: Violation) -> None:
        doc = violation.doc
        if rule.name == "api-validation":
            self.state.refused.add(id(doc))
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
            self.state.found.setdefault(id(doc), []).append(finding_fact(rule, violation, span.line))
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
        plan: Plan | None = None,
    ) -> None:
        """Record a finding unless an annotation on its object or a comment covers it, or it
        concerns only context files (neither it nor a related place is in a reported file, nor
        does the change relate to it: :meth:`because`).
        ``load_error``: no suppression covers it. ``plan``: the finding's hint and fix
        (Violation.plan), for a finding that is kept, made once by :meth:`planned`."""
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
                    self.findings[index] = with_causes(first, finding.because)
            elif len(self.findings) >= self.settings.limits.findings:
                self.dropped += 1
            else:
                if plan is not None and self.plans_left > 0:
                    self.plans_left -= 1
                    self.plans.append((len(self.findings), finding.rule, plan))
                self.positions[key] = len(self.findings)
                self.findings.append(finding)

    def plan_ahead(self, jobs: int) -> None:
        """Start making the plans kept so far in a forked child (``jobs`` > 1, where processes
        fork: :func:`kaffinity.load.parallel.forked`) while this process runs the other rules;
        :meth:`planned` takes what it made. A plan reads the term's file again and verifies its
        edit (a few milliseconds each): the rules after them need none of it."""
        if self._ahead is not None or len(self.plans) < MIN_FORKED_PLANS:
            return
        from functools import partial

        from kaffinity.load.parallel import forked

        todo = [(rule, plan) for _, rule, plan in self.plans]
        self._ahead = (len(todo), forked(partial(_make, todo), jobs))

    def planned(self) -> None:
        """Make the plans kept (those :meth:`plan_ahead` started, as the child made them) and put
        each finding's hint and fix in its place: the same, in the same order, as making each plan
        where it was kept (a plan's value depends only on the files). A plan that raises is the
        run's internal error; its finding keeps the violation's own hint."""
        made: list[Made] = []
        if self._ahead is not None:
            count, value = self._ahead
            self._ahead = None
            made = value()
        else:
            count = 0
        made.extend(_make([(rule, plan) for _, rule, plan in self.plans[count:]]))
        for (index, _, _), result in zip(self.plans, made, strict=True):
            if isinstance(result, str):
                self.internal_errors.append(result)
                continue
            hint, edit, edit_file = result
            self.findings[index] = replace(self.findings[index], fix=hint, edit=edit, edit_file=edit_file)
        if self.plans:  # the node trees the plans composed (a few MB each) are needed no more
            from kaffinity.load.edits.nodes import compose

            compose.cache_clear()
        self.plans.clear()

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
                    out[key] = with_causes(first, finding.because)
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


def _make(plans: Sequence[tuple[str, Plan]]) -> list[Made]:
    """Each plan made, in order (``(rule, plan)``): its hint and fix, or the internal error it
    raised, worded as :meth:`Recorder.check` words a rule's."""
    made: list[Made] = []
    for rule, plan in plans:
        try:
            made.append(plan())
        except Exception as error:  # noqa: BLE001 - one plan must not lose the other findings
            made.append(_internal_error(f"rule {rule}", error))
    return made


def _internal_error(what: str, error: Exception) -> str:
    where = traceback.extract_tb(error.__traceback__)[-1]
    return (
        f"internal error in {what}: {type(error).__name__}: {error} "
        f"({where.filename}:{where.lineno}); please report it"
    )
