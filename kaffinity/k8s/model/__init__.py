"""The objects kaffinity reasons about, reduced from loaded documents to typed, immutable views.

Every workload kind becomes one view of the pods it creates (:class:`Workload`): where the pod
template is, its labels, how many replicas (with the API's defaults), the update strategy, the
selector, and every scheduling field as typed terms. Each term keeps its data path, so a rule
reports a term and the engine finds its line.

The model never fails on odd input: a field of the wrong type reads as absent (the schema rules
report it); a kind or apiVersion kaffinity does not know is not a workload.

Besides the nine built-in kinds, objects of custom resources that embed a pod template are
workloads too: the ones kaffinity knows (:data:`kinds.CUSTOM_WORKLOADS`: Argo Rollouts, OpenKruise,
KEDA, Knative, OpenShift) and those configured in ``.kaffinity.yaml`` (``workloads``, passed in
as ``workload_kinds``). See docs/workloads.md.
"""

from kaffinity.k8s.model.build import build_inventory, build_object
from kaffinity.k8s.model.kinds import WorkloadKind
from kaffinity.k8s.model.objects import (
    Affinity,
    Inventory,
    LabelSelector,
    Namespace,
    Node,
    NodeAffinity,
    NodeSelectorTerm,
    Object,
    ObjectRef,
    PodAffinity,
    PodAffinityTerm,
    PodDisruptionBudget,
    PodView,
    PreferredSchedulingTerm,
    PriorityClass,
    Requirement,
    Taint,
    Toleration,
    TopologySpreadConstraint,
    UpdateStrategy,
    WeightedPodAffinityTerm,
    Workload,
)

__all__ = [
    "Affinity",
    "Inventory",
    "LabelSelector",
    "Namespace",
    "Node",
    "NodeAffinity",
    "NodeSelectorTerm",
    "Object",
    "ObjectRef",
    "PodAffinity",
    "PodAffinityTerm",
    "PodDisruptionBudget",
    "PodView",
    "PreferredSchedulingTerm",
    "PriorityClass",
    "Requirement",
    "Taint",
    "Toleration",
    "TopologySpreadConstraint",
    "UpdateStrategy",
    "WeightedPodAffinityTerm",
    "Workload",
    "WorkloadKind",
    "build_inventory",
    "build_object",
]
