"""PodTopologySpread (``pkg/scheduler/framework/plugins/podtopologyspread``).

PreFilter: ``DoNotSchedule`` constraints, counted as the plugin's PreFilter does: nodes carrying
every constraint's key, honouring nodeAffinityPolicy / nodeTaintsPolicy; pods of the incoming
pod's namespace, not terminating, matching the (merged) selector; ``minDomains``. Filter:
``skew = count + selfMatch - min``. Score: fewer matching pods in ScheduleAnyway domains, nodes
lacking a ScheduleAnyway key last.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from kaffinity.k8s.model import TopologySpreadConstraint
from kaffinity.k8s.selectors import selector_matches
from kaffinity.simulate.framework.types import Constraints, SimNode, SimPod, Spread
from kaffinity.simulate.plugins.nodeaffinity import node_matches
from kaffinity.simulate.plugins.tainttoleration import untolerated

if TYPE_CHECKING:
    from kaffinity.expand.merge import WorkloadExpansion
    from kaffinity.simulate.framework.snapshot import Snapshot

REASON_SPREAD_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"
REASON_SPREAD = "node(s) didn't match pod topology spread constraints"


def spread_of(expansion: WorkloadExpansion, constraint: TopologySpreadConstraint) -> Spread:
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


def spread_nodes(
    sim: Snapshot, constraints: Constraints, spread: Spread
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
    found = sim.spread_nodes_cache.get(key)
    if found is None:
        nodes = []
        for node in sim.nodes:
            # nodeLabelsMatchSpreadConstraints: every hard constraint's key, else skipped.
            if not all(k in node.labels for k in keys):
                continue
            # nodeAffinityPolicy Honor: the pod's required node affinity as the scheduler reads
            # it (GetRequiredNodeAffinity). A DaemonSet's pod has its required terms replaced by
            # its node's name (ReplaceDaemonSetPodNodeNameNodeAffinity, pkg/controller/daemon/
            # util), so only that node counts.
            if spread.honor_affinity and (
                (constraints.pinned is not None and node.name != constraints.pinned)
                or not node_matches(constraints.node_selector, constraints.node_terms, node.labels, node.name)
            ):
                continue
            if (
                spread.honor_taints
                and untolerated(constraints.tolerations, node.taints, sim.comparison) is not None
            ):
                continue
            nodes.append(node)
        domains = frozenset(node.labels[spread.topology_key] for node in nodes)
        found = sim.spread_nodes_cache[key] = (frozenset(nodes), domains)
    return found


def spread_counts(sim: Snapshot, namespace: str, spread: Spread, nodes: Iterable[SimNode]) -> Counter[str]:
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


def counted(sim: Snapshot, namespace: str, spread: Spread, nodes: frozenset[SimNode]) -> Counter[str]:
    """:func:`spread_counts`, counted once per constraint and then kept up to date from the
    binds and unbinds since: a Deployment of P pods spread over its own pods counted every
    placed pod for each new one (P²: 3,000 pods, 36 s). Read-only for the caller."""
    key = (namespace, id(spread), id(nodes))
    found = sim.spread_counts_cache.get(key)
    if found is None:
        counts = spread_counts(sim, namespace, spread, nodes)
        sim.spread_counts_cache[key] = (spread, nodes, counts, len(sim.log))
        return counts
    _, _, counts, seen = found
    selector = spread.selector
    if seen < len(sim.log) and selector is not None and not selector.is_empty:
        topology_key = spread.topology_key
        for pod, node, delta in sim.log[seen:]:
            if (
                node in nodes
                and not pod.terminating
                and pod.namespace == namespace
                and selector_matches(selector, pod.labels)
            ):
                counts[node.labels[topology_key]] += delta
    sim.spread_counts_cache[key] = (spread, nodes, counts, len(sim.log))
    return counts


def counts_for(
    sim: Snapshot, constraints: Constraints, spread: Spread
) -> tuple[Counter[str], frozenset[str]]:
    """The matching pods per domain of ``spread`` on the nodes it counts, and its domains."""
    eligible, domains = spread_nodes(sim, constraints, spread)
    return counted(sim, constraints.namespace, spread, eligible), domains


class PreFilterState:
    """PodTopologySpread's PreFilter state (``calPreFilterState`` in
    pkg/scheduler/framework/plugins/podtopologyspread/filtering.go): per DoNotSchedule
    constraint, the counts per domain, the minimum (0 below ``minDomains``), and whether the pod
    matches its own selector."""

    __slots__ = ("hard",)

    def __init__(self, sim: Snapshot, pod: SimPod, enabled: bool) -> None:
        self.hard: list[tuple[Spread, Counter[str], int, bool]] = []
        if enabled:
            for spread in pod.constraints.spread:
                counts, domains = counts_for(sim, pod.constraints, spread)
                if len(domains) < spread.min_domains:
                    minimum = 0
                else:
                    minimum = min((counts.get(d, 0) for d in domains), default=0)
                self_match = selector_matches(spread.selector, pod.labels)
                self.hard.append((spread, counts, minimum, self_match))

    def filter_node(self, node: SimNode) -> str | None:
        """Filter: a missing key, else the first constraint whose skew ``node`` would exceed."""
        labels = node.labels
        for spread, _, _, _ in self.hard:
            if spread.topology_key not in labels:
                return REASON_SPREAD_LABEL
        for spread, counts, minimum, self_match in self.hard:
            skew = counts.get(labels[spread.topology_key], 0) + int(self_match) - minimum
            if skew > spread.max_skew:
                return REASON_SPREAD
        return None


def score(sim: Snapshot, constraints: Constraints, bonus: Callable[[SimNode], list[int]]) -> None:
    """Score (ScheduleAnyway constraints): -1 in slot 3 for each key a node lacks, minus the
    matching pods of its domain in slot 4 (the bonus layout of ``CycleState.special``)."""
    for spread in constraints.soft_spread:
        for node in sim.missing(spread.topology_key):
            bonus(node)[3] -= 1
        for value, count in counts_for(sim, constraints, spread)[0].items():
            for node in sim.domain_nodes(spread.topology_key, value):
                bonus(node)[4] -= count
