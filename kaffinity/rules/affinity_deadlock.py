"""affinity-deadlock: workloads whose required pod affinity waits on each other, so none starts.

Upstream semantics (``satisfyPodAffinity`` in
``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go``; the 2015 design,
kubernetes/design-proposals-archive ``scheduling/podaffinity.md``, "Examples > Affinity", the
first-pod problem): a pod with required pod affinity is admitted
only on a node whose domain holds, for every term, an existing pod that matches *all* its
required affinity terms; the single exception is when no pod anywhere matches them all and the
incoming pod matches all its own terms. A cycle of workloads each needing a pod of the next,
none of them matching its own terms and no existing pod matching, can therefore never start.

The analysis is the graph's (:attr:`AffinityGraph.placement`, a least fixpoint, and
:meth:`AffinityGraph.deadlocks`): it counts a term as satisfiable by anything it *might*
match (an undeclared Namespace's labels), and the cluster file's existing pods as already
started, so a finding is only made when nothing known can break the cycle.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from kaffinity.findings import Related, Severity, Violation
from kaffinity.graph.members import RELATION_AFFINITY
from kaffinity.k8s.compact import MODEL_FIELDS
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.context import Context
    from kaffinity.graph.affinity import AffinityGraph
    from kaffinity.graph.members import Relation

#: How many workloads a message names before it says "and N more".
_NAMED = 3


def blocking_terms(graph: AffinityGraph, vertex: str) -> list[Relation]:
    """The required affinity terms that keep ``vertex`` from starting by itself.

    A workload starts by itself when its pods match all its own required affinity terms (the
    self-match exception of ``satisfyPodAffinity``), so the terms its own pods do not match
    are the ones to blame; a stuck workload has at least one. Every required term reaches every
    candidate (a single pod must match them all), so these terms all point to the next member.
    """
    terms = graph.terms(vertex, RELATION_AFFINITY, required=True)
    return [term for term in terms if vertex not in term.reach] or terms


def _names(graph: AffinityGraph, vertices: Sequence[str]) -> str:
    names = [str(graph.members[vertex]) for vertex in vertices[:_NAMED]]
    if len(vertices) > _NAMED:
        names.append(f"{len(vertices) - _NAMED} more")
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " or " + names[-1]


def cycle_text(graph: AffinityGraph, cycle: Sequence[str], start: int = 0) -> str:
    """``A needs a pod of B, which needs a pod of A``, starting at ``cycle[start]``."""
    order = [*cycle[start:], *cycle[:start], cycle[start]]
    names = [str(graph.members[vertex]) for vertex in order]
    return f"{names[0]} needs a pod of {names[1]}" + "".join(f", which needs a pod of {n}" for n in names[2:])


def _needs(graph: AffinityGraph, cycle: Sequence[str], index: int) -> str:
    after = cycle[(index + 1) % len(cycle)]
    return f"{graph.members[cycle[index]]} needs a pod of {graph.members[after]} (deadlock cycle)"


def _reaching(graph: AffinityGraph, cycles: list[list[str]]) -> dict[str, list[int]]:
    """The stuck workloads outside every cycle that wait on one, and which cycles they wait on.

    A workload is stuck behind a cycle when it can reach it in :meth:`AffinityGraph.requires`
    (an edge w → x when x could satisfy w, all of whose candidates are stuck). Workloads stuck
    only behind a term that matches nothing reach no cycle: affinity-no-match reports those.
    """
    needs = graph.requires()
    in_cycle = {vertex for cycle in cycles for vertex in cycle}
    waiting: dict[str, list[int]] = {}
    for index, cycle in enumerate(cycles):
        seen = set(cycle)
        queue = list(cycle)
        while queue:
            for waiter in needs.predecessors(queue.pop()):
                if waiter not in seen:
                    seen.add(waiter)
                    queue.append(waiter)
                    if waiter not in in_cycle:
                        waiting.setdefault(waiter, []).append(index)
    return waiting


def _check(context: Context) -> Iterator[Violation]:
    graph = context.graph
    cycles = graph.deadlocks()
    if not cycles:
        return
    existing = context.cluster is not None and context.cluster.has_pods
    why = "no pod of the cycle matches its own terms" + (
        ", and no existing pod matches them" if existing else ""
    )
    for cycle in cycles:
        who = "neither" if len(cycle) == 2 else "none"
        for index, vertex in enumerate(cycle):
            related = tuple(
                Related(term.doc, term.path, _needs(graph, cycle, other))
                for other, member in enumerate(cycle)
                if member != vertex
                for term in blocking_terms(graph, member)
            )
            message = (
                f"required pod affinity deadlock: {cycle_text(graph, cycle, index)}: {who} can be "
                f"scheduled first ({why})"
            )
            for term in blocking_terms(graph, vertex):
                yield Violation(term.doc, term.path, message, related, fix=_FIX)
    needs = graph.requires()
    for vertex, indexes in sorted(_reaching(graph, cycles).items(), key=lambda item: graph.order(item[0])):
        candidates = sorted(needs.successors(vertex), key=graph.order)
        deadlocks = "; and ".join(cycle_text(graph, cycles[i]) for i in indexes)
        which = "which can never start" if len(candidates) == 1 else "none of which can ever start"
        message = (
            f"required pod affinity waits on a deadlock: {graph.members[vertex]} needs a pod of "
            f"{_names(graph, candidates)}, {which}: {deadlocks} "
            f"(a required pod affinity deadlock{'s' if len(indexes) > 1 else ''})"
        )
        related = tuple(
            Related(term.doc, term.path, _needs(graph, cycles[i], k))
            for i in indexes
            for k, member in enumerate(cycles[i])
            for term in blocking_terms(graph, member)
        )
        for term in blocking_terms(graph, vertex):
            yield Violation(term.doc, term.path, message, related, fix=_WAITER_FIX)


_FIX = (
    "let one workload of the cycle start first: give its pods a label its own required affinity "
    "terms select (the self-match exception admits the first pod), or make one of these terms "
    "preferred (preferredDuringSchedulingIgnoredDuringExecution)"
)
_WAITER_FIX = "break the deadlock this workload waits on (see the related locations)"


RULE = Rule(
    name="affinity-deadlock",
    category="graph",
    severity=Severity.ERROR,
    summary="Workloads whose required pod affinity needs each other's pods, so none can start first.",
    check=_check,
    needs_all_manifests=True,
    docs="""\
## What it finds
A cycle of required pod affinity (A needs a pod of B, B needs a pod of A, …) in which no
member can be placed first: no member's pods match all of its own required affinity terms, and
no existing pod (from `--cluster`) matches them. Each member is reported at the required
affinity term(s) its own pods do not match, with the cycle spelled out from that member and
the other members' terms as related locations.

Workloads that are stuck only because everything they could follow is in such a cycle (or waits
on one) are reported too, naming the cycle. A workload stuck behind a term that matches
nothing at all is left to `affinity-no-match`.

## Why it matters
The scheduler admits a pod with required pod affinity only where a pod matching all of its
required affinity terms already runs in the term's topology domain (a single pod must match every
term). The one exception, added for the design doc's "first pod" problem
(kubernetes/design-proposals-archive `scheduling/podaffinity.md`, "Examples > Affinity"), is a pod
that matches all its own terms when no matching pod exists anywhere: it may start alone. In a
cycle where no member matches its own terms, every pod waits for another member's pod that will
never come: all stay `Pending` with "node(s) didn't match pod affinity rules"
(UnschedulableAndUnresolvable, so preemption does not help either).

The analysis is a least fixpoint: a workload can start if it matches its own terms, or if any
workload it could follow can start. A term that might match pods of a Namespace the input
does not declare counts as satisfiable; existing pods from the cluster file count as started.
Pods that already run in the cluster but are not in the input or cluster file can break a
cycle; pass `--cluster` with the running pods to take them into account.

## Example
```yaml
kind: Deployment
metadata: {name: a, namespace: shop}
spec:
  template:
    metadata: {labels: {app: a}}
    spec:
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: b}}    # a needs b
              topologyKey: kubernetes.io/hostname
---
kind: StatefulSet
metadata: {name: b, namespace: shop}
spec:
  template:
    metadata: {labels: {app: b}}
    spec:
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: a}}    # b needs a: neither starts
              topologyKey: kubernetes.io/hostname
```

## Fix
Let one member start first. Either make its pods match its own terms (for instance select a
label both workloads carry, `matchLabels: {stack: shop}`: the self-match exception then admits
its first pod and the others follow), or turn one of the terms into a preferred term
(`preferredDuringSchedulingIgnoredDuringExecution`), which never blocks scheduling.

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/scheduler/framework/plugins/interpodaffinity/filtering.go` (`satisfyPodAffinity`,
  `podMatchesAllAffinityTerms`): the first-pod exception
- kubernetes/design-proposals-archive `scheduling/podaffinity.md`, "Examples > Affinity"
""",
    reads=MODEL_FIELDS,
)
