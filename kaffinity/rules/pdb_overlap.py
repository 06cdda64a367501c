"""pdb-overlap: pods that more than one PodDisruptionBudget selects cannot be evicted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kaffinity.explain.wording import SHOWN, name_list
from kaffinity.findings import MAX_RELATED, Related, Severity, Violation
from kaffinity.graph.affinity import AffinityGraph, ordered
from kaffinity.graph.members import RELATION_PDB, Member, Relation
from kaffinity.k8s.compact import MODEL_FIELDS
from kaffinity.rules.base import Rule
from kaffinity.validate.apiserver import budget_refused

if TYPE_CHECKING:
    from kaffinity.context import Context


def _selects(relation: Relation) -> bool:
    """Whether the budget selects pods at all as the API version it is written in defines it.

    policy/v1beta1 read an empty selector as "no pods" (policy/v1 changed it to "every pod of the
    namespace"; the PodDisruptionBudget API docs): the graph matches ``{}`` as v1 does.
    """
    selector = relation.selector
    if selector is None:  # nil selects nothing (policy/v1 PodDisruptionBudgetSpec.selector)
        return False
    api_version = relation.doc.data.get("apiVersion")
    return not (selector.is_empty and api_version == "policy/v1beta1")


def _has_pods(member: Member) -> bool:
    """A workload scaled to zero has no pods to evict (existing pods are pods)."""
    return member.workload is None or member.workload.replicas != 0


def _identity(graph: AffinityGraph, relation: Relation) -> tuple[str | None, str]:
    """A budget's namespace and name: two documents with the same are one object (variants of it,
    e.g. overlays or test fixtures linted together), never two budgets of one cluster."""
    ref = graph.pdbs[relation.owner].ref
    return ref.namespace, ref.name


#: Per matched set: the names of the members some other budget selects too ("" when none), the
#: budgets that select them (indices), and those budgets' identities by name.
_Overlap = tuple[str, list[int], dict[str, set[tuple[str | None, str]]]]


class _Budgets:
    """The budgets that exist, grouped by matched set.

    Budgets with the same matched set (the same selector in the same namespace, or one reaching
    every namespace) are grouped, and everything that depends on the set alone is worked out
    once per group: N workloads and N/10 budgets whose selectors all match each other cost N,
    plus the report's own size, not N².
    """

    def __init__(self, graph: AffinityGraph, budgets: list[Relation]) -> None:
        self.graph = graph
        self.budgets = budgets
        self.groups: dict[frozenset[str], list[int]] = {}
        for index, relation in enumerate(budgets):
            self.groups.setdefault(relation.matches, []).append(index)
        self.sets = list(self.groups)
        self.in_groups: dict[str, list[int]] = {}  # member -> the groups whose set holds it
        for group, matches in enumerate(self.sets):
            for node in matches:
                self.in_groups.setdefault(node, []).append(group)
        self.identities = [_identity(graph, relation) for relation in budgets]
        self._crowded: dict[tuple[int, ...], bool] = {}  # groups -> whether two identities differ
        self._overlaps: dict[frozenset[str], _Overlap] = {}

    def shared_by_many(self, member: Member) -> bool:
        """Whether budgets of two identities select ``member``."""
        key = tuple(self.in_groups[member.id])
        found = self._crowded.get(key)
        if found is None:
            found = self._crowded[key] = (
                len({self.identities[index] for group in key for index in self.groups[self.sets[group]]}) > 1
            )
        return found

    def overlap(self, matches: frozenset[str]) -> _Overlap:
        """The members of a matched set some other budget selects too (a budget's own identity is
        among any member's, so "another identity" is "two identities"), their names, and the
        budgets that select them; once per set."""
        found = self._overlaps.get(matches)
        if found is not None:
            return found
        shared = [
            member
            for member in ordered(self.graph, matches)
            if _has_pods(member) and self.shared_by_many(member)
        ]
        selecting = sorted(
            {
                index
                for group in {group for member in shared for group in self.in_groups[member.id]}
                for index in self.groups[self.sets[group]]
            }
        )
        identities_named: dict[str, set[tuple[str | None, str]]] = {}
        for index in selecting:
            identities_named.setdefault(self.identities[index][1], set()).add(self.identities[index])
        found = self._overlaps[matches] = (
            name_list(str(member) for member in shared) if shared else "",
            selecting,
            identities_named,
        )
        return found

    def others(
        self, selecting: list[int], me: tuple[str | None, str]
    ) -> tuple[list[Relation], dict[str, None]]:
        """The other budgets: the first few, and their names, so that N budgets selecting the
        same pods cost N x SHOWN, not N² (a report of hundreds of MB)."""
        others: list[Relation] = []
        shown: dict[str, None] = {}
        for index in selecting:
            if self.identities[index] != me:
                others.append(self.budgets[index])
                shown.setdefault(self.identities[index][1])
                if len(others) >= MAX_RELATED and len(shown) >= SHOWN:
                    break
        return others, shown


def _check(context: Context) -> Iterator[Violation]:
    graph = context.graph
    version = context.settings.kube_version
    # A budget the API server refuses (api-validation) never exists: it overlaps nothing.
    budgets = _Budgets(
        graph,
        [
            relation
            for relation in graph.relations
            if relation.kind == RELATION_PDB
            and _selects(relation)
            and not budget_refused(relation.doc.data, version)
        ],
    )
    for relation_index, relation in enumerate(budgets.budgets):
        me = budgets.identities[relation_index]
        shared_names, selecting, identities_named = budgets.overlap(relation.matches)
        if not shared_names:
            continue
        others, shown = budgets.others(selecting, me)
        # The count of the rest's names: distinct names of the set, less this budget's unless
        # another budget shares it.
        names = len(identities_named) - (identities_named[me[1]] == {me})
        yield _violation(graph, relation, shared_names, others, name_list(shown, total=names))


def _violation(
    graph: AffinityGraph, relation: Relation, shared_names: str, others: list[Relation], other_names: str
) -> Violation:
    # registry/core/pod/storage/eviction.go: a pod with more than one matching budget is
    # refused with HTTP 500; kubectl drain (staging/src/k8s.io/kubectl/pkg/drain) fails that pod
    # and stops.
    message = (
        f"this PodDisruptionBudget and {other_names} both select the pods of "
        f"{shared_names}: evicting such a pod fails with HTTP 500 "
        '"This pod has more than one PodDisruptionBudget, which the eviction subresource does not '
        'support", so draining their nodes (kubectl drain, node upgrades, cluster-autoscaler) fails'
    )
    related = tuple(
        Related(other.doc, other.path, f"PodDisruptionBudget {graph.pdbs[other.owner].ref.name}")
        for other in others[:MAX_RELATED]
    )
    fix = "make the selectors disjoint, or keep one PodDisruptionBudget for these pods"
    return Violation(relation.doc, relation.path, message, related=related, fix=fix)


RULE = Rule(
    name="pdb-overlap",
    category="graph",
    severity=Severity.WARNING,
    summary="Pods selected by more than one PodDisruptionBudget: the eviction API refuses them.",
    check=_check,
    needs_all_manifests=True,
    docs="""\
## What it finds
PodDisruptionBudgets whose selectors select the same pods (of a workload of the input, or
existing pods of a cluster file). Each budget involved is reported once, at its `spec.selector`,
naming the shared workloads and the other budgets. A workload scaled to zero has no pods and is
left out; a `policy/v1beta1` budget with an empty selector selects nothing (as that API version
defined it).

## Why it matters
The eviction API supports one budget per pod. For a pod that several budgets select it answers
HTTP 500 "This pod has more than one PodDisruptionBudget, which the eviction subresource does not
support" (kube-apiserver `registry/core/pod/storage/eviction.go`). `kubectl drain` treats that
as a failure for the pod: the node stays cordoned and the drain fails; node upgrades, the
cluster-autoscaler and descheduler, which all evict, are stuck on those pods too.

## Example
```yaml
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: web}}
---
kind: PodDisruptionBudget
metadata: {name: frontend}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {tier: frontend}}      # web's pods carry tier: frontend too
```

## Fix
Make the selectors disjoint (add the label that tells the workloads apart), or keep a single
budget for the pods they share.

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/registry/core/pod/storage/eviction.go`: more than one budget is refused (HTTP 500)
- `staging/src/k8s.io/kubectl/pkg/drain/drain.go`: kubectl drain gives up on that pod
""",
    reads=MODEL_FIELDS,
)
