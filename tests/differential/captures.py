"""Generated captures of live clusters (``kubectl get nodes,pods,... -A -o yaml``) with Pending
pods, for ``kaffinity explain`` (tests/differential/test_explain.py, benchmarks/explain.py).

A capture looks like what kubectl prints for a cluster a few weeks old: Nodes with the labels the
kubelet and the cloud provider set (hostname, zone, region, os, arch, instance type), the taint
``node.kubernetes.io/unschedulable`` on a cordoned node (``spec.unschedulable``: the node
lifecycle controller adds it, TaintNodesByCondition), a tainted GPU pool; bound pods of
Deployments (through their ReplicaSets, ``<deployment>-<pod-template-hash>``), a StatefulSet and
a node-exporter DaemonSet holding host port 9100, each with the ``spec.priority`` admission wrote;
PodDisruptionBudgets with the status the disruption controller keeps; PriorityClasses.

The Pending pods come from recipes, one per reason kube-scheduler gives (:data:`RECIPES`):
``taint`` (a GPU job without its toleration), ``resources`` (a request no node has room for),
``node-affinity`` (a zone or pool no node has), ``anti-affinity`` (one more replica of a
Deployment with hostname anti-affinity), ``spread`` (a zone spread constraint), ``ports`` (a
second exporter on port 9100), ``unschedulable`` (pinned by nodeSelector to a cordoned node),
``preemption`` (a high-priority pod whose victims a budget protects), ``affinity`` (a required
pod affinity to pods that run elsewhere, or nowhere), ``nominated`` (a pod preemption nominated
a node for, its victim still terminating there). A pod may combine two.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

ZONES = ("europe-west1-b", "europe-west1-c", "europe-west1-d")
REGION = "europe-west1"
RECIPES = (
    "taint",
    "resources",
    "node-affinity",
    "anti-affinity",
    "spread",
    "ports",
    "unschedulable",
    "preemption",
    "affinity",
    "nominated",
)
HIGH = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "business-critical"},
    "value": 100000,
    "preemptionPolicy": "PreemptLowerPriority",
    "description": "Customer-facing services.",
}
LOW = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "batch-low"},
    "value": -10,
    "preemptionPolicy": "Never",
}


def node(
    name: str, zone: str, cpu: int, memory_gi: int | None = None, *, gpu: bool = False, cordoned: bool = False
) -> dict[str, Any]:
    """A Node as kubectl shows it (``memory_gi``: 4 GiB per cpu unless given)."""
    memory_gi = cpu * 4 if memory_gi is None else memory_gi
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/zone": zone,
        "topology.kubernetes.io/region": REGION,
        "node.kubernetes.io/instance-type": f"n2-standard-{cpu}" if not gpu else "a2-highgpu-1g",
        "cloud.google.com/gke-nodepool": "gpu" if gpu else "general",
    }
    spec: dict[str, Any] = {"podCIDR": "10.0.0.0/24"}
    taints = []
    if gpu:
        taints.append({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"})
    if cordoned:
        spec["unschedulable"] = True
        taints.append(
            {
                "key": "node.kubernetes.io/unschedulable",
                "effect": "NoSchedule",
                "timeAdded": "2026-11-28T09:00:00Z",
            }
        )
    if taints:
        spec["taints"] = taints
    resources = {
        "cpu": f"{cpu * 1000 - 60}m",
        "memory": f"{memory_gi * 1024 - 700}Mi",
        "pods": "110",
        "ephemeral-storage": "95Gi",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "creationTimestamp": "2026-10-01T08:00:00Z"},
        "spec": spec,
        "status": {
            "allocatable": resources,
            "capacity": {**resources, "cpu": str(cpu), "memory": f"{memory_gi}Gi"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    name: str,
    namespace: str,
    *,
    labels: dict[str, str],
    cpu: str = "100m",
    memory: str = "128Mi",
    node_name: str | None = None,
    owner: tuple[str, str] | None = None,
    created: str = "2026-11-20T10:00:00Z",
    priority: int = 0,
    class_name: str | None = None,
    extra: dict[str, Any] | None = None,
    port: int | None = None,
    nominated: str | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": labels,
        "uid": f"uid-{namespace}-{name}",
        "creationTimestamp": created,
    }
    if owner is not None:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "batch/v1" if owner[0] == "Job" else "apps/v1",
                "kind": owner[0],
                "name": owner[1],
                "uid": f"uid-{owner[1]}",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    container: dict[str, Any] = {
        "name": "main",
        "image": "registry.example.com/app:1.4.2",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }
    if port is not None:
        container["ports"] = [{"containerPort": port, "hostPort": port, "protocol": "TCP"}]
    spec: dict[str, Any] = {
        "containers": [container],
        "schedulerName": "default-scheduler",
        "priority": priority,
        "preemptionPolicy": "Never" if class_name == "batch-low" else "PreemptLowerPriority",
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
            {
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
        ],
    }
    if class_name is not None:
        spec["priorityClassName"] = class_name
    for key, value in (extra or {}).items():
        if key == "tolerations":
            spec["tolerations"] = [*spec["tolerations"], *value]
        else:
            spec[key] = value
    status: dict[str, Any]
    if node_name is not None:
        spec["nodeName"] = node_name
        status = {"phase": "Running", "startTime": created, "qosClass": "Burstable"}
    else:
        status = {
            "phase": "Pending",
            "qosClass": "Burstable",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        }
        if nominated is not None:
            status["nominatedNodeName"] = nominated
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def _anti(app: str, key: str = "kubernetes.io/hostname") -> dict[str, Any]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
            ]
        }
    }


def _spread(app: str) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": app}},
        }
    ]


def _budget(name: str, namespace: str, app: str, allowed: int, healthy: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minAvailable": healthy - allowed, "selector": {"matchLabels": {"app": app}}},
        "status": {
            "currentHealthy": healthy,
            "desiredHealthy": healthy - allowed,
            "disruptionsAllowed": allowed,
            "expectedPods": healthy,
        },
    }


class Cluster:
    """A capture being built: its nodes, the free cpu (millicores) left on each, its objects."""

    def __init__(self, pick: Callable[[list[Any]], Any], number: Callable[[int, int], int]) -> None:
        self.pick, self.number = pick, number
        self.nodes: list[dict[str, Any]] = []
        self.free: dict[str, int] = {}
        self.pods: list[dict[str, Any]] = []
        self.pending: list[dict[str, Any]] = []
        self.others: list[dict[str, Any]] = [HIGH, LOW]
        self.hashes = 0

    def add_node(self, name: str, zone: str, cpu: int, gpu: bool = False, cordoned: bool = False) -> None:
        self.nodes.append(node(name, zone, cpu, cpu * 4, gpu=gpu, cordoned=cordoned))
        self.free[name] = cpu * 1000 - 60

    def usable(self) -> list[dict[str, Any]]:
        return [n for n in self.nodes if not n["spec"].get("unschedulable") and not n["spec"].get("taints")]

    def bind(self, item: dict[str, Any], node_name: str, cpu: int) -> bool:
        if self.free[node_name] < cpu:
            return False
        self.free[node_name] -= cpu
        self.pods.append(item)
        return True

    def template_hash(self) -> str:
        self.hashes += 1
        return f"{self.hashes:02d}7c9b4f8d"[:10]

    def capture(self) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "List",
            "metadata": {"resourceVersion": ""},
            "items": [*self.nodes, *self.pods, *self.pending, *self.others],
        }


def build(
    cluster: Cluster, zones: int, nodes: int, recipes: list[str], *, gpu: bool, cordon: bool
) -> dict[str, Any]:
    """Nodes, the bound workloads, then one Pending pod per recipe (in creation order)."""
    for index in range(nodes):
        zone = ZONES[index % zones]
        cpu = cluster.pick([2, 4, 8])
        cluster.add_node(f"gke-prod-general-{index:03d}", zone, cpu, cordoned=cordon and index == nodes - 1)
    if gpu:
        cluster.add_node("gke-prod-gpu-000", ZONES[0], 8, gpu=True)
    # node-exporter on every node (host port 9100, tolerates everything)
    for number, each in enumerate(cluster.nodes):
        name = each["metadata"]["name"]
        exporter = pod(
            f"node-exporter-{'bcdfghjklmnpqrstvwxz'[number % 20]}{number:03d}x",
            "monitoring",
            labels={"app": "node-exporter", "controller-revision-hash": "6c5b8d7f9"},
            cpu="50m",
            node_name=name,
            owner=("DaemonSet", "node-exporter"),
            created="2026-10-01T08:05:00Z",
            port=9100,
            extra={"tolerations": [{"operator": "Exists"}]},
        )
        cluster.bind(exporter, name, 50)
    usable = cluster.usable()
    # web: hostname anti-affinity, one replica per usable node (up to 4), a budget allowing none
    template = cluster.template_hash()
    web = 0
    for each in usable[:4]:
        name = each["metadata"]["name"]
        item = pod(
            f"web-{template}-{'abcdefgh'[web]}x{web}z",
            "shop",
            labels={"app": "web", "pod-template-hash": template},
            cpu="500m",
            node_name=name,
            owner=("ReplicaSet", f"web-{template}"),
            created=f"2026-11-20T10:00:0{web}Z",
            priority=100000,
            class_name="business-critical",
            extra={"affinity": _anti("web")},
        )
        web += cluster.bind(item, name, 500)
    cluster.others.append(_budget("web", "shop", "web", 0, web))
    # api: zone spread; its replicas crowd the first zone
    api_hash = cluster.template_hash()
    for index in range(cluster.number(0, 3)):
        each = usable[0]
        name = each["metadata"]["name"]
        item = pod(
            f"api-{api_hash}-q{index}w",
            "shop",
            labels={"app": "api", "pod-template-hash": api_hash},
            cpu="250m",
            node_name=name,
            owner=("ReplicaSet", f"api-{api_hash}"),
            created=f"2026-11-21T10:00:0{index}Z",
            extra={"topologySpreadConstraints": _spread("api")},
        )
        cluster.bind(item, name, 250)
    # batch: low-priority workers filling the nodes
    for index, each in enumerate(usable):
        name = each["metadata"]["name"]
        cpu = max(cluster.free[name] - cluster.number(0, 3) * 250, 0)
        if cpu >= 250:
            item = pod(
                f"report-worker-{index}",
                "batch",
                labels={"app": "report-worker"},
                cpu=f"{cpu}m",
                node_name=name,
                owner=("StatefulSet", "report-worker"),
                created=f"2026-11-22T03:{index:02d}:00Z",
                priority=-10,
                class_name="batch-low",
            )
            cluster.bind(item, name, cpu)
    cluster.others.append(
        _budget("report-worker", "batch", "report-worker", cluster.number(0, 1), len(usable))
    )
    for index, recipe in enumerate(recipes):
        cluster.pending.append(pending_pod(cluster, recipe, index, template, api_hash))
    return cluster.capture()


def pending_pod(cluster: Cluster, recipe: str, index: int, web_hash: str, api_hash: str) -> dict[str, Any]:
    """One Pending pod for ``recipe`` (combined with another when the recipe is ``a+b``)."""
    created = f"2026-11-29T09:{index:02d}:00Z"
    job = _JOB_NAMES[recipe.split("+", maxsplit=1)[0]]
    labels: dict[str, str] = {"app": job, "batch.kubernetes.io/job-name": job}
    extra: dict[str, Any] = {}
    cpu, priority, class_name, nominated = "200m", 0, None, None
    owner: tuple[str, str] | None = ("Job", job)
    name, namespace = f"{job}-{index}{'bcdfghjklm'[index % 10]}q7x", "batch"
    for part in recipe.split("+"):
        if part == "taint":
            extra["nodeSelector"] = {"cloud.google.com/gke-nodepool": "gpu"}
        elif part == "resources":
            cpu = f"{cluster.pick([3, 6, 12])}"
        elif part == "node-affinity":
            zone = cluster.pick(["europe-west1-z", *ZONES])
            extra["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}
                                ]
                            }
                        ]
                    }
                }
            }
        elif part == "anti-affinity":
            labels = {"app": "web", "pod-template-hash": web_hash}
            extra["affinity"] = _anti("web")
            owner, name = ("ReplicaSet", f"web-{web_hash}"), f"web-{web_hash}-p{index}nd"
            priority, class_name, namespace = 100000, "business-critical", "shop"
        elif part == "spread":
            labels = {"app": "api", "pod-template-hash": api_hash}
            extra["topologySpreadConstraints"] = _spread("api")
            owner, name = ("ReplicaSet", f"api-{api_hash}"), f"api-{api_hash}-p{index}nd"
            namespace = "shop"
        elif part == "ports":
            labels = {"app": "node-exporter-v2", "controller-revision-hash": "58d9c6b7f4"}
            extra["tolerations"] = [{"operator": "Exists"}]
            owner, name, namespace = (
                ("DaemonSet", "node-exporter-v2"),
                f"node-exporter-v2-{index}t8w",
                "monitoring",
            )
        elif part == "unschedulable":
            cordoned = [n for n in cluster.nodes if n["spec"].get("unschedulable")]
            target = (cordoned or cluster.nodes)[0]["metadata"]["name"]
            extra["nodeSelector"] = {"kubernetes.io/hostname": target}
        elif part == "affinity":
            target, key = cluster.pick(
                [
                    ("cache", "kubernetes.io/hostname"),
                    ("web", "topology.kubernetes.io/zone"),
                    ("api", "kubernetes.io/hostname"),
                ]
            )
            extra["affinity"] = {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"app": target}},
                            "namespaces": ["shop"],
                            "topologyKey": key,
                        }
                    ]
                }
            }
        elif part == "nominated":
            priority, class_name, namespace = 100000, "business-critical", "shop"
            cpu = f"{cluster.pick([400, 1500, 3000])}m"
            nominated = _preempted(cluster)
        elif part == "preemption":
            priority, class_name, namespace = 100000, "business-critical", "shop"
            checkout = f"checkout-{9 - index % 9}b6c8d94f"
            labels = {"app": "checkout", "pod-template-hash": checkout[9:]}
            owner, name = ("ReplicaSet", checkout), f"{checkout}-{index}r2k"
            cpu = f"{cluster.pick([1500, 3000, 7000])}m"
    return pod(
        name,
        namespace,
        labels=labels,
        cpu=cpu,
        owner=owner,
        created=created,
        priority=priority,
        class_name=class_name,
        extra=extra,
        port=9100 if "ports" in recipe else None,
        nominated=nominated,
    )


def _preempted(cluster: Cluster) -> str | None:
    """Mark the first report-worker pod as preemption's victim, terminating (deleted, with the
    DisruptionTarget condition the scheduler adds): the node it runs on, nominated."""
    workers = [p for p in cluster.pods if p["metadata"]["labels"].get("app") == "report-worker"]
    if not workers:
        return None
    victim = workers[0]
    victim["metadata"]["deletionTimestamp"] = "2026-11-29T08:59:30Z"
    victim["metadata"]["deletionGracePeriodSeconds"] = 30
    victim["status"]["conditions"] = [
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": "default-scheduler: preempting to accommodate a higher priority pod",
        }
    ]
    node_name: str = victim["spec"]["nodeName"]
    return node_name


#: The Job each recipe's pod belongs to when no other owner is set.
_JOB_NAMES = {
    "taint": "train-resnet",
    "resources": "nightly-report",
    "node-affinity": "ingest-eu",
    "anti-affinity": "web",
    "spread": "api",
    "ports": "node-exporter-v2",
    "unschedulable": "debug-shell",
    "preemption": "checkout",
    "affinity": "cache-warmer",
    "nominated": "payments",
}


@st.composite
def captures(draw: st.DrawFn) -> dict[str, Any]:
    """A capture with one to three Pending pods (hypothesis strategy)."""
    cluster = Cluster(lambda items: draw(st.sampled_from(items)), lambda a, b: draw(st.integers(a, b)))
    zones = draw(st.integers(1, 3))
    nodes = draw(st.integers(2, 5))
    single = st.sampled_from(RECIPES)
    combined = st.tuples(single, single).map(lambda pair: "+".join(sorted(set(pair))))
    recipes = draw(st.lists(st.one_of(single, combined), min_size=1, max_size=3))
    return build(cluster, zones, nodes, recipes, gpu=draw(st.booleans()), cordon=draw(st.booleans()))


def seeded(seed: int, nodes: int, zones: int, recipes: list[str]) -> dict[str, Any]:
    """A capture from a fixed seed (the example, the benchmark)."""
    generator = random.Random(seed)
    cluster = Cluster(generator.choice, generator.randint)
    return build(cluster, zones, nodes, recipes, gpu=True, cordon=True)
