"""The rule ``no-eligible-node`` (kaffinity/rules/no_eligible_node.py): no node of the cluster passes
the pod's node selector, node affinity, taints or nodeName, reported at what excludes them.

Upstream: kube-scheduler's NodeAffinity, TaintToleration, NodeUnschedulable and NodeName filter
plugins.
"""

from __future__ import annotations

import json

from kaffinity.findings import Severity

from ..kit import assert_found, keys, line_of, only
from .pending_inputs import lint_on_cluster, node, pending_workload, text_of, where, zones

# --- no-eligible-node ------------------------------------------------------------------------------


def test_no_eligible_node_names_the_selector_label_and_the_values_there() -> None:
    objects = [pending_workload("web", replicas=2, nodeSelector={"pool": "web", "disk": "ssd"})]
    cluster = [node("n1", labels={"pool": "web", "disk": "hdd"}), node("n2", labels={"pool": "db"})]
    found = assert_found(
        lint_on_cluster(objects, cluster),
        "no-eligible-node",
        *where(objects, '"disk": "ssd"'),
        severity="error",
        path="spec.template.spec.nodeSelector.disk",
    )
    finding = only(lint_on_cluster(objects, cluster), "no-eligible-node")
    assert found["object"]["name"] == "web"
    # The wording is the subject: which label, the values the nodes have, who stays Pending.
    assert "nodeSelector disk=ssd matches none of the cluster's 2 nodes" in finding.message
    assert "the cluster's nodes have disk = hdd" in finding.message
    assert "web[0] and web[1] stay Pending" in finding.message


def test_no_eligible_node_taint_points_at_the_node_and_suggests_the_toleration() -> None:
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    objects = [pending_workload("train", nodeSelector={"pool": "gpu"})]
    cluster = [node("n1"), node("g1", labels={"pool": "gpu"}, taints=[taint])]
    result = lint_on_cluster(objects, cluster)
    assert keys(result) == [("no-eligible-node", *where(objects, '"nodeSelector"'))]
    finding = only(result, "no-eligible-node")
    assert "its nodeSelector allows only g1: g1 has taint dedicated=gpu:NoSchedule" in finding.message
    assert finding.fix is not None
    assert "{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}" in finding.fix
    (related,) = finding.related  # g1's taint in the cluster file: the line after "taints"
    assert related.span is not None
    taints = where(cluster, '"taints"')
    assert (related.file, related.path, related.span.line) == (
        "cluster.yaml",
        "spec.taints[0]",
        taints[0] + 1,
    )
    # Tolerated: placed, nothing to say.
    tolerated = [
        pending_workload(
            "train",
            nodeSelector={"pool": "gpu"},
            tolerations=[{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        )
    ]
    assert keys(lint_on_cluster(tolerated, cluster)) == []


def test_no_eligible_node_cordoned_and_node_affinity() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["db"]}]}
                ]
            }
        }
    }
    objects = [
        pending_workload("backup", affinity=affinity),
        pending_workload("etl", affinity=json.loads(json.dumps(affinity))),
    ]
    objects[1]["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] = ["dwh"]
    cluster = [node("n1", labels={"pool": "web"}), node("d1", labels={"pool": "db"}, unschedulable=True)]
    result = lint_on_cluster(objects, cluster)
    # backup at its required node affinity (d1 matches, cordoned); etl at the expression no node
    # matches, the line before its key.
    expression = line_of(text_of(objects), '"key": "pool"', 2) - 1
    assert keys(result) == [
        ("no-eligible-node", *where(objects, '"requiredDuringSchedulingIgnoredDuringExecution"', 1)),
        ("no-eligible-node", expression, text_of(objects).splitlines()[expression - 1].index("{") + 1),
    ]
    first, second = result.findings
    assert second.path.endswith("nodeSelectorTerms[0].matchExpressions[0]")
    assert "its required node affinity allows only d1: d1 is cordoned" in first.message
    assert "pool In [dwh] (values there: db and web)" in second.message


def test_no_eligible_node_is_quiet_for_a_daemonset_and_warns_for_zero_replicas() -> None:
    objects = [
        pending_workload("agent", "DaemonSet", None, nodeSelector={"accelerator": "fpga"}),
        pending_workload("spare", replicas=0, nodeSelector={"pool": "spot"}),
    ]
    result = lint_on_cluster(objects, zones())
    found = assert_found(result, "no-eligible-node", *where(objects, '"pool": "spot"'), severity="warning")
    assert found["object"]["name"] == "spare"  # the DaemonSet places its pods on the nodes it may use
    assert "replicas: 0 now" in found["message"]


def test_no_eligible_node_kubelet_label_missing_from_the_file_is_a_warning() -> None:
    objects = [pending_workload("web", nodeSelector={"kubernetes.io/arch": "amd64"})]
    finding = only(lint_on_cluster(objects, [node("n1")]), "no-eligible-node")
    assert (finding.line, finding.column) == where(objects, '"kubernetes.io/arch": "amd64"')
    assert finding.severity == Severity.WARNING
    # The wording is the subject: the cluster file lacks a label the kubelet sets.
    assert "the kubelet sets kubernetes.io/arch on every node" in finding.message


def test_no_eligible_node_names_a_missing_node_name() -> None:
    objects = [pending_workload("debug", "Pod", nodeName="nowhere")]
    finding = only(lint_on_cluster(objects, zones()), "no-eligible-node")
    assert (finding.line, finding.column, finding.path) == (*where(objects, '"nodeName"'), "spec.nodeName")
    assert finding.message.startswith("spec.nodeName nowhere names none of the cluster's 3 nodes")
