"""The graph rules on cluster policy together: all-namespaces-anti-affinity,
anti-affinity-blocks-daemonset, pdb-overlap and replicas-not-spread are graph rules with their
severities; the wording helper they share (the 2015 design, kubernetes/design-proposals-archive
``scheduling/podaffinity.md``, "Denial of Service" and "Co-existing with daemons"; eviction:
``pkg/registry/core/pod/storage/eviction.go``; default spreading: ``systemDefaultConstraints`` in
``pkg/scheduler/framework/plugins/podtopologyspread``). Each rule's own cases are in
tests/rules/test_<rule>.py.
"""

from __future__ import annotations

from kaffinity.explain.wording import name_list
from kaffinity.findings import Severity
from kaffinity.rules import BY_NAME

from .rules.graph_policy_inputs import ALL_NS, DAEMON, OVERLAP, SPREAD


def test_the_rules_are_graph_rules_with_their_severities() -> None:
    assert {BY_NAME[name].category for name in (ALL_NS, DAEMON, OVERLAP, SPREAD)} == {"graph"}
    assert BY_NAME[ALL_NS].severity is Severity.ERROR
    assert BY_NAME[DAEMON].severity is Severity.WARNING
    assert BY_NAME[OVERLAP].severity is Severity.WARNING
    assert BY_NAME[SPREAD].severity is Severity.INFO
    assert all(BY_NAME[name].needs_all_manifests for name in (ALL_NS, DAEMON, OVERLAP, SPREAD))


def test_name_list_shows_the_first_few_distinct_names_and_counts_the_rest() -> None:
    assert name_list(["a"]) == "a"
    assert name_list(["a", "b"]) == "a and b"
    assert name_list(["a", "a", "b", "c"]) == "a, b and c"
    assert name_list([str(n) for n in range(15)]) == "0, 1, 2 and 12 more"
