"""anti-affinity-exceeds-domains: required self anti-affinity admits fewer pods than replicas."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kaffinity.explain.wording import domain_word, name_list
from kaffinity.findings import Related, Severity, Violation
from kaffinity.graph.members import selector_text
from kaffinity.k8s.compact import MODEL_FIELDS
from kaffinity.k8s.labels import HOSTNAME
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.context import Context
    from kaffinity.explain.pending import Analysis, Stuck
    from kaffinity.explain.shape import Exceeds, Shape
    from kaffinity.simulate.framework.types import SimPod
    from kaffinity.simulate.place import PlacementRun


def _occupied(
    result: Analysis, run: PlacementRun, stuck: Stuck, exceeds: Exceeds, order: dict[int, int]
) -> tuple[dict[str, list[tuple[SimPod, str]]], list[SimPod]]:
    """The domains that pods placed before this workload's keep it out of, and its own pods that
    already ran there (claimed from the cluster file).

    Before: the cluster file's pods and those of workloads earlier in the scheduler's queue (the
    simulation places in that order, :func:`kaffinity.simulate.place.queue_order`: priority, then
    namespace, kind and name; never the order of the files). A domain is kept from the workload
    when such a pod matches the term (InterPodAffinity ``satisfyPodAntiAffinity``) or when such a
    pod's own required anti-affinity on the same key matches this workload's pods
    (``satisfyExistingPodsAntiAffinity``, symmetry; both in
    ``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go``).
    """
    sim = result.sim
    workload = stuck.workload
    term = exceeds.term
    key = term.topology_key
    domains = set(exceeds.domains)
    mine = run.pods.get(id(workload), [])
    own = [pod for pod in mine if pod.existing]
    rank = order[id(workload)]
    ours = {id(pod) for pod in mine}

    def before(pod: SimPod) -> bool:
        if id(pod) in ours or pod.workload is workload:
            return False
        return pod.existing or order.get(id(pod.workload), rank) < rank

    probe = stuck.shape.probe
    probe_labels = sim.namespace_labels(probe.namespace)
    taken: dict[str, list[tuple[SimPod, str]]] = {}
    for pod in sim.candidates(term.selector):
        node = pod.node
        if node is None or not before(pod) or node.labels.get(key) not in domains:
            continue
        if term.matches(pod, sim.namespace_labels(pod.namespace)):
            taken.setdefault(node.labels[key], []).append((pod, "which the term selects"))
    for node in sim.nodes:
        value = node.labels.get(key)
        if value not in domains:
            continue
        for pod in node.pods:
            if before(pod) and any(
                t.topology_key == key and t.matches(probe, probe_labels) for t in pod.constraints.anti
            ):
                found = taken.setdefault(value, [])
                if all(pod is not other for other, _ in found):
                    found.append((pod, "whose own required anti-affinity selects this workload's pods"))
    return taken, own


def _check(context: Context) -> Iterator[Violation]:
    from kaffinity.explain.pending import analysis, reporter
    from kaffinity.explain.shape import ANTI_AFFINITY_EXCEEDS

    result = analysis(context)
    run = context.placement
    if result is None or result.stuck is None or run is None:
        return  # placement needed: quiet with --no-simulate
    order = {id(workload): index for index, workload in enumerate(run.queue)}
    for stuck in result.stuck.values():
        exceeds = stuck.shape.exceeds
        if exceeds is None or reporter(context, result, stuck.workload) != ANTI_AFFINITY_EXCEEDS:
            continue
        yield _violation(result, run, stuck, exceeds, order)


def _span_words(shape: Shape, exceeds: Exceeds, domain: str) -> str:
    """How few domains the nodes the workload may run on span."""
    from kaffinity.explain.pending_words import plural

    count = len(exceeds.domains)
    if exceeds.term.topology_key == HOSTNAME:
        return f"only {plural(count, 'node')} may run it ({name_list(exceeds.domains)})"
    return (
        f"the {plural(len(shape.eligible), 'node')} it may run on span only {plural(count, domain)} "
        f"({name_list(exceeds.domains)})"
    )


def _taken_words(
    taken: dict[str, list[tuple[SimPod, str]]], domain: str, key: str
) -> tuple[str, list[Related]]:
    """Which pod holds each domain taken, and why it counts; the first three holders' labels."""
    holders = [pod for value in sorted(taken) for pod, _ in taken[value]]
    text = "; ".join(
        f"{domain} {value} already holds {pod.name}, {why}"
        for value in sorted(taken)
        for pod, why in taken[value]
    )
    related = []
    for pod in holders[:3]:
        assert pod.node is not None
        related.append(
            Related(
                pod.workload.doc,
                (*pod.workload.pod.metadata_path, "labels"),
                f"pod {pod.name} runs on {pod.node.name} ({key}={pod.node.labels.get(key)})",
            )
        )
    return text, related


def _own_words(own: list[SimPod], domain: str, key: str) -> str:
    """Where the workload's own pods already run, by domain (some may share one)."""
    where = {pod.name: pod.node.labels.get(key, "none") for pod in own if pod.node is not None}
    by_domain: dict[str, list[str]] = {}
    for name, value in where.items():
        by_domain.setdefault(value, []).append(name)
    text = "; ".join(
        f"{name_list(names)} of its own already {'runs' if len(names) == 1 else 'run'} "
        + (f"in {domain} {value}" if value != "none" else f"on a node without {key}")
        for value, names in sorted(by_domain.items())
    )
    if any(len(names) > 1 for value, names in by_domain.items() if value != "none"):
        text += " (existing pods may share a domain: anti-affinity is IgnoredDuringExecution)"
    return text


def _fix_words(key: str, count: int, domain: str) -> str:
    if key == HOSTNAME:
        return (
            f"lower replicas to {count}, add nodes, or make the term "
            "preferredDuringSchedulingIgnoredDuringExecution"
        )
    return (
        f"lower replicas to {count}, use a smaller topologyKey (e.g. {HOSTNAME}), add {domain}s, or make "
        "the term preferredDuringSchedulingIgnoredDuringExecution (or a topology spread constraint)"
    )


def _violation(
    result: Analysis, run: PlacementRun, stuck: Stuck, exceeds: Exceeds, order: dict[int, int]
) -> Violation:
    from kaffinity.explain.pending_words import no_scale_up, pending_words, plural, replicas_field

    shape = stuck.shape
    workload = shape.workload
    term = exceeds.term
    key = term.topology_key
    domain = domain_word(key)
    count = len(exceeds.domains)
    replicas = shape.replicas
    wanted = "pods (one per node it targets)" if workload.ref.kind == "DaemonSet" else "replicas"
    selector = selector_text(term.source.label_selector)
    message = (
        f"asks for {replicas} {wanted}, but its required pod anti-affinity admits one pod matching "
        f"{selector} per {domain} and {_span_words(shape, exceeds, domain)}: {replicas - count} fewer "
        f"than the {wanted}"
    )
    related: list[Related] = []
    field = replicas_field(workload)
    if field is not None:
        related.append(Related(workload.doc, field, f"asks for {plural(replicas, 'replica')}"))
    taken, own = _occupied(result, run, stuck, exceeds, order)
    own_domains = {p.node.labels.get(key) for p in own if p.node is not None}
    free = len(set(exceeds.domains) - set(taken) - own_domains)
    details = []
    if taken:
        text, holders = _taken_words(taken, domain, key)
        details.append(text)
        related += holders
    if own:
        details.append(_own_words(own, domain, key))
    if details:
        message += f"; {'; '.join(details)}"
        message += f"; that leaves {plural(free, domain)} free"
        if own:
            message += f" beside the {plural(len(own), 'pod')} already running"
    message += f": {pending_words(stuck)}"
    expected = max(0, replicas - len(own) - free)
    pending = len(stuck.pending)
    if pending > expected and stuck.final:
        message += (
            f" ({pending - expected} more than its anti-affinity alone would leave, for another reason: "
            f"{stuck.final[0].summary(len(result.sim.nodes))})"
        )
    return Violation(
        workload.doc,
        (*term.source.path, "topologyKey"),
        message + no_scale_up(stuck),
        related=tuple(related),
        fix=_fix_words(key, count, domain),
    )


RULE = Rule(
    name="anti-affinity-exceeds-domains",
    category="topology",
    severity=Severity.ERROR,
    summary="Required anti-affinity against its own pods admits fewer pods than the replicas asked for.",
    check=_check,
    needs_all_manifests=True,
    needs_cluster=True,
    docs="""\
## What it finds
A workload whose required pod anti-affinity term selects its own pods (one pod per node, per
zone...) and asks for more replicas R than there are domains D of the term's `topologyKey`
among the nodes it may run on (those its nodeSelector, required node affinity and tolerations
allow on the declared cluster). Only a key that every such node carries bounds the pods: a
node without the key passes anti-affinity.

The message says how many stay Pending: at least R - D; more when a domain already holds a pod
the term matches (or a pod whose own required anti-affinity on the same key matches this
workload's pods), fewer when pods of its own already run two to a domain (anti-affinity is
IgnoredDuringExecution). The simulation's count is the one reported; the difference is
explained. It needs the simulation (quiet with `--no-simulate`).

## Why it matters
The D-th replica takes the last free domain; every further one stays Pending with
`0/N nodes are available: N node(s) didn't match pod anti-affinity rules` (InterPodAffinity
Filter, `pkg/scheduler/framework/plugins/interpodaffinity/filtering.go`), and preemption cannot
help. It is the most common form of "4 replicas, one per node, 3 nodes", often hidden in a Helm
chart's default `replicas: 3` with zone anti-affinity on a two-zone cluster. A StatefulSet with
`podManagementPolicy: OrderedReady` stops at the first Pending pod: the later ones are never
created.

## Example
```yaml
# cluster: 3 zones
kind: StatefulSet
spec:
  replicas: 5
  template:
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: db}}
              topologyKey: topology.kubernetes.io/zone   # 3 zones: db-3 and db-4 never run
```

## Fix
Lower the replicas to D, use a finer key (`kubernetes.io/hostname`), add nodes or zones, or
make the rule a preference (`preferredDuringSchedulingIgnoredDuringExecution`) or a topology
spread constraint (`maxSkew: 1`), which spreads evenly without capping the replicas.

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/scheduler/framework/plugins/interpodaffinity/filtering.go` (`satisfyPodAntiAffinity`,
  `satisfyExistingPodsAntiAffinity`)
- `pkg/controller/statefulset/stateful_set_control.go`: OrderedReady waits for each pod
""",
    reads=MODEL_FIELDS,
)
