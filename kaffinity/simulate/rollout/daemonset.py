"""The DaemonSet controller's RollingUpdate, replayed step by step.

* **DaemonSet** (``pkg/controller/daemon/update.go``): ``maxSurge`` and ``maxUnavailable`` are
  percentages of the nodes that should run the pod, both rounded up, unavailable 1 when both are
  0. With a surge the new pod is created on the node beside the old one (at most ``maxSurge``
  at a time) and the old one is deleted when the new one is available; without, old pods are
  deleted while fewer than ``maxUnavailable`` nodes lack an available pod, and the new pod is
  created on the emptied node.
"""

from __future__ import annotations

from kaffinity.k8s.fenceposts import Budget, daemonset_budget
from kaffinity.k8s.model import Workload
from kaffinity.simulate.framework.types import SimNode, SimPod
from kaffinity.simulate.place import daemon_nodes
from kaffinity.simulate.rollout.blockers import deadlock_of
from kaffinity.simulate.rollout.session import NEW_REVISION, Deadlock, Session


class _DaemonRollout:
    """A DaemonSet's rolling update: old and new pods by node (``rollingUpdate`` in
    ``pkg/controller/daemon/update.go``, then the manage loop creating missing pods)."""

    def __init__(self, session: Session, nodes: list[SimNode], current: list[SimPod], budget: Budget) -> None:
        self.session = session
        self.nodes = nodes
        self.budget = budget
        self.old: dict[str, SimPod] = {}  # node -> old pod
        for pod in current:
            where = pod.node.name if pod.node is not None else pod.constraints.pinned
            if where is not None and where not in self.old:
                self.old[where] = pod
        self.new: dict[str, SimPod] = {}
        self.pending: list[SimPod] = []

    def create(self, node: SimNode) -> None:
        pod = self.session.sim.daemon_pod(self.session.template, node, NEW_REVISION)
        self.new[node.name] = pod
        if self.pending or not self.session.place(pod):
            self.pending.append(pod)

    def replace(self) -> bool:
        """No surge: delete old pods while fewer than maxUnavailable nodes lack an available pod
        (old pods that are not available may always go)."""
        unavailable = 0
        chosen: list[SimNode] = []
        candidates: list[SimNode] = []
        for node in self.nodes:
            pod_new, pod_old = self.new.get(node.name), self.old.get(node.name)
            if pod_new is not None:
                unavailable += 0 if pod_new.node is not None else 1
            elif pod_old is None:
                unavailable += 1
            elif pod_old.node is None:
                chosen.append(node)
                unavailable += 1
            else:
                candidates.append(node)
        chosen += candidates[: max(0, self.budget.unavailable - unavailable)]
        for node in chosen:
            self.session.delete(self.old.pop(node.name))
        return bool(chosen)

    def surge(self) -> bool:
        """Surge: a new pod beside each old one (at most maxSurge waiting at a time); the old one
        goes once the new one is available."""
        progressed = False
        surging = 0
        create_on: list[SimNode] = []
        candidates: list[SimNode] = []
        for node in self.nodes:
            pod_new, pod_old = self.new.get(node.name), self.old.get(node.name)
            if pod_old is None:
                continue
            if pod_new is None:
                (create_on if pod_old.node is None else candidates).append(node)
            elif pod_new.node is None:
                surging += 1
            else:
                self.session.delete(self.old.pop(node.name))
                progressed = True
        create_on += candidates[: max(0, self.budget.surge - surging)]
        for node in create_on:
            self.create(node)
        return progressed or bool(create_on)

    def run(self) -> None:
        for _ in range(4 * len(self.nodes) + 8):
            progressed = self.session.retry(self.pending)
            progressed = (self.surge() if self.budget.surge > 0 else self.replace()) or progressed
            for node in self.nodes:  # the manage loop: a daemon pod on every node without one
                if node.name not in self.new and node.name not in self.old:
                    self.create(node)
                    progressed = True
            if not progressed:
                break


def daemonset(
    session: Session, workload: Workload, current: list[SimPod], override: Budget | None
) -> Deadlock | None:
    nodes = daemon_nodes(session.sim, workload)
    budget = override or daemonset_budget(workload, len(nodes))
    if budget is None or not nodes:
        return None
    rollout = _DaemonRollout(session, nodes, current, budget)
    rollout.run()
    if not rollout.pending:
        return None
    stuck = rollout.pending[0]
    node_name = stuck.constraints.pinned or "?"
    if budget.surge > 0:
        wait = (
            f"with a surge ({budget.text}) the DaemonSet controller deletes an old pod only once the new "
            "pod beside it is available, and creates no more new pods while this one waits"
        )
        subject = f"the new pod created beside the old one on node {node_name}"
    else:
        wait = (
            f"the DaemonSet controller deleted the old pod on node {node_name} to replace it and replaces "
            f"no more while it waits ({budget.text})"
        )
        subject = f"the new pod for node {node_name}"
    placed = sum(1 for pod in rollout.new.values() if pod.node is not None)
    progress = f"{placed} of {len(nodes)} nodes run the new revision" if placed else ""
    return deadlock_of(session, workload, stuck, subject, budget, wait, progress, list(rollout.old.values()))
