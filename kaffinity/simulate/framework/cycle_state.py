"""One pod's scheduling cycle (``framework.CycleState``): the PreFilter states of the dynamic
plugins, their Filter in the profile's order, their Scores, and the choice of a node.

Choosing among feasible nodes is deterministic (the real scheduler breaks ties at random): the
highest of, in order, fewer untolerated PreferNoSchedule taints, the preferred node-affinity
weights, the preferred inter-pod (anti-)affinity weights per matching pod in the domain, fewer
matching pods in ScheduleAnyway spread domains, the most free cpu and memory (LeastAllocated,
counting a pod without requests as 100m / 200Mi as the scheduler's scoring does), then the
node name. Upstream sums weighted, normalised plugin scores; the order above keeps the plugins'
priorities and never changes which nodes are feasible, only which one is taken.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kaffinity.simulate.framework.profile import INTER_POD_AFFINITY, POD_TOPOLOGY_SPREAD
from kaffinity.simulate.framework.runtime import Framework
from kaffinity.simulate.framework.types import NodeHeap, SimNode, SimPod, Term
from kaffinity.simulate.plugins import interpodaffinity, nodeaffinity, podtopologyspread, tainttoleration

_DEFAULT = (0, 0, 0, 0, 0)
#: Nodes the heap tries before a pod with required inter-pod rules filters every node instead.
_HEAP_TRIES = 48


def _by_free(node: SimNode) -> tuple[float, str]:
    return (-node.free, node.name)


def fits_on(sim: Framework, pod: SimPod, node: SimNode) -> bool:
    """Whether every filter passes ``pod`` on ``node`` now."""
    return not CycleState(sim, pod, sim.anti_terms_for(pod)).filter(node)


class CycleState:
    """One pod's PreFilter state: the counts its dynamic filters and scores read."""

    def __init__(self, sim: Framework, pod: SimPod, anti_terms: Sequence[Term]) -> None:
        self.sim = sim
        self.pod = pod
        self._special: dict[SimNode, tuple[int, ...]] | None = None
        constraints = pod.constraints
        on = sim.filters
        # The kubelet admits a pod with spec.nodeName without these two (``_admit_reason``).
        self.ipa = INTER_POD_AFFINITY in on and not constraints.node_name
        self.pts = POD_TOPOLOGY_SPREAD in on and bool(constraints.spread) and not constraints.node_name
        self.inter_pod = interpodaffinity.PreFilterState(sim, pod, anti_terms, self.ipa)
        self.spread = podtopologyspread.PreFilterState(sim, pod, self.pts)

    def filter(self, node: SimNode) -> list[str]:
        """The dynamic filters on ``node``, in order; the first failing plugin's reasons."""
        reasons = self.sim.node_fit(self.pod.constraints, node)
        if reasons:
            return reasons
        if self.pts:
            reason = self.spread.filter_node(node)
            if reason:
                return [reason]
        if self.ipa:
            reason = self.inter_pod.filter_node(node)
            if reason:
                return [reason]
        return []

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

        for node, count in tainttoleration.score(sim, constraints).items():
            part(node)[0] -= count
        if constraints.node_preferred:
            for node, weight in nodeaffinity.score(sim, constraints).items():
                part(node)[1] += weight
        for (key, value), total in interpodaffinity.score(sim, constraints).items():
            if total:
                for node in sim.domain_nodes(key, value):
                    part(node)[2] += total
        podtopologyspread.score(sim, constraints, part)
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

    def choose(self, heap: NodeHeap, static: set[SimNode]) -> SimNode | bool | None:
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
        heap: NodeHeap,
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
        for term, counts in zip(constraints.anti, self.inter_pod.anti, strict=True):
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
        if not self.spread.hard:
            return None
        spread, counts, minimum, self_match = self.spread.hard[0]
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
        if not (self.ipa and constraints.affinity and self.inter_pod.affinity.total):
            return None
        key = constraints.affinity[0].topology_key
        return key, [
            value
            for (term_key, value), count in self.inter_pod.affinity_counts.items()
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
