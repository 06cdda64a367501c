"""The single-object stage file by file (``kaffinity.stream``) and the compact models
(``kaffinity.k8s.compact``) change nothing in what lint reports.

``kaffinity lint`` runs the single-object rules on each file as it is parsed and keeps only a
compact model of it; the same command with streaming switched off
(``kaffinity.run.workspace.stream`` returning None: the files read whole, every rule at the end,
as before issue 23) must report exactly the same, byte for byte, in JSON and text, with and
without a cluster, with ``--changed``, with ``--jobs``. The inputs are every example, the
repository layouts of ``tests/data`` (kustomize overlays, charts, per-environment copies,
mkdocs.yml), and files written for the cases compaction must get right (Lists, comments,
suppression annotations on objects whose fields are dropped).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

import kaffinity.run.lint
from kaffinity.config import Settings
from kaffinity.k8s.compact import compact_file
from kaffinity.k8s.model import build_object
from kaffinity.load.files import discover
from kaffinity.load.read import read
from kaffinity.load.source import PosDict, PosList
from kaffinity.run import workspace
from tests.kit import run, run_bytes

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DATA = ROOT / "tests" / "data"


def _both(monkeypatch: pytest.MonkeyPatch, *args: str | Path) -> tuple[str, str, int]:
    """``kaffinity lint ARGS`` streamed (and without the cache), then whole: both outputs (the
    test compares them) and the exit code (equal in both). The first run must have streamed:
    an input that is read whole anyway (stdin, a kustomization, a chart) compares a run with
    itself, and fails here."""
    streams: list[bool] = []
    stream = kaffinity.run.lint.stream

    def spied(*args: Any) -> Any:
        made = stream(*args)
        streams.append(made is not None)
        return made

    with monkeypatch.context() as patched:
        patched.setattr(kaffinity.run.lint, "stream", spied)
        streamed = run("lint", "--no-cache", *args)
    assert streams == [True], "not streamed: nothing to compare"
    with monkeypatch.context() as patched:
        patched.setattr(kaffinity.run.lint, "stream", lambda *_: None)
        whole = run("lint", *args)
    assert streamed.returncode == whole.returncode, (streamed.stderr, whole.stderr)
    return streamed.stdout, whole.stdout, whole.returncode


def _example_folders() -> list[Path]:
    return sorted(path for path in EXAMPLES.iterdir() if path.is_dir() and path.name != "clusters")


@pytest.mark.parametrize("folder", _example_folders(), ids=lambda path: path.name)
def test_every_example_reports_the_same_streamed(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    streamed, whole, _ = _both(monkeypatch, "--no-config", "--format", "json", folder)
    assert streamed == whole


@pytest.mark.parametrize(
    "cluster", ["topology.yaml", "rollout-deadlock.yaml", "needs-scale-up.yaml"], ids=lambda name: name
)
def test_the_examples_with_a_cluster_report_the_same_streamed(
    monkeypatch: pytest.MonkeyPatch, cluster: str
) -> None:
    path = EXAMPLES / "clusters" / cluster
    if not path.exists():
        pytest.fail(f"{path} is gone: name another cluster file of examples/clusters")
    streamed, whole, _ = _both(monkeypatch, "--no-config", "--format", "json", "--cluster", path, EXAMPLES)
    assert streamed == whole


@pytest.mark.parametrize("layout", ["gitops", "repository", "workloads"])
def test_repository_layouts_report_the_same_streamed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, layout: str
) -> None:
    """Kustomize overlays, charts' templates, copies per environment (compared in full, though
    compacted), files that are no manifests: each file as written (``units: one``; a layout with
    a kustomization or a chart is otherwise read whole, and would be compared with itself).
    Fails when the streamed run reports anything else than the whole one, or did not stream."""
    config = tmp_path / "kaffinity.yaml"
    config.write_text("units: one\n", encoding="utf-8")
    streamed, whole, _ = _both(monkeypatch, "--config", config, "--format", "json", DATA / layout)
    assert streamed == whole
    summary = json.loads(whole)["summary"]
    assert summary["files"] >= 1 and summary["files"] + summary["skipped"] >= 2, summary  # read or left out


_CASES = """\
# kaffinity: ignore[replicas-not-spread] -- a comment the single-object stage reads
apiVersion: v1
kind: List
items:
  - apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: web
      namespace: shop
      annotations:
        kubectl.kubernetes.io/last-applied-configuration: '{"kind": "Deployment"}'
      managedFields: [{manager: kubectl, operation: Apply}]
    spec:
      replicas: 3
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec:
          securityContext: {runAsNonRoot: true}
          volumes: [{name: config, configMap: {name: web}}]
          containers:
            - name: web
              image: nginx
              env: [{name: A, value: "1"}]
              readinessProbe: {httpGet: {path: /, port: 80}}
              resources: {requests: {cpu: 100m, memory: 64Mi}}
              ports: [{containerPort: 80, hostPort: 8080}]
          affinity:
            podAntiAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                - labelSelector: {matchLabels: {app: wbe}}
                  topologyKey: kubernetes.io/hostname
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: Web_Config
      namespace: shop
      annotations:
        kaffinity.io/ignore: api-validation -- on an object compaction keeps only the metadata of
    data: {a: b}
---
apiVersion: v1
kind: Service
metadata: {name: web-svc, namespace: shop}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: shop}
spec:
  maxUnavailable: 0
  selector: {matchLabels: {app: web}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 5
---
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: main, namespace: shop}
spec:
  replicas: 2
  podMetadata: {labels: {app: prometheus}}
"""


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    (tmp_path / "shop.yaml").write_text(_CASES)
    # A finding on a field compaction drops (found before it is dropped): an error.
    other = _CASES.replace("shop", "other").replace("wbe", "web")
    other = other.replace("replicas: 3", 'replicas: "3"')
    (tmp_path / "other.yaml").write_text(other)
    return tmp_path


@pytest.mark.parametrize("fmt", ["json", "text", "sarif"])
def test_what_compaction_drops_changes_nothing(
    monkeypatch: pytest.MonkeyPatch, cases: Path, fmt: str
) -> None:
    streamed, whole, code = _both(monkeypatch, "--no-config", "--format", fmt, cases)
    assert streamed == whole
    assert code == 1


def test_changed_with_a_context_reports_the_same_streamed(
    monkeypatch: pytest.MonkeyPatch, cases: Path
) -> None:
    (cases / "more").mkdir()
    (cases / "more" / "web.yaml").write_text(_CASES.replace("shop", "more"))
    for extra in ((), ("--cluster", str(EXAMPLES / "clusters" / "topology.yaml"))):
        streamed, whole, _ = _both(
            monkeypatch,
            "--no-config",
            "--format",
            "json",
            "--context",
            cases,
            *extra,
            "--changed",
            cases / "more",
        )
        assert streamed == whole


@pytest.mark.slow
def test_jobs_give_the_same_report_streamed(tmp_path: Path) -> None:
    """Past ``MIN_FILES`` files the workers run the single-object stage: the report is the same
    for any ``--jobs``, and the same as without streaming."""
    subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "generate.py"), "--workloads", "300", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    manifests = tmp_path / "manifests"
    assert len(list(manifests.rglob("*.yaml"))) >= 64
    (manifests / "zz-schema.yaml").write_text(_CASES.replace("replicas: 3", 'replicas: "3"'))
    reports = {
        jobs: run_bytes("lint", "--no-config", "--no-cache", "-f", "json", "--jobs", jobs, manifests)
        for jobs in ("1", "2", "3")
    }
    assert {result.returncode for result in reports.values()} == {1}
    assert reports["1"].stdout == reports["2"].stdout == reports["3"].stdout
    assert b'"rule": "schema"' in reports["1"].stdout  # found in a worker or here
    assert b'"category": "graph"' in reports["1"].stdout  # found after them


def _typed(value: Any) -> Any:
    """A typed object as comparable data, without its document (compact or whole)."""
    if hasattr(value, "__dataclass_fields__"):
        return tuple(
            (item.name, _typed(getattr(value, item.name))) for item in fields(value) if item.name != "doc"
        )
    if isinstance(value, (tuple, list)):
        return tuple(_typed(item) for item in value)
    return value


def _manifests() -> Iterator[Path]:
    for folder in (EXAMPLES, DATA / "gitops", DATA / "repository", DATA / "workloads"):
        yield from (Path(path) for path in discover([str(folder)], gitignore=False))


def test_compact_objects_model_the_same(cases: Path) -> None:
    """Every typed object (workload, budget, namespace, node, class) built from a compact file
    equals the one built from the whole file; kept paths keep their positions."""
    compared = 0
    for path in [*_manifests(), cases / "shop.yaml"]:
        whole = read(str(path))
        compact = compact_file(whole, Settings().workload_kinds)
        assert compact.compact and compact.text == ""
        assert len(compact.documents) == len(whole.documents)
        for before, after in zip(whole.documents, compact.documents, strict=True):
            assert (after.file, after.index, after.span, after.prefix) == (
                before.file,
                before.index,
                before.span,
                before.prefix,
            )
            if not isinstance(before.data, dict):
                continue
            assert _typed(build_object(after)) == _typed(build_object(before)), (
                f"{path}: document {before.index}"
            )
            _same_positions(before.data, after.data, path)
            compared += 1
    assert compared > 300


def _same_positions(whole: Any, compact: Any, path: Path, at: tuple[Any, ...] = ()) -> None:
    """What compaction kept is where it was: every kept key and item, at the same position."""
    if isinstance(compact, PosDict):
        assert isinstance(whole, PosDict) and compact.span == whole.span, (path, at)
        for key in compact:
            assert compact.key_position(key) == whole.key_position(key), (path, at, key)
            _same_positions(whole[key], compact[key], path, (*at, key))
    elif isinstance(compact, PosList):
        assert isinstance(whole, PosList) and list(compact.pos) == list(whole.pos), (path, at)
        for index, item in enumerate(compact):
            _same_positions(whole[index], item, path, (*at, index))
    else:
        assert compact == whole, (path, at)


def test_compaction_drops_what_no_cross_object_stage_reads(cases: Path) -> None:
    compact = compact_file(read(str(cases / "shop.yaml")))
    web, config = compact.documents[0].data, compact.documents[1].data
    assert "managedFields" not in web["metadata"]
    assert web["metadata"]["annotations"] == {}
    pod = web["spec"]["template"]["spec"]
    # volumes stay (VolumeBinding reads the claims a pod mounts); its securityContext goes
    assert set(pod) == {"containers", "affinity", "volumes"}
    assert set(pod["containers"][0]) == {"name", "resources", "ports"}
    assert set(config) == {"apiVersion", "kind", "metadata"}  # a ConfigMap: its identity only
    kept = {doc.data["kind"]: doc.data for doc in compact.documents}
    assert kept["Service"]["spec"]["selector"] == {"app": "web"}  # read by suggestions
    assert kept["HorizontalPodAutoscaler"]["spec"]["minReplicas"] == 2
    assert kept["Prometheus"]["spec"]["podMetadata"] == {"labels": {"app": "prometheus"}}  # may run pods


def test_repositories_that_render_stream(tmp_path: Path) -> None:
    """Issue 36: objects built from several files (kustomize, charts, GitOps releases) no longer
    make lint read the files whole: the layout reads the kustomizations from the disk, and the
    rendered units go through the single-object stage themselves."""
    settings = Settings()
    assert workspace.stream([str(DATA / "gitops")], settings, None) is not None
    assert workspace.stream([str(EXAMPLES)], settings, None) is not None
    (tmp_path / "kustomization.yaml").write_text("resources: [web.yaml]\n")
    (tmp_path / "web.yaml").write_text(_CASES)
    assert workspace.stream([str(tmp_path / "web.yaml")], settings, None) is not None
    # Still read whole: stdin (its text is kept for the report).
    assert workspace.stream(["-"], settings, None) is None
