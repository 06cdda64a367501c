"""anti-affinity-blocks-daemonset: required anti-affinity that matches a DaemonSet's pods."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kaffinity.explain.precedence import refused
from kaffinity.explain.wording import domain_word, name_list
from kaffinity.findings import Related, Severity, Violation
from kaffinity.graph.affinity import ordered
from kaffinity.graph.members import RELATION_ANTI_AFFINITY, Member
from kaffinity.k8s.compact import MODEL_FIELDS
from kaffinity.k8s.labels import HOSTNAME
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.context import Context


def _disjoint(a: Member, b: Member) -> bool:
    """Whether the two can never share a node: their nodeSelectors ask one key for two values.

    nodeSelector must match the node's labels exactly (NodeAffinity's Filter; component-helpers
    ``scheduling/corev1/nodeaffinity/nodeaffinity.go``), so pods asking
    ``pool: gpu`` and pods asking ``pool: general`` never meet on a node. Anything subtler (node
    affinity, taints) is left alone: when unsure, the rule assumes they can meet.
    """
    assert a.workload is not None and b.workload is not None
    mine = dict(a.workload.pod.node_selector)
    return any(key in mine and mine[key] != value for key, value in b.workload.pod.node_selector)


def _check(context: Context) -> Iterator[Violation]:
    graph = context.graph
    # Only the DaemonSets of a term's matches count: with none in the input there is nothing to
    # do, and a term's matches are intersected with them, never sorted whole (N workloads
    # whose terms match each other would cost quadratic time).
    gone = refused(context)  # never created (neither side): api-validation's finding says why, once
    daemonsets = frozenset(
        member.id
        for member in graph.workloads()
        if member.workload is not None
        and member.workload.ref.kind == "DaemonSet"
        and id(member.workload.doc) not in gone
    )
    if not daemonsets:
        return
    for owner in graph.workloads():
        if owner.workload is not None and id(owner.workload.doc) in gone:
            continue
        for relation in graph.terms(owner.id, RELATION_ANTI_AFFINITY, required=True):
            key = relation.topology_key or ""
            daemons = [
                member
                for member in ordered(
                    graph, (relation.matches & daemonsets) - {owner.id}
                )  # its own term does not count
                if member.workload is not None
                # Apart on nodes is apart in a node-sized domain only: two node pools share zones.
                and not (key == HOSTNAME and _disjoint(owner, member))
            ]
            if not daemons:
                continue
            names = name_list(str(member) for member in daemons)
            plural = len(daemons) > 1
            domain = domain_word(key)
            # Design doc "Co-existing with daemons": the scheduler was to ignore daemons' namespaces
            # (kube-system) for anti-affinity; it never did: the InterPodAffinity Filter
            # (pkg/scheduler/framework/plugins/interpodaffinity/filtering.go) exempts no namespace.
            # satisfyPodAntiAffinity keeps this workload out of every domain holding a daemon pod, and
            # symmetry (satisfyExistingPodsAntiAffinity) keeps the daemon pod out of every domain
            # holding one of this workload's pods.
            message = (
                f"required pod anti-affinity (topologyKey {key}) matches the pods of {names}: "
                f"a DaemonSet runs a pod on every node it targets, so "
                f"this workload cannot be placed on any {domain} where {'they run' if plural else 'it runs'}"
                f", and where this workload runs first the daemon pod cannot be placed (symmetry; "
                f"no namespace, not even kube-system, is exempt)"
            )
            related = tuple(
                Related(member.doc, ("metadata", "name"), "DaemonSet whose pods the term matches")
                for member in daemons
            )
            fix = (
                "narrow the selector so that it excludes the DaemonSet's pods (e.g. match the app's own "
                "label, not a shared one like tier), or limit the term's namespaces"
            )
            yield Violation(relation.doc, relation.path, message, related=related, fix=fix)


RULE = Rule(
    name="anti-affinity-blocks-daemonset",
    category="graph",
    severity=Severity.WARNING,
    summary="Required pod anti-affinity matching a DaemonSet's pods: the two exclude each other.",
    check=_check,
    needs_all_manifests=True,
    docs="""\
## What it finds
A workload's required pod anti-affinity term that certainly matches the pods of a DaemonSet of
the input (another workload; a DaemonSet's own term matching its own pods does not count). With
`kubernetes.io/hostname`, a DaemonSet whose `nodeSelector` asks the same label key for another
value (another node pool) is not reported.

## Why it matters
A DaemonSet runs one pod on every node it targets (log shippers, CNI and CSI agents, node
exporters). Required anti-affinity against those pods means:

- this workload cannot be placed on any node (topologyKey `kubernetes.io/hostname`), or in any
  zone or region for larger keys, where the daemon already runs: usually everywhere, so its pods
  stay Pending with "node(s) didn't match pod anti-affinity rules";
- through symmetry, where this workload got first (a new node, a restarted daemon), the daemon
  pod cannot be placed: "node(s) didn't satisfy existing pods anti-affinity rules", and the
  node goes without its logging, networking or storage agent.

The inter-pod affinity design ("Co-existing with daemons") proposed that the scheduler ignore
the daemons' namespaces (default kube-system) for anti-affinity. It was never implemented: the
scheduler's filter has no namespace exemption.

## Example
```yaml
# DaemonSet fluent-bit: pod labels {app: fluent-bit, tier: infra}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - labelSelector:
        matchLabels: {tier: infra}             # the logging DaemonSet's pods too
      topologyKey: kubernetes.io/hostname
```

## Fix
Select what the workload must avoid by a label the DaemonSet's pods do not carry (the app's own
label rather than a shared tier or team label), or limit the term's namespaces.

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/scheduler/framework/plugins/interpodaffinity/filtering.go` (`satisfyPodAntiAffinity`,
  `satisfyExistingPodsAntiAffinity`): no namespace is exempt
- kubernetes/design-proposals-archive `scheduling/podaffinity.md`, "Co-existing with daemons"
- `pkg/controller/daemon/util/daemonset_util.go` (`ReplaceDaemonSetPodNodeNameNodeAffinity`)
""",
    reads=MODEL_FIELDS,
)
