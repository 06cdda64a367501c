"""Placing a manifest set's pods on a declared cluster (``kaffinity place``, the topology rules).

Which pods exist, as their controllers create them:

* the cluster file's Pods bound by ``spec.nodeName`` are already there (existing pods); those a
  linted workload's selector matches in its namespace are that workload's current replicas
  (its old revision), so only the rest of its replicas are placed;
* Deployments, ReplicaSets, ReplicationControllers and StatefulSets: ``replicas`` pods (replica
  ``i`` of a StatefulSet carries its ``pod-name`` / ``pod-index`` labels); Jobs and CronJobs:
  the pods running at once (``parallelism``, capped by ``completions``); a bare Pod: one;
* DaemonSets: one pod per node that its controller would run it on (``nodeShouldRunDaemonPod``:
  nodeSelector, required node affinity, taints with the tolerations the controller adds), pinned
  to that node (``ReplaceDaemonSetPodNodeNameNodeAffinity``);
* pods for another scheduler (``schedulerName``) and PodTemplates are not placed.

Pods are placed one replica at a time, workload by workload in input order (a controller creates
a workload's replicas together and the scheduler's queue takes them first come, first served).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kaffinity.model import Namespace, Workload
from kaffinity.selectors import selector_matches
from kaffinity.simulate import FILTERS, Placement, SimNode, SimPod, Simulation, node_matches
from kaffinity.topology import Cluster, finished

PLACED_KINDS = frozenset(
    ("Pod", "Deployment", "ReplicaSet", "ReplicationController", "StatefulSet", "DaemonSet", "Job", "CronJob")
)
DEFAULT_SCHEDULER = "default-scheduler"


@dataclass
class PlacementRun:
    """The simulation after placing everything, and what happened to each pod."""

    sim: Simulation
    placements: list[Placement]
    #: the cluster file's pods, bound where they run
    existing: list[SimPod] = field(default_factory=list)
    #: id(workload) -> its pods on the cluster now (claimed existing pods and placed ones)
    pods: dict[int, list[SimPod]] = field(default_factory=dict)
    #: id(workload) -> its placements (Pending ones included)
    by_workload: dict[int, list[Placement]] = field(default_factory=dict)

    @property
    def pending(self) -> list[Placement]:
        return [placement for placement in self.placements if placement.node is None]


def placed(workload: Workload) -> bool:
    """Whether kaffinity places ``workload``'s pods (a kind that creates pods, for this scheduler)."""
    kind = workload.ref.kind
    if kind not in PLACED_KINDS:
        return False
    if kind == "Pod" and finished(workload):
        return False
    return workload.pod.scheduler_name == DEFAULT_SCHEDULER


def namespace_labels(namespaces: Iterable[Namespace]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for namespace in namespaces:
        out.setdefault(namespace.ref.name, dict(namespace.labels))
    return out


def simulation(
    cluster: Cluster,
    *,
    version: str,
    gates: Mapping[str, bool] | None = None,
    namespaces: Iterable[Namespace] = (),
    filters: Iterable[str] = FILTERS,
) -> tuple[Simulation, list[SimPod]]:
    """A simulation of ``cluster`` with its existing pods bound (pods on unknown nodes are left out)."""
    sim = Simulation(
        cluster.nodes,
        version=version,
        gates=gates,
        namespaces=namespace_labels((*cluster.namespaces, *namespaces)),
        filters=filters,
    )
    existing = []
    for workload in cluster.pods:
        node = sim.by_name.get(workload.pod.node_name or "")
        if node is not None:
            pod = sim.existing(workload)
            sim.bind(pod, node)
            existing.append(pod)
    return sim, existing


def place_all(
    workloads: Sequence[Workload],
    cluster: Cluster,
    *,
    version: str,
    gates: Mapping[str, bool] | None = None,
    namespaces: Iterable[Namespace] = (),
    filters: Iterable[str] = FILTERS,
    record: bool = False,
) -> PlacementRun:
    """Place every pod of ``workloads`` on ``cluster``, in input order (shown by a command's
    progress indicator, one tick per workload)."""
    from kaffinity.progress import current as current_progress

    progress = current_progress()
    sim, existing = simulation(cluster, version=version, gates=gates, namespaces=namespaces, filters=filters)
    run = PlacementRun(sim, [], existing)
    claimed: set[SimPod] = set()
    with progress.stage("placing pods", len(workloads), "workloads"):
        for workload in workloads:
            progress.tick(workload.ref)
            if not placed(workload):
                continue
            current = _claim(sim, workload, claimed)
            run.pods[id(workload)] = current
            mine = run.by_workload.setdefault(id(workload), [])
            for pod in _new_pods(sim, workload, current):
                placement = sim.place(pod, record=record)
                run.placements.append(placement)
                mine.append(placement)
                if placement.node is not None:
                    current.append(pod)
    return run


def owns(workload: Workload, pod: SimPod) -> bool:
    """Whether ``workload``'s selector takes ``pod`` as one of its own (same namespace)."""
    selector = workload.selector
    return (
        workload.ref.kind != "Pod"
        and selector is not None
        and not selector.is_empty
        and pod.namespace == (workload.ref.namespace or "default")
        and selector_matches(selector, pod.labels)
    )


def _claim(sim: Simulation, workload: Workload, claimed: set[SimPod]) -> list[SimPod]:
    """The existing pods ``workload`` owns that no workload before it took."""
    mine = [
        pod
        for pod in sim.candidates(workload.selector)
        if pod.existing and pod not in claimed and owns(workload, pod)
    ]
    mine.sort(key=lambda pod: pod.name)
    claimed.update(mine)
    return mine


def _new_pods(sim: Simulation, workload: Workload, current: list[SimPod]) -> Iterable[SimPod]:
    if workload.ref.kind == "DaemonSet":
        taken = {pod.node.name for pod in current if pod.node is not None}
        for node in daemon_nodes(sim, workload):
            if node.name not in taken:
                yield sim.daemon_pod(workload, node)
        return
    wanted = max(workload.replicas or 0, 0)
    if workload.ref.kind == "StatefulSet":
        # Ordinals are identities: the missing ones are created (web-1 when web-0, web-2 run).
        ordinals = {ordinal_of(pod, workload) for pod in current}
        free = (i for i in range(wanted) if i not in ordinals)
        for replica in itertools.islice(free, max(wanted - len(current), 0)):
            yield sim.pod(workload, replica)
        return
    for replica in range(len(current), wanted):
        yield sim.pod(workload, replica)


def ordinal_of(pod: SimPod, owner: Workload) -> int | None:
    """A StatefulSet pod's ordinal: a placed pod's replica index; an existing pod's
    ``apps.kubernetes.io/pod-index`` label or name suffix (``web-2`` -> 2)."""
    if not pod.existing:
        return pod.replica
    index = pod.labels.get("apps.kubernetes.io/pod-index")
    if index is not None and index.isdigit():
        return int(index)
    suffix = pod.name.removeprefix(f"{owner.ref.name}-")
    return int(suffix) if suffix != pod.name and suffix.isdigit() else None


def daemon_nodes(sim: Simulation, workload: Workload) -> list[SimNode]:
    """The nodes the DaemonSet controller runs ``workload``'s pods on (``nodeShouldRunDaemonPod``)."""
    probe = sim.pod(workload)
    rules = probe.rules
    return [
        node
        for node in sim.nodes
        if node_matches(rules.node_selector, rules.node_terms, node.labels, node.name)
        and sim.untolerated(rules.tolerations, node.taints) is None
    ]
