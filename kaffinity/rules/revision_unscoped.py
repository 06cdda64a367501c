"""revision-unscoped: a Deployment's required rule that counts its own pods of every revision."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from kaffinity.expand.merge import (
    POD_AFFINITY,
    POD_ANTI_AFFINITY,
    TOPOLOGY_SPREAD_CONSTRAINTS,
    affinity_terms,
    pod_labels,
)
from kaffinity.explain.precedence import gives_way, refused
from kaffinity.findings import Severity, Violation
from kaffinity.k8s import gates as fg
from kaffinity.k8s.compact import MODEL_FIELDS
from kaffinity.k8s.fenceposts import Budget, deployment_budget
from kaffinity.k8s.labels import POD_TEMPLATE_HASH
from kaffinity.k8s.model import PodAffinityTerm, TopologySpreadConstraint, Workload
from kaffinity.k8s.model.readers import dig
from kaffinity.k8s.selectors import namespace_in_scope, selector_matches
from kaffinity.load.display import quote_name
from kaffinity.load.source import DataPath, Document, PosDict, Span, locate_depth, unpack
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.context import Context
    from kaffinity.expand.fixes import Fix
    from kaffinity.load.edits import Edit

RULE_NAME = "revision-unscoped"

_WHY = {
    POD_ANTI_AFFINITY: (
        "required pod anti-affinity selects this Deployment's own pods of every revision: during a "
        "rolling update each new pod must also keep away from the old ones, and with one pod per "
        "topology domain the surge pod has nowhere to go{strategy} and the rollout hangs"
    ),
    POD_AFFINITY: (
        "required pod affinity is satisfied by this Deployment's own pods of every revision: during a "
        "rolling update the new pods are placed by where the old revision's pods run (KEP-3633 story 1)"
    ),
    TOPOLOGY_SPREAD_CONSTRAINTS: (
        "this DoNotSchedule spread constraint counts this Deployment's own pods of every revision: "
        "during a rolling update the old pods count toward the skew, and once they are gone the new "
        "pods can be left unbalanced (KEP-3243)"
    ),
}


def unscoped_terms(
    context: Context, workload: Workload
) -> Iterator[tuple[str, PodAffinityTerm | TopologySpreadConstraint]]:
    """The required terms of a rolling-update Deployment that select its own pods across revisions."""
    strategy = workload.strategy
    if workload.ref.kind != "Deployment" or strategy is None or strategy.type != "RollingUpdate":
        return
    terms: list[tuple[str, PodAffinityTerm | TopologySpreadConstraint]] = [
        (kind, term) for kind, required, term in affinity_terms(workload) if required
    ]
    terms += [
        (TOPOLOGY_SPREAD_CONSTRAINTS, constraint)
        for constraint in workload.pod.topology_spread_constraints
        if constraint.when_unsatisfiable == "DoNotSchedule"
    ]
    # Scoped terms are fine, unless the target drops the field: then the term counts every
    # revision after all, which gated-field-dropped (or field-unavailable) reports too.
    terms = [
        (kind, term)
        for kind, term in terms
        if POD_TEMPLATE_HASH not in term.match_label_keys or not supported(context, kind).enabled
    ]
    if not terms:
        return
    expansions = context.expansions
    own = pod_labels(workload, expansions.version, qualified=True)
    namespace = workload.ref.namespace or context.settings.namespace
    for kind, term in terms:
        if not selector_matches(expansions.selector(workload, term), own):
            continue
        if isinstance(term, PodAffinityTerm) and not namespace_in_scope(
            term, namespace, namespace, context.namespace_labels.get(namespace)
        ):
            continue
        yield kind, term


#: The anti-affinity message when the strategy lets an old pod go first: the rollout finishes.
_SLOWER = (
    "required pod anti-affinity selects this Deployment's own pods of every revision: during a "
    "rolling update each new pod must also keep away from the old ones, so with one pod per "
    "topology domain a surge pod stays Pending until an old pod is removed; with {budget} the "
    "controller removes up to {unavailable} while it waits, so the rollout finishes, but without "
    "the surge it asks for (and a cluster autoscaler may add a node for the Pending pod)"
)


def anti_affinity_budget(workload: Workload) -> Budget | None:
    """The strategy's numbers when they decide what an unscoped self anti-affinity does to the
    rollout: ``deploymentutil.ResolveFenceposts`` against ``spec.replicas`` (None: they do not
    resolve; the API server rejects such a strategy)."""
    replicas = workload.replicas if workload.replicas is not None else 1
    return deployment_budget(workload, max(replicas, 1))


def _anti_affinity(workload: Workload) -> tuple[str, Severity | None] | None:
    """What an unscoped required self anti-affinity does to this Deployment's rollout.

    ``rolling.go`` ``reconcileOldReplicaSets`` scales old ReplicaSets down by at most ``all pods -
    (replicas - maxUnavailable) - new pods unavailable``: with the surge pod Pending that is
    ``maxUnavailable``. So the rollout hangs (every domain held by an old pod, the surge pod
    Pending, nothing removed) only when maxUnavailable resolves to 0; with maxUnavailable >= 1 an
    old pod goes, its domain frees, and the rollout finishes with its surge wasted (info); with
    maxSurge 0 nothing waits on the term (nothing to say: it is the workaround the fix names).
    None: nothing to report.
    """
    budget = anti_affinity_budget(workload)
    if budget is None or budget.unavailable == 0:
        strategy = f"; with {budget.text} no old pod is removed while it is Pending," if budget else ","
        return _WHY[POD_ANTI_AFFINITY].format(strategy=strategy), None
    if budget.surge == 0:
        return None
    return _SLOWER.format(budget=budget.text, unavailable=budget.unavailable), Severity.INFO


def _dropped_elsewhere(context: Context, state: fg.GateState, severity: Severity | None) -> bool:
    """Whether the rule that reports the dropped ``matchLabelKeys`` (``gated-field-dropped``; a
    version without the field: ``field-unavailable``) describes this term at least as severely:
    then this finding gives way to it (kaffinity.explain.precedence)."""
    field_rule = "field-unavailable" if state.stage is None else "gated-field-dropped"
    return gives_way(context, (RULE_NAME, severity), (field_rule, None), tie_to_other=True)


def _where(workload: Workload, term: PodAffinityTerm | TopologySpreadConstraint) -> str:
    """Where the key goes, from the positions the loader kept: the column of the term's keys."""
    data = dig(workload.doc.data, term.path)
    if isinstance(data, PosDict) and data.pos:
        column = unpack(data.pos[-1]).column
        return f" at column {column}, like its other keys"
    return ""


def supported(context: Context, kind: str) -> fg.GateState:
    """The gate that decides whether the target keeps ``matchLabelKeys`` on this kind of term."""
    settings = context.settings
    gate = (
        fg.MATCH_LABEL_KEYS_IN_SPREAD
        if kind == TOPOLOGY_SPREAD_CONSTRAINTS
        else fg.MATCH_LABEL_KEYS_IN_POD_AFFINITY
    )
    return fg.gate_state(gate, settings.kube_version, settings.feature_gates)


def _replayed(context: Context) -> bool:
    """Whether the declared cluster's rollouts are simulated, so that the hang this rule can only
    foresee is decided there: ``rollout-deadlock`` reports the rollout that hangs on the declared
    nodes (an error, the autoscaler unable to help named), ``needs-scale-up`` the one that
    finishes because the autoscaler adds a node for the surge pod (a ``ClusterTopology`` pool
    with ``max``, a Karpenter NodePool: cluster-autoscaler and Karpenter act on a Pending pod
    before the Deployment controller removes an old one), and a rollout that finishes on the
    nodes there are is not a hang. Cheap: no placement is read here (this rule runs once over
    every object, the rollout rules once per unit on the placement they share,
    ``simulate.rollout.simulation.outcomes``). False without a cluster, with ``--no-simulate``,
    with a cluster file that could not be read (the engine runs no rule that reads it), or when
    rollout-deadlock does not run or reports below this warning (nothing gives way to it)."""
    cluster = context.cluster
    if cluster is None or not context.settings.simulate:
        return False
    if any(problem.rule == "parse-error" for file in cluster.files for problem in file.problems):
        return False
    return gives_way(context, (RULE_NAME, None), ("rollout-deadlock", None), tie_to_other=True)


def _check(context: Context) -> Iterator[Violation]:
    version = context.settings.kube_version
    gone = refused(context)  # never created: api-validation's finding says why, once
    replayed: bool | None = None
    for workload in context.inventory.every_workload:
        if id(workload.doc) in gone:
            continue
        for kind, term in unscoped_terms(context, workload):
            message, severity = _WHY[kind], None
            if kind == POD_ANTI_AFFINITY:
                effect = _anti_affinity(workload)
                if effect is None:
                    continue
                message, severity = effect
                if severity is None:  # the hang: on a declared cluster the simulation decides
                    if replayed is None:
                        replayed = _replayed(context)
                    if replayed:
                        continue
            state = supported(context, kind)
            if POD_TEMPLATE_HASH in term.match_label_keys and _dropped_elsewhere(context, state, severity):
                continue
            if state.enabled:
                yield Violation(
                    workload.doc,
                    term.path,
                    message,
                    severity=severity,
                    fix=_UNPLANNED,
                    plan=_planner(context, workload, term),
                )
                continue
            hint = (
                f"matchLabelKeys is not available here ({state.why(version)}); upgrade or enable the "
                "gate, or roll out with maxSurge: 0 and maxUnavailable: 1"
                if kind != TOPOLOGY_SPREAD_CONSTRAINTS
                else f"matchLabelKeys is not available here ({state.why(version)}); upgrade or enable "
                "the gate"
            )
            yield Violation(workload.doc, term.path, message, fix=hint, severity=severity)


def _planner(
    context: Context, workload: Workload, term: PodAffinityTerm | TopologySpreadConstraint
) -> Callable[[], tuple[str, Edit | None, str | None]]:
    """The finding's hint and fix, planned when the engine keeps the finding (Violation.plan)."""

    def plan() -> tuple[str, Edit | None, str | None]:
        fix, hint = _fix_hint(context, workload, term)
        return hint, fix.edit if fix else None, fix.file if fix else None

    return plan


#: What a hint says when ``kaffinity fix`` makes its edit, and only then (tests hold it to that).
FIX_PROMISE = "kaffinity fix does it"

#: The hint of a finding whose edit the run did not plan (engine.record.PLANS_PER_RUN): it promises no
#: edit, and says where to learn whether one can be made.
_UNPLANNED = (
    f'add "matchLabelKeys: [{POD_TEMPLATE_HASH}]" to this term (a run plans the edits of its first '
    "findings only: fix --diff shows whether it can write this one), so that each revision counts "
    "only its own pods"
)


def _fix_hint(
    context: Context, workload: Workload, term: PodAffinityTerm | TopologySpreadConstraint
) -> tuple[Fix | None, str]:
    """The edit ``kaffinity fix`` makes for this term, if any, and the hint that says so.

    Both come from :func:`kaffinity.expand.fixes.plan_revision_fix`, the planner ``fix`` applies:
    the hint names ``kaffinity fix`` exactly when there is an edit (and no other hint names it),
    so it never promises what ``fix`` then does not do (issue 33). Planning composes the term's
    file again (kaffinity.load.edits caches the last few)."""
    from kaffinity.expand.fixes import plan_revision_fix

    doc = workload.doc
    rendered = id(doc) in context.run.rendered
    place = context.run.places.get(id(doc))
    fix = plan_revision_fix(context.texts, workload, term, rendered=rendered, place=place)
    hint = f'add "matchLabelKeys: [{POD_TEMPLATE_HASH}]" to this term'
    if fix is not None:
        where = "" if fix.file == doc.file else f"in {quote_name(fix.file)} "
        hint += f" ({FIX_PROMISE}, {where}{fix.describe(fix.text)}; fix --diff shows it first)"
    elif rendered:
        hint += " " + _rendered_by_hand(context, workload, term, place)
    else:
        hint += (
            f"{_where(workload, term)} by hand (not edited automatically: a YAML alias or merge "
            "key shares this term, or its layout is one no safe edit writes)"
        )
    return fix, hint + ", so that each revision counts only its own pods"


def _rendered_by_hand(
    context: Context,
    workload: Workload,
    term: PodAffinityTerm | TopologySpreadConstraint,
    place: Callable[[Document, DataPath], tuple[str, Span] | None] | None,
) -> str:
    """Where to add the key by hand to a rendered term that no single file spells as rendered:
    the patch or template line it comes from, and the chart value a template line prints."""
    from kaffinity.expand.fixes import file_text, printed_values

    doc = workload.doc
    spelled = place(doc, term.path) if place is not None else None
    if spelled is not None:
        file, span = spelled
    else:
        full = (*doc.prefix, *term.path)
        depth, span = locate_depth(doc.root, full, doc.span)
        file = doc.file
        if depth < len(full) and not printed_values(file_text(context.texts, file) or "", span.line):
            # Not spelled in the object's file (an inline patch of a kustomization, a
            # generator): the build of the unit sets it.
            units = ", ".join(context.run.rendered[id(doc)])
            return (
                f"where the build{f' of {units}' if units else ''} sets it (an inline patch or "
                f"another layer: {quote_name(file)} does not spell it; not edited automatically, "
                "as no file of the repository writes the term as it is rendered)"
            )
    where = f"{quote_name(file)}:{span.line}"
    text = file_text(context.texts, file) or ""
    values = printed_values(text, span.line)
    if values:
        listed = ", ".join(f".Values.{value}" for value in values)
        return (
            f"where {where} renders it from {listed}: in the chart's values file under that key, "
            "or in the template (not edited automatically: no one file writes the term as it "
            "is rendered)"
        )
    return (
        f"where it is written, {where} (not edited automatically: the term is built from a "
        "template or merged from several places, not written as rendered in one file)"
    )


RULE = Rule(
    name=RULE_NAME,
    category="expansion",
    severity=Severity.WARNING,
    summary="A Deployment's required (anti-)affinity or spread counts old and new revisions together.",
    check=_check,
    fixable=True,
    reads_other_files=True,  # the namespaceSelector of a term, against its Namespace's labels
    docs="""\
## What it finds
A Deployment with the RollingUpdate strategy whose required pod anti-affinity, required pod
affinity or `DoNotSchedule` topology spread constraint selects the Deployment's own pods (the
selector, merged as the API server merges it, matches the pod template's labels, in the pod's
own namespace), without `matchLabelKeys: [pod-template-hash]`.

## Why it matters
During a rolling update old and new ReplicaSets run side by side. Without the revision key the
scheduler evaluates both together:

- required self anti-affinity (one pod per node or zone): the surge pod must avoid the old pods
  too; when every eligible domain already holds one (replicas = nodes) it stays Pending. What
  happens next is the strategy's arithmetic (`pkg/controller/deployment/rolling.go`,
  `reconcileOldReplicaSets`: old pods are removed while `all pods - (replicas - maxUnavailable) -
  new pods unavailable` is positive, i.e. up to `maxUnavailable` with the surge pod Pending;
  `maxSurge` and `maxUnavailable` resolved against `spec.replicas` as `ResolveFenceposts` does:
  surge rounded up, unavailable down):
  - `maxUnavailable` resolves to 0 (the default 25% with fewer than 4 replicas, or `maxSurge`
    only): no old pod is removed and the rollout never finishes (kubernetes issues 56539,
    116891, 103584; the KEP-3633 motivation). A **warning** without a cluster. With a declared
    cluster (`--cluster`, simulation on) the rollout is replayed there and the replay decides,
    so this warning is not given: `rollout-deadlock` reports the hang as an error (naming a
    pool at its max: the autoscaler cannot help), `needs-scale-up` a rollout that finishes
    because the autoscaler adds a node for the surge pod (a `ClusterTopology` pool with `max`,
    a Karpenter `NodePool`: the Pending surge pod gets a new node before the controller removes
    an old pod), and a rollout that finishes on the nodes there are is not reported. The
    warning stays when `rollout-deadlock` does not run or is configured below it.
  - `maxUnavailable` of 1 or more, with a surge: an old pod goes first and frees its domain, so
    the rollout finishes, one `maxUnavailable` at a time, but the surge it asks for never runs
    and a Pending pod appears at each step (a cluster autoscaler may add a node for it). An
    **info**: the manifest works, and `matchLabelKeys` gives the surge back (the KEP-3633
    motivation: old pods "preventing new version Pods from finding nodes").
  - `maxSurge: 0`: the controller removes an old pod before it creates a new one, the new pod
    takes the freed domain, and nothing waits on the term: nothing is reported (it is the
    workaround the fix names for clusters without `matchLabelKeys`).
  - `Recreate` removes every old pod first: never concerned.
- spread constraints count the old pods toward the skew, so the new pods land skewed once the
  old ones are gone (KEP-3243 motivation);
- required self affinity places the new pods by where the old revision runs (KEP-3633 story 1).

A Deployment the API server refuses (`api-validation`: a selector its template's labels do not
match, a request above its limit...) is never created and never rolls out: nothing is reported
beside that error.

`pod-template-hash` is set by the Deployment controller on each ReplicaSet's pods;
`matchLabelKeys: [pod-template-hash]` makes kube-apiserver append `pod-template-hash In [<this
revision>]` to the selector of every new pod, so each revision counts only its own pods.

## Example
```yaml
kind: Deployment
...
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - labelSelector:
        matchLabels: {app: web}
      topologyKey: kubernetes.io/hostname     # no matchLabelKeys: old pods block new ones
```

## Fix
Add `matchLabelKeys: [pod-template-hash]` to the term, where the target version supports the
field: pod affinity from 1.31, or 1.29 with the gate; spread from 1.27. `kaffinity fix` does it
where the hint says so: a term written in one file as it is rendered (the manifest, an overlay's
patch, or the chart `values.yaml` key a template prints with `toYaml`); elsewhere the hint says
where to add it. On older clusters, roll out with `maxSurge: 0` and `maxUnavailable: 1` instead.

## References
Paths without a repository name are in kubernetes/kubernetes.

- KEP-3633, kubernetes/enhancements `keps/sig-scheduling/3633-matchlabelkeys-to-podaffinity`,
  "Motivation"
- KEP-3243, kubernetes/enhancements
  `keps/sig-scheduling/3243-respect-pod-topology-spread-after-rolling-upgrades`, "Motivation"
- `pkg/controller/deployment/rolling.go` (`reconcileNewReplicaSet`, `reconcileOldReplicaSets`)
""",
    reads=MODEL_FIELDS,
)
