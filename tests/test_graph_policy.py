"""The graph rules on cluster policy: all-namespaces-anti-affinity, anti-affinity-blocks-daemonset,
pdb-overlap and replicas-not-spread (the 2015 design, kubernetes/design-proposals-archive
``scheduling/podaffinity.md``, "Denial of Service" and "Co-existing with daemons"; eviction:
``pkg/registry/core/pod/storage/eviction.go``; default spreading: ``systemDefaultConstraints`` in
``pkg/scheduler/framework/plugins/podtopologyspread``)."""

from __future__ import annotations

import functools
import json
import textwrap
from typing import Any

import pytest

from kaffinity.engine import LintResult
from kaffinity.explain.wording import name_list
from kaffinity.findings import Finding, Severity
from kaffinity.rules import BY_NAME

from . import kit
from .kit import keys, lines, lint_text, position

ALL_NS, DAEMON, OVERLAP, SPREAD = (
    "all-namespaces-anti-affinity",
    "anti-affinity-blocks-daemonset",
    "pdb-overlap",
    "replicas-not-spread",
)


def run(text: str, rule: str, **settings: Any) -> LintResult:
    return lint_text(textwrap.dedent(text), select=(rule,), **settings)


#: StatefulSets of one replica unless said otherwise.
workload = functools.partial(kit.workload, kind="StatefulSet")


def term(selector: dict[str, Any] | None, key: str = "kubernetes.io/hostname", **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"topologyKey": key, **more}
    if selector is not None:
        out["labelSelector"] = selector
    return out


def pdb(name: str, namespace: str, selector: dict[str, Any] | None, api: str = "policy/v1") -> dict[str, Any]:
    spec: dict[str, Any] = {"maxUnavailable": 1}
    if selector is not None:
        spec["selector"] = selector
    return {
        "apiVersion": api,
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def hpa(
    target: str, namespace: str, minimum: int | None, kind: str = "Deployment", api: str = "autoscaling/v2"
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": kind, "name": target},
        "maxReplicas": 10,
    }
    if minimum is not None:
        spec["minReplicas"] = minimum
    return {
        "apiVersion": api,
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": target, "namespace": namespace},
        "spec": spec,
    }


def findings(
    *objects: dict[str, Any], rule: str, cluster: list[dict[str, Any]] | None = None
) -> list[Finding]:
    """Lint objects (one JSON document each, so each starts on its own line) with one rule."""
    declared = kit.manifest(cluster) if cluster is not None else None
    return list(lint_text(kit.manifest(objects), "input.yaml", cluster=declared, select=(rule,)).findings)


def related_lines(finding: Finding) -> list[int | None]:
    return [location.span.line if location.span else None for location in finding.related]


def doc_line(objects_before: int) -> int:
    """The line on which the document after ``objects_before`` documents starts (see findings())."""
    return 1 + 2 * objects_before


def doc_at(objects: tuple[dict[str, Any], ...], index: int, needle: str) -> tuple[int, int]:
    """(line, column) of ``needle`` in the document ``objects[index]`` as findings() writes it."""
    return position(kit.manifest(objects), needle, 1, after=json.dumps(objects[index]))


def test_the_rules_are_graph_rules_with_their_severities() -> None:
    assert {BY_NAME[name].category for name in (ALL_NS, DAEMON, OVERLAP, SPREAD)} == {"graph"}
    assert BY_NAME[ALL_NS].severity is Severity.ERROR
    assert BY_NAME[DAEMON].severity is Severity.WARNING
    assert BY_NAME[OVERLAP].severity is Severity.WARNING
    assert BY_NAME[SPREAD].severity is Severity.INFO
    assert all(BY_NAME[name].needs_all_manifests for name in (ALL_NS, DAEMON, OVERLAP, SPREAD))


def test_name_list_shows_the_first_few_distinct_names_and_counts_the_rest() -> None:
    assert name_list(["a"]) == "a"
    assert name_list(["a", "b"]) == "a and b"
    assert name_list(["a", "a", "b", "c"]) == "a, b and c"
    assert name_list([str(n) for n in range(15)]) == "0, 1, 2 and 12 more"


# -- all-namespaces-anti-affinity -----------------------------------------------------------------

ALL_NAMESPACES = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: exclusive, namespace: ops}
spec:
  serviceName: exclusive
  selector: {matchLabels: {app: exclusive}}
  template:
    metadata: {labels: {app: exclusive}}
    spec:
      containers: [{name: c, image: x}]
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {tier: batch}}
              namespaceSelector: {}
              topologyKey: topology.kubernetes.io/zone
"""


def _batch(name: str, namespace: str) -> str:
    return f"""\
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}, tier: batch}}}}
    spec: {{containers: [{{name: c, image: x}}]}}
"""


def test_all_namespaces_with_a_zone_key_is_an_error_naming_who_it_locks_out() -> None:
    text = ALL_NAMESPACES + _batch("reports", "finance") + _batch("etl", "data") + _batch("local", "ops")
    result = run(text, ALL_NS)
    assert keys(result) == [(ALL_NS, *position(text, "namespaceSelector: {}"))]
    (finding,) = result.findings
    assert finding.severity is Severity.ERROR
    assert "all namespaces" in finding.message and "topology.kubernetes.io/zone" in finding.message
    # Named in (namespace, kind, name) order, whatever the order of the documents and files.
    assert "Deployment/data/etl and Deployment/finance/reports" in finding.message
    assert "ops/local" not in finding.message  # same namespace: not what all-namespaces adds
    assert [(loc.span.line, loc.span.column) for loc in finding.related if loc.span] == [
        position(text, "template:", 3),
        position(text, "template:", 2),
    ]
    assert finding.fix and "namespaces" in finding.fix
    swapped = ALL_NAMESPACES + _batch("local", "ops") + _batch("etl", "data") + _batch("reports", "finance")
    assert [f.message for f in run(swapped, ALL_NS).findings] == [finding.message]


def test_many_victims_are_counted_and_none_is_said_so() -> None:
    text = ALL_NAMESPACES + "".join(_batch(f"job{n}", f"team{n}") for n in range(15))
    (finding,) = run(text, ALL_NS).findings
    assert (  # the first three in (namespace, kind, name) order: team10 sorts before team2
        "Deployment/team0/job0, Deployment/team1/job1, Deployment/team10/job10 and 12 more" in finding.message
    )
    assert len(finding.related) == 3
    (alone,) = run(ALL_NAMESPACES, ALL_NS).findings
    assert "nothing else in the input matches it yet" in alone.message and not alone.related


def test_an_empty_label_selector_with_hostname_is_a_warning_naming_its_namespace_neighbours() -> None:
    objects = [
        workload("loner", "ns-a", {"app": "loner"}, anti=[term({})]),
        workload("neighbour", "ns-a", {"app": "neighbour"}),
        workload("elsewhere", "ns-b", {"app": "elsewhere"}),
    ]
    (finding,) = findings(*objects, rule=ALL_NS)
    assert finding.severity is Severity.WARNING
    assert finding.path.endswith("labelSelector")
    assert "StatefulSet/ns-a/neighbour" in finding.message and "elsewhere" not in finding.message
    assert "exclusive node" in finding.message


def test_an_empty_selector_over_every_namespace_names_everyone() -> None:
    objects = [
        workload(
            "hog",
            "ns-a",
            {"app": "hog"},
            anti=[term({}, "topology.kubernetes.io/region", namespaceSelector={})],
        ),
        workload("neighbour", "ns-a", {"app": "neighbour"}),
        workload("elsewhere", "ns-b", {"app": "elsewhere"}),
    ]
    (finding,) = findings(*objects, rule=ALL_NS)
    assert finding.severity is Severity.ERROR and finding.path.endswith("namespaceSelector")
    assert "StatefulSet/ns-a/neighbour and StatefulSet/ns-b/elsewhere" in finding.message
    assert "region" in finding.message


def test_specific_selectors_scopes_and_soft_terms_are_quiet() -> None:
    objects = [
        workload(
            "a",
            "ns-a",
            {"app": "a"},
            anti=[term({"matchLabels": {"app": "b"}}, "topology.kubernetes.io/zone")],
        ),
        workload(
            "b",
            "ns-a",
            {"app": "b"},
            anti=[term({"matchLabels": {"app": "a"}}, namespaceSelector={"matchLabels": {"team": "x"}})],
        ),
        workload("c", "ns-a", {"app": "c"}, preferred=[term({}, namespaceSelector={})]),
        workload(
            "d", "ns-a", {"app": "d"}, anti=[term(None, namespaceSelector={"matchLabels": {"team": "x"}})]
        ),
        workload("e", "ns-a", {"app": "e"}, affinity=[term({}, namespaceSelector={})]),
    ]
    assert findings(*objects, rule=ALL_NS) == []


def test_match_label_keys_make_an_empty_selector_specific() -> None:
    """kube-apiserver merges matchLabelKeys into the selector (``pkg/registry/core/pod/strategy.go``):
    no longer {}."""
    objects = [
        {
            **workload(
                "web",
                "ns-a",
                {"app": "web"},
                kind="Deployment",
                anti=[term({}, matchLabelKeys=["pod-template-hash"])],
            ),
        }
    ]
    assert findings(*objects, rule=ALL_NS) == []


def test_configured_severity_wins_over_the_hostname_warning() -> None:
    objects = [workload("loner", "ns-a", {"app": "loner"}, anti=[term({})])]
    text = json.dumps(objects[0])
    result = lint_text(text, "input.yaml", select=(ALL_NS,), severity={ALL_NS: Severity.INFO})
    assert [finding.severity for finding in result.findings] == [Severity.INFO]


# -- anti-affinity-blocks-daemonset ---------------------------------------------------------------

DAEMONSET = workload("fluent-bit", "logging", {"app": "fluent-bit", "tier": "infra"}, kind="DaemonSet")


def test_anti_affinity_on_a_label_the_daemonset_shares_is_reported_with_the_daemonset() -> None:
    cache = workload(
        "cache",
        "logging",
        {"app": "cache"},
        kind="Deployment",
        anti=[term({"matchLabels": {"tier": "infra"}})],
    )
    (finding,) = findings(DAEMONSET, cache, rule=DAEMON)
    assert finding.severity is Severity.WARNING
    assert (finding.line, finding.column) == doc_at((DAEMONSET, cache), 1, '{"topologyKey"')
    assert "DaemonSet/logging/fluent-bit" in finding.message
    assert "node" in finding.message and "symmetry" in finding.message
    assert related_lines(finding) == [doc_line(0)]


def test_zone_keys_and_all_namespace_terms_reach_a_daemonset_elsewhere() -> None:
    zone = workload(
        "zonal",
        "apps",
        {"app": "zonal"},
        anti=[
            term({"matchLabels": {"tier": "infra"}}, "topology.kubernetes.io/zone", namespaces=["logging"])
        ],
    )
    (finding,) = findings(DAEMONSET, zone, rule=DAEMON)
    assert "zone" in finding.message and "fluent-bit" in finding.message


def test_selectors_scopes_and_own_terms_that_miss_the_daemonset_are_quiet() -> None:
    objects = [
        DAEMONSET,
        # excludes the DaemonSet's pods
        workload(
            "a",
            "logging",
            {"app": "a"},
            anti=[
                term(
                    {
                        "matchLabels": {"tier": "infra"},
                        "matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["fluent-bit"]}],
                    }
                )
            ],
        ),
        # the DaemonSet is outside the term's namespace
        workload("b", "apps", {"app": "b"}, anti=[term({"matchLabels": {"tier": "infra"}})]),
        # preferred only
        workload("c", "logging", {"app": "c"}, preferred=[term({"matchLabels": {"tier": "infra"}})]),
        # a DaemonSet's term on its own pods
        workload(
            "agent",
            "logging",
            {"app": "agent"},
            kind="DaemonSet",
            anti=[term({"matchLabels": {"app": "agent"}})],
        ),
    ]
    assert findings(*objects, rule=DAEMON) == []


def test_a_daemonset_on_another_node_pool_is_quiet_on_hostname_only() -> None:
    gpu_daemon = workload(
        "gpu-agent",
        "ops",
        {"app": "gpu-agent", "tier": "infra"},
        kind="DaemonSet",
        pod={"nodeSelector": {"pool": "gpu"}},
    )
    on_general = {"nodeSelector": {"pool": "general"}}
    host = workload("h", "ops", {"app": "h"}, anti=[term({"matchLabels": {"tier": "infra"}})], pod=on_general)
    zone = workload(
        "z",
        "ops",
        {"app": "z"},
        anti=[term({"matchLabels": {"tier": "infra"}}, "topology.kubernetes.io/zone")],
        pod=on_general,
    )
    objects = (gpu_daemon, host, zone)
    assert keys(findings(*objects, rule=DAEMON)) == [(DAEMON, *doc_at(objects, 2, '{"topologyKey"'))]


def test_another_daemonset_matched_counts() -> None:
    agent = workload(
        "agent",
        "logging",
        {"app": "agent"},
        kind="DaemonSet",
        anti=[term({"matchLabels": {"tier": "infra"}})],
    )
    (finding,) = findings(DAEMONSET, agent, rule=DAEMON)
    assert "fluent-bit" in finding.message


# -- pdb-overlap ----------------------------------------------------------------------------------


def test_two_budgets_on_the_same_pods_are_each_reported_at_their_selector() -> None:
    web = workload("web", "shop", {"app": "web", "tier": "frontend"})
    admin = workload("admin", "shop", {"app": "admin", "tier": "frontend"})
    objects = [
        web,
        admin,
        pdb("web", "shop", {"matchLabels": {"app": "web"}}),
        pdb("frontend", "shop", {"matchLabels": {"tier": "frontend"}}),
    ]
    result = findings(*objects, rule=OVERLAP)
    assert [(f.line, f.path) for f in result] == [
        (doc_line(2), "spec.selector"),
        (doc_line(3), "spec.selector"),
    ]
    first, second = result
    assert (
        "frontend" in first.message
        and "StatefulSet/shop/web" in first.message
        and "admin" not in first.message
    )
    assert "more than one PodDisruptionBudget" in first.message
    assert "PodDisruptionBudget web" in second.message or "and web" in second.message
    assert related_lines(first) == [doc_line(3)]
    assert related_lines(second) == [doc_line(2)]
    assert all(f.severity is Severity.WARNING for f in result)


def test_three_budgets_name_both_others() -> None:
    web = workload("web", "shop", {"app": "web", "tier": "frontend", "team": "a"})
    objects = [
        web,
        pdb("one", "shop", {"matchLabels": {"app": "web"}}),
        pdb("two", "shop", {"matchLabels": {"tier": "frontend"}}),
        pdb("three", "shop", {}),
    ]
    result = findings(*objects, rule=OVERLAP)
    assert len(result) == 3
    # The others in (namespace, kind, name) order, not in the order they were written.
    assert "three and two" in result[0].message and len(result[0].related) == 2


def test_disjoint_other_namespace_nil_v1beta1_empty_and_scaled_to_zero_are_quiet() -> None:
    objects = [
        workload("web", "shop", {"app": "web", "tier": "frontend"}),
        workload("idle", "shop", {"app": "idle", "tier": "idle"}, replicas=0),
        pdb("web", "shop", {"matchLabels": {"app": "web"}}),
        pdb("other-ns", "elsewhere", {"matchLabels": {"app": "web"}}),
        pdb("nil", "shop", None),
        # policy/v1beta1: an empty selector selects no pod (changed in policy/v1)
        pdb("old-empty", "shop", {}, api="policy/v1beta1"),
        pdb("idle-a", "shop", {"matchLabels": {"app": "idle"}}),
        pdb("idle-b", "shop", {"matchLabels": {"tier": "idle"}}),
    ]
    assert findings(*objects, rule=OVERLAP) == []


def test_the_same_budget_twice_is_one_object_not_an_overlap() -> None:
    """Two documents with one name are variants of one object (overlays, fixtures linted together)."""
    objects = [
        workload("web", "shop", {"app": "web"}),
        pdb("web", "shop", {"matchLabels": {"app": "web"}}),
        pdb("web", "shop", {"matchLabels": {"app": "web"}}),
    ]
    assert findings(*objects, rule=OVERLAP) == []


def test_existing_pods_of_a_cluster_file_count() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "legacy-0",
            "namespace": "shop",
            "labels": {"app": "legacy", "tier": "frontend"},
        },
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]},
    }
    objects = [
        pdb("legacy", "shop", {"matchLabels": {"app": "legacy"}}),
        pdb("frontend", "shop", {"matchLabels": {"tier": "frontend"}}),
    ]
    result = findings(*objects, rule=OVERLAP, cluster=[pod])
    assert len(result) == 2
    assert "1 existing pod in shop (app=legacy,tier=frontend)" in result[0].message


# -- replicas-not-spread --------------------------------------------------------------------------


def test_replicas_without_spreading_are_advice_at_spec_replicas() -> None:
    (finding,) = findings(workload("web", "shop", {"app": "web"}, kind="Deployment", replicas=3), rule=SPREAD)
    assert finding.severity is Severity.INFO and finding.path == "spec.replicas"
    assert "3 replicas" in finding.message and "maxSkew 3" in finding.message
    assert finding.fix and "pod-template-hash" in finding.fix


@pytest.mark.parametrize(
    "spreading",
    [
        {"anti": [term({"matchLabels": {"app": "web"}})]},
        {"preferred": [term({"matchLabels": {"app": "web"}}, "topology.kubernetes.io/zone")]},
        # any constraint counts, even one that does not select the workload's own pods
        {
            "spread": [
                {
                    "maxSkew": 1,
                    "topologyKey": "kubernetes.io/hostname",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": "other"}},
                }
            ]
        },
        {"affinity": [term({"matchLabels": {"app": "web"}})]},
        {"pod": {"nodeSelector": {"kubernetes.io/hostname": "n1"}}},
        {"pod": {"nodeName": "n1"}},
        {
            "pod": {
                "containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 80, "hostPort": 80}]}]
            }
        },
    ],
)
def test_anything_that_spreads_or_places_the_replicas_is_quiet(spreading: dict[str, Any]) -> None:
    assert findings(workload("web", "shop", {"app": "web"}, replicas=3, **spreading), rule=SPREAD) == []


def test_anti_affinity_on_other_pods_does_not_spread_and_the_message_says_so() -> None:
    web = workload("web", "shop", {"app": "web"}, replicas=2, anti=[term({"matchLabels": {"app": "batch"}})])
    (finding,) = findings(web, rule=SPREAD)
    assert "does not select its own pods (labels app=web)" in finding.message


@pytest.mark.parametrize("kind", ["DaemonSet", "Job", "CronJob", "Pod"])
def test_other_kinds_are_skipped(kind: str) -> None:
    obj: dict[str, Any]
    if kind in ("DaemonSet",):
        obj = workload("x", "shop", {"app": "x"}, kind=kind)
    elif kind == "Pod":
        obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "x", "namespace": "shop", "labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        }
    else:
        job = {
            "parallelism": 3,
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]},
            },
        }
        spec = job if kind == "Job" else {"schedule": "* * * * *", "jobTemplate": {"spec": job}}
        obj = {
            "apiVersion": "batch/v1",
            "kind": kind,
            "metadata": {"name": "x", "namespace": "shop"},
            "spec": spec,
        }
    assert findings(obj, rule=SPREAD) == []


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "ReplicaSet"])
def test_replicated_kinds_fire_and_single_or_default_replicas_do_not(kind: str) -> None:
    assert len(findings(workload("x", "shop", {"app": "x"}, kind=kind, replicas=2), rule=SPREAD)) == 1
    assert findings(workload("x", "shop", {"app": "x"}, kind=kind, replicas=1), rule=SPREAD) == []
    assert findings(workload("x", "shop", {"app": "x"}, kind=kind, replicas=None), rule=SPREAD) == []


def test_replication_controllers_fire() -> None:
    text = """\
    apiVersion: v1
    kind: ReplicationController
    metadata: {name: rc, namespace: shop}
    spec:
      replicas: 3
      template:
        metadata: {labels: {app: rc}}
        spec: {containers: [{name: c, image: x}]}
    """
    assert lines(run(text, SPREAD)) == [(SPREAD, 5)]


def test_a_template_without_labels_is_a_fragment_and_quiet() -> None:
    text = """\
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: patch}
    spec:
      replicas: 2
      template:
        spec:
          affinity:
            podAntiAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                - labelSelector: {matchLabels: {app: patch}}
                  topologyKey: kubernetes.io/hostname
    """
    assert lines(run(text, SPREAD)) == []


def test_an_autoscaler_decides_the_replica_count() -> None:
    web = workload("web", "shop", {"app": "web"}, kind="Deployment", replicas=5)
    # minReplicas defaults to 1: the autoscaler may run one replica; quiet
    assert findings(web, hpa("web", "shop", None, api="autoscaling/v1"), rule=SPREAD) == []
    assert findings(web, hpa("web", "shop", 1), rule=SPREAD) == []
    # minReplicas 3 with a replicas field: reported at spec.replicas, the autoscaler related
    objects = (web, hpa("web", "shop", 3))
    (finding,) = findings(*objects, rule=SPREAD)
    assert (finding.line, finding.column) == doc_at(
        objects, 0, '"replicas"'
    ) and finding.path == "spec.replicas"
    assert "at least 3 replicas" in finding.message
    assert "HorizontalPodAutoscaler web" in finding.message and related_lines(finding) == [doc_line(1)]
    # another namespace, kind or name: not this workload's autoscaler
    assert len(findings(web, hpa("web", "other", 1), rule=SPREAD)) == 1
    assert len(findings(web, hpa("web", "shop", 1, kind="StatefulSet"), rule=SPREAD)) == 1


def test_an_autoscaler_counts_when_the_replicas_field_is_absent() -> None:
    text = """\
    apiVersion: apps/v1
    kind: StatefulSet
    metadata: {name: db, namespace: shop}
    spec:
      serviceName: db
      selector: {matchLabels: {app: db}}
      template:
        metadata: {labels: {app: db}}
        spec: {containers: [{name: c, image: x}]}
    ---
    apiVersion: autoscaling/v2
    kind: HorizontalPodAutoscaler
    metadata: {name: db-hpa, namespace: shop}
    spec:
      scaleTargetRef: {apiVersion: apps/v1, kind: StatefulSet, name: db}
      minReplicas: 2
      maxReplicas: 4
    """
    result = run(text, SPREAD)
    assert keys(result) == [(SPREAD, *position(textwrap.dedent(text), "minReplicas"))]
    assert "db-hpa" in result.findings[0].message
