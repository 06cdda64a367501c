"""affinity-conflict: required pod affinity that required pod anti-affinity makes impossible.

Upstream semantics (InterPodAffinity ``Filter``,
``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go``): a pod with required affinity
must share, for every term, the term's topology domain with a pod matching *all* its required
affinity terms (step 1). It may not share a domain of its own required anti-affinity terms with
a pod they match (step 2), nor the domain of an existing pod's required anti-affinity term that
matches it (step 3: anti-affinity is symmetric, design doc "A comment on symmetry"). When
sharing the affinity domain implies sharing the anti-affinity one (same key, or hostname ⊂ zone
⊂ region: :func:`kaffinity.graph.affinity.within`) for every pod that could satisfy the affinity, no node
passes all three steps.

Only certain matches block (``Relation.matches``, never ``maybe``): a term that might match
through an undeclared Namespace's labels is not assumed to.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kaffinity.explain.precedence import refused
from kaffinity.findings import Related, Severity, Violation
from kaffinity.graph.members import RELATION_AFFINITY, RELATION_ANTI_AFFINITY, selector_text, within
from kaffinity.k8s.compact import MODEL_FIELDS
from kaffinity.k8s.labels import HOSTNAME
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.context import Context
    from kaffinity.graph.affinity import AffinityGraph
    from kaffinity.graph.members import Listing, Member, Relation

#: How many workloads or reasons a message names before it says "and N more".
_NAMED = 3

_DOMAINS = {
    HOSTNAME: "node",
    "topology.kubernetes.io/zone": "zone",
    "failure-domain.beta.kubernetes.io/zone": "zone",
    "topology.kubernetes.io/region": "region",
    "failure-domain.beta.kubernetes.io/region": "region",
}


def _domain(key: str) -> str:
    return _DOMAINS.get(key, f"{key} domain")


def _place(key: str) -> str:
    """Where a term puts the pod: ``on the node of``, ``in the zone of``."""
    return "on the node of" if key == HOSTNAME else f"in the {_domain(key)} of"


@dataclass(frozen=True, slots=True)
class Block:
    """A required anti-affinity term that keeps the pod out of a candidate's domain."""

    relation: Relation
    symmetric: bool  # the candidate's own term (satisfyExistingPodsAntiAffinity), not the pod's


def blocks(graph: AffinityGraph, vertex: str, candidate: str, key: str) -> list[Block]:
    """Why a pod of ``vertex`` cannot share the ``key`` domain of a pod of ``candidate``.

    (i) ``vertex``'s own required anti-affinity matches the candidate (Filter step 2); (ii) the
    candidate's required anti-affinity matches ``vertex``'s pods (step 3, symmetry). Either
    blocks only if sharing the ``key`` domain implies sharing the anti-affinity term's domain.
    Existing pods' terms are not in the graph, so they never block through symmetry here.
    """
    found = [
        Block(anti, False)
        for anti in graph.terms(vertex, RELATION_ANTI_AFFINITY, required=True)
        if candidate in anti.matches and anti.topology_key and within(key, anti.topology_key)
    ]
    if candidate != vertex:
        found += [
            Block(anti, True)
            for anti in graph.terms(candidate, RELATION_ANTI_AFFINITY, required=True)
            if vertex in anti.matches and anti.topology_key and within(key, anti.topology_key)
        ]
    return found


def _short(member: Member) -> str:
    return member.workload.ref.name if member.workload is not None else str(member)


def _reason(graph: AffinityGraph, block: Block) -> str:
    anti = block.relation
    key = anti.topology_key or ""
    selected = selector_text(anti.selector)
    if block.symmetric:
        owner = _short(graph.members[anti.owner])
        return (
            f"{owner}'s required anti-affinity ({key}) keeps pods with {selected} out of its "
            f"{_domain(key)} (anti-affinity is symmetric)"
        )
    return (
        f"its own required anti-affinity ({key}) keeps it out of the {_domain(key)} of pods with {selected}"
    )


def _listed(items: Sequence[str], last: str) -> str:
    shown = list(items[:_NAMED])
    if len(items) > _NAMED:
        shown.append(f"{len(items) - _NAMED} more")
    if len(shown) == 1:
        return shown[0]
    return ", ".join(shown[:-1]) + f" {last} " + shown[-1]


def _unique(found: Iterator[Block]) -> list[Block]:
    seen: dict[int, Block] = {}
    for block in found:
        seen.setdefault(id(block.relation), block)
    return list(seen.values())


def _pool(listing: Listing, vertex: str, self_match: bool) -> Iterator[str]:
    """Who ``vertex``'s pods could join: the others in canonical order, then itself if it may
    follow itself (the self-match exception)."""
    yield from (other for other in listing.ids_in_order() if other != vertex)
    if self_match:
        yield vertex


def _check(context: Context) -> Iterator[Violation]:
    graph = context.graph
    startable = graph.startable
    gone = refused(context)  # never created: api-validation's finding says why, once
    for member in graph.workloads():
        vertex = member.id
        workload = member.workload
        assert workload is not None
        if id(workload.doc) in gone:
            continue
        if vertex not in startable.candidates:
            continue  # no required pod affinity
        candidates = startable.candidates[vertex]  # itself included when its terms match it
        if len(candidates) == (vertex in candidates) and vertex not in startable.self_match:
            continue  # the terms match nothing together: affinity-no-match says so
        # The others in canonical order, sorted once per distinct set (graph.listing), and walked
        # only until one can be joined: N workloads whose terms match each other cost N, not N².
        listing = graph.listing(candidates)
        for term in graph.terms(vertex, RELATION_AFFINITY, required=True):
            key = term.topology_key
            if not key:
                continue  # API validation rejects an empty topologyKey (validatePodAffinityTerm)
            why: dict[str, list[Block]] = {}
            for candidate in _pool(listing, vertex, vertex in startable.self_match):
                why[candidate] = blocks(graph, vertex, candidate, key)
                if not why[candidate]:
                    break  # this pod can join that candidate: the term can hold
            else:
                others = [other for other in listing.ids_in_order() if other != vertex]
                violation = _violation(graph, term, workload.replicas, vertex, others, why)
                if violation is not None:
                    yield violation
                break  # one finding per workload: the first term (in order) that cannot hold


def _violation(
    graph: AffinityGraph,
    term: Relation,
    replicas: int | None,
    vertex: str,
    others: list[str],
    why: dict[str, list[Block]],
) -> Violation | None:
    key = term.topology_key or ""
    found = _unique(block for candidate in why for block in why[candidate])
    reasons = _listed([_reason(graph, block) for block in found], "and")
    related = tuple(
        Related(
            block.relation.doc,
            block.relation.path,
            f"{graph.members[block.relation.owner]}'s required anti-affinity that blocks it",
        )
        for block in found
    )
    if not others:
        # Only its own pods can satisfy the term. The first pod starts anyway: no pod matches
        # the terms yet and it matches them itself (the self-match exception of
        # satisfyPodAffinity; design doc "Examples > Affinity"), and no pod exists for the
        # anti-affinity to count. Each later pod must join one it may not join.
        if replicas is None or replicas <= 1:
            return None  # one pod (DaemonSets: one per node, replicas unknown): nothing stays Pending
        message = (
            f"required pod affinity puts each pod {_place(key)} another pod of this workload, but {reasons}: "
            f"the first pod starts (the self-match exception), the other {replicas - 1} stay Pending"
        )
    else:
        target = _listed([str(graph.members[other]) for other in others], "or")
        if len(others) > 1:
            target = "a pod of " + target
        message = f"required pod affinity puts this pod {_place(key)} {target}, but {reasons}: "
        if vertex in why:
            message += (
                "only a first pod started before any of them exists can run (the self-match exception); "
                "every other pod stays Pending"
            )
        else:
            message += "it can never be scheduled"
    return Violation(term.doc, term.path, message, related, fix=_FIX)


_FIX = (
    "make the two compatible: keep the affinity's topology domain larger than the anti-affinity's "
    "(e.g. affinity on topology.kubernetes.io/zone with anti-affinity on kubernetes.io/hostname), "
    "narrow the anti-affinity selector so it does not match these pods, or make one of the terms preferred"
)


RULE = Rule(
    name="affinity-conflict",
    category="graph",
    severity=Severity.ERROR,
    summary="Required pod affinity that required pod anti-affinity (own or symmetric) makes impossible.",
    check=_check,
    needs_all_manifests=True,
    docs="""\
## What it finds
A workload with required pod affinity whose every possible partner is ruled out by required
pod anti-affinity in a domain the affinity implies:

- **nested domains**: the pod must run on the node of a pod of B (`kubernetes.io/hostname`),
  but its own required anti-affinity keeps it out of the *zone* of B's pods. Sharing a node
  means sharing its zone and region (hostname ⊂ zone ⊂ region; equal keys count too);
- **symmetry**: the pod must share a node (or zone) with B's pods, and B's required
  anti-affinity keeps pods with this pod's labels out of its node (or a larger domain);
- **its own pods**: affinity to its own pods on a domain its own anti-affinity forbids. The
  first pod still starts (no pod matches yet, the self-match exception); the rule reports this
  only when the workload runs more than one pod, since the others stay `Pending`.

The finding is on the affinity term, with the blocking anti-affinity term(s) as related
locations. Only certain matches count: a term that might match pods through labels of a
Namespace the input does not declare is not assumed to. A term that matches nothing at all is
left to `affinity-no-match`.

## Why it matters
The scheduler filters nodes in three steps (interpodaffinity `Filter`): the incoming pod's
required affinity (a pod matching all its terms must run in each term's domain), its required
anti-affinity, and the required anti-affinity of the pods already running. The last step is
the symmetry the design doc describes ("A comment on symmetry"): if S1 refuses nodes running
S2, S2 is also kept off nodes running S1, even though S2 has no rule. When the domain the
affinity demands is inside the domain the anti-affinity forbids, no node passes: the pod stays
`Pending` for ever ("didn't match pod anti-affinity rules" or "didn't satisfy existing pods
anti-affinity rules").

## Example
```yaml
kind: Deployment
metadata: {name: api, namespace: shop}
spec:
  template:
    metadata: {labels: {app: api}}
    spec:
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: pg}}   # on the node of a pg pod ...
              topologyKey: kubernetes.io/hostname
---
kind: StatefulSet
metadata: {name: pg, namespace: shop}
spec:
  template:
    metadata: {labels: {app: pg}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: api}}  # ... but pg keeps api out of its zone
              topologyKey: topology.kubernetes.io/zone
```

## Fix
Keep the affinity's domain larger than the anti-affinity's: "same zone, different node"
(affinity on `topology.kubernetes.io/zone`, anti-affinity on `kubernetes.io/hostname`) is a
common and valid pattern. Or narrow the anti-affinity's selector so it no longer matches the
pods that need the affinity, or turn one side into a preferred term.

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/scheduler/framework/plugins/interpodaffinity/filtering.go` (`satisfyPodAffinity`,
  `satisfyPodAntiAffinity`, `satisfyExistingPodsAntiAffinity`)
- kubernetes/design-proposals-archive `scheduling/podaffinity.md`, "A comment on symmetry"
""",
    reads=MODEL_FIELDS,
)
