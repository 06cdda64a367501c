"""The rule ``rollout-deadlock`` (kaffinity/rules/rollout_deadlock.py): a rolling update whose new
pod can never be placed while the old ones hold their nodes, reported as an error at what blocks it
(the required anti-affinity term, the containers' requests, the strategy).

Upstream: the Deployment controller's rolling update (pkg/controller/deployment/rolling.go,
reconcileNewReplicaSet / reconcileOldReplicaSets), the DaemonSet's maxSurge and the StatefulSet
controller. More cases are in tests/test_rollout.py.

Each failing example is asserted as (rule, line, column) with its severity and data path; each
passing example (the fixed variant) finds nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .. import kit
from ..kit import EXAMPLES, ExampleFindings, assert_example

RULE = "rollout-deadlock"
FOLDER = EXAMPLES / RULE
#: Where a finding starts (a needle and its occurrence), its severity and its data path.
Found = ExampleFindings


#: Each failing example: for each finding, the text it starts at (the occurrence of it, or the
#: only one), its severity and data path.
FAILING = [
    (
        "fail.yaml",
        [
            (
                "labelSelector: # expect",
                None,
                "error",
                "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]",
            ),
        ],
    ),
    (
        "fail-no-room.yaml",
        [
            ("containers:", None, "error", "spec.template.spec.containers"),
        ],
    ),
    (
        "fail-removed-affinity.yaml",
        [
            ("strategy:", None, "error", "spec.strategy"),
        ],
    ),
    (
        "fail-statefulset.yaml",
        [
            (
                "labelSelector: # expect",
                None,
                "error",
                "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]",
            ),
        ],
    ),
]


@pytest.mark.parametrize(("name", "found"), FAILING, ids=[name for name, _ in FAILING])
def test_rollout_deadlock_in_the_failing_example(name: str, found: Found) -> None:
    assert_example(FOLDER / name, RULE, found, others=True)


@pytest.mark.parametrize("name", ["pass.yaml", "pass-in-place.yaml"])
def test_rollout_deadlock_not_in_the_passing_example(name: str) -> None:
    assert_example(FOLDER / name, RULE, [])


# --- rollouts on autoscaled pools (issue 35) --------------------------------------------------------

#: One node per replica (required hostname anti-affinity across revisions, kubernetes/kubernetes
#: #56539's shape), maxSurge 1 and maxUnavailable 0: the surge pod fits on no node.
WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: web}}
              topologyKey: kubernetes.io/hostname
      containers:
        - name: web
          image: nginx
          resources: {requests: {cpu: "1"}}
"""

POOL = """\
apiVersion: kaffinity.io/v1alpha1
kind: ClusterTopology
metadata: {name: prod}
spec:
  zones:
    - name: eu-west-1a
      pools:
        - {name: general, count: 3, max: MAX, allocatable: {cpu: "4", memory: 16Gi, pods: 110}}
"""


def _rollout(tmp_path: Path, most: int) -> list[tuple[str, int | None, int | None]]:
    (tmp_path / "cluster.yaml").write_text(POOL.replace("MAX", str(most)), encoding="utf-8")
    (tmp_path / "web.yaml").write_text(WEB, encoding="utf-8")
    done = kit.lint_json(
        "--ignore",
        "revision-unscoped",
        "--cluster",
        str(tmp_path / "cluster.yaml"),
        str(tmp_path / "web.yaml"),
    )
    return kit.keys(done.report)


def test_a_rollout_the_autoscaler_unblocks_is_needs_scale_up_not_a_deadlock(tmp_path: Path) -> None:
    """The surge pod gets a fourth node from the pool (max 6) as soon as it is created, before the
    controller removes an old pod: the rollout finishes; needs-scale-up says so, at the strategy."""
    assert _rollout(tmp_path, 6) == [("needs-scale-up", 6, 3)]


def test_a_rollout_at_the_pools_max_is_a_deadlock(tmp_path: Path) -> None:
    assert _rollout(tmp_path, 3) == [("rollout-deadlock", 14, 15)]
