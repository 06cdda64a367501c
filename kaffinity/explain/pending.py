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
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kaffinity.explain.wording import domain_word, name_list
from kaffinity.findings import Related, Severity
from kaffinity.k8s.labels import HOSTNAME, REGION, ZONE
from kaffinity.k8s.model import Taint
from kaffinity.k8s.model.readers import dig
from kaffinity.k8s.selectors import selector_matches
from kaffinity.load.source import DataPath
from kaffinity.simulate.place import daemon_nodes, placed
from kaffinity.simulate.scheduler import (
    REASON_AFFINITY,
    REASON_SPREAD,
    UNSCHEDULABLE_TAINT,
    Constraints,
    Placement,
    SimNode,
    SimPod,
    Simulation,
    Spread,
    Term,
    blocking_effects,
    node_matches,
    spread_counts,
    tolerates,
)

if TYPE_CHECKING:
    from kaffinity.context import Context
    from kaffinity.k8s.model import Workload
    from kaffinity.simulate.place import PlacementRun

NO_ELIGIBLE_NODE = "no-eligible-node"
TOPOLOGY_KEY_ABSENT = "topology-key-absent"
ANTI_AFFINITY_EXCEEDS = "anti-affinity-exceeds-domains"
SPREAD_UNSATISFIABLE = "spread-unsatisfiable"
UNSCHEDULABLE = "unschedulable"

#: Labels the kubelet sets on every node (``well_known_labels.go``: it applies the GA and the
#: legacy beta OS/arch labels both; API doc "Well-Known Labels"): a cluster file without them
#: is incomplete, not a cluster whose nodes lack them.
KUBELET_LABELS = frozenset(
    (HOSTNAME, "kubernetes.io/os", "kubernetes.io/arch", "beta.kubernetes.io/os", "beta.kubernetes.io/arch")
)

#: Keys that are absent for a reason of the cluster, not of the manifest: the zone and region
#: labels are set by cloud providers only (API doc "Well-Known Labels, Annotations and Taints"),
#: so a portable manifest's preference for them is no mistake on a cluster without them.
WELL_KNOWN_KEYS = frozenset(
    (
        HOSTNAME,
        ZONE,
        REGION,
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
    )
)

# What kind of term a topologyKey belongs to (the message names it).
TERM_AFFINITY = "required pod affinity"
TERM_ANTI = "required pod anti-affinity"
TERM_PREFERRED_AFFINITY = "preferred pod affinity"
TERM_PREFERRED_ANTI = "preferred pod anti-affinity"
TERM_SPREAD = "DoNotSchedule topology spread constraint"
TERM_SOFT_SPREAD = "ScheduleAnyway topology spread constraint"


@dataclass(frozen=True, slots=True)
class Absent:
    """A term whose topologyKey none of the workload's eligible nodes carries."""

    kind: str
    key: str
    source: Any  # model.PodAffinityTerm or model.TopologySpreadConstraint (both have .path)
    #: The term rejects every node without the key: no pod can be scheduled.
    blocks: bool
    #: None: not worth a finding (a preference for a well-known key, see WELL_KNOWN_KEYS).
    severity: Severity | None


@dataclass(frozen=True, slots=True)
class Exceeds:
    """A required self anti-affinity term with fewer domains than replicas."""

    term: Term
    domains: tuple[str, ...]  # sorted values of the key on the eligible nodes


@dataclass(frozen=True, slots=True)
class SpreadCap:
    """A hard spread constraint whose global minimum stays 0: at most maxSkew pods per domain."""

    spread: Spread
    domains: tuple[str, ...]  # every domain PreFilter counts
    usable: tuple[str, ...]  # the domains of eligible nodes (where the pod may run)
    #: counted domains the pod can never run in -> why (cordoned, taint, node selector...)
    dead: dict[str, str]
    cap: int


@dataclass
class Shape:
    """What the cluster's nodes alone say about one workload."""

    workload: Workload
    probe: SimPod
    eligible: list[SimNode]
    #: The pods it asks for (a DaemonSet: one per node it targets).
    replicas: int
    absent: list[Absent] = field(default_factory=list)
    exceeds: Exceeds | None = None
    spread: SpreadCap | None = None
    #: A term without topologyKey: the API server rejects the object (api-validation says so),
    #: so it has no pods and none of these rules reports it.
    invalid: bool = False
    #: No node passes the static filters, but a node an autoscaler may add would.
    growable: bool = False

    @property
    def rule(self) -> str | None:
        """The rule that reports this workload whatever the simulation says (None: none)."""
        if self.invalid:
            return None
        if not self.eligible:
            if self.workload.controller == "DaemonSet" or self.growable:
                return None
            return NO_ELIGIBLE_NODE
        if any(absent.blocks for absent in self.absent):
            return TOPOLOGY_KEY_ABSENT
        if self.exceeds is not None and self.replicas > len(self.exceeds.domains):
            return ANTI_AFFINITY_EXCEEDS
        if self.spread is not None:
            return SPREAD_UNSATISFIABLE
        return None


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


_CACHE: weakref.WeakKeyDictionary[Context, Analysis] = weakref.WeakKeyDictionary()


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
    found = _CACHE.get(context)
    if found is None:
        found = _CACHE[context] = _analyse(context)
    return found


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
    statics = _Statics(sim)
    for workload in context.inventory.workloads:
        if placed(workload):
            shapes[id(workload)] = _shape(sim, statics, workload)
    result = Analysis(sim, shapes, None)
    if run is not None:
        result.stuck = _classify(result, run)
    return result


# --- static facts ------------------------------------------------------------------------------


class _Statics:
    """Per static signature: the eligible nodes, the label keys they carry and their values."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self._eligible: dict[tuple[Any, ...], list[SimNode]] = {}
        self._values: dict[tuple[tuple[Any, ...], str], tuple[frozenset[str], bool]] = {}

    def eligible(self, workload: Workload, probe: SimPod) -> tuple[tuple[Any, ...], list[SimNode]]:
        daemon = workload.controller == "DaemonSet"
        key = (daemon, probe.constraints.signature())
        found = self._eligible.get(key)
        if found is None:
            found = (
                daemon_nodes(self.sim, workload) if daemon else eligible_nodes(self.sim, probe.constraints)
            )
            self._eligible[key] = found
        return key, found

    def values(
        self, signature: tuple[Any, ...], nodes: list[SimNode], key: str
    ) -> tuple[frozenset[str], bool]:
        """The values of ``key`` on ``nodes``, and whether every node carries it."""
        found = self._values.get((signature, key))
        if found is None:
            values = [node.labels[key] for node in nodes if key in node.labels]
            found = self._values[(signature, key)] = (frozenset(values), len(values) == len(nodes))
        return found


def eligible_nodes(sim: Simulation, constraints: Constraints) -> list[SimNode]:
    """The nodes passing the static filters for a pod with ``constraints`` (the scheduler's first four:
    NodeUnschedulable, NodeName, TaintToleration, NodeAffinity;
    ``pkg/scheduler/apis/config/v1/default_plugins.go``)."""
    return list(sim.static_filter(constraints)[0])


def _shape(sim: Simulation, statics: _Statics, workload: Workload) -> Shape:
    probe = sim.pod(workload)
    signature, eligible = statics.eligible(workload, probe)
    # A DaemonSet asks for one pod per node it targets.
    replicas = len(eligible) if workload.controller == "DaemonSet" else max(workload.replicas or 0, 0)
    shape = Shape(workload, probe, eligible, replicas)
    constraints = probe.constraints
    terms = (
        *constraints.affinity,
        *constraints.anti,
        *constraints.preferred_affinity,
        *constraints.preferred_anti,
    )
    keys = [t.topology_key for t in terms] + [
        s.topology_key for s in (*constraints.spread, *constraints.soft_spread)
    ]
    if not all(keys):
        shape.invalid = True
        return shape
    if not eligible:
        shape.growable = _growable(sim, constraints)
        return shape
    for kind, terms in (
        (TERM_AFFINITY, constraints.affinity),
        (TERM_ANTI, constraints.anti),
        (TERM_PREFERRED_AFFINITY, constraints.preferred_affinity),
        (TERM_PREFERRED_ANTI, constraints.preferred_anti),
    ):
        for term in terms:
            _absent(shape, statics, signature, kind, term.topology_key, term.source)
    for spread in (*constraints.spread, *constraints.soft_spread):
        _absent(
            shape,
            statics,
            signature,
            TERM_SPREAD if spread.hard else TERM_SOFT_SPREAD,
            spread.topology_key,
            spread.source,
        )
    if any(absent.blocks for absent in shape.absent):
        return shape
    shape.exceeds = _exceeds(sim, statics, signature, shape)
    shape.spread = _spread_cap(sim, shape)
    return shape


def _absent(
    shape: Shape, statics: _Statics, signature: tuple[Any, ...], kind: str, key: str, source: Any
) -> None:
    if not key:
        return  # an empty key is the API server's to reject (api-validation reports it)
    values, _ = statics.values(signature, shape.eligible, key)
    if values:
        return
    blocks = kind in (TERM_AFFINITY, TERM_SPREAD)
    severity: Severity | None
    if blocks:
        # A cluster file without the hostname label every kubelet sets is the file's mistake,
        # not the manifest's: still the reason its pods stay Pending here, but a warning.
        severity = Severity.WARNING if key in KUBELET_LABELS else Severity.ERROR
    elif kind == TERM_ANTI:
        severity = None if key in KUBELET_LABELS else Severity.WARNING
    else:
        severity = None if key in WELL_KNOWN_KEYS else Severity.INFO
    shape.absent.append(Absent(kind, key, source, blocks, severity))


def _self_matches(sim: Simulation, term: Term, pods: Iterable[SimPod]) -> bool:
    return all(term.matches(pod, sim.namespace_labels(pod.namespace)) for pod in pods)


def _probes(sim: Simulation, shape: Shape) -> list[SimPod]:
    """Pods of the workload to test a selector on: the first and, if different, the last replica
    (a StatefulSet's pods differ by their pod-name / pod-index labels)."""
    probes = [shape.probe]
    if shape.workload.controller == "StatefulSet" and shape.replicas > 1:
        probes.append(sim.pod(shape.workload, shape.replicas - 1))
    return probes


def _exceeds(sim: Simulation, statics: _Statics, signature: tuple[Any, ...], shape: Shape) -> Exceeds | None:
    """The required self anti-affinity term with the fewest domains, if they are fewer than the
    replicas. A node without the key passes anti-affinity (``satisfyPodAntiAffinity`` in
    ``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go``): only a key that every
    eligible node carries bounds the pods."""
    best: Exceeds | None = None
    probes = _probes(sim, shape)
    for term in shape.probe.constraints.anti:
        if not term.topology_key or not _self_matches(sim, term, probes):
            continue
        values, everywhere = statics.values(signature, shape.eligible, term.topology_key)
        if (
            not everywhere
            or len(values) + growth_domains(sim, shape.probe.constraints, term.topology_key, values)
            >= shape.replicas
        ):
            continue
        if best is None or len(values) < len(best.domains):
            best = Exceeds(term, tuple(sorted(values)))
    return best


def _growable(sim: Simulation, constraints: Constraints) -> bool:
    """Whether a pool that may still grow adds a node passing ``constraints``' static filters."""
    return next(sim.growth_nodes(constraints), None) is not None


def growth_domains(sim: Simulation, constraints: Constraints, key: str, values: Iterable[str]) -> int:
    """How many more domains of ``key`` the pools an autoscaler may still grow would give a pod
    with ``constraints``: each new node is a hostname of its own (up to the pool's max; a NodePool
    without a node count is not bounded here); other keys, the values of its new nodes' labels
    that no eligible node has yet. Only pools whose new node passes the static filters count."""
    known = set(values)
    extra = 0
    counted: set[int] = set()
    for _, _, growth, node in sim.growth_nodes(constraints):
        if key == HOSTNAME:
            if growth.pool.max is None:  # a NodePool bounded by resources only: as many as needed
                return 1 << 30
            if id(growth) not in counted:
                counted.add(id(growth))
                extra += growth.pool.max - growth.count
            continue
        value = node.labels.get(key)
        if value is not None and value not in known:
            known.add(value)
            extra += 1
    return extra


def _spread_cap(sim: Simulation, shape: Shape) -> SpreadCap | None:
    """A hard constraint that holds the global minimum at 0 for good (PodTopologySpread PreFilter,
    ``calPreFilterState`` in ``pkg/scheduler/framework/plugins/podtopologyspread/filtering.go``: fewer
    domains than minDomains makes it 0; so does a counted domain the pod can never run in and
    that holds no matching pod): each usable domain then takes at most maxSkew matching pods."""
    constraints = shape.probe.constraints
    keys = [s.topology_key for s in constraints.spread]
    usable_nodes = [node for node in shape.eligible if all(k in node.labels for k in keys)]
    probes = _probes(sim, shape)
    for spread in constraints.spread:
        selector = spread.selector
        # countPodsMatchSelector (pkg/scheduler/framework/plugins/podtopologyspread/common.go) counts
        # nothing for a nil or empty selector (kubernetes#116607, until kubernetes#141340), and a
        # selector that misses the pod's own labels is not raised by its own pods.
        if selector is None or selector.is_empty:
            continue
        if not all(selector_matches(selector, pod.labels) for pod in probes):
            continue
        nodes, domains = sim.spread_nodes(constraints, spread)
        usable = {node.labels[spread.topology_key] for node in usable_nodes}
        if not usable:
            continue  # no eligible node has every key: the simulation's reasons say so
        counts = spread_counts(sim, constraints.namespace, spread, nodes)
        dead = {
            domain: _dead_reason(sim, constraints, spread, nodes, domain)
            for domain in sorted(domains - usable)
            if counts.get(domain, 0) == 0
        }
        if len(domains) >= spread.min_domains and not dead:
            continue
        cap = spread.max_skew * len(usable)
        if shape.replicas > cap:
            return SpreadCap(spread, tuple(sorted(domains)), tuple(sorted(usable)), dead, cap)
    return None


def _dead_reason(
    sim: Simulation, constraints: Constraints, spread: Spread, nodes: Iterable[SimNode], domain: str
) -> str:
    """Why the pod never runs on the counted nodes of ``domain`` (their first static reason)."""
    reasons: list[str] = []
    counted = set(nodes)
    for node in sim.nodes:
        if node not in counted or node.labels.get(spread.topology_key) != domain:
            continue
        reasons.append(static_reason(sim, constraints, node) or "its other constraints")
    return ", ".join(dict.fromkeys(reasons))


_CORDON = Taint(UNSCHEDULABLE_TAINT, "", "NoSchedule", ())


def static_reason(sim: Simulation, constraints: Constraints, node: SimNode) -> str | None:
    """Why the static filters reject ``node`` for ``constraints``, in words (None: they do not)."""
    if constraints.node_name:
        # The kubelet admits a pod with spec.nodeName (simulate.Simulation._admit_reason).
        if constraints.node_name != node.name:
            return f"not spec.nodeName {constraints.node_name}"
        taint = sim.untolerated(constraints.tolerations, node.taints, blocking_effects(constraints))
        if taint is not None:
            return f"untolerated taint {taint_text(taint)}: the kubelet rejects the pod"
    else:
        if node.unschedulable and not any(tolerates(t, _CORDON) for t in constraints.tolerations):
            return "cordoned (spec.unschedulable)"
        taint = sim.untolerated(constraints.tolerations, node.taints)
        if taint is not None:
            return f"untolerated taint {taint_text(taint)}"
    if constraints.pinned is not None and constraints.pinned != node.name:
        return "not the DaemonSet pod's node"
    if not node_matches(constraints.node_selector, (), node.labels, node.name):
        return "nodeSelector does not match"
    if not node_matches((), constraints.node_terms, node.labels, node.name):
        return "required node affinity does not match"
    return None


def taint_text(taint: Any) -> str:
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


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


def counts_text(counts: Mapping[str, int], domains: Iterable[str]) -> str:
    return ", ".join(f"{domain}: {counts.get(domain, 0)}" for domain in domains)


def node_labels_path(node: SimNode) -> DataPath:
    """Where a node's labels are written: a Node object's metadata, or its ClusterTopology pool."""
    return (*node.node.path, "labels") if node.node.path else ("metadata", "labels")


def node_related(node: SimNode, message: str, path: DataPath | None = None) -> Related:
    return Related(node.node.doc, node_labels_path(node) if path is None else path, message)


def replicas_field(workload: Workload) -> DataPath | None:
    """The field that sets how many pods run at once, when written (else None)."""
    kind = workload.ref.kind
    if workload.custom is not None:
        written = [path for path in workload.custom.replicas if dig(workload.doc.data, path) is not None]
        return written[0] if written else None
    if kind in ("Deployment", "ReplicaSet", "ReplicationController", "StatefulSet"):
        path: DataPath = ("spec", "replicas")
    elif kind == "Job":
        path = ("spec", "parallelism")
    elif kind == "CronJob":
        path = ("spec", "jobTemplate", "spec", "parallelism")
    else:
        return None
    return path if dig(workload.doc.data, path) is not None else None


def pod_word(placement: Placement) -> str:
    """A Pending pod, named as its controller names it (a DaemonSet's: by its node)."""
    pod = placement.pod
    if pod.constraints.pinned is not None:
        return f"its pod for node {pod.constraints.pinned}"
    return pod.name


def pending_words(stuck: Stuck) -> str:
    """``web[3] and web[4] stay Pending`` (a StatefulSet with OrderedReady: the later ones are
    never created, since the controller waits for each pod to be Running and Ready:
    ``pkg/controller/statefulset/stateful_set_control.go``)."""
    pending = stuck.pending
    if not pending:
        return "no pod is Pending now (its existing pods run), but every pod it creates anew stays Pending"
    workload = stuck.workload
    if workload.controller == "DaemonSet":
        nodes = [p.pod.constraints.pinned or "?" for p in pending]
        if len(nodes) == 1:
            return f"its pod for node {nodes[0]} stays Pending"
        return f"its pods for {len(nodes)} nodes ({name_list(nodes)}) stay Pending"
    names = [pod_word(p) for p in pending]
    if (
        workload.controller == "StatefulSet"
        and workload.pod_management_policy == "OrderedReady"
        and len(names) > 1
    ):
        return (
            f"{names[0]} stays Pending and, as podManagementPolicy is OrderedReady, the StatefulSet "
            f"controller never creates {name_list(names[1:])}"
        )
    verb = "stays" if len(names) == 1 else "stay"
    return f"{name_list(names)} {verb} Pending"


def no_scale_up(stuck: Stuck) -> str:
    """``; the autoscaler cannot help: pool general is at its max of 3 nodes`` when the cluster
    declares pools that may grow and none took the Pending pods ("" otherwise)."""
    why = stuck.pending[0].no_scale_up if stuck.pending else None
    return f"; the autoscaler cannot help: {why}" if why else ""


def in_domains(key: str, values: list[str]) -> str:
    """``on node a``, ``on nodes a and b``, ``in zones a and b``, ``in rack domain r1``."""
    word = domain_word(key)
    names = name_list(values)
    many = len(values) != 1
    if word == "node":
        return f"on node{'s' if many else ''} {names}"
    if " " in word:  # "<key> domain"
        return f"in {word}{'s' if many else ''} {names}"
    return f"in {word}{'s' if many else ''} {names}"


def cannot_run(replicas: int) -> str:
    """What the static analysis alone says of the pods (no simulation: no names, no count)."""
    return "its pod cannot be scheduled" if replicas == 1 else f"none of its {replicas} pods can be scheduled"


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"
