"""The topology rules (kaffinity/explain/pending.py and kaffinity/rules/{topology_key_absent,no_eligible_node,
anti_affinity_exceeds_domains,spread_unsatisfiable,unschedulable}.py): each Pending workload is
reported by exactly one rule, with counts, nodes and domains in the message."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from typing import Any

import pytest

from kaffinity.config import Settings
from kaffinity.context import Context
from kaffinity.engine import LintResult, lint
from kaffinity.explain.pending import analysis
from kaffinity.findings import Severity
from kaffinity.load.parse import parse
from kaffinity.rules import RULES
from kaffinity.simulate.cluster import cluster_from

from . import kit
from .kit import findings, line_of, lint_text, only, position

TOPOLOGY_RULES = (
    "topology-key-absent",
    "no-eligible-node",
    "anti-affinity-exceeds-domains",
    "spread-unsatisfiable",
    "unschedulable",
)


# --- building inputs ------------------------------------------------------------------------------


def node(
    name: str,
    zone: str | None = None,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    cpu: str = "4",
    unschedulable: bool = False,
    hostname: bool = True,
) -> dict[str, Any]:
    all_labels = {"kubernetes.io/hostname": name} if hostname else {}
    if zone is not None:
        all_labels["topology.kubernetes.io/zone"] = zone
    all_labels.update(labels or {})
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
        "spec": spec,
        "status": {
            "allocatable": {"cpu": cpu, "memory": "16Gi", "ephemeral-storage": "100Gi", "pods": "110"}
        },
    }


def pod(
    name: str, node_name: str, labels: dict[str, str], namespace: str = "t", **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "x"}], **spec},
        "status": {"phase": "Running"},
    }


def zones(count: int = 3, per_zone: int = 1) -> list[dict[str, Any]]:
    """``count`` zones a, b, c... with ``per_zone`` nodes each (n-a-0, n-a-1, ...)."""
    return [node(f"n-{chr(97 + z)}-{i}", zone=chr(97 + z)) for z in range(count) for i in range(per_zone)]


def workload(
    name: str,
    kind: str = "Deployment",
    replicas: int | None = 1,
    labels: dict[str, str] | None = None,
    namespace: str = "t",
    **pod: Any,
) -> dict[str, Any]:
    """kit.workload with this file's defaults, the pod spec fields as keywords."""
    return kit.workload(name, namespace, labels or None, kind=kind, replicas=replicas, pod=pod)


def anti(key: str, labels: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": labels}, "topologyKey": key, **extra}
            ]
        }
    }


def spread(key: str, labels: dict[str, str], hard: bool = True, **extra: Any) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
            "labelSelector": {"matchLabels": labels},
            **extra,
        }
    ]


def text_of(objects: list[dict[str, Any]]) -> str:
    """One key per line, so that lines can be asserted."""
    return kit.manifest(objects, indent=2)


def context_of(
    objects: list[dict[str, Any]], cluster: list[dict[str, Any]] | None, **settings: Any
) -> Context:
    files = [parse("app.yaml", text_of(objects))]
    declared = cluster_from([parse("cluster.yaml", text_of(cluster))]) if cluster is not None else None
    return Context(files, Settings(**settings), declared)


def run(
    objects: list[dict[str, Any]],
    cluster: list[dict[str, Any]] | None,
    select: tuple[str, ...] = ("topology",),
    **settings: Any,
) -> LintResult:
    declared = text_of(cluster) if cluster is not None else None
    return lint_text(text_of(objects), "app.yaml", cluster=declared, select=select, **settings)


def rules_of(result: LintResult) -> list[str]:
    return sorted(f.rule for f in result.findings)


def where(objects: list[dict[str, Any]], needle: str, occurrence: int = 1) -> tuple[int, int]:
    """(line, column) of the ``occurrence``-th ``needle`` in the linted text."""
    return position(text_of(objects), needle, occurrence)


# --- no cluster, --no-simulate ---------------------------------------------------------------------


def test_without_a_cluster_every_topology_rule_is_silent() -> None:
    objects = [workload("db", "StatefulSet", 5, affinity=anti("topology.kubernetes.io/zone", {"app": "db"}))]
    assert run(objects, None).findings == ()


def test_no_simulate_keeps_the_static_constraints_and_silences_the_others() -> None:
    objects = [
        workload("db", "StatefulSet", 5, affinity=anti("topology.kubernetes.io/zone", {"app": "db"})),
        workload("gpu", nodeSelector={"accelerator": "h100"}),
        workload("web", topologySpreadConstraints=spread("example.com/rack", {"app": "web"})),
    ]
    simulated = run(objects, zones())
    assert rules_of(simulated) == ["anti-affinity-exceeds-domains", "no-eligible-node", "topology-key-absent"]
    static = run(objects, zones(), simulate=False)
    assert rules_of(static) == ["no-eligible-node", "topology-key-absent"]
    # Without the simulation nothing says how many stay Pending: the replicas asked for.
    assert "its pod cannot be scheduled" in only(static, "no-eligible-node").message


# --- topology-key-absent ---------------------------------------------------------------------------


def test_key_absent_severity_per_kind_of_term() -> None:
    """Error where it blocks every pod, warning for required anti-affinity, info for a preference
    on a key that is not well-known, nothing for a preference on the zone key."""
    preferred = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": k},
                }
                for k in ("example.com/row", "topology.kubernetes.io/zone")
            ],
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "example.com/rack"}
            ],
        }
    }
    objects = [
        workload("a", "StatefulSet", 1, affinity=preferred),
        workload("b", topologySpreadConstraints=spread("example.com/rack", {"app": "b"})),
        workload(
            "c",
            affinity={
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "example.com/rack"}
                    ]
                }
            },
        ),
    ]
    cluster = [node("n1"), node("n2")]  # no zone, no rack
    result = run(objects, cluster)
    got = sorted((f.line, f.column, f.severity) for f in result.findings)
    assert got == sorted(
        [
            (*where(objects, '"topologyKey": "example.com/rack"', 1), Severity.WARNING),
            (*where(objects, '"topologyKey": "example.com/row"'), Severity.INFO),
            (*where(objects, '"topologyKey": "example.com/rack"', 2), Severity.ERROR),
            (*where(objects, '"topologyKey": "example.com/rack"', 3), Severity.ERROR),
        ]
    )
    assert {f.rule for f in result.findings} == {"topology-key-absent"}
    blocking = [f for f in result.findings if f.severity == Severity.ERROR]
    assert all("stay" in f.message and "Pending" in f.message for f in blocking)
    assert all("n1 and n2" in f.message for f in result.findings)
    # Related: the eligible nodes' labels in the cluster file.
    assert all(loc.file == "cluster.yaml" for f in result.findings for loc in f.related)


def test_key_absent_only_counts_eligible_nodes_and_suggests_a_close_key() -> None:
    """The key exists on a node the pod may not use (its nodeSelector excludes it): still absent."""
    objects = [
        workload(
            "web",
            nodeSelector={"pool": "web"},
            topologySpreadConstraints=spread("example.com/rakc", {"app": "web"}),
        )
    ]
    cluster = [
        node("n1", labels={"pool": "web", "example.com/rack": "r1"}),
        node("n2", labels={"pool": "db", "example.com/rakc": "r2"}),
    ]
    finding = only(run(objects, cluster), "topology-key-absent")
    assert "none of the 1 node its pods may run on (n1)" in finding.message
    assert finding.fix is not None and "did you mean example.com/rack?" in finding.fix


def test_key_absent_deprecated_zone_key_suggests_the_ga_key() -> None:
    objects = [
        workload(
            "db",
            "StatefulSet",
            2,
            affinity=anti("failure-domain.beta.kubernetes.io/zone", {"app": "db"}),
        )
    ]
    finding = only(run(objects, zones()), "topology-key-absent")
    assert finding.severity == Severity.WARNING
    assert finding.fix is not None and "use topology.kubernetes.io/zone" in finding.fix


def test_key_absent_hostname_missing_from_the_cluster_file_is_a_warning_about_the_file() -> None:
    objects = [workload("web", topologySpreadConstraints=spread("kubernetes.io/hostname", {"app": "web"}))]
    cluster = [node("n1", zone="a", hostname=False)]
    finding = only(run(objects, cluster), "topology-key-absent")
    assert finding.severity == Severity.WARNING
    assert "the kubelet sets it on every node" in finding.message
    # Required anti-affinity on hostname without the label: nothing (the file is what is wrong).
    quiet = [workload("db", "StatefulSet", 2, affinity=anti("kubernetes.io/hostname", {"app": "db"}))]
    assert run(quiet, cluster).findings == ()


def test_key_absent_is_quiet_without_eligible_nodes_and_for_an_empty_key() -> None:
    objects = [
        workload(
            "gpu", nodeSelector={"pool": "gpu"}, topologySpreadConstraints=spread("x/y", {"app": "gpu"})
        ),
        workload("bad", topologySpreadConstraints=spread("", {"app": "bad"})),
    ]
    result = run(objects, zones())
    # gpu: no node at all (no-eligible-node says so); bad: rejected by the API server.
    assert rules_of(result) == ["no-eligible-node"]


# --- no-eligible-node ------------------------------------------------------------------------------


def test_no_eligible_node_names_the_selector_label_and_the_values_there() -> None:
    objects = [workload("web", replicas=2, nodeSelector={"pool": "web", "disk": "ssd"})]
    cluster = [node("n1", labels={"pool": "web", "disk": "hdd"}), node("n2", labels={"pool": "db"})]
    finding = only(run(objects, cluster), "no-eligible-node")
    assert (finding.line, finding.column) == where(objects, '"disk": "ssd"')
    assert "nodeSelector disk=ssd matches none of the cluster's 2 nodes" in finding.message
    assert "the cluster's nodes have disk = hdd" in finding.message
    assert "web[0] and web[1] stay Pending" in finding.message
    assert finding.severity == Severity.ERROR


def test_no_eligible_node_taint_points_at_the_node_and_suggests_the_toleration() -> None:
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    objects = [workload("train", nodeSelector={"pool": "gpu"})]
    cluster = [node("n1"), node("g1", labels={"pool": "gpu"}, taints=[taint])]
    finding = only(run(objects, cluster), "no-eligible-node")
    assert "its nodeSelector allows only g1: g1 has taint dedicated=gpu:NoSchedule" in finding.message
    assert finding.fix is not None
    assert "{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}" in finding.fix
    (related,) = finding.related  # g1's taint in the cluster file: the line after "taints"
    assert related.span is not None
    taints = where(cluster, '"taints"')
    assert (related.file, related.path, related.span.line) == (
        "cluster.yaml",
        "spec.taints[0]",
        taints[0] + 1,
    )
    # Tolerated: placed, nothing to say.
    tolerated = [
        workload(
            "train",
            nodeSelector={"pool": "gpu"},
            tolerations=[{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        )
    ]
    assert run(tolerated, cluster).findings == ()


def test_no_eligible_node_cordoned_and_node_affinity() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["db"]}]}
                ]
            }
        }
    }
    objects = [
        workload("backup", affinity=affinity),
        workload("etl", affinity=json.loads(json.dumps(affinity))),
    ]
    objects[1]["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] = ["dwh"]
    cluster = [node("n1", labels={"pool": "web"}), node("d1", labels={"pool": "db"}, unschedulable=True)]
    result = run(objects, cluster)
    first, second = sorted(result.findings, key=lambda f: f.line or 0)
    assert first.rule == second.rule == "no-eligible-node"
    assert "its required node affinity allows only d1: d1 is cordoned" in first.message
    assert "pool In [dwh] (values there: db and web)" in second.message


def test_no_eligible_node_is_quiet_for_a_daemonset_and_warns_for_zero_replicas() -> None:
    objects = [
        workload("agent", "DaemonSet", None, nodeSelector={"accelerator": "fpga"}),
        workload("spare", replicas=0, nodeSelector={"pool": "spot"}),
    ]
    finding = only(run(objects, zones()), "no-eligible-node")
    assert finding.severity == Severity.WARNING
    assert "replicas: 0 now" in finding.message


def test_no_eligible_node_kubelet_label_missing_from_the_file_is_a_warning() -> None:
    objects = [workload("web", nodeSelector={"kubernetes.io/arch": "amd64"})]
    finding = only(run(objects, [node("n1")]), "no-eligible-node")
    assert finding.severity == Severity.WARNING
    assert "the kubelet sets kubernetes.io/arch on every node" in finding.message


def test_no_eligible_node_names_a_missing_node_name() -> None:
    objects = [workload("debug", "Pod", nodeName="nowhere")]
    finding = only(run(objects, zones()), "no-eligible-node")
    assert finding.message.startswith("spec.nodeName nowhere names none of the cluster's 3 nodes")


# --- anti-affinity-exceeds-domains ------------------------------------------------------------------


def test_anti_affinity_exceeds_zones_says_how_many_stay_pending() -> None:
    objects = [
        workload(
            "kafka",
            "StatefulSet",
            5,
            podManagementPolicy="Parallel",
            affinity=anti("topology.kubernetes.io/zone", {"app": "kafka"}),
        )
    ]
    objects[0]["spec"]["podManagementPolicy"] = "Parallel"
    del objects[0]["spec"]["template"]["spec"]["podManagementPolicy"]
    finding = only(run(objects, zones(3, 2)), "anti-affinity-exceeds-domains")
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
        workload("kafka", "StatefulSet", 5, affinity=anti("topology.kubernetes.io/zone", {"app": "kafka"}))
    ]
    finding = only(run(objects, zones(3)), "anti-affinity-exceeds-domains")
    assert "kafka-3 stays Pending and, as podManagementPolicy is OrderedReady" in finding.message
    assert "never creates kafka-4" in finding.message


def test_anti_affinity_exceeds_counts_a_foreign_pod_that_takes_a_zone() -> None:
    """R - D plus the domains other pods the term selects already hold."""
    objects = [
        workload(
            "q",
            replicas=4,
            labels={"app": "q", "v": "2"},
            affinity=anti("topology.kubernetes.io/zone", {"app": "q"}),
        )
    ]
    objects[0]["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ][0]["matchLabelKeys"] = ["pod-template-hash"]
    cluster = [*zones(3), pod("q-legacy", "n-a-0", {"app": "q", "v": "1"})]
    finding = only(run(objects, cluster), "anti-affinity-exceeds-domains")
    assert "1 fewer than the replicas" in finding.message
    # matchLabelKeys scopes the term to this revision: the legacy pod is not selected.
    assert "q-legacy" not in finding.message
    assert finding.message.endswith("q[3] stays Pending")
    # Without the scoping the legacy pod takes zone a: two stay Pending.
    del objects[0]["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ][0]["matchLabelKeys"]
    finding = only(run(objects, cluster), "anti-affinity-exceeds-domains")
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
    objects = [workload("db", "StatefulSet", 4, affinity=anti("topology.kubernetes.io/zone", {"app": "db"}))]
    cluster = [*zones(2), pod("db-0", "n-a-0", {"app": "db"}), pod("db-1", "n-a-0", {"app": "db"})]
    finding = only(run(objects, cluster), "anti-affinity-exceeds-domains")
    assert "2 fewer than the replicas" in finding.message
    assert "db-0 and db-1 of its own already run in zone a" in finding.message
    assert "that leaves 1 zone free beside the 2 pods already running" in finding.message
    assert finding.message.endswith("db-3 stays Pending")


def test_anti_affinity_on_a_key_some_nodes_lack_bounds_nothing() -> None:
    """A node without the key passes anti-affinity (``satisfyPodAntiAffinity``): pods go there
    without limit."""
    objects = [workload("db", "StatefulSet", 5, affinity=anti("topology.kubernetes.io/zone", {"app": "db"}))]
    assert run(objects, [*zones(2), node("bare")]).findings == ()


def test_anti_affinity_within_the_domains_is_quiet() -> None:
    objects = [workload("db", "StatefulSet", 3, affinity=anti("topology.kubernetes.io/zone", {"app": "db"}))]
    assert run(objects, zones(3)).findings == ()


# --- spread-unsatisfiable --------------------------------------------------------------------------


def test_spread_min_domains_above_the_domains() -> None:
    constraints = spread("topology.kubernetes.io/zone", {"app": "api"}, minDomains=4)
    objects = [workload("api", replicas=5, topologySpreadConstraints=constraints)]
    finding = only(run(objects, zones(3, 2)), "spread-unsatisfiable")
    assert (finding.line, finding.column) == where(objects, '"minDomains"')
    assert "minDomains 4, but the nodes it counts span only 3 zones (a, b and c)" in finding.message
    assert "at most 3 of its 5 pods can run" in finding.message
    assert "api[3] and api[4] stay Pending" in finding.message
    # Enough replicas for the zones: nothing Pending, nothing said.
    objects[0]["spec"]["replicas"] = 3
    assert run(objects, zones(3, 2)).findings == ()


def test_spread_tainted_domain_pins_the_minimum_and_honor_fixes_it() -> None:
    taint = {"key": "gpu", "value": "yes", "effect": "NoSchedule"}
    cluster = [*zones(3), node("g1", zone="a", taints=[taint])]
    objects = [
        workload(
            "web", replicas=5, topologySpreadConstraints=spread("kubernetes.io/hostname", {"app": "web"})
        )
    ]
    finding = only(run(objects, cluster), "spread-unsatisfiable")
    assert "g1: untolerated taint gpu=yes:NoSchedule" in finding.message
    assert "nodeTaintsPolicy Ignore (the default)" in finding.message
    assert "at most 3 of its 5 pods can run" in finding.message
    assert finding.fix is not None and "nodeTaintsPolicy: Honor" in finding.fix
    honor = spread("kubernetes.io/hostname", {"app": "web"}, nodeTaintsPolicy="Honor")
    objects[0]["spec"]["template"]["spec"]["topologySpreadConstraints"] = honor
    assert run(objects, cluster).findings == ()


def test_spread_nodes_lacking_the_key_found_by_the_simulation() -> None:
    """Some eligible nodes lack the key: they are rejected (missing required label), and the pods
    that would fit there stay Pending; dropping the constraint would place them."""
    cluster = [node("n1", zone="a", cpu="1"), node("n2", cpu="8"), node("n3", cpu="8")]
    objects = [
        workload(
            "web",
            replicas=2,
            topologySpreadConstraints=spread("topology.kubernetes.io/zone", {"app": "web"}),
            containers=[{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
        )
    ]
    finding = only(run(objects, cluster), "spread-unsatisfiable")
    assert "2 nodes it may run on (n2 and n3) lack topology.kubernetes.io/zone" in finding.message
    assert "web[1] stays Pending" in finding.message


def test_spread_selector_not_matching_its_own_pods_caps_nothing() -> None:
    constraints = spread("topology.kubernetes.io/zone", {"app": "other"}, minDomains=5)
    objects = [workload("api", replicas=5, topologySpreadConstraints=constraints)]
    assert run(objects, zones(3)).findings == ()


# --- unschedulable ---------------------------------------------------------------------------------


def test_unschedulable_insufficient_cpu_points_at_the_request() -> None:
    containers = [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "6"}}}]
    objects = [workload("batch", replicas=2, containers=containers)]
    finding = only(run(objects, zones(2)), "unschedulable")
    assert (finding.line, finding.column) == where(objects, '"cpu": "6"')
    assert (
        "batch[0] and batch[1] stay Pending: 0/2 nodes are available: 2 Insufficient cpu." in finding.message
    )
    assert (
        "it requests 6 cpu; the most free on a node it may run on is 4 on n-a-0 (allocatable 4)"
        in finding.message
    )


def test_unschedulable_existing_pods_anti_affinity_names_the_blockers() -> None:
    guard = pod(
        "guard",
        "n-a-0",
        {"app": "guard"},
        affinity=anti("topology.kubernetes.io/zone", {"tier": "batch"}),
    )
    objects = [
        workload("job", "Job", 1, labels={"tier": "batch"}, nodeSelector={"topology.kubernetes.io/zone": "a"})
    ]
    finding = only(run(objects, [*zones(2), guard]), "unschedulable")
    assert "didn't satisfy existing pods anti-affinity rules" in finding.message
    assert "guard (out of zone a)" in finding.message
    assert any(
        loc.file == "cluster.yaml" and loc.message == "anti-affinity of pod guard" for loc in finding.related
    )


def test_unschedulable_retries_a_pod_whose_affinity_target_comes_later() -> None:
    """Placed in queue order (front < session-cache) the front end waits for the cache; the scheduler
    retries it when the cache's pods are added, so nothing is reported -- and the placement run is
    left as it was."""
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    objects = [workload("front", affinity=affinity), workload("session-cache", labels={"app": "cache"})]
    context = context_of(objects, zones(2), select=("topology",))
    run_ = context.placement
    assert run_ is not None
    before = {sim_node.name: len(sim_node.pods) for sim_node in run_.sim.nodes}
    assert len(run_.pending) == 1  # the simulation alone leaves it Pending
    result = lint(context.files, context.settings, RULES, context=context)
    assert findings(result) == []
    assert {sim_node.name: len(sim_node.pods) for sim_node in run_.sim.nodes} == before


def test_unschedulable_and_affinity_no_match_keep_the_more_severe() -> None:
    """The same Pending pods, described by both rules; the error is kept."""
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "nothing"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    objects = [workload("front", "StatefulSet", 1, affinity=affinity)]
    # The cluster file lists no pods: affinity-no-match is a warning, unschedulable an error.
    both = run(objects, zones(2), select=("topology", "affinity-no-match"))
    assert [(f.rule, f.severity) for f in both.findings] == [("unschedulable", Severity.ERROR)]
    alone = run(objects, zones(2))
    assert (
        "no running pod matches its required pod affinity (app=nothing)"
        in only(alone, "unschedulable").message
    )
    # --closed: affinity-no-match is an error too, and a tie goes to it (it names near misses).
    closed = run(objects, zones(2), select=("topology", "affinity-no-match"), closed=True)
    assert [(f.rule, f.severity) for f in closed.findings] == [("affinity-no-match", Severity.ERROR)]
    # Configured severities count: unschedulable lowered to info gives way to the warning.
    lowered = run(
        objects,
        zones(2),
        select=("topology", "affinity-no-match"),
        severity={"unschedulable": Severity.INFO},
    )
    assert [(f.rule, f.severity) for f in lowered.findings] == [("affinity-no-match", Severity.WARNING)]
    # Either alone reports the pods.
    assert rules_of(run(objects, zones(2), select=("affinity-no-match",))) == ["affinity-no-match"]


def test_unschedulable_undeclared_ephemeral_storage_is_a_warning_about_the_cluster_file() -> None:
    # A hand-written Node without ephemeral-storage (kubelets always report it; a ClusterTopology
    # pool that declares none leaves it unchecked instead: tests/test_simulate.py).
    written = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n", "labels": {"kubernetes.io/hostname": "n"}},
        "status": {"allocatable": {"cpu": "4", "pods": 10}},
    }
    containers = [{"name": "c", "image": "x", "resources": {"requests": {"ephemeral-storage": "1Gi"}}}]
    finding = only(run([workload("app", containers=containers)], [written]), "unschedulable")
    assert finding.severity == Severity.WARNING
    assert "the cluster file declares no allocatable ephemeral-storage" in finding.message


def test_unschedulable_daemonset_pod_names_its_node() -> None:
    containers = [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "3"}}}]
    cluster = [node("big", cpu="8"), node("small", cpu="2")]
    finding = only(
        run([workload("agent", "DaemonSet", None, containers=containers)], cluster), "unschedulable"
    )
    assert finding.message == "its pod for node small stays Pending: on small: Insufficient cpu"


# --- one rule per Pending workload -------------------------------------------------------------------


MIXED = [
    workload("nosel", nodeSelector={"pool": "none"}),
    workload("typo", topologySpreadConstraints=spread("topology.kubernetes.io/zon", {"app": "typo"})),
    workload("kafka", "StatefulSet", 4, affinity=anti("topology.kubernetes.io/zone", {"app": "kafka"})),
    workload(
        "api",
        replicas=5,
        topologySpreadConstraints=spread("topology.kubernetes.io/zone", {"app": "api"}, minDomains=4),
    ),
    workload("fat", containers=[{"name": "c", "image": "x", "resources": {"requests": {"cpu": "64"}}}]),
    workload("fine", "StatefulSet", 3, affinity=anti("topology.kubernetes.io/zone", {"app": "fine"})),
]


def test_each_pending_workload_is_reported_by_exactly_one_rule() -> None:
    result = run(MIXED, zones(3))
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
    result = run(MIXED, zones(3), severity={rule: Severity.INFO})
    if rule == "unschedulable":
        assert [f.severity for f in result.findings if f.rule == rule] == [Severity.INFO]
        return
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
    result = run(MIXED, zones(3), select=("unschedulable",))
    assert name in {f.object.name for f in result.findings if f.object is not None}
    both = run(MIXED, zones(3), select=("unschedulable", rule))
    assert {f.object.name: f.rule for f in both.findings if f.object is not None}[name] == rule


def test_the_analysis_is_shared_by_the_rules_of_one_run() -> None:
    context = context_of(MIXED, zones(3))
    assert analysis(context) is analysis(context)
    assert analysis(context_of(MIXED, None)) is None


def test_schedule_anyway_on_a_key_some_nodes_lack_is_quiet() -> None:
    """Upstream scoring (podtopologyspread/scoring.go initPreScoreState) skips the nodes lacking a
    soft constraint's key; they score 0. A preference for zones on a cluster without zone labels
    is quiet (topology-key-absent stays quiet for the well-known zone key). The simulation once
    raised a KeyError here (Simulation.spread_nodes read the soft key on every node)."""
    constraints = spread("topology.kubernetes.io/zone", {"app": "web"}, hard=False)
    objects = [workload("web", replicas=2, topologySpreadConstraints=constraints)]
    assert run(objects, [node("n1"), node("n2"), node("n3", zone="a")]).findings == ()
    custom = spread("example.com/row", {"app": "web"}, hard=False)
    objects[0]["spec"]["template"]["spec"]["topologySpreadConstraints"] = custom
    finding = only(run(objects, [node("n1"), node("n2")]), "topology-key-absent")
    assert finding.severity == Severity.INFO
    assert "every node scores the same for it, so it spreads nothing" in finding.message


def test_examples_text_is_valid_yaml() -> None:
    """The builders above produce what the loader reads (a guard for the helpers themselves)."""
    text = text_of([workload("a")])
    assert parse("x.yaml", textwrap.dedent(text)).documents
