"""The rule ``anti-affinity-exceeds-domains`` (kaffinity/rules/anti_affinity_exceeds_domains.py): more
replicas than the domains of a required anti-affinity's topology key, reported at the term with
how many stay Pending.

Upstream: kube-scheduler's InterPodAffinity filter (interpodaffinity/filtering.go) and the
StatefulSet controller's OrderedReady pod management.

The explanation (how many pods stay Pending, which nodes, why) exists only as the message's wording,
so it is asserted on the message; where and what are asserted as (rule, line, column) and fields.
"""

from __future__ import annotations

from ..kit import keys, line_of, only
from .pending_inputs import anti, lint_on_cluster, node, pending_workload, running_pod, text_of, where, zones

# --- anti-affinity-exceeds-domains ------------------------------------------------------------------


def test_anti_affinity_exceeds_zones_says_how_many_stay_pending() -> None:
    objects = [
        pending_workload(
            "kafka",
            "StatefulSet",
            5,
            podManagementPolicy="Parallel",
            affinity=anti("topology.kubernetes.io/zone", {"app": "kafka"}),
        )
    ]
    objects[0]["spec"]["podManagementPolicy"] = "Parallel"
    del objects[0]["spec"]["template"]["spec"]["podManagementPolicy"]
    finding = only(lint_on_cluster(objects, zones(3, 2)), "anti-affinity-exceeds-domains")
    assert (finding.line, finding.column) == where(objects, '"topologyKey"')
    assert "asks for 5 replicas" in finding.message
    assert (
        "the 6 nodes it may run on span only 3 zones (a, b and c): 2 fewer than the replicas"
        in finding.message
    )
    assert finding.message.endswith("kafka-3 and kafka-4 stay Pending")
    assert [loc.message for loc in finding.related] == ["asks for 5 replicas"]


def test_anti_affinity_exceeds_ordered_ready_stops_at_the_first_pending_pod() -> None:
    objects = [
        pending_workload(
            "kafka", "StatefulSet", 5, affinity=anti("topology.kubernetes.io/zone", {"app": "kafka"})
        )
    ]
    finding = only(lint_on_cluster(objects, zones(3)), "anti-affinity-exceeds-domains")
    assert (finding.line, finding.column) == where(objects, '"topologyKey"')
    assert "kafka-3 stays Pending and, as podManagementPolicy is OrderedReady" in finding.message
    assert "never creates kafka-4" in finding.message


def test_anti_affinity_exceeds_counts_a_foreign_pod_that_takes_a_zone() -> None:
    """R - D plus the domains other pods the term selects already hold."""
    objects = [
        pending_workload(
            "q",
            replicas=4,
            labels={"app": "q", "v": "2"},
            affinity=anti("topology.kubernetes.io/zone", {"app": "q"}),
        )
    ]
    objects[0]["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ][0]["matchLabelKeys"] = ["pod-template-hash"]
    cluster = [*zones(3), running_pod("q-legacy", "n-a-0", {"app": "q", "v": "1"})]
    finding = only(lint_on_cluster(objects, cluster), "anti-affinity-exceeds-domains")
    assert (finding.line, finding.column) == where(objects, '"topologyKey"')
    assert "1 fewer than the replicas" in finding.message
    # matchLabelKeys scopes the term to this revision: the legacy pod is not selected.
    assert "q-legacy" not in finding.message
    assert finding.message.endswith("q[3] stays Pending")
    # Without the scoping the legacy pod takes zone a: two stay Pending.
    del objects[0]["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ][0]["matchLabelKeys"]
    finding = only(lint_on_cluster(objects, cluster), "anti-affinity-exceeds-domains")
    assert (finding.line, finding.column) == where(objects, '"topologyKey"')
    assert (
        "zone a already holds q-legacy, which the term selects; that leaves 2 zones free" in finding.message
    )
    assert finding.message.endswith("q[2] and q[3] stay Pending")
    legacy_labels = line_of(text_of(cluster), '"labels"', 1, after='"q-legacy"')
    assert ("cluster.yaml", "metadata.labels", legacy_labels) in [
        (loc.file, loc.path, loc.span.line if loc.span else None) for loc in finding.related
    ]


def test_anti_affinity_exceeds_counts_its_own_old_pods_sharing_a_zone() -> None:
    """R - D minus the existing pods of its own that already share a domain (IgnoredDuringExecution)."""
    objects = [
        pending_workload("db", "StatefulSet", 4, affinity=anti("topology.kubernetes.io/zone", {"app": "db"}))
    ]
    cluster = [
        *zones(2),
        running_pod("db-0", "n-a-0", {"app": "db"}),
        running_pod("db-1", "n-a-0", {"app": "db"}),
    ]
    finding = only(lint_on_cluster(objects, cluster), "anti-affinity-exceeds-domains")
    assert (finding.line, finding.column) == where(objects, '"topologyKey"')
    assert "2 fewer than the replicas" in finding.message
    assert "db-0 and db-1 of its own already run in zone a" in finding.message
    assert "that leaves 1 zone free beside the 2 pods already running" in finding.message
    assert finding.message.endswith("db-3 stays Pending")


def test_anti_affinity_on_a_key_some_nodes_lack_bounds_nothing() -> None:
    """A node without the key passes anti-affinity (``satisfyPodAntiAffinity``): pods go there
    without limit."""
    objects = [
        pending_workload("db", "StatefulSet", 5, affinity=anti("topology.kubernetes.io/zone", {"app": "db"}))
    ]
    assert keys(lint_on_cluster(objects, [*zones(2), node("bare")])) == []


def test_anti_affinity_within_the_domains_is_quiet() -> None:
    objects = [
        pending_workload("db", "StatefulSet", 3, affinity=anti("topology.kubernetes.io/zone", {"app": "db"}))
    ]
    assert keys(lint_on_cluster(objects, zones(3))) == []
