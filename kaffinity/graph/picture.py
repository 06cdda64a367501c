"""``kaffinity graph``: the affinity graph drawn as Mermaid, Graphviz DOT or node-link JSON.

Workloads are grouped by namespace; edges are styled by kind (affinity, anti-affinity, spread,
disruption budget) and strength (required: bold; preferred or ScheduleAnyway: dotted) and
labelled with their topologyKey; objects with findings are highlighted by severity.
Mermaid and DOT leave out workloads that take part in no relation (JSON keeps every node), and
say how many they left out. A :class:`~kaffinity.graph.view.Selection` (``--focus``,
``--findings-only``) draws only its vertices; a picture above the :class:`~kaffinity.graph.view.Limits`
is drawn as a :class:`~kaffinity.graph.view.Summary` instead (:func:`draw`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import networkx as nx

from kaffinity.findings import Finding, Severity
from kaffinity.graph.affinity import AffinityGraph
from kaffinity.graph.members import (
    RELATION_AFFINITY,
    RELATION_ANTI_AFFINITY,
    RELATION_PDB,
    RELATION_SELECTS,
    RELATION_SPREAD,
)
from kaffinity.graph.view import Area, Limits, Selection, Summary, summarise
from kaffinity.load.display import escape, utf8_tree

_COLOURS = {
    RELATION_AFFINITY: "#2e7d32",
    RELATION_ANTI_AFFINITY: "#c62828",
    RELATION_SPREAD: "#1565c0",
    RELATION_PDB: "#6d6d6d",
    RELATION_SELECTS: "#9e9e9e",
}
_FILL = {"error": "#ffebee", "warning": "#fff8e1", "info": "#e3f2fd"}
_STROKE = {"error": "#c62828", "warning": "#f9a825", "info": "#1565c0"}
_SEVERITY_ORDER = (Severity.ERROR, Severity.WARNING, Severity.INFO)

#: The JSON shape (``--format json``), documented in docs/graph.md.
GRAPH_JSON_SHAPE = {
    "directed": "true",
    "multigraph": "true",
    "graph": {
        "kube_version": "target version",
        "findings": "number of findings on the objects written",
        "left_out": "vertices of the graph not written (--focus, --findings-only); 0: the whole graph",
        "focus": "the --focus values (absent without --focus or --findings-only)",
        "depth": "the neighbourhood's depth (absent without --focus or --findings-only)",
        "findings_only": "whether --findings-only was given (absent without --focus or --findings-only)",
        "min_severity": "with --findings-only: the lowest severity that counted (else null)",
    },
    "nodes": [
        {
            "id": "node id: Kind/namespace/name, pods:<namespace>/<labels>, selector:<n>",
            "type": "workload | pods | pdb | selector",
            "kind": "object kind (workload, Pod for existing pods, PodDisruptionBudget)",
            "name": "object name; for a selector node, the selector and its scope",
            "namespace": "namespace (absent for selector nodes)",
            "replicas": "replicas (workloads), number of pods (existing pods); null: DaemonSet",
            "members": "selector nodes: how many nodes the selector matches",
            "location": "file:line:column",
            "severity": "highest severity of the findings on this object (absent: none)",
            "findings": "[{rule, severity, message, location}] on this object",
        }
    ],
    "edges": [
        {
            "source": "node id of the term's owner (a selector node for 'selects' edges)",
            "target": "node id matched (a selector node when the term matches many)",
            "key": "edge key among parallel edges",
            "kind": "affinity | anti-affinity | spread | pdb | selects",
            "required": "true: required / DoNotSchedule; false: preferred / ScheduleAnyway",
            "weight": "preferred terms' weight, else null",
            "topology_key": "topologyKey (null for pdb and selects)",
            "scope": "namespaces the term reaches, in words",
            "certain": "false when the match depends on labels of an undeclared Namespace",
            "location": "file:line:column of the term",
        }
    ],
}


def _findings_by_node(graph: AffinityGraph, findings: Iterable[Finding]) -> dict[str, list[Finding]]:
    """Findings placed on the graph's objects (by the object they report on)."""
    nodes: dict[tuple[str, str | None, str], str] = {}
    for node, data in graph.graph.nodes(data=True):
        if data.get("type") in ("workload", "pdb"):
            nodes.setdefault((str(data["kind"]), data.get("namespace"), str(data["name"])), node)
    found: dict[str, list[Finding]] = {}
    for finding in findings:
        ref = finding.object
        if ref is None:
            continue
        target = nodes.get((ref.kind, ref.namespace, ref.name))
        if target is not None:
            found.setdefault(target, []).append(finding)
    return found


def flagged_vertices(
    graph: AffinityGraph, findings: Iterable[Finding], lowest: Severity = Severity.INFO
) -> set[str]:
    """The vertices of objects with findings at ``lowest`` or above (``kaffinity graph --findings-only``)."""
    return set(_findings_by_node(graph, (f for f in findings if f.severity.reaches(lowest))))


def _worst(findings: Sequence[Finding]) -> Severity | None:
    for severity in _SEVERITY_ORDER:
        if any(finding.severity is severity for finding in findings):
            return severity
    return None


def _shown(graph: AffinityGraph) -> list[str]:
    """The nodes Mermaid and DOT draw: those with an edge, in the graph's (canonical) order."""
    g = graph.graph
    return [node for node in g.nodes if g.degree(node) > 0]


def _drawn(graph: AffinityGraph, chosen: Selection | None) -> tuple[list[str], list[tuple[str, str, Any]]]:
    """The vertices and edges a picture draws: the selection's, else every vertex with an edge."""
    g = graph.graph
    if chosen is None:
        return _shown(graph), list(g.edges(data=True))
    keep = set(chosen.vertices)
    return chosen.vertices, [(s, t, d) for s, t, d in g.edges(data=True) if s in keep and t in keep]


def _left_out(graph: AffinityGraph, shown: Sequence[str], chosen: Selection | None) -> str | None:
    """The comment that says what a picture leaves out (None: nothing)."""
    if chosen is not None:
        total = graph.graph.number_of_nodes()
        return f"{chosen.describe()}: {chosen.left_out:,} of {total:,} vertices left out"
    hidden = graph.graph.number_of_nodes() - len(shown)
    return f"{hidden} workload(s) without relations not shown" if hidden else None


def _by_namespace(graph: AffinityGraph, shown: Sequence[str]) -> dict[str | None, list[str]]:
    """The drawn nodes grouped by namespace (None: selector nodes), in the graph's (canonical) order."""
    groups: dict[str | None, list[str]] = {}
    for node in shown:
        groups.setdefault(graph.graph.nodes[node].get("namespace"), []).append(node)
    return groups


def _label(data: Mapping[str, Any]) -> str:
    kind = data.get("type")
    if kind == "selector":
        return f"selector {data['name']} ({data['members']} matches)"
    if kind == "pods":
        return str(data["name"])
    replicas = data.get("replicas")
    count = "" if replicas is None or kind == "pdb" else f" x{replicas}"
    return f"{data['kind']} {data['name']}{count}"


def _edge_label(data: Mapping[str, Any]) -> str:
    if data["kind"] == RELATION_SELECTS:
        return ""
    parts = [str(data["kind"])]
    if data.get("topology_key"):
        parts.append(str(data["topology_key"]))
    if data.get("weight") is not None:
        parts.append(f"w{data['weight']}")
    if data["kind"] == RELATION_SPREAD and not data["required"]:
        parts.append("ScheduleAnyway")
    return " ".join(parts)


def render_mermaid(graph: AffinityGraph, findings: Iterable[Finding], chosen: Selection | None = None) -> str:
    """A Mermaid flowchart (renders in GitHub Markdown inside a ```mermaid block)."""
    g = graph.graph
    marked = _findings_by_node(graph, findings)
    shown, edges = _drawn(graph, chosen)
    ids = {node: f"n{i}" for i, node in enumerate(shown)}
    lines = ["flowchart LR"]
    for number, (namespace, nodes) in enumerate(_by_namespace(graph, shown).items()):
        indent = "  "
        if namespace is not None:
            lines.append(f'  subgraph ns{number}["namespace {_mermaid_text(namespace)}"]')
            indent = "    "
        for node in nodes:
            data = g.nodes[node]
            text = _mermaid_text(_label(data))
            shape = {"selector": ("{{", "}}"), "pods": ("([", "])"), "pdb": ("[/", "/]")}.get(
                str(data.get("type")), ("[", "]")
            )
            lines.append(f'{indent}{ids[node]}{shape[0]}"{text}"{shape[1]}')
        if namespace is not None:
            lines.append("  end")
    styles: list[str] = []
    for index, (source, target, data) in enumerate(edges):
        arrow = _mermaid_arrow(data)
        label = _edge_label(data)
        text = f'|"{_mermaid_text(label)}"|' if label else ""
        lines.append(f"  {ids[source]} {arrow}{text} {ids[target]}")
        styles.append(f"  linkStyle {index} stroke:{_COLOURS[data['kind']]}")
    lines += styles
    lines += [
        f"  classDef {level} fill:{_FILL[level]},stroke:{_STROKE[level]},stroke-width:{width}px"
        for level, width in (("error", 3), ("warning", 2), ("info", 1))
    ]
    for node, items in marked.items():
        worst = _worst(items)
        if worst is not None and node in ids:
            lines.append(f"  class {ids[node]} {worst.value}")
    note = _left_out(graph, shown, chosen)
    if note:
        lines.append(f"  %% {note}")
    return "\n".join(lines) + "\n"


def _mermaid_arrow(data: Mapping[str, Any]) -> str:
    kind, required = data["kind"], data.get("required", True)
    if kind == RELATION_SELECTS:
        return "-.-"
    head = "x" if kind == RELATION_ANTI_AFFINITY else ">"
    return f"=={head}" if required else f"-.-{head}"


def _mermaid_text(text: str) -> str:
    """Mermaid's entity codes for the characters that end or break a quoted label; control
    characters (a line break in a name ends the statement) and undecodable bytes are shown as
    C-style escapes first (``kaffinity.load.display.escape``)."""
    return re.sub(r'["<>#]', lambda m: f"#{ord(m.group(0))};", escape(text))


def render_dot(graph: AffinityGraph, findings: Iterable[Finding], chosen: Selection | None = None) -> str:
    """Graphviz DOT: a cluster per namespace (``dot -Tsvg``)."""
    g = graph.graph
    marked = _findings_by_node(graph, findings)
    shown, edges = _drawn(graph, chosen)
    lines = [
        "digraph kaffinity {",
        "  rankdir=LR;",
        '  node [shape=box, style="rounded,filled", fillcolor=white];',
    ]
    for number, (namespace, nodes) in enumerate(_by_namespace(graph, shown).items()):
        indent = "  "
        if namespace is not None:
            lines.append(f"  subgraph cluster_{number} {{")
            lines.append(f"    label={_dot(f'namespace {namespace}')};")
            indent = "    "
        for node in nodes:
            data = g.nodes[node]
            attrs = {"label": _label(data)}
            if data.get("type") == "selector":
                attrs["shape"] = "hexagon"
            elif data.get("type") == "pods":
                attrs["shape"] = "ellipse"
            elif data.get("type") == "pdb":
                attrs["shape"] = "parallelogram"
            worst = _worst(marked.get(node, []))
            if worst is not None:
                attrs["fillcolor"], attrs["color"] = _FILL[worst.value], _STROKE[worst.value]
                attrs["penwidth"] = "2"
            lines.append(f"{indent}{_dot(node)} [{_dot_attrs(attrs)}];")
        if namespace is not None:
            lines.append("  }")
    for source, target, data in edges:
        kind = data["kind"]
        attrs = {"color": _COLOURS[kind]}
        if kind == RELATION_SELECTS:
            attrs["style"] = "dotted"
            attrs["arrowhead"] = "none"
        else:
            attrs["style"] = "bold" if data.get("required") else "dashed"
            attrs["label"] = _edge_label(data)
            if kind == RELATION_ANTI_AFFINITY:
                attrs["arrowhead"] = "tee"
        lines.append(f"  {_dot(source)} -> {_dot(target)} [{_dot_attrs(attrs)}];")
    note = _left_out(graph, shown, chosen)
    if note:
        lines.append(f"  // {note}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot(text: str) -> str:
    """A DOT quoted string (only ``"`` is escaped there, and a backslash before it); control
    characters and undecodable bytes shown as C-style escapes (``kaffinity.load.display.escape``)."""
    return '"' + escape(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _dot_attrs(attrs: Mapping[str, str]) -> str:
    return ", ".join(f"{key}={_dot(value)}" for key, value in attrs.items())


def render_json(
    graph: AffinityGraph, findings: Iterable[Finding], version: str, chosen: Selection | None = None
) -> str:
    """networkx node-link JSON with the findings attached to their objects (shape:
    GRAPH_JSON_SHAPE): the whole graph, or the vertices ``chosen`` and the edges between them."""
    marked = _findings_by_node(graph, findings)
    keep = None if chosen is None else set(chosen.vertices)
    if keep is not None:
        marked = {node: items for node, items in marked.items() if node in keep}
    plain: nx.MultiDiGraph[str] = nx.MultiDiGraph(kube_version=version)
    for node, data in graph.graph.nodes(data=True):
        if keep is not None and node not in keep:
            continue
        items = marked.get(node, [])
        extra: dict[str, Any] = {}
        if items:
            worst = _worst(items)
            extra["severity"] = worst.value if worst is not None else None
            extra["findings"] = [
                {
                    "rule": f.rule,
                    "severity": f.severity.value,
                    "message": f.message,
                    "location": f"{f.file}:{f.line}:{f.column}" if f.line else f.file,
                }
                for f in items
            ]
        location = graph.location(node)
        plain.add_node(node, **data, **({"location": location} if location else {}), **extra)
    for source, target, key, data in graph.graph.edges(keys=True, data=True):
        if keep is not None and (source not in keep or target not in keep):
            continue
        attrs = {k: v for k, v in data.items() if k != "relation"}
        if "relation" in data:
            attrs["location"] = graph.term_location(data["relation"])
        plain.add_edge(source, target, key=key, **attrs)
    plain.graph["findings"] = sum(len(items) for items in marked.values())
    plain.graph["left_out"] = 0 if chosen is None else chosen.left_out
    if chosen is not None:
        plain.graph.update(
            focus=list(chosen.focus),
            depth=chosen.depth,
            findings_only=chosen.findings_only,
            min_severity=chosen.min_severity,
        )
    try:
        document = nx.node_link_data(plain, edges="edges")  # networkx >= 3.4
    except TypeError:  # pragma: no cover - older networkx names the key "links"
        document = nx.node_link_data(plain)
        document["edges"] = document.pop("links")
    return json.dumps(utf8_tree(document), indent=2) + "\n"


#: The largest picture drawn whole by default, per format; above it, a summary (``--max-vertices``,
#: ``--max-edges``). Mermaid's own defaults refuse a diagram of more than 500 edges (``maxEdges``)
#: or 50,000 characters (``maxTextSize``).
DEFAULT_LIMITS = {
    "dot": Limits(vertices=300, edges=1000),
    "mermaid": Limits(vertices=300, edges=500, text=50_000),
}


def draw(
    graph: AffinityGraph,
    findings: Iterable[Finding],
    output_format: str,
    chosen: Selection | None,
    limits: Limits,
) -> tuple[str, str | None]:
    """The picture (``mermaid`` or ``dot``) of the graph or of the ``chosen`` vertices, or, when
    it is larger than ``limits``, its :func:`~kaffinity.graph.view.summarise` summary; and then
    the note to give on stderr (None: drawn whole)."""
    findings = list(findings)
    vertices, edges = _drawn(graph, chosen)
    render = render_mermaid if output_format == "mermaid" else render_dot
    if not limits.passed(len(vertices), len(edges)):
        text = render(graph, findings, chosen)
        if not limits.passed(len(vertices), len(edges), len(text)):
            return text, None
    severities = {
        node: worst.value
        for node, items in _findings_by_node(graph, findings).items()
        if (worst := _worst(items)) is not None
    }
    summary = summarise(graph.graph, vertices, severities, len(edges), limits)
    what = (
        f"the picture ({len(vertices):,} vertices, {len(edges):,} edges) is larger than the limit ({limits})"
    )
    if chosen is not None:
        what = f"{chosen.describe()}: {what}"
    note = (
        f"{what}; drawn one vertex per namespace instead: narrow it with --focus, --depth or "
        "--findings-only, or raise --max-vertices and --max-edges"
    )
    write = _summary_mermaid if output_format == "mermaid" else _summary_dot
    text = write(summary, note)
    # Too long still (Mermaid's maxTextSize): fewer links, in proportion, until it fits.
    while limits.text and len(text) > limits.text and summary.links:
        fewer = int(len(summary.links) * limits.text / len(text) * 0.95)
        summary = summarise(
            graph.graph, vertices, severities, len(edges), replace(limits, edges=max(fewer, 1))
        )
        text = write(summary, note)
        if fewer < 1:
            break
    return text, note


def _area_label(area: Area) -> str:
    if area.selector is not None:
        return f"selector {area.selector}: {area.counts['match']} matches in {area.namespaces} namespaces"
    counts = [
        f"{area.counts[kind]} {word}{'s' if area.counts[kind] != 1 else ''}"
        for kind, word in (("workload", "workload"), ("pdb", "budget"), ("pods", "pod group"))
        if area.counts[kind]
    ]
    if area.flagged:
        counts.append(f"{area.flagged} with findings")
    if area.outward:
        counts.append(f"{area.outward} term(s) reach other namespaces")
    name = area.name if area.namespaces > 1 else f"namespace {area.name}"
    return f"{name}: {', '.join(counts)}"


def _link_label(kinds: Counter[str]) -> tuple[str, str]:
    """An edge's label (the count of each kind) and its kind (the most counted; of kinds counted
    as often, the first by name: the counts come from a set, whose order is the hash seed's)."""
    label = ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items()))
    return label, min(kinds, key=lambda kind: (-kinds[kind], kind))


def _summary_ids(summary: Summary) -> dict[str, str]:
    return {area.name: f"a{index}" for index, area in enumerate(summary.areas)}


def _summary_comment(summary: Summary) -> list[str]:
    lines = [
        "summary: one vertex per namespace (and per selector whose matches span namespaces); an edge "
        "counts the terms and budgets of one namespace that reach the other, by kind",
    ]
    if summary.links_left_out:
        lines.append(
            f"{summary.links_left_out:,} of {summary.links_left_out + len(summary.links):,} links "
            "(those with the fewest terms) not drawn"
        )
    return lines


def _summary_mermaid(summary: Summary, note: str) -> str:
    ids = _summary_ids(summary)
    lines = ["flowchart LR", f"  %% {note}"]
    lines += [f"  %% {line}" for line in _summary_comment(summary)]
    for area in summary.areas:
        text = _mermaid_text(_area_label(area))
        lines.append(
            f'  {ids[area.name]}{{{{"{text}"}}}}' if area.selector else f'  {ids[area.name]}["{text}"]'
        )
    styles: dict[str, list[str]] = {}
    for index, ((source, target), kinds) in enumerate(summary.links.items()):
        label, kind = _link_label(kinds)
        arrow = "--x" if kind == RELATION_ANTI_AFFINITY else "-->"
        lines.append(f'  {ids[source]} {arrow}|"{_mermaid_text(label)}"| {ids[target]}')
        styles.setdefault(_COLOURS[kind], []).append(str(index))
    lines += [f"  linkStyle {','.join(indices)} stroke:{colour}" for colour, indices in styles.items()]
    lines += [
        f"  classDef {level} fill:{_FILL[level]},stroke:{_STROKE[level]},stroke-width:{width}px"
        for level, width in (("error", 3), ("warning", 2), ("info", 1))
    ]
    lines += [f"  class {ids[area.name]} {area.severity}" for area in summary.areas if area.severity]
    return "\n".join(lines) + "\n"


def _summary_dot(summary: Summary, note: str) -> str:
    ids = _summary_ids(summary)
    lines = ["digraph kaffinity {", f"  // {note}"]
    lines += [f"  // {line}" for line in _summary_comment(summary)]
    lines += ["  rankdir=LR;", '  node [shape=box, style="rounded,filled", fillcolor=white];']
    for area in summary.areas:
        attrs = {"label": _area_label(area)}
        if area.selector:
            attrs["shape"] = "hexagon"
        if area.severity:
            attrs["fillcolor"], attrs["color"] = _FILL[area.severity], _STROKE[area.severity]
        lines.append(f"  {ids[area.name]} [{_dot_attrs(attrs)}];")
    for (source, target), kinds in summary.links.items():
        label, kind = _link_label(kinds)
        # xlabel: placed after the layout; with label, dot took 51 s on 1,000 edges, with xlabel 3.6 s
        attrs = {"color": _COLOURS[kind], "xlabel": label}
        if kind == RELATION_ANTI_AFFINITY:
            attrs["arrowhead"] = "tee"
        lines.append(f"  {ids[source]} -> {ids[target]} [{_dot_attrs(attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
