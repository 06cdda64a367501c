"""Which kinds are workloads and where each keeps its pod template: the nine built-in kinds, the
custom ones kaffinity knows (:data:`CUSTOM_WORKLOADS`: Argo Rollouts, OpenKruise, KEDA, Knative,
OpenShift) and those configured in ``.kaffinity.yaml`` (``workloads``, passed in as
``workload_kinds``); which built-in kinds are cluster-scoped. See docs/workloads.md."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kaffinity.load.source import DataPath

DEFAULT_NAMESPACE = "default"


# Where each kind keeps its pod template (spec.template unless listed).
TEMPLATE_PATHS: dict[str, DataPath] = {
    "Pod": (),
    "PodTemplate": ("template",),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}
WORKLOAD_GROUPS: dict[str, tuple[str, ...]] = {
    "Pod": ("v1",),
    "PodTemplate": ("v1",),
    "ReplicationController": ("v1",),
    "Deployment": ("apps/", "extensions/"),
    "ReplicaSet": ("apps/", "extensions/"),
    "StatefulSet": ("apps/",),
    "DaemonSet": ("apps/", "extensions/"),
    "Job": ("batch/",),
    "CronJob": ("batch/",),
}
WORKLOAD_KINDS = frozenset(WORKLOAD_GROUPS)

#: Built-in kinds that are cluster-scoped (others, custom kinds included, are taken as
#: namespaced unless the object is a Namespace).
CLUSTER_SCOPED = frozenset(
    {
        "Namespace", "Node", "PersistentVolume", "StorageClass", "ClusterRole", "ClusterRoleBinding",
        "CustomResourceDefinition", "PriorityClass", "RuntimeClass", "IngressClass", "CSIDriver",
        "CSINode", "VolumeAttachment", "APIService", "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
        "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "CertificateSigningRequest",
        "FlowSchema", "PriorityLevelConfiguration", "ComponentStatus", "DeviceClass",
        "ResourceSlice", "PodSecurityPolicy", "ClusterTrustBundle", "VolumeAttributesClass",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class WorkloadKind:
    """A kind beyond the built-in ones whose objects create pods from an embedded pod template:
    a custom resource kaffinity knows (:data:`CUSTOM_WORKLOADS`) or one configured in
    ``.kaffinity.yaml`` (``workloads``). Keyed by API group and kind, never by kind alone (an
    ``apps.kruise.io`` StatefulSet is not an ``apps/v1`` one)."""

    group: str
    kind: str
    #: The versions of the group it applies to; None: every version.
    versions: tuple[str, ...] | None
    #: Where the pod template (a core/v1 PodTemplateSpec: metadata and spec) is.
    template: DataPath
    #: How many pods run at once: the fields that say it (the first one written counts), and
    #: the count when none is written.
    replicas: tuple[DataPath, ...] = ()
    default_replicas: int = 1
    #: Job-like kinds: at most ``completions`` pods run at once (batch/v1 Job semantics).
    completions: DataPath | None = None
    #: The pods' label selector (a metav1 LabelSelector), if the kind has one.
    selector: DataPath | None = None
    #: The selector is a plain label map defaulting to the template's labels (as a ReplicationController's).
    selector_map: bool = False
    #: The built-in kind whose pods these resemble for placement: ReplicaSet (interchangeable
    #: replicas), StatefulSet (ordinal pods), DaemonSet (one pod per eligible node) or Job.
    controller: str = "ReplicaSet"
    #: Labels the kind's controller adds to every pod (see kaffinity.expand.merge.CONTROLLER_LABELS).
    controller_labels: tuple[str, ...] = ()
    #: Fields of the template's spec that are the kind's own, not a PodSpec's (not validated).
    spec_fields: frozenset[str] = frozenset()

    def matches(self, api_version: str, kind: str) -> bool:
        if kind != self.kind:
            return False
        group, _, version = api_version.rpartition("/")
        return group == self.group and (self.versions is None or version in self.versions)


_KRUISE_VERSIONS = ("v1alpha1", "v1beta1")
#: Custom resources whose objects kaffinity reads as workloads. Paths and defaults from each
#: project's Go types and defaulting functions (cited per entry); strategies are not modelled
#: (the rollout rules skip these kinds).
CUSTOM_WORKLOADS: tuple[WorkloadKind, ...] = (
    # github.com/argoproj/argo-rollouts pkg/apis/rollouts/v1alpha1/types.go RolloutSpec: Template
    # corev1.PodTemplateSpec, Replicas (*int32, "Defaults to 1"), Selector; a Rollout with
    # spec.workloadRef has no template and is not read as a workload (its Deployment is).
    # DefaultRolloutUniqueLabelKey "rollouts-pod-template-hash" is set on every pod.
    WorkloadKind(
        "argoproj.io",
        "Rollout",
        ("v1alpha1",),
        ("spec", "template"),
        (("spec", "replicas"),),
        1,
        selector=("spec", "selector"),
        controller_labels=("rollouts-pod-template-hash",),
    ),
    # github.com/openkruise/kruise apis/apps/v1alpha1/cloneset_types.go, v1beta1 likewise;
    # apis/apps/defaults SetDefaultsCloneSet: replicas 1; strategy ReCreate/InPlace*, not a
    # rolling update of Deployment's kind. cloneset utils WriteRevisionHash sets
    # controller-revision-hash and its short form as pod-template-hash; each pod gets
    # apps.kruise.io/cloneset-instance-id.
    WorkloadKind(
        "apps.kruise.io",
        "CloneSet",
        _KRUISE_VERSIONS,
        ("spec", "template"),
        (("spec", "replicas"),),
        1,
        selector=("spec", "selector"),
        controller_labels=(
            "controller-revision-hash",
            "pod-template-hash",
            "apps.kruise.io/cloneset-instance-id",
        ),
    ),
    # Advanced StatefulSet, a fork of the upstream controller: apis/apps/v1beta1/statefulset_types.go,
    # apis/apps/defaults/v1beta1.go SetDefaultsStatefulSet (replicas 1, OrderedReady); pods named
    # by ordinal with controller-revision-hash and statefulset.kubernetes.io/pod-name.
    WorkloadKind(
        "apps.kruise.io",
        "StatefulSet",
        _KRUISE_VERSIONS,
        ("spec", "template"),
        (("spec", "replicas"),),
        1,
        selector=("spec", "selector"),
        controller="StatefulSet",
        controller_labels=("controller-revision-hash", "statefulset.kubernetes.io/pod-name"),
    ),
    # Advanced DaemonSet: apis/apps/v1alpha1/daemonset_types.go (selector, template); one pod
    # per eligible node, as the upstream DaemonSet it forks.
    WorkloadKind(
        "apps.kruise.io",
        "DaemonSet",
        _KRUISE_VERSIONS,
        ("spec", "template"),
        selector=("spec", "selector"),
        controller="DaemonSet",
        controller_labels=("controller-revision-hash",),
    ),
    # KEDA: apis/keda/v1alpha1/scaledjob_types.go ScaledJobSpec.JobTargetRef *batchv1.JobSpec;
    # each Job it creates runs parallelism pods (default 1) at most completions; the Jobs are
    # batch/v1 Jobs, so kube-apiserver labels their pods (job-name, controller-uid).
    WorkloadKind(
        "keda.sh",
        "ScaledJob",
        ("v1alpha1",),
        ("spec", "jobTargetRef", "template"),
        (("spec", "jobTargetRef", "parallelism"),),
        1,
        completions=("spec", "jobTargetRef", "completions"),
        controller="Job",
        controller_labels=(
            "batch.kubernetes.io/job-name",
            "job-name",
            "batch.kubernetes.io/controller-uid",
            "controller-uid",
        ),
    ),
    # Knative Serving: pkg/apis/serving/v1/service_types.go ServiceSpec.ConfigurationSpec.Template
    # (RevisionTemplateSpec: metadata + RevisionSpec, a PodSpec inlined with Knative's own
    # fields). Pods run at the initial scale (config-autoscaler initial-scale, default 1), or the
    # template's min-scale annotation when written (pkg/apis/autoscaling/register.go
    # MinScaleAnnotation: "autoscaling.knative.dev/min-scale", or the older "minScale"). No selector.
    WorkloadKind(
        "serving.knative.dev",
        "Service",
        ("v1",),
        ("spec", "template"),
        tuple(
            ("spec", "template", "metadata", "annotations", f"autoscaling.knative.dev/{name}")
            for name in ("min-scale", "minScale")
        ),
        1,
        spec_fields=frozenset(
            ("containerConcurrency", "timeoutSeconds", "responseStartTimeoutSeconds", "idleTimeoutSeconds")
        ),
    ),
    # OpenShift: github.com/openshift/api apps/v1/types.go DeploymentConfigSpec: Template
    # *corev1.PodTemplateSpec, Replicas int32 (no default: 0 when absent), Selector
    # map[string]string (defaulted to the template's labels); each revision is a
    # ReplicationController.
    WorkloadKind(
        "apps.openshift.io",
        "DeploymentConfig",
        ("v1",),
        ("spec", "template"),
        (("spec", "replicas"),),
        0,
        selector=("spec", "selector"),
        selector_map=True,
        controller="ReplicationController",
    ),
)


def workload_kind(api_version: str, kind: str, custom: Iterable[WorkloadKind] = ()) -> WorkloadKind | None:
    """The definition of a custom workload kind: configured ones first, then kaffinity's own."""
    for definition in (*custom, *CUSTOM_WORKLOADS):
        if definition.matches(api_version, kind):
            return definition
    return None


def custom_workload_kind(
    data: Mapping[str, Any], workload_kinds: Iterable[WorkloadKind] = ()
) -> WorkloadKind | None:
    """The custom workload kind of an object (a custom resource's group has a dot), or None."""
    kind, api_version = data.get("kind"), data.get("apiVersion")
    if not isinstance(kind, str) or not isinstance(api_version, str):
        return None
    if "." not in api_version.partition("/")[0]:
        return None
    return workload_kind(api_version, kind, workload_kinds)


def pod_template_path(
    kind: str, api_version: str | None = None, workload_kinds: Iterable[WorkloadKind] = ()
) -> DataPath | None:
    """Where a workload kind keeps its pod template; None for other kinds. Without
    ``api_version``, the built-in kinds by name alone; with it, custom kinds too."""
    if api_version is None or (kind in WORKLOAD_GROUPS and api_version.startswith(WORKLOAD_GROUPS[kind])):
        return TEMPLATE_PATHS.get(kind, ("spec", "template")) if kind in WORKLOAD_KINDS else None
    definition = workload_kind(api_version, kind, workload_kinds)
    return definition.template if definition is not None else None
