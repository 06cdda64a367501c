"""topology-key-absent: a topologyKey that none of the workload's eligible nodes carries."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING

from kaffinity.explain.wording import name_list
from kaffinity.findings import Related, Severity, Violation
from kaffinity.k8s.compact import MODEL_FIELDS
from kaffinity.k8s.labels import HOSTNAME
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.context import Context
    from kaffinity.explain.pending import Stuck
    from kaffinity.explain.shape import Absent, Shape

#: Deprecated keys and the GA key that replaced them (API doc "Well-Known Labels": the
#: failure-domain.beta.kubernetes.io labels are deprecated since 1.17).
_RENAMED = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}


@cache
def _consequences() -> dict[str, str]:
    """What an absent key does, by the kind of rule that names it."""
    from kaffinity.explain.shape import (
        TERM_AFFINITY,
        TERM_ANTI,
        TERM_PREFERRED_AFFINITY,
        TERM_PREFERRED_ANTI,
        TERM_SOFT_SPREAD,
        TERM_SPREAD,
    )

    return {
        # InterPodAffinity Filter: a node without a required term's key fails, first pod included
        # (satisfyPodAffinity in pkg/scheduler/framework/plugins/interpodaffinity/filtering.go;
        # the self-match exception still needs every key).
        TERM_AFFINITY: "InterPodAffinity rejects every node without the key, even for the first pod",
        # PodTopologySpread Filter: "node(s) didn't match pod topology spread constraints (missing
        # required label)", UnschedulableAndUnresolvable
        # (pkg/scheduler/framework/plugins/podtopologyspread/filtering.go).
        TERM_SPREAD: "PodTopologySpread rejects every node without the key (missing required label)",
        # InterPodAffinity satisfyPodAntiAffinity: a node without the key passes anti-affinity.
        TERM_ANTI: "a node without the key always passes anti-affinity, so this term keeps no pods apart",
        # InterPodAffinity Score sums a term's weight only on nodes carrying its key
        # (pkg/scheduler/framework/plugins/interpodaffinity/scoring.go).
        TERM_PREFERRED_AFFINITY: "the preference scores no node, so it has no effect",
        TERM_PREFERRED_ANTI: "the preference scores no node, so it has no effect",
        # PodTopologySpread Score: nodes without the key score 0, i.e. every node here
        # (pkg/scheduler/framework/plugins/podtopologyspread/scoring.go).
        TERM_SOFT_SPREAD: "every node scores the same for it, so it spreads nothing",
    }


def _typo(a: str, b: str) -> bool:
    """Whether ``b`` is ``a`` with at most two characters changed, added or dropped (a typo)."""
    if abs(len(a) - len(b)) > 2 or a == b:
        return False
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, start=1):
        current = [i]
        for j, other in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other)))
        previous = current
    return previous[-1] <= 2


def _eligible_words(shape: Shape, total: int) -> str:
    from kaffinity.explain.pending_words import plural

    count = len(shape.eligible)
    names = name_list(node.name for node in shape.eligible)
    if count == total:
        return f"none of the cluster's {plural(count, 'node')} ({names})"
    return f"none of the {plural(count, 'node')} its pods may run on ({names})"


def _fix(shape: Shape, absent: Absent) -> str:
    from kaffinity.explain.shape import KUBELET_LABELS, TERM_ANTI

    key = absent.key
    carried = sorted({label for node in shape.eligible for label in node.labels})
    if key in KUBELET_LABELS:
        return f"add {key} to the labels of the cluster file's nodes: the kubelet sets it on every node"
    if _RENAMED.get(key) in carried:
        return f"use {_RENAMED[key]}, the label the nodes carry ({key} is deprecated)"
    close = [label for label in carried if _typo(key, label)]
    if close:
        return f"did you mean {close[0]}? The nodes carry that label"
    if absent.kind == TERM_ANTI:
        return f"use a key the nodes carry (e.g. {HOSTNAME}), or label the nodes with {key}"
    if absent.blocks:
        return f"use a key the nodes carry (e.g. {HOSTNAME}), or label the nodes with {key}"
    return f"label the nodes with {key}, use a key they carry, or remove the term"


def _message(shape: Shape, absent: Absent, total: int, stuck: Stuck | None) -> str:
    from kaffinity.explain.pending_words import cannot_run, pending_words
    from kaffinity.explain.shape import KUBELET_LABELS, TOPOLOGY_KEY_ABSENT

    where = _eligible_words(shape, total)
    text = f"{absent.kind} on topologyKey {absent.key}, which {where} carries: {_consequences()[absent.kind]}"
    if absent.key in KUBELET_LABELS:
        text = (
            f"{absent.kind} on topologyKey {absent.key}, which {where} carries in the cluster file, although "
            f"the kubelet sets it on every node: as declared, {_consequences()[absent.kind]}"
        )
    if absent.blocks:
        if stuck is not None and stuck.rule == TOPOLOGY_KEY_ABSENT and shape.replicas:
            text += f": {pending_words(stuck)}"
        else:
            text += f": {cannot_run(shape.replicas)}"
    return text


def _check(context: Context) -> Iterator[Violation]:
    from kaffinity.explain.pending import analysis, reporter
    from kaffinity.explain.pending_words import node_related
    from kaffinity.explain.shape import TOPOLOGY_KEY_ABSENT

    result = analysis(context)
    if result is None:
        return
    total = len(result.sim.nodes)
    for shape in result.shapes.values():
        stuck = result.stuck.get(id(shape.workload)) if result.stuck is not None else None
        # Pods it keeps Pending that unschedulable reports instead (kaffinity.explain.precedence).
        handed = reporter(context, result, shape.workload) not in (TOPOLOGY_KEY_ABSENT, None)
        for absent in shape.absent:
            if absent.severity is None or (absent.blocks and handed):
                continue
            related: dict[tuple[int, tuple[object, ...]], Related] = {}
            for node in shape.eligible:
                item = node_related(node, f"labels of node {node.name}: no {absent.key}")
                related.setdefault((id(item.doc), item.path), item)
                if len(related) == 2:
                    break
            yield Violation(
                shape.workload.doc,
                (*absent.source.path, "topologyKey"),
                _message(shape, absent, total, stuck),
                related=tuple(related.values()),
                fix=_fix(shape, absent),
                severity=absent.severity,
            )


RULE = Rule(
    name="topology-key-absent",
    category="topology",
    severity=Severity.ERROR,
    summary="A topologyKey that none of the nodes a workload may run on carries.",
    check=_check,
    needs_all_manifests=True,
    needs_cluster=True,
    docs="""\
## What it finds
A pod (anti-)affinity term or topology spread constraint whose `topologyKey` is a label none
of the workload's eligible nodes carries: the nodes of the declared cluster (`--cluster`) that
pass its `nodeSelector`, required node affinity and tolerations (and are not cordoned). It
needs only the cluster's nodes, so it runs with `--no-simulate` too.

| term | severity | a node without the key |
|---|---|---|
| required pod affinity | error | rejected, even for the first pod (InterPodAffinity): no pod runs |
| `DoNotSchedule` spread | error | rejected, `missing required label` (PodTopologySpread): no pod runs |
| required pod anti-affinity | warning | accepted: the term keeps nothing apart |
| preferred terms, `ScheduleAnyway` spread | info (keys not well-known) | scores nothing: no effect |

Preferences and `ScheduleAnyway` constraints on the well-known keys (`kubernetes.io/hostname`,
`topology.kubernetes.io/zone` and `/region` and their deprecated `failure-domain.beta` forms)
are left alone: zone and region labels are set by cloud providers only, so a portable manifest
that prefers spreading over zones is no mistake on a cluster without them -- a preference that
cannot apply is harmless. A required anti-affinity term on `kubernetes.io/hostname` is not
reported either, and one that blocks is a warning: every kubelet sets that label, so a cluster
file without it is what is wrong (the message says so).

## Why it matters
A typo (`kubernetes.io/hostnme`), a key from another cloud or the deprecated
`failure-domain.beta.kubernetes.io/zone` on nodes that only carry `topology.kubernetes.io/zone`
silently changes the meaning: required affinity and hard spread leave every pod Pending
(`0/6 nodes are available: 6 node(s) didn't match pod affinity rules`), while required
anti-affinity meant to keep replicas in different zones allows them all in one (upstream
`pkg/scheduler/framework/plugins/interpodaffinity/filtering.go` and
`podtopologyspread/filtering.go`; the API docs of `topologyKey`).

## Example
```yaml
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone   # the cluster's nodes have no zone label
    whenUnsatisfiable: DoNotSchedule
```

## Fix
Use a key the nodes carry (the message suggests a close one), label the nodes, or -- for a
key that only some clusters have -- make the rule `ScheduleAnyway` / preferred.

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/scheduler/framework/plugins/interpodaffinity/filtering.go` (`satisfyPodAffinity`,
  `satisfyPodAntiAffinity`) and `scoring.go`
- `pkg/scheduler/framework/plugins/podtopologyspread/filtering.go` (`Filter`: "missing required
  label") and `scoring.go`
""",
    reads=MODEL_FIELDS,
)
