"""Workloads beyond the nine built-in kinds: custom resources that embed a pod template, the ones
kaffinity knows (kaffinity.k8s.model.kinds.CUSTOM_WORKLOADS) and those configured in .kaffinity.yaml."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kaffinity.config import Settings
from kaffinity.expand.merge import pod_labels
from kaffinity.k8s.model import build_inventory
from kaffinity.k8s.model.kinds import pod_template_path
from kaffinity.load.files import load
from kaffinity.simulate.cluster import cluster_from
from kaffinity.simulate.place import place_all

from . import kit
from .kit import EXAMPLES, findings, keys, lint_text, run

DATA = Path(__file__).parent / "data" / "workloads"
TOPOLOGY = EXAMPLES / "clusters" / "topology.yaml"


def _object(api_version: str, kind: str, spec: str) -> str:
    return f"apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: w}}\nspec: {spec}\n"


TEMPLATE = "{metadata: {labels: {app: w}}, spec: {containers: [{name: c, image: i}]}}"


@pytest.mark.parametrize(
    ("api_version", "kind", "spec", "replicas", "controller"),
    [
        ("argoproj.io/v1alpha1", "Rollout", f"{{template: {TEMPLATE}}}", 1, "ReplicaSet"),
        ("argoproj.io/v1alpha1", "Rollout", f"{{replicas: 5, template: {TEMPLATE}}}", 5, "ReplicaSet"),
        ("apps.kruise.io/v1alpha1", "CloneSet", f"{{template: {TEMPLATE}}}", 1, "ReplicaSet"),
        ("apps.kruise.io/v1beta1", "CloneSet", f"{{replicas: 3, template: {TEMPLATE}}}", 3, "ReplicaSet"),
        ("apps.kruise.io/v1beta1", "StatefulSet", f"{{template: {TEMPLATE}}}", 1, "StatefulSet"),
        ("apps.kruise.io/v1alpha1", "DaemonSet", f"{{template: {TEMPLATE}}}", None, "DaemonSet"),
        ("keda.sh/v1alpha1", "ScaledJob", f"{{jobTargetRef: {{template: {TEMPLATE}}}}}", 1, "Job"),
        (
            "keda.sh/v1alpha1",
            "ScaledJob",
            f"{{jobTargetRef: {{parallelism: 4, completions: 2, template: {TEMPLATE}}}}}",
            2,
            "Job",
        ),
        ("serving.knative.dev/v1", "Service", f"{{template: {TEMPLATE}}}", 1, "ReplicaSet"),
        (
            "serving.knative.dev/v1",
            "Service",
            "{template: {metadata: {annotations: {autoscaling.knative.dev/min-scale: '3'}}, spec: {}}}",
            3,
            "ReplicaSet",
        ),
        ("apps.openshift.io/v1", "DeploymentConfig", f"{{template: {TEMPLATE}}}", 0, "ReplicationController"),
        (
            "apps.openshift.io/v1",
            "DeploymentConfig",
            f"{{replicas: 2, template: {TEMPLATE}}}",
            2,
            "ReplicationController",
        ),
    ],
)
def test_known_custom_kinds_with_their_defaults(
    api_version: str, kind: str, spec: str, replicas: int | None, controller: str
) -> None:
    (workload,) = kit.workloads(_object(api_version, kind, spec))
    assert (workload.ref.kind, workload.replicas, workload.controller) == (kind, replicas, controller)
    assert workload.strategy is None  # not modelled: the rollout rules skip custom kinds
    assert workload.custom is not None and workload.custom.group == api_version.split("/", maxsplit=1)[0]


@pytest.mark.parametrize(
    ("api_version", "kind", "spec"),
    [
        # Keyed by group and kind, never by kind alone.
        ("example.com/v1", "StatefulSet", f"{{template: {TEMPLATE}}}"),
        ("v1", "Service", f"{{template: {TEMPLATE}}}"),
        ("serving.knative.dev/v1alpha1", "Service", f"{{template: {TEMPLATE}}}"),
        # A Rollout that references a Deployment has no template: the Deployment is the workload.
        ("argoproj.io/v1alpha1", "Rollout", "{workloadRef: {kind: Deployment, name: w}}"),
    ],
)
def test_not_workloads(api_version: str, kind: str, spec: str) -> None:
    assert kit.workloads(_object(api_version, kind, spec)) == []


def test_selectors_and_template_paths() -> None:
    rollout, dc, job = kit.workloads(
        _object(
            "argoproj.io/v1alpha1",
            "Rollout",
            f"{{selector: {{matchLabels: {{app: w}}}}, template: {TEMPLATE}}}",
        )
        + "---\n"
        + _object("apps.openshift.io/v1", "DeploymentConfig", f"{{template: {TEMPLATE}}}")
        + "---\n"
        + _object("keda.sh/v1alpha1", "ScaledJob", f"{{jobTargetRef: {{template: {TEMPLATE}}}}}")
    )
    assert rollout.selector is not None and rollout.selector.match_labels == (("app", "w"),)
    assert dc.selector is not None and dc.selector.match_labels == (("app", "w"),)  # defaults to the labels
    assert job.selector is None and job.template_path == ("spec", "jobTargetRef", "template")
    assert pod_template_path("ScaledJob", "keda.sh/v1alpha1") == ("spec", "jobTargetRef", "template")
    assert pod_template_path("StatefulSet", "apps.kruise.io/v1beta1") == ("spec", "template")
    assert pod_template_path("StatefulSet", "example.com/v1") is None
    assert pod_template_path("CronJob") == ("spec", "jobTemplate", "spec", "template")  # kind alone: built-in


def test_controller_labels_of_custom_kinds() -> None:
    rollout, clone, job = kit.workloads(
        _object("argoproj.io/v1alpha1", "Rollout", f"{{template: {TEMPLATE}}}")
        + "---\n"
        + _object("apps.kruise.io/v1alpha1", "CloneSet", f"{{template: {TEMPLATE}}}")
        + "---\n"
        + _object("keda.sh/v1alpha1", "ScaledJob", f"{{jobTargetRef: {{template: {TEMPLATE}}}}}")
    )
    assert set(pod_labels(rollout, "1.34")) == {"app", "rollouts-pod-template-hash"}
    assert set(pod_labels(clone, "1.34")) == {
        "app",
        "controller-revision-hash",
        "pod-template-hash",
        "apps.kruise.io/cloneset-instance-id",
    }
    assert set(pod_labels(job, "1.34")) >= {"batch.kubernetes.io/job-name", "job-name", "controller-uid"}


def test_real_knative_services_run_their_min_scale() -> None:
    """knative/serving's dataplane-probe benchmark: the older ``minScale`` annotation counts;
    Knative's containerConcurrency beside the PodSpec is not an unknown field."""
    files = load([str(DATA / "knative-dataplane-probe.yaml")])
    inventory = build_inventory(d for f in files for d in f.documents)
    assert [(w.ref.name, w.replicas) for w in inventory.workloads] == [("activator", 5), ("queue-proxy", 5)]
    result = lint_text((DATA / "knative-dataplane-probe.yaml").read_text(), select=("all",))
    assert keys(result) == []


def test_real_kruise_daemonset_places_one_pod_per_node_and_statefulset_by_ordinal() -> None:
    """argo-cd's health-check fixtures for OpenKruise: the Advanced DaemonSet places a pod on
    each eligible node, the Advanced StatefulSet names its pods by ordinal."""
    files = load([str(DATA / "kruise.yaml")])
    workloads = build_inventory(d for f in files for d in f.documents).workloads
    cluster = cluster_from(load([str(TOPOLOGY)]))
    run = place_all(workloads, cluster, version="1.34")
    daemon, stateful = workloads
    placed = run.by_workload[id(daemon)]
    assert len(placed) == sum(1 for node in cluster.nodes if not node.taints)
    assert {p.node for p in placed} == {n.ref.name for n in cluster.nodes if not n.taints}
    assert [p.pod.name for p in run.by_workload[id(stateful)]] == ["statefulset-test-0", "statefulset-test-1"]


def test_a_custom_template_is_validated_at_its_place_and_suppressed_on_it() -> None:
    text = """\
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {kaffinity.io/ignore: "api-validation -- on purpose"}
    spec:
      containers: [{name: web, image: nginx}]
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: web}}
              topologyKey: ""
      tolerations: [{key: a, operater: Exists}]
"""
    result = lint_text(text, select=("schema", "api-validation"))
    assert keys(result) == [("schema", 17, 30)]
    assert result.findings[0].path == "spec.template.spec.tolerations[0].operater"
    unsuppressed = lint_text(text.replace("api-validation -- on purpose", "replicas-not-spread -- x"))
    got = [(f.rule, f.line, f.column, f.path) for f in findings(unsuppressed, "api-validation")]
    path = "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
    path += ".topologyKey"
    assert got == [("api-validation", 16, 15, path)] * 3


# --- configured kinds --------------------------------------------------------------------------

CONFIG = """\
workloads:
  - apiVersion: example.com/v1
    kind: MyApp
    template: spec.podTemplate
    replicas: spec.size
    selector: spec.selector
  - apiVersion: batch.example.org/*
    kind: Runner
    template: spec.pod
"""
MYAPP = """\
apiVersion: example.com/v1
kind: MyApp
metadata: {name: app, namespace: shop}
spec:
  size: 3
  selector: {matchLabels: {app: app}}
  podTemplate:
    metadata: {labels: {app: app}}
    spec:
      containers: [{name: app, image: app}]
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: db}}
              topologyKey: ""
---
apiVersion: batch.example.org/v2
kind: Runner
metadata: {name: run, namespace: shop}
spec:
  pod:
    spec:
      containers: [{name: run, image: run}]
      nodeSelector: {disk: -ssd}
"""


def test_configured_kinds_reach_settings_and_the_model(tmp_path: Path) -> None:
    from kaffinity.config import load_settings
    from kaffinity.rules import CATEGORIES, RULES

    (tmp_path / ".kaffinity.yaml").write_text(CONFIG)
    settings = load_settings(str(tmp_path / ".kaffinity.yaml"), [r.name for r in RULES], sorted(CATEGORIES))
    myapp, runner = settings.workload_kinds
    assert (myapp.group, myapp.kind, myapp.versions, myapp.template) == (
        "example.com",
        "MyApp",
        ("v1",),
        ("spec", "podTemplate"),
    )
    assert (myapp.replicas, myapp.selector) == ((("spec", "size"),), ("spec", "selector"))
    assert (runner.versions, runner.replicas, runner.selector) == (None, (), None)
    app, run = kit.workloads(MYAPP, settings.workload_kinds)
    assert (app.replicas, run.replicas, app.controller) == (3, 1, "ReplicaSet")
    assert kit.workloads(MYAPP) == []  # without the configuration, neither is a workload
    other_version = MYAPP.replace("example.com/v1", "example.com/v2")  # MyApp is configured for v1 only
    assert [w.ref.kind for w in kit.workloads(other_version, settings.workload_kinds)] == ["Runner"]


def test_configured_kinds_are_validated_and_in_the_graph(tmp_path: Path) -> None:
    (tmp_path / ".kaffinity.yaml").write_text(CONFIG)
    (tmp_path / "app.yaml").write_text(MYAPP)
    completed = run("lint", "--format", "json", "app.yaml", cwd=tmp_path)
    found = sorted({(f["rule"], f["line"]) for f in json.loads(completed.stdout)["findings"]})
    # The term with topologyKey "" is refused (its pods are never created): api-validation says
    # so, once; affinity-no-match no longer reports the same term (issue 35).
    assert found == [("api-validation", 15), ("api-validation", 24)]
    unconfigured = run("lint", "--format", "json", "--no-config", "app.yaml", cwd=tmp_path)
    assert json.loads(unconfigured.stdout)["findings"] == []


@pytest.mark.parametrize(
    ("entry", "where", "words"),
    [
        (
            "  - {apiVersion: apps/v1, kind: MyApp, template: spec.template}\n",
            ":2:6:",
            ["'apps/v1' is not the group/version of a custom resource"],
        ),
        ("  - {apiVersion: example.com/v1, kind: MyApp}\n", ":2:5:", ["missing required key 'template'"]),
        (
            "  - apiVersion: example.com/v1\n    kind: MyApp\n    template: spec..x\n",
            ":4:5:",
            ["workloads.0.template: 'spec..x' is not a dotted path of field names"],
        ),
        ("  - {apiVersion: example.com/v1, kind: MyApp, template: spec.t, size: s.n}\n", ":2:5:", ["size"]),
    ],
)
def test_bad_workload_entries_are_config_errors_at_their_line(
    tmp_path: Path, entry: str, where: str, words: list[str]
) -> None:
    (tmp_path / ".kaffinity.yaml").write_text("workloads:\n" + entry)
    (tmp_path / "t.yaml").write_text("apiVersion: v1\nkind: Pod\n")
    completed = run("lint", "t.yaml", cwd=tmp_path)
    assert completed.returncode == 2
    first = completed.stderr.splitlines()[0]
    assert first.startswith(f".kaffinity.yaml{where} error: "), first
    for word in words:
        assert word in first


def test_settings_default_has_no_configured_kinds() -> None:
    assert Settings().workload_kinds == ()


def test_the_docs_list_every_known_kind() -> None:
    from kaffinity.k8s.model.kinds import CUSTOM_WORKLOADS

    docs = (Path(__file__).parent.parent / "docs" / "workloads.md").read_text(encoding="utf-8")
    for definition in CUSTOM_WORKLOADS:
        assert f"`{definition.kind}`" in docs and f"`{definition.group}/" in docs, definition.kind
        assert ".".join(definition.template) in docs, definition.kind


def test_place_and_expand_read_configured_and_known_kinds(tmp_path: Path) -> None:
    (tmp_path / ".kaffinity.yaml").write_text(CONFIG)
    (tmp_path / "app.yaml").write_text(MYAPP)
    placed = run("place", "--format", "json", "app.yaml", "--cluster", str(TOPOLOGY), cwd=tmp_path)
    assert placed.returncode == 1  # MyApp's pods stay Pending
    pods = json.loads(placed.stdout)["pods"]
    assert sorted({(pod["object"]["kind"], pod["object"]["name"]) for pod in pods}) == [
        ("MyApp", "app"),
        ("Runner", "run"),
    ]
    rollout = (EXAMPLES / "controller-label-unavailable" / "pass-rollout.yaml").read_text()
    (tmp_path / "rollout.yaml").write_text(rollout)
    expanded = run("expand", "--no-config", "--format", "json", "rollout.yaml", cwd=tmp_path)
    (workload,) = json.loads(expanded.stdout)["workloads"]
    assert workload["labels"]["rollouts-pod-template-hash"].startswith("<rollouts-pod-template-hash of")
    (term,) = workload["terms"]
    assert [use["key"] for use in term["applied"]] == ["rollouts-pod-template-hash"]
