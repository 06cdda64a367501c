"""The differential oracle (oracle/, issue 35) builds and answers: yaml, cel, validate and schedule requests.

The oracle is built once (tests/differential/oracle.py says where from); these tests pin a few
answers of upstream's code that kaffinity's semantics rely on. Skips, saying why, where `go` is
not on the PATH.
"""

from __future__ import annotations

import json
from typing import Any

from tests.differential.oracle import Oracle


def ask(oracle: Oracle, *requests: dict[str, Any]) -> list[dict[str, Any]]:
    return oracle.ask_all(*requests)


def test_yaml_answers_as_sigs_k8s_io_yaml(oracle: Oracle) -> None:
    (good, bad) = ask(
        oracle, {"op": "yaml", "yaml": "a: yes\nb: 0x10\nc: ~\n"}, {"op": "yaml", "yaml": "a: [\n"}
    )
    assert good == {"ok": True, "json": {"a": True, "b": 16, "c": None}}
    assert bad["ok"] is False and "did not find expected node content" in bad["error"]


def test_cel_formats_lists_as_strings_v2(oracle: Oracle) -> None:
    (answer,) = ask(
        oracle, {"op": "cel", "expr": "'%s'.format([object.names])", "object": {"names": ["app", "side"]}}
    )
    assert answer["ok"] is True
    assert answer["result"] == '["app", "side"]'


def test_validate_refuses_a_daemonset_surging_and_unavailable(oracle: Oracle) -> None:
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "ds"},
        "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
            "updateStrategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1},
            },
        },
    }
    (answer,) = ask(oracle, {"op": "validate", "object": daemonset})
    assert [(e["field"], e["type"]) for e in answer["errors"]] == [
        ("spec.updateStrategy.rollingUpdate.maxSurge", "FieldValueInvalid")
    ]


def _node(name: str, cpu: str, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"taints": taints or []},
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(name: str, cpu: str, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]
    }
    if node is not None:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}


def test_schedule_names_the_taint_and_the_full_nodes(oracle: Oracle) -> None:
    """3 nodes, one tainted, two too full: kube-scheduler's FailedScheduling message, node by node."""
    nodes = [
        _node("n1", "4", [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        _node("n2", "1"),
        _node("n3", "1"),
    ]
    bound = [_pod("busy", "900m", "n2")]
    (fits, refused) = ask(
        oracle,
        {"op": "schedule", "nodes": nodes, "pods": bound, "pod": _pod("web", "500m")},
        {"op": "schedule", "nodes": nodes, "pods": bound, "pod": _pod("web", "1500m")},
    )
    assert fits == {"ok": True, "node": "n3", "event": "Successfully assigned default/web to n3"}
    assert refused["ok"] is True and refused["node"] is None
    # v1.37.2's TaintToleration says "untolerated taint(s)" without the taint's key (older releases named it).
    assert refused["message"].startswith(
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."
    )
    assert "preemption:" in refused["message"]
    assert refused["rejectedBy"] == {
        "n1": "TaintToleration",
        "n2": "NodeResourcesFit",
        "n3": "NodeResourcesFit",
    }
    assert refused["plugins"]["n1"] == ["node(s) had untolerated taint(s)"]


def test_schedule_follows_a_bound_volume_to_its_zone(oracle: Oracle) -> None:
    """A PVC bound to a PV pinned to z1: VolumeBinding refuses the z2 node; without a selector, z1 wins."""
    nodes = [_node("a", "4"), _node("b", "4")]
    nodes[0]["metadata"]["labels"]["topology.kubernetes.io/zone"] = "z1"
    nodes[1]["metadata"]["labels"]["topology.kubernetes.io/zone"] = "z2"
    zone = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["z1"]}
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "pv1"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "std",
            "csi": {"driver": "d", "volumeHandle": "h"},
            "claimRef": {"namespace": "default", "name": "data"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [zone]}]}},
        },
        "status": {"phase": "Bound"},
    }
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": "data",
            "namespace": "default",
            "annotations": {"pv.kubernetes.io/bind-completed": "yes"},
        },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "std",
            "volumeName": "pv1",
            "resources": {"requests": {"storage": "1Gi"}},
        },
        "status": {"phase": "Bound"},
    }
    pinned = _pod("db", "100m")
    pinned["spec"]["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]
    elsewhere = json.loads(json.dumps(pinned))
    elsewhere["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "b"}
    request = {"op": "schedule", "nodes": nodes, "pods": [], "objects": [volume, claim]}
    (free, refused) = ask(oracle, {**request, "pod": pinned}, {**request, "pod": elsewhere})
    assert free["node"] == "a"
    assert refused["node"] is None
    assert refused["rejectedBy"] == {"a": "NodeAffinity", "b": "VolumeBinding"}
    assert "1 node(s) didn't match PersistentVolume's node affinity" in refused["message"]


def test_schedule_admits_the_pod_first_priority_and_runtime_class(oracle: Oracle) -> None:
    """The Priority and RuntimeClass admission plugins run on the pod before the scheduler sees it."""
    nodes = [_node("n1", "1")]
    bound = [_pod("low", "900m", "n1")]
    high = {"metadata": {"name": "high"}, "value": 1000}
    urgent = _pod("urgent", "500m")
    urgent["spec"]["priorityClassName"] = "high"
    sandboxed = _pod("sandboxed", "50m")
    sandboxed["spec"]["runtimeClassName"] = "gvisor"
    gvisor = {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": "gvisor"},
        "handler": "runsc",
        "overhead": {"podFixed": {"cpu": "250m"}},
    }
    (preempts, unknown, overhead) = ask(
        oracle,
        {"op": "schedule", "nodes": nodes, "pods": bound, "pod": urgent, "priorityClasses": [high]},
        {"op": "schedule", "nodes": nodes, "pods": bound, "pod": urgent},
        {"op": "schedule", "nodes": nodes, "pods": bound, "pod": sandboxed, "objects": [gvisor]},
    )
    assert preempts["nominatedNode"] == "n1" and preempts["victims"] == ["default/low"]
    assert unknown == {
        "ok": False,
        "stage": "admission",
        "error": 'pods "urgent" is forbidden: no PriorityClass with name high was found',
    }
    # 900m + 50m fits in 1 CPU; the class's 250m overhead does not.
    assert overhead["node"] is None and overhead["rejectedBy"] == {"n1": "NodeResourcesFit"}
