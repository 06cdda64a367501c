"""Rollouts simulated on the declared cluster (rollout-deadlock) and budgets that block evictions
(pdb-blocks-eviction)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kaffinity.config import Settings
from kaffinity.context import Context
from kaffinity.engine import LintResult, lint
from kaffinity.findings import Severity
from kaffinity.k8s.fenceposts import (
    Budget,
    daemonset_budget,
    deployment_budget,
    scaled,
    statefulset_budget,
    statefulset_parallel_gate,
)
from kaffinity.load.files import load
from kaffinity.simulate.cluster import cluster_from
from kaffinity.simulate.place import place_all
from kaffinity.simulate.rollout.deployment import deletion_order
from kaffinity.simulate.rollout.simulation import simulate

from . import kit
from .kit import EXAMPLES, findings, keys, line_of, lint_text, position

ROLLOUT = "rollout-deadlock"
PDB = "pdb-blocks-eviction"


def nodes_cluster(count: int, cpu: str = "2", zones: int | None = None) -> str:
    """A ClusterTopology of ``count`` nodes, one per zone unless ``zones`` is given."""
    zones = zones or count
    per_zone = count // zones
    text = "apiVersion: kaffinity.io/v1alpha1\nkind: ClusterTopology\nmetadata: {name: c}\nspec:\n"
    text += "  labels: {kubernetes.io/os: linux}\n  zones:\n"
    for zone in range(zones):
        text += f"    - name: z{zone}\n      region: r\n      pools:\n"
        text += f"        - {{name: pool, count: {per_zone}, "
        text += f"allocatable: {{cpu: '{cpu}', memory: 8Gi, pods: 110}}}}\n"
    return text


def deployment(
    name: str = "web",
    replicas: int = 3,
    strategy: str = "",
    keys: str = "",
    cpu: str = "100m",
    key: str = "kubernetes.io/hostname",
    kind: str = "Deployment",
    extra: str = "",
    namespace: str = "shop",
) -> str:
    """A workload whose required anti-affinity keeps one pod per ``key`` domain."""
    replicas_line = f"  replicas: {replicas}\n" if kind != "DaemonSet" else ""
    service = "  serviceName: x\n" if kind == "StatefulSet" else ""
    return f"""\
apiVersion: apps/v1
kind: {kind}
metadata: {{name: {name}, namespace: {namespace}}}
spec:
{replicas_line}{service}{strategy}{extra}  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {{matchLabels: {{app: {name}}}}}
              topologyKey: {key}
{keys}      containers: [{{name: c, image: i, resources: {{requests: {{cpu: {cpu}}}}}}}]
"""


SCOPED = "              matchLabelKeys: [pod-template-hash]\n"
IN_PLACE = "  strategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}\n"


def run_lint(
    manifest: str,
    cluster: str | None = None,
    select: tuple[str, ...] = (ROLLOUT,),
    **settings: Any,
) -> LintResult:
    return lint_text(manifest, "app.yaml", cluster=cluster, select=select, **settings)


# --- the arithmetic --------------------------------------------------------------------------


def test_scaled_rounds_percentages_as_intstr() -> None:
    assert scaled("25%", 3, True) == 1
    assert scaled("25%", 3, False) == 0
    assert scaled("25%", 4, False) == 1
    assert scaled("80%", 1, True) == 1
    assert scaled(2, 10, True) == 2
    assert scaled("abc", 3, True) is None
    assert scaled("12.5%", 3, True) is None
    assert scaled(None, 3, True) is None


def test_deployment_fenceposts() -> None:
    default = deployment_budget(kit.workload_of(deployment()), 3)
    assert default is not None and (default.surge, default.unavailable) == (1, 0)
    assert "25% of 3, rounded down" in default.text
    four = deployment_budget(kit.workload_of(deployment(replicas=4)), 4)
    assert four is not None and (four.surge, four.unavailable) == (1, 1)
    # ResolveFenceposts: both resolving to 0 gives maxUnavailable 1.
    zero = deployment_budget(
        kit.workload_of(
            deployment(strategy="  strategy: {rollingUpdate: {maxSurge: 0%, maxUnavailable: 10%}}\n")
        ),
        3,
    )
    assert zero is not None and (zero.surge, zero.unavailable) == (0, 1)
    assert "both 0" in zero.text


def test_daemonset_rounds_both_up() -> None:
    text = deployment(
        kind="DaemonSet", strategy="  updateStrategy: {rollingUpdate: {maxSurge: 10%, maxUnavailable: 0}}\n"
    )
    budget = daemonset_budget(kit.workload_of(text), 3)
    assert budget is not None and (budget.surge, budget.unavailable) == (1, 0)
    default = daemonset_budget(kit.workload_of(deployment(kind="DaemonSet")), 3)
    assert default is not None and (default.surge, default.unavailable) == (0, 1)


def test_statefulset_max_unavailable_needs_the_gate_and_parallel() -> None:
    strategy = "  updateStrategy: {rollingUpdate: {maxUnavailable: 50%}}\n"
    parallel = kit.workload_of(
        deployment(kind="StatefulSet", strategy=strategy, extra="  podManagementPolicy: Parallel\n")
    )
    ordered = kit.workload_of(deployment(kind="StatefulSet", strategy=strategy))
    assert not statefulset_parallel_gate("1.34", {})
    assert statefulset_parallel_gate("1.35", {})
    assert statefulset_parallel_gate("1.34", {"MaxUnavailableStatefulSet": True})
    on = statefulset_budget(parallel, 3, "1.35", {})
    assert on is not None and on.unavailable == 2  # 50% of 3 rounded up
    off = statefulset_budget(parallel, 3, "1.34", {})
    assert off is not None and off.unavailable == 1
    one_by_one = statefulset_budget(ordered, 3, "1.35", {})
    assert one_by_one is not None and one_by_one.unavailable == 1


def test_deletion_order_follows_active_pods_with_ranks(tmp_path: Path) -> None:
    cluster = cluster_from(load([str(_write(tmp_path, "c.yaml", nodes_cluster(2, cpu="8")))]))
    workload = kit.workload_of(deployment(replicas=3).replace("podAntiAffinity", "podAffinity"))
    run = place_all([workload], cluster, version="1.35")
    sim = run.sim
    pods = list(run.pods[id(workload)])
    unassigned = sim.pod(workload, 7)
    order = deletion_order([*pods, unassigned], pods)
    assert order[0] is unassigned  # unassigned before assigned
    # Then the pod sharing its node with more pods of the Deployment, then the newer one.
    crowded = {p.node.name for p in pods if p.node is not None}
    assert order[1].node is not None
    on_node = [p for p in pods if p.node is order[1].node]
    assert len(on_node) == max(
        sum(1 for p in pods if p.node is not None and p.node.name == n) for n in crowded
    )
    assert order[1].replica == max(p.replica for p in on_node)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- rollout-deadlock: the classic cases ------------------------------------------------------


def test_classic_deadlock_is_reported_on_the_term() -> None:
    manifest = deployment()
    result = run_lint(manifest, nodes_cluster(3))
    [finding] = findings(result, ROLLOUT)
    assert finding.severity is Severity.ERROR
    assert (finding.line, finding.column) == position(manifest, "labelSelector")
    assert "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules." in finding.message
    assert "old revision's pods" in finding.message
    assert "maxUnavailable 0 (25% of 3, rounded down)" in finding.message
    assert "run on pool-z0-0, pool-z1-0 and pool-z2-0;" in finding.message
    paths = [r.path for r in finding.related]
    assert "spec" in paths  # the strategy (defaulted: the spec line)
    assert sum(1 for r in finding.related if r.file.endswith("cluster.yaml")) == 3
    assert finding.fix is not None and "maxSurge: 0 and maxUnavailable: 1" in finding.fix
    # matchLabelKeys helps later rollouts; the one adding it still meets the old pods' term.
    assert "matchLabelKeys: [pod-template-hash]" in finding.fix
    assert "must itself replace pods in place" in finding.fix


@pytest.mark.parametrize(
    "manifest",
    [
        deployment(keys=SCOPED),  # each revision counts its own pods; room for two per node
        deployment(strategy=IN_PLACE),  # maxSurge 0 / maxUnavailable 1
        deployment(replicas=2),  # a free node takes the surge pod
        deployment(replicas=4, cpu="100m"),  # 4 nodes below; 25% of 4 rounds down to 1
        deployment(strategy="  strategy: {type: Recreate}\n"),
        deployment(extra="  paused: true\n"),
        deployment(kind="StatefulSet"),  # replaced in place
        deployment(kind="StatefulSet", strategy="  updateStrategy: {type: OnDelete}\n"),
        deployment(kind="DaemonSet"),  # maxUnavailable 1, no surge
        deployment(kind="DaemonSet", strategy="  updateStrategy: {type: OnDelete}\n"),
    ],
    ids=[
        "match-label-keys",
        "in-place",
        "two-of-three",
        "four-of-four",
        "recreate",
        "paused",
        "statefulset",
        "statefulset-ondelete",
        "daemonset",
        "daemonset-ondelete",
    ],
)
def test_rollouts_that_complete(manifest: str) -> None:
    nodes = 4 if "replicas: 4" in manifest else 3
    assert keys(run_lint(manifest, nodes_cluster(nodes))) == []


def test_match_label_keys_without_room_for_the_surge_pod() -> None:
    manifest = deployment(keys=SCOPED, cpu="1500m")
    [finding] = findings(run_lint(manifest, nodes_cluster(3)), ROLLOUT)
    assert "3 Insufficient cpu" in finding.message
    assert (finding.line, finding.column) == position(manifest, "containers:")  # its requests block it
    assert (
        finding.fix
        == "roll out with maxSurge: 0 and maxUnavailable: 1 (simulated: the rollout then completes)"
    )


def test_zone_anti_affinity_with_as_many_replicas_as_zones() -> None:
    manifest = deployment(key="topology.kubernetes.io/zone")
    result = run_lint(manifest, nodes_cluster(6, zones=3))
    assert keys(result) == [(ROLLOUT, *position(manifest, "labelSelector"))]
    assert kit.only(result).severity is Severity.ERROR
    # Two nodes per zone but one pod per zone: no node beside an old pod is free either.


def test_no_cluster_or_no_simulation_stays_quiet() -> None:
    assert keys(run_lint(deployment())) == []
    assert keys(run_lint(deployment(), nodes_cluster(3), simulate=False)) == []


def test_workloads_roll_out_independently() -> None:
    manifest = deployment("a") + "---\n" + deployment("b") + "---\n" + deployment("c", keys=SCOPED)
    result = run_lint(manifest, nodes_cluster(3, cpu="8"))
    assert keys(findings(result, ROLLOUT)) == [
        (ROLLOUT, *position(manifest, "labelSelector", 1)),
        (ROLLOUT, *position(manifest, "labelSelector", 2)),
    ]


def test_a_workload_already_short_of_nodes_is_left_to_the_topology_rules() -> None:
    # kubernetes issue 121388: 7 replicas, one per node, 3 nodes: 4 Pending before any update.
    manifest = deployment(
        replicas=7, strategy="  strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 3}}\n"
    )
    assert keys(run_lint(manifest, nodes_cluster(3))) == []


def test_severity_override() -> None:
    manifest = deployment()
    result = run_lint(manifest, nodes_cluster(3), severity={ROLLOUT: Severity.WARNING})
    kit.assert_found(result, ROLLOUT, *position(manifest, "labelSelector"), severity="warning")
    [finding] = findings(result, ROLLOUT)
    assert finding.severity is Severity.WARNING


# --- upstream incidents -------------------------------------------------------------------------

KUBE_DNS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: kube-dns, namespace: kube-system}
spec:
  replicas: 2
  selector:
    matchLabels:
      k8s-app: kube-dns
  template:
    metadata:
      labels:
        k8s-app: kube-dns
      annotations:
        scheduler.alpha.kubernetes.io/critical-pod: ''
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector:
              matchExpressions:
              - key: k8s-app
                operator: In
                values:
                - kube-dns
            topologyKey: "kubernetes.io/hostname"
      containers:
      - name: kubedns
        image: gcr.io/google_containers/k8s-dns-kube-dns-amd64:1.14.4
"""


def test_kubernetes_56539_kube_dns_one_per_node() -> None:
    """kubernetes#56539: kube-dns spread by required anti-affinity; the upgrade's new pod is
    Pending forever (2 replicas on 2 nodes: 25% of 2 rounds down to 0)."""
    [finding] = findings(run_lint(KUBE_DNS, nodes_cluster(2)), ROLLOUT)
    assert (finding.line, finding.column) == position(KUBE_DNS, "labelSelector")
    assert "0/2 nodes are available" in finding.message


def test_kubernetes_116891_and_the_argo_cd_ha_install() -> None:
    """kubernetes#116891 (nginx, 3 replicas, 3 nodes) and argo-cd's HA redis-ha HAProxy: the
    examples are the manifests of the issue and of manifests/ha/install.yaml."""
    for name in ("fail.yaml", "fail-argocd-ha.yaml"):
        path = EXAMPLES / ROLLOUT / name
        cluster = cluster_from(load([str(EXAMPLES / "clusters" / "rollout-deadlock.yaml")]))
        result = lint(load([str(path)]), Settings(select=(ROLLOUT,)), cluster=cluster)
        text = path.read_text(encoding="utf-8")
        where = position(text, "labelSelector: # expect: rollout-deadlock")
        assert keys(result) == [(ROLLOUT, *where)], name
        assert kit.only(result).path.endswith("requiredDuringSchedulingIgnoredDuringExecution[0]"), name


def test_longhorn_soft_to_hard_against_the_running_pods() -> None:
    """longhorn#13546: the running pods (soft anti-affinity, sharing the only node) and a new
    revision with hard anti-affinity: 2 old pods keep running, new ones wait."""
    cluster = "apiVersion: v1\nkind: List\nitems:\n"
    cluster += "  - {apiVersion: v1, kind: Node, metadata: "
    cluster += "{name: node-1, labels: {kubernetes.io/hostname: node-1}}}\n"
    for i in range(3):
        cluster += (
            f"  - apiVersion: v1\n    kind: Pod\n    metadata: {{name: csi-attacher-{i}, namespace: shop, "
            "labels: {app: csi-attacher}}\n    spec: {nodeName: node-1, containers: [{name: c, image: i}]}\n"
        )
    manifest = deployment("csi-attacher", strategy="  strategy: {rollingUpdate: {maxUnavailable: 1}}\n")
    result = run_lint(manifest, cluster)
    kit.assert_found(result, ROLLOUT, *position(manifest, "labelSelector"), severity="error")
    [finding] = findings(result, ROLLOUT)
    assert "never finish (after removing 1 old pod)" in finding.message
    assert "0/1 nodes are available" in finding.message
    # Neither fix lets 3 pods with a node each run on one node.
    assert finding.fix is not None and finding.fix.startswith("relax the rule")


def test_kubernetes_103584_the_old_pods_keep_the_removed_affinity() -> None:
    """kubernetes#103584: the new revision has no affinity, yet the old pod's required
    anti-affinity keeps it away by symmetry (1 replica, maxUnavailable 0, one node)."""
    path = EXAMPLES / ROLLOUT / "fail-removed-affinity.yaml"
    cluster = cluster_from(load([str(EXAMPLES / "clusters" / "rollout-deadlock-removed.yaml")]))
    result = lint(load([str(path)]), Settings(select=(ROLLOUT,)), cluster=cluster)
    where = position(path.read_text(encoding="utf-8"), "strategy: # expect: rollout-deadlock")
    assert keys(result) == [(ROLLOUT, *where)]
    [finding] = findings(result, ROLLOUT)
    assert "didn't satisfy existing pods anti-affinity rules" in finding.message
    assert (
        "old revision's pod pts-6f8b7c9d4-x2l8q was created with required pod anti-affinity"
        in finding.message
    )
    assert finding.path == "spec.strategy"  # no term of its own: reported at its strategy
    [term] = [
        r for r in finding.related if r.path.endswith("requiredDuringSchedulingIgnoredDuringExecution[0]")
    ]
    assert term.file.endswith("rollout-deadlock-removed.yaml")
    assert "selects it" in term.message
    assert (
        finding.fix
        == "roll out with maxSurge: 0 and maxUnavailable: 1 (simulated: the rollout then completes)"
    )


def test_existing_pods_without_the_rule_let_match_label_keys_help_at_once() -> None:
    path = EXAMPLES / ROLLOUT / "fail-existing.yaml"
    cluster = cluster_from(load([str(EXAMPLES / "clusters" / "rollout-deadlock-existing.yaml")]))
    result = lint(load([str(path)]), Settings(select=(ROLLOUT,)), cluster=cluster)
    where = position(path.read_text(encoding="utf-8"), "labelSelector: # expect: rollout-deadlock")
    assert keys(result) == [(ROLLOUT, *where)]
    [finding] = findings(result, ROLLOUT)
    assert finding.fix is not None
    assert 'add "matchLabelKeys: [pod-template-hash]" to this term' in finding.fix
    assert "(simulated: the rollout then completes)" in finding.fix.split("; or ")[1]


def test_statefulset_blocked_by_a_template_change() -> None:
    path = EXAMPLES / ROLLOUT / "fail-statefulset.yaml"
    cluster = cluster_from(load([str(EXAMPLES / "clusters" / "rollout-deadlock-statefulset.yaml")]))
    [finding] = findings(lint(load([str(path)]), Settings(select=(ROLLOUT,)), cluster=cluster), ROLLOUT)
    assert "queue-2" in finding.message and "cache-0" in finding.message
    assert "OrderedReady" in finding.message
    # The cache's term is the second term of the same workload: a related location.
    text = path.read_text(encoding="utf-8")
    assert (finding.line, finding.column) == position(text, "labelSelector", 1)
    assert (path.name, *position(text, "labelSelector", 2)) in [
        (Path(r.file).name, r.span.line, r.span.column) for r in finding.related if r.span
    ]


def test_statefulset_partition_leaves_the_pods_alone(tmp_path: Path) -> None:
    path = EXAMPLES / ROLLOUT / "fail-statefulset.yaml"
    text = path.read_text().replace(
        "  replicas: 3\n", "  replicas: 3\n  updateStrategy: {rollingUpdate: {partition: 3}}\n"
    )
    (tmp_path / "sts.yaml").write_text(text)
    cluster = cluster_from(load([str(EXAMPLES / "clusters" / "rollout-deadlock-statefulset.yaml")]))
    result = lint(load([str(tmp_path / "sts.yaml")]), Settings(select=(ROLLOUT,)), cluster=cluster)
    assert keys(result) == []


def test_daemonset_surge() -> None:
    surge = "  updateStrategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}\n"
    manifest = deployment("agent", kind="DaemonSet", strategy=surge)
    result = run_lint(manifest, nodes_cluster(3))
    assert keys(result) == [(ROLLOUT, *position(manifest, "labelSelector"))]
    [finding] = findings(result, ROLLOUT)
    assert "beside the old one" in finding.message
    assert "[NodeAffinity]" in finding.message  # the pinned pod: other nodes rejected as upstream
    assert finding.fix is not None and "controller-revision-hash" in finding.fix
    # No room beside the old pod: the same stall without any anti-affinity.
    plain = f"""\
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent, namespace: shop}}
spec:
{surge}  selector: {{matchLabels: {{app: agent}}}}
  template:
    metadata: {{labels: {{app: agent}}}}
    spec: {{containers: [{{name: c, image: i, resources: {{requests: {{cpu: 1500m}}}}}}]}}
"""
    plain_result = run_lint(plain, nodes_cluster(3))
    assert keys(plain_result) == [(ROLLOUT, *position(plain, "containers:"))]  # its requests
    [stall] = findings(plain_result, ROLLOUT)
    assert "Insufficient cpu" in stall.message
    assert (
        stall.fix == "roll out with maxSurge: 0 and maxUnavailable: 1 (simulated: the rollout then completes)"
    )


# --- the simulation leaves the placed state as it was ----------------------------------------


def _state(sim: Any) -> list[Any]:
    return [
        (node.name, sorted((pod.name, pod.revision) for pod in node.pods), sorted(node.requested.items()))
        for node in sim.nodes
    ]


def test_simulation_is_restored(tmp_path: Path) -> None:
    manifest = deployment() + "---\n" + deployment("agent", kind="DaemonSet")
    _write(tmp_path, "app.yaml", manifest)
    _write(tmp_path, "cluster.yaml", nodes_cluster(3))
    context = Context(
        load([str(tmp_path / "app.yaml")]), Settings(), cluster_from(load([str(tmp_path / "cluster.yaml")]))
    )
    run = context.placement
    assert run is not None
    before = _state(run.sim)
    web, agent = context.inventory.workloads
    assert simulate(run, web, version="1.35") is not None
    assert simulate(run, web, version="1.35", budget=Budget(0, 1, "in place")) is None
    assert simulate(run, agent, version="1.35") is None
    assert _state(run.sim) == before
    # Twice the same answer: nothing leaked from one rollout into the next.
    first = simulate(run, web, version="1.35")
    second = simulate(run, web, version="1.35")
    assert first is not None and second is not None
    assert first.placement.summary(3) == second.placement.summary(3)
    assert _state(run.sim) == before


# --- pdb-blocks-eviction ------------------------------------------------------------------------


def budget_manifest(spec: str, workload: str = "", namespace: str = "p") -> str:
    return (
        workload
        + f"""\
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: pdb, namespace: {namespace}}}
spec:
  {spec}
  selector: {{matchLabels: {{app: web}}}}
"""
    )


def app(replicas: int | None = 3, kind: str = "Deployment") -> str:
    replicas_line = (
        f"  replicas: {replicas}\n" if replicas is not None and kind not in ("DaemonSet", "Pod") else ""
    )
    if kind == "Pod":
        return (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: p, labels: {app: web}}\n"
            "spec: {containers: [{name: c, image: i}]}\n"
        )
    if kind == "Job":
        return (
            "apiVersion: batch/v1\nkind: Job\nmetadata: {name: web, namespace: p}\nspec:\n  parallelism: 2\n"
            "  template:\n    metadata: {labels: {app: web}}\n"
            "    spec: {restartPolicy: Never, containers: [{name: c, image: i}]}\n"
        )
    service = "  serviceName: web\n" if kind == "StatefulSet" else ""
    return f"""\
apiVersion: apps/v1
kind: {kind}
metadata: {{name: web, namespace: p}}
spec:
{replicas_line}{service}  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec: {{containers: [{{name: c, image: i}}]}}
"""


@pytest.mark.parametrize(
    ("spec", "workload", "blocked"),
    [
        ("minAvailable: 1", app(1), True),
        ("minAvailable: 1", app(2), False),
        ("minAvailable: 3", app(3), True),
        ("minAvailable: 2", app(3), False),
        ("minAvailable: 100%", app(3), True),
        ("minAvailable: 67%", app(3), True),  # ceil(2.01) = 3
        ("minAvailable: 51%", app(3), False),  # ceil(1.53) = 2
        ("minAvailable: 80%", app(1), True),
        ("maxUnavailable: 0", app(3), True),
        ("maxUnavailable: 0%", app(3), True),
        ("maxUnavailable: 10%", app(3), False),  # rounded up to 1
        ("maxUnavailable: 1", app(3, "StatefulSet"), False),
        ("maxUnavailable: 1", app(None), False),  # replicas defaults to 1: 1 - 1 = 0 required
        ("minAvailable: 0", app(1), False),
        ("selector: {}", app(1), False),  # neither field: nothing required
        ("maxUnavailable: 1", app(kind="DaemonSet"), True),  # no scale subresource: SyncFailed
        ("minAvailable: 1", app(kind="DaemonSet"), False),  # pod count unknown without a cluster
        ("maxUnavailable: 1", app(kind="Job"), True),  # jobs.batch: no scale subresource
        ("minAvailable: 1", app(kind="Job"), False),  # 2 pods at a time
        ("maxUnavailable: 1", app(kind="Pod"), True),  # no controller: expectedPods 0
        ("minAvailable: 0", app(kind="Pod"), False),
        ("minAvailable: 1", app(0), False),  # no pods, nothing to evict
    ],
)
def test_disruptions_allowed(spec: str, workload: str, blocked: bool) -> None:
    spec_text = spec if spec != "selector: {}" else "unhealthyPodEvictionPolicy: AlwaysAllow"
    manifest = budget_manifest(spec_text, workload)
    result = run_lint(manifest, select=(PDB,))
    found = findings(result, PDB)
    assert bool(found) is blocked, [f.message for f in found]
    if blocked:
        [finding] = found
        assert finding.severity is Severity.WARNING
        assert finding.line == line_of(manifest, spec_text.split(":")[0])
        assert "HTTP 429" in finding.message


def test_messages_name_the_cause() -> None:
    """The wording is the subject here (the message names the cause as the disruption controller
    does); where each finding is, and what it points at, are asserted as data first."""
    manifest = budget_manifest("maxUnavailable: 1", app(kind="DaemonSet"))
    result = run_lint(manifest, select=(PDB,))
    daemonset_spec = position(manifest, "spec:", 1)  # the workload has no replicas to point at
    kit.assert_found(
        result, PDB, *position(manifest, "maxUnavailable: 1"), severity="warning", related=[daemonset_spec]
    )
    [finding] = findings(result, PDB)
    assert "daemonsets.apps does not implement the scale subresource" in finding.message
    assert "SyncFailed" in finding.message
    assert finding.fix is not None and "integer minAvailable" in finding.fix
    manifest = budget_manifest("minAvailable: 1", app(1))
    result = run_lint(manifest, select=(PDB,))
    kit.assert_found(
        result, PDB, *position(manifest, "minAvailable: 1"), related=[position(manifest, "replicas: 1")]
    )
    [finding] = findings(result, PDB)
    assert "it selects 1 pod and requires 1 to stay healthy (minAvailable 1)" in finding.message
    assert "Deployment/p/web: 1 replica" in finding.message
    [related] = finding.related
    assert related.path == "spec.replicas"


def test_hpa_min_replicas_is_the_scale() -> None:
    hpa = """\
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: p}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: MIN
  maxReplicas: 10
"""
    for minimum, blocked in (("1", True), ("2", False)):
        manifest = budget_manifest("minAvailable: 1", app(5) + hpa.replace("MIN", minimum))
        result = run_lint(manifest, select=(PDB,))
        found = findings(result, PDB)
        assert bool(found) is blocked
        if found:
            assert keys(result) == [(PDB, *position(manifest, "minAvailable: 1"))]
            assert position(manifest, "minReplicas") in [
                (r.span.line, r.span.column) for r in found[0].related if r.span
            ]
            assert "minReplicas" in found[0].message
            assert any(r.path == "spec.minReplicas" for r in found[0].related)


def test_several_workloads_add_up() -> None:
    second = app(1).replace("name: web,", "name: web-canary,")
    manifest = budget_manifest("minAvailable: 2", app(1) + "---\n" + second)
    result = run_lint(manifest, select=(PDB,))
    assert keys(result) == [(PDB, *position(manifest, "minAvailable: 2"))]
    found = findings(result, PDB)
    assert len(found) == 1 and "it selects 2 pods" in found[0].message
    assert budget_manifest  # (two 1-replica Deployments, minAvailable 2: none may go)
    manifest = budget_manifest("minAvailable: 1", app(1) + "---\n" + second)
    assert keys(run_lint(manifest, select=(PDB,))) == []


EXISTING = """\
apiVersion: v1
kind: List
items:
  - {apiVersion: v1, kind: Node, metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}}
  - {apiVersion: v1, kind: Node, metadata: {name: n2, labels: {kubernetes.io/hostname: n2}}}
PODS"""


def _pods(count: int, owner: str | None, namespace: str = "p") -> str:
    text = ""
    for i in range(count):
        refs = f", ownerReferences: [{{kind: {owner}, name: o, uid: u, controller: true}}]" if owner else ""
        text += (
            f"  - apiVersion: v1\n    kind: Pod\n    metadata: {{name: web-{i}, namespace: {namespace}, "
            f"labels: {{app: web}}{refs}}}\n"
            f"    spec: {{nodeName: n{i % 2 + 1}, containers: [{{name: c, image: i}}]}}\n"
        )
    return text


@pytest.mark.parametrize(
    ("pods", "spec", "blocked"),
    [
        (_pods(3, "ReplicaSet"), "maxUnavailable: 1", False),
        (_pods(3, "ReplicaSet"), "minAvailable: 3", True),
        (_pods(2, "DaemonSet"), "maxUnavailable: 1", True),
        (_pods(2, "DaemonSet"), "minAvailable: 1", False),
        (_pods(1, None), "maxUnavailable: 1", True),
        (_pods(2, "CloneSet"), "maxUnavailable: 1", False),  # a custom controller may have /scale
    ],
    ids=["replicaset", "replicaset-all", "daemonset", "daemonset-int", "bare", "custom"],
)
def test_existing_pods_of_the_cluster_file(pods: str, spec: str, blocked: bool) -> None:
    manifest = budget_manifest(spec)
    result = run_lint(manifest, EXISTING.replace("PODS", pods), select=(PDB,))
    assert keys(result) == ([(PDB, *position(manifest, spec))] if blocked else [])


def test_existing_pods_a_linted_workload_owns_are_not_counted_twice() -> None:
    # 3 running pods of the linted Deployment (3 replicas): 3 pods, not 6.
    manifest = budget_manifest("minAvailable: 3", app(3))
    result = run_lint(
        manifest,
        EXISTING.replace("PODS", _pods(3, "ReplicaSet")),
        select=(PDB,),
    )
    assert keys(result) == [(PDB, *position(manifest, "minAvailable: 3"))]
    [finding] = findings(result, PDB)
    assert "it selects 3 pods" in finding.message


def test_daemonset_pods_counted_on_the_cluster() -> None:
    cluster = nodes_cluster(2)
    assert (
        findings(
            run_lint(budget_manifest("minAvailable: 1", app(kind="DaemonSet")), cluster, select=(PDB,)),
            PDB,
        )
        == []
    )
    manifest = budget_manifest("minAvailable: 2", app(kind="DaemonSet"))
    result = run_lint(manifest, cluster, select=(PDB,))
    assert keys(result) == [(PDB, *position(manifest, "minAvailable: 2"))]
    [finding] = findings(result, PDB)
    assert "2 pods, one per node" in finding.message


RDE = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: p}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingRequiredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions: [{key: pool, operator: In, values: [b]}]
      containers: [{name: c, image: i}]
"""


def test_kep_4328_eviction_is_an_error_with_proposals() -> None:
    manifest = budget_manifest("minAvailable: 2", RDE)
    where = position(manifest, "minAvailable: 2")
    kit.assert_found(run_lint(manifest, select=(PDB,)), PDB, *where, severity="warning")
    kit.assert_found(run_lint(manifest, select=(PDB,), proposals=True), PDB, *where, severity="error")
    [plain] = findings(run_lint(manifest, select=(PDB,)), PDB)
    assert plain.severity is Severity.WARNING and "KEP-4328" not in plain.message
    [proposal] = findings(run_lint(manifest, select=(PDB,), proposals=True), PDB)
    assert proposal.severity is Severity.ERROR
    assert "node-affinity-eviction controller" in proposal.message
    assert any("requiredDuringSchedulingRequiredDuringExecution" in r.path for r in proposal.related)
    # A budget that leaves an eviction is no problem, field or not.
    assert keys(run_lint(budget_manifest("maxUnavailable: 1", RDE), select=(PDB,), proposals=True)) == []
    # The configured severity still wins.
    [configured] = findings(
        run_lint(manifest, select=(PDB,), proposals=True, severity={PDB: Severity.INFO}), PDB
    )
    assert configured.severity is Severity.INFO


def test_kep_4328_names_pods_already_on_a_node_that_no_longer_matches() -> None:
    path = EXAMPLES / PDB / "fail-proposals.yaml"
    cluster = cluster_from(load([str(EXAMPLES / "clusters" / "pdb-blocks-eviction.yaml")]))
    result = lint(load([str(path)]), Settings(select=(PDB,), proposals=True), cluster=cluster)
    where = position(path.read_text(encoding="utf-8"), "minAvailable: 2 # expect: pdb-blocks-eviction")
    kit.assert_found(result, PDB, *where, severity="error")
    [finding] = findings(result, PDB)
    assert "tenant-b-6c9f7d8b5-4jx2k on node-a" in finding.message
    assert "tenant-b-6c9f7d8b5-w7v9n" not in finding.message  # node-b still matches


def test_pdb_rule_runs_without_a_cluster() -> None:
    path = EXAMPLES / PDB / "fail.yaml"
    result = lint(load([str(path)]), Settings(select=(PDB,)))
    assert len(findings(result, PDB)) == 4
    # Each at the budget's field the marker's line starts with.
    text = path.read_text(encoding="utf-8").splitlines()
    starts = [
        (rule, line, len(text[line - 1]) - len(text[line - 1].lstrip()) + 1)
        for rule, line in kit.expected(path)
    ]
    assert keys(result) == starts


def test_daemonset_in_place_stops_where_the_new_pod_does_not_fit() -> None:
    """Without a surge the old pod goes first; on node-2 a running pod's anti-affinity (created
    after the agent, ignored during execution) keeps the replacement away."""
    cluster = EXISTING.replace(
        "PODS",
        "  - apiVersion: v1\n    kind: Pod\n"
        "    metadata: {name: agent-old-1, namespace: shop, labels: {app: agent}}\n"
        "    spec: {nodeName: n1, containers: [{name: c, image: i}]}\n"
        "  - apiVersion: v1\n    kind: Pod\n"
        "    metadata: {name: agent-old-2, namespace: shop, labels: {app: agent}}\n"
        "    spec: {nodeName: n2, containers: [{name: c, image: i}]}\n"
        "  - apiVersion: v1\n    kind: Pod\n"
        "    metadata: {name: loner, namespace: shop, labels: {app: loner}}\n"
        "    spec:\n      nodeName: n2\n      containers: [{name: c, image: i}]\n      affinity:\n"
        "        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n"
        "            - {labelSelector: {matchLabels: {app: agent}}, topologyKey: kubernetes.io/hostname}\n",
    )
    manifest = """\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: shop}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c, image: i}]}
"""
    result = run_lint(manifest, cluster)
    assert keys(result) == [(ROLLOUT, *position(manifest, "spec:", 1))]  # the workload's spec
    [finding] = findings(result, ROLLOUT)
    assert "the new pod for node n2 stays Pending" in finding.message
    assert "required pod anti-affinity of pod shop/loner selects it" in finding.message
    assert "(after 1 of 2 nodes run the new revision)" in finding.message
    assert finding.path == "spec"  # no strategy written, no term of its own


def test_statefulset_parallel_with_the_gate_replaces_several_at_once() -> None:
    strategy = "  updateStrategy: {rollingUpdate: {maxUnavailable: 2}}\n"
    manifest = deployment(kind="StatefulSet", strategy=strategy, extra="  podManagementPolicy: Parallel\n")
    assert keys(run_lint(manifest, nodes_cluster(3), kube_version="1.35")) == []
    assert keys(run_lint(manifest, nodes_cluster(3), kube_version="1.34")) == []
