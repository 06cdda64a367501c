"""NodeAffinity (``pkg/scheduler/framework/plugins/nodeaffinity``).

Filter: ``nodeSelector`` and the required node affinity (terms ORed, expressions ANDed; Gt/Lt
compare integers; an empty term matches nothing). A DaemonSet pod pinned to its node: PreFilter
narrows the candidates to that node (a ``PreFilterResult``), every other node is absent
(:class:`AbsentNodes`). Score: the summed weights of the preferred terms a node matches.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from kaffinity.k8s.model import NodeSelectorTerm
from kaffinity.k8s.selectors import node_term_matches
from kaffinity.simulate.framework.types import Constraints, SimNode, node_term_key

if TYPE_CHECKING:
    from kaffinity.simulate.framework.snapshot import Snapshot

REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_PINNED = "node(s) didn't satisfy plugin(s) [NodeAffinity]"


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


def prefilter_nodes(terms: Sequence[NodeSelectorTerm] | None) -> frozenset[str] | None:
    """NodeAffinity's PreFilter result: the only nodes a pod's required terms can name, when
    every term has a ``matchFields`` requirement ``metadata.name In [...]`` (within a term the
    names are intersected, across terms united); None when some term leaves every node eligible
    (``PreFilter`` in pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go). A
    DaemonSet's pods carry exactly one such term, and so does a pod captured from a cluster."""
    if not terms:
        return None
    names: set[str] = set()
    for term in terms:
        named: set[str] | None = None
        for requirement in term.match_fields:
            if requirement.key == "metadata.name" and requirement.operator == "In":
                values = set(requirement.values)
                named = values if named is None else named & values
        if named is None:
            return None
        names |= named
    return frozenset(names)


def filter_node(constraints: Constraints, node: SimNode) -> str | None:
    """Filter: the reason when ``node`` is not the pinned one, or fails the node selector or the
    required terms."""
    if constraints.pinned is not None and constraints.pinned != node.name:
        return REASON_PINNED
    if not node_matches(constraints.node_selector, constraints.node_terms, node.labels, node.name):
        return REASON_NODE_AFFINITY
    return None


class AbsentNodes(Mapping[str, str]):
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


def score(sim: Snapshot, constraints: Constraints) -> dict[SimNode, int]:
    """Summed weights of the preferred node-affinity terms each node matches (nonzero only)."""
    key = tuple((weight, node_term_key(term)) for weight, term in constraints.node_preferred)
    found = sim.affinity_scores.get(key)
    if found is None:
        found = {}
        for node in sim.nodes:
            total = sum(
                weight
                for weight, term in constraints.node_preferred
                if node_term_matches(term, node.labels, node.name)
            )
            if total:
                found[node] = total
        sim.affinity_scores[key] = found
        sim.affinity_score_constraints[key] = constraints
    return found


def extend_score(sim: Snapshot, node: SimNode) -> None:
    """``node``, added to the cluster, in the preference sums already made."""
    for key, preferred in sim.affinity_scores.items():
        total = sum(
            weight
            for weight, term in sim.affinity_score_constraints[key].node_preferred
            if node_term_matches(term, node.labels, node.name)
        )
        if total:
            preferred[node] = total
