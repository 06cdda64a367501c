"""A pod as the framework holds it (``framework.PodInfo``): its constraints, made once per
workload revision from the pod template, with the selectors the apiserver makes
(``matchLabelKeys``), the tolerations and node affinity its controller gives it, and the API
defaults filled in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kaffinity.expand.merge import expand
from kaffinity.k8s.model import (
    Affinity,
    LabelSelector,
    NodeSelectorTerm,
    PodAffinityTerm,
    Toleration,
    Workload,
)
from kaffinity.simulate import runtimeclass
from kaffinity.simulate.framework.types import Constraints, Term, scheduler_units
from kaffinity.simulate.plugins.nodeaffinity import prefilter_nodes
from kaffinity.simulate.plugins.noderesources import nonzero
from kaffinity.simulate.plugins.podtopologyspread import spread_of
from kaffinity.simulate.plugins.volumebinding import pod_claims

if TYPE_CHECKING:
    from kaffinity.expand.merge import WorkloadExpansion
    from kaffinity.k8s.model import PodAffinity
    from kaffinity.simulate.storage import Storage

#: Tolerations the DaemonSet controller adds to its pods (``util.AddOrUpdateDaemonPodTolerations``).
DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
HOST_NETWORK_TOLERATION = ("node.kubernetes.io/network-unavailable", "NoSchedule")


class Admitted(int):
    """A pod's priority as the Priority admission plugin leaves it, carrying whether the pod may
    preempt (its ``preemptionPolicy``, set from the PriorityClass at admission:
    ``kaffinity.simulate.place.admit``); a plain int leaves that to the pod's own field."""

    preempts: bool

    def __new__(cls, value: int, preempts: bool) -> Admitted:
        made = super().__new__(cls, value)
        made.preempts = preempts
        return made


#: A pod without ``affinity``: no node, pod or anti-affinity.
_NO_AFFINITY = Affinity(None, None, None, ())


def _node_filters(
    workload: Workload, pinned: str | None
) -> tuple[tuple[Toleration, ...], tuple[NodeSelectorTerm, ...] | None]:
    """The pod's tolerations and required node affinity terms, as its controller makes them: a
    DaemonSet's pods tolerate what the DaemonSet controller adds, and a pinned one's node
    affinity is replaced by its node."""
    pod = workload.pod
    tolerations = pod.tolerations
    node_affinity = pod.affinity.node_affinity if pod.affinity else None
    node_terms = node_affinity.required if node_affinity else None
    if workload.controller == "DaemonSet":
        extra = [*DAEMON_TOLERATIONS, *((HOST_NETWORK_TOLERATION,) if pod.host_network else ())]
        tolerations = tolerations + tuple(Toleration(k, "Exists", "", e, ()) for k, e in extra)
        if pinned is not None:
            # ReplaceDaemonSetPodNodeNameNodeAffinity: one term, metadata.name In [node].
            node_terms = None
    return tolerations, node_terms


def build_constraints(
    workload: Workload,
    labels: dict[str, str],
    pinned: str | None,
    *,
    version: str,
    gates: dict[str, bool],
    priority: Callable[[Workload], int],
    storage: Storage | None = None,
) -> Constraints:
    """The constraints of ``workload``'s pod with run-time ``labels`` (pinned to a node: a
    DaemonSet's pod), after the RuntimeClass admission plugin (a pod of the cluster file was
    admitted already), with the claims its volumes name (``storage``: the cluster's PVs, PVCs,
    StorageClasses and RuntimeClasses)."""
    pod = workload.pod
    namespace = workload.ref.namespace or "default"
    expansion = expand(workload, version, gates, qualified=True, labels=labels)
    affinity = pod.affinity or _NO_AFFINITY
    node_affinity, pod_affinity, pod_anti = (
        affinity.node_affinity,
        affinity.pod_affinity,
        affinity.pod_anti_affinity,
    )
    tolerations, node_terms = _node_filters(workload, pinned)
    if pinned is None and not pod.node_name:
        # Required terms naming one node by metadata.name (a DaemonSet's pod as the controller
        # made it, read from a cluster capture): NodeAffinity's PreFilter leaves that node alone,
        # every other one is absent ("didn't satisfy plugin(s) [NodeAffinity]"); the terms still
        # filter that node. Several names keep the per-node filter (the same nodes pass).
        named = prefilter_nodes(node_terms)
        if named is not None and len(named) == 1:
            (pinned,) = named
    spreads = [spread_of(expansion, constraint) for constraint in pod.topology_spread_constraints]
    requests = scheduler_units(pod.requests)
    admitted = priority(workload)
    # The preemptionPolicy admission set from the PriorityClass (``admitPod``), else the pod's own.
    preempts = admitted.preempts if isinstance(admitted, Admitted) else pod.preemption_policy != "Never"
    runtime = runtimeclass.admit(
        workload,
        pod.node_selector,
        tolerations,
        storage,
        existing=storage is not None and workload.doc.file in storage.cluster_files,
    )
    tolerations = runtime.tolerations
    for name, value in scheduler_units(runtime.overhead).items():
        requests[name] = requests.get(name, 0) + value
    return Constraints(
        namespace=namespace,
        # Pods created with spec.nodeName skip the scheduler, a template's too (#75913).
        node_name=pod.node_name if pinned is None else None,
        pinned=pinned,
        node_selector=runtime.node_selector,
        node_terms=node_terms,
        node_preferred=tuple((p.weight or 0, p.preference) for p in node_affinity.preferred)
        if node_affinity
        else (),
        tolerations=tolerations,
        affinity=_required(namespace, expansion, pod_affinity),
        anti=_required(namespace, expansion, pod_anti),
        preferred_affinity=_preferred(namespace, expansion, pod_affinity),
        preferred_anti=_preferred(namespace, expansion, pod_anti),
        spread=tuple(s for s in spreads if s.hard),
        soft_spread=tuple(s for s in spreads if not s.hard),
        requests=requests,
        ports=pod.host_ports,
        priority=int(admitted),
        preempts=preempts,
        wants=tuple((name, value) for name, value in requests.items() if value > 0 and name != "pods"),
        nonzero=nonzero(requests),
        claims=pod_claims(workload, labels, storage),
        refused=runtime.refused,
    )


def _required(namespace: str, expansion: WorkloadExpansion, group: PodAffinity | None) -> tuple[Term, ...]:
    """The required terms of a pod (anti-)affinity, with the selectors the apiserver makes."""
    if group is None:
        return ()
    return tuple(_term(namespace, expansion.selector(t), t, 1) for t in group.required)


def _preferred(namespace: str, expansion: WorkloadExpansion, group: PodAffinity | None) -> tuple[Term, ...]:
    """The preferred terms of a pod (anti-)affinity, each with its weight."""
    if group is None:
        return ()
    return tuple(_term(namespace, expansion.selector(w.term), w.term, w.weight or 0) for w in group.preferred)


def _term(namespace: str, selector: LabelSelector | None, term: PodAffinityTerm, weight: int) -> Term:
    # getNamespacesFromPodAffinityTerm: the own namespace only when both fields are unset.
    if not term.namespaces and term.namespace_selector is None:
        names = frozenset((namespace,))
    else:
        names = frozenset(term.namespaces)
    return Term(selector, names, term.namespace_selector, term.topology_key, weight, term)
