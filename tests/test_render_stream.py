"""Rendered units in the streamed pipeline (issue 36, item 1): a repository with overlays, charts
and GitOps releases streams as a plain one (its files through the single-object stage and the
file cache, no second whole read for its releases), each rendered unit goes through the same
stage (kaffinity.stream.stage_rendered) and the render cache keeps what it gave, renders run from
``--jobs`` threads, and the output is byte-identical whichever way it was reached.

The repository is the home lab of tests/test_flux.py (onedr0p/cluster-template's layout): a
kustomization of Flux Kustomizations, whose releases substitute variables from a ConfigMap of
the repository (read whole from disk: its file is compacted) and take a HelmRelease's values
from a ConfigMap an overlay generates (kept whole in the rendered unit), beside the chart they
render, itself a unit.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kaffinity import stream as streaming
from kaffinity.repo import engines
from kaffinity.repo.helm import chart as helm_chart
from kaffinity.repo.kustomize import build as kustomize_build
from kaffinity.run import lint as lint_run
from kaffinity.run import workspace

from .kit import lint_json
from .test_flux import CHART, REPOSITORY_CHART_REF, _home_lab, _write, needs_tools

pytestmark = [needs_tools[0], needs_tools[1]]

OVERLAY = "kubernetes/apps/default"
PODINFO = "charts/podinfo"
ECHO = "HelmRelease default/echo"
QUIET = (".", "--no-progress")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = _home_lab(tmp_path / "home-ops", REPOSITORY_CHART_REF)
    _write(root / PODINFO, CHART)
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """What the run did: each render handed to its tool (by folder) and the thread it ran in,
    each rendered unit staged (kaffinity.stream.stage_rendered, by its unit), each streamed load."""
    seen: dict[str, Any] = {"renders": Counter(), "threads": set(), "staged": Counter(), "streamed": 0}
    build, draw = kustomize_build.render_kustomization, helm_chart.render_chart
    stage, load = streaming.stage_rendered, workspace.Stream.load

    def kustomization(directory: str, *args: Any, **kwargs: Any) -> Any:
        seen["renders"][os.path.normpath(directory)] += 1
        seen["threads"].add(threading.current_thread() is threading.main_thread())
        return build(directory, *args, **kwargs)

    def chart(chart_dir: str, *args: Any, **kwargs: Any) -> Any:
        seen["renders"][os.path.normpath(chart_dir)] += 1
        seen["threads"].add(threading.current_thread() is threading.main_thread())
        return draw(chart_dir, *args, **kwargs)

    def staged(rendered: Any, *args: Any, **kwargs: Any) -> Any:
        seen["staged"][rendered.unit] += 1
        return stage(rendered, *args, **kwargs)

    def loaded(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen["streamed"] += 1
        return load(self, *args, **kwargs)

    monkeypatch.setattr(kustomize_build, "render_kustomization", kustomization)
    monkeypatch.setattr(helm_chart, "render_chart", chart)
    monkeypatch.setattr(streaming, "stage_rendered", staged)
    monkeypatch.setattr(workspace.Stream, "load", loaded)
    yield seen


def _clear(seen: dict[str, Any]) -> None:
    seen["renders"].clear()
    seen["threads"].clear()
    seen["staged"].clear()
    seen["streamed"] = 0


def test_a_gitops_repository_streams_and_its_releases_render(home: Path, calls: dict[str, Any]) -> None:
    done = lint_json(*QUIET, "--no-cache", "--jobs", "1")
    report = json.loads(done.stdout)
    assert calls["streamed"] == 1  # read once, file by file: no second whole read for the releases
    units = report["summary"]["units"]
    # The releases rendered: echo's postBuild.substituteFrom names a ConfigMap of the repository,
    # whose file the stream compacted (read whole again from disk for it).
    assert ECHO in units
    assert "Kustomization flux-system/plain" in units
    assert report["summary"]["render"]["unrendered"] == 0
    # Every rendered unit went through the single-object stage: the overlay, the chart, the
    # releases.
    # releases (echo renders the chart too: podinfo twice).
    assert calls["staged"][OVERLAY] == 1
    assert calls["staged"][PODINFO] == 2
    assert sum(calls["staged"].values()) >= 4


def test_a_warm_run_renders_and_checks_no_unchanged_unit(
    home: Path, calls: dict[str, Any], tmp_path: Path
) -> None:
    cache = ("--cache-dir", str(tmp_path / "cache"))
    # The chart is rendered twice: as a unit of its own and by the HelmRelease echo, which is
    # not cached (a release's sources and values are other inputs: kaffinity.cache.rendered).
    cold = lint_json(*QUIET, *cache)
    assert (calls["renders"][OVERLAY], calls["renders"][PODINFO]) == (1, 2)
    assert (calls["staged"][OVERLAY], calls["staged"][PODINFO]) == (1, 2)
    _clear(calls)
    warm = lint_json(*QUIET, *cache)
    assert warm.stdout == cold.stdout
    # The overlay and the chart's unit come from the cache, findings and all: neither rendered
    # nor checked again.
    assert (calls["renders"][OVERLAY], calls["renders"][PODINFO]) == (0, 1)
    assert (calls["staged"][OVERLAY], calls["staged"][PODINFO]) == (0, 1)
    # A values file of the chart changed: the chart alone is rendered and checked again.
    values = home / PODINFO / "values.yaml"
    values.write_text(values.read_text().replace("replicaCount: 1", "replicaCount: 3"))
    _clear(calls)
    changed = lint_json(*QUIET, *cache)
    assert (calls["renders"][OVERLAY], calls["renders"][PODINFO]) == (0, 2)
    assert (calls["staged"][OVERLAY], calls["staged"][PODINFO]) == (0, 2)
    assert changed.stdout == lint_json(*QUIET, "--no-cache").stdout


def test_the_output_is_the_same_with_and_without_cache_jobs_and_stream(
    home: Path, calls: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = ("--cache-dir", str(tmp_path / "cache"))
    outputs = {
        "no cache, --jobs 1": lint_json(*QUIET, "--no-cache", "--jobs", "1"),
        "no cache, --jobs 2": lint_json(*QUIET, "--no-cache", "--jobs", "2"),
        "cold, --jobs 2": lint_json(*QUIET, *cache, "--jobs", "2"),
        "warm, --jobs 1": lint_json(*QUIET, *cache, "--jobs", "1"),
        "warm, --jobs 2": lint_json(*QUIET, *cache, "--jobs", "2"),
    }
    # Read whole, as before issue 36 (the single-object stage in this process, on whole objects).
    monkeypatch.setattr(lint_run, "stream", lambda *args, **kwargs: None)
    outputs["read whole"] = lint_json(*QUIET, "--no-cache", "--jobs", "1")
    expected = outputs["read whole"]
    assert json.loads(expected.stdout)["findings"]  # something to compare
    for label, done in outputs.items():
        assert (done.code, done.stdout, done.stderr) == (expected.code, expected.stdout, expected.stderr), (
            label
        )


def test_renders_run_from_jobs_threads(home: Path, calls: dict[str, Any]) -> None:
    parallel = lint_json(*QUIET, "--no-cache", "--jobs", "2")
    assert False in calls["threads"]  # an overlay or a chart rendered from a thread of the pool
    _clear(calls)
    alone = lint_json(*QUIET, "--no-cache", "--jobs", "1")
    assert calls["threads"] == {True}
    assert parallel.stdout == alone.stdout


def test_a_threads_interruptions_are_its_own() -> None:
    """The render cache keeps no render a limit stopped (kaffinity.cache.rendered): with renders
    running at once, each asks for its own thread's count, not another render's."""
    before = engines.interruptions(thread=True)
    other: list[int] = []

    def stopped() -> None:
        start = engines.interruptions(thread=True)
        engines.counted("cannot start kustomize")
        other.append(engines.interruptions(thread=True) - start)

    worker = threading.Thread(target=stopped)
    worker.start()
    worker.join()
    assert other == [1]
    assert engines.interruptions(thread=True) == before


OVERLAY_FILES = {
    "base/kustomization.yaml": "resources:\n  - deployment.yaml\n",
    "base/deployment.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: nginx:1.27
""",
    "overlays/prod/kustomization.yaml": "resources:\n  - ../../base\npatches:\n  - path: replicas.yaml\n",
    # A strategic-merge patch whose null field deletes what the base does not have (kubeflow's
    # knative patches/sidecar-injection.yaml opens with ``patches:``): a field no Deployment has,
    # the patch alone; nothing once merged.
    "overlays/prod/replicas.yaml": (
        "patches:\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 4\n"
    ),
}


@pytest.mark.parametrize("render", ["--render", "--no-render"])
def test_a_patch_is_no_object_of_its_own_when_streamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, render: str
) -> None:
    """The workers run the single-object stage on every file, a kustomization's patch too; the
    layout says it is a fragment, never an object of the cluster (its findings are dropped, as a
    whole read never checks it), rendered or not."""
    root = tmp_path / "repo"
    _write(root, OVERLAY_FILES)
    monkeypatch.chdir(root)
    streamed = lint_json(*QUIET, "--no-cache", render)
    patch = os.path.join("overlays", "prod", "replicas.yaml")
    found = json.loads(streamed.stdout)["findings"]
    # The rules of the single-object stage (the patch alone has an unknown field); what an
    # overlay's patch sets is still found there (issue 33).
    assert [
        f["rule"] for f in found if f["file"] == patch and f["rule"] in ("schema", "api-validation")
    ] == []
    monkeypatch.setattr(lint_run, "stream", lambda *args, **kwargs: None)
    assert streamed == lint_json(*QUIET, "--no-cache", render)
