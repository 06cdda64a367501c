"""Inputs shared by the tests of the expansion (tests/test_expand.py) and of the expansion rules
(tests/rules/test_merged_selector_rejected.py, test_match_label_key_missing.py,
test_controller_label_unavailable.py, test_revision_unscoped.py): KEP-3633's own example and a
Deployment whose required anti-affinity selects its own pods.
"""

from __future__ import annotations

from typing import Any

from ..kit import keys, lint_text
from .validation_inputs import deployment


def rules_of(text: str, **settings: Any) -> list[tuple[str, int | None, int | None]]:
    return keys(lint_text(text, **{"select": ("expansion",), **settings}))


# -- the KEPs' own examples ----------------------------------------------------------------------

KEP_3633_STORY_1 = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: application-server
spec:
  selector: {matchLabels: {app: application-server}}
  template:
    metadata:
      labels: {app: application-server}
    spec:
      containers: [{name: server, image: server}]
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector:
              matchExpressions:
              - key: app
                operator: In
                values:
                - database
            topologyKey: topology.kubernetes.io/zone
            matchLabelKeys: # ADDED
            - pod-template-hash
"""


# -- rules ------------------------------------------------------------------------------------


SPREAD_KEY_IN_SELECTOR = deployment(
    """\
    topologySpreadConstraints:
    - maxSkew: 1
      topologyKey: kubernetes.io/hostname
      whenUnsatisfiable: ScheduleAnyway
      labelSelector: {matchLabels: {app: web}}
      matchLabelKeys: [app]
    """
)


SELF_ANTI = deployment(
    """\
    affinity:
      podAntiAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
        - labelSelector: {matchLabels: {app: web}}
          topologyKey: kubernetes.io/hostname
    """
)
