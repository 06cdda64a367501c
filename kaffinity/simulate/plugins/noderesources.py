"""NodeResourcesFit (``pkg/scheduler/framework/plugins/noderesources``).

Filter: pod count and every requested resource against allocatable minus what the node's pods
request (``fitsRequest``). A node that declares no allocatable at all is not checked (a
hand-written Node without status; ``kubectl get nodes -o yaml`` always has it). Score
(LeastAllocated): the most free cpu and memory, counting a pod without requests as 100m / 200Mi
as the scheduler's scoring does (:meth:`SimNode.refresh` keeps each node's free share current).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from kaffinity.simulate.framework.types import UNCHECKED, Constraints, SimNode, SimPod

if TYPE_CHECKING:
    from kaffinity.simulate.framework.snapshot import Snapshot

REASON_TOO_MANY_PODS = "Too many pods"
#: The scheduler's scoring counts a pod without requests as this much (``schedutil.DefaultMilliCPURequest``).
_NONZERO = {"cpu": 100, "memory": 200 * 1024 * 1024}
FITS: list[str] = []  # no reasons (never appended to)


def filter_node(
    sim: Snapshot, constraints: Constraints, node: SimNode, gone: Sequence[SimPod] = ()
) -> list[str]:
    """NodeResourcesFit's reasons (``fitsRequest``), with the pods ``gone`` taken off the node
    first (what preemption asks; nothing is unbound); empty when the pod fits."""
    allocatable = node.allocatable
    if allocatable is None or not sim.fit:
        return FITS
    reasons = None
    pods = allocatable.get("pods")
    if pods is not None and len(node.pods) - len(gone) >= pods:
        reasons = [REASON_TOO_MANY_PODS]
    requested = node.requested
    unchecked = UNCHECKED in allocatable
    for resource, want in constraints.wants:
        if unchecked and resource == "ephemeral-storage":
            continue
        free = allocatable.get(resource, 0) - requested.get(resource, 0)
        if gone:
            free += sum(other.constraints.requests.get(resource, 0) for other in gone)
        if want > free:
            if reasons is None:
                reasons = []
            reasons.append(f"Insufficient {resource}")
    return reasons or FITS


def too_big(sim: Snapshot, constraints: Constraints, node: SimNode) -> bool:
    """A request past the node's allocatable: NodeResourcesFit says UnschedulableAndUnresolvable
    (``fit.go``), no eviction can help."""
    allocatable = node.allocatable
    if allocatable is None or not sim.fit:
        return False
    unchecked = UNCHECKED in allocatable
    return any(
        want > allocatable.get(resource, 0)
        for resource, want in constraints.wants
        if not (unchecked and resource == "ephemeral-storage")
    )


def nonzero(requests: Mapping[str, int]) -> dict[str, int]:
    """The requests scoring counts: cpu and memory, a default for each one not requested."""
    return {resource: requests.get(resource) or default for resource, default in _NONZERO.items()}
