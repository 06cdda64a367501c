"""The rule ``affinity-no-match`` (kaffinity/rules/affinity_no_match.py): a required pod affinity term no
pod of the input (or the cluster) matches, reported at the term with a "did you mean" hint
(kaffinity.explain.suggest); KEP-3633 matchLabelKeys; open and closed inputs.

Why nothing matches (which namespace, the first-pod exception, the near misses) exists only as
the message's wording: where a test reads it, the wording is the subject; the finding is asserted
as (rule, line, column), severity, fix and related locations.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kaffinity.findings import Severity

from ..kit import assert_found, keys, lint_paths, lint_text, only, position
from .no_match_inputs import RULES, lint_no_match, span_of, statefulset_yaml


def _required(*selectors: str, namespaces: str = "") -> str:
    text = "        podAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n"
    for selector in selectors:
        text += f"            - labelSelector: {{matchLabels: {selector}}}  # term {selector}\n"
        if namespaces:
            text += f"              {namespaces}\n"
        text += "              topologyKey: topology.kubernetes.io/zone\n"
    return text


# --- affinity-no-match ---------------------------------------------------------------------------

ZK_SELF_MISS = statefulset_yaml("zk", "{app.kubernetes.io/name: zk}", _required("{app: zk}"), replicas=3)


def test_self_affinity_that_misses_its_own_labels_fires_with_a_did_you_mean() -> None:
    """The first-pod problem (design doc "Examples > Affinity"): nothing matches, not even itself."""
    result = lint_no_match(ZK_SELF_MISS)
    finding = only(result, "affinity-no-match")
    assert (finding.line, finding.column) == position(
        ZK_SELF_MISS, "labelSelector", 1, after="# term {app: zk}"
    )
    assert finding.severity is Severity.WARNING
    assert "no workload in namespace shop has app=zk" in finding.message
    assert "first-pod exception does not apply" in finding.message
    assert finding.fix is not None
    assert "app.kubernetes.io/name=zk instead of app=zk" in finding.fix
    assert "StatefulSet/shop/zk" in finding.fix
    assert any(
        span_of(loc) == position(ZK_SELF_MISS, "labels: {app.kubernetes.io/name: zk}", 1)
        for loc in finding.related
    )


def test_self_affine_group_that_matches_its_own_term_stays_quiet() -> None:
    """The scheduler's self-match exception (``satisfyPodAffinity``) lets the first pod start."""
    text = statefulset_yaml("zk", "{app: zk}", _required("{app: zk}"), replicas=3)
    assert keys(lint_no_match(text)) == []


def test_kep_3633_story_1_is_quiet_and_fires_when_the_template_lacks_the_label() -> None:
    term = """\
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: web}}  # the term
              matchLabelKeys: [pod-template-hash]
              topologyKey: topology.kubernetes.io/zone
"""

    def deployment(labels: str) -> str:
        return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: shop}}
spec:
  replicas: 3
  selector: {{matchLabels: {labels}}}
  template:
    metadata: {{labels: {labels}}}
    spec:
      containers: [{{name: web, image: nginx}}]
      affinity:
{term}"""

    assert keys(lint_no_match(deployment("{app: web}"))) == []
    broken = deployment("{app.kubernetes.io/name: web}")
    assert keys(lint_no_match(broken)) == [
        ("affinity-no-match", *position(broken, "labelSelector", 1, after="# the term"))
    ]


def test_terms_that_no_single_pod_matches_report_the_list_and_name_each_workload() -> None:
    text = (
        statefulset_yaml("api", "{app: api}", _required("{app: cache}", "{app: db}"))
        + statefulset_yaml("cache", "{app: cache}")
        + statefulset_yaml("db", "{app: db}")
    )
    finding = only(lint_no_match(text), "affinity-no-match")
    assert (finding.line, finding.column) == position(
        text, "requiredDuringSchedulingIgnoredDuringExecution", 1
    )
    assert "no single pod matches all 2 required pod affinity terms" in finding.message
    assert "StatefulSet/shop/cache" in finding.message and "StatefulSet/shop/db" in finding.message
    assert sorted(span_of(loc) for loc in finding.related) == [
        position(text, "labelSelector", 1, after="# term {app: cache}"),
        position(text, "labelSelector", 1, after="# term {app: db}"),
    ]


def test_one_pod_matching_every_term_satisfies_them() -> None:
    text = statefulset_yaml(
        "api", "{app: api}", _required("{app: cache}", "{tier: data}")
    ) + statefulset_yaml("cache", "{app: cache, tier: data}")
    assert keys(lint_no_match(text)) == []


def test_a_term_only_its_own_pods_match_fires_when_they_fail_another_term() -> None:
    text = statefulset_yaml("worker", "{tier: batch}", _required("{tier: batch}", "{team: ml}"))
    result = lint_no_match(text)
    assert keys(result) == [
        ("affinity-no-match", *position(text, "labelSelector", 1, after="# term {tier: batch}")),
        ("affinity-no-match", *position(text, "labelSelector", 1, after="# term {team: ml}")),
    ]
    own = result.findings[0]
    assert "only this workload's own pods" in own.message
    assert [span_of(loc) for loc in own.related] == [
        position(text, "labelSelector", 1, after="# term {team: ml}")
    ]


def test_a_workload_scaled_to_zero_still_counts_as_matchable() -> None:
    text = statefulset_yaml("api", "{app: api}", _required("{app: cache}")) + statefulset_yaml(
        "cache", "{app: cache}", replicas=0
    )
    assert keys(lint_no_match(text)) == []


def test_severity_is_error_when_the_input_is_closed_and_configured_severity_wins() -> None:
    term = position(ZK_SELF_MISS, "labelSelector", 1, after="# term {app: zk}")
    assert_found(lint_no_match(ZK_SELF_MISS, closed=True), "affinity-no-match", *term, severity="error")
    configured = lint_no_match(ZK_SELF_MISS, closed=True, severity={"affinity-no-match": Severity.INFO})
    assert_found(configured, "affinity-no-match", *term, severity="info")


def test_a_nil_label_selector_is_an_error_beside_api_warning() -> None:
    """A null selector matches no pod, in the input or not: the pods never schedule, an error
    that api-warning's warning on the same term must not hide. Configured down to
    a warning, it gives way to api-warning's words."""
    text = statefulset_yaml(
        "api",
        "{app: api}",
        "        podAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n"
        "            - topologyKey: kubernetes.io/hostname\n",
    )
    result = lint_text(text, select=(*RULES, "api-warning"))
    term = position(text, "- topologyKey", 1)
    term = (term[0], term[1] + 2)  # the term (its first key, after the "- ")
    assert_found(result, "affinity-no-match", *term, severity="error")
    assert_found(result, "api-warning", *term, severity="warning")
    assert len(result.findings) == 2
    configured = lint_text(
        text, select=(*RULES, "api-warning"), severity={"affinity-no-match": Severity.WARNING}
    )
    assert keys(configured) == [("api-warning", *term)]
    alone = lint_text(text, select=("affinity-no-match",), severity={"affinity-no-match": Severity.WARNING})
    assert keys(alone) == [("affinity-no-match", *term)]


def test_a_pod_bound_by_node_name_is_not_scheduled_and_not_reported() -> None:
    text = """\
apiVersion: v1
kind: Pod
metadata: {name: pinned, namespace: shop, labels: {app: pinned}}
spec:
  nodeName: node-1
  containers: [{name: c, image: busybox}]
  affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - labelSelector: {matchLabels: {app: nothing}}
          topologyKey: kubernetes.io/hostname
"""
    assert keys(lint_no_match(text)) == []


@pytest.mark.parametrize(
    "namespaces",
    ["namespaces: [data]", "namespaceSelector: {matchLabels: {team: data}}", "namespaceSelector: {}"],
)
def test_terms_reaching_namespaces_the_input_does_not_show_stay_quiet_unless_closed(namespaces: str) -> None:
    text = statefulset_yaml("api", "{app: api}", _required("{app: cache}", namespaces=namespaces))
    assert keys(lint_no_match(text)) == []
    assert keys(lint_no_match(text, closed=True)) == [
        ("affinity-no-match", *position(text, "labelSelector", 1, after="# term"))
    ]


def test_a_namespace_mistake_is_reported_when_the_labels_run_elsewhere() -> None:
    text = statefulset_yaml(
        "api", "{app: api}", _required("{app: cache}", namespaces="namespaces: [data]")
    ) + statefulset_yaml("cache", "{app: cache}", namespace="cache")
    found = assert_found(
        lint_no_match(text),
        "affinity-no-match",
        *position(text, "labelSelector", 1, after="# term {app: cache}"),
    )
    assert found["fix"] is not None
    assert "StatefulSet/cache/cache (namespace cache)" in found["fix"]


def test_a_workload_fragment_without_pod_labels_may_match() -> None:
    """A kustomize base: its labels come from the kustomization, so nothing can be said."""
    fragment = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: cache, namespace: shop}
spec:
  template:
    spec:
      containers: [{name: c, image: redis}]
---
"""
    text = statefulset_yaml("api", "{app: api}", _required("{app: cache}")) + fragment
    assert keys(lint_no_match(text)) == []


def test_cluster_pods_that_match_satisfy_the_term_and_unmatched_ones_make_it_an_error(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        """\
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Node
    metadata: {name: n1, labels: {kubernetes.io/hostname: n1, topology.kubernetes.io/zone: a}}
  - apiVersion: v1
    kind: Pod
    metadata: {name: db-0, namespace: shop, labels: {app: legacy-db}}
    spec: {nodeName: n1, containers: [{name: db, image: postgres}]}
""",
        encoding="utf-8",
    )
    quiet = tmp_path / "quiet.yaml"
    quiet.write_text(statefulset_yaml("api", "{app: api}", _required("{app: legacy-db}")), encoding="utf-8")
    assert keys(lint_paths(quiet, cluster=str(cluster), select=RULES)) == []
    loud = tmp_path / "loud.yaml"
    loud.write_text(statefulset_yaml("api", "{app: api}", _required("{app: legacy-cache}")), encoding="utf-8")
    finding = only(lint_paths(loud, cluster=str(cluster), select=RULES), "affinity-no-match")
    assert finding.severity is Severity.ERROR
    assert "no workload or existing pod in namespace shop" in finding.message
    assert "unless" not in finding.message


def test_cluster_example_files_exist_and_lint_clean() -> None:
    from ..kit import EXAMPLES

    result = lint_paths(EXAMPLES / "clusters" / "nomatch-pods.yaml")
    assert keys(result) == []
    example = EXAMPLES / "affinity-no-match" / "fail-cluster.yaml"
    fail = lint_paths(example, cluster="examples/clusters/nomatch-pods.yaml")
    assert_found(
        fail,
        "affinity-no-match",
        *position(example.read_text(encoding="utf-8"), "labelSelector:"),
        severity="error",
    )
    assert len(fail.findings) == 1


# --- a term the API server rejects is reported once, as such (issue 35) ---------------------------

#: The Kubernetes docs' pod-with-pod-affinity.yaml (content/en/examples/pods), its values written as
#: one comma-separated string: kube-apiserver refuses the label value "S1,S2", so the pod never
#: exists; before, affinity-no-match (and, on a cluster, unschedulable) reported it as well.
COMMA = """\
apiVersion: v1
kind: Pod
metadata:
  name: with-pod-affinity
spec:
  affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector:
          matchExpressions:
          - key: security
            operator: In
            values:
            - S1,S2
        topologyKey: topology.kubernetes.io/zone
  containers:
  - name: with-pod-affinity
    image: registry.k8s.io/pause:3.8
"""


def test_a_term_the_api_server_rejects_is_reported_once(tmp_path: Path) -> None:
    from .. import kit

    (tmp_path / "pod.yaml").write_text(COMMA, encoding="utf-8")
    (tmp_path / "cluster.yaml").write_text(kit.cluster(*kit.zones(2)), encoding="utf-8")
    alone = kit.lint_json(str(tmp_path / "pod.yaml")).report
    assert keys(alone) == [("api-validation", 14, 15)]
    on_cluster = kit.lint_json("--cluster", str(tmp_path / "cluster.yaml"), str(tmp_path / "pod.yaml")).report
    assert keys(on_cluster) == [("api-validation", 14, 15)]
    # With api-validation left out, nothing gives way to it: the term's own finding is back.
    ignored = kit.lint_json("--ignore", "api-validation", str(tmp_path / "pod.yaml")).report
    assert keys(ignored) == [("affinity-no-match", 9, 9)]
