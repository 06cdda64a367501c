"""Rendering by default (issue 32, item 1): charts, overlays and GitOps releases are rendered
whenever a renderer is there; ``--no-render`` / ``render: false`` read the files as written; a
repository with nothing to render lints exactly as before (streamed, cached); the units read as
written are counted in every report; ``--offline`` beats any allowance of the network; the
pre-commit hooks install what charts need and render.

The chart written here is modelled on a chart repository's layout (``charts/NAME/Chart.yaml``,
``values.yaml``, ``templates/``, as prometheus-community/helm-charts' charts are); the overlay
is tests/data/gitops's prod overlay.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from kaffinity.config import Settings, load_settings
from kaffinity.load.source import Document, Span
from kaffinity.repo import engines
from kaffinity.repo.engines import helm_engine, kustomize_engine
from kaffinity.repo.rendering import is_release, renderable_on_disk
from kaffinity.repo.sandbox import sandbox_from

from .kit import REPO, run, run_json

GITOPS = REPO / "tests" / "data" / "gitops"

needs_helm = pytest.mark.skipif(helm_engine() is None, reason="no helm binary and no helm-python-sdk")
needs_kustomize = pytest.mark.skipif(kustomize_engine() is None, reason="neither kustomize nor kubectl")

CHART = {
    "Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n",
    "values.yaml": "replicas: 3\n",
    "templates/deployment.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: {{ .Values.replicas }}
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
}

PLAIN = {
    "apps/web.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector:
                matchLabels: {app: cache}
              topologyKey: kubernetes.io/hostname
      containers:
        - name: web
          image: nginx:1.27
""",
    "apps/pdb.yaml": """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  maxUnavailable: 0
  selector:
    matchLabels: {app: web}
""",
}

HELM_RELEASE = """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: apps
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      sourceRef: {kind: HelmRepository, name: podinfo}
  values:
    replicaCount: 2
"""


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _no_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a machine with no helm, no helm-python-sdk, no kustomize and no kubectl."""
    monkeypatch.setattr(engines, "helm_engine", lambda: None)
    monkeypatch.setattr(engines, "kustomize_engine", lambda: None)


# --- the default ---------------------------------------------------------------------------


def test_render_is_on_by_default_and_the_config_may_turn_it_off(tmp_path: Path) -> None:
    assert Settings().render is True
    config = tmp_path / ".kaffinity.yaml"
    config.write_text("render: false\n")
    assert load_settings(str(config), [], []).render is False
    config.write_text("fail-on: warning\n")
    assert load_settings(str(config), [], []).render is True


@needs_helm
def test_a_chart_renders_by_default(tmp_path: Path) -> None:
    chart = _write(tmp_path / "charts" / "web", CHART)
    code, report = run_json("--no-cache", tmp_path)
    assert code == 0, report
    render = report["summary"]["render"]
    assert render["enabled"] is True
    assert render["engines"]["helm"] in ("helm binary", "helm-python-sdk")
    assert (render["rendered"], render["unrendered"], render["unrendered_units"]) == (1, 0, [])
    assert not [f for f in report["findings"] if f["rule"] in ("parse-error", "helm-template")]

    # --no-render reads the chart as written: its template is not a manifest.
    code, report = run_json("--no-cache", "--no-render", chart)
    assert report["summary"]["render"] == {
        "enabled": False,
        "engines": {"helm": None, "kustomize": None},
        "rendered": 0,
        "unrendered": 0,
        "unrendered_units": [],
    }
    assert [f["rule"] for f in report["findings"]] == ["helm-template"]


@needs_helm
def test_render_false_in_the_config_reads_as_written_and_the_flag_wins(tmp_path: Path) -> None:
    _write(tmp_path / "charts" / "web", CHART)
    (tmp_path / ".kaffinity.yaml").write_text("render: false\n")
    base = ("lint", "--config", str(tmp_path / ".kaffinity.yaml"), "--no-cache", "-f", "json", str(tmp_path))
    off = json.loads(run(*base).stdout)["summary"]["render"]
    assert (off["enabled"], off["rendered"]) == (False, 0)
    on = json.loads(run(*base[:-1], "--render", str(tmp_path)).stdout)["summary"]["render"]
    assert (on["enabled"], on["rendered"]) == (True, 1)


@needs_kustomize
def test_an_overlay_is_linted_as_built_by_default() -> None:
    """tests/data/gitops's prod overlay: one worker per node and surge-only rolls, which only the
    build shows (its patch says so); read as written, the base alone has no problem."""
    done = run("lint", "--no-config", "--no-cache", "-f", "json", "base", "overlays", cwd=GITOPS)
    report = json.loads(done.stdout)
    where = [(f["rule"], f["file"], f["line"], f["column"], f["units"]) for f in report["findings"]]
    assert where == [("revision-unscoped", "overlays/prod/one-per-node.yaml", 15, 15, ["overlays/prod"])]
    assert report["summary"]["render"]["rendered"] == 2
    done = run(
        "lint", "--no-config", "--no-cache", "-f", "json", "--no-render", "base", "overlays", cwd=GITOPS
    )
    assert json.loads(done.stdout)["findings"] == []


# --- units read as written, counted in every report ----------------------------------------


def _unrenderable(tmp_path: Path) -> Path:
    """A chart and an overlay (the gitops fixture's base and prod overlay)."""
    _write(tmp_path / "charts" / "web", CHART)
    shutil.copytree(GITOPS / "base", tmp_path / "base")
    shutil.copytree(GITOPS / "overlays" / "prod", tmp_path / "overlays" / "prod")
    return tmp_path


def test_units_without_a_tool_are_named_once_and_counted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root = _unrenderable(tmp_path)
    _no_tools(monkeypatch)
    code, report = run_json("--no-cache", root)
    assert code == 0
    render = report["summary"]["render"]
    assert (render["enabled"], render["rendered"], render["unrendered"]) == (True, 0, 2)
    assert render["engines"] == {"helm": None, "kustomize": None}
    units = sorted(Path(item["unit"]).relative_to(root).as_posix() for item in render["unrendered_units"])
    assert units == ["charts/web", "overlays/prod"]
    assert all(item["reason"] for item in render["unrendered_units"])

    sarif = json.loads(run("lint", "--no-config", "--no-cache", "-f", "sarif", str(root)).stdout)
    properties = sarif["runs"][0]["properties"]["render"]
    assert (properties["rendered"], properties["unrendered"]) == (0, 2)
    assert properties["unrendered_units"] == render["unrendered_units"]

    text = run("lint", "--no-config", "--no-cache", "-f", "text", str(root)).stdout
    summary = text.rstrip("\n").splitlines()[-1]
    assert re.search(r"; (\d+) units read as written \(not rendered\)\.$", summary).group(1) == "2"  # type: ignore[union-attr]

    markdown = run("lint", "--no-config", "--no-cache", "-f", "markdown", str(root)).stdout
    rows = dict(re.findall(r"^\| ([a-z ()]+) \| (\d+) \|$", markdown, re.MULTILINE))
    assert (rows["units rendered"], rows["units read as written (not rendered)"]) == ("0", "2")
    listed = re.findall(r"^- `([^`]+)`: ", markdown, re.MULTILINE)
    assert sorted(Path(name).relative_to(root).as_posix() for name in listed) == units

    github = run("lint", "--no-config", "--no-cache", "-f", "github", str(root)).stdout
    notices = [
        line for line in github.splitlines() if line.startswith("::notice title=kaffinity [not rendered]::")
    ]
    assert len(notices) == 1  # one for the run, never one per file


def test_place_names_the_units_read_as_written(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 32: without a renderer, ``place`` answered for a prod overlay as if its base were
    deployed. The overlay's unit header says it was read as written, and why."""
    root = _unrenderable(tmp_path)
    (root / "cluster.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels: {kubernetes.io/hostname: n1}\n"
        "status:\n  allocatable: {cpu: '64', memory: 256Gi, pods: '110'}\n"
    )
    _no_tools(monkeypatch)
    result = run("place", "--no-config", "--cluster", str(root / "cluster.yaml"), str(root))
    headers = sorted(re.findall(r"^== unit (.+) ==$", result.stdout, re.MULTILINE))
    assert f"{root / 'overlays' / 'prod'} (read as written: no tool)" in headers
    assert all(
        "read as written" not in header
        for header in headers
        if "overlays" not in header and "charts" not in header
    )


@needs_helm
@needs_kustomize
def test_the_summary_names_the_engines_used(tmp_path: Path) -> None:
    root = _unrenderable(tmp_path)
    _, report = run_json("--no-cache", root)
    render = report["summary"]["render"]
    assert render["engines"] == {"helm": helm_engine(), "kustomize": kustomize_engine()}
    assert (render["rendered"], render["unrendered"]) == (2, 0)
    markdown = run("lint", "--no-config", "--no-cache", "-f", "markdown", str(root)).stdout
    assert re.search(
        r"^Rendered charts with `([^`]+)` and overlays with `([^`]+)`\.", markdown, re.MULTILINE
    ).groups() == (  # type: ignore[union-attr]
        helm_engine(),
        kustomize_engine(),
    )


# --- nothing to render: as before ----------------------------------------------------------


def test_a_plain_repository_lints_byte_for_byte_as_before_streamed_and_cached(tmp_path: Path) -> None:
    root = _write(tmp_path / "repo", PLAIN)
    cache = tmp_path / "cache"
    outputs = {}
    for fmt in ("text", "github", "markdown"):
        default = run("lint", "--no-config", "--cache-dir", str(cache), "-f", fmt, str(root))
        before = run("lint", "--no-config", "--no-cache", "--no-render", "-f", fmt, str(root))
        assert default.returncode == before.returncode == 0  # warnings: exit 0 by default
        assert default.stdout == before.stdout
        assert default.stderr == before.stderr
        outputs[fmt] = default.stdout
    entries = [path for path in cache.rglob("*") if path.is_file()]
    assert entries, "the default run streamed through the cache"
    default = json.loads(run("lint", "--no-config", "--no-cache", "-f", "json", str(root)).stdout)
    before = json.loads(
        run("lint", "--no-config", "--no-cache", "--no-render", "-f", "json", str(root)).stdout
    )
    render = default["summary"].pop("render")
    before["summary"].pop("render")
    assert default == before
    assert sorted(f["rule"] for f in default["findings"]) == [
        "affinity-no-match",
        "pdb-blocks-eviction",
        "replicas-not-spread",
    ]
    assert render == {
        "enabled": True,
        "engines": {"helm": None, "kustomize": None},
        "rendered": 0,
        "unrendered": 0,
        "unrendered_units": [],
    }


def test_a_repository_that_renders_streams(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 36: what renders no longer makes lint read the files whole (the rendered units go
    through the single-object stage themselves); stdin still does, and policies over a repository
    that renders."""
    from kaffinity.run.workspace import stream

    plain = _write(tmp_path / "plain", PLAIN)
    chart = _write(tmp_path / "chart" / "charts" / "web", CHART)
    settings = Settings(cache=False)
    assert stream([str(plain)], settings, None) is not None
    assert not renderable_on_disk([str(plain)])
    assert renderable_on_disk([str(chart.parent.parent)])
    assert renderable_on_disk([str(chart / "templates")])  # inside a chart
    assert renderable_on_disk([str(chart / "templates" / "deployment.yaml")])
    assert renderable_on_disk([str(GITOPS / "overlays")], charts=False)
    assert not renderable_on_disk([str(chart.parent.parent)], charts=False)
    assert stream([str(chart)], settings, None) is not None
    assert stream([str(GITOPS / "overlays")], settings, None) is not None
    assert stream(["-"], settings, None) is None
    # With policies, a repository that renders is read whole: rendered units are staged
    # without the policies (kaffinity.run.workspace.stream).
    overlays = str(GITOPS / "overlays")
    assert stream([overlays], Settings(cache=False, policies=(str(chart),)), None, [overlays]) is None


def test_a_release_is_rendered_from_whole_objects(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The streamed path compacts a HelmRelease to its identity; a release found there makes
    lint read the files whole again, so that the release code sees its values."""
    root = _write(tmp_path / "repo", {**PLAIN, "apps/release.yaml": HELM_RELEASE})
    seen: list[Any] = []

    def releases(context: Any) -> Any:
        seen.extend(doc.data for doc in context.documents if doc.data.get("kind") == "HelmRelease")
        return iter(())

    from kaffinity.repo.gitops import flux

    monkeypatch.setattr(flux, "releases", releases)
    run("lint", "--no-config", "--no-cache", "-f", "json", str(root))
    assert [data["spec"]["values"]["replicaCount"] for data in seen] == [2]
    seen.clear()
    run("lint", "--no-config", "--no-cache", "--no-render", "-f", "json", str(root))
    assert seen == []


def test_release_kinds() -> None:
    def doc(api_version: str, kind: str) -> Document:
        data = {"apiVersion": api_version, "kind": kind}
        return Document("x.yaml", 0, data, data, Span(1, 1))

    assert is_release(doc("helm.toolkit.fluxcd.io/v2", "HelmRelease"))
    assert is_release(doc("kustomize.toolkit.fluxcd.io/v1", "Kustomization"))
    assert is_release(doc("argoproj.io/v1alpha1", "Application"))
    assert is_release(doc("argoproj.io/v1alpha1", "ApplicationSet"))
    assert not is_release(doc("kustomize.config.k8s.io/v1beta1", "Kustomization"))
    assert not is_release(doc("apps/v1", "Deployment"))


# --- --offline -----------------------------------------------------------------------------


def test_offline_beats_any_allowance_of_the_network() -> None:
    assert sandbox_from(environ={"KAFFINITY_ALLOW_NETWORK": "1"}).network is True
    assert sandbox_from(environ={"KAFFINITY_ALLOW_NETWORK": "1"}, offline=True).network is False
    assert sandbox_from(True, environ={}, offline=True).network is False
    both = sandbox_from(environ={"KAFFINITY_ALLOW_NETWORK": "1", "KAFFINITY_OFFLINE": "1"})
    assert (both.network, both.offline) == (False, True)
    assert sandbox_from(True, environ={"KAFFINITY_OFFLINE": "0"}).network is True


def test_offline_on_the_command_line_beats_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """KAFFINITY_ALLOW_NETWORK=1 would let rendering fetch remote bases and charts; --offline (on
    every command that has --allow-network) forbids it. The sandbox the renders get is recorded
    (nothing is built, nothing fetched)."""
    from kaffinity.repo import units
    from kaffinity.repo.units.render import RenderedLayout

    root = _write(tmp_path / "repo", {**PLAIN, "kustomization.yaml": "resources: [apps/web.yaml]\n"})
    seen: list[tuple[bool, bool]] = []

    def render_units(layout: Any, **options: Any) -> Any:
        seen.append((options["sandbox"].network, options["sandbox"].offline))
        return RenderedLayout(layout, (), ())

    monkeypatch.setattr(units, "render_units", render_units)
    monkeypatch.setenv("KAFFINITY_ALLOW_NETWORK", "1")
    cluster = ("--cluster", str(REPO / "examples" / "clusters" / "topology.yaml"))
    for command, extra in (("lint", ()), ("graph", ()), ("place", cluster)):
        run(command, "--no-config", *extra, str(root))
        run(command, "--no-config", "--offline", *extra, str(root))
        run(command, "--no-config", "--offline", "--allow-network", *extra, str(root))
        assert seen == [(True, False), (False, True), (False, True)], command
        seen.clear()
    monkeypatch.setenv("KAFFINITY_OFFLINE", "1")
    run("lint", "--no-config", "--allow-network", str(root))
    assert seen == [(False, True)]


# --- pre-commit ----------------------------------------------------------------------------


def _hooks() -> list[dict[str, Any]]:
    from pre_commit.clientlib import load_manifest

    hooks: list[dict[str, Any]] = load_manifest(str(REPO / ".pre-commit-hooks.yaml"))
    return hooks


def test_the_hooks_install_the_helm_engine_the_helm_extra_declares() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    (declared,) = (Requirement(r) for r in pyproject["project"]["optional-dependencies"]["helm"])
    for hook in _hooks():
        assert hook["language"] == "python"
        requirements = [Requirement(dependency) for dependency in hook["additional_dependencies"]]
        (helm,) = [r for r in requirements if r.name == declared.name]
        assert helm.specifier == declared.specifier, hook["id"]
        assert helm.marker is not None
        for platform, machine in (
            ("linux", "x86_64"),
            ("linux", "aarch64"),
            ("darwin", "arm64"),
            ("win32", "AMD64"),
        ):
            assert helm.marker.evaluate({"sys_platform": platform, "platform_machine": machine}), platform
        # No wheel there: pip would build the Go library from source; the hook still installs.
        assert not helm.marker.evaluate({"sys_platform": "darwin", "platform_machine": "x86_64"})
        assert "--no-render" not in hook["entry"]


@needs_helm
@pytest.mark.skipif(shutil.which("git") is None, reason="--changed reads the git repository")
def test_the_hooks_entry_renders_the_chart_a_commit_touches(tmp_path: Path) -> None:
    repo = _write(tmp_path / "repo", {**PLAIN, **{f"charts/web/{k}": v for k, v in CHART.items()}})
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    (hook,) = [hook for hook in _hooks() if hook["id"] == "kaffinity"]
    program, *arguments = shlex.split(hook["entry"])
    assert program == "kaffinity"
    report = tmp_path / "report.json"
    done = run(*arguments, "--report", f"json={report}", "charts/web/templates/deployment.yaml", cwd=repo)
    assert done.returncode == 0, done.stdout + done.stderr
    render = json.loads(report.read_text())["summary"]["render"]
    assert (render["enabled"], render["rendered"], render["unrendered"]) == (True, 1, 0)


# --- --changed: only what the commit touches ------------------------------------------------


def _git_repo(root: Path) -> Path:
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    return root


@needs_helm
@pytest.mark.skipif(shutil.which("git") is None, reason="--changed reads the git repository")
def test_changed_renders_only_the_charts_a_commit_touches(tmp_path: Path) -> None:
    charts = {
        f"charts/{name}/{k}": v.replace("-web", f"-{name}")
        for name in ("web", "api")
        for k, v in CHART.items()
    }
    repo = _git_repo(_write(tmp_path / "repo", charts))
    done = run(
        "lint", "--no-config", "--no-cache", "-f", "json", "--changed", "charts/web/values.yaml", cwd=repo
    )
    render = json.loads(done.stdout)["summary"]["render"]
    assert (render["rendered"], render["unrendered"]) == (1, 0)
    done = run("lint", "--no-config", "--no-cache", "-f", "json", "charts", cwd=repo)
    assert json.loads(done.stdout)["summary"]["render"]["rendered"] == 2


@needs_kustomize
@pytest.mark.skipif(shutil.which("git") is None, reason="--changed reads the git repository")
@pytest.mark.parametrize(
    ("changed", "rendered"),
    [
        ("base/worker.yaml", 2),
        ("overlays/prod/one-per-node.yaml", 1),
        ("overlays/staging/kustomization.yaml", 1),
    ],
)
def test_changed_builds_the_overlays_that_hold_the_file(tmp_path: Path, changed: str, rendered: int) -> None:
    repo = tmp_path / "repo"
    for folder in ("base", "overlays"):
        shutil.copytree(GITOPS / folder, repo / folder)
    _git_repo(repo)
    done = run("lint", "--no-config", "--no-cache", "-f", "json", "--changed", changed, cwd=repo)
    render = json.loads(done.stdout)["summary"]["render"]
    assert (render["rendered"], render["unrendered"]) == (rendered, 0)
