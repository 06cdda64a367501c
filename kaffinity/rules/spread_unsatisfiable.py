"""spread-unsatisfiable: DoNotSchedule topology spread constraints that cannot place every replica."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kaffinity.explain.wording import domain_word, name_list
from kaffinity.findings import Severity, Violation
from kaffinity.k8s.compact import MODEL_FIELDS
from kaffinity.k8s.model.readers import dig
from kaffinity.load.source import DataPath
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.context import Context
    from kaffinity.explain.pending import Analysis, Stuck
    from kaffinity.explain.shape import SpreadCap
    from kaffinity.simulate.framework.types import Spread


def _head(spread: Spread) -> str:
    return f"DoNotSchedule spread on {spread.topology_key} (maxSkew {spread.max_skew})"


def _written(stuck: Stuck, spread: Spread, field: str) -> bool:
    return dig(stuck.workload.doc.data, (*spread.source.path, field)) is not None


def _static(stuck: Stuck, cap: SpreadCap) -> tuple[DataPath, str, str]:
    from kaffinity.explain.pending_words import plural

    spread = cap.spread
    domain = domain_word(spread.topology_key)
    path = spread.source.path
    each = f"each {domain} it may use takes at most {plural(spread.max_skew, 'matching pod')}"
    if len(cap.domains) < spread.min_domains:
        # PodTopologySpread PreFilter: with fewer eligible domains than minDomains the global
        # minimum is 0 (KEP-3022; API doc of minDomains; calPreFilterState in
        # pkg/scheduler/framework/plugins/podtopologyspread/filtering.go).
        reason = (
            f"minDomains {spread.min_domains}, but the nodes it counts span only "
            f"{plural(len(cap.domains), domain)} ({name_list(cap.domains)}): with fewer {domain}s than "
            f"minDomains the global minimum counts as 0, so {each}"
        )
        where: DataPath = (*path, "minDomains")
        fix = f"lower minDomains to {len(cap.domains)} or less, add {domain}s, or lower replicas to {cap.cap}"
    else:
        # A counted domain the pod can never run in keeps its count (and so the minimum) at 0.
        dead = "; ".join(f"{name}: {why}" for name, why in cap.dead.items())
        taints = any("taint" in why for why in cap.dead.values())
        cordoned = any("cordoned" in why for why in cap.dead.values())
        policy = []
        if taints and not spread.honor_taints:
            policy.append(
                "nodeTaintsPolicy Ignore (the default) counts nodes whose taints it does not tolerate"
            )
        if not spread.honor_affinity:
            policy.append("nodeAffinityPolicy Ignore counts nodes its node selection excludes")
        if cordoned:
            # PreFilter never looks at spec.unschedulable; only the unschedulable taint the node
            # lifecycle controller adds is left out, and only with nodeTaintsPolicy: Honor.
            policy.append("a cordoned node still counts as a domain")
        reason = (
            f"it counts {plural(len(cap.dead), domain)} its pods can never use ({dead})"
            + (f" -- {'; '.join(policy)}" if policy else "")
            + f": their count stays 0, so the global minimum stays 0 and {each}"
        )
        where = (*path, "topologyKey")
        if taints and not spread.honor_taints:
            where = (*path, "nodeTaintsPolicy") if _written(stuck, spread, "nodeTaintsPolicy") else where
            fix = (
                "set nodeTaintsPolicy: Honor, so that nodes with taints it does not tolerate are not counted"
            )
        elif not spread.honor_affinity:
            where = (*path, "nodeAffinityPolicy") if _written(stuck, spread, "nodeAffinityPolicy") else where
            fix = "set nodeAffinityPolicy: Honor (the default), so that only nodes it may run on are counted"
        elif cordoned:
            fix = f"uncordon the node or remove it from the cluster, or lower replicas to {cap.cap}"
        else:
            fix = f"make the {domain}s it cannot use schedulable for it, or lower replicas to {cap.cap}"
    message = (
        f"{_head(spread)}: {reason}; with {plural(len(cap.usable), domain)} it may use, at most {cap.cap} of "
        f"its {stuck.shape.replicas} pods can run, at least {stuck.shape.replicas - cap.cap} never"
    )
    return where, message, fix


def _dynamic(result: Analysis, stuck: Stuck, spread: Spread) -> tuple[DataPath, str, str]:
    from kaffinity.explain.pending_words import counts_text, plural
    from kaffinity.simulate.plugins.podtopologyspread import REASON_SPREAD, REASON_SPREAD_LABEL, spread_counts

    sim = result.sim
    constraints = stuck.shape.probe.constraints
    domain = domain_word(spread.topology_key)
    final = stuck.final[0] if stuck.final else None
    rejected = (final.rejected or {}) if final is not None else {}
    lacking = [name for name, reasons in rejected.items() if REASON_SPREAD_LABEL in reasons]
    skewed = [name for name, reasons in rejected.items() if REASON_SPREAD in reasons]
    parts = []
    where: DataPath = (*spread.source.path, "topologyKey")
    fix = ""
    if lacking:
        keys = name_list(dict.fromkeys(s.topology_key for s in constraints.spread))
        parts.append(
            f"{plural(len(lacking), 'node')} it may run on ({name_list(lacking)}) lack {keys}, and "
            "PodTopologySpread rejects a node without every hard constraint's key (missing required label)"
        )
        fix = f"label those nodes with {keys}, or keep the pods off them with node affinity"
    if skewed:
        nodes, domains = sim.spread_nodes(constraints, spread)
        counts = spread_counts(sim, constraints.namespace, spread, nodes)
        ordered = sorted(domains)
        minimum = (
            0 if len(domains) < spread.min_domains else min((counts.get(d, 0) for d in ordered), default=0)
        )
        why_min = ""
        if len(domains) < spread.min_domains:
            why_min = f" (fewer {domain}s than minDomains {spread.min_domains} make it 0)"
        parts.append(
            f"matching pods per {domain}: {counts_text(counts, ordered)}; with the global minimum at "
            f"{minimum}{why_min}, a pod may only go to a {domain} holding fewer than "
            f"{minimum + spread.max_skew}, "
            f"and {name_list(skewed)} (which pass the filters before PodTopologySpread) are in {domain}s "
            "that do not"
        )
        if not fix:
            fix = (
                f"raise maxSkew, give it {domain}s it can use, or count only its own pods (matchLabelKeys, "
                "a narrower labelSelector)"
            )
    if not parts:
        parts.append("it is the constraint without which the pods would be placed")
        fix = "raise maxSkew, or make it ScheduleAnyway"
    message = f"{_head(spread)} leaves pods Pending: {'; '.join(parts)}"
    return where, message, fix


def _check(context: Context) -> Iterator[Violation]:
    from kaffinity.explain.pending import analysis, reporter
    from kaffinity.explain.pending_words import no_scale_up, pending_words
    from kaffinity.explain.shape import SPREAD_UNSATISFIABLE

    result = analysis(context)
    if result is None or result.stuck is None:
        return  # placement needed: quiet with --no-simulate
    for stuck in result.stuck.values():
        if reporter(context, result, stuck.workload) != SPREAD_UNSATISFIABLE:
            continue
        cap = stuck.shape.spread
        if cap is not None:
            where, message, fix = _static(stuck, cap)
        elif stuck.blocking is not None:
            where, message, fix = _dynamic(result, stuck, stuck.blocking)
        else:
            continue
        message += f": {pending_words(stuck)}"
        if stuck.final:
            message += f" ({stuck.final[0].summary(len(result.sim.nodes))})"
        message += no_scale_up(stuck)
        yield Violation(stuck.workload.doc, where, message, fix=fix)


RULE = Rule(
    name="spread-unsatisfiable",
    category="topology",
    severity=Severity.ERROR,
    summary="DoNotSchedule topology spread constraints that leave some replicas Pending on the cluster.",
    check=_check,
    needs_all_manifests=True,
    needs_cluster=True,
    docs="""\
## What it finds
A `whenUnsatisfiable: DoNotSchedule` topology spread constraint that keeps some of the
workload's pods Pending on the declared cluster:

- **a global minimum stuck at 0**: with fewer domains than `minDomains`, PodTopologySpread
  treats the global minimum as 0; so does a domain it counts but the pods can never run in --
  by default (`nodeTaintsPolicy: Ignore`) the nodes whose taints the pod does not tolerate
  count, and so do cordoned nodes. Each usable domain then takes at most `maxSkew` matching
  pods, so R replicas need R <= maxSkew x usable domains (decided from the nodes alone);
- **after the simulation**: pods that stay Pending but would be placed if the constraint were
  dropped -- nodes lacking the key (rejected with `missing required label`), or domains already
  at the skew limit. The message gives the matching pods per domain.

Workloads whose pods fit nowhere for another reason are left to the other topology rules
(each Pending workload is reported by one rule; by `unschedulable` when this rule does not run
or is configured below it). It needs the simulation (quiet with
`--no-simulate`).

## Why it matters
`skew = pods in the domain + 1 - global minimum` must stay within `maxSkew`
(`pkg/scheduler/framework/plugins/podtopologyspread/filtering.go`; KEP-895, KEP-3022
minDomains, KEP-3094 node inclusion policies). A domain whose count cannot grow pins the
minimum: the classic case is a hostname constraint and a tainted GPU or control-plane node
that nothing of the workload may run on, which caps a Deployment at maxSkew pods per other
node. The Pending pods show `node(s) didn't match pod topology spread constraints`.

## Example
```yaml
# cluster: 3 zones
topologySpreadConstraints:
  - maxSkew: 1
    minDomains: 5                # only 3 zones: at most 3 pods, one per zone
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
    labelSelector: {matchLabels: {app: web}}
```

## Fix
Lower `minDomains` to the number of domains, set `nodeTaintsPolicy: Honor` so that tainted
nodes do not count, raise `maxSkew`, add domains, or lower the replicas.

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/scheduler/framework/plugins/podtopologyspread/filtering.go` (`calPreFilterState`, `Filter`)
- KEP-3022, kubernetes/enhancements `keps/sig-scheduling/3022-min-domains-in-pod-topology-spread`
- KEP-3094, kubernetes/enhancements
  `keps/sig-scheduling/3094-pod-topology-spread-considering-taints`
- KEP-895, kubernetes/enhancements `keps/sig-scheduling/895-pod-topology-spread`
""",
    reads=MODEL_FIELDS,
)
