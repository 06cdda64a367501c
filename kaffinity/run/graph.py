"""``kaffinity graph``'s run: the files read and the units built as lint builds them, one unit
chosen (``--unit``, else the one ``--focus`` names, else the first), the rules the picture marks
run on it, the picture drawn (kaffinity.graph.picture) within its limits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from kaffinity.run.layout import choose_unit, focused_unit, layout, only
from kaffinity.run.notes import Notes, Outcome, RunError
from kaffinity.run.workspace import input_problems, load, load_cluster, run_rules

if TYPE_CHECKING:
    from kaffinity.config import Settings
    from kaffinity.run.inputs import Stdin


@dataclass(frozen=True)
class GraphAsk:
    """What to draw: the format (mermaid, dot, json), the unit, the selection (``--focus``,
    ``--depth``, ``--findings-only``, ``--min-severity``) and the limits of the picture."""

    output_format: str = "mermaid"
    unit: Optional[str] = None
    focus: Optional[list[str]] = None
    depth: Optional[int] = None
    findings_only: bool = False
    min_severity: Optional[str] = None
    max_vertices: Optional[int] = None
    max_edges: Optional[int] = None


def graph_run(
    paths: Optional[list[str]], settings: Settings, stdin: Stdin, ask: GraphAsk, notes: Notes
) -> Outcome:
    """The picture; exit code 0, 2 on bad input or a ``--focus`` that names nothing (or several
    objects), the engine's on an internal error."""
    from kaffinity.context import Context
    from kaffinity.findings import Severity
    from kaffinity.graph.picture import DEFAULT_LIMITS, draw, flagged_vertices, render_json
    from kaffinity.graph.view import FocusError, Limits, select
    from kaffinity.rules import RULES
    from kaffinity.rules.base import rule_enabled

    focus, findings_only = ask.focus, ask.findings_only
    files = load(paths, settings, stdin)
    cluster = load_cluster(settings)
    files, units = layout(files, paths, settings, notes)
    broken = input_problems(files, settings, units, notes, cluster)
    chosen = (
        focused_unit(files, settings, cluster, units, focus, notes) if focus and ask.unit is None else None
    )
    chosen = chosen or choose_unit(units, ask.unit, notes)
    # The graph rules the configuration enables: their findings are what the picture marks;
    # with --findings-only, every enabled rule's, as kaffinity lint reports them.
    drawn = tuple(
        rule
        for rule in RULES
        if (findings_only or rule.category == "graph")
        and rule_enabled(rule, settings.select, settings.ignore)
    )
    context = Context(files, settings, cluster, chosen.documents)
    result = run_rules(files, settings, drawn, context=context, layout=only(units, chosen))
    picture, findings = context.graph, result.findings
    selection = None
    if focus or findings_only:
        lowest = Severity(ask.min_severity if ask.min_severity is not None else "info")
        flagged = flagged_vertices(picture, findings, lowest) if findings_only else None
        try:
            selection = select(picture.graph, focus or (), ask.depth, flagged, lowest.value)
        except FocusError as error:
            raise RunError(f"kaffinity: error: {error}") from None
    said: list[str] = []
    if ask.output_format == "json":
        text = render_json(picture, findings, settings.kube_version, selection)
    else:
        default = DEFAULT_LIMITS[ask.output_format]
        given = ask.max_vertices is not None or ask.max_edges is not None
        limits = Limits(
            vertices=default.vertices if ask.max_vertices is None else ask.max_vertices,
            edges=default.edges if ask.max_edges is None else ask.max_edges,
            text=0 if given else default.text,
        )
        text, note = draw(picture, findings, ask.output_format, selection, limits)
        said += [note] if note else []
    after = tuple(
        f"kaffinity: {message}"
        for message in (
            *(f"note: {notice}" for notice in (*result.notices, *said)),
            *result.internal_errors,
        )
    )
    return Outcome(text, after, result.exit_code if result.internal_errors else 2 if broken else 0)
