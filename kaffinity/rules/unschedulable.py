"""unschedulable: pods that stay Pending on the declared cluster for any other reason."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from functools import cache
from typing import TYPE_CHECKING

from kaffinity.explain.wording import domain_word, name_list
from kaffinity.findings import Related, Severity, Violation
from kaffinity.graph.members import selector_text
from kaffinity.k8s.compact import MODEL_FIELDS
from kaffinity.k8s.labels import HOSTNAME
from kaffinity.k8s.model import Workload
from kaffinity.k8s.model.readers import dig
from kaffinity.load.source import DataPath
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.context import Context
    from kaffinity.explain.pending import Analysis, Stuck
    from kaffinity.simulate.framework.types import SimPod

_INSUFFICIENT = "Insufficient "


#: The dynamic filters' reasons in filter order (NodeResourcesFit, PodTopologySpread,
#: InterPodAffinity; pkg/scheduler/apis/config/v1/default_plugins.go): the first one wins a tie
#: for the most nodes.
@cache
def _order() -> tuple[str, ...]:
    """The reasons in filter order."""
    from kaffinity.simulate.plugins.interpodaffinity import (
        REASON_AFFINITY,
        REASON_ANTI_AFFINITY,
        REASON_EXISTING_ANTI,
    )
    from kaffinity.simulate.plugins.nodeports import REASON_PORTS
    from kaffinity.simulate.plugins.noderesources import REASON_TOO_MANY_PODS
    from kaffinity.simulate.plugins.podtopologyspread import REASON_SPREAD, REASON_SPREAD_LABEL

    return (
        REASON_PORTS,
        REASON_TOO_MANY_PODS,
        _INSUFFICIENT,
        REASON_SPREAD_LABEL,
        REASON_SPREAD,
        REASON_AFFINITY,
        REASON_ANTI_AFFINITY,
        REASON_EXISTING_ANTI,
    )


_SHOWN = 3

#: Where a finding points (None: the replicas field or the pod spec), its detail, the related
#: places, and the fix.
_Explained = tuple[DataPath | None, str, tuple[Related, ...], str]


def _rank(reason: str) -> int:
    for index, known in enumerate(_order()):
        if reason == known or (known == _INSUFFICIENT and reason.startswith(_INSUFFICIENT)):
            return index
    return len(_order())  # a static filter's reason: only the other nodes' story


def quantity(resource: str, value: int) -> str:
    """A scheduler quantity as a manifest writes it (cpu in millicores, bytes in binary units)."""
    from kaffinity.k8s.quantity import SCHEDULER_CEILING

    if value >= SCHEDULER_CEILING:  # a huge quantity, counted as the ceiling
        return f"at least 1e{len(str(SCHEDULER_CEILING)) - (4 if resource == 'cpu' else 1)}"
    if resource == "cpu":
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for unit, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
            if value >= size and value % size == 0:
                return f"{value // size}{unit}"
    return str(value)


def _request_path(workload: Workload, resource: str) -> DataPath:
    """The first container request (or limit, which defaults the request) for ``resource``."""
    spec = workload.pod.spec_path
    data = dig(workload.doc.data, spec)
    if isinstance(data, dict):
        for group in ("containers", "initContainers"):
            containers = data.get(group)
            if not isinstance(containers, list):
                continue
            for index in range(len(containers)):
                for kind in ("requests", "limits"):
                    path = (*spec, group, index, "resources", kind, resource)
                    if dig(workload.doc.data, path) is not None:
                        return path
    return (
        (*spec, "resources", "requests", resource)
        if dig(workload.doc.data, (*spec, "resources", "requests", resource)) is not None
        else spec
    )


def _resources(stuck: Stuck, reason: str) -> _Explained:
    from kaffinity.explain.pending_words import node_related, plural
    from kaffinity.simulate.plugins.noderesources import REASON_TOO_MANY_PODS

    workload = stuck.workload
    nodes = stuck.shape.eligible
    if reason == REASON_TOO_MANY_PODS:
        full = [node for node in nodes if node.allocatable and "pods" in node.allocatable]
        sizes = sorted({node.allocatable["pods"] for node in full if node.allocatable})
        text = (
            f"the {plural(len(full), 'node')} it may run on already run as many pods as their allocatable "
            f"pods allow ({name_list(str(size) for size in sizes)})"
        )
        return None, text, (), "add nodes, or raise the nodes' pod capacity (kubelet maxPods)"
    resource = reason[len(_INSUFFICIENT) :]
    want = stuck.shape.probe.constraints.requests.get(resource, 0)
    best = None
    for node in nodes:
        if not node.allocatable:
            continue
        free = node.allocatable.get(resource, 0) - node.requested.get(resource, 0)
        if best is None or free > best[1]:
            best = (node, free)
    text = f"it requests {quantity(resource, want)} {resource}"
    related: tuple[Related, ...] = ()
    if best is not None:
        node, free = best
        allocatable = node.allocatable.get(resource, 0) if node.allocatable else 0
        if allocatable == 0:
            text += f", which none of the nodes it may run on declares (allocatable {resource}: 0)"
        else:
            text += (
                f"; the most free on a node it may run on is {quantity(resource, max(free, 0))} on "
                f"{node.name} (allocatable {quantity(resource, allocatable)})"
            )
        related = (
            node_related(
                node,
                f"node {node.name}",
                (*node.node.path, "allocatable") if node.node.path else ("status", "allocatable"),
            ),
        )
    return (
        _request_path(workload, resource),
        text,
        related,
        f"lower the {resource} request, or add nodes with more allocatable {resource}",
    )


def _blockers(result: Analysis, pod: SimPod) -> list[tuple[SimPod, str, DataPath]]:
    """Placed pods whose required anti-affinity selects ``pod`` (the existing-pods check,
    ``satisfyExistingPodsAntiAffinity``), with the domain each keeps it out of."""
    sim = result.sim
    labels = sim.namespace_labels(pod.namespace)
    found = []
    for node in sim.nodes:
        for other in node.pods:
            for term in other.constraints.anti:
                key = term.topology_key
                if key in node.labels and term.matches(pod, labels):
                    where = (
                        f"node {node.name}" if key == HOSTNAME else f"{domain_word(key)} {node.labels[key]}"
                    )
                    found.append((other, where, term.source.path))
                    break
    found.sort(key=lambda item: (item[0].workload.ref.name, item[0].replica, item[0].name))
    return found


def _matching(result: Analysis, pod: SimPod, anti: bool) -> list[SimPod]:
    """Placed pods its required (anti-)affinity terms match (affinity: all terms at once, as
    interpodaffinity's ``podMatchesAllAffinityTerms`` requires)."""
    sim = result.sim
    terms = pod.constraints.anti if anti else pod.constraints.affinity
    if not terms:
        return []
    found: dict[int, SimPod] = {}
    for term in terms if anti else terms[:1]:
        for other in sim.candidates(term.selector):
            if other.node is None or other is pod:
                continue
            labels = sim.namespace_labels(other.namespace)
            if (anti and term.matches(other, labels)) or (
                not anti and all(t.matches(other, labels) for t in terms)
            ):
                found[id(other)] = other
    return list(found.values())


def _where(pods: list[SimPod], key: str) -> list[str]:
    return sorted({pod.node.labels[key] for pod in pods if pod.node is not None and key in pod.node.labels})


def _explain(result: Analysis, stuck: Stuck, reason: str) -> _Explained:
    """The words for the dominant reason the nodes reject the pod, by the filter that gives it."""
    from kaffinity.simulate.plugins.interpodaffinity import (
        REASON_AFFINITY,
        REASON_ANTI_AFFINITY,
        REASON_EXISTING_ANTI,
    )
    from kaffinity.simulate.plugins.nodeports import REASON_PORTS
    from kaffinity.simulate.plugins.noderesources import REASON_TOO_MANY_PODS
    from kaffinity.simulate.plugins.podtopologyspread import REASON_SPREAD, REASON_SPREAD_LABEL

    workload = stuck.workload
    pod = stuck.pending[0].pod
    constraints = pod.constraints
    if reason == REASON_TOO_MANY_PODS or reason.startswith(_INSUFFICIENT):
        return _resources(stuck, reason)
    if reason == REASON_PORTS and constraints.ports:
        return _ports(workload, pod)
    if reason in (REASON_SPREAD, REASON_SPREAD_LABEL) and constraints.spread:
        spread = constraints.spread[0]
        return (
            (*spread.source.path, "topologyKey"),
            "its DoNotSchedule spread constraints rule out some nodes and the other filters the rest",
            (),
            "see the reasons per node with kaffinity place",
        )
    if reason == REASON_AFFINITY and constraints.affinity:
        return _affinity(result, stuck, pod)
    if reason == REASON_ANTI_AFFINITY and constraints.anti:
        return _anti_affinity(result, pod)
    if reason == REASON_EXISTING_ANTI:
        return _existing_anti(result, workload, pod)
    return None, "", (), "see the reasons per node with kaffinity place"


def _ports(workload: Workload, pod: SimPod) -> _Explained:
    """NodePorts (pkg/scheduler/framework/plugins/nodeports): one pod per node per host port."""
    ports = name_list(sorted({f"{protocol} {port}" for protocol, _, port in pod.constraints.ports}))
    network = workload.pod.host_network
    why = " (hostNetwork: every containerPort is one)" if network else ""
    text = (
        f"it asks for host port {ports}{why}, which other pods already hold on every node it may "
        "run on (one pod per node and port)"
    )
    fix = "run no more replicas than nodes (or a DaemonSet), or " + (
        "leave the host network and reach the pods through a Service"
        if network
        else "drop hostPort and reach the pods through a Service"
    )
    return workload.pod.spec_path, text, (), fix


def _affinity(result: Analysis, stuck: Stuck, pod: SimPod) -> _Explained:
    """Required pod affinity: no pod it requires, none in a domain, or the domains ruled out."""
    terms = pod.constraints.affinity
    term = terms[0]
    key = term.topology_key
    targets = _matching(result, pod, anti=False)
    selector = name_list(selector_text(t.source.label_selector) for t in terms)
    values = {t.node.labels[key] for t in targets if t.node is not None and key in t.node.labels}
    if not targets:
        text = (
            f"no running pod matches its required pod affinity ({selector}), and it does not match it itself"
        )
        fix = "deploy the pods it requires, or correct the selector (or make the term preferred)"
        return term.source.path, text, (), fix
    if not values:
        # The pods it requires run only on nodes without the term's topology key: no node is
        # in their domain (InterPodAffinity: a node lacking the key satisfies no term).
        nodes = name_list(sorted({t.node.name for t in targets if t.node is not None}) or ["no node"])
        text = (
            f"the pods its required pod affinity ({selector}) matches run only on nodes without "
            f"the label {key} ({nodes}), so no node shares their {domain_word(key)}"
        )
        return term.source.path, text, (), f"label those nodes with {key}, or relax the term"
    return _affinity_ruled_out(result, stuck, pod, selector, values)


def _affinity_ruled_out(
    result: Analysis, stuck: Stuck, pod: SimPod, selector: str, values: set[str]
) -> _Explained:
    """The nodes of the domains where the pods it requires run: why each is ruled out."""
    from kaffinity.explain.pending_words import in_domains
    from kaffinity.simulate.plugins.interpodaffinity import REASON_EXISTING_ANTI

    term = pod.constraints.affinity[0]
    key = term.topology_key
    rejected = (stuck.final[0].rejected or {}) if stuck.final else {}
    there: Counter[str] = Counter()
    for node in result.sim.nodes:
        if node.labels.get(key) in values:
            there.update(rejected.get(node.name, ["fits, but the other terms fail there"]))
    why = ", ".join(sorted(f"{count} {reason}" for reason, count in there.items()))
    text = (
        f"the pods its required pod affinity ({selector}) matches run only "
        f"{in_domains(key, sorted(values))}, and the nodes there are ruled out: {why}"
    )
    fix = "let it run where those pods run (tolerations, node selection, capacity), or relax the term"
    if REASON_EXISTING_ANTI not in there:
        return term.source.path, text, (), fix
    blockers = _blockers(result, pod)
    text += " -- the required anti-affinity of " + name_list(o.name for o, _, _ in blockers)
    text += " selects its pods"
    related = tuple(
        Related(other.workload.doc, path, f"anti-affinity of pod {other.name}")
        for other, _, path in blockers[:_SHOWN]
    )
    fix = "the pods it requires refuse to share a domain with it: narrow one of the two selectors"
    return term.source.path, text, related, fix


def _anti_affinity(result: Analysis, pod: SimPod) -> _Explained:
    """Its own required anti-affinity: the pods it matches, and where they run."""
    from kaffinity.explain.pending_words import in_domains

    others = _matching(result, pod, anti=True)
    term = pod.constraints.anti[0]
    key = term.topology_key
    text = (
        f"pods its required pod anti-affinity matches ({name_list(p.name for p in others)}) run "
        f"{in_domains(key, _where(others, key))}"
    )
    related = tuple(
        Related(other.workload.doc, (*other.workload.pod.metadata_path, "labels"), f"pod {other.name}")
        for other in others[:_SHOWN]
    )
    return term.source.path, text, related, "narrow the selector, add nodes, or make the term preferred"


def _existing_anti(result: Analysis, workload: Workload, pod: SimPod) -> _Explained:
    """Other pods' required anti-affinity selects its pods: which, and the domain each keeps."""
    blockers = _blockers(result, pod)
    text = "the required pod anti-affinity of other pods selects its pods and keeps them out: " + name_list(
        f"{other.name} (out of {where})" for other, where, _ in blockers
    )
    related = tuple(
        Related(other.workload.doc, path, f"anti-affinity of pod {other.name}")
        for other, _, path in blockers[:_SHOWN]
    )
    return (
        (*workload.pod.metadata_path, "labels"),
        text,
        related,
        "narrow the other workloads' anti-affinity selectors so that they do not select these pods",
    )


def _daemonset_violation(result: Analysis, stuck: Stuck) -> Violation:
    """A DaemonSet's pods are pinned: each node's own reasons, for the first few."""
    from kaffinity.explain.pending_words import pending_words
    from kaffinity.simulate.plugins.nodeaffinity import REASON_PINNED

    workload = stuck.workload
    total = len(result.sim.nodes)
    parts = []
    for placement in stuck.final[:_SHOWN]:
        node = placement.pod.constraints.pinned or ""
        reasons = (placement.rejected or {}).get(node) or [
            reason for reason in placement.reasons or () if reason != REASON_PINNED
        ]
        parts.append(f"on {node}: {', '.join(reasons) or placement.summary(total)}")
    more = len(stuck.pending) - len(stuck.final[:_SHOWN])
    message = f"{pending_words(stuck)}: {'; '.join(parts)}" + (f"; and {more} more" if more > 0 else "")
    return Violation(
        workload.doc,
        workload.pod.spec_path,
        message,
        fix="free room on those nodes, or keep the DaemonSet off them (node affinity)",
    )


def _dynamic(stuck: Stuck) -> tuple[list[str], str | None]:
    """The final attempt's reasons from the dynamic filters, and the dominant one: on the most
    nodes, a tie to the first filter."""
    final = stuck.final[0] if stuck.final else None
    counts = final.reasons if final is not None and final.reasons else {}
    dynamic = [reason for reason in counts if _rank(reason) < len(_order())]
    dominant = min(dynamic, key=lambda r: (-counts[r], _rank(r))) if dynamic else None
    return dynamic, dominant


def _violation(result: Analysis, stuck: Stuck) -> Violation:
    from kaffinity.explain.pending_words import no_scale_up, pending_words, plural, replicas_field

    workload = stuck.workload
    if workload.ref.kind == "DaemonSet":
        return _daemonset_violation(result, stuck)
    summary = stuck.final[0].summary(len(result.sim.nodes)) if stuck.final else ""
    if stuck.final and stuck.final[0].admission:
        return _runtime_class_refused(stuck, summary)
    dynamic, dominant = _dynamic(stuck)
    path: DataPath | None = None
    detail = ""
    related: tuple[Related, ...] = ()
    fix = "see the reasons per node with kaffinity place"
    if dominant is not None:
        path, detail, related, fix = _explain(result, stuck, dominant)
    message = f"{pending_words(stuck)}: {summary}"
    if detail:
        message += f" ({detail})"
    message += no_scale_up(stuck)
    severity = None
    undeclared = _undeclared(stuck, dynamic)
    if undeclared:
        names = name_list(undeclared)
        message += (
            f"; the cluster file declares no allocatable {names} for the nodes it may run on, which the "
            "scheduler counts as 0, but every kubelet reports it"
        )
        fix = f"declare allocatable {names} for the nodes in the cluster file; else {fix}"
        if len(undeclared) == len(dynamic):
            severity = Severity.WARNING  # the cluster file is incomplete, not the manifest wrong
    field = replicas_field(workload)
    if path is None:
        path = field or workload.pod.spec_path
    elif field is not None:
        related = (Related(workload.doc, field, f"asks for {plural(stuck.shape.replicas, 'pod')}"), *related)
    return Violation(workload.doc, path, message, related=related, fix=fix, severity=severity)


def _runtime_class_refused(stuck: Stuck, summary: str) -> Violation:
    """Pods the API server refuses to create (the RuntimeClass admission plugin,
    plugin/pkg/admission/runtimeclass): none exists, so none is Pending either; the controller's
    FailedCreate event carries the same words."""
    workload = stuck.workload
    spec = workload.pod.spec_path
    what = f"pod {workload.ref.name}" if workload.ref.kind == "Pod" else f"{workload.ref.name}'s pods"
    message = (
        f"the API server refuses to create {what}: {summary} (the RuntimeClass admission plugin); "
        "no pod is created"
    )
    fix = (
        "create the RuntimeClass on the cluster or name one it has; leave the nodeSelector keys and "
        "the overhead the class sets to the class"
    )
    return Violation(workload.doc, (*spec, "runtimeClassName"), message, fix=fix)


#: Resources every kubelet reports in a Node's allocatable (cadvisor capacity minus reservations).
_ALWAYS_REPORTED = ("cpu", "memory", "ephemeral-storage", "pods")


def _undeclared(stuck: Stuck, reasons: list[str]) -> list[str]:
    """The "Insufficient" resources that every kubelet reports but that the cluster file declares
    for none of the nodes the pod may run on (so the simulation counts 0 of them)."""
    found = []
    for reason in reasons:
        resource = reason[len(_INSUFFICIENT) :] if reason.startswith(_INSUFFICIENT) else None
        if resource not in _ALWAYS_REPORTED:
            continue
        if not any(node.allocatable and resource in node.allocatable for node in stuck.shape.eligible):
            found.append(resource)
    return found


def _check(context: Context) -> Iterator[Violation]:
    from kaffinity.explain.nomatch import RULE as NO_MATCH
    from kaffinity.explain.nomatch import affinity_no_match, strongest
    from kaffinity.explain.pending import analysis, reporter
    from kaffinity.explain.precedence import gives_way, reported_at
    from kaffinity.explain.shape import UNSCHEDULABLE
    from kaffinity.simulate.plugins.interpodaffinity import REASON_AFFINITY

    if context.placement is not None:
        yield from _priority_refused(context)
    result = analysis(context)
    if result is None or result.stuck is None:
        return  # placement needed: quiet with --no-simulate
    no_match: tuple[Violation, ...] | None = None
    strength: dict[int, Severity | None] = {}
    for stuck in result.stuck.values():
        if not stuck.pending or reporter(context, result, stuck.workload) != UNSCHEDULABLE:
            continue
        violation = _violation(result, stuck)
        reasons = stuck.final[0].reasons if stuck.final else None
        if reasons and REASON_AFFINITY in reasons:
            # The same pods as affinity-no-match's finding (a required affinity no pod can
            # satisfy): the more severe of the two is kept, a tie goes to affinity-no-match
            # (kaffinity.explain.precedence); when this one is kept, it takes that rule's hint.
            if no_match is None:
                no_match = affinity_no_match(context) if reported_at(context, NO_MATCH) is not None else ()
                strength = strongest(no_match)
            key = id(stuck.workload.doc)
            if key in strength:
                if gives_way(
                    context,
                    (UNSCHEDULABLE, violation.severity),
                    (NO_MATCH, strength[key]),
                    tie_to_other=True,
                ):
                    continue
                violation = _with_hint(violation, [v for v in no_match if id(v.doc) == key])
        yield violation


def _priority_refused(context: Context) -> Iterator[Violation]:
    """The workloads whose pods the Priority admission plugin refuses (``admitPod`` in
    plugin/pkg/admission/priority/admission.go): none is created, so none is Pending either;
    the controller's FailedCreate event carries the API server's ``Forbidden`` error."""
    run = context.placement
    assert run is not None
    for workload in run.queue:
        admission = run.refused.get(id(workload))
        if admission is None:
            continue
        creates = "its creation is" if workload.ref.kind == "Pod" else "every pod its controller creates is"
        yield Violation(
            workload.doc,
            admission.path,
            f"the Priority admission plugin refuses its pods: {admission.refused}; {creates} forbidden, so "
            "no pod of it runs",
            fix="name a PriorityClass the cluster has (kubectl get priorityclasses) and leave priority and "
            "preemptionPolicy to it",
        )


def _with_hint(violation: Violation, others: list[Violation]) -> Violation:
    """The "did you mean" of affinity-no-match's finding on the same pods, in this one's fix."""
    for other in others:
        if other.fix and other.fix.startswith("did you mean"):
            return replace(violation, fix=f"{other.fix.split(' Otherwise ')[0]} Otherwise {violation.fix}")
    return violation


RULE = Rule(
    name="unschedulable",
    category="topology",
    severity=Severity.ERROR,
    summary="Pods that stay Pending on the declared cluster, with the scheduler's event text.",
    check=_check,
    needs_all_manifests=True,
    needs_cluster=True,
    docs="""\
## What it finds
Pods of a workload that stay Pending after kaffinity's offline scheduler has placed every pod of
the input on the declared cluster (`--cluster`), for a reason none of the other topology rules
reports (no eligible node, an absent topologyKey, anti-affinity with too few domains, an
unsatisfiable spread constraint) -- or that one of them would report but does not run or is
configured below this rule's severity, so that the Pending pods are always reported
(`kaffinity.explain.precedence`; a tie goes to the specific rule): not enough cpu or memory,
full nodes, a required pod affinity whose pods run where this one may not, the required
anti-affinity of other pods, a volume whose zone or node the pod may not reach (VolumeBinding,
VolumeZone)... Pods the API server refuses to create (a RuntimeClass the cluster lacks, a
nodeSelector that conflicts with the class's: the RuntimeClass admission plugin) are reported
too, on `runtimeClassName`, as refused rather than Pending. The message is the scheduler's own
event text, `0/6 nodes are available: 3 Insufficient cpu, 3 node(s) had untolerated taint(s).`
(`FitError.Error`), followed by what makes the most nodes fail: the request and the most free on
a node, the pods whose anti-affinity selects these pods, where the pods it requires run. A
Pending pod is tried again once everything is placed, as the scheduler retries unschedulable
pods when pods are added: a pod whose required affinity target comes later in the scheduler's
queue (lower priority, or later by namespace, kind and name; never the order of the files) is
not reported. Pods whose required pod affinity matches no pod at all are also
`affinity-no-match`'s: the more severe finding of the two is kept, a tie going to
`affinity-no-match`. It needs the simulation (quiet with `--no-simulate`).

It also reports, at the field, a workload whose pods the Priority admission plugin refuses
(`admitPod`, plugin/pkg/admission/priority): a `priorityClassName` the cluster file's list of
PriorityClasses lacks, or a `priority` / `preemptionPolicy` other than its class gives. No pod of
it is created (the controller's `FailedCreate` event), so none is placed.

## Why it matters
The scheduler leaves such pods Pending until the cluster changes; nothing in the manifests
says so before deploy. Filters and reasons are those of the default profile
(`pkg/scheduler/apis/config/v1/default_plugins.go`, `pkg/scheduler/framework/plugins`);
`kaffinity place` shows every node's reason.

## Example
```yaml
# cluster: 4-cpu nodes
containers:
  - name: app
    resources:
      requests: {cpu: "8"}      # 0/6 nodes are available: 6 Insufficient cpu.
```

## Fix
Depends on the reason: lower the requests or add capacity; let the pod run where the pods it
requires run; narrow the anti-affinity that keeps it out.

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/scheduler/apis/config/v1/default_plugins.go`: the filters and their order
- `pkg/scheduler/framework/runtime/framework.go` (`RunFilterPlugins`): the first failure wins
- `pkg/scheduler/framework/types.go` (`FitError.Error`): the event text
- `pkg/scheduler/framework/plugins/noderesources/fit.go`: requests against allocatable
- `pkg/scheduler/framework/plugins/volumebinding/binder.go`, `volumezone/volume_zone.go`: volumes
- `plugin/pkg/admission/runtimeclass/admission.go`: RuntimeClass overhead, scheduling, refusals
""",
    reads=MODEL_FIELDS,
)
