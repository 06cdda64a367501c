"""Pending pods of a capture that preemption already nominated a node for
(``status.nominatedNodeName``), as kube-scheduler treats them (``kaffinity explain``):

* the nominated node is tried first, and the pod is bound there when every filter passes
  (``schedulePod`` → ``evaluateNominatedNode``, pkg/scheduler/schedule_one.go);
* while its victims terminate it may not preempt again: DefaultPreemption's
  ``PodEligibleToPreemptOthers`` (pkg/scheduler/framework/plugins/defaultpreemption) answers
  ``not eligible due to a terminating pod on the nominated node.`` when a pod of lower priority
  on that node is terminating by preemption (``deletionTimestamp`` and the ``DisruptionTarget``
  condition with reason ``PreemptionByScheduler``: ``preemption.PodTerminatingByPreemption``),
  unless the nominated node is refused for a reason no eviction resolves; the nomination stays
  (no PostFilter result: ``nominatingInfo`` nil);
* until it is bound, the node holds room for it against the pods of lower or equal priority
  (the queue's nominator; ``RunFilterPluginsWithNominatedPods`` adds it to that node when they
  are filtered): :class:`Reservations` binds a copy of it there for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kaffinity.simulate.framework.cycle_state import CycleState
from kaffinity.simulate.plugins import defaultpreemption

if TYPE_CHECKING:
    from kaffinity.k8s.model import Workload
    from kaffinity.simulate.framework.schedule_one import Simulation
    from kaffinity.simulate.framework.types import SimNode, SimPod

#: DefaultPreemption's PostFilter message while a victim on the nominated node terminates.
NOT_ELIGIBLE_TERMINATING = "preemption: not eligible due to a terminating pod on the nominated node."


def fits_on(sim: Simulation, pod: SimPod, node: SimNode) -> bool:
    """Whether every filter passes ``pod`` on ``node`` (nothing is bound)."""
    return not node_reasons(sim, pod, node)


def node_reasons(sim: Simulation, pod: SimPod, node: SimNode) -> list[str]:
    """The reasons the filters give for ``pod`` on ``node`` (empty: it fits)."""
    reasons = sim.static_filter(pod.constraints)[1]
    if node.name in reasons:
        return [reasons[node.name]]
    return list(CycleState(sim, pod, sim.anti_terms_for(pod)).filter(node))


def terminating_by_preemption(pod: SimPod) -> bool:
    """``preemption.PodTerminatingByPreemption``: deleted, and evicted by the scheduler."""
    data = pod.workload.doc.data
    metadata = data.get("metadata")
    if not isinstance(metadata, Mapping) or metadata.get("deletionTimestamp") is None:
        return False
    status = data.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, Mapping) and condition.get("type") == "DisruptionTarget":
            return condition.get("status") == "True" and condition.get("reason") == "PreemptionByScheduler"
    return False


def terminating_victims(sim: Simulation, pod: SimPod, node: SimNode) -> list[SimPod]:
    """The pods of lower priority terminating by preemption on ``pod``'s nominated ``node``
    (none: it may preempt again), unless the node is refused for a reason no eviction resolves
    (then the pod is eligible again: ``nominatedNodeStatus`` UnschedulableAndUnresolvable)."""
    if node.name in sim.static_filter(pod.constraints)[1]:
        return []  # the static filters' reasons are all UnschedulableAndUnresolvable
    reasons = node_reasons(sim, pod, node)
    if reasons and not defaultpreemption.resolvable(sim, pod.constraints, node, reasons):
        return []
    return [
        other
        for other in node.pods
        if other.constraints.priority < pod.constraints.priority and terminating_by_preemption(other)
    ]


class Reservations:
    """The nominated Pending pods, each holding its node against the pods of lower or equal
    priority scheduled before it is (a copy of it bound there), until its own turn."""

    def __init__(self, sim: Simulation, pods: list[tuple[Workload, str, int]]) -> None:
        self.sim = sim
        #: (workload, nominated node, priority), the highest priority first
        self.waiting = sorted((each for each in pods if each[1] in sim.by_name), key=lambda each: -each[2])
        self.held: dict[int, SimPod] = {}

    def before(self, workload: Workload, priority: int) -> None:
        """Before ``workload`` is scheduled: every nominated pod of at least its priority holds
        its node; ``workload``'s own copy, if any, is taken away."""
        for other, node, level in self.waiting:
            if level < priority:
                break
            if other is not workload and id(other) not in self.held:
                self.hold(other, node)
        own = self.held.pop(id(workload), None)
        if own is not None:
            self.sim.unbind(own)

    def hold(self, workload: Workload, node: str) -> None:
        copy = self.sim.existing(workload)
        self.sim.bind(copy, self.sim.by_name[node])
        self.held[id(workload)] = copy

    def done(self, workload: Workload, waits: bool) -> None:
        """``workload`` was scheduled: bound, or still waiting for its victims, when it holds its
        node again (every pod after it in the queue has a lower or equal priority)."""
        node = next((each[1] for each in self.waiting if each[0] is workload), None)
        self.waiting = [each for each in self.waiting if each[0] is not workload]
        if waits and node is not None:
            self.hold(workload, node)

    def release(self) -> None:
        for copy in self.held.values():
            self.sim.unbind(copy)
        self.held.clear()
