"""The rule ``needs-preemption`` (kaffinity/rules/needs_preemption.py): a pod that schedules only
by preempting lower-priority pods, reported at its priorityClassName.

Upstream: kube-scheduler's DefaultPreemption PostFilter plugin (pkg/scheduler/framework/plugins/
defaultpreemption). More cases are in tests/test_postfilter.py and
tests/test_preemption_upstream.py.

Each failing example is asserted as (rule, line, column) with its severity and data path; each
passing example (the fixed variant) finds nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .. import kit
from ..kit import EXAMPLES, ExampleFindings, assert_example

RULE = "needs-preemption"
FOLDER = EXAMPLES / RULE
#: Where a finding starts (a needle and its occurrence), its severity and its data path.
Found = ExampleFindings


#: Each failing example: for each finding, the text it starts at (the occurrence of it, or the
#: only one), its severity and data path.
FAILING = [
    (
        "fail.yaml",
        [
            ("priorityClassName:", None, "warning", "spec.template.spec.priorityClassName"),
        ],
    ),
]


@pytest.mark.parametrize(("name", "found"), FAILING, ids=[name for name, _ in FAILING])
def test_needs_preemption_in_the_failing_example(name: str, found: Found) -> None:
    assert_example(FOLDER / name, RULE, found)


@pytest.mark.parametrize("name", ["pass.yaml"])
def test_needs_preemption_not_in_the_passing_example(name: str) -> None:
    assert_example(FOLDER / name, RULE, [])


# --- priority and preemptionPolicy from the PriorityClass (the Priority admission plugin) ---------

#: A node a priority-0 batch pod fills, and the two PriorityClasses of the Kubernetes docs' "Pod
#: Priority and Preemption" page (high-priority; high-priority-nonpreempting, preemptionPolicy Never).
CLUSTER = """\
apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels: {kubernetes.io/hostname: node-1}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: batch-1, namespace: batch, labels: {app: batch}}
spec:
  nodeName: node-1
  priority: 0
  containers: [{name: c, image: i, resources: {requests: {cpu: 1500m}}}]
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: high-priority
value: 1000000
globalDefault: false
description: "This priority class should be used for XYZ service pods only."
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: high-priority-nonpreempting
value: 1000000
preemptionPolicy: Never
globalDefault: false
description: "This priority class will not cause other pods to be preempted."
"""

API = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  replicas: 1
  selector:
    matchLabels: {app: api}
  template:
    metadata:
      labels: {app: api}
    spec:
      priorityClassName: CLASS
      containers:
      - name: api
        image: nginx
        resources: {requests: {cpu: "1"}}
"""


def _lint(tmp_path: Path, cluster: str, manifest: str) -> list[dict[str, Any]]:
    (tmp_path / "cluster.yaml").write_text(cluster, encoding="utf-8")
    (tmp_path / "app.yaml").write_text(manifest, encoding="utf-8")
    done = kit.lint_json("--cluster", str(tmp_path / "cluster.yaml"), str(tmp_path / "app.yaml"))
    return done.report["findings"]  # type: ignore[no-any-return]


def test_the_class_gives_its_priority_and_the_pod_preempts(tmp_path: Path) -> None:
    findings = _lint(tmp_path, CLUSTER, API.replace("CLASS", "high-priority"))
    assert kit.keys(findings) == [(RULE, 13, 7)]
    kit.assert_found(findings, RULE, 13, 7, severity="warning", related=[(10, 1)])


def test_the_class_preemption_policy_never_keeps_the_pod_from_preempting(tmp_path: Path) -> None:
    """preemptionPolicy comes from the class at admission: the pod's own field is unset, yet it
    never preempts (`preemption: not eligible due to preemptionPolicy=Never.`, as the oracle says)."""
    findings = _lint(tmp_path, CLUSTER, API.replace("CLASS", "high-priority-nonpreempting"))
    assert kit.keys(findings) == [("unschedulable", 17, 32)]


def test_a_global_default_class_gives_its_value_and_policy_to_pods_naming_none(tmp_path: Path) -> None:
    default = CLUSTER.replace(
        'globalDefault: false\ndescription: "This priority class should',
        'globalDefault: true\ndescription: "This priority class should',
    )
    findings = _lint(tmp_path, default, API.replace("      priorityClassName: CLASS\n", ""))
    # Priority 1000000 from the default class: the batch pod (priority 0 in the capture) is evicted.
    assert kit.keys(findings) == [(RULE, 12, 5)]
    never = CLUSTER.replace(
        "preemptionPolicy: Never\nglobalDefault: false", "preemptionPolicy: Never\nglobalDefault: true"
    )
    findings = _lint(tmp_path, never, API.replace("      priorityClassName: CLASS\n", ""))
    assert kit.keys(findings) == [("unschedulable", 16, 32)]
