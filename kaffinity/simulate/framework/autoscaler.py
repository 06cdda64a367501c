"""The autoscaler (cluster-autoscaler or Karpenter), as the PostFilter's last resort: a pool
that may still grow and whose new node would take a pod no node takes gets that node.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kaffinity.k8s.model import Node
from kaffinity.simulate.framework.cycle_state import fits_on
from kaffinity.simulate.framework.runtime import Framework
from kaffinity.simulate.framework.types import (
    Constraints,
    SimNode,
    SimPod,
    later_first,
    scheduler_units,
    sim_node,
)
from kaffinity.simulate.plugins.volumebinding import REASONS as VOLUME_REASONS

if TYPE_CHECKING:
    from kaffinity.simulate.cluster import Pool

#: cluster-autoscaler ``--expendable-pods-priority-cutoff`` default: lower pods never scale up.
EXPENDABLE_CUTOFF = -10


class Growth:
    """A pool as the simulation grows it: its nodes, and what its limits leave."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.count = pool.count
        self.nodes: list[SimNode] = []
        #: Karpenter limits: what the pool's nodes hold now
        self.used: Counter[str] = Counter()
        self.size = scheduler_units(pool.allocatable) if pool.allocatable else None
        #: id(node) -> what a new node of unknown size counts against the limits
        self._counted: dict[int, Mapping[str, int]] = {}

    def start(self, nodes: Iterable[SimNode]) -> None:
        if self.pool.limits:
            from kaffinity.simulate.cluster import KARPENTER_POOL_LABEL

            for node in nodes:
                if node.labels.get(KARPENTER_POOL_LABEL) == self.pool.name and node.allocatable:
                    self.used.update(node.allocatable)

    def rank(self, constraints: Constraints, node: SimNode, order: int, variant: int) -> tuple[Any, ...]:
        """The autoscaler's preference for this pool's ``node`` (smaller first)."""
        pool = self.pool
        if pool.kind == "NodePool":
            return (0, -pool.weight, later_first(pool.name), order, variant)
        waste = 0.0
        for resource in ("cpu", "memory"):
            total = node.allocatable.get(resource) if node.allocatable else None
            if total:
                waste += (total - constraints.nonzero.get(resource, 0)) / total
        return (1, waste, order, variant)

    def new_size(self, wants: Mapping[str, int]) -> Mapping[str, int]:
        """What a new node counts against the pool's limits: its size; of unknown size (a
        NodePool without a node), the pod's requests, the smallest instance that takes it."""
        return self.size if self.size is not None else wants

    def full(self, wants: Mapping[str, int] | None = None) -> str | None:
        """Why the pool may not grow for a pod requesting ``wants`` (None: it may).

        Karpenter's limits (kubernetes-sigs/karpenter ``pkg/controllers/provisioning/scheduling``,
        ``filterByRemainingResources``): an instance type may launch when its capacity fits in
        what ``spec.limits`` leaves after the pool's nodes; the usage is the sum over its nodes
        (NodePool ``status.resources``), here their allocatable. A node of unknown size counts
        the pod's requests (:meth:`new_size`): a NodePool with limits and no node yet grows."""
        pool = self.pool
        if pool.max is not None and self.count >= pool.max:
            return f"{self.pool.word} is at its max of {pool.max} node{'s' if pool.max != 1 else ''}"
        if pool.limits:
            size = self.new_size(wants or {})
            for resource, limit in scheduler_units(pool.limits).items():
                if resource == "nodes":
                    if self.count + 1 > limit:
                        return f"{self.pool.word} is at its limit of {limit} nodes"
                elif self.used.get(resource, 0) + size.get(resource, 0) > limit:
                    return f"{self.pool.word} would pass its {resource} limit"
        return None

    def variants(self, constraints: Constraints) -> Iterator[tuple[tuple[str, str], ...]]:
        """The label sets of a new node for a pod with ``constraints``: the pool's variants,
        with each label it leaves open (:attr:`Pool.open`) set to the value the pod's
        nodeSelector or required node affinity asks for; each set once."""
        seen: set[tuple[tuple[str, str], ...]] = set()
        for variant in self.pool.variants:
            labels = dict(variant)
            for key, excluded in self.pool.open:
                value = wanted_value(constraints, key, excluded)
                if value is not None:
                    labels[key] = value
            chosen = tuple(labels.items())
            if chosen not in seen:
                seen.add(chosen)
                yield chosen

    def new_node(self, variant: tuple[tuple[str, str], ...], taken: Mapping[str, SimNode]) -> Node:
        from kaffinity.k8s.labels import HOSTNAME
        from kaffinity.k8s.model import ObjectRef

        index = self.count
        while f"{self.pool.prefix}{index}" in taken:
            index += 1
        name = f"{self.pool.prefix}{index}"
        pool = self.pool
        return Node(
            ref=ObjectRef("v1", "Node", None, name),
            doc=pool.doc,
            labels=(*variant, (HOSTNAME, name)),
            taints=pool.taints,
            allocatable=pool.allocatable or (),
            unschedulable=False,
            path=pool.path,
        )

    def grow(self, node: SimNode, wants: Mapping[str, int] | None = None) -> None:
        self.count += 1
        self.nodes.append(node)
        size = self.new_size(wants or {})
        self._counted[id(node)] = size
        self.used.update(size)

    def shrink(self, node: SimNode) -> None:
        if node in self.nodes:
            self.nodes.remove(node)
            self.count -= 1
            self.used.subtract(self._counted.pop(id(node), {}))


def wanted_value(constraints: Constraints, key: str, excluded: tuple[str, ...] = ()) -> str | None:
    """The value of label ``key`` a pod asks for: its nodeSelector's, else the first ``In``
    value (not ``excluded``) of a required node affinity term on ``key``; None when it asks for
    none. Karpenter launches a node for the pod's requirements joined with the pool's
    (``scheduling.NewNodeClaim``), so a key the pool leaves open takes this value."""
    for name, value in constraints.node_selector:
        if name == key:
            return value if value not in excluded else None
    for term in constraints.node_terms or ():
        for requirement in term.match_expressions:
            if requirement.key == key and requirement.operator == "In":
                for value in requirement.values:
                    if value not in excluded:
                        return value
    return None


class Autoscaler(Framework):
    """The framework with the pools that may grow, and the nodes they added."""

    def __init__(
        self, nodes: Sequence[Node], *, pools: Sequence[Pool], max_nodes: int | None, **snapshot: Any
    ) -> None:
        """``snapshot``: :class:`~kaffinity.simulate.framework.snapshot.Snapshot`'s keywords,
        typed where a simulation is made (:class:`~kaffinity.simulate.framework.schedule_one.Simulation`)."""
        super().__init__(nodes, **snapshot)
        self.pools = [Growth(pool) for pool in pools]
        self.max_nodes = max_nodes
        #: nodes autoscaling added, in order, with their pools
        self.added: list[tuple[SimNode, Pool]] = []
        #: called with each node autoscaling adds: binds what runs there from the start (the
        #: DaemonSet pods cluster-autoscaler puts on its template node); returns those pods
        self.on_new_node: Callable[[SimNode], list[SimPod]] = lambda node: []
        for growth in self.pools:
            growth.start(self.nodes)

    def _scale_up(self, pod: SimPod) -> tuple[SimNode, Pool] | str:
        """A new node for ``pod``, bound there; else why no pool helps.

        The pools that may still grow and whose new node passes the static filters and has room
        are tried in the order their autoscaler would choose them: Karpenter NodePools first,
        by ``weight``, then by name in reverse (``OrderByWeight``); then cluster-autoscaler node
        groups by the least-waste expander (the default of current releases, config/flags.go;
        older ones picked at random: the smallest unused share of cpu and memory on the new
        node, here for this one pod), then file order. Each is
        added, with its DaemonSet pods, and kept if the pod then passes every filter there (a
        new zone or hostname changes spread and affinity counts), else taken away again."""
        constraints = pod.constraints
        if self.max_nodes is not None and len(self.nodes) >= self.max_nodes:
            return (
                f"the cluster already has {len(self.nodes):,} nodes, the most kaffinity simulates "
                "(limits: nodes)"
            )
        reasons = {
            growth.pool.word: growth.full(constraints.requests)
            or f"a new node of {growth.pool.word} would not take it"
            for growth in self.pools
        }
        options = []
        for order, index, growth, node in self.growth_nodes(constraints):
            refused = self.node_fit(constraints, node)
            if not refused:
                options.append((growth.rank(constraints, node, order, index), growth, node))
            elif VOLUME_REASONS.intersection(refused):  # a volume pins the pod elsewhere: say so
                reasons[growth.pool.word] = (
                    f"a new node of {growth.pool.word} would not take it: {refused[0]}"
                )
        options.sort(key=lambda option: option[0])
        for _, growth, node in options:
            self.add_node(node, growth, constraints.requests)
            if fits_on(self, pod, node):
                self.bind(pod, node)
                return node, growth.pool
            self.remove_node(node)
            reasons[growth.pool.word] = f"its pod would not fit on a new node of {growth.pool.word} either"
        return "; ".join(reasons.values()) or "no pool may grow"

    def growth_nodes(self, constraints: Constraints) -> Iterator[tuple[int, int, Growth, SimNode]]:
        """The nodes the pools that may still grow would add, one per label variant, that pass
        ``constraints``' static filters; with the pool's and the variant's index (nothing is added)."""
        for order, growth in enumerate(self.pools):
            if growth.full(constraints.requests) is not None:
                continue
            for index, variant in enumerate(growth.variants(constraints)):
                node = sim_node(growth.new_node(variant, self.by_name))
                if self._static_reason(constraints, node) is None:
                    yield order, index, growth, node

    def add_node(
        self, node: SimNode, growth: Growth | None = None, wants: Mapping[str, int] | None = None
    ) -> None:
        """A node autoscaling added, with what runs on it from the start (``on_new_node``);
        ``wants``: the requests of the pod it is for (what a node of unknown size counts)."""
        self.nodes.append(node)
        self.by_name[node.name] = node
        if growth is not None:
            growth.grow(node, wants)
            self.added.append((node, growth.pool))
        self._extend_caches(node)
        node.daemons = self.on_new_node(node)

    def remove_node(self, node: SimNode) -> None:
        """Undo :meth:`add_node` (a trial that did not help, a rollout restored); the pods
        bound there must be gone but for the ones ``on_new_node`` put there."""
        for pod in list(node.daemons):
            self.unbind(pod)
        self.nodes.remove(node)
        del self.by_name[node.name]
        for growth in self.pools:
            growth.shrink(node)
        self.added = [(n, p) for n, p in self.added if n is not node]
        self._shrink_caches(node)
