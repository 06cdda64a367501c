"""``kaffinity lint``'s run (and ``baseline write``'s): the files read through the workspace,
the units built, the rules and the policies run once, then what ``--baseline`` and
``--new-from-rev`` leave out. It returns a :class:`LintOutcome`; the command line prints it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Optional

from kaffinity.load.display import quote_name
from kaffinity.run.inputs import PolicyMemo, Stdin, context_manifests, shown_path, with_policies
from kaffinity.run.layout import layout, render_summary
from kaffinity.run.notes import Notes, RunError
from kaffinity.run.workspace import has_release, load_cluster, load_in_context, run_rules, stream

if TYPE_CHECKING:
    from collections import Counter
    from collections.abc import Collection, Mapping, Sequence

    from kaffinity.config import Settings
    from kaffinity.context import Context
    from kaffinity.engine import LintResult
    from kaffinity.findings import Severity
    from kaffinity.load.parse import SourceFile
    from kaffinity.repo.changed import Change
    from kaffinity.repo.units import Layout
    from kaffinity.report.baseline import Baseline


@dataclass(frozen=True)
class LintInputs:
    """What ``lint`` is asked, resolved from its options (:mod:`kaffinity.run.inputs`)."""

    paths: Optional[list[str]]
    settings: Settings
    stdin: Stdin = field(default_factory=Stdin)
    changed: bool = False
    context: Optional[list[str]] = None  # --context
    cache_dir: Optional[str] = None
    memo: PolicyMemo = field(default_factory=dict, compare=False)
    baseline: Optional[str] = None  # --baseline
    new_from_rev: Optional[str] = None
    write_baseline: Optional[str] = None  # baseline write's --output ("": the default)


@dataclass(frozen=True)
class LintOutcome:
    """A lint run: the first unit's context (the reports read its graph and texts), the result,
    the policies' problems, and for ``baseline write`` where to write (``baseline``) what."""

    context: Context
    result: LintResult
    policy_errors: list[str]
    baseline: Optional[tuple[str, str]] = None  # (file, text)


def lint_run(inputs: LintInputs, notes: Notes) -> LintOutcome:
    """``kaffinity lint``: a policy path that does not exist, a baseline that cannot be read or a
    REV that names no commit is a :class:`RunError` before anything is linted."""
    # A policy path that does not exist is a usage error, as a missing --cluster is: nothing
    # is linted and no report says "No problems found" (issue 33).
    missing = [path for path in inputs.settings.policies if not os.path.exists(path)]
    if missing:
        raise RunError(*(f"kaffinity: error: {quote_name(path)}: policy file not found" for path in missing))
    # Before anything is linted: a baseline that cannot be read, a REV that names no commit.
    before = _Before.of(inputs)
    lint_context, result, policy_errors = linted(inputs, notes)
    if inputs.write_baseline is not None:
        from kaffinity.report.baseline import DEFAULT_BASELINE, write_text

        settings = inputs.settings
        default = shown_path(settings.baseline) if settings.baseline else DEFAULT_BASELINE
        written = (inputs.write_baseline or default, write_text(result))
        return LintOutcome(lint_context, result, policy_errors, written)
    result = before.left_out(result, inputs, notes)
    return LintOutcome(lint_context, result, policy_errors)


def linted(inputs: LintInputs, notes: Notes) -> tuple[Context, LintResult, list[str]]:
    """``lint``'s run: the files read (through the single-object stage and the cache where it
    can: :func:`kaffinity.run.workspace.stream`), the rules, the policies: the first unit's
    context, the result and the policies' problems."""
    from kaffinity.context import Context
    from kaffinity.rules import RULES

    paths, settings, changed, cache_dir = inputs.paths, inputs.settings, inputs.changed, inputs.cache_dir
    manifests = context_manifests(paths, inputs.context, settings, changed)
    streamed = stream(paths, settings, cache_dir, [*(paths or ["."]), *manifests.paths], notes, inputs.memo)
    files, reported, has_context, roots = load_in_context(
        paths, settings, inputs.stdin, changed, manifests, notes, streamed
    )
    if streamed is not None and streamed.policies is not None and settings.render and has_release(files):
        # Rendered units are staged without the policies: with policies, a GitOps release's
        # repository is read whole, as before (docs/cache.md).
        streamed.close(notes)
        streamed = None
        files, reported, has_context, roots = load_in_context(
            paths, settings, inputs.stdin, changed, manifests, notes
        )
    rules = RULES if has_context else tuple(rule for rule in RULES if not rule.needs_all_manifests)
    rules, policy_errors = with_policies(
        rules, settings, inputs.memo, streamed.policies if streamed is not None else None
    )
    cluster = load_cluster(settings)
    # --changed: the files named too (a values file is no manifest), and the units each touches.
    names = _changed_names(reported, paths) if changed and reported is not None else None
    touched: dict[str, tuple[str, ...]] = {}
    # Streamed: the rendered units go through the single-object stage too, their results the
    # stream's (the layout reads the kustomizations and charts, and what releases read, on disk).
    files, units = layout(
        files,
        roots,
        settings,
        notes,
        changed=names,
        touched=touched,
        cached=True,
        cache_dir=cache_dir,
        results=streamed.results if streamed is not None else None,
    )
    change = _change(files, units, names, touched, settings) if names is not None else None
    # The first unit's context: the Markdown report draws its graph; the units share the
    # typed objects built from their documents.
    typed = streamed.typed() if streamed is not None else {}
    lint_context = Context(files, settings, cluster, units.units[0].documents, typed)
    result = run_rules(
        files,
        settings,
        rules,
        context=lint_context,
        reported=names if names is not None else reported,
        layout=units,
        results=streamed.results if streamed is not None else None,
        change=change,
    )
    if streamed is not None:
        streamed.close(notes)
    return lint_context, replace(result, render=render_summary(settings, units)), policy_errors


def _changed_names(reported: Collection[str], paths: Optional[list[str]]) -> frozenset[str]:
    """The files ``--changed`` names: those read, and the other files given (a values file)."""
    return frozenset(reported) | {path for path in paths or () if path != "-" and os.path.isfile(path)}


def _change(
    files: Sequence[SourceFile],
    units: Layout,
    names: frozenset[str],
    touched: Mapping[str, tuple[str, ...]],
    settings: Settings,
) -> Change:
    """What ``--changed`` reports on (kaffinity.repo.changed): the files, their versions at
    ``HEAD``, and the units rendered from them (``touched``: the overlays and charts, by
    :func:`kaffinity.run.layout.layout`; the releases are found here, once rendered)."""
    from kaffinity.repo.changed import Change, previous_documents, rendered_touches

    previous = previous_documents(names, settings.limits)
    documents = [doc for file in files if file.name in names for doc in file.documents]
    documents.extend(doc for docs in previous.values() for doc in docs)
    touches = rendered_touches(units, touched, names, documents)
    reach = None
    if not touches and not units.several and settings.cluster is None:
        # One unit and no cluster to place pods on: the cross-object stage needs only the
        # namespaces the change reaches (a placement on a declared cluster reads every pod).
        from kaffinity.graph.reach import reached

        found = reached(units.units[0].documents, documents, settings)
        reach = frozenset(found) if found is not None else None
    return Change(names, previous, touches, reach)


@dataclass(frozen=True)
class _Before:
    """What ``lint`` compares with (docs/adopting.md): the baseline file and its fingerprints
    (``--baseline``, ``baseline:``), the repository and commit of ``--new-from-rev``."""

    baseline: Optional[str] = None
    known: Optional[Baseline] = None
    rev: Optional[str] = None
    revision: Optional[tuple[str, str]] = None

    @classmethod
    def of(cls, inputs: LintInputs) -> _Before:
        """Read and checked before anything is linted: a usage error (exit 2) otherwise."""
        if inputs.write_baseline is not None:
            return cls()
        settings, new_from_rev = inputs.settings, inputs.new_from_rev
        file = inputs.baseline or settings.baseline
        known = _read_baseline(file, settings) if file else None
        revision = _revision(new_from_rev, inputs.paths) if new_from_rev is not None else None
        return cls(file, known, new_from_rev, revision)

    def left_out(self, result: LintResult, inputs: LintInputs, notes: Notes) -> LintResult:
        """``result`` without what the baseline and REV had."""
        if self.known is None and self.revision is None:
            return result  # a plain lint: the baseline module is not even imported (start-up)
        from kaffinity.report.baseline import fixed_note, left_out

        if self.known is not None and self.baseline is not None:
            covered = self.known.in_scope(inputs.paths or ["."], {rule.name for rule in result.rules})
            result = left_out(result, self.known.counts, "baseline", shown_path(self.baseline), covered)
        if self.revision is not None and self.rev is not None:
            at_rev = _linted_at(self.revision, inputs, notes)
            result = left_out(result, at_rev, "rev", self.rev)
        if result.new_only is not None and self.baseline is not None:
            note = fixed_note(result.new_only, shown_path(self.baseline))
            if note is not None:
                result = replace(result, notices=(*result.notices, note))
        return result


def _read_baseline(path: str, settings: Settings) -> Baseline:
    """The baseline's fingerprints and counts; a usage error (exit 2) naming the file and the
    line when it cannot be read."""
    from kaffinity.report.baseline import BaselineError, read

    try:
        return read(path, quote_name(shown_path(path)), settings.limits)
    except BaselineError as error:
        raise RunError(str(error)) from None


def _revision(rev: str, paths: Optional[list[str]]) -> tuple[str, str]:
    """``--new-from-rev REV``: the repository's top and REV's commit; a usage error (exit 2)
    outside a repository, for stdin, or when REV names no commit."""
    from kaffinity.load.revision import RevisionError, resolve

    if "-" in (paths or ()):
        raise RunError("kaffinity: error: --new-from-rev lints files of a repository, not stdin")
    # The repository of the first path linted (the working directory's when it names none).
    start = next((path for path in paths or () if os.path.exists(path)), ".")
    folder = start if os.path.isdir(start) else os.path.dirname(start) or "."
    try:
        return resolve(rev, folder)
    except RevisionError as error:
        raise RunError(f"kaffinity: error: {error}") from None


def _linted_at(revision: tuple[str, str], inputs: LintInputs, notes: Notes) -> Counter[str]:
    """The fingerprints of the findings of the same lint of another revision: its tree written
    to a temporary folder (kaffinity.load.revision: the work tree and the index untouched), the
    paths, the context and the paths of the config mapped into it, the config, the policies and
    the cluster of this checkout, no cache; the folder removed whatever happens. Its notes are
    not said (they would name the temporary folder and repeat the work tree's)."""
    import shutil
    import tempfile
    from collections import Counter

    from kaffinity.load.repository import within
    from kaffinity.load.revision import RevisionError, export
    from kaffinity.report.baseline import rev_counts

    settings, paths, context = inputs.settings, inputs.paths, inputs.context
    top, sha = revision
    real_top = os.path.realpath(top)
    here = os.getcwd()
    folder = tempfile.mkdtemp(prefix="kaffinity-rev-")
    try:
        try:
            export(top, sha, folder, settings.limits.file_size)
        except RevisionError as error:
            raise RunError(f"kaffinity: error: --new-from-rev: {error}") from None
        tree = os.path.realpath(folder)

        def moved(path: str) -> str:
            """A path of this checkout, absolute, as the same path in REV's tree."""
            real = os.path.realpath(path)
            if within(real, real_top):
                return os.path.normpath(os.path.join(tree, os.path.relpath(real, real_top)))
            return os.path.abspath(path)

        def moved_pattern(pattern: str) -> str:
            for top_form in {real_top, os.path.abspath(top)}:
                if pattern == top_form or pattern.startswith(top_form + "/"):
                    return tree + pattern[len(top_form) :]
            return pattern

        cwd = moved(here)
        at_rev = replace(
            settings,
            cluster=os.path.abspath(settings.cluster) if settings.cluster else None,
            policies=tuple(os.path.abspath(path) for path in settings.policies),
            context=tuple(path for path in map(moved, settings.context) if os.path.lexists(path)),
            exclude=tuple(moved_pattern(pattern) for pattern in settings.exclude),
            base_dir=moved(settings.base_dir),
            helm_values={
                moved(chart): tuple(moved(path) for path in files)
                for chart, files in settings.helm_values.items()
            },
            units=settings.units
            if isinstance(settings.units, str)
            else tuple((name, tuple(moved(path) for path in prefixes)) for name, prefixes in settings.units),
            cache=False,
            baseline=None,
        )
        # What is linted now, where it is at REV; a file REV does not have has no findings there.
        # A path outside the repository has no version at REV: its findings are all new.
        rev_paths = [
            there if os.path.isabs(path) else os.path.relpath(there, cwd)
            for path in paths or ["."]
            if within(os.path.realpath(path), real_top) and os.path.lexists(there := moved(path))
        ]
        # With --changed and no context, the context is the manifests of REV's tree (a git work
        # tree of its own: kaffinity.load.revision), listed as the working tree's are.
        rev_context = [path for path in map(moved, context) if os.path.lexists(path)] if context else None
        if not rev_paths:
            return Counter()
        os.makedirs(cwd, exist_ok=True)
        os.chdir(cwd)
        quiet, notes.quiet = notes.quiet, True
        try:
            at = replace(inputs, paths=rev_paths, settings=at_rev, context=rev_context, cache_dir=None)
            _, result, _ = linted(at, notes)
            return rev_counts(result)  # in REV's tree: names are resolved where they are
        finally:
            notes.quiet = quiet
            os.chdir(here)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def shown(result: LintResult, lowest: Severity) -> LintResult:
    """The result as the report shows it: the findings below ``lowest`` (``--min-severity``)
    left out. The exit code is decided on the whole result."""
    from kaffinity.findings import Severity

    if lowest is Severity.INFO:
        return result
    kept = tuple(f for f in result.findings if f.severity.reaches(lowest))
    return replace(result, findings=kept, hidden=len(result.findings) - len(kept))
