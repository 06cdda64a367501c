"""Rolling updates, simulated on the placed state (the ``rollout-deadlock`` rule).

Each workload with a ``RollingUpdate`` strategy is rolled out alone, from the state the offline
scheduler left (``Context.placement``: every linted pod placed, the cluster file's pods where
they run), to a new revision whose pods carry a new ``pod-template-hash`` /
``controller-revision-hash`` (``Simulation.pod(..., revision=NEW_REVISION)``), so that
``matchLabelKeys`` scoping works as in the cluster. The controllers' steps are replayed until
the rollout is complete or no step can make progress; then the simulation is restored (new pods
unbound, old pods bound again where they ran), so every workload starts from the same state.

What each controller does (facts from kubernetes/kubernetes, paraphrased):

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
* **StatefulSet** (``pkg/controller/statefulset/stateful_set_control.go``): pods from the
  highest ordinal down to ``partition`` are deleted and recreated at the new revision. The
  controller waits for each one to be Running and Ready before the next, unless the
  ``MaxUnavailableStatefulSet`` gate is on at the target version (alpha 1.24, beta and on by
  default from 1.35) and ``podManagementPolicy`` is ``Parallel``: then up to ``maxUnavailable``
  (percentages rounded up, at least 1) pods are replaced at once. A StatefulSet whose pods
  cannot all be placed before the update is left alone: the controller never reaches its
  update step (``unschedulable`` reports those pods).
* **DaemonSet** (``pkg/controller/daemon/update.go``): ``maxSurge`` and ``maxUnavailable`` are
  percentages of the nodes that should run the pod, both rounded up, unavailable 1 when both are
  0. With a surge the new pod is created on the node beside the old one (at most ``maxSurge``
  at a time) and the old one is deleted when the new one is available; without, old pods are
  deleted while fewer than ``maxUnavailable`` nodes lack an available pod, and the new pod is
  created on the emptied node.

``Recreate`` and ``OnDelete`` never wait on a new pod before removing old ones, so they cannot
deadlock this way; paused Deployments do not roll out. A Pending pod is retried whenever the
cluster changes (the scheduler's queue moves it back on pod deletions); a workload's new pods are
alike, so after one fails the others are not tried again until something changes, which keeps a
rollout at O(replicas x nodes).

Only workloads whose pods all run before the update are rolled out: when some stay Pending
already, the first problem is that one (``unschedulable``, ``anti-affinity-exceeds-domains``),
and a rollout stalled by it is its consequence. A rollout is complete when no old pod is left and
every new pod runs. A new pod that no node could ever take (every node fails a static filter:
taints, node affinity, a cordon) is the template's problem (``no-eligible-node``), not a
deadlock of the rollout.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from kaffinity.k8s.fenceposts import Budget, daemonset_budget, deployment_budget, statefulset_budget
from kaffinity.k8s.model import Workload
from kaffinity.load.source import DataPath, Document
from kaffinity.simulate.framework.schedule_one import Simulation
from kaffinity.simulate.framework.types import Placement, SimNode, SimPod
from kaffinity.simulate.place import PlacementRun, daemon_nodes, ordinal_of, owns
from kaffinity.simulate.plugins.interpodaffinity import (
    REASON_AFFINITY,
    REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI,
)
from kaffinity.simulate.plugins.nodeports import REASON_PORTS
from kaffinity.simulate.plugins.noderesources import REASON_TOO_MANY_PODS
from kaffinity.simulate.plugins.podtopologyspread import REASON_SPREAD, REASON_SPREAD_LABEL

if TYPE_CHECKING:
    from kaffinity.simulate.cluster import Pool

#: The revision the simulated update rolls out (the placed pods are ``revision 1``).
NEW_REVISION = "revision 2"
#: ``controller.kubernetes.io/pod-deletion-cost`` (PodDeletionCost, beta and on since 1.22).
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
ROLLED_KINDS = ("Deployment", "StatefulSet", "DaemonSet")

#: Changed copies of workloads, kept alive as long as the simulation that
#: used them (``Simulation`` caches by ``id(workload)`` / ``id(rules)``: a freed copy's id could
#: be reused).
_COPIES: WeakKeyDictionary[Simulation, list[object]] = WeakKeyDictionary()

# What blocks a new pod, by kind of rule.
BLOCKER_ANTI = "anti-affinity"
BLOCKER_EXISTING_ANTI = "existing anti-affinity"
BLOCKER_AFFINITY = "affinity"
BLOCKER_SPREAD = "spread"
BLOCKER_RESOURCES = "resources"

# --- what a deadlock is ----------------------------------------------------------------------


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


class _Session:
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


# --- the controllers -------------------------------------------------------------------------


def rolls_out(workload: Workload) -> bool:
    """A workload whose update replaces pods step by step (``RollingUpdate``), not paused."""
    strategy = workload.strategy
    if workload.ref.kind not in ROLLED_KINDS or strategy is None or strategy.type != "RollingUpdate":
        return False
    spec = workload.doc.data.get("spec")
    return not (isinstance(spec, Mapping) and spec.get("paused") is True)


def simulate(
    run: PlacementRun,
    workload: Workload,
    *,
    version: str,
    gates: Mapping[str, bool] | None = None,
    budget: Budget | None = None,
    template: Workload | None = None,
    settled: bool = False,
    roomy: bool = False,
    grown: list[tuple[SimNode, Pool]] | None = None,
) -> Deadlock | None:
    """Roll ``workload`` out from the placed state; the deadlock, or None when it completes
    (or cannot be simulated). The simulation is left as it was. To check a suggested fix,
    ``budget`` overrides the workload's strategy and ``template`` is the new revision (a
    changed copy of ``workload``, see :func:`scoped`); with ``settled`` the old pods are made
    of ``template`` too (the state once a rollout of that change has completed). With ``roomy``
    a stall where some node lacks room for the new pod is not reported (the caller knows the
    cluster is over capacity already). ``grown`` receives the nodes autoscaling added for the
    rollout (taken away again with the rest)."""
    if not rolls_out(workload) or id(workload) not in run.by_workload:
        return None
    session = _Session(run.sim, template or workload, roomy)
    try:
        current = _current(run, workload)
        if not current or any(pod.node is None for pod in current):
            return None  # it cannot run all its pods even before the update (see the module docstring)
        if settled and template is not None:
            current = session.settle(current, template)
        kind = workload.ref.kind
        if kind == "Deployment":
            return _deployment(session, workload, current, budget)
        if kind == "StatefulSet":
            return _statefulset(session, workload, current, version, dict(gates or {}), budget)
        return _daemonset(session, workload, current, budget)
    finally:
        if grown is not None:
            grown.extend(session.grown)
        session.restore()


def _current(run: PlacementRun, workload: Workload) -> list[SimPod]:
    """The workload's pods before the update: bound ones, then the ones left Pending."""
    pods = list(run.pods.get(id(workload), []))
    pods += [p.pod for p in run.by_workload.get(id(workload), []) if p.node is None]
    return pods


@dataclass(slots=True)
class _ReplicaSetUpdate:
    """A Deployment's RollingUpdate in progress: the old pods left (in order, a pod deleted in
    O(1)), the new ones, those left Pending in order, and how many old pods were deleted."""

    session: _Session
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


def _deployment(
    session: _Session, workload: Workload, current: list[SimPod], override: Budget | None
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
    done = [f"placing {_count(placed, 'new pod')}"] if placed else []
    done += [f"removing {_count(update.deleted, 'old pod')}"] if update.deleted else []
    progress = " and ".join(done)
    return _deadlock(
        update.session,
        workload,
        update.pending[0],
        "a pod of the new revision",
        budget,
        wait,
        progress,
        list(update.old),
    )


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

    session: _Session
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
    session: _Session,
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


def _statefulset(
    session: _Session,
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
        f"the StatefulSet controller deleted old pod {_pod_name(stuck)} to replace it and waits for the "
        f"new one to be Running and Ready before it goes on ({budget.text})"
    )
    done = len(new) - len(update.pending)
    progress = f"{done} of {_count(len(update.targets), 'pod')} to update replaced" if done else ""
    return _deadlock(
        session, workload, stuck, f"the new revision's pod {_pod_name(stuck)}", budget, wait, progress, left
    )


class _DaemonRollout:
    """A DaemonSet's rolling update: old and new pods by node (``rollingUpdate`` in
    ``pkg/controller/daemon/update.go``, then the manage loop creating missing pods)."""

    def __init__(
        self, session: _Session, nodes: list[SimNode], current: list[SimPod], budget: Budget
    ) -> None:
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


def _daemonset(
    session: _Session, workload: Workload, current: list[SimPod], override: Budget | None
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
    return _deadlock(session, workload, stuck, subject, budget, wait, progress, list(rollout.old.values()))


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


# --- deletion order --------------------------------------------------------------------------


class _Victims:
    """The old pods of a Deployment rollout in :func:`deletion_order`, kept up to date as the
    rollout places and deletes pods: sorting every old pod at each step made a rollout with
    ``maxSurge: 1`` quadratic (8,000 replicas: 22 s). A heap of the old pods by rank; when a
    pod of the workload comes to or leaves a node, the old pods on that node are ranked again
    (their count of same-owner pods on the node changed)."""

    def __init__(self, session: _Session, old: list[SimPod]) -> None:
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


# --- why the new pod stays Pending -----------------------------------------------------------

_DYNAMIC = {
    REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI,
    REASON_AFFINITY,
    REASON_SPREAD,
    REASON_SPREAD_LABEL,
    REASON_PORTS,
}


def _resource_reason(reason: str) -> bool:
    return reason == REASON_TOO_MANY_PODS or reason.startswith("Insufficient ")


def _pod_name(pod: SimPod) -> str:
    if pod.workload.ref.kind == "DaemonSet" and not pod.existing:
        return f"{pod.workload.ref.name} on {pod.constraints.pinned}"
    return pod.name


def _relation(pod: SimPod, workload: Workload) -> str:
    if pod.workload is workload and not pod.existing:
        return "new" if pod.revision == NEW_REVISION else "old"
    if pod.existing and pod.workload is not workload and owns(workload, pod):
        return "old"
    return "other"


def _deadlock(
    session: _Session,
    workload: Workload,
    pod: SimPod,
    subject: str,
    budget: Budget,
    wait: str,
    progress: str,
    old: list[SimPod],
) -> Deadlock | None:
    """The deadlock around ``pod``, or None when the pod fits on no node whatever the rollout does
    (every node fails a static filter: taints, node affinity, cordons; ``no-eligible-node``)."""
    sim = session.sim
    if session.roomy:
        quick = sim.place(pod, bind=False)
        if any(_resource_reason(reason) for reason in quick.reasons or ()):
            return None
    placement = sim.place(pod, record=True, bind=False)
    rejected = placement.rejected or {}
    static: Counter[str] = Counter()
    for reasons in rejected.values():
        if not any(r in _DYNAMIC or _resource_reason(r) for r in reasons):
            static.update(reasons)
    if sum(static.values()) >= len(sim.nodes):
        return None  # no node could ever take it: the template's problem, not the rollout's
    old_nodes = sorted({p.node.name for p in old if p.node is not None})
    return Deadlock(
        workload=workload,
        pod=pod,
        pod_name=subject,
        placement=placement,
        nodes=len(sim.nodes),
        budget=budget,
        wait=wait,
        blockers=blockers(sim, pod, rejected, workload),
        static=static,
        progress=progress,
        old_nodes=old_nodes,
        no_scale_up=sim.post_failure(pod),
    )


class _Found:
    """The blockers found so far, one per rule (document and path), in the order first seen."""

    def __init__(self) -> None:
        self.blockers: dict[tuple[int, DataPath], Blocker] = {}
        self._noted: dict[int, set[str]] = {}

    def blocker(self, kind: str, doc: Document, path: DataPath, holder: Workload) -> Blocker:
        key = (id(doc), path)
        entry = self.blockers.get(key)
        if entry is None:
            entry = self.blockers[key] = Blocker(kind, doc, path, holder)
        return entry

    def note(self, entry: Blocker, node: str, reason: str) -> None:
        """``entry`` keeps the pod off ``node`` for ``reason`` (each node listed once)."""
        seen = self._noted.setdefault(id(entry), set())
        if node not in seen:
            seen.add(node)
            entry.nodes.append(node)
        entry.reasons.add(reason)


def _own_anti(found: _Found, sim: Simulation, pod: SimPod, nodes: list[SimNode], workload: Workload) -> None:
    """The new pod's own required anti-affinity: pods it selects in the node's domain."""
    for node in nodes:
        for term in pod.constraints.anti:
            value = node.labels.get(term.topology_key)
            if value is None:
                continue
            seen = [
                other
                for other in sim.candidates(term.selector)
                if other.node is not None
                and other.node.labels.get(term.topology_key) == value
                and term.matches(other, sim.namespace_labels(other.namespace))
            ]
            if seen:
                entry = found.blocker(BLOCKER_ANTI, pod.workload.doc, term.source.path, pod.workload)
                found.note(entry, node.name, REASON_ANTI_AFFINITY)
                for other in seen:
                    entry.pods[_pod_name(other)] = _relation(other, workload)


def _existing_anti(
    found: _Found, sim: Simulation, pod: SimPod, blocked: list[SimNode], workload: Workload
) -> None:
    """Placed pods whose required anti-affinity selects the new pod (symmetry)."""
    if not blocked:
        return
    own_ns = sim.namespace_labels(pod.namespace)
    for holder_node in sim.nodes:
        for other in holder_node.pods:
            for term in other.constraints.anti:
                value = holder_node.labels.get(term.topology_key)
                if value is None or not term.matches(pod, own_ns):
                    continue
                hits = [n for n in blocked if n.labels.get(term.topology_key) == value]
                if hits:
                    _note_existing(found, pod, other, term.source.path, hits, workload)


def _note_existing(
    found: _Found, pod: SimPod, other: SimPod, path: DataPath, hits: list[SimNode], workload: Workload
) -> None:
    """``other``'s anti-affinity term at ``path`` keeps ``pod`` off ``hits``."""
    mine = other.workload is pod.workload and not other.existing
    kind = BLOCKER_ANTI if mine else BLOCKER_EXISTING_ANTI
    entry = found.blocker(kind, other.workload.doc, path, other.workload)
    for n in hits:
        found.note(entry, n.name, REASON_EXISTING_ANTI)
    entry.pods[_pod_name(other)] = _relation(other, workload)


def _own_terms(found: _Found, pod: SimPod, by_reason: Mapping[str, list[SimNode]]) -> None:
    """The new pod's required affinity and topology spread: every term, on each node it fails."""
    own_doc = pod.workload.doc
    for node in by_reason.get(REASON_AFFINITY, []):
        for term in pod.constraints.affinity:
            entry = found.blocker(BLOCKER_AFFINITY, own_doc, term.source.path, pod.workload)
            found.note(entry, node.name, REASON_AFFINITY)
    for reason in (REASON_SPREAD, REASON_SPREAD_LABEL):
        for node in by_reason.get(reason, []):
            for spread in pod.constraints.spread:
                entry = found.blocker(BLOCKER_SPREAD, own_doc, spread.source.path, pod.workload)
                found.note(entry, node.name, reason)


def _own_resources(found: _Found, pod: SimPod, by_reason: Mapping[str, list[SimNode]]) -> None:
    """The new pod's requests, where a node has too little left (one blocker: the containers)."""
    containers = (*pod.workload.template_path, "spec", "containers")
    for reason, nodes in by_reason.items():
        if _resource_reason(reason):
            entry = found.blocker(BLOCKER_RESOURCES, pod.workload.doc, containers, pod.workload)
            for node in nodes:
                found.note(entry, node.name, reason)


def blockers(
    sim: Simulation, pod: SimPod, rejected: Mapping[str, list[str]], workload: Workload
) -> list[Blocker]:
    """The rules behind the dynamic rejections of ``pod``: which term, whose, on which nodes."""
    by_reason: dict[str, list[SimNode]] = {}
    for node in sim.nodes:
        for reason in rejected.get(node.name, ()):
            by_reason.setdefault(reason, []).append(node)
    found = _Found()
    _own_anti(found, sim, pod, by_reason.get(REASON_ANTI_AFFINITY, []), workload)
    _existing_anti(found, sim, pod, by_reason.get(REASON_EXISTING_ANTI, []), workload)
    _own_terms(found, pod, by_reason)
    _own_resources(found, pod, by_reason)
    return list(found.blockers.values())


# --- a changed template, to check a suggested fix --------------------------------------------


def scoped(sim: Simulation, workload: Workload, path: DataPath, label: str) -> Workload | None:
    """``workload`` with ``label`` added to the ``matchLabelKeys`` of its required pod
    (anti-)affinity term at ``path``; None if there is no such term."""
    affinity = workload.pod.affinity
    if affinity is None:
        return None
    changed = False
    groups = {}
    for name in ("pod_affinity", "pod_anti_affinity"):
        group = getattr(affinity, name)
        if group is None:
            continue
        terms = []
        for term in group.required:
            if term.path == path and label not in term.match_label_keys:
                terms.append(replace(term, match_label_keys=(*term.match_label_keys, label)))
                changed = True
            else:
                terms.append(term)
        groups[name] = replace(group, required=tuple(terms))
    if not changed:
        return None
    copy = replace(workload, pod=replace(workload.pod, affinity=replace(affinity, **groups)))
    _COPIES.setdefault(sim, []).append(copy)
    return copy
