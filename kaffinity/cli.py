"""The command line: parse options, build settings, run, report. Nothing else lives here."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO, Optional

import typer

from kaffinity import __version__
from kaffinity.help import Group
from kaffinity.load.display import escape, patch_lines, quote_name, utf8

if TYPE_CHECKING:
    from collections import Counter
    from collections.abc import Collection, Sequence

    from kaffinity.cache import Cache
    from kaffinity.config import Settings
    from kaffinity.context import Context
    from kaffinity.engine import Checked, LintResult
    from kaffinity.expand.fixes import FileFix
    from kaffinity.findings import Severity
    from kaffinity.k8s.model import Object
    from kaffinity.load.files import ExcludeFn
    from kaffinity.load.parse import SourceFile
    from kaffinity.policy.load import Loaded
    from kaffinity.repo.changed import Change
    from kaffinity.repo.rendering import RenderSummary
    from kaffinity.repo.sandbox import Sandbox
    from kaffinity.repo.units import Layout, Unit
    from kaffinity.report.baseline import Baseline
    from kaffinity.rules.base import Rule
    from kaffinity.simulate.cluster import Cluster

app = typer.Typer(
    name="kaffinity",
    cls=Group,  # the same --help on every supported typer (kaffinity/help.py)
    help="Lint Kubernetes pod scheduling rules (affinity, anti-affinity, topology spread, "
    "tolerations) before they reach a cluster.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Markdown: the lines of a docstring paragraph are one paragraph, rewrapped to the terminal.
    rich_markup_mode="markdown",
)


class OutputFormat(str, Enum):
    auto = "auto"
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"
    markdown = "markdown"
    concise = "concise"


class MinSeverity(str, Enum):
    error = "error"
    warning = "warning"
    info = "info"


class FailOn(str, Enum):
    error = "error"
    warning = "warning"
    info = "info"
    none = "none"


class Color(str, Enum):
    auto = "auto"
    always = "always"
    never = "never"


class RulesFormat(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kaffinity {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """kaffinity: scheduling rules, checked before deploy."""


def _names(values: Optional[list[str]]) -> Optional[tuple[str, ...]]:
    if values is None:
        return None
    return tuple(name.strip() for value in values for name in value.split(",") if name.strip())


_Paths = Annotated[
    Optional[list[str]],
    typer.Argument(help="Files or folders (recursive), or - for stdin. Default: the current folder."),
]
_Config = Annotated[
    Optional[str],
    typer.Option("--config", "-c", help="Config file (default: nearest .kaffinity.yaml upward)."),
]
_NoConfig = Annotated[bool, typer.Option("--no-config", help="Ignore any .kaffinity.yaml.")]
_Limit = Annotated[
    Optional[list[str]],
    typer.Option(
        "--limit",
        metavar="NAME=VALUE",
        help="Set a limit, above its default too (repeatable): file-size, depth, alias-nodes, pods, "
        "nodes, findings; also KAFFINITY_LIMITS. A config file may only lower them.",
    ),
]


def _kube_version(value: Optional[str]) -> Optional[str]:
    from kaffinity.config import kube_version_option

    return kube_version_option(value)


_KubeVersion = Annotated[
    Optional[str],
    typer.Option(
        "--kube-version",
        help="Target Kubernetes version: 1.33, v1.33, 1.33.2 (the minor counts).",
        callback=_kube_version,
    ),
]
_FeatureGates = Annotated[
    Optional[str],
    typer.Option("--feature-gates", help="Gates that differ from the defaults: Name=true,Other=false."),
]
_Namespace = Annotated[
    Optional[str],
    typer.Option("--namespace", "-n", help="Namespace of objects that name none (default: default)."),
]
_Output = Annotated[Optional[str], typer.Option("--output", "-o", help="Write to this file.")]
_Cluster = Annotated[
    Optional[str],
    typer.Option(
        "--cluster",
        help="File or folder declaring the cluster: Nodes, Namespaces, existing Pods (kubectl get -o yaml).",
    ),
]
_Closed = Annotated[
    Optional[bool],
    typer.Option(
        "--closed/--open",
        help="The input is complete: a required pod affinity nothing matches is an error, not a warning.",
    ),
]
_StdinFilename = Annotated[
    Optional[str], typer.Option("--stdin-filename", help="Name to report for input read from stdin.")
]
_Render = Annotated[
    Optional[bool],
    typer.Option(
        "--render/--no-render",
        help="Build kustomize overlays, render Helm charts and GitOps releases (with kustomize/kubectl "
        "and helm, or kaffinity[helm]) and lint the result, findings placed on the source files "
        "(default: on, render: in the config; --no-render reads the files as written).",
    ),
]
_AllowNetwork = Annotated[
    Optional[bool],
    typer.Option(
        "--allow-network",
        help="Let rendering fetch what overlays name remotely (remote bases, URLs, helmCharts); "
        "off by default, and never from the config (also KAFFINITY_ALLOW_NETWORK=1).",
    ),
]
_Offline = Annotated[
    Optional[bool],
    typer.Option(
        "--offline",
        help="Never reach the network, whatever --allow-network or KAFFINITY_ALLOW_NETWORK say "
        "(also KAFFINITY_OFFLINE=1).",
    ),
]
_RenderTimeout = Annotated[
    Optional[float],
    typer.Option(
        "--render-timeout",
        metavar="SECONDS",
        help="Longest render of one unit (default 120; also KAFFINITY_RENDER_TIMEOUT).",
    ),
]
_RenderBudget = Annotated[
    Optional[float],
    typer.Option(
        "--render-budget",
        metavar="SECONDS",
        help="Time for all renders of the run; units left are read as written (default 600; "
        "also KAFFINITY_RENDER_BUDGET).",
    ),
]
_RenderMemory = Annotated[
    Optional[str],
    typer.Option(
        "--render-memory",
        metavar="SIZE",
        help="Memory each rendering tool may use, a Kubernetes quantity, e.g. 512Mi "
        "(default 2Gi; also KAFFINITY_RENDER_MEMORY).",
    ),
]
_Unit = Annotated[
    Optional[str],
    typer.Option("--unit", help="Only this deployment unit (see lint's report; docs/repositories.md)."),
]


@app.command()
def lint(
    paths: _Paths = None,
    output_format: Annotated[
        OutputFormat,
        typer.Option(
            "--format", "-f", help="Report format; auto = github on GitHub Actions, text otherwise."
        ),
    ] = OutputFormat.auto,
    output: _Output = None,
    config: _Config = None,
    no_config: _NoConfig = False,
    kube_version: _KubeVersion = None,
    feature_gates: _FeatureGates = None,
    proposals: Annotated[
        Optional[bool],
        typer.Option(
            "--proposals/--no-proposals",
            help="Check proposal-only fields (KEP-4328, pod selector Gt/Lt) as the proposals specify.",
        ),
    ] = None,
    select: Annotated[
        Optional[list[str]], typer.Option("--select", help="Rules or categories to run (comma-separated).")
    ] = None,
    ignore: Annotated[
        Optional[list[str]],
        typer.Option("--ignore", help="Rules or categories not to run (comma-separated)."),
    ] = None,
    fail_on: Annotated[
        Optional[FailOn],
        typer.Option("--fail-on", help="Lowest severity that fails the run (default: error)."),
    ] = None,
    min_severity: Annotated[
        Optional[MinSeverity],
        typer.Option(
            "--min-severity",
            help="Lowest severity the report shows (default: info); the exit code still counts all.",
        ),
    ] = None,
    namespace: _Namespace = None,
    exclude: Annotated[
        Optional[list[str]], typer.Option("--exclude", help="Glob of files or folders to skip (repeatable).")
    ] = None,
    cluster_file: _Cluster = None,
    closed: _Closed = None,
    simulate: Annotated[
        Optional[bool],
        typer.Option(
            "--simulate/--no-simulate",
            help="With a cluster: place every pod with the offline scheduler (default) or skip it.",
        ),
    ] = None,
    stdin_filename: _StdinFilename = None,
    changed: Annotated[
        bool,
        typer.Option(
            "--changed",
            help="PATHS are the files a commit changes (pre-commit): read the context too, "
            "report on PATHS only.",
        ),
    ] = False,
    context: Annotated[
        Optional[list[str]],
        typer.Option(
            "--context",
            help="Manifests the cross-workload rules read but are not reported on (repeatable; "
            "default: context: in the config; with --changed, the git repository's manifests).",
        ),
    ] = None,
    policy: Annotated[
        Optional[list[str]],
        typer.Option(
            "--policy",
            help="A policy file or folder: kaffinity.io/v1alpha1 Policy objects, each checked as a "
            "rule of category policy (repeatable; default: policies: in the config).",
        ),
    ] = None,
    reports: Annotated[
        Optional[list[str]],
        typer.Option(
            "--report",
            help="Also write a report to a file: FORMAT=FILE, FORMAT one of text, json, sarif, "
            "github, markdown (repeatable).",
        ),
    ] = None,
    color: Annotated[Color, typer.Option("--color", help="Colour the text report.")] = Color.auto,
    no_progress: Annotated[
        bool,
        typer.Option(
            "--no-progress", help="No progress line on stderr (shown on a terminal after 2 s otherwise)."
        ),
    ] = False,
    jobs: Annotated[
        Optional[int],
        typer.Option(
            "--jobs",
            "-j",
            min=1,
            help="Processes that parse files (default: one per core; the output is the same for any number).",
        ),
    ] = None,
    max_file_size: Annotated[
        Optional[str],
        typer.Option(
            "--max-file-size",
            help="Largest file read, e.g. 64Mi (default 32Mi; as --limit file-size=64Mi).",
        ),
    ] = None,
    limit: _Limit = None,
    pre_commit: Annotated[
        bool,
        typer.Option(
            "--pre-commit",
            help="As pre-commit's hooks run it: options end at the first path, and an argument that "
            "names an existing file is a path, even one named like an option (--config=x.yaml).",
        ),
    ] = False,
    build: _Render = None,
    allow_network: _AllowNetwork = None,
    offline: _Offline = None,
    render_timeout: _RenderTimeout = None,
    render_budget: _RenderBudget = None,
    render_memory: _RenderMemory = None,
    no_gitignore: Annotated[
        bool,
        typer.Option(
            "--no-gitignore",
            help="Also read the files git ignores in the folders walked "
            "(default: left out; also gitignore: in the config).",
        ),
    ] = False,
    no_cache: Annotated[
        bool,
        typer.Option(
            "--no-cache",
            help="Neither read nor write the cache of earlier runs (also cache: false in the config).",
        ),
    ] = False,
    cache_dir: Annotated[
        Optional[str],
        typer.Option(
            "--cache-dir",
            metavar="DIR",
            help="The cache's folder (default: .kaffinity_cache beside the config file, else here; "
            "also KAFFINITY_CACHE_DIR, cache-dir: in the config).",
        ),
    ] = None,
    new_from_rev: Annotated[
        Optional[str],
        typer.Option(
            "--new-from-rev",
            metavar="REV",
            help="Report only the findings that the same lint of git revision REV does not have "
            "(docs/adopting.md).",
        ),
    ] = None,
    baseline: Annotated[
        Optional[str],
        typer.Option(
            "--baseline",
            metavar="FILE",
            help="Leave out the findings of this baseline file (kaffinity baseline write; also "
            "baseline: in the config).",
        ),
    ] = None,
    write_baseline: Annotated[Optional[str], typer.Option("--write-baseline", hidden=True)] = None,
) -> None:
    """Lint manifests. Exit code 0: clean; 1: findings at or above --fail-on; 2: bad input or usage;
    3: internal error (a bug in kaffinity)."""
    from kaffinity.findings import Severity
    from kaffinity.load.progress import active, terminal

    extra_reports = _report_targets(reports or ())
    memo: PolicyMemo = {}  # the policies, read once for the settings and the rules
    settings = _settings(
        config,
        no_config,
        kube_version,
        feature_gates,
        proposals,
        select,
        ignore,
        namespace,
        exclude,
        policy,
        memo,
        limit,
    ).overridden(
        cluster=cluster_file,
        closed=closed,
        simulate=simulate,
        jobs=jobs,
        render=build,
        cache=False if no_cache else None,
    )
    sandbox = _sandbox(allow_network, render_timeout, render_budget, render_memory, offline)
    settings = replace(settings, sandbox=sandbox)
    if no_gitignore:
        settings = replace(settings, gitignore=False)
    if max_file_size is not None:
        settings = replace(settings, limits=replace(settings.limits, file_size=_size_option(max_file_size)))
    if fail_on is not None:
        threshold = None if fail_on is FailOn.none else Severity(fail_on.value)
        settings = replace(settings, fail_on=threshold)
    if min_severity is not None:
        settings = replace(settings, min_severity=Severity(min_severity.value))
    # A policy path that does not exist is a usage error, as a missing --cluster is: nothing
    # is linted and no report says "No problems found" (issue 33).
    missing = [path for path in settings.policies if not os.path.exists(path)]
    if missing:
        for path in missing:
            _say(f"kaffinity: error: {quote_name(path)}: policy file not found")
        raise typer.Exit(2)
    # Before anything is linted: a baseline that cannot be read, a REV that names no commit.
    before = _Before.of(paths, settings, baseline, new_from_rev, write_baseline)
    # Erased before any report is written; not while the user types the input on the terminal.
    typed = "-" in (paths or ()) and sys.stdin.isatty()
    with active(terminal(sys.stderr, enabled=not (no_progress or typed))):
        lint_context, result, policy_errors = _linted(
            paths, settings, stdin_filename, changed, context, cache_dir, memo
        )
        result = before.left_out(result, paths, settings, stdin_filename, changed, context, memo)

    fmt = output_format.value
    if fmt == "auto":
        fmt = "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"
    from kaffinity.report import render

    # What was loaded and checked lives until the process exits: the reports' allocations need
    # not make the collector walk it all again.
    gc.freeze()

    sources = lint_context.texts  # a compact file's text is read again if a finding shows it
    shown = _shown(result, settings.min_severity)
    for target_format, target in extra_reports:
        text = render(shown, target_format, sources=sources, context=lint_context)
        _emit(text, target)
    use_color = _use_color(color, output)
    _emit(render(shown, fmt, color=use_color, sources=sources, context=lint_context), output)
    for message in result.notices:
        _say(f"kaffinity: note: {message}")
    for message in result.internal_errors:
        _say(f"kaffinity: {message}")
    for message in policy_errors:
        _say(message)
    if result.exit_code:
        raise typer.Exit(result.exit_code)
    if policy_errors:  # a bad policy is bad input: the other policies and the rules still ran
        raise typer.Exit(2)
    raise typer.Exit(1 if result.failed(settings.fail_on) else 0)


def _linted(
    paths: Optional[list[str]],
    settings: Settings,
    stdin_filename: Optional[str],
    changed: bool,
    context: Optional[list[str]],
    cache_dir: Optional[str],
    memo: PolicyMemo,
) -> tuple[Context, LintResult, list[str]]:
    """``lint``'s run: the files read (through the single-object stage and the cache where it
    can: :func:`_stream`), the rules, the policies: the first unit's context, the result and
    the policies' problems."""
    from kaffinity.context import Context
    from kaffinity.engine import lint as run_lint
    from kaffinity.rules import RULES

    # With --changed and no context, the repository's manifests are the context: listed once
    # (a git call), for the stream's decision and for loading.
    listing = _repository_context(paths) if changed and not (context or settings.context) else ()
    stream = _stream(
        paths, settings, cache_dir, [*(paths or ["."]), *(context or settings.context), *listing]
    )
    files, reported, has_context, roots = _load_in_context(
        paths, settings, stdin_filename, changed, context, stream, listing
    )
    if stream is not None and settings.render and _has_release(files):
        # A GitOps release is rendered from its whole object and the ConfigMaps, sources and
        # values around it, which the single-object stage compacts away: read whole, once more.
        stream.close()
        stream = None
        files, reported, has_context, roots = _load_in_context(
            paths, settings, stdin_filename, changed, context, None, listing
        )
    rules = RULES if has_context else tuple(rule for rule in RULES if not rule.needs_all_manifests)
    rules, policy_errors = _with_policies(rules, settings, memo)
    cluster = _load_cluster(settings)
    # --changed: the files named too (a values file is no manifest), and the units each touches.
    names = _changed_names(reported, paths) if changed and reported is not None else None
    touched: dict[str, tuple[str, ...]] = {}
    # Streamed: renderable_on_disk found no kustomization (nor a chart to render) there (_stream).
    files, layout = _layout(
        files,
        roots,
        settings,
        kustomized=stream is None,
        changed=names,
        touched=touched,
        cached=True,
        cache_dir=cache_dir,
    )
    change = _change(files, layout, names, touched, settings) if names is not None else None
    # The first unit's context: the Markdown report draws its graph; the units share the
    # typed objects built from their documents.
    typed = stream.typed() if stream is not None else {}
    lint_context = Context(files, settings, cluster, layout.units[0].documents, typed)
    result = run_lint(
        files,
        settings,
        rules,
        context=lint_context,
        reported=names if names is not None else reported,
        layout=layout,
        checked=stream.checked if stream is not None else None,
        change=change,
    )
    if stream is not None:
        stream.close()
    return lint_context, replace(result, render=_render_summary(settings, layout)), policy_errors


def _changed_names(reported: Collection[str], paths: Optional[list[str]]) -> frozenset[str]:
    """The files ``--changed`` names: those read, and the other files given (a values file)."""
    return frozenset(reported) | {path for path in paths or () if path != "-" and os.path.isfile(path)}


def _change(
    files: Sequence[SourceFile],
    layout: Layout,
    names: frozenset[str],
    touched: Mapping[str, tuple[str, ...]],
    settings: Settings,
) -> Change:
    """What ``--changed`` reports on (kaffinity.repo.changed): the files, their versions at
    ``HEAD``, and the units rendered from them (``touched``: the overlays and charts, by
    :func:`_layout`; the releases are found here, once rendered)."""
    from kaffinity.repo.changed import Change, previous_documents, rendered_touches

    previous = previous_documents(names, settings.limits)
    documents = [doc for file in files if file.name in names for doc in file.documents]
    documents.extend(doc for docs in previous.values() for doc in docs)
    units = rendered_touches(layout, touched, names, documents)
    return Change(names, previous, units)


@dataclass(frozen=True)
class _Before:
    """What ``lint`` compares with (docs/adopting.md): the baseline file and its fingerprints
    (``--baseline``, ``baseline:``), the repository and commit of ``--new-from-rev``, and where
    ``baseline write`` (``--write-baseline``) writes instead."""

    baseline: Optional[str] = None
    known: Optional[Baseline] = None
    rev: Optional[str] = None
    revision: Optional[tuple[str, str]] = None
    write: Optional[str] = None

    @classmethod
    def of(
        cls,
        paths: Optional[list[str]],
        settings: Settings,
        baseline: Optional[str],
        new_from_rev: Optional[str],
        write: Optional[str],
    ) -> _Before:
        """Read and checked before anything is linted: a usage error (exit 2) otherwise."""
        if write is not None:
            return cls(write=write)
        file = baseline or settings.baseline
        known = _read_baseline(file, settings) if file else None
        revision = _revision(new_from_rev, paths) if new_from_rev is not None else None
        return cls(file, known, new_from_rev, revision)

    def left_out(
        self,
        result: LintResult,
        paths: Optional[list[str]],
        settings: Settings,
        stdin_filename: Optional[str],
        changed: bool,
        context: Optional[list[str]],
        memo: PolicyMemo,
    ) -> LintResult:
        """``result`` without what the baseline and REV had; ``baseline write`` writes here and exits."""
        if self.write is None and self.known is None and self.revision is None:
            return result  # a plain lint: the baseline module is not even imported (start-up)
        from kaffinity.report.baseline import DEFAULT_BASELINE, fixed_note, left_out

        if self.write is not None:
            default = _shown_path(settings.baseline) if settings.baseline else DEFAULT_BASELINE
            _write_baseline(result, self.write or default)
        if self.known is not None and self.baseline is not None:
            covered = self.known.in_scope(paths or ["."], {rule.name for rule in result.rules})
            result = left_out(result, self.known.counts, "baseline", _shown_path(self.baseline), covered)
        if self.revision is not None and self.rev is not None:
            at_rev = _linted_at(self.revision, paths, settings, stdin_filename, changed, context, memo)
            result = left_out(result, at_rev, "rev", self.rev)
        if result.new_only is not None and self.baseline is not None:
            note = fixed_note(result.new_only, _shown_path(self.baseline))
            if note is not None:
                result = replace(result, notices=(*result.notices, note))
        return result


def _read_baseline(path: str, settings: Settings) -> Baseline:
    """The baseline's fingerprints and counts; a usage error (exit 2) naming the file and the
    line when it cannot be read."""
    from kaffinity.report.baseline import BaselineError, read

    try:
        return read(path, quote_name(_shown_path(path)), settings.limits)
    except BaselineError as error:
        _say(str(error))
        raise typer.Exit(2) from None


def _write_baseline(result: LintResult, path: str) -> None:
    """``kaffinity baseline write``: the fingerprints of ``result`` to ``path``, then exit (2 when
    an input could not be read: its findings are never baselined; 3 on an internal error)."""
    from kaffinity.report.baseline import write_text

    _emit(write_text(result), path)
    baselined = sum(1 for finding in result.findings if finding.rule != "parse-error")
    _say(f"kaffinity: wrote {baselined} finding{'s' if baselined != 1 else ''} to {quote_name(path)}")
    for message in result.internal_errors:
        _say(f"kaffinity: {message}")
    if result.exit_code:
        for finding in result.findings:
            if finding.rule == "parse-error":
                where = f"{finding.file}:{finding.line}:{finding.column}" if finding.line else finding.file
                _say(f"{quote_name(where)}: error: {finding.message}")
    raise typer.Exit(result.exit_code)


def _revision(rev: str, paths: Optional[list[str]]) -> tuple[str, str]:
    """``--new-from-rev REV``: the repository's top and REV's commit; a usage error (exit 2)
    outside a repository, for stdin, or when REV names no commit."""
    from kaffinity.load.revision import RevisionError, resolve

    if "-" in (paths or ()):
        _say("kaffinity: error: --new-from-rev lints files of a repository, not stdin")
        raise typer.Exit(2)
    # The repository of the first path linted (the working directory's when it names none).
    start = next((path for path in paths or () if os.path.exists(path)), ".")
    folder = start if os.path.isdir(start) else os.path.dirname(start) or "."
    try:
        return resolve(rev, folder)
    except RevisionError as error:
        _say(f"kaffinity: error: {error}")
        raise typer.Exit(2) from None


def _linted_at(
    revision: tuple[str, str],
    paths: Optional[list[str]],
    settings: Settings,
    stdin_filename: Optional[str],
    changed: bool,
    context: Optional[list[str]],
    memo: PolicyMemo,
) -> Counter[str]:
    """The fingerprints of the findings of the same lint of another revision: its tree written
    to a temporary folder (kaffinity.load.revision: the work tree and the index untouched), the
    paths, the context and the paths of the config mapped into it, the config, the policies and
    the cluster of this checkout, no cache; the folder removed whatever happens."""
    import shutil
    import tempfile
    from collections import Counter

    from kaffinity.load.repository import within
    from kaffinity.load.revision import RevisionError, export
    from kaffinity.report.baseline import rev_counts

    top, sha = revision
    real_top = os.path.realpath(top)
    here = os.getcwd()
    folder = tempfile.mkdtemp(prefix="kaffinity-rev-")
    try:
        try:
            export(top, sha, folder, settings.limits.file_size)
        except RevisionError as error:
            _say(f"kaffinity: error: --new-from-rev: {error}")
            raise typer.Exit(2) from None
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
        _QUIET_NOTES.append(True)
        try:
            _, result, _ = _linted(rev_paths, at_rev, stdin_filename, changed, rev_context, None, memo)
            return rev_counts(result)  # in REV's tree: names are resolved where they are
        finally:
            _QUIET_NOTES.pop()
            os.chdir(here)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _has_release(files: Sequence[SourceFile]) -> bool:
    from kaffinity.repo.rendering import has_release

    return has_release(doc for file in files for doc in file.documents)


def _render_summary(settings: Settings, layout: Layout) -> RenderSummary:
    """What the reports say of rendering: the engines used for the kinds of units there were,
    the units rendered and those read as written (Unit.not_rendered)."""
    from kaffinity.repo.rendering import RenderSummary

    if not settings.render:
        return RenderSummary(enabled=False)
    kinds = {unit.source.partition(" ")[0] for unit in layout.units}
    helm = kustomize = None
    if kinds & {"helm", "flux", "argocd"}:
        from kaffinity.repo.engines import helm_engine

        helm = helm_engine()
    if kinds & {"kustomize", "flux", "argocd"}:
        from kaffinity.repo.engines import kustomize_engine

        kustomize = kustomize_engine()
    rendered = sum(1 for unit in layout.units if unit.source.endswith("(rendered)"))
    unrendered = tuple((unit.name, unit.not_rendered) for unit in layout.units if unit.not_rendered)
    return RenderSummary(True, helm, kustomize, rendered, unrendered)


def _shown(result: LintResult, lowest: Severity) -> LintResult:
    """The result as the report shows it: the findings below ``lowest`` (``--min-severity``)
    left out. The exit code is decided on the whole result."""
    from kaffinity.findings import Severity

    if lowest is Severity.INFO:
        return result
    kept = tuple(f for f in result.findings if f.severity.reaches(lowest))
    return replace(result, findings=kept, hidden=len(result.findings) - len(kept))


#: The policies of one command's run, by the paths they were read from: read once, for the
#: settings' rule names and for the rules.
PolicyMemo = dict[tuple[str, ...], "Loaded"]


def _policies(paths: tuple[str, ...], memo: PolicyMemo) -> Loaded | None:
    """The policies under ``paths`` (None: none given), read once per run. The policy engine is
    imported only when a policy is given."""
    if not paths:
        return None
    if paths not in memo:
        from kaffinity.policy.check import reserved_names
        from kaffinity.policy.load import load_policies

        memo[paths] = load_policies(paths, reserved_names())
    return memo[paths]


def _policy_names(paths: tuple[str, ...], memo: PolicyMemo) -> list[str]:
    """The names of the policies under ``paths`` (their problems are reported when they run)."""
    loaded = _policies(paths, memo)
    return loaded.names if loaded is not None else []


def _with_policies(
    rules: tuple[Rule, ...], settings: Settings, memo: PolicyMemo
) -> tuple[tuple[Rule, ...], list[str]]:
    """The rules with one more per policy of ``settings.policies``, and the policies' problems
    (file:line:column: error: ...)."""
    loaded = _policies(settings.policies, memo)
    if loaded is None:
        return rules, []
    from kaffinity.policy.check import policy_rules

    made, errors = policy_rules(loaded, settings)
    return (*rules, *made), [*loaded.errors, *errors]


class ExpandFormat(str, Enum):
    diff = "diff"
    yaml = "yaml"
    json = "json"


@app.command()
def expand(
    paths: _Paths = None,
    output_format: Annotated[
        ExpandFormat,
        typer.Option("--format", "-f", help="diff: written vs created; yaml: merged in place; json."),
    ] = ExpandFormat.diff,
    output: _Output = None,
    kube_version: _KubeVersion = None,
    feature_gates: _FeatureGates = None,
    config: _Config = None,
    no_config: _NoConfig = False,
    namespace: _Namespace = None,
    stdin_filename: _StdinFilename = None,
) -> None:
    """Show the label selectors kube-apiserver stores in the pods each workload creates, with
    matchLabelKeys / mismatchLabelKeys merged in. Exit code 0, 2 on bad input, 3 on an internal error."""
    from kaffinity.expand.preview import previews, render_diff, render_json, render_yaml

    settings = _settings(config, no_config, kube_version, feature_gates, namespace=namespace)
    files = _load(paths, settings, stdin_filename)
    # The previews read the files as written: nothing to render for them.
    files, layout = _layout(files, paths, replace(settings, render=False))
    broken = _input_problems(files, settings, layout)
    version, gates = settings.kube_version, settings.feature_gates
    objects = [file for file in files if os.path.normpath(file.name) not in layout.fragments]
    items = list(previews(objects, version, gates, settings.namespace, settings.workload_kinds))
    text = ""
    if output_format is ExpandFormat.json:
        text = render_json(items, version, gates)
    elif output_format is ExpandFormat.yaml:
        text = render_yaml(files, items, version)
    elif items:
        text = render_diff(items, version)
    if text or output is not None:
        _emit(text, output)
    if not items and output_format is not ExpandFormat.json:
        _say("kaffinity: no workload uses matchLabelKeys or mismatchLabelKeys")
    raise typer.Exit(2 if broken else 0)


class GraphFormat(str, Enum):
    mermaid = "mermaid"
    dot = "dot"
    json = "json"


class GraphSeverity(str, Enum):
    info = "info"
    warning = "warning"
    error = "error"


@app.command()
def graph(
    paths: _Paths = None,
    output_format: Annotated[
        GraphFormat,
        typer.Option("--format", "-f", help="mermaid (GitHub Markdown), dot (graphviz) or json (node-link)."),
    ] = GraphFormat.mermaid,
    output: _Output = None,
    cluster_file: _Cluster = None,
    closed: _Closed = None,
    kube_version: _KubeVersion = None,
    feature_gates: _FeatureGates = None,
    config: _Config = None,
    no_config: _NoConfig = False,
    namespace: _Namespace = None,
    stdin_filename: _StdinFilename = None,
    unit: _Unit = None,
    build: _Render = None,
    allow_network: _AllowNetwork = None,
    offline: _Offline = None,
    render_timeout: _RenderTimeout = None,
    render_budget: _RenderBudget = None,
    render_memory: _RenderMemory = None,
    focus: Annotated[
        Optional[list[str]],
        typer.Option(
            "--focus",
            help="Draw only this workload or budget (Kind/namespace/name, namespace/name or a unique "
            "name) or namespace (ns:NAME, or a name no workload has) and its neighbours (repeatable).",
        ),
    ] = None,
    depth: Annotated[
        Optional[int],
        typer.Option(
            "--depth",
            min=0,
            help="Relations to follow from --focus (default 1) or from --findings-only (default 0).",
        ),
    ] = None,
    findings_only: Annotated[
        bool,
        typer.Option(
            "--findings-only",
            help="Draw only the objects with findings of the enabled rules (all of them, not only the "
            "graph rules) and the relations between them; with --focus, those of its neighbourhood.",
        ),
    ] = False,
    min_severity: Annotated[
        Optional[GraphSeverity],
        typer.Option(
            "--min-severity", help="With --findings-only: the lowest severity that counts (default info)."
        ),
    ] = None,
    max_vertices: Annotated[
        Optional[int],
        typer.Option(
            "--max-vertices",
            min=0,
            help="Above this many vertices, draw one vertex per namespace instead "
            "(default 300; 0: no limit).",
        ),
    ] = None,
    max_edges: Annotated[
        Optional[int],
        typer.Option(
            "--max-edges",
            min=0,
            help="Above this many edges, draw one vertex per namespace instead (default 1000 for dot, "
            "500 and 50,000 characters for mermaid, its own limits; 0: no limit).",
        ),
    ] = None,
) -> None:
    """Draw the affinity graph: which workloads each affinity, anti-affinity, spread constraint
    and disruption budget reaches, with the graph rules' findings highlighted. With several
    deployment units, one unit (--unit; default the first). A picture above the limits
    (--max-vertices, --max-edges) is summarised per namespace; JSON is complete unless --focus
    or --findings-only is given. Exit code 0, 2 on bad input or a --focus that names nothing
    (or several objects), 3 on an internal error."""
    from kaffinity.context import Context
    from kaffinity.engine import lint as run_lint
    from kaffinity.findings import Severity
    from kaffinity.graph.picture import DEFAULT_LIMITS, draw, flagged_vertices, render_json
    from kaffinity.graph.view import FocusError, Limits, select
    from kaffinity.rules import RULES
    from kaffinity.rules.base import rule_enabled

    if depth is not None and not (focus or findings_only):
        _say("kaffinity: error: --depth needs --focus or --findings-only")
        raise typer.Exit(2)
    if min_severity is not None and not findings_only:
        _say("kaffinity: error: --min-severity needs --findings-only")
        raise typer.Exit(2)
    settings = _settings(config, no_config, kube_version, feature_gates, namespace=namespace)
    settings = settings.overridden(cluster=cluster_file, closed=closed, render=build)
    sandbox = _sandbox(allow_network, render_timeout, render_budget, render_memory, offline)
    settings = replace(settings, sandbox=sandbox)
    files = _load(paths, settings, stdin_filename)
    cluster = _load_cluster(settings)
    files, layout = _layout(files, paths, settings)
    broken = _input_problems(files, settings, layout, cluster)
    chosen = _focused_unit(files, settings, cluster, layout, focus) if focus and unit is None else None
    chosen = chosen or _choose_unit(layout, unit)
    # The graph rules the configuration enables: their findings are what the picture marks;
    # with --findings-only, every enabled rule's, as kaffinity lint reports them.
    drawn = tuple(
        rule
        for rule in RULES
        if (findings_only or rule.category == "graph")
        and rule_enabled(rule, settings.select, settings.ignore)
    )
    context = Context(files, settings, cluster, chosen.documents)
    result = run_lint(files, settings, drawn, context=context, layout=_only(layout, chosen))
    picture, findings = context.graph, result.findings
    selection = None
    if focus or findings_only:
        lowest = Severity(min_severity.value if min_severity is not None else "info")
        flagged = flagged_vertices(picture, findings, lowest) if findings_only else None
        try:
            selection = select(picture.graph, focus or (), depth, flagged, lowest.value)
        except FocusError as error:
            _say(f"kaffinity: error: {error}")
            raise typer.Exit(2) from None
    notes: list[str] = []
    if output_format is GraphFormat.json:
        text = render_json(picture, findings, settings.kube_version, selection)
    else:
        default = DEFAULT_LIMITS[output_format.value]
        given = max_vertices is not None or max_edges is not None
        limits = Limits(
            vertices=default.vertices if max_vertices is None else max_vertices,
            edges=default.edges if max_edges is None else max_edges,
            text=0 if given else default.text,
        )
        text, note = draw(picture, findings, output_format.value, selection, limits)
        notes += [note] if note else []
    _emit(text, output)
    for message in (
        *(f"note: {notice}" for notice in (*result.notices, *notes)),
        *result.internal_errors,
    ):
        _say(f"kaffinity: {message}")
    raise typer.Exit(result.exit_code if result.internal_errors else 2 if broken else 0)


class PlaceFormat(str, Enum):
    text = "text"
    json = "json"


@app.command()
def place(
    paths: _Paths = None,
    cluster_file: _Cluster = None,
    filters: Annotated[
        Optional[str],
        typer.Option(
            "--filters",
            help="Run only these filter plugins (comma-separated): InterPodAffinity, PodTopologySpread, "
            "NodeAffinity, TaintToleration, NodeResourcesFit, NodeUnschedulable, NodeName. Default: all.",
        ),
    ] = None,
    output_format: Annotated[
        PlaceFormat, typer.Option("--format", "-f", help="text (one line per pod) or json.")
    ] = PlaceFormat.text,
    output: _Output = None,
    kube_version: _KubeVersion = None,
    feature_gates: _FeatureGates = None,
    config: _Config = None,
    no_config: _NoConfig = False,
    namespace: _Namespace = None,
    stdin_filename: _StdinFilename = None,
    unit: _Unit = None,
    build: _Render = None,
    limit: _Limit = None,
    allow_network: _AllowNetwork = None,
    offline: _Offline = None,
    render_timeout: _RenderTimeout = None,
    render_budget: _RenderBudget = None,
    render_memory: _RenderMemory = None,
) -> None:
    """Place every pod of the given workloads on the declared cluster, as kube-scheduler's filters
    would, and show each pod's node or why it stays Pending; with several deployment units, each
    unit on its own (--unit: one of them). Exit code 0 when every pod is placed, 1 when some stay
    Pending, 2 on bad input, 3 on an internal error."""
    from kaffinity.k8s.model import build_inventory
    from kaffinity.report.placements import render_json, render_text
    from kaffinity.simulate.place import TooManyPods, place_all
    from kaffinity.simulate.scheduler import STEPS as FILTERS

    settings = _settings(config, no_config, kube_version, feature_gates, namespace=namespace, limits=limit)
    settings = settings.overridden(cluster=cluster_file, render=build)
    sandbox = _sandbox(allow_network, render_timeout, render_budget, render_memory, offline)
    settings = replace(settings, sandbox=sandbox)
    enabled: tuple[str, ...] = FILTERS
    if filters is not None:
        names = _names([filters]) or ()
        unknown = [name for name in names if name not in FILTERS]
        if unknown:
            _say(
                f"kaffinity: error: unknown filter plugin {', '.join(unknown)} (known: {', '.join(FILTERS)})",
            )
            raise typer.Exit(2)
        enabled = tuple(name for name in FILTERS if name in names)
    if settings.cluster is None:
        _say("kaffinity: error: place needs --cluster FILE (or cluster: in the config)")
        raise typer.Exit(2)
    files = _load(paths, settings, stdin_filename)
    cluster = _load_cluster(settings)
    assert cluster is not None
    files, layout = _layout(files, paths, settings)
    broken = _input_problems(files, settings, layout, cluster)
    units = [_choose_unit(layout, unit)] if unit is not None or not layout.several else list(layout.units)
    runs = []
    for chosen in units:  # each unit on the cluster as declared: only one of them is deployed
        inventory = build_inventory(chosen.documents, settings.namespace, settings.workload_kinds)
        try:
            placement = place_all(
                inventory.workloads,
                cluster,
                version=settings.kube_version,
                gates=settings.feature_gates,
                namespaces=inventory.namespaces,
                filters=enabled,
                record=output_format is PlaceFormat.json,
                classes=inventory.priority_classes,
                max_pods=settings.limits.pods,
                pdbs=inventory.pdbs,
                max_nodes=settings.limits.nodes,
            )
        except TooManyPods as error:
            where = f"unit {chosen.name}: " if len(units) > 1 else ""
            _say(f"kaffinity: error: {where}{error}; no pod was placed")
            raise typer.Exit(2) from None
        runs.append((chosen.name, placement))
    shown = runs if len(runs) > 1 else []
    run = runs[0][1]
    if output_format is PlaceFormat.json:
        text = render_json(run, shown)
    else:
        # A unit read as written is not what gets deployed (an overlay without its patches, a
        # release without its chart): its header says so, beside the run's note.
        why = {unit.name: unit.not_rendered for unit in units if unit.not_rendered}
        text = render_text(
            run,
            [
                (f"{name} (read as written: {why[name]})" if name in why else name, each)
                for name, each in shown
            ],
        )
    _emit(text, output)
    raise typer.Exit(2 if broken else 1 if any(each.pending for _, each in runs) else 0)


@app.command()
def fix(
    paths: _Paths = None,
    diff: Annotated[bool, typer.Option("--diff", help="Show the changes as a diff; write nothing.")] = False,
    select: Annotated[
        Optional[list[str]], typer.Option("--select", help="Rules to fix (comma-separated; default: all).")
    ] = None,
    kube_version: _KubeVersion = None,
    feature_gates: _FeatureGates = None,
    config: _Config = None,
    no_config: _NoConfig = False,
    namespace: _Namespace = None,
    stdin_filename: _StdinFilename = None,
) -> None:
    """Apply safe fixes in place, changing no other byte of the files (stdin: the fixed stream on
    stdout). Exit code 0; with --diff, 1 when there is something to fix; 2 on bad input; 3 on an
    internal error."""
    from kaffinity.engine import lint as run_lint
    from kaffinity.expand.fixes import allowed_roots, fix_files
    from kaffinity.load.parse import STDIN_NAME

    settings = _settings(config, no_config, kube_version, feature_gates, select=select, namespace=namespace)
    settings = replace(settings, plan_fixes=True)
    # stdin in, stdin out, as in place: every byte kept that a fix does not change (a byte order
    # mark too), and a stream that cannot be fixed comes out as it went in. The bytes are read
    # here (the loader then reads the same bytes) so that they can be written back exactly.
    stdin_bytes, stdin_rest = _buffer_stdin(paths, settings)
    inputs = _load(paths, settings, stdin_filename)
    # The units are built as lint builds them (rendering as configured), so that a finding on a
    # rendered object is the one lint reports; its fix edits the file of the input that wrote
    # the term (an overlay's patch: kaffinity.expand.fixes.plan_revision_fix), never the output.
    files, layout = _layout(list(inputs), paths, settings)
    broken = _input_problems(files, settings, layout)
    result = run_lint(files, settings, layout=layout)
    stdin_name = stdin_filename or STDIN_NAME
    fixed, problems = fix_files(inputs, result.findings)
    # The repositories too, as rendering reads them (a patch of a layer below the overlay named).
    from kaffinity.repo.sandbox import roots_for

    given = [path for path in paths or ["."] if path != "-"]
    roots = tuple(dict.fromkeys([*allowed_roots(paths or ["."]), *roots_for(given)]))
    for problem in problems:
        _say(problem)
    for item in fixed:
        if diff:
            _print_diff(item)
            continue
        if item.file == stdin_name and stdin_bytes is not None:
            written = _write_stdout(item, stdin_bytes)
            stdin_bytes = None if written else stdin_bytes
        else:
            written = _write_back(item, roots)
        if not written:
            broken = True
            continue
        rules = sorted({finding.rule for finding in item.findings})
        _say(f"{quote_name(item.file)}: fixed {len(item.findings)} ({', '.join(rules)})")
    if not diff and stdin_bytes is not None and stdin_rest is not None:
        _pass_through(stdin_bytes, stdin_rest)
    if not fixed:
        _say("kaffinity: nothing to fix")
    for message in result.internal_errors:  # a rule that crashed: its fixes are missing
        _say(f"kaffinity: {message}")
    if result.internal_errors:
        raise typer.Exit(result.exit_code)
    raise typer.Exit(2 if broken or problems else (1 if diff and fixed else 0))


_BOM = b"\xef\xbb\xbf"


def _buffer_stdin(paths: Optional[list[str]], settings: Settings) -> tuple[bytes | None, BinaryIO | None]:
    """With ``-`` among the paths, the bytes of stdin up to the size limit (the loader then reads
    the same bytes from a new ``sys.stdin``), and the stream's rest."""
    import io

    from kaffinity.load.parse import STDIN
    from kaffinity.load.read import _read_up_to

    stdin_rest = sys.stdin.buffer if sys.stdin is not None else None
    if not (paths and STDIN in paths and stdin_rest is not None):
        return None, stdin_rest
    stdin_bytes = _read_up_to(stdin_rest, settings.limits.file_size + 1)
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin_bytes))
    return stdin_bytes, stdin_rest


def _pass_through(stdin_bytes: bytes, stdin_rest: BinaryIO) -> None:
    """Nothing fixed (or nothing could be): the stream as it came, every byte of it."""
    import shutil

    sys.stdout.flush()
    sys.stdout.buffer.write(stdin_bytes)
    shutil.copyfileobj(stdin_rest, sys.stdout.buffer)  # past the size limit: not read yet


def _print_diff(item: FileFix) -> None:
    """A fixed file as a unified diff on stdout."""
    import difflib

    sys.stdout.writelines(
        line if line.endswith("\n") else line + "\n"
        for line in difflib.unified_diff(
            patch_lines(item.text),
            patch_lines(item.fixed),
            f"{quote_name(item.file)} (as written)",
            f"{quote_name(item.file)} (fixed)",
        )
    )


def _write_stdout(item: FileFix, stdin_bytes: bytes) -> bool:
    """The fixed stdin stream on stdout, with the byte order mark it came with; False (and an
    error) for a UTF-16/32 stream."""
    if _wide(stdin_bytes):
        _say(f"kaffinity: error: {quote_name(item.file)}: fix writes UTF-8 files only; this one is UTF-16/32")
        return False
    bom = _BOM if stdin_bytes.startswith(_BOM) else b""
    sys.stdout.flush()
    sys.stdout.buffer.write(bom + item.fixed.encode("utf-8"))
    return True


def _wide(start: bytes) -> bool:
    """Whether bytes start with the byte order mark of UTF-16 or UTF-32 (the loader reads
    them; fix writes UTF-8 only)."""
    return start.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff"))


def _write_back(item: FileFix, roots: tuple[str, ...]) -> bool:
    """Write a fixed file back (:func:`kaffinity.expand.fixes.write_fixed`: atomically, inside
    ``roots`` only, and only if unchanged since it was read); False and a one-line error if not."""
    from kaffinity.expand.fixes import WriteRefused, write_fixed

    try:
        write_fixed(item.file, item.text, item.fixed, roots)
    except WriteRefused as error:
        _say(f"kaffinity: error: {quote_name(item.file)}: {error}")
        return False
    return True


def _settings(
    config: Optional[str],
    no_config: bool,
    kube_version: Optional[str],
    feature_gates: Optional[str],
    proposals: Optional[bool] = None,
    select: Optional[list[str]] = None,
    ignore: Optional[list[str]] = None,
    namespace: Optional[str] = None,
    exclude: Optional[list[str]] = None,
    policies: Optional[list[str]] = None,
    memo: Optional[PolicyMemo] = None,
    limits: Optional[list[str]] = None,
) -> Settings:
    """Settings from the config file and the flags (flags win); exit 2 on a bad value. The names
    of the policies (``--policy``, else ``policies:``) count as rule names. Limits: the
    config's, then ``KAFFINITY_LIMITS``, then ``--limit``."""
    from kaffinity.config import (
        ConfigError,
        check_rule_names,
        check_target,
        find_config,
        load_settings,
        parse_feature_gates,
        with_limits,
    )
    from kaffinity.load.files import anchor_patterns
    from kaffinity.load.parse import make_room
    from kaffinity.rules import CATEGORIES, RULES

    make_room()  # the config and the policies are read with the default limits
    rule_names = [rule.name for rule in RULES]
    try:
        notes: list[str] = []
        config_path = None if no_config else (config or find_config(".", notes))
        for note in notes:
            _say(f"kaffinity: note: {note}")
        if config is not None and not no_config and not os.path.isfile(config):
            # A pipe (`--config <(...)`) or a device is read as a file (bounded by the size limit).
            what = (
                "is a folder"
                if os.path.isdir(config)
                else "not found"
                if not os.path.exists(config)
                else None
            )
            if what is not None:
                raise ConfigError([f"kaffinity: error: {quote_name(config)}: config file {what}"])
        categories = sorted({*CATEGORIES, "policy"})
        read: PolicyMemo = memo if memo is not None else {}

        def policy_names(paths: tuple[str, ...]) -> list[str]:
            return _policy_names(tuple(policies) if policies else paths, read)

        settings: Settings = with_limits(
            load_settings(config_path, rule_names, categories, policy_names), limits
        )
        if policies:
            settings = replace(settings, policies=tuple(policies))
        known = [*rule_names, *_policy_names(settings.policies, read)]
        selected, ignored = _names(select), _names(ignore)
        for option, names in (("--select", selected), ("--ignore", ignored)):
            if names:
                check_rule_names(names, option, known, categories)
        settings = settings.overridden(
            kube_version=kube_version,
            feature_gates=None
            if feature_gates is None
            else {**settings.feature_gates, **parse_feature_gates(feature_gates)},
            proposals=proposals,
            select=selected or None,
            ignore=ignored,
            namespace=namespace,
            exclude=(*settings.exclude, *anchor_patterns(exclude, ".")) if exclude else None,
        )
        check_target(settings.kube_version, settings.feature_gates)
        _note_unmodelled_gates(settings.feature_gates)
        make_room(settings.limits.depth)  # no stage recurses out of stack on input it accepts
    except ConfigError as error:
        for message in error.messages:
            _say(error_line(message))
        raise typer.Exit(2) from None
    return settings


def _note_unmodelled_gates(gates: Mapping[str, bool]) -> None:
    """A gate kaffinity does not model (nor a typo of one: refused before) is ignored: say so."""
    from kaffinity.k8s.gates import GATES

    for name in gates:
        if name not in GATES:
            _say(
                f"kaffinity: note: feature gate {name} is not one kaffinity models (the gates of the "
                "scheduling fields): ignored"
            )


def error_line(message: str) -> str:
    """An error in kaffinity's one style: ``file:line:col: error: ...`` when it has a place,
    else ``kaffinity: error: ...``."""
    if ": error: " in message or message.startswith("kaffinity:"):
        return message
    return f"kaffinity: error: {message}"


def _sandbox(
    network: Optional[bool],
    timeout: Optional[float],
    budget: Optional[float],
    memory: Optional[str],
    offline: Optional[bool] = None,
) -> Sandbox:
    """What rendering may do: these flags, else the environment (kaffinity.repo.sandbox); a bad
    value is a usage error (exit 2). ``--offline`` (or ``KAFFINITY_OFFLINE``) beats any allowance."""
    from kaffinity.repo.sandbox import SandboxError, sandbox_from

    try:
        return sandbox_from(network, timeout, budget, memory, offline=offline)
    except SandboxError as error:
        _say(f"kaffinity: error: {error}")
        raise typer.Exit(2) from None


def _size_option(value: str) -> int:
    from kaffinity.config import parse_size

    try:
        return parse_size(value)
    except ValueError as error:
        _say(f"--max-file-size: {error}")
        raise typer.Exit(2) from None


def _load(
    paths: Optional[list[str]],
    settings: Settings,
    stdin_filename: Optional[str],
    seen: Optional[set[tuple[int, int]]] = None,
    *,
    stream: Optional[_Stream] = None,
) -> list[SourceFile]:
    from kaffinity.load.files import ExcludeFn, load
    from kaffinity.load.parse import STDIN, STDIN_NAME

    targets = paths or ["."]
    fixtures = _policy_folders(settings, targets)
    excluded = ExcludeFn(settings.exclude, folders=fixtures) if settings.exclude or fixtures else None
    if stream is not None:
        return stream.load(targets, excluded, seen if seen is not None else set(), local=True)
    from kaffinity.load.parallel import default_jobs

    jobs = settings.jobs or default_jobs()
    files: list[SourceFile] = load(
        targets, excluded, seen, jobs=jobs, limits=settings.limits, gitignore=settings.gitignore
    )
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


def _input_problems(
    files: list[SourceFile], settings: Settings, layout: Layout, cluster: Cluster | None = None
) -> bool:
    """What the loader found (unparsable files, unrendered Helm templates), on stderr as lint
    reports it: suppressions and severities apply, and ``parse-error`` is always shown. True
    when an input could not be read (exit code 2)."""
    from kaffinity.engine import lint as run_lint
    from kaffinity.rules import RULES

    loader_rules = tuple(rule for rule in RULES if rule.name in ("parse-error", "helm-template"))
    result = run_lint(files, settings, loader_rules, layout=layout)
    for finding in result.findings:
        name = quote_name(finding.file)
        where = f"{name}:{finding.line}:{finding.column}" if finding.line else name
        _say(f"{where}: {finding.severity.value} [{escape(finding.rule)}] {finding.message}")
    broken = any(problem.rule == "parse-error" for file in files for problem in file.problems)
    cluster_broken = _load_problems(list(cluster.files)) if cluster is not None else False
    return broken or cluster_broken


def _choose_unit(layout: Layout, name: Optional[str]) -> Unit:
    """The unit named by ``--unit`` (exit 2 for an unknown name), else the first."""
    if name is None:
        if layout.several:
            names = ", ".join(unit.name for unit in layout.units[:5])
            more = f" and {len(layout.units) - 5} more" if len(layout.units) > 5 else ""
            _say(
                f"kaffinity: note: {len(layout.units)} deployment units ({names}{more}); "
                f"showing {layout.units[0].name} (choose one with --unit)",
            )
        return layout.units[0]
    for unit in layout.units:
        if unit.name == name:
            return unit
    known = ", ".join(unit.name or "(the whole input)" for unit in layout.units)
    _say(f"kaffinity: error: --unit {name}: no such deployment unit (units: {known})")
    raise typer.Exit(2)


def _focused_unit(
    files: list[SourceFile], settings: Settings, cluster: Cluster | None, layout: Layout, focus: list[str]
) -> Unit | None:
    """``graph --focus`` without ``--unit`` in several deployment units: the first unit whose
    graph holds every focused object, with a note naming it (and the other units that hold them
    too: ``--unit`` chooses one of those); None (the first unit, whose error then says what is
    missing) when none does, or there is one unit. ``place`` shows every unit; a graph is one
    picture, of one unit."""
    from kaffinity.context import Context
    from kaffinity.graph.view import FocusError, resolve

    if not layout.several:
        return None
    holding = []
    for each in layout.units:
        graph = Context(files, settings, cluster, each.documents).graph.graph
        try:
            for text in focus:
                resolve(graph, text)
        except FocusError:
            continue
        holding.append(each)
    if not holding:
        return None
    what = ", ".join(focus)
    if len(holding) == 1:
        _say(f"kaffinity: note: --focus {what}: drawing unit {holding[0].name}, the one that holds it")
    else:
        names = ", ".join(each.name for each in holding[:5])
        more = f" and {len(holding) - 5} more" if len(holding) > 5 else ""
        _say(
            f"kaffinity: note: --focus {what}: in {len(holding)} deployment units ({names}{more}); "
            f"drawing {holding[0].name} (choose one with --unit)"
        )
    return holding[0]


def _only(layout: Layout, unit: Unit) -> Layout:
    from kaffinity.repo.units import Layout as _Layout

    return _Layout((unit,), layout.documents, layout.fragments, places=layout.places)


def _layout(
    files: list[SourceFile],
    paths: Optional[list[str]],
    settings: Settings,
    *,
    kustomized: bool = True,
    changed: Optional[Collection[str]] = None,
    touched: Optional[dict[str, tuple[str, ...]]] = None,
    cached: bool = False,
    cache_dir: Optional[str] = None,
) -> tuple[list[SourceFile], Layout]:
    """The deployment units of what was read (kaffinity.repo.units), built with the tools when
    ``--render`` asks; notes about it on stderr. The files come back with those the rendered
    objects point at, and without the helm-template problems of the charts rendered.
    ``changed`` (``--changed``: the files reported on): only the overlays and charts that hold
    one of them are built; the others' findings could land on no file reported. ``touched``
    gets those built, by name, with the changed files each holds. ``cached`` (``lint``):
    rendered units come from the cache when their inputs are unchanged
    (kaffinity.cache.rendered; ``--no-cache``, ``cache: false``), ``cache_dir`` its folder."""
    from kaffinity.load.charts import with_chart_notes
    from kaffinity.repo.units import read_layout, render_units

    files = with_chart_notes(files, settings.limits)  # one helm-template per chart, not rendered yet
    roots = [path for path in (paths or ["."]) if path != "-"]
    layout = read_layout(
        files,
        roots,
        default_namespace=settings.namespace,
        configured=settings.units,
        limits=settings.limits,
        kustomized=kustomized,
    )
    if settings.render and _renders(layout):
        from kaffinity.repo.sandbox import roots_for

        sandbox = settings.sandbox
        if not sandbox.roots:  # paths from the checkout stay in the repositories linted
            sandbox = replace(sandbox, roots=roots_for(roots or ["."]))
        held = _untouched(layout, changed, settings, touched) if changed is not None else {}
        if held:
            layout = replace(
                layout,
                units=tuple(
                    replace(unit, source=_HELD) if unit.name in held else unit for unit in layout.units
                ),
            )
        store = None
        if cached and settings.cache:
            from kaffinity.cache.rendered import open_render_cache

            store, note = open_render_cache(
                settings.cache_dir,
                settings.base_dir,
                cache_dir,
                settings.limits,
                sandbox,
            )
            if note is not None:
                _say(f"kaffinity: note: {note}")
        built = render_units(
            layout,
            limits=settings.limits,
            helm_values=settings.helm_values,
            namespace=None,
            sandbox=sandbox,
            kube_version=settings.kube_version,
            cache=store,
        )
        # --changed builds the units of the changed files (and reads context): never prune then.
        if store is not None and (error := store.close(complete=changed is None)) is not None:
            _say(f"kaffinity: note: {error} (--no-cache to skip it)")
        layout = built.layout
        if held:  # read as written, as the files they are: not counted as left unrendered
            layout = replace(
                layout,
                units=tuple(
                    replace(unit, source=held[unit.name], not_rendered=None) if unit.source == _HELD else unit
                    for unit in layout.units
                ),
            )
        if built.charts:
            from kaffinity.load.charts import rendered_with
            from kaffinity.repo.units.layout import chart_of

            rendered = {os.path.abspath(chart) for chart in built.charts}
            cache: dict[str, Optional[str]] = {}
            files = [
                replace(file, problems=tuple(p for p in file.problems if p.rule != "helm-template"))
                if (chart := chart_of(file.name, cache)) is not None and rendered_with(chart, rendered)
                else file
                for file in files
            ]
        files = [*files, *built.files]
    else:
        from kaffinity.repo.units.render import unrendered_note

        # Overlays and charts read as written are not what gets deployed: one note says so.
        unrendered = unrendered_note(layout.units)
        if unrendered is not None:
            layout = replace(layout, notes=(*layout.notes, unrendered))
    for note in layout.notes:
        _say(f"kaffinity: note: {note}")
    return files, layout


#: The source a unit that ``--changed`` does not build carries through render_units (which
#: builds only the sources it has an engine for), restored after.
_HELD = "held (--changed)"


def _untouched(
    layout: Layout,
    changed: Collection[str],
    settings: Settings,
    touched: Optional[dict[str, tuple[str, ...]]] = None,
) -> dict[str, str]:
    """The overlays and charts that hold none of the ``changed`` files, by name, with their
    source (kaffinity.repo.changed.touches says what an overlay and a chart hold); ``touched``
    gets the others, with the changed files each holds."""
    from kaffinity.repo.changed import touches

    found = touches(layout, changed, settings.helm_values)
    if touched is not None:
        touched.update(found)
    return {
        unit.name: unit.source
        for unit in layout.units
        if unit.source in ("kustomize", "helm") and unit.name not in found
    }


def _renders(layout: Layout) -> bool:
    """Whether the layout has a unit to build: an overlay, a chart or a GitOps release (nothing
    else renders: a layout without any is left exactly as read)."""
    from kaffinity.repo.rendering import has_release

    return any(unit.source in ("kustomize", "helm") for unit in layout.units) or has_release(layout.documents)


class _Stream:
    """``lint``'s loading through the single-object stage (:mod:`kaffinity.stream`) and the
    cache (:mod:`kaffinity.cache`): what it found of each file, by name."""

    def __init__(self, settings: Settings, cache: Optional[Cache]) -> None:
        self.settings = settings
        self.cache = cache
        self.checked: dict[str, Checked] = {}

    def load(
        self,
        targets: Sequence[str],
        excluded: Optional[ExcludeFn],
        seen: set[tuple[int, int]],
        *,
        local: bool,
    ) -> list[SourceFile]:
        from kaffinity.load.parallel import default_jobs
        from kaffinity.stream import load_checked

        settings = self.settings
        found = load_checked(
            targets,
            settings,
            excluded,
            seen,
            jobs=settings.jobs or default_jobs(),
            local=local,
            cache=self.cache,
        )
        self.checked.update((item.file.name, item) for item in found)
        return [item.file for item in found]

    def typed(self) -> dict[int, Object | None]:
        """The typed objects the single-object stage built here, by id() of compact document
        (the engine builds the others)."""
        found: dict[int, Object | None] = {}
        for item in self.checked.values():
            if item.typed is not None:
                found.update(zip(map(id, item.file.documents), item.typed, strict=True))
        return found

    def close(self) -> None:
        """Prune the cache; say once if it could not be written."""
        if self.cache is None:
            return
        self.cache.prune()
        if self.cache.error is not None:
            _say(f"kaffinity: note: {self.cache.error} (--no-cache to skip it)")


def _stream(
    paths: Optional[list[str]], settings: Settings, cache_dir: Optional[str], roots: Sequence[str] = ()
) -> Optional[_Stream]:
    """How ``lint`` loads: file by file through the single-object stage and the cache, unless the
    input is stdin, a policy may read any field, or kustomizations build objects from several
    files (found on disk under ``roots`` before anything is parsed): then the files are read
    whole."""
    from kaffinity.load.parse import STDIN
    from kaffinity.repo.rendering import renderable_on_disk

    if STDIN in (paths or ()) or settings.policies:
        return None
    # What renders is read whole; a repository with nothing to render streams as it always did
    # (a GitOps release is found among the objects read: _linted reads them again whole).
    if settings.units != "one" and renderable_on_disk(
        (root for root in roots if root != STDIN), charts=_helm_available if settings.render else False
    ):
        return None
    cache = None
    if settings.cache:
        from kaffinity.cache import open_cache
        from kaffinity.stream import fingerprint

        cache, note = open_cache(
            settings.cache_dir, settings.base_dir, cache_dir, fingerprint(settings), settings.limits
        )
        if note is not None:
            _say(f"kaffinity: note: {note}")
    return _Stream(settings, cache)


def _helm_available() -> bool:
    from kaffinity.repo.engines import helm_engine

    return helm_engine() is not None


def _map_rendered_stdin(
    files: list[SourceFile], settings: Settings, stdin_filename: Optional[str]
) -> list[SourceFile]:
    """``helm template ... | kaffinity lint -``: the documents of the stream are pointed at the
    templates its ``# Source:`` comments name, where those are on disk (kaffinity.repo.helm.sources):
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


def _load_in_context(
    paths: Optional[list[str]],
    settings: Settings,
    stdin_filename: Optional[str],
    changed: bool,
    context: Optional[list[str]],
    stream: Optional[_Stream] = None,
    listing: tuple[str, ...] = (),
) -> tuple[list[SourceFile], Optional[set[str]], bool, list[str]]:
    """The files to lint, the names of those to report on (None: all), whether the
    cross-workload rules have what they need, and the paths read (where kustomizations are
    looked for).

    With ``--changed``, ``--context`` or ``context:`` in the config, PATHS are part of a larger
    set of manifests (the context) that the rules read but that is not reported on. The context
    is ``--context``, else ``context:``, else (with ``--changed``) the git repository's manifests.
    Without any, ``--changed`` has no context: it says so once and the rules that need every
    manifest (``Rule.needs_all_manifests``) are skipped rather than guess. ``stream``: the files
    go through the single-object stage as they are read (:mod:`kaffinity.stream`); the context's
    are only compacted. ``listing``: the repository's manifests, when the caller listed them.
    """
    context_paths = tuple(context) if context else tuple(_shown_path(path) for path in settings.context)
    if not changed and not context_paths:
        return _load(paths, settings, stdin_filename, stream=stream), None, True, list(paths or ["."])
    missing = [path for path in context_paths if not os.path.exists(path)]
    if missing:
        _say(f"kaffinity: error: {quote_name(missing[0])}: context path not found")
        raise typer.Exit(2)
    seen: set[tuple[int, int]] = set()
    files = _load(paths, settings, stdin_filename, seen, stream=stream)
    from kaffinity.load.charts import charts_of_templates

    # A template changed: its chart's one helm-template finding (at Chart.yaml) is reported.
    reported = {file.name for file in files} | charts_of_templates(files)
    context_paths = context_paths or listing or _repository_context(paths)
    if not context_paths:
        _say_no_context()
        return files, reported, False, list(paths or ["."])
    more = _load_context(context_paths, settings, seen, stream)
    return [*files, *more], reported, True, [*(paths or ()), *context_paths]


def _repository_context(paths: Optional[list[str]]) -> tuple[str, ...]:
    """The manifests of the git repository of the first file named (pre-commit runs at its root
    anyway); none outside a repository."""
    from kaffinity.load.repository import repository_manifests

    start = next((path for path in paths or () if path != "-" and os.path.exists(path)), ".")
    folder = start if os.path.isdir(start) else os.path.dirname(start) or "."
    return tuple(repository_manifests(folder) or ())


def _say_no_context() -> None:
    """``--changed`` without a context: which rules are skipped for it."""
    from kaffinity.rules import RULES

    skipped = [rule for rule in RULES if rule.needs_all_manifests]
    categories = ", ".join(sorted({rule.category for rule in skipped}))
    _say(
        "kaffinity: no context: not in a git repository and no context: in .kaffinity.yaml, "
        f"so the {len(skipped)} rules that need every manifest ({categories}) are skipped",
    )


def _load_context(
    context_paths: tuple[str, ...],
    settings: Settings,
    seen: set[tuple[int, int]],
    stream: Optional[_Stream] = None,
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
        _say(
            f"kaffinity: note: {len(broken)} context file(s) could not be read and are left out "
            f"(first: {where}: {problem.message})",
        )
    return more


def _shown_path(path: str) -> str:
    """A configured (absolute) path as the user would write it: relative below the working folder."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _report_targets(values: list[str] | tuple[str, ...]) -> list[tuple[str, str]]:
    """``--report FORMAT=FILE`` values; a bad one is a usage error (exit 2)."""
    from kaffinity.report import FORMATS

    targets = []
    for value in values:
        fmt, sep, target = value.partition("=")
        if not sep or not target or fmt not in FORMATS:
            _say(
                f"kaffinity: error: --report '{value}' is not FORMAT=FILE with FORMAT one of "
                f"{', '.join(FORMATS)}",
            )
            raise typer.Exit(2)
        targets.append((fmt, target))
    return targets


def _say(message: str) -> None:
    """One message on stderr, on one line: the control characters (line breaks included),
    bidirectional controls and undecodable bytes that come from the input (a file name, a
    ``--stdin-filename``, a name or a policy's message quoted in a notice) escaped
    (``kaffinity.load.display``), so that no message shows as two lines, or a forged one.
    While ``--new-from-rev`` lints REV's tree, its notes are not said (they would name the
    temporary folder and repeat the work tree's)."""
    if _QUIET_NOTES and message.startswith("kaffinity: note:"):
        return
    typer.echo(escape(message), err=True)


#: Set while the tree of ``--new-from-rev`` is linted (:func:`_linted_at`).
_QUIET_NOTES: list[bool] = []


def _emit(text: str, output: Optional[str]) -> None:
    """Write ``text`` to ``output`` (a file), or to stdout; exit 2 when the file cannot be written.
    Undecodable bytes still in ``text`` (lone surrogates) are escaped: the output is UTF-8."""
    text = utf8(text)
    if not output:
        sys.stdout.write(text)
        return
    try:
        # The folders it names are made, as `mkdir -p` would (the README's
        # `schema -o .schemas/kubernetes.json` in a fresh repository): -o is the command line's.
        folder = os.path.dirname(output)
        if folder:
            os.makedirs(folder, exist_ok=True)
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as error:
        _say(f"kaffinity: error: {quote_name(output)}: cannot write: {error.strerror or error}")
        raise typer.Exit(2) from None


def _load_cluster(settings: Settings) -> Cluster | None:
    """The declared cluster, if any; a path that does not exist is a usage error (exit 2)."""
    if settings.cluster is None:
        return None
    from kaffinity.load.files import load
    from kaffinity.simulate.cluster import cluster_from

    if not os.path.exists(settings.cluster):
        _say(f"kaffinity: error: {quote_name(str(settings.cluster))}: cluster file not found")
        raise typer.Exit(2)
    # A cluster file is read whatever it holds: what it lacks is reported by cluster_from.
    files = load([settings.cluster], limits=settings.limits, gitignore=False, manifests_only=False)
    return cluster_from(files, settings.namespace, settings.limits.nodes)


def _load_problems(files: list[SourceFile]) -> bool:
    """Report the loader's problems (one line each, on stderr); True if a file could not be
    read or parsed (``parse-error``, exit 2). An unrendered Helm template is a warning, as in
    lint."""
    found = False
    for file in files:
        for problem in file.problems:
            name = quote_name(file.name)
            where = f"{name}:{problem.span.line}:{problem.span.column}" if problem.span else name
            load_error = problem.rule == "parse-error"
            severity = "error" if load_error else "warning"
            _say(f"{where}: {severity} [{problem.rule}] {problem.message}")
            found = found or load_error
    return found


def _use_color(choice: Color, output: Optional[str]) -> bool:
    if choice is not Color.auto:
        return choice is Color.always
    if output or os.environ.get("NO_COLOR"):
        return False
    return bool(os.environ.get("FORCE_COLOR")) or sys.stdout.isatty()


baseline_app = typer.Typer(
    help="Baseline files: the findings a repository accepts for now, left out by lint --baseline "
    "(docs/adopting.md).",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(baseline_app, name="baseline")

#: lint's options that shape the report, not what is linted: ``baseline write`` has none of them.
_REPORT_ONLY = frozenset(
    {
        "output_format",
        "output",
        "reports",
        "color",
        "min_severity",
        "fail_on",
        "new_from_rev",
        "baseline",
        "write_baseline",
    }
)
_BaselineOutput = Annotated[
    Optional[str],
    typer.Option(
        "--output",
        "-o",
        metavar="FILE",
        help="The baseline file to write (default: baseline: in the config, else .kaffinity-baseline.json).",
    ),
]


def baseline_write(**options: Any) -> None:
    """Write a baseline: the fingerprints of every finding of PATHS, linted as lint would with
    the same options, for lint --baseline to leave out. Exit code 0: written; 2: an input could
    not be read (never baselined) or bad usage; 3: internal error."""
    output = options.pop("output", None)
    lint(**options, write_baseline=output or "")


def _baseline_signature() -> None:
    """``baseline write`` takes lint's options for what is linted (one list: they cannot drift)."""
    import inspect

    kept = [
        parameter
        for parameter in inspect.signature(lint, eval_str=True).parameters.values()
        if parameter.name not in _REPORT_ONLY
    ]
    output = inspect.Parameter(
        "output", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=_BaselineOutput
    )
    parameters = [parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY) for parameter in kept] + [output]
    baseline_write.__signature__ = inspect.Signature(parameters, return_annotation=None)  # type: ignore[attr-defined]
    baseline_write.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}


_baseline_signature()
baseline_app.command("write")(baseline_write)


policy_app = typer.Typer(
    help="Work with policies (docs/policies.md).", no_args_is_help=True, add_completion=False
)
app.add_typer(policy_app, name="policy")


@policy_app.command("test")
def policy_test(
    paths: Annotated[
        list[str],
        typer.Argument(help="Folders or files of policies and fixtures (# expect: POLICY markers)."),
    ],
    policy: Annotated[
        Optional[list[str]],
        typer.Option("--policy", help="More policy files or folders (repeatable)."),
    ] = None,
    kube_version: _KubeVersion = None,
    config: _Config = None,
    no_config: _NoConfig = False,
) -> None:
    """Check policies against fixtures: each fixture's policy findings must fall exactly on its
    '# expect: POLICY' lines. Exit code 0: every fixture passes; 1: one fails; 2: bad input."""
    from kaffinity.engine import lint as run_lint
    from kaffinity.policy.testing import run_tests

    for path in paths:
        if not os.path.exists(path):
            _say(f"kaffinity: error: {quote_name(path)}: not found")
            raise typer.Exit(2)
    settings = replace(_settings(config, no_config, kube_version, None), select=("policy",), ignore=())
    run = run_tests(paths, settings, run_lint, tuple(policy or ()))
    failed = 0
    for fixture in run.fixtures:
        if fixture.passed:
            typer.echo(f"ok    {escape(fixture.file)} ({len(fixture.reported)} finding(s))")
            continue
        failed += 1
        typer.echo(f"FAIL  {escape(fixture.file)}")
        for rule, line in fixture.missing:
            typer.echo(f"      {escape(fixture.file)}:{line}: expected [{escape(rule)}], not reported")
        for rule, line, column, message in fixture.unexpected:
            said = f"unexpected [{escape(rule)}] {escape(message)}"
            typer.echo(f"      {escape(fixture.file)}:{line}:{column}: {said}")
        for problem in fixture.load_errors:
            typer.echo(f"      {escape(problem)}")
    for message in run.policy_errors:
        _say(message)
    typer.echo(f"{len(run.fixtures)} fixture(s), {run.policies} policy(ies): {failed} failed.")
    if not run.policies:
        _say("kaffinity: error: no policy found")
    if run.policy_errors or not run.policies or any(fixture.load_errors for fixture in run.fixtures):
        raise typer.Exit(2)  # bad input: a policy, or a fixture that cannot be read
    raise typer.Exit(1 if failed else 0)


@policy_app.command("check")
def policy_check(
    paths: Annotated[
        list[str],
        typer.Argument(help="Policy files or folders: kaffinity Policies and ValidatingAdmissionPolicies."),
    ],
    kube_version: _KubeVersion = None,
    config: _Config = None,
    no_config: _NoConfig = False,
) -> None:
    """Lint the policies themselves: expressions that do not compile, fields the matched kinds
    lack or read unguarded, params no file holds. Exit code 0: clean; 1: problems; 2: bad input."""
    from kaffinity.findings import Severity
    from kaffinity.policy.review import review

    for path in paths:
        if not os.path.exists(path):
            _say(f"kaffinity: error: {quote_name(path)}: not found")
            raise typer.Exit(2)
    settings = _settings(config, no_config, kube_version, None)
    problems = review(paths, settings)
    for problem in problems:
        typer.echo(escape(str(problem)))
    counts = {severity: sum(1 for p in problems if p.severity is severity) for severity in Severity}
    said = ", ".join(
        f"{count} {severity.value}{'s' if count != 1 else ''}" for severity, count in counts.items()
    )
    typer.echo(f"{said} in the policies of {', '.join(quote_name(path) for path in paths)}.")
    raise typer.Exit(1 if counts[Severity.ERROR] or counts[Severity.WARNING] else 0)


@app.command()
def rules(
    name: Annotated[
        Optional[str], typer.Argument(help="A rule to explain; all rules are listed without it.")
    ] = None,
    output_format: Annotated[
        RulesFormat, typer.Option("--format", "-f", help="Output format.")
    ] = RulesFormat.text,
) -> None:
    """List the rules, or explain one (what it finds, why it matters, example, fix)."""
    from kaffinity.report.docs import rule_catalogue, rule_json, rule_table, rule_text
    from kaffinity.rules import BY_NAME, RULES

    if name is not None:
        rule = BY_NAME.get(name)
        if rule is None:
            import difflib

            close = difflib.get_close_matches(name, list(BY_NAME), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            _say(f"kaffinity: error: unknown rule '{name}'{hint}")
            raise typer.Exit(2)
        selected: tuple[Rule, ...] = (rule,)
    else:
        selected = RULES
    if output_format is RulesFormat.json:
        typer.echo(rule_json(selected))
    elif output_format is RulesFormat.markdown:
        typer.echo(rule_catalogue(selected), nl=False)
    elif sys.stdout.isatty() and not os.environ.get("NO_COLOR"):
        _print_rich(selected, explain=name is not None)
    elif name is not None:
        typer.echo(rule_text(selected[0]))
    else:
        typer.echo(rule_table(selected))


def _print_rich(rules: tuple[Rule, ...], *, explain: bool) -> None:
    """On a terminal: the catalogue as a table, a rule's docs as rendered Markdown."""
    from rich.console import Console
    from rich.markdown import Markdown
    from rich.table import Table

    console = Console()
    if explain:
        rule = rules[0]
        fixable = ", fixable by kaffinity fix" if rule.fixable else ""
        console.print(f"[bold]{rule.name}[/bold]  {rule.category}, {rule.severity.value} by default{fixable}")
        console.print(Markdown(f"{rule.summary}\n\n{rule.docs}"))
        return
    table = Table("rule", "category", "severity", "fix", "summary", box=None, header_style="bold")
    for rule in rules:
        table.add_row(
            rule.name, rule.category, rule.severity.value, "yes" if rule.fixable else "", rule.summary
        )
    console.print(table)


@app.command()
def schema(
    name: Annotated[
        str,
        typer.Argument(
            metavar="NAME",
            help="kubernetes (manifests, for --kube-version), config (.kaffinity.yaml), "
            "cluster (a ClusterTopology file), output (the report of lint --format json), "
            "baseline (a baseline file), policy (a Policy), "
            "facts (the kaffinity variable of a policy expression), admission (a ValidatingAdmissionPolicy).",
        ),
    ] = "kubernetes",
    kube_version: _KubeVersion = None,
    output: _Output = None,
    list_schemas: Annotated[bool, typer.Option("--list", help="List the schemas and exit.")] = False,
) -> None:
    """Print a JSON schema kaffinity ships, byte for byte: for an editor's YAML language server
    (docs/editors.md) or any JSON Schema 2020-12 validator."""
    from kaffinity.config import DEFAULT_KUBE_VERSION, KUBE_VERSIONS, ConfigError, check_kube_version
    from kaffinity.load.resources import schema_text

    described = {
        "config": ("config.schema.json", ".kaffinity.yaml"),
        "cluster": ("cluster.schema.json", "a ClusterTopology file (--cluster)"),
        "output": ("output.schema.json", "the report of lint --format json"),
        "baseline": ("baseline.schema.json", "a baseline file (kaffinity baseline write)"),
        "policy": ("policy.schema.json", "a kaffinity.io/v1alpha1 Policy (--policy)"),
        "facts": ("facts.schema.json", "the kaffinity variable of a policy expression"),
        "admission": (
            "admission.schema.json",
            "ValidatingAdmissionPolicy and binding fields kaffinity reads",
        ),
    }
    if list_schemas:
        rows = [(key, file, what) for key, (file, what) in described.items()]
        for version in KUBE_VERSIONS:
            default = ", the default" if version == DEFAULT_KUBE_VERSION else ""
            what = f"Kubernetes {version} manifests (--kube-version {version}{default})"
            rows.append(("kubernetes", f"kubernetes-{version}.schema.json", what))
        width = max(len(file) for _, file, _ in rows)
        for key, file, what in rows:
            typer.echo(f"{key:<10}  {file:<{width}}  {what}")
        raise typer.Exit(0)
    problem = None
    if name == "kubernetes":
        version = kube_version or DEFAULT_KUBE_VERSION
        try:
            check_kube_version(version)
        except ConfigError as error:
            problem = error_line(error.messages[0])
        file = f"kubernetes-{version}.schema.json"
    elif name not in described:
        problem = f"kaffinity: error: unknown schema '{name}' (one of kubernetes, {', '.join(described)})"
    elif kube_version is not None:
        problem = f"kaffinity: error: --kube-version applies to the kubernetes schema, not to '{name}'"
    else:
        file = described[name][0]
    if problem:
        _say(problem)
        raise typer.Exit(2)
    data = schema_text(file).encode("utf-8")  # bytes: no newline translation on any platform
    if not output:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    try:
        with open(output, "wb") as handle:
            handle.write(data)
    except OSError as error:
        _say(f"kaffinity: error: {quote_name(output)}: cannot write: {error.strerror or error}")
        raise typer.Exit(2) from None


def _click_exceptions() -> Any:
    """click's exceptions module: typer's own copy of click where it ships one, else click."""
    try:
        from typer._click import exceptions  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        from click import exceptions  # type: ignore[no-redef,import-not-found,unused-ignore]
    return exceptions


#: How close an unknown option or command must be to a known one for "did you mean" (click
#: suggests --jobs for --bogus).
_CLOSE = 0.75


def usage_error(error: Any) -> str:
    """A usage error in kaffinity's one style: ``kaffinity: error: ...`` and the line naming the
    help to read; "did you mean" only for a close match."""
    import difflib

    exceptions = _click_exceptions()
    context = getattr(error, "ctx", None)
    command = context.command_path if context is not None else "kaffinity"
    if isinstance(error, exceptions.NoSuchOption):
        known = list(error.possibilities or ())
        if context is not None:
            known = [name for param in context.command.params for name in getattr(param, "opts", ())]
        close = difflib.get_close_matches(error.option_name, known, n=1, cutoff=_CLOSE)
        message = f"no such option: {error.option_name}"
        if close:
            message += f" (did you mean {close[0]}?)"
    else:
        message = str(error.format_message()).replace("Value error, ", "")
        message = message[:1].lower() + message[1:] if message[:2] != message[:2].upper() else message
    message = message.rstrip(".") if message.endswith(".") and message.count(".") == 1 else message
    return f"kaffinity: error: {message}\nTry '{command} --help' for help."


def main() -> None:
    """Entry point. Usage errors are one line in kaffinity's style (and the help to read), exit
    code 2; an unexpected error is one line on stderr and exit code 3 (bad input gets 2), not a
    traceback; ``KAFFINITY_DEBUG=1`` shows the traceback for a bug report."""
    exceptions = _click_exceptions()
    try:
        code = app(prog_name="kaffinity", standalone_mode=False)
    except exceptions.UsageError as error:
        if type(error).__name__ == "NoArgsIsHelpError":  # click >= 8.2: no arguments, the help
            print(error.format_message(), file=sys.stderr)
            sys.exit(2)
        print(usage_error(error), file=sys.stderr)
        sys.exit(2)
    except exceptions.ClickException as error:  # a file click could not open, and the like
        print(escape(f"kaffinity: error: {error.format_message()}"), file=sys.stderr)
        sys.exit(error.exit_code)
    except typer.Abort:
        print("kaffinity: aborted", file=sys.stderr)
        sys.exit(1)
    except Exception as error:  # last line of defence for the user's terminal (re-raised above)
        if os.environ.get("KAFFINITY_DEBUG"):
            raise
        print(  # one line: what the error quotes from the input escaped (kaffinity.load.display)
            escape(
                f"kaffinity: internal error: {type(error).__name__}: {error} "
                "(run with KAFFINITY_DEBUG=1 for details and please report it)"
            ),
            file=sys.stderr,
        )
        sys.exit(3)  # kaffinity.engine.INTERNAL_ERROR, not imported: this line must not fail
    sys.exit(code if isinstance(code, int) else 0)
