"""InterPodAffinity (``pkg/scheduler/framework/plugins/interpodaffinity``).

Filter: the incoming pod's required affinity (one pod must match every term, with the first-pod
exception), its required anti-affinity, and the existing pods' required anti-affinity by
symmetry; namespaces and namespaceSelector as ``AffinityTerm.Matches``. Score: the preferred
inter-pod (anti-)affinity weights per matching pod in the domain.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from kaffinity.simulate.framework.snapshot import Snapshot, TermCounts
from kaffinity.simulate.framework.types import Constraints, SimNode, SimPod, Term

REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"


class PreFilterState:
    """InterPodAffinity's PreFilter state (pkg/scheduler/framework/plugins/interpodaffinity/filtering.go).

    existingAntiAffinityCounts: per placed pod's term selecting this pod, its holders by the
    value of its key; affinityCounts and antiAffinityCounts likewise, per term (the Filter reads
    each term's own key, so per-term counts answer as upstream's one map).
    """

    __slots__ = ("affinity", "affinity_counts", "anti", "existing_anti", "pod", "self_match")

    def __init__(self, sim: Snapshot, pod: SimPod, anti_terms: Sequence[Term], enabled: bool) -> None:
        self.pod = pod
        constraints = pod.constraints
        self.existing_anti: list[tuple[str, Counter[str]]] = []
        self.affinity = TermCounts(())
        self.anti: list[TermCounts] = []
        self.self_match = False
        if enabled:
            for term in anti_terms:
                self.existing_anti.append((term.topology_key, sim.anti_index.domains[term]))
            if constraints.affinity:
                self.affinity = sim.term_counts(constraints.affinity)
                # podMatchesAllAffinityTerms: the first pod of a series may match itself.
                own = sim.namespace_labels(pod.namespace)
                self.self_match = all(t.matches(pod, own) for t in constraints.affinity)
            self.anti = [sim.term_counts((term,)) for term in constraints.anti]
        self.affinity_counts = self.affinity.pairs

    def filter_node(self, node: SimNode) -> str | None:
        """Filter: the first of required affinity, required anti-affinity and existing pods'
        anti-affinity that ``node`` fails."""
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


def score(sim: Snapshot, constraints: Constraints) -> Counter[tuple[str, str]]:
    """(key, value) -> the weights of the preferred terms times the pods they match there
    (InterPodAffinity Score: +w per matching pod for affinity, -w for anti-affinity)."""
    totals: Counter[tuple[str, str]] = Counter()
    for terms, sign in ((constraints.preferred_affinity, 1), (constraints.preferred_anti, -1)):
        for term in terms:
            # The matching pods by domain, kept up to date (not counted again for each pod).
            for pair, count in sim.term_counts((term,)).pairs.items():
                if count:
                    totals[pair] += sign * term.weight * count
    return totals
