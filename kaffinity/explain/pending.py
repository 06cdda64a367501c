"""Why a workload's pods stay Pending on the declared cluster: one reason, one rule.

The topology rules share this analysis so that each workload whose pods cannot all run is
reported by exactly one of them, the first that applies:

1. ``no-eligible-node``: the static filters (NodeUnschedulable, NodeName, TaintToleration,
   NodeAffinity: the pod's nodeSelector, required node affinity and tolerations) leave no node.
2. ``topology-key-absent``: a required pod affinity term or a ``DoNotSchedule`` spread
   constraint names a topologyKey that none of the eligible nodes carries: InterPodAffinity
   rejects a node without the key of a required affinity term, PodTopologySpread one without a
   hard constraint's key (InterPodAffinity ``satisfyPodAffinity``; PodTopologySpread's ``Filter``,
   "missing required label"): nothing can run.
3. ``anti-affinity-exceeds-domains``: a required anti-affinity term that selects the workload's
   own pods admits one pod per domain of its topologyKey; when every eligible node carries the
   key (a node without it passes anti-affinity: ``satisfyPodAntiAffinity``) the D domains hold
   at most D pods, and the workload asks for R > D.
4. ``spread-unsatisfiable``: a ``DoNotSchedule`` constraint that caps the workload below R
   whatever happens: the global minimum stays 0 (fewer domains than ``minDomains``, or a
   counted domain the pod can never run in, which nodeTaintsPolicy / nodeAffinityPolicy
   ``Ignore`` counts), so each usable domain takes at most maxSkew pods (PodTopologySpread's
   ``calPreFilterState`` and ``Filter``) -- or, after the simulation, pods that would be placed if
   the hard spread constraints were dropped.

Upstream, the functions named are in ``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go``
and ``pkg/scheduler/framework/plugins/podtopologyspread/filtering.go``.
5. ``unschedulable``: any other Pending pod, with the scheduler's event text.

The first four are decided from the cluster's nodes and the workload alone (1 and 2 need no
simulation: they run with ``--no-simulate``); the simulation then says how many pods stay
Pending. A Pending pod is first retried on the final state, as the scheduler's queue retries an
unschedulable pod when a pod is added (``MoveAllToActiveOrBackoffQueue`` on Pod/Add events; the
leftover flush every 30 s): a pod whose required affinity target comes later in the queue
(:func:`kaffinity.simulate.place.queue_order`: lower priority, or later by namespace, kind and name) is
placed then. The retried pods are unbound again afterwards, so later rules see the placement
run as it was.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kaffinity.explain.shape import (
    NO_ELIGIBLE_NODE,
    SPREAD_UNSATISFIABLE,
    TOPOLOGY_KEY_ABSENT,
    UNSCHEDULABLE,
    Shape,
    Statics,
    workload_shape,
)
from kaffinity.findings import Severity
from kaffinity.simulate.framework.schedule_one import Simulation
from kaffinity.simulate.framework.types import Constraints, Placement, SimPod, Spread
from kaffinity.simulate.place import placed
from kaffinity.simulate.plugins.interpodaffinity import REASON_AFFINITY
from kaffinity.simulate.plugins.podtopologyspread import REASON_SPREAD

if TYPE_CHECKING:
    from kaffinity.context import Context
    from kaffinity.k8s.model import Workload
    from kaffinity.simulate.place import PlacementRun


@dataclass
class Stuck:
    """A workload with pods still Pending after the simulation and its retries."""

    shape: Shape
    #: Its Pending placements, in order (as placed; their reasons are from when they were tried).
    pending: list[Placement]
    #: The first Pending pod tried again on the final state, with every node's rejection (a
    #: DaemonSet: each of its Pending pods, one per node).
    final: list[Placement]
    rule: str
    #: spread-unsatisfiable found by the simulation: the constraint without which it would fit.
    blocking: Spread | None = None

    @property
    def workload(self) -> Workload:
        return self.shape.workload


@dataclass
class Analysis:
    sim: Simulation
    shapes: dict[int, Shape]
    #: id(workload) -> why its pods stay Pending; None without a simulation.
    stuck: dict[int, Stuck] | None

    def shape(self, workload: Workload) -> Shape | None:
        return self.shapes.get(id(workload))

    def reported_by(self, workload: Workload) -> str | None:
        """The one rule that reports ``workload``'s Pending pods (or its static problem)."""
        if self.stuck is not None and id(workload) in self.stuck:
            return self.stuck[id(workload)].rule
        shape = self.shapes.get(id(workload))
        return shape.rule if shape is not None else None


def reporter(context: Context, result: Analysis, workload: Workload) -> str | None:
    """The rule that reports ``workload``'s Pending pods (or its static problem) in this run.

    The rule the analysis assigned (:meth:`Analysis.reported_by`, the first that applies), unless
    it gives way to ``unschedulable`` (:mod:`kaffinity.explain.precedence`): when it does not run or is
    configured below ``unschedulable``, the Pending pods are still reported, as ``unschedulable``.
    A finding a rule downgrades itself because the cluster file looks incomplete stays with it:
    that doubt holds for every finding about these pods, ``unschedulable``'s too.
    """
    from kaffinity.explain.precedence import gives_way

    rule = result.reported_by(workload)
    stuck = result.stuck.get(id(workload)) if result.stuck is not None else None
    if rule is None or rule == UNSCHEDULABLE or stuck is None or not stuck.pending:
        return rule
    if gives_way(context, (rule, None), (UNSCHEDULABLE, None), tie_to_other=False):
        return UNSCHEDULABLE
    return rule


def affinity_pending(context: Context) -> dict[int, Severity | None]:
    """The workloads (id of their document) whose Pending pods ``unschedulable`` reports while
    their required pod affinity finds no pod (a node reason), with that finding's own severity
    (None: the rule's). ``affinity-no-match`` describes the same pods."""
    result = analysis(context)
    if result is None or result.stuck is None:
        return {}
    found: dict[int, Severity | None] = {}
    for stuck in result.stuck.values():
        reasons = stuck.final[0].reasons if stuck.final else None
        if (
            stuck.pending
            and reasons
            and REASON_AFFINITY in reasons
            and reporter(context, result, stuck.workload) == UNSCHEDULABLE
        ):
            found[id(stuck.workload.doc)] = None
    return found


def analysis(context: Context) -> Analysis | None:
    """The shared analysis of the lint run (None without a declared cluster)."""
    if context.cluster is None:
        return None
    return context.memo.get("explain.pending.analysis", lambda: _analyse(context))


def _analyse(context: Context) -> Analysis:
    run = context.placement
    if run is not None:
        sim = run.sim
    else:
        from kaffinity.simulate.place import simulation

        assert context.cluster is not None
        settings = context.settings
        sim, _ = simulation(
            context.cluster,
            version=settings.kube_version,
            gates=settings.feature_gates,
            namespaces=context.inventory.namespaces,
        )
    shapes: dict[int, Shape] = {}
    statics = Statics(sim)
    for workload in context.inventory.workloads:
        if placed(workload):
            shapes[id(workload)] = workload_shape(sim, statics, workload)
    result = Analysis(sim, shapes, None)
    if run is not None:
        result.stuck = _classify(result, run)
    return result


# --- static facts ------------------------------------------------------------------------------


# --- the simulation ------------------------------------------------------------------------------


def _classify(result: Analysis, run: PlacementRun) -> dict[int, Stuck]:
    """The workloads with pods Pending once every pod that may still fit was retried, and why;
    the retried pods are unbound again afterwards."""
    sim = run.sim
    waiting: dict[int, list[Placement]] = {}
    for placement in run.placements:
        if placement.node is None:
            waiting.setdefault(id(placement.pod.workload), []).append(placement)
    bound: list[SimPod] = []
    try:
        _retry(result, sim, waiting, bound)
        stuck: dict[int, Stuck] = {}
        for key, pending in waiting.items():
            shape = result.shapes[key]
            if pending and not shape.invalid:
                stuck[key] = _stuck(result, sim, shape, pending)
        # A static reason stands even when nothing is Pending (its own old pods may fill the
        # domains, allowed during execution): the next pod it creates stays Pending.
        for key, shape in result.shapes.items():
            if key not in stuck and shape.rule is not None:
                stuck[key] = Stuck(shape, [], [], shape.rule)
        return stuck
    finally:
        for pod in reversed(bound):
            sim.unbind(pod)


def _retry(
    result: Analysis, sim: Simulation, waiting: dict[int, list[Placement]], bound: list[SimPod]
) -> None:
    """Retry the Pending pods that may yet fit (:func:`_settle`) and take those placed out of
    ``waiting``. No node passes the static filters, or every one lacks a required key: nothing
    to retry."""
    hopeless = {
        key
        for key in waiting
        if result.shapes[key].invalid or result.shapes[key].rule in (NO_ELIGIBLE_NODE, TOPOLOGY_KEY_ABSENT)
    }
    retry = {
        key: [placement for placement in pending if _may_change(placement)]
        for key, pending in waiting.items()
        if key not in hopeless
    }
    _settle(sim, retry, bound)
    placed = {id(pod) for pod in bound}
    for pending in waiting.values():
        pending[:] = [placement for placement in pending if id(placement.pod) not in placed]


def _stuck(result: Analysis, sim: Simulation, shape: Shape, pending: list[Placement]) -> Stuck:
    """A workload's Pending pods and the rule that reports them: its static reason's, else a
    spread constraint no placement can satisfy, else unschedulable."""
    rule = shape.rule
    blocking = None
    if rule is None:
        blocking = _blocking_spread(result, pending[0].pod)
        rule = SPREAD_UNSATISFIABLE if blocking is not None else UNSCHEDULABLE
    finals = _finals(sim, pending, recorded=blocking is not None)
    return Stuck(shape, pending, finals, rule, blocking)


#: Reasons a node may stop giving as pods are added: the pods a required affinity term asks for
#: appear, the global minimum of a spread constraint rises. Every other reason only holds more
#: firmly as pods are added (requests add up, anti-affinity matches more pods; static reasons
#: never change), and the simulation never removes a pod.
_TRANSIENT = frozenset((REASON_AFFINITY, REASON_SPREAD))


def _may_change(placement: Placement) -> bool:
    """Whether a Pending pod might fit once more pods are placed (worth retrying)."""
    return any(reason in _TRANSIENT for reason in placement.reasons or ())


def _settle(sim: Simulation, waiting: dict[int, list[Placement]], bound: list[SimPod]) -> None:
    """Retry the Pending pods on the final state until none more fits (the scheduler retries an
    unschedulable pod when pods are added); what fits is bound, listed in ``bound`` and taken
    out of ``waiting``.

    Replicas of one workload are alike: after one fails, the rest wait for the next round
    (a DaemonSet's pods are pinned to different nodes: each is tried).
    """
    progress = True
    while progress:
        progress = False
        for pending in waiting.values():
            daemon = bool(pending) and pending[0].pod.constraints.pinned is not None
            index = 0
            while index < len(pending):
                if sim.place(pending[index].pod).node is not None:
                    bound.append(pending.pop(index).pod)
                    progress = True
                elif daemon:
                    index += 1
                else:
                    break


#: How many of a DaemonSet's Pending pods (one per node) get their reasons recorded.
SHOWN_DAEMON_PODS = 3


def _finals(sim: Simulation, pending: list[Placement], recorded: bool = False) -> list[Placement]:
    """The Pending pod(s) whose reasons a message shows: the first one (a DaemonSet: the first
    few, each pinned to its node). A pod that might fit later (a transient reason) is placed
    again on the final state with every node's rejection, as the scheduler's last retry would
    see it; nothing is bound. The others keep the reasons of their own attempt (as `kaffinity
    place` shows them): every node that rejected them still does -- unless ``recorded`` asks
    for every node's rejection."""
    count = SHOWN_DAEMON_PODS if pending[0].pod.constraints.pinned is not None else 1
    finals = []
    for placement in pending[:count]:
        if recorded or _may_change(placement):
            finals.append(sim.place(placement.pod, record=True, bind=False))
        else:
            finals.append(placement)
    return finals


def _with_rules(pod: SimPod, constraints: Constraints) -> SimPod:
    return SimPod(pod.workload, pod.replica, pod.revision, pod.labels, constraints)


def _blocking_spread(result: Analysis, pod: SimPod) -> Spread | None:
    """The hard spread constraint without which ``pod`` would be placed now (None: dropping
    them all would not help, so spread is not the reason)."""
    constraints = pod.constraints
    if not constraints.spread:
        return None
    sim = result.sim
    if not _fits(sim, pod, dataclasses.replace(constraints, spread=())):
        return None
    for spread in constraints.spread:
        others = tuple(s for s in constraints.spread if s is not spread)
        if _fits(sim, pod, dataclasses.replace(constraints, spread=others)):
            return spread
    return constraints.spread[0]


def _fits(sim: Simulation, pod: SimPod, constraints: Constraints) -> bool:
    """Whether ``pod`` with ``constraints`` instead of its own would be placed now (nothing is bound)."""
    return sim.place(_with_rules(pod, constraints), bind=False).node is not None


# --- words ---------------------------------------------------------------------------------------
