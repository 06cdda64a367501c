"""``kaffinity lint`` and ``kaffinity baseline write``: their options parsed into the inputs
(kaffinity.run.inputs), the run called once (kaffinity.run.lint), its outcome printed: the
reports, the notes, the exit code."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, Optional

import typer

from kaffinity.cli.options import (
    AllowNetwork,
    Closed,
    Cluster,
    Color,
    Config,
    FailOn,
    FeatureGates,
    KubeVersion,
    Limit,
    MinSeverity,
    Namespace,
    NoConfig,
    Offline,
    Output,
    OutputFormat,
    Paths,
    Render,
    RenderBudget,
    RenderMemory,
    RenderTimeout,
    StdinFilename,
)
from kaffinity.cli.output import emit, notes_said, say
from kaffinity.load.display import quote_name
from kaffinity.run.inputs import (
    PolicyMemo,
    RenderOptions,
    SettingsOptions,
    Stdin,
    report_targets,
    sandbox,
    settings_from,
    size_option,
)
from kaffinity.run.notes import Notes

if TYPE_CHECKING:
    from kaffinity.config import Settings
    from kaffinity.run.lint import LintOutcome


def lint(
    paths: Paths = None,
    output_format: Annotated[
        OutputFormat,
        typer.Option(
            "--format", "-f", help="Report format; auto = github on GitHub Actions, text otherwise."
        ),
    ] = OutputFormat.auto,
    output: Output = None,
    config: Config = None,
    no_config: NoConfig = False,
    kube_version: KubeVersion = None,
    feature_gates: FeatureGates = None,
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
    namespace: Namespace = None,
    exclude: Annotated[
        Optional[list[str]], typer.Option("--exclude", help="Glob of files or folders to skip (repeatable).")
    ] = None,
    cluster_file: Cluster = None,
    closed: Closed = None,
    simulate: Annotated[
        Optional[bool],
        typer.Option(
            "--simulate/--no-simulate",
            help="With a cluster: place every pod with the offline scheduler (default) or skip it.",
        ),
    ] = None,
    stdin_filename: StdinFilename = None,
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
    limit: Limit = None,
    pre_commit: Annotated[
        bool,
        typer.Option(
            "--pre-commit",
            help="As pre-commit's hooks run it: options end at the first path, and an argument that "
            "names an existing file is a path, even one named like an option (--config=x.yaml).",
        ),
    ] = False,
    build: Render = None,
    allow_network: AllowNetwork = None,
    offline: Offline = None,
    render_timeout: RenderTimeout = None,
    render_budget: RenderBudget = None,
    render_memory: RenderMemory = None,
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
    from kaffinity.load.progress import active, terminal
    from kaffinity.run.lint import LintInputs, lint_run

    notes = Notes()
    with notes_said(notes):  # the run's notes, said as it ends: before its outcome, or its error
        extra_reports = report_targets(reports or ())
        memo: PolicyMemo = {}  # the policies, read once for the settings and the rules
        options = SettingsOptions(
            config=config,
            no_config=no_config,
            kube_version=kube_version,
            feature_gates=feature_gates,
            proposals=proposals,
            select=select,
            ignore=ignore,
            namespace=namespace,
            exclude=exclude,
            policies=policy,
            limits=limit,
            memo=memo,
        )
        settings = settings_from(options, notes).overridden(
            cluster=cluster_file,
            closed=closed,
            simulate=simulate,
            jobs=jobs,
            render=build,
            cache=False if no_cache else None,
        )
        render = RenderOptions(allow_network, render_timeout, render_budget, render_memory, offline)
        settings = replace(settings, sandbox=sandbox(render))
        if no_gitignore:
            settings = replace(settings, gitignore=False)
        if max_file_size is not None:
            settings = replace(
                settings, limits=replace(settings.limits, file_size=size_option(max_file_size))
            )
        settings = _severities(settings, fail_on, min_severity)
        inputs = LintInputs(
            paths,
            settings,
            stdin=Stdin.of(paths, stdin_filename),
            changed=changed,
            context=context,
            cache_dir=cache_dir,
            memo=memo,
            baseline=baseline,
            new_from_rev=new_from_rev,
            write_baseline=write_baseline,
        )
        # Erased before any report is written; not while the user types the input on the terminal.
        typed = "-" in (paths or ()) and sys.stdin.isatty()
        with active(terminal(sys.stderr, enabled=not (no_progress or typed))):
            outcome = lint_run(inputs, notes)
    if outcome.baseline is not None:
        _write_baseline(outcome, *outcome.baseline)
    _report(outcome, settings, extra_reports, output_format, output, color)


def _severities(
    settings: Settings, fail_on: Optional[FailOn], min_severity: Optional[MinSeverity]
) -> Settings:
    """``--fail-on`` and ``--min-severity`` over the config's."""
    from kaffinity.findings import Severity

    if fail_on is not None:
        threshold = None if fail_on is FailOn.none else Severity(fail_on.value)
        settings = replace(settings, fail_on=threshold)
    if min_severity is not None:
        settings = replace(settings, min_severity=Severity(min_severity.value))
    return settings


def _report(
    outcome: LintOutcome,
    settings: Settings,
    extra_reports: list[tuple[str, str]],
    output_format: OutputFormat,
    output: Optional[str],
    color: Color,
) -> NoReturn:
    """The reports (``--format`` to stdout or ``--output``, each ``--report``), the run's last
    lines, the exit code."""
    import gc

    from kaffinity.report import render_pieces
    from kaffinity.run.lint import shown as shown_result

    fmt = output_format.value
    if fmt == "auto":
        fmt = "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"
    # What was loaded and checked lives until the process exits: the reports' allocations need
    # not make the collector walk it all again.
    gc.freeze()

    result, lint_context = outcome.result, outcome.context
    sources = lint_context.texts  # a compact file's text is read again if a finding shows it
    shown = shown_result(result, settings.min_severity)
    for target_format, target in extra_reports:
        emit(render_pieces(shown, target_format, sources=sources, context=lint_context), target)
    use_color = _use_color(color, output)
    emit(render_pieces(shown, fmt, color=use_color, sources=sources, context=lint_context), output)
    for message in result.notices:
        say(f"kaffinity: note: {message}")
    for message in result.internal_errors:
        say(f"kaffinity: {message}")
    for message in outcome.policy_errors:
        say(message)
    if result.exit_code:
        raise typer.Exit(result.exit_code)
    if outcome.policy_errors:  # a bad policy is bad input: the other policies and the rules still ran
        raise typer.Exit(2)
    raise typer.Exit(1 if result.failed(settings.fail_on) else 0)


def _use_color(choice: Color, output: Optional[str]) -> bool:
    if choice is not Color.auto:
        return choice is Color.always
    if output or os.environ.get("NO_COLOR"):
        return False
    return bool(os.environ.get("FORCE_COLOR")) or sys.stdout.isatty()


def _write_baseline(outcome: LintOutcome, path: str, text: str) -> NoReturn:
    """``kaffinity baseline write``: the fingerprints of the result to ``path``, then exit (2 when
    an input could not be read: its findings are never baselined; 3 on an internal error)."""
    result = outcome.result
    emit(text, path)
    baselined = sum(1 for finding in result.findings if finding.rule != "parse-error")
    say(f"kaffinity: wrote {baselined} finding{'s' if baselined != 1 else ''} to {quote_name(path)}")
    for message in result.internal_errors:
        say(f"kaffinity: {message}")
    if result.exit_code:
        for finding in result.findings:
            if finding.rule == "parse-error":
                where = f"{finding.file}:{finding.line}:{finding.column}" if finding.line else finding.file
                say(f"{quote_name(where)}: error: {finding.message}")
    raise typer.Exit(result.exit_code)


baseline_app = typer.Typer(
    help="Baseline files: the findings a repository accepts for now, left out by lint --baseline "
    "(docs/adopting.md).",
    no_args_is_help=True,
    add_completion=False,
)

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
BaselineOutput = Annotated[
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
        "output", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=BaselineOutput
    )
    parameters = [parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY) for parameter in kept] + [output]
    baseline_write.__signature__ = inspect.Signature(parameters, return_annotation=None)  # type: ignore[attr-defined]
    baseline_write.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}


_baseline_signature()
baseline_app.command("write")(baseline_write)
