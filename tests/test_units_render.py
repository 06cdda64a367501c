"""What gets deployed, unit by unit (issue 32): in-tree subcharts, chart variants, duplicate keys
in rendered output, Helm hooks, and kustomize overlays that name remote resources.

Fixtures are written by the tests, modelled on real layouts:

- a chart repository in the layout of helm/charts and prometheus-community/helm-charts:
  ``charts/<name>/`` with ``ci/*-values.yaml`` (chart-testing's variants) and an in-tree subchart
  in ``charts/<name>/charts/<sub>/`` whose values the parent sets (bitnami's umbrella charts);
- a chart whose template emits a key twice, beside other Deployments;
- a chart with a ``pre-install`` migration Job (the hook Jobs of gitlab's and harbor's charts)
  whose pods a PodDisruptionBudget of the release selects;
- an overlay in the layout of ingress-nginx / cert-manager installs: a local base, one remote
  resource (``https://github.com/...``) and local patches (replicas, ``minAvailable: 0``).

Charts render with either engine: helm-python-sdk (the ``sdk`` case: no helm on the PATH) and the
helm binary (``binary``); each case skips with the reason when its engine is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kaffinity.k8s.model import build_inventory
from kaffinity.k8s.model.objects import is_hook
from kaffinity.load.files import load
from kaffinity.repo.engines import first_error, kustomize_engine
from kaffinity.repo.kustomize.build import render_kustomization
from kaffinity.repo.sandbox import Sandbox
from kaffinity.repo.units import Layout, read_layout, render_units
from kaffinity.repo.units.unit import NOT_RENDERED

from . import kit

try:
    import helm_python  # noqa: F401 - only whether it is there

    HAS_SDK = True
except ImportError:
    HAS_SDK = False

HELM = shutil.which("helm") or shutil.which("helm", path="/work/bin")
KUSTOMIZE_BINARY = shutil.which("kustomize") or shutil.which("kustomize", path="/work/bin")


@pytest.fixture(params=["sdk", "binary"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The Helm engine of the test: helm-python-sdk (no helm on the PATH) or the helm binary."""
    path = os.environ.get("PATH", "")
    if request.param == "sdk":
        if not HAS_SDK:
            pytest.skip("helm-python-sdk is not installed (the test extra has it)")
        kept = [folder for folder in path.split(os.pathsep) if not shutil.which("helm", path=folder)]
        monkeypatch.setenv("PATH", os.pathsep.join(kept))
    else:
        if HELM is None:
            pytest.skip("no helm binary on the PATH")
        monkeypatch.setenv("PATH", os.pathsep.join([os.path.dirname(HELM), path]))
    yield request.param


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def repository(tmp_path: Path, files: dict[str, str]) -> Path:
    """A git work tree (the sandbox's repository root) holding ``files``."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path, files)
    return tmp_path


def rendered(root: Path, **kwargs: Any) -> Layout:
    """The layout of ``root`` as ``--render`` reads it, paths relative to ``root``."""
    here = os.getcwd()
    os.chdir(root)
    try:
        files = load(["."])
        layout = read_layout(files, ["."])
        return render_units(layout, sandbox=Sandbox(roots=(str(root),), **kwargs)).layout
    finally:
        os.chdir(here)


def lint_json(root: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    completed = kit.run("lint", "--format", "json", "--no-config", "--render", *args, ".", cwd=root, env=env)
    return completed.returncode, json.loads(completed.stdout)


def deployment(name: str, labels: str = "app: web", replicas: str = "1", extra: str = "") -> str:
    return f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{{labels}}}
  template:
    metadata:
      labels: {{{labels}}}
    spec:
{extra}      containers:
        - name: c
          image: nginx:1.27
"""


CHART_YAML = "apiVersion: v2\nname: {name}\nversion: 0.1.0\n"

# -- in-tree subcharts -----------------------------------------------------------------------------

SUBCHART = {
    "charts/app/Chart.yaml": CHART_YAML.format(name="app"),
    "charts/app/values.yaml": "db:\n  replicas: 3\n",
    "charts/app/templates/web.yaml": deployment("web"),
    "charts/app/charts/db/Chart.yaml": CHART_YAML.format(name="db"),
    "charts/app/charts/db/values.yaml": "replicas: 1\n",
    "charts/app/charts/db/templates/db.yaml": deployment("db", "app: db", "{{ .Values.replicas }}"),
}


def test_in_tree_subchart_renders_with_its_parent(tmp_path: Path, engine: str) -> None:
    """A chart folder in another chart's ``charts/`` is no unit of its own: it renders with its
    parent, with the parent's values (db.replicas: 3 in the parent, 1 in the subchart)."""
    root = repository(tmp_path, SUBCHART)
    layout = rendered(root)
    assert [unit.name for unit in layout.units] == ["charts/app"]
    (unit,) = layout.units
    assert unit.not_rendered is None
    replicas = {doc.data["metadata"]["name"]: doc.data["spec"]["replicas"] for doc in unit.documents}
    assert replicas == {"web": 1, "db": 3}
    # Findings on the subchart's template point at it.
    db = next(doc for doc in unit.documents if doc.data["metadata"]["name"] == "db")
    assert os.path.normpath(db.file) == os.path.join("charts", "app", "charts", "db", "templates", "db.yaml")


def test_subchart_without_render_is_part_of_the_parent(tmp_path: Path) -> None:
    root = repository(tmp_path, SUBCHART)
    here = os.getcwd()
    os.chdir(root)
    try:
        layout = read_layout(load(["."]), ["."])
    finally:
        os.chdir(here)
    assert [(unit.name, unit.not_rendered) for unit in layout.units if unit.source == "helm"] == [
        ("charts/app", "rendering off")
    ]


# -- variants: ci/*-values.yaml and helm-values ------------------------------------------------------

ANTI_AFFINITY = """      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector:
                matchLabels: {app: web}
              topologyKey: kubernetes.io/hostname
"""

VARIANTS = {
    "charts/web/Chart.yaml": CHART_YAML.format(name="web"),
    "charts/web/values.yaml": "replicas: 1\ntier: default\n",
    "charts/web/templates/deployment.yaml": deployment(
        "web", replicas="{{ .Values.replicas }}", extra=ANTI_AFFINITY
    ).replace("  name: web\n", "  name: web\n  annotations:\n    tier: {{ .Values.tier }}\n", 1),
    "charts/web/ci/small-values.yaml": "replicas: 2\ntier: small\n",
    "charts/web/ci/ha-values.yaml": "replicas: 2\ntier: ha\n",
    "charts/web/values-prod.yaml": "replicas: 5\n",
}


def test_each_ci_values_file_is_a_variant(tmp_path: Path, engine: str) -> None:
    """chart-testing renders the chart once per ``ci/*-values.yaml`` (and not with its defaults
    alone when there is one): each is a unit; a finding identical across variants is reported
    once, naming each variant it appears in."""
    root = repository(tmp_path, VARIANTS)
    layout = rendered(root)
    names = [unit.name for unit in layout.units]
    assert names == ["charts/web (ci/ha-values.yaml)", "charts/web (ci/small-values.yaml)"]
    tiers = {
        unit.name: [doc.data["metadata"]["annotations"]["tier"] for doc in unit.documents]
        for unit in layout.units
    }
    assert tiers == {names[0]: ["ha"], names[1]: ["small"]}
    assert {name for doc in layout.documents for name in layout.membership[id(doc)]} == set(names)

    code, report = lint_json(root, "--fail-on", "warning")
    assert code == 1
    template = "charts/web/templates/deployment.yaml"
    line, column = kit.position(VARIANTS[template], "- labelSelector:")
    # revision-unscoped: one workload at a time, the same in both variants: once, both named.
    found = [(f["rule"], f["file"], f["line"], f["column"], sorted(f["units"])) for f in report["findings"]]
    assert found == [("revision-unscoped", template, line, column, sorted(names))]
    assert report["summary"]["units"] == names


def test_helm_values_entries_are_the_variants(tmp_path: Path, engine: str) -> None:
    """``helm-values:`` files replace the ci/ variants: the chart rendered once per file."""
    root = repository(tmp_path, VARIANTS)
    here = os.getcwd()
    os.chdir(root)
    try:
        layout = read_layout(load(["."]), ["."])
        built = render_units(
            layout,
            helm_values={"charts/web": ["charts/web/values-prod.yaml"]},
            sandbox=Sandbox(roots=(str(root),)),
        ).layout
    finally:
        os.chdir(here)
    assert [unit.name for unit in built.units] == ["charts/web (values-prod.yaml)"]
    assert [doc.data["spec"]["replicas"] for doc in built.units[0].documents] == [5]


# -- a duplicate key in rendered output ------------------------------------------------------------

DUPLICATE = {
    "chart/Chart.yaml": CHART_YAML.format(name="dup"),
    "chart/values.yaml": "{}\n",
    "chart/templates/a.yaml": deployment("a", "app: a"),
    "chart/templates/b.yaml": deployment("b", "app: b"),
    "chart/templates/c.yaml": deployment("c", "app: c"),
    # The label given twice (a values-driven label block plus a literal one, as charts do).
    "chart/templates/d.yaml": deployment("d", "app: d").replace(
        "  name: d\n", "  name: d\n  labels:\n    tier: web\n    tier: {{ .Chart.Name }}\n"
    ),
}


def test_a_duplicate_key_never_drops_the_chart(tmp_path: Path, engine: str) -> None:
    """Every object is kept (the later value read, as go-yaml v2 decodes for sigs.k8s.io/yaml);
    the duplicate is a parse-error at the template line, as helm install refuses it."""
    root = repository(tmp_path, DUPLICATE)
    layout = rendered(root)
    (unit,) = layout.units
    assert unit.not_rendered is None
    by_name = {doc.data["metadata"]["name"]: doc for doc in unit.documents}
    assert sorted(by_name) == ["a", "b", "c", "d"]
    assert by_name["d"].data["metadata"]["labels"] == {"tier": "dup"}

    code, report = lint_json(root)
    assert code == 2
    text = (root / "chart/templates/d.yaml").read_text()
    line, column = kit.position(text, "tier: {{", after="labels:")
    errors = [
        (f["rule"], f["file"], f["line"], f["column"])
        for f in report["findings"]
        if f["rule"] == "parse-error"
    ]
    assert errors == [("parse-error", "chart/templates/d.yaml", line, column)]


# -- Helm hooks --------------------------------------------------------------------------------------

HOOK_JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-delete-policy: hook-succeeded
spec:
  template:
    metadata:
      labels: {app: web}
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: web:1.0
"""

HOOKS = {
    "chart/Chart.yaml": CHART_YAML.format(name="web"),
    "chart/values.yaml": "{}\n",
    "chart/templates/deployment.yaml": deployment("web", replicas="2"),
    "chart/templates/pdb.yaml": """apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  maxUnavailable: 1
  selector:
    matchLabels: {app: web}
""",
    "chart/templates/migrate.yaml": HOOK_JOB,
}

NODES = """apiVersion: v1
kind: Node
metadata:
  name: n{index}
  labels: {{kubernetes.io/hostname: n{index}, topology.kubernetes.io/zone: z{index}}}
status:
  allocatable: {{cpu: "8", memory: 16Gi, pods: "110"}}
"""


def test_hook_pods_are_not_steady_state(tmp_path: Path, engine: str) -> None:
    """A pre-install Job's pods match the budget's selector: the budget is not blocked by them
    (Helm deletes the hook), the placement places the Deployment's 2 pods only; the Job is still
    linted as an object."""
    root = repository(
        tmp_path, {**HOOKS, "cluster/nodes.yaml": "---\n".join(NODES.format(index=i) for i in (1, 2))}
    )
    layout = rendered(root)
    (unit,) = [unit for unit in layout.units if unit.source.startswith("helm")]
    inventory = build_inventory(unit.documents)
    assert [w.ref.name for w in inventory.workloads] == ["web"]
    assert [w.ref.name for w in inventory.hooks] == ["migrate"]
    assert all(is_hook(w.doc) for w in inventory.hooks)

    code, report = lint_json(root, "--cluster", "cluster/nodes.yaml")
    assert code in (0, 1)  # no parse-error, no render failure
    rules = [finding["rule"] for finding in report["findings"]]
    assert "pdb-blocks-eviction" not in rules
    completed = kit.run(
        "place",
        "--render",
        "--no-config",
        "--cluster",
        "cluster/nodes.yaml",
        "--format",
        "json",
        "chart",
        cwd=root,
    )
    pods = json.loads(completed.stdout)["pods"]
    assert [(pod["object"]["name"], pod["node"] is not None) for pod in pods] == [
        ("web", True),
        ("web", True),
    ]


def test_without_the_hook_annotation_the_job_counts(tmp_path: Path, engine: str) -> None:
    """The control: the same Job as a steady-state object is selected by the budget, which the
    Job's controller (no scale subresource) blocks, and it is placed."""
    files = {**HOOKS, "chart/templates/migrate.yaml": HOOK_JOB.replace("  annotations:\n", "  x:\n")}
    root = repository(tmp_path, files)
    code, report = lint_json(root)
    assert code == 1
    assert "pdb-blocks-eviction" in [finding["rule"] for finding in report["findings"]]


# -- kustomize: remote resources, local patches ------------------------------------------------------

needs_kustomize = pytest.mark.skipif(
    kustomize_engine() is None, reason="neither kustomize nor kubectl is on the PATH"
)

OVERLAY = {
    "deploy/base/kustomization.yaml": "resources:\n  - deployment.yaml\n  - pdb.yaml\n",
    "deploy/base/deployment.yaml": deployment("web", replicas="2"),
    "deploy/base/pdb.yaml": """apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 2
  selector:
    matchLabels: {app: web}
""",
    "deploy/prod/kustomization.yaml": """namespace: prod
resources:
  - ../base
  - https://github.com/kubernetes/ingress-nginx/deploy/static/provider/cloud?ref=controller-v1.10.0
patches:
  - path: pdb.yaml
  - path: replicas.yaml
""",
    "deploy/prod/pdb.yaml": """apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 0
""",
    "deploy/prod/replicas.yaml": """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 4
""",
}


@needs_kustomize
def test_local_patches_apply_beside_a_remote_resource(tmp_path: Path) -> None:
    """Without the network the overlay is built without its remote resource: the local objects
    are in the overlay's namespace with its patches (4 replicas, minAvailable: 0), pointed at
    the repository's files, and one note names the remote resource left out."""
    root = repository(tmp_path, OVERLAY)
    layout = rendered(root)
    (unit,) = layout.units
    assert (unit.name, unit.not_rendered) == ("deploy/prod", None)
    objects = {(doc.data["kind"], doc.data["metadata"]["namespace"]): doc for doc in unit.documents}
    assert sorted(objects) == [("Deployment", "prod"), ("PodDisruptionBudget", "prod")]
    assert objects["Deployment", "prod"].data["spec"]["replicas"] == 4
    assert objects["PodDisruptionBudget", "prod"].data["spec"]["minAvailable"] == 0
    assert os.path.normpath(objects["Deployment", "prod"].file) == os.path.join(
        "deploy", "base", "deployment.yaml"
    )
    remote = OVERLAY["deploy/prod/kustomization.yaml"].splitlines()[3].strip("- ")
    assert [note for note in layout.notes if remote in note] != []

    write(root, {"cluster/nodes.yaml": "---\n".join(NODES.format(index=i) for i in (1, 2))})
    completed = kit.run(
        "place",
        "--render",
        "--no-config",
        "--cluster",
        "cluster/nodes.yaml",
        "--format",
        "json",
        "deploy",
        cwd=root,
    )
    pods = json.loads(completed.stdout)["pods"]
    assert [(pod["object"]["namespace"], pod["object"]["name"]) for pod in pods] == [("prod", "web")] * 4

    rendered_alone = render_kustomization(
        str(root / "deploy/prod"), sandbox=Sandbox(roots=(str(root),)), local_only=True
    )
    assert rendered_alone.left_out == (remote,)
    assert rendered_alone.ok


@needs_kustomize
def test_a_git_remote_is_fetched_when_the_network_is_allowed(tmp_path: Path) -> None:
    """A remote base over file:// (a bare repository): fetched by kustomize when the network is
    allowed; left out, with the local objects kept, when it is off."""
    source = tmp_path / "source"
    write(
        source,
        {
            "app/kustomization.yaml": "resources:\n  - deployment.yaml\n",
            "app/deployment.yaml": deployment("remote", "app: remote", "3"),
        },
    )
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", "-b", "main", str(source)], check=True)
    subprocess.run([*git, "-C", str(source), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(source), "commit", "-qm", "remote"], check=True)
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(source), str(bare)], check=True)
    root = repository(
        tmp_path / "repo",
        {
            "o/kustomization.yaml": f"resources:\n  - file://{bare}//app?ref=main\n  - local.yaml\n",
            "o/local.yaml": deployment("local", "app: local"),
        },
    )
    off = rendered(root)
    assert sorted(doc.data["metadata"]["name"] for doc in off.units[0].documents) == ["local"]
    on = rendered(root, network=True)
    names = sorted(doc.data["metadata"]["name"] for doc in on.units[0].documents)
    if names == ["local"]:
        pytest.skip("kustomize could not fetch the file:// remote in this sandbox")
    assert names == ["local", "remote"]


# -- kustomize's error, not its warning ---------------------------------------------------------------


@needs_kustomize
def test_a_failed_build_reports_the_error_not_the_warning(tmp_path: Path) -> None:
    files = {"k/kustomization.yaml": "commonLabels:\n  app: x\nresources:\n  - missing.yaml\n"}
    root = repository(tmp_path, files)
    layout = rendered(root)
    (unit,) = layout.units
    assert unit.not_rendered == "failed"
    for command in (["kustomize", "build"], ["kubectl", "kustomize"]):
        tool = KUSTOMIZE_BINARY if command[0] == "kustomize" else shutil.which("kubectl")
        if tool is None:
            continue
        errors = subprocess.run(
            [tool, *command[1:], str(root / "k")], capture_output=True, text=True, check=False
        ).stderr
        assert errors.splitlines()[0].startswith("# Warning")  # the tool warns first
        message = first_error(errors)
        assert message != first_error(errors.splitlines()[0])
        assert message.split(":")[0] == "accumulating resources"


# -- not rendered: why, per unit ------------------------------------------------------------------


def test_units_say_why_they_were_not_rendered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = repository(tmp_path, {**OVERLAY, **{f"x/{k}": v for k, v in VARIANTS.items()}})
    from kaffinity.repo import engines

    monkeypatch.setattr(engines, "helm_engine", lambda: None)
    monkeypatch.setattr(engines, "kustomize_engine", lambda: None)
    layout = rendered(root)
    reasons = {unit.name: unit.not_rendered for unit in layout.units}
    assert reasons == {"deploy/prod": "no tool", "x/charts/web": "no tool"}
    assert set(reasons.values()) <= set(NOT_RENDERED)
