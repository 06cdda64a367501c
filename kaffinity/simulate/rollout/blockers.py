"""Why the new pod of a stalled rollout stays Pending: the deadlock around it, and the rules
behind its dynamic rejections (which term, whose, on which nodes: the blockers)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from kaffinity.k8s.fenceposts import Budget
from kaffinity.k8s.model import Workload
from kaffinity.load.source import DataPath, Document
from kaffinity.simulate.framework.schedule_one import Simulation
from kaffinity.simulate.framework.types import SimNode, SimPod
from kaffinity.simulate.place import owns
from kaffinity.simulate.plugins.interpodaffinity import (
    REASON_AFFINITY,
    REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI,
)
from kaffinity.simulate.plugins.nodeports import REASON_PORTS
from kaffinity.simulate.plugins.noderesources import REASON_TOO_MANY_PODS
from kaffinity.simulate.plugins.podtopologyspread import REASON_SPREAD, REASON_SPREAD_LABEL
from kaffinity.simulate.rollout.session import (
    BLOCKER_AFFINITY,
    BLOCKER_ANTI,
    BLOCKER_EXISTING_ANTI,
    BLOCKER_RESOURCES,
    BLOCKER_SPREAD,
    NEW_REVISION,
    Blocker,
    Deadlock,
    Session,
)

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


def pod_name(pod: SimPod) -> str:
    if pod.workload.ref.kind == "DaemonSet" and not pod.existing:
        return f"{pod.workload.ref.name} on {pod.constraints.pinned}"
    return pod.name


def _relation(pod: SimPod, workload: Workload) -> str:
    if pod.workload is workload and not pod.existing:
        return "new" if pod.revision == NEW_REVISION else "old"
    if pod.existing and pod.workload is not workload and owns(workload, pod):
        return "old"
    return "other"


def deadlock_of(
    session: Session,
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
                    entry.pods[pod_name(other)] = _relation(other, workload)


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
    entry.pods[pod_name(other)] = _relation(other, workload)


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
