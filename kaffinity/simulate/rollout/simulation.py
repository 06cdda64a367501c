"""One workload's rolling update, simulated from the placed state (:func:`simulate`), and a
changed template to check a suggested fix with (:func:`scoped`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kaffinity.k8s.fenceposts import Budget
from kaffinity.k8s.model import Workload
from kaffinity.load.source import DataPath
from kaffinity.simulate.framework.schedule_one import Simulation
from kaffinity.simulate.framework.types import SimNode, SimPod
from kaffinity.simulate.place import PlacementRun
from kaffinity.simulate.rollout.daemonset import daemonset
from kaffinity.simulate.rollout.deployment import deployment
from kaffinity.simulate.rollout.session import Deadlock, Session
from kaffinity.simulate.rollout.statefulset import statefulset

if TYPE_CHECKING:
    from kaffinity.simulate.cluster import Pool

ROLLED_KINDS = ("Deployment", "StatefulSet", "DaemonSet")


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
    session = Session(run.sim, template or workload, roomy)
    try:
        current = _current(run, workload)
        if not current or any(pod.node is None for pod in current):
            return None  # it cannot run all its pods even before the update (see the module docstring)
        if settled and template is not None:
            current = session.settle(current, template)
        kind = workload.ref.kind
        if kind == "Deployment":
            return deployment(session, workload, current, budget)
        if kind == "StatefulSet":
            return statefulset(session, workload, current, version, dict(gates or {}), budget)
        return daemonset(session, workload, current, budget)
    finally:
        if grown is not None:
            grown.extend(session.grown)
        session.restore()


@dataclass(frozen=True, slots=True)
class Outcome:
    """One workload's simulated rolling update: where it stops (None: it completes), and the
    nodes autoscaling added for its new pods."""

    deadlock: Deadlock | None
    grown: tuple[tuple[SimNode, Pool], ...]


def outcomes(
    run: PlacementRun, workloads: Sequence[Workload], *, version: str, gates: Mapping[str, bool]
) -> dict[int, Outcome]:
    """Every rolled workload's :class:`Outcome` by ``id(workload)``, simulated once per run
    (``rollout-deadlock`` reports the deadlocks, ``needs-scale-up`` the rollouts that finish
    only on new nodes). Pods Pending for want of room before any update mean the cluster is
    over capacity already: a replacement pod finding no room is then its consequence
    (``roomy``)."""

    def build() -> dict[int, Outcome]:
        full = any(_short(reason) for placement in run.pending for reason in (placement.reasons or ()))
        found = {}
        for workload in workloads:
            grown: list[tuple[SimNode, Pool]] = []
            deadlock = simulate(run, workload, version=version, gates=gates, roomy=full, grown=grown)
            found[id(workload)] = Outcome(deadlock, tuple(grown))
        return found

    return run.sim.memo.get("simulate.rollout.outcomes", build)


def _short(reason: str) -> bool:
    """A NodeResourcesFit reason: no room on the node."""
    from kaffinity.simulate.plugins.noderesources import REASON_TOO_MANY_PODS

    return reason == REASON_TOO_MANY_PODS or reason.startswith("Insufficient ")


def _current(run: PlacementRun, workload: Workload) -> list[SimPod]:
    """The workload's pods before the update: bound ones, then the ones left Pending."""
    pods = list(run.pods.get(id(workload), []))
    pods += [p.pod for p in run.by_workload.get(id(workload), []) if p.node is None]
    return pods


# --- a changed template, to check a suggested fix --------------------------------------------


def _copies() -> list[object]:
    """Changed copies of workloads, kept alive as long as the simulation that used them
    (``Simulation`` caches by ``id(workload)`` / ``id(rules)``: a freed copy's id could be
    reused): its memo holds them."""
    return []


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
    sim.memo.get("simulate.rollout.copies", _copies).append(copy)
    return copy
