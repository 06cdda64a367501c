"""A live cluster's capture (``kubectl get nodes,pods,... -A -o yaml``): its Pending pods, the
order kube-scheduler's queue takes them in, and the workload each pod belongs to.

A Pending pod is one the scheduler still has to place: no ``spec.nodeName`` (the binding sets
it) and ``status.phase`` Pending (the API server sets it at creation, ``PrepareForCreate`` of
``pkg/registry/core/pod/strategy.go``; a hand-written pod without a status counts too). A pod
with ``status.nominatedNodeName`` is one preemption made room for (``Evaluator.prepareCandidate``
in ``pkg/scheduler/framework/preemption``): still Pending until bound, so it is explained too.
Pods for another scheduler (``spec.schedulerName``) or held by ``schedulingGates`` (KEP-3521)
are not in kube-scheduler's queue and are not explained (they are counted apart).

The queue order is PrioritySort's ``Less`` (``pkg/scheduler/framework/plugins/queuesort``):
the higher ``spec.priority`` first (the Priority admission plugin wrote it into the stored pod),
then the earlier queue timestamp. A capture has no queue timestamps: a pod enters the queue
when the informer sees it created, so ``metadata.creationTimestamp`` stands for it, then
(namespace, name) where those tie.

The workload a pod belongs to is read from its controller ``ownerReference``. A ReplicaSet a
Deployment made is named ``<deployment>-<pod-template-hash>`` and its pods carry that hash as
the ``pod-template-hash`` label (``pkg/controller/deployment/sync.go``,
``getNewReplicaSet``: ``rsName := fmt.Sprintf("%s-%s", d.Name, podTemplateSpecHash)``): such
a pod is named as the Deployment's (the capture holds no ReplicaSets to confirm it).
A Job's CronJob is not recoverable the same way and the Job is named.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kaffinity.k8s.model import Workload
from kaffinity.load.source import Document

#: The label the Deployment controller puts on its ReplicaSets' pods
#: (``apps.DefaultDeploymentUniqueLabelKey``).
POD_TEMPLATE_HASH = "pod-template-hash"
DEFAULT_SCHEDULER = "default-scheduler"


@dataclass(frozen=True, slots=True)
class Owner:
    """The workload a pod belongs to: ``Deployment web`` (through ReplicaSet ``web-5d8f``)."""

    kind: str
    namespace: str
    name: str
    #: The controller named in the pod's ownerReferences when it is not ``kind`` (a ReplicaSet).
    via: str | None = None

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


def owner_of(data: Any) -> Owner | None:
    """The workload behind a pod's object (None: a bare pod, or no controller reference)."""
    if not isinstance(data, Mapping):
        return None
    metadata = data.get("metadata")
    if not isinstance(metadata, Mapping):
        return None
    namespace = metadata.get("namespace")
    namespace = namespace if isinstance(namespace, str) and namespace else "default"
    references = metadata.get("ownerReferences")
    if not isinstance(references, list):
        return None
    chosen = None
    for reference in references:
        if isinstance(reference, Mapping) and isinstance(reference.get("name"), str):
            if reference.get("controller") is True:
                chosen = reference
                break
            chosen = chosen or reference
    if chosen is None:
        return None
    kind, name = str(chosen.get("kind", "")), str(chosen["name"])
    labels = metadata.get("labels")
    template_hash = labels.get(POD_TEMPLATE_HASH) if isinstance(labels, Mapping) else None
    if (
        kind == "ReplicaSet"
        and isinstance(template_hash, str)
        and template_hash
        and name.endswith(f"-{template_hash}")
    ):
        return Owner("Deployment", namespace, name.removesuffix(f"-{template_hash}"), f"ReplicaSet {name}")
    return Owner(kind, namespace, name)


def _status(data: Mapping[str, Any]) -> Mapping[str, Any]:
    status = data.get("status")
    return status if isinstance(status, Mapping) else {}


def nominated_node(data: Any) -> str | None:
    """``status.nominatedNodeName``: where preemption made room for the pod (None: nowhere)."""
    if not isinstance(data, Mapping):
        return None
    value = _status(data).get("nominatedNodeName")
    return value if isinstance(value, str) and value else None


def is_pending_pod(data: Any) -> bool:
    """A Pod the scheduler has yet to bind: no ``spec.nodeName``, phase Pending (or no status)."""
    if not isinstance(data, Mapping) or data.get("kind") != "Pod" or data.get("apiVersion") != "v1":
        return False
    spec = data.get("spec")
    if isinstance(spec, Mapping) and spec.get("nodeName"):
        return False
    phase = _status(data).get("phase")
    return phase in (None, "Pending")


def pending_documents(documents: Iterable[Document]) -> list[Document]:
    """The documents of the capture that are Pending pods (:func:`is_pending_pod`)."""
    return [doc for doc in documents if is_pending_pod(doc.data)]


def queued(workload: Workload) -> bool:
    """Whether kube-scheduler's queue holds this pod (its scheduler, no scheduling gate)."""
    return workload.pod.scheduler_name == DEFAULT_SCHEDULER and not workload.pod.gated


def creation_time(workload: Workload) -> str:
    """``metadata.creationTimestamp`` (RFC 3339, which sorts as text); "~" (last) when absent."""
    metadata = workload.doc.data.get("metadata")
    value = metadata.get("creationTimestamp") if isinstance(metadata, Mapping) else None
    return str(value) if value is not None else "~"


def queue_order(pods: Sequence[Workload], priority: Any) -> list[Workload]:
    """``pods`` in PrioritySort's order: ``priority(pod)`` highest first, then the earlier
    creation time, then namespace and name."""
    return sorted(
        pods,
        key=lambda pod: (-priority(pod), creation_time(pod), pod.ref.namespace or "", pod.ref.name),
    )
