"""Hypothesis strategies for the scheduling differential suite (tests/differential/test_schedule.py):
clusters (nodes with zones, hostnames, labels, taints, allocatable, cordons; bound pods with
labels, requests, host ports, priorities, anti-affinity and start times; PriorityClasses,
Namespaces, PodDisruptionBudgets with their status) and workloads (Pods, Deployments,
StatefulSets, DaemonSets with the scheduling fields), as JSON-ready dicts. Every object is one
the API server accepts."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
RACK = "example.com/rack"  # a key few nodes carry
APPS = ("a", "b")
TIERS = ("x", "y")
NAMESPACES = ("default", "other")
CLASSES = {"low": 10, "high": 1000}

# --- strategies --------------------------------------------------------------------------------

CPUS = ("100m", "500m", "1", "1500m")
MEMORY = ("128Mi", "1Gi")


@st.composite
def requests(draw: st.DrawFn, busy: bool = False) -> dict[str, Any]:
    found: dict[str, str] = {}
    if busy:  # every pod asks for cpu: nodes fill up and preemption has work
        found["cpu"] = draw(st.sampled_from(("500m", "1")))
    elif draw(st.booleans()):
        found["cpu"] = draw(st.sampled_from(CPUS))
    if draw(st.booleans()):
        found["memory"] = draw(st.sampled_from(MEMORY))
    return {"requests": found} if found else {}


@st.composite
def container(draw: st.DrawFn, name: str = "c", busy: bool = False) -> dict[str, Any]:
    found: dict[str, Any] = {"name": name, "image": "registry.k8s.io/pause:3.10"}
    resources = draw(requests(busy))
    if resources and draw(st.integers(0, 4)) == 0:
        resources = {"limits": resources["requests"]}  # the API server defaults requests from limits
    if resources:
        found["resources"] = resources
    if draw(st.integers(0, 5)) == 0:
        port: dict[str, Any] = {"containerPort": 80, "hostPort": draw(st.sampled_from((8080, 8081)))}
        if draw(st.integers(0, 3)) == 0:
            port["hostIP"] = draw(st.sampled_from(("10.0.0.1", "0.0.0.0")))
        if draw(st.integers(0, 3)) == 0:
            port["protocol"] = "UDP"
        found["ports"] = [port]
    return found


@st.composite
def selector(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return {"matchExpressions": [{"key": "app", "operator": "Exists"}]}
    if kind == 1:
        operator = draw(st.sampled_from(("In", "NotIn")))
        return {
            "matchExpressions": [
                {"key": "app", "operator": operator, "values": [draw(st.sampled_from(APPS))]}
            ]
        }
    return {"matchLabels": {"app": draw(st.sampled_from(APPS))}}


@st.composite
def pod_term(draw: st.DrawFn) -> dict[str, Any]:
    term: dict[str, Any] = {
        "labelSelector": draw(selector()),
        "topologyKey": draw(st.sampled_from((HOSTNAME, HOSTNAME, ZONE, RACK))),
    }
    scope = draw(st.integers(0, 5))
    if scope == 0:
        term["namespaces"] = [draw(st.sampled_from(NAMESPACES))]
    elif scope == 1:
        term["namespaceSelector"] = draw(st.sampled_from(({}, {"matchLabels": {"team": "t"}})))
    keys = draw(st.integers(0, 6))
    if keys == 0:
        term["matchLabelKeys"] = ["tier"]
    elif keys == 1:
        term["mismatchLabelKeys"] = ["tier"]
    return term


@st.composite
def pod_affinity(draw: st.DrawFn) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if draw(st.booleans()):
        found["requiredDuringSchedulingIgnoredDuringExecution"] = [draw(pod_term())]
    if draw(st.booleans()):
        found["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": draw(st.sampled_from((1, 50, 100))), "podAffinityTerm": draw(pod_term())}
        ]
    return found


@st.composite
def node_affinity(draw: st.DrawFn) -> dict[str, Any]:
    found: dict[str, Any] = {}
    expression = st.sampled_from(
        (
            {"key": ZONE, "operator": "In", "values": ["z0"]},
            {"key": ZONE, "operator": "NotIn", "values": ["z1"]},
            {"key": "disk", "operator": "Exists"},
            {"key": "disk", "operator": "DoesNotExist"},
            {"key": "example.com/size", "operator": "Gt", "values": ["2"]},
            {"key": "example.com/size", "operator": "Lt", "values": ["3"]},
        )
    )
    if draw(st.booleans()):
        terms: list[dict[str, Any]] = [
            {"matchExpressions": draw(st.lists(expression, min_size=1, max_size=2, unique_by=json.dumps))}
            for _ in range(draw(st.integers(1, 2)))
        ]
        if draw(st.integers(0, 4)) == 0:
            names = draw(st.lists(st.sampled_from(("n0", "n1", "n2")), min_size=1, max_size=2, unique=True))
            terms.append({"matchFields": [{"key": "metadata.name", "operator": "In", "values": names}]})
        found["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
    if draw(st.booleans()):
        found["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {
                "weight": draw(st.sampled_from((1, 100))),
                "preference": {"matchExpressions": [draw(expression)]},
            }
        ]
    return found


@st.composite
def spread(draw: st.DrawFn) -> dict[str, Any]:
    hard = draw(st.booleans())
    found: dict[str, Any] = {
        "maxSkew": draw(st.sampled_from((1, 1, 2))),
        "topologyKey": draw(st.sampled_from((HOSTNAME, ZONE, ZONE, RACK))),
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": draw(st.sampled_from(APPS))}},
    }
    if hard and draw(st.integers(0, 3)) == 0:
        found["minDomains"] = draw(st.sampled_from((2, 3)))
    if draw(st.integers(0, 3)) == 0:
        found["nodeAffinityPolicy"] = draw(st.sampled_from(("Honor", "Ignore")))
    if draw(st.integers(0, 3)) == 0:
        found["nodeTaintsPolicy"] = draw(st.sampled_from(("Honor", "Ignore")))
    if draw(st.integers(0, 4)) == 0:
        found["matchLabelKeys"] = ["tier"]
    return found


TOLERATIONS = (
    {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
    {"key": "dedicated", "operator": "Exists"},
    {"key": "spot", "operator": "Exists", "effect": "NoExecute"},
    {"operator": "Exists"},
)


@st.composite
def pod_spec(draw: st.DrawFn, busy: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [draw(container(busy=busy))]}
    if draw(st.integers(0, 4)) == 0:
        spec["containers"].append(draw(container("d")))
    if draw(st.integers(0, 4)) == 0:
        spec["initContainers"] = [draw(container("init"))]
    if draw(st.integers(0, 3)) == 0:
        spec["nodeSelector"] = draw(st.sampled_from(({ZONE: "z0"}, {"disk": "ssd"})))
    affinity: dict[str, Any] = {}
    if draw(st.integers(0, 2)) == 0:
        affinity["nodeAffinity"] = draw(node_affinity())
    if draw(st.integers(0, 2)) == 0:
        affinity["podAffinity"] = draw(pod_affinity())
    if draw(st.integers(0, 1)) == 0:
        affinity["podAntiAffinity"] = draw(pod_affinity())
    affinity = {key: value for key, value in affinity.items() if value}
    if affinity:
        spec["affinity"] = affinity
    if draw(st.integers(0, 1)) == 0:
        spec["topologySpreadConstraints"] = draw(
            st.lists(spread(), min_size=1, max_size=2, unique_by=_spread_key)
        )
    if draw(st.integers(0, 2)) == 0:
        spec["tolerations"] = draw(
            st.lists(st.sampled_from(TOLERATIONS), min_size=1, max_size=2, unique_by=json.dumps)
        )
    if busy or draw(st.integers(0, 2)) == 0:
        spec["priorityClassName"] = "high" if busy else draw(st.sampled_from(sorted(CLASSES)))
    return spec


def _spread_key(constraint: dict[str, Any]) -> tuple[str, str]:
    # The API server refuses two constraints with the same topologyKey and whenUnsatisfiable.
    return (constraint["topologyKey"], constraint["whenUnsatisfiable"])


TAINTS = (
    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    {"key": "dedicated", "value": "infra", "effect": "PreferNoSchedule"},
    {"key": "spot", "value": "true", "effect": "NoExecute"},
)


@st.composite
def node(draw: st.DrawFn, index: int) -> dict[str, Any]:
    name = f"n{index}"
    labels = {HOSTNAME: name}
    zone = draw(st.sampled_from(("z0", "z1", "z1", None)))
    if zone is not None:
        labels[ZONE] = zone
    if draw(st.integers(0, 2)) == 0:
        labels["disk"] = "ssd"
    if draw(st.integers(0, 3)) == 0:
        labels[RACK] = draw(st.sampled_from(("r0", "r1")))
    spec: dict[str, Any] = {}
    if draw(st.integers(0, 3)) == 0:
        labels["example.com/size"] = draw(st.sampled_from(("1", "2", "3", "4")))
    if draw(st.integers(0, 3)) == 0:
        spec["taints"] = draw(st.lists(st.sampled_from(TAINTS), min_size=1, max_size=2, unique_by=json.dumps))
    if draw(st.integers(0, 7)) == 0:
        spec["unschedulable"] = True
    allocatable = {
        "cpu": draw(st.sampled_from(("1", "2", "4"))),
        "memory": draw(st.sampled_from(("1Gi", "4Gi"))),
        "pods": draw(st.sampled_from(("2", "110", "110"))),
    }
    found: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": allocatable, "allocatable": allocatable},
    }
    if spec:
        found["spec"] = spec
    return found


def _labels(draw: st.DrawFn) -> dict[str, str]:
    return {"app": draw(st.sampled_from(APPS)), "tier": draw(st.sampled_from(TIERS))}


@st.composite
def bound_pod(
    draw: st.DrawFn, index: int, nodes: list[str], started: int, busy: bool = False
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeName": draw(st.sampled_from(nodes)),
        "containers": [draw(container(busy=busy))],
    }
    if draw(st.integers(0, 4)) == 0:
        spec["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [draw(pod_term())]}
        }
    klass = draw(st.sampled_from((None, "low") if busy else (None, "low", "high")))
    if klass is not None:
        spec["priorityClassName"], spec["priority"] = klass, CLASSES[klass]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"b{index}",
            "namespace": draw(st.sampled_from(NAMESPACES)),
            "labels": _labels(draw),
        },
        "spec": spec,
        # Distinct start times, as a capture's running pods have: preemption reprieves the
        # earlier-started of equal-priority victims first and prefers the node whose victims
        # started last (util.GetPodStartTime takes "now" for a pod without one: a coin toss).
        "status": {"phase": "Running", "startTime": f"2026-01-01T00:{started:02d}:00Z"},
    }


@st.composite
def cluster(draw: st.DrawFn, most: int = 5, busy: bool = False) -> dict[str, list[dict[str, Any]]]:
    """``busy``: every pod asks for cpu and the bound ones have lower priorities (preemption)."""
    nodes = [draw(node(i)) for i in range(draw(st.integers(1, most)))]
    names = [n["metadata"]["name"] for n in nodes]
    count = draw(st.integers(2, 6) if busy else st.integers(0, 4))
    starts = draw(st.permutations(range(count)))
    pods = [draw(bound_pod(i, names, starts[i], busy)) for i in range(count)]
    pdbs = []
    if pods and draw(st.integers(0, 1 if busy else 2)) == 0:
        app = draw(st.sampled_from(APPS))
        pdbs.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "budget", "namespace": "default"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
                "status": {
                    "disruptionsAllowed": draw(st.integers(0, 1)),
                    "currentHealthy": 1,
                    "desiredHealthy": 1,
                    "expectedPods": 1,
                },
            }
        )
    classes = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
        for name, value in CLASSES.items()
    ]
    namespaces = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other", "labels": {"team": "t"}}},
    ]
    return {"nodes": nodes, "pods": pods, "pdbs": pdbs, "classes": classes, "namespaces": namespaces}


@st.composite
def workload(draw: st.DrawFn, index: int, replicas: int = 3, busy: bool = False) -> dict[str, Any]:
    kinds = (
        ("Pod", "Deployment", "StatefulSet", "DaemonSet") if replicas <= 3 else ("Deployment", "StatefulSet")
    )
    kind = draw(st.sampled_from(kinds))
    name = f"w{index}"
    namespace = draw(st.sampled_from(("default", "default", "other")))
    labels = _labels(draw)
    spec = draw(pod_spec(busy))
    if kind == "Pod":
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": spec,
        }
    body: dict[str, Any] = {
        "replicas": draw(st.integers(1, replicas)),
        "selector": {"matchLabels": {"app": labels["app"], "w": name}},
        "template": {"metadata": {"labels": {**labels, "w": name}}, "spec": spec},
    }
    if kind == "StatefulSet":
        body["serviceName"] = name
    if kind == "DaemonSet":
        del body["replicas"]
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
    }


@st.composite
def workloads(draw: st.DrawFn, most: int = 3, replicas: int = 3, busy: bool = False) -> list[dict[str, Any]]:
    return [draw(workload(i, replicas, busy)) for i in range(draw(st.integers(1, most)))]
