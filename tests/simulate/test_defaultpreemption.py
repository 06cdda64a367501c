"""DefaultPreemption (``kaffinity/simulate/plugins/defaultpreemption.py`` with the preemption
framework, ``kaffinity/simulate/framework/preemption.py``) against upstream's tests, case by case.

``tests/data/upstream/defaultpreemption.yaml`` restates cases of kube-scheduler's
``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go`` (header: commit,
how upstream's helpers map to manifests) whose outcome is one node and one set of victims: the
incoming ``pod`` goes through the default filters, finds no node, and preemption either evicts
exactly ``victims`` from ``node`` and binds the pod there, or (``node: null``) evicts nothing and
the pod stays Pending. Autoscaling is off (``--filters`` lists every other step), as upstream's
scheduler tests know no autoscaler.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kaffinity.simulate.framework.profile import AUTOSCALING, FILTERS, PREEMPTION

from .upstream import load, place, table_path

PLUGIN = "defaultpreemption"
CASES = load(table_path(PLUGIN))["cases"]


def test_table_is_well_formed() -> None:
    data = load(table_path(PLUGIN))
    assert data["plugin"] == PREEMPTION and "commit" in data["source"]
    names = [case["name"] for case in CASES]
    assert len(names) == len(set(names)) and len(names) >= 20
    for case in CASES:
        assert case["pod"]["kind"] == "Pod", case["name"]
        assert case["node"] is None or isinstance(case["node"], str), case["name"]
        assert isinstance(case["victims"], list), case["name"]
        assert case["node"] is not None or not case["victims"], case["name"]
    for skipped in data.get("skipped") or []:
        assert skipped.get("name") and skipped.get("reason"), skipped


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_upstream_preemption_case(tmp_path: Path, case: dict[str, Any]) -> None:
    steps = ",".join(step for step in FILTERS if step != AUTOSCALING)
    placed = place(tmp_path, steps, case)["pods"][0]
    assert placed["node"] == case["node"], case.get("note", "")
    assert sorted(victim["name"] for victim in placed["victims"]) == sorted(case["victims"]), case.get(
        "note", ""
    )


def test_dry_run_frees_a_host_port_another_pod_holds(tmp_path: Path) -> None:
    """The preemption part of the FailedScheduling message, as kube-scheduler v1.37.2 words it
    (the oracle's answer): without the lower-priority holder of 8080, the node's port set no
    longer has it (HostPortInfo.Remove), so the dry run fails at InterPodAffinity, on the
    anti-affinity of the higher-priority pod that also holds 8080, not at NodePorts."""
    from kaffinity.load.parse import parse
    from kaffinity.simulate.cluster import cluster_from
    from kaffinity.simulate.place import place_all

    from ..kit import manifest, workloads

    port = [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "hostPort": 8080}]}]
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n0", "labels": {"kubernetes.io/hostname": "n0"}},
    }
    low = {"nodeName": "n0", "containers": port}
    high = {"nodeName": "n0", "priority": 1000, "affinity": anti, "containers": port}
    cluster = cluster_from(
        [
            parse(
                "cluster.yaml",
                manifest(
                    [
                        node,
                        *(
                            {
                                "apiVersion": "v1",
                                "kind": "Pod",
                                "metadata": {"name": name, "labels": {"app": "a"}},
                                "spec": spec,
                            }
                            for name, spec in (("low", low), ("high", high))
                        ),
                    ]
                ),
            )
        ]
    )
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "w0", "labels": {"app": "a"}},
        "spec": {"priority": 1000, "containers": port},
    }
    (placement,) = place_all(workloads(manifest([pod])), cluster, version="1.37", record=True).placements
    assert placement.node is None
    assert placement.summary(1) == (
        "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports. "
        "preemption: 0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules."
    )
