"""When two rules describe the same pods, the more severe finding is kept (a warning never hides an
error), whichever rules are selected and whatever severities are configured
(kaffinity.explain.precedence).

One test per pair, each with and without ``--select``; the pending partition
(no-eligible-node, topology-key-absent, ... / unschedulable) is in tests/test_topology_rules.py,
the unschedulable / affinity-no-match pair in tests/rules/test_unschedulable.py, the nil-selector
affinity-no-match / api-warning pair in tests/rules/test_affinity_no_match.py.
"""

from __future__ import annotations

import textwrap
from typing import Any

from kaffinity.findings import Severity

from .kit import EXAMPLES, findings, keys, lint_paths, lint_text, position, run_json


def _found(text: str, **settings: Any) -> list[tuple[str, int | None, int | None, Severity]]:
    """The findings as (rule, line, column, severity), sorted."""
    return sorted((f.rule, f.line, f.column, f.severity) for f in lint_text(text, **settings).findings)


# -- unschedulable / affinity-no-match, through the command line (the example) -----------


def test_pending_pods_of_a_no_match_affinity_fail_the_run() -> None:
    """A required pod affinity that matches nothing, on a declared cluster without pods: the pods
    are certain to stay Pending, so the run reports the error and exits 1, as --select does."""
    path = str(EXAMPLES / "affinity-no-match" / "fail.yaml")
    cluster = str(EXAMPLES / "clusters" / "topology.yaml")
    text = (EXAMPLES / "affinity-no-match" / "fail.yaml").read_text(encoding="utf-8")
    # Each Pending workload's first required pod affinity term, at its labelSelector.
    terms = [position(text, "- labelSelector:", n) for n in (1, 2, 4)]
    expected = [("unschedulable", line, column + 2) for line, column in terms]
    for select in ((), ("--select", "unschedulable"), ("--select", "unschedulable,affinity-no-match")):
        code, report = run_json("--cluster", cluster, *select, path)
        assert code == 1, (select, report)
        errors = [(f["rule"], f["line"], f["column"]) for f in report["findings"] if f["severity"] == "error"]
        assert errors == expected, select


def test_affinity_no_match_example_keeps_its_hint_when_unschedulable_wins() -> None:
    path = EXAMPLES / "affinity-no-match" / "fail.yaml"
    result = lint_paths(path, cluster="examples/clusters/topology.yaml", select=("graph", "topology"))
    won = findings(result, "unschedulable")
    assert keys(won) == keys(result) and len(won) == 3
    assert all(f.severity is Severity.ERROR for f in won)
    assert any(f.fix and f.fix.startswith("did you mean") for f in won)


# -- anti-affinity-no-match, preferred-no-match / api-warning: a term without labelSelector -------

NIL_ANTI = textwrap.dedent(
    """\
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web}
    spec:
      replicas: 1
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec:
          containers: [{name: web, image: nginx}]
          affinity:
            podAntiAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
              - topologyKey: kubernetes.io/hostname
              preferredDuringSchedulingIgnoredDuringExecution:
              - weight: 10
                podAffinityTerm: {topologyKey: kubernetes.io/hostname}
    """
)


def test_a_nil_selector_is_api_warning_s_at_equal_or_lower_severity() -> None:
    both = ("anti-affinity-no-match", "preferred-no-match", "api-warning")
    required = position(NIL_ANTI, "topologyKey: kubernetes.io/hostname", 1)
    preferred = position(NIL_ANTI, "podAffinityTerm")
    assert _found(NIL_ANTI, select=both) == [
        ("api-warning", *required, Severity.WARNING),
        ("api-warning", *preferred, Severity.WARNING),
    ]
    # Without api-warning, nothing gives way: each rule reports its term.
    assert _found(NIL_ANTI, select=both[:2]) == [
        ("anti-affinity-no-match", *required, Severity.WARNING),
        ("preferred-no-match", *preferred, Severity.INFO),
    ]
    # Configured above api-warning, the rule's finding is kept beside it.
    raised = _found(NIL_ANTI, select=both, severity={"anti-affinity-no-match": Severity.ERROR})
    assert raised == [
        ("anti-affinity-no-match", *required, Severity.ERROR),
        ("api-warning", *required, Severity.WARNING),
        ("api-warning", *preferred, Severity.WARNING),
    ]


# -- revision-unscoped / gated-field-dropped and field-unavailable -------------------------------

SCOPED = textwrap.dedent(
    """\
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web}
    spec:
      replicas: 3
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec:
          containers: [{name: web, image: nginx}]
          affinity:
            podAntiAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
              - labelSelector: {matchLabels: {app: web}}
                topologyKey: kubernetes.io/hostname
                matchLabelKeys: [pod-template-hash]
    """
)


def test_a_dropped_revision_key_is_the_field_rule_s_at_equal_or_higher_severity() -> None:
    """1.30 with the gate off drops matchLabelKeys: the term counts every revision again."""
    rules = ("revision-unscoped", "gated-field-dropped")
    off = {"MatchLabelKeysInPodAffinity": False}
    term, field = position(SCOPED, "labelSelector"), position(SCOPED, "matchLabelKeys")
    assert _found(SCOPED, select=rules, kube_version="1.30", feature_gates=off) == [
        ("gated-field-dropped", *field, Severity.WARNING)
    ]
    assert _found(SCOPED, select=rules[:1], kube_version="1.30", feature_gates=off) == [
        ("revision-unscoped", *term, Severity.WARNING)
    ]
    raised = _found(
        SCOPED,
        select=rules,
        kube_version="1.30",
        feature_gates=off,
        severity={"revision-unscoped": Severity.ERROR},
    )
    assert raised == [
        ("gated-field-dropped", *field, Severity.WARNING),
        ("revision-unscoped", *term, Severity.ERROR),
    ]
    # 1.28 has no such field: field-unavailable (an error) keeps it, unless it does not run.
    assert _found(SCOPED, select=("revision-unscoped", "field-unavailable"), kube_version="1.28") == [
        ("field-unavailable", *field, Severity.ERROR)
    ]
    assert _found(SCOPED, select=("revision-unscoped",), kube_version="1.28") == [
        ("revision-unscoped", *term, Severity.WARNING)
    ]
    # Where the field is kept, the term is scoped: nothing to say.
    assert _found(SCOPED, select=rules, kube_version="1.31") == []
