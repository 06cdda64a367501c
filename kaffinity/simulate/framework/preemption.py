"""The preemption framework (``pkg/scheduler/framework/preemption``): ``DryRunPreemption`` over
the nodes, ``pickOneNodeForPreemption`` among the candidates, and what the PostFilter says of a
pod it cannot help (``Evaluator.Preempt``); the plugin's part (which victims on a node, which
budgets they violate) is :mod:`kaffinity.simulate.plugins.defaultpreemption`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from kaffinity.simulate.framework.cycle_state import CycleState
from kaffinity.simulate.framework.profile import NODE_PORTS
from kaffinity.simulate.framework.runtime import Framework
from kaffinity.simulate.framework.types import SimNode, SimPod, fit_error, later_first
from kaffinity.simulate.plugins import defaultpreemption, nodeports, noderesources
from kaffinity.simulate.plugins.defaultpreemption import CANDIDATE_PERCENT, MIN_CANDIDATES


def _preemption_key(victims: list[SimPod], violations: int, index: int) -> tuple[Any, ...]:
    """``pickOneNodeForPreemption``'s order of a candidate node: the fewest budget violations,
    the lowest highest victim priority, the smallest priority sum, the fewest victims, the
    latest start of the highest-priority victims, then the first node."""
    priorities = [victim.constraints.priority for victim in victims]
    top = max(priorities)
    earliest = min(victim.started for victim in victims if victim.constraints.priority == top)
    return (
        violations,
        top,
        sum(p + 2**31 for p in priorities),
        len(victims),
        later_first(earliest),
        index,
    )


def preempt(sim: Framework, pod: SimPod) -> tuple[SimNode, tuple[tuple[SimPod, SimNode], ...]] | None:
    """DefaultPreemption's choice (pkg/scheduler/framework/preemption ``DryRunPreemption``,
    ``SelectVictimsOnNode``, ``pickOneNodeForPreemption``): the nodes that pass the static
    filters and fail only for reasons removing pods can change; on each, every pod of lower
    priority is removed, and when the pod then fits, they are put back one by one, the most
    important first (those whose eviction a PodDisruptionBudget forbids before the others),
    as long as the pod still fits; the rest are the victims. Of the candidates (upstream
    stops after max(100, 10% of the nodes); kaffinity starts at the first node where
    upstream starts at a random one), the node with the fewest budget violations, then the
    lowest highest victim priority, the smallest priority sum, the fewest victims."""
    constraints = pod.constraints
    if not sim._priorities or min(sim._priorities) >= constraints.priority:
        return None  # no pod of lower priority runs anywhere: nothing to evict
    static = sim.static_filter(constraints)[0]
    anti_terms = sim.anti_terms_for(pod)
    state: CycleState | None = None  # made for the first node worth filtering
    plain = defaultpreemption.resources_alone(constraints, anti_terms)
    wanted = max(MIN_CANDIDATES, len(sim.nodes) * CANDIDATE_PERCENT // 100)
    best: tuple[tuple[Any, ...], SimNode, list[SimPod]] | None = None
    found = 0
    for index, node in enumerate(static):
        lower = [other for other in node.pods if other.constraints.priority < constraints.priority]
        # Removing every lower pod must at least make room (a necessary condition, cheap).
        if not lower or noderesources.filter_node(sim, constraints, node, lower):
            continue
        if state is None:
            state = CycleState(sim, pod, anti_terms)
        chosen = defaultpreemption.victims_for(sim, pod, node, lower, state, plain)
        if chosen is None or not chosen[0]:
            continue
        victims, violations = chosen
        key = _preemption_key(victims, violations, index)
        if best is None or key < best[0]:
            best = (key, node, victims)
        found += 1
        if found >= wanted:
            break
    if best is None:
        return None
    return best[1], tuple((victim, best[1]) for victim in best[2])


def preemption_message(
    sim: Framework, pod: SimPod, state: CycleState, static: list[SimNode], dynamic: Mapping[str, list[str]]
) -> str | None:
    """What DefaultPreemption says of a pod no node takes (the scheduler appends it to the
    event): ``preemption: `` and, when the pod may not preempt,
    ``not eligible due to preemptionPolicy=Never.``; else the FitError of its dry run
    (``Evaluator.Preempt``): the nodes it never tries (their reason UnschedulableAndUnresolvable)
    ``Preemption is not helpful for scheduling``, a node without a lower-priority pod
    ``No preemption victims found for incoming pod``, another node the reasons it still fails
    for with every lower-priority pod removed. None when preemption would place the pod."""
    constraints = pod.constraints
    if not constraints.preempts:
        return defaultpreemption.NOT_ELIGIBLE
    counts: Counter[str] = Counter()
    lower_anywhere = bool(sim._priorities) and min(sim._priorities) < constraints.priority
    tried = 0
    for node in static:
        reasons = dynamic.get(node.name)
        if not reasons or not defaultpreemption.resolvable(sim, constraints, node, reasons):
            continue
        tried += 1
        lower = (
            [other for other in node.pods if other.constraints.priority < constraints.priority]
            if lower_anywhere
            else []
        )
        if not lower:
            counts["No preemption victims found for incoming pod"] += 1
            continue
        after = _reasons_without(sim, pod, state, node, lower)
        if not after:
            return None  # a candidate: preemption places the pod
        counts.update(after)
    counts["Preemption is not helpful for scheduling"] += len(sim.nodes) - tried
    return f"preemption: {fit_error(len(sim.nodes), +counts)}"


def _reasons_without(
    sim: Framework, pod: SimPod, state: CycleState, node: SimNode, lower: list[SimPod]
) -> list[str]:
    """The filters' reasons for ``node`` once the pods ``lower`` are gone (nothing changes)."""
    constraints = pod.constraints
    # NodePorts comes first: the ports the remaining pods hold.
    if (
        constraints.ports
        and NODE_PORTS in sim.filters
        and nodeports.port_conflict(constraints.ports, nodeports.held_without(node, lower))
    ):
        return [nodeports.REASON_PORTS]
    short = noderesources.filter_node(sim, constraints, node, lower)
    if short:
        return short  # NodeResourcesFit, before the rest
    if not (constraints.affinity or constraints.anti or constraints.spread or state.inter_pod.existing_anti):
        return []
    sim._trial = node
    for other in lower:
        sim.unbind(other)
    try:
        return list(CycleState(sim, pod, sim.anti_terms_for(pod)).filter(node))
    finally:
        for other in lower:
            sim.bind(other, node)
        sim._trial = None
        sim._changed(node)
