"""The declared cluster (``--cluster FILE|DIR`` or ``cluster:`` in the config).

A cluster file holds what ``kubectl get nodes,pods,namespaces -A -o yaml`` prints (a ``List``
or plain documents): Nodes, Namespaces, and existing Pods, bound to a node by
``spec.nodeName``. Pods that have finished (``status.phase`` Succeeded or Failed) no longer
count: the scheduler's snapshot drops them, so they neither match nor block anyone.

The files are loaded like manifests (same loader, same one-line errors); their objects are
never linted, only consulted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kaffinity.loader import SourceFile
from kaffinity.model import Inventory, Namespace, Node, Workload, build_inventory

_FINISHED = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class Cluster:
    files: tuple[SourceFile, ...]
    nodes: tuple[Node, ...]
    namespaces: tuple[Namespace, ...]
    #: Pods bound to a node and still running: the cluster's existing pods.
    pods: tuple[Workload, ...]

    @property
    def has_pods(self) -> bool:
        return bool(self.pods)


def cluster_from(files: Sequence[SourceFile], default_namespace: str = "default") -> Cluster:
    inventory: Inventory = build_inventory(
        (doc for file in files for doc in file.documents), default_namespace
    )
    pods = tuple(
        workload
        for workload in inventory.workloads
        if workload.ref.kind == "Pod" and workload.pod.node_name and not _finished(workload)
    )
    return Cluster(tuple(files), inventory.nodes, inventory.namespaces, pods)


def _finished(pod: Workload) -> bool:
    status = pod.doc.data.get("status")
    return isinstance(status, dict) and status.get("phase") in _FINISHED
