"""A repository, not a folder of examples: deployment units (kaffinity.repo.units), kustomize
overlays and their patches, per-environment copies, install variants, and every command reading
a repository the same way (docs/repositories.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kaffinity.load.files import load
from kaffinity.load.parse import parse
from kaffinity.repo.engines import kustomize_engine
from kaffinity.repo.units import read_layout

from .kit import REPO, SHARED, added_lines, manifest, run, run_json
from .kit import workload as kit_workload

GITOPS = REPO / "tests" / "data" / "gitops"
ARGO = SHARED / "corpus" / "real" / "argoproj__argo-cd"
ARGO_INSTALLS = (
    "manifests__install.yaml",
    "manifests__namespace-install.yaml",
    "manifests__ha__install.yaml",
    "manifests__ha__namespace-install.yaml",
)
THREE_NODES = """\
apiVersion: kaffinity.io/v1alpha1
kind: ClusterTopology
metadata: {name: three}
spec:
  zones:
    - {name: a, pools: [{name: general, count: 1, allocatable: {cpu: "4", memory: 16Gi, pods: 110}}]}
    - {name: b, pools: [{name: general, count: 1, allocatable: {cpu: "4", memory: 16Gi, pods: 110}}]}
    - {name: c, pools: [{name: general, count: 1, allocatable: {cpu: "4", memory: 16Gi, pods: 110}}]}
"""


def _where(report: dict[str, Any]) -> list[tuple[str, str, int, int, list[str]]]:
    return [(f["rule"], f["file"], f["line"], f["column"], f["units"]) for f in report["findings"]]


# --- per-environment copies ----------------------------------------------------------------------


def test_environment_copies_are_units_each_read_with_its_own_files() -> None:
    """envs/prod and envs/staging define Deployment shop/api twice (3 and 1 replicas), each with a
    PDB: each environment is a unit, so the budgets never overlap and each counts its own pods."""
    code, report = run_json("envs", cwd=GITOPS)
    assert code == 0
    assert _where(report) == [("pdb-blocks-eviction", "envs/staging/api-pdb.yaml", 7, 3, ["envs/staging"])]
    assert report["summary"]["units"] == ["envs/prod", "envs/staging"]


def test_without_units_the_copies_meet(tmp_path: Path) -> None:
    """``units: one`` reads the folder as one deployment, as kaffinity did before: the copies
    meet, and both budgets select both copies (what units exist to prevent)."""
    config = tmp_path / "one.yaml"
    config.write_text("units: one\n")
    done = run("lint", "--config", str(config), "--format", "json", "envs", cwd=GITOPS)
    rules = {f["rule"] for f in json.loads(done.stdout)["findings"]}
    assert "pdb-overlap" in rules


def test_configured_units(tmp_path: Path) -> None:
    """``units:`` names the units; files under none of their paths belong to every unit."""
    shutil.copytree(GITOPS / "envs", tmp_path / "envs")
    (tmp_path / "namespace.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n")
    (tmp_path / ".kaffinity.yaml").write_text(
        "units:\n  - {name: production, paths: [envs/prod]}\n  - {name: staging, paths: [envs/staging]}\n"
    )
    done = run("lint", "--format", "json", "envs", "namespace.yaml", cwd=tmp_path)
    report = json.loads(done.stdout)
    assert report["summary"]["units"] == ["production", "staging"]
    assert _where(report) == [("pdb-blocks-eviction", "envs/staging/api-pdb.yaml", 7, 3, ["staging"])]


def test_configured_units_are_validated(tmp_path: Path) -> None:
    (tmp_path / ".kaffinity.yaml").write_text("units:\n  - {name: prod}\n")
    done = run("lint", ".", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith(".kaffinity.yaml:2:5: error: units.0: missing required key 'paths'")


# --- kustomize -----------------------------------------------------------------------------------


def test_overlays_are_units_and_patches_are_fragments() -> None:
    files = load([str(GITOPS / "base"), str(GITOPS / "overlays")])
    layout = read_layout(files, [str(GITOPS / "base"), str(GITOPS / "overlays")])
    names = [Path(unit.name).relative_to(GITOPS).as_posix() for unit in layout.units]
    assert names == ["overlays/prod", "overlays/staging"]  # the base is used: not a unit of its own
    assert {Path(path).relative_to(GITOPS).as_posix() for path in layout.fragments} == {
        "base/kustomization.yaml",
        "overlays/prod/kustomization.yaml",
        "overlays/staging/kustomization.yaml",
        "overlays/prod/replicas.yaml",
        "overlays/prod/one-per-node.yaml",
        "overlays/prod/image.yaml",
        "overlays/staging/single-replica.yaml",
    }
    for unit in layout.units:  # each overlay reads the base's objects
        assert sorted(Path(doc.file).name for doc in unit.documents) == ["worker-pdb.yaml", "worker.yaml"]
    assert all("overlays" not in doc.file for doc in layout.documents)


def test_a_patch_is_never_a_workload() -> None:
    """A strategic-merge patch (apiVersion, kind, metadata.name, spec.replicas) is not a
    Deployment of its own: named alone, it is still read as part of its overlay."""
    code, report = run_json(
        "--no-render",
        "overlays/prod/replicas.yaml",
        "overlays/staging/single-replica.yaml",
        "base",
        cwd=GITOPS,
    )
    assert code == 0
    assert report["findings"] == []
    assert all("overlays" not in f["file"] for f in report["findings"])


def test_kustomize_and_environments_together() -> None:
    """The GitOps layout's manifests, linted together and read as written: only the real
    problem, once (rendered, the prod overlay's own problem shows too: test_render_default.py)."""
    code, report = run_json("--no-render", "base", "overlays", "envs", cwd=GITOPS)
    assert code == 0
    assert _where(report) == [("pdb-blocks-eviction", "envs/staging/api-pdb.yaml", 7, 3, ["envs/staging"])]


# --- install variants ----------------------------------------------------------------------------


def _key(finding: dict[str, Any]) -> tuple[Any, ...]:
    return (
        finding["rule"],
        Path(finding["file"]).name,
        finding["line"],
        finding["column"],
        finding["message"],
    )


@pytest.mark.skipif(not ARGO.is_dir(), reason="the real-world corpus is not here")
@pytest.mark.parametrize("with_cluster", [False, True])
def test_install_variants_together_report_nothing_alone_does_not(tmp_path: Path, with_cluster: bool) -> None:
    """argo-cd's four install files (the real ones): linted together, nothing is reported that
    linting each alone does not; with a 3-node cluster the copies no longer fill the nodes (the
    run as one deployment reported `unschedulable` errors no install file gives alone)."""
    for name in ARGO_INSTALLS:
        shutil.copy(ARGO / name, tmp_path / name)
    (tmp_path / "cluster.yaml").write_text(THREE_NODES)
    cluster = ["--cluster", "cluster.yaml"] if with_cluster else []
    _, together = run_json(*cluster, *ARGO_INSTALLS, cwd=tmp_path)
    alone: set[tuple[Any, ...]] = set()
    for name in ARGO_INSTALLS:
        _, report = run_json(*cluster, name, cwd=tmp_path)
        alone |= {_key(finding) for finding in report["findings"]}
    found = {_key(finding) for finding in together["findings"]}
    assert found
    assert found <= alone
    assert len(together["summary"]["units"]) >= 2
    if with_cluster:
        assert "unschedulable" not in {finding["rule"] for finding in together["findings"]}


def test_two_copies_in_one_unit_read_as_kubectl_apply_leaves_them() -> None:
    """One file defining an object twice with other content: the later one is read (``kubectl
    apply -f`` applies the documents in order), and a note says so."""
    text = (
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: b}\n"
        "spec: {minAvailable: 1, selector: {matchLabels: {app: a}}}\n---\n"
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: b}\n"
        "spec: {maxUnavailable: 1, selector: {matchLabels: {app: a}}}\n"
    )
    layout = read_layout([parse("pdb.yaml", text)])
    (unit,) = layout.units
    assert [doc.index for doc in unit.documents] == [1]
    assert layout.notes and "pdb.yaml:1" in layout.notes[0]


def test_identical_copies_are_one_object() -> None:
    """The same object with the same content in two files is one object, and one unit."""
    text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n"
    layout = read_layout([parse("a.yaml", text), parse("b.yaml", text)])
    (unit,) = layout.units
    assert unit.name == ""
    assert len(unit.documents) == 1
    assert layout.notes == ()


def test_side_by_side_variants_are_grouped_by_required_affinity() -> None:
    """Variants side by side in one folder are separate units, except that a required pod
    affinity is a dependency: c1-router.yaml goes with the c1-mysql.yaml whose pods it needs
    (GoogleCloudPlatform/kubernetes-engine-samples, databases/gke-stateful-mysql), c2-* in
    another unit. Fixtures with no such dependency stay apart (a PDB golden file beside a
    Deployment golden file of another test case is not deployed with it)."""

    def workload(name: str, replicas: int, needs: str = "") -> str:
        term = {"labelSelector": {"matchLabels": {"app": needs}}, "topologyKey": "kubernetes.io/hostname"}
        return manifest([kit_workload(name, None, replicas=replicas, affinity=[term] if needs else ())])

    pdb = (
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: p}\n"
        "spec: {minAvailable: %d, selector: {matchLabels: {app: mysql}}}\n"
    )
    files = [
        parse("k/c1-mysql.yaml", workload("mysql", 1)),
        parse("k/c1-router.yaml", workload("router", 1, needs="mysql")),
        parse("k/c2-mysql.yaml", workload("mysql", 2)),
        parse("k/c2-router.yaml", workload("router", 2, needs="mysql")),
        parse("k/pdb-a.yaml", pdb % 1),
        parse("k/pdb-b.yaml", pdb % 2),
    ]
    layout = read_layout(files)
    assert [unit.name for unit in layout.units] == [
        "k/c1-* (2 files)",
        "k/c2-* (2 files)",
        "k/pdb-a.yaml",
        "k/pdb-b.yaml",
    ]
    grouped = [sorted(doc.file for doc in unit.documents) for unit in layout.units]
    assert grouped[:2] == [["k/c1-mysql.yaml", "k/c1-router.yaml"], ["k/c2-mysql.yaml", "k/c2-router.yaml"]]


# --- every command reads a repository the same way -----------------------------------------------


def test_place_places_each_unit_on_its_own(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(THREE_NODES)
    done = run(
        "place",
        "--no-config",
        "--cluster",
        str(tmp_path / "cluster.yaml"),
        "--format",
        "json",
        "envs",
        cwd=GITOPS,
    )
    assert done.returncode == 0, done.stderr
    pods = json.loads(done.stdout)["pods"]
    assert sorted((pod["unit"], pod["replica"]) for pod in pods) == [
        ("envs/prod", 0),
        ("envs/prod", 1),
        ("envs/prod", 2),
        ("envs/staging", 0),
    ]
    one = run(
        "place",
        "--no-config",
        "--cluster",
        str(tmp_path / "cluster.yaml"),
        "--unit",
        "envs/staging",
        "envs",
        cwd=GITOPS,
    )
    assert one.returncode == 0
    assert one.stdout.count("replica") == 1
    bad = run(
        "place", "--no-config", "--cluster", str(tmp_path / "cluster.yaml"), "--unit", "x", "envs", cwd=GITOPS
    )
    assert bad.returncode == 2
    assert "no such deployment unit" in bad.stderr


def test_graph_draws_one_unit() -> None:
    done = run("graph", "--no-config", "--format", "json", "--unit", "envs/prod", "envs", cwd=GITOPS)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "api-prod" in text and "api-staging" not in text


def _drawn(done: Any) -> set[str]:
    return {node["id"] for node in json.loads(done.stdout)["nodes"] if node.get("type") != "selector"}


def test_graph_focus_finds_its_object_in_any_unit() -> None:
    """``--focus`` on an object of the second unit draws that unit, not the first (issue 33)."""
    done = run(
        "graph",
        "--no-config",
        "-f",
        "json",
        "--focus",
        "PodDisruptionBudget/shop/api-staging",
        "envs",
        cwd=GITOPS,
    )
    assert done.returncode == 0, done.stderr
    assert _drawn(done) == {"Deployment/shop/api", "PodDisruptionBudget/shop/api-staging"}
    (note,) = [line for line in done.stderr.splitlines() if "--focus" in line]
    assert "envs/staging" in note and "envs/prod" not in note
    # --unit still decides: there the object is not, and the focus fails.
    there = run(
        "graph",
        "--no-config",
        "-f",
        "json",
        "--unit",
        "envs/prod",
        "--focus",
        "shop/api-staging",
        "envs",
        cwd=GITOPS,
    )
    assert there.returncode == 2


def test_graph_focus_in_several_units_draws_the_first_and_names_them() -> None:
    """shop/api is in both units: the first is drawn, the note names every unit holding it."""
    done = run("graph", "--no-config", "-f", "json", "--focus", "shop/api", "envs", cwd=GITOPS)
    assert done.returncode == 0, done.stderr
    assert _drawn(done) == {"Deployment/shop/api", "PodDisruptionBudget/shop/api-prod"}
    (note,) = [line for line in done.stderr.splitlines() if "--focus" in line]
    assert "envs/prod" in note and "envs/staging" in note
    staging = run(
        "graph",
        "--no-config",
        "-f",
        "json",
        "--unit",
        "envs/staging",
        "--focus",
        "shop/api",
        "envs",
        cwd=GITOPS,
    )
    assert _drawn(staging) == {"Deployment/shop/api", "PodDisruptionBudget/shop/api-staging"}


def test_expand_leaves_patches_alone_and_fix_edits_the_patch_that_set_the_term() -> None:
    """A patch is no workload: expand never shows it. fix builds the overlay as lint does and
    edits the patch that wrote the term the rendered Deployment carries (issue 33: the hint
    promised it, and fix answered "nothing to fix")."""
    done = run("expand", "--no-config", "--format", "json", "overlays", "base", cwd=GITOPS)
    assert done.returncode == 0, done.stderr
    assert "overlays" not in done.stdout
    if kustomize_engine() is None:
        pytest.skip("neither kustomize nor kubectl: the overlay is not built")
    fixed = run("fix", "--no-config", "--diff", "overlays", "base", cwd=GITOPS)
    assert fixed.returncode == 1, fixed.stderr
    headers = [line for line in fixed.stdout.splitlines() if line.startswith("+++")]
    assert headers == ["+++ overlays/prod/one-per-node.yaml (fixed)"]
    assert added_lines(fixed.stdout) == ["+              matchLabelKeys: [pod-template-hash]"]


def test_pre_commit_reads_the_repository_as_units(tmp_path: Path) -> None:
    """``lint --changed`` (the pre-commit hook) reads the git repository as context, in units:
    the staging budget is reported with its unit, and the prod copy never meets it."""
    shutil.copytree(GITOPS, tmp_path / "repo")
    repo = tmp_path / "repo"
    for command in (["git", "init", "-q"], ["git", "add", "."]):
        subprocess.run(command, cwd=repo, check=True, capture_output=True)
    done = run("lint", "--no-config", "--format", "json", "--changed", "envs/staging/api-pdb.yaml", cwd=repo)
    report = json.loads(done.stdout)
    assert _where(report) == [("pdb-blocks-eviction", "envs/staging/api-pdb.yaml", 7, 3, ["envs/staging"])]
    overlays = {unit for unit in report["summary"]["units"] if unit.startswith("overlays")}
    assert overlays == {"overlays/prod", "overlays/staging"}


# --- the whole repository, as `kaffinity lint .` reads it ----------------------------------------

KUBECTL = shutil.which("kubectl") or shutil.which("kustomize")
try:
    import helm_python  # noqa: F401 - the engine kaffinity[helm] brings

    HELM_SDK = True
except ImportError:
    HELM_SDK = bool(shutil.which("helm"))


def _git_repository(tmp_path: Path) -> Path:
    """The GitOps fixture as a git work tree whose .gitignore leaves out build/."""
    repo = tmp_path / "repo"
    shutil.copytree(GITOPS, repo)
    (repo / ".gitignore").write_text("build/\n")
    for command in (["git", "init", "-q"], ["git", "add", "."]):
        subprocess.run(command, cwd=repo, check=True, capture_output=True)
    return repo


def test_lint_dot_reports_only_the_real_problems(tmp_path: Path) -> None:
    """`kaffinity lint .` at the root of a GitOps repository: overlays with patches, environment
    copies, a chart, mkdocs.yml (python tags), docker-compose.yml (a key given twice), a build
    folder git ignores. Only the real problem, exit 0; the chart, not rendered, is one
    helm-template note at its Chart.yaml's name: line (its templates are never parsed)."""
    repo = _git_repository(tmp_path)
    code, report = run_json("--no-render", ".", cwd=repo)
    assert code == 0
    found = [(rule, Path(file).as_posix(), line) for rule, file, line, _, _ in _where(report)]
    assert found == [
        ("helm-template", "charts/web/Chart.yaml", 2),
        ("pdb-blocks-eviction", "envs/staging/api-pdb.yaml", 7),
    ]
    assert report["summary"]["skipped"] >= 2  # mkdocs.yml, docker-compose.yml


@pytest.mark.skipif(not KUBECTL, reason="neither kubectl nor kustomize is on the PATH")
@pytest.mark.skipif(not HELM_SDK, reason="no helm binary and helm-python-sdk (kaffinity[helm]) not installed")
def test_lint_dot_rendered(tmp_path: Path) -> None:
    """With --render the overlays are built and the chart rendered: the prod overlay's patch
    makes the rollout hang, reported on the patch's line and naming the unit; the chart
    renders cleanly (no helm-template warning)."""
    repo = _git_repository(tmp_path)
    code, report = run_json("--render", ".", cwd=repo)
    assert code == 0
    found = [
        (rule, Path(file).as_posix(), line, column, units)
        for rule, file, line, column, units in _where(report)
    ]
    assert found == [
        ("pdb-blocks-eviction", "envs/staging/api-pdb.yaml", 7, 3, ["envs/staging"]),
        ("revision-unscoped", "overlays/prod/one-per-node.yaml", 15, 15, ["overlays/prod"]),
    ]
    assert "charts/web" in report["summary"]["units"]
    (repo / ".kaffinity.yaml").write_text("render: true\n")
    done = run("lint", "--format", "json", ".", cwd=repo)
    assert _where(json.loads(done.stdout)) == _where(report)


@pytest.mark.skipif(not HELM_SDK, reason="no helm binary and helm-python-sdk (kaffinity[helm]) not installed")
def test_place_renders_the_chart(tmp_path: Path) -> None:
    """place --render places the rendered chart's replicas (values.yaml: 2)."""
    (tmp_path / "cluster.yaml").write_text(THREE_NODES)
    done = run(
        "place",
        "--no-config",
        "--render",
        "--cluster",
        str(tmp_path / "cluster.yaml"),
        "--format",
        "json",
        "charts",
        cwd=GITOPS,
    )
    assert done.returncode == 0, done.stderr
    pods = json.loads(done.stdout)["pods"]
    assert [(pod["object"]["name"], pod["replica"]) for pod in pods] == [
        ("release-name-web", 0),
        ("release-name-web", 1),
    ]


def test_rendered_stdin_names_the_template() -> None:
    """`helm template web ./chart/web | kaffinity lint - --stdin-filename chart/web`: a finding
    names the template file and its line, not <stdin>."""
    render = REPO / "tests" / "data" / "repos" / "render"
    stream = (render / "stdin" / "helm-template.yaml").read_text()
    done = run(
        "lint",
        "--no-config",
        "--format",
        "json",
        "-",
        "--stdin-filename",
        "chart/web",
        stdin=stream,
        cwd=render,
    )
    where = {(f["rule"], f["file"], f["line"]) for f in json.loads(done.stdout)["findings"]}
    assert ("revision-unscoped", "chart/web/templates/deployment.yaml", 18) in where


def test_the_readme_configuration_is_valid(tmp_path: Path) -> None:
    """The `.kaffinity.yaml` the README shows (units, render, helm-values, workloads...) is
    accepted as it is written."""
    readme = (REPO / "README.md").read_text()
    block = readme.split("## Configuration", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / ".kaffinity.yaml").write_text(block)
    for folder in ("cluster", "manifests", "charts/web"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "cluster" / "nodes.yaml").write_text(THREE_NODES)
    (tmp_path / "charts/web/values-prod.yaml").write_text("replicaCount: 2\n")
    (tmp_path / "policies").mkdir()
    policies = (REPO / "tests" / "data" / "policies" / "scheduling.yaml").read_text()
    (tmp_path / "policies" / "scheduling.yaml").write_text(policies)
    # Its baseline: is written by `kaffinity baseline write`, to the file the config names.
    written = run("baseline", "write", "--no-render", "manifests", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert (tmp_path / ".kaffinity-baseline.json").is_file()
    done = run("lint", "--format", "json", "--no-render", "manifests", cwd=tmp_path)
    assert "error:" not in done.stderr, done.stderr
    assert done.returncode == 0


def test_test_fixtures_are_units_of_their_own(tmp_path: Path) -> None:
    """A golden file and a file in a testdata folder are test cases: a budget in one never
    counts the pods of another (istio's operator/pkg/helm/testdata/output/*.golden.yaml)."""
    golden = tmp_path / "testdata" / "output"
    golden.mkdir(parents=True)
    deployment = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: istiod, namespace: istio-system}\n"
        "spec:\n  replicas: 1\n  selector: {matchLabels: {app: istiod}}\n"
        "  template:\n    metadata: {labels: {app: istiod}}\n    spec: {containers: [{name: c, image: i}]}\n"
    )
    budget = (
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\n"
        "metadata: {name: istiod, namespace: istio-system}\n"
        "spec: {minAvailable: 1, selector: {matchLabels: {app: istiod}}}\n"
    )
    (golden / "deployment.golden.yaml").write_text(deployment)
    (golden / "pdb-2replicas.golden.yaml").write_text(budget)
    code, report = run_json("testdata", cwd=tmp_path)
    assert (code, report["findings"]) == (0, [])
    assert len(report["summary"]["units"]) == 2
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "deployment.yaml").write_text(deployment)
    (tmp_path / "app" / "pdb.yaml").write_text(budget)
    code, report = run_json("app", cwd=tmp_path)  # the same files in an application folder: one unit
    assert [(f["rule"], f["file"]) for f in report["findings"]] == [("pdb-blocks-eviction", "app/pdb.yaml")]


def test_kuttl_assertions_are_not_manifests(tmp_path: Path) -> None:
    """kuttl's NN-assert.yaml holds the state a test expects, never applied (open-telemetry/
    opentelemetry-operator tests/e2e-pdb/target-allocator/00-assert.yaml)."""
    case = tmp_path / "tests" / "e2e-pdb"
    case.mkdir(parents=True)
    (case / "00-assert.yaml").write_text(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: a}\nspec: {minAvailable: 1}\n"
    )
    code, report = run_json("tests", cwd=tmp_path)
    assert (code, report["findings"], report["summary"]["skipped"]) == (0, [], 1)


def test_components_and_remote_overlays(tmp_path: Path) -> None:
    """A kustomize Component is never a unit of its own; an overlay with a remote resource is
    built under --render without it (fetching it needs the network), with a note."""
    shutil.copytree(GITOPS / "base", tmp_path / "base")
    (tmp_path / "component").mkdir()
    (tmp_path / "component" / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [pdb.yaml]\n"
    )
    (tmp_path / "component" / "pdb.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {mode: fast}\n"
    )
    (tmp_path / "remote").mkdir()
    (tmp_path / "remote" / "kustomization.yaml").write_text(
        "resources:\n  - ../base\n  - https://github.com/argoproj/argo-cd//manifests/crds\n"
        "components: [../component]\n"
    )
    layout = read_layout(load([str(tmp_path)]), [str(tmp_path)])
    assert [Path(unit.name).name for unit in layout.units] == ["remote"]
    done = run("lint", "--no-config", "--render", "--format", "json", ".", cwd=tmp_path)
    assert json.loads(done.stdout)["findings"] == []
    # Built without its remote resource (the network is off): the base and the component's
    # objects, as the overlay builds them (tests/test_units_render.py has the details).
    from kaffinity.repo.engines import kustomize_engine
    from kaffinity.repo.sandbox import Sandbox
    from kaffinity.repo.units import render_units

    if kustomize_engine() is None:
        pytest.skip("neither kustomize nor kubectl is on the PATH")
    built = render_units(layout, sandbox=Sandbox(roots=(str(tmp_path),))).layout
    (unit,) = built.units
    assert unit.not_rendered is None
    assert "ConfigMap" in [doc.data["kind"] for doc in unit.documents]
