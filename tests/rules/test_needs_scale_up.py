"""The rule ``needs-scale-up`` (kaffinity/rules/needs_scale_up.py): pods that stay Pending until
the cluster autoscaler (or Karpenter) adds a node, reported as info at ``spec.replicas``.

Upstream: kubernetes/autoscaler cluster-autoscaler's scale-up simulation; Karpenter's
NodePools. More cases are in tests/test_postfilter.py.

Each failing example is asserted as (rule, line, column) with its severity and data path; each
passing example (the fixed variant) finds nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .. import kit
from ..kit import EXAMPLES, ExampleFindings, assert_example

RULE = "needs-scale-up"
FOLDER = EXAMPLES / RULE
#: Where a finding starts (a needle and its occurrence), its severity and its data path.
Found = ExampleFindings


#: Each failing example: for each finding, the text it starts at (the occurrence of it, or the
#: only one), its severity and data path.
FAILING = [
    (
        "fail.yaml",
        [
            ("replicas: 5", None, "info", "spec.replicas"),
        ],
    ),
    (
        "fail-karpenter-fresh.yaml",
        [
            ("replicas: 5", None, "info", "spec.replicas"),
        ],
    ),
    (
        "fail-karpenter.yaml",
        [
            # its rolling update needs one more node: needs-scale-up, no longer rollout-deadlock
            ("spec:  # expect", None, "info", "spec"),
            ("replicas: 5", None, "info", "spec.replicas"),
        ],
    ),
]


@pytest.mark.parametrize(("name", "found"), FAILING, ids=[name for name, _ in FAILING])
def test_needs_scale_up_in_the_failing_example(name: str, found: Found) -> None:
    assert_example(FOLDER / name, RULE, found, others=True)


@pytest.mark.parametrize("name", ["pass.yaml", "pass-karpenter.yaml", "pass-karpenter-fresh.yaml"])
def test_needs_scale_up_not_in_the_passing_example(name: str) -> None:
    assert_example(FOLDER / name, RULE, [])


# --- Karpenter NodePools without nodes, labels left open (issue 35) ------------------------------

#: The NodePool of Karpenter's "Getting Started" guide (karpenter.sh v1 docs, step "Create
#: NodePool"; aws/karpenter-provider-aws website/content/en/docs/getting-started), on a fresh EKS
#: cluster whose only node is the tainted system node group's.
GETTING_STARTED = """\
apiVersion: v1
kind: Node
metadata:
  name: ip-192-168-12-34.us-west-2.compute.internal
  labels:
    kubernetes.io/hostname: ip-192-168-12-34.us-west-2.compute.internal
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    topology.kubernetes.io/zone: us-west-2a
spec:
  taints: [{key: CriticalAddonsOnly, effect: NoSchedule}]
status: {allocatable: {cpu: 1930m, memory: 7220Mi, pods: "29"}}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      requirements:
        - key: kubernetes.io/arch
          operator: In
          values: ["amd64"]
        - key: kubernetes.io/os
          operator: In
          values: ["linux"]
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["on-demand"]
        - key: karpenter.k8s.aws/instance-category
          operator: In
          values: ["c", "m", "r"]
        - key: karpenter.k8s.aws/instance-generation
          operator: Gt
          values: ["2"]
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
      expireAfter: 720h # 30 * 24h = 720h
  limits:
    cpu: 1000
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m
"""

#: aws/karpenter-provider-aws examples/workloads/inflate.yaml, scaled to 5 as the guide does.
INFLATE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: inflate
spec:
  replicas: 5
  selector:
    matchLabels:
      app: inflate
  template:
    metadata:
      labels:
        app: inflate
    spec:
      containers:
      - image: public.ecr.aws/eks-distro/kubernetes/pause:3.2
        name: inflate
        resources:
          requests:
            cpu: "1"
            memory: 256M
"""

#: aws/karpenter-provider-aws examples/workloads/arm64.yaml (trimmed): Graviton pods.
ARM64 = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: arm64
spec:
  replicas: 1
  selector:
    matchLabels:
      app: arm64
  template:
    metadata:
      labels:
        app: arm64
    spec:
      containers:
      - image: public.ecr.aws/eks-distro/kubernetes/pause:3.2
        name: arm64
        resources:
          requests:
            cpu: "1"
            memory: 256M
      nodeSelector:
        kubernetes.io/arch: arm64
"""


def _lint(tmp_path: Path, cluster: str, *manifests: str) -> kit.LintRun:
    (tmp_path / "cluster.yaml").write_text(cluster, encoding="utf-8")
    paths = []
    for index, text in enumerate(manifests):
        path = tmp_path / f"app{index}.yaml"
        path.write_text(text, encoding="utf-8")
        paths.append(str(path))
    return kit.lint_json("--cluster", str(tmp_path / "cluster.yaml"), *paths)


def test_the_getting_started_nodepool_grows_on_a_fresh_cluster(tmp_path: Path) -> None:
    """Its limits (cpu 1000) count the nodes it has, none yet: it may grow. Before, kaffinity
    refused a NodePool with limits and no node to take a size from (a false no-eligible-node)."""
    done = _lint(tmp_path, GETTING_STARTED, INFLATE)
    assert [
        (f["rule"], f["line"], f["column"])
        for f in done.report["findings"]
        if f["rule"] != "replicas-not-spread"
    ] == [(RULE, 6, 3)]
    found = kit.assert_found(done.report, RULE, 6, 3, related=[(18, 1)])
    assert found["related"][0]["file"].endswith("cluster.yaml")
    assert found["related"][0]["message"].startswith("NodePool default may grow; it has no node yet")


def test_a_full_nodepool_without_nodes_still_stops_at_its_limits(tmp_path: Path) -> None:
    """A pod requesting more cpu than the limits leave: no instance type fits in what is left
    (Karpenter's filterByRemainingResources), so the pods stay Pending."""
    cluster = GETTING_STARTED.replace("cpu: 1000\n", "cpu: 500m\n")
    done = _lint(tmp_path, cluster, INFLATE)
    assert (RULE, 6, 3) not in kit.keys(done.report)
    assert ("no-eligible-node", 14, 5) in kit.keys(done.report)


def test_a_nodepool_that_fixes_the_arch_does_not_take_arm64_pods(tmp_path: Path) -> None:
    done = _lint(tmp_path, GETTING_STARTED, ARM64)
    kit.assert_found(done.report, "no-eligible-node", 23, 9, severity="error")
    assert RULE not in [f["rule"] for f in done.report["findings"]]


#: A NodePool that leaves the architecture and the capacity type open, and segregates teams by an
#: Exists requirement (karpenter.sh docs, "Scheduling": "Exists Operator").
OPEN = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      requirements:
        - key: karpenter.k8s.aws/instance-category
          operator: In
          values: ["c", "m", "r"]
        - key: company.com/team
          operator: Exists
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
  limits:
    cpu: 1000
"""

TEAM = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: team-a
spec:
  replicas: 1
  selector:
    matchLabels: {app: team-a}
  template:
    metadata:
      labels: {app: team-a}
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - key: company.com/team
                operator: In
                values: [team-a]
              - key: karpenter.sh/capacity-type
                operator: In
                values: [spot]
      containers:
      - name: app
        image: public.ecr.aws/eks-distro/kubernetes/pause:3.2
        resources: {requests: {cpu: "1"}}
"""


def test_open_labels_and_exists_requirements_take_the_pods_values(tmp_path: Path) -> None:
    """kubernetes.io/arch and karpenter.sh/capacity-type left open take the pod's arm64 and spot;
    company.com/team (Exists) takes team-a: a new node for each."""
    done = _lint(tmp_path, OPEN, ARM64, TEAM)
    assert sorted(kit.keys(done.report)) == [(RULE, 6, 3), (RULE, 6, 3)]
    placed = kit.run(
        "place",
        "--no-config",
        "--format",
        "json",
        "--cluster",
        str(tmp_path / "cluster.yaml"),
        str(tmp_path / "app0.yaml"),
        str(tmp_path / "app1.yaml"),
    )
    report = json.loads(placed.stdout)
    assert [entry["node"] for entry in report["added"]] == ["default-0", "default-1"]
