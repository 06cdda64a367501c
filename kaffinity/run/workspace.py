"""Where a run reads its files: streamed through the single-object stage (:mod:`kaffinity.stream`)
and the cache (:mod:`kaffinity.cache`: opened, pruned, its problems as notes) or read whole; the
context manifests around the paths; the declared cluster; the loader's problems as lint reports
them; and the one call into the engine (:func:`run_rules`). The deployment units built from the
files are :mod:`kaffinity.run.layout`'s."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING, Optional

from kaffinity.load.display import escape, quote_name
from kaffinity.run.notes import Notes, RunError

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from kaffinity.cache import Cache
    from kaffinity.config import Settings
    from kaffinity.context import Context
    from kaffinity.engine import FileResult, LintResult
    from kaffinity.k8s.model import Object
    from kaffinity.load.files import ExcludeFn
    from kaffinity.load.parse import SourceFile
    from kaffinity.policy.known import PolicyStream
    from kaffinity.repo.changed import Change
    from kaffinity.repo.units import Layout
    from kaffinity.rules.base import Rule
    from kaffinity.run.inputs import ContextManifests, PolicyMemo, Stdin
    from kaffinity.simulate.cluster import Cluster


def run_rules(
    files: Sequence[SourceFile],
    settings: Settings,
    rules: Optional[Sequence[Rule]] = None,
    cluster: Cluster | None = None,
    context: Context | None = None,
    reported: Collection[str] | None = None,
    layout: Layout | None = None,
    results: Sequence[FileResult] | None = None,
    change: Change | None = None,
) -> LintResult:
    """The rules over the files read (:func:`kaffinity.engine.lint`): every call of a run into
    the engine goes through here."""
    from kaffinity.engine import lint
    from kaffinity.rules import RULES

    return lint(
        files,
        settings,
        RULES if rules is None else rules,
        cluster=cluster,
        context=context,
        reported=reported,
        layout=layout,
        results=results,
        change=change,
    )


class Stream:
    """``lint``'s loading through the single-object stage (:mod:`kaffinity.stream`) and the
    cache (:mod:`kaffinity.cache`): what it found of each file, by name."""

    def __init__(
        self, settings: Settings, cache: Optional[Cache], policies: Optional[PolicyStream] = None
    ) -> None:
        self.settings = settings
        self.cache = cache
        #: The policies the single-object stage runs (:mod:`kaffinity.policy.streamed`).
        self.policies = policies
        self.results: list[FileResult] = []

    def load(
        self,
        targets: Sequence[str],
        excluded: Optional[ExcludeFn],
        seen: set[tuple[int, int]],
        *,
        local: bool,
    ) -> list[SourceFile]:
        from kaffinity.load.parallel import default_jobs
        from kaffinity.stream import load_results

        settings = self.settings
        found = load_results(
            targets,
            settings,
            excluded,
            seen,
            jobs=settings.jobs or default_jobs(),
            local=local,
            cache=self.cache,
            policies=self.policies,
        )
        self.results.extend(found)
        return [item.file for item in found]

    def typed(self) -> dict[int, Object | None]:
        """The typed objects the single-object stage built here, by id() of compact document
        (the engine builds the others)."""
        found: dict[int, Object | None] = {}
        for item in self.results:
            if item.typed is not None:
                found.update(zip(map(id, item.file.documents), item.typed, strict=True))
        return found

    def close(self, notes: Notes) -> None:
        """Prune the cache; a note if it could not be written."""
        if self.cache is None:
            return
        self.cache.prune()
        if self.cache.error is not None:
            notes.note(f"{self.cache.error} (--no-cache to skip it)")


def stream(
    paths: Optional[list[str]],
    settings: Settings,
    cache_dir: Optional[str],
    roots: Sequence[str] = (),
    notes: Optional[Notes] = None,
    memo: Optional[PolicyMemo] = None,
) -> Optional[Stream]:
    """How ``lint`` loads: file by file through the single-object stage and the cache, unless the
    input is stdin or a policy may read any field: then the files are read whole. A repository
    that renders streams too: the layout reads its kustomizations and charts from the disk, and
    the rendered units go through the same stage (:func:`kaffinity.run.layout.layout`)."""
    from kaffinity.load.parse import STDIN

    if STDIN in (paths or ()):
        return None
    policies = None
    if settings.policies:
        # Rendered units are staged without the policies (kaffinity.run.layout): with policies, a
        # repository that renders is read whole, as before (docs/cache.md).
        from kaffinity.repo.rendering import renderable_on_disk

        if settings.units != "one" and renderable_on_disk(
            (root for root in roots if root != STDIN), charts=_helm_available if settings.render else False
        ):
            return None
        # Policies run file by file with what they read of other objects found first; those
        # that read the whole input (kaffinity.policy.streamed.plan) read it whole.
        from kaffinity.load.files import ExcludeFn
        from kaffinity.policy.streamed import stream_policies
        from kaffinity.run.inputs import policies as read_policies

        targets = list(paths or ["."])
        context = list(roots[len(targets) :])
        policies, _ = stream_policies(
            settings,
            [
                (targets, _excluded(settings, targets)),
                (context, ExcludeFn(settings.exclude) if settings.exclude else None),
            ],
            read_policies(settings.policies, memo) if memo is not None else None,
            lambda: load_cluster(settings),  # its Namespaces, when a policy reads them
        )
        if policies is None:
            return None
    cache = None
    if settings.cache:
        from kaffinity.cache import open_cache
        from kaffinity.stream import fingerprint

        cache, note = open_cache(
            settings.cache_dir, settings.base_dir, cache_dir, fingerprint(settings, policies), settings.limits
        )
        if note is not None and notes is not None:
            notes.note(note)
    return Stream(settings, cache, policies)


def _helm_available() -> bool:
    from kaffinity.repo.engines import helm_engine

    return helm_engine() is not None


def has_release(files: Sequence[SourceFile]) -> bool:
    """Whether the files hold a GitOps release."""
    from kaffinity.repo.rendering import has_release as holds_release

    return holds_release(doc for file in files for doc in file.documents)


def load(
    paths: Optional[list[str]],
    settings: Settings,
    stdin: Stdin,
    seen: Optional[set[tuple[int, int]]] = None,
    *,
    stream: Optional[Stream] = None,
) -> list[SourceFile]:
    """The files of ``paths`` (the current folder when none), streamed when ``stream`` is given;
    stdin's under the name it is linted under, its ``# Source:`` comments followed."""
    from kaffinity.load.files import load
    from kaffinity.load.parse import STDIN, STDIN_NAME

    targets = paths or ["."]
    excluded = _excluded(settings, targets)
    if stream is not None:
        return stream.load(targets, excluded, seen if seen is not None else set(), local=True)
    from kaffinity.load.parallel import default_jobs

    jobs = settings.jobs or default_jobs()
    files: list[SourceFile] = load(
        targets, excluded, seen, jobs=jobs, limits=settings.limits, gitignore=settings.gitignore
    )
    stdin_filename = stdin.filename
    if STDIN in targets and stdin_filename:
        from kaffinity.load.charts import named_template

        files = [named_template(file, stdin_filename) for file in files]
    if STDIN in targets:
        files = _map_rendered_stdin(files, settings, stdin_filename)
    if stdin_filename and STDIN in targets:
        # Findings take their file from the document: rename both.
        files = [
            replace(
                file,
                name=stdin_filename,
                documents=tuple(replace(doc, file=stdin_filename) for doc in file.documents),
            )
            if file.name == STDIN_NAME
            else file
            for file in files
        ]
    return files


def _excluded(settings: Settings, targets: list[str]) -> Optional[ExcludeFn]:
    """What ``lint`` leaves out of ``targets``: ``exclude:``, and the policy folders."""
    from kaffinity.load.files import ExcludeFn

    fixtures = _policy_folders(settings, targets)
    return ExcludeFn(settings.exclude, folders=fixtures) if settings.exclude or fixtures else None


def _policy_folders(settings: Settings, targets: list[str]) -> list[str]:
    """The folders of policies (``policies:``, ``--policy``) whose files are not manifests of the
    repository: ``kaffinity policy test FOLDER`` reads each file there as a policy file or as a
    fixture (docs/policies.md), and a fixture's bad objects are bad on purpose. Not a folder that
    is, or holds, a folder being linted (``lint policies/``, or ``policies: [.]``): that is
    linted as asked. Files named one by one (pre-commit's) are left out like the walked ones."""
    folders = [path for path in settings.policies if os.path.isdir(path)]
    linted = [os.path.abspath(target) for target in targets if os.path.isdir(target)]
    return [
        folder
        for folder in folders
        if not any(
            target == (full := os.path.abspath(folder)) or target.startswith(full + os.sep)
            for target in linted
        )
    ]


def _map_rendered_stdin(
    files: list[SourceFile], settings: Settings, stdin_filename: Optional[str]
) -> list[SourceFile]:
    """``helm template ... | kaffinity lint -``: the documents of the stream are pointed at the
    templates its ``# Source:`` comments name, where those are on disk (kaffinity.repo.render):
    below the chart folder ``--stdin-filename`` names, else below the working folder."""
    from kaffinity.load.parse import STDIN_NAME

    chart = (
        stdin_filename
        if stdin_filename and os.path.isfile(os.path.join(stdin_filename, "Chart.yaml"))
        else None
    )
    out: list[SourceFile] = []
    for file in files:
        if file.name == STDIN_NAME and "# Source: " in file.text and not file.problems:
            from kaffinity.repo.helm.sources import map_helm_sources

            out.extend(map_helm_sources(file, chart, settings.limits).files)
        else:
            out.append(file)
    return out


def load_in_context(
    paths: Optional[list[str]],
    settings: Settings,
    stdin: Stdin,
    changed: bool,
    manifests: ContextManifests,
    notes: Notes,
    stream: Optional[Stream] = None,
) -> tuple[list[SourceFile], Optional[set[str]], bool, list[str]]:
    """The files to lint, the names of those to report on (None: all), whether the
    cross-workload rules have what they need, and the paths read (where kustomizations are
    looked for).

    With ``--changed``, ``--context`` or ``context:`` in the config, PATHS are part of a larger
    set of manifests (the context) that the rules read but that is not reported on. The context
    is ``--context``, else ``context:``, else (with ``--changed``) the git repository's manifests
    (:func:`kaffinity.run.inputs.context_manifests`). Without any, ``--changed`` has no context:
    it says so once and the rules that need every manifest (``Rule.needs_all_manifests``) are
    skipped rather than guess. ``stream``: the files go through the single-object stage as they
    are read (:mod:`kaffinity.stream`); the context's are only compacted.
    """
    if not changed and not manifests.given:
        return load(paths, settings, stdin, stream=stream), None, True, list(paths or ["."])
    missing = [path for path in manifests.given if not os.path.exists(path)]
    if missing:
        raise RunError(f"kaffinity: error: {quote_name(missing[0])}: context path not found")
    seen: set[tuple[int, int]] = set()
    files = load(paths, settings, stdin, seen, stream=stream)
    from kaffinity.load.charts import charts_of_templates

    # A template changed: its chart's one helm-template finding (at Chart.yaml) is reported.
    reported = {file.name for file in files} | charts_of_templates(files)
    context_paths = manifests.paths
    if not context_paths:
        _no_context(notes)
        return files, reported, False, list(paths or ["."])
    more = _load_context(context_paths, settings, seen, notes, stream)
    return [*files, *more], reported, True, [*(paths or ()), *context_paths]


def _no_context(notes: Notes) -> None:
    """``--changed`` without a context: which rules are skipped for it."""
    from kaffinity.rules import RULES

    skipped = [rule for rule in RULES if rule.needs_all_manifests]
    categories = ", ".join(sorted({rule.category for rule in skipped}))
    notes.message(
        "kaffinity: no context: not in a git repository and no context: in .kaffinity.yaml, "
        f"so the {len(skipped)} rules that need every manifest ({categories}) are skipped",
    )


def _load_context(
    context_paths: tuple[str, ...],
    settings: Settings,
    seen: set[tuple[int, int]],
    notes: Notes,
    stream: Optional[Stream] = None,
) -> list[SourceFile]:
    """The context's files (those not read already); a note on those that could not be parsed."""
    from kaffinity.load.files import ExcludeFn, load
    from kaffinity.load.parallel import default_jobs

    excluded = ExcludeFn(settings.exclude) if settings.exclude else None
    if stream is not None:
        more = stream.load(context_paths, excluded, seen, local=False)
    else:
        more = load(
            context_paths,
            excluded,
            seen,
            jobs=settings.jobs or default_jobs(),
            limits=settings.limits,
            gitignore=settings.gitignore,
        )
    broken = [file for file in more if any(problem.rule == "parse-error" for problem in file.problems)]
    if broken:
        first = broken[0]
        problem = next(problem for problem in first.problems if problem.rule == "parse-error")
        where = f"{first.name}:{problem.span.line}" if problem.span else first.name
        notes.note(
            f"{len(broken)} context file(s) could not be read and are left out "
            f"(first: {where}: {problem.message})",
        )
    return more


def load_cluster(settings: Settings) -> Cluster | None:
    """The declared cluster, if any; a path that does not exist is a usage error (exit 2)."""
    if settings.cluster is None:
        return None
    from kaffinity.load.files import load
    from kaffinity.simulate.cluster import cluster_from

    if not os.path.exists(settings.cluster):
        raise RunError(f"kaffinity: error: {quote_name(str(settings.cluster))}: cluster file not found")
    # A cluster file is read whatever it holds: what it lacks is reported by cluster_from.
    files = load([settings.cluster], limits=settings.limits, gitignore=False, manifests_only=False)
    return cluster_from(files, settings.namespace, settings.limits.nodes)


def load_problems(files: list[SourceFile], notes: Notes) -> bool:
    """The loader's problems (one line each); True if a file could not be read or parsed
    (``parse-error``, exit 2). An unrendered Helm template is a warning, as in lint."""
    found = False
    for file in files:
        for problem in file.problems:
            name = quote_name(file.name)
            where = f"{name}:{problem.span.line}:{problem.span.column}" if problem.span else name
            load_error = problem.rule == "parse-error"
            severity = "error" if load_error else "warning"
            notes.problem(f"{where}: {severity} [{problem.rule}] {problem.message}")
            found = found or load_error
    return found


def input_problems(
    files: list[SourceFile], settings: Settings, layout: Layout, notes: Notes, cluster: Cluster | None = None
) -> bool:
    """What the loader found (unparsable files, unrendered Helm templates), as lint reports it:
    suppressions and severities apply, and ``parse-error`` is always shown. True when an input
    could not be read (exit code 2)."""
    from kaffinity.rules import RULES

    loader_rules = tuple(rule for rule in RULES if rule.name in ("parse-error", "helm-template"))
    result = run_rules(files, settings, loader_rules, layout=layout)
    for finding in result.findings:
        name = quote_name(finding.file)
        where = f"{name}:{finding.line}:{finding.column}" if finding.line else name
        notes.problem(f"{where}: {finding.severity.value} [{escape(finding.rule)}] {finding.message}")
    broken = any(problem.rule == "parse-error" for file in files for problem in file.problems)
    cluster_broken = load_problems(list(cluster.files), notes) if cluster is not None else False
    return broken or cluster_broken
