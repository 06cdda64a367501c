"""all-namespaces-anti-affinity: required anti-affinity against every namespace or every pod."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kaffinity.explain.precedence import refused
from kaffinity.explain.wording import SHOWN, counted_list, domain_word
from kaffinity.findings import Related, Severity, Violation
from kaffinity.graph.affinity import AffinityGraph
from kaffinity.graph.members import RELATION_ANTI_AFFINITY, Member, Relation, selector_text
from kaffinity.k8s.compact import MODEL_FIELDS
from kaffinity.k8s.labels import HOSTNAME
from kaffinity.k8s.model.readers import dig
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.context import Context


def _victims(
    graph: AffinityGraph, owner: Member, relation: Relation, empty: bool
) -> tuple[list[Member], str]:
    """Who the term locks out: others in any namespace for ``{}``, else those of other namespaces:
    the first few (for ``related``) and their names as a message lists them.

    Only certain matches (``relation.matches``): a Namespace nobody declared might carry the
    labels a selector asks for, but naming it would be a guess.
    """
    listing = graph.listing(relation.matches)
    members, names, count = listing.first(SHOWN, skip=owner, other_than=None if empty else owner.namespace)
    return members, counted_list(names, count) if count else ""


def _check(context: Context) -> Iterator[Violation]:
    graph = context.graph
    gone = refused(context)  # never created: api-validation's finding says why, once
    for owner in graph.workloads():
        if owner.workload is not None and id(owner.workload.doc) in gone:
            continue
        for relation in graph.terms(owner.id, RELATION_ANTI_AFFINITY, required=True):
            empty = relation.selector is not None and relation.selector.is_empty
            if not (relation.all_namespaces or empty):
                continue
            yield _violation(graph, owner, relation, empty)


def _violation(graph: AffinityGraph, owner: Member, relation: Relation, empty: bool) -> Violation:
    key = relation.topology_key or "(no topologyKey)"
    scope = relation.scope
    pods = "every pod" if empty else f"every pod labelled {selector_text(relation.selector)}"
    domain = domain_word(key)
    # The design doc's "Denial of Service": anti-affinity is symmetric (the scheduler's
    # existing-anti-affinity check, satisfyExistingPodsAntiAffinity in
    # pkg/scheduler/framework/plugins/interpodaffinity/filtering.go), so the first such pod in a
    # domain keeps every pod it selects out of that whole domain, whoever arrives later.
    message = (
        f"required pod anti-affinity against {pods} in {scope} (topologyKey {key}): through "
        f"symmetry the first of these pods on a {domain} keeps every matching pod out of that "
        f"whole {domain}, in every namespace the term reaches"
        if relation.all_namespaces
        else f"required pod anti-affinity against {pods} in {scope} (labelSelector {{}}, topologyKey "
        f"{key}): through symmetry the first of these pods on a {domain} keeps every other pod of "
        f"{scope} out of that whole {domain}"
    )
    victims, names = _victims(graph, owner, relation, empty)
    if victims:
        where = "" if empty else "in other namespaces "
        message += f"; {where}it would lock out {names}"
    else:
        message += "; nothing else in the input matches it yet, but any pod created later that does will be"
    if key == HOSTNAME:
        message += " (with kubernetes.io/hostname this is the 'exclusive node' case the design allowed)"
    related = tuple(
        Related(member.doc, member.workload.template_path if member.workload else (), "locked out")
        for member in victims[:SHOWN]
    )
    field = "namespaceSelector" if relation.all_namespaces else "labelSelector"
    path = (*relation.path, field)
    if dig(relation.doc.data, path) is None:  # the merged selector can be {} with no key written
        path = relation.path
    fix = (
        "select the pods to avoid by label, and list the namespaces to avoid (namespaces: [...] or a "
        "namespaceSelector on a label) instead of every namespace; for nodes of its own, use a "
        "dedicated node pool (taints and node affinity)"
    )
    # Hostname: one pod per node is the "exclusive node" use case the design doc let through;
    # larger domains (zone, region) were to be rejected outright (design-proposals-archive
    # scheduling/podaffinity.md, "Denial of Service").
    severity = Severity.WARNING if key == HOSTNAME else None
    return Violation(relation.doc, path, message, related=related, fix=fix, severity=severity)


RULE = Rule(
    name="all-namespaces-anti-affinity",
    category="graph",
    severity=Severity.ERROR,
    summary="Required pod anti-affinity against every namespace (namespaceSelector: {}) or every pod ({}).",
    check=_check,
    needs_all_manifests=True,
    docs="""\
## What it finds
A required pod anti-affinity term (`requiredDuringSchedulingIgnoredDuringExecution`) whose scope
is every namespace (`namespaceSelector: {}`), or whose label selector, as kube-apiserver merges
it, is `{}` (every pod of the term's namespaces). The message names the workloads of the input
it would lock out (of other namespaces; for a `{}` selector, every other workload in scope), or
says that none exists yet.

Severity: error; a warning when the topologyKey is `kubernetes.io/hostname` (one pod per node,
the "exclusive node" use case).

## Why it matters
Pod anti-affinity is symmetric: the scheduler also refuses a pod on a node whose domain holds an
existing pod whose required anti-affinity matches it ("node(s) didn't satisfy existing pods
anti-affinity rules"). So the first pod with such a term in a zone keeps every pod it selects,
of every team and namespace, out of that whole zone. This is the "Denial of Service" of the
inter-pod affinity design: the pod may request almost nothing, so resource quota does not stop
it. The design planned to reject all-namespaces required anti-affinity with a topology key other
than the node's, in an admission plugin on by default; that never happened:

- the `LimitPodHardAntiAffinityTopology` admission plugin is **off by default**, and when enabled
  it rejects every required anti-affinity term whose topologyKey is not
  `kubernetes.io/hostname`, ignoring namespaces and `namespaceSelector` altogether;
- the ResourceQuota scope `CrossNamespacePodAffinity` (KEP-2249) can forbid terms that set
  `namespaces` or `namespaceSelector` in a namespace (`hard: {pods: "0"}` with that scope): a
  cluster-side guard administrators can enable; it does not cover `labelSelector: {}` within
  one namespace.

No namespace is exempt (the kube-system exemption the design proposed was never implemented).

## Example
```yaml
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - labelSelector:
        matchLabels: {app: batch}
      namespaceSelector: {}                  # every namespace: a zone of its own
      topologyKey: topology.kubernetes.io/zone
```

## Fix
Select the pods to avoid by label, in the namespaces to avoid (`namespaces: [...]` or a
`namespaceSelector` on a label). For nodes of its own, give the workload a dedicated node pool
(a taint it tolerates and node affinity) rather than anti-affinity against everything.

## References
Paths without a repository name are in kubernetes/kubernetes.

- kubernetes/design-proposals-archive `scheduling/podaffinity.md`, "Denial of Service"
- `pkg/scheduler/framework/plugins/interpodaffinity/filtering.go`
  (`satisfyExistingPodsAntiAffinity`)
- `plugin/pkg/admission/antiaffinity/admission.go` (`LimitPodHardAntiAffinityTopology`)
- KEP-2249, kubernetes/enhancements `keps/sig-scheduling/2249-pod-affinity-namespace-selector`
  (`namespaceSelector`, the `CrossNamespacePodAffinity` quota scope)
""",
    reads=MODEL_FIELDS,
)
