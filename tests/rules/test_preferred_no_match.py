"""The rule ``preferred-no-match`` (kaffinity/rules/preferred_no_match.py): a preferred (anti-)affinity
term no pod matches, reported at the term with a close value suggested; labels written on the
object instead of the pods pointed out.

The near misses are asserted on the fix; the message's words are the subject where a test reads it.
"""

from __future__ import annotations

from kaffinity.findings import Severity

from ..kit import keys, lint_text, only, position
from .no_match_inputs import RULES, lint_no_match, span_of, statefulset_yaml


def _preferred(kind: str, selector: str, namespaces: str = "") -> str:
    text = (
        f"        {kind}:\n          preferredDuringSchedulingIgnoredDuringExecution:\n"
        "            - weight: 100\n              podAffinityTerm:\n"
        f"                labelSelector: {{matchLabels: {selector}}}  # preferred {selector}\n"
    )
    if namespaces:
        text += f"                {namespaces}\n"
    return text + "                topologyKey: kubernetes.io/hostname\n"


# --- preferred-no-match --------------------------------------------------------------------------


def test_preferred_anti_affinity_on_the_wrong_label_fires_with_a_did_you_mean() -> None:
    text = statefulset_yaml(
        "zk", "{app.kubernetes.io/name: zk}", _preferred("podAntiAffinity", "{app: zk}"), replicas=3
    )
    finding = only(lint_no_match(text), "preferred-no-match")
    assert (finding.line, finding.column) == position(text, "labelSelector", 1, after="# preferred {app: zk}")
    assert finding.severity is Severity.INFO
    assert "not even this one" in finding.message and "does nothing" in finding.message
    assert finding.fix is not None and "app.kubernetes.io/name=zk instead of app=zk" in finding.fix


def test_preferred_term_for_pods_deployed_elsewhere_is_quiet_unless_closed() -> None:
    text = statefulset_yaml("api", "{app: api}", _preferred("podAffinity", "{app: log-shipper}"))
    assert keys(lint_no_match(text)) == []
    assert keys(lint_no_match(text, closed=True)) == [
        ("preferred-no-match", *position(text, "labelSelector", 1, after="# preferred"))
    ]


def test_preferred_term_matching_its_own_pods_or_another_workload_is_quiet() -> None:
    text = statefulset_yaml(
        "zk", "{app: zk}", _preferred("podAntiAffinity", "{app: zk}"), replicas=3
    ) + statefulset_yaml("api", "{app: api}", _preferred("podAffinity", "{app: zk}"))
    assert keys(lint_no_match(text, closed=True)) == []


def test_preferred_close_value_is_suggested_but_a_generic_one_is_not() -> None:
    close = statefulset_yaml(
        "api", "{app: api}", _preferred("podAffinity", "{app: redis-cahce}")
    ) + statefulset_yaml("redis", "{app: redis-cache}")
    finding = only(lint_no_match(close), "preferred-no-match")
    assert finding.fix is not None and "app=redis-cache instead of app=redis-cahce" in finding.fix
    generic = statefulset_yaml(
        "api", "{app: api}", _preferred("podAffinity", "{canary: 'true'}")
    ) + statefulset_yaml("other", "{stable: 'true'}")
    assert keys(lint_no_match(generic)) == []


def test_labels_on_the_object_instead_of_the_pods_are_pointed_out() -> None:
    """Argo CD's install.yaml: `app.kubernetes.io/part-of: argocd` is on the Deployments only."""
    text = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: server
  namespace: argocd
  labels: {app.kubernetes.io/part-of: argocd}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: server}}
  template:
    metadata: {labels: {app.kubernetes.io/name: server}}
    spec:
      containers: [{name: c, image: argocd}]
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 5
              podAffinityTerm:
                labelSelector: {matchLabels: {app.kubernetes.io/part-of: argocd}}  # here
                topologyKey: kubernetes.io/hostname
"""
    finding = only(lint_no_match(text), "preferred-no-match")
    assert (finding.line, finding.column) == position(text, "labelSelector", 1, after="# here")
    assert finding.fix is not None and "on the object (metadata.labels), not on the pods" in finding.fix
    assert position(text, "labels: {app.kubernetes.io/part-of: argocd}", 1) in [
        span_of(loc) for loc in finding.related
    ]


def test_preferred_nil_selector_is_left_to_api_warning() -> None:
    text = statefulset_yaml(
        "api",
        "{app: api}",
        "        podAntiAffinity:\n          preferredDuringSchedulingIgnoredDuringExecution:\n"
        "            - weight: 1\n              podAffinityTerm: {topologyKey: kubernetes.io/hostname}\n",
    )
    result = lint_text(text, select=(*RULES, "api-warning"), closed=True)
    assert keys(result) == [("api-warning", *position(text, "podAffinityTerm"))]
