"""The affinity graph: upstream matching (``AffinityTerm.Matches`` in kubernetes
``pkg/scheduler/framework/types.go``), the index, shared selector nodes, placement and deadlock
cycles, existing pods from a cluster file, and `kaffinity graph`."""

from __future__ import annotations

import functools
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kaffinity.config import Settings
from kaffinity.context import Context
from kaffinity.graph import affinity as graph_module
from kaffinity.graph.affinity import AffinityGraph
from kaffinity.graph.members import (
    RELATION_ANTI_AFFINITY,
    RELATION_PDB,
    RELATION_SELECTS,
    RELATION_SPREAD,
    within,
)
from kaffinity.graph.picture import render_mermaid
from kaffinity.load.files import load
from kaffinity.load.parse import parse
from kaffinity.simulate.cluster import cluster_from

from . import kit
from .kit import position, run

#: The graph's workloads: StatefulSets of two replicas unless said otherwise.
workload = functools.partial(kit.workload, kind="StatefulSet", replicas=2, replicas_first=True)


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def term(selector: dict[str, Any] | None, key: str = "kubernetes.io/hostname", **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"topologyKey": key, **more}
    if selector is not None:
        out["labelSelector"] = selector
    return out


def build(
    *objects: dict[str, Any], cluster: list[dict[str, Any]] | None = None, **settings: Any
) -> AffinityGraph:
    text = kit.manifest(objects)
    files = [parse("input.yaml", text)]
    declared = None
    if cluster is not None:
        declared = cluster_from([parse("cluster.yaml", kit.manifest(cluster))])
    return Context(files, Settings(**settings), declared).graph


def matched(
    graph: AffinityGraph, owner: str, kind: str = RELATION_ANTI_AFFINITY
) -> tuple[set[str], set[str]]:
    (relation,) = graph.terms(owner, kind)
    return set(relation.matches), set(relation.maybe)


def test_a_term_without_namespaces_reaches_its_own_namespace_only() -> None:
    g = build(
        workload("a", "one", {"app": "a"}, anti=[term({"matchLabels": {"tier": "x"}})]),
        workload("b", "one", {"app": "b", "tier": "x"}),
        workload("c", "two", {"app": "c", "tier": "x"}),
    )
    assert matched(g, "StatefulSet/one/a") == ({"StatefulSet/one/b"}, set())


def test_listed_namespaces_replace_the_own_namespace() -> None:
    """`namespaces: [two]` is exactly namespace two: the owner's own is not added
    (``getNamespacesFromPodAffinityTerm``)."""
    g = build(
        workload(
            "a",
            "one",
            {"app": "a", "tier": "x"},
            anti=[term({"matchLabels": {"tier": "x"}}, namespaces=["two"])],
        ),
        workload("c", "two", {"app": "c", "tier": "x"}),
    )
    assert matched(g, "StatefulSet/one/a") == ({"StatefulSet/two/c"}, set())


def test_empty_namespace_selector_reaches_every_namespace() -> None:
    g = build(
        workload(
            "a",
            "one",
            {"app": "a", "tier": "x"},
            anti=[term({"matchLabels": {"tier": "x"}}, namespaceSelector={})],
        ),
        workload("c", "two", {"app": "c", "tier": "x"}),
        workload("d", "three", {"app": "d"}),
    )
    assert matched(g, "StatefulSet/one/a") == ({"StatefulSet/one/a", "StatefulSet/two/c"}, set())
    (relation,) = g.terms("StatefulSet/one/a")
    assert relation.all_namespaces and relation.scope == "all namespaces"


def test_namespace_selector_uses_the_declared_namespace_labels_and_is_unsure_about_the_others() -> None:
    """Declared Namespaces are matched on their labels; an undeclared one only on its name label,
    so a term that might reach it is a *maybe*; `namespaces` and the selector are a union."""
    g = build(
        namespace("prod-a", env="prod"),
        namespace("dev", env="dev"),
        workload(
            "a",
            "ops",
            {"app": "a"},
            anti=[
                term(
                    {"matchLabels": {"tier": "x"}},
                    namespaces=["listed"],
                    namespaceSelector={"matchLabels": {"env": "prod"}},
                )
            ],
        ),
        workload("p", "prod-a", {"app": "p", "tier": "x"}),
        workload("d", "dev", {"app": "d", "tier": "x"}),
        workload("u", "undeclared", {"app": "u", "tier": "x"}),
        workload("l", "listed", {"app": "l", "tier": "x"}),
    )
    assert matched(g, "StatefulSet/ops/a") == (
        {"StatefulSet/prod-a/p", "StatefulSet/listed/l"},
        {"StatefulSet/undeclared/u"},
    )


def test_the_automatic_name_label_is_known_for_every_namespace() -> None:
    g = build(
        workload(
            "a",
            "ops",
            {"app": "a"},
            anti=[term({}, namespaceSelector={"matchLabels": {"kubernetes.io/metadata.name": "web"}})],
        ),
        workload("w", "web", {"app": "w"}),
        workload("o", "other", {"app": "o"}),
    )
    assert matched(g, "StatefulSet/ops/a") == ({"StatefulSet/web/w"}, set())


def test_nil_selector_matches_nothing_and_empty_selector_everything_in_scope() -> None:
    g = build(
        workload("a", "one", {"app": "a"}, anti=[term(None)]),
        workload("b", "one", {"app": "b"}, anti=[term({})]),
        workload("c", "two", {"app": "c"}),
    )
    assert matched(g, "StatefulSet/one/a") == (set(), set())
    assert matched(g, "StatefulSet/one/b") == ({"StatefulSet/one/a", "StatefulSet/one/b"}, set())


def test_match_label_keys_keep_each_deployment_to_its_own_pods() -> None:
    """The merged selector adds `pod-template-hash In [<this revision>]`, whose value differs per
    Deployment: two Deployments sharing `app: web` no longer match each other's pods."""
    scoped = term({"matchLabels": {"app": "web"}}, matchLabelKeys=["pod-template-hash"])
    g = build(
        workload("blue", "one", {"app": "web", "color": "blue"}, kind="Deployment", anti=[scoped]),
        workload(
            "green",
            "one",
            {"app": "web", "color": "green"},
            kind="Deployment",
            anti=[term({"matchLabels": {"app": "web"}})],
        ),
    )
    assert matched(g, "Deployment/one/blue") == ({"Deployment/one/blue"}, set())
    assert matched(g, "Deployment/one/green") == ({"Deployment/one/blue", "Deployment/one/green"}, set())


def test_spread_and_disruption_budgets_count_their_own_namespace() -> None:
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "x", "namespace": "one"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"tier": "x"}}},
    }
    spread = {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"tier": "x"}},
    }
    g = build(
        workload("a", "one", {"app": "a", "tier": "x"}, spread=[spread]),
        workload("b", "two", {"app": "b", "tier": "x"}),
        pdb,
    )
    (spreading,) = g.terms("StatefulSet/one/a", RELATION_SPREAD)
    assert set(spreading.matches) == {"StatefulSet/one/a"} and not spreading.required
    (budget,) = g.terms("PodDisruptionBudget/one/x", RELATION_PDB)
    assert set(budget.matches) == {"StatefulSet/one/a"}
    edges = {(u, v, d["kind"]) for u, v, d in g.graph.edges(data=True)}
    assert ("PodDisruptionBudget/one/x", "StatefulSet/one/a", RELATION_PDB) in edges


def test_a_term_matching_many_points_at_one_shared_selector_node() -> None:
    """Past FANOUT matches, terms point at a selector node; identical selectors share it, so the
    member edges exist once however many terms select the same pods."""
    count = graph_module.FANOUT + 4
    batch = [workload(f"job{i}", f"ns{i}", {"app": f"job{i}", "tier": "batch"}) for i in range(count)]
    away = term({"matchLabels": {"tier": "batch"}}, namespaceSelector={})
    owners = [workload(f"web{i}", "web", {"app": f"web{i}"}, preferred=[away]) for i in range(5)]
    g = build(*batch, *owners)
    selectors = [n for n, d in g.graph.nodes(data=True) if d["type"] == "selector"]
    assert len(selectors) == 1
    (node,) = selectors
    assert g.graph.nodes[node]["members"] == count
    assert g.graph.in_degree(node) == 5
    assert sum(1 for _, _, d in g.graph.out_edges(node, data=True) if d["kind"] == RELATION_SELECTS) == count
    assert g.graph.number_of_edges() == 5 + count
    assert len(g.terms("StatefulSet/web/web0", RELATION_ANTI_AFFINITY)[0].matches) == count
    drawn = render_mermaid(g, [])
    assert f'{{{{"selector tier=batch in all namespaces ({count} matches)"}}}}' in drawn
    assert drawn.count("-.-x") == 5 and drawn.count(" -.- ") == count  # 5 terms, members linked once


def test_matching_uses_the_index_not_every_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each term is compared only with the workloads carrying its required labels."""
    calls = 0
    real = graph_module.selector_matches

    def counting(*args: Any, **kwargs: Any) -> bool:
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(graph_module, "selector_matches", counting)
    n = 300
    build(
        *(
            workload(f"w{i}", "one", {"app": f"w{i}"}, anti=[term({"matchLabels": {"app": f"w{i}"}})])
            for i in range(n)
        )
    )
    assert calls == n  # one candidate per term: its own workload


def test_within_follows_the_topology_hierarchy() -> None:
    assert within("kubernetes.io/hostname", "topology.kubernetes.io/zone")
    assert within("topology.kubernetes.io/zone", "topology.kubernetes.io/region")
    assert within("failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone")
    assert not within("topology.kubernetes.io/zone", "kubernetes.io/hostname")
    assert within("rack", "rack") and not within("rack", "topology.kubernetes.io/zone")


def test_placement_finds_cycles_in_order_and_the_self_match_exception_breaks_them() -> None:
    need = lambda app: [term({"matchLabels": {"app": app}})]  # noqa: E731
    g = build(
        workload("a", "one", {"app": "a"}, affinity=need("b")),
        workload("b", "one", {"app": "b"}, affinity=need("c")),
        workload("c", "one", {"app": "c"}, affinity=need("a")),
        workload("d", "one", {"app": "d"}, affinity=need("a")),
        workload("e", "one", {"app": "e", "group": "g"}, affinity=[term({"matchLabels": {"group": "g"}})]),
        workload("f", "one", {"app": "f", "group": "g"}, affinity=need("e")),
    )
    assert g.deadlocks() == [["StatefulSet/one/a", "StatefulSet/one/b", "StatefulSet/one/c"]]
    placement = g.startable
    assert set(placement.stuck()) == {
        "StatefulSet/one/a",
        "StatefulSet/one/b",
        "StatefulSet/one/c",
        "StatefulSet/one/d",
    }
    assert "StatefulSet/one/e" in placement.self_match and "StatefulSet/one/f" in placement.placeable


def test_a_single_pod_must_match_every_required_affinity_term() -> None:
    g = build(
        workload(
            "a",
            "one",
            {"app": "a"},
            affinity=[term({"matchLabels": {"app": "b"}}), term({"matchLabels": {"app": "c"}})],
        ),
        workload("b", "one", {"app": "b"}),
        workload("c", "one", {"app": "c"}),
    )
    assert g.startable.candidates["StatefulSet/one/a"] == frozenset()
    assert g.startable.stuck() == ["StatefulSet/one/a"]


def test_existing_pods_are_grouped_and_satisfy_affinity() -> None:
    pod = lambda name, phase="Running", node="n1": {  # noqa: E731
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "one", "labels": {"app": "b"}},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]},
        "status": {"phase": phase},
    }
    cluster = [pod("b-0"), pod("b-1"), pod("b-old", phase="Succeeded"), pod("b-pending", node=None)]
    g = build(
        workload("a", "one", {"app": "a"}, affinity=[term({"matchLabels": {"app": "b"}})]),
        workload("x", "one", {"app": "x"}, affinity=[term({"matchLabels": {"app": "y"}})]),
        workload("y", "one", {"app": "y"}, affinity=[term({"matchLabels": {"app": "x"}})]),
        cluster=cluster,
    )
    groups = [m for m in g.members.values() if m.existing]
    assert [len(m.pods) for m in groups] == [2]
    assert str(groups[0]) == "2 existing pods in one (app=b)"
    assert "StatefulSet/one/a" in g.startable.placeable
    assert g.deadlocks() == [["StatefulSet/one/x", "StatefulSet/one/y"]]


def test_edges_carry_kind_strength_key_scope_and_location() -> None:
    text = textwrap.dedent(
        """\
        apiVersion: apps/v1
        kind: StatefulSet
        metadata: {name: a, namespace: one}
        spec:
          serviceName: a
          selector: {matchLabels: {app: a}}
          template:
            metadata: {labels: {app: a}}
            spec:
              containers: [{name: c, image: x}]
              affinity:
                podAntiAffinity:
                  preferredDuringSchedulingIgnoredDuringExecution:
                    - weight: 40
                      podAffinityTerm:
                        labelSelector: {matchLabels: {app: a}}
                        topologyKey: topology.kubernetes.io/zone
        """
    )
    g = Context([parse("a.yaml", text)], Settings()).graph
    ((source, target, data),) = g.graph.edges(data=True)
    assert (source, target) == ("StatefulSet/one/a", "StatefulSet/one/a")
    assert data["kind"] == "anti-affinity" and data["required"] is False and data["weight"] == 40
    assert data["topology_key"] == "topology.kubernetes.io/zone" and data["scope"] == "namespace one"
    assert g.term_location(data["relation"]) == "a.yaml:15:15"  # the podAffinityTerm
    assert g.location("StatefulSet/one/a") == "a.yaml:3:12"  # metadata: {name: a, ...}


# --- kaffinity graph ---------------------------------------------------------------------------

PAIR = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: api, namespace: shop}
spec:
  serviceName: api
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: c, image: x}]
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: db}}
              topologyKey: topology.kubernetes.io/zone
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: c, image: x}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: lonely, namespace: shop}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: lonely, namespace: other}
spec:
  serviceName: lonely
  selector: {matchLabels: {app: lonely}}
  template:
    metadata: {labels: {app: lonely}}
    spec:
      containers: [{name: c, image: x}]
"""


def test_graph_command_draws_mermaid_grouped_by_namespace(tmp_path: Path) -> None:
    path = tmp_path / "pair.yaml"
    path.write_text(PAIR)
    result = run("graph", "--no-config", str(path))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "flowchart LR"
    assert '  subgraph ns0["namespace shop"]' in lines
    assert '    n0["StatefulSet api x1"]' in lines
    assert '  n0 ==>|"affinity topology.kubernetes.io/zone"| n1' in lines
    assert "  %% 1 workload(s) without relations not shown" in lines
    assert not any("lonely" in line for line in lines)


def test_graph_command_highlights_findings_and_writes_dot_and_json(tmp_path: Path) -> None:
    path = tmp_path / "pair.yaml"
    path.write_text(
        PAIR.replace("app: db}}\n              topologyKey", "app: nothing}}\n              topologyKey")
    )
    dot = run("graph", "--no-config", "--format", "dot", str(path))
    assert dot.returncode == 0, dot.stderr
    assert dot.stdout.startswith("digraph kaffinity {") and dot.stdout.rstrip().endswith("}")
    out = tmp_path / "graph.json"
    result = run("graph", "--no-config", "--format", "json", "--output", str(out), str(path))
    assert result.returncode == 0, result.stderr
    document = json.loads(out.read_text())
    assert document["directed"] and document["multigraph"]
    ids = [node["id"] for node in document["nodes"]]
    # (namespace, kind, name) order, not the order of the file
    assert ids == ["StatefulSet/other/lonely", "StatefulSet/shop/api", "StatefulSet/shop/db"]
    assert document["edges"] == []  # the selector now matches nothing


def test_graph_command_reports_bad_input_and_a_missing_cluster(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(PAIR)
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n")
    result = run("graph", "--no-config", str(good), str(bad))
    assert result.returncode == 2
    assert "bad.yaml:" in result.stderr
    assert "flowchart LR" in result.stdout
    missing = run("graph", "--no-config", "--cluster", str(tmp_path / "nope.yaml"), str(good))
    assert missing.returncode == 2 and "cluster file not found" in missing.stderr


def test_lint_reads_a_cluster_list(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [
                    {
                        "apiVersion": "v1",
                        "kind": "Node",
                        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
                    },
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": "db-0", "namespace": "shop", "labels": {"app": "db"}},
                        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]},
                    },
                ],
            }
        )
    )
    declared = cluster_from(load([str(cluster)]))
    assert [node.ref.name for node in declared.nodes] == ["n1"] and declared.has_pods


# --- lint --cluster / --closed, and the same from .kaffinity.yaml -------------------------------

NEEDS_DB = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: api, namespace: shop}
spec:
  serviceName: api
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: c, image: x}]
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: db}}
              topologyKey: kubernetes.io/hostname
"""

RUNNING_DB = """\
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Node
    metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
  - apiVersion: v1
    kind: Pod
    metadata: {name: db-0, namespace: shop, labels: {app: db}}
    spec: {nodeName: n1, containers: [{name: c, image: x}]}
"""


#: Where affinity-no-match reports NEEDS_DB's term.
TERM = position(NEEDS_DB, "labelSelector")


def _lint_cli(*args: str, cwd: Path) -> tuple[int, list[tuple[str, int, int, str]], str]:
    """The exit code, the findings as (rule, line, column, severity), and stderr."""
    completed = run("lint", "--format", "json", "--select", "affinity-no-match", *args, cwd=cwd)
    findings = json.loads(completed.stdout)["findings"] if completed.stdout else []
    found = [(f["rule"], f["line"], f["column"], f["severity"]) for f in findings]
    return completed.returncode, found, completed.stderr


def test_lint_cluster_and_closed_flags(tmp_path: Path) -> None:
    (tmp_path / "api.yaml").write_text(NEEDS_DB)
    (tmp_path / "cluster.yaml").write_text(RUNNING_DB)
    assert _lint_cli("--no-config", "api.yaml", cwd=tmp_path)[:2] == (
        0,
        [("affinity-no-match", *TERM, "warning")],
    )
    assert _lint_cli("--no-config", "--closed", "api.yaml", cwd=tmp_path)[:2] == (
        1,
        [("affinity-no-match", *TERM, "error")],
    )
    # The running db pod satisfies the term.
    assert _lint_cli("--no-config", "--cluster", "cluster.yaml", "api.yaml", cwd=tmp_path)[:2] == (0, [])


def test_cluster_and_closed_from_the_config_file(tmp_path: Path) -> None:
    """`cluster:` is relative to the config file's folder; `--open` overrides `closed: true`."""
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "api.yaml").write_text(NEEDS_DB)
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "cluster.yaml").write_text(RUNNING_DB)
    (tmp_path / ".kaffinity.yaml").write_text("closed: true\n")
    assert _lint_cli("deploy", cwd=tmp_path)[:2] == (1, [("affinity-no-match", *TERM, "error")])
    assert _lint_cli("--open", "deploy", cwd=tmp_path)[:2] == (0, [("affinity-no-match", *TERM, "warning")])
    (tmp_path / ".kaffinity.yaml").write_text("closed: true\ncluster: state/cluster.yaml\n")
    assert _lint_cli(".", cwd=tmp_path / "deploy")[:2] == (0, [])  # config found above, path from it


def test_a_broken_or_missing_cluster_file_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "api.yaml").write_text(NEEDS_DB)
    (tmp_path / "cluster.yaml").write_text("kind: [unclosed\n")
    code, found, stderr = _lint_cli("--no-config", "--cluster", "cluster.yaml", "api.yaml", cwd=tmp_path)
    completed = run("lint", "--no-config", "--cluster", "cluster.yaml", "api.yaml", cwd=tmp_path)
    assert code == 2 and ("affinity-no-match", *TERM, "warning") in found  # the manifests are still linted
    assert "cluster.yaml:2:1: error [parse-error]" in completed.stdout
    code, found, stderr = _lint_cli("--no-config", "--cluster", "absent.yaml", "api.yaml", cwd=tmp_path)
    assert code == 2 and stderr.strip() == "kaffinity: error: absent.yaml: cluster file not found"
