"""The StatefulSet controller's RollingUpdate, replayed step by step.

* **StatefulSet** (``pkg/controller/statefulset/stateful_set_control.go``): pods from the
  highest ordinal down to ``partition`` are deleted and recreated at the new revision. The
  controller waits for each one to be Running and Ready before the next, unless the
  ``MaxUnavailableStatefulSet`` gate is on at the target version (alpha 1.24, beta and on by
  default from 1.35) and ``podManagementPolicy`` is ``Parallel``: then up to ``maxUnavailable``
  (percentages rounded up, at least 1) pods are replaced at once. A StatefulSet whose pods
  cannot all be placed before the update is left alone: the controller never reaches its
  update step (``unschedulable`` reports those pods).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kaffinity.k8s.fenceposts import Budget, statefulset_budget
from kaffinity.k8s.model import Workload
from kaffinity.simulate.framework.types import SimPod
from kaffinity.simulate.place import ordinal_of
from kaffinity.simulate.rollout.blockers import deadlock_of, pod_name
from kaffinity.simulate.rollout.session import NEW_REVISION, Deadlock, Session, counted


def _by_ordinal(current: list[SimPod], workload: Workload, replicas: int) -> dict[int, SimPod] | None:
    """The current pods by ordinal; None when two share one, or one has none in range (pods the
    simulation cannot tell apart by ordinal: stay quiet)."""
    by_ordinal: dict[int, SimPod] = {}
    for pod in current:
        ordinal = ordinal_of(pod, workload)
        if ordinal is None or ordinal in by_ordinal or not 0 <= ordinal < replicas:
            return None
        by_ordinal[ordinal] = pod
    return by_ordinal


@dataclass(slots=True)
class _OrdinalUpdate:
    """A StatefulSet's RollingUpdate in progress: the ordinals to replace, the highest first, and
    the new pods so far (by ordinal), those left Pending in order."""

    session: Session
    by_ordinal: dict[int, SimPod]
    targets: list[int]
    budget: Budget
    new: dict[int, SimPod] = field(default_factory=dict)
    pending: list[SimPod] = field(default_factory=list)

    def step(self) -> bool:
        """One pass of the controller: retry the Pending pods, then replace ordinals while fewer
        than maxUnavailable are not Running; whether anything moved."""
        progressed = self.session.retry(self.pending)
        room = self.budget.unavailable - len(self.pending)
        for ordinal in self.targets:
            if room <= 0:
                break
            if ordinal not in self.new:
                self._replace(ordinal)
                room -= 1
                progressed = True
        return progressed

    def _replace(self, ordinal: int) -> None:
        """Delete the old pod, recreate the ordinal at the new revision."""
        self.session.delete(self.by_ordinal[ordinal])
        pod = self.session.sim.pod(self.session.template, ordinal, NEW_REVISION)
        self.new[ordinal] = pod
        if self.pending or not self.session.place(pod):
            self.pending.append(pod)


def _statefulset_update(
    session: Session,
    workload: Workload,
    current: list[SimPod],
    version: str,
    gates: Mapping[str, bool],
    override: Budget | None,
) -> _OrdinalUpdate | None:
    """The update the StatefulSet controller would make; None when there is nothing to update,
    no budget, or pods the simulation cannot follow."""
    replicas = workload.replicas or 0
    strategy = workload.strategy
    if replicas <= 0 or strategy is None:
        return None
    partition = min(max(strategy.partition or 0, 0), replicas)
    if partition >= replicas:
        return None  # nothing to update
    budget = override or statefulset_budget(workload, replicas, version, gates)
    if budget is None:
        return None
    if len(current) < replicas or any(pod.node is None for pod in current):
        return None  # the controller never reaches its update step (see the module docstring)
    by_ordinal = _by_ordinal(current, workload, replicas)
    if by_ordinal is None:
        return None
    targets = list(range(replicas - 1, partition - 1, -1))  # the highest ordinal first
    return _OrdinalUpdate(session, by_ordinal, targets, budget)


def statefulset(
    session: Session,
    workload: Workload,
    current: list[SimPod],
    version: str,
    gates: Mapping[str, bool],
    override: Budget | None,
) -> Deadlock | None:
    update = _statefulset_update(session, workload, current, version, gates, override)
    if update is None:
        return None
    for _ in range(2 * len(update.by_ordinal) + 4):  # one pod per ordinal: 2 * replicas + 4
        if not update.step():
            break
    if not update.pending:
        return None
    stuck, new, budget = update.pending[0], update.new, update.budget
    left = [pod for ordinal, pod in sorted(update.by_ordinal.items()) if ordinal not in new]
    wait = (
        f"the StatefulSet controller deleted old pod {pod_name(stuck)} to replace it and waits for the "
        f"new one to be Running and Ready before it goes on ({budget.text})"
    )
    done = len(new) - len(update.pending)
    progress = f"{done} of {counted(len(update.targets), 'pod')} to update replaced" if done else ""
    return deadlock_of(
        session, workload, stuck, f"the new revision's pod {pod_name(stuck)}", budget, wait, progress, left
    )
