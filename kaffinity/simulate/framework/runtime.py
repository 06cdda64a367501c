"""The framework's runtime (``pkg/scheduler/framework/runtime/framework.go``): the filter
plugins run in the profile's order, each node stopping at the first that fails
(``RunFilterPlugins``).

The static filters (NodeUnschedulable, NodeName, TaintToleration, NodeAffinity: what a node's
own labels, taints and cordon decide) run once per distinct pod signature and are kept, with
the nodes that pass them as heaps in LeastAllocated order; the dynamic ones (NodePorts,
NodeResourcesFit, then PodTopologySpread and InterPodAffinity in :class:`CycleState`) run per
pod. A node autoscaling adds or takes away updates these caches node by node.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kaffinity.k8s.model import Node, Taint, Toleration
from kaffinity.simulate.framework.profile import (
    NODE_AFFINITY,
    NODE_NAME,
    NODE_PORTS,
    NODE_UNSCHEDULABLE,
    TAINT_TOLERATION,
    VOLUME_BINDING,
    VOLUME_ZONE,
)
from kaffinity.simulate.framework.snapshot import Snapshot
from kaffinity.simulate.framework.types import Constraints, NodeHeap, Placement, SimNode, Spread
from kaffinity.simulate.plugins import (
    nodeaffinity,
    nodename,
    nodeports,
    noderesources,
    nodeunschedulable,
    podtopologyspread,
    tainttoleration,
    volumezone,
)
from kaffinity.simulate.plugins.nodeaffinity import (
    REASON_NODE_AFFINITY,
    REASON_PINNED,
    AbsentNodes,
    node_matches,
)

if TYPE_CHECKING:
    from kaffinity.simulate.plugins.volumebinding import PodClaims


class Framework(Snapshot):
    """The snapshot with the filter plugins run over it, and what they computed kept."""

    def __init__(self, nodes: Sequence[Node], **snapshot: Any) -> None:
        """``snapshot``: :class:`Snapshot`'s keywords, typed where a simulation is made
        (:class:`~kaffinity.simulate.framework.schedule_one.Simulation`)."""
        super().__init__(nodes, **snapshot)
        self._static: dict[tuple[Any, ...], tuple[list[SimNode], Mapping[str, str]]] = {}
        #: signature -> how many nodes fail the static filters for each reason
        self._static_counts: dict[tuple[Any, ...], Counter[str]] = {}
        self._heaps: dict[tuple[Any, ...], NodeHeap] = {}
        self._static_sets: dict[tuple[Any, ...], set[SimNode]] = {}
        #: (signature, label) -> the label's values on the nodes passing the static filters, and
        #: whether every such node carries it
        self._static_values: dict[tuple[tuple[Any, ...], str], tuple[set[str], list[bool]]] = {}
        #: signature -> a Rules of that signature (to extend the caches to a node added later)
        self._static_constraints: dict[tuple[Any, ...], Constraints] = {}
        #: id(constraints) -> (cluster version, placement) of the last pod of that template found Pending
        self._pending: dict[int, tuple[int, Placement]] = {}

    # -- the static filters ------------------------------------------------------------------

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
                reasons = AbsentNodes(self.by_name, constraints.pinned if node is not None else None, own)
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
        reason = None
        if NODE_UNSCHEDULABLE in on:
            reason = nodeunschedulable.filter_node(constraints, node)
        if reason is None and NODE_NAME in on:
            reason = nodename.filter_node(constraints, node)
        if reason is None and TAINT_TOLERATION in on:
            reason = tainttoleration.filter_node(constraints, node, self.version, self.comparison)
        if reason is None and NODE_AFFINITY in on:
            reason = nodeaffinity.filter_node(constraints, node)
        return reason

    def _admit_reason(self, constraints: Constraints, node: SimNode) -> str | None:
        """A pod with ``spec.nodeName`` never meets the scheduler: the kubelet of that node admits
        it (pkg/kubelet/lifecycle/predicate.go ``Admit``) when the scheduler's general filters
        pass (NodeName, NodePorts, NodeAffinity, NodeResourcesFit; the last two are dynamic and
        checked in :meth:`node_fit`) and no NoExecute taint is untolerated. A cordon and
        NoSchedule taints do not stop it (kubernetes/kubernetes#114654); a NoExecute taint makes
        the kubelet reject it, and its controller creates another, forever (#75913)."""
        on = self.filters
        if NODE_NAME in on and constraints.node_name != node.name:
            return nodename.REASON_NODE_NAME
        if TAINT_TOLERATION in on:
            effects = tainttoleration.blocking_effects(constraints)
            reason = tainttoleration.filter_node(constraints, node, self.version, self.comparison, effects)
            if reason is not None:
                return reason
        if NODE_AFFINITY in on and not node_matches(
            constraints.node_selector, constraints.node_terms, node.labels, node.name
        ):
            return REASON_NODE_AFFINITY
        return None

    def untolerated(
        self,
        tolerations: Sequence[Toleration],
        taints: Sequence[Taint],
        effects: tuple[str, ...] = tainttoleration.BLOCKING,
    ) -> Taint | None:
        """The first NoSchedule / NoExecute taint nothing tolerates (TaintToleration)."""
        return tainttoleration.untolerated(tolerations, taints, self.comparison, effects)

    # -- the dynamic filters -----------------------------------------------------------------

    def node_fit(self, constraints: Constraints, node: SimNode) -> list[str]:
        """NodePorts, then NodeResourcesFit: the first one's reasons; empty when the pod fits."""
        if (
            constraints.ports
            and NODE_PORTS in self.filters
            and nodeports.port_conflict(constraints.ports, node.ports)
        ):
            return nodeports.PORTS
        reasons = noderesources.filter_node(self, constraints, node)
        if reasons or constraints.claims is None:
            return reasons
        return self.volume_fit(constraints.claims, node)

    # -- the volume plugins (VolumeBinding, VolumeZone) ----------------------------------------

    def prefilter(self, constraints: Constraints) -> str | None:
        """Why admission or a PreFilter plugin refuses the pod for every node: the RuntimeClass
        admission plugin, then VolumeBinding's and VolumeZone's PreFilter, in the profile's order
        (``RunPreFilterPlugins`` stops at the first rejection); None when none does."""
        if constraints.refused is not None:
            return constraints.refused
        claims = constraints.claims
        if claims is None:
            return None
        if VOLUME_BINDING in self.filters:
            refused = claims.prefilter()
            if refused is not None:
                return refused
        if VOLUME_ZONE in self.filters:
            zones = volumezone.topologies(claims)
            if isinstance(zones, str):
                return zones
        return None

    def volume_fit(self, claims: PodClaims, node: SimNode) -> list[str]:
        """VolumeBinding's Filter, then VolumeZone's: the first one's reasons."""
        if VOLUME_BINDING in self.filters:
            reasons = claims.filter_node(node)
            if reasons:
                return reasons
        if VOLUME_ZONE in self.filters:
            zones = volumezone.topologies(claims)
            reason = volumezone.filter_node(zones, node) if not isinstance(zones, str) else None
            if reason is not None:
                return [reason]
        return []

    def spread_nodes(
        self, constraints: Constraints, spread: Spread
    ) -> tuple[frozenset[SimNode], frozenset[str]]:
        """The nodes whose pods count for ``spread`` and the domains they make (PodTopologySpread
        PreFilter)."""
        return podtopologyspread.spread_nodes(self, constraints, spread)

    # -- what the static filters leave, kept -------------------------------------------------

    def static_set(self, constraints: Constraints) -> set[SimNode]:
        key = constraints.signature()
        found = self._static_sets.get(key)
        if found is None:
            found = self._static_sets[key] = set(self.static_filter(constraints)[0])
        return found

    def heap(self, constraints: Constraints, static: list[SimNode]) -> NodeHeap:
        key = constraints.signature()
        heap = self._heaps.get(key)
        if heap is None:
            heap = self._heaps[key] = NodeHeap(static)
        return heap

    def domain_heap(self, constraints: Constraints, static: set[SimNode], key: str, value: str) -> NodeHeap:
        """The nodes of one topology domain that pass ``constraints``' static filters, as a heap."""
        signature = (constraints.signature(), key, value)
        heap = self._heaps.get(signature)
        if heap is None:
            heap = self._heaps[signature] = NodeHeap(n for n in self.domain_nodes(key, value) if n in static)
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

    # -- nodes added and taken away (autoscaling) --------------------------------------------

    def _extend_caches(self, node: SimNode) -> None:
        """The node-derived caches with one more node, without computing them again: a scale-up
        adds nodes one at a time, and starting afresh each time was quadratic in nodes added."""
        self._version += 1
        heaps_by_signature = self._heaps_by_signature()
        for signature, (passed, reasons) in self._static.items():
            if isinstance(reasons, AbsentNodes):  # a pinned pod: every other node is absent
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
        self.spread_nodes_cache.clear()
        self.spread_counts_cache.clear()

    def _heaps_by_signature(self) -> dict[tuple[Any, ...], list[tuple[tuple[Any, ...], NodeHeap]]]:
        """The node heaps by the pod signature they serve (a heap of one domain, keyed
        (signature, topology key, value), under its signature)."""
        found: dict[tuple[Any, ...], list[tuple[tuple[Any, ...], NodeHeap]]] = {}
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
        heaps: Iterable[tuple[tuple[Any, ...], NodeHeap]],
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
            self.prefer_tainted.append(node)
            self._prefer_taints = True
            self.taint_scores.clear()
        nodeaffinity.extend_score(self, node)

    def _shrink_caches(self, node: SimNode) -> None:
        """The node-derived caches without ``node`` (the last added, no pod left on it)."""
        self._version += 1
        node.version += 1  # every heap entry of it goes stale
        node.heaps.clear()
        for signature, (passed, reasons) in self._static.items():
            if isinstance(reasons, AbsentNodes):
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
        if node in self.prefer_tainted:
            self.prefer_tainted.remove(node)
            self._prefer_taints = bool(self.prefer_tainted)
            self.taint_scores.clear()
        for preferred in self.affinity_scores.values():
            preferred.pop(node, None)
        self._static_values.clear()
        self.spread_nodes_cache.clear()
        self.spread_counts_cache.clear()
