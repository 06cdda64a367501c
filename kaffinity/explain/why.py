"""Why each Pending pod of a captured cluster stays Pending (``kaffinity explain``): the facts.

The capture's bound pods are bound first (:func:`kaffinity.simulate.place.simulation`); then the
Pending pods go through kaffinity's scheduler (:class:`~kaffinity.simulate.framework.schedule_one.Simulation`)
one at a time in the queue's order (:func:`kaffinity.explain.capture.queue_order`), as
kube-scheduler's ``ScheduleOne`` takes them: Filter on every node (each node's reason is the
first filter plugin that refuses it, ``RunFilterPlugins``), then PostFilter (DefaultPreemption).
A pod that preemption makes room for is bound on its nominated node, so that the pods after it
see its place taken (upstream keeps it as a nominated pod, which lower-or-equal priority pods
must leave room for: ``RunFilterPluginsWithNominatedPods``). A pod kaffinity can place at once
is reported as such: the capture caught it before the scheduler bound it, or kaffinity and the
scheduler disagree.

For each Pending pod, the facts (:class:`Explained`; the words are :mod:`kaffinity.report.explain`'s):
the FailedScheduling message (``FitError.Error``), the nodes grouped by the plugin and reason
that refused them, the pods behind each inter-pod reason and their workloads
(:mod:`kaffinity.explain.blockers`) and what would let it run (:mod:`kaffinity.explain.remedy`).
Replicas of one workload share a diagnosis: the blockers and remedies are worked out for the
first of them and the others point to it, so that 300 Pending replicas cost one analysis.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kaffinity.explain.blockers import Blocker, PodGroup, blockers_of, group_pods
from kaffinity.explain.capture import Owner, nominated_node, owner_of, queue_order, queued
from kaffinity.explain.nominated import NOT_ELIGIBLE_TERMINATING, Reservations, fits_on, terminating_victims
from kaffinity.explain.remedy import Remedy, remedies_for
from kaffinity.simulate.framework import profile
from kaffinity.simulate.framework.types import fit_error
from kaffinity.simulate.plugins.interpodaffinity import (
    REASON_AFFINITY,
    REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI,
)
from kaffinity.simulate.plugins.nodeaffinity import REASON_NODE_AFFINITY, REASON_PINNED
from kaffinity.simulate.plugins.nodename import REASON_NODE_NAME
from kaffinity.simulate.plugins.nodeports import REASON_PORTS
from kaffinity.simulate.plugins.noderesources import REASON_TOO_MANY_PODS
from kaffinity.simulate.plugins.nodeunschedulable import REASON_UNSCHEDULABLE
from kaffinity.simulate.plugins.podtopologyspread import REASON_SPREAD, REASON_SPREAD_LABEL

if TYPE_CHECKING:
    from kaffinity.k8s.model import Workload
    from kaffinity.simulate.cluster import Cluster
    from kaffinity.simulate.framework.schedule_one import Simulation
    from kaffinity.simulate.framework.types import Placement, SimPod
    from kaffinity.simulate.place import Priorities

#: The reasons each filter plugin gives (upstream's ``ErrReason*`` strings), for the per-node
#: detail. NodeResourcesFit says ``Insufficient <resource>`` (``fitsRequest``) and TaintToleration
#: ``node(s) had untolerated taint...``: matched by prefix below. The volume plugins' reasons
#: (pkg/scheduler/framework/plugins/volumebinding, volumezone, volumerestrictions, nodevolumelimits)
#: are listed for the captures whose pods claim volumes.
PLUGIN_OF_REASON: Mapping[str, str] = {
    REASON_UNSCHEDULABLE: profile.NODE_UNSCHEDULABLE,
    REASON_NODE_NAME: profile.NODE_NAME,
    REASON_NODE_AFFINITY: profile.NODE_AFFINITY,
    REASON_PINNED: profile.NODE_AFFINITY,
    REASON_PORTS: profile.NODE_PORTS,
    REASON_TOO_MANY_PODS: profile.NODE_RESOURCES_FIT,
    REASON_SPREAD: profile.POD_TOPOLOGY_SPREAD,
    REASON_SPREAD_LABEL: profile.POD_TOPOLOGY_SPREAD,
    REASON_AFFINITY: profile.INTER_POD_AFFINITY,
    REASON_ANTI_AFFINITY: profile.INTER_POD_AFFINITY,
    REASON_EXISTING_ANTI: profile.INTER_POD_AFFINITY,
    "node(s) didn't match PersistentVolume's node affinity": "VolumeBinding",
    "node(s) didn't find available persistent volumes to bind": "VolumeBinding",
    "node(s) did not have enough free storage": "VolumeBinding",
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)": "VolumeBinding",
    "pod has unbound immediate PersistentVolumeClaims": "VolumeBinding",
    "node(s) had no available volume zone": "VolumeZone",
    "node(s) had no available disk": "VolumeRestrictions",
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use "
    "by another pod": "VolumeRestrictions",
    "node(s) exceed max volume count": "NodeVolumeLimits",
}


def plugin_of(reason: str) -> str:
    """The filter plugin that gives ``reason`` ("" when kaffinity does not know it)."""
    found = PLUGIN_OF_REASON.get(reason)
    if found is not None:
        return found
    if reason.startswith("Insufficient "):
        return profile.NODE_RESOURCES_FIT
    if reason.startswith("node(s) had untolerated taint"):
        return profile.TAINT_TOLERATION
    return ""


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """The nodes one plugin refused for one reason (a node refused by NodeResourcesFit for two
    resources is in both of its groups, as FitError counts it under each)."""

    plugin: str
    reason: str
    nodes: tuple[str, ...]


@dataclass
class Explained:
    """One Pending pod of the capture, and what kaffinity's scheduler makes of it."""

    workload: Workload
    owner: Owner | None
    priority: int
    #: ``status.nominatedNodeName`` in the capture
    nominated: str | None
    #: where kaffinity's scheduler puts it now (None: Pending); with ``victims``, by preemption
    node: str | None = None
    victims: tuple[tuple[SimPod, str], ...] = ()
    #: the FailedScheduling message (``FitError.Error``), when no node passes the filters
    message: str | None = None
    #: node -> the reasons of the first plugin that refused it
    rejected: dict[str, list[str]] = field(default_factory=dict)
    groups: list[NodeGroup] = field(default_factory=list)
    blockers: list[Blocker] = field(default_factory=list)
    remedies: list[Remedy] = field(default_factory=list)
    #: the earlier Pending pod of the same workload whose blockers and remedies hold for this one
    same_as: Workload | None = None
    #: its victims still terminating on its nominated node: it waits for them (no new preemption)
    waiting: tuple[SimPod, ...] = ()
    #: the same, grouped by workload with their budgets
    terminating: list[PodGroup] = field(default_factory=list)

    @property
    def pending(self) -> bool:
        return self.node is None or bool(self.victims)


@dataclass
class CaptureReport:
    """Every Pending pod of a capture, in queue order, and what the capture holds."""

    nodes: int
    bound: int
    explained: list[Explained]
    #: Pending pods kube-scheduler does not take (another scheduler, scheduling gates)
    skipped: list[Workload]
    #: Pending pods in kube-scheduler's queue (all of them, also with ``--pod``)
    queued: int = 0

    @property
    def pending(self) -> list[Explained]:
        return [each for each in self.explained if each.pending]


def explain_capture(
    cluster: Cluster,
    pending: Sequence[Workload],
    *,
    version: str,
    gates: Mapping[str, bool] | None,
    priorities: Priorities,
    only: str | None = None,
) -> CaptureReport:
    """Schedule the Pending pods of a capture in queue order and explain each (``only``:
    ``namespace/name`` of the one pod whose explanation is kept; the others are still scheduled
    before it, as the queue would)."""
    from kaffinity.simulate.place import priority, simulation

    sim, existing = simulation(cluster, version=version, gates=gates, priorities=priorities)
    waiting = [pod for pod in pending if queued(pod)]
    skipped = [pod for pod in pending if not queued(pod)]
    explained: list[Explained] = []
    first: dict[tuple[str, str, str], Explained] = {}
    order = queue_order(waiting, lambda pod: priority(pod, priorities))
    levels = {id(pod): priority(pod, priorities) for pod in order}
    nominations = [(pod, nominated_node(pod.doc.data) or "", levels[id(pod)]) for pod in order]
    reservations = Reservations(sim, [each for each in nominations if each[1]])
    try:
        for workload in order:
            reservations.before(workload, levels[id(workload)])
            pod = sim.existing(workload)
            owner = owner_of(workload.doc.data)
            wanted = only is None or only == f"{workload.ref.namespace or 'default'}/{workload.ref.name}"
            each = _schedule(sim, pod, owner, record=wanted)
            reservations.done(workload, bool(each.waiting))
            if not wanted:
                continue
            explained.append(each)
            if (each.node is not None and not each.victims) or each.waiting:
                continue
            key = (
                (owner.kind, owner.namespace, owner.name)
                if owner is not None
                else ("Pod", "", workload.ref.name)
            )
            earlier = first.get(key)
            if earlier is not None and earlier.groups == each.groups:
                each.same_as = earlier.workload
                continue
            first.setdefault(key, each)
            each.blockers = blockers_of(sim, pod, each.rejected)
            each.remedies = remedies_for(sim, pod, each.rejected, each.victims, each.blockers)
    finally:
        reservations.release()
    return CaptureReport(len(sim.nodes), len(existing), explained, skipped, len(waiting))


def _schedule(sim: Simulation, pod: SimPod, owner: Owner | None, record: bool) -> Explained:
    """One ``ScheduleOne``: Filter with every node's reasons (when ``record``), then PostFilter."""
    workload = pod.workload
    each = Explained(workload, owner, pod.constraints.priority, nominated_node(workload.doc.data))
    nominated = sim.by_name.get(each.nominated or "")
    if nominated is not None and fits_on(sim, pod, nominated):
        sim.bind(pod, nominated)  # evaluateNominatedNode: its node first
        each.node = nominated.name
        return each
    placement = sim.place(pod, record=record, post=False)
    if placement.node is not None:
        each.node = placement.node
        return each
    if record:
        each.message = placement.summary(len(sim.nodes))
        each.rejected = dict(placement.rejected or {})
        each.groups = _groups(placement)
    if nominated is not None and pod.constraints.preempts:
        terminating = terminating_victims(sim, pod, nominated)
        if terminating:
            each.waiting = tuple(terminating)
            each.terminating = group_pods(sim, terminating)
            if record:
                reasons = placement.reasons or Counter()
                each.message = f"{fit_error(len(sim.nodes), reasons)} {NOT_ELIGIBLE_TERMINATING}"
            return each
    after = sim.post_filter(pod, placement)
    if after.node is not None:
        each.node = after.node
        each.victims = tuple((victim, node.name) for victim, node in after.victims)
        if each.message is not None and each.victims:
            each.message += " " + preempted_message(each.node, len(each.victims))
    return each


def preempted_message(node: str, victims: int) -> str:
    """What the FailedScheduling event adds when DefaultPreemption made room: its PostFilter
    status message (``Evaluator.Preempt``, pkg/scheduler/framework/preemption/preemption.go, set
    as ``Diagnosis.PostFilterMsg`` in schedule_one.go) after the plugin's name."""
    return f"preemption: found a potential placement for pod on node {node}, preempting {victims} victims"


def _groups(placement: Placement) -> list[NodeGroup]:
    """The refused nodes grouped by reason, the most nodes first (then by reason)."""
    by_reason: dict[str, list[str]] = {}
    for node, reasons in (placement.rejected or {}).items():
        for reason in reasons:
            by_reason.setdefault(reason, []).append(node)
    counts = Counter({reason: len(nodes) for reason, nodes in by_reason.items()})
    return [
        NodeGroup(plugin_of(reason), reason, tuple(by_reason[reason]))
        for reason, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]
