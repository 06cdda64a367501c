"""``kaffinity explain CAPTURE``: a live cluster's Pending pods, scheduled in queue order and
explained (exit codes, the JSON contract of docs/explain.md, the queue, owners, blockers,
remedies, bad input). The answers asserted here for preemption and the example are
kube-scheduler's (tests/differential/test_explain.py asks the oracle)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.differential.captures import node, pod

from .kit import EXAMPLES, run

SHOP = EXAMPLES / "captures" / "shop.yaml"


def _capture(tmp_path: Path, *items: dict[str, Any], name: str = "capture.yaml") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)}), encoding="utf-8")
    return str(path)


def _explain(path: str, *more: str) -> tuple[int, dict[str, Any]]:
    completed = run("explain", path, "--format", "json", "--no-config", *more)
    assert completed.stderr == "", completed.stderr
    report: dict[str, Any] = json.loads(completed.stdout)
    return completed.returncode, report


def _web(name: str, node_name: str | None = None, **more: Any) -> dict[str, Any]:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    return pod(
        name,
        "shop",
        labels={"app": "web", "pod-template-hash": "5d8f"},
        node_name=node_name,
        owner=("ReplicaSet", "web-5d8f"),
        extra={"affinity": anti},
        **more,
    )


def test_the_example_capture_explains_each_pending_pod_as_kube_scheduler_does() -> None:
    code, report = _explain(str(SHOP))
    assert code == 1
    assert report["capture"] | {"file": ""} == {
        "file": "",
        "nodes": 5,
        "boundPods": 11,
        "pendingPods": 5,
        "notQueued": [],
    }
    pods = report["pods"]
    assert [(p["name"], p["outcome"], p["queue"]) for p in pods] == [
        ("web-017c9b4f8d-p0nd", "pending", 1),
        ("checkout-6b6c8d94f-3r2k", "preempts", 2),
        ("train-resnet-1cq7x", "pending", 3),
        ("nightly-report-2dq7x", "pending", 4),
        ("node-exporter-v2-4t8w", "pending", 5),
    ]
    web, checkout, train, report_job, exporter = pods
    assert web["owner"] == {
        "kind": "Deployment",
        "namespace": "shop",
        "name": "web",
        "via": "ReplicaSet web-017c9b4f8d",
    }
    # kube-scheduler's own message and rejecting plugin per node (the oracle's answer)
    assert web["message"] == (
        "0/5 nodes are available: 1 node(s) didn't match pod anti-affinity rules, 1 node(s) had untolerated "
        "taint(s), 1 node(s) were unschedulable, 2 Insufficient cpu. preemption: 0/5 nodes are available: "
        "2 Preemption is not helpful for scheduling, 3 node(s) didn't match pod anti-affinity rules."
    )
    assert {name: each["plugin"] for name, each in web["rejected"].items()} == {
        "gke-prod-general-000": "NodeResourcesFit",
        "gke-prod-general-001": "NodeResourcesFit",
        "gke-prod-general-002": "InterPodAffinity",
        "gke-prod-general-003": "NodeUnschedulable",
        "gke-prod-gpu-000": "TaintToleration",
    }
    (blocker,) = web["blockers"]
    assert (blocker["kind"], blocker["domains"], blocker["nodes"]) == (
        "anti-affinity",
        ["gke-prod-general-002"],
        1,
    )
    (group,) = blocker["workloads"]
    assert (group["workload"], group["count"], group["budgets"]) == (
        "Deployment shop/web",
        1,
        [{"name": "shop/web", "disruptionsAllowed": 0}],
    )
    assert [(r["kind"], r["node"]) for r in web["remedies"]] == [
        ("tolerate", "gke-prod-gpu-000"),
        ("node", "new-node"),
    ]
    # preemption makes room: the PostFilter message kube-scheduler 1.37 adds, the victim and its
    # budget; the node is the one whose victim started last (pickOneNodeForPreemption), as upstream
    # nominates it (the whole queue was checked with the oracle's pending list)
    assert checkout["node"] == "gke-prod-general-002"
    assert checkout["message"].endswith(
        "preemption: found a potential placement for pod on node gke-prod-general-002, preempting 1 victims"
    )
    (victims,) = checkout["remedies"]
    assert victims["kind"] == "preemption"
    assert [(w["workload"], w["pods"], w["budgets"]) for w in victims["workloads"]] == [
        (
            "StatefulSet batch/report-worker",
            ["report-worker-2"],
            [{"name": "batch/report-worker", "disruptionsAllowed": 0}],
        )
    ]
    tolerate = train["remedies"][0]
    assert (tolerate["kind"], tolerate["node"], tolerate["taints"]) == (
        "tolerate",
        "gke-prod-gpu-000",
        ["nvidia.com/gpu=present:NoSchedule"],
    )
    # 12 cpus and node-exporter's 50m on a node like the first general one
    assert [(r["kind"], r["like"], r["allocatable"]) for r in report_job["remedies"]] == [
        ("node", "gke-prod-general-000", {"cpu": "12050m"})
    ]
    # A DaemonSet's pod is pinned to its node (the controller's matchFields on metadata.name):
    # NodeAffinity's PreFilter leaves that node alone, the others are absent (the oracle's answer)
    assert exporter["message"] == (
        "0/5 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, "
        "4 node(s) didn't satisfy plugin(s) [NodeAffinity]. preemption: 0/5 nodes are available: "
        "1 No preemption victims found for incoming pod, 4 Preemption is not helpful for scheduling."
    )
    (ports,) = exporter["blockers"]
    assert (ports["kind"], ports["term"], ports["nodes"]) == ("ports", {"ports": ["9100/TCP"]}, 1)
    assert [(w["workload"], w["count"], w["nodes"]) for w in ports["workloads"]] == [
        ("DaemonSet monitoring/node-exporter", 1, ["gke-prod-general-002"])
    ]
    # a new node gets its own node-exporter pod: this one stays pinned, a new node does not help
    assert exporter["remedies"][-1] | {"labels": {}} == {
        "kind": "node",
        "node": None,
        "labels": {},
        "taints": [],
        "allocatable": {},
        "like": "gke-prod-general-002",
        "workloads": [],
        "priority": None,
        "preemptionPolicy": None,
        "refused": ["node(s) didn't satisfy plugin(s) [NodeAffinity]"],
    }


def test_the_queue_takes_priority_then_creation_time(tmp_path: Path) -> None:
    path = _capture(
        tmp_path,
        node("n1", "z", 1),
        pod("early-low", "a", labels={"app": "x"}, cpu="4", created="2026-11-29T09:00:00Z"),
        pod("late-high", "a", labels={"app": "x"}, cpu="4", created="2026-11-29T09:05:00Z", priority=10),
        pod("earlier-low", "a", labels={"app": "x"}, cpu="4", created="2026-11-29T08:00:00Z"),
    )
    code, report = _explain(path)
    assert code == 1
    assert [(p["name"], p["queue"], p["priority"]) for p in report["pods"]] == [
        ("late-high", 1, 10),
        ("earlier-low", 2, 0),
        ("early-low", 3, 0),
    ]
    # the replicas of one workload share one diagnosis; bare pods each have theirs
    assert [p["sameAs"] for p in report["pods"]] == [None, None, None]


def test_owners_through_replica_sets_and_jobs(tmp_path: Path) -> None:
    items = [
        node("n1", "z", 1),
        pod(
            "web-5d8f-a",
            "shop",
            labels={"app": "web", "pod-template-hash": "5d8f"},
            cpu="4",
            owner=("ReplicaSet", "web-5d8f"),
        ),
        pod(
            "web-5d8f-b",
            "shop",
            labels={"app": "web", "pod-template-hash": "5d8f"},
            cpu="4",
            owner=("ReplicaSet", "web-5d8f"),
        ),
        pod("rs-a", "shop", labels={"app": "rs"}, cpu="4", owner=("ReplicaSet", "plain-rs")),
        pod("job-a", "batch", labels={"app": "j"}, cpu="4", owner=("Job", "nightly")),
        pod("bare", "shop", labels={"app": "b"}, cpu="4"),
    ]
    code, report = _explain(_capture(tmp_path, *items))
    assert code == 1
    owners = {p["name"]: p["owner"] for p in report["pods"]}
    assert owners == {
        "web-5d8f-a": {
            "kind": "Deployment",
            "namespace": "shop",
            "name": "web",
            "via": "ReplicaSet web-5d8f",
        },
        "web-5d8f-b": {
            "kind": "Deployment",
            "namespace": "shop",
            "name": "web",
            "via": "ReplicaSet web-5d8f",
        },
        "rs-a": {"kind": "ReplicaSet", "namespace": "shop", "name": "plain-rs", "via": None},
        "job-a": {"kind": "Job", "namespace": "batch", "name": "nightly", "via": None},
        "bare": None,
    }
    same = {p["name"]: p["sameAs"] for p in report["pods"]}
    assert same["web-5d8f-b"] == "shop/web-5d8f-a"


def test_no_pending_pod_is_exit_code_0(tmp_path: Path) -> None:
    path = _capture(tmp_path, node("n1", "z", 2), pod("a", "x", labels={"app": "a"}, node_name="n1"))
    code, report = _explain(path)
    assert (code, report["pods"], report["capture"]["boundPods"]) == (0, [], 1)
    completed = run("explain", path)
    assert completed.returncode == 0
    assert completed.stdout.splitlines()[-1] == "0 Pending pod(s) explained on 1 node(s) with 1 bound pod(s)"


def test_pods_outside_the_queue_are_listed_apart(tmp_path: Path) -> None:
    gated = pod("gated", "x", labels={"app": "g"}, extra={"schedulingGates": [{"name": "kueue"}]})
    other = pod("other", "x", labels={"app": "o"}, extra={"schedulerName": "volcano"})
    code, report = _explain(_capture(tmp_path, node("n1", "z", 2), gated, other))
    assert code == 1
    assert report["pods"] == []
    assert report["capture"]["notQueued"] == [
        {"namespace": "x", "name": "gated"},
        {"namespace": "x", "name": "other"},
    ]


def test_running_pods_anti_affinity_names_its_holders(tmp_path: Path) -> None:
    """kubernetes#100400: the event says "didn't satisfy existing pods anti-affinity rules";
    explain names the pods holding the term and their workload."""
    items = [node("n1", "z", 4), _web("web-5d8f-a", "n1"), pod("probe", "shop", labels={"app": "web"})]
    code, report = _explain(_capture(tmp_path, *items))
    assert code == 1
    (probe,) = report["pods"]
    assert probe["rejected"] == {
        "n1": {
            "plugin": "InterPodAffinity",
            "reasons": ["node(s) didn't satisfy existing pods anti-affinity rules"],
        }
    }
    (blocker,) = probe["blockers"]
    assert blocker["kind"] == "existing-anti-affinity"
    assert [(w["workload"], w["pods"], w["nodes"]) for w in blocker["workloads"]] == [
        ("Deployment shop/web", ["web-5d8f-a"], ["n1"])
    ]


def test_a_required_affinity_nothing_matches(tmp_path: Path) -> None:
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    items = [node("n1", "z", 4), pod("api", "shop", labels={"app": "api"}, extra={"affinity": affinity})]
    code, report = _explain(_capture(tmp_path, *items))
    assert code == 1
    (api,) = report["pods"]
    (blocker,) = api["blockers"]
    assert (blocker["kind"], blocker["term"]["selector"], blocker["workloads"]) == (
        "affinity",
        "app=cache",
        [],
    )


def test_a_spread_constraint_counts_the_pods_per_domain(tmp_path: Path) -> None:
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "api"}},
        }
    ]
    items = [
        node("a1", "za", 4),
        node("b1", "zb", 1),
        pod(
            "api-1",
            "shop",
            labels={"app": "api"},
            node_name="a1",
            extra={"topologySpreadConstraints": spread},
        ),
        pod("fill", "shop", labels={"app": "fill"}, node_name="b1", cpu="900m"),
        pod("api-2", "shop", labels={"app": "api"}, cpu="500m", extra={"topologySpreadConstraints": spread}),
    ]
    code, report = _explain(_capture(tmp_path, *items))
    assert code == 1
    (api,) = report["pods"]
    assert {name: each["plugin"] for name, each in api["rejected"].items()} == {
        "a1": "PodTopologySpread",
        "b1": "NodeResourcesFit",
    }
    (blocker,) = api["blockers"]
    assert (blocker["kind"], blocker["term"]["counts"], blocker["domains"]) == (
        "spread",
        {"za": 1, "zb": 0},
        ["za"],
    )
    assert [(w["workload"], w["count"]) for w in blocker["workloads"]] == [("Pod shop/api-1", 1)]


def test_pod_keeps_one_explanation_after_the_queue_before_it(tmp_path: Path) -> None:
    code, report = _explain(str(SHOP), "--pod", "batch/train-resnet-1cq7x")
    assert code == 1
    assert [(p["name"], p["queue"]) for p in report["pods"]] == [("train-resnet-1cq7x", 1)]
    assert report["capture"]["pendingPods"] == 5


def test_bad_input_is_one_line_naming_the_file_and_exit_code_2(tmp_path: Path) -> None:
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n", encoding="utf-8")
    broken = tmp_path / "broken.yaml"
    broken.write_text("items:\n- kind: Node\n  metadata: [\n", encoding="utf-8")
    huge = _capture(tmp_path, node("n1", "z", 2), name="huge.yaml")
    cases = [
        (("explain", str(manifest)), f"{manifest}:1:1: error: not a cluster capture"),
        (("explain", str(broken)), f"{broken}:4:1: error:"),
        (("explain", huge, "--limit", "file-size=100"), f"{huge}:1:1: error:"),
        (("explain", str(tmp_path / "missing.yaml")), "kaffinity: error:"),
        (("explain", str(SHOP), "--pod", "shop/nope"), "kaffinity: error: --pod shop/nope"),
    ]
    for args, start in cases:
        completed = run(*args)
        assert completed.returncode == 2, (args, completed.stderr)
        lines = completed.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(start), (args, lines)
        assert completed.stdout == ""


def test_a_pod_that_may_not_preempt_is_told_both_what_priority_and_policy_would(tmp_path: Path) -> None:
    """preemptionPolicy Never: DefaultPreemption says "not eligible" (kube-scheduler's message);
    the remedy names the priority and the policy both."""
    items = [
        node("n1", "z", 1),
        pod("busy", "x", labels={"app": "busy"}, cpu="900m", node_name="n1"),
        pod(
            "polite", "x", labels={"app": "p"}, cpu="500m", priority=100, extra={"preemptionPolicy": "Never"}
        ),
    ]
    code, report = _explain(_capture(tmp_path, *items))
    assert code == 1
    (polite,) = report["pods"]
    assert polite["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."
    )
    (raised, *_) = polite["remedies"]
    assert (raised["kind"], raised["priority"], raised["preemptionPolicy"], raised["node"]) == (
        "priority",
        100,
        "PreemptLowerPriority",
        "n1",
    )
    assert [w["pods"] for w in raised["workloads"]] == [["busy"]]


def _terminating(item: dict[str, Any]) -> dict[str, Any]:
    """``item`` deleted by preemption: deletionTimestamp and the DisruptionTarget condition."""
    item["metadata"]["deletionTimestamp"] = "2026-11-29T09:00:00Z"
    item["status"]["conditions"] = [
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    ]
    return item


def test_a_nominated_pod_waits_for_its_victims_and_holds_its_node(tmp_path: Path) -> None:
    """status.nominatedNodeName: while its victim terminates there, the pod may not preempt again
    (kube-scheduler's own message, asked of the oracle with the pod's status kept); the node holds
    room for it against a pod of equal priority tried before it (RunFilterPluginsWithNominatedPods),
    which then finds no victim to evict in its place."""
    items = [
        node("n1", "z", 1),
        node("n2", "z", 1),
        pod("busy", "x", labels={"app": "b"}, cpu="900m", node_name="n2", priority=1000),
        _terminating(pod("low", "x", labels={"app": "low"}, cpu="900m", node_name="n1")),
        pod("high", "x", labels={"app": "h"}, cpu="500m", priority=100, nominated="n1"),
        pod("same", "x", labels={"app": "s"}, cpu="500m", priority=100, created="2026-11-19T10:00:00Z"),
    ]
    code, report = _explain(_capture(tmp_path, *items))
    assert code == 1
    same, high = report["pods"]
    assert (high["name"], high["outcome"], high["nominatedNodeName"], high["node"]) == (
        "high",
        "waiting",
        "n1",
        None,
    )
    assert high["message"] == (
        "0/2 nodes are available: 2 Insufficient cpu. "
        "preemption: not eligible due to a terminating pod on the nominated node."
    )
    assert [(w["workload"], w["pods"]) for w in high["terminating"]] == [("Pod x/low", ["low"])]
    assert high["remedies"] == []
    assert (same["name"], same["outcome"]) == ("same", "pending")
    assert same["message"] == (
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: "
        "1 Insufficient cpu, 1 No preemption victims found for incoming pod."
    )


def test_a_nominated_pod_that_fits_its_node_goes_there_first(tmp_path: Path) -> None:
    items = [
        node("n1", "z", 4),
        node("n2", "z", 8),
        pod("high", "x", labels={"app": "h"}, cpu="1", nominated="n1"),
    ]
    code, report = _explain(_capture(tmp_path, *items))
    assert code == 1
    (high,) = report["pods"]
    assert (high["outcome"], high["node"]) == ("schedulable", "n1")


def test_each_reason_is_given_to_the_plugin_kube_scheduler_names() -> None:
    """The per-node plugin (the oracle's rejectedBy for the reasons the generated captures give;
    upstream's ErrReason constants for the volume plugins)."""
    from kaffinity.explain.why import plugin_of

    assert {
        reason: plugin_of(reason)
        for reason in (
            "node(s) were unschedulable",
            "node(s) had untolerated taint(s)",
            "node(s) had untolerated taint {dedicated: gpu}",
            "node(s) didn't match Pod's node affinity/selector",
            "node(s) didn't have free ports for the requested pod ports",
            "Insufficient cpu",
            "Too many pods",
            "node(s) didn't match pod topology spread constraints",
            "node(s) didn't match pod affinity rules",
            "node(s) didn't satisfy existing pods anti-affinity rules",
            "node(s) didn't find available persistent volumes to bind",
            "node(s) had no available volume zone",
            "something new",
        )
    } == {
        "node(s) were unschedulable": "NodeUnschedulable",
        "node(s) had untolerated taint(s)": "TaintToleration",
        "node(s) had untolerated taint {dedicated: gpu}": "TaintToleration",
        "node(s) didn't match Pod's node affinity/selector": "NodeAffinity",
        "node(s) didn't have free ports for the requested pod ports": "NodePorts",
        "Insufficient cpu": "NodeResourcesFit",
        "Too many pods": "NodeResourcesFit",
        "node(s) didn't match pod topology spread constraints": "PodTopologySpread",
        "node(s) didn't match pod affinity rules": "InterPodAffinity",
        "node(s) didn't satisfy existing pods anti-affinity rules": "InterPodAffinity",
        "node(s) didn't find available persistent volumes to bind": "VolumeBinding",
        "node(s) had no available volume zone": "VolumeZone",
        "something new": "",
    }


def test_a_pod_nominated_to_a_node_it_cannot_use_may_preempt_again(tmp_path: Path) -> None:
    """Its nominated node refused for a reason no eviction resolves (node selector):
    PodEligibleToPreemptOthers lets it preempt again despite the terminating victim there
    (found by the differential run; kube-scheduler's message)."""
    items = [
        node("n1", "z", 1),
        _terminating(pod("low", "x", labels={"app": "low"}, cpu="900m", node_name="n1")),
        pod(
            "high",
            "x",
            labels={"app": "h"},
            cpu="500m",
            priority=100,
            nominated="n1",
            extra={"nodeSelector": {"pool": "gpu"}},
        ),
    ]
    code, report = _explain(_capture(tmp_path, *items))
    assert code == 1
    (high,) = report["pods"]
    assert (high["outcome"], high["terminating"]) == ("pending", [])
    assert high["message"] == (
        "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
