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

from kaffinity.explain.blockers import Blocker, PodGroup, group_pods
from kaffinity.k8s.labels import HOSTNAME
from kaffinity.k8s.model import Node, ObjectRef
from kaffinity.simulate.framework.preemption import preempt
from kaffinity.simulate.framework.types import SimNode, SimPod, sim_node
from kaffinity.simulate.plugins.interpodaffinity import REASON_ANTI_AFFINITY, REASON_EXISTING_ANTI
from kaffinity.simulate.plugins.podtopologyspread import REASON_SPREAD
from kaffinity.simulate.plugins.tainttoleration import tolerates

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
    found.append(_new_node(sim, pod, rejected))
    return found


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
    needed = max(victim.constraints.priority for victim, _ in victims) + 1
    needed = max(needed, constraints.priority + 1)
    return Remedy("priority", node.name, groups=group_pods(sim, [v for v, _ in victims]), priority=needed)


def _move(sim: Simulation, pod: SimPod, blocker: Blocker) -> Remedy | None:
    """Take the pods behind ``blocker`` off their nodes: the node the pod then takes, if any."""
    if blocker.kind not in ("anti-affinity", "existing-anti-affinity", "ports"):
        return None
    if sum(group.count for group in blocker.groups) > MOST_MOVED:
        return None
    names = {(group.owner, name) for group in blocker.groups for name in group.pods}
    moved: list[tuple[SimPod, SimNode]] = []
    for node_name in {name for group in blocker.groups for name in group.nodes}:
        node = sim.by_name[node_name]
        for other in list(node.pods):
            if other is not pod and _named(other, names):
                moved.append((other, node))
    if not moved:
        return None
    for other, _ in moved:
        sim.unbind(other)
    try:
        placement = sim.place(pod, bind=False)
    finally:
        for other, node in moved:
            sim.bind(other, node)
    if placement.node is None:
        return None
    return Remedy("move", placement.node, groups=group_pods(sim, [other for other, _ in moved]))


def _named(pod: SimPod, names: set[tuple[str, str]]) -> bool:
    from kaffinity.explain.blockers import owner_word

    return (owner_word(pod), pod.name) in names


def _new_node(sim: Simulation, pod: SimPod, rejected: Mapping[str, list[str]]) -> Remedy:
    """A new node the pod would take, its shape; or the reasons even a new node refuses it."""
    constraints = pod.constraints
    static = sim.static_filter(constraints)[0]
    template = static[0] if static else None
    labels = dict(template.labels) if template is not None else _required_labels(constraints)
    labels[HOSTNAME] = NEW_NODE
    taints = tuple(template.taints) if template is not None else ()
    base = dict(template.node.allocatable) if template is not None else {}
    allocatable = _sized(base, constraints)
    remedy = Remedy("node", like=template.name if template is not None else None)
    for attempt in range(2):
        placement = _try_node(sim, pod, labels, taints, allocatable)
        if placement is None:
            remedy.node = NEW_NODE
            break
        remedy.refused = placement
        if attempt or not _newer_domain(pod, placement, labels):
            break
    remedy.labels = labels
    remedy.taints = [f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in taints]
    remedy.allocatable = {name: _quantity(name, value) for name, value in sorted(allocatable.items())}
    return remedy


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
    taints: tuple[object, ...],
    allocatable: Mapping[str, Decimal],
) -> list[str] | None:
    """Add a node, schedule the pod without binding it, take the node away: None when the pod
    would run there, else the new node's reasons."""
    node = Node(
        ObjectRef("v1", "Node", None, NEW_NODE),
        pod.workload.doc,
        tuple(labels.items()),
        taints,  # type: ignore[arg-type]
        tuple(sorted(allocatable.items())),
        False,
    )
    trial = sim_node(node)
    sim.add_node(trial)
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


def _sized(base: Mapping[str, Decimal], constraints: Constraints) -> dict[str, Decimal]:
    """``base`` raised to the pod's requests (scheduler units back to quantities)."""
    sized = dict(base)
    for name, amount in constraints.requests.items():
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


def tolerated(constraints: Constraints, taint: object) -> bool:
    """Whether the pod tolerates ``taint`` (for the node shape's words)."""
    return any(tolerates(toleration, taint) for toleration in constraints.tolerations)  # type: ignore[arg-type]
