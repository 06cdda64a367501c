"""pdb-blocks-eviction: a PodDisruptionBudget that allows no disruption even when all its pods run.

The budget's arithmetic is the disruption controller's (``getExpectedPodCount`` in
``pkg/controller/disruption/disruption.go``; policy/v1), evaluated in the best case, every
selected pod running and Ready:

* ``maxUnavailable`` (int, or a percentage rounded up) or a percentage ``minAvailable``
  (rounded up): the expected count is the sum of the scales of the pods' controllers
  (``getExpectedScale``: ReplicaSet/Deployment, ReplicationController, StatefulSet, or anything
  with a ``scale`` subresource). A pod without a controller counts for nothing; a controller
  without a scale subresource (DaemonSet, Job) makes the sync fail: ``failSafe`` sets
  ``disruptionsAllowed: 0`` with condition ``SyncFailed``.
* an integer ``minAvailable``: the expected count is the number of selected pods.
* ``disruptionsAllowed = currentHealthy - desiredHealthy``, and 0 when the expected count is
  0 (``updatePdbStatus``).

The pods a budget selects are the graph's (selector in the budget's namespace): the linted
workloads' (``replicas``, the HorizontalPodAutoscaler's ``minReplicas`` when one in the input
targets the workload; a DaemonSet's pod count only with a declared cluster) and the cluster
file's existing pods that no linted workload owns (their ``ownerReferences`` name the
controller). The rule needs no simulation and runs without a cluster.

Rollouts are not what a budget blocks: the Deployment, StatefulSet and DaemonSet controllers
delete pods (``Pods(ns).Delete``) without the Eviction API, and the PodDisruptionBudget docs
say so ("workload resources (such as Deployment and StatefulSet) are not limited by PDBs when
doing rolling upgrades"). So no rollout "needs" an eviction. The one controller that would evict
to follow a scheduling rule is KEP-4328's node-affinity-eviction controller (a proposal; with
``--proposals``): a workload with ``requiredDuringSchedulingRequiredDuringExecution`` node
affinity whose budget allows no disruption can never be moved by it, so that finding is an
error.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kaffinity.explain.wording import name_list
from kaffinity.findings import Related, Severity, Violation
from kaffinity.graph.affinity import ordered
from kaffinity.graph.members import RELATION_PDB, Member
from kaffinity.k8s.compact import MODEL_FIELDS
from kaffinity.k8s.model import NodeSelectorTerm, PodDisruptionBudget, Workload
from kaffinity.k8s.model.build import object_ref
from kaffinity.k8s.model.objects import document_key
from kaffinity.k8s.model.readers import dig
from kaffinity.k8s.selectors import node_term_matches, selector_matches
from kaffinity.load.source import DataPath, Document
from kaffinity.rules.base import Rule
from kaffinity.validate.apiserver import budget_refused

if TYPE_CHECKING:
    from kaffinity.context import Context

#: Controllers the disruption controller finds a scale for (``finders``).
_SCALED = frozenset(("Deployment", "ReplicaSet", "ReplicationController", "StatefulSet"))
#: Controllers without a scale subresource, as the sync error names their resource.
_NO_SCALE = {"DaemonSet": "daemonsets.apps", "Job": "jobs.batch", "CronJob": "jobs.batch"}
_HPA = "HorizontalPodAutoscaler"
_REFUSED = (
    "every eviction is refused (HTTP 429 \"Cannot evict pod as it would violate the pod's disruption "
    'budget"): kubectl drain retries forever, and node upgrades and cluster-autoscaler scale-down stall '
    "on these pods"
)


@dataclass(slots=True)
class _Selected:
    """What a budget selects, counted as the disruption controller counts it."""

    pods: int = 0
    unknown: list[str] = field(default_factory=list)  # pod counts kaffinity cannot know
    scale: int = 0  # sum of the scales of the controllers found
    unscaled: list[tuple[str, str]] = field(default_factory=list)  # (who, resource) without scale
    unknown_scale: list[str] = field(default_factory=list)  # controllers kaffinity cannot size
    unmanaged: int = 0
    parts: list[str] = field(default_factory=list)  # "Deployment/ns/web: 3 replicas"
    related: list[Related] = field(default_factory=list)
    during_execution: list[str] = field(default_factory=list)  # KEP-4328 findings (with --proposals)
    related_execution: list[Related] = field(default_factory=list)


def _hpas(context: Context) -> dict[tuple[str, str, str], tuple[Document, int]]:
    """HorizontalPodAutoscalers of the input: (namespace, kind, name) of the target -> minReplicas.
    Of two for one target, the first in canonical order counts, whatever the file order."""
    found: dict[tuple[str, str, str], tuple[Document, int]] = {}
    hpas = [
        doc for doc in context.documents if isinstance(doc.data, Mapping) and doc.data.get("kind") == _HPA
    ]
    default = context.settings.namespace
    for doc in sorted(hpas, key=lambda doc: document_key(object_ref(doc, default), doc)):
        data = doc.data
        namespace = dig(data, ("metadata", "namespace"))
        kind, name = (
            dig(data, ("spec", "scaleTargetRef", "kind")),
            dig(data, ("spec", "scaleTargetRef", "name")),
        )
        minimum = dig(data, ("spec", "minReplicas"))
        if not isinstance(kind, str) or not isinstance(name, str):
            continue
        namespace = namespace if isinstance(namespace, str) else default
        # autoscaling/v2: minReplicas defaults to 1.
        count = minimum if isinstance(minimum, int) and not isinstance(minimum, bool) else 1
        found.setdefault((namespace, kind, name), (doc, count))
    return found


def _owner(pod: Workload) -> tuple[str, str] | None:
    """The controller in an existing pod's ``ownerReferences`` (kind, name), if any."""
    references = dig(pod.doc.data, ("metadata", "ownerReferences"))
    if not isinstance(references, list):
        return None
    for reference in references:
        if isinstance(reference, Mapping) and reference.get("controller") is True:
            kind, name = reference.get("kind"), reference.get("name")
            if isinstance(kind, str) and isinstance(name, str):
                return kind, name
    return None


def _owned_by_linted(context: Context, pod: Workload) -> bool:
    """An existing pod that a linted workload's selector claims: it is that workload's replica."""
    namespace = pod.ref.namespace or context.settings.namespace
    labels = dict(pod.pod.labels)
    for workload in context.inventory.workloads:
        selector = workload.selector
        if workload.ref.kind == "Pod" or selector is None or selector.is_empty:
            continue
        if (workload.ref.namespace or context.settings.namespace) == namespace and selector_matches(
            selector, labels
        ):
            return True
    return False


def _count_workload(context: Context, member: Member, selected: _Selected, hpas: Any) -> None:
    """Add a workload's pods to what a budget selects, by the kind of controller: scaled ones at
    their replicas (an autoscaler's minReplicas), DaemonSets one pod per node, the others as
    many as run at once, a bare Pod once."""
    workload = member.workload
    assert workload is not None
    kind = workload.controller  # a custom kind (Argo Rollout...) counts as the kind it resembles
    if kind in _SCALED:
        counted = _count_scaled(context, workload, selected, hpas)
    elif kind == "DaemonSet":
        counted = _count_daemonset(context, workload, selected)
    elif kind in _NO_SCALE:
        counted = _count_unscaled(workload, kind, selected)
    elif kind == "Pod":
        selected.pods += 1
        selected.unmanaged += 1
        selected.parts.append(f"{workload.ref}: a Pod no controller owns")
        counted = True
    else:
        counted = False
    if not counted:
        return
    # A bare Pod's spec is a pod spec: it has no replicas to point at.
    written = kind != "Pod" and dig(workload.doc.data, ("spec", "replicas")) is not None
    replicas_path: DataPath = ("spec", "replicas") if written else ("spec",)
    selected.related.append(Related(workload.doc, replicas_path, f"selected by the budget: {workload.ref}"))
    _during_execution(context, workload, selected)


def _count_scaled(context: Context, workload: Workload, selected: _Selected, hpas: Any) -> bool:
    """A workload a HorizontalPodAutoscaler may scale: its replicas, or the autoscaler's
    minReplicas; whether it has pods."""
    ref = workload.ref
    namespace = ref.namespace or context.settings.namespace
    count = workload.replicas or 0
    hpa = hpas.get((namespace, ref.kind, ref.name))
    if hpa is not None:
        count = hpa[1]
        selected.parts.append(f"{ref}: {count} replicas at the HorizontalPodAutoscaler's minReplicas")
        selected.related.append(Related(hpa[0], ("spec", "minReplicas"), f"scales {ref}"))
    else:
        written = "" if dig(workload.doc.data, ("spec", "replicas")) is not None else " (the default)"
        selected.parts.append(f"{ref}: {count} replica{'s' if count != 1 else ''}{written}")
    if count <= 0:
        return False
    selected.pods += count
    selected.scale += count
    return True


def _count_daemonset(context: Context, workload: Workload, selected: _Selected) -> bool:
    """A DaemonSet: the pods the placement made for it (one per node), unknown without one."""
    ref = workload.ref
    run = context.placement
    if run is None or id(workload) not in run.by_workload:
        selected.unknown.append(str(ref))
        selected.parts.append(f"{ref}: one pod per node it runs on")
    else:
        count = len(run.pods.get(id(workload), [])) + sum(
            1 for p in run.by_workload[id(workload)] if p.node is None
        )
        selected.pods += count
        selected.parts.append(f"{ref}: {count} pod{'s' if count != 1 else ''}, one per node")
    selected.unscaled.append((str(ref), _NO_SCALE["DaemonSet"]))
    return True


def _count_unscaled(workload: Workload, kind: str, selected: _Selected) -> bool:
    """A controller no autoscaler scales (a Job's parallelism...): the pods at a time."""
    count = workload.replicas or 0
    if count <= 0:
        return False
    selected.pods += count
    selected.parts.append(f"{workload.ref}: {count} pod{'s' if count != 1 else ''} at a time")
    selected.unscaled.append((str(workload.ref), _NO_SCALE[kind]))
    return True


def _matches(terms: Sequence[NodeSelectorTerm], labels: Mapping[str, str], name: str) -> bool:
    return any(node_term_matches(term, labels, name) for term in terms)


def _during_execution(context: Context, workload: Workload, selected: _Selected) -> None:
    """KEP-4328 (with ``--proposals``): pods whose RequiredDuringExecution node affinity would
    have the node-affinity-eviction controller evict them through the Eviction API."""
    if not context.settings.proposals:
        return
    affinity = workload.pod.affinity
    node_affinity = affinity.node_affinity if affinity is not None else None
    terms = node_affinity.required_during_execution if node_affinity is not None else None
    if terms is None or node_affinity is None:
        return
    path = (*node_affinity.path, "requiredDuringSchedulingRequiredDuringExecution")
    # With a cluster file: running pods whose node no longer matches (the controller would evict
    # them now). Only pods that exist: the offline scheduler does not place by this field.
    stray = []
    run = context.placement
    if workload.ref.kind == "Pod":
        cluster = context.cluster
        node = None
        if cluster is not None and workload.pod.node_name:
            node = next((n for n in cluster.nodes if n.ref.name == workload.pod.node_name), None)
        if node is not None and not _matches(terms, dict(node.labels), node.ref.name):
            stray.append(f"{workload.ref.name} on {node.ref.name}")
    elif run is not None:
        for pod in run.pods.get(id(workload), []):
            where = pod.node
            if pod.existing and where is not None and not _matches(terms, where.labels, where.name):
                stray.append(f"{pod.name} on {where.name}")
    if stray:
        verb = "runs" if len(stray) == 1 else "run"
        where_text = f" (already now {name_list(stray)} {verb} where it no longer matches)"
    else:
        where_text = ""
    selected.during_execution.append(f"{workload.ref}{where_text}")
    selected.related_execution.append(
        Related(workload.doc, path, "requiredDuringSchedulingRequiredDuringExecution (KEP-4328)")
    )


def _count_existing(
    context: Context, member: Member, selected: _Selected, owners: dict[tuple[str, str], int]
) -> None:
    mine = [
        pod for pod in member.pods if not _owned_by_linted(context, pod)
    ]  # else counted with its workload
    if not mine:
        return
    for pod in mine:
        selected.pods += 1
        owner = _owner(pod)
        if owner is None:
            selected.unmanaged += 1
        elif owner[0] in _SCALED:
            # The scale of a controller the input does not hold: taken to be the pods it runs.
            owners[owner] = owners.get(owner, 0) + 1
        elif owner[0] in _NO_SCALE:
            selected.unscaled.append((f"{owner[0]}/{owner[1]}", _NO_SCALE[owner[0]]))
        else:
            selected.unknown_scale.append(f"{owner[0]}/{owner[1]}")  # a custom controller may have /scale
        _during_execution(context, pod, selected)
    selected.parts.append(str(member))
    selected.related.append(Related(mine[0].doc, ("metadata", "name"), f"selected by the budget: {member}"))


def _select(context: Context, members: list[Member], hpas: Any) -> _Selected:
    selected = _Selected()
    owners: dict[tuple[str, str], int] = {}
    for member in members:
        if member.workload is not None:
            _count_workload(context, member, selected, hpas)
        else:
            _count_existing(context, member, selected, owners)
    selected.scale += sum(owners.values())
    return selected


def _field(pdb: PodDisruptionBudget) -> tuple[DataPath, str]:
    if pdb.max_unavailable is not None:
        return ("spec", "maxUnavailable"), f"maxUnavailable {pdb.max_unavailable}"
    return ("spec", "minAvailable"), f"minAvailable {pdb.min_available}"


def _verdict(pdb: PodDisruptionBudget, selected: _Selected) -> str | None:
    """Why the budget allows no disruption, or None when it allows some (or cannot be told)."""
    from kaffinity.k8s.fenceposts import scaled

    scaled_policy = pdb.max_unavailable is not None or isinstance(pdb.min_available, str)
    _, written = _field(pdb)
    pods = f"{selected.pods} pod{'s' if selected.pods != 1 else ''}"
    if scaled_policy:
        if selected.unscaled:
            who, resource = selected.unscaled[0]
            return (
                f"it selects pods of {who}, and with {written} the disruption controller needs the scale "
                f"of each pod's controller: {resource} does not implement the scale subresource, so the "
                "budget's sync fails (condition SyncFailed) and disruptionsAllowed stays 0"
            )
        if selected.unknown_scale or selected.unknown:
            return None
        expected = selected.scale
        if expected <= 0:
            return (
                f"it selects only pods that no controller owns, and with {written} the expected count is "
                "the sum of the controllers' scales: expectedPods 0 keeps disruptionsAllowed at 0"
            )
        if pdb.max_unavailable is not None:
            allowed_down = scaled(pdb.max_unavailable, expected, True)
            if allowed_down is None:
                return None
            desired = max(0, expected - allowed_down)
            how = f"{written} of the controllers' scale {expected}"
        else:
            desired_or_none = scaled(pdb.min_available, expected, True)
            if desired_or_none is None:
                return None
            desired = desired_or_none
            how = f"{written} of the controllers' scale {expected}, rounded up"
    elif isinstance(pdb.min_available, int):
        if selected.unknown:
            return None
        desired = pdb.min_available
        how = written
    else:
        return None  # neither field: nothing is required, every eviction is allowed
    if selected.pods - desired > 0:
        return None
    return (
        f"it selects {pods} and requires {desired} to stay healthy ({how}), so even with every pod "
        "running and Ready none may be evicted"
    )


def _check(context: Context) -> Iterator[Violation]:
    graph = context.graph
    hpas = _hpas(context)
    version = context.settings.kube_version
    # What a budget selects depends on the matched set alone: counted once per distinct set, not
    # once per budget (N/10 budgets selecting all N workloads would cost quadratic time).
    counted: dict[frozenset[str], _Selected] = {}
    for node, pdb in graph.pdbs.items():
        if budget_refused(pdb.doc.data, version):
            continue  # the API server refuses it (api-validation): it protects nothing
        for relation in graph.terms(node, RELATION_PDB):
            if relation.selector is None or not relation.matches:
                continue  # selects nothing: pdb-no-match
            selected = counted.get(relation.matches)
            if selected is None:
                selected = counted[relation.matches] = _select(
                    context, ordered(graph, relation.matches), hpas
                )
            if selected.pods <= 0 and not selected.unknown:
                continue
            verdict = _verdict(pdb, selected)
            if verdict is None:
                continue
            path, _ = _field(pdb)
            parts = f" (selected: {name_list(selected.parts)})" if selected.parts else ""
            message = f"this PodDisruptionBudget allows no disruption: {verdict}; {_REFUSED}{parts}"
            severity = None
            related = list(selected.related)
            if selected.during_execution:
                severity = Severity.ERROR
                message += (
                    f"; {name_list(selected.during_execution)} carries "
                    "requiredDuringSchedulingRequiredDuringExecution node affinity (KEP-4328, honoured with "
                    "--proposals): when a node's labels stop matching it, the node-affinity-eviction "
                    "controller evicts through the Eviction API, which this budget refuses, so the pod stays "
                    "on a node its affinity excludes"
                )
                related += selected.related_execution
            yield Violation(
                pdb.doc,
                path,
                message,
                related=tuple(related),
                fix=_fix(pdb, selected),
                severity=severity,
            )


def _fix(pdb: PodDisruptionBudget, selected: _Selected) -> str:
    if selected.unscaled and (pdb.max_unavailable is not None or isinstance(pdb.min_available, str)):
        return (
            "use an integer minAvailable (below the number of pods), which needs no scale subresource, "
            "or make the selector leave out those pods"
        )
    if selected.scale <= 0 and selected.unmanaged and pdb.max_unavailable is not None:
        return (
            "use an integer minAvailable below the number of pods (the only policy for pods without a "
            "controller)"
        )
    return (
        "allow at least one disruption: maxUnavailable: 1, or a minAvailable below the number of pods "
        "(more replicas)"
    )


RULE = Rule(
    name="pdb-blocks-eviction",
    category="rollout",
    severity=Severity.WARNING,
    summary="A PodDisruptionBudget that allows no disruption: node drains and evictions never finish.",
    check=_check,
    needs_all_manifests=True,
    docs="""\
## What it finds
A PodDisruptionBudget that allows zero disruptions even when every pod it selects is running
and Ready, computed as the disruption controller computes it
(`pkg/controller/disruption/disruption.go`, policy/v1):

- `minAvailable` as an integer: desired healthy = that number, against the number of selected
  pods (`minAvailable: 1` with one replica, `minAvailable: 3` with 3);
- `minAvailable` as a percentage: ceil(% x the controllers' scale) (`100%`);
- `maxUnavailable` (integer, or a percentage rounded up): scale - maxUnavailable (`0`, `0%`);
- `maxUnavailable` or a percentage `minAvailable` over pods whose controller has no `scale`
  subresource (a DaemonSet, a Job or CronJob): the controller cannot compute the expected
  count, the budget's sync fails (`SyncFailed`) and it stays at `disruptionsAllowed: 0`; over
  pods without any controller the expected count is 0 and so is `disruptionsAllowed`.

The pods counted are those of the linted workloads the selector matches in the budget's
namespace (`replicas`, or the `minReplicas` of a HorizontalPodAutoscaler of the input that
targets the workload: the budget is at its tightest when the autoscaler scales in) and, with a
cluster file, its existing pods that no linted workload owns (their controller taken from
`ownerReferences`; a controller the input does not hold is taken to run as many pods as the
file shows). A DaemonSet's pods are counted only with a declared cluster; when a count or a
custom controller's scale is unknown the rule stays quiet. The rule needs no simulation: it
runs without a cluster.

With `--proposals`, the finding is an error when a selected workload carries KEP-4328's
`requiredDuringSchedulingRequiredDuringExecution` node affinity: its node-affinity-eviction
controller would move such pods through the Eviction API when node labels change, and this
budget refuses every such eviction.

Rollouts are not a reason for an error here: the Deployment (through its ReplicaSets),
StatefulSet and DaemonSet controllers delete pods directly (`Pods(namespace).Delete` in
`RealPodControl.DeletePod` and the StatefulSet pod control), never through the Eviction API,
and the Kubernetes docs (Disruptions) state that workload resources "are not limited by PDBs
when doing rolling upgrades". A budget cannot block a rollout, so no rollout needs an eviction
it forbids; `rollout-deadlock` covers rollouts that hang.

## Why it matters
The eviction API answers HTTP 429 "Cannot evict pod as it would violate the pod's disruption
budget" while `disruptionsAllowed` is 0. `kubectl drain` retries every 5 seconds, forever by
default; managed node upgrades, cluster-autoscaler scale-down and the descheduler stall on the
node, which stays cordoned. The budget meant to keep the application available ends up blocking
all node maintenance, and someone deletes the pod by hand in the end, with no budget at all.

## Example
```yaml
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 1            # the Deployment has 1 replica: 0 disruptions allowed
  selector:
    matchLabels: {app: web}
```

## Fix
Allow at least one disruption: `maxUnavailable: 1` for workloads with a scale, or a
`minAvailable` below the number of replicas (run more replicas). For DaemonSet, Job or bare
pods use an integer `minAvailable` (the only policy that needs no scale subresource), or leave
them out of the selector.

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/controller/disruption/disruption.go` (`getExpectedPodCount`, `failSafe`)
- `pkg/registry/core/pod/storage/eviction.go`: HTTP 429 and `unhealthyPodEvictionPolicy`
- `staging/src/k8s.io/kubectl/pkg/drain/drain.go`: kubectl drain retries a 429 until `--timeout`
""",
    reads=MODEL_FIELDS,
)
