"""The rule ``affinity-conflict`` (kaffinity/rules/affinity_conflict.py): a workload's required affinity
and anti-affinity (its own, or the other side's by symmetry) that exclude each other, reported at
the affinity term.

Upstream: the InterPodAffinity Filter (``satisfyPodAffinity``, ``satisfyPodAntiAffinity``,
``satisfyExistingPodsAntiAffinity`` in ``pkg/scheduler/framework/plugins/interpodaffinity/
filtering.go``); the 2015 design, kubernetes/design-proposals-archive ``scheduling/podaffinity.md``,
"A comment on symmetry".

Why the two terms exclude each other (which domains, which side's anti-affinity, whether the
first pod starts) exists only as the message's wording: where a test reads it, the wording is the
subject; where the finding is, is asserted as (rule, line, column) and related locations.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kaffinity.findings import Severity
from kaffinity.rules import BY_NAME

from ..kit import lint_paths, only
from .conflict_inputs import (
    CONFLICT,
    HOST,
    REGION,
    ZONE,
    at,
    block_workload,
    found,
    lint_graph,
    namespace,
    stream,
    term,
    term_at,
)

# -- affinity-conflict ---------------------------------------------------------------------------

PG = {"matchLabels": {"app": "pg"}}
API = {"matchLabels": {"app": "api"}}


def nested(affinity_key: str, anti_key: str) -> str:
    return stream(
        block_workload("pg"),
        block_workload("api", affinity=[term("aff", affinity_key, PG)], anti=[term("anti", anti_key, PG)]),
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
    result = lint_graph(text)
    assert found(result) == (at(text, CONFLICT, "aff") if fires else [])


def test_conflict_nested_message_and_related() -> None:
    text = nested(HOST, ZONE)
    finding = only(lint_graph(text))
    assert finding.message == (
        "required pod affinity puts this pod on the node of StatefulSet/shop/pg, but its own required "
        "anti-affinity (topology.kubernetes.io/zone) keeps it out of the zone of pods with app=pg: it can "
        "never be scheduled"
    )
    assert [(r.span.line, r.span.column) for r in finding.related if r.span] == [term_at(text, "anti")]
    assert finding.severity is Severity.ERROR


SYMMETRY = stream(
    block_workload("pg", namespace="db", anti=[term("pg-anti", ZONE, API, namespaces=["shop"])]),
    block_workload("api", kind="Deployment", affinity=[term("aff", HOST, PG, namespaces=["db"])]),
)


def test_conflict_symmetry_fires_on_the_affinity_with_the_other_sides_term() -> None:
    finding = only(lint_graph(SYMMETRY))
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
        block_workload("pg", namespace="db", anti=[pg_anti]),
        block_workload("api", kind="Deployment", affinity=[term("aff", key, PG, namespaces=["db"])]),
    )
    assert found(lint_graph(text)) == []


def test_conflict_symmetry_needs_a_certain_match_not_maybe() -> None:
    """pg's anti-affinity selects namespaces labelled team=shop: with shop undeclared, only its
    name label is known, so it *might* match api's pods: not enough to report."""
    pg = block_workload(
        "pg",
        namespace="db",
        anti=[term("pg-anti", HOST, API, namespaceSelector={"matchLabels": {"team": "shop"}})],
    )
    api = block_workload("api", affinity=[term("aff", HOST, PG, namespaces=["db"])])
    assert found(lint_graph(stream(pg, api))) == []
    declared = stream(namespace("shop", {"team": "shop"}), pg, api)
    assert found(lint_graph(declared)) == at(declared, CONFLICT, "aff")
    elsewhere = stream(namespace("shop", {"team": "other"}), pg, api)
    assert found(lint_graph(elsewhere)) == []


def test_conflict_own_anti_affinity_maybe_match_is_not_enough() -> None:
    pg = block_workload("pg", namespace="db")
    api = block_workload(
        "api",
        affinity=[term("aff", HOST, PG, namespaces=["db"])],
        anti=[term("anti", ZONE, PG, namespaceSelector={"matchLabels": {"tier": "data"}})],
    )
    assert found(lint_graph(stream(pg, api))) == []
    declared = stream(namespace("db", {"tier": "data"}), pg, api)
    assert found(lint_graph(declared)) == at(declared, CONFLICT, "aff")


def test_conflict_needs_every_candidate_blocked() -> None:
    both = {"matchLabels": {"tier": "data"}}
    pg = block_workload("pg", labels={"app": "pg", "tier": "data"}, anti=[term("pg-anti", HOST, API)])
    redis = block_workload("redis", labels={"app": "redis", "tier": "data"})
    api = block_workload("api", affinity=[term("aff", HOST, both)])
    assert found(lint_graph(stream(pg, redis, api))) == []  # api can join redis
    redis_anti = block_workload(
        "redis", labels={"app": "redis", "tier": "data"}, anti=[term("redis-anti", ZONE, API)]
    )
    text = stream(pg, redis_anti, api)
    finding = only(lint_graph(text))
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
        block_workload("pg"),
        block_workload(
            "api",
            affinity=[term("aff-zone", ZONE, PG), term("aff-host", HOST, PG)],
            anti=[term("anti", ZONE, PG)],
        ),
    )
    assert found(lint_graph(text)) == at(text, CONFLICT, "aff-zone")  # once, at the first term
    host_anti = stream(
        block_workload("pg"),
        block_workload(
            "api",
            affinity=[term("aff-zone", ZONE, PG), term("aff-host", HOST, PG)],
            anti=[term("anti", HOST, PG)],
        ),
    )
    assert found(lint_graph(host_anti)) == at(host_anti, CONFLICT, "aff-host")


def test_conflict_quiet_when_the_affinity_matches_nothing() -> None:
    """affinity-no-match reports it; the conflict rule has no candidate to reason about."""
    text = block_workload("api", affinity=[term("aff", HOST, PG)], anti=[term("anti", ZONE, PG)])
    assert found(lint_graph(text)) == []


@pytest.mark.parametrize(
    ("kind", "replicas", "fires"),
    [("StatefulSet", 3, True), ("StatefulSet", 1, False), ("DaemonSet", 1, False)],
)
def test_conflict_own_pods_first_pod_starts(kind: str, replicas: int, fires: bool) -> None:
    own = {"matchLabels": {"app": "etcd"}}
    text = block_workload(
        "etcd",
        kind=kind,
        replicas=replicas,
        affinity=[term("aff", HOST, own)],
        anti=[term("anti", ZONE, own)],
    )
    result = lint_graph(text)
    assert found(result) == (at(text, CONFLICT, "aff") if fires else [])
    if fires:
        message = only(result).message
        assert "another pod of this workload" in message
        assert "the first pod starts (the self-match exception), the other 2 stay Pending" in message
        assert "never" not in message


def test_conflict_own_pods_quiet_when_the_anti_affinity_domain_is_smaller() -> None:
    own = {"matchLabels": {"app": "etcd"}}
    text = block_workload(
        "etcd", replicas=3, affinity=[term("aff", ZONE, own)], anti=[term("anti", HOST, own)]
    )
    assert found(lint_graph(text)) == []


def test_conflict_own_pods_and_another_workload_both_blocked() -> None:
    shared = {"matchLabels": {"stack": "s"}}
    text = stream(
        block_workload("db", labels={"app": "db", "stack": "s"}),
        block_workload(
            "api",
            labels={"app": "api", "stack": "s"},
            affinity=[term("aff", HOST, shared)],
            anti=[term("anti", HOST, shared)],
        ),
    )
    finding = only(lint_graph(text))
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
    result = lint_graph(SYMMETRY, CONFLICT, severity={"graph": Severity.INFO})
    assert found(result) == at(SYMMETRY, CONFLICT, "aff")
    assert [f.severity for f in result.findings] == [Severity.INFO]


def test_a_workload_the_api_server_refuses_has_no_conflict_to_report() -> None:
    """api's container requests more memory than its limit (ValidateResourceRequirements refuses
    it): it is never created, and api-validation's error is the one finding on it."""
    plain = nested(HOST, ZONE)
    head, tail = plain.rsplit("containers: [{name: c, image: busybox}]", 1)
    refused = (
        "containers: [{name: c, image: busybox, resources: {requests: {memory: 2Gi}, limits: {memory: 1Gi}}}]"
    )
    text = head + refused + tail
    result = lint_graph(text, CONFLICT, "api-validation")
    assert {finding.rule for finding in result.findings} == {"api-validation"}
    # Without api-validation selected, nothing gives way to it.
    assert found(lint_graph(text, CONFLICT, select=(CONFLICT,))) == at(text, CONFLICT, "aff")
