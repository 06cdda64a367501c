"""NodeName (``pkg/scheduler/framework/plugins/nodename``): ``spec.nodeName``, when set, names
the node."""

from __future__ import annotations

from kaffinity.simulate.framework.types import Constraints, SimNode

REASON_NODE_NAME = "node(s) didn't match the requested node name"


def filter_node(constraints: Constraints, node: SimNode) -> str | None:
    """Filter: the reason when the pod names another node."""
    if constraints.node_name and constraints.node_name != node.name:
        return REASON_NODE_NAME
    return None
