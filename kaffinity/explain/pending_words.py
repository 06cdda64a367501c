"""The words of the pending analysis (:mod:`kaffinity.explain.pending`): counts, domains, pods
and the scheduler's reasons as the topology rules' messages say them (facts before words)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from kaffinity.explain.wording import domain_word, name_list
from kaffinity.findings import Related
from kaffinity.k8s.model.readers import dig
from kaffinity.load.source import DataPath
from kaffinity.simulate.framework.types import Placement, SimNode

if TYPE_CHECKING:
    from kaffinity.explain.pending import Stuck
    from kaffinity.k8s.model import Workload


def counts_text(counts: Mapping[str, int], domains: Iterable[str]) -> str:
    return ", ".join(f"{domain}: {counts.get(domain, 0)}" for domain in domains)


def node_labels_path(node: SimNode) -> DataPath:
    """Where a node's labels are written: a Node object's metadata, or its ClusterTopology pool."""
    return (*node.node.path, "labels") if node.node.path else ("metadata", "labels")


def node_related(node: SimNode, message: str, path: DataPath | None = None) -> Related:
    return Related(node.node.doc, node_labels_path(node) if path is None else path, message)


def replicas_field(workload: Workload) -> DataPath | None:
    """The field that sets how many pods run at once, when written (else None)."""
    kind = workload.ref.kind
    if workload.custom is not None:
        written = [path for path in workload.custom.replicas if dig(workload.doc.data, path) is not None]
        return written[0] if written else None
    if kind in ("Deployment", "ReplicaSet", "ReplicationController", "StatefulSet"):
        path: DataPath = ("spec", "replicas")
    elif kind == "Job":
        path = ("spec", "parallelism")
    elif kind == "CronJob":
        path = ("spec", "jobTemplate", "spec", "parallelism")
    else:
        return None
    return path if dig(workload.doc.data, path) is not None else None


def pod_word(placement: Placement) -> str:
    """A Pending pod, named as its controller names it (a DaemonSet's: by its node)."""
    pod = placement.pod
    if pod.constraints.pinned is not None and pod.workload.controller == "DaemonSet":
        return f"its pod for node {pod.constraints.pinned}"
    return pod.name


def pending_words(stuck: Stuck) -> str:
    """``web[3] and web[4] stay Pending`` (a StatefulSet with OrderedReady: the later ones are
    never created, since the controller waits for each pod to be Running and Ready:
    ``pkg/controller/statefulset/stateful_set_control.go``)."""
    pending = stuck.pending
    if not pending:
        return "no pod is Pending now (its existing pods run), but every pod it creates anew stays Pending"
    workload = stuck.workload
    if workload.controller == "DaemonSet":
        nodes = [p.pod.constraints.pinned or "?" for p in pending]
        if len(nodes) == 1:
            return f"its pod for node {nodes[0]} stays Pending"
        return f"its pods for {len(nodes)} nodes ({name_list(nodes)}) stay Pending"
    names = [pod_word(p) for p in pending]
    if (
        workload.controller == "StatefulSet"
        and workload.pod_management_policy == "OrderedReady"
        and len(names) > 1
    ):
        return (
            f"{names[0]} stays Pending and, as podManagementPolicy is OrderedReady, the StatefulSet "
            f"controller never creates {name_list(names[1:])}"
        )
    verb = "stays" if len(names) == 1 else "stay"
    return f"{name_list(names)} {verb} Pending"


def no_scale_up(stuck: Stuck) -> str:
    """``; the autoscaler cannot help: pool general is at its max of 3 nodes`` when the cluster
    declares pools that may grow and none took the Pending pods ("" otherwise)."""
    why = stuck.pending[0].no_scale_up if stuck.pending else None
    return f"; the autoscaler cannot help: {why}" if why else ""


def in_domains(key: str, values: list[str]) -> str:
    """``on node a``, ``on nodes a and b``, ``in zones a and b``, ``in rack domain r1``."""
    word = domain_word(key)
    names = name_list(values)
    many = len(values) != 1
    if word == "node":
        return f"on node{'s' if many else ''} {names}"
    if " " in word:  # "<key> domain"
        return f"in {word}{'s' if many else ''} {names}"
    return f"in {word}{'s' if many else ''} {names}"


def cannot_run(replicas: int) -> str:
    """What the static analysis alone says of the pods (no simulation: no names, no count)."""
    return "its pod cannot be scheduled" if replicas == 1 else f"none of its {replicas} pods can be scheduled"


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"
