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

Pods are placed one replica at a time, workload by workload, in the order of the scheduler's queue
and never in the order of the files (:func:`queue_order`). kube-scheduler's activeQ is a heap
sorted by the QueueSort plugin, PrioritySort (``pkg/scheduler/framework/plugins/queuesort``):
higher pod priority first, then the earlier queue timestamp. A pod's priority is what the
Priority admission plugin gives it (:func:`priority`): its template's ``spec.priority``, else the
``value`` of the PriorityClass it names (a built-in ``system-*`` one, or one of the input or the
cluster file), else, naming none, the value of the ``globalDefault`` class, else 0. Manifests
carry no timestamps, so kaffinity's own choice breaks ties: (namespace, kind, name), then file
and position for objects that share those (:func:`kaffinity.k8s.model.canonical_key`). A
workload's replicas stay together, in replica order (a controller creates them together; a
StatefulSet's in ordinal order, as OrderedReady does). DaemonSet pods take the same queue as the
others, as they have since the scheduler places them (ScheduleDaemonSetPods). The cluster file's
pods are bound before anything is placed.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kaffinity.k8s.model import Namespace, PodDisruptionBudget, PriorityClass, Workload
from kaffinity.k8s.model.build import priority_classes
from kaffinity.k8s.model.objects import canonical_key, namespace_labels
from kaffinity.k8s.model.readers import dig
from kaffinity.k8s.selectors import selector_matches
from kaffinity.load.source import DataPath, Document
from kaffinity.simulate.cluster import Cluster, finished, storage_of
from kaffinity.simulate.framework.profile import FILTERS
from kaffinity.simulate.framework.schedule_one import Simulation
from kaffinity.simulate.framework.types import Constraints, Placement, SimNode, SimPod
from kaffinity.simulate.plugins.nodeaffinity import node_matches

PLACED_KINDS = frozenset(
    ("Pod", "Deployment", "ReplicaSet", "ReplicationController", "StatefulSet", "DaemonSet", "Job", "CronJob")
)
DEFAULT_SCHEDULER = "default-scheduler"
# The PriorityClasses the API server creates (pkg/apis/scheduling/types.go): SystemCriticalPriority
# is 2 * HighestUserDefinablePriority (1e9); system-node-critical is 1000 above it.
SYSTEM_PRIORITIES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}
#: HighestUserDefinablePriority: a PriorityClass above it is refused (admission, validation).
HIGHEST_USER_PRIORITY = 1_000_000_000


PREEMPT_LOWER = "PreemptLowerPriority"


@dataclass(frozen=True, slots=True)
class Priorities:
    """The priority and ``preemptionPolicy`` each PriorityClass name gives, what a pod naming
    none gets, and whether the list is complete (the cluster file lists the cluster's classes:
    a name missing from it does not exist)."""

    values: Mapping[str, int] = field(default_factory=lambda: dict(SYSTEM_PRIORITIES))
    default: int = 0
    policies: Mapping[str, str] = field(default_factory=dict)
    #: the ``globalDefault`` class's policy; ``PreemptLowerPriority`` without one
    #: (``getDefaultPriority`` in plugin/pkg/admission/priority/admission.go)
    default_policy: str = PREEMPT_LOWER
    complete: bool = False
    #: whether a ``globalDefault`` class was declared
    has_default: bool = False

    @classmethod
    def of(cls, *sources: Iterable[PriorityClass], complete: bool = False) -> Priorities:
        """The classes of ``sources`` on top of the built-in ones, the cluster's first: a class
        that exists keeps its (immutable) value, and the API refuses a second ``globalDefault``.

        What the API server lets exist (pkg/apis/scheduling/validation, the Priority admission
        plugin in plugin/pkg/admission/priority): no ``system-`` name but the built-in classes,
        no user value above :data:`HIGHEST_USER_PRIORITY`; several ``globalDefault`` classes
        within one source (the race the plugin allows for) give the lowest value
        (``getDefaultPriorityClass``). A name defined twice in one source takes the definition
        first in :func:`canonical_key` order, not in the order the files were given."""
        values = dict(SYSTEM_PRIORITIES)
        policies: dict[str, str] = {}
        defaults: list[tuple[int, str]] = []
        for source in sources:
            mine: dict[str, int] = {}
            had_default = bool(defaults)
            for pc in sorted(source, key=canonical_key):
                name, value = pc.ref.name, pc.value
                if (
                    value is None
                    or value > HIGHEST_USER_PRIORITY
                    or name.startswith("system-")
                    or name in values
                    or name in mine
                    or (pc.global_default and had_default)
                ):
                    continue
                mine[name] = value
                policies[name] = pc.preemption_policy
                if pc.global_default:
                    defaults.append((value, pc.preemption_policy))
            values.update(mine)
        value, policy = min(defaults, key=lambda pair: pair[0], default=(0, PREEMPT_LOWER))
        return cls(values, value, policies, policy, complete, bool(defaults))


@dataclass(frozen=True, slots=True)
class Admission:
    """What the Priority admission plugin (``admitPod`` in plugin/pkg/admission/priority/
    admission.go) makes of a pod created from a template: its priority, whether it may preempt,
    and its refusal (the ``Forbidden`` error's text, and where the template says what is refused)."""

    priority: int
    preempts: bool
    refused: str | None = None
    path: DataPath = ()


def admit(workload: Workload, priorities: Priorities | None = None) -> Admission:
    """The Priority admission plugin on a pod of ``workload``'s template at CREATE.

    ``establishPriority``: the class ``priorityClassName`` names gives the value and the
    ``preemptionPolicy``; naming none, the ``globalDefault`` class's (else 0 and
    ``PreemptLowerPriority``). Refused (``Forbidden``): a name no class has, where the list is
    complete (``no PriorityClass with name X was found``); a ``spec.priority`` other than the
    computed one; a ``spec.preemptionPolicy`` other than the computed one (so a pod saying
    ``Never`` without a class, on a cluster without a ``globalDefault`` class saying ``Never``,
    is refused). What kaffinity cannot know (a class of an incomplete list) is never refused:
    ``spec.priority`` then counts, else 0, and the pod's own policy."""
    priorities = priorities or SYSTEM
    spec = dig(workload.doc.data, workload.pod.spec_path)
    spec = spec if isinstance(spec, Mapping) else {}
    spec_path = workload.pod.spec_path
    own = spec.get("priority")
    own = own if isinstance(own, int) and not isinstance(own, bool) else None
    own_policy = spec.get("preemptionPolicy") if isinstance(spec.get("preemptionPolicy"), str) else None
    name = spec.get("priorityClassName")
    value: int | None
    policy: str | None
    if isinstance(name, str) and name:
        value, policy = priorities.values.get(name), None
        if value is not None:
            policy = priorities.policies.get(name, PREEMPT_LOWER)
        elif priorities.complete:
            return Admission(
                own or 0,
                False,
                f"no PriorityClass with name {name} was found",
                (*spec_path, "priorityClassName"),
            )
    elif priorities.complete or priorities.has_default:
        value, policy = priorities.default, priorities.default_policy
    else:  # a globalDefault class the cluster may have is not known
        value, policy = None, None
    if own is not None and value is not None and own != value:
        return Admission(
            own,
            False,
            f"the integer value of priority ({own}) must not be provided in pod spec; priority admission "
            f"controller computed {value} from the given PriorityClass name",
            (*spec_path, "priority"),
        )
    if own_policy is not None and policy is not None and own_policy != policy:
        return Admission(
            value if value is not None else own or 0,
            False,
            f"the string value of PreemptionPolicy ({own_policy}) must not be provided in pod spec; "
            f"priority admission controller computed {policy} from the given PriorityClass name",
            (*spec_path, "preemptionPolicy"),
        )
    if value is None:  # a class not known, or a globalDefault class the cluster may have: 0
        value = own if own is not None else 0
    return Admission(value, (policy or own_policy or PREEMPT_LOWER) != "Never")


#: Only the built-in classes (none declared).
SYSTEM = Priorities()


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
    #: the workloads in the order they were placed (:func:`queue_order`), placed kinds or not
    queue: list[Workload] = field(default_factory=list)
    #: id(workload) -> the Priority admission plugin's refusal of its pods: none is created
    refused: dict[int, Admission] = field(default_factory=dict)

    @property
    def pending(self) -> list[Placement]:
        return [placement for placement in self.placements if placement.node is None]


class TooManyPods(Exception):
    """The pods a placement would create pass ``limits: pods``: it is not run."""

    def __init__(self, pods: int, limit: int) -> None:
        self.pods, self.limit = pods, limit
        super().__init__(
            f"the workloads ask for {pods:,} pods, more than the {limit:,} one placement may create "
            "(limits: pods; --limit pods=N raises it)"
        )


def pods_wanted(sim: Simulation, workloads: Iterable[Workload]) -> int:
    """How many pods placing ``workloads`` may create: replicas (Jobs: the pods running at once),
    one DaemonSet pod per node its controller runs it on; counted before any pod is built."""
    total = 0
    for workload in workloads:
        if not placed(workload):
            continue
        if workload.controller == "DaemonSet":
            total += len(daemon_nodes(sim, workload))
        else:
            total += max(workload.replicas or 0, 0)
    return total


def placed(workload: Workload) -> bool:
    """Whether kaffinity places ``workload``'s pods (a kind that creates pods, for this scheduler)."""
    kind = workload.controller  # a custom kind's pods are placed like those of its model
    if kind not in PLACED_KINDS:
        return False
    if kind == "Pod" and finished(workload):
        return False
    # A pod with schedulingGates waits outside the scheduler's queue until something (Kueue, a
    # webhook's controller) removes them (KEP-3521; the SchedulingGates PreEnqueue plugin): it is
    # not placed, and no rule calls it Pending.
    return workload.pod.scheduler_name == DEFAULT_SCHEDULER and not workload.pod.gated


def simulation(
    cluster: Cluster,
    *,
    version: str,
    gates: Mapping[str, bool] | None = None,
    namespaces: Iterable[Namespace] = (),
    filters: Iterable[str] = FILTERS,
    priorities: Priorities | None = None,
    pdbs: Iterable[PodDisruptionBudget] = (),
    max_nodes: int | None = None,
    documents: Iterable[Document] = (),
) -> tuple[Simulation, list[SimPod]]:
    """A simulation of ``cluster`` with its existing pods bound (pods on unknown nodes are left out).

    ``priorities``: the PriorityClasses (default: the cluster file's); ``pdbs``: the input's
    budgets, beside the cluster's, for preemption; ``max_nodes``: how far autoscaling may grow
    the cluster (``limits: nodes``); ``documents``: the input's, whose PVCs, StorageClasses and
    RuntimeClasses count beside the cluster's (:func:`kaffinity.simulate.cluster.storage_of`)."""
    if priorities is None:
        declared = priority_classes(doc for file in cluster.files for doc in file.documents)
        priorities = Priorities.of(declared, complete=bool(declared))
    chosen = priorities
    sim = Simulation(
        cluster.nodes,
        version=version,
        gates=gates,
        # The cluster's Namespaces first; of the input's, one declared twice counts in canonical
        # order, not in the order of the files.
        namespaces=namespace_labels((*cluster.namespaces, *sorted(namespaces, key=canonical_key))),
        filters=filters,
        priority=lambda workload: admitted(workload, chosen),
        pools=cluster.pools,
        pdbs=(*cluster.pdbs, *pdbs),
        max_nodes=max_nodes,
        storage=storage_of(cluster, documents),
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
    classes: Iterable[PriorityClass] = (),
    max_pods: int | None = None,
    pdbs: Iterable[PodDisruptionBudget] = (),
    max_nodes: int | None = None,
    documents: Iterable[Document] = (),
) -> PlacementRun:
    """Place every pod of ``workloads`` on ``cluster``, in the scheduler's queue order
    (:func:`queue_order`; shown by a command's progress indicator, one tick per workload).

    ``classes`` are the input's PriorityClass objects; the cluster file's are read here.
    ``max_pods`` (``limits: pods``): :class:`TooManyPods` when the workloads ask for more pods
    (:func:`pods_wanted`), before any is placed."""
    from kaffinity.load.progress import current as current_progress

    progress = current_progress()
    declared = priority_classes(doc for file in cluster.files for doc in file.documents)
    # A cluster file that lists PriorityClasses (a capture of `kubectl get priorityclasses`
    # lists the built-in ones too) lists them all: a name missing there does not exist.
    priorities = Priorities.of(declared, classes, complete=bool(declared))
    sim, existing = simulation(
        cluster,
        version=version,
        gates=gates,
        namespaces=namespaces,
        filters=filters,
        priorities=priorities,
        pdbs=pdbs,
        max_nodes=max_nodes,
        documents=documents,
    )
    if max_pods is not None:
        wanted = pods_wanted(sim, workloads)
        if wanted > max_pods:
            raise TooManyPods(wanted, max_pods)
    run = PlacementRun(sim, [], existing)
    claimed: set[SimPod] = set()
    run.queue = queue_order(workloads, priorities)
    daemons = [w for w in run.queue if placed(w) and w.controller == "DaemonSet"]
    if daemons and sim.pools:
        sim.on_new_node = lambda node: _daemon_pods_for(sim, daemons, node)
    with progress.stage("placing pods", len(workloads), "workloads"):
        for workload in run.queue:
            progress.tick(workload.ref)
            if not placed(workload):
                continue
            current = _claim(sim, workload, claimed)
            run.pods[id(workload)] = current
            mine = run.by_workload.setdefault(id(workload), [])
            admission = admit(workload, priorities)
            if admission.refused is not None:  # its controller's creates fail (FailedCreate)
                run.refused[id(workload)] = admission
                continue
            for pod in _new_pods(sim, workload, current):
                placement = sim.place(pod, record=record, post=True)
                run.placements.append(placement)
                mine.append(placement)
                if placement.node is not None:
                    current.append(pod)
    return run


def _daemon_pods_for(sim: Simulation, daemons: list[Workload], node: SimNode) -> list[SimPod]:
    """The DaemonSet pods that run on a node autoscaling adds, bound at once: cluster-autoscaler
    counts them on its template node, and the DaemonSet controller creates them with the node."""
    bound = []
    for workload in daemons:
        if runs_daemon(sim, sim.pod(workload).constraints, node):
            pod = sim.daemon_pod(workload, node)
            sim.bind(pod, node)
            bound.append(pod)
    return bound


def priority(workload: Workload, priorities: Priorities = SYSTEM) -> int:
    """The priority of ``workload``'s pods, as ``corev1helpers.PodPriority`` reads it: its
    ``spec.priority`` (what admission set on a pod that exists, or what a template asks for:
    admission refuses another value than its class's, :func:`admit`), else what the Priority
    admission plugin computes (:func:`admit`): the value of the class ``priorityClassName``
    names, else, naming none, the ``globalDefault`` class's value, else 0. A class that is not
    known counts as 0."""
    spec = dig(workload.doc.data, workload.pod.spec_path)
    value = spec.get("priority") if isinstance(spec, Mapping) else None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return admit(workload, priorities).priority


def admitted(workload: Workload, priorities: Priorities = SYSTEM) -> int:
    """:func:`priority`, carrying whether the pod may preempt as admission leaves its
    ``preemptionPolicy`` (:class:`~kaffinity.simulate.framework.podinfo.Admitted`)."""
    from kaffinity.simulate.framework.podinfo import Admitted

    return Admitted(priority(workload, priorities), admit(workload, priorities).preempts)


def queue_order(workloads: Iterable[Workload], priorities: Priorities = SYSTEM) -> list[Workload]:
    """``workloads`` in the order their pods are placed, whatever the order of the input.

    PrioritySort's ``Less`` (pkg/scheduler/framework/plugins/queuesort): the higher priority
    first, then the earlier queue timestamp. Manifests have no timestamps: ties go by
    :func:`kaffinity.k8s.model.canonical_key` ((namespace, kind, name), kaffinity's choice, then file
    and position, which tell apart objects that share a name: they would be one object in a
    cluster)."""

    def key(workload: Workload) -> tuple[int, tuple[str, str, str, str, int, tuple[int, ...]]]:
        return (-priority(workload, priorities), canonical_key(workload))

    return sorted(workloads, key=key)


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
    if workload.controller == "DaemonSet":
        taken = {pod.node.name for pod in current if pod.node is not None}
        # its pods on nodes autoscaling added came with the node (Simulation.on_new_node)
        taken.update(n.name for n, _ in sim.added if any(p.workload is workload for p in n.daemons))
        for node in daemon_nodes(sim, workload):
            if node.name not in taken:
                yield sim.daemon_pod(workload, node)
        return
    wanted = max(workload.replicas or 0, 0)
    if workload.controller == "StatefulSet":
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
    constraints = sim.pod(workload).constraints
    return [node for node in sim.nodes if runs_daemon(sim, constraints, node)]


def runs_daemon(sim: Simulation, constraints: Constraints, node: SimNode) -> bool:
    """``nodeShouldRunDaemonPod``: the nodeSelector and required node affinity match ``node``,
    and the pod (with the tolerations the controller adds) tolerates its taints."""
    return (
        node_matches(constraints.node_selector, constraints.node_terms, node.labels, node.name)
        and sim.untolerated(constraints.tolerations, node.taints) is None
    )
