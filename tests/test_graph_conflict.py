"""affinity-deadlock and affinity-conflict: required pod affinity that can never be satisfied.

Upstream: the InterPodAffinity Filter (``satisfyPodAffinity`` with the self-match exception,
``satisfyPodAntiAffinity``, ``satisfyExistingPodsAntiAffinity`` in
``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go``); the 2015 design,
kubernetes/design-proposals-archive ``scheduling/podaffinity.md``, "A comment on symmetry" and
"Examples > Affinity" (first pod).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from kaffinity.config import Settings
from kaffinity.engine import LintResult, lint
from kaffinity.findings import Severity
from kaffinity.load.files import load
from kaffinity.load.parse import parse
from kaffinity.rules import BY_NAME
from kaffinity.simulate.cluster import cluster_from

from .kit import EXAMPLES, keys, line_of, lint_paths, lint_text, only

DEADLOCK, CONFLICT = "affinity-deadlock", "affinity-conflict"
HOST, ZONE, REGION = "kubernetes.io/hostname", "topology.kubernetes.io/zone", "topology.kubernetes.io/region"


def term(tag: str, key: str, selector: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A pod (anti-)affinity term; ``tag`` ends up as a comment on its first line."""
    return {"tag": tag, "key": key, "selector": selector or {}, "extra": extra}


def workload(
    name: str,
    *,
    namespace: str = "shop",
    kind: str = "StatefulSet",
    labels: dict[str, str] | None = None,
    replicas: int = 1,
    affinity: Sequence[dict[str, Any]] = (),
    anti: Sequence[dict[str, Any]] = (),
) -> str:
    """A workload in block YAML, each term's first line tagged ``# <tag>`` to find its line."""
    labels = labels or {"app": name}
    lines = [
        "apiVersion: apps/v1",
        f"kind: {kind}",
        f"metadata: {{name: {name}, namespace: {namespace}}}",
        "spec:",
    ]
    if kind != "DaemonSet":
        lines.append(f"  replicas: {replicas}")
    if kind == "StatefulSet":
        lines.append(f"  serviceName: {name}")
    lines += [
        f"  selector: {{matchLabels: {json.dumps(labels)}}}",
        "  template:",
        f"    metadata: {{labels: {json.dumps(labels)}}}",
        "    spec:",
        "      containers: [{name: c, image: busybox}]",
    ]
    if affinity or anti:
        lines.append("      affinity:")
    for field, terms in (("podAffinity", affinity), ("podAntiAffinity", anti)):
        if not terms:
            continue
        lines += [f"        {field}:", "          requiredDuringSchedulingIgnoredDuringExecution:"]
        for t in terms:
            lines.append(f"            - labelSelector: {json.dumps(t['selector'])}  # {t['tag']}")
            lines.append(f"              topologyKey: {t['key']}")
            lines += [f"              {k}: {json.dumps(v)}" for k, v in t["extra"].items()]
    return "\n".join(lines) + "\n"


def namespace(name: str, labels: dict[str, str]) -> str:
    return f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {name}, labels: {json.dumps(labels)}}}\n"


def stream(*docs: str) -> str:
    return "---\n".join(docs)


def run(text: str, *rules: str, **settings: Any) -> LintResult:
    chosen = [BY_NAME[rule] for rule in rules or (DEADLOCK, CONFLICT)]
    return lint_text(text, rules=chosen, **settings)


def found(result: LintResult) -> list[tuple[str, int | None, int | None]]:
    return sorted(keys(result), key=str)


def term_at(text: str, tag: str) -> tuple[int, int]:
    """(line, column) of the term tagged ``# tag``: where its labelSelector starts."""
    line = line_of(text, f"# {tag}", ending=True)
    return line, text.splitlines()[line - 1].index("labelSelector") + 1


def at(text: str, rule: str, *tags: str) -> list[tuple[str, int | None, int | None]]:
    """The findings of ``rule`` expected at the terms with these tags, as :func:`found` lists them."""
    return sorted(((rule, *term_at(text, tag)) for tag in tags), key=str)


APP = {"matchLabels": {"app": "a"}}
BPP = {"matchLabels": {"app": "b"}}
CPP = {"matchLabels": {"app": "c"}}


# -- affinity-deadlock ---------------------------------------------------------------------------

PAIR = stream(
    workload("a", kind="Deployment", affinity=[term("a-needs-b", HOST, BPP)]),
    workload("b", affinity=[term("b-needs-a", HOST, APP)]),
)


def test_deadlock_pair_reports_both_members_with_the_cycle_from_each() -> None:
    result = run(PAIR)
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
        workload("a", labels={"app": "a", "stack": "shop"}, affinity=[term("a", HOST, BPP)]),
        workload(
            "b",
            labels={"app": "b", "stack": "shop"},
            affinity=[term("b", HOST, {"matchLabels": {"stack": "shop"}})],
        ),
    )
    assert found(run(text)) == []


def test_deadlock_cycle_of_three_and_a_waiter() -> None:
    text = stream(
        workload("a", affinity=[term("a", ZONE, BPP)]),
        workload("b", affinity=[term("b", ZONE, CPP)]),
        workload("c", affinity=[term("c", ZONE, APP)]),
        workload("w", affinity=[term("w", HOST, APP)]),
        workload("w2", affinity=[term("w2", HOST, {"matchLabels": {"app": "w"}})]),
    )
    result = run(text, DEADLOCK)
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
        workload("a", affinity=[term("a", HOST, BPP)]),
        workload("b", affinity=[term("b", HOST, a_or_c)]),
        workload("c", affinity=[term("c", HOST, BPP)]),
    )
    result = run(text, DEADLOCK)
    assert found(result) == at(text, DEADLOCK, "a", "b", "c")
    # Which cycle of the knot deadlocks() picks, (a b) or (b c), follows set order (see the report).
    kinds = sorted(f.message.split(":")[0] for f in result.findings)
    assert kinds == ["required pod affinity deadlock"] * 2 + ["required pod affinity waits on a deadlock"]


def test_deadlock_ignores_workloads_stuck_behind_a_term_that_matches_nothing() -> None:
    """Those are affinity-no-match's roots; nor is a workload that can follow one that starts."""
    text = stream(
        workload("ghostly", affinity=[term("ghost", HOST, {"matchLabels": {"app": "nobody"}})]),
        workload("follower", affinity=[term("follower", HOST, {"matchLabels": {"app": "ghostly"}})]),
        workload("db"),
        workload("api", affinity=[term("api", HOST, {"matchLabels": {"app": "db"}})]),
    )
    assert found(run(text, DEADLOCK)) == []


def test_deadlock_reported_at_the_term_its_own_pods_do_not_match() -> None:
    """a's first term matches a itself (and b); the second, b only, is what keeps a waiting."""
    text = stream(
        workload(
            "a",
            labels={"app": "a", "stack": "shop"},
            affinity=[term("a-stack", HOST, {"matchLabels": {"stack": "shop"}}), term("a-b", HOST, BPP)],
        ),
        workload("b", labels={"app": "b", "stack": "shop"}, affinity=[term("b-a", HOST, APP)]),
    )
    assert found(run(text)) == at(text, DEADLOCK, "a-b", "b-a")


def test_deadlock_waiter_may_follow_a_workload_that_can_start() -> None:
    """w could follow a (deadlocked) or db (starts): db starts, so w is placeable."""
    text = stream(
        PAIR,
        workload("db", labels={"app": "a", "role": "db"}),
        workload("w", affinity=[term("w", HOST, APP)]),
    )
    assert found(run(text, DEADLOCK)) == []  # db also breaks a's cycle: b follows db


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
    result = run(PAIR, DEADLOCK, severity={DEADLOCK: Severity.WARNING})
    assert {f.severity for f in result.findings} == {Severity.WARNING}


# -- affinity-conflict ---------------------------------------------------------------------------

PG = {"matchLabels": {"app": "pg"}}
API = {"matchLabels": {"app": "api"}}


def nested(affinity_key: str, anti_key: str) -> str:
    return stream(
        workload("pg"),
        workload("api", affinity=[term("aff", affinity_key, PG)], anti=[term("anti", anti_key, PG)]),
    )


@pytest.mark.parametrize(
    ("affinity_key", "anti_key", "fires"),
    [
        (HOST, ZONE, True),  # on pg's node, but out of pg's zone
        (HOST, HOST, True),
        (ZONE, ZONE, True),
        (ZONE, REGION, True),
        (HOST, "failure-domain.beta.kubernetes.io/region", True),
        (ZONE, HOST, False),  # same zone, different node: the common pattern
        (REGION, ZONE, False),
        ("example.com/rack", "example.com/rack", True),  # equal custom keys
        ("example.com/rack", ZONE, False),  # how racks nest in zones is unknown
        (HOST, "example.com/rack", False),
    ],
)
def test_conflict_nested_domains(affinity_key: str, anti_key: str, fires: bool) -> None:
    text = nested(affinity_key, anti_key)
    result = run(text)
    assert found(result) == (at(text, CONFLICT, "aff") if fires else [])


def test_conflict_nested_message_and_related() -> None:
    text = nested(HOST, ZONE)
    finding = only(run(text))
    assert finding.message == (
        "required pod affinity puts this pod on the node of StatefulSet/shop/pg, but its own required "
        "anti-affinity (topology.kubernetes.io/zone) keeps it out of the zone of pods with app=pg: it can "
        "never be scheduled"
    )
    assert [(r.span.line, r.span.column) for r in finding.related if r.span] == [term_at(text, "anti")]
    assert finding.severity is Severity.ERROR


SYMMETRY = stream(
    workload("pg", namespace="db", anti=[term("pg-anti", ZONE, API, namespaces=["shop"])]),
    workload("api", kind="Deployment", affinity=[term("aff", HOST, PG, namespaces=["db"])]),
)


def test_conflict_symmetry_fires_on_the_affinity_with_the_other_sides_term() -> None:
    finding = only(run(SYMMETRY))
    assert (finding.rule, finding.line, finding.column) == (CONFLICT, *term_at(SYMMETRY, "aff"))
    assert finding.message.startswith(
        "required pod affinity puts this pod on the node of StatefulSet/db/pg, but pg's required "
        "anti-affinity (topology.kubernetes.io/zone) keeps pods with app=api out of its zone"
    )
    assert finding.message.endswith(": it can never be scheduled")
    assert [(r.span.line, r.span.column) for r in finding.related if r.span] == [term_at(SYMMETRY, "pg-anti")]
    assert "StatefulSet/db/pg" in finding.related[0].message


@pytest.mark.parametrize(
    "pg_anti",
    [
        term("pg-anti", ZONE, {"matchLabels": {"app": "batch"}}, namespaces=["shop"]),  # someone else
        term("pg-anti", ZONE, API),  # own namespace only: api is in shop, pg in db
        term("pg-anti", HOST, API, namespaces=["shop"]),  # smaller domain than api's zone affinity
    ],
)
def test_conflict_symmetry_quiet(pg_anti: dict[str, Any]) -> None:
    key = ZONE if pg_anti["key"] == HOST else HOST
    text = stream(
        workload("pg", namespace="db", anti=[pg_anti]),
        workload("api", kind="Deployment", affinity=[term("aff", key, PG, namespaces=["db"])]),
    )
    assert found(run(text)) == []


def test_conflict_symmetry_needs_a_certain_match_not_maybe() -> None:
    """pg's anti-affinity selects namespaces labelled team=shop: with shop undeclared, only its
    name label is known, so it *might* match api's pods: not enough to report."""
    pg = workload(
        "pg",
        namespace="db",
        anti=[term("pg-anti", HOST, API, namespaceSelector={"matchLabels": {"team": "shop"}})],
    )
    api = workload("api", affinity=[term("aff", HOST, PG, namespaces=["db"])])
    assert found(run(stream(pg, api))) == []
    declared = stream(namespace("shop", {"team": "shop"}), pg, api)
    assert found(run(declared)) == at(declared, CONFLICT, "aff")
    elsewhere = stream(namespace("shop", {"team": "other"}), pg, api)
    assert found(run(elsewhere)) == []


def test_conflict_own_anti_affinity_maybe_match_is_not_enough() -> None:
    pg = workload("pg", namespace="db")
    api = workload(
        "api",
        affinity=[term("aff", HOST, PG, namespaces=["db"])],
        anti=[term("anti", ZONE, PG, namespaceSelector={"matchLabels": {"tier": "data"}})],
    )
    assert found(run(stream(pg, api))) == []
    declared = stream(namespace("db", {"tier": "data"}), pg, api)
    assert found(run(declared)) == at(declared, CONFLICT, "aff")


def test_conflict_needs_every_candidate_blocked() -> None:
    both = {"matchLabels": {"tier": "data"}}
    pg = workload("pg", labels={"app": "pg", "tier": "data"}, anti=[term("pg-anti", HOST, API)])
    redis = workload("redis", labels={"app": "redis", "tier": "data"})
    api = workload("api", affinity=[term("aff", HOST, both)])
    assert found(run(stream(pg, redis, api))) == []  # api can join redis
    redis_anti = workload(
        "redis", labels={"app": "redis", "tier": "data"}, anti=[term("redis-anti", ZONE, API)]
    )
    text = stream(pg, redis_anti, api)
    finding = only(run(text))
    assert (finding.line, finding.column) == term_at(text, "aff")
    assert "a pod of StatefulSet/shop/pg or StatefulSet/shop/redis" in finding.message
    assert "pg's required anti-affinity (kubernetes.io/hostname)" in finding.message
    assert "redis's required anti-affinity (topology.kubernetes.io/zone)" in finding.message
    assert sorted((r.span.line, r.span.column) for r in finding.related if r.span) == [
        term_at(text, "pg-anti"),
        term_at(text, "redis-anti"),
    ]


def test_conflict_smallest_affinity_domain_decides() -> None:
    """Terms on zone and hostname: the pod shares pg's node, hence its zone: zone anti blocks."""
    text = stream(
        workload("pg"),
        workload(
            "api",
            affinity=[term("aff-zone", ZONE, PG), term("aff-host", HOST, PG)],
            anti=[term("anti", ZONE, PG)],
        ),
    )
    assert found(run(text)) == at(text, CONFLICT, "aff-zone")  # once, at the first term
    host_anti = stream(
        workload("pg"),
        workload(
            "api",
            affinity=[term("aff-zone", ZONE, PG), term("aff-host", HOST, PG)],
            anti=[term("anti", HOST, PG)],
        ),
    )
    assert found(run(host_anti)) == at(host_anti, CONFLICT, "aff-host")


def test_conflict_quiet_when_the_affinity_matches_nothing() -> None:
    """affinity-no-match reports it; the conflict rule has no candidate to reason about."""
    text = workload("api", affinity=[term("aff", HOST, PG)], anti=[term("anti", ZONE, PG)])
    assert found(run(text)) == []


@pytest.mark.parametrize(
    ("kind", "replicas", "fires"),
    [("StatefulSet", 3, True), ("StatefulSet", 1, False), ("DaemonSet", 1, False)],
)
def test_conflict_own_pods_first_pod_starts(kind: str, replicas: int, fires: bool) -> None:
    own = {"matchLabels": {"app": "etcd"}}
    text = workload(
        "etcd",
        kind=kind,
        replicas=replicas,
        affinity=[term("aff", HOST, own)],
        anti=[term("anti", ZONE, own)],
    )
    result = run(text)
    assert found(result) == (at(text, CONFLICT, "aff") if fires else [])
    if fires:
        message = only(result).message
        assert "another pod of this workload" in message
        assert "the first pod starts (the self-match exception), the other 2 stay Pending" in message
        assert "never" not in message


def test_conflict_own_pods_quiet_when_the_anti_affinity_domain_is_smaller() -> None:
    own = {"matchLabels": {"app": "etcd"}}
    text = workload("etcd", replicas=3, affinity=[term("aff", ZONE, own)], anti=[term("anti", HOST, own)])
    assert found(run(text)) == []


def test_conflict_own_pods_and_another_workload_both_blocked() -> None:
    shared = {"matchLabels": {"stack": "s"}}
    text = stream(
        workload("db", labels={"app": "db", "stack": "s"}),
        workload(
            "api",
            labels={"app": "api", "stack": "s"},
            affinity=[term("aff", HOST, shared)],
            anti=[term("anti", HOST, shared)],
        ),
    )
    finding = only(run(text))
    assert (finding.line, finding.column) == term_at(text, "aff")
    assert "StatefulSet/shop/db" in finding.message
    assert "only a first pod started before any of them exists can run" in finding.message


def test_conflict_existing_pod_without_anti_affinity_can_satisfy(tmp_path: Path) -> None:
    """The cluster's existing pods carry no terms in the graph: they never block by symmetry."""
    manifest = tmp_path / "apps.yaml"
    manifest.write_text(SYMMETRY, encoding="utf-8")
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: v1, kind: Node, metadata: {name: n1}}\n"
        "- apiVersion: v1\n  kind: Pod\n  metadata: {name: legacy, namespace: db, labels: {app: pg}}\n"
        "  spec: {nodeName: n1, containers: [{name: c, image: x}]}\n",
        encoding="utf-8",
    )
    assert len(lint_paths(manifest, rules=[BY_NAME[CONFLICT]]).findings) == 1
    assert found(lint_paths(manifest, rules=[BY_NAME[CONFLICT]], cluster=str(cluster))) == []


def test_conflict_severity_configured_wins() -> None:
    result = run(SYMMETRY, CONFLICT, severity={"graph": Severity.INFO})
    assert [f.severity for f in result.findings] == [Severity.INFO]


# -- examples ------------------------------------------------------------------------------------


@pytest.mark.parametrize("rule", [DEADLOCK, CONFLICT])
def test_examples_cite_upstream(rule: str) -> None:
    for path in sorted((EXAMPLES / rule).glob("*.yaml")):
        head = path.read_text(encoding="utf-8").split("apiVersion", 1)[0]
        comment = " ".join(line.lstrip("#").strip() for line in head.splitlines())
        # The scheduler's InterPodAffinity Filter, which both rules follow, by its upstream path.
        assert "pkg/scheduler/framework/plugins/interpodaffinity/filtering.go" in comment, path


def test_symmetry_section_has_a_firing_and_a_quiet_example() -> None:
    folder = EXAMPLES / CONFLICT
    cited = {
        p.name for p in folder.glob("*.yaml") if '"A comment on symmetry"' in p.read_text(encoding="utf-8")
    }
    assert {"fail-symmetry.yaml", "pass-symmetry.yaml"} <= cited
