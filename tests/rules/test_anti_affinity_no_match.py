"""The rule ``anti-affinity-no-match`` (kaffinity/rules/anti_affinity_no_match.py): a required
anti-affinity term no pod matches (it keeps nothing apart), reported at the term with a "did you
mean" hint.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from kaffinity.findings import Severity

from ..kit import EXAMPLES, assert_found, check, keys, lint_paths, lint_text, only, position
from .no_match_inputs import statefulset_yaml

# --- anti-affinity-no-match ----------------------------------------------------------------------

_ZK_ANTI = """\
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector:
                matchLabels: {SELECTOR}
              topologyKey: kubernetes.io/hostname
"""


def _anti(text: str, **settings: Any) -> list[tuple[str, int | None, int | None]]:
    return keys(lint_text(text, select=("anti-affinity-no-match",), **settings))


def test_required_anti_affinity_on_the_wrong_label_fires_with_a_did_you_mean() -> None:
    text = statefulset_yaml(
        "zk", "{app.kubernetes.io/name: zk}", _ZK_ANTI.replace("{SELECTOR}", "{app: zk}"), replicas=3
    )
    result = lint_text(text, select=("anti-affinity-no-match",))
    assert_found(result, "anti-affinity-no-match", *position(text, "labelSelector"), severity="warning")
    finding = only(result, "anti-affinity-no-match")
    # The wording is the subject: the term selects no pod, not even this one.
    assert "not even this one" in finding.message and "kubernetes.io/hostname" in finding.message
    assert finding.fix is not None and "app.kubernetes.io/name=zk instead of app=zk" in finding.fix


def test_required_anti_affinity_on_its_own_label_or_on_pods_elsewhere_is_quiet_unless_closed() -> None:
    own = statefulset_yaml("zk", "{app: zk}", _ZK_ANTI.replace("{SELECTOR}", "{app: zk}"), replicas=3)
    assert _anti(own) == [] and _anti(own, closed=True) == []
    # Keeping away from a batch tier deployed from another repository: no sign of a typo.
    away = statefulset_yaml("api", "{app: api}", _ZK_ANTI.replace("{SELECTOR}", "{workload-class: batch}"))
    assert _anti(away) == []
    assert _anti(away, closed=True) == [("anti-affinity-no-match", *position(away, "labelSelector:", 1))]


def test_required_anti_affinity_matching_another_workload_is_quiet() -> None:
    text = statefulset_yaml(
        "api", "{app: api}", _ZK_ANTI.replace("{SELECTOR}", "{app: db}")
    ) + statefulset_yaml("db", "{app: db}")
    assert _anti(text, closed=True) == []


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
    assert keys(result) == (
        [("anti-affinity-no-match", *position(text, "labelSelector"))] if reported else []
    )


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
