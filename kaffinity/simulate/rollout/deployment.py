"""The Deployment controller's RollingUpdate, replayed step by step, and the ReplicaSet
controller's deletion order.

* **Deployment** (``pkg/controller/deployment/rolling.go``, ``util/deployment_util.go``):
  ``maxSurge`` and ``maxUnavailable`` resolve as ``ResolveFenceposts``: a percentage of
  ``replicas``, surge rounded up, unavailable rounded down, and unavailable 1 when both come to
  0. A sync either scales the new ReplicaSet up (``NewRSNewReplicas``: up to ``replicas +
  maxSurge`` pods of all revisions, at most ``replicas`` new ones) or, when it cannot, scales old
  ReplicaSets down (``reconcileOldReplicaSets``): at most ``all pods - (replicas -
  maxUnavailable) - new pods not available`` (a Pending new pod is unavailable), while the
  available pods of all revisions exceed ``replicas - maxUnavailable``. Which old pod goes is
  the ReplicaSet controller's choice (``getPodsToDelete`` / ``ActivePodsWithRanks``):
  unassigned before assigned, lower ``controller.kubernetes.io/pod-deletion-cost`` first, then
  the pod sharing its node with more pods of the Deployment (any revision), then the newer one.
  A placed pod is taken to become available at once (no readiness probe, ``minReadySeconds``
  ignored).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kaffinity.k8s.fenceposts import Budget, deployment_budget
from kaffinity.k8s.model import Workload
from kaffinity.simulate.framework.types import SimPod
from kaffinity.simulate.rollout.blockers import deadlock_of
from kaffinity.simulate.rollout.session import NEW_REVISION, Deadlock, Session, counted

#: ``controller.kubernetes.io/pod-deletion-cost`` (PodDeletionCost, beta and on since 1.22).
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


@dataclass(slots=True)
class _ReplicaSetUpdate:
    """A Deployment's RollingUpdate in progress: the old pods left (in order, a pod deleted in
    O(1)), the new ones, those left Pending in order, and how many old pods were deleted."""

    session: Session
    replicas: int
    budget: Budget
    old: dict[SimPod, None]
    victims: _Victims
    new: list[SimPod] = field(default_factory=list)
    pending: list[SimPod] = field(default_factory=list)
    deleted: int = 0

    @property
    def min_available(self) -> int:
        return self.replicas - self.budget.unavailable

    def step(self) -> bool:
        """One pass of the controller: retry the Pending pods, then scale the new ReplicaSet up,
        else the old one down; whether anything moved (scaling up always goes on)."""
        progressed = self.session.retry(self.pending)
        total = len(self.old) + len(self.new)
        if len(self.new) < self.replicas and total < self.replicas + self.budget.surge:
            self._scale_up(total)
            return True
        return self._scale_down() or progressed

    def _scale_up(self, total: int) -> None:
        """NewRSNewReplicas: scale the new ReplicaSet up within replicas + maxSurge."""
        for _ in range(min(self.replicas + self.budget.surge - total, self.replicas - len(self.new))):
            pod = self.session.sim.pod(self.session.template, len(self.new), NEW_REVISION)
            self.new.append(pod)
            self.victims.mine.add(pod)
            if self.pending or not self.session.place(pod):
                self.pending.append(pod)

    def _scale_down(self) -> bool:
        """reconcileOldReplicaSets: Pending new pods are unavailable; whether a pod was deleted."""
        if not self.old:
            return False
        max_scaled_down = len(self.old) + len(self.new) - self.min_available - len(self.pending)
        # (cleanupUnhealthyReplicas has nothing to do: every old pod runs, see simulate)
        available = len(self.old) + len(self.new) - len(self.pending)
        if max_scaled_down <= 0 or available <= self.min_available:
            return False
        chosen = self.victims.take(min(available - self.min_available, len(self.old)))
        for pod in chosen:
            self.session.delete(pod)
            del self.old[pod]
        self.deleted += len(chosen)
        return bool(chosen)


def deployment(
    session: Session, workload: Workload, current: list[SimPod], override: Budget | None
) -> Deadlock | None:
    replicas = workload.replicas or 0
    if replicas <= 0:
        return None
    budget = override or deployment_budget(workload, replicas)
    if budget is None:
        return None
    old = dict.fromkeys(current)
    update = _ReplicaSetUpdate(session, replicas, budget, old, _Victims(session, list(old)))
    for _ in range(4 * (replicas + len(old)) + 8):
        if not update.step():
            break
    if not update.pending:
        return None
    return _deployment_deadlock(update, workload)


def _deployment_deadlock(update: _ReplicaSetUpdate, workload: Workload) -> Deadlock | None:
    """The words for a Deployment's rollout that stopped with a new pod Pending."""
    budget, replicas = update.budget, update.replicas
    placed = len(update.new) - len(update.pending)
    if update.old:
        wait = (
            f"meanwhile the Deployment controller removes no old pod: with {budget.text}, "
            f"{update.min_available} of {replicas} pods must stay available and the Pending pod counts as "
            "unavailable"
        )
    else:
        wait = "every old pod is already gone, so nothing the controller can still remove would make room"
    done = [f"placing {counted(placed, 'new pod')}"] if placed else []
    done += [f"removing {counted(update.deleted, 'old pod')}"] if update.deleted else []
    progress = " and ".join(done)
    return deadlock_of(
        update.session,
        workload,
        update.pending[0],
        "a pod of the new revision",
        budget,
        wait,
        progress,
        list(update.old),
    )


# --- deletion order --------------------------------------------------------------------------


class _Victims:
    """The old pods of a Deployment rollout in :func:`deletion_order`, kept up to date as the
    rollout places and deletes pods: sorting every old pod at each step made a rollout with
    ``maxSurge: 1`` quadratic (8,000 replicas: 22 s). A heap of the old pods by rank; when a
    pod of the workload comes to or leaves a node, the old pods on that node are ranked again
    (their count of same-owner pods on the node changed)."""

    def __init__(self, session: Session, old: list[SimPod]) -> None:
        self.session = session
        self.mine: set[SimPod] = set(old)  # the workload's pods, old and new: `related`
        self.on_node: Counter[str] = Counter(pod.node.name for pod in old if pod.node is not None)
        self.old_on: dict[str, list[SimPod]] = {}
        # The last tie-break, newer first, and then the order of ``old`` (a stable sort).
        ordered = sorted(old, key=_created, reverse=True)
        self.rank = {pod: position for position, pod in enumerate(ordered)}
        self.stamp: dict[SimPod, int] = {}
        self.heap: list[tuple[bool, int, int, int, int, SimPod]] = []
        self.bound = len(session.bound)
        self.removed = len(session.removed)
        for pod in old:
            if pod.node is not None:
                self.old_on.setdefault(pod.node.name, []).append(pod)
            self._push(pod)

    def _push(self, pod: SimPod) -> None:
        stamp = self.stamp[pod] = self.stamp.get(pod, 0) + 1
        node = pod.node
        key = (node is not None, _deletion_cost(pod), -(self.on_node[node.name] if node is not None else 0))
        heapq.heappush(self.heap, (*key, self.rank[pod], stamp, pod))

    def _catch_up(self) -> None:
        """Count the pods the session placed and deleted since the last step."""
        changed: set[str] = set()
        for pod in self.session.bound[self.bound :]:
            if pod in self.mine and pod.node is not None:
                self.on_node[pod.node.name] += 1
                changed.add(pod.node.name)
        for pod, node in self.session.removed[self.removed :]:
            if pod in self.mine:
                self.on_node[node.name] -= 1
                changed.add(node.name)
        self.bound, self.removed = len(self.session.bound), len(self.session.removed)
        for name in changed:
            for pod in self.old_on.get(name, ()):
                self._push(pod)

    def take(self, count: int) -> list[SimPod]:
        """The first ``count`` old pods in deletion order, no longer old once taken."""
        self._catch_up()
        chosen: list[SimPod] = []
        while self.heap and len(chosen) < count:
            *_, stamp, pod = heapq.heappop(self.heap)
            if self.stamp.get(pod) != stamp:
                continue  # ranked again since, or taken
            chosen.append(pod)
            del self.stamp[pod]
            if pod.node is not None:
                self.old_on[pod.node.name].remove(pod)
        return chosen


def _deletion_cost(pod: SimPod) -> int:
    for key, value in pod.workload.pod.annotations:
        if key == DELETION_COST:
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


def _created(pod: SimPod) -> tuple[str, int]:
    """When a pod was created, comparably: the cluster file's ``creationTimestamp`` (RFC 3339
    strings in UTC sort as times), else the replica index (created in order)."""
    metadata = pod.workload.doc.data.get("metadata") if pod.existing else None
    stamp = metadata.get("creationTimestamp") if isinstance(metadata, Mapping) else None
    return (stamp if isinstance(stamp, str) else "", pod.replica)


def deletion_order(pods: Iterable[SimPod], related: Iterable[SimPod]) -> list[SimPod]:
    """The order in which the ReplicaSet controller deletes ``pods`` (``ActivePodsWithRanks``):
    unassigned first, lower deletion cost, more pods of the same owner on its node, newer."""
    on_node = Counter(pod.node.name for pod in related if pod.node is not None)
    ordered = sorted(pods, key=_created, reverse=True)  # newer first, as the last tie-break
    return sorted(
        ordered,
        key=lambda pod: (
            pod.node is not None,
            _deletion_cost(pod),
            -(on_node[pod.node.name] if pod.node is not None else 0),
        ),
    )
