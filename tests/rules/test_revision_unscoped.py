"""The rule ``revision-unscoped`` (kaffinity/rules/revision_unscoped.py): a required anti-affinity that
selects the workload's own pods of every revision, so that a rolling update's new pod waits on the
old ones (KEP-3633 matchLabelKeys: [pod-template-hash] scopes it), reported at the term with the
fix.
"""

from __future__ import annotations

import textwrap

import pytest

from kaffinity.findings import Severity

from ..kit import EXAMPLES, keys, line_of, lint_paths, lint_text, position
from .expand_inputs import SELF_ANTI, rules_of


@pytest.mark.parametrize(
    ("scope", "flagged"),
    [
        ("", True),
        ("namespaces: [default]\n", True),
        ("namespaces: [other]\n", False),
        ("namespaceSelector: {}\n", True),
        ("namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: default}}\n", True),
        ("namespaceSelector: {matchLabels: {team: a}}\n", False),  # unknown labels: no guess
    ],
)
def test_revision_unscoped_follows_the_namespace_scope(scope: str, flagged: bool) -> None:
    text = SELF_ANTI + textwrap.indent(scope, " " * 12)
    assert bool(rules_of(text)) is flagged


def test_revision_unscoped_reads_namespace_objects() -> None:
    text = SELF_ANTI + " " * 12 + "namespaceSelector: {matchLabels: {team: a}}\n"
    namespace = "apiVersion: v1\nkind: Namespace\nmetadata: {name: default, labels: {team: a}}\n---\n"
    assert rules_of(namespace + text) == [
        ("revision-unscoped", *position(namespace + text, "labelSelector:"))
    ]


def test_revision_unscoped_where_the_field_is_unavailable_gives_another_fix() -> None:
    old = lint_text(SELF_ANTI, kube_version="1.30", select=("revision-unscoped",))
    assert keys(old) == [("revision-unscoped", *position(SELF_ANTI, "labelSelector:"))]
    (finding,) = old.findings
    assert finding.fix is not None and "maxSurge: 0" in finding.fix and finding.edit is None
    # A lint plans the edit `kaffinity fix` makes (the hint names fix only then: issue 33).
    (finding,) = lint_text(SELF_ANTI, kube_version="1.31", select=("revision-unscoped",)).findings
    assert finding.edit is not None
    (planned,) = lint_text(SELF_ANTI, select=("revision-unscoped",), plan_fixes=True).findings
    assert planned.edit == finding.edit
    line = line_of(SELF_ANTI, "topologyKey")
    assert finding.fix is not None and f"after line {line};" in finding.fix


def test_revision_unscoped_ignores_other_revision_keys() -> None:
    """mismatchLabelKeys: [pod-template-hash] selects only other revisions: not the own pods."""
    text = SELF_ANTI + " " * 12 + "mismatchLabelKeys: [pod-template-hash]\n"
    assert rules_of(text) == []


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
    text = _self_anti(strategy, replicas)
    result = lint_text(text, select=("revision-unscoped",))
    assert keys(result) == ([("revision-unscoped", *position(text, "labelSelector:"))] if severity else [])
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


# -- with a declared cluster, the rollout simulation decides whether it hangs ---------------------

_POOL = """\
apiVersion: kaffinity.io/v1alpha1
kind: ClusterTopology
metadata: {name: prod}
spec:
  zones:
    - name: eu-west-1a
      pools:
        - {name: general, count: 3, max: MAX, allocatable: {cpu: "4", memory: 16Gi, pods: 110}}
"""

_ROLLOUT_RULES = ("revision-unscoped", "rollout-deadlock", "needs-scale-up")


def test_revision_unscoped_on_a_pool_that_can_grow_is_not_a_hang() -> None:
    """3 replicas, one per node, maxUnavailable 0, on a pool of 3 that may grow to 6: the surge
    pod gets a fourth node from the autoscaler before the controller removes an old pod, and the
    rollout finishes (the simulation, rollout/simulation.py outcomes()): needs-scale-up says so at
    the strategy (an info), and no warning says that the rollout hangs."""
    text = _self_anti("strategy: {type: RollingUpdate}")
    result = lint_text(text, cluster=_POOL.replace("MAX", "6"), select=_ROLLOUT_RULES)
    assert keys(result) == [("needs-scale-up", *position(text, "strategy:"))]
    assert [finding.severity for finding in result.findings] == [Severity.INFO]


def test_revision_unscoped_on_a_pool_at_its_max_is_rollout_deadlocks_error() -> None:
    """The same pool at its max (3 of 3): the rollout hangs; rollout-deadlock reports it at the
    term, an error with the autoscaler's limit named, and revision-unscoped's warning gives way."""
    text = _self_anti("strategy: {type: RollingUpdate}")
    result = lint_text(text, cluster=_POOL.replace("MAX", "3"), select=_ROLLOUT_RULES)
    assert keys(result) == [("rollout-deadlock", *position(text, "labelSelector:"))]
    assert [finding.severity for finding in result.findings] == [Severity.ERROR]


@pytest.mark.parametrize(
    "settings",
    [
        # rollout-deadlock not run: nothing gives way to it.
        {"select": ("revision-unscoped", "needs-scale-up")},
        # rollout-deadlock configured below this warning: the warning stays.
        {"select": _ROLLOUT_RULES, "severity": {"rollout-deadlock": Severity.INFO}},
        # --no-simulate: nothing is simulated, so the rule foresees the hang as without a cluster.
        {"select": _ROLLOUT_RULES, "simulate": False},
    ],
)
def test_revision_unscoped_keeps_the_hang_where_nothing_simulates_it(settings: dict[str, object]) -> None:
    text = _self_anti("strategy: {type: RollingUpdate}")
    result = lint_text(text, cluster=_POOL.replace("MAX", "3"), **settings)
    found = [
        (finding.rule, finding.severity) for finding in result.findings if finding.rule == "revision-unscoped"
    ]
    assert found == [("revision-unscoped", Severity.WARNING)]
    assert ("revision-unscoped", *position(text, "labelSelector:")) in keys(result)


def test_revision_unscoped_info_is_kept_on_a_cluster() -> None:
    """maxUnavailable 1 (4 replicas): the rollout finishes, and the info about the surge it never
    gets is not a hang: it is reported with a cluster too."""
    text = _self_anti("", 4)
    cluster = _POOL.replace("count: 3", "count: 4").replace("MAX", "4")
    result = lint_text(text, cluster=cluster, select=_ROLLOUT_RULES)
    assert keys(result) == [("revision-unscoped", *position(text, "labelSelector:"))]
    assert [finding.severity for finding in result.findings] == [Severity.INFO]


def test_revision_unscoped_gives_way_to_api_validation() -> None:
    """A Deployment the API server refuses (selector not matching the template's labels:
    ValidateDeploymentSpec) is never created and never rolls out: api-validation's error is the
    finding, once."""
    text = _self_anti("").replace(
        "  selector: {matchLabels: {app: web}}", "  selector: {matchLabels: {app: api}}", 1
    )
    assert "labelSelector: {matchLabels: {app: web}}" in text
    result = lint_text(text, select=("revision-unscoped", "api-validation"))
    assert [finding.rule for finding in result.findings] == ["api-validation"]
    # Without api-validation running, nothing gives way to it.
    result = lint_text(text, select=("revision-unscoped",))
    assert keys(result) == [("revision-unscoped", *position(text, "labelSelector:"))]
