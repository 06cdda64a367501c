"""Schedule one pod at a time (``pkg/scheduler/schedule_one.go``): the static filters, the
dynamic ones, the best node (from a heap without scanning when nothing sets nodes apart), and a
pod that fits nowhere through PostFilter: preemption, then the autoscaler.

A pod that fits nowhere gets the scheduler's event text (``FitError.Error``):
``0/6 nodes are available: 3 node(s) didn't match pod anti-affinity rules, ...``.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kaffinity.expand.merge import pod_labels
from kaffinity.k8s.model import Node, Workload
from kaffinity.memo import Memo
from kaffinity.simulate.framework.autoscaler import EXPENDABLE_CUTOFF, Autoscaler
from kaffinity.simulate.framework.cycle_state import CycleState
from kaffinity.simulate.framework.podinfo import build_constraints
from kaffinity.simulate.framework.preemption import preempt, preemption_message
from kaffinity.simulate.framework.profile import AUTOSCALING, FILTERS, INTER_POD_AFFINITY, PREEMPTION
from kaffinity.simulate.framework.types import Constraints, Placement, SimNode, SimPod, Term
from kaffinity.simulate.plugins.defaultpreemption import NOT_ELIGIBLE

if TYPE_CHECKING:
    from kaffinity.k8s.model import PodDisruptionBudget
    from kaffinity.simulate.cluster import Pool
    from kaffinity.simulate.storage import Storage


class Simulation(Autoscaler):
    """A cluster's nodes and pods, and the scheduler's filters over them."""

    def __init__(
        self,
        nodes: Sequence[Node],
        *,
        version: str,
        gates: Mapping[str, bool] | None = None,
        namespaces: Mapping[str, Mapping[str, str]] | None = None,
        filters: Iterable[str] = FILTERS,
        priority: Callable[[Workload], int] | None = None,
        pools: Sequence[Pool] = (),
        pdbs: Sequence[PodDisruptionBudget] = (),
        max_nodes: int | None = None,
        storage: Storage | None = None,
    ) -> None:
        super().__init__(
            nodes,
            version=version,
            gates=gates,
            namespaces=namespaces,
            filters=filters,
            pdbs=pdbs,
            pools=pools,
            max_nodes=max_nodes,
            storage=storage,
        )
        self._priority: Callable[[Workload], int] = priority or (lambda workload: 0)
        #: id(constraints) -> cluster version at which PostFilter last found nothing for that template
        self._post_failed: dict[int, tuple[int, str | None]] = {}
        self._constraints: dict[tuple[Any, ...], Constraints] = {}
        #: what is derived from this simulation and lives as long as it (``kaffinity.memo``)
        self.memo = Memo()

    # -- pods --------------------------------------------------------------------------------

    def pod(self, workload: Workload, replica: int = 0, revision: str = "revision 1") -> SimPod:
        """Replica ``replica`` of ``workload`` at ``revision`` (its run-time labels differ per revision)."""
        labels = pod_labels(workload, self.version, replica=replica, revision=revision, qualified=True)
        return SimPod(workload, replica, revision, labels, self._constraints_of(workload, labels, revision))

    def existing(self, workload: Workload) -> SimPod:
        """A pod of the cluster file, as stored (its selectors were merged when it was created)."""
        labels = dict(workload.pod.labels)
        metadata = workload.doc.data.get("metadata")
        terminating = isinstance(metadata, Mapping) and metadata.get("deletionTimestamp") is not None
        status = workload.doc.data.get("status")
        started = status.get("startTime") if isinstance(status, Mapping) else None
        return SimPod(
            workload,
            0,
            "existing",
            labels,
            self._stored(workload, labels),
            True,
            terminating,
            started=str(started) if started is not None else "~",
        )

    def _stored(self, workload: Workload, labels: dict[str, str]) -> Constraints:
        """An existing pod's constraints with its pod (anti-)affinity selectors as stored: the
        API server merges ``matchLabelKeys`` / ``mismatchLabelKeys`` into them once, when it
        creates the pod (``mutatePodAffinity`` in pkg/registry/core/pod/strategy.go), and the
        scheduler reads the stored ``labelSelector`` alone (``framework.NewPodInfo``'s
        AffinityTerms). A pod created before the merge (MatchLabelKeysInPodAffinity off) keeps
        its keys unmerged, and they restrict nothing."""
        key = (id(workload), "stored", tuple(sorted(labels.items())))
        found = self._constraints.get(key)
        if found is None:
            merged = self._constraints_of(workload, labels, "existing")

            def stored(terms: tuple[Term, ...]) -> tuple[Term, ...]:
                return tuple(dataclasses.replace(t, selector=t.source.label_selector) for t in terms)

            found = self._constraints[key] = dataclasses.replace(
                merged,
                affinity=stored(merged.affinity),
                anti=stored(merged.anti),
                preferred_affinity=stored(merged.preferred_affinity),
                preferred_anti=stored(merged.preferred_anti),
            )
        return found

    def daemon_pod(self, workload: Workload, node: SimNode, revision: str = "revision 1") -> SimPod:
        """A DaemonSet's pod for ``node``: pinned there, with the controller's tolerations."""
        labels = pod_labels(workload, self.version, revision=revision, qualified=True)
        constraints = self._constraints_of(workload, labels, revision, pinned=node.name)
        return SimPod(workload, 0, revision, labels, constraints)

    def _constraints_of(
        self, workload: Workload, labels: dict[str, str], revision: str, pinned: str | None = None
    ) -> Constraints:
        key = (id(workload), revision, pinned, tuple(sorted(labels.items())))
        found = self._constraints.get(key)
        if found is None:
            found = self._constraints[key] = build_constraints(
                workload,
                labels,
                pinned,
                version=self.version,
                gates=self.gates,
                priority=self._priority,
                storage=self.storage,
            )
        return found

    # -- placing -----------------------------------------------------------------------------

    def place(self, pod: SimPod, *, record: bool = False, bind: bool = True, post: bool = False) -> Placement:
        """Schedule ``pod`` (:meth:`_schedule`); with ``post``, a pod that fits nowhere then goes
        through PostFilter as the cluster would handle it: preemption of lower-priority pods
        (DefaultPreemption), else a node added by the autoscaler (:meth:`post_filter`)."""
        post = (
            post and bind and bool(PREEMPTION in self.filters or (AUTOSCALING in self.filters and self.pools))
        )
        # With PostFilter to come, the reasons of a pod no node takes are left for later: most
        # such pods are then placed, and filtering every node for reasons nobody reads was most
        # of the cost of preemption.
        placement = self._schedule(pod, record=record, bind=bind, lazy=post and not record)
        if placement.node is None and post and placement.prefilter is None:
            placed = self.post_filter(pod, placement)
            if placed.node is None and placed.reasons is None:
                found = self._schedule(pod, record=record, bind=bind)
                return dataclasses.replace(found, no_scale_up=placed.no_scale_up)
            return placed
        return placement

    def _schedule(
        self, pod: SimPod, *, record: bool = False, bind: bool = True, lazy: bool = False
    ) -> Placement:
        """Schedule ``pod``: the chosen node (bound unless ``bind`` is false), or Pending.

        With ``record`` every node is filtered and the feasible nodes and every rejection are
        kept (``kaffinity place``); a Pending pod always gets its reasons. The node chosen is
        the same either way: without ``record`` the best node among those every preference
        leaves at the default score comes from a heap in (most free, name) order, and only the
        nodes a preference or a taint sets apart are scored one by one.
        """
        constraints = pod.constraints
        refused = self.prefilter(constraints)
        if refused is not None:
            return self._refused(pod, refused, record)
        pending = self._pending.get(id(constraints))
        if (
            pending is not None
            and pending[0] == self._version
            and pending[1].pod.constraints is constraints
            and (not record or pending[1].rejected is not None)
        ):
            # The same pod template found no node, and nothing moved since: the same answer.
            return dataclasses.replace(pending[1], pod=pod)
        static, static_reasons = self.static_filter(constraints)
        anti_terms = (
            self.anti_terms_for(pod)
            if INTER_POD_AFFINITY in self.filters and not constraints.node_name
            else []
        )
        if not record and constraints.plain and not anti_terms and not self._prefer_taints:
            chosen = self.heap(constraints, static).best(lambda node: not self.node_fit(constraints, node))
            if isinstance(chosen, SimNode):
                return self._placed(pod, chosen, bind)
            if lazy:
                return Placement(pod, None)  # no node: reasons once PostFilter could not help
            return self._scan(pod, CycleState(self, pod, anti_terms), static, static_reasons, record)
        state = CycleState(self, pod, anti_terms)
        if not record:
            chosen = state.choose(self.heap(constraints, static), self.static_set(constraints))
            if isinstance(chosen, SimNode):
                return self._placed(pod, chosen, bind)
            if chosen is None and lazy:
                return Placement(pod, None)  # no node: reasons once PostFilter could not help
        return self._scan(pod, state, static, static_reasons, record, bind)

    # -- PostFilter: preemption, then autoscaling ----------------------------------------------

    def post_filter(self, pod: SimPod, pending: Placement) -> Placement:
        """What happens to a pod no node takes. DefaultPreemption first (the scheduler's
        PostFilter): when removing lower-priority pods from a node makes it fit, they are
        evicted and the pod is bound there. Else, cluster-autoscaler or Karpenter: a pool that
        may still grow and whose new node would take the pod gets that node. cluster-autoscaler
        leaves a pod the scheduler preempts for to the preemption (``FilterOutExpendableAndSplit``:
        pods with a nominated node wait for it), and never scales up for an expendable pod
        (priority below ``--expendable-pods-priority-cutoff``, -10 by default)."""
        constraints = pod.constraints
        failed = self._post_failed.get(id(constraints))
        if failed is not None and failed[0] == self._version:
            return dataclasses.replace(pending, no_scale_up=failed[1])
        found = preempt(self, pod) if constraints.preempts and PREEMPTION in self.filters else None
        if found is not None:
            node, victims = found
            for victim, _ in victims:
                self.unbind(victim)
            self.bind(pod, node)
            return dataclasses.replace(pending, node=node.name, victims=victims, reasons=None)
        why: str | None = None
        if self.pools and AUTOSCALING in self.filters:
            if constraints.priority < EXPENDABLE_CUTOFF:
                why = (
                    f"its priority {constraints.priority} is below cluster-autoscaler's expendable-pods "
                    f"cutoff {EXPENDABLE_CUTOFF}"
                )
            else:
                grown = self._scale_up(pod)
                if isinstance(grown, tuple):
                    return dataclasses.replace(pending, node=grown[0].name, added=grown, reasons=None)
                why = grown
        # Stamped after the attempt: its trials (pods taken off and put back, nodes added and
        # taken away) leave the cluster as it was, but count as changes.
        self._post_failed[id(constraints)] = (self._version, why)
        return dataclasses.replace(pending, no_scale_up=why)

    def post_failure(self, pod: SimPod) -> str | None:
        """Why PostFilter's last try for this pod's template found no autoscaler to help, if
        nothing changed since (None: not tried, or no pool)."""
        failed = self._post_failed.get(id(pod.constraints))
        return failed[1] if failed is not None and failed[0] == self._version else None

    def _refused(self, pod: SimPod, message: str, record: bool) -> Placement:
        """A pod admission refuses, or that a PreFilter plugin refuses for every node
        (``findNodesThatFitPod``: ``SetAbsentNodesStatus`` and ``Diagnosis.PreFilterMsg``; no
        Filter runs, and preemption finds no node where it might help)."""
        admission = pod.constraints.refused is not None
        placement = Placement(pod, None, reasons=Counter({message: len(self.nodes)}))
        placement.prefilter, placement.admission = message, admission
        if record:
            placement.feasible = []
            placement.rejected = {node.name: [message] for node in self.nodes}
        if not admission and PREEMPTION in self.filters and self.nodes:
            placement.post_message = (
                f"preemption: 0/{len(self.nodes)} nodes are available: "
                f"{len(self.nodes)} Preemption is not helpful for scheduling."
                if pod.constraints.preempts
                else NOT_ELIGIBLE
            )
        return placement

    def _placed(self, pod: SimPod, node: SimNode, bind: bool) -> Placement:
        if bind:
            self.bind(pod, node)
        return Placement(pod, node.name)

    def _scan(
        self,
        pod: SimPod,
        state: CycleState,
        static: list[SimNode],
        static_reasons: Mapping[str, str],
        record: bool,
        bind: bool = True,
    ) -> Placement:
        """Filter every node: the feasible ones, each other node's reasons, and the best node."""
        feasible: list[SimNode] = []
        dynamic: dict[str, list[str]] = {}  # nodes that pass the static filters but not this pod's
        for node in static:
            reasons = state.filter(node)
            if reasons:
                dynamic[node.name] = reasons
            else:
                feasible.append(node)
        chosen = state.best(feasible) if feasible else None
        placement = Placement(pod, chosen.name if chosen else None)
        if record:
            rejected = {**{name: [reason] for name, reason in static_reasons.items()}, **dynamic}
            placement.feasible = [node.name for node in self.nodes if node.name not in rejected]
            placement.rejected = {
                node.name: rejected[node.name] for node in self.nodes if node.name in rejected
            }
        if chosen is None:
            # The static reasons are counted once per pod signature, not once per Pending pod.
            counts = Counter(self._static_counts[pod.constraints.signature()])
            for reasons in dynamic.values():
                counts.update(reasons)
            placement.reasons = counts
            if PREEMPTION in self.filters and not pod.constraints.node_name:
                placement.post_message = preemption_message(self, pod, state, static, dynamic)
            self._pending[id(pod.constraints)] = (self._version, placement)
        elif bind:
            self.bind(pod, chosen)
        return placement
