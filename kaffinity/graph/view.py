"""What ``kaffinity graph`` draws of the affinity graph: a focus (``--focus``, ``--depth``), the
objects with findings (``--findings-only``), and, above a size limit, a summary per namespace.

* **Names** (:func:`resolve`): a vertex id (``Kind/namespace/name``, ``pods:...``,
  ``selector:<n>``), ``namespace/name`` or a bare name of a workload or budget (the kind's case
  and a unique match suffice; a workload before a budget of the same name), or ``ns:NAME`` for
  a namespace; a bare word that names no workload or budget is taken as a namespace. Not found
  or ambiguous: :class:`FocusError`, one line, with close matches.
* **Neighbourhood** (:func:`neighbourhood`): the vertices an edge relates to a seed, in either
  direction, repeated ``depth`` times. A selector vertex stands for one term matching many
  vertices, so it is crossed, not counted as a step: a term's owner and the vertices the term
  matches are neighbours (two members of the same selector are not).
* **Selector vertices** are drawn when a term's owner and one of the vertices it matches are
  both drawn (:func:`selection`).
* **Summary** (:func:`summarise`): one vertex per namespace (and per selector vertex whose
  matches span namespaces) and one edge per pair, counting by kind the terms and budgets of the
  first namespace that reach the second.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kaffinity.graph.members import RELATION_SELECTS

if TYPE_CHECKING:
    import networkx as nx

#: The prefix that makes a ``--focus`` value a namespace.
NAMESPACE_PREFIX = "ns:"
#: Vertex ``type``s that have a kind, namespace and name (found by name).
_NAMED = ("workload", "pdb")


class FocusError(ValueError):
    """A ``--focus`` value that names nothing, or several things (the message is one line)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """The largest picture drawn whole; 0: no limit. ``text``: characters (Mermaid's maxTextSize)."""

    vertices: int = 0
    edges: int = 0
    text: int = 0

    def passed(self, vertices: int, edges: int, text: int = 0) -> bool:
        return (
            (self.vertices > 0 and vertices > self.vertices)
            or (self.edges > 0 and edges > self.edges)
            or (self.text > 0 and text > self.text)
        )

    def __str__(self) -> str:
        parts = [
            f"{self.vertices:,} vertices" if self.vertices else "",
            f"{self.edges:,} edges" if self.edges else "",
        ]
        if self.text:
            parts.append(f"{self.text:,} characters")
        return ", ".join(part for part in parts if part) or "none"


def _candidates(graph: nx.MultiDiGraph[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    for vertex, data in graph.nodes(data=True):
        if data.get("type") in _NAMED:
            yield vertex, data


def namespaces(graph: nx.MultiDiGraph[str]) -> dict[str, list[str]]:
    """The vertices of each namespace, in the graph's order (selector vertices have none)."""
    found: dict[str, list[str]] = {}
    for vertex, data in graph.nodes(data=True):
        namespace = data.get("namespace")
        if namespace is not None:
            found.setdefault(str(namespace), []).append(vertex)
    return found


def resolve(graph: nx.MultiDiGraph[str], text: str) -> list[str]:
    """The vertices ``text`` names (module docstring), or :class:`FocusError`."""
    spaces = namespaces(graph)
    if text.startswith(NAMESPACE_PREFIX):
        name = text[len(NAMESPACE_PREFIX) :]
        if name in spaces:
            return spaces[name]
        raise FocusError(_missing(text, "no namespace", [f"{NAMESPACE_PREFIX}{n}" for n in spaces], name))
    if text in graph:
        return [text]
    parts = text.split("/")
    found: list[str] = []
    for vertex, data in _candidates(graph):
        kind, namespace, name = str(data["kind"]), str(data.get("namespace")), str(data["name"])
        if (
            (len(parts) == 3 and parts[0].lower() == kind.lower() and parts[1:] == [namespace, name])
            or (len(parts) == 2 and parts == [namespace, name])
            or (len(parts) == 1 and text == name)
        ):
            found.append(vertex)
    # A budget is often named after its workload: "shop/api" is the workload, the budget is
    # PodDisruptionBudget/shop/api.
    if len(parts) < 3 and any(graph.nodes[vertex]["type"] == "workload" for vertex in found):
        found = [vertex for vertex in found if graph.nodes[vertex]["type"] == "workload"]
    if len(found) == 1:
        return found
    if len(found) > 1:
        shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
        raise FocusError(f"--focus {text}: ambiguous, {len(found)} objects match: {shown}")
    if len(parts) == 1 and text in spaces:
        return spaces[text]
    names = [vertex for vertex, _ in _candidates(graph)]
    names += [f"{data.get('namespace')}/{data['name']}" for _, data in _candidates(graph)]
    names += [str(data["name"]) for _, data in _candidates(graph)]
    names += list(spaces)
    raise FocusError(_missing(text, "no workload, budget or namespace", names, text))


def _missing(text: str, what: str, names: Iterable[str], key: str) -> str:
    close = difflib.get_close_matches(key, sorted(set(names)), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return f"--focus {text}: {what} of that name{hint}"


def _related(graph: nx.MultiDiGraph[str], vertex: str) -> Iterator[str]:
    """The vertices one relation away from ``vertex``, crossing selector vertices."""
    nodes = graph.nodes
    if nodes[vertex].get("type") == "selector":
        yield from graph.successors(vertex)
        yield from graph.predecessors(vertex)
        return
    for target in graph.successors(vertex):
        if nodes[target].get("type") == "selector":
            yield from graph.successors(target)  # what the term matches
        else:
            yield target
    for source in graph.predecessors(vertex):
        if nodes[source].get("type") == "selector":
            yield from graph.predecessors(source)  # the owners of the terms that match it
        else:
            yield source


def neighbourhood(graph: nx.MultiDiGraph[str], seeds: Iterable[str], depth: int) -> set[str]:
    """``seeds`` and the vertices at most ``depth`` relations away from one of them."""
    reached = set(seeds)
    frontier = list(reached)
    for _ in range(depth):
        following: list[str] = []
        for vertex in frontier:
            for other in _related(graph, vertex):
                if other not in reached:
                    reached.add(other)
                    following.append(other)
        if not following:
            break
        frontier = following
    return reached


def selection(graph: nx.MultiDiGraph[str], kept: Collection[str]) -> list[str]:
    """``kept`` and the selector vertices that link two of them, in the graph's order."""
    chosen = set(kept)
    nodes = graph.nodes
    for vertex, data in graph.nodes(data=True):
        if data.get("type") == "selector" and vertex not in chosen:
            owners = any(source in chosen for source in graph.predecessors(vertex))
            if owners and any(target in chosen for target in graph.successors(vertex)):
                chosen.add(vertex)
    return [vertex for vertex in nodes if vertex in chosen]


@dataclass(frozen=True, slots=True)
class Selection:
    """The vertices a picture draws (in the graph's order) and how they were chosen."""

    vertices: list[str]
    left_out: int
    #: ``--focus`` values, the depth, and whether only objects with findings were kept.
    focus: tuple[str, ...] = ()
    depth: int = 0
    findings_only: bool = False
    #: With ``findings_only``: the lowest severity that counted.
    min_severity: str | None = None

    def describe(self) -> str:
        """How the vertices were chosen, in words (for the pictures' comment)."""
        parts = []
        if self.focus:
            parts.append(f"focus {', '.join(self.focus)} at depth {self.depth}")
        if self.findings_only:
            level = "" if self.min_severity in (None, "info") else f" ({self.min_severity} or above)"
            parts.append(
                f"objects with findings{level}"
                + (f" and {self.depth} step(s) around" if not self.focus and self.depth else "")
            )
        return "; ".join(parts)


def select(
    graph: nx.MultiDiGraph[str],
    focus: Collection[str],
    depth: int | None,
    flagged: Collection[str] | None,
    min_severity: str | None = None,
) -> Selection:
    """The vertices to draw for ``--focus`` values (resolved here: :class:`FocusError`), a
    ``depth`` (None: 1 with a focus, 0 without) and, with ``--findings-only``, the ``flagged``
    vertices (those with findings).

    With a focus, the neighbourhood of the focused vertices; with ``flagged`` as well, only the
    flagged vertices of it and the focused ones. Without a focus, the flagged vertices and
    their neighbourhood.
    """
    steps = depth if depth is not None else (1 if focus else 0)
    if focus:
        seeds = [vertex for text in focus for vertex in resolve(graph, text)]
        reached = neighbourhood(graph, seeds, steps)
        if flagged is not None:
            marked = set(flagged)
            reached = {vertex for vertex in reached if vertex in marked} | set(seeds)
    else:
        reached = neighbourhood(graph, flagged or (), steps)
    vertices = selection(graph, reached)
    return Selection(
        vertices=vertices,
        left_out=graph.number_of_nodes() - len(vertices),
        focus=tuple(focus),
        depth=steps,
        findings_only=flagged is not None,
        min_severity=min_severity if flagged is not None else None,
    )


@dataclass(slots=True)
class Area:
    """One namespace in a summary (or the namespaces put together when there are too many)."""

    name: str
    counts: Counter[str] = field(default_factory=Counter)  # vertices by type
    flagged: int = 0  # objects with findings
    severity: str | None = None  # the worst of them
    namespaces: int = 1
    #: Terms and budgets of this namespace that reach another namespace or a shared selector.
    outward: int = 0
    #: A shared selector whose matches span namespaces (its name): a vertex of its own.
    selector: str | None = None


@dataclass(frozen=True, slots=True)
class Summary:
    """A picture too large to draw, one vertex per namespace: :func:`summarise`."""

    areas: list[Area]
    #: (from namespace, to namespace or selector) → terms and budgets of the first reaching the
    #: second, by kind.
    links: dict[tuple[str, str], Counter[str]]
    vertices: int  # of the picture summarised
    edges: int
    limits: Limits
    links_left_out: int = 0


_RANK = {"error": 0, "warning": 1, "info": 2}


def _areas(
    graph: nx.MultiDiGraph[str], vertices: Iterable[str], severities: Mapping[str, str]
) -> dict[str, Area]:
    areas: dict[str, Area] = {}
    for vertex in vertices:
        data = graph.nodes[vertex]
        namespace = data.get("namespace")
        if namespace is None:
            continue
        area = areas.setdefault(str(namespace), Area(str(namespace)))
        area.counts[str(data.get("type"))] += 1
        worst = severities.get(vertex)
        if worst is not None:
            _merge(area, Area(area.name, flagged=1, severity=worst, namespaces=0))
    return areas


def _merge(into: Area, area: Area) -> None:
    into.counts.update(area.counts)
    into.flagged += area.flagged
    if area.severity is not None and (into.severity is None or _RANK[area.severity] < _RANK[into.severity]):
        into.severity = area.severity


def summarise(
    graph: nx.MultiDiGraph[str],
    vertices: Collection[str],
    severities: Mapping[str, str],
    edges: int,
    limits: Limits,
) -> Summary:
    """``vertices`` of ``graph`` (and the edges between them) summarised per namespace, within
    ``limits``: above them, the namespaces with the fewest vertices are put together in one
    vertex, and the fewest-counted links are left out. ``severities``: the worst severity of
    the findings on each vertex that has some."""
    drawn = set(vertices)
    nodes = graph.nodes
    areas = _areas(graph, vertices, severities)
    names = sorted(areas)
    if limits.vertices and len(names) > limits.vertices:
        keep = limits.vertices - 1
        largest = sorted(names, key=lambda n: (-sum(areas[n].counts.values()), n))[:keep]
        other = Area(f"{len(names) - keep} other namespaces", namespaces=len(names) - keep)
        for name in names:
            if name not in largest:
                _merge(other, areas.pop(name))
        names = sorted(largest)
        areas[other.name] = other
    kept = set(names)
    other_name = next((area.name for area in areas.values() if area.namespaces > 1), "")

    def area_of(vertex: str) -> str:
        namespace = str(nodes[vertex].get("namespace"))
        return namespace if namespace in kept else other_name

    hubs = _hubs(graph, drawn, area_of)
    reached: set[tuple[str, str, str, int]] = set()
    for source, target, data in graph.edges(data=True):
        if data["kind"] == RELATION_SELECTS or source not in drawn or target not in drawn:
            continue
        if target in hubs:
            targets = {target}
        elif nodes[target].get("type") == "selector":
            targets = {area_of(member) for member in graph.successors(target) if member in drawn}
        else:
            targets = {area_of(target)}
        for into in targets:
            reached.add((area_of(source), into, str(data["kind"]), id(data["relation"])))
    links: dict[tuple[str, str], Counter[str]] = {}
    outward: dict[str, set[int]] = {}
    for source, into, kind, relation in reached:
        links.setdefault((source, into), Counter())[kind] += 1
        if source != into:
            outward.setdefault(source, set()).add(relation)
    for name, relations in outward.items():
        areas[name].outward = len(relations)
    ordered = sorted(links)
    left_out = 0
    if limits.edges and len(ordered) > limits.edges:
        ordered = sorted(sorted(ordered, key=lambda pair: (-links[pair].total(), pair))[: limits.edges])
        left_out = len(links) - len(ordered)
    listed = [areas[name] for name in names]
    listed += [area for area in areas.values() if area.namespaces > 1] + list(hubs.values())
    return Summary(
        areas=listed,
        links={pair: links[pair] for pair in ordered},
        vertices=len(drawn),
        edges=edges,
        limits=limits,
        links_left_out=left_out,
    )


def _hubs(graph: nx.MultiDiGraph[str], drawn: set[str], area_of: Callable[[str], str]) -> dict[str, Area]:
    """The drawn selector vertices whose drawn matches span namespaces: vertices of a summary."""
    hubs: dict[str, Area] = {}
    for vertex, data in graph.nodes(data=True):
        if data.get("type") != "selector" or vertex not in drawn:
            continue
        members = [member for member in graph.successors(vertex) if member in drawn]
        spread = {area_of(member) for member in members}
        if len(spread) > 1:
            hubs[vertex] = Area(vertex, namespaces=len(spread), selector=str(data["name"]))
            hubs[vertex].counts["match"] = len(members)
    return hubs
