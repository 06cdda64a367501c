"""The rule ``anti-affinity-blocks-daemonset`` (kaffinity/rules/anti_affinity_blocks_daemonset.py): a
required anti-affinity on a label a DaemonSet's pods carry, which keeps the daemon off the nodes,
reported at the term with the DaemonSet (the 2015 design, kubernetes/design-proposals-archive
``scheduling/podaffinity.md``, "Co-existing with daemons").

The DaemonSet is asserted by the related location; the words (symmetry, the reach of the term)
are the subject where a test reads the message.
"""

from __future__ import annotations

from kaffinity.findings import Severity

from ..kit import keys
from .graph_policy_inputs import DAEMON, doc_at, doc_line, graph_workload, lint_objects, related_lines, term

# -- anti-affinity-blocks-daemonset ---------------------------------------------------------------

DAEMONSET = graph_workload("fluent-bit", "logging", {"app": "fluent-bit", "tier": "infra"}, kind="DaemonSet")


def test_anti_affinity_on_a_label_the_daemonset_shares_is_reported_with_the_daemonset() -> None:
    cache = graph_workload(
        "cache",
        "logging",
        {"app": "cache"},
        kind="Deployment",
        anti=[term({"matchLabels": {"tier": "infra"}})],
    )
    (finding,) = lint_objects(DAEMONSET, cache, rule=DAEMON)
    assert finding.severity is Severity.WARNING
    assert (finding.line, finding.column) == doc_at((DAEMONSET, cache), 1, '{"topologyKey"')
    assert "DaemonSet/logging/fluent-bit" in finding.message
    assert "node" in finding.message and "symmetry" in finding.message
    assert related_lines(finding) == [doc_line(0)]


def test_zone_keys_and_all_namespace_terms_reach_a_daemonset_elsewhere() -> None:
    zone = graph_workload(
        "zonal",
        "apps",
        {"app": "zonal"},
        anti=[
            term({"matchLabels": {"tier": "infra"}}, "topology.kubernetes.io/zone", namespaces=["logging"])
        ],
    )
    (finding,) = lint_objects(DAEMONSET, zone, rule=DAEMON)
    assert (finding.line, finding.column) == doc_at((DAEMONSET, zone), 1, '{"topologyKey"')
    assert related_lines(finding) == [doc_line(0)]  # the DaemonSet, in another namespace
    assert "zone" in finding.message  # the wording says how far the term reaches


def test_selectors_scopes_and_own_terms_that_miss_the_daemonset_are_quiet() -> None:
    objects = [
        DAEMONSET,
        # excludes the DaemonSet's pods
        graph_workload(
            "a",
            "logging",
            {"app": "a"},
            anti=[
                term(
                    {
                        "matchLabels": {"tier": "infra"},
                        "matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["fluent-bit"]}],
                    }
                )
            ],
        ),
        # the DaemonSet is outside the term's namespace
        graph_workload("b", "apps", {"app": "b"}, anti=[term({"matchLabels": {"tier": "infra"}})]),
        # preferred only
        graph_workload("c", "logging", {"app": "c"}, preferred=[term({"matchLabels": {"tier": "infra"}})]),
        # a DaemonSet's term on its own pods
        graph_workload(
            "agent",
            "logging",
            {"app": "agent"},
            kind="DaemonSet",
            anti=[term({"matchLabels": {"app": "agent"}})],
        ),
    ]
    assert keys(lint_objects(*objects, rule=DAEMON)) == []


def test_a_daemonset_on_another_node_pool_is_quiet_on_hostname_only() -> None:
    gpu_daemon = graph_workload(
        "gpu-agent",
        "ops",
        {"app": "gpu-agent", "tier": "infra"},
        kind="DaemonSet",
        pod={"nodeSelector": {"pool": "gpu"}},
    )
    on_general = {"nodeSelector": {"pool": "general"}}
    host = graph_workload(
        "h", "ops", {"app": "h"}, anti=[term({"matchLabels": {"tier": "infra"}})], pod=on_general
    )
    zone = graph_workload(
        "z",
        "ops",
        {"app": "z"},
        anti=[term({"matchLabels": {"tier": "infra"}}, "topology.kubernetes.io/zone")],
        pod=on_general,
    )
    objects = (gpu_daemon, host, zone)
    assert keys(lint_objects(*objects, rule=DAEMON)) == [(DAEMON, *doc_at(objects, 2, '{"topologyKey"'))]


def test_another_daemonset_matched_counts() -> None:
    agent = graph_workload(
        "agent",
        "logging",
        {"app": "agent"},
        kind="DaemonSet",
        anti=[term({"matchLabels": {"tier": "infra"}})],
    )
    (finding,) = lint_objects(DAEMONSET, agent, rule=DAEMON)
    assert (finding.line, finding.column) == doc_at((DAEMONSET, agent), 1, '{"topologyKey"')
    assert related_lines(finding) == [doc_line(0)]  # fluent-bit


def test_objects_the_api_server_refuses_block_nothing() -> None:
    """A refused object (here a template without the labels its selector names: the API server's
    ``selector does not match template labels``) is never created: neither its term nor its pods
    count, whichever side it is on; api-validation's error says why, once."""
    from ..kit import lint_text, manifest

    cache = graph_workload(
        "cache",
        "logging",
        {"app": "cache"},
        kind="Deployment",
        anti=[term({"matchLabels": {"tier": "infra"}})],
    )
    for refused, index in ((cache, 1), (DAEMONSET, 0)):
        broken = {**refused, "spec": {**refused["spec"], "selector": {"matchLabels": {"app": "elsewhere"}}}}
        objects = (DAEMONSET, broken) if index else (broken, cache)
        result = lint_text(manifest(objects), "input.yaml", select=(DAEMON, "api-validation"))
        assert {finding.rule for finding in result.findings} == {"api-validation"}
        assert [finding.line for finding in result.findings if finding.rule == "api-validation"]
        assert keys(lint_objects(*objects, rule=DAEMON)) == [(DAEMON, *doc_at(objects, 1, '{"topologyKey"'))]
