"""``kaffinity expand``, ``graph``, ``place``, ``explain`` and ``fix``: their options parsed, the run called
once (kaffinity.run.expand, graph, place, explain, fix), its outcome printed; ``fix``'s files written
back (or its diff, or stdin's fixed stream on stdout) here."""

from __future__ import annotations

import sys
from dataclasses import replace
from enum import Enum
from typing import TYPE_CHECKING, Annotated, BinaryIO, Optional

import typer

from kaffinity.cli.options import (
    AllowNetwork,
    Closed,
    Cluster,
    Config,
    FeatureGates,
    KubeVersion,
    Limit,
    Namespace,
    NoConfig,
    Offline,
    Output,
    Paths,
    Render,
    RenderBudget,
    RenderMemory,
    RenderTimeout,
    StdinFilename,
    Unit,
)
from kaffinity.cli.output import finish, notes_said, say
from kaffinity.load.display import patch_lines, quote_name
from kaffinity.run.inputs import RenderOptions, SettingsOptions, Stdin, sandbox, settings_from
from kaffinity.run.notes import Notes

if TYPE_CHECKING:
    from kaffinity.expand.fixes import FileFix


class ExpandFormat(str, Enum):
    diff = "diff"
    yaml = "yaml"
    json = "json"


def expand(
    paths: Paths = None,
    output_format: Annotated[
        ExpandFormat,
        typer.Option("--format", "-f", help="diff: written vs created; yaml: merged in place; json."),
    ] = ExpandFormat.diff,
    output: Output = None,
    kube_version: KubeVersion = None,
    feature_gates: FeatureGates = None,
    config: Config = None,
    no_config: NoConfig = False,
    namespace: Namespace = None,
    stdin_filename: StdinFilename = None,
) -> None:
    """Show the label selectors kube-apiserver stores in the pods each workload creates, with
    matchLabelKeys / mismatchLabelKeys merged in. Exit code 0, 2 on bad input, 3 on an internal error."""
    from kaffinity.run.expand import expand_run

    notes = Notes()
    with notes_said(notes):  # the run's notes, said as it ends: before its outcome, or its error
        settings = settings_from(
            SettingsOptions(config, no_config, kube_version, feature_gates, namespace=namespace), notes
        )
        outcome = expand_run(paths, settings, Stdin.of(paths, stdin_filename), output_format.value, notes)
    finish(outcome, output, always=output is not None)


class GraphFormat(str, Enum):
    mermaid = "mermaid"
    dot = "dot"
    json = "json"


class GraphSeverity(str, Enum):
    info = "info"
    warning = "warning"
    error = "error"


def graph(
    paths: Paths = None,
    output_format: Annotated[
        GraphFormat,
        typer.Option("--format", "-f", help="mermaid (GitHub Markdown), dot (graphviz) or json (node-link)."),
    ] = GraphFormat.mermaid,
    output: Output = None,
    cluster_file: Cluster = None,
    closed: Closed = None,
    kube_version: KubeVersion = None,
    feature_gates: FeatureGates = None,
    config: Config = None,
    no_config: NoConfig = False,
    namespace: Namespace = None,
    stdin_filename: StdinFilename = None,
    unit: Unit = None,
    build: Render = None,
    allow_network: AllowNetwork = None,
    offline: Offline = None,
    render_timeout: RenderTimeout = None,
    render_budget: RenderBudget = None,
    render_memory: RenderMemory = None,
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
    from kaffinity.run.graph import GraphAsk, graph_run

    if depth is not None and not (focus or findings_only):
        say("kaffinity: error: --depth needs --focus or --findings-only")
        raise typer.Exit(2)
    if min_severity is not None and not findings_only:
        say("kaffinity: error: --min-severity needs --findings-only")
        raise typer.Exit(2)
    notes = Notes()
    with notes_said(notes):  # the run's notes, said as it ends: before its outcome, or its error
        settings = settings_from(
            SettingsOptions(config, no_config, kube_version, feature_gates, namespace=namespace), notes
        )
        settings = settings.overridden(cluster=cluster_file, closed=closed, render=build)
        render = RenderOptions(allow_network, render_timeout, render_budget, render_memory, offline)
        settings = replace(settings, sandbox=sandbox(render))
        ask = GraphAsk(
            output_format.value,
            unit,
            focus,
            depth,
            findings_only,
            min_severity.value if min_severity is not None else None,
            max_vertices,
            max_edges,
        )
        outcome = graph_run(paths, settings, Stdin.of(paths, stdin_filename), ask, notes)
    finish(outcome, output)


class PlaceFormat(str, Enum):
    text = "text"
    json = "json"


def place(
    paths: Paths = None,
    cluster_file: Cluster = None,
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
    output: Output = None,
    kube_version: KubeVersion = None,
    feature_gates: FeatureGates = None,
    config: Config = None,
    no_config: NoConfig = False,
    namespace: Namespace = None,
    stdin_filename: StdinFilename = None,
    unit: Unit = None,
    build: Render = None,
    limit: Limit = None,
    allow_network: AllowNetwork = None,
    offline: Offline = None,
    render_timeout: RenderTimeout = None,
    render_budget: RenderBudget = None,
    render_memory: RenderMemory = None,
) -> None:
    """Place every pod of the given workloads on the declared cluster, as kube-scheduler's filters
    would, and show each pod's node or why it stays Pending; with several deployment units, each
    unit on its own (--unit: one of them). Exit code 0 when every pod is placed, 1 when some stay
    Pending, 2 on bad input, 3 on an internal error."""
    from kaffinity.run.place import filter_plugins, place_run

    notes = Notes()
    with notes_said(notes):  # the run's notes, said as it ends: before its outcome, or its error
        options = SettingsOptions(
            config, no_config, kube_version, feature_gates, namespace=namespace, limits=limit
        )
        settings = settings_from(options, notes).overridden(cluster=cluster_file, render=build)
        render = RenderOptions(allow_network, render_timeout, render_budget, render_memory, offline)
        settings = replace(settings, sandbox=sandbox(render))
        enabled = filter_plugins(filters)
        stdin = Stdin.of(paths, stdin_filename)
        outcome = place_run(paths, settings, stdin, enabled, unit, output_format.value, notes)
    finish(outcome, output)


class ExplainFormat(str, Enum):
    text = "text"
    json = "json"


def explain(
    capture: Annotated[
        str,
        typer.Argument(
            metavar="CAPTURE",
            help="A live cluster's capture: what kubectl get -A -o yaml prints for nodes, pods, "
            "budgets, priority and runtime classes, volumes and claims (docs/explain.md).",
        ),
    ],
    pod: Annotated[
        Optional[str],
        typer.Option("--pod", metavar="NAMESPACE/NAME", help="Explain only this Pending pod."),
    ] = None,
    output_format: Annotated[
        ExplainFormat, typer.Option("--format", "-f", help="text or json (docs/explain.md).")
    ] = ExplainFormat.text,
    output: Output = None,
    kube_version: KubeVersion = None,
    feature_gates: FeatureGates = None,
    config: Config = None,
    no_config: NoConfig = False,
    limit: Limit = None,
) -> None:
    """Why Pending? Schedule a live cluster's Pending pods on its bound pods in kube-scheduler's
    queue order and explain each: the FailedScheduling message, the filter refusing each node,
    the workloads whose pods block it and the budgets protecting them, and what would let it run
    (a node of which shape, which pods to move, which victims a higher priority would evict).
    Exit code 0 when no pod is Pending, 1 when some are, 2 on bad input, 3 on an internal error."""
    from kaffinity.run.explain import explain_run

    notes = Notes()
    with notes_said(notes):  # the run's notes, said as it ends: before its outcome, or its error
        options = SettingsOptions(config, no_config, kube_version, feature_gates, limits=limit)
        settings = settings_from(options, notes)
        outcome = explain_run(capture, settings, pod, output_format.value, notes)
    finish(outcome, output)


def fix(
    paths: Paths = None,
    diff: Annotated[bool, typer.Option("--diff", help="Show the changes as a diff; write nothing.")] = False,
    select: Annotated[
        Optional[list[str]], typer.Option("--select", help="Rules to fix (comma-separated; default: all).")
    ] = None,
    kube_version: KubeVersion = None,
    feature_gates: FeatureGates = None,
    config: Config = None,
    no_config: NoConfig = False,
    namespace: Namespace = None,
    stdin_filename: StdinFilename = None,
) -> None:
    """Apply safe fixes in place, changing no other byte of the files (stdin: the fixed stream on
    stdout). Exit code 0; with --diff, 1 when there is something to fix; 2 on bad input; 3 on an
    internal error."""
    from kaffinity.run.fix import fix_run

    notes = Notes()
    stdin = Stdin.of(paths, stdin_filename)
    with notes_said(notes):  # the run's notes, said as it ends: before its outcome, or its error
        options = SettingsOptions(
            config, no_config, kube_version, feature_gates, select=select, namespace=namespace
        )
        plan = fix_run(paths, settings_from(options, notes), stdin, notes)
    broken = plan.broken
    stdin_bytes, stdin_rest = plan.stdin.data, plan.stdin.rest
    for problem in plan.problems:
        say(problem)
    for item in plan.fixed:
        if diff:
            _print_diff(item)
            continue
        if item.file == stdin.name and stdin_bytes is not None:
            written = _write_stdout(item, stdin_bytes)
            stdin_bytes = None if written else stdin_bytes
        else:
            written = _write_back(item, plan.roots)
        if not written:
            broken = True
            continue
        rules = sorted({finding.rule for finding in item.findings})
        say(f"{quote_name(item.file)}: fixed {len(item.findings)} ({', '.join(rules)})")
    if not diff and stdin_bytes is not None and stdin_rest is not None:
        _pass_through(stdin_bytes, stdin_rest)
    if not plan.fixed:
        say("kaffinity: nothing to fix")
    result = plan.result
    for message in result.internal_errors:  # a rule that crashed: its fixes are missing
        say(f"kaffinity: {message}")
    if result.internal_errors:
        raise typer.Exit(result.exit_code)
    raise typer.Exit(2 if broken or plan.problems else (1 if diff and plan.fixed else 0))


_BOM = b"\xef\xbb\xbf"


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
        say(f"kaffinity: error: {quote_name(item.file)}: fix writes UTF-8 files only; this one is UTF-16/32")
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
        say(f"kaffinity: error: {quote_name(item.file)}: {error}")
        return False
    return True
