"""The rule ``all-namespaces-anti-affinity`` (kaffinity/rules/all_namespaces_anti_affinity.py): a
required anti-affinity over every namespace (or an empty selector) that locks other tenants out,
reported at the term naming who (the 2015 design, kubernetes/design-proposals-archive
``scheduling/podaffinity.md``, "Denial of Service").

Who is locked out is asserted by the related locations; the words ("all namespaces", how a long
list is cut, "exclusive node") are the subject where a test reads the message.
"""

from __future__ import annotations

import json

from kaffinity.findings import Severity

from ..kit import keys, lint_text, position
from .graph_policy_inputs import ALL_NS, doc_at, graph_workload, lint_objects, lint_rule, term

# -- all-namespaces-anti-affinity -----------------------------------------------------------------

ALL_NAMESPACES = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: exclusive, namespace: ops}
spec:
  serviceName: exclusive
  selector: {matchLabels: {app: exclusive}}
  template:
    metadata: {labels: {app: exclusive}}
    spec:
      containers: [{name: c, image: x}]
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {tier: batch}}
              namespaceSelector: {}
              topologyKey: topology.kubernetes.io/zone
"""


def _batch(name: str, namespace: str) -> str:
    return f"""\
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}, tier: batch}}}}
    spec: {{containers: [{{name: c, image: x}}]}}
"""


def test_all_namespaces_with_a_zone_key_is_an_error_naming_who_it_locks_out() -> None:
    text = ALL_NAMESPACES + _batch("reports", "finance") + _batch("etl", "data") + _batch("local", "ops")
    result = lint_rule(text, ALL_NS)
    assert keys(result) == [(ALL_NS, *position(text, "namespaceSelector: {}"))]
    (finding,) = result.findings
    assert finding.severity is Severity.ERROR
    assert "all namespaces" in finding.message and "topology.kubernetes.io/zone" in finding.message
    # Related: the workloads it locks out, in (namespace, kind, name) order whatever the order of
    # the documents (etl in data, then reports in finance); not ops/local, in its own namespace.
    assert [(loc.span.line, loc.span.column) for loc in finding.related if loc.span] == [
        position(text, "template:", 3),
        position(text, "template:", 2),
    ]
    assert finding.fix and "namespaces" in finding.fix
    swapped = ALL_NAMESPACES + _batch("local", "ops") + _batch("etl", "data") + _batch("reports", "finance")
    assert [f.message for f in lint_rule(swapped, ALL_NS).findings] == [finding.message]


def test_many_victims_are_counted_and_none_is_said_so() -> None:
    text = ALL_NAMESPACES + "".join(_batch(f"job{n}", f"team{n}") for n in range(15))
    result = lint_rule(text, ALL_NS)
    assert keys(result) == [(ALL_NS, *position(text, "namespaceSelector: {}"))]
    (finding,) = result.findings
    # The victims' templates, the first three in (namespace, kind, name) order.
    assert [(loc.span.line, loc.span.column) for loc in finding.related if loc.span] == [
        position(text, "template:", n) for n in (2, 3, 12)
    ]
    assert (  # the first three in (namespace, kind, name) order: team10 sorts before team2
        "Deployment/team0/job0, Deployment/team1/job1, Deployment/team10/job10 and 12 more" in finding.message
    )
    assert len(finding.related) == 3
    (alone,) = lint_rule(ALL_NAMESPACES, ALL_NS).findings
    assert "nothing else in the input matches it yet" in alone.message and not alone.related


def test_an_empty_label_selector_with_hostname_is_a_warning_naming_its_namespace_neighbours() -> None:
    objects = [
        graph_workload("loner", "ns-a", {"app": "loner"}, anti=[term({})]),
        graph_workload("neighbour", "ns-a", {"app": "neighbour"}),
        graph_workload("elsewhere", "ns-b", {"app": "elsewhere"}),
    ]
    found = lint_objects(*objects, rule=ALL_NS)
    assert keys(found) == [(ALL_NS, *doc_at(tuple(objects), 0, '"labelSelector"'))]
    (finding,) = found
    assert finding.severity is Severity.WARNING
    assert finding.path.endswith("labelSelector")
    # Related: the neighbour in the same namespace, not the workload elsewhere.
    assert [loc.span.line for loc in finding.related if loc.span] == [
        doc_at(tuple(objects), 1, '"template"')[0]
    ]
    assert "exclusive node" in finding.message


def test_an_empty_selector_over_every_namespace_names_everyone() -> None:
    objects = [
        graph_workload(
            "hog",
            "ns-a",
            {"app": "hog"},
            anti=[term({}, "topology.kubernetes.io/region", namespaceSelector={})],
        ),
        graph_workload("neighbour", "ns-a", {"app": "neighbour"}),
        graph_workload("elsewhere", "ns-b", {"app": "elsewhere"}),
    ]
    found = lint_objects(*objects, rule=ALL_NS)
    assert keys(found) == [(ALL_NS, *doc_at(tuple(objects), 0, '"namespaceSelector"'))]
    (finding,) = found
    assert finding.severity is Severity.ERROR and finding.path.endswith("namespaceSelector")
    assert [loc.span.line for loc in finding.related if loc.span] == [
        doc_at(tuple(objects), index, '"template"')[0] for index in (1, 2)
    ]
    assert "region" in finding.message


def test_specific_selectors_scopes_and_soft_terms_are_quiet() -> None:
    objects = [
        graph_workload(
            "a",
            "ns-a",
            {"app": "a"},
            anti=[term({"matchLabels": {"app": "b"}}, "topology.kubernetes.io/zone")],
        ),
        graph_workload(
            "b",
            "ns-a",
            {"app": "b"},
            anti=[term({"matchLabels": {"app": "a"}}, namespaceSelector={"matchLabels": {"team": "x"}})],
        ),
        graph_workload("c", "ns-a", {"app": "c"}, preferred=[term({}, namespaceSelector={})]),
        graph_workload(
            "d", "ns-a", {"app": "d"}, anti=[term(None, namespaceSelector={"matchLabels": {"team": "x"}})]
        ),
        graph_workload("e", "ns-a", {"app": "e"}, affinity=[term({}, namespaceSelector={})]),
    ]
    assert keys(lint_objects(*objects, rule=ALL_NS)) == []


def test_match_label_keys_make_an_empty_selector_specific() -> None:
    """kube-apiserver merges matchLabelKeys into the selector (``pkg/registry/core/pod/strategy.go``):
    no longer {}."""
    objects = [
        {
            **graph_workload(
                "web",
                "ns-a",
                {"app": "web"},
                kind="Deployment",
                anti=[term({}, matchLabelKeys=["pod-template-hash"])],
            ),
        }
    ]
    assert keys(lint_objects(*objects, rule=ALL_NS)) == []


def test_configured_severity_wins_over_the_hostname_warning() -> None:
    objects = [graph_workload("loner", "ns-a", {"app": "loner"}, anti=[term({})])]
    text = json.dumps(objects[0])
    result = lint_text(text, "input.yaml", select=(ALL_NS,), severity={ALL_NS: Severity.INFO})
    assert keys(result) == [(ALL_NS, *position(text, '"labelSelector"'))]
    assert [finding.severity for finding in result.findings] == [Severity.INFO]


def test_an_object_the_api_server_refuses_locks_no_one_out() -> None:
    """The StatefulSet's selector does not match its template's labels (ValidateStatefulSetSpec
    refuses it): it is never created, its pods never run, and api-validation's error is the one
    finding on it (kaffinity.explain.precedence.refused); without api-validation, the term's."""
    refused = ALL_NAMESPACES.replace(
        "selector: {matchLabels: {app: exclusive}}", "selector: {matchLabels: {app: other}}"
    )
    text = refused + _batch("reports", "finance")
    result = lint_text(text, select=(ALL_NS, "api-validation"))
    assert [finding.rule for finding in result.findings] == ["api-validation"]
    assert keys(lint_rule(text, ALL_NS)) == [(ALL_NS, *position(text, "namespaceSelector: {}"))]
