"""Findings a corpus of real manifests showed to be false, and the typo class that was missed.

Each case is built from a real file (trimmed fixtures in examples/, the source named in them).
"""

from __future__ import annotations

import textwrap

import pytest

from kaffinity.findings import Severity

from .kit import EXAMPLES, check, findings, lint_paths, lint_text, position

# -- revision-unscoped: "the rollout hangs" only when no old pod can go first -------------------


def _self_anti(strategy: str, replicas: int = 3) -> str:
    return textwrap.dedent(
        f"""\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: web}}
        spec:
          replicas: {replicas}
          selector: {{matchLabels: {{app: web}}}}
          {strategy}
          template:
            metadata: {{labels: {{app: web}}}}
            spec:
              containers: [{{name: web, image: nginx}}]
              affinity:
                podAntiAffinity:
                  requiredDuringSchedulingIgnoredDuringExecution:
                  - labelSelector: {{matchLabels: {{app: web}}}}
                    topologyKey: kubernetes.io/hostname
        """
    )


@pytest.mark.parametrize(
    ("strategy", "replicas", "severity"),
    [
        # maxUnavailable resolves to 0 (25% of 3 rounded down): only a surge pod, which waits forever.
        ("", 3, Severity.WARNING),
        ("strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}", 3, Severity.WARNING),
        ("strategy: {rollingUpdate: {maxUnavailable: 10%}}", 5, Severity.WARNING),
        # maxUnavailable >= 1: reconcileOldReplicaSets removes an old pod while the surge pod waits.
        ("", 4, Severity.INFO),  # 25% of 4 = 1
        ("strategy: {rollingUpdate: {maxSurge: 25%, maxUnavailable: 1}}", 3, Severity.INFO),
        # maxSurge 0 (or both 0: the controller takes maxUnavailable 1): nothing ever waits.
        ("strategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}", 3, None),
        ("strategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 0}}", 3, None),
        ("strategy: {type: Recreate}", 3, None),
    ],
)
def test_revision_unscoped_follows_the_rollout_arithmetic(
    strategy: str, replicas: int, severity: Severity | None
) -> None:
    result = lint_text(_self_anti(strategy, replicas), select=("revision-unscoped",))
    assert [finding.severity for finding in result.findings] == ([severity] if severity else [])


def test_revision_unscoped_on_linkerd_ha_is_an_info() -> None:
    """linkerd's HA control plane (maxUnavailable 1): the rollout finishes, as rollout-deadlock's
    simulation says; the finding says so, at info."""
    path = EXAMPLES / "revision-unscoped" / "fail-max-unavailable.yaml"
    (finding,) = lint_paths(path, select=("revision-unscoped",)).findings
    assert (finding.rule, finding.line, finding.column, finding.severity) == (
        "revision-unscoped",
        29,
        13,
        Severity.INFO,
    )
    # The configured severity still wins over the finding's own.
    (finding,) = lint_paths(
        path, select=("revision-unscoped",), severity={"revision-unscoped": Severity.ERROR}
    ).findings
    assert finding.severity is Severity.ERROR


def test_linkerd_ha_rollout_finishes_on_a_cluster_of_as_many_nodes() -> None:
    """The arithmetic agrees with the rollout simulation: three nodes, three replicas, no deadlock."""
    path = EXAMPLES / "revision-unscoped" / "fail-max-unavailable.yaml"
    result = lint_paths(
        path, select=("rollout-deadlock", "unschedulable"), cluster="examples/clusters/rollout-deadlock.yaml"
    )
    assert result.findings == ()


# -- replicas-not-spread: hostNetwork gives every container port a hostPort ---------------------


def test_host_network_replicas_are_spread_by_their_host_ports() -> None:
    """istio's hello-host-network (7 replicas, hostNetwork, containerPort 80): quiet."""
    path = EXAMPLES / "replicas-not-spread" / "pass-host-network.yaml"
    assert lint_paths(path, select=("replicas-not-spread",)).findings == ()


def test_host_network_without_ports_is_still_not_spread() -> None:
    """No container port, no defaulted hostPort: the scheduler may put the replicas together."""
    path = EXAMPLES / "replicas-not-spread" / "pass-host-network.yaml"
    text = path.read_text(encoding="utf-8").replace(
        "          ports:\n            - name: http\n              containerPort: 80\n", ""
    )
    result = check(
        text, ("replicas-not-spread", *position(text, "replicas: 7")), select=("replicas-not-spread",)
    )
    assert result.findings[0].path == "spec.replicas"


# -- anti-affinity-no-match: a required term meant for the own pods, with a wrong value ---------


@pytest.mark.parametrize(
    ("example", "line", "column"),
    [("fail-zk-hs.yaml", 34, 15), ("fail-pulsar.yaml", 26, 13)],
)
def test_own_value_typo_is_reported(example: str, line: int, column: int) -> None:
    """kubernetes/website#7700 and apache/pulsar-helm-chart#39: a warning at the labelSelector."""
    result = lint_paths(EXAMPLES / "anti-affinity-no-match" / example, select=("anti-affinity-no-match",))
    assert [(f.rule, f.line, f.column, f.severity) for f in result.findings] == [
        ("anti-affinity-no-match", line, column, Severity.WARNING)
    ]


ZK = (EXAMPLES / "anti-affinity-no-match" / "fail-zk-hs.yaml").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("change", "reported"),
    [
        ((), True),
        # Another value that names nothing of this workload: a repelled application, not a typo.
        (("- zk-hs", "- database"), False),
        # The Service is gone: zk-hs still is zk with a word added.
        (("  name: zk-hs\n", "  name: zookeeper-headless\n"), True),
        # Not the own namespace: the term is about other pods.
        (
            (
                '              topologyKey: "kubernetes.io/hostname"',
                '              namespaces: [other]\n              topologyKey: "kubernetes.io/hostname"',
            ),
            False,
        ),
        # Its own pods lack the key: nothing says it was meant for them.
        (('- key: "app"', '- key: "role"'), False),
        # Another requirement on a key its pods lack: not only a wrong value.
        (
            (
                "                    - zk-hs\n",
                "                    - zk-hs\n                  - {key: tier, operator: Exists}\n",
            ),
            False,
        ),
    ],
)
def test_own_value_typo_quiet_cases(change: tuple[str, ...], reported: bool) -> None:
    text = ZK.replace(change[0], change[1]) if change else ZK
    assert text != ZK or not change
    result = lint_text(text, select=("anti-affinity-no-match",))
    assert bool(result.findings) is reported


def test_own_value_typo_quiet_when_another_workload_carries_it() -> None:
    """Pods with app=zk-hs in the namespace: the term matches them, so it is not silent."""
    other = ZK + textwrap.dedent(
        """\
        ---
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: zk-hs-proxy, namespace: ex-anti-affinity-no-match-zk}
        spec:
          selector: {matchLabels: {app: zk-hs}}
          template:
            metadata: {labels: {app: zk-hs}}
            spec: {containers: [{name: proxy, image: envoy}]}
        """
    )
    check(other, select=("anti-affinity-no-match",))


# -- budgets the API server refuses: api-validation, and nothing else ---------------------------


def test_refused_budgets_are_api_validation_errors_only() -> None:
    """polaris' minAvailable 150% (and a budget with both fields): four api-validation errors at
    upstream's field paths; pdb-blocks-eviction and pdb-overlap, which reported them, are quiet."""
    result = lint_paths(EXAMPLES / "api-validation" / "fail-pdb.yaml")
    assert [(f.rule, f.line, f.column, f.path) for f in findings(result)] == [
        ("api-validation", 29, 3, "spec.minAvailable"),
        ("api-validation", 40, 3, "spec.minAvailable"),
        ("api-validation", 41, 3, "spec.maxUnavailable"),
        ("api-validation", 41, 3, "spec"),
    ]


def test_refused_budget_that_selects_nothing_is_not_pdb_no_match() -> None:
    text = textwrap.dedent(
        """\
        apiVersion: policy/v1
        kind: PodDisruptionBudget
        metadata: {name: web}
        spec:
          maxUnavailable: 150%
          selector: {matchLabels: {app: web}}
        """
    )
    assert [f.rule for f in lint_text(text, closed=True).findings] == ["api-validation"]
    valid = text.replace("150%", "50%")
    assert [f.rule for f in lint_text(valid, closed=True).findings] == ["pdb-no-match"]
