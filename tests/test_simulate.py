"""The declared cluster (ClusterTopology), the offline scheduler and ``kaffinity place``."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from kaffinity.config import Settings
from kaffinity.context import Context
from kaffinity.k8s.model import build_inventory
from kaffinity.load.files import load
from kaffinity.load.parse import parse
from kaffinity.simulate.cluster import cluster_from
from kaffinity.simulate.framework.schedule_one import Simulation
from kaffinity.simulate.place import place_all

from . import kit
from .kit import EXAMPLES, REPO, run

TOPOLOGY = EXAMPLES / "clusters" / "topology.yaml"

WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: web}}
              topologyKey: kubernetes.io/hostname
      containers: [{name: c, image: i, resources: {requests: {cpu: 500m}}}]
"""


def place(tmp_path: Path, manifest: str, *args: str, cluster: Path | str = TOPOLOGY) -> tuple[int, Any]:
    path = tmp_path / "app.yaml"
    path.write_text(manifest)
    if isinstance(cluster, str):
        (tmp_path / "cluster.yaml").write_text(cluster)
        cluster = tmp_path / "cluster.yaml"
    result = run("place", "--no-config", str(path), "--cluster", str(cluster), *args)
    if "--format" in args and "json" in args:
        return result.returncode, json.loads(result.stdout)
    return result.returncode, result.stdout + result.stderr


# --- the compact cluster form ------------------------------------------------------------


def test_cluster_topology_expands_into_nodes_with_the_well_known_labels() -> None:
    cluster = cluster_from(load([str(TOPOLOGY)]))
    names = [node.ref.name for node in cluster.nodes]
    assert names == [
        "general-eu-west-1a-0",
        "general-eu-west-1a-1",
        "gpu-eu-west-1a-0",
        "general-eu-west-1b-0",
        "general-eu-west-1b-1",
        "general-eu-west-1c-0",
        "general-eu-west-1c-1",
    ]
    gpu = dict(cluster.nodes[2].labels)
    assert gpu == {
        "kubernetes.io/os": "linux",
        "accelerator": "nvidia-a10",
        "kubernetes.io/hostname": "gpu-eu-west-1a-0",
        "topology.kubernetes.io/zone": "eu-west-1a",
        "topology.kubernetes.io/region": "eu-west-1",
    }
    taint = cluster.nodes[2].taints[0]
    assert (taint.key, taint.value, taint.effect) == ("nvidia.com/gpu", "present", "NoSchedule")
    assert cluster.nodes[2].doc.locate(taint.path).line == 20
    allocatable = dict(cluster.nodes[0].allocatable)
    assert allocatable["memory"] == 16 * 1024**3 and allocatable["pods"] == 110


def test_single_nodes_and_node_objects_mix() -> None:
    text = """\
apiVersion: kaffinity.io/v1alpha1
kind: ClusterTopology
spec:
  labels: {tier: x}
  nodes:
    - {name: solo, labels: {disk: ssd}, unschedulable: true}
---
apiVersion: v1
kind: Node
metadata: {name: real, labels: {kubernetes.io/hostname: real}}
"""
    cluster = cluster_from([parse("c.yaml", text)])
    solo, real = cluster.nodes[1], cluster.nodes[0]
    assert dict(solo.labels) == {"tier": "x", "kubernetes.io/hostname": "solo", "disk": "ssd"}
    assert solo.unschedulable and real.ref.name == "real"


def test_a_broken_compact_cluster_is_a_one_line_load_error(tmp_path: Path) -> None:
    broken = "apiVersion: kaffinity.io/v1alpha1\nkind: ClusterTopology\nspec:\n  zones:\n    - {pools: []}\n"
    code, out = place(tmp_path, WEB.replace("REPLICAS", "1"), cluster=broken)
    assert code == 2
    assert "cluster.yaml:5:7: error [parse-error] invalid ClusterTopology at spec.zones.0:" in out
    assert "missing required key 'name'" in out


# --- kaffinity place ---------------------------------------------------------------------


def test_place_text_reports_each_pod_and_the_schedulers_event(tmp_path: Path) -> None:
    code, out = place(tmp_path, WEB.replace("REPLICAS", "7"))
    assert code == 1
    lines = out.splitlines()
    assert lines[0].endswith("Deployment/shop/web replica 0 -> general-eu-west-1a-0")
    assert len({line.rsplit(" ", 1)[1] for line in lines[:6]}) == 6  # one per general node
    assert lines[6].endswith(
        "Deployment/shop/web replica 6 Pending: 0/7 nodes are available: "
        "1 node(s) had untolerated taint(s), 6 node(s) didn't match pod anti-affinity rules. "
        # DefaultPreemption's PostFilter message: the tainted node is not tried, the others hold
        # no pod of lower priority (pkg/scheduler/framework/preemption Evaluator.Preempt).
        "preemption: 0/7 nodes are available: 1 Preemption is not helpful for scheduling, "
        "6 No preemption victims found for incoming pod."
    )
    assert lines[-1] == "6 pod(s) placed, 1 Pending, on 7 node(s)"


def test_place_exit_code_is_0_when_everything_fits(tmp_path: Path) -> None:
    code, out = place(tmp_path, WEB.replace("REPLICAS", "6"))
    assert code == 0 and "Pending:" not in out and out.endswith("6 pod(s) placed, 0 Pending, on 7 node(s)\n")


def test_place_json_contract(tmp_path: Path) -> None:
    code, report = place(tmp_path, WEB.replace("REPLICAS", "7"), "--format", "json")
    assert code == 1
    assert report["nodes"][2] == "gpu-eu-west-1a-0" and len(report["nodes"]) == 7
    first, last = report["pods"][0], report["pods"][6]
    assert set(first) == {"unit", "object", "replica", "node", "feasible", "rejected", "victims", "added"}
    assert first["victims"] == [] and first["added"] is None and report["added"] == []
    assert first["unit"] == ""  # one deployment unit (docs/repositories.md)
    assert first["object"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "namespace": "shop",
        "name": "web",
    }
    assert first["replica"] == 0 and first["node"] == "general-eu-west-1a-0"
    assert first["rejected"] == {"gpu-eu-west-1a-0": ["node(s) had untolerated taint(s)"]}
    assert len(first["feasible"]) == 6
    assert last["node"] is None and last["feasible"] == []
    assert last["rejected"]["general-eu-west-1c-1"] == ["node(s) didn't match pod anti-affinity rules"]
    # Every node is either feasible or rejected, never both.
    for pod in report["pods"]:
        assert sorted(pod["feasible"] + list(pod["rejected"])) == sorted(report["nodes"])


def test_filters_run_only_the_named_plugins(tmp_path: Path) -> None:
    _, report = place(
        tmp_path, WEB.replace("REPLICAS", "7"), "--format", "json", "--filters", "TaintToleration"
    )
    # No InterPodAffinity: every replica may go anywhere but the tainted node.
    assert all(len(pod["feasible"]) == 6 for pod in report["pods"])
    _, report = place(tmp_path, WEB.replace("REPLICAS", "1"), "--format", "json", "--filters", "NodeAffinity")
    assert len(report["pods"][0]["feasible"]) == 7


def test_unknown_filter_and_missing_cluster_are_usage_errors(tmp_path: Path) -> None:
    code, out = place(tmp_path, WEB.replace("REPLICAS", "1"), "--filters", "ImageLocality")
    assert code == 2 and "unknown filter plugin ImageLocality" in out
    (tmp_path / "app.yaml").write_text(WEB)
    result = run("place", "--no-config", str(tmp_path / "app.yaml"))
    assert result.returncode == 2 and "place needs --cluster" in result.stderr


def test_the_taint_is_named_before_1_35(tmp_path: Path) -> None:
    _, out = place(tmp_path, WEB.replace("REPLICAS", "7"), "--kube-version", "1.34")
    assert "1 node(s) had untolerated taint {nvidia.com/gpu: present}, 6 node(s)" in out


def test_resources_requests_against_allocatable(tmp_path: Path) -> None:
    big = WEB.replace("REPLICAS", "2").replace("cpu: 500m", "cpu: '6'").replace("podAntiAffinity", "x-none")
    big = big.replace("      affinity:\n        x-none:\n", "      x-affinity:\n        x-none:\n")
    _, report = place(tmp_path, big, "--format", "json")
    gpu = report["pods"][0]
    assert gpu["node"] == "gpu-eu-west-1a-0" or gpu["node"] is None
    reasons = {node: r for node, r in gpu["rejected"].items()}
    assert reasons["general-eu-west-1b-0"] == ["Insufficient cpu"]
    assert reasons["gpu-eu-west-1a-0"] == ["node(s) had untolerated taint(s)"]
    assert report["pods"][1]["node"] is None


def test_too_many_pods(tmp_path: Path) -> None:
    cluster = """\
apiVersion: kaffinity.io/v1alpha1
kind: ClusterTopology
spec:
  nodes: [{name: tiny, allocatable: {pods: 1, cpu: '4'}}]
"""
    plain = """\
apiVersion: v1
kind: ReplicationController
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: i}]}
"""
    code, out = place(tmp_path, plain, cluster=cluster)
    assert code == 1
    assert (
        "ReplicationController/shop/web replica 1 Pending: 0/1 nodes are available: 1 Too many pods." in out
    )


def test_a_node_without_allocatable_is_not_checked_for_resources(tmp_path: Path) -> None:
    cluster = "apiVersion: v1\nkind: Node\nmetadata: {name: bare, labels: {kubernetes.io/hostname: bare}}\n"
    huge = WEB.replace("REPLICAS", "1").replace("cpu: 500m", "cpu: '600'")
    code, _ = place(tmp_path, huge, cluster=cluster)
    assert code == 0


# --- the simulation ------------------------------------------------------------------------


CLUSTER_WITH_PODS = """\
apiVersion: v1
kind: List
items:
  - {apiVersion: v1, kind: Node, metadata: {name: n1, labels: {kubernetes.io/hostname: n1, zone: a}}}
  - {apiVersion: v1, kind: Node, metadata: {name: n2, labels: {kubernetes.io/hostname: n2, zone: a}}}
  - {apiVersion: v1, kind: Node, metadata: {name: n3, labels: {kubernetes.io/hostname: n3, zone: b}}}
  - apiVersion: v1
    kind: Namespace
    metadata: {name: shop, labels: {team: shop}}
  - apiVersion: v1
    kind: Pod
    metadata: {name: web-old-1, namespace: shop, labels: {app: web}}
    spec: {nodeName: n1, containers: [{name: c, image: i}]}
  - apiVersion: v1
    kind: Pod
    metadata: {name: done, namespace: shop, labels: {app: web}}
    spec: {nodeName: n2, containers: [{name: c, image: i}]}
    status: {phase: Succeeded}
  - apiVersion: v1
    kind: Pod
    metadata: {name: guard, namespace: infra, labels: {app: guard}}
    spec:
      nodeName: n3
      containers: [{name: c, image: i}]
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: web}}
              namespaceSelector: {matchLabels: {team: shop}}
              topologyKey: zone
"""


def test_existing_pods_count_as_replicas_and_block_by_symmetry(tmp_path: Path) -> None:
    code, report = place(
        tmp_path, WEB.replace("REPLICAS", "3"), "--format", "json", cluster=CLUSTER_WITH_PODS
    )
    # web-old-1 is one of the three replicas (the selector claims it); the finished pod is gone.
    assert [pod["replica"] for pod in report["pods"]] == [1, 2]
    assert report["pods"][0]["node"] == "n2"
    assert report["pods"][0]["rejected"] == {
        "n1": ["node(s) didn't match pod anti-affinity rules"],
        "n3": ["node(s) didn't satisfy existing pods anti-affinity rules"],
    }
    assert report["pods"][1]["node"] is None and code == 1


def test_existing_anti_affinity_reads_the_incoming_namespaces_labels(tmp_path: Path) -> None:
    other = WEB.replace("REPLICAS", "1").replace("namespace: shop", "namespace: elsewhere")
    _, report = place(tmp_path, other, "--format", "json", cluster=CLUSTER_WITH_PODS)
    # The guard does not reach 'elsewhere'; web's own term looks in its own namespace only.
    assert report["pods"][0]["feasible"] == ["n1", "n2", "n3"]


def test_a_new_revision_scoped_by_pod_template_hash_ignores_the_old_pods() -> None:
    scoped = WEB.replace("REPLICAS", "3").replace(
        "              topologyKey: kubernetes.io/hostname\n",
        "              topologyKey: kubernetes.io/hostname\n"
        "              matchLabelKeys: [pod-template-hash]\n",
    )
    (workload,) = kit.workloads(scoped)
    nodes_only = CLUSTER_WITH_PODS.split("  - apiVersion: v1\n    kind: Namespace", maxsplit=1)[0]
    cluster = cluster_from([parse("c.yaml", nodes_only)])
    sim = Simulation(cluster.nodes, version="1.37")
    for replica in range(3):
        assert sim.place(sim.pod(workload, replica)).node is not None
    fourth = sim.place(sim.pod(workload, 3))
    assert fourth.node is None  # same revision: one per node
    surge = sim.place(sim.pod(workload, 0, revision="revision 2"), record=True)
    assert surge.node is not None and surge.feasible == ["n1", "n2", "n3"]


SPREAD_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: p, labels: {app: a}}
spec:
  containers: [{name: c, image: i}]
  topologySpreadConstraints:
    - maxSkew: 1
      topologyKey: zone
      whenUnsatisfiable: DoNotSchedule
      labelSelector: {matchLabels: {app: a}}
"""
ANTI_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: p, labels: {app: a}}
spec:
  containers: [{name: c, image: i}]
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - {topologyKey: zone, labelSelector: {matchLabels: {app: a}}}
"""
TERMINATING = """\
apiVersion: v1
kind: List
items:
  - {apiVersion: v1, kind: Node, metadata: {name: n1, labels: {zone: a}}}
  - {apiVersion: v1, kind: Node, metadata: {name: n2, labels: {zone: b}}}
  - apiVersion: v1
    kind: Pod
    metadata: {name: old, labels: {app: a}, deletionTimestamp: "2026-01-01T00:00:00Z"}
    spec: {nodeName: n1, containers: [{name: c, image: i}]}
"""


def test_terminating_pods_count_for_affinity_but_not_for_spread() -> None:
    cluster = cluster_from([parse("c.yaml", TERMINATING)])
    run = place_all(kit.workloads(SPREAD_POD), cluster, version="1.37", record=True)
    assert run.placements[0].feasible == ["n1", "n2"]  # the terminating pod is not counted
    run = place_all(kit.workloads(ANTI_POD), cluster, version="1.37", record=True)
    assert run.placements[0].feasible == ["n2"]  # InterPodAffinity counts every pod on the node


AGENT = """\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: infra}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: c, image: i}]
"""


def test_daemonset_runs_where_its_controller_puts_it() -> None:
    daemon = AGENT
    cluster = cluster_from(load([str(TOPOLOGY)]))
    run = place_all(kit.workloads(daemon), cluster, version="1.37")
    assert [p.node for p in run.placements] == [
        n.ref.name for n in cluster.nodes if n.ref.name.startswith("general")
    ]
    tolerant = daemon.replace(
        "      containers:", "      tolerations: [{operator: Exists}]\n      containers:"
    )
    run = place_all(kit.workloads(tolerant), cluster, version="1.37")
    assert len(run.placements) == 7 and not run.pending


def test_a_pinned_daemonset_pod_is_filtered_on_its_own_node_only() -> None:
    """NodeAffinity's PreFilter narrows a DaemonSet pod to its node: every other node gets the
    absent-nodes status, even one whose taint the pod does not tolerate (upstream
    SetAbsentNodesStatus); its own node is filtered as usual. The event reads as a real one:
    "0/46 nodes are available: 1 Too many pods, 45 node(s) didn't satisfy plugin(s) [NodeAffinity]"."""
    nodes = "".join(
        f"apiVersion: v1\nkind: Node\nmetadata: {{name: n{index}}}\n"
        + ("spec: {taints: [{key: gpu, value: 'y', effect: NoSchedule}]}\n" if index % 2 else "")
        + "status: {allocatable: {pods: '1', cpu: '4'}}\n---\n"
        for index in range(4)
    )
    busy = "apiVersion: v1\nkind: Pod\nmetadata: {name: busy, namespace: x}\n"
    busy += "spec: {nodeName: n0, containers: [{name: c}]}\n"
    cluster = cluster_from([parse("c.yaml", nodes + busy)])
    daemon = AGENT
    for record in (False, True):
        run = place_all(kit.workloads(daemon), cluster, version="1.37", record=record)
        # The controller runs it on the untainted nodes n0 (full) and n2.
        assert [(p.pod.constraints.pinned, p.node) for p in run.placements] == [("n0", None), ("n2", "n2")]
        (pending,) = run.pending
        assert pending.summary(4) == (
            "0/4 nodes are available: 1 Too many pods, 3 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
            "preemption: 0/4 nodes are available: 1 No preemption victims found for incoming pod, "
            "3 Preemption is not helpful for scheduling."
        )
        if record:
            assert pending.feasible == []
            assert pending.rejected == {
                "n0": ["Too many pods"],
                **{name: ["node(s) didn't satisfy plugin(s) [NodeAffinity]"] for name in ("n1", "n2", "n3")},
            }


def test_gt_lt_tolerations_need_their_gate() -> None:
    text = """\
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: i}]
  tolerations: [{key: tier, operator: Gt, value: "5", effect: NoSchedule}]
"""
    node = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
    node += "spec: {taints: [{key: tier, value: '7', effect: NoSchedule}]}\n"
    cluster = cluster_from([parse("c.yaml", node)])
    off = place_all(kit.workloads(text), cluster, version="1.37")
    on = place_all(
        kit.workloads(text), cluster, version="1.37", gates={"TaintTolerationComparisonOperators": True}
    )
    assert off.pending and not on.pending


def test_the_fast_path_chooses_what_the_full_scan_chooses() -> None:
    """Without ``record`` the best node comes from a heap and the set-apart nodes; with it every
    node is filtered and scored. The choices must agree pod for pod."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from generate import generate  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    folder = Path(pytest.importorskip("tempfile").mkdtemp())
    generate(str(folder / "c"), workloads=300, nodes=60, zones=3)
    files = load([str(folder / "c" / "manifests")])
    cluster = cluster_from(load([str(folder / "c" / "cluster.yaml")]))
    workloads = build_inventory(d for f in files for d in f.documents).workloads
    fast = place_all(workloads, cluster, version="1.37")
    full = place_all(workloads, cluster, version="1.37", record=True)
    assert len(fast.placements) > 300
    assert [p.node for p in fast.placements] == [p.node for p in full.placements]
    assert fast.pending  # the corpus has pods that do not fit, so the comparison covers both


ONE_SLOT = """\
apiVersion: kaffinity.io/v1alpha1
kind: ClusterTopology
spec:
  nodes: [{name: tiny, allocatable: {pods: 1, cpu: '4'}}]
"""


def _pod(name: str, namespace: str = "default", spec: str = "") -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  containers: [{{name: c, image: i}}]
{spec}"""


def _winner(*manifests: str, cluster: str = ONE_SLOT) -> str:
    """The pod that gets the one free slot when ``manifests`` are placed in this order (their
    PriorityClass objects passed as the input's, as ``lint`` and ``place`` do)."""
    inventories = [build_inventory(parse("w.yaml", text).documents) for text in manifests]
    run = place_all(
        [w for inventory in inventories for w in inventory.workloads],
        cluster_from([parse("c.yaml", cluster)]),
        version="1.37",
        classes=[pc for inventory in inventories for pc in inventory.priority_classes],
    )
    (placed,) = [p for p in run.placements if p.node is not None]
    return placed.pod.workload.ref.name


def test_equal_priority_pods_queue_by_namespace_kind_and_name_not_by_file_order() -> None:
    a, b, other = _pod("a"), _pod("b"), _pod("a", namespace="zz")
    assert _winner(a, b) == _winner(b, a) == "a"
    assert _winner(other, b) == _winner(b, other) == "b"  # namespace default before zz


@pytest.mark.parametrize(
    "high",
    ["  priority: 1000\n", "  priorityClassName: system-cluster-critical\n"],
    ids=["spec.priority", "system class"],
)
def test_a_higher_priority_pod_is_placed_first_even_when_listed_later(high: str) -> None:
    """PrioritySort: the higher priority leaves the queue first (pkg/scheduler/framework/plugins/
    queuesort), so it takes the one slot although the name order and the file order favour the other."""
    low, urgent = _pod("a", spec="  priority: 10\n"), _pod("z", spec=high)
    assert _winner(low, urgent) == _winner(urgent, low) == "z"
    unknown = _pod("z", spec="  priorityClassName: not-declared\n")  # no such class: counts as 0
    assert _winner(low, unknown) == "a"


def _class(name: str, value: int, default: bool = False, api: str = "scheduling.k8s.io/v1") -> str:
    return f"apiVersion: {api}\nkind: PriorityClass\nmetadata: {{name: {name}}}\nvalue: {value}\n" + (
        "globalDefault: true\n" if default else ""
    )


def test_a_user_priority_class_puts_its_pods_first_whichever_file_declares_it() -> None:
    """The Priority admission plugin (plugin/pkg/admission/priority) gives a pod the ``value`` of
    the class it names; PrioritySort then takes it first. Without the class object the name
    resolves to nothing (0) and the name order decides."""
    plain, urgent = _pod("a"), _pod("z", spec="  priorityClassName: urgent\n")
    assert _winner(plain, urgent) == "a"  # no PriorityClass declared
    declared = _class("urgent", 1000)
    assert _winner(plain, urgent, declared) == _winner(declared, urgent, plain) == "z"
    # In the cluster file (an existing class) it counts as well.
    assert _winner(plain, urgent, cluster=f"{ONE_SLOT}---\n{declared}") == "z"
    # A negative value puts the pod behind those without a class.
    first, sinking = _pod("a", spec="  priorityClassName: batch\n"), _pod("z")
    assert _winner(first, sinking, _class("batch", -5)) == "z"
    # An explicit spec.priority is kept as it is, whatever the class says.
    pinned = _pod("z", spec="  priorityClassName: urgent\n  priority: -1\n")
    assert _winner(plain, pinned, declared) == "a"


@pytest.mark.parametrize(
    "declared",
    [
        _class("system-urgent", 1000),  # the system- prefix is reserved (scheduling validation)
        _class("urgent", 2_000_000_000),  # above HighestUserDefinablePriority (1e9)
        _class("urgent", 1000, api="v1"),  # not the scheduling.k8s.io group: not a PriorityClass
    ],
    ids=["reserved name", "too high", "wrong group"],
)
def test_a_priority_class_the_api_server_refuses_gives_nothing(declared: str) -> None:
    name = declared.split("name: ")[1].split("}", maxsplit=1)[0]
    urgent = _pod("z", spec=f"  priorityClassName: {name}\n")
    assert _winner(_pod("a"), urgent, declared) == "a"


def test_the_global_default_class_gives_its_value_to_pods_that_name_no_class() -> None:
    """A pod without ``priorityClassName`` gets the ``globalDefault`` class's value, else 0
    (getDefaultPriority); a pod naming a class gets that class's value, not the default."""
    nameless, low = _pod("z"), _pod("a", spec="  priorityClassName: low\n")
    classes = (_class("low", 10), _class("standard", 100, default=True))
    assert _winner(low, nameless) == "a"  # no classes: both 0, the name decides
    assert _winner(low, nameless, *classes) == _winner(*classes[::-1], nameless, low) == "z"
    # Several defaults (the race the plugin allows for): the lowest value is the default.
    assert _winner(low, nameless, *classes, _class("cheap", 5, default=True)) == "a"
    # The cluster's default exists already: the API refuses a second one from the input.
    cluster = f"{ONE_SLOT}---\n{_class('cheap', 5, default=True)}"
    assert _winner(low, nameless, *classes, cluster=cluster) == "a"
    # A class already in the cluster keeps its value (PriorityClass value is immutable).
    existing = f"{ONE_SLOT}---\n{_class('low', -10)}"
    assert _winner(low, nameless, _class("low", 500), cluster=existing) == "z"


def test_priority_classes_of_the_input_order_lint_and_place(tmp_path: Path) -> None:
    """``kaffinity place`` and ``lint --cluster`` (Context.placement) read the input's classes."""
    manifests = "---\n".join(
        (_pod("a"), _pod("z", spec="  priorityClassName: urgent\n"), _class("urgent", 1000))
    )
    code, out = place(tmp_path, manifests, "--format", "json", cluster=ONE_SLOT)
    assert code == 1
    assert {pod["object"]["name"]: pod["node"] for pod in out["pods"]} == {"z": "tiny", "a": None}
    cluster = cluster_from([parse("c.yaml", ONE_SLOT)])
    run = Context([parse("app.yaml", manifests)], Settings(), cluster).placement
    assert run is not None
    assert [(p.pod.workload.ref.name, p.node) for p in run.placements] == [("z", "tiny"), ("a", None)]


def test_a_statefulsets_replicas_are_placed_together_in_ordinal_order() -> None:
    sts = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: i}]}
"""
    workloads = [*kit.workloads(_pod("z")), *kit.workloads(sts), *kit.workloads(_pod("a"))]
    run = place_all(workloads, cluster_from(load([str(TOPOLOGY)])), version="1.37")
    order = [(p.pod.workload.ref.name, p.pod.replica) for p in run.placements]
    assert order == [("a", 0), ("z", 0), ("db", 0), ("db", 1), ("db", 2)]  # Pod < StatefulSet


def test_placement_does_not_depend_on_the_file_order() -> None:
    """Every example placed with the files given forwards and backwards: the same pods, nodes and
    reasons. The examples compete for nodes (anti-affinity, spread, cpu), so the order matters."""
    paths = sorted(str(path) for path in EXAMPLES.rglob("*.yaml") if "clusters" not in path.parts)

    def placed(order: list[str]) -> tuple[int, str]:
        args = ["place", "--no-config", "--format", "json", "--cluster", str(TOPOLOGY), *order]
        result = run(*args)
        return result.returncode, result.stdout

    forward, backward = placed(paths), placed(paths[::-1])
    assert forward == backward
    pods = json.loads(forward[1])["pods"]
    assert any(pod["node"] is None for pod in pods) and any(pod["node"] for pod in pods)


def test_a_compact_pool_without_ephemeral_storage_leaves_it_unchecked(tmp_path: Path) -> None:
    disk = WEB.replace("REPLICAS", "1").replace("cpu: 500m", "ephemeral-storage: 50Gi")
    code, _ = place(tmp_path, disk)
    assert code == 0
    declared = TOPOLOGY.read_text().replace("pods: 110}", "pods: 110, ephemeral-storage: 10Gi}")
    code, out = place(tmp_path, disk, cluster=declared)
    assert code == 1 and "6 Insufficient ephemeral-storage" in out


def test_place_reads_stdin_and_writes_a_file(tmp_path: Path) -> None:
    out = tmp_path / "placed.json"
    result = run(
        "place",
        "--no-config",
        "-",
        "--cluster",
        TOPOLOGY,
        "--format",
        "json",
        "-o",
        out,
        stdin=WEB.replace("REPLICAS", "2"),
    )
    assert result.returncode == 0 and result.stdout == ""
    assert [pod["node"] for pod in json.loads(out.read_text())["pods"]] == [
        "general-eu-west-1a-0",
        "general-eu-west-1a-1",
    ]


def test_a_huge_pool_is_refused_before_it_is_expanded(tmp_path: Path) -> None:
    huge = (
        "apiVersion: kaffinity.io/v1alpha1\nkind: ClusterTopology\n"
        "spec: {zones: [{name: a, pools: [{name: p, count: 1000000000}]}]}\n"
    )
    code, out = place(tmp_path, WEB.replace("REPLICAS", "1"), cluster=huge)
    assert code == 2
    assert re.search(
        r"invalid ClusterTopology at spec\.zones\.0\.pools\.0\.count: expected at most \d+, got 1000000000",
        out,
    )


ROLLOUT = EXAMPLES / "rollout-deadlock" / "fail.yaml"
ROLLOUT_CLUSTER = EXAMPLES / "clusters" / "rollout-deadlock.yaml"


def _rules_reported(*args: str) -> set[str]:
    result = run("lint", "--format", "json", "--cluster", ROLLOUT_CLUSTER, *args)
    return {finding["rule"] for finding in json.loads(result.stdout)["findings"]}


def test_no_simulate_flag_and_config_turn_the_placement_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert "rollout-deadlock" in _rules_reported("--no-config", str(ROLLOUT))
    assert "rollout-deadlock" not in _rules_reported("--no-config", "--no-simulate", str(ROLLOUT))
    (tmp_path / ".kaffinity.yaml").write_text("simulate: false\n")
    assert "rollout-deadlock" not in _rules_reported(str(ROLLOUT))
    assert "rollout-deadlock" in _rules_reported("--simulate", str(ROLLOUT))


EMPTY_CLUSTER_WORKLOAD = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers: [{name: c, image: nginx}]
"""


def test_an_empty_cluster_file_says_no_nodes_available(tmp_path: Path) -> None:
    """An empty cluster file used to give "0/0 nodes are available: ." and a no-eligible-node
    message about a nodeSelector the workload does not have; kube-scheduler says
    ErrNoNodesAvailable (pkg/scheduler/schedule_one.go)."""
    (tmp_path / "cluster.yaml").write_text("")
    (tmp_path / "web.yaml").write_text(EMPTY_CLUSTER_WORKLOAD)
    cluster, web = str(tmp_path / "cluster.yaml"), str(tmp_path / "web.yaml")
    placed = run("place", "--no-config", "--cluster", cluster, web)
    assert placed.returncode == 1
    assert placed.stdout.splitlines()[0].endswith("replica 0 Pending: no nodes available to schedule pods")
    linted = run("lint", "--no-config", "--format", "json", "--cluster", cluster, web)
    findings = json.loads(linted.stdout)["findings"]
    assert [(f["rule"], f["line"], f["path"]) for f in findings] == [
        ("no-eligible-node", 11, "spec.template.spec")
    ]
    assert "nodeSelector" not in findings[0]["message"]
