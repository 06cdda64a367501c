"""no-eligible-node: nodeSelector, required node affinity and taints together leave no node."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from kaffinity.explain.wording import name_list
from kaffinity.findings import Related, Severity, Violation
from kaffinity.k8s.compact import MODEL_FIELDS
from kaffinity.k8s.model import Requirement
from kaffinity.k8s.selectors import requirement_matches
from kaffinity.load.source import DataPath
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.context import Context
    from kaffinity.explain.pending import Analysis
    from kaffinity.explain.shape import Shape
    from kaffinity.k8s.model import PodView, Taint, Workload
    from kaffinity.simulate.framework.types import Constraints, SimNode

_SHOWN_NODES = 3


def _values(nodes: list[SimNode], key: str) -> list[str]:
    return sorted({node.labels[key] for node in nodes if key in node.labels})


def _requirement_text(requirement: Requirement) -> str:
    values = f" [{', '.join(requirement.values)}]" if requirement.values else ""
    return f"{requirement.key} {requirement.operator}{values}"


class _Why(NamedTuple):
    path: DataPath
    message: str
    related: tuple[Related, ...]
    fix: str
    severity: Severity | None = None


def _unlabelled(why: _Why, key: str, nodes: list[SimNode]) -> _Why:
    """A label every kubelet sets that no node of the cluster file carries: the file is
    incomplete (a hand-written or compact cluster), so a warning that says so."""
    from kaffinity.explain.shape import KUBELET_LABELS

    if key not in KUBELET_LABELS or any(key in node.labels for node in nodes):
        return why
    return why._replace(
        message=f"{why.message}; the kubelet sets {key} on every node, so the cluster file is likely "
        "missing it",
        fix=f"add {key} to the labels of the cluster file's nodes; else {why.fix}",
        severity=Severity.WARNING,
    )


def _explain(result: Analysis, shape: Shape) -> _Why:
    """Where, why, which nodes, and the fix: the first filter that leaves nothing, in the order
    a user reads the pod spec (nodeName, nodeSelector, node affinity, then taints and cordons)."""
    from kaffinity.explain.pending_words import plural
    from kaffinity.simulate.plugins.nodeaffinity import node_matches

    sim = result.sim
    constraints = shape.probe.constraints
    nodes = sim.nodes
    if not nodes:
        # kube-scheduler with no node at all: ErrNoNodesAvailable (pkg/scheduler/schedule_one.go),
        # whatever the pod asks for.
        return _Why(
            shape.workload.pod.spec_path,
            "the cluster file declares no node: no nodes available to schedule pods",
            (),
            "declare the cluster's nodes in the cluster file",
        )
    if constraints.node_name:
        nodes = [node for node in nodes if node.name == constraints.node_name]
        if not nodes:
            total = plural(len(sim.nodes), "node")
            return _Why(
                (*shape.workload.pod.spec_path, "nodeName"),
                f"spec.nodeName {constraints.node_name} names none of the cluster's {total}",
                (),
                "name a node of the cluster, or leave spec.nodeName to the scheduler",
            )
    selected = [
        node for node in nodes if node_matches(constraints.node_selector, None, node.labels, node.name)
    ]
    if not selected:
        return _by_selector(shape, nodes)
    if constraints.node_terms is not None:
        matching = [
            node for node in selected if node_matches((), constraints.node_terms, node.labels, node.name)
        ]
        if not matching:
            return _by_affinity(shape, selected, len(nodes))
        selected = matching
    return _by_taints(result, shape, selected)


def _by_selector(shape: Shape, nodes: list[SimNode]) -> _Why:
    from kaffinity.explain.pending_words import node_related, plural

    spec = shape.workload.pod.spec_path
    total = plural(len(nodes), "node")
    for key, value in shape.probe.constraints.node_selector:
        if any(node.labels.get(key) == value for node in nodes):
            continue
        have = _values(nodes, key)
        related: tuple[Related, ...] = ()
        if have:
            where = next(node for node in nodes if key in node.labels)
            detail = f"the cluster's nodes have {key} = {name_list(have)}"
            related = (node_related(where, f"node {where.name} has {key}={where.labels[key]}"),)
        else:
            detail = f"no node has the label {key}"
        why = _Why(
            (*spec, "nodeSelector", key),
            f"nodeSelector {key}={value} matches none of the cluster's {total} ({detail})",
            related,
            "correct the label, or label the nodes meant to run this workload",
        )
        return _unlabelled(why, key, nodes)
    text = ",".join(f"{key}={value}" for key, value in shape.probe.constraints.node_selector)
    return _Why(
        (*spec, "nodeSelector"),
        f"nodeSelector {text} matches none of the cluster's {total}: each label is on some node, "
        "but no node has them all",
        (),
        "correct the labels, or label the nodes meant to run this workload",
    )


def _by_affinity(shape: Shape, selected: list[SimNode], total: int) -> _Why:
    from kaffinity.explain.pending_words import plural

    constraints = shape.probe.constraints
    terms = constraints.node_terms or ()
    affinity = shape.workload.pod.affinity
    node_affinity = affinity.node_affinity if affinity is not None else None
    path: DataPath = shape.workload.pod.spec_path
    if node_affinity is not None:
        path = (*node_affinity.path, "requiredDuringSchedulingIgnoredDuringExecution")
    if constraints.node_selector:
        among = f"the {plural(len(selected), 'node')} the nodeSelector leaves"
    else:
        among = f"the cluster's {plural(total, 'node')}"
    details = []
    keys = []
    for term in terms:
        for requirement, fields in (
            *((r, False) for r in term.match_expressions),
            *((r, True) for r in term.match_fields),
        ):
            if any(
                requirement_matches(requirement, {"metadata.name": node.name} if fields else node.labels)
                for node in selected
            ):
                continue
            if fields:
                details.append(f"{_requirement_text(requirement)} (no such node)")
            else:
                have = _values(selected, requirement.key)
                there = f"values there: {name_list(have)}" if have else f"no node has {requirement.key}"
                details.append(f"{_requirement_text(requirement)} ({there})")
                keys.append(requirement.key)
            if len(terms) == 1:
                path = requirement.path
            break
    reason = "; ".join(details) if details else "no node matches every expression of a term"
    if not terms:
        reason = "it has no term, and an empty nodeSelectorTerms list matches no node"
    why = _Why(
        path,
        f"required node affinity matches none of {among}: {reason}",
        (),
        "correct the node affinity terms, or label the nodes meant to run this workload",
    )
    # Every term fails on a kubelet label no node carries: the cluster file lacks it.
    if keys and len(keys) == len(terms) and len(set(keys)) == 1:
        return _unlabelled(why, keys[0], selected)
    return why


class _Blocked(NamedTuple):
    """What keeps a pod off the nodes its node selection leaves: the first untolerated taint of
    each tainted node, and the cordoned nodes among the rest."""

    untolerated: list[tuple[SimNode, Taint]]
    cordoned: list[SimNode]


def _blocked(result: Analysis, constraints: Constraints, selected: list[SimNode]) -> _Blocked:
    """The facts of the filters TaintToleration and NodeUnschedulable over ``selected``."""
    from kaffinity.simulate.plugins.tainttoleration import blocking_effects

    # The kubelet admits a pod with spec.nodeName on a cordoned node, past NoSchedule taints.
    effects = blocking_effects(constraints)
    untolerated = [
        (node, taint)
        for node in selected
        if (taint := result.sim.untolerated(constraints.tolerations, node.taints, effects)) is not None
    ]
    tainted = {id(node) for node, _ in untolerated}
    cordoned = [
        node
        for node in selected
        if node.unschedulable and id(node) not in tainted and not constraints.node_name
    ]
    return _Blocked(untolerated, cordoned)


def _taint_words(untolerated: list[tuple[SimNode, Taint]]) -> tuple[list[str], list[Related]]:
    """The reason the untolerated taints give, and the nodes to point at."""
    from kaffinity.explain.pending_words import node_related
    from kaffinity.explain.shape import taint_text

    parts = []
    if len(untolerated) == 1:
        node, taint = untolerated[0]
        parts.append(f"{node.name} has taint {taint_text(taint)}, which it does not tolerate")
    elif untolerated:
        shown = "; ".join(f"{taint_text(t)} on {n.name}" for n, t in untolerated[:_SHOWN_NODES])
        more = "; ..." if len(untolerated) > _SHOWN_NODES else ""
        names = name_list(n.name for n, _ in untolerated)
        parts.append(f"{names} have taints it does not tolerate ({shown}{more})")
    related = [
        node_related(node, f"node {node.name}: taint {taint_text(taint)}", taint.path)
        for node, taint in untolerated[:_SHOWN_NODES]
    ]
    return parts, related


def _cordon_words(cordoned: list[SimNode]) -> tuple[list[str], list[Related]]:
    """The reason the cordoned nodes give, and where each is cordoned."""
    from kaffinity.explain.pending_words import node_related

    if not cordoned:
        return [], []
    verb = "is" if len(cordoned) == 1 else "are"
    related = [
        node_related(
            node,
            f"node {node.name} is cordoned",
            (*node.node.path, "unschedulable") if node.node.path else ("spec", "unschedulable"),
        )
        for node in cordoned[:_SHOWN_NODES]
    ]
    return [f"{name_list(n.name for n in cordoned)} {verb} cordoned"], related


def _selection(constraints: Constraints) -> list[str]:
    """The parts of the pod spec that chose the nodes (in the order a user reads them)."""
    return [
        name
        for name, present in (
            ("spec.nodeName", bool(constraints.node_name)),
            ("nodeSelector", bool(constraints.node_selector)),
            ("required node affinity", constraints.node_terms is not None),
        )
        if present
    ]


def _taint_message(constraints: Constraints, selected: list[SimNode], reason: str) -> str:
    """The message: which nodes the pod's selection allows, then why none takes it."""
    from kaffinity.explain.pending_words import plural

    selection = _selection(constraints)
    if not selection:
        return f"every node of the cluster is ruled out: {reason}"
    count = len(selected)
    allowed = name_list(n.name for n in selected) if count <= _SHOWN_NODES else plural(count, "node")
    verb = "allows" if len(selection) == 1 else "allow"
    return f"its {' and '.join(selection)} {verb} only {allowed}: {reason}"


def _taint_path(pod: PodView, constraints: Constraints) -> DataPath:
    """Where to point: the tolerations, else the node selection that left these nodes."""
    if pod.tolerations:
        return (*pod.spec_path, "tolerations")
    if constraints.node_selector:
        return (*pod.spec_path, "nodeSelector")
    if pod.affinity is not None and pod.affinity.node_affinity is not None:
        return (*pod.affinity.node_affinity.path, "requiredDuringSchedulingIgnoredDuringExecution")
    return pod.spec_path


def _taint_fix(blocked: _Blocked, count: int) -> str:
    """Tolerate the first taint, uncordon a node, else select other nodes."""
    fixes = []
    if blocked.untolerated:
        taint = blocked.untolerated[0][1]
        value = f", value: {taint.value}" if taint.value else ""
        operator = "Equal" if taint.value else "Exists"
        fixes.append(
            f"if the pods are meant for {'that node' if count == 1 else 'those nodes'}, add a toleration "
            f"{{key: {taint.key}, operator: {operator}{value}, effect: {taint.effect}}}"
        )
    if blocked.cordoned:
        fixes.append("uncordon a node (kubectl uncordon)")
    fixes.append("select other nodes")
    return "; ".join(fixes[:-1]) + ("; else " if len(fixes) > 1 else "") + fixes[-1]


def _by_taints(result: Analysis, shape: Shape, selected: list[SimNode]) -> _Why:
    """Every node left is tainted (an untolerated NoSchedule / NoExecute taint) or cordoned: the
    filters TaintToleration and NodeUnschedulable (``tainttoleration/taint_toleration.go`` and
    ``nodeunschedulable/node_unschedulable.go`` under ``pkg/scheduler/framework/plugins``)."""
    constraints = shape.probe.constraints
    blocked = _blocked(result, constraints, selected)
    taint_parts, taint_related = _taint_words(blocked.untolerated)
    cordon_parts, cordon_related = _cordon_words(blocked.cordoned)
    reason = "; ".join(taint_parts + cordon_parts) or "the scheduler's node filters reject them"
    return _Why(
        _taint_path(shape.workload.pod, constraints),
        _taint_message(constraints, selected, reason),
        tuple(taint_related + cordon_related),
        _taint_fix(blocked, len(selected)),
    )


def _autoscaling_words(result: Analysis) -> str:
    """With pools that may grow: that none of their new nodes would do either, and how many of
    the nodes counted the autoscaler added for other workloads."""
    sim = result.sim
    if not sim.pools:
        return ""
    names = name_list(growth.pool.word for growth in sim.pools)
    added = (
        f"; {len(sim.added)} of the nodes are new ones the autoscaler added for other pods"
        if sim.added
        else ""
    )
    return f"{added}; a new node of {names} would not take it either"


def _rejected_words(workload: Workload, node: str) -> str:
    """A pod with spec.nodeName skips the scheduler: the kubelet of its node rejects it
    (pkg/kubelet/lifecycle/predicate.go), the pod fails, and a controller replaces it with
    another that fails the same way (kubernetes/kubernetes#75913)."""
    if workload.ref.kind == "Pod":
        return f"the kubelet of {node} rejects the pod, which fails without running"
    return (
        f"the kubelet of {node} rejects every pod the {workload.controller} creates, which fails, "
        "and the controller creates another, forever"
    )


def _check(context: Context) -> Iterator[Violation]:
    from kaffinity.explain.pending import analysis, reporter
    from kaffinity.explain.pending_words import cannot_run, pending_words
    from kaffinity.explain.shape import NO_ELIGIBLE_NODE

    result = analysis(context)
    if result is None:
        return
    for shape in result.shapes.values():
        if reporter(context, result, shape.workload) != NO_ELIGIBLE_NODE:
            continue
        why = _explain(result, shape)
        severity = why.severity
        stuck = result.stuck.get(id(shape.workload)) if result.stuck is not None else None
        named = shape.probe.constraints.node_name
        if named and named in result.sim.by_name and shape.replicas:
            outcome = _rejected_words(shape.workload, named)
        elif stuck is not None and shape.replicas:
            outcome = pending_words(stuck)  # its own old pods may still run (IgnoredDuringExecution)
        elif shape.replicas:
            outcome = cannot_run(shape.replicas)
        else:
            # replicas: 0 -- nothing is Pending now; its pods will be once it is scaled up.
            outcome = "no pod of it can be scheduled once it is scaled up (replicas: 0 now)"
            severity = Severity.WARNING
        yield Violation(
            shape.workload.doc,
            why.path,
            f"{why.message}{_autoscaling_words(result)}; {outcome}",
            related=why.related,
            fix=why.fix,
            severity=severity,
        )


RULE = Rule(
    name="no-eligible-node",
    category="topology",
    severity=Severity.ERROR,
    summary="nodeSelector, required node affinity and untolerated taints leave no node of the cluster.",
    check=_check,
    needs_all_manifests=True,
    needs_cluster=True,
    docs="""\
## What it finds
A workload whose pods no node of the declared cluster (`--cluster`) can take before any other
pod is considered: the scheduler's node filters -- NodeUnschedulable (cordoned nodes),
NodeName, TaintToleration (NoSchedule / NoExecute taints without a matching toleration) and
NodeAffinity (`nodeSelector` and the required node affinity terms) -- reject every node. The
message names the first of them that leaves nothing: the `nodeSelector` label no node has (and
the values the nodes do have), the node affinity expression no node matches, or the taints and
cordons of the nodes the selection leaves.

It needs only the cluster's nodes, so it runs with `--no-simulate` too. DaemonSets are left
alone: a DaemonSet for nodes the cluster does not have (a GPU driver on a cluster without GPUs)
simply runs no pod, which is what it is for.

## Why it matters
Every pod of the workload stays Pending with an event such as
`0/6 nodes are available: 3 node(s) didn't match Pod's node affinity/selector, 3 node(s) had
untolerated taint(s).` -- the filters are the scheduler's default profile in upstream order
(`pkg/scheduler/framework/plugins/{nodeunschedulable,nodename,tainttoleration,nodeaffinity}`);
the failure is UnschedulableAndUnresolvable, so not even preemption helps. Typical causes: a
label that exists in another cluster (`node.kubernetes.io/instance-type` values, a pool name),
a typo, or a dedicated node pool whose taint the pod does not tolerate.

## Example
```yaml
# cluster: three general nodes and one GPU node with taint nvidia.com/gpu=present:NoSchedule
kind: Deployment
spec:
  template:
    spec:
      nodeSelector:
        accelerator: nvidia-a10       # only the GPU node; its taint is not tolerated
```

## Fix
Correct the selector or node affinity to labels the cluster's nodes carry, label the nodes
meant for the workload, or add the toleration for the dedicated nodes' taint.

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/scheduler/framework/plugins/{nodeunschedulable,nodename,tainttoleration,nodeaffinity}`
- kubernetes/component-helpers `scheduling/corev1/nodeaffinity/nodeaffinity.go`: nodeSelector and
  required node affinity
- `pkg/scheduler/framework/types.go` (`FitError.Error`): the event text
""",
    reads=MODEL_FIELDS,
)
