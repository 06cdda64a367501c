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
    # The chart is rendered twice: as a unit of its own and by the HelmRelease echo.
    cold = lint_json(*QUIET, *cache)
    assert (calls["renders"][OVERLAY], calls["renders"][PODINFO]) == (1, 2)
    assert (calls["staged"][OVERLAY], calls["staged"][PODINFO]) == (1, 2)
    _clear(calls)
    warm = lint_json(*QUIET, *cache)
    assert warm.stdout == cold.stdout
    # The overlay, the chart's unit and the release come from the cache, findings and all:
    # neither rendered nor checked again.
    assert (calls["renders"][OVERLAY], calls["renders"][PODINFO]) == (0, 0)
    assert (calls["staged"][OVERLAY], calls["staged"][PODINFO]) == (0, 0)
    # A values file of the chart changed: the chart's unit and the release that renders it are
    # rendered and checked again.
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


# --- GitOps releases cached (kaffinity.cache.rendered.RenderCache.release) -------------------

ECHO_APP = "kubernetes/apps/default/echo/app"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_a_helm_release_is_rendered_again_only_when_what_it_reads_changed(
    home: Path, calls: dict[str, Any], tmp_path: Path
) -> None:
    """The HelmRelease echo (its chart in the repository, values from a ConfigMap an overlay
    generates, ``${ECHO_REPLICAS}`` substituted from the cluster's ConfigMap): each kind of
    input changed renders it again, and only it (the chart's own unit stays cached); the
    output is then the uncached run's."""
    cache = ("--cache-dir", str(tmp_path / "cache"))
    lint_json(*QUIET, *cache)
    assert calls["renders"][PODINFO] == 2  # the chart's unit and echo

    def renders_after(path: Path, old: str, new: str) -> int:
        _edit(path, old, new)
        _clear(calls)
        done = lint_json(*QUIET, *cache)
        count = int(calls["renders"][PODINFO])
        _clear(calls)
        assert done.stdout == lint_json(*QUIET, "--no-cache").stdout
        return count

    app = home / ECHO_APP
    # valuesFrom: the generated ConfigMap's data.
    assert renders_after(app / "values.yaml", "minAvailable: 0", "minAvailable: 2") == 1
    # The inline values.
    assert renders_after(app / "helmrelease.yaml", "replicaCount: ${ECHO_REPLICAS}", "replicaCount: 3") == 1
    # The release's own data (its post-renderer).
    assert (
        renders_after(app / "helmrelease.yaml", "kubernetes.io/hostname", "topology.kubernetes.io/zone") == 1
    )
    # Unchanged: nothing rendered.
    _clear(calls)
    lint_json(*QUIET, *cache)
    assert calls["renders"][PODINFO] == 0
    # The chart's template: its unit and the release.
    assert renders_after(home / PODINFO / "templates" / "deployment.yaml", "cpu: 100m", "cpu: 200m") == 2
    # Another chart: the release alone renders it.
    _write(home / "charts" / "other", CHART)
    _edit(app / "helmrelease.yaml", "chart: ./charts/podinfo", "chart: ./charts/other")
    _clear(calls)
    moved = lint_json(*QUIET, *cache)
    assert (calls["renders"][PODINFO], calls["renders"]["charts/other"]) == (0, 2)
    assert moved.stdout == lint_json(*QUIET, "--no-cache").stdout


def test_an_argo_application_of_a_remote_chart_is_cached(
    tmp_path: Path, calls: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An Argo CD Application of a chart from a Helm repository (loopback, --allow-network) at
    an exact version: a warm run neither fetches nor renders it; its values, its version and
    its repository changed render it again."""
    from kaffinity.repo.fetch.cache import CACHE_ENV

    from .remote import chart_repository
    from .test_argo import application, checkout, guestbook_chart, write

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "remote"))
    charts = [guestbook_chart(tmp_path / "one", "1.0.0"), guestbook_chart(tmp_path / "two", "1.1.0")]
    with (
        chart_repository(tmp_path / "served", charts) as first,
        chart_repository(tmp_path / "mirror", [guestbook_chart(tmp_path / "three", "1.1.0")]) as mirror,
    ):
        top = checkout(tmp_path / "lab", "https://github.com/someone/lab")
        monkeypatch.chdir(top)
        cache = ("--cache-dir", str(tmp_path / "cache"), "--allow-network")

        def renders(source: dict[str, Any]) -> int:
            write(top, {"apps/guestbook.yaml": application("guestbook", source)})
            _clear(calls)
            done = lint_json(*QUIET, *cache)
            count = sum(calls["renders"].values())
            _clear(calls)
            assert done.stdout == lint_json(*QUIET, "--no-cache", "--allow-network").stdout
            summary = json.loads(done.stdout)["summary"]
            assert "Application argocd/guestbook" in summary["units"]
            assert summary["render"]["unrendered"] == 0
            return count

        source = {
            "repoURL": first.url,
            "chart": "helm-guestbook",
            "targetRevision": "1.0.0",
            "helm": {"valuesObject": {"replicaCount": 2}},
        }
        assert renders(source) == 1
        requests = len(first.requests)
        assert renders(source) == 0
        assert len(first.requests) == requests  # nor fetched
        assert renders({**source, "helm": {"valuesObject": {"replicaCount": 3}}}) == 1
        assert renders({**source, "targetRevision": "1.1.0"}) == 1
        assert renders({**source, "targetRevision": "1.1.0", "repoURL": mirror.url}) == 1
        # A version range is resolved against the repository's index every run: not cached.
        assert renders({**source, "targetRevision": "1.x"}) == 1
        assert renders({**source, "targetRevision": "1.x"}) == 1
