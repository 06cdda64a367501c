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
