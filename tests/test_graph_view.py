"""``kaffinity graph --focus/--depth``, ``--findings-only`` and the summary above the limits
(``kaffinity/graph/view.py``): compared by vertex ids and edges, not by wording."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from .kit import budget, manifest, run, term, workload

ZONE = "topology.kubernetes.io/zone"

#: shop: web -x-> api --> db <-- budget; other: api --> cache; lone <-- budget lone; orphan's
#: affinity matches nothing (affinity-no-match); batch: 17 workloads a selector vertex stands
#: for, kept away from by sweeper.
OBJECTS = [
    workload("web", "shop", anti=[term({"app": "api"}, ZONE)]),
    workload("api", "shop", affinity=[term({"app": "db"}, ZONE)]),
    workload("db", "shop"),
    budget("db-pdb", "shop", {"app": "db"}, max_unavailable=1),
    workload("api", "other", affinity=[term({"app": "cache"}, ZONE)]),
    workload("cache", "other"),
    workload("lone", "other"),
    budget("lone", "other", max_unavailable=1),
    workload("orphan", "other", affinity=[term({"app": "nothing"}, ZONE)]),
    *(workload(f"job-{n}", "batch", {"app": f"job-{n}", "tier": "batch"}) for n in range(17)),
    workload("sweeper", "batch", anti=[term({"tier": "batch"}, ZONE)]),
]


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    path = tmp_path / "all.yaml"
    path.write_text(manifest(OBJECTS, indent=2))
    return path


def _json(path: Path, *args: str) -> dict[str, Any]:
    result = run("graph", "--no-config", "--format", "json", *args, str(path))
    assert result.returncode == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def _ids(document: dict[str, Any]) -> set[str]:
    return {node["id"] for node in document["nodes"]}


def _edges(document: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(edge["source"], edge["target"], edge["kind"]) for edge in document["edges"]}


def _error(path: Path, *args: str) -> str:
    result = run("graph", "--no-config", *args, str(path))
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kaffinity: error: --focus "), result.stderr
    return lines[0]


WEB = {"Deployment/shop/web", "Deployment/shop/api"}


@pytest.mark.parametrize("name", ["Deployment/shop/web", "deployment/shop/web", "shop/web", "web"])
def test_focus_by_each_name_form(manifests: Path, name: str) -> None:
    document = _json(manifests, "--focus", name)
    assert _ids(document) == WEB
    assert _edges(document) == {("Deployment/shop/web", "Deployment/shop/api", "anti-affinity")}
    graph = document["graph"]
    assert graph["focus"] == [name] and graph["depth"] == 1 and graph["findings_only"] is False
    total = len(_json(manifests)["nodes"])
    assert graph["left_out"] == total - 2


def test_depth_follows_relations_in_both_directions(manifests: Path) -> None:
    assert _ids(_json(manifests, "--focus", "shop/web", "--depth", "0")) == {"Deployment/shop/web"}
    assert _ids(_json(manifests, "--focus", "shop/web", "--depth", "2")) == WEB | {"Deployment/shop/db"}
    deep = _ids(_json(manifests, "--focus", "shop/web", "--depth", "3"))
    assert deep == WEB | {"Deployment/shop/db", "PodDisruptionBudget/shop/db-pdb"}
    # from the middle, both ways
    middle = _ids(_json(manifests, "--focus", "shop/api"))
    assert middle == WEB | {"Deployment/shop/db"}
    # several --focus: the union of their neighbourhoods
    both = _ids(_json(manifests, "--focus", "shop/web", "--focus", "other/cache", "--depth", "1"))
    assert both == WEB | {"Deployment/other/cache", "Deployment/other/api"}


def test_a_selector_vertex_is_crossed_not_counted(manifests: Path) -> None:
    document = _json(manifests, "--focus", "batch/job-3")
    selector = next(node["id"] for node in document["nodes"] if node["type"] == "selector")
    # the term's owner is a neighbour, the selector's other members are not
    assert _ids(document) == {"Deployment/batch/job-3", "Deployment/batch/sweeper", selector}
    assert _edges(document) == {
        ("Deployment/batch/sweeper", selector, "anti-affinity"),
        (selector, "Deployment/batch/job-3", "selects"),
    }
    owner = _ids(_json(manifests, "--focus", "sweeper"))
    assert {f"Deployment/batch/job-{n}" for n in range(17)} | {"Deployment/batch/sweeper", selector} == owner


def test_focus_on_a_namespace(manifests: Path) -> None:
    other = {
        "Deployment/other/api",
        "Deployment/other/cache",
        "Deployment/other/lone",
        "Deployment/other/orphan",
        "PodDisruptionBudget/other/lone",
    }
    assert _ids(_json(manifests, "--focus", "ns:other")) == other
    # a bare word that names no workload is a namespace
    assert _ids(_json(manifests, "--focus", "other", "--depth", "0")) == other
    shop = _ids(_json(manifests, "--focus", "ns:shop", "--depth", "0"))
    assert shop == WEB | {"Deployment/shop/db", "PodDisruptionBudget/shop/db-pdb"}


def test_focus_not_found_or_ambiguous_is_one_line_and_exit_2(manifests: Path) -> None:
    ambiguous = _error(manifests, "--focus", "api")
    assert "Deployment/other/api" in ambiguous and "Deployment/shop/api" in ambiguous
    missing = _error(manifests, "--focus", "wbe")
    assert missing.endswith("did you mean web?")
    assert "did you mean" not in _error(manifests, "--focus", "zzzzzz")
    assert _error(manifests, "--focus", "ns:shp").endswith("did you mean ns:shop?")
    _error(manifests, "--focus", "Deployment/shop/nope", "--format", "json")


def test_findings_only(manifests: Path) -> None:
    document = _json(manifests, "--findings-only")
    assert "Deployment/other/orphan" in _ids(document)
    assert all(node.get("findings") for node in document["nodes"] if node["type"] != "selector")
    assert "Deployment/shop/web" not in _ids(document)
    assert document["graph"]["findings_only"] is True and document["graph"]["depth"] == 0
    # with their neighbours
    around = _json(manifests, "--findings-only", "--depth", "1", "--min-severity", "warning")
    assert "Deployment/other/orphan" in _ids(around)
    assert around["graph"]["min_severity"] == "warning"
    # with a focus: the objects with findings of its neighbourhood, and the focused ones
    focused = _json(manifests, "--findings-only", "--focus", "ns:other")
    assert _ids(focused) >= {"Deployment/other/orphan"}
    assert _ids(focused) <= _ids(document) | {
        "Deployment/other/api",
        "Deployment/other/cache",
        "Deployment/other/lone",
        "PodDisruptionBudget/other/lone",
    }


def test_focused_pictures_say_what_they_leave_out(manifests: Path) -> None:
    dot = run("graph", "--no-config", "--format", "dot", "--focus", "shop/web", str(manifests))
    assert dot.returncode == 0 and dot.stderr == ""
    assert re.findall(r'^\s+"([^"]+)" \[label', dot.stdout, re.M) == [
        "Deployment/shop/api",
        "Deployment/shop/web",
    ]
    assert re.search(
        r"^  // focus shop/web at depth 1: [\d,]+ of [\d,]+ vertices left out$", dot.stdout, re.M
    )
    mermaid = run("graph", "--no-config", "--focus", "shop/web", str(manifests))
    assert re.search(
        r"^  %% focus shop/web at depth 1: [\d,]+ of [\d,]+ vertices left out$", mermaid.stdout, re.M
    )
    assert len(re.findall(r"^\s+n\d+\[", mermaid.stdout, re.M)) == 2


def _summary_vertices(text: str) -> list[str]:
    return re.findall(r'^  a\d+ \[label="([^"]+)"', text, re.M)


def test_above_the_limit_a_summary_per_namespace(manifests: Path) -> None:
    result = run("graph", "--no-config", "--format", "dot", "--max-vertices", "5", str(manifests))
    assert result.returncode == 0
    (note,) = result.stderr.splitlines()
    assert note.startswith("kaffinity: note: ") and "--focus" in note and "--findings-only" in note
    labels = _summary_vertices(result.stdout)
    assert [label.split(":")[0] for label in labels] == [
        "namespace batch",
        "namespace other",
        "namespace shop",
    ]
    assert "namespace shop: 3 workloads, 1 budget" in labels[2]
    links = re.findall(r'^  (a\d+) -> (a\d+) \[.*xlabel="([^"]+)"', result.stdout, re.M)
    assert ("a2", "a2", "affinity 1, anti-affinity 1, pdb 1") in links  # shop within itself
    assert ("a0", "a0", "anti-affinity 1") in links  # sweeper's one term, not 17
    # Mermaid likewise; JSON is never summarised
    mermaid = run("graph", "--no-config", "--max-vertices", "5", str(manifests))
    assert len(re.findall(r'^  a\d+\["namespace ', mermaid.stdout, re.M)) == 3
    assert mermaid.stdout.startswith("flowchart LR\n  %% ")
    whole = _json(manifests, "--max-vertices", "5")
    assert len(whole["nodes"]) == len(OBJECTS) + 1 and whole["graph"]["left_out"] == 0
    # under the limit: drawn whole, no note
    drawn = run("graph", "--no-config", "--format", "dot", "--max-vertices", "0", str(manifests))
    assert drawn.stderr == "" and not _summary_vertices(drawn.stdout)


def test_the_summary_keeps_within_the_limits(manifests: Path) -> None:
    args = ("graph", "--no-config", "--format", "dot", "--max-vertices", "2", "--max-edges", "1")
    result = run(*args, str(manifests))
    labels = _summary_vertices(result.stdout)
    # the largest namespace and the others together
    assert [label.split(":")[0] for label in labels] == ["namespace batch", "2 other namespaces"]
    assert len(re.findall(r"^  a\d+ -> a\d+ ", result.stdout, re.M)) == 1
    assert re.search(r"^  // 1 of 2 links .* not drawn$", result.stdout, re.M)
    # a focus too large is summarised as well
    focused = run(
        "graph", "--no-config", "--format", "dot", "--focus", "sweeper", "--max-vertices", "5", str(manifests)
    )
    assert _summary_vertices(focused.stdout) == ["namespace batch: 18 workloads"]
    assert "focus sweeper at depth 1" in focused.stderr


def test_a_mermaid_summary_fits_the_text_limit() -> None:
    from kaffinity.config import Settings
    from kaffinity.context import Context
    from kaffinity.graph.picture import draw
    from kaffinity.graph.view import Limits
    from kaffinity.load.parse import parse

    graph = Context([parse("all.yaml", manifest(OBJECTS))], Settings()).graph
    links = re.compile(r"^  a\d+ --", re.M)
    full, note = draw(graph, [], "mermaid", None, Limits(vertices=5))
    assert note is not None and len(links.findall(full)) == 3
    short, _ = draw(graph, [], "mermaid", None, Limits(vertices=5, text=len(full) - 1))
    assert len(short) < len(full) and 0 < len(links.findall(short)) < 3
    assert "links (those with the fewest terms) not drawn" in short


def test_a_workload_before_a_budget_of_the_same_name(manifests: Path) -> None:
    assert _ids(_json(manifests, "--focus", "other/lone", "--depth", "0")) == {"Deployment/other/lone"}
    assert _ids(_json(manifests, "--focus", "lone")) == {
        "Deployment/other/lone",
        "PodDisruptionBudget/other/lone",
    }
    budget = _json(manifests, "--focus", "PodDisruptionBudget/other/lone", "--depth", "0")
    assert _ids(budget) == {"PodDisruptionBudget/other/lone"}


@pytest.mark.parametrize(
    "args", [("--depth", "1"), ("--min-severity", "error"), ("--focus", "web", "--min-severity", "error")]
)
def test_options_that_need_another(manifests: Path, args: tuple[str, ...]) -> None:
    result = run("graph", "--no-config", *args, str(manifests))
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("kaffinity: error: --") and line.endswith("--findings-only")


def test_a_summary_edge_takes_its_most_counted_kind_whatever_the_counting_order() -> None:
    """Kinds counted as often: the first by name, never the first counted (the counts come from a
    set, whose order followed the hash seed: the same graph was drawn in two colours)."""
    from collections import Counter

    from kaffinity.graph.picture import _link_label

    tie = Counter({"spread": 2, "pdb": 2, "affinity": 1})
    assert _link_label(tie) == ("affinity 1, pdb 2, spread 2", "pdb")
    assert _link_label(Counter({"pdb": 2, "spread": 2}))[1] == "pdb"
    assert _link_label(Counter({"pdb": 1, "spread": 2}))[1] == "spread"
