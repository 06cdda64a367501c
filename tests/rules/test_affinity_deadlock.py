"""The rule ``affinity-deadlock`` (kaffinity/rules/affinity_deadlock.py): workloads whose required pod
affinity waits on each other in a cycle, none able to start first, reported at each member's term
with the cycle from it.

Upstream: the InterPodAffinity Filter (``satisfyPodAffinity`` with the self-match exception in
``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go``); the 2015 design,
kubernetes/design-proposals-archive ``scheduling/podaffinity.md``, "Examples > Affinity" (first
pod).

The cycle (who waits on whom) exists only as the message's wording: where a test reads it, the
wording is the subject; each member's finding is asserted as (rule, line, column).
"""

from __future__ import annotations

import json
from pathlib import Path

from kaffinity.config import Settings
from kaffinity.engine import lint
from kaffinity.findings import Severity
from kaffinity.load.files import load
from kaffinity.load.parse import parse
from kaffinity.rules import BY_NAME
from kaffinity.simulate.cluster import cluster_from

from ..kit import lint_paths
from .conflict_inputs import (
    DEADLOCK,
    HOST,
    ZONE,
    at,
    block_workload,
    found,
    lint_graph,
    stream,
    term,
    term_at,
)

APP = {"matchLabels": {"app": "a"}}
BPP = {"matchLabels": {"app": "b"}}
CPP = {"matchLabels": {"app": "c"}}


# -- affinity-deadlock ---------------------------------------------------------------------------

PAIR = stream(
    block_workload("a", kind="Deployment", affinity=[term("a-needs-b", HOST, BPP)]),
    block_workload("b", affinity=[term("b-needs-a", HOST, APP)]),
)


def test_deadlock_pair_reports_both_members_with_the_cycle_from_each() -> None:
    result = lint_graph(PAIR)
    assert found(result) == at(PAIR, DEADLOCK, "a-needs-b", "b-needs-a")
    first, second = result.findings
    assert first.message == (
        "required pod affinity deadlock: Deployment/shop/a needs a pod of StatefulSet/shop/b, which "
        "needs a pod of Deployment/shop/a: neither can be scheduled first (no pod of the cycle matches "
        "its own terms)"
    )
    assert second.message.startswith(
        "required pod affinity deadlock: StatefulSet/shop/b needs a pod of Deployment/shop/a, which"
    )
    assert first.severity is Severity.ERROR and first.category == "graph"
    assert [(r.span.line, r.span.column) for r in first.related if r.span] == [term_at(PAIR, "b-needs-a")]
    assert "StatefulSet/shop/b needs a pod of Deployment/shop/a" in first.related[0].message
    assert [(r.span.line, r.span.column) for r in second.related if r.span] == [term_at(PAIR, "a-needs-b")]


def test_deadlock_quiet_when_one_member_matches_its_own_terms() -> None:
    """The self-match exception (``satisfyPodAffinity``): b's first pod starts, a follows."""
    text = stream(
        block_workload("a", labels={"app": "a", "stack": "shop"}, affinity=[term("a", HOST, BPP)]),
        block_workload(
            "b",
            labels={"app": "b", "stack": "shop"},
            affinity=[term("b", HOST, {"matchLabels": {"stack": "shop"}})],
        ),
    )
    assert found(lint_graph(text)) == []


def test_deadlock_cycle_of_three_and_a_waiter() -> None:
    text = stream(
        block_workload("a", affinity=[term("a", ZONE, BPP)]),
        block_workload("b", affinity=[term("b", ZONE, CPP)]),
        block_workload("c", affinity=[term("c", ZONE, APP)]),
        block_workload("w", affinity=[term("w", HOST, APP)]),
        block_workload("w2", affinity=[term("w2", HOST, {"matchLabels": {"app": "w"}})]),
    )
    result = lint_graph(text, DEADLOCK)
    assert found(result) == at(text, DEADLOCK, "a", "b", "c", "w", "w2")
    by_line = {(f.line, f.column): f for f in result.findings}
    c = by_line[term_at(text, "c")]
    assert c.message.startswith(
        "required pod affinity deadlock: StatefulSet/shop/c needs a pod of StatefulSet/shop/a, which needs "
        "a pod of StatefulSet/shop/b, which needs a pod of StatefulSet/shop/c: none can be scheduled first"
    )
    assert sorted((r.span.line, r.span.column) for r in c.related if r.span) == [
        term_at(text, "a"),
        term_at(text, "b"),
    ]
    waiter = by_line[term_at(text, "w")]
    assert waiter.message.startswith(
        "required pod affinity waits on a deadlock: StatefulSet/shop/w needs a pod of StatefulSet/shop/a, "
        "which can never start: StatefulSet/shop/a needs a pod of StatefulSet/shop/b"
    )
    assert len(waiter.related) == 3
    # w2 waits on w, which waits on the cycle: named too.
    assert "StatefulSet/shop/w2 needs a pod of StatefulSet/shop/w, which can never start" in (
        by_line[term_at(text, "w2")].message
    )


def test_deadlock_member_of_a_larger_knot_is_reported_as_waiting() -> None:
    """b could follow a or c, and both need b: graph.deadlocks() gives one cycle per strongly
    connected knot; the knot's member outside that cycle is reported as waiting on it."""
    a_or_c = {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "c"]}]}
    text = stream(
        block_workload("a", affinity=[term("a", HOST, BPP)]),
        block_workload("b", affinity=[term("b", HOST, a_or_c)]),
        block_workload("c", affinity=[term("c", HOST, BPP)]),
    )
    result = lint_graph(text, DEADLOCK)
    assert found(result) == at(text, DEADLOCK, "a", "b", "c")
    # Which cycle of the knot deadlocks() picks, (a b) or (b c), follows set order (see the report).
    kinds = sorted(f.message.split(":")[0] for f in result.findings)
    assert kinds == ["required pod affinity deadlock"] * 2 + ["required pod affinity waits on a deadlock"]


def test_deadlock_ignores_workloads_stuck_behind_a_term_that_matches_nothing() -> None:
    """Those are affinity-no-match's roots; nor is a workload that can follow one that starts."""
    text = stream(
        block_workload("ghostly", affinity=[term("ghost", HOST, {"matchLabels": {"app": "nobody"}})]),
        block_workload("follower", affinity=[term("follower", HOST, {"matchLabels": {"app": "ghostly"}})]),
        block_workload("db"),
        block_workload("api", affinity=[term("api", HOST, {"matchLabels": {"app": "db"}})]),
    )
    assert found(lint_graph(text, DEADLOCK)) == []


def test_deadlock_reported_at_the_term_its_own_pods_do_not_match() -> None:
    """a's first term matches a itself (and b); the second, b only, is what keeps a waiting."""
    text = stream(
        block_workload(
            "a",
            labels={"app": "a", "stack": "shop"},
            affinity=[term("a-stack", HOST, {"matchLabels": {"stack": "shop"}}), term("a-b", HOST, BPP)],
        ),
        block_workload("b", labels={"app": "b", "stack": "shop"}, affinity=[term("b-a", HOST, APP)]),
    )
    assert found(lint_graph(text)) == at(text, DEADLOCK, "a-b", "b-a")


def test_deadlock_waiter_may_follow_a_workload_that_can_start() -> None:
    """w could follow a (deadlocked) or db (starts): db starts, so w is placeable."""
    text = stream(
        PAIR,
        block_workload("db", labels={"app": "a", "role": "db"}),
        block_workload("w", affinity=[term("w", HOST, APP)]),
    )
    assert found(lint_graph(text, DEADLOCK)) == []  # db also breaks a's cycle: b follows db


def test_deadlock_broken_by_existing_pods_of_the_cluster(tmp_path: Path) -> None:
    """A running pod labelled app=b (bound to a node) satisfies a, and then b follows a."""
    manifest = tmp_path / "apps.yaml"
    manifest.write_text(PAIR, encoding="utf-8")
    assert found(lint_paths(manifest, rules=[BY_NAME[DEADLOCK]])) == at(
        PAIR, DEADLOCK, "a-needs-b", "b-needs-a"
    )
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
                        "metadata": {"name": "node-1", "labels": {HOST: "node-1", ZONE: "z1"}},
                    },
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": "b-0", "namespace": "shop", "labels": {"app": "b"}},
                        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "x"}]},
                        "status": {"phase": "Running"},
                    },
                ],
            }
        ),
        encoding="utf-8",
    )
    assert found(lint_paths(manifest, rules=[BY_NAME[DEADLOCK]], cluster=str(cluster))) == []
    # A finished pod no longer counts (topology: Succeeded/Failed pods are dropped).
    data = json.loads(cluster.read_text(encoding="utf-8"))
    data["items"][1]["status"]["phase"] = "Succeeded"
    cluster.write_text(json.dumps(data), encoding="utf-8")
    assert len(lint_paths(manifest, rules=[BY_NAME[DEADLOCK]], cluster=str(cluster)).findings) == 2


def test_deadlock_existing_pods_in_another_namespace_do_not_help(tmp_path: Path) -> None:
    cluster_file = tmp_path / "cluster.yaml"
    cluster_file.write_text(
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: v1, kind: Node, metadata: {name: n1}}\n"
        "- apiVersion: v1\n  kind: Pod\n  metadata: {name: b-0, namespace: other, labels: {app: b}}\n"
        "  spec: {nodeName: n1, containers: [{name: c, image: x}]}\n",
        encoding="utf-8",
    )
    cluster = cluster_from(load([str(cluster_file)]))
    result = lint([parse("test.yaml", PAIR)], Settings(), [BY_NAME[DEADLOCK]], cluster=cluster)
    assert found(result) == at(PAIR, DEADLOCK, "a-needs-b", "b-needs-a")
    assert "and no existing pod matches them" in result.findings[0].message


def test_deadlock_severity_configured_wins() -> None:
    result = lint_graph(PAIR, DEADLOCK, severity={DEADLOCK: Severity.WARNING})
    assert found(result) == at(PAIR, DEADLOCK, "a-needs-b", "b-needs-a")
    assert {f.severity for f in result.findings} == {Severity.WARNING}
