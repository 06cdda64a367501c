"""NodeUnschedulable (``pkg/scheduler/framework/plugins/nodeunschedulable``): a cordoned node,
unless the pod tolerates ``node.kubernetes.io/unschedulable:NoSchedule``."""

from __future__ import annotations

from kaffinity.k8s.model import Taint
from kaffinity.simulate.framework.types import Constraints, SimNode
from kaffinity.simulate.plugins.tainttoleration import tolerates

REASON_UNSCHEDULABLE = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


def filter_node(constraints: Constraints, node: SimNode) -> str | None:
    """Filter: the reason when ``node`` is cordoned and the pod does not tolerate it."""
    if node.unschedulable:
        cordon = Taint(UNSCHEDULABLE_TAINT, "", "NoSchedule", ())
        if not any(tolerates(t, cordon) for t in constraints.tolerations):
            return REASON_UNSCHEDULABLE
    return None
