"""The rule ``anti-affinity-no-match`` (kaffinity/rules/anti_affinity_no_match.py): a required
anti-affinity term no pod matches (it keeps nothing apart), reported at the term with a "did you
mean" hint.
"""

from __future__ import annotations

from typing import Any

from kaffinity.findings import Severity

from ..kit import keys, lint_text, only, position
from .no_match_inputs import _statefulset

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
    text = _statefulset(
        "zk", "{app.kubernetes.io/name: zk}", _ZK_ANTI.replace("{SELECTOR}", "{app: zk}"), replicas=3
    )
    result = lint_text(text, select=("anti-affinity-no-match",))
    finding = only(result, "anti-affinity-no-match")
    assert finding.severity is Severity.WARNING
    assert "not even this one" in finding.message and "kubernetes.io/hostname" in finding.message
    assert finding.fix is not None and "app.kubernetes.io/name=zk instead of app=zk" in finding.fix


def test_required_anti_affinity_on_its_own_label_or_on_pods_elsewhere_is_quiet_unless_closed() -> None:
    own = _statefulset("zk", "{app: zk}", _ZK_ANTI.replace("{SELECTOR}", "{app: zk}"), replicas=3)
    assert _anti(own) == [] and _anti(own, closed=True) == []
    # Keeping away from a batch tier deployed from another repository: no sign of a typo.
    away = _statefulset("api", "{app: api}", _ZK_ANTI.replace("{SELECTOR}", "{workload-class: batch}"))
    assert _anti(away) == []
    assert _anti(away, closed=True) == [("anti-affinity-no-match", *position(away, "labelSelector:", 1))]


def test_required_anti_affinity_matching_another_workload_is_quiet() -> None:
    text = _statefulset("api", "{app: api}", _ZK_ANTI.replace("{SELECTOR}", "{app: db}")) + _statefulset(
        "db", "{app: db}"
    )
    assert _anti(text, closed=True) == []
