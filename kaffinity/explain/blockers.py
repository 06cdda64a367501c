"""The pods behind a Pending pod's inter-pod reasons, grouped by the workload they belong to, with
the PodDisruptionBudgets that protect them (``kaffinity explain``).

Per reason, as the plugin that gives it decides (``pkg/scheduler/framework/plugins``):

* ``didn't match pod anti-affinity rules`` (InterPodAffinity ``satisfyPodAntiAffinity``): the
  bound pods a required anti-affinity term of the pod selects, in the refused nodes' domains of
  the term's topologyKey;
* ``didn't satisfy existing pods anti-affinity rules`` (``satisfyExistingPodsAntiAffinity``): the
  bound pods whose own required anti-affinity term selects the pod, on nodes in the refused
  domains;
* ``didn't match pod affinity rules`` (``satisfyPodAffinity``): a required affinity term no bound
  pod satisfies in the refused nodes' domains: the pods it selects elsewhere (none at all: no
  pod it could follow);
* ``didn't match pod topology spread constraints`` (PodTopologySpread ``Filter``): a
  ``DoNotSchedule`` constraint, its matching pods per domain (``calPreFilterState``'s counts);
* ``didn't have free ports`` (NodePorts): the bound pods holding the host port on refused nodes.

A budget protects a pod when it is in the pod's namespace and its selector matches the pod's
labels; ``status.disruptionsAllowed`` says whether evicting one more is allowed (preemption
prefers nodes whose victims violate none, but evicts anyway: the docs' "Limitations of
preemption", PodDisruptionBudget "is supported, but not guaranteed").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kaffinity.explain.capture import Owner, owner_of
from kaffinity.k8s.selectors import selector_matches
from kaffinity.simulate.plugins.interpodaffinity import (
    REASON_AFFINITY,
    REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI,
)
from kaffinity.simulate.plugins.nodeports import REASON_PORTS
from kaffinity.simulate.plugins.podtopologyspread import REASON_SPREAD, spread_counts

if TYPE_CHECKING:
    from kaffinity.k8s.model import PodDisruptionBudget
    from kaffinity.simulate.framework.schedule_one import Simulation
    from kaffinity.simulate.framework.types import SimNode, SimPod, Spread, Term

#: How many pod names a group keeps (the count is always whole).
NAMED = 5


@dataclass
class PodGroup:
    """Bound pods of one workload (or one bare pod) that a term reaches."""

    owner: str  # ``Deployment prod/web`` or ``Pod prod/x``
    count: int = 0
    pods: list[str] = field(default_factory=list)
    nodes: set[str] = field(default_factory=set)
    #: the budgets protecting them: name -> disruptions allowed (None: not in the capture's status)
    budgets: dict[str, int | None] = field(default_factory=dict)


@dataclass
class Blocker:
    """One term of the pod (or of bound pods) that refuses nodes, and the pods behind it."""

    kind: str  # anti-affinity | existing-anti-affinity | affinity | spread | ports
    reason: str
    #: the term: its selector, topologyKey (spread: maxSkew, domains and counts)
    term: dict[str, Any]
    #: the refused nodes' domains (values of the topologyKey) the pods are in
    domains: list[str]
    groups: list[PodGroup]
    #: how many nodes this reason refused
    nodes: int
    #: the pods themselves (for the remedies; not shown)
    pods: list[SimPod] = field(default_factory=list)


def owner_word(pod: SimPod) -> str:
    """The workload a bound pod belongs to, or the pod itself."""
    owner: Owner | None = owner_of(pod.workload.doc.data)
    if owner is not None:
        return str(owner)
    return f"Pod {pod.namespace}/{pod.name}"


def group_pods(sim: Simulation, pods: Iterable[SimPod]) -> list[PodGroup]:
    """``pods`` grouped by workload, the largest group first; their budgets attached."""
    groups: dict[str, PodGroup] = {}
    for pod in pods:
        word = owner_word(pod)
        group = groups.get(word)
        if group is None:
            group = groups[word] = PodGroup(word)
            group.budgets = budgets_of(sim, pod)
        group.count += 1
        if len(group.pods) < NAMED:
            group.pods.append(pod.name)
        if pod.node is not None:
            group.nodes.add(pod.node.name)
    return sorted(groups.values(), key=lambda group: (-group.count, group.owner))


def budgets_of(sim: Simulation, pod: SimPod) -> dict[str, int | None]:
    """The PodDisruptionBudgets protecting ``pod``, with ``status.disruptionsAllowed``."""
    found: dict[str, int | None] = {}
    for pdb in sim.pdbs:
        if _protects(pdb, pod):
            found[f"{pdb.ref.namespace or 'default'}/{pdb.ref.name}"] = _allowed(pdb)
    return found


def _protects(pdb: PodDisruptionBudget, pod: SimPod) -> bool:
    selector = pdb.selector
    return (
        selector is not None
        and not selector.is_empty
        and (pdb.ref.namespace or "default") == pod.namespace
        and selector_matches(selector, pod.labels)
    )


def _allowed(pdb: PodDisruptionBudget) -> int | None:
    status = pdb.doc.data.get("status")
    value = status.get("disruptionsAllowed") if isinstance(status, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def selector_words(term: Term | Spread) -> str:
    """The label selector of a term, as ``app=web,tier in (db)``."""
    from kaffinity.graph.members import selector_text

    return selector_text(term.selector)


def blockers_of(sim: Simulation, pod: SimPod, rejected: Mapping[str, list[str]]) -> list[Blocker]:
    """What stands behind each inter-pod reason that refused a node."""
    refused: dict[str, list[SimNode]] = {}
    for name, reasons in rejected.items():
        for reason in reasons:
            refused.setdefault(reason, []).append(sim.by_name[name])
    found: list[Blocker] = []
    constraints = pod.constraints
    if REASON_ANTI_AFFINITY in refused:
        nodes = refused[REASON_ANTI_AFFINITY]
        for term in constraints.anti:
            matched = [
                other
                for other in sim.candidates(term.selector)
                if other.node is not None and other is not pod and term.matches(other, _ns(sim, other))
            ]
            found.extend(_in_domains(sim, "anti-affinity", REASON_ANTI_AFFINITY, term, nodes, matched))
    if REASON_EXISTING_ANTI in refused:
        nodes = refused[REASON_EXISTING_ANTI]
        for term in sim.anti_terms_for(pod):
            holders = [
                other
                for node in sim.anti_index.holders.get(term, {})
                for other in node.pods
                if term in other.constraints.anti
            ]
            found.extend(
                _in_domains(sim, "existing-anti-affinity", REASON_EXISTING_ANTI, term, nodes, holders)
            )
    if REASON_AFFINITY in refused:
        nodes = refused[REASON_AFFINITY]
        for term in constraints.affinity:
            matched = [
                other
                for other in sim.candidates(term.selector)
                if other.node is not None and term.matches(other, _ns(sim, other))
            ]
            found.append(
                Blocker(
                    "affinity",
                    REASON_AFFINITY,
                    _term(term),
                    sorted({node.labels.get(term.topology_key, "") for node in nodes} - {""}),
                    group_pods(sim, matched),
                    len(nodes),
                )
            )
    if REASON_SPREAD in refused:
        found.extend(_spread(sim, pod, refused[REASON_SPREAD]))
    if REASON_PORTS in refused:
        nodes = refused[REASON_PORTS]
        wanted = {(protocol, port) for protocol, _, port in constraints.ports}
        holders = [
            other
            for node in nodes
            for other in node.pods
            if wanted & {(protocol, port) for protocol, _, port in other.constraints.ports}
        ]
        ports = sorted(f"{port}/{protocol}" for protocol, port in wanted)
        found.append(
            Blocker(
                "ports", REASON_PORTS, {"ports": ports}, [], group_pods(sim, holders), len(nodes), holders
            )
        )
    return found


def _ns(sim: Simulation, pod: SimPod) -> dict[str, str]:
    return sim.namespace_labels(pod.namespace)


def _term(term: Term) -> dict[str, Any]:
    return {
        "selector": selector_words(term),
        "topologyKey": term.topology_key,
        "namespaces": sorted(term.namespaces),
    }


def _in_domains(
    sim: Simulation, kind: str, reason: str, term: Term, nodes: list[SimNode], pods: list[SimPod]
) -> list[Blocker]:
    """The ``pods`` in the domains of ``term``'s topologyKey that ``nodes`` make (none: no blocker)."""
    key = term.topology_key
    domains = {node.labels[key] for node in nodes if key in node.labels}
    inside = [other for other in pods if other.node is not None and other.node.labels.get(key) in domains]
    if not inside:
        return []
    reached = sorted({other.node.labels[key] for other in inside if other.node is not None})
    return [Blocker(kind, reason, _term(term), reached, group_pods(sim, inside), len(nodes), inside)]


def _spread(sim: Simulation, pod: SimPod, nodes: list[SimNode]) -> list[Blocker]:
    """Each hard spread constraint's counts per domain and the pods it counts."""
    found = []
    constraints = pod.constraints
    for spread in constraints.spread:
        counted, domains = sim.spread_nodes(constraints, spread)
        counts = spread_counts(sim, pod.namespace, spread, counted)
        selector = spread.selector
        pods = [
            other
            for other in sim.candidates(selector)
            if other.node is not None
            and other.node in counted
            and not other.terminating
            and other.namespace == pod.namespace
            and selector is not None
            and selector_matches(selector, other.labels)
        ]
        term = {
            "selector": selector_words(spread),
            "topologyKey": spread.topology_key,
            "maxSkew": spread.max_skew,
            "minDomains": spread.min_domains,
            "counts": {domain: counts.get(domain, 0) for domain in sorted(domains)},
        }
        refused = sorted({node.labels.get(spread.topology_key, "") for node in nodes} - {""})
        found.append(Blocker("spread", REASON_SPREAD, term, refused, group_pods(sim, pods), len(nodes)))
    return found
