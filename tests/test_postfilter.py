"""What real clusters do beyond the filters: preemption, autoscaling pools, host ports, nodeName.

Each scenario is a case users reported, linted (or placed) against a small declared cluster;
the assertions compare rule, line and column, and the placement's nodes and victims.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from . import kit
from .kit import keys, run


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _invoke(
    tmp_path: Path, command: str, cluster: str, manifests: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    """``kaffinity <command> --no-config --cluster cluster.yaml app.yaml <extra>`` (``extra`` may
    name a ``--config``, which then replaces ``--no-config``)."""
    c = _write(tmp_path, "cluster.yaml", cluster)
    m = _write(tmp_path, "app.yaml", manifests)
    config = [] if "--config" in extra else ["--no-config"]
    return run(command, *config, "--cluster", str(c), str(m), *extra)


def _findings(tmp_path: Path, cluster: str, manifests: str, *extra: str) -> list[dict[str, Any]]:
    """The findings of ``kaffinity lint --cluster cluster.yaml app.yaml <extra>`` (the two files
    written in ``tmp_path``, as :func:`_invoke` writes them)."""
    c = _write(tmp_path, "cluster.yaml", cluster)
    m = _write(tmp_path, "app.yaml", manifests)
    done = kit.lint_json("--cluster", str(c), str(m), *extra, config="--config" in extra)
    assert done.code in (0, 1), done.stderr
    findings: list[dict[str, Any]] = done.report["findings"]
    return findings


def _lint(
    tmp_path: Path, cluster: str, manifests: str, *extra: str
) -> list[tuple[str, int | None, int | None]]:
    """Not a runner: the (rule, line, column) of :func:`_findings`, sorted."""
    return sorted(keys(_findings(tmp_path, cluster, manifests, *extra)))


def _place(tmp_path: Path, cluster: str, manifests: str, *extra: str) -> dict[str, Any]:
    result = _invoke(tmp_path, "place", cluster, manifests, "--format", "json", *extra)
    assert result.returncode in (0, 1), result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _batch(name: str, node: str, priority: int = 0, cpu: str = "3") -> str:
    return textwrap.dedent(f"""\
    apiVersion: v1
    kind: Pod
    metadata: {{name: {name}, namespace: batch, labels: {{app: batch}}}}
    spec:
      nodeName: {node}
      priority: {priority}
      containers: [{{name: c, image: i, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
    """)


def _service(priority: int, policy: str = "PreemptLowerPriority", cpu: str = "2") -> str:
    return f"""\
    apiVersion: apps/v1
    kind: Deployment
    metadata: {{name: api, namespace: payments}}
    spec:
      replicas: 1
      selector: {{matchLabels: {{app: api}}}}
      template:
        metadata: {{labels: {{app: api}}}}
        spec:
          priority: {priority}
          preemptionPolicy: {policy}
          containers: [{{name: c, image: i, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
    """


CROWDED = "---\n".join(
    [
        kit.cluster(kit.node("n1")),
        kit.cluster(kit.node("n2")),
        _batch("b1", "n1"),
        _batch("b2", "n2", priority=5),
    ]
)


# --- preemption -----------------------------------------------------------------------------------


def test_a_higher_priority_pod_preempts_the_lowest_priority_victim(tmp_path: Path) -> None:
    report = _place(tmp_path, CROWDED, _service(1000))
    pod = report["pods"][0]
    assert pod["node"] == "n1"  # b1 (priority 0) is a cheaper victim than b2 (priority 5)
    assert pod["victims"] == [{"namespace": "batch", "name": "b1", "node": "n1"}]
    assert _lint(tmp_path, CROWDED, _service(1000)) == [("needs-preemption", 10, 7)]


def test_no_preemption_between_equal_priorities(tmp_path: Path) -> None:
    report = _place(tmp_path, CROWDED, _service(0))
    assert report["pods"][0]["node"] is None and report["pods"][0]["victims"] == []
    assert _lint(tmp_path, CROWDED, _service(0)) == [("unschedulable", 12, 63)]


def test_preemption_policy_never_waits(tmp_path: Path) -> None:
    report = _place(tmp_path, CROWDED, _service(1000, "Never"))
    assert report["pods"][0]["node"] is None and report["pods"][0]["victims"] == []
    assert [rule for rule, *_ in _lint(tmp_path, CROWDED, _service(1000, "Never"))] == ["unschedulable"]


def test_no_preemption_when_the_victims_would_not_free_enough(tmp_path: Path) -> None:
    # 5 cpu on 4-cpu nodes: UnschedulableAndUnresolvable, no eviction helps.
    report = _place(tmp_path, CROWDED, _service(1000, cpu="5"))
    assert report["pods"][0]["node"] is None and report["pods"][0]["victims"] == []


def test_a_budget_steers_preemption_to_unprotected_pods(tmp_path: Path) -> None:
    pdb = """\
    apiVersion: policy/v1
    kind: PodDisruptionBudget
    metadata: {name: b1, namespace: batch}
    spec: {selector: {matchLabels: {app: batch, name: b1}}, maxUnavailable: 0}
    """
    cluster = "---\n".join(
        [
            kit.cluster(kit.node("n1")),
            kit.cluster(kit.node("n2")),
            _batch("b1", "n1").replace("app: batch}", "app: batch, name: b1}"),
            _batch("b2", "n2"),
            textwrap.dedent(pdb),
        ]
    )
    report = _place(tmp_path, cluster, _service(1000))
    assert report["pods"][0]["victims"] == [{"namespace": "batch", "name": "b2", "node": "n2"}]


# --- autoscaling ----------------------------------------------------------------------------------


def _pool(count: int, most: int) -> str:
    return f"""\
    apiVersion: kaffinity.io/v1alpha1
    kind: ClusterTopology
    metadata: {{name: auto}}
    spec:
      zones:
        - name: a
          pools:
            - name: general
              count: {count}
              max: {most}
              allocatable: {{cpu: "4", memory: 16Gi, pods: 110}}
    """


ANTI = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 5
  strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: web}}
              matchLabelKeys: [pod-template-hash]
              topologyKey: kubernetes.io/hostname
      containers: [{name: c, image: i, resources: {requests: {cpu: 100m}}}]
"""


def test_a_pool_grows_for_anti_affinity_replicas_and_the_surge_pod(tmp_path: Path) -> None:
    report = _place(tmp_path, _pool(3, 6), ANTI)
    assert [pod["added"] for pod in report["pods"]] == [None, None, None, "general-a-3", "general-a-4"]
    assert [entry["node"] for entry in report["added"]] == ["general-a-3", "general-a-4"]
    # The surge pod of the rollout gets a sixth node: no rollout-deadlock, no exceeds.
    assert _lint(tmp_path, _pool(3, 6), ANTI) == [("needs-scale-up", 5, 3)]
    assert _lint(tmp_path, _pool(3, 6), ANTI, "--no-simulate") == []


def test_the_same_pool_at_its_max(tmp_path: Path) -> None:
    assert _lint(tmp_path, _pool(3, 3), ANTI) == [("anti-affinity-exceeds-domains", 16, 15)]
    # Anti-affinity across revisions: the surge pod needs a sixth node, which pool max 5 refuses.
    unscoped = ANTI.replace("              matchLabelKeys: [pod-template-hash]\n", "")
    assert ("rollout-deadlock", 14, 15) not in _lint(tmp_path, _pool(3, 6), unscoped)
    assert ("rollout-deadlock", 14, 15) in _lint(tmp_path, _pool(3, 5), unscoped)


def test_expendable_pods_do_not_scale_up(tmp_path: Path) -> None:
    expendable = ANTI.replace("      affinity:", "      priority: -20\n      affinity:")
    report = _place(tmp_path, _pool(3, 6), expendable)
    assert report["added"] == [] and [pod["node"] for pod in report["pods"]][3:] == [None, None]


def test_a_karpenter_nodepool_grows_within_its_limits(tmp_path: Path) -> None:
    cluster = """\
    apiVersion: v1
    kind: Node
    metadata:
      name: default-abcde
      labels:
        kubernetes.io/hostname: default-abcde
        karpenter.sh/nodepool: default
        topology.kubernetes.io/zone: a
    status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
    ---
    apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: {name: default}
    spec:
      template:
        spec:
          requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
          nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      limits: {cpu: "12"}
    """
    report = _place(tmp_path, cluster, ANTI)
    # 4 cpu each, 12 cpu in all: two more nodes, then the limit.
    assert [entry["node"] for entry in report["added"]] == ["default-1", "default-2"]
    assert [pod["node"] for pod in report["pods"]][3:] == [None, None]


# --- host ports -----------------------------------------------------------------------------------


INGRESS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: ingress-nginx-controller, namespace: ingress-nginx}
spec:
  replicas: REPLICAS
  strategy: {rollingUpdate: STRATEGY}
  selector: {matchLabels: {app: ingress}}
  template:
    metadata: {labels: {app: ingress}}
    spec:
      containers:
        - name: controller
          image: registry.k8s.io/ingress-nginx/controller
          ports: [{containerPort: 8443, hostPort: 8443}]
"""


def test_host_port_pods_beyond_the_nodes_stay_pending(tmp_path: Path) -> None:
    cluster = kit.cluster(*(kit.node(f"n{i}") for i in range(4)))
    manifest = INGRESS.replace("REPLICAS", "5").replace("STRATEGY", "{maxSurge: 0, maxUnavailable: 1}")
    assert _lint(tmp_path, cluster, manifest) == [("unschedulable", 10, 5)]


def test_host_network_takes_the_container_ports(tmp_path: Path) -> None:
    cluster = kit.cluster(*(kit.node(f"n{i}") for i in range(2)))
    manifest = (
        INGRESS.replace("REPLICAS", "3")
        .replace("STRATEGY", "{maxSurge: 0, maxUnavailable: 1}")
        .replace(", hostPort: 8443", "")
        .replace("    spec:\n      containers:", "    spec:\n      hostNetwork: true\n      containers:")
    )
    report = _place(tmp_path, cluster, manifest)
    assert [pod["node"] is None for pod in report["pods"]] == [False, False, True]


def test_host_port_rollouts_on_one_node(tmp_path: Path) -> None:
    surge = INGRESS.replace("REPLICAS", "1").replace("STRATEGY", "{maxSurge: 1, maxUnavailable: 0}")
    assert _lint(tmp_path, kit.cluster(kit.node("minikube")), surge) == [("rollout-deadlock", 6, 3)]
    replace = INGRESS.replace("REPLICAS", "1").replace("STRATEGY", "{maxSurge: 0, maxUnavailable: 1}")
    assert _lint(tmp_path, kit.cluster(kit.node("minikube")), replace) == []


def test_a_host_port_rollout_that_needs_a_new_node(tmp_path: Path) -> None:
    surge = INGRESS.replace("REPLICAS", "1").replace("STRATEGY", "{maxSurge: 1, maxUnavailable: 0}")
    # A pool that may grow: the surge pod gets a second node (information, needs-scale-up's:
    # a dependency a new node resolves is no deadlock).
    assert _lint(tmp_path, _pool(1, 2), surge) == [("needs-scale-up", 6, 3)]
    assert [f["severity"] for f in _findings(tmp_path, _pool(1, 2), surge)] == ["info"]
    # At its max it cannot: the deadlock, an error.
    assert _lint(tmp_path, _pool(1, 1), surge) == [("rollout-deadlock", 6, 3)]
    assert [f["severity"] for f in _findings(tmp_path, _pool(1, 1), surge)] == ["error"]


# --- spec.nodeName --------------------------------------------------------------------------------


def _pinned(kind: str, node: str) -> str:
    pod_spec = f"nodeName: {node}\n      containers: [{{name: c, image: i}}]"
    if kind == "Pod":
        spec = pod_spec.replace("      ", "  ")
        return f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: default}}\nspec:\n  {spec}\n"
    return (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: default}\nspec:\n"
        "  selector: {matchLabels: {app: d}}\n  template:\n    metadata: {labels: {app: d}}\n"
        f"    spec:\n      {pod_spec}\n"
    )


def test_node_name_on_a_no_schedule_node_runs(tmp_path: Path) -> None:
    cluster = kit.cluster(
        kit.node("infra", taints=[{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}])
    )
    assert _lint(tmp_path, cluster, _pinned("Pod", "infra")) == []
    assert _place(tmp_path, cluster, _pinned("Pod", "infra"))["pods"][0]["node"] == "infra"


def test_node_name_on_a_no_execute_node_is_killed_forever(tmp_path: Path) -> None:
    cluster = kit.cluster(
        kit.node("sick", taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}])
    )
    assert _lint(tmp_path, cluster, _pinned("Deployment", "sick")) == [("no-eligible-node", 8, 5)]
    assert _lint(tmp_path, cluster, _pinned("Pod", "sick")) == [("no-eligible-node", 4, 1)]


def test_cluster_autoscaler_picks_the_pool_that_wastes_least(tmp_path: Path) -> None:
    cluster = """\
    apiVersion: kaffinity.io/v1alpha1
    kind: ClusterTopology
    metadata: {name: two-pools}
    spec:
      zones:
        - name: a
          pools:
            - {name: big, count: 0, max: 3, allocatable: {cpu: "16", memory: 64Gi, pods: 110}}
            - {name: small, count: 0, max: 3, allocatable: {cpu: "2", memory: 8Gi, pods: 110}}
    """
    report = _place(tmp_path, cluster, _service(0, cpu="1"))
    assert report["added"] == [{"node": "small-a-0", "pool": "small", "kind": "ClusterTopology"}]
    report = _place(tmp_path, cluster, _service(0, cpu="3"))  # too big for a small node
    assert report["added"] == [{"node": "big-a-0", "pool": "big", "kind": "ClusterTopology"}]


def test_karpenter_tries_the_heaviest_nodepool_first(tmp_path: Path) -> None:
    def pool(name: str, weight: int) -> str:
        return f"""\
        apiVersion: karpenter.sh/v1
        kind: NodePool
        metadata: {{name: {name}}}
        spec:
          weight: {weight}
          template:
            spec:
              requirements: [{{key: topology.kubernetes.io/zone, operator: In, values: [a]}}]
              nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
        """

    cluster = "---\n".join([textwrap.dedent(pool("spot", 10)), textwrap.dedent(pool("on-demand", 50))])
    report = _place(tmp_path, cluster, _service(0, cpu="1"))
    assert [(entry["pool"], entry["kind"]) for entry in report["added"]] == [("on-demand", "NodePool")]


def test_gated_pods_are_not_placed(tmp_path: Path) -> None:
    gated = _service(0, cpu="50").replace(
        "          priority: 0", "          schedulingGates: [{name: kueue.x-k8s.io/admission}]"
    )
    assert _place(tmp_path, CROWDED, gated)["pods"] == []
    assert _lint(tmp_path, CROWDED, gated) == []


def test_nodes_added_one_by_one_keep_the_caches_exact(tmp_path: Path) -> None:
    """Autoscaling extends the node caches (static filters, heaps, domains) instead of computing
    them again: they must hold what a fresh computation over every node gives."""
    from kaffinity.k8s.model import build_inventory
    from kaffinity.load.files import load
    from kaffinity.simulate.cluster import cluster_from
    from kaffinity.simulate.place import place_all

    cluster = _write(
        tmp_path,
        "cluster.yaml",
        """\
        apiVersion: kaffinity.io/v1alpha1
        kind: ClusterTopology
        metadata: {name: zones}
        spec:
          zones:
            - name: a
              pools:
                - {name: general, count: 1, max: 9, allocatable: {cpu: "2", memory: 8Gi, pods: 110}}
                - name: spot
                  count: 1
                  max: 9
                  taints: [{key: spot, effect: NoSchedule}]
                  allocatable: {cpu: "2", memory: 8Gi, pods: 110}
            - name: b
              pools:
                - {name: general, count: 1, max: 9, allocatable: {cpu: "2", memory: 8Gi, pods: 110}}
        """,
    )
    spread = ANTI.replace("replicas: 5", "replicas: 12").replace(
        "      affinity:",
        "      topologySpreadConstraints:\n"
        "        - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule,"
        " labelSelector: {matchLabels: {app: web}}}\n"
        "      affinity:",
    )
    other = _service(0, cpu="1500m").replace("replicas: 1", "replicas: 6")
    manifests = _write(tmp_path, "app.yaml", spread + "---\n" + textwrap.dedent(other))
    inventory = build_inventory(doc for file in load([str(manifests)]) for doc in file.documents)
    run = place_all(inventory.workloads, cluster_from(load([str(cluster)])), version="1.34")
    sim = run.sim
    assert len(sim.added) >= 10 and not run.pending, (len(sim.added), len(run.pending))
    for signature, (passed, reasons) in sim._static.items():
        rules = sim._static_constraints[signature]
        fresh = [node for node in sim.nodes if sim._static_reason(rules, node) is None]
        assert passed == fresh
        assert set(reasons) == {node.name for node in sim.nodes} - {node.name for node in fresh}
        heap = sim._heaps.get(signature)
        if heap is not None:
            # Heap entries are lazy: an entry counts while it has its node's current version.
            assert {entry[4] for entry in heap.entries if entry[2] == entry[4].version} == set(fresh)
    for label, index in sim._domains.items():
        assert {value: len(nodes) for value, nodes in index.items()} == dict(
            Counter(node.labels[label] for node in sim.nodes if label in node.labels)
        )


def _event(tmp_path: Path, cluster: str, manifests: str) -> str:
    result = _invoke(tmp_path, "place", cluster, manifests)
    return result.stdout.splitlines()[0].split(" Pending: ", 1)[1]


def test_the_event_ends_with_what_preemption_said(tmp_path: Path) -> None:
    """FitError.Error appends DefaultPreemption's PostFilter message (pkg/scheduler/framework)."""
    assert _event(tmp_path, CROWDED, _service(0)) == (
        "0/2 nodes are available: 2 Insufficient cpu. "
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )
    assert _event(tmp_path, CROWDED, _service(1000, "Never")) == (
        "0/2 nodes are available: 2 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."
    )
    # Larger than any node: not even tried.
    assert _event(tmp_path, CROWDED, _service(1000, cpu="5")) == (
        "0/2 nodes are available: 2 Insufficient cpu. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    # Priority 3 may evict b1 (0) from n1, not h1 (5) beside it nor b2 (5) on n2: 3 cpu still
    # do not fit on n1 once b1 is gone, and that is the reason given for it.
    mixed = "---\n".join(
        [
            kit.cluster(kit.node("n1")),
            kit.cluster(kit.node("n2")),
            _batch("b1", "n1", cpu="1"),
            _batch("h1", "n1", priority=5, cpu="2"),
            _batch("b2", "n2", priority=5),
        ]
    )
    assert _event(tmp_path, mixed, _service(3, cpu="3")) == (
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: "
        "1 Insufficient cpu, 1 No preemption victims found for incoming pod."
    )


def test_place_says_the_kubelet_rejects_a_node_name_pod(tmp_path: Path) -> None:
    cluster = kit.cluster(
        kit.node("sick", taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}])
    )
    result = _invoke(tmp_path, "place", cluster, _pinned("Pod", "sick"))
    assert result.returncode == 1
    assert result.stdout.splitlines()[0].endswith(
        "Pod/default/p replica 0 rejected (spec.nodeName sick): node(s) had untolerated taint(s)"
    )


# --- bad input in the autoscaling parts of a cluster file ------------------------------------------


def test_a_malformed_nodepool_is_read_without_error(tmp_path: Path) -> None:
    """Fields of the wrong type are skipped (values an int: it crashed once), nothing grows wrong."""
    cluster = """\
    apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: {name: weird}
    spec:
      limits: [1, 2]
      template:
        metadata: labels
        spec:
          taints: {key: a}
          requirements:
            - {key: topology.kubernetes.io/zone, operator: In, values: 5}
            - {key: kubernetes.io/arch, operator: NotIn, values: 7}
            - junk
    ---
    apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: {name: w2}
    spec: {template: {spec: {requirements: 5}}}
    """
    result = _invoke(tmp_path, "place", cluster, _service(0, cpu="1"), "--format", "json")
    assert result.returncode == 0, result.stderr
    assert [entry["pool"] for entry in json.loads(result.stdout)["added"]] == ["weird"]


def test_a_pool_whose_max_is_below_its_count_is_a_load_error(tmp_path: Path) -> None:
    result = _invoke(tmp_path, "lint", _pool(3, 2), _service(0, cpu="1"), "--format", "json")
    assert result.returncode == 2
    findings = json.loads(result.stdout)["findings"]
    assert [(f["rule"], f["line"], f["column"]) for f in findings] == [
        ("parse-error", 10, 11)
    ]  # the max field


def test_autoscaling_stops_at_the_limits(tmp_path: Path) -> None:
    """``limits: nodes`` bounds the simulated cluster; a NodePool's ``nodes`` limit its own nodes."""
    config = _write(tmp_path, "kaffinity.yaml", "limits: {nodes: 4}\n")
    report = _place(tmp_path, _pool(3, 6), ANTI, "--config", str(config))
    assert [entry["node"] for entry in report["added"]] == ["general-a-3"]
    nodepool = """\
    apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: {name: default}
    spec:
      limits: {nodes: 2}
      template: {spec: {requirements: []}}
    """
    report = _place(
        tmp_path,
        textwrap.dedent(nodepool)
        + "---\n"
        + kit.cluster(kit.node("default-a", labels={"karpenter.sh/nodepool": "default"})),
        ANTI,
    )
    # one node exists, the limit allows one more
    assert [entry["node"] for entry in report["added"]] == ["default-1"]


def test_a_failed_scale_up_is_tried_once_per_template(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Its trial (a node added, then taken away) leaves the cluster as it was: the replicas after
    the first are not tried again (each trial filters the new node and rebuilds nothing, but a
    Pending workload of 1,000 replicas would try 1,000 times)."""
    from kaffinity.simulate.framework.schedule_one import Simulation

    added: list[str] = []
    original = Simulation.add_node

    def counting(self: Simulation, node: Any, growth: Any = None, wants: Any = None) -> None:
        added.append(node.name)
        original(self, node, growth, wants)

    monkeypatch.setattr(Simulation, "add_node", counting)
    # Required affinity to pods nobody runs: no node, old or new, passes InterPodAffinity.
    lonely = ANTI.replace("podAntiAffinity:", "podAffinity:").replace(
        "{matchLabels: {app: web}}", "{matchLabels: {app: db}}"
    )
    report = _place(tmp_path, _pool(3, 6), lonely)
    assert [pod["node"] for pod in report["pods"]] == [None] * 5
    assert added == ["general-a-3"]
