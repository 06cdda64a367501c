"""What the framework holds: a pod's constraints (``framework.PodInfo``), affinity terms
(``framework.AffinityTerm``), spread constraints, the simulation's pods and nodes
(``framework.NodeInfo``), the node heaps, and a placement with its event text (``FitError``;
all of ``pkg/scheduler/framework/types.go``).
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from kaffinity.k8s.model import (
    LabelSelector,
    Node,
    NodeSelectorTerm,
    PodAffinityTerm,
    Taint,
    Toleration,
    TopologySpreadConstraint,
    Workload,
)
from kaffinity.k8s.selectors import selector_matches

if TYPE_CHECKING:
    from kaffinity.simulate.cluster import Pool
    from kaffinity.simulate.plugins.volumebinding import PodClaims

_DEFAULT_MAX_PODS = 110
#: Marks a ClusterTopology node whose pool declares no ephemeral-storage (left unchecked).
UNCHECKED = "kaffinity.io/ephemeral-storage-unchecked"


# --- pods and nodes --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Term:
    """A pod (anti-)affinity term as the scheduler holds it (``framework.AffinityTerm``)."""

    selector: LabelSelector | None
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    topology_key: str
    weight: int
    source: PodAffinityTerm

    def matches(self, pod: SimPod, namespace_labels: Mapping[str, str]) -> bool:
        if pod.namespace not in self.namespaces and not (
            self.namespace_selector is not None
            and selector_matches(self.namespace_selector, namespace_labels)
        ):
            return False
        return selector_matches(self.selector, pod.labels)


@dataclass(frozen=True, slots=True, eq=False)
class Spread:
    """A topology spread constraint with its merged selector."""

    selector: LabelSelector | None
    topology_key: str
    max_skew: int
    min_domains: int
    honor_affinity: bool
    honor_taints: bool
    hard: bool
    source: TopologySpreadConstraint


@dataclass(slots=True)
class Constraints:
    """Everything about a pod the filters read, shared by the pods of one workload revision."""

    namespace: str
    node_name: str | None
    pinned: str | None  # a DaemonSet pod: the node its controller pinned it to
    node_selector: tuple[tuple[str, str], ...]
    node_terms: tuple[NodeSelectorTerm, ...] | None
    node_preferred: tuple[tuple[int, NodeSelectorTerm], ...]
    tolerations: tuple[Toleration, ...]
    affinity: tuple[Term, ...]
    anti: tuple[Term, ...]
    preferred_affinity: tuple[Term, ...]
    preferred_anti: tuple[Term, ...]
    spread: tuple[Spread, ...]
    soft_spread: tuple[Spread, ...]
    requests: dict[str, int]
    #: (protocol, hostIP, hostPort) the pod takes on its node (NodePorts)
    ports: tuple[tuple[str, str, int], ...] = ()
    #: requests NodeResourcesFit checks (positive, not ``pods``), and what scoring counts
    wants: tuple[tuple[str, int], ...] = ()
    nonzero: dict[str, int] = field(default_factory=dict)
    sig: tuple[Any, ...] | None = None
    #: the pod's priority (the Priority admission plugin's) and whether it may preempt
    priority: int = 0
    preempts: bool = True
    #: the claims its volumes name (VolumeBinding, VolumeZone); None: none
    claims: PodClaims | None = None
    #: why admission refuses the pod (the RuntimeClass admission plugin), so none is created
    refused: str | None = None

    @property
    def plain(self) -> bool:
        """Nothing but node filters and resources: the heap may choose its node."""
        return not (
            self.affinity
            or self.anti
            or self.preferred_affinity
            or self.preferred_anti
            or self.spread
            or self.soft_spread
            or self.node_preferred
        )

    def signature(self) -> tuple[Any, ...]:
        """What the static filters (the first four) read, without data paths (computed once)."""
        if self.sig is None:
            self.sig = self._signature()
        return self.sig

    def _signature(self) -> tuple[Any, ...]:
        return (
            self.node_name,
            self.pinned,
            self.node_selector,
            None if self.node_terms is None else tuple(node_term_key(t) for t in self.node_terms),
            tuple((t.key, t.operator, t.value, t.effect) for t in self.tolerations),
        )


def node_term_key(term: NodeSelectorTerm) -> tuple[Any, ...]:
    return (
        tuple((r.key, r.operator, r.values) for r in term.match_expressions),
        tuple((r.key, r.operator, r.values) for r in term.match_fields),
    )


@dataclass(eq=False, slots=True)
class SimPod:
    """One pod: a replica of a linted workload, or an existing pod of the cluster."""

    workload: Workload
    replica: int
    revision: str
    labels: dict[str, str]
    constraints: Constraints
    existing: bool = False
    terminating: bool = False
    node: SimNode | None = None
    #: ``status.startTime`` of an existing pod (RFC 3339); "~" (after every time) for a new one,
    #: as ``util.GetPodStartTime`` takes "now" for a pod without one
    started: str = "~"

    @property
    def namespace(self) -> str:
        return self.constraints.namespace

    @property
    def name(self) -> str:
        ref = self.workload.ref
        if self.existing or ref.kind == "Pod":
            return ref.name
        if self.workload.controller == "StatefulSet":
            return f"{ref.name}-{self.replica}"
        return f"{ref.name}[{self.replica}]"


@dataclass(eq=False, slots=True)
class SimNode:
    """A node and what its pods request, in the scheduler's integer units (millicpu, bytes)."""

    node: Node
    name: str
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    allocatable: dict[str, int] | None
    unschedulable: bool
    requested: dict[str, int] = field(default_factory=dict)
    nonzero: dict[str, int] = field(default_factory=dict)
    pods: list[SimPod] = field(default_factory=list)
    #: (protocol, hostPort) -> the host IPs its pods bind it on, with counts (HostPortInfo)
    ports: dict[tuple[str, int], Counter[str]] = field(default_factory=dict)
    version: int = 0
    heaps: list[NodeHeap] = field(default_factory=list)
    #: LeastAllocated's view, kept current: the mean free share of cpu and memory.
    free: float = 1.0
    #: on a node autoscaling added: the DaemonSet pods bound with it
    daemons: list[SimPod] = field(default_factory=list)

    def refresh(self) -> None:
        shares = []
        for resource in ("cpu", "memory"):
            total = self.allocatable.get(resource) if self.allocatable else None
            if total:
                shares.append((total - self.nonzero.get(resource, 0)) / total)
        if shares:
            self.free = sum(shares) / len(shares)
        else:  # nothing declared: fewer pods is freer
            self.free = 1 - len(self.pods) / _DEFAULT_MAX_PODS


def release_port(held: dict[tuple[str, int], Counter[str]], protocol: str, ip: str, port: int) -> None:
    """``HostPortInfo.Remove`` (framework/types.go in k8s.io/kube-scheduler): the (protocol,
    port) on ``ip`` is free, whoever else held it. The scheduler's NodeInfo keeps a node's host
    ports as a set per host IP, so removing a pod frees its ports even where another pod of the
    node holds the same one (pods bound by nodeName are the only way to get two)."""
    ips = held.get((protocol, port))
    if ips is not None:
        ips.pop(ip, None)
        if not ips:
            del held[(protocol, port)]


def sim_node(node: Node) -> SimNode:
    """The simulation's view of ``node`` (scheduler units; unchecked disk for a compact pool)."""
    allocatable = scheduler_units(node.allocatable) if node.allocatable else None
    if allocatable is not None and node.path and "ephemeral-storage" not in allocatable:
        # A ClusterTopology pool that does not say: every kubelet reports its disk, so
        # leave it unchecked rather than report every pod short of ephemeral-storage.
        allocatable[UNCHECKED] = 1
    sim = SimNode(node, node.ref.name, dict(node.labels), node.taints, allocatable, node.unschedulable)
    sim.refresh()
    return sim


def later_first(text: str) -> tuple[int, ...]:
    """A sort key that puts the later string first (RFC 3339 times of one format; names)."""
    return tuple(-ord(char) for char in text)


def scheduler_units(resources: Iterable[tuple[str, Decimal]]) -> dict[str, int]:
    """Quantities as the scheduler counts them: cpu in millicores, the rest in units, rounded up
    (``resource.Quantity.MilliValue`` / ``Value``); a count past ``quantity.SCHEDULER_CEILING`` (far
    past int64, where the scheduler's own counts overflow) as that ceiling."""
    from kaffinity.k8s.quantity import scheduler_count

    return {name: scheduler_count(value, milli=name == "cpu") for name, value in resources}


@dataclass(slots=True)
class Placement:
    """Where one pod went, and, when recorded, which nodes could take it and why not the others."""

    pod: SimPod
    node: str | None
    feasible: list[str] | None = None
    rejected: dict[str, list[str]] | None = None
    #: reason -> number of nodes, for the event summary (always set when the pod is Pending)
    reasons: Counter[str] | None = None
    #: the pods preemption evicted to make room (DefaultPreemption), with the node each ran on
    victims: tuple[tuple[SimPod, SimNode], ...] = ()
    #: the node an autoscaler added for this pod (with its pool), when none could take it
    added: tuple[SimNode, Pool] | None = None
    #: the pod is Pending and an autoscaler could not help: why (pool at its max, ...)
    no_scale_up: str | None = None
    #: what DefaultPreemption's PostFilter adds to the event of a pod it cannot place
    #: (``preemption: 0/3 nodes are available: ...``); None when it is off or would place it
    post_message: str | None = None
    #: a PreFilter plugin refused the pod for every node (``Diagnosis.PreFilterMsg``), or, with
    #: ``admission``, the API server refused to create it (the RuntimeClass admission plugin)
    prefilter: str | None = None
    admission: bool = False

    def summary(self, total: int) -> str:
        """The scheduler's event text for a Pending pod (``FitError.Error``; with no node at
        all, ``ErrNoNodesAvailable`` of pkg/scheduler/schedule_one.go); a PreFilter refusal is
        said once, without counts (``0/3 nodes are available: <message>.``); a pod admission
        refuses has no event of its own: its controller's FailedCreate says why."""
        if self.admission and self.prefilter:
            return self.prefilter
        if total == 0:
            return "no nodes available to schedule pods"
        if self.prefilter is not None:
            text = f"0/{total} nodes are available: {self.prefilter}."
        else:
            text = fit_error(total, self.reasons or Counter())
        # FitError.Error appends the PostFilter message after a space (pkg/scheduler/framework/types.go).
        return f"{text} {self.post_message}" if self.post_message else text


def fit_error(total: int, counts: Mapping[str, int]) -> str:
    """``FitError.Error``: ``0/<N> nodes are available: `` and the sorted ``<count> <reason>``."""
    parts = sorted(f"{count} {reason}" for reason, count in counts.items())
    return f"0/{total} nodes are available: {', '.join(parts)}."


class NodeHeap:
    """Nodes that pass one signature's static filters, best LeastAllocated first (lazy entries)."""

    def __init__(self, nodes: Iterable[SimNode]) -> None:
        self.entries: list[tuple[float, str, int, int, SimNode]] = []
        self._tie = itertools.count()
        for node in nodes:
            node.heaps.append(self)
            self.push(node)

    def push(self, node: SimNode) -> None:
        heapq.heappush(self.entries, (-node.free, node.name, node.version, next(self._tie), node))

    def best(
        self,
        fits: Callable[[SimNode], bool],
        limit: int | None = None,
        skip: Callable[[SimNode], bool] | None = None,
    ) -> SimNode | bool | None:
        """The first node in (most free, name) order that ``fits`` (nodes ``skip`` names are
        passed over); None when none does; False when ``limit`` nodes failed ``fits``."""
        popped = []
        found: SimNode | bool | None = None
        failed = 0
        while self.entries:
            entry = heapq.heappop(self.entries)
            node = entry[4]
            if entry[2] != node.version:
                continue  # stale: a fresher entry was pushed when the node changed
            popped.append(entry)
            if skip is not None and skip(node):
                continue
            if fits(node):
                found = node
                break
            failed += 1
            if limit is not None and failed >= limit:
                found = False
                break
        for entry in popped:
            heapq.heappush(self.entries, entry)
        return found
