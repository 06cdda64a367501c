"""The static facts of a pending workload's pods: what the cluster's nodes and the workload alone
decide, before any pod is placed (:mod:`kaffinity.explain.pending` runs the simulation on them).

A workload's :class:`Shape`: the nodes its pods may use (the static filters: NodeUnschedulable,
NodeName, TaintToleration, NodeAffinity), the topology keys none of them carries
(:class:`Absent`: InterPodAffinity ``satisfyPodAffinity``, PodTopologySpread's "missing required
label"), the anti-affinity that admits one pod per domain (:class:`Exceeds`:
``satisfyPodAntiAffinity``) and the hard spread constraint that caps it (:class:`SpreadCap`:
PodTopologySpread's ``calPreFilterState`` and ``Filter``), and the one rule that reports it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kaffinity.findings import Severity
from kaffinity.k8s.labels import HOSTNAME, REGION, ZONE
from kaffinity.k8s.model import Taint
from kaffinity.k8s.selectors import selector_matches
from kaffinity.simulate.framework.schedule_one import Simulation
from kaffinity.simulate.framework.types import Constraints, SimNode, SimPod, Spread, Term
from kaffinity.simulate.place import daemon_nodes
from kaffinity.simulate.plugins.nodeaffinity import node_matches
from kaffinity.simulate.plugins.nodeunschedulable import UNSCHEDULABLE_TAINT
from kaffinity.simulate.plugins.podtopologyspread import spread_counts
from kaffinity.simulate.plugins.tainttoleration import blocking_effects, tolerates

if TYPE_CHECKING:
    from kaffinity.k8s.model import Workload


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


class Statics:
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


def workload_shape(sim: Simulation, statics: Statics, workload: Workload) -> Shape:
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
    shape: Shape, statics: Statics, signature: tuple[Any, ...], kind: str, key: str, source: Any
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


def _exceeds(sim: Simulation, statics: Statics, signature: tuple[Any, ...], shape: Shape) -> Exceeds | None:
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
