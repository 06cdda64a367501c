"""PodTopologySpread against its upstream Filter test table, case by case.

* plugin: ``kaffinity/simulate/plugins/podtopologyspread.py``
* upstream: ``pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go``
* table: ``tests/data/upstream/podtopologyspread.yaml``

Every case runs through ``kaffinity place --filters PodTopologySpread`` (:mod:`tests.simulate.upstream`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kaffinity.simulate.framework.profile import POD_TOPOLOGY_SPREAD

from .upstream import check_filter_case, check_filter_table, filter_cases

PLUGIN = "podtopologyspread"


def test_table_is_well_formed() -> None:
    check_filter_table(PLUGIN, POD_TOPOLOGY_SPREAD)


@pytest.mark.parametrize(("filters", "case"), filter_cases(PLUGIN))
def test_upstream_filter_case(tmp_path: Path, filters: str, case: dict[str, Any]) -> None:
    check_filter_case(tmp_path, filters, case)


def test_daemonset_pod_counts_only_its_own_node() -> None:
    """nodeAffinityPolicy Honor (the default) counts the nodes the pod's required node affinity
    matches; a DaemonSet's pod has it replaced by its node's name
    (ReplaceDaemonSetPodNodeNameNodeAffinity), so its sibling on the other node of the zone is
    not counted: below minDomains the minimum is 0 and both pods run (kube-scheduler v1.37.2,
    the oracle's answer; kaffinity counted the sibling and left the second pod Pending)."""
    from kaffinity.load.parse import parse
    from kaffinity.simulate.cluster import cluster_from
    from kaffinity.simulate.place import place_all

    from ..kit import manifest, workloads

    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": "z0"}},
        }
        for name in ("n0", "n1")
    ]
    spread = {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "minDomains": 2,
        "labelSelector": {"matchLabels": {"app": "b"}},
    }
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent"},
        "spec": {
            "selector": {"matchLabels": {"app": "b"}},
            "template": {
                "metadata": {"labels": {"app": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i"}], "topologySpreadConstraints": [spread]},
            },
        },
    }
    cluster = cluster_from([parse("cluster.yaml", manifest(nodes))])
    run = place_all(workloads(manifest([daemonset])), cluster, version="1.37", record=True)
    assert [(p.pod.constraints.pinned, p.node) for p in run.placements] == [("n0", "n0"), ("n1", "n1")]
