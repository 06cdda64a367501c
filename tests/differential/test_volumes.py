"""Volumes and RuntimeClasses against the oracle's ``schedule`` op (issue 35, item 4).

Generated clusters: nodes in zones, StorageClasses (Immediate or WaitForFirstConsumer, with or
without ``allowedTopologies``, a provisioner or ``kubernetes.io/no-provisioner``), PVs (node
affinity to zones, zone labels, reserved for a claim or not, Available or not), PVCs (bound,
prebound, unbound), RuntimeClasses (overhead, ``scheduling`` node selector and tolerations);
one pod mounting some claims, maybe naming a RuntimeClass. kaffinity places the pod
(:func:`kaffinity.simulate.place.place_all`, the pod linted beside the cluster file) and must
agree with kube-scheduler and the admission plugins: refused at admission with the same
words; scheduled on a node kaffinity also finds feasible; or Pending with the same
``FailedScheduling`` text (up to the preemption part) and, node by node, the same reasons.

The cluster always declares its claims (a capture of them) and, when the pod names a
RuntimeClass, its classes: kaffinity then judges a missing one missing, as the API server does.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kaffinity.k8s.model import build_inventory
from kaffinity.load.parse import parse
from kaffinity.simulate.cluster import cluster_from
from kaffinity.simulate.place import place_all
from tests.differential.differences import known
from tests.differential.oracle import Oracle, compared, examples

ZONE = "topology.kubernetes.io/zone"
ZONES = ("z1", "z2", "z3")


def node(name: str, zone: str | None, cpu: str = "2", taint: bool = False) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name}
    if zone is not None:
        labels[ZONE] = zone
    resources = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    spec: dict[str, Any] = {}
    if taint:
        spec["taints"] = [{"key": "sandbox", "value": "yes", "effect": "NoSchedule"}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def zone_terms(zones: list[str]) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": zones}]}]}


def storage_class(name: str, mode: str, zones: list[str] | None, provisioner: str) -> dict[str, Any]:
    found: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }
    if zones:
        found["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": zones}]}]
    return found


def volume(
    name: str,
    class_name: str,
    zones: list[str] | None,
    zone_label: str | None,
    claim: str | None,
    phase: str,
    size: str,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": class_name,
        "csi": {"driver": "csi.example.com", "volumeHandle": name},
    }
    if zones is not None:
        spec["nodeAffinity"] = {"required": zone_terms(zones)}
    if claim is not None:
        spec["claimRef"] = {"namespace": "default", "name": claim}
    metadata: dict[str, Any] = {"name": name}
    if zone_label is not None:
        metadata["labels"] = {ZONE: zone_label}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": metadata,
        "spec": spec,
        "status": {"phase": phase},
    }


def claim(
    name: str, class_name: str | None, volume_name: str | None, completed: bool, size: str
) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if class_name is not None:
        spec["storageClassName"] = class_name
    metadata: dict[str, Any] = {"name": name, "namespace": "default"}
    if volume_name is not None:
        spec["volumeName"] = volume_name
        if completed:
            metadata["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata, "spec": spec}


def runtime_class(name: str, overhead: str | None, zone: str | None, tolerates: bool) -> dict[str, Any]:
    found: dict[str, Any] = {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": name},
        "handler": "runsc",
    }
    if overhead is not None:
        found["overhead"] = {"podFixed": {"cpu": overhead}}
    scheduling: dict[str, Any] = {}
    if zone is not None:
        scheduling["nodeSelector"] = {ZONE: zone}
    if tolerates:
        scheduling["tolerations"] = [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]
    if scheduling:
        found["scheduling"] = scheduling
    return found


def pod(claims: list[str], cpu: str, zone: str | None, runtime: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}],
    }
    if claims:
        spec["volumes"] = [
            {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
        ]
    if zone is not None:
        spec["nodeSelector"] = {ZONE: zone}
    if runtime is not None:
        spec["runtimeClassName"] = runtime
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": spec,
    }


maybe_zones = st.one_of(st.none(), st.lists(st.sampled_from(ZONES), min_size=1, max_size=2, unique=True))
sizes = st.sampled_from(["1Gi", "5Gi"])


@st.composite
def cases(draw: st.DrawFn) -> dict[str, Any]:
    zones = ZONES[: draw(st.integers(1, 3))]
    nodes = [
        node(
            f"n{i}",
            draw(st.one_of(st.sampled_from(zones), st.none())) if i else zones[0],
            taint=draw(st.booleans()) and i > 0,
        )
        for i in range(draw(st.integers(1, 4)))
    ]
    classes = [
        storage_class(
            name,
            draw(st.sampled_from(["Immediate", "WaitForFirstConsumer"])),
            draw(maybe_zones),
            draw(st.sampled_from(["csi.example.com", "kubernetes.io/no-provisioner"])),
        )
        for name in draw(st.lists(st.sampled_from(["fast", "local"]), max_size=2, unique=True))
    ]
    class_names = [c["metadata"]["name"] for c in classes] or ["gone"]
    if draw(st.sampled_from([False] * 9 + [True])):
        class_names.append("gone")
    claim_names = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True))
    volumes = []
    for i in range(draw(st.integers(0, 3))):
        volumes.append(
            volume(
                f"pv{i}",
                draw(st.sampled_from(class_names)),
                draw(maybe_zones),
                draw(st.one_of(st.none(), st.sampled_from([*ZONES, "z1__z2"]))),
                draw(st.one_of(st.none(), st.sampled_from(claim_names))),
                draw(st.sampled_from(["Available", "Available", "Bound", "Released"])),
                draw(sizes),
            )
        )
    volume_names = [v["metadata"]["name"] for v in volumes]
    claims = []
    for name in claim_names:
        state = draw(st.sampled_from(["bound", "bound", "unbound", "unbound", "prebound", "lost"]))
        if state in ("bound", "prebound") and volume_names:
            target: str | None = draw(st.sampled_from(volume_names))
        elif state == "lost":
            target = "lost-pv"
        else:
            target = None
        class_name = draw(st.sampled_from([*class_names, *class_names, None, ""]))
        claims.append(claim(name, class_name, target, state != "prebound", draw(sizes)))
    mounted = draw(st.lists(st.sampled_from(claim_names), max_size=2, unique=True))
    if draw(st.sampled_from([False] * 9 + [True])):
        mounted.append("ghost")
    runtimes = [
        runtime_class(
            name,
            draw(st.one_of(st.none(), st.sampled_from(["250m", "1"]))),
            draw(st.one_of(st.none(), st.sampled_from(zones))),
            draw(st.booleans()),
        )
        for name in draw(st.lists(st.sampled_from(["gvisor", "kata"]), max_size=2, unique=True))
    ]
    runtime = draw(st.one_of(st.none(), st.sampled_from(["gvisor", "kata"]))) if runtimes else None
    the_pod = pod(
        mounted,
        draw(st.sampled_from(["100m", "1500m"])),
        draw(st.one_of(st.none(), st.sampled_from(zones))),
        runtime,
    )
    return {"nodes": nodes, "objects": [*classes, *volumes, *claims, *runtimes], "pod": the_pod}


def kaffinity_answer(case: dict[str, Any]) -> dict[str, Any]:
    """kaffinity's placement of the case's pod: admission's refusal, the feasible nodes, or the
    FailedScheduling text and the reasons per node."""
    cluster_text = "\n---\n".join(json.dumps(doc) for doc in [*case["nodes"], *case["objects"]])
    cluster = cluster_from([parse("cluster.yaml", cluster_text)])
    pod_file = parse("pod.yaml", json.dumps(case["pod"]))
    inventory = build_inventory(pod_file.documents)
    run = place_all(inventory.workloads, cluster, version="1.37", record=True, documents=inventory.documents)
    (placement,) = run.placements
    return {
        "admission": placement.prefilter if placement.admission else None,
        "node": placement.node,
        "feasible": placement.feasible or [],
        "rejected": placement.rejected or {},
        "message": None if placement.node else placement.summary(len(run.sim.nodes)),
        "prefilter": placement.prefilter is not None and not placement.admission,
    }


def _without_postfilter(message: str) -> str:
    # The oracle's PostFilter answers a PreFilter rejection with an error status, "not found",
    # where kube-scheduler's says preemption is not helpful: compare up to the PostFilter part.
    known("schedule", "volumes-prefilter-postfilter")
    return message.split(" preemption:", maxsplit=1)[0].removesuffix(" not found")


def in_prebind(answer: dict[str, Any]) -> bool:
    """The pod passed every filter and VolumeBinding's PreBind waits for a PV controller the
    oracle does not run (a timeout), or fails binding without it: kaffinity must place it."""
    waits = not answer["ok"] and answer["stage"] == "timeout"
    failed = answer["ok"] and (answer.get("message") or "").startswith(
        'running PreBind plugin "VolumeBinding"'
    )
    if waits or failed:
        known("schedule", "volumes-prebind-waits")
    return waits or failed


def check(oracle: Oracle, case: dict[str, Any]) -> None:
    request = {
        "op": "schedule",
        "nodes": case["nodes"],
        "pods": [],
        "pod": case["pod"],
        "objects": case["objects"],
        "timeoutSeconds": 1.5,
    }
    answer = oracle.ask(request)
    compared("schedule")
    mine = kaffinity_answer(case)
    if in_prebind(answer):
        assert mine["node"] is not None, (answer, mine)
        return
    if not answer["ok"]:
        assert answer["stage"] == "admission", answer
        assert mine["admission"] is not None, (answer, mine)
        assert answer["error"].split(" is forbidden: ", 1)[1] == mine["admission"]
        return
    assert mine["admission"] is None, (answer, mine)
    if answer["node"] is not None:
        assert answer["node"] in mine["feasible"], (answer, mine)
        return
    assert mine["node"] is None, (answer, mine)
    assert _without_postfilter(mine["message"]) == _without_postfilter(answer["message"]), (answer, mine)
    if not mine["prefilter"]:
        assert mine["rejected"] == answer["plugins"], (answer, mine)


GOLD = {
    "nodes": [node("n0", "z1"), node("n1", "z2")],
    "objects": [
        volume("pv0", "fast", ["z1"], None, "a", "Bound", "1Gi"),
        claim("a", "fast", "pv0", True, "1Gi"),
    ],
    "pod": pod(["a"], "100m", "z2", None),
}


#: Found by the long run: a PV reserved for the claim (claimRef) but of another class is no
#: candidate (VolumeBinding lists the PVs of the claim's class only); kaffinity bound it.
RESERVED_OTHER_CLASS = {
    "nodes": [node("n0", "z1")],
    "objects": [
        storage_class("fast", "Immediate", None, "csi.example.com"),
        storage_class("local", "WaitForFirstConsumer", None, "kubernetes.io/no-provisioner"),
        volume("pv0", "fast", None, "z2", "b", "Available", "1Gi"),
        claim("a", "fast", "pv0", True, "1Gi"),
        claim("b", "local", None, False, "1Gi"),
    ],
    "pod": pod(["a", "b"], "100m", None, None),
}


@settings(
    # A third of the default count: each case builds a kube-scheduler in the oracle (~80 ms).
    max_examples=max(examples() // 3, 10),
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(cases())
@example(GOLD)
@example(RESERVED_OTHER_CLASS)
def test_volumes_and_runtime_classes_agree_with_kube_scheduler(oracle: Oracle, case: dict[str, Any]) -> None:
    check(oracle, case)


# --- a StatefulSet's claims ---------------------------------------------------------------------


@st.composite
def statefulset_cases(draw: st.DrawFn) -> dict[str, Any]:
    """A StatefulSet ``web`` of one replica whose claim template ``data`` names a class; the
    cluster may already hold ``data-web-0`` (bound to a zonal PV, or not bound yet)."""
    zones = ZONES[: draw(st.integers(1, 3))]
    nodes = [node(f"n{i}", draw(st.sampled_from(zones))) for i in range(draw(st.integers(1, 4)))]
    mode = draw(st.sampled_from(["Immediate", "WaitForFirstConsumer"]))
    provisioner = draw(st.sampled_from(["csi.example.com", "kubernetes.io/no-provisioner"]))
    objects: list[dict[str, Any]] = [storage_class("fast", mode, draw(maybe_zones), provisioner)]
    state = draw(st.sampled_from(["new", "bound", "unbound"]))
    template_claim = claim("data-web-0", "fast", None, False, "1Gi")
    if state == "bound":
        objects.append(volume("pv0", "fast", draw(maybe_zones), None, "data-web-0", "Bound", "1Gi"))
        objects.append(claim("data-web-0", "fast", "pv0", True, "1Gi"))
    elif state == "unbound":
        objects.append(template_claim)
    if draw(st.booleans()):
        objects.append(volume("local0", "fast", draw(maybe_zones), None, None, "Available", "5Gi"))
    if state != "bound":  # a claim of the cluster, so that a missing one would be missing
        objects.append(claim("other", "fast", None, False, "1Gi"))
    spec = pod([], "100m", None, None)["spec"]
    workload = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 1,
            "serviceName": "web",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": spec},
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": "fast",
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
    }
    return {
        "nodes": nodes,
        "objects": objects,
        "workload": workload,
        "new": state == "new",
        "claim": template_claim,
    }


def check_statefulset(oracle: Oracle, case: dict[str, Any]) -> None:
    """web-0 as the StatefulSet controller creates it (its volume pointing at ``data-web-0``, the
    claim created from the template when the cluster lacks it) against kaffinity's StatefulSet."""
    the_pod = pod(["data-web-0"], "100m", None, None)
    the_pod["metadata"]["name"] = "web-0"
    objects = [*case["objects"], *([case["claim"]] if case["new"] else [])]
    request = {"op": "schedule", "nodes": case["nodes"], "pods": [], "pod": the_pod, "objects": objects}
    answer = oracle.ask({**request, "timeoutSeconds": 1.5})
    compared("schedule")
    cluster_text = "\n---\n".join(json.dumps(doc) for doc in [*case["nodes"], *case["objects"]])
    found = cluster_from([parse("cluster.yaml", cluster_text)])
    manifests = parse("sts.yaml", json.dumps(case["workload"]))
    inventory = build_inventory(manifests.documents)
    run = place_all(inventory.workloads, found, version="1.37", record=True, documents=inventory.documents)
    (placement,) = run.placements
    immediate = case["objects"][0]["volumeBindingMode"] == "Immediate"
    if case["new"] and immediate:
        # The controller's new claim: kube-scheduler waits for the PV controller to bind it
        # (PreFilter refuses the pod until then); kaffinity takes it as provisioned where the pod runs.
        known("schedule", "volumes-new-immediate-claim")
        assert answer["ok"] and answer["node"] is None, answer
        return
    if in_prebind(answer):
        assert placement.node is not None, (answer, placement)
        return
    assert answer["ok"], answer
    if answer["node"] is not None:
        assert answer["node"] in (placement.feasible or []), (answer, placement)
        return
    assert placement.node is None, (answer, placement)
    mine = placement.summary(len(run.sim.nodes))
    assert _without_postfilter(mine) == _without_postfilter(answer["message"]), (answer, mine)
    if placement.prefilter is None:
        assert placement.rejected == answer["plugins"], (answer, placement.rejected)


@settings(
    # A tenth: a case the filters pass waits out the oracle's timeout in PreBind (1.5 s).
    max_examples=max(examples() // 10, 10),
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(statefulset_cases())
def test_statefulset_claims_agree_with_kube_scheduler(oracle: Oracle, case: dict[str, Any]) -> None:
    check_statefulset(oracle, case)
