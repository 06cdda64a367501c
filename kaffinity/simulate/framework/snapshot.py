"""The cluster as the scheduler sees it (``internal/cache`` ``Snapshot``, ``framework.NodeInfo``):
the nodes and the pods bound on them, kept current bind by bind, with the indexes every plugin
reads instead of scanning (placed pods by label, existing pods' anti-affinity terms by what they
select, nodes by label value) and the counts kept up to date from a log of binds and unbinds.

Nothing here is quadratic in pods x nodes where an index does: placed pods are indexed by label
(candidates for a selector come from the label index), existing pods' anti-affinity terms are
indexed by the labels they select.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kaffinity.k8s import gates as fg
from kaffinity.k8s.model import LabelSelector, Node
from kaffinity.k8s.selectors import NAMESPACE_NAME_LABEL
from kaffinity.simulate.framework.profile import NODE_RESOURCES_FIT
from kaffinity.simulate.framework.types import (
    Constraints,
    SimNode,
    SimPod,
    Spread,
    Term,
    release_port,
    sim_node,
)

if TYPE_CHECKING:
    from kaffinity.k8s.model import PodDisruptionBudget
    from kaffinity.simulate.storage import Storage


class LabelIndex:
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


class TermIndex:
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


class TermCounts:
    """Pods matching all of some pod affinity terms, per (topology key, value) of each term's
    key; ``total`` is 0 exactly when no matching pod is in any domain (an empty map upstream)."""

    __slots__ = ("pairs", "terms", "total")

    def __init__(self, terms: tuple[Term, ...]) -> None:
        self.terms = terms
        self.pairs: Counter[tuple[str, str]] = Counter()
        self.total = 0

    def count(self, sim: Snapshot, pod: SimPod, node: SimNode, delta: int) -> None:
        ns_labels = sim.namespace_labels(pod.namespace)
        if not all(term.matches(pod, ns_labels) for term in self.terms):
            return
        for term in self.terms:
            value = node.labels.get(term.topology_key)
            if value is not None:
                self.pairs[(term.topology_key, value)] += delta
                self.total += delta


class Snapshot:
    """A cluster's nodes and pods, bound and unbound one at a time, and their indexes."""

    def __init__(
        self,
        nodes: Sequence[Node],
        *,
        version: str,
        gates: Mapping[str, bool] | None,
        namespaces: Mapping[str, Mapping[str, str]] | None,
        filters: Iterable[str],
        pdbs: Sequence[PodDisruptionBudget],
        storage: Storage | None = None,
    ) -> None:
        self.version = version
        #: PVs, PVCs, StorageClasses and RuntimeClasses (the volume plugins, RuntimeClass admission)
        self.storage = storage
        self.pdbs = tuple(pdbs)
        #: the budgets that can protect a pod, by namespace (an empty selector protects nothing
        #: in preemption), so that a victim is matched against its namespace's budgets only
        self.pdbs_by_namespace: dict[str, list[PodDisruptionBudget]] = {}
        for pdb in self.pdbs:
            if pdb.selector is not None and not pdb.selector.is_empty:
                self.pdbs_by_namespace.setdefault(pdb.ref.namespace or "default", []).append(pdb)
        self.gates = dict(gates or {})
        self.filters = frozenset(filters)
        self.fit = NODE_RESOURCES_FIT in self.filters
        self.comparison = fg.gate_state(fg.TOLERATION_COMPARISON, version, self.gates).enabled
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
        self._pods = LabelIndex()
        self.anti_index = TermIndex()
        #: priority -> bound pods of that priority (preemption needs a lower one somewhere)
        self._priorities: Counter[int] = Counter()
        #: the node preemption is trying pods out on: its heap entries are refreshed once, after
        self._trial: SimNode | None = None
        self._version = 0
        #: Every bind (+1) and unbind (-1), in order: cached spread counts catch up from it.
        self.log: list[tuple[SimPod, SimNode, int]] = []
        #: tuple(map(id, terms)) -> (placed pods matching them all by domain, log position)
        #: (pod counts per domain do not change when an empty node comes or goes)
        self._term_cache: dict[tuple[int, ...], tuple[TermCounts, int]] = {}
        self._node_caches()

    def _node_caches(self) -> None:
        """The node-derived caches of the snapshot and the plugins' scores, built on first use
        (autoscaling keeps them current node by node: ``Framework._extend_caches``,
        ``Framework._shrink_caches``)."""
        # TaintToleration's Score: the nodes with a PreferNoSchedule taint, counts per tolerations.
        self.prefer_tainted = [n for n in self.nodes if any(t.effect == "PreferNoSchedule" for t in n.taints)]
        self._prefer_taints = bool(self.prefer_tainted)
        self.taint_scores: dict[tuple[Any, ...], dict[SimNode, int]] = {}
        self._domains: dict[str, dict[str, list[SimNode]]] = {}
        self._missing: dict[str, list[SimNode]] = {}
        # NodeAffinity's Score: preferred weights per node, per set of preferred terms.
        self.affinity_scores: dict[tuple[Any, ...], dict[SimNode, int]] = {}
        self.affinity_score_constraints: dict[tuple[Any, ...], Constraints] = {}
        # PodTopologySpread's PreFilter: the counted nodes and domains, and the counts.
        self.spread_nodes_cache: dict[tuple[Any, ...], tuple[frozenset[SimNode], frozenset[str]]] = {}
        #: (namespace, id(spread), id(nodes)) -> (spread, nodes, counts, log position)
        self.spread_counts_cache: dict[
            tuple[str, int, int], tuple[Spread, frozenset[SimNode], Counter[str], int]
        ] = {}

    # -- pods --------------------------------------------------------------------------------

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        return self._namespaces.get(namespace) or {NAMESPACE_NAME_LABEL: namespace}

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
            self.anti_index.add(term, node)
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
            # NodeInfo.RemovePod: HostPortInfo.Remove frees the port even if another pod of
            # the node holds it too.
            release_port(node.ports, protocol, ip, port)
        self._pods.remove(pod)
        self._priorities[pod.constraints.priority] -= 1
        if not self._priorities[pod.constraints.priority]:
            del self._priorities[pod.constraints.priority]
        for term in pod.constraints.anti:
            self.anti_index.remove(term, node)
        self._logged(pod, node, -1)
        self._changed(node)

    def _logged(self, pod: SimPod, node: SimNode, delta: int) -> None:
        if len(self.log) > max(65_536, 4 * len(self._pods.all)):
            # Counts too far behind cost more to catch up than to count again: start afresh
            # (amortized, each event is read a bounded number of times; the log stays small).
            self.log.clear()
            self.spread_counts_cache.clear()
            self._term_cache.clear()
        self.log.append((pod, node, delta))

    def _changed(self, node: SimNode) -> None:
        self._version += 1
        node.refresh()
        node.version += 1
        if self._trial is not node:
            for heap in node.heaps:
                heap.push(node)

    # -- placing -----------------------------------------------------------------------------

    # -- indexes -----------------------------------------------------------------------------

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

    def domain_values(self, key: str) -> list[str]:
        """The values of label ``key`` among the nodes, in the order nodes first carry them."""
        self.domain_nodes(key, "")
        return list(self._domains[key])

    def anti_terms_for(self, pod: SimPod) -> list[Term]:
        """Placed pods' required anti-affinity terms that select ``pod`` (symmetry)."""
        ns_labels = self.namespace_labels(pod.namespace)
        return [
            term
            for term in self.anti_index.candidates(pod.labels)
            if self.anti_index.holders.get(term) and term.matches(pod, ns_labels)
        ]

    def candidates(self, selector: LabelSelector | None) -> Iterable[SimPod]:
        return self._pods.candidates(selector)

    def term_counts(self, terms: tuple[Term, ...]) -> TermCounts:
        """The placed pods matching every one of ``terms``, per domain of each term's key
        (InterPodAffinity PreFilter), counted once and then kept up to date from the binds and
        unbinds since (each pod counted every placed pod: 3,000 pods with hostname
        anti-affinity on 5,000 nodes took 22 s). Read-only for the caller."""
        key = tuple(map(id, terms))
        found = self._term_cache.get(key)
        if found is None:
            counts = TermCounts(terms)
            for other in self.candidates(terms[0].selector):
                if other.node is not None:
                    counts.count(self, other, other.node, 1)
        else:
            counts, seen = found
            for pod, node, delta in self.log[seen:]:
                counts.count(self, pod, node, delta)
        self._term_cache[key] = (counts, len(self.log))
        return counts
