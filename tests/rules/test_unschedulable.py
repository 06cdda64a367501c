"""The rule ``unschedulable`` (kaffinity/rules/unschedulable.py): a pod the simulated scheduler leaves
Pending for a reason no more specific rule owns, reported at what blocks it (a request, the
existing pods' anti-affinity) with the nodes' reasons.

Upstream: kube-scheduler's Filter plugins and their reasons (NodeResourcesFit "Insufficient cpu",
InterPodAffinity), the scheduling queue's retry of unschedulable pods.

The explanation (how many pods stay Pending, which nodes, why) exists only as the message's wording,
so it is asserted on the message; where and what are asserted as (rule, line, column) and fields.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kaffinity.engine import lint
from kaffinity.findings import Severity
from kaffinity.rules import RULES

from .. import kit
from ..kit import keys, only
from .pending_inputs import (
    anti,
    context_of,
    lint_on_cluster,
    node,
    pending_workload,
    running_pod,
    where,
    zones,
)

# --- unschedulable ---------------------------------------------------------------------------------


def test_unschedulable_insufficient_cpu_points_at_the_request() -> None:
    containers = [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "6"}}}]
    objects = [pending_workload("batch", replicas=2, containers=containers)]
    finding = only(lint_on_cluster(objects, zones(2)), "unschedulable")
    assert (finding.line, finding.column) == where(objects, '"cpu": "6"')
    assert (
        "batch[0] and batch[1] stay Pending: 0/2 nodes are available: 2 Insufficient cpu." in finding.message
    )
    assert (
        "it requests 6 cpu; the most free on a node it may run on is 4 on n-a-0 (allocatable 4)"
        in finding.message
    )


def test_unschedulable_existing_pods_anti_affinity_names_the_blockers() -> None:
    guard = running_pod(
        "guard",
        "n-a-0",
        {"app": "guard"},
        affinity=anti("topology.kubernetes.io/zone", {"tier": "batch"}),
    )
    objects = [
        pending_workload(
            "job", "Job", 1, labels={"tier": "batch"}, nodeSelector={"topology.kubernetes.io/zone": "a"}
        )
    ]
    finding = only(lint_on_cluster(objects, [*zones(2), guard]), "unschedulable")
    # At the pod's labels, which the guard's anti-affinity selects.
    assert (finding.line, finding.column) == where(objects, '"labels"', 1)
    assert "didn't satisfy existing pods anti-affinity rules" in finding.message
    assert "guard (out of zone a)" in finding.message
    assert any(
        loc.file == "cluster.yaml" and loc.message == "anti-affinity of pod guard" for loc in finding.related
    )


def test_unschedulable_retries_a_pod_whose_affinity_target_comes_later() -> None:
    """Placed in queue order (front < session-cache) the front end waits for the cache; the scheduler
    retries it when the cache's pods are added, so nothing is reported -- and the placement run is
    left as it was."""
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    objects = [
        pending_workload("front", affinity=affinity),
        pending_workload("session-cache", labels={"app": "cache"}),
    ]
    context = context_of(objects, zones(2), select=("topology",))
    run_ = context.placement
    assert run_ is not None
    before = {sim_node.name: len(sim_node.pods) for sim_node in run_.sim.nodes}
    assert len(run_.pending) == 1  # the simulation alone leaves it Pending
    result = lint(context.files, context.settings, RULES, context=context)
    assert keys(result) == []
    assert {sim_node.name: len(sim_node.pods) for sim_node in run_.sim.nodes} == before


def test_unschedulable_and_affinity_no_match_keep_the_more_severe() -> None:
    """The same Pending pods, described by both rules; the error is kept."""
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "nothing"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    objects = [pending_workload("front", "StatefulSet", 1, affinity=affinity)]
    # The cluster file lists no pods: affinity-no-match is a warning, unschedulable an error.
    both = lint_on_cluster(objects, zones(2), select=("topology", "affinity-no-match"))
    selector_line, selector_column = where(objects, '"labelSelector"')
    term = (selector_line - 1, selector_column - 2)  # the term: the list item holding the labelSelector
    assert keys(both) == [("unschedulable", *term)]
    assert [f.severity for f in both.findings] == [Severity.ERROR]
    alone = lint_on_cluster(objects, zones(2))
    assert (
        "no running pod matches its required pod affinity (app=nothing)"
        in only(alone, "unschedulable").message
    )
    # --closed: affinity-no-match is an error too, and a tie goes to it (it names near misses).
    closed = lint_on_cluster(objects, zones(2), select=("topology", "affinity-no-match"), closed=True)
    assert keys(closed) == [("affinity-no-match", selector_line, selector_column)]
    assert [f.severity for f in closed.findings] == [Severity.ERROR]
    # Configured severities count: unschedulable lowered to info gives way to the warning.
    lowered = lint_on_cluster(
        objects,
        zones(2),
        select=("topology", "affinity-no-match"),
        severity={"unschedulable": Severity.INFO},
    )
    assert keys(lowered) == [("affinity-no-match", selector_line, selector_column)]
    assert [f.severity for f in lowered.findings] == [Severity.WARNING]
    # Either alone reports the pods.
    alone_no_match = lint_on_cluster(objects, zones(2), select=("affinity-no-match",))
    assert keys(alone_no_match) == [("affinity-no-match", selector_line, selector_column)]


def test_unschedulable_undeclared_ephemeral_storage_is_a_warning_about_the_cluster_file() -> None:
    # A hand-written Node without ephemeral-storage (kubelets always report it; a ClusterTopology
    # pool that declares none leaves it unchecked instead: tests/test_simulate.py).
    written = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n", "labels": {"kubernetes.io/hostname": "n"}},
        "status": {"allocatable": {"cpu": "4", "pods": 10}},
    }
    containers = [{"name": "c", "image": "x", "resources": {"requests": {"ephemeral-storage": "1Gi"}}}]
    objects = [pending_workload("app", containers=containers)]
    finding = only(lint_on_cluster(objects, [written]), "unschedulable")
    assert (finding.line, finding.column) == where(objects, '"ephemeral-storage": "1Gi"')
    assert finding.severity == Severity.WARNING
    assert "the cluster file declares no allocatable ephemeral-storage" in finding.message


def test_unschedulable_daemonset_pod_names_its_node() -> None:
    containers = [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "3"}}}]
    cluster = [node("big", cpu="8"), node("small", cpu="2")]
    objects = [pending_workload("agent", "DaemonSet", None, containers=containers)]
    finding = only(lint_on_cluster(objects, cluster), "unschedulable")
    # At the pod spec: no request of its own is too big, the node is too small.
    assert (finding.line, finding.column) == where(objects, '"spec"', 2)
    assert finding.message == "its pod for node small stays Pending: on small: Insufficient cpu"


# --- pods the Priority admission plugin refuses ------------------------------------------------

#: A capture listing the cluster's PriorityClasses (kubectl get priorityclasses lists the built-in
#: ones too): the class of the Kubernetes docs' "Pod Priority and Preemption" page.
CLASSES = """\
apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels: {kubernetes.io/hostname: node-1}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: system-cluster-critical
value: 2000000000
preemptionPolicy: PreemptLowerPriority
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: high-priority
value: 1000000
globalDefault: false
description: "This priority class should be used for XYZ service pods only."
"""

WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      priorityClassName: high-priorty
      containers:
      - name: web
        image: nginx
"""


def _refusals(tmp_path: Path, cluster: str, manifest: str) -> list[dict[str, Any]]:
    (tmp_path / "cluster.yaml").write_text(cluster, encoding="utf-8")
    (tmp_path / "app.yaml").write_text(manifest, encoding="utf-8")
    done = kit.lint_json("--cluster", str(tmp_path / "cluster.yaml"), str(tmp_path / "app.yaml"))
    return done.report["findings"]  # type: ignore[no-any-return]


def test_a_class_the_cluster_does_not_have_refuses_every_pod(tmp_path: Path) -> None:
    """`no PriorityClass with name high-priorty was found` (admission's Forbidden, the oracle's
    answer): no pod is created, reported once at priorityClassName, nothing placed."""
    findings = _refusals(tmp_path, CLASSES, WEB)
    found = kit.assert_found(
        findings, "unschedulable", 13, 7, severity="error", path="spec.template.spec.priorityClassName"
    )
    assert "no PriorityClass with name high-priorty was found" in found["message"]
    assert kit.keys(findings) == [("unschedulable", 13, 7)]
    placed = kit.run(
        "place",
        "--no-config",
        "--format",
        "json",
        "--cluster",
        str(tmp_path / "cluster.yaml"),
        str(tmp_path / "app.yaml"),
    )
    assert json.loads(placed.stdout)["pods"] == []


def test_a_class_is_not_refused_when_the_cluster_file_lists_none(tmp_path: Path) -> None:
    """Nodes only (kubectl get nodes): the cluster's classes are not known, nothing is refused."""
    nodes_only = CLASSES.split("---", maxsplit=1)[0]
    assert _refusals(tmp_path, nodes_only, WEB) == []


def test_a_preemption_policy_other_than_the_class_refuses_the_pods(tmp_path: Path) -> None:
    """admitPod: `the string value of PreemptionPolicy (Never) must not be provided in pod spec`."""
    never = WEB.replace("high-priorty", "high-priority").replace(
        "      containers:", "      preemptionPolicy: Never\n      containers:"
    )
    findings = _refusals(tmp_path, CLASSES, never)
    found = kit.assert_found(findings, "unschedulable", 14, 7, path="spec.template.spec.preemptionPolicy")
    assert "PreemptionPolicy (Never) must not be provided in pod spec" in found["message"]


def test_a_priority_other_than_the_class_gives_refuses_the_pods(tmp_path: Path) -> None:
    """admitPod: `the integer value of priority (5) must not be provided in pod spec; priority
    admission controller computed 1000000 from the given PriorityClass name`."""
    own = WEB.replace("high-priorty", "high-priority").replace(
        "      containers:", "      priority: 5\n      containers:"
    )
    findings = _refusals(tmp_path, CLASSES, own)
    found = kit.assert_found(findings, "unschedulable", 14, 7, path="spec.template.spec.priority")
    assert "computed 1000000 from the given PriorityClass name" in found["message"]
    # The class's own value is admitted: nothing to say.
    assert _refusals(tmp_path, CLASSES, own.replace("priority: 5", "priority: 1000000")) == []
