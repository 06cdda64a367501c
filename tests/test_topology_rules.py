"""The topology rules together (kaffinity/explain/pending.py): without a cluster or with
--no-simulate, each Pending workload reported by exactly one rule, a configured severity and a
rule selection deciding which; the analysis shared by the rules of one run. Each rule's own
cases are in tests/rules/test_<rule>.py.
"""

from __future__ import annotations

import textwrap
from collections import Counter

import pytest

from kaffinity.explain.pending import analysis
from kaffinity.findings import Severity
from kaffinity.load.parse import parse

from .kit import keys, only
from .rules.pending_inputs import (
    anti,
    context_of,
    lint_on_cluster,
    pending_workload,
    spread,
    text_of,
    where,
    zones,
)

TOPOLOGY_RULES = (
    "topology-key-absent",
    "no-eligible-node",
    "anti-affinity-exceeds-domains",
    "spread-unsatisfiable",
    "unschedulable",
)


# --- no cluster, --no-simulate ---------------------------------------------------------------------


def test_without_a_cluster_every_topology_rule_is_silent() -> None:
    objects = [
        pending_workload("db", "StatefulSet", 5, affinity=anti("topology.kubernetes.io/zone", {"app": "db"}))
    ]
    assert keys(lint_on_cluster(objects, None)) == []


def test_no_simulate_keeps_the_static_constraints_and_silences_the_others() -> None:
    objects = [
        pending_workload("db", "StatefulSet", 5, affinity=anti("topology.kubernetes.io/zone", {"app": "db"})),
        pending_workload("gpu", nodeSelector={"accelerator": "h100"}),
        pending_workload("web", topologySpreadConstraints=spread("example.com/rack", {"app": "web"})),
    ]
    simulated = lint_on_cluster(objects, zones())
    static_constraints = [
        ("no-eligible-node", *where(objects, '"accelerator": "h100"')),
        ("topology-key-absent", *where(objects, '"topologyKey": "example.com/rack"')),
    ]
    exceeds = (
        "anti-affinity-exceeds-domains",
        *where(objects, '"topologyKey": "topology.kubernetes.io/zone"'),
    )
    assert keys(simulated) == [exceeds, *static_constraints]
    static = lint_on_cluster(objects, zones(), simulate=False)
    assert keys(static) == static_constraints
    # Without the simulation nothing says how many stay Pending: the replicas asked for.
    assert "its pod cannot be scheduled" in only(static, "no-eligible-node").message


# --- one rule per Pending workload -------------------------------------------------------------------


MIXED = [
    pending_workload("nosel", nodeSelector={"pool": "none"}),
    pending_workload("typo", topologySpreadConstraints=spread("topology.kubernetes.io/zon", {"app": "typo"})),
    pending_workload(
        "kafka", "StatefulSet", 4, affinity=anti("topology.kubernetes.io/zone", {"app": "kafka"})
    ),
    pending_workload(
        "api",
        replicas=5,
        topologySpreadConstraints=spread("topology.kubernetes.io/zone", {"app": "api"}, minDomains=4),
    ),
    pending_workload(
        "fat", containers=[{"name": "c", "image": "x", "resources": {"requests": {"cpu": "64"}}}]
    ),
    pending_workload("fine", "StatefulSet", 3, affinity=anti("topology.kubernetes.io/zone", {"app": "fine"})),
]


#: Where each rule reports its workload of MIXED.
OWNED = {
    "nosel": ("no-eligible-node", *where(MIXED, '"pool": "none"')),
    "typo": ("topology-key-absent", *where(MIXED, '"topologyKey": "topology.kubernetes.io/zon",')),
    "kafka": ("anti-affinity-exceeds-domains", *where(MIXED, '"topologyKey": "topology.kubernetes.io/zone"')),
    "api": ("spread-unsatisfiable", *where(MIXED, '"minDomains"')),
    "fat": ("unschedulable", *where(MIXED, '"cpu": "64"')),
}


def test_each_pending_workload_is_reported_by_exactly_one_rule() -> None:
    result = lint_on_cluster(MIXED, zones(3))
    assert keys(result) == list(OWNED.values())
    by_object = Counter(f.object.name for f in result.findings if f.object is not None)
    assert by_object == {"nosel": 1, "typo": 1, "kafka": 1, "api": 1, "fat": 1}
    assert {f.object.name: f.rule for f in result.findings if f.object is not None} == {
        "nosel": "no-eligible-node",
        "typo": "topology-key-absent",
        "kafka": "anti-affinity-exceeds-domains",
        "api": "spread-unsatisfiable",
        "fat": "unschedulable",
    }
    context = context_of(MIXED, zones(3))
    found = analysis(context)
    assert found is not None and found.stuck is not None
    pending = {id(p.pod.workload) for p in context.placement.pending} if context.placement else set()
    assert pending <= set(found.stuck)


@pytest.mark.parametrize("rule", TOPOLOGY_RULES)
def test_configured_severity_wins(rule: str) -> None:
    result = lint_on_cluster(MIXED, zones(3), severity={rule: Severity.INFO})
    if rule == "unschedulable":
        assert OWNED["fat"] in keys(result)
        assert [f.severity for f in result.findings if f.rule == rule] == [Severity.INFO]
        return
    owner = next(name for name, (owning, *_) in OWNED.items() if owning == rule)
    assert OWNED[owner] not in keys(result)
    # Configured below unschedulable, a rule gives its Pending pods to
    # unschedulable's error (kaffinity.explain.precedence): an info never hides an error.
    assert [f.rule for f in result.findings if f.rule == rule] == []
    assert sorted(f.object.name for f in result.findings if f.rule == "unschedulable" and f.object) == sorted(
        ["fat", {v: k for k, v in EXPECTED_OWNER.items()}[rule]]
    )


EXPECTED_OWNER = {
    "nosel": "no-eligible-node",
    "typo": "topology-key-absent",
    "kafka": "anti-affinity-exceeds-domains",
    "api": "spread-unsatisfiable",
}


@pytest.mark.parametrize(("name", "rule"), EXPECTED_OWNER.items())
def test_selecting_unschedulable_alone_still_reports_every_pending_workload(name: str, rule: str) -> None:
    """With the specific rule not selected, the Pending pods are unschedulable's (at error)."""
    result = lint_on_cluster(MIXED, zones(3), select=("unschedulable",))
    assert name in {f.object.name for f in result.findings if f.object is not None}
    both = lint_on_cluster(MIXED, zones(3), select=("unschedulable", rule))
    assert OWNED[name] in keys(both)
    assert {f.object.name: f.rule for f in both.findings if f.object is not None}[name] == rule


def test_the_analysis_is_shared_by_the_rules_of_one_run() -> None:
    context = context_of(MIXED, zones(3))
    assert analysis(context) is analysis(context)
    assert analysis(context_of(MIXED, None)) is None


def test_examples_text_is_valid_yaml() -> None:
    """The builders above produce what the loader reads (a guard for the helpers themselves)."""
    text = text_of([pending_workload("a")])
    assert parse("x.yaml", textwrap.dedent(text)).documents
