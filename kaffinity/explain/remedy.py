"""What would let a Pending pod of a capture run (``kaffinity explain``), each remedy tried on the
simulation before it is offered, and the simulation left as it was:

* ``node``: a new node of a given shape. Its template is the first node the static filters
  (NodeUnschedulable, TaintToleration, NodeAffinity) let the pod on, else a node made of what
  the pod requires (its nodeSelector, the first required node selector term's ``In`` and
  ``Exists`` requirements); its size is the template's, raised to the pod's requests. It gets a
  hostname of its own and, when the first try is refused by anti-affinity or spread on another
  topology key, a new value of that key (a new zone). Added and removed as the autoscaler's own
  trials are (``Autoscaler.add_node`` / ``remove_node``).
* ``move``: the bound pods behind one inter-pod reason (:mod:`kaffinity.explain.blockers`),
  taken off their nodes: the pod then fits (the pods are put back).
* ``preemption``: the victims DefaultPreemption evicts for the pod (the scheduler nominates the
  node), or, when its priority is too low to evict anything, the victims at a higher priority
  (``Evaluator.Preempt``'s choice, :func:`kaffinity.simulate.framework.preemption.preempt`) and
  the priority that would do it: one above the highest victim's. A budget protecting a victim
  is named: preemption honours PodDisruptionBudgets only as a preference.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING

from kaffinity.explain.blockers import Blocker, PodGroup, group_pods, owner_word
from kaffinity.k8s.labels import HOSTNAME
from kaffinity.k8s.model import Node, ObjectRef, Taint, Toleration
from kaffinity.simulate.framework.preemption import preempt
from kaffinity.simulate.framework.types import SimNode, SimPod, sim_node
from kaffinity.simulate.plugins.interpodaffinity import REASON_ANTI_AFFINITY, REASON_EXISTING_ANTI
from kaffinity.simulate.plugins.podtopologyspread import REASON_SPREAD

if TYPE_CHECKING:
    from kaffinity.simulate.framework.schedule_one import Simulation
    from kaffinity.simulate.framework.types import Constraints

#: The name of the node a ``node`` remedy tries.
NEW_NODE = "new-node"
#: The highest priority a user's PriorityClass may give (``HighestUserDefinablePriority``).
HIGHEST_USER_PRIORITY = 1_000_000_000
#: How many pods a ``move`` remedy takes off at most (more is no advice).
MOST_MOVED = 50


@dataclass
class Remedy:
    """One way to let the pod run, as tried."""

    kind: str  # node | move | preemption | priority
    #: the node the pod would then run on
    node: str | None = None
    #: node: the shape (labels, taints, allocatable) and the node it copies (None: made up)
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[str] = field(default_factory=list)
    allocatable: dict[str, str] = field(default_factory=dict)
    like: str | None = None
    #: move: the pods to move; preemption, priority: the victims (with their budgets)
    groups: list[PodGroup] = field(default_factory=list)
    #: priority: the lowest priority that evicts them
    priority: int | None = None
    #: priority: the pod's ``preemptionPolicy`` is Never, so it must become PreemptLowerPriority too
    policy: bool = False
    #: node: the reasons the new node still refuses the pod (the remedy failed)
    refused: list[str] = field(default_factory=list)


def remedies_for(
    sim: Simulation,
    pod: SimPod,
    rejected: Mapping[str, list[str]],
    victims: Sequence[tuple[SimPod, str]],
    blockers: Sequence[Blocker],
) -> list[Remedy]:
    """The remedies that work for ``pod``, tried in this order: preemption, moving pods, a node."""
    found: list[Remedy] = []
    if victims:
        found.append(Remedy("preemption", victims[0][1], groups=group_pods(sim, [v for v, _ in victims])))
        return found  # the scheduler itself evicts them
    raised = _raised(sim, pod)
    if raised is not None:
        found.append(raised)
    for blocker in blockers:
        moved = _move(sim, pod, blocker)
        if moved is not None:
            found.append(moved)
    tolerated = _tolerate(sim, pod, rejected)
    if tolerated is not None:
        found.append(tolerated)
    found.append(_new_node(sim, pod, rejected))
    return found


def _own(pod: SimPod, other: SimPod) -> bool:
    """Whether ``other`` belongs to the same workload as ``pod`` (moving or evicting a sibling
    is no advice: the workload needs room for both)."""
    return owner_word(other) == owner_word(pod)


#: How many nodes refused by TaintToleration (one per distinct set of taints) are tried with
#: the pod tolerating their taints.
TAINTED_TRIED = 3


def _tolerate(sim: Simulation, pod: SimPod, rejected: Mapping[str, list[str]]) -> Remedy | None:
    """The first node TaintToleration refused that the pod would run on were it to tolerate the
    node's NoSchedule and NoExecute taints (PreferNoSchedule only scores)."""
    # One node per distinct set of taints: a pool's nodes share theirs.
    kinds: dict[tuple[tuple[str, str, str], ...], str] = {}
    for name, reasons in rejected.items():
        if plugin_is_taint(reasons):
            taints_of = tuple((t.key, t.value, t.effect) for t in sim.by_name[name].taints)
            kinds.setdefault(taints_of, name)
    for name in list(kinds.values())[:TAINTED_TRIED]:
        node = sim.by_name[name]
        taints = [t for t in node.taints if t.effect in ("NoSchedule", "NoExecute")]
        added = tuple(Toleration(t.key, "Equal", t.value, t.effect, ()) for t in taints)
        constraints = dataclasses.replace(
            pod.constraints, tolerations=(*pod.constraints.tolerations, *added), sig=None
        )
        trial = SimPod(
            pod.workload, pod.replica, pod.revision, pod.labels, constraints, existing=pod.existing
        )
        if sim.place(trial, bind=False).node == name:
            return Remedy("tolerate", name, taints=[_taint_word(t) for t in taints])
    return None


def plugin_is_taint(reasons: Sequence[str]) -> bool:
    return bool(reasons) and reasons[0].startswith("node(s) had untolerated taint")


def _taint_word(taint: Taint) -> str:
    return f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"


def _raised(sim: Simulation, pod: SimPod) -> Remedy | None:
    """The victims DefaultPreemption would pick were the pod's priority the highest a user may
    give, and the lowest priority that evicts them (None: no eviction lets it fit)."""
    constraints = pod.constraints
    if constraints.priority >= HIGHEST_USER_PRIORITY:
        return None
    higher = dataclasses.replace(constraints, priority=HIGHEST_USER_PRIORITY, preempts=True)
    trial = SimPod(pod.workload, pod.replica, pod.revision, pod.labels, higher, existing=pod.existing)
    found = preempt(sim, trial)
    if found is None:
        return None
    node, victims = found
    if any(_own(pod, victim) for victim, _ in victims):
        return None
    needed = max(victim.constraints.priority for victim, _ in victims) + 1
    # Never: its own priority may already be enough, only the policy stops it.
    needed = max(needed, constraints.priority if not constraints.preempts else constraints.priority + 1)
    victims_of = group_pods(sim, [v for v, _ in victims])
    return Remedy("priority", node.name, groups=victims_of, priority=needed, policy=not constraints.preempts)


#: How many domains a ``move`` remedy tries (those with the fewest blocking pods first).
DOMAINS_TRIED = 5


def _move(sim: Simulation, pod: SimPod, blocker: Blocker) -> Remedy | None:
    """The fewest pods behind ``blocker`` to take off one refused domain (a node, for host
    ports) for the pod to run there; None when moving them does not help, or they are the
    pod's own workload's."""
    if blocker.kind not in ("anti-affinity", "existing-anti-affinity", "ports") or not blocker.pods:
        return None
    key = blocker.term.get("topologyKey") or HOSTNAME
    by_domain: dict[str, list[SimPod]] = {}
    for other in blocker.pods:
        if other.node is not None:
            domain = other.node.name if blocker.kind == "ports" else other.node.labels.get(key, "")
            by_domain.setdefault(domain, []).append(other)
    tried = sorted(by_domain.items(), key=lambda item: (len(item[1]), item[0]))[:DOMAINS_TRIED]
    for _, pods in tried:
        if len(pods) > MOST_MOVED or any(_own(pod, other) for other in pods):
            continue
        moved = [(other, other.node) for other in pods if other.node is not None]
        for other, _ in moved:
            sim.unbind(other)
        try:
            placement = sim.place(pod, bind=False)
        finally:
            for other, node in moved:
                sim.bind(other, node)
        if placement.node is not None:
            return Remedy("move", placement.node, groups=group_pods(sim, pods))
    return None


def _new_node(sim: Simulation, pod: SimPod, rejected: Mapping[str, list[str]]) -> Remedy:
    """A new node the pod would take, its shape; or the reasons even a new node refuses it."""
    constraints = pod.constraints
    static = sim.static_filter(constraints)[0]
    template = static[0] if static else None
    labels = dict(template.labels) if template is not None else _required_labels(constraints)
    labels[HOSTNAME] = NEW_NODE
    taints = tuple(template.taints) if template is not None else ()
    sized = template if template is not None else _largest(sim)
    base = dict(sized.node.allocatable) if sized is not None else {}
    daemons = _daemon_pods(template)
    allocatable = _sized(base, constraints, daemons)
    remedy = Remedy("node", like=template.name if template is not None else None)
    for attempt in range(2):
        placement = _try_node(sim, pod, labels, taints, allocatable, daemons)
        if placement is None:
            remedy.node = NEW_NODE
            break
        remedy.refused = placement
        if attempt or not _newer_domain(pod, placement, labels):
            break
    # Like a node of the cluster: only what differs from it (its hostname is new anyway).
    before = template.labels if template is not None else {}
    remedy.labels = {k: v for k, v in labels.items() if before.get(k) != v and k != HOSTNAME}
    remedy.taints = [_taint_word(t) for t in taints]
    remedy.allocatable = {
        name: _quantity(name, value) for name, value in sorted(allocatable.items()) if base.get(name) != value
    }
    return remedy


def _largest(sim: Simulation) -> SimNode | None:
    """The node with the most allocatable cpu (then memory): the size of a made-up node."""
    sized = [node for node in sim.nodes if node.allocatable]
    if not sized:
        return None
    return max(sized, key=lambda n: (n.allocatable.get("cpu", 0), n.allocatable.get("memory", 0)))  # type: ignore[union-attr]


def _daemon_pods(template: SimNode | None) -> list[SimPod]:
    """The DaemonSet pods of ``template``: a new node like it runs them too (their controller
    creates one on every node it selects), taking their ports and resources."""
    from kaffinity.explain.capture import owner_of

    if template is None:
        return []
    found = []
    for other in template.pods:
        owner = owner_of(other.workload.doc.data)
        if owner is not None and owner.kind == "DaemonSet" and not other.terminating:
            found.append(other)
    return found


def _newer_domain(pod: SimPod, refused: list[str], labels: dict[str, str]) -> bool:
    """Give ``labels`` a new value of each key an anti-affinity or spread term refused the
    first try on (a new zone); False when there is none to change."""
    if not {REASON_ANTI_AFFINITY, REASON_EXISTING_ANTI, REASON_SPREAD} & set(refused):
        return False
    constraints = pod.constraints
    keys = {term.topology_key for term in constraints.anti} | {s.topology_key for s in constraints.spread}
    changed = False
    for key in sorted(keys - {HOSTNAME}):
        if key in labels:
            labels[key] = f"new-{labels[key]}"
            changed = True
    return changed


def _try_node(
    sim: Simulation,
    pod: SimPod,
    labels: Mapping[str, str],
    taints: tuple[Taint, ...],
    allocatable: Mapping[str, Decimal],
    daemons: Sequence[SimPod] = (),
) -> list[str] | None:
    """Add a node (with a copy of each of ``daemons`` bound there), schedule the pod without
    binding it, take the node away: None when the pod would run there, else the new node's
    reasons."""
    node = Node(
        ObjectRef("v1", "Node", None, NEW_NODE),
        pod.workload.doc,
        tuple(labels.items()),
        taints,
        tuple(sorted(allocatable.items())),
        False,
    )
    trial = sim_node(node)
    before = sim.on_new_node

    def bind_daemons(added: SimNode) -> list[SimPod]:
        copies = [
            SimPod(d.workload, d.replica, d.revision, d.labels, d.constraints, existing=True) for d in daemons
        ]
        for copy in copies:
            sim.bind(copy, added)
        return copies

    sim.on_new_node = bind_daemons
    try:
        sim.add_node(trial)
    finally:
        sim.on_new_node = before
    try:
        placement = sim.place(pod, bind=False, record=True)
    finally:
        sim.remove_node(trial)
    if placement.node == NEW_NODE:
        return None
    return list((placement.rejected or {}).get(NEW_NODE, ["another node was chosen"]))


def _required_labels(constraints: Constraints) -> dict[str, str]:
    """The labels a node needs for the pod's nodeSelector and first required node term."""
    labels = dict(constraints.node_selector)
    for term in (constraints.node_terms or ())[:1]:
        for requirement in term.match_expressions:
            if requirement.operator == "In" and requirement.values:
                labels[requirement.key] = requirement.values[0]
            elif requirement.operator == "Exists":
                labels[requirement.key] = "any"
    return labels


def _sized(
    base: Mapping[str, Decimal], constraints: Constraints, daemons: Sequence[SimPod]
) -> dict[str, Decimal]:
    """``base`` raised to the pod's requests and its DaemonSet pods' (scheduler units back to
    quantities)."""
    sized = dict(base)
    for name, requested in constraints.requests.items():
        amount = requested + sum(d.constraints.requests.get(name, 0) for d in daemons)
        value = Decimal(amount) / 1000 if name == "cpu" else Decimal(amount)
        if sized.get(name, Decimal(-1)) < value:
            sized[name] = value
    sized.setdefault("pods", Decimal(110))
    return sized


def _quantity(name: str, value: Decimal) -> str:
    """A quantity as a node's status shows it: cpu in cores or millicores, bytes in Gi/Mi."""
    if name == "cpu":
        milli = value * 1000
        return f"{value.normalize():f}" if milli % 1000 == 0 else f"{int(milli)}m"
    if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
        for suffix, size in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if value % size == 0 and value >= size:
                return f"{int(value // size)}{suffix}"
    return f"{value.normalize():f}"
