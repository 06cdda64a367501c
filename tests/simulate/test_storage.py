"""Volumes and RuntimeClasses on a declared cluster (issue 35, item 4), without the oracle:
the StorageClass, PV and RuntimeClass examples of the Kubernetes documentation, a StatefulSet's
claims, and what ``tests/differential/test_volumes.py`` had kube-scheduler answer.

* ``kaffinity/simulate/storage.py``: the objects read from the cluster file and the input;
* ``kaffinity/simulate/plugins/volumebinding.py``, ``volumezone.py``: the filters;
* ``kaffinity/simulate/runtimeclass.py``: the RuntimeClass admission plugin.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kaffinity.k8s.model import build_inventory
from kaffinity.load.parse import parse
from kaffinity.simulate.cluster import cluster_from, storage_of
from kaffinity.simulate.place import place_all

from ..kit import cluster, lint_json, manifest, node, run, zones

ZONE = "topology.kubernetes.io/zone"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"

# The documentation's examples (kubernetes/website, content/en/examples):
#: storage/storageclass/storageclass-topology.yaml
TOPOLOGY_CLASS = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "standard"},
    "provisioner": "example.com/example",
    "parameters": {"type": "pd-standard"},
    "volumeBindingMode": "WaitForFirstConsumer",
    "allowedTopologies": [
        {"matchLabelExpressions": [{"key": ZONE, "values": ["us-central-1a", "us-central-1b"]}]}
    ],
}
#: the local PersistentVolume of concepts/storage/volumes (local), with its StorageClass
LOCAL_CLASS = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "local-storage"},
    "provisioner": "kubernetes.io/no-provisioner",
    "volumeBindingMode": "WaitForFirstConsumer",
}
LOCAL_PV = {
    "apiVersion": "v1",
    "kind": "PersistentVolume",
    "metadata": {"name": "example-pv"},
    "spec": {
        "capacity": {"storage": "100Gi"},
        "volumeMode": "Filesystem",
        "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": "Delete",
        "storageClassName": "local-storage",
        "local": {"path": "/mnt/disks/ssd1"},
        "nodeAffinity": {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["example-node"]}
                        ]
                    }
                ]
            }
        },
    },
    "status": {"phase": "Available"},
}
#: concepts/containers/runtime-class (Pod Overhead): kata-fc
KATA = {
    "apiVersion": "node.k8s.io/v1",
    "kind": "RuntimeClass",
    "metadata": {"name": "kata-fc"},
    "handler": "kata-fc",
    "overhead": {"podFixed": {"memory": "120Mi", "cpu": "250m"}},
}


def statefulset(name: str, replicas: int, class_name: str | None, cpu: str = "100m") -> dict[str, Any]:
    claim_spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}},
    }
    if class_name is not None:
        claim_spec["storageClassName"] = class_name
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]
                },
            },
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": claim_spec}],
        },
    }


def pod(name: str, cpu: str = "100m", **spec: Any) -> dict[str, Any]:
    body = {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}], **spec}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": body,
    }


def bound_claim(name: str, volume: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {"pv.kubernetes.io/bind-completed": "yes"},
        },
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard", "volumeName": volume},
        "status": {"phase": "Bound"},
    }


def zonal_volume(name: str, zone: str) -> dict[str, Any]:
    terms = [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "standard",
            "csi": {"driver": "example.com/example", "volumeHandle": name},
            "nodeAffinity": {"required": {"nodeSelectorTerms": terms}},
        },
        "status": {"phase": "Bound"},
    }


def place(tmp_path: Path, objects: list[dict[str, Any]], cluster_text: str) -> list[dict[str, Any]]:
    """``kaffinity place --format json``: each pod's node, feasible nodes and reasons."""
    (tmp_path / "app.yaml").write_text(manifest(objects), encoding="utf-8")
    (tmp_path / "cluster.yaml").write_text(cluster_text, encoding="utf-8")
    done = run(
        "place", str(tmp_path / "app.yaml"), "--cluster", str(tmp_path / "cluster.yaml"), "--format", "json"
    )
    assert done.returncode in (0, 1), done.stderr
    pods: list[dict[str, Any]] = json.loads(done.stdout)["pods"]
    return pods


def three_zones(per_zone: int = 1, **fields: Any) -> list[dict[str, Any]]:
    return [
        node(f"{zone}-{i}", zone=zone, **fields)
        for zone in ("us-central-1a", "us-central-1b", "us-central-1c")
        for i in range(per_zone)
    ]


# --- VolumeBinding: WaitForFirstConsumer and allowedTopologies ----------------------------------


def test_new_claims_of_a_topology_class_keep_a_statefulset_out_of_other_zones(tmp_path: Path) -> None:
    """The documentation's topology-aware class: the StatefulSet's new claims may be provisioned
    in us-central-1a and -1b only (``checkVolumeProvisions``), so its pods never run in -1c."""
    pods = place(tmp_path, [statefulset("db", 3, "standard")], cluster(*three_zones(), TOPOLOGY_CLASS))
    assert [p["node"] for p in pods] == ["us-central-1a-0", "us-central-1b-0", "us-central-1a-0"]
    for placed in pods:
        assert placed["rejected"] == {"us-central-1c-0": [BIND_CONFLICT]}


def test_a_local_volume_pins_the_pod_to_its_node(tmp_path: Path) -> None:
    """The documentation's local PV (hostname example-node, no provisioner): an unbound claim of
    its class binds to it only on example-node; the other node has no PV and no provisioner."""
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "local-claim", "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local-storage",
            "resources": {"requests": {"storage": "10Gi"}},
        },
    }
    volumes = [{"name": "disk", "persistentVolumeClaim": {"claimName": "local-claim"}}]
    nodes = cluster(node("example-node"), node("other-node"), LOCAL_CLASS, LOCAL_PV)
    (placed,) = place(tmp_path, [claim, pod("app", volumes=volumes)], nodes)
    assert placed["node"] == "example-node"
    assert placed["rejected"] == {"other-node": [BIND_CONFLICT]}


def test_a_volume_reserved_for_the_claim_but_of_another_class_is_no_candidate(tmp_path: Path) -> None:
    """Found by tests/differential/test_volumes.py (long run): VolumeBinding looks for a PV among
    those of the claim's class (``pvCache.ListPVs(storageClassName)``), so a PV whose claimRef
    names the claim but whose class differs is not bound: kube-scheduler answers "0/1 nodes are
    available: 1 node(s) didn't find available persistent volumes to bind."."""
    reserved = {**LOCAL_PV, "metadata": {"name": "reserved"}}
    reserved["spec"] = {
        **LOCAL_PV["spec"],
        "storageClassName": "other",
        "claimRef": {"namespace": "default", "name": "local-claim"},
    }
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "local-claim", "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local-storage"},
    }
    volumes = [{"name": "disk", "persistentVolumeClaim": {"claimName": "local-claim"}}]
    (placed,) = place(
        tmp_path, [pod("app", volumes=volumes)], cluster(node("example-node"), LOCAL_CLASS, reserved, claim)
    )
    assert placed["node"] is None
    assert placed["rejected"] == {"example-node": [BIND_CONFLICT]}


def test_new_claims_on_a_cluster_that_declares_no_storage_are_taken_as_provisioned(tmp_path: Path) -> None:
    """The real corpus on a compact cluster (kubernetes/website's zookeeper.yaml and cassandra
    examples: templates without a class, or naming one the cluster file does not list): the
    claims the StatefulSet controller creates are bound where the pods go, not refused by
    VolumeZone's PreFilter ("PersistentVolumeClaim had no pv name and storageClass name") as a
    first version of this said for 28 real workloads."""
    pods = place(tmp_path, [statefulset("zk", 2, None), statefulset("db", 1, "longhorn")], cluster(*zones(2)))
    assert [p["node"] is not None for p in pods] == [True, True, True]


# --- bound claims: a StatefulSet pinned by its PVs ----------------------------------------------


def test_bound_claims_pin_statefulset_pods_to_their_volumes_zones(tmp_path: Path) -> None:
    """data-db-0 and data-db-1 exist, bound to PVs in us-central-1b and -1a: each pod goes where
    its volume is (``CheckNodeAffinity``); db-2's claim is new and follows the class."""
    objects = [
        TOPOLOGY_CLASS,
        bound_claim("data-db-0", "pv-0"),
        zonal_volume("pv-0", "us-central-1b"),
        bound_claim("data-db-1", "pv-1"),
        zonal_volume("pv-1", "us-central-1a"),
    ]
    pods = place(tmp_path, [statefulset("db", 3, "standard")], cluster(*three_zones(), *objects))
    assert [p["node"] for p in pods] == ["us-central-1b-0", "us-central-1a-0", "us-central-1a-0"]
    assert pods[0]["rejected"] == {"us-central-1a-0": [NODE_CONFLICT], "us-central-1c-0": [NODE_CONFLICT]}


def test_the_autoscaler_cannot_grow_the_zone_a_volume_pins_at_its_max(tmp_path: Path) -> None:
    """A pool per zone, us-central-1b's at its max and full: db-0's volume is there, so the
    other zones' new nodes would not take it; the finding says which pool is at its max."""
    topology = {
        "apiVersion": "kaffinity.io/v1alpha1",
        "kind": "ClusterTopology",
        "spec": {
            "zones": [
                {
                    "name": zone,
                    "pools": [
                        {
                            "name": "general",
                            "count": 1,
                            "max": 1 if zone == "us-central-1b" else 3,
                            "allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"},
                        }
                    ],
                }
                for zone in ("us-central-1a", "us-central-1b")
            ]
        },
    }
    objects = [TOPOLOGY_CLASS, bound_claim("data-db-0", "pv-0"), zonal_volume("pv-0", "us-central-1b")]
    busy = [
        pod(f"busy-{zone}", "1", nodeName=f"general-{zone}-0") for zone in ("us-central-1a", "us-central-1b")
    ]
    (tmp_path / "cluster.yaml").write_text(manifest([topology, *objects, *busy]), encoding="utf-8")
    (tmp_path / "app.yaml").write_text(
        manifest([statefulset("db", 1, "standard", cpu="1500m")]), encoding="utf-8"
    )
    done = lint_json(str(tmp_path / "app.yaml"), "--cluster", str(tmp_path / "cluster.yaml"), "--no-cache")
    (finding,) = [f for f in done.report["findings"] if f["rule"] == "unschedulable"]
    # NodeResourcesFit comes first in the profile: both nodes are too full; no pool helps.
    assert finding["message"].startswith("db-0 stays Pending: 0/2 nodes are available: 2 Insufficient cpu.")
    assert finding["message"].endswith(
        "the autoscaler cannot help: a new node of pool general in zone us-central-1a would not take it: "
        "node(s) didn't match PersistentVolume's node affinity; pool general in zone us-central-1b is at "
        "its max of 1 node"
    )


# --- PreFilter: what kube-scheduler refuses for every node --------------------------------------


def test_an_unbound_immediate_claim_of_the_cluster_refuses_the_pod_on_every_node() -> None:
    """A captured claim of an Immediate class, not bound: VolumeBinding's PreFilter (the
    FailedScheduling text kube-scheduler gives, asserted against the oracle)."""
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast"},
        "status": {"phase": "Pending"},
    }
    fast = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "fast"},
        "provisioner": "x",
    }
    text = cluster(*zones(2), fast, claim)
    the_pod = pod("web", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}])
    placement = _placed(text, the_pod)
    assert (
        placement.node is None and placement.prefilter == "pod has unbound immediate PersistentVolumeClaims"
    )
    assert placement.summary(2) == (
        "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_a_claim_missing_from_a_cluster_that_lists_claims_is_not_found() -> None:
    text = cluster(*zones(1), bound_claim("other", "pv-0"), zonal_volume("pv-0", "z0"))
    the_pod = pod("web", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}])
    assert _placed(text, the_pod).prefilter == 'persistentvolumeclaim "data" not found'


def test_a_claim_of_a_cluster_without_claims_is_taken_to_exist() -> None:
    """A compact cluster says nothing of claims: a linted pod's claim is not reported missing."""
    the_pod = pod("web", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}])
    assert _placed(cluster(*zones(1)), the_pod).node == "z0-n0"


def _placed(cluster_text: str, the_pod: dict[str, Any]) -> Any:
    found = cluster_from([parse("cluster.yaml", cluster_text)])
    manifests = parse("pod.yaml", json.dumps(the_pod))
    inventory = build_inventory(manifests.documents)
    result = place_all(inventory.workloads, found, version="1.37", record=True, documents=inventory.documents)
    (placement,) = result.placements
    return placement


# --- RuntimeClass admission ------------------------------------------------------------------------


def test_runtime_class_overhead_counts_with_the_requests(tmp_path: Path) -> None:
    """kata-fc's 250m overhead: 800m + 250m does not fit a 1-cpu node (NodeResourcesFit counts
    ``resource.PodRequests``, overhead included); without the class the pod fits."""
    nodes = cluster(node("n1", cpu="1"), KATA)
    (kata,) = place(tmp_path, [pod("sandboxed", "800m", runtimeClassName="kata-fc")], nodes)
    assert kata["node"] is None and kata["rejected"] == {"n1": ["Insufficient cpu"]}
    (plain,) = place(tmp_path, [pod("plain", "800m")], nodes)
    assert plain["node"] == "n1"


def test_runtime_class_scheduling_moves_the_pod_to_its_nodes(tmp_path: Path) -> None:
    """``scheduling.nodeSelector`` and ``tolerations`` merged into the pod: it runs on the
    tainted sandbox node only."""
    gvisor = {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": "gvisor"},
        "handler": "runsc",
        "scheduling": {
            "nodeSelector": {"sandbox": "gvisor"},
            "tolerations": [
                {"key": "sandbox", "operator": "Equal", "value": "gvisor", "effect": "NoSchedule"}
            ],
        },
    }
    taint = {"key": "sandbox", "value": "gvisor", "effect": "NoSchedule"}
    nodes = cluster(node("plain"), node("sandbox", {"sandbox": "gvisor"}, taints=[taint]), gvisor)
    (placed,) = place(tmp_path, [pod("p", runtimeClassName="gvisor")], nodes)
    assert placed["node"] == "sandbox"
    assert placed["rejected"] == {"plain": ["node(s) didn't match Pod's node affinity/selector"]}


def test_a_missing_runtime_class_refuses_the_pods_at_admission(tmp_path: Path) -> None:
    """The API server refuses the pod (``pod rejected: RuntimeClass "kata" not found``): reported
    once, on ``runtimeClassName``, as refused rather than Pending."""
    (tmp_path / "cluster.yaml").write_text(cluster(node("n1"), KATA), encoding="utf-8")
    (tmp_path / "app.yaml").write_text(manifest([pod("p", runtimeClassName="kata")]), encoding="utf-8")
    done = lint_json(str(tmp_path / "app.yaml"), "--cluster", str(tmp_path / "cluster.yaml"), "--no-cache")
    (finding,) = done.report["findings"]
    assert (finding["rule"], finding["line"], finding["path"]) == (
        "unschedulable",
        1,
        "spec.runtimeClassName",
    )
    assert 'pod rejected: RuntimeClass "kata" not found' in finding["message"]
    assert done.code == 1


def test_a_conflicting_node_selector_is_refused() -> None:
    zonal = {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": "zonal"},
        "handler": "runc",
        "scheduling": {"nodeSelector": {ZONE: "z0"}},
    }
    placement = _placed(
        cluster(*zones(2), zonal), pod("p", runtimeClassName="zonal", nodeSelector={ZONE: "z1"})
    )
    assert placement.admission
    assert placement.prefilter == (
        "conflict: runtimeClass.scheduling.nodeSelector[topology.kubernetes.io/zone] = z0; "
        "pod.spec.nodeSelector[topology.kubernetes.io/zone] = z1"
    )


# --- the cluster file ----------------------------------------------------------------------------


def test_the_cluster_file_reads_a_capture_list_of_storage_objects() -> None:
    """``kubectl get storageclasses,persistentvolumes,persistentvolumeclaims,runtimeclasses -A -o
    yaml``: a List; a claim without a class gets the default one (DefaultStorageClass)."""
    default = {
        **TOPOLOGY_CLASS,
        "metadata": {
            "name": "standard",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
    }
    unclassed = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "shop"},
        "spec": {"accessModes": ["ReadWriteOnce"]},
    }
    listed = {"apiVersion": "v1", "kind": "List", "items": [default, LOCAL_PV, unclassed, KATA]}
    storage = storage_of(cluster_from([parse("capture.yaml", json.dumps(listed))]))
    assert sorted(storage.classes) == ["standard"] and storage.classes["standard"].delayed
    assert sorted(storage.volumes) == ["example-pv"]
    assert storage.claims[("shop", "data")].class_name == "standard"
    assert storage.runtime_classes["kata-fc"].overhead[0][0] == "cpu"
    assert storage.cluster_claims
