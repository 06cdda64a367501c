"""One rollout's session: what a deadlock is (the new pod that stays Pending and the rules
that keep it off the nodes), and the changes made to the simulation while a controller's steps
are replayed, undone when the rollout ends (:meth:`Session.restore`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kaffinity.k8s.fenceposts import Budget
from kaffinity.k8s.model import Workload
from kaffinity.load.source import DataPath, Document
from kaffinity.simulate.framework.schedule_one import Simulation
from kaffinity.simulate.framework.types import Placement, SimNode, SimPod

if TYPE_CHECKING:
    from kaffinity.simulate.cluster import Pool

#: The revision the simulated update rolls out (the placed pods are ``revision 1``).
NEW_REVISION = "revision 2"

# What blocks a new pod, by kind of rule.
BLOCKER_ANTI = "anti-affinity"
BLOCKER_EXISTING_ANTI = "existing anti-affinity"
BLOCKER_AFFINITY = "affinity"
BLOCKER_SPREAD = "spread"
BLOCKER_RESOURCES = "resources"


@dataclass(slots=True)
class Blocker:
    """A rule that keeps the new pod off nodes: a term (or the resource requests) and where."""

    kind: str  # ANTI, EXISTING_ANTI, AFFINITY, SPREAD, RESOURCES
    doc: Document
    path: DataPath
    holder: Workload  # whose rule it is (the rolled workload, another one, an existing pod)
    nodes: list[str] = field(default_factory=list)
    #: the pods the rule sees in the blocked domains: (name, relation) with relation one of
    #: "old" (the rolled workload's old revision), "new" (its new revision), "other"
    pods: dict[str, str] = field(default_factory=dict)
    reasons: set[str] = field(default_factory=set)


@dataclass(slots=True)
class Deadlock:
    """A rollout that stops: the new pod that stays Pending, and why nothing else moves."""

    workload: Workload
    pod: SimPod
    pod_name: str
    placement: Placement  # recorded at the stuck state: reasons per node
    nodes: int
    budget: Budget
    #: why the controller does not go on (removing old pods, creating more new ones)
    wait: str
    blockers: list[Blocker]
    #: nodes the pod could never use (taints, node affinity, cordons), by reason
    static: Counter[str]
    #: what the rollout did before it stopped
    progress: str
    #: the old pods still running when it stopped, by node
    old_nodes: list[str]
    #: why no autoscaler adds a node for the pod (None: the cluster declares no pool that grows)
    no_scale_up: str | None = None


class Session:
    """Changes made to the simulation during one rollout, undone by :meth:`restore`."""

    def __init__(self, sim: Simulation, template: Workload, roomy: bool = False) -> None:
        self.sim = sim
        self.roomy = roomy
        self.template = template  # what the new revision's pods are made from
        self.bound: list[SimPod] = []
        self.removed: list[tuple[SimPod, SimNode]] = []
        self.freed = self.added = False  # since the Pending pods were last tried
        #: nodes autoscaling added for this rollout's pods (preemption's victims go to ``removed``)
        self.grown: list[tuple[SimNode, Pool]] = []

    def place(self, pod: SimPod) -> bool:
        # As the cluster would: preemption, else a node from the autoscaler (Simulation.post_filter).
        placement = self.sim.place(pod, post=True)
        if placement.node is None:
            return False
        self.bound.append(pod)
        self.removed.extend(placement.victims)
        if placement.added is not None:
            self.grown.append(placement.added)
        self.added = True
        return True

    def retry(self, pending: list[SimPod]) -> bool:
        """The scheduler retries Pending pods, in order; the first that fails stops the round
        (the rest are alike and would fail too). Nothing is retried until the cluster changed in
        a way that can help: a pod deleted, or one added when the pod needs pod affinity."""
        if not pending or not (self.freed or (self.added and pending[0].constraints.affinity)):
            return False
        placed = 0
        while placed < len(pending) and self.place(pending[placed]):
            placed += 1
        del pending[:placed]  # at once: a pop(0) each was quadratic in a long queue
        self.freed = self.added = False
        return placed > 0

    def settle(self, pods: list[SimPod], template: Workload) -> list[SimPod]:
        """Replace the bound ``pods`` by pods of ``template`` (old revision) on the same nodes."""
        out = []
        for pod in pods:
            node = pod.node
            if node is None:
                out.append(pod)
                continue
            self.delete(pod)
            if template.ref.kind == "DaemonSet":
                clone = self.sim.daemon_pod(template, node)
            else:
                clone = self.sim.pod(template, pod.replica)
            self.sim.bind(clone, node)
            self.bound.append(clone)
            out.append(clone)
        return out

    def delete(self, pod: SimPod) -> None:
        node = pod.node
        if node is not None:
            self.removed.append((pod, node))
            self.sim.unbind(pod)
            self.freed = True

    def restore(self) -> None:
        created = {id(pod) for pod in self.bound}
        for pod in reversed(self.bound):
            self.sim.unbind(pod)
        for node, _ in reversed(self.grown):
            self.sim.remove_node(node)
        for pod, node in reversed(self.removed):
            # pods made during the rollout are gone for good, and so is a node added for it
            if id(pod) not in created and self.sim.by_name.get(node.name) is node:
                self.sim.bind(pod, node)
        self.bound.clear()
        self.removed.clear()
        self.grown.clear()


def counted(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
