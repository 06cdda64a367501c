"""The cache of rendered units (kaffinity.cache.rendered, issue 33): a warm run renders
nothing, a change to what a unit reads re-renders exactly that unit, a damaged or hostile
entry is a miss, and the output is byte-identical with and without the cache.

The repository written here is laid out as kustomize's own examples are (examples/helloWorld:
``base/`` with a kustomization of resources, ``overlays/<env>/`` with a kustomization naming
the base and a patch; a configMapGenerator reading a file) beside a chart laid out as a chart
repository's are (``charts/NAME/Chart.yaml``, ``values.yaml``, ``templates/``, ``ci/`` values).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kaffinity.cache import Cache, cache_secret, max_entry, render_inputs
from kaffinity.cache import rendered as render_cache
from kaffinity.load.parse import DEFAULT_LIMITS
from kaffinity.repo import engines
from kaffinity.repo.engines import helm_engine, kustomize_engine
from kaffinity.repo.helm import chart as helm_chart
from kaffinity.repo.kustomize import build as kustomize_build

from .kit import lint_json, run

needs_both = pytest.mark.skipif(
    helm_engine() is None or kustomize_engine() is None,
    reason="needs a kustomize engine (kustomize or kubectl) and a Helm engine (helm or helm-python-sdk)",
)

DEPLOYMENT = """\
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
"""

FILES = {
    "base/kustomization.yaml": "resources:\n  - deployment.yaml\n",
    "base/deployment.yaml": DEPLOYMENT,
    "overlays/prod/kustomization.yaml": (
        "resources:\n  - ../../base\npatches:\n  - path: replicas.yaml\n"
        "configMapGenerator:\n  - name: web-config\n    files:\n      - app.properties\n"
    ),
    "overlays/prod/replicas.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 4\n"
    ),
    "overlays/prod/app.properties": "color=blue\n",
    "charts/api/Chart.yaml": "apiVersion: v2\nname: api\nversion: 0.1.0\n",
    "charts/api/values.yaml": "replicas: 3\nzone: topology.kubernetes.io/zone\n",
    "charts/api/templates/deployment.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-api
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: api}
  template:
    metadata:
      labels: {app: api}
    spec:
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: {{ .Values.zone }}
          whenUnsatisfiable: DoNotSchedule
          labelSelector:
            matchLabels: {app: api}
      containers:
        - name: api
          image: nginx:1.27
""",
}

OVERLAY = "overlays/prod"
CHART = "charts/api"


@pytest.fixture
def repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / ".git").mkdir()  # the repository's root (kaffinity.repo.sandbox.repository_root)
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def renders(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """How many times each unit was handed to its tool (render_kustomization, render_chart)."""
    counted: Counter[str] = Counter()
    build, draw = kustomize_build.render_kustomization, helm_chart.render_chart

    def kustomization(directory: str, *args: Any, **kwargs: Any) -> Any:
        counted[os.path.normpath(directory)] += 1
        return build(directory, *args, **kwargs)

    def chart(chart_dir: str, *args: Any, **kwargs: Any) -> Any:
        counted[os.path.normpath(chart_dir)] += 1
        return draw(chart_dir, *args, **kwargs)

    monkeypatch.setattr(kustomize_build, "render_kustomization", kustomization)
    monkeypatch.setattr(helm_chart, "render_chart", chart)
    yield counted


#: ``kaffinity lint`` of the repository, quiet (with ``--cache-dir`` or ``--no-cache``).
QUIET = (".", "--no-progress")


@needs_both
@pytest.mark.parametrize("output", ["json", "text"])
def test_a_second_run_renders_nothing_and_says_the_same(
    repository: Path, renders: Counter[str], tmp_path: Path, output: str
) -> None:
    cache = tmp_path / "cache"
    options = ("--no-config", "--format", output, *QUIET)
    cold = run("lint", *options, "--cache-dir", str(cache))
    assert renders == Counter({OVERLAY: 1, CHART: 1})
    renders.clear()
    warm = run("lint", *options, "--cache-dir", str(cache))
    assert renders == Counter()  # both units from the cache
    uncached = run("lint", *options, "--no-cache")
    assert renders == Counter({OVERLAY: 1, CHART: 1})  # --no-cache: rendered again
    assert cold.returncode == warm.returncode == uncached.returncode
    assert cold.stdout == warm.stdout == uncached.stdout  # byte for byte
    if output == "json":
        report = json.loads(warm.stdout)
        assert report["summary"]["render"]["rendered"] == 2
        assert report["summary"]["units"] == [OVERLAY, CHART]
        # The overlay's patch and the chart's template are what the findings point at.
        files = {finding["file"] for finding in report["findings"]}
        assert "charts/api/templates/deployment.yaml" in files


@needs_both
@pytest.mark.parametrize(
    ("changed", "text", "rendered"),
    [
        ("overlays/prod/replicas.yaml", "replicas: 4", "replicas: 1"),
        ("overlays/prod/app.properties", "color=blue", "color=green"),
        ("base/deployment.yaml", "image: nginx:1.27", "image: nginx:1.28"),
        ("overlays/prod/kustomization.yaml", "web-config", "web-settings"),
        ("charts/api/values.yaml", "replicas: 3", "replicas: 5"),
        ("charts/api/Chart.yaml", "version: 0.1.0", "version: 0.2.0"),
        ("charts/api/templates/deployment.yaml", "image: nginx:1.27", "image: nginx:1.28"),
    ],
)
def test_a_change_re_renders_exactly_the_unit_that_reads_it(
    repository: Path, renders: Counter[str], tmp_path: Path, changed: str, text: str, rendered: str
) -> None:
    cache = tmp_path / "cache"
    lint_json(*QUIET, "--cache-dir", str(cache))
    path = repository / changed
    path.write_text(path.read_text().replace(text, rendered))
    renders.clear()
    warm = lint_json(*QUIET, "--cache-dir", str(cache)).stdout
    unit = OVERLAY if not changed.startswith("charts/") else CHART
    assert renders == Counter({unit: 1})
    # What the cache gave for the other unit is what a render gives.
    assert warm == lint_json(*QUIET, "--no-cache").stdout


@needs_both
def test_the_kube_version_and_the_engine_are_part_of_a_charts_key(
    repository: Path, renders: Counter[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    lint_json(*QUIET, "--kube-version", "1.31", "--cache-dir", str(cache))
    renders.clear()
    lint_json(*QUIET, "--kube-version", "1.32", "--cache-dir", str(cache))
    # An overlay does not read the Kubernetes version, but its entry holds what the single-object
    # stage found in it (issue 36), which does (the schemas): both are rendered again.
    assert renders == Counter({CHART: 1, OVERLAY: 1})
    renders.clear()
    lint_json(*QUIET, "--kube-version", "1.31", "--cache-dir", str(cache))
    assert renders == Counter()  # both versions' entries are kept
    # Another engine (a new helm binary, another helm-python-sdk): the charts are rendered again.
    identity = render_cache.engine_identity
    for kind, unit in (("helm", CHART), ("kustomize", OVERLAY)):

        def another(asked: str, kind: str = kind) -> str:
            return identity(asked) + ("\0another build" if asked == kind else "")

        monkeypatch.setattr(render_cache, "engine_identity", another)
        renders.clear()
        lint_json(*QUIET, "--kube-version", "1.31", "--cache-dir", str(cache))
        assert renders == Counter({unit: 1})


@needs_both
def test_no_cache_and_cache_false_neither_read_nor_write(
    repository: Path, renders: Counter[str], tmp_path: Path
) -> None:
    lint_json(*QUIET, "--no-cache")
    lint_json(*QUIET, "--no-cache")
    assert renders == Counter({OVERLAY: 2, CHART: 2})
    (repository / ".kaffinity.yaml").write_text("cache: false\ncache-dir: .render-cache\n")
    renders.clear()
    for _ in range(2):
        result = run("lint", ".", "--format", "json", "--no-progress")
        assert result.returncode in (0, 1), result.stderr
    assert renders == Counter({OVERLAY: 2, CHART: 2})
    assert not (repository / ".render-cache").exists()


#: The fingerprint folders of the render cache the runs of a test opened (render_fingerprint):
#: the file cache's entries (the files stream: issue 36) sit beside them in the same folder.
_RENDER_FOLDERS: set[str] = set()


@pytest.fixture(autouse=True)
def _render_folders(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    fingerprint = render_cache.render_fingerprint

    def recorded(*args: Any, **kwargs: Any) -> str:
        found = fingerprint(*args, **kwargs)
        _RENDER_FOLDERS.add(found)
        return found

    monkeypatch.setattr(render_cache, "render_fingerprint", recorded)
    yield
    _RENDER_FOLDERS.clear()


def _entries(cache: Path) -> list[Path]:
    """The render cache's entries (not the file cache's)."""
    return sorted(
        path
        for path in cache.rglob("*")
        if path.is_file() and len(path.name) == 40 and path.parent.parent.name in _RENDER_FOLDERS
    )


def _store(cache: Path) -> Cache:
    """The render cache's store as kaffinity opens it, with the suite's secret: what a forger who
    had the secret could write (a shape check is then all that stands)."""
    secret, _ = cache_secret()
    assert secret is not None
    folder = next(path for path in _entries(cache)).parent.parent
    return Cache(str(cache), folder.name, secret)


@needs_both
@pytest.mark.parametrize("damage", ["garbage", "wrong shape", "file outside", "huge", "symlink"])
def test_a_damaged_or_hostile_entry_is_a_miss(
    repository: Path, renders: Counter[str], tmp_path: Path, damage: str
) -> None:
    cache = tmp_path / "cache"
    expected = lint_json(*QUIET, "--cache-dir", str(cache)).stdout
    entries = _entries(cache)
    assert len(entries) == 2
    store = _store(cache)
    outside = tmp_path / "secret.txt"
    outside.write_text("not the repository's\n")
    for entry in entries:
        key = entry.name
        payload = store.get(key)
        assert payload is not None
        if damage == "garbage":
            entry.write_bytes(b"\x00" * 200)
        elif damage == "wrong shape":
            store.put(key, json.dumps([1, 2, {"": [1, 1, []]}]).encode())
        elif damage == "file outside":
            # Authenticated, well formed, but naming a file the unit's key did not cover: the
            # first file of the entry (its second line: kaffinity.cache.staged).
            lines = payload.split(b"\n")
            data = json.loads(lines[1])
            data[0] = str(outside)
            for document in data[5]:
                document[0] = str(outside)
            lines[1] = json.dumps(data).encode()
            store.put(key, b"\n".join(lines))
        elif damage == "huge":
            entry.write_bytes(b"kaffinity-cache 5\n" + b"x" * max_entry(DEFAULT_LIMITS))
        else:
            entry.unlink()
            entry.symlink_to(outside)
    store.flush()
    renders.clear()
    done = lint_json(*QUIET, "--cache-dir", str(cache))
    code, warm = done.code, done.stdout
    assert renders == Counter({OVERLAY: 1, CHART: 1})  # a miss: rendered again
    assert warm == expected
    assert str(outside) not in warm
    assert code in (0, 1)


@needs_both
def test_a_render_a_limit_stopped_is_not_cached(
    repository: Path, renders: Counter[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    build = kustomize_build.render_kustomization

    def stopped(directory: str, *args: Any, **kwargs: Any) -> Any:
        engines.counted("cannot start kustomize")  # as run_render_tool counts a timeout or a memory limit
        return build(directory, *args, **kwargs)

    monkeypatch.setattr(kustomize_build, "render_kustomization", stopped)
    lint_json(*QUIET, "--cache-dir", str(cache))
    assert renders == Counter({OVERLAY: 1, CHART: 1})
    assert len(_entries(cache)) == 1  # the chart's
    monkeypatch.setattr(kustomize_build, "render_kustomization", build)
    renders.clear()
    lint_json(*QUIET, "--cache-dir", str(cache))
    assert renders == Counter({OVERLAY: 1})  # tried again; the chart came from the cache
    assert len(_entries(cache)) == 2


def test_a_timeout_counts_as_an_interruption(tmp_path: Path) -> None:
    from kaffinity.repo.sandbox import Outcome

    before = engines.interruptions()
    engines.counted(Outcome("", "", 0))
    engines.counted(Outcome("", "fatal error: runtime: out of memory", 2))
    engines.counted(Outcome("", "", 0, stopped="took longer than 1 s"))
    engines.counted("cannot start kustomize")
    engines.counted(Outcome("", "", -9))
    assert engines.interruptions() == before + 4


def test_an_overlays_inputs_are_the_files_its_build_reads(tmp_path: Path) -> None:
    for name, text in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "overlays/prod/unrelated.yaml").write_text("a: 1\n")
    inputs = render_inputs.kustomize_inputs(str(tmp_path / OVERLAY), DEFAULT_LIMITS, network=False)
    assert inputs is not None
    hashed = {os.path.relpath(line.split("\0")[1], tmp_path) for line in inputs.lines if "\0file\0" in line}
    assert hashed == {
        "overlays/prod/kustomization.yaml",
        "overlays/prod/replicas.yaml",
        "overlays/prod/app.properties",
        "base/kustomization.yaml",
        "base/deployment.yaml",
    }
    # A remote base: hashed by its text with the network off; not cacheable with it on.
    (tmp_path / "base/kustomization.yaml").write_text(
        "resources:\n  - deployment.yaml\n  - https://github.com/example/config//base?ref=v1\n"
    )
    assert render_inputs.kustomize_inputs(str(tmp_path / OVERLAY), DEFAULT_LIMITS, network=False) is not None
    assert render_inputs.kustomize_inputs(str(tmp_path / OVERLAY), DEFAULT_LIMITS, network=True) is None


def test_a_chart_with_a_remote_dependency_it_lacks_is_cached_only_offline(tmp_path: Path) -> None:
    from kaffinity.repo.sandbox import Sandbox

    offline, online = Sandbox(), Sandbox(network=True)
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 1.0.0\n")
    assert render_inputs.chart_inputs(str(chart), (), DEFAULT_LIMITS, online) is not None
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: c\nversion: 1.0.0\ndependencies:\n"
        "  - name: redis\n    version: 1.0.0\n    repository: https://charts.example.com\n"
    )
    # With the network on it would be fetched: content not hashed here, never cached.
    assert render_inputs.chart_inputs(str(chart), (), DEFAULT_LIMITS, online) is None
    # Off: taken from the remote cache if fetched before (none here): the key says so.
    inputs = render_inputs.chart_inputs(str(chart), (), DEFAULT_LIMITS, offline)
    assert inputs is not None
    assert any(line.endswith("not fetched") or "\0not fetched\0" in line for line in inputs.lines)
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: c\nversion: 1.0.0\ndependencies:\n"
        "  - name: common\n    version: 1.0.0\n    repository: file://../common\n"
    )
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "Chart.yaml").write_text("apiVersion: v2\nname: common\nversion: 1.0.0\n")
    inputs = render_inputs.chart_inputs(str(chart), (), DEFAULT_LIMITS, offline)
    assert inputs is not None
    assert os.path.realpath(tmp_path / "common" / "Chart.yaml") in inputs.files


@needs_both
def test_the_hook_re_renders_a_changed_patchs_overlay_once(
    repository: Path, renders: Counter[str], tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    patch = repository / "overlays/prod/replicas.yaml"
    patch.write_text(patch.read_text().replace("replicas: 4", "replicas: 1"))
    hook = ["lint", "--changed", "--no-config", "--format", "json", "--cache-dir", str(cache)]
    first = run(*hook, "overlays/prod/replicas.yaml")
    assert renders[OVERLAY] == 1
    second = run(*hook, "overlays/prod/replicas.yaml")
    assert renders[OVERLAY] == 1  # the same commit again: from the cache
    uncached = run(*hook[:-2], "--no-cache", "overlays/prod/replicas.yaml")
    assert renders[OVERLAY] == 2
    assert first.returncode == second.returncode == uncached.returncode
    assert first.stdout == second.stdout == uncached.stdout
    assert json.loads(first.stdout)["summary"]["render"]["rendered"] >= 1


@needs_both
def test_a_hook_run_keeps_the_entries_of_the_units_it_did_not_build(
    repository: Path, renders: Counter[str], tmp_path: Path
) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    (repository / ".git").rmdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "x"]):
        subprocess.run([*git, *command], cwd=repository, check=True, capture_output=True)
    cache = tmp_path / "cache"
    lint_json(*QUIET, "--cache-dir", str(cache))
    patch = repository / "overlays/prod/replicas.yaml"
    hook = ["lint", "--changed", "--no-config", "--format", "json", "--cache-dir", str(cache)]
    for replicas in range(5, 9):  # four commits of the patch: the chart is not built
        patch.write_text(patch.read_text().replace(f"replicas: {replicas - 1}", f"replicas: {replicas}"))
        run(*hook, "overlays/prod/replicas.yaml")
    renders.clear()
    lint_json(*QUIET, "--cache-dir", str(cache))
    assert renders == Counter()  # the chart's entry survived; the overlay's last one is there


@pytest.mark.skipif(shutil.which("helm") is None, reason="needs a helm binary on the PATH")
def test_a_chart_rendered_by_the_binary_is_rendered_again_by_the_sdk(
    repository: Path, renders: Counter[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    if importlib.util.find_spec("helm_python") is None or kustomize_engine() is None:
        pytest.skip("needs helm-python-sdk and a kustomize engine too")
    cache = tmp_path / "cache"
    lint_json(*QUIET, "--cache-dir", str(cache))
    builder = render_cache.engine_identity("kustomize")
    # The PATH without any folder holding a helm (kubectl kustomize builds the overlay).
    kept = [
        folder
        for folder in os.environ["PATH"].split(os.pathsep)
        if not os.path.exists(os.path.join(folder, "helm"))
    ]
    monkeypatch.setenv("PATH", os.pathsep.join(kept))
    if kustomize_engine() is None:
        pytest.skip("no kustomize engine without the helm folders on the PATH")
    assert helm_engine() == "helm-python-sdk"
    renders.clear()
    lint_json(*QUIET, "--cache-dir", str(cache))
    assert renders[CHART] == 1  # another engine: another key
    # The overlay renders again only if its engine changed with the PATH too.
    assert renders[OVERLAY] == (render_cache.engine_identity("kustomize") != builder)
