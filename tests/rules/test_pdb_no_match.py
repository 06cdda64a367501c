"""The rule ``pdb-no-match`` (kaffinity/rules/pdb_no_match.py): a PodDisruptionBudget whose selector
selects no pod, reported at the selector with a "did you mean" hint; a nil selector selects
nothing and an empty one everything (``pkg/registry/core/pod/storage/eviction.go``,
``pkg/controller/disruption``).

Where the pods are (the "did you mean" hint) is asserted on the fix; the message's words are the
subject where a test reads it.
"""

from __future__ import annotations

from kaffinity.findings import Severity

from ..kit import assert_found, keys, only, position
from .no_match_inputs import lint_no_match, span_of, statefulset_yaml


def _pdb(name: str, selector: str | None, namespace: str = "shop") -> str:
    spec = f"  selector: {{matchLabels: {selector}}}  # pdb {name}\n" if selector is not None else ""
    return f"""\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {name}
  namespace: {namespace}
spec:  # spec {name}
  maxUnavailable: 1
{spec}---
"""


# --- pdb-no-match --------------------------------------------------------------------------------


def test_pdb_on_the_wrong_label_fires_with_a_did_you_mean() -> None:
    text = statefulset_yaml("zk", "{app.kubernetes.io/name: zk}", replicas=3) + _pdb("zk", "{app: zk}")
    finding = only(lint_no_match(text), "pdb-no-match")
    assert (finding.line, finding.column) == position(text, "selector", 1, after="# pdb zk")
    assert finding.severity is Severity.WARNING
    assert "unprotected" in finding.message and "app=zk" in finding.message
    assert finding.fix is not None and "app.kubernetes.io/name=zk instead of app=zk" in finding.fix
    assert [span_of(loc) for loc in finding.related] == [
        position(text, "labels: {app.kubernetes.io/name: zk}", 1)
    ]


def test_pdb_without_selector_selects_nothing_and_empty_selects_everything() -> None:
    """policy/v1: a null selector selects no pods, `{}` every pod of the namespace
    (``PodDisruptionBudgetSpec`` in kubernetes/api ``policy/v1/types.go``)."""
    base = statefulset_yaml("web", "{app: web}")
    nil = base + _pdb("nil", None)
    assert keys(lint_no_match(nil)) == [("pdb-no-match", *position(nil, "spec:", 1, after="# spec nil"))]
    empty = base + _pdb("all", "{}").replace("{matchLabels: {}}", "{}")
    assert keys(lint_no_match(empty)) == []


def test_pdb_matching_a_workload_scaled_to_zero_is_quiet() -> None:
    text = statefulset_yaml("zk", "{app: zk}", replicas=0) + _pdb("zk", "{app: zk}")
    assert keys(lint_no_match(text)) == []


def test_pdb_in_a_namespace_the_input_has_no_pods_of_is_quiet_unless_closed() -> None:
    text = statefulset_yaml("web", "{app: web}") + _pdb("billing", "{app: billing}", namespace="billing")
    assert keys(lint_no_match(text)) == []
    assert keys(lint_no_match(text, closed=True)) == [
        ("pdb-no-match", *position(text, "selector", 1, after="# pdb billing"))
    ]


def test_pdb_in_the_wrong_namespace_names_where_the_pods_are() -> None:
    text = statefulset_yaml("zk", "{app: zk}") + _pdb("zk", "{app: zk}", namespace="ops")
    found = assert_found(
        lint_no_match(text), "pdb-no-match", *position(text, "selector", 1, after="kind: PodDisruptionBudget")
    )
    assert found["fix"] is not None and "StatefulSet/shop/zk (namespace shop)" in found["fix"]


def test_pdb_for_pods_an_operator_runs_is_quiet() -> None:
    """prometheus-operator creates the Prometheus StatefulSet: its pods are not in the input."""
    prometheus = """\
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: k8s, namespace: shop}
spec: {replicas: 2}
---
"""
    text = statefulset_yaml("web", "{app: web}") + prometheus + _pdb("prometheus", "{app: prometheus}")
    assert keys(lint_no_match(text)) == []
    # A custom resource that runs nothing (a ServiceMonitor) is no reason to stay quiet.
    monitor = prometheus.replace("Prometheus", "ServiceMonitor").replace("{replicas: 2}", "{endpoints: []}")
    text = statefulset_yaml("web", "{app: web}") + monitor + _pdb("prometheus", "{app: prometheus}")
    assert keys(lint_no_match(text)) == [
        ("pdb-no-match", *position(text, "selector", 1, after="# pdb prometheus"))
    ]
