"""affinity-no-match, preferred-no-match, pdb-no-match and the "did you mean" hints
(kaffinity.explain.suggest)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kaffinity.engine import LintResult
from kaffinity.findings import Location, Severity

from .kit import SHARED, keys, lint_paths, lint_text, only, position

RULES = ("affinity-no-match", "preferred-no-match", "pdb-no-match")


def _lint(text: str, **settings: Any) -> LintResult:
    return lint_text(text, **{"select": RULES, **settings})


def _statefulset(
    name: str,
    labels: str,
    affinity: str = "",
    namespace: str = "shop",
    replicas: int = 1,
    extra_spec: str = "",
) -> str:
    text = f"""\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {name}
  namespace: {namespace}
spec:
  serviceName: {name}
  replicas: {replicas}
  selector:
    matchLabels: {labels}
  template:
    metadata:
      labels: {labels}
    spec:
      containers: [{{name: c, image: busybox}}]
"""
    if extra_spec:
        text += extra_spec
    if affinity:
        text += "      affinity:\n" + affinity
    return text + "---\n"


def _required(*selectors: str, namespaces: str = "") -> str:
    text = "        podAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n"
    for selector in selectors:
        text += f"            - labelSelector: {{matchLabels: {selector}}}  # term {selector}\n"
        if namespaces:
            text += f"              {namespaces}\n"
        text += "              topologyKey: topology.kubernetes.io/zone\n"
    return text


def _preferred(kind: str, selector: str, namespaces: str = "") -> str:
    text = (
        f"        {kind}:\n          preferredDuringSchedulingIgnoredDuringExecution:\n"
        "            - weight: 100\n              podAffinityTerm:\n"
        f"                labelSelector: {{matchLabels: {selector}}}  # preferred {selector}\n"
    )
    if namespaces:
        text += f"                {namespaces}\n"
    return text + "                topologyKey: kubernetes.io/hostname\n"


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


def _at(location: Location) -> tuple[int, int] | None:
    return (location.span.line, location.span.column) if location.span is not None else None


# --- affinity-no-match ---------------------------------------------------------------------------

ZK_SELF_MISS = _statefulset("zk", "{app.kubernetes.io/name: zk}", _required("{app: zk}"), replicas=3)


def test_self_affinity_that_misses_its_own_labels_fires_with_a_did_you_mean() -> None:
    """The first-pod problem (design doc "Examples > Affinity"): nothing matches, not even itself."""
    result = _lint(ZK_SELF_MISS)
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
        _at(loc) == position(ZK_SELF_MISS, "labels: {app.kubernetes.io/name: zk}", 1)
        for loc in finding.related
    )


def test_self_affine_group_that_matches_its_own_term_stays_quiet() -> None:
    """The scheduler's self-match exception (``satisfyPodAffinity``) lets the first pod start."""
    text = _statefulset("zk", "{app: zk}", _required("{app: zk}"), replicas=3)
    assert keys(_lint(text)) == []


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

    assert keys(_lint(deployment("{app: web}"))) == []
    broken = deployment("{app.kubernetes.io/name: web}")
    assert keys(_lint(broken)) == [
        ("affinity-no-match", *position(broken, "labelSelector", 1, after="# the term"))
    ]


def test_terms_that_no_single_pod_matches_report_the_list_and_name_each_workload() -> None:
    text = (
        _statefulset("api", "{app: api}", _required("{app: cache}", "{app: db}"))
        + _statefulset("cache", "{app: cache}")
        + _statefulset("db", "{app: db}")
    )
    finding = only(_lint(text), "affinity-no-match")
    assert (finding.line, finding.column) == position(
        text, "requiredDuringSchedulingIgnoredDuringExecution", 1
    )
    assert "no single pod matches all 2 required pod affinity terms" in finding.message
    assert "StatefulSet/shop/cache" in finding.message and "StatefulSet/shop/db" in finding.message
    assert sorted(_at(loc) for loc in finding.related) == [
        position(text, "labelSelector", 1, after="# term {app: cache}"),
        position(text, "labelSelector", 1, after="# term {app: db}"),
    ]


def test_one_pod_matching_every_term_satisfies_them() -> None:
    text = _statefulset("api", "{app: api}", _required("{app: cache}", "{tier: data}")) + _statefulset(
        "cache", "{app: cache, tier: data}"
    )
    assert keys(_lint(text)) == []


def test_a_term_only_its_own_pods_match_fires_when_they_fail_another_term() -> None:
    text = _statefulset("worker", "{tier: batch}", _required("{tier: batch}", "{team: ml}"))
    result = _lint(text)
    assert keys(result) == [
        ("affinity-no-match", *position(text, "labelSelector", 1, after="# term {tier: batch}")),
        ("affinity-no-match", *position(text, "labelSelector", 1, after="# term {team: ml}")),
    ]
    own = result.findings[0]
    assert "only this workload's own pods" in own.message
    assert [_at(loc) for loc in own.related] == [
        position(text, "labelSelector", 1, after="# term {team: ml}")
    ]


def test_a_workload_scaled_to_zero_still_counts_as_matchable() -> None:
    text = _statefulset("api", "{app: api}", _required("{app: cache}")) + _statefulset(
        "cache", "{app: cache}", replicas=0
    )
    assert keys(_lint(text)) == []


def test_severity_is_error_when_the_input_is_closed_and_configured_severity_wins() -> None:
    assert only(_lint(ZK_SELF_MISS, closed=True), "affinity-no-match").severity is Severity.ERROR
    configured = _lint(ZK_SELF_MISS, closed=True, severity={"affinity-no-match": Severity.INFO})
    assert only(configured, "affinity-no-match").severity is Severity.INFO


def test_a_nil_label_selector_is_an_error_beside_api_warning() -> None:
    """A null selector matches no pod, in the input or not: the pods never schedule, an error
    that api-warning's warning on the same term must not hide. Configured down to
    a warning, it gives way to api-warning's words."""
    text = _statefulset(
        "api",
        "{app: api}",
        "        podAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n"
        "            - topologyKey: kubernetes.io/hostname\n",
    )
    result = lint_text(text, select=(*RULES, "api-warning"))
    assert sorted((f.rule, f.severity) for f in result.findings) == [
        ("affinity-no-match", Severity.ERROR),
        ("api-warning", Severity.WARNING),
    ]
    configured = lint_text(
        text, select=(*RULES, "api-warning"), severity={"affinity-no-match": Severity.WARNING}
    )
    assert [f.rule for f in configured.findings] == ["api-warning"]
    alone = lint_text(text, select=("affinity-no-match",), severity={"affinity-no-match": Severity.WARNING})
    assert [f.rule for f in alone.findings] == ["affinity-no-match"]


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
    assert keys(_lint(text)) == []


@pytest.mark.parametrize(
    "namespaces",
    ["namespaces: [data]", "namespaceSelector: {matchLabels: {team: data}}", "namespaceSelector: {}"],
)
def test_terms_reaching_namespaces_the_input_does_not_show_stay_quiet_unless_closed(namespaces: str) -> None:
    text = _statefulset("api", "{app: api}", _required("{app: cache}", namespaces=namespaces))
    assert keys(_lint(text)) == []
    assert keys(_lint(text, closed=True)) == [
        ("affinity-no-match", *position(text, "labelSelector", 1, after="# term"))
    ]


def test_a_namespace_mistake_is_reported_when_the_labels_run_elsewhere() -> None:
    text = _statefulset(
        "api", "{app: api}", _required("{app: cache}", namespaces="namespaces: [data]")
    ) + _statefulset("cache", "{app: cache}", namespace="cache")
    finding = only(_lint(text), "affinity-no-match")
    assert finding.fix is not None
    assert "StatefulSet/cache/cache (namespace cache)" in finding.fix


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
    text = _statefulset("api", "{app: api}", _required("{app: cache}")) + fragment
    assert keys(_lint(text)) == []


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
    quiet.write_text(_statefulset("api", "{app: api}", _required("{app: legacy-db}")), encoding="utf-8")
    assert keys(lint_paths(quiet, cluster=str(cluster), select=RULES)) == []
    loud = tmp_path / "loud.yaml"
    loud.write_text(_statefulset("api", "{app: api}", _required("{app: legacy-cache}")), encoding="utf-8")
    finding = only(lint_paths(loud, cluster=str(cluster), select=RULES), "affinity-no-match")
    assert finding.severity is Severity.ERROR
    assert "no workload or existing pod in namespace shop" in finding.message
    assert "unless" not in finding.message


def test_cluster_example_files_exist_and_lint_clean() -> None:
    from .kit import EXAMPLES

    result = lint_paths(EXAMPLES / "clusters" / "nomatch-pods.yaml")
    assert result.findings == ()
    fail = lint_paths(
        EXAMPLES / "affinity-no-match" / "fail-cluster.yaml", cluster="examples/clusters/nomatch-pods.yaml"
    )
    assert [f.severity for f in fail.findings] == [Severity.ERROR]


# --- preferred-no-match --------------------------------------------------------------------------


def test_preferred_anti_affinity_on_the_wrong_label_fires_with_a_did_you_mean() -> None:
    text = _statefulset(
        "zk", "{app.kubernetes.io/name: zk}", _preferred("podAntiAffinity", "{app: zk}"), replicas=3
    )
    finding = only(_lint(text), "preferred-no-match")
    assert (finding.line, finding.column) == position(text, "labelSelector", 1, after="# preferred {app: zk}")
    assert finding.severity is Severity.INFO
    assert "not even this one" in finding.message and "does nothing" in finding.message
    assert finding.fix is not None and "app.kubernetes.io/name=zk instead of app=zk" in finding.fix


def test_preferred_term_for_pods_deployed_elsewhere_is_quiet_unless_closed() -> None:
    text = _statefulset("api", "{app: api}", _preferred("podAffinity", "{app: log-shipper}"))
    assert keys(_lint(text)) == []
    assert keys(_lint(text, closed=True)) == [
        ("preferred-no-match", *position(text, "labelSelector", 1, after="# preferred"))
    ]


def test_preferred_term_matching_its_own_pods_or_another_workload_is_quiet() -> None:
    text = _statefulset(
        "zk", "{app: zk}", _preferred("podAntiAffinity", "{app: zk}"), replicas=3
    ) + _statefulset("api", "{app: api}", _preferred("podAffinity", "{app: zk}"))
    assert keys(_lint(text, closed=True)) == []


def test_preferred_close_value_is_suggested_but_a_generic_one_is_not() -> None:
    close = _statefulset("api", "{app: api}", _preferred("podAffinity", "{app: redis-cahce}")) + _statefulset(
        "redis", "{app: redis-cache}"
    )
    finding = only(_lint(close), "preferred-no-match")
    assert finding.fix is not None and "app=redis-cache instead of app=redis-cahce" in finding.fix
    generic = _statefulset("api", "{app: api}", _preferred("podAffinity", "{canary: 'true'}")) + _statefulset(
        "other", "{stable: 'true'}"
    )
    assert keys(_lint(generic)) == []


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
    finding = only(_lint(text), "preferred-no-match")
    assert (finding.line, finding.column) == position(text, "labelSelector", 1, after="# here")
    assert finding.fix is not None and "on the object (metadata.labels), not on the pods" in finding.fix
    assert position(text, "labels: {app.kubernetes.io/part-of: argocd}", 1) in [
        _at(loc) for loc in finding.related
    ]


def test_preferred_nil_selector_is_left_to_api_warning() -> None:
    text = _statefulset(
        "api",
        "{app: api}",
        "        podAntiAffinity:\n          preferredDuringSchedulingIgnoredDuringExecution:\n"
        "            - weight: 1\n              podAffinityTerm: {topologyKey: kubernetes.io/hostname}\n",
    )
    result = lint_text(text, select=(*RULES, "api-warning"), closed=True)
    assert [f.rule for f in result.findings] == ["api-warning"]


ZOOKEEPER = (
    SHARED
    / "corpus"
    / "real"
    / "kubernetes__website"
    / "content__en__examples__application__zookeeper__zookeeper.yaml"
)


@pytest.mark.skipif(not ZOOKEEPER.exists(), reason="the real-world corpus is not available")
def test_the_kubernetes_website_zookeeper_mix_up() -> None:
    """Its anti-affinity selects app=zk while the pods carry app.kubernetes.io/name=zk.

    It is a *required* anti-affinity term: anti-affinity-no-match reports it, with the label the
    pods really carry. Turned into a preferred term, preferred-no-match reports it.
    """
    text = ZOOKEEPER.read_text(encoding="utf-8")
    assert keys(_lint(text, closed=True)) == []
    required = only(lint_text(text, select=("anti-affinity-no-match",)), "anti-affinity-no-match")
    assert (required.line, required.column) == position(text, "labelSelector:", 1)
    assert required.fix is not None and "app.kubernetes.io/name=zk instead of app=zk" in required.fix
    preferred = text.replace(
        """          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector:""",
        """          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            podAffinityTerm:
              labelSelector:""",
    )
    assert preferred != text
    finding = only(_lint(preferred), "preferred-no-match")
    assert finding.fix is not None and "app.kubernetes.io/name=zk instead of app=zk" in finding.fix


# --- pdb-no-match --------------------------------------------------------------------------------


def test_pdb_on_the_wrong_label_fires_with_a_did_you_mean() -> None:
    text = _statefulset("zk", "{app.kubernetes.io/name: zk}", replicas=3) + _pdb("zk", "{app: zk}")
    finding = only(_lint(text), "pdb-no-match")
    assert (finding.line, finding.column) == position(text, "selector", 1, after="# pdb zk")
    assert finding.severity is Severity.WARNING
    assert "unprotected" in finding.message and "app=zk" in finding.message
    assert finding.fix is not None and "app.kubernetes.io/name=zk instead of app=zk" in finding.fix
    assert [_at(loc) for loc in finding.related] == [
        position(text, "labels: {app.kubernetes.io/name: zk}", 1)
    ]


def test_pdb_without_selector_selects_nothing_and_empty_selects_everything() -> None:
    """policy/v1: a null selector selects no pods, `{}` every pod of the namespace
    (``PodDisruptionBudgetSpec`` in kubernetes/api ``policy/v1/types.go``)."""
    base = _statefulset("web", "{app: web}")
    nil = base + _pdb("nil", None)
    assert keys(_lint(nil)) == [("pdb-no-match", *position(nil, "spec:", 1, after="# spec nil"))]
    empty = base + _pdb("all", "{}").replace("{matchLabels: {}}", "{}")
    assert keys(_lint(empty)) == []


def test_pdb_matching_a_workload_scaled_to_zero_is_quiet() -> None:
    text = _statefulset("zk", "{app: zk}", replicas=0) + _pdb("zk", "{app: zk}")
    assert keys(_lint(text)) == []


def test_pdb_in_a_namespace_the_input_has_no_pods_of_is_quiet_unless_closed() -> None:
    text = _statefulset("web", "{app: web}") + _pdb("billing", "{app: billing}", namespace="billing")
    assert keys(_lint(text)) == []
    assert keys(_lint(text, closed=True)) == [
        ("pdb-no-match", *position(text, "selector", 1, after="# pdb billing"))
    ]


def test_pdb_in_the_wrong_namespace_names_where_the_pods_are() -> None:
    text = _statefulset("zk", "{app: zk}") + _pdb("zk", "{app: zk}", namespace="ops")
    finding = only(_lint(text), "pdb-no-match")
    assert finding.fix is not None and "StatefulSet/shop/zk (namespace shop)" in finding.fix


def test_pdb_for_pods_an_operator_runs_is_quiet() -> None:
    """prometheus-operator creates the Prometheus StatefulSet: its pods are not in the input."""
    prometheus = """\
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: k8s, namespace: shop}
spec: {replicas: 2}
---
"""
    text = _statefulset("web", "{app: web}") + prometheus + _pdb("prometheus", "{app: prometheus}")
    assert keys(_lint(text)) == []
    # A custom resource that runs nothing (a ServiceMonitor) is no reason to stay quiet.
    monitor = prometheus.replace("Prometheus", "ServiceMonitor").replace("{replicas: 2}", "{endpoints: []}")
    text = _statefulset("web", "{app: web}") + monitor + _pdb("prometheus", "{app: prometheus}")
    assert keys(_lint(text)) == [("pdb-no-match", *position(text, "selector", 1, after="# pdb prometheus"))]


# --- anti-affinity-no-match ----------------------------------------------------------------------

_ZK_ANTI = """\
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector:
                matchLabels: {SELECTOR}
              topologyKey: kubernetes.io/hostname
"""


def _anti(text: str, **settings: Any) -> list[tuple[str, int | None, int | None]]:
    return keys(lint_text(text, select=("anti-affinity-no-match",), **settings))


def test_required_anti_affinity_on_the_wrong_label_fires_with_a_did_you_mean() -> None:
    text = _statefulset(
        "zk", "{app.kubernetes.io/name: zk}", _ZK_ANTI.replace("{SELECTOR}", "{app: zk}"), replicas=3
    )
    result = lint_text(text, select=("anti-affinity-no-match",))
    finding = only(result, "anti-affinity-no-match")
    assert finding.severity is Severity.WARNING
    assert "not even this one" in finding.message and "kubernetes.io/hostname" in finding.message
    assert finding.fix is not None and "app.kubernetes.io/name=zk instead of app=zk" in finding.fix


def test_required_anti_affinity_on_its_own_label_or_on_pods_elsewhere_is_quiet_unless_closed() -> None:
    own = _statefulset("zk", "{app: zk}", _ZK_ANTI.replace("{SELECTOR}", "{app: zk}"), replicas=3)
    assert _anti(own) == [] and _anti(own, closed=True) == []
    # Keeping away from a batch tier deployed from another repository: no sign of a typo.
    away = _statefulset("api", "{app: api}", _ZK_ANTI.replace("{SELECTOR}", "{workload-class: batch}"))
    assert _anti(away) == []
    assert _anti(away, closed=True) == [("anti-affinity-no-match", *position(away, "labelSelector:", 1))]


def test_required_anti_affinity_matching_another_workload_is_quiet() -> None:
    text = _statefulset("api", "{app: api}", _ZK_ANTI.replace("{SELECTOR}", "{app: db}")) + _statefulset(
        "db", "{app: db}"
    )
    assert _anti(text, closed=True) == []
