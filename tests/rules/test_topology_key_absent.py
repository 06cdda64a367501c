"""The rule ``topology-key-absent`` (kaffinity/rules/topology_key_absent.py): a topology key no
eligible node of the cluster carries, reported at the key with a severity per kind of term and a
close key suggested.

Upstream: kube-scheduler's PodTopologySpread (podtopologyspread/filtering.go, scoring.go
initPreScoreState) and InterPodAffinity plugins, which treat a node lacking the key as outside
every domain.
"""

from __future__ import annotations

from kaffinity.findings import Severity

from ..kit import assert_found, keys, line_of
from .pending_inputs import anti, lint_on_cluster, node, pending_workload, spread, text_of, where, zones

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
        pending_workload("a", "StatefulSet", 1, affinity=preferred),
        pending_workload("b", topologySpreadConstraints=spread("example.com/rack", {"app": "b"})),
        pending_workload(
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
    result = lint_on_cluster(objects, cluster)
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
    # Related: the labels of the eligible nodes n1 and n2 in the cluster file.
    labels = {("cluster.yaml", line_of(text_of(cluster), '"labels"', n)) for n in (1, 2)}
    assert {
        (loc.file, loc.span.line if loc.span else None) for f in result.findings for loc in f.related
    } == labels


def test_key_absent_only_counts_eligible_nodes_and_suggests_a_close_key() -> None:
    """The key exists on a node the pod may not use (its nodeSelector excludes it): still absent."""
    objects = [
        pending_workload(
            "web",
            nodeSelector={"pool": "web"},
            topologySpreadConstraints=spread("example.com/rakc", {"app": "web"}),
        )
    ]
    cluster = [
        node("n1", labels={"pool": "web", "example.com/rack": "r1"}),
        node("n2", labels={"pool": "db", "example.com/rakc": "r2"}),
    ]
    found = assert_found(
        lint_on_cluster(objects, cluster),
        "topology-key-absent",
        *where(objects, '"topologyKey": "example.com/rakc"'),
        severity="error",
        path="spec.template.spec.topologySpreadConstraints[0].topologyKey",
    )
    # Related: the labels of n1 only, the one node its pods may run on.
    assert [(r["file"], r["line"]) for r in found["related"]] == [
        ("cluster.yaml", line_of(text_of(cluster), '"labels"', 1))
    ]
    assert found["fix"] is not None and "did you mean example.com/rack?" in found["fix"]


def test_key_absent_deprecated_zone_key_suggests_the_ga_key() -> None:
    objects = [
        pending_workload(
            "db",
            "StatefulSet",
            2,
            affinity=anti("failure-domain.beta.kubernetes.io/zone", {"app": "db"}),
        )
    ]
    found = assert_found(
        lint_on_cluster(objects, zones()),
        "topology-key-absent",
        *where(objects, '"topologyKey": "failure-domain.beta.kubernetes.io/zone"'),
        severity="warning",
    )
    assert found["fix"] is not None and "use topology.kubernetes.io/zone" in found["fix"]


def test_key_absent_hostname_missing_from_the_cluster_file_is_a_warning_about_the_file() -> None:
    objects = [
        pending_workload("web", topologySpreadConstraints=spread("kubernetes.io/hostname", {"app": "web"}))
    ]
    cluster = [node("n1", zone="a", hostname=False)]
    found = assert_found(
        lint_on_cluster(objects, cluster),
        "topology-key-absent",
        *where(objects, '"topologyKey": "kubernetes.io/hostname"'),
        severity="warning",
    )
    # The wording is the subject here: the cluster file is what is wrong, not the manifest.
    assert "the kubelet sets it on every node" in found["message"]
    # Required anti-affinity on hostname without the label: nothing (the file is what is wrong).
    quiet = [pending_workload("db", "StatefulSet", 2, affinity=anti("kubernetes.io/hostname", {"app": "db"}))]
    assert keys(lint_on_cluster(quiet, cluster)) == []


def test_key_absent_is_quiet_without_eligible_nodes_and_for_an_empty_key() -> None:
    objects = [
        pending_workload(
            "gpu", nodeSelector={"pool": "gpu"}, topologySpreadConstraints=spread("x/y", {"app": "gpu"})
        ),
        pending_workload("bad", topologySpreadConstraints=spread("", {"app": "bad"})),
    ]
    result = lint_on_cluster(objects, zones())
    # gpu: no node at all (no-eligible-node says so); bad: rejected by the API server.
    assert keys(result) == [("no-eligible-node", *where(objects, '"pool": "gpu"'))]


def test_schedule_anyway_on_a_key_some_nodes_lack_is_quiet() -> None:
    """Upstream scoring (podtopologyspread/scoring.go initPreScoreState) skips the nodes lacking a
    soft constraint's key; they score 0. A preference for zones on a cluster without zone labels
    is quiet (topology-key-absent stays quiet for the well-known zone key). The simulation once
    raised a KeyError here (Simulation.spread_nodes read the soft key on every node)."""
    constraints = spread("topology.kubernetes.io/zone", {"app": "web"}, hard=False)
    objects = [pending_workload("web", replicas=2, topologySpreadConstraints=constraints)]
    assert keys(lint_on_cluster(objects, [node("n1"), node("n2"), node("n3", zone="a")])) == []
    custom = spread("example.com/row", {"app": "web"}, hard=False)
    objects[0]["spec"]["template"]["spec"]["topologySpreadConstraints"] = custom
    assert_found(
        lint_on_cluster(objects, [node("n1"), node("n2")]),
        "topology-key-absent",
        *where(objects, '"topologyKey": "example.com/row"'),
        severity="info",
    )
