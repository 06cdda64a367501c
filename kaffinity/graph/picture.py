"""``kaffinity graph``: the affinity graph drawn as Mermaid, Graphviz DOT or node-link JSON.

Workloads are grouped by namespace; edges are styled by kind (affinity, anti-affinity, spread,
disruption budget) and strength (required: bold; preferred or ScheduleAnyway: dotted) and
labelled with their topologyKey; objects with findings are highlighted by severity.
Mermaid and DOT leave out workloads that take part in no relation (JSON keeps every node), and
say how many they left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import networkx as nx

from kaffinity.findings import Finding, Severity
from kaffinity.graph.affinity import (
    RELATION_AFFINITY,
    RELATION_ANTI_AFFINITY,
    RELATION_PDB,
    RELATION_SELECTS,
    RELATION_SPREAD,
    AffinityGraph,
)
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
    "graph": {"kube_version": "target version", "findings": "number of findings on the graph's objects"},
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


def _worst(findings: Sequence[Finding]) -> Severity | None:
    for severity in _SEVERITY_ORDER:
        if any(finding.severity is severity for finding in findings):
            return severity
    return None


def _shown(graph: AffinityGraph) -> list[str]:
    """The nodes Mermaid and DOT draw: those with an edge, in the graph's (canonical) order."""
    g = graph.graph
    return [node for node in g.nodes if g.degree(node) > 0]


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


def render_mermaid(graph: AffinityGraph, findings: Iterable[Finding]) -> str:
    """A Mermaid flowchart (renders in GitHub Markdown inside a ```mermaid block)."""
    g = graph.graph
    marked = _findings_by_node(graph, findings)
    shown = _shown(graph)
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
    for index, (source, target, data) in enumerate(g.edges(data=True)):
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
    hidden = g.number_of_nodes() - len(shown)
    if hidden:
        lines.append(f"  %% {hidden} workload(s) without relations not shown")
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


def render_dot(graph: AffinityGraph, findings: Iterable[Finding]) -> str:
    """Graphviz DOT: a cluster per namespace (``dot -Tsvg``)."""
    g = graph.graph
    marked = _findings_by_node(graph, findings)
    shown = _shown(graph)
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
    for source, target, data in g.edges(data=True):
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
    hidden = g.number_of_nodes() - len(shown)
    if hidden:
        lines.append(f"  // {hidden} workload(s) without relations not shown")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot(text: str) -> str:
    """A DOT quoted string (only ``"`` is escaped there, and a backslash before it); control
    characters and undecodable bytes shown as C-style escapes (``kaffinity.load.display.escape``)."""
    return '"' + escape(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _dot_attrs(attrs: Mapping[str, str]) -> str:
    return ", ".join(f"{key}={_dot(value)}" for key, value in attrs.items())


def render_json(graph: AffinityGraph, findings: Iterable[Finding], version: str) -> str:
    """networkx node-link JSON with the findings attached to their objects (shape: GRAPH_JSON_SHAPE)."""
    marked = _findings_by_node(graph, findings)
    plain: nx.MultiDiGraph[str] = nx.MultiDiGraph(kube_version=version)
    for node, data in graph.graph.nodes(data=True):
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
        attrs = {k: v for k, v in data.items() if k != "relation"}
        if "relation" in data:
            attrs["location"] = graph.term_location(data["relation"])
        plain.add_edge(source, target, key=key, **attrs)
    plain.graph["findings"] = sum(len(items) for items in marked.values())
    try:
        document = nx.node_link_data(plain, edges="edges")  # networkx >= 3.4
    except TypeError:  # pragma: no cover - older networkx names the key "links"
        document = nx.node_link_data(plain)
        document["edges"] = document.pop("links")
    return json.dumps(utf8_tree(document), indent=2) + "\n"
