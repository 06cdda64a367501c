"""The rule ``spread-unsatisfiable`` (kaffinity/rules/spread_unsatisfiable.py): a hard topology spread
constraint the cluster's domains cannot satisfy (minDomains, tainted domains, nodes lacking the
key), reported at the constraint.

Upstream: kube-scheduler's PodTopologySpread filter (podtopologyspread/filtering.go) and
nodeTaintsPolicy/nodeAffinityPolicy (KEP-3094).

The explanation (how many pods stay Pending, which nodes, why) exists only as the message's wording,
so it is asserted on the message; where and what are asserted as (rule, line, column) and fields.
"""

from __future__ import annotations

from ..kit import keys, only
from .pending_inputs import lint_on_cluster, node, pending_workload, spread, where, zones

# --- spread-unsatisfiable --------------------------------------------------------------------------


def test_spread_min_domains_above_the_domains() -> None:
    constraints = spread("topology.kubernetes.io/zone", {"app": "api"}, minDomains=4)
    objects = [pending_workload("api", replicas=5, topologySpreadConstraints=constraints)]
    finding = only(lint_on_cluster(objects, zones(3, 2)), "spread-unsatisfiable")
    assert (finding.line, finding.column) == where(objects, '"minDomains"')
    assert "minDomains 4, but the nodes it counts span only 3 zones (a, b and c)" in finding.message
    assert "at most 3 of its 5 pods can run" in finding.message
    assert "api[3] and api[4] stay Pending" in finding.message
    # Enough replicas for the zones: nothing Pending, nothing said.
    objects[0]["spec"]["replicas"] = 3
    assert keys(lint_on_cluster(objects, zones(3, 2))) == []


def test_spread_tainted_domain_pins_the_minimum_and_honor_fixes_it() -> None:
    taint = {"key": "gpu", "value": "yes", "effect": "NoSchedule"}
    cluster = [*zones(3), node("g1", zone="a", taints=[taint])]
    objects = [
        pending_workload(
            "web", replicas=5, topologySpreadConstraints=spread("kubernetes.io/hostname", {"app": "web"})
        )
    ]
    finding = only(lint_on_cluster(objects, cluster), "spread-unsatisfiable")
    assert (finding.line, finding.column) == where(objects, '"topologyKey"')
    assert "g1: untolerated taint gpu=yes:NoSchedule" in finding.message
    assert "nodeTaintsPolicy Ignore (the default)" in finding.message
    assert "at most 3 of its 5 pods can run" in finding.message
    assert finding.fix is not None and "nodeTaintsPolicy: Honor" in finding.fix
    honor = spread("kubernetes.io/hostname", {"app": "web"}, nodeTaintsPolicy="Honor")
    objects[0]["spec"]["template"]["spec"]["topologySpreadConstraints"] = honor
    assert keys(lint_on_cluster(objects, cluster)) == []


def test_spread_nodes_lacking_the_key_found_by_the_simulation() -> None:
    """Some eligible nodes lack the key: they are rejected (missing required label), and the pods
    that would fit there stay Pending; dropping the constraint would place them."""
    cluster = [node("n1", zone="a", cpu="1"), node("n2", cpu="8"), node("n3", cpu="8")]
    objects = [
        pending_workload(
            "web",
            replicas=2,
            topologySpreadConstraints=spread("topology.kubernetes.io/zone", {"app": "web"}),
            containers=[{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
        )
    ]
    finding = only(lint_on_cluster(objects, cluster), "spread-unsatisfiable")
    assert (finding.line, finding.column) == where(objects, '"topologyKey"')
    assert "2 nodes it may run on (n2 and n3) lack topology.kubernetes.io/zone" in finding.message
    assert "web[1] stays Pending" in finding.message


def test_spread_selector_not_matching_its_own_pods_caps_nothing() -> None:
    constraints = spread("topology.kubernetes.io/zone", {"app": "other"}, minDomains=5)
    objects = [pending_workload("api", replicas=5, topologySpreadConstraints=constraints)]
    assert keys(lint_on_cluster(objects, zones(3))) == []
