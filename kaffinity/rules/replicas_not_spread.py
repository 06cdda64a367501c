"""replicas-not-spread: several replicas and nothing that spreads them over nodes or zones."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kaffinity.explain.precedence import refused
from kaffinity.findings import Related, Severity, Violation
from kaffinity.graph.members import RELATION_AFFINITY, RELATION_ANTI_AFFINITY, Member
from kaffinity.k8s.compact import MODEL_FIELDS
from kaffinity.k8s.labels import HOSTNAME
from kaffinity.k8s.model.build import object_ref
from kaffinity.k8s.model.readers import dig
from kaffinity.load.source import DataPath, Document
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.context import Context

#: The kinds whose replicas a spread constraint is about (DaemonSets run one pod per node; Jobs,
#: CronJobs and Pods are not long-running replicated services).
REPLICATED = frozenset({"Deployment", "StatefulSet", "ReplicaSet", "ReplicationController"})


@dataclass(frozen=True, slots=True)
class _Autoscaler:
    doc: Document
    name: str
    min_replicas: int
    written: bool  # whether spec.minReplicas is written (else the default, 1)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _autoscalers(context: Context) -> dict[tuple[str, str, str], list[_Autoscaler]]:
    """HorizontalPodAutoscalers by (namespace, target kind, target name).

    autoscaling/v1 and v2 share ``spec.scaleTargetRef`` (kind, name; same namespace) and
    ``spec.minReplicas``, which defaults to 1 (autoscaling API ``SetDefaults_HorizontalPodAutoscaler``).
    """
    found: dict[tuple[str, str, str], list[_Autoscaler]] = {}
    for doc in context.inventory.documents:
        data = doc.data
        api_version = data.get("apiVersion")
        if data.get("kind") != "HorizontalPodAutoscaler" or not (
            isinstance(api_version, str) and api_version.startswith("autoscaling/")
        ):
            continue
        target = dig(data, ("spec", "scaleTargetRef"))
        if not isinstance(target, dict):
            continue
        kind, name = target.get("kind"), target.get("name")
        if not isinstance(kind, str) or not isinstance(name, str):
            continue
        ref = object_ref(doc, context.settings.namespace)
        minimum = _int(dig(data, ("spec", "minReplicas")))
        namespace = ref.namespace or context.settings.namespace
        found.setdefault((namespace, kind, name), []).append(
            _Autoscaler(doc, ref.name, 1 if minimum is None else minimum, minimum is not None)
        )
    return found


def _host_port(member: Member) -> bool:
    """Whether a container port gets a hostPort: two such pods never share a node (the NodePorts
    filter). Written, or defaulted: with ``hostNetwork: true`` pod defaulting sets ``hostPort =
    containerPort`` on every port of the containers and init containers that has none
    (``pkg/apis/core/v1/defaults.go``, ``SetDefaults_PodSpec`` / ``defaultHostNetworkPorts``; since
    1.28 on the pods only, not in the templates, which changes nothing for the pods)."""
    workload = member.workload
    assert workload is not None
    spec = dig(workload.doc.data, workload.pod.spec_path)
    if not isinstance(spec, dict):
        return False
    field = "containerPort" if workload.pod.host_network else "hostPort"
    containers = [c for key in ("containers", "initContainers") for c in _list(spec.get(key))]
    return any(
        isinstance(port, dict) and (_int(port.get("hostPort")) or _int(port.get(field)))
        for container in containers
        if isinstance(container, dict)
        for port in _list(container.get("ports"))
    )


def _labels(labels: tuple[tuple[str, str], ...]) -> str:
    return ",".join(f"{key}={value}" for key, value in labels)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _autoscaler(candidates: list[_Autoscaler], doc: Document) -> _Autoscaler | None:
    """The workload's autoscaler. Several with one target are variants of one setup linted together
    (overlays, fixtures; the HPA controller would fight over the scale otherwise): prefer the one
    in the workload's own file, else the first."""
    for hpa in candidates:
        if hpa.doc.file == doc.file:
            return hpa
    return candidates[0] if candidates else None


def _spread(context: Context, member: Member) -> bool:
    """Whether anything the user wrote places this workload's replicas deliberately.

    - any topology spread constraint, whatever it selects: users report the tools that demand a
      particular form of spreading as false positives (kube-score, kube-linter, Polaris);
    - pod anti-affinity, required or preferred, that matches its own pods;
    - pod affinity that matches its own pods: packing them together is a choice, not an omission;
    - a nodeSelector on kubernetes.io/hostname or a nodeName: one node on purpose;
    - a hostPort, written or given by ``hostNetwork: true`` to every container port: the NodePorts
      filter already keeps two replicas off one node.
    """
    workload = member.workload
    assert workload is not None
    pod = workload.pod
    if (
        pod.topology_spread_constraints
        or pod.node_name
        or any(key == HOSTNAME for key, _ in pod.node_selector)
    ):
        return True
    if _host_port(member):
        return True
    graph = context.graph
    return any(
        member.id in relation.matches
        for kind in (RELATION_ANTI_AFFINITY, RELATION_AFFINITY)
        for relation in graph.terms(member.id, kind)
    )


def _check(context: Context) -> Iterator[Violation]:
    graph = context.graph
    autoscalers: dict[tuple[str, str, str], list[_Autoscaler]] | None = None
    gone = refused(context)  # never created, so no replicas: api-validation's finding says why, once
    for member in graph.workloads():
        workload = member.workload
        assert workload is not None
        if id(workload.doc) in gone:
            continue
        if workload.controller not in REPLICATED:
            continue
        if not workload.pod.labels:
            # A template without labels is a fragment (a kustomize patch, a test fixture): apps/v1
            # and core/v1 validation require labels the selector matches, so the real pods' labels,
            # and what their anti-affinity selects, come from elsewhere. Stay quiet.
            continue
        if autoscalers is None:
            autoscalers = _autoscalers(context)
        hpa = _autoscaler(
            autoscalers.get((member.namespace, workload.ref.kind, workload.ref.name), []), workload.doc
        )
        written = _int(dig(workload.doc.data, ("spec", "replicas")))
        doc: Document = workload.doc
        path: DataPath = ("spec", "replicas")
        related: tuple[Related, ...] = ()
        if hpa is not None:
            # The autoscaler owns the replica count: it never goes below minReplicas.
            replicas = hpa.min_replicas
            counted = f"at least {replicas} replicas (minReplicas of HorizontalPodAutoscaler {hpa.name})"
            hpa_path: DataPath = ("spec", "minReplicas") if hpa.written else ("spec", "scaleTargetRef")
            if written is None:
                doc, path = hpa.doc, hpa_path
            else:
                related = (Related(hpa.doc, hpa_path, f"HorizontalPodAutoscaler {hpa.name}"),)
        elif written is not None:
            replicas = written
            counted = f"{replicas} replicas"
        else:
            continue  # replicas defaults to 1
        if replicas < 2 or _spread(context, member):
            continue
        kind = workload.ref.kind
        others = graph.terms(member.id, RELATION_ANTI_AFFINITY)
        missing = (
            f"its pod anti-affinity does not select its own pods (labels {_labels(workload.pod.labels)})"
            if others
            else "no pod anti-affinity on its own pods"
        )
        # Not an error: kube-scheduler's system default constraints (hostname maxSkew 3, zone
        # maxSkew 5, ScheduleAnyway) already score spreading for pods a Service, ReplicaSet,
        # ReplicationController or StatefulSet selects, when the pod has none (systemDefaultConstraints
        # in pkg/scheduler/framework/plugins/podtopologyspread/plugin.go, buildDefaultConstraints in
        # its common.go).
        message = (
            f"{kind} {workload.ref.name} runs {counted}, and nothing spreads them: {missing} and no "
            "topologySpreadConstraints. The scheduler's default "
            "spreading (ScheduleAnyway: hostname maxSkew 3, zone maxSkew 5) only scores nodes, so "
            "several replicas may share a node or zone that fails together"
        )
        fix = (
            "add a topologySpreadConstraints entry over topology.kubernetes.io/zone or "
            "kubernetes.io/hostname with a labelSelector matching the pods"
            + (" and matchLabelKeys: [pod-template-hash]" if kind == "Deployment" else "")
            + " (whenUnsatisfiable: ScheduleAnyway to prefer, DoNotSchedule to require)"
        )
        yield Violation(doc, path, message, related=related, fix=fix)


RULE = Rule(
    name="replicas-not-spread",
    category="graph",
    severity=Severity.INFO,
    summary="Several replicas and no anti-affinity or topology spread constraint to spread them.",
    check=_check,
    needs_all_manifests=True,
    docs="""\
## What it finds
A Deployment, StatefulSet, ReplicaSet or ReplicationController with more than one replica that
nothing spreads: no pod anti-affinity term (required or preferred) that matches its own pods and
no `topologySpreadConstraints` at all. The replica count is `spec.replicas` or, when a
HorizontalPodAutoscaler (`autoscaling/v1` or `v2`, same namespace, `spec.scaleTargetRef`) scales
the workload, the autoscaler's `minReplicas` (default 1); it is reported at that field.

Not reported: DaemonSets, Jobs, CronJobs and Pods; one replica; a workload with any topology
spread constraint (whatever it selects: demanding a particular form is a known false positive of
other linters); one whose pod affinity selects its own pods (packed on purpose); one pinned to
a node (`nodeName`, or a `nodeSelector` on `kubernetes.io/hostname`); one with a `hostPort`
on a container port, written or given by `hostNetwork: true` (pod defaulting sets `hostPort =
containerPort` on every port without one: `SetDefaults_PodSpec`), since the scheduler's
NodePorts filter never puts two such pods on one node; a pod template without labels (a fragment such as a
kustomize patch: the real pods' labels, and what spreads them, are defined elsewhere); an
object the API server refuses (`api-validation`'s error: an empty selector or one its template's
labels do not match, a request above its limit...), which is never created and so has no
replicas to spread (`ValidateDeploymentSpec` / `ValidateStatefulSetSpec` in
`pkg/apis/apps/validation`).

## Why it matters
This is advice, hence severity info. kube-scheduler does spread such pods by default: when a pod
has no constraints of its own, the PodTopologySpread plugin applies the system default
constraints (`kubernetes.io/hostname` maxSkew 3 and `topology.kubernetes.io/zone` maxSkew 5,
both `ScheduleAnyway`) to pods that a Service, ReplicaSet, ReplicationController or StatefulSet
selects. But they only score nodes, among other scores (resources, image locality): three
replicas may still land on one node or in one zone, and then fail together when it does.

## Example
```yaml
kind: Deployment
spec:
  replicas: 3                                  # nothing spreads the three
  template:
    spec:
      containers: [{name: web, image: nginx}]
```

## Fix
Add a topology spread constraint for the pods, for example:

```yaml
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: ScheduleAnyway
    labelSelector: {matchLabels: {app: web}}
    matchLabelKeys: [pod-template-hash]          # Deployments: count this revision only
```

or preferred pod anti-affinity on the workload's own label.

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/scheduler/framework/plugins/podtopologyspread/plugin.go` (`systemDefaultConstraints`) and
  `common.go` (`buildDefaultConstraints`)
- https://kubernetes.io/docs/concepts/scheduling-eviction/topology-spread-constraints/
""",
    reads=MODEL_FIELDS,
)
