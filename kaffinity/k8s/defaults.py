"""The object kube-apiserver would store: a manifest with the API's defaults filled in.

A ValidatingAdmissionPolicy sees ``object`` after defaulting (admission runs on the decoded,
defaulted object), so ``object.spec.replicas`` is 1 on a Deployment that does not write it,
not a missing field. The defaults below are those of the built-in types kaffinity models:

- ``pkg/apis/apps/v1/defaults.go``: Deployment, StatefulSet, DaemonSet, ReplicaSet;
- ``pkg/apis/batch/v1/defaults.go``: Job, CronJob;
- ``pkg/apis/autoscaling/*/defaults.go``: HorizontalPodAutoscaler's ``minReplicas``;
- ``pkg/apis/core/v1/defaults.go``: ReplicationController (selector and replicas);
- ``pkg/apis/core/v1/defaults.go``: the pod spec of every template and of a Pod
  (``SetDefaults_PodSpec``, ``SetDefaults_Container``, probes, ports, volumes), plus what
  ``SetDefaults_Pod`` adds to a bare Pod only (requests copied from limits).

Defaults that depend on a feature gate follow the gate's default at ``--kube-version``
(:mod:`kaffinity.k8s.gates`). Fields the API server sets from the request (``uid``,
``creationTimestamp``, ``generation``) are not invented. A field written as null is unset, as
in the typed object the API server decodes. The input is never changed: the result is a copy
made of plain dicts and lists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kaffinity.k8s.gates import minor

Defaulter = Callable[[dict[str, Any], int], None]


#: CEL's int is 64-bit: a larger YAML integer is carried as a double, as JSON would.
_INT64 = (-(2**63), 2**63 - 1)


def plain(value: Any) -> Any:
    """A deep copy of YAML data as the API server holds it, in plain dicts, lists and scalars
    (the loader's mappings and sequences are dict and list subclasses; their keys are strings).
    A mapping entry written as null is left out: the API server decodes a manifest into its
    typed object, where ``affinity: null`` or ``tolerations: null`` is the field unset (and
    omitted when the object is read back), not a null value. An integer beyond 64 bits becomes
    a float.

    Copied without recursion: a manifest may nest as deep as the loader's ``limits.depth``
    (400 levels by default), more than the interpreter's stack holds at a few frames a level.
    Every container of the copy is its own, also where aliases shared one in the input: the
    defaults below write into the copy (go-yaml, too, decodes each alias into a fresh value)."""
    if not isinstance(value, dict | list):
        return _copy(value)
    root: Any = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        if isinstance(target, dict):
            for key, item in source.items():
                if item is not None:
                    target[key] = item if type(item) in _AS_IS else _copy_into(item, stack)
        else:
            target.extend([item if type(item) in _AS_IS else _copy_into(item, stack) for item in source])
    return root


#: Scalars copied as they are (the common case, tested first).
_AS_IS = frozenset({str, bool, float})


def _copy_into(item: Any, stack: list[tuple[Any, Any]]) -> Any:
    """``item`` copied, or an empty container put on ``stack`` to be filled."""
    if isinstance(item, dict):
        copy: dict[str, Any] = {}
        stack.append((item, copy))
        return copy
    if isinstance(item, list):
        items: list[Any] = []
        stack.append((item, items))
        return items
    return _copy(item)


def _copy(item: Any) -> Any:
    """A scalar as the API server holds it."""
    kind = type(item)
    if kind is int:
        return item if _INT64[0] <= item <= _INT64[1] else float(item)
    if item is None or kind in _AS_IS:
        return item
    # A subclass of a scalar type (ruamel's anchored booleans and numbers): its plain value.
    for scalar in (bool, int, float, str):
        if isinstance(item, scalar):
            return _copy(scalar(item))
    return item


def defaulted(data: Mapping[str, Any], kube_version: str, namespace: str | None) -> dict[str, Any]:
    """A defaulted copy of the object ``data``; ``namespace``: the request's, written into
    ``metadata.namespace`` as the API server does for a namespaced object (None: cluster-scoped)."""
    obj: dict[str, Any] = plain(data)
    metadata = obj.get("metadata")
    if isinstance(metadata, dict) and namespace is not None:
        metadata.setdefault("namespace", namespace)
    group = str(obj.get("apiVersion", "")).partition("/")[0] if "/" in str(obj.get("apiVersion", "")) else ""
    defaulter = _DEFAULTERS.get((group, str(obj.get("kind"))))
    if defaulter is not None and "spec" not in obj:
        # ``spec`` is a struct, not a pointer, in these types: the stored object always has one.
        obj["spec"] = {}
    if defaulter is not None and isinstance(obj.get("spec"), dict):
        defaulter(obj["spec"], minor(kube_version))
    return obj


def _deployment(spec: dict[str, Any], version: int) -> None:
    spec.setdefault("replicas", 1)
    strategy = _child(spec, "strategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _child(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    _template(spec, version)


def _stateful_set(spec: dict[str, Any], version: int) -> None:
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = _child(spec, "updateStrategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        _child(strategy, "rollingUpdate").setdefault("partition", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    # StatefulSetAutoDeletePVC: beta and on by default from 1.27, GA in 1.32.
    retention = _child(spec, "persistentVolumeClaimRetentionPolicy")
    retention.setdefault("whenDeleted", "Retain")
    retention.setdefault("whenScaled", "Retain")
    _template(spec, version)


def _daemon_set(spec: dict[str, Any], version: int) -> None:
    strategy = _child(spec, "updateStrategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _child(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    _template(spec, version)


def _replica_set(spec: dict[str, Any], version: int) -> None:
    spec.setdefault("replicas", 1)
    _template(spec, version)


def _replication_controller(spec: dict[str, Any], version: int) -> None:
    """``SetDefaults_ReplicationController``: the selector from the template's labels, one replica
    (the object's own labels, also taken from the template's, are not defaulted here)."""
    template = spec.get("template")
    labels = template.get("metadata", {}).get("labels") if isinstance(template, dict) else None
    if isinstance(labels, dict) and labels and not spec.get("selector"):
        spec["selector"] = dict(labels)
    spec.setdefault("replicas", 1)
    _template(spec, version)


def _horizontal_pod_autoscaler(spec: dict[str, Any], version: int) -> None:
    """``SetDefaults_HorizontalPodAutoscaler``: ``minReplicas`` 1 (every autoscaling version; the
    default metric autoscaling/v2 adds when none is written is not modelled)."""
    spec.setdefault("minReplicas", 1)


def _no_defaults(spec: dict[str, Any], version: int) -> None:
    """A type with no defaults in its spec (which the stored object still has)."""


def _job(spec: dict[str, Any], version: int) -> None:
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    if spec.get("backoffLimitPerIndex") is None:
        spec.setdefault("backoffLimit", 6)
    else:
        spec.setdefault("backoffLimit", 2**31 - 1)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    if version >= 29:  # JobPodReplacementPolicy: beta and on by default from 1.29
        replacement = "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
        spec.setdefault("podReplacementPolicy", replacement)
    _template(spec, version)


def _cron_job(spec: dict[str, Any], version: int) -> None:
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    job = spec.get("jobTemplate")
    if isinstance(job, dict) and isinstance(job.get("spec"), dict):
        _job(job["spec"], version)


def _pod(spec: dict[str, Any], version: int) -> None:
    pod_spec(spec)
    for container in _containers(spec):
        _requests_from_limits(container)


def _template(spec: dict[str, Any], version: int) -> None:
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        pod_spec(template["spec"])


def pod_spec(spec: dict[str, Any]) -> None:
    """``SetDefaults_PodSpec`` and what it reaches: containers, probes, ports, volumes."""
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    host_network = bool(spec.get("hostNetwork"))
    for container in _containers(spec):
        _container(container, host_network)
    for volume in spec.get("volumes") or ():
        if isinstance(volume, dict):
            _volume(volume)


def _containers(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        container
        for field in ("initContainers", "containers", "ephemeralContainers")
        for container in spec.get(field) or ()
        if isinstance(container, dict)
    ]


def _container(container: dict[str, Any], host_network: bool) -> None:
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    if "imagePullPolicy" not in container:
        container["imagePullPolicy"] = _pull_policy(str(container.get("image", "")))
    for port in container.get("ports") or ():
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if host_network and "containerPort" in port:
                port.setdefault("hostPort", port["containerPort"])
    for field in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(field)
        if isinstance(probe, dict):
            _probe(probe)


def _pull_policy(image: str) -> str:
    """Always for ``:latest`` or no tag, IfNotPresent for any other tag or a digest
    (``SetDefaults_Container``, via ``parsers.ParseImageName``)."""
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _probe(probe: dict[str, Any]) -> None:
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    http = probe.get("httpGet")
    if isinstance(http, dict):
        http.setdefault("path", "/")
        http.setdefault("scheme", "HTTP")


def _volume(volume: dict[str, Any]) -> None:
    for source in ("configMap", "secret", "downwardAPI", "projected"):
        value = volume.get(source)
        if isinstance(value, dict):
            value.setdefault("defaultMode", 420)
    if isinstance(volume.get("hostPath"), dict):
        volume["hostPath"].setdefault("type", "")


def _requests_from_limits(container: dict[str, Any]) -> None:
    """A bare Pod's container with limits and no request of a resource requests the limit."""
    resources = container.get("resources")
    if not isinstance(resources, dict) or not isinstance(resources.get("limits"), dict):
        return
    requests = resources.setdefault("requests", {})
    if isinstance(requests, dict):
        for name, value in resources["limits"].items():
            requests.setdefault(name, value)


def _child(parent: dict[str, Any], key: str) -> dict[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


_DEFAULTERS: dict[tuple[str, str], Defaulter] = {
    ("apps", "Deployment"): _deployment,
    ("apps", "StatefulSet"): _stateful_set,
    ("apps", "DaemonSet"): _daemon_set,
    ("apps", "ReplicaSet"): _replica_set,
    ("batch", "Job"): _job,
    ("batch", "CronJob"): _cron_job,
    ("", "Pod"): _pod,
    ("", "ReplicationController"): _replication_controller,
    ("policy", "PodDisruptionBudget"): _no_defaults,
    ("autoscaling", "HorizontalPodAutoscaler"): _horizontal_pod_autoscaler,
}
