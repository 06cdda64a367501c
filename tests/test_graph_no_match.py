"""The no-match rules together on a real manifest: the Kubernetes website's ZooKeeper example
(affinity-no-match, anti-affinity-no-match, preferred-no-match and their "did you mean" hints,
kaffinity.explain.suggest). Each rule's own cases are in tests/rules/test_<rule>.py.
"""

from __future__ import annotations

import pytest

from .kit import SHARED, keys, lint_text, only, position
from .rules.no_match_inputs import lint_no_match

ZOOKEEPER = (
    SHARED
    / "corpus"
    / "real"
    / "kubernetes__website"
    / "content__en__examples__application__zookeeper__zookeeper.yaml"
)


@pytest.mark.skipif(not ZOOKEEPER.exists(), reason="the real-world corpus is not available")
def test_the_kubernetes_website_zookeeper_mix_up() -> None:
    """Its anti-affinity selects app=zk while the pods carry app.kubernetes.io/name=zk.

    It is a *required* anti-affinity term: anti-affinity-no-match reports it, with the label the
    pods really carry. Turned into a preferred term, preferred-no-match reports it.
    """
    text = ZOOKEEPER.read_text(encoding="utf-8")
    assert keys(lint_no_match(text, closed=True)) == []
    required = only(lint_text(text, select=("anti-affinity-no-match",)), "anti-affinity-no-match")
    assert (required.line, required.column) == position(text, "labelSelector:", 1)
    assert required.fix is not None and "app.kubernetes.io/name=zk instead of app=zk" in required.fix
    preferred = text.replace(
        """          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector:""",
        """          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            podAffinityTerm:
              labelSelector:""",
    )
    assert preferred != text
    finding = only(lint_no_match(preferred), "preferred-no-match")
    assert finding.fix is not None and "app.kubernetes.io/name=zk instead of app=zk" in finding.fix
