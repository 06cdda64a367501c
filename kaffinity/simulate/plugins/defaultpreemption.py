"""DefaultPreemption (``pkg/scheduler/framework/plugins/defaultpreemption``): which pods to
evict from a node so that the incoming pod fits (``SelectVictimsOnNode``), which budgets that
violates (``filterPodsWithPDBViolation``), and which failures eviction can resolve. The search
over nodes and the choice among them are the framework's (:mod:`kaffinity.simulate.framework.preemption`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kaffinity.k8s.selectors import selector_matches
from kaffinity.simulate.framework.cycle_state import CycleState, fits_on
from kaffinity.simulate.framework.types import Constraints, SimNode, SimPod, Term
from kaffinity.simulate.plugins import noderesources
from kaffinity.simulate.plugins.interpodaffinity import REASON_AFFINITY
from kaffinity.simulate.plugins.podtopologyspread import REASON_SPREAD_LABEL
from kaffinity.simulate.plugins.volumebinding import REASONS as VOLUME_REASONS
from kaffinity.simulate.plugins.volumezone import REASON_CONFLICT as VOLUME_ZONE_CONFLICT

if TYPE_CHECKING:
    from kaffinity.k8s.model import PodDisruptionBudget
    from kaffinity.simulate.framework.runtime import Framework

#: DefaultPreemption's defaults (``DefaultPreemptionArgs``): candidates looked for.
MIN_CANDIDATES = 100
CANDIDATE_PERCENT = 10
#: Reasons whose status is UnschedulableAndUnresolvable: removing pods cannot change them, so
#: preemption skips the node (the static filters' reasons, never candidates anyway, too).
_UNRESOLVABLE = frozenset((REASON_AFFINITY, REASON_SPREAD_LABEL, VOLUME_ZONE_CONFLICT, *VOLUME_REASONS))
#: ``PodEligibleToPreemptOthers``: a pod with ``preemptionPolicy: Never`` preempts nothing.
NOT_ELIGIBLE = "preemption: not eligible due to preemptionPolicy=Never."


def _disrupted(pdb: PodDisruptionBudget) -> Mapping[str, Any]:
    """``status.disruptedPods``: pods whose eviction the budget already counted."""
    status = pdb.doc.data.get("status")
    found = status.get("disruptedPods") if isinstance(status, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def resources_alone(constraints: Constraints, anti_terms: Sequence[Term]) -> bool:
    """Nothing but resources decides (no pod or spread rule, no host port, no existing pod's
    anti-affinity selecting it): preemption's victims are chosen by arithmetic, nothing is unbound."""
    return not (
        constraints.affinity or constraints.anti or constraints.spread or constraints.ports or anti_terms
    )


def victims_for(
    sim: Framework, pod: SimPod, node: SimNode, lower: list[SimPod], state: CycleState, plain: bool
) -> tuple[list[SimPod], int] | None:
    """The victims on ``node`` and how many a budget protected; None when the node fails for
    no reason (no preemption needed there), for one no eviction resolves, or evicting every
    pod of lower priority does not let the pod fit."""
    reasons = state.filter(node)
    if not reasons or not resolvable(sim, pod.constraints, node, reasons):
        return None
    if plain:
        return _victims_by_room(sim, pod.constraints, node, lower)
    return _victims_on(sim, pod, node, lower)


def resolvable(sim: Framework, constraints: Constraints, node: SimNode, reasons: list[str]) -> bool:
    """Whether a node's failure is Unschedulable rather than UnschedulableAndUnresolvable:
    not a required affinity nobody satisfies or a missing spread key, nor a request above
    the node's allocatable (the only NodeResourcesFit failure that is unresolvable)."""
    if not _UNRESOLVABLE.isdisjoint(reasons):
        return False
    short = reasons[-1].startswith("Insufficient ")  # "Too many pods" comes first, if at all
    return not (short and noderesources.too_big(sim, constraints, node))


def _victims_by_room(
    sim: Framework, constraints: Constraints, node: SimNode, lower: list[SimPod]
) -> tuple[list[SimPod], int]:
    """``SelectVictimsOnNode`` for a pod only NodeResourcesFit can stop: the same reprieve,
    in arithmetic (nothing is unbound)."""
    gone = list(lower)

    def put_back(other: SimPod) -> bool:
        gone.remove(other)
        if not noderesources.filter_node(sim, constraints, node, gone):
            return True
        gone.append(other)
        return False

    return reprieve(sim, lower, put_back)


def reprieve(
    sim: Framework, lower: list[SimPod], put_back: Callable[[SimPod], bool]
) -> tuple[list[SimPod], int]:
    """The reprieve of ``SelectVictimsOnNode``: the removed pods go back one at a time, the
    most important first (``MoreImportantPod``: higher priority, then the earlier start),
    those whose eviction a budget forbids before the others; ``put_back`` puts one back and
    says whether the pod still fits (else it took it out again: a victim). The victims, and
    how many of them a budget protected."""
    ordered = sorted(lower, key=lambda other: (-other.constraints.priority, other.started))
    protected = _protected(sim, ordered)
    victims: list[SimPod] = []
    violations = 0
    for group, violating in (
        ([p for p in ordered if p in protected], True),
        ([p for p in ordered if p not in protected], False),
    ):
        for other in group:
            if not put_back(other):
                victims.append(other)
                violations += violating
    return victims, violations


def _victims_on(
    sim: Framework, pod: SimPod, node: SimNode, lower: list[SimPod]
) -> tuple[list[SimPod], int] | None:
    """``SelectVictimsOnNode``: the pods to evict from ``node`` and how many of them a
    budget protects; None when removing every lower-priority pod does not make room."""
    sim._trial = node
    for other in lower:
        sim.unbind(other)

    def put_back(other: SimPod) -> bool:
        sim.bind(other, node)
        if fits_on(sim, pod, node):
            return True
        sim.unbind(other)
        return False

    try:
        if not fits_on(sim, pod, node):
            return None
        return reprieve(sim, lower, put_back)
    finally:
        for other in lower:
            if other.node is None:
                sim.bind(other, node)
        sim._trial = None
        sim._changed(node)  # its heap entries, once


def _protected(sim: Framework, pods: list[SimPod]) -> set[SimPod]:
    """``filterPodsWithPDBViolation``: the pods (most important first) whose eviction would
    take a PodDisruptionBudget below zero disruptions allowed; a budget with an empty
    selector protects nothing here, as upstream's preemption reads it."""
    allowed: dict[int, int] = {}
    found: set[SimPod] = set()
    for pod in pods:
        for pdb in sim.pdbs_by_namespace.get(pod.namespace, ()):
            selector = pdb.selector
            assert selector is not None  # pdbs_by_namespace keeps budgets with a selector
            if not selector_matches(selector, pod.labels) or pod.name in _disrupted(pdb):
                continue
            if id(pdb) not in allowed:
                allowed[id(pdb)] = _disruptions_allowed(sim, pdb)
            allowed[id(pdb)] -= 1
            if allowed[id(pdb)] < 0:
                found.add(pod)
    return found


def _disruptions_allowed(sim: Framework, pdb: PodDisruptionBudget) -> int:
    """A budget's ``status.disruptionsAllowed`` when the file has it (a captured cluster);
    else as the disruption controller computes it from the pods it covers now, all healthy
    (pkg/controller/disruption: percentages round up)."""
    status = pdb.doc.data.get("status")
    if isinstance(status, Mapping):
        value = status.get("disruptionsAllowed")
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    namespace = pdb.ref.namespace or "default"
    healthy = sum(
        1
        for pod in sim.candidates(pdb.selector)
        if pod.node is not None
        and pod.namespace == namespace
        and pdb.selector is not None
        and selector_matches(pdb.selector, pod.labels)
    )
    from kaffinity.k8s.fenceposts import scaled

    if pdb.min_available is not None:
        desired = scaled(pdb.min_available, healthy, True) or 0
    elif pdb.max_unavailable is not None:
        desired = healthy - (scaled(pdb.max_unavailable, healthy, True) or 0)
    else:
        return healthy
    return max(healthy - desired, 0)
