"""An offline kube-scheduler: the default profile's filter plugins, run against a declared cluster.

Pods are placed one at a time. For each pod every node runs the enabled filters in the default
profile's order (``pkg/scheduler/apis/config/v1/default_plugins.go``) and stops at the first
failure (``RunFilterPlugins``, ``pkg/scheduler/framework/runtime/framework.go``); a failing node
records the plugin's own reason string, and a pod that fits nowhere gets the scheduler's event
text (``FitError.Error``):
``0/6 nodes are available: 3 node(s) didn't match pod anti-affinity rules, ...``.

Filters, each as its upstream plugin (``pkg/scheduler/framework/plugins/<name>``):

* **NodeUnschedulable**: a cordoned node, unless the pod tolerates
  ``node.kubernetes.io/unschedulable:NoSchedule``.
* **NodeName**: ``spec.nodeName``, when set, names the node.
* **TaintToleration**: the first NoSchedule / NoExecute taint no toleration tolerates
  (``v1helper.TolerationsTolerateTaint``); PreferNoSchedule only scores.
* **NodeAffinity**: ``nodeSelector`` and the required node affinity (terms ORed, expressions
  ANDed; Gt/Lt compare integers; an empty term matches nothing).
* **NodeResourcesFit**: pod count and every requested resource against allocatable minus what
  the node's pods request. A node that declares no allocatable at all is not checked (a
  hand-written Node without status; ``kubectl get nodes -o yaml`` always has it).
* **PodTopologySpread**: ``DoNotSchedule`` constraints, counted as the plugin's PreFilter does:
  nodes carrying every constraint's key, honouring nodeAffinityPolicy / nodeTaintsPolicy; pods of
  the incoming pod's namespace, not terminating, matching the (merged) selector; ``minDomains``;
  ``skew = count + selfMatch - min``.
* **InterPodAffinity**: the incoming pod's required affinity (one pod must match every term,
  with the first-pod exception), its required anti-affinity, and the existing pods' required
  anti-affinity by symmetry; namespaces and namespaceSelector as ``AffinityTerm.Matches``.

Choosing among feasible nodes is deterministic (the real scheduler breaks ties at random): the
highest of, in order, fewer untolerated PreferNoSchedule taints, the preferred node-affinity
weights, the preferred inter-pod (anti-)affinity weights per matching pod in the domain, fewer
matching pods in ScheduleAnyway spread domains, the most free cpu and memory (LeastAllocated,
counting a pod without requests as 100m / 200Mi as the scheduler's scoring does), then the
node name. Upstream sums weighted, normalised plugin scores; the order above keeps the plugins'
priorities and never changes which nodes are feasible, only which one is taken.

Nothing here is quadratic in pods x nodes where an index does: placed pods are indexed by label
(candidates for a selector come from the label index), existing pods' anti-affinity terms are
indexed by the labels they select, the static filters (the first four) are computed once per
distinct pod signature, and pods with no inter-pod or spread rule take the best node from a
heap instead of scanning every node.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from kaffinity.expand.merge import expand, pod_labels
from kaffinity.k8s import gates as fg
from kaffinity.k8s.model import (
    Affinity,
    LabelSelector,
    Node,
    NodeSelectorTerm,
    PodAffinityTerm,
    Taint,
    Toleration,
    TopologySpreadConstraint,
    Workload,
)
from kaffinity.k8s.model.terms import ANY_HOST_IP
from kaffinity.k8s.selectors import NAMESPACE_NAME_LABEL, node_term_matches, selector_matches

if TYPE_CHECKING:
    from kaffinity.expand.merge import WorkloadExpansion
    from kaffinity.k8s.model import PodAffinity, PodDisruptionBudget
    from kaffinity.simulate.cluster import Pool

# The default profile's filters, in upstream order (pkg/scheduler/apis/config/v1/default_plugins.go).
NODE_UNSCHEDULABLE = "NodeUnschedulable"
NODE_NAME = "NodeName"
TAINT_TOLERATION = "TaintToleration"
NODE_AFFINITY = "NodeAffinity"
NODE_PORTS = "NodePorts"
NODE_RESOURCES_FIT = "NodeResourcesFit"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
INTER_POD_AFFINITY = "InterPodAffinity"
FILTERS = (
    NODE_UNSCHEDULABLE,
    NODE_NAME,
    TAINT_TOLERATION,
    NODE_AFFINITY,
    NODE_PORTS,
    NODE_RESOURCES_FIT,
    POD_TOPOLOGY_SPREAD,
    INTER_POD_AFFINITY,
)

#: Not a filter plugin: the PostFilter steps ``--filters`` may name (both on by default).
PREEMPTION = "DefaultPreemption"
AUTOSCALING = "Autoscaling"
#: The filters and the PostFilter steps, all on by default.
STEPS = (*FILTERS, PREEMPTION, AUTOSCALING)

# Reason strings, as the plugins write them.
REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_NODE_NAME = "node(s) didn't match the requested node name"
REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_PINNED = "node(s) didn't satisfy plugin(s) [NodeAffinity]"
REASON_TOO_MANY_PODS = "Too many pods"
#: pkg/scheduler/framework/plugins/nodeports ``ErrReason``
REASON_PORTS = "node(s) didn't have free ports for the requested pod ports"
REASON_SPREAD_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"
REASON_SPREAD = "node(s) didn't match pod topology spread constraints"
REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"
#: Reasons whose status is UnschedulableAndUnresolvable: removing pods cannot change them, so
#: preemption skips the node (the static filters' reasons, never candidates anyway, too).
_UNRESOLVABLE = frozenset((REASON_AFFINITY, REASON_SPREAD_LABEL))

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
#: Tolerations the DaemonSet controller adds to its pods (``util.AddOrUpdateDaemonPodTolerations``).
DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
HOST_NETWORK_TOLERATION = ("node.kubernetes.io/network-unavailable", "NoSchedule")
#: The scheduler's scoring counts a pod without requests as this much (``schedutil.DefaultMilliCPURequest``).
_NONZERO = {"cpu": 100, "memory": 200 * 1024 * 1024}
_DEFAULT_MAX_PODS = 110
_FITS: list[str] = []  # no reasons (never appended to)
_PORTS = [REASON_PORTS]
#: cluster-autoscaler ``--expendable-pods-priority-cutoff`` default: lower pods never scale up.
EXPENDABLE_CUTOFF = -10
#: DefaultPreemption's defaults (``DefaultPreemptionArgs``): candidates looked for.
MIN_CANDIDATES = 100
CANDIDATE_PERCENT = 10
_BLOCKING = ("NoSchedule", "NoExecute")
_NO_EXECUTE = ("NoExecute",)


def blocking_effects(constraints: Constraints) -> tuple[str, ...]:
    """The taint effects that keep a pod off a node: NoSchedule and NoExecute for the scheduler
    (TaintToleration); NoExecute alone for a pod with ``spec.nodeName``, which the kubelet admits
    (pkg/kubelet/lifecycle/predicate.go)."""
    return _NO_EXECUTE if constraints.node_name else _BLOCKING


_DEFAULT = (0, 0, 0, 0, 0)
#: Marks a ClusterTopology node whose pool declares no ephemeral-storage (left unchecked).
_UNCHECKED = "kaffinity.io/ephemeral-storage-unchecked"
#: Nodes the heap tries before a pod with required inter-pod rules filters every node instead.
_HEAP_TRIES = 48


def taint_reason(taint: Taint, version: str) -> str:
    """TaintToleration's reason: the taint is named up to 1.34 (kubernetes#134740 dropped it)."""
    if fg.minor(version) >= 35:
        return "node(s) had untolerated taint(s)"
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


def tolerates(toleration: Toleration, taint: Taint, comparison: bool = False) -> bool:
    """``Toleration.ToleratesTaint`` (core/v1 helpers); Gt/Lt (KEP-5471) when its gate is on."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    operator = toleration.operator or "Equal"
    if operator == "Equal":
        return toleration.value == taint.value
    if operator == "Exists":
        return True
    if comparison and operator in ("Gt", "Lt"):
        have, want = _integer(taint.value), _integer(toleration.value)
        if have is None or want is None:
            return False
        return have > want if operator == "Gt" else have < want
    return False


def _integer(text: str) -> int | None:
    try:
        return int(text, 10)
    except ValueError:
        return None


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
            None if self.node_terms is None else tuple(_node_term_key(t) for t in self.node_terms),
            tuple((t.key, t.operator, t.value, t.effect) for t in self.tolerations),
        )


def _node_term_key(term: NodeSelectorTerm) -> tuple[Any, ...]:
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
    heaps: list[_Heap] = field(default_factory=list)
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


def sim_node(node: Node) -> SimNode:
    """The simulation's view of ``node`` (scheduler units; unchecked disk for a compact pool)."""
    allocatable = scheduler_units(node.allocatable) if node.allocatable else None
    if allocatable is not None and node.path and "ephemeral-storage" not in allocatable:
        # A ClusterTopology pool that does not say: every kubelet reports its disk, so
        # leave it unchecked rather than report every pod short of ephemeral-storage.
        allocatable[_UNCHECKED] = 1
    sim = SimNode(node, node.ref.name, dict(node.labels), node.taints, allocatable, node.unschedulable)
    sim.refresh()
    return sim


class _Growth:
    """A pool as the simulation grows it: its nodes, and what its limits leave."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.count = pool.count
        self.nodes: list[SimNode] = []
        #: Karpenter limits: what the pool's nodes hold now
        self.used: Counter[str] = Counter()
        self.size = scheduler_units(pool.allocatable) if pool.allocatable else None

    def start(self, nodes: Iterable[SimNode]) -> None:
        if self.pool.limits:
            from kaffinity.simulate.cluster import KARPENTER_POOL_LABEL

            for node in nodes:
                if node.labels.get(KARPENTER_POOL_LABEL) == self.pool.name and node.allocatable:
                    self.used.update(node.allocatable)

    def rank(self, constraints: Constraints, node: SimNode, order: int, variant: int) -> tuple[Any, ...]:
        """The autoscaler's preference for this pool's ``node`` (smaller first)."""
        pool = self.pool
        if pool.kind == "NodePool":
            return (0, -pool.weight, _later_first(pool.name), order, variant)
        waste = 0.0
        for resource in ("cpu", "memory"):
            total = node.allocatable.get(resource) if node.allocatable else None
            if total:
                waste += (total - constraints.nonzero.get(resource, 0)) / total
        return (1, waste, order, variant)

    def full(self) -> str | None:
        """Why the pool may not grow (None: it may)."""
        pool = self.pool
        if pool.max is not None and self.count >= pool.max:
            return f"{self.pool.word} is at its max of {pool.max} node{'s' if pool.max != 1 else ''}"
        if pool.limits:
            if self.size is None:
                return f"{self.pool.word} has limits but no node to take the size of a new one from"
            for resource, limit in scheduler_units(pool.limits).items():
                if resource == "nodes":
                    if self.count + 1 > limit:
                        return f"{self.pool.word} is at its limit of {limit} nodes"
                elif self.used.get(resource, 0) + self.size.get(resource, 0) > limit:
                    return f"{self.pool.word} would pass its {resource} limit"
        return None

    def new_node(self, variant: tuple[tuple[str, str], ...], taken: Mapping[str, SimNode]) -> Node:
        from kaffinity.k8s.labels import HOSTNAME
        from kaffinity.k8s.model import ObjectRef

        index = self.count
        while f"{self.pool.prefix}{index}" in taken:
            index += 1
        name = f"{self.pool.prefix}{index}"
        pool = self.pool
        return Node(
            ref=ObjectRef("v1", "Node", None, name),
            doc=pool.doc,
            labels=(*variant, (HOSTNAME, name)),
            taints=pool.taints,
            allocatable=pool.allocatable or (),
            unschedulable=False,
            path=pool.path,
        )

    def grow(self, node: SimNode) -> None:
        self.count += 1
        self.nodes.append(node)
        if self.size:
            self.used.update(self.size)

    def shrink(self, node: SimNode) -> None:
        if node in self.nodes:
            self.nodes.remove(node)
            self.count -= 1
            if self.size:
                self.used.subtract(self.size)


def _later_first(text: str) -> tuple[int, ...]:
    """A sort key that puts the later string first (RFC 3339 times of one format; names)."""
    return tuple(-ord(char) for char in text)


def _disrupted(pdb: PodDisruptionBudget) -> Mapping[str, Any]:
    """``status.disruptedPods``: pods whose eviction the budget already counted."""
    status = pdb.doc.data.get("status")
    found = status.get("disruptedPods") if isinstance(status, Mapping) else None
    return found if isinstance(found, Mapping) else {}


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

    def summary(self, total: int) -> str:
        """The scheduler's event text for a Pending pod (``FitError.Error``; with no node at
        all, ``ErrNoNodesAvailable`` of pkg/scheduler/schedule_one.go)."""
        if total == 0:
            return "no nodes available to schedule pods"
        text = _fit_error(total, self.reasons or Counter())
        # FitError.Error appends the PostFilter message after a space (pkg/scheduler/framework/types.go).
        return f"{text} {self.post_message}" if self.post_message else text


def _fit_error(total: int, counts: Mapping[str, int]) -> str:
    """``FitError.Error``: ``0/<N> nodes are available: `` and the sorted ``<count> <reason>``."""
    parts = sorted(f"{count} {reason}" for reason, count in counts.items())
    return f"0/{total} nodes are available: {', '.join(parts)}."


class _Heap:
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


class _LabelIndex:
    """Placed pods by label pair and by label key: candidates for a selector without a scan.

    Insertion-ordered dicts rather than sets: the candidates come in the order the pods were
    bound, so whatever iterates them (messages that name pods, the claim of existing pods) gives
    the same answer on every run; a set's order follows object addresses.
    """

    def __init__(self) -> None:
        self.pairs: dict[tuple[str, str], dict[SimPod, None]] = {}
        self.keys: dict[str, dict[SimPod, None]] = {}
        self.all: dict[SimPod, None] = {}

    def add(self, pod: SimPod) -> None:
        self.all[pod] = None
        for pair in pod.labels.items():
            self.pairs.setdefault(pair, {})[pod] = None
            self.keys.setdefault(pair[0], {})[pod] = None

    def remove(self, pod: SimPod) -> None:
        self.all.pop(pod, None)
        for pair in pod.labels.items():
            self.pairs.get(pair, {}).pop(pod, None)
            self.keys.get(pair[0], {}).pop(pod, None)

    def candidates(self, selector: LabelSelector | None) -> Iterable[SimPod]:
        if selector is None:
            return ()
        best: Iterable[SimPod] | None = None
        size = len(self.all)
        for pair in selector.match_labels:
            found = self.pairs.get(pair, {})
            if len(found) < size:
                best, size = found, len(found)
        for requirement in selector.match_expressions:
            if requirement.operator == "In":
                groups = [self.pairs.get((requirement.key, v), {}) for v in requirement.values]
                total = sum(len(group) for group in groups)
                if total < size:
                    best, size = dict.fromkeys(pod for group in groups for pod in group), total
            elif requirement.operator in ("Exists", "Gt", "Lt"):
                found = self.keys.get(requirement.key, {})
                if len(found) < size:
                    best, size = found, len(found)
        return self.all if best is None else best


class _TermIndex:
    """Required anti-affinity terms of placed pods, by what they select, with their nodes."""

    def __init__(self) -> None:
        self.holders: dict[Term, Counter[SimNode]] = {}
        #: term -> its holders per value of its topology key (what the symmetry check reads)
        self.domains: dict[Term, Counter[str]] = {}
        self.by_pair: dict[tuple[str, str], set[Term]] = {}
        self.scan: set[Term] = set()

    def add(self, term: Term, node: SimNode) -> None:
        holders = self.holders.get(term)
        if holders is None:
            holders = self.holders[term] = Counter()
            keys = _index_keys(term.selector)
            if keys is None:
                self.scan.add(term)
            for pair in keys or ():
                self.by_pair.setdefault(pair, set()).add(term)
            self.domains[term] = Counter()
        holders[node] += 1
        value = node.labels.get(term.topology_key)
        if value is not None:
            self.domains[term][value] += 1

    def remove(self, term: Term, node: SimNode) -> None:
        holders = self.holders.get(term)
        if holders is not None:
            holders[node] -= 1
            if holders[node] <= 0:
                del holders[node]
            value = node.labels.get(term.topology_key)
            if value is not None:
                self.domains[term][value] -= 1

    def candidates(self, labels: Mapping[str, str]) -> set[Term]:
        found = set(self.scan)
        for pair in labels.items():
            found.update(self.by_pair.get(pair, ()))
        return found


def _index_keys(selector: LabelSelector | None) -> tuple[tuple[str, str], ...] | None:
    """Label pairs one of which a pod must carry to match (None: no such pair, always check)."""
    if selector is None:
        return ()  # matches nothing: never a candidate
    if selector.match_labels:
        return (selector.match_labels[0],)
    for requirement in selector.match_expressions:
        if requirement.operator == "In":
            return tuple((requirement.key, value) for value in requirement.values)
    return None


# --- the simulation --------------------------------------------------------------------------


class _AbsentNodes(Mapping[str, str]):
    """The static reasons of a pinned pod's signature without a dict entry per node: every node
    but the pinned one is absent from NodeAffinity's PreFilterResult; the pinned node has its
    own reason, if any (``own``). ``pinned``: None when no node of that name exists."""

    def __init__(self, nodes: Mapping[str, SimNode], pinned: str | None, own: str | None) -> None:
        self.nodes, self.pinned, self.own = nodes, pinned, own

    def __getitem__(self, name: str) -> str:
        if name == self.pinned and self.own is not None:
            return self.own
        if name != self.pinned and name in self.nodes:
            return REASON_PINNED
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return (name for name in self.nodes if name != self.pinned or self.own is not None)

    def __len__(self) -> int:
        return len(self.nodes) - (self.pinned is not None and self.own is None)


#: A pod without ``affinity``: no node, pod or anti-affinity.
_NO_AFFINITY = Affinity(None, None, None, ())


def _resources_alone(constraints: Constraints, anti_terms: Sequence[Term]) -> bool:
    """Nothing but resources decides (no pod or spread rule, no host port, no existing pod's
    anti-affinity selecting it): preemption's victims are chosen by arithmetic, nothing is unbound."""
    return not (
        constraints.affinity or constraints.anti or constraints.spread or constraints.ports or anti_terms
    )


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
        _later_first(earliest),
        index,
    )


def _node_filters(
    workload: Workload, pinned: str | None
) -> tuple[tuple[Toleration, ...], tuple[NodeSelectorTerm, ...] | None]:
    """The pod's tolerations and required node affinity terms, as its controller makes them: a
    DaemonSet's pods tolerate what the DaemonSet controller adds, and a pinned one's node
    affinity is replaced by its node."""
    pod = workload.pod
    tolerations = pod.tolerations
    node_affinity = pod.affinity.node_affinity if pod.affinity else None
    node_terms = node_affinity.required if node_affinity else None
    if workload.controller == "DaemonSet":
        extra = [*DAEMON_TOLERATIONS, *((HOST_NETWORK_TOLERATION,) if pod.host_network else ())]
        tolerations = tolerations + tuple(Toleration(k, "Exists", "", e, ()) for k, e in extra)
        if pinned is not None:
            # ReplaceDaemonSetPodNodeNameNodeAffinity: one term, metadata.name In [node].
            node_terms = None
    return tolerations, node_terms


def _spread(expansion: WorkloadExpansion, constraint: TopologySpreadConstraint) -> Spread:
    """A topology spread constraint with the API defaults filled in."""
    return Spread(
        expansion.selector(constraint),
        constraint.topology_key,
        constraint.max_skew or 1,
        constraint.min_domains or 1,
        (constraint.node_affinity_policy or "Honor") == "Honor",
        (constraint.node_taints_policy or "Ignore") == "Honor",
        constraint.when_unsatisfiable != "ScheduleAnyway",
        constraint,
    )


class Simulation:
    """A cluster's nodes and pods, and the scheduler's filters over them."""

    def __init__(
        self,
        nodes: Sequence[Node],
        *,
        version: str,
        gates: Mapping[str, bool] | None = None,
        namespaces: Mapping[str, Mapping[str, str]] | None = None,
        filters: Iterable[str] = STEPS,
        priority: Callable[[Workload], int] | None = None,
        pools: Sequence[Pool] = (),
        pdbs: Sequence[PodDisruptionBudget] = (),
        max_nodes: int | None = None,
    ) -> None:
        self.version = version
        self._priority: Callable[[Workload], int] = priority or (lambda workload: 0)
        self.pools = [_Growth(pool) for pool in pools]
        self.pdbs = tuple(pdbs)
        self.max_nodes = max_nodes
        #: nodes autoscaling added, in order, with their pools
        self.added: list[tuple[SimNode, Pool]] = []
        #: called with each node autoscaling adds: binds what runs there from the start (the
        #: DaemonSet pods cluster-autoscaler puts on its template node); returns those pods
        self.on_new_node: Callable[[SimNode], list[SimPod]] = lambda node: []
        #: id(constraints) -> cluster version at which PostFilter last found nothing for that template
        self._post_failed: dict[int, tuple[int, str | None]] = {}
        self.gates = dict(gates or {})
        self.filters = frozenset(filters)
        self._fit = NODE_RESOURCES_FIT in self.filters
        self._comparison = fg.gate_state(fg.TOLERATION_COMPARISON, version, self.gates).enabled
        # kube-apiserver puts kubernetes.io/metadata.name on every Namespace (GA 1.22).
        self._namespaces = {
            name: {**labels, NAMESPACE_NAME_LABEL: name} for name, labels in (namespaces or {}).items()
        }
        self.nodes: list[SimNode] = []
        self.by_name: dict[str, SimNode] = {}
        for node in nodes:
            if node.ref.name in self.by_name:
                continue  # a node listed twice: the first declaration counts
            sim = sim_node(node)
            self.nodes.append(sim)
            self.by_name[sim.name] = sim
        for growth in self.pools:
            growth.start(self.nodes)
        self._pods = _LabelIndex()
        self._anti = _TermIndex()
        #: priority -> bound pods of that priority (preemption needs a lower one somewhere)
        self._priorities: Counter[int] = Counter()
        #: the node preemption is trying pods out on: its heap entries are refreshed once, after
        self._trial: SimNode | None = None
        self._version = 0
        self._constraints: dict[tuple[Any, ...], Constraints] = {}
        #: Every bind (+1) and unbind (-1), in order: cached spread counts catch up from it.
        self._log: list[tuple[SimPod, SimNode, int]] = []
        #: tuple(map(id, terms)) -> (placed pods matching them all by domain, log position)
        #: (pod counts per domain do not change when an empty node comes or goes)
        self._term_cache: dict[tuple[int, ...], tuple[_TermCounts, int]] = {}
        self._node_caches()

    def _node_caches(self) -> None:
        """Everything computed from the node list, built on first use (autoscaling keeps it
        current node by node: :meth:`_extend_caches`, :meth:`_shrink_caches`)."""
        self._prefer_tainted = [
            n for n in self.nodes if any(t.effect == "PreferNoSchedule" for t in n.taints)
        ]
        self._prefer_taints = bool(self._prefer_tainted)
        self._static: dict[tuple[Any, ...], tuple[list[SimNode], Mapping[str, str]]] = {}
        #: signature -> how many nodes fail the static filters for each reason
        self._static_counts: dict[tuple[Any, ...], Counter[str]] = {}
        self._heaps: dict[tuple[Any, ...], _Heap] = {}
        self._static_sets: dict[tuple[Any, ...], set[SimNode]] = {}
        self._domains: dict[str, dict[str, list[SimNode]]] = {}
        self._missing: dict[str, list[SimNode]] = {}
        self._node_pref: dict[tuple[Any, ...], dict[SimNode, int]] = {}
        self._node_pref_constraints: dict[tuple[Any, ...], Constraints] = {}
        #: (signature, label) -> the label's values on the nodes passing the static filters, and
        #: whether every such node carries it
        self._static_values: dict[tuple[tuple[Any, ...], str], tuple[set[str], list[bool]]] = {}
        #: signature -> a Rules of that signature (to extend the caches to a node added later)
        self._static_constraints: dict[tuple[Any, ...], Constraints] = {}
        self._prefer: dict[tuple[Any, ...], dict[SimNode, int]] = {}
        #: id(constraints) -> (cluster version, placement) of the last pod of that template found Pending
        self._pending: dict[int, tuple[int, Placement]] = {}
        self._spread_nodes: dict[tuple[Any, ...], tuple[frozenset[SimNode], frozenset[str]]] = {}
        #: (namespace, id(spread), id(nodes)) -> (spread, nodes, counts, log position)
        self._spread_cache: dict[
            tuple[str, int, int], tuple[Spread, frozenset[SimNode], Counter[str], int]
        ] = {}

    # -- pods --------------------------------------------------------------------------------

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        return self._namespaces.get(namespace) or {NAMESPACE_NAME_LABEL: namespace}

    def pod(self, workload: Workload, replica: int = 0, revision: str = "revision 1") -> SimPod:
        """Replica ``replica`` of ``workload`` at ``revision`` (its run-time labels differ per revision)."""
        labels = pod_labels(workload, self.version, replica=replica, revision=revision, qualified=True)
        return SimPod(workload, replica, revision, labels, self._constraints_of(workload, labels, revision))

    def existing(self, workload: Workload) -> SimPod:
        """A pod of the cluster file, as stored (its selectors were merged when it was created)."""
        labels = dict(workload.pod.labels)
        metadata = workload.doc.data.get("metadata")
        terminating = isinstance(metadata, Mapping) and metadata.get("deletionTimestamp") is not None
        status = workload.doc.data.get("status")
        started = status.get("startTime") if isinstance(status, Mapping) else None
        return SimPod(
            workload,
            0,
            "existing",
            labels,
            self._constraints_of(workload, labels, "existing"),
            True,
            terminating,
            started=str(started) if started is not None else "~",
        )

    def daemon_pod(self, workload: Workload, node: SimNode, revision: str = "revision 1") -> SimPod:
        """A DaemonSet's pod for ``node``: pinned there, with the controller's tolerations."""
        labels = pod_labels(workload, self.version, revision=revision, qualified=True)
        constraints = self._constraints_of(workload, labels, revision, pinned=node.name)
        return SimPod(workload, 0, revision, labels, constraints)

    def _constraints_of(
        self, workload: Workload, labels: dict[str, str], revision: str, pinned: str | None = None
    ) -> Constraints:
        key = (id(workload), revision, pinned, tuple(sorted(labels.items())))
        found = self._constraints.get(key)
        if found is None:
            found = self._constraints[key] = self._build_constraints(workload, labels, pinned)
        return found

    def _build_constraints(
        self, workload: Workload, labels: dict[str, str], pinned: str | None
    ) -> Constraints:
        pod = workload.pod
        namespace = workload.ref.namespace or "default"
        expansion = expand(workload, self.version, self.gates, qualified=True, labels=labels)
        affinity = pod.affinity or _NO_AFFINITY
        node_affinity, pod_affinity, pod_anti = (
            affinity.node_affinity,
            affinity.pod_affinity,
            affinity.pod_anti_affinity,
        )
        tolerations, node_terms = _node_filters(workload, pinned)
        spreads = [_spread(expansion, constraint) for constraint in pod.topology_spread_constraints]
        requests = scheduler_units(pod.requests)
        return Constraints(
            namespace=namespace,
            # Pods created with spec.nodeName skip the scheduler, a template's too (#75913).
            node_name=pod.node_name if pinned is None else None,
            pinned=pinned,
            node_selector=pod.node_selector,
            node_terms=node_terms,
            node_preferred=tuple((p.weight or 0, p.preference) for p in node_affinity.preferred)
            if node_affinity
            else (),
            tolerations=tolerations,
            affinity=self._required(namespace, expansion, pod_affinity),
            anti=self._required(namespace, expansion, pod_anti),
            preferred_affinity=self._preferred(namespace, expansion, pod_affinity),
            preferred_anti=self._preferred(namespace, expansion, pod_anti),
            spread=tuple(s for s in spreads if s.hard),
            soft_spread=tuple(s for s in spreads if not s.hard),
            requests=requests,
            ports=pod.host_ports,
            priority=self._priority(workload),
            preempts=pod.preemption_policy != "Never",
            wants=tuple((name, value) for name, value in requests.items() if value > 0 and name != "pods"),
            nonzero=_nonzero(requests),
        )

    def _required(
        self, namespace: str, expansion: WorkloadExpansion, group: PodAffinity | None
    ) -> tuple[Term, ...]:
        """The required terms of a pod (anti-)affinity, with the selectors the apiserver makes."""
        if group is None:
            return ()
        return tuple(self._term(namespace, expansion.selector(t), t, 1) for t in group.required)

    def _preferred(
        self, namespace: str, expansion: WorkloadExpansion, group: PodAffinity | None
    ) -> tuple[Term, ...]:
        """The preferred terms of a pod (anti-)affinity, each with its weight."""
        if group is None:
            return ()
        return tuple(
            self._term(namespace, expansion.selector(w.term), w.term, w.weight or 0) for w in group.preferred
        )

    def _term(
        self, namespace: str, selector: LabelSelector | None, term: PodAffinityTerm, weight: int
    ) -> Term:
        # getNamespacesFromPodAffinityTerm: the own namespace only when both fields are unset.
        if not term.namespaces and term.namespace_selector is None:
            names = frozenset((namespace,))
        else:
            names = frozenset(term.namespaces)
        return Term(selector, names, term.namespace_selector, term.topology_key, weight, term)

    # -- state -------------------------------------------------------------------------------

    def bind(self, pod: SimPod, node: SimNode) -> None:
        """Put ``pod`` on ``node`` (a placement, or an existing pod of the cluster)."""
        pod.node = node
        node.pods.append(pod)
        for resource, value in pod.constraints.requests.items():
            node.requested[resource] = node.requested.get(resource, 0) + value
        for resource, value in pod.constraints.nonzero.items():
            node.nonzero[resource] = node.nonzero.get(resource, 0) + value
        for protocol, ip, port in pod.constraints.ports:
            node.ports.setdefault((protocol, port), Counter())[ip] += 1
        self._pods.add(pod)
        self._priorities[pod.constraints.priority] += 1
        for term in pod.constraints.anti:
            self._anti.add(term, node)
        self._logged(pod, node, 1)
        self._changed(node)

    def unbind(self, pod: SimPod) -> None:
        """Delete ``pod`` from its node (a rollout removing an old pod)."""
        node = pod.node
        if node is None:
            return
        pod.node = None
        node.pods.remove(pod)
        for resource, value in pod.constraints.requests.items():
            node.requested[resource] = node.requested.get(resource, 0) - value
        for resource, value in pod.constraints.nonzero.items():
            node.nonzero[resource] = node.nonzero.get(resource, 0) - value
        for protocol, ip, port in pod.constraints.ports:
            held = node.ports.get((protocol, port))
            if held is not None:
                held[ip] -= 1
                if held[ip] <= 0:
                    del held[ip]
                if not held:
                    del node.ports[(protocol, port)]
        self._pods.remove(pod)
        self._priorities[pod.constraints.priority] -= 1
        if not self._priorities[pod.constraints.priority]:
            del self._priorities[pod.constraints.priority]
        for term in pod.constraints.anti:
            self._anti.remove(term, node)
        self._logged(pod, node, -1)
        self._changed(node)

    def _logged(self, pod: SimPod, node: SimNode, delta: int) -> None:
        if len(self._log) > max(65_536, 4 * len(self._pods.all)):
            # Counts too far behind cost more to catch up than to count again: start afresh
            # (amortized, each event is read a bounded number of times; the log stays small).
            self._log.clear()
            self._spread_cache.clear()
            self._term_cache.clear()
        self._log.append((pod, node, delta))

    def _changed(self, node: SimNode) -> None:
        self._version += 1
        node.refresh()
        node.version += 1
        if self._trial is not node:
            for heap in node.heaps:
                heap.push(node)

    # -- placing -----------------------------------------------------------------------------

    def place(self, pod: SimPod, *, record: bool = False, bind: bool = True, post: bool = False) -> Placement:
        """Schedule ``pod`` (:meth:`_schedule`); with ``post``, a pod that fits nowhere then goes
        through PostFilter as the cluster would handle it: preemption of lower-priority pods
        (DefaultPreemption), else a node added by the autoscaler (:meth:`post_filter`)."""
        post = (
            post and bind and bool(PREEMPTION in self.filters or (AUTOSCALING in self.filters and self.pools))
        )
        # With PostFilter to come, the reasons of a pod no node takes are left for later: most
        # such pods are then placed, and filtering every node for reasons nobody reads was most
        # of the cost of preemption.
        placement = self._schedule(pod, record=record, bind=bind, lazy=post and not record)
        if placement.node is None and post:
            placed = self.post_filter(pod, placement)
            if placed.node is None and placed.reasons is None:
                found = self._schedule(pod, record=record, bind=bind)
                return dataclasses.replace(found, no_scale_up=placed.no_scale_up)
            return placed
        return placement

    def _schedule(
        self, pod: SimPod, *, record: bool = False, bind: bool = True, lazy: bool = False
    ) -> Placement:
        """Schedule ``pod``: the chosen node (bound unless ``bind`` is false), or Pending.

        With ``record`` every node is filtered and the feasible nodes and every rejection are
        kept (``kaffinity place``); a Pending pod always gets its reasons. The node chosen is
        the same either way: without ``record`` the best node among those every preference
        leaves at the default score comes from a heap in (most free, name) order, and only the
        nodes a preference or a taint sets apart are scored one by one.
        """
        constraints = pod.constraints
        pending = self._pending.get(id(constraints))
        if (
            pending is not None
            and pending[0] == self._version
            and pending[1].pod.constraints is constraints
            and (not record or pending[1].rejected is not None)
        ):
            # The same pod template found no node, and nothing moved since: the same answer.
            return dataclasses.replace(pending[1], pod=pod)
        static, static_reasons = self.static_filter(constraints)
        anti_terms = (
            self._anti_terms_for(pod)
            if INTER_POD_AFFINITY in self.filters and not constraints.node_name
            else []
        )
        if not record and constraints.plain and not anti_terms and not self._prefer_taints:
            chosen = self._heap(constraints, static).best(lambda node: not self.node_fit(constraints, node))
            if isinstance(chosen, SimNode):
                return self._placed(pod, chosen, bind)
            if lazy:
                return Placement(pod, None)  # no node: reasons once PostFilter could not help
            return self._scan(pod, _State(self, pod, anti_terms), static, static_reasons, record)
        state = _State(self, pod, anti_terms)
        if not record:
            chosen = state.choose(self._heap(constraints, static), self._static_set(constraints))
            if isinstance(chosen, SimNode):
                return self._placed(pod, chosen, bind)
            if chosen is None and lazy:
                return Placement(pod, None)  # no node: reasons once PostFilter could not help
        return self._scan(pod, state, static, static_reasons, record, bind)

    # -- PostFilter: preemption, then autoscaling ----------------------------------------------

    def post_filter(self, pod: SimPod, pending: Placement) -> Placement:
        """What happens to a pod no node takes. DefaultPreemption first (the scheduler's
        PostFilter): when removing lower-priority pods from a node makes it fit, they are
        evicted and the pod is bound there. Else, cluster-autoscaler or Karpenter: a pool that
        may still grow and whose new node would take the pod gets that node. cluster-autoscaler
        leaves a pod the scheduler preempts for to the preemption (``FilterOutExpendableAndSplit``:
        pods with a nominated node wait for it), and never scales up for an expendable pod
        (priority below ``--expendable-pods-priority-cutoff``, -10 by default)."""
        constraints = pod.constraints
        failed = self._post_failed.get(id(constraints))
        if failed is not None and failed[0] == self._version:
            return dataclasses.replace(pending, no_scale_up=failed[1])
        found = self._preempt(pod) if constraints.preempts and PREEMPTION in self.filters else None
        if found is not None:
            node, victims = found
            for victim, _ in victims:
                self.unbind(victim)
            self.bind(pod, node)
            return dataclasses.replace(pending, node=node.name, victims=victims, reasons=None)
        why: str | None = None
        if self.pools and AUTOSCALING in self.filters:
            if constraints.priority < EXPENDABLE_CUTOFF:
                why = (
                    f"its priority {constraints.priority} is below cluster-autoscaler's expendable-pods "
                    f"cutoff {EXPENDABLE_CUTOFF}"
                )
            else:
                grown = self._scale_up(pod)
                if isinstance(grown, tuple):
                    return dataclasses.replace(pending, node=grown[0].name, added=grown, reasons=None)
                why = grown
        # Stamped after the attempt: its trials (pods taken off and put back, nodes added and
        # taken away) leave the cluster as it was, but count as changes.
        self._post_failed[id(constraints)] = (self._version, why)
        return dataclasses.replace(pending, no_scale_up=why)

    def _preemption_message(
        self, pod: SimPod, state: _State, static: list[SimNode], dynamic: Mapping[str, list[str]]
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
            return "preemption: not eligible due to preemptionPolicy=Never."
        counts: Counter[str] = Counter()
        lower_anywhere = bool(self._priorities) and min(self._priorities) < constraints.priority
        tried = 0
        for node in static:
            reasons = dynamic.get(node.name)
            if not reasons or not self._resolvable(constraints, node, reasons):
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
            after = self._reasons_without(pod, state, node, lower)
            if not after:
                return None  # a candidate: preemption places the pod
            counts.update(after)
        counts["Preemption is not helpful for scheduling"] += len(self.nodes) - tried
        return f"preemption: {_fit_error(len(self.nodes), +counts)}"

    def _reasons_without(self, pod: SimPod, state: _State, node: SimNode, lower: list[SimPod]) -> list[str]:
        """The filters' reasons for ``node`` once the pods ``lower`` are gone (nothing changes)."""
        constraints = pod.constraints
        if constraints.ports and NODE_PORTS in self.filters:
            # NodePorts comes first: the ports the remaining pods hold.
            gone = set(lower)
            held: dict[tuple[str, int], Counter[str]] = {}
            for other in node.pods:
                if other not in gone:
                    for protocol, ip, port in other.constraints.ports:
                        held.setdefault((protocol, port), Counter())[ip] += 1
            if port_conflict(constraints.ports, held):
                return [REASON_PORTS]
        short = self._resources(constraints, node, lower)
        if short:
            return short  # NodeResourcesFit, before the rest
        if not (constraints.affinity or constraints.anti or constraints.spread or state.existing_anti):
            return []
        self._trial = node
        for other in lower:
            self.unbind(other)
        try:
            return list(_State(self, pod, self._anti_terms_for(pod)).filter(node))
        finally:
            for other in lower:
                self.bind(other, node)
            self._trial = None
            self._changed(node)

    def post_failure(self, pod: SimPod) -> str | None:
        """Why PostFilter's last try for this pod's template found no autoscaler to help, if
        nothing changed since (None: not tried, or no pool)."""
        failed = self._post_failed.get(id(pod.constraints))
        return failed[1] if failed is not None and failed[0] == self._version else None

    def _preempt(self, pod: SimPod) -> tuple[SimNode, tuple[tuple[SimPod, SimNode], ...]] | None:
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
        if not self._priorities or min(self._priorities) >= constraints.priority:
            return None  # no pod of lower priority runs anywhere: nothing to evict
        static = self.static_filter(constraints)[0]
        anti_terms = self._anti_terms_for(pod)
        state: _State | None = None  # made for the first node worth filtering
        plain = _resources_alone(constraints, anti_terms)
        wanted = max(MIN_CANDIDATES, len(self.nodes) * CANDIDATE_PERCENT // 100)
        best: tuple[tuple[Any, ...], SimNode, list[SimPod]] | None = None
        found = 0
        for index, node in enumerate(static):
            lower = [other for other in node.pods if other.constraints.priority < constraints.priority]
            # Removing every lower pod must at least make room (a necessary condition, cheap).
            if not lower or self._resources(constraints, node, lower):
                continue
            if state is None:
                state = _State(self, pod, anti_terms)
            chosen = self._victims_for(pod, node, lower, state, plain)
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

    def _victims_for(
        self, pod: SimPod, node: SimNode, lower: list[SimPod], state: _State, plain: bool
    ) -> tuple[list[SimPod], int] | None:
        """The victims on ``node`` and how many a budget protected; None when the node fails for
        no reason (no preemption needed there), for one no eviction resolves, or evicting every
        pod of lower priority does not let the pod fit."""
        reasons = state.filter(node)
        if not reasons or not self._resolvable(pod.constraints, node, reasons):
            return None
        if plain:
            return self._victims_by_room(pod.constraints, node, lower)
        return self._victims_on(pod, node, lower)

    def _resolvable(self, constraints: Constraints, node: SimNode, reasons: list[str]) -> bool:
        """Whether a node's failure is Unschedulable rather than UnschedulableAndUnresolvable:
        not a required affinity nobody satisfies or a missing spread key, nor a request above
        the node's allocatable (the only NodeResourcesFit failure that is unresolvable)."""
        if not _UNRESOLVABLE.isdisjoint(reasons):
            return False
        short = reasons[-1].startswith("Insufficient ")  # "Too many pods" comes first, if at all
        return not (short and self._too_big(constraints, node))

    def _too_big(self, constraints: Constraints, node: SimNode) -> bool:
        """A request past the node's allocatable: NodeResourcesFit says UnschedulableAndUnresolvable
        (``fit.go``), no eviction can help."""
        allocatable = node.allocatable
        if allocatable is None or not self._fit:
            return False
        unchecked = _UNCHECKED in allocatable
        return any(
            want > allocatable.get(resource, 0)
            for resource, want in constraints.wants
            if not (unchecked and resource == "ephemeral-storage")
        )

    def _victims_by_room(
        self, constraints: Constraints, node: SimNode, lower: list[SimPod]
    ) -> tuple[list[SimPod], int]:
        """``SelectVictimsOnNode`` for a pod only NodeResourcesFit can stop: the same reprieve,
        in arithmetic (nothing is unbound)."""
        gone = list(lower)

        def put_back(other: SimPod) -> bool:
            gone.remove(other)
            if not self._resources(constraints, node, gone):
                return True
            gone.append(other)
            return False

        return self._reprieve(lower, put_back)

    def _reprieve(self, lower: list[SimPod], put_back: Callable[[SimPod], bool]) -> tuple[list[SimPod], int]:
        """The reprieve of ``SelectVictimsOnNode``: the removed pods go back one at a time, the
        most important first (``MoreImportantPod``: higher priority, then the earlier start),
        those whose eviction a budget forbids before the others; ``put_back`` puts one back and
        says whether the pod still fits (else it took it out again: a victim). The victims, and
        how many of them a budget protected."""
        ordered = sorted(lower, key=lambda other: (-other.constraints.priority, other.started))
        protected = self._protected(ordered)
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

    def _fits_on(self, pod: SimPod, node: SimNode) -> bool:
        return not _State(self, pod, self._anti_terms_for(pod)).filter(node)

    def _victims_on(self, pod: SimPod, node: SimNode, lower: list[SimPod]) -> tuple[list[SimPod], int] | None:
        """``SelectVictimsOnNode``: the pods to evict from ``node`` and how many of them a
        budget protects; None when removing every lower-priority pod does not make room."""
        self._trial = node
        for other in lower:
            self.unbind(other)

        def put_back(other: SimPod) -> bool:
            self.bind(other, node)
            if self._fits_on(pod, node):
                return True
            self.unbind(other)
            return False

        try:
            if not self._fits_on(pod, node):
                return None
            return self._reprieve(lower, put_back)
        finally:
            for other in lower:
                if other.node is None:
                    self.bind(other, node)
            self._trial = None
            self._changed(node)  # its heap entries, once

    def _protected(self, pods: list[SimPod]) -> set[SimPod]:
        """``filterPodsWithPDBViolation``: the pods (most important first) whose eviction would
        take a PodDisruptionBudget below zero disruptions allowed; a budget with an empty
        selector protects nothing here, as upstream's preemption reads it."""
        allowed: dict[int, int] = {}
        found: set[SimPod] = set()
        for pod in pods:
            for pdb in self.pdbs:
                selector = pdb.selector
                if (
                    selector is None
                    or selector.is_empty
                    or (pdb.ref.namespace or "default") != pod.namespace
                    or not selector_matches(selector, pod.labels)
                    or pod.name in _disrupted(pdb)
                ):
                    continue
                if id(pdb) not in allowed:
                    allowed[id(pdb)] = self._disruptions_allowed(pdb)
                allowed[id(pdb)] -= 1
                if allowed[id(pdb)] < 0:
                    found.add(pod)
        return found

    def _disruptions_allowed(self, pdb: PodDisruptionBudget) -> int:
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
            for pod in self.candidates(pdb.selector)
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

    # -- autoscaling -------------------------------------------------------------------------

    def _scale_up(self, pod: SimPod) -> tuple[SimNode, Pool] | str:
        """A new node for ``pod``, bound there; else why no pool helps.

        The pools that may still grow and whose new node passes the static filters and has room
        are tried in the order their autoscaler would choose them: Karpenter NodePools first,
        by ``weight``, then by name in reverse (``OrderByWeight``); then cluster-autoscaler node
        groups by the least-waste expander (the default of current releases, config/flags.go;
        older ones picked at random: the smallest unused share of cpu and memory on the new
        node, here for this one pod), then file order. Each is
        added, with its DaemonSet pods, and kept if the pod then passes every filter there (a
        new zone or hostname changes spread and affinity counts), else taken away again."""
        constraints = pod.constraints
        if self.max_nodes is not None and len(self.nodes) >= self.max_nodes:
            return (
                f"the cluster already has {len(self.nodes):,} nodes, the most kaffinity simulates "
                "(limits: nodes)"
            )
        reasons = {
            growth.pool.word: growth.full() or f"a new node of {growth.pool.word} would not take it"
            for growth in self.pools
        }
        options = [
            (growth.rank(constraints, node, order, index), growth, node)
            for order, index, growth, node in self.growth_nodes(constraints)
            if not self.node_fit(constraints, node)
        ]
        options.sort(key=lambda option: option[0])
        for _, growth, node in options:
            self.add_node(node, growth)
            if self._fits_on(pod, node):
                self.bind(pod, node)
                return node, growth.pool
            self.remove_node(node)
            reasons[growth.pool.word] = f"its pod would not fit on a new node of {growth.pool.word} either"
        return "; ".join(reasons.values()) or "no pool may grow"

    def growth_nodes(self, constraints: Constraints) -> Iterator[tuple[int, int, _Growth, SimNode]]:
        """The nodes the pools that may still grow would add, one per label variant, that pass
        ``constraints``' static filters; with the pool's and the variant's index (nothing is added)."""
        for order, growth in enumerate(self.pools):
            if growth.full() is not None:
                continue
            for index, variant in enumerate(growth.pool.variants):
                node = sim_node(growth.new_node(variant, self.by_name))
                if self._static_reason(constraints, node) is None:
                    yield order, index, growth, node

    def add_node(self, node: SimNode, growth: _Growth | None = None) -> None:
        """A node autoscaling added, with what runs on it from the start (``on_new_node``)."""
        self.nodes.append(node)
        self.by_name[node.name] = node
        if growth is not None:
            growth.grow(node)
            self.added.append((node, growth.pool))
        self._extend_caches(node)
        node.daemons = self.on_new_node(node)

    def _extend_caches(self, node: SimNode) -> None:
        """The node-derived caches with one more node, without computing them again: a scale-up
        adds nodes one at a time, and starting afresh each time was quadratic in nodes added."""
        self._version += 1
        heaps_by_signature = self._heaps_by_signature()
        for signature, (passed, reasons) in self._static.items():
            if isinstance(reasons, _AbsentNodes):  # a pinned pod: every other node is absent
                self._static_counts[signature][REASON_PINNED] += 1
                continue
            reason = self._static_reason(self._static_constraints[signature], node)
            if reason is not None:
                assert isinstance(reasons, dict)
                reasons[node.name] = reason
                self._static_counts[signature][reason] += 1
                continue
            passed.append(node)
            self._extend_passed(signature, node, heaps_by_signature.get(signature, ()))
        self._extend_node_indexes(node)
        # The spread domains and their counts are keyed by node sets: counted again when needed.
        self._spread_nodes.clear()
        self._spread_cache.clear()

    def _heaps_by_signature(self) -> dict[tuple[Any, ...], list[tuple[tuple[Any, ...], _Heap]]]:
        """The node heaps by the pod signature they serve (a heap of one domain, keyed
        (signature, topology key, value), under its signature)."""
        found: dict[tuple[Any, ...], list[tuple[tuple[Any, ...], _Heap]]] = {}
        for key, heap in self._heaps.items():
            if len(key) == 3 and isinstance(key[0], tuple):  # (signature, topology key, value)
                found.setdefault(key[0], []).append((key, heap))
            else:
                found.setdefault(key, []).append((key, heap))
        return found

    def _extend_passed(
        self,
        signature: tuple[Any, ...],
        node: SimNode,
        heaps: Iterable[tuple[tuple[Any, ...], _Heap]],
    ) -> None:
        """``node`` passes the static filters of ``signature``: in its label values, its node
        set, and the heaps of its domains."""
        for (owner, label), (values, everywhere) in self._static_values.items():
            if owner == signature:
                if label in node.labels:
                    values.add(node.labels[label])
                else:
                    everywhere[0] = False
        found = self._static_sets.get(signature)
        if found is not None:
            found.add(node)
        for key, heap in heaps:
            if len(key) != 3 or node.labels.get(key[1]) == key[2]:
                node.heaps.append(heap)
                heap.push(node)

    def _extend_node_indexes(self, node: SimNode) -> None:
        """``node`` in the indexes by label, the PreferNoSchedule-tainted nodes, and the node
        affinity preference sums."""
        for label, index in self._domains.items():
            if label in node.labels:
                index.setdefault(node.labels[label], []).append(node)
        for label, missing in self._missing.items():
            if label not in node.labels:
                missing.append(node)
        if any(t.effect == "PreferNoSchedule" for t in node.taints):
            self._prefer_tainted.append(node)
            self._prefer_taints = True
            self._prefer.clear()
        for key, preferred in self._node_pref.items():
            total = sum(
                weight
                for weight, term in self._node_pref_constraints[key].node_preferred
                if node_term_matches(term, node.labels, node.name)
            )
            if total:
                preferred[node] = total

    def remove_node(self, node: SimNode) -> None:
        """Undo :meth:`add_node` (a trial that did not help, a rollout restored); the pods
        bound there must be gone but for the ones ``on_new_node`` put there."""
        for pod in list(node.daemons):
            self.unbind(pod)
        self.nodes.remove(node)
        del self.by_name[node.name]
        for growth in self.pools:
            growth.shrink(node)
        self.added = [(n, p) for n, p in self.added if n is not node]
        self._shrink_caches(node)

    def _shrink_caches(self, node: SimNode) -> None:
        """The node-derived caches without ``node`` (the last added, no pod left on it)."""
        self._version += 1
        node.version += 1  # every heap entry of it goes stale
        node.heaps.clear()
        for signature, (passed, reasons) in self._static.items():
            if isinstance(reasons, _AbsentNodes):
                self._static_counts[signature][REASON_PINNED] -= 1
                continue
            assert isinstance(reasons, dict)
            reason = reasons.pop(node.name, None)
            if reason is not None:
                self._static_counts[signature][reason] -= 1
                if not self._static_counts[signature][reason]:
                    del self._static_counts[signature][reason]
            elif node in passed:
                passed.remove(node)
                self._static_sets.get(signature, set()).discard(node)
        for label, index in self._domains.items():
            value = node.labels.get(label)
            if value is not None and node in index.get(value, ()):
                index[value].remove(node)
                if not index[value]:
                    del index[value]
        for missing in self._missing.values():
            if node in missing:
                missing.remove(node)
        if node in self._prefer_tainted:
            self._prefer_tainted.remove(node)
            self._prefer_taints = bool(self._prefer_tainted)
            self._prefer.clear()
        for preferred in self._node_pref.values():
            preferred.pop(node, None)
        self._static_values.clear()
        self._spread_nodes.clear()
        self._spread_cache.clear()

    def _placed(self, pod: SimPod, node: SimNode, bind: bool) -> Placement:
        if bind:
            self.bind(pod, node)
        return Placement(pod, node.name)

    def _scan(
        self,
        pod: SimPod,
        state: _State,
        static: list[SimNode],
        static_reasons: Mapping[str, str],
        record: bool,
        bind: bool = True,
    ) -> Placement:
        """Filter every node: the feasible ones, each other node's reasons, and the best node."""
        feasible: list[SimNode] = []
        dynamic: dict[str, list[str]] = {}  # nodes that pass the static filters but not this pod's
        for node in static:
            reasons = state.filter(node)
            if reasons:
                dynamic[node.name] = reasons
            else:
                feasible.append(node)
        chosen = state.best(feasible) if feasible else None
        placement = Placement(pod, chosen.name if chosen else None)
        if record:
            rejected = {**{name: [reason] for name, reason in static_reasons.items()}, **dynamic}
            placement.feasible = [node.name for node in self.nodes if node.name not in rejected]
            placement.rejected = {
                node.name: rejected[node.name] for node in self.nodes if node.name in rejected
            }
        if chosen is None:
            # The static reasons are counted once per pod signature, not once per Pending pod.
            counts = Counter(self._static_counts[pod.constraints.signature()])
            for reasons in dynamic.values():
                counts.update(reasons)
            placement.reasons = counts
            if PREEMPTION in self.filters and not pod.constraints.node_name:
                placement.post_message = self._preemption_message(pod, state, static, dynamic)
            self._pending[id(pod.constraints)] = (self._version, placement)
        elif bind:
            self.bind(pod, chosen)
        return placement

    def _static_set(self, constraints: Constraints) -> set[SimNode]:
        key = constraints.signature()
        found = self._static_sets.get(key)
        if found is None:
            found = self._static_sets[key] = set(self.static_filter(constraints)[0])
        return found

    def domain_nodes(self, key: str, value: str) -> list[SimNode]:
        """The nodes whose label ``key`` is ``value`` (an index built per key on first use)."""
        index = self._domains.get(key)
        if index is None:
            index = self._domains[key] = {}
            for node in self.nodes:
                if key in node.labels:
                    index.setdefault(node.labels[key], []).append(node)
        return index.get(value, [])

    def missing(self, key: str) -> list[SimNode]:
        """The nodes without label ``key``."""
        found = self._missing.get(key)
        if found is None:
            found = self._missing[key] = [node for node in self.nodes if key not in node.labels]
        return found

    def prefer_taints(self, constraints: Constraints) -> dict[SimNode, int]:
        """Untolerated PreferNoSchedule taints per node (TaintToleration Score; nonzero only)."""
        key = constraints.signature()[-1]  # the tolerations
        found = self._prefer.get(key)
        if found is None:
            found = {}
            for node in self._prefer_tainted:
                count = sum(
                    1
                    for taint in node.taints
                    if taint.effect == "PreferNoSchedule"
                    and not any(tolerates(t, taint, self._comparison) for t in constraints.tolerations)
                )
                if count:
                    found[node] = count
            self._prefer[key] = found
        return found

    def node_preference(self, constraints: Constraints) -> dict[SimNode, int]:
        """Summed weights of the preferred node-affinity terms each node matches (nonzero only)."""
        key = tuple((weight, _node_term_key(term)) for weight, term in constraints.node_preferred)
        found = self._node_pref.get(key)
        if found is None:
            found = {}
            for node in self.nodes:
                total = sum(
                    weight
                    for weight, term in constraints.node_preferred
                    if node_term_matches(term, node.labels, node.name)
                )
                if total:
                    found[node] = total
            self._node_pref[key] = found
            self._node_pref_constraints[key] = constraints
        return found

    def _heap(self, constraints: Constraints, static: list[SimNode]) -> _Heap:
        key = constraints.signature()
        heap = self._heaps.get(key)
        if heap is None:
            heap = self._heaps[key] = _Heap(static)
        return heap

    def domain_heap(self, constraints: Constraints, static: set[SimNode], key: str, value: str) -> _Heap:
        """The nodes of one topology domain that pass ``constraints``' static filters, as a heap."""
        signature = (constraints.signature(), key, value)
        heap = self._heaps.get(signature)
        if heap is None:
            heap = self._heaps[signature] = _Heap(n for n in self.domain_nodes(key, value) if n in static)
        return heap

    def static_values(self, constraints: Constraints, label: str) -> tuple[set[str], bool]:
        """The values of ``label`` on the nodes passing ``constraints``' static filters, and whether
        every one of them carries it (kept up to date as autoscaling adds nodes)."""
        key = (constraints.signature(), label)
        found = self._static_values.get(key)
        if found is None:
            nodes = self.static_filter(constraints)[0]
            values = {node.labels[label] for node in nodes if label in node.labels}
            found = self._static_values[key] = (values, [all(label in node.labels for node in nodes)])
        return found[0], found[1][0]

    def domain_values(self, key: str) -> list[str]:
        """The values of label ``key`` among the nodes, in the order nodes first carry them."""
        self.domain_nodes(key, "")
        return list(self._domains[key])

    def _anti_terms_for(self, pod: SimPod) -> list[Term]:
        """Placed pods' required anti-affinity terms that select ``pod`` (symmetry)."""
        ns_labels = self.namespace_labels(pod.namespace)
        return [
            term
            for term in self._anti.candidates(pod.labels)
            if self._anti.holders.get(term) and term.matches(pod, ns_labels)
        ]

    def static_filter(self, constraints: Constraints) -> tuple[list[SimNode], Mapping[str, str]]:
        """Nodes passing NodeUnschedulable, NodeName, TaintToleration and NodeAffinity, and the
        first failing reason of every other node (computed once per pod signature).

        A DaemonSet pod pinned to its node: NodeAffinity's PreFilter narrows the candidates to
        that node (a ``PreFilterResult`` from the ``matchFields`` on ``metadata.name``), so the
        scheduler filters that node alone and gives every other node the absent-nodes status,
        "node(s) didn't satisfy plugin(s) [NodeAffinity]", whatever else it would fail
        (``SetAbsentNodesStatus`` in pkg/scheduler/schedule_one.go). No other node is looked at:
        a DaemonSet on 1,000 nodes is 1,000 pods, each with its own signature.
        """
        key = constraints.signature()
        found = self._static.get(key)
        if found is None:
            passed: list[SimNode] = []
            reasons: Mapping[str, str]
            if constraints.pinned is not None and NODE_AFFINITY in self.filters:
                node = self.by_name.get(constraints.pinned)
                own = self._static_reason(constraints, node) if node is not None else None
                if node is not None and own is None:
                    passed.append(node)
                reasons = _AbsentNodes(self.by_name, constraints.pinned if node is not None else None, own)
                counts = Counter({REASON_PINNED: len(self.nodes) - (node is not None)})
                if own is not None:
                    counts[own] += 1
            else:
                found_reasons: dict[str, str] = {}
                for node in self.nodes:
                    reason = self._static_reason(constraints, node)
                    if reason is None:
                        passed.append(node)
                    else:
                        found_reasons[node.name] = reason
                reasons = found_reasons
                counts = Counter(found_reasons.values())
            found = self._static[key] = (passed, reasons)
            self._static_counts[key] = +counts  # without zero counts
            self._static_constraints[key] = constraints
        return found

    def _static_reason(self, constraints: Constraints, node: SimNode) -> str | None:
        on = self.filters
        if constraints.node_name:
            return self._admit_reason(constraints, node)
        if NODE_UNSCHEDULABLE in on and node.unschedulable:
            cordon = Taint(UNSCHEDULABLE_TAINT, "", "NoSchedule", ())
            if not any(tolerates(t, cordon) for t in constraints.tolerations):
                return REASON_UNSCHEDULABLE
        if NODE_NAME in on and constraints.node_name and constraints.node_name != node.name:
            return REASON_NODE_NAME
        if TAINT_TOLERATION in on:
            taint = self.untolerated(constraints.tolerations, node.taints)
            if taint is not None:
                return taint_reason(taint, self.version)
        if NODE_AFFINITY in on:
            if constraints.pinned is not None and constraints.pinned != node.name:
                return REASON_PINNED
            if not node_matches(constraints.node_selector, constraints.node_terms, node.labels, node.name):
                return REASON_NODE_AFFINITY
        return None

    def _admit_reason(self, constraints: Constraints, node: SimNode) -> str | None:
        """A pod with ``spec.nodeName`` never meets the scheduler: the kubelet of that node admits
        it (pkg/kubelet/lifecycle/predicate.go ``Admit``) when the scheduler's general filters
        pass (NodeName, NodePorts, NodeAffinity, NodeResourcesFit; the last two are dynamic and
        checked in :meth:`node_fit`) and no NoExecute taint is untolerated. A cordon and
        NoSchedule taints do not stop it (kubernetes/kubernetes#114654); a NoExecute taint makes
        the kubelet reject it, and its controller creates another, forever (#75913)."""
        on = self.filters
        if NODE_NAME in on and constraints.node_name != node.name:
            return REASON_NODE_NAME
        if TAINT_TOLERATION in on:
            taint = self.untolerated(constraints.tolerations, node.taints, blocking_effects(constraints))
            if taint is not None:
                return taint_reason(taint, self.version)
        if NODE_AFFINITY in on and not node_matches(
            constraints.node_selector, constraints.node_terms, node.labels, node.name
        ):
            return REASON_NODE_AFFINITY
        return None

    def untolerated(
        self, tolerations: Sequence[Toleration], taints: Sequence[Taint], effects: tuple[str, ...] = _BLOCKING
    ) -> Taint | None:
        """The first NoSchedule / NoExecute taint nothing tolerates (``FindMatchingUntoleratedTaint``)."""
        for taint in taints:
            if taint.effect not in effects:
                continue
            if not any(tolerates(t, taint, self._comparison) for t in tolerations):
                return taint
        return None

    def node_fit(self, constraints: Constraints, node: SimNode) -> list[str]:
        """NodePorts, then NodeResourcesFit: the first one's reasons; empty when the pod fits."""
        if constraints.ports and NODE_PORTS in self.filters and port_conflict(constraints.ports, node.ports):
            return _PORTS
        return self._resources(constraints, node)

    def _resources(self, constraints: Constraints, node: SimNode, gone: Sequence[SimPod] = ()) -> list[str]:
        """NodeResourcesFit's reasons (``fitsRequest``), with the pods ``gone`` taken off the node
        first (what preemption asks; nothing is unbound); empty when the pod fits."""
        allocatable = node.allocatable
        if allocatable is None or not self._fit:
            return _FITS
        reasons = None
        pods = allocatable.get("pods")
        if pods is not None and len(node.pods) - len(gone) >= pods:
            reasons = [REASON_TOO_MANY_PODS]
        requested = node.requested
        unchecked = _UNCHECKED in allocatable
        for resource, want in constraints.wants:
            if unchecked and resource == "ephemeral-storage":
                continue
            free = allocatable.get(resource, 0) - requested.get(resource, 0)
            if gone:
                free += sum(other.constraints.requests.get(resource, 0) for other in gone)
            if want > free:
                if reasons is None:
                    reasons = []
                reasons.append(f"Insufficient {resource}")
        return reasons or _FITS

    def spread_nodes(
        self, constraints: Constraints, spread: Spread
    ) -> tuple[frozenset[SimNode], frozenset[str]]:
        """The nodes whose pods count for ``spread`` and the domains they make (PreFilter)."""
        # PreFilter (hard) and PreScore (soft) each skip nodes lacking a key of their own group.
        keys = [s.topology_key for s in (constraints.spread if spread.hard else constraints.soft_spread)]
        key = (
            constraints.signature(),
            tuple(keys),
            spread.topology_key,
            spread.honor_affinity,
            spread.honor_taints,
        )
        found = self._spread_nodes.get(key)
        if found is None:
            nodes = []
            for node in self.nodes:
                # nodeLabelsMatchSpreadConstraints: every hard constraint's key, else skipped.
                if not all(k in node.labels for k in keys):
                    continue
                if spread.honor_affinity and not node_matches(
                    constraints.node_selector, constraints.node_terms, node.labels, node.name
                ):
                    continue
                if spread.honor_taints and self.untolerated(constraints.tolerations, node.taints) is not None:
                    continue
                nodes.append(node)
            domains = frozenset(node.labels[spread.topology_key] for node in nodes)
            found = self._spread_nodes[key] = (frozenset(nodes), domains)
        return found

    def candidates(self, selector: LabelSelector | None) -> Iterable[SimPod]:
        return self._pods.candidates(selector)

    def term_counts(self, terms: tuple[Term, ...]) -> _TermCounts:
        """The placed pods matching every one of ``terms``, per domain of each term's key
        (InterPodAffinity PreFilter), counted once and then kept up to date from the binds and
        unbinds since (each pod counted every placed pod: 3,000 pods with hostname
        anti-affinity on 5,000 nodes took 22 s). Read-only for the caller."""
        key = tuple(map(id, terms))
        found = self._term_cache.get(key)
        if found is None:
            counts = _TermCounts(terms)
            for other in self.candidates(terms[0].selector):
                if other.node is not None:
                    counts.count(self, other, other.node, 1)
        else:
            counts, seen = found
            for pod, node, delta in self._log[seen:]:
                counts.count(self, pod, node, delta)
        self._term_cache[key] = (counts, len(self._log))
        return counts

    def spread_counts(self, namespace: str, spread: Spread, nodes: frozenset[SimNode]) -> Counter[str]:
        """:func:`spread_counts`, counted once per constraint and then kept up to date from the
        binds and unbinds since: a Deployment of P pods spread over its own pods counted every
        placed pod for each new one (P²: 3,000 pods, 36 s). Read-only for the caller."""
        key = (namespace, id(spread), id(nodes))
        found = self._spread_cache.get(key)
        if found is None:
            counts = spread_counts(self, namespace, spread, nodes)
            self._spread_cache[key] = (spread, nodes, counts, len(self._log))
            return counts
        _, _, counts, seen = found
        selector = spread.selector
        if seen < len(self._log) and selector is not None and not selector.is_empty:
            topology_key = spread.topology_key
            for pod, node, delta in self._log[seen:]:
                if (
                    node in nodes
                    and not pod.terminating
                    and pod.namespace == namespace
                    and selector_matches(selector, pod.labels)
                ):
                    counts[node.labels[topology_key]] += delta
        self._spread_cache[key] = (spread, nodes, counts, len(self._log))
        return counts


def node_matches(
    node_selector: Sequence[tuple[str, str]],
    terms: Sequence[NodeSelectorTerm] | None,
    labels: Mapping[str, str],
    name: str,
) -> bool:
    """NodeAffinity's filter: ``nodeSelector`` fully, and one required term (when set)."""
    if any(labels.get(key) != value for key, value in node_selector):
        return False
    if terms is None:
        return True
    return any(node_term_matches(term, labels, name) for term in terms)


def port_conflict(
    wanted: Iterable[tuple[str, str, int]], held: Mapping[tuple[str, int], Mapping[str, int]]
) -> bool:
    """Whether one of ``wanted`` (protocol, hostIP, hostPort) clashes with the ports a node's
    pods hold (``HostPortInfo.CheckConflict``, pkg/scheduler/framework/types.go): 0.0.0.0 clashes
    with the same protocol and port on any address, any address with 0.0.0.0 or itself."""
    for protocol, ip, port in wanted:
        ips = held.get((protocol, port))
        if not ips:
            continue
        if ip == ANY_HOST_IP or ips.get(ANY_HOST_IP) or ips.get(ip):
            return True
    return False


def _nonzero(requests: Mapping[str, int]) -> dict[str, int]:
    return {resource: requests.get(resource) or default for resource, default in _NONZERO.items()}


def spread_counts(sim: Simulation, namespace: str, spread: Spread, nodes: Iterable[SimNode]) -> Counter[str]:
    """Matching pods per domain, as PodTopologySpread's PreFilter counts them (``calPreFilterState``
    in ``pkg/scheduler/framework/plugins/podtopologyspread/filtering.go``): on the
    counted ``nodes``, in the pod's namespace, not terminating, matching the merged selector."""
    counts: Counter[str] = Counter()
    selector = spread.selector
    # countPodsMatchSelector: an empty selector counts no pod (kubernetes#116607).
    if selector is None or selector.is_empty:
        return counts
    counted = nodes if isinstance(nodes, (set, frozenset)) else set(nodes)
    for other in sim.candidates(selector):
        node = other.node
        if node is None or node not in counted or other.terminating or other.namespace != namespace:
            continue
        if selector_matches(selector, other.labels):
            counts[node.labels[spread.topology_key]] += 1
    return counts


class _TermCounts:
    """Pods matching all of some pod affinity terms, per (topology key, value) of each term's
    key; ``total`` is 0 exactly when no matching pod is in any domain (an empty map upstream)."""

    __slots__ = ("pairs", "terms", "total")

    def __init__(self, terms: tuple[Term, ...]) -> None:
        self.terms = terms
        self.pairs: Counter[tuple[str, str]] = Counter()
        self.total = 0

    def count(self, sim: Simulation, pod: SimPod, node: SimNode, delta: int) -> None:
        ns_labels = sim.namespace_labels(pod.namespace)
        if not all(term.matches(pod, ns_labels) for term in self.terms):
            return
        for term in self.terms:
            value = node.labels.get(term.topology_key)
            if value is not None:
                self.pairs[(term.topology_key, value)] += delta
                self.total += delta


def _by_free(node: SimNode) -> tuple[float, str]:
    return (-node.free, node.name)


class _State:
    """One pod's PreFilter state: the counts its dynamic filters and scores read."""

    def __init__(self, sim: Simulation, pod: SimPod, anti_terms: Sequence[Term]) -> None:
        self.sim = sim
        self.pod = pod
        self._special: dict[SimNode, tuple[int, ...]] | None = None
        constraints = pod.constraints
        on = sim.filters
        # The kubelet admits a pod with spec.nodeName without these two (``_admit_reason``).
        self.ipa = INTER_POD_AFFINITY in on and not constraints.node_name
        self.pts = POD_TOPOLOGY_SPREAD in on and bool(constraints.spread) and not constraints.node_name
        # InterPodAffinity PreFilter (pkg/scheduler/framework/plugins/interpodaffinity/filtering.go).
        # existingAntiAffinityCounts: per placed pod's term selecting this pod, its holders by
        # the value of its key; affinityCounts and antiAffinityCounts likewise, per term (the
        # Filter reads each term's own key, so per-term counts answer as upstream's one map).
        self.existing_anti: list[tuple[str, Counter[str]]] = []
        self.affinity = _TermCounts(())
        self.anti: list[_TermCounts] = []
        self.self_match = False
        if self.ipa:
            for term in anti_terms:
                self.existing_anti.append((term.topology_key, sim._anti.domains[term]))
            if constraints.affinity:
                self.affinity = sim.term_counts(constraints.affinity)
                # podMatchesAllAffinityTerms: the first pod of a series may match itself.
                own = sim.namespace_labels(pod.namespace)
                self.self_match = all(t.matches(pod, own) for t in constraints.affinity)
            self.anti = [sim.term_counts((term,)) for term in constraints.anti]
        self.affinity_counts = self.affinity.pairs
        # PodTopologySpread PreFilter (calPreFilterState in
        # pkg/scheduler/framework/plugins/podtopologyspread/filtering.go).
        self.spread: list[tuple[Spread, Counter[str], int, bool]] = []
        if self.pts:
            for spread in constraints.spread:
                counts, domains = self._spread_counts(constraints, spread)
                if len(domains) < spread.min_domains:
                    minimum = 0
                else:
                    minimum = min((counts.get(d, 0) for d in domains), default=0)
                self_match = selector_matches(spread.selector, pod.labels)
                self.spread.append((spread, counts, minimum, self_match))

    def _spread_counts(self, constraints: Constraints, spread: Spread) -> tuple[Counter[str], frozenset[str]]:
        eligible, domains = self.sim.spread_nodes(constraints, spread)
        return self.sim.spread_counts(constraints.namespace, spread, eligible), domains

    def filter(self, node: SimNode) -> list[str]:
        """The dynamic filters on ``node``, in order; the first failing plugin's reasons."""
        reasons = self.sim.node_fit(self.pod.constraints, node)
        if reasons:
            return reasons
        if self.pts:
            reason = self._spread_filter(node)
            if reason:
                return [reason]
        if self.ipa:
            reason = self._affinity_filter(node)
            if reason:
                return [reason]
        return []

    def _spread_filter(self, node: SimNode) -> str | None:
        labels = node.labels
        for spread, _, _, _ in self.spread:
            if spread.topology_key not in labels:
                return REASON_SPREAD_LABEL
        for spread, counts, minimum, self_match in self.spread:
            skew = counts.get(labels[spread.topology_key], 0) + int(self_match) - minimum
            if skew > spread.max_skew:
                return REASON_SPREAD
        return None

    def _affinity_filter(self, node: SimNode) -> str | None:
        labels = node.labels
        constraints = self.pod.constraints
        exists = True
        for term in constraints.affinity:
            value = labels.get(term.topology_key)
            if value is None:
                return REASON_AFFINITY
            if self.affinity_counts[(term.topology_key, value)] <= 0:
                exists = False
        if not exists and not (not self.affinity.total and self.self_match):
            return REASON_AFFINITY
        for term, counts in zip(constraints.anti, self.anti, strict=True):
            if counts.total:
                value = labels.get(term.topology_key)
                if value is not None and counts.pairs[(term.topology_key, value)] > 0:
                    return REASON_ANTI_AFFINITY
        for key, holders in self.existing_anti:
            value = labels.get(key)
            if value is not None and holders[value] > 0:
                return REASON_EXISTING_ANTI
        return None

    # -- scoring -----------------------------------------------------------------------------

    def special(self) -> dict[SimNode, tuple[int, ...]]:
        """The nodes a preference sets apart, with their bonus: (fewer untolerated
        PreferNoSchedule taints, preferred node-affinity weight, preferred inter-pod weight,
        nodes lacking a ScheduleAnyway key last, fewer pods in ScheduleAnyway domains). Every
        other node's bonus is all zeros (``_DEFAULT``)."""
        if self._special is not None:
            return self._special
        sim, constraints = self.sim, self.pod.constraints
        parts: dict[SimNode, list[int]] = {}

        def part(node: SimNode) -> list[int]:
            found = parts.get(node)
            if found is None:
                found = parts[node] = [0, 0, 0, 0, 0]
            return found

        for node, count in sim.prefer_taints(constraints).items():
            part(node)[0] -= count
        if constraints.node_preferred:
            for node, weight in sim.node_preference(constraints).items():
                part(node)[1] += weight
        for (key, value), total in self._preferred_counts().items():
            if total:
                for node in sim.domain_nodes(key, value):
                    part(node)[2] += total
        for spread in constraints.soft_spread:
            for node in sim.missing(spread.topology_key):
                part(node)[3] -= 1
            for value, count in self._spread_counts(constraints, spread)[0].items():
                for node in sim.domain_nodes(spread.topology_key, value):
                    part(node)[4] -= count
        self._special = {node: tuple(bonus) for node, bonus in parts.items() if any(bonus)}
        return self._special

    def _order(self, node: SimNode) -> tuple[Any, ...]:
        """Sort key, best first: the highest bonus, then the most free, then the node name."""
        bonus = self.special().get(node, _DEFAULT)
        return (*(-x for x in bonus), -node.free, node.name)

    def best(self, nodes: list[SimNode]) -> SimNode:
        if len(nodes) == 1:
            return nodes[0]
        return min(nodes, key=self._order)

    def choose(self, heap: _Heap, static: set[SimNode]) -> SimNode | bool | None:
        """The node :meth:`best` picks among the feasible nodes, without filtering them all.

        The order is lexicographic, so the best node is in the highest bonus class that has a
        feasible node: classes are tried from the top, the nodes of a set-apart class in (most
        free, name) order, the default class from the heap. With required pod affinity only the
        domains holding a matching pod can pass, so only their nodes are tried. None: no node
        fits; False: the heap gave up after ``_HEAP_TRIES`` nodes (filter them all instead).
        """
        if self._anti_full():
            return None
        special = self.special()
        classes: dict[tuple[int, ...], list[SimNode]] = {}
        for node, bonus in special.items():
            classes.setdefault(bonus, []).append(node)
        domains = self._affinity_values()
        allowed = self._affinity_domains(domains) if domains is not None and classes else None
        for bonus in sorted({*classes, _DEFAULT}, reverse=True):
            if bonus == _DEFAULT:
                found = self._from_heaps(heap, static, special, domains)
                if found is None:
                    continue
                if found is not False or domains is None:
                    return found  # False: a heap gave up, filter every node
                # A heap gave up under required affinity: its domains' nodes, sorted.
                allowed = allowed if allowed is not None else self._affinity_domains(domains)
                nodes = [node for node in allowed if node not in special]
            else:
                nodes = classes[bonus]
                if domains is not None:
                    allowed = allowed if allowed is not None else self._affinity_domains(domains)
                    nodes = [node for node in nodes if node in allowed]
            for node in sorted(nodes, key=_by_free):
                if node in static and not self.filter(node):
                    return node
        return None

    def _from_heaps(
        self,
        heap: _Heap,
        static: set[SimNode],
        special: Mapping[SimNode, tuple[int, ...]],
        domains: tuple[str, list[str]] | None,
    ) -> SimNode | bool | None:
        """The best node of the default class: of each domain a filter leaves (a heap each),
        then the best of those: the same node as the whole heap's, without trying nodes that
        cannot pass (sorting a zone's nodes for every pod cost 1.4 ms a pod on 5,000 nodes)."""
        narrowing = self._narrowest(domains)
        if narrowing is None:
            return heap.best(lambda node: not self.filter(node), _HEAP_TRIES, special.__contains__)
        return self._best_in_domains(static, special, *narrowing)

    def _anti_full(self) -> bool:
        """A required anti-affinity term already matches a pod in every domain of the nodes
        passing the static filters (each carrying its key): no node can pass. Told from the
        domain counts, without filtering each node: a pod of a workload with one replica per
        hostname found every node taken in O(domains) instead of O(nodes) filter calls."""
        if not self.ipa:
            return False
        constraints = self.pod.constraints
        for term, counts in zip(constraints.anti, self.anti, strict=True):
            if not counts.total:
                continue
            values, everywhere = self.sim.static_values(constraints, term.topology_key)
            key = term.topology_key
            if everywhere and all(counts.pairs.get((key, value), 0) > 0 for value in values):
                return True
        return False

    def _spread_values(self) -> tuple[str, list[str]] | None:
        """With a DoNotSchedule spread constraint, its key and the values of the domains whose
        skew it allows (its Filter depends on the node's domain alone); None when it allows
        every domain (or there is none). The whole-cluster heap would try the most free nodes
        of a full zone first, give up and filter every node (5,000 pods spread over the zones
        of 5,000 nodes: 109 s)."""
        if not self.spread:
            return None
        spread, counts, minimum, self_match = self.spread[0]
        key = spread.topology_key
        values = [
            value
            for value in self.sim.domain_values(key)
            if counts.get(value, 0) + int(self_match) - minimum <= spread.max_skew
        ]
        if len(values) == len(self.sim.domain_values(key)):
            return None
        return key, values

    def _narrowest(self, domains: tuple[str, list[str]] | None) -> tuple[str, list[str]] | None:
        """Of the domains required pod affinity leaves and those a hard spread allows, the ones
        with fewer nodes: the other filters are checked node by node anyway."""
        options = [option for option in (domains, self._spread_values()) if option is not None]
        if len(options) < 2:
            return options[0] if options else None
        return min(
            options, key=lambda option: sum(len(self.sim.domain_nodes(option[0], v)) for v in option[1])
        )

    def _affinity_values(self) -> tuple[str, list[str]] | None:
        """With required pod affinity and a matching pod somewhere, the first term's key and
        the values of the domains holding one; None when the affinity restricts nothing here."""
        constraints = self.pod.constraints
        if not (self.ipa and constraints.affinity and self.affinity.total):
            return None
        key = constraints.affinity[0].topology_key
        return key, [
            value
            for (term_key, value), count in self.affinity_counts.items()
            if term_key == key and count > 0
        ]

    def _affinity_domains(self, domains: tuple[str, list[str]]) -> set[SimNode]:
        """The nodes of :meth:`_affinity_values`' domains."""
        key, values = domains
        nodes: set[SimNode] = set()
        for value in values:
            nodes.update(self.sim.domain_nodes(key, value))
        return nodes

    def _best_in_domains(
        self, static: set[SimNode], special: Mapping[SimNode, Any], key: str, values: Iterable[str]
    ) -> SimNode | bool | None:
        """The best default-class node that passes the filters among the domains ``key`` =
        ``values``, from their heaps: None when none does, False when a heap gave up."""
        best: SimNode | None = None
        for value in values:
            found = self.sim.domain_heap(self.pod.constraints, static, key, value).best(
                lambda node: not self.filter(node), _HEAP_TRIES, special.__contains__
            )
            if found is False:
                return False
            if isinstance(found, SimNode) and (best is None or _by_free(found) < _by_free(best)):
                best = found
        return best

    def _preferred_counts(self) -> Counter[tuple[str, str]]:
        """(key, value) -> the weights of the preferred terms times the pods they match there
        (InterPodAffinity Score: +w per matching pod for affinity, -w for anti-affinity)."""
        totals: Counter[tuple[str, str]] = Counter()
        constraints = self.pod.constraints
        for terms, sign in ((constraints.preferred_affinity, 1), (constraints.preferred_anti, -1)):
            for term in terms:
                # The matching pods by domain, kept up to date (not counted again for each pod).
                for pair, count in self.sim.term_counts((term,)).pairs.items():
                    if count:
                        totals[pair] += sign * term.weight * count
        return totals
