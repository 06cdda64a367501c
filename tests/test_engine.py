"""The engine with a rule added as later issues add them: positions, paths, suppressions."""

from __future__ import annotations

import pytest

from kaffinity.config import Settings
from kaffinity.engine import lint
from kaffinity.load.parse import parse
from kaffinity.load.source import Span
from kaffinity.rules.base import Rule

from .kit import EXAMPLES, keys, lint_text

ZONE_ANTI = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  annotations: {}
spec:
  template:
    metadata:
      labels: {app: web}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: web}}
              topologyKey: topology.kubernetes.io/zone
              matchLabelKeys: [pod-template-hash]
"""


def test_a_rule_module_plugs_in_without_engine_changes(zone_rules: tuple[Rule, ...]) -> None:
    result = lint_text(ZONE_ANTI, rules=zone_rules)
    (finding,) = result.findings
    assert (finding.rule, finding.line, finding.column) == ("test-zone-anti-affinity", 16, 15)
    assert finding.path == (
        "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"
    )
    assert finding.object is not None and str(finding.object) == "Deployment/shop/web"
    (related,) = finding.related
    assert (related.file, related.span, related.message) == ("test.yaml", Span(15, 15), "the selector")
    assert related.path.endswith("requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector")


def test_default_namespace_and_override(zone_rules: tuple[Rule, ...]) -> None:
    text = ZONE_ANTI.replace("  namespace: shop\n", "")
    (finding,) = lint_text(text, rules=zone_rules).findings
    assert finding.object is not None and finding.object.namespace == "default"
    (finding,) = lint_text(text, rules=zone_rules, namespace="team-a").findings
    assert finding.object is not None and finding.object.namespace == "team-a"


def test_annotation_on_the_object_suppresses_with_a_reason(zone_rules: tuple[Rule, ...]) -> None:
    text = ZONE_ANTI.replace(
        "annotations: {}",
        'annotations: {kaffinity.io/ignore: "test-zone-anti-affinity -- one per zone on purpose"}',
    )
    result = lint_text(text, rules=zone_rules)
    assert keys(result) == []
    assert result.suppressed == 1


def test_annotation_on_the_pod_template_suppresses(zone_rules: tuple[Rule, ...]) -> None:
    text = ZONE_ANTI.replace(
        "      labels: {app: web}\n",
        "      labels: {app: web}\n      annotations:\n        kaffinity.io/ignore: test\n",
    )
    assert keys(lint_text(text, rules=zone_rules)) == []  # by category


def test_comment_on_the_line_or_the_line_above_suppresses(zone_rules: tuple[Rule, ...]) -> None:
    same_line = ZONE_ANTI.replace(
        "topologyKey: topology.kubernetes.io/zone",
        "topologyKey: topology.kubernetes.io/zone  # kaffinity: ignore[test-zone-anti-affinity]",
    )
    above = ZONE_ANTI.replace(
        "              topologyKey: topology",
        "              # kaffinity: ignore[all] -- reviewed\n              topologyKey: topology",
    )
    for text in (same_line, above):
        result = lint_text(text, rules=zone_rules)
        assert keys(result) == [] and result.suppressed == 1


def test_comment_two_lines_above_does_not_suppress_and_is_reported_unused(
    zone_rules: tuple[Rule, ...],
) -> None:
    text = ZONE_ANTI.replace(
        "            - labelSelector",
        "            # kaffinity: ignore[test-zone-anti-affinity]\n            - labelSelector",
    )
    assert sorted(keys(lint_text(text, rules=zone_rules))) == [
        ("test-zone-anti-affinity", 17, 15),
        ("unused-suppression", 15, 13),
    ]


def test_suppression_of_a_rule_that_did_not_run_is_not_reported(zone_rules: tuple[Rule, ...]) -> None:
    text = ZONE_ANTI.replace("annotations: {}", "annotations: {kaffinity.io/ignore: test-zone-anti-affinity}")
    assert keys(lint_text(text, rules=zone_rules, ignore=("test",))) == []


def test_unknown_name_in_a_suppression_is_reported(zone_rules: tuple[Rule, ...]) -> None:
    text = ZONE_ANTI.replace("annotations: {}", "annotations: {kaffinity.io/ignore: 'test-zone, test'}")
    result = lint_text(text, rules=zone_rules)
    assert keys(result) == [("unused-suppression", 6, 17)]
    assert "test-zone" in result.findings[0].message


def test_hash_inside_a_string_is_not_a_comment() -> None:
    text = 'apiVersion: v1\nkind: ConfigMap\ndata:\n  a: "x#kaffinity: ignore[parse-error]"\n'
    assert keys(lint_text(text)) == []


def test_a_crashing_rule_is_reported_and_other_rules_still_run() -> None:
    from kaffinity.findings import Severity
    from kaffinity.rules import RULES

    def broken(context: object) -> object:
        raise KeyError("boom")

    rule = Rule("test-broken", "test", Severity.ERROR, "Broken.", "docs", check=broken)  # type: ignore[arg-type]
    result = lint([parse("test.yaml", "a: [\n")], Settings(), (*RULES, rule))  # kit.lint_text would fail
    assert [(f.rule, f.line, f.column) for f in result.findings] == [("parse-error", 2, 1)]  # kit.keys fails
    assert result.exit_code == 3  # a bug wins over the bad input: not 2, which a user's mistake gets
    assert "internal error in rule test-broken: KeyError" in result.internal_errors[0]


def test_a_rule_that_needs_a_cluster_runs_only_with_one() -> None:
    from collections.abc import Iterator

    from kaffinity.config import Settings
    from kaffinity.context import Context
    from kaffinity.engine import lint
    from kaffinity.findings import Severity, Violation
    from kaffinity.load.parse import parse
    from kaffinity.simulate.cluster import cluster_from

    calls: list[bool] = []

    def check(context: Context) -> Iterator[Violation]:
        calls.append(context.cluster is not None)
        return iter(())

    rule = Rule(
        "test-cluster",
        "test",
        Severity.ERROR,
        "Cluster.",
        "docs",
        check=check,
        needs_cluster=True,
    )
    files = [parse("web.yaml", ZONE_ANTI)]
    lint(files, Settings(), (rule,))
    assert calls == []
    nodes = parse("nodes.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n")
    lint(files, Settings(), (rule,), cluster=cluster_from([nodes]))
    assert calls == [True]
    # A context carries its cluster: the one source, so a cluster beside it is refused.
    cluster = cluster_from([nodes])
    lint(files, Settings(), (rule,), context=Context(files, Settings(), cluster))
    assert calls == [True, True]
    with pytest.raises(TypeError, match="in the context"):
        lint(files, Settings(), (rule,), cluster=cluster, context=Context(files, Settings(), cluster))


def test_linting_again_and_again_leaves_no_uncollected_garbage() -> None:
    """The fuzzer's long mode grew by 24 GB in an hour: lint() froze the caller's objects and
    unfroze them into the oldest generation without counting them towards its next collection,
    so the cycles of earlier runs (a placement's heaps and nodes) were never collected. Linting
    with a cluster 300 more times leaves the oldest generation about as large."""
    import gc

    from kaffinity.simulate.cluster import cluster_from

    text = (EXAMPLES / "rollout-deadlock" / "fail.yaml").read_text(encoding="utf-8")
    cluster_text = (EXAMPLES / "clusters" / "topology.yaml").read_text(encoding="utf-8")
    cluster = cluster_from([parse("cluster.yaml", cluster_text)])

    def run(times: int) -> int:
        for _ in range(times):
            lint([parse("app.yaml", text)], Settings(), cluster=cluster)
        return len(gc.get_objects(generation=2))

    assert gc.isenabled()
    # What earlier tests loaded in this process was frozen (kaffinity.load.files.load) and may be
    # freed while this test runs, which lowers the count without lint() touching it: start from
    # an empty permanent generation, so that the count is lint()'s alone.
    gc.unfreeze()
    gc.collect()
    frozen = gc.get_freeze_count()
    before = run(50)
    after = run(300)
    assert gc.get_freeze_count() == frozen
    assert after < before + 10_000, (before, after)
