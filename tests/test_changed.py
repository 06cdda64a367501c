"""``lint --changed`` reports what the change causes (issue 33): the findings of the objects a
changed object relates to, before or after the change (a term that selected a renamed label, a
budget over renamed pods), and every finding of a unit rendered from a changed file (a kustomize
patch, a chart's values file), each finding in a file that did not change with its ``because``.

The repositories are written here: a flat folder of manifests, a kustomize base with an overlay
(the layout of kubernetes-sigs/kustomize's examples/helloWorld: ``base/`` and
``overlays/<env>/`` with a patch), a chart (``charts/<name>/`` with Chart.yaml, values.yaml,
templates/).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from kaffinity.findings import Cause
from kaffinity.k8s.model import ObjectRef
from kaffinity.load.repository import previous_versions
from kaffinity.repo.engines import helm_engine, kustomize_engine
from kaffinity.report.because import sentence
from tests.kit import REPO, lint_json, manifest, position, requests, run, workload

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None, reason="--changed reads the previous version with git"
)

needs_helm = pytest.mark.skipif(helm_engine() is None, reason="no helm binary and no helm-python-sdk")
needs_kustomize = pytest.mark.skipif(kustomize_engine() is None, reason="neither kustomize nor kubectl")

CACHE = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: cache}
spec:
  replicas: 1
  selector: {matchLabels: {app: cache}}
  template:
    metadata: {labels: {app: cache}}
    spec:
      containers: [{name: c, image: redis}]
"""

# Required affinity to the cache's pods, in another file.
WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {app: cache}}
            topologyKey: kubernetes.io/hostname
      containers: [{name: c, image: nginx}]
"""

PDB = """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: cache}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: cache}}
"""


def _git(cwd: Path, *args: str) -> None:
    env = {
        **{key: value for key, value in os.environ.items() if not key.startswith("GIT_")},
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env, timeout=60)


def _committed(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "before")
    return root


def _stage(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).write_text(text)
        _git(root, "add", name)


def _lint(root: Path, *args: str) -> tuple[int, dict[str, Any]]:
    """Kept: every report of ``--changed`` is also checked against the output schema. What the
    hook fails on (warnings), and no info: the replicas some fixtures run are not spread, which
    is not what these tests are about; the folder's configuration read."""
    done = lint_json(
        "--no-cache", "--fail-on", "warning", "--min-severity", "warning", *args, cwd=root, config=True
    )
    schema = json.loads((REPO / "schemas" / "output.schema.json").read_text())
    jsonschema.validate(done.report, schema)
    return done.code, done.report


def _found(report: dict[str, Any]) -> list[tuple[str, str, int, int]]:
    return [(f["rule"], f["file"], f["line"], f["column"]) for f in report["findings"]]


def _causes(finding: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [
        (cause["file"], cause["relation"], cause["object"]["name"] if cause["object"] else None)
        for cause in finding.get("because", ())
    ]


def test_a_renamed_label_reports_the_term_that_selected_it(tmp_path: Path) -> None:
    repo = _committed(tmp_path, {"a.yaml": CACHE, "b.yaml": WEB})
    code, report = _lint(repo, "--changed", "a.yaml")
    assert (code, report["findings"]) == (0, [])
    _stage(repo, {"a.yaml": CACHE.replace("app: cache", "app: redis")})
    code, report = _lint(repo, "--changed", "a.yaml")
    assert code == 1
    line, column = position(WEB, "- labelSelector")
    assert _found(report) == [("affinity-no-match", "b.yaml", line, column + 2)]
    finding = report["findings"][0]
    assert _causes(finding) == [("a.yaml", "selects", "cache")]
    assert finding["because"][0]["object"]["kind"] == "Deployment"
    # Without the change (the same files, all of them named): no because.
    _, whole = _lint(repo, "a.yaml", "b.yaml")
    assert [f.get("because") for f in whole["findings"]] == [None]


def test_a_budget_over_renamed_pods_is_reported(tmp_path: Path) -> None:
    repo = _committed(tmp_path, {"a.yaml": CACHE, "pdb.yaml": PDB})
    _stage(repo, {"a.yaml": CACHE.replace("app: cache", "app: redis")})
    code, report = _lint(repo, "--changed", "a.yaml")
    assert code == 1
    line, column = position(PDB, "selector:")
    assert _found(report) == [("pdb-no-match", "pdb.yaml", line, column)]
    assert _causes(report["findings"][0]) == [("a.yaml", "budget", "cache")]


def test_a_new_file_has_no_previous_version(tmp_path: Path) -> None:
    repo = _committed(tmp_path, {"a.yaml": CACHE})
    _stage(repo, {"b.yaml": WEB})  # new: no version at HEAD; its term selects the cache
    code, report = _lint(repo, "--changed", "b.yaml")
    assert (code, report["findings"]) == (0, [])
    _stage(repo, {"b.yaml": WEB.replace("{app: cache}}", "{app: nothing}}")})
    code, report = _lint(repo, "--changed", "b.yaml")
    assert code == 1
    assert [(f["rule"], f["file"], f.get("because")) for f in report["findings"]] == [
        ("affinity-no-match", "b.yaml", None)
    ]


def test_previous_versions_reads_head(tmp_path: Path) -> None:
    repo = _committed(tmp_path, {"a.yaml": CACHE, "big.yaml": CACHE * 20})
    _stage(repo, {"a.yaml": WEB, "new.yaml": WEB})
    cwd = Path.cwd()
    os.chdir(repo)
    try:
        found = previous_versions(["a.yaml", "new.yaml", "big.yaml", "missing.yaml"], len(CACHE) * 2)
    finally:
        os.chdir(cwd)
    assert found == {"a.yaml": CACHE}
    outside = tmp_path.parent / f"{tmp_path.name}-outside.yaml"
    outside.write_text(CACHE)
    assert previous_versions([str(outside)], 1 << 20) == {}


def test_an_unrelated_change_in_a_big_repository_reports_nothing_else(tmp_path: Path) -> None:
    """Precision: 200 workloads, half of them with a required affinity nothing satisfies (old
    findings); a change to one workload that nothing selects, and that selects nothing, reports
    none of them."""
    files = {}
    for n in range(200):
        term = {
            "labelSelector": {"matchLabels": {"app": f"gone{n}"}},
            "topologyKey": "kubernetes.io/hostname",
        }
        obj = workload(f"w{n}", affinity=[term] if n % 2 else ())
        files[f"apps/w{n}.yaml"] = manifest([obj])
    repo = _committed(tmp_path, files)
    code, whole = _lint(repo, "apps")
    assert code == 1 and len(whole["findings"]) >= 100
    changed = files["apps/w10.yaml"].replace('"replicas": 1', '"replicas": 3')
    assert changed != files["apps/w10.yaml"]
    _stage(repo, {"apps/w10.yaml": changed})
    code, report = _lint(repo, "--changed", "apps/w10.yaml")
    assert (code, report["findings"]) == (0, [])
    # Renaming w12's label breaks nobody's term either (nothing selected app=w12).
    twelve = files["apps/w12.yaml"]
    assert '"app": "w12"' in twelve
    _stage(repo, {"apps/w12.yaml": twelve.replace('"app": "w12"', '"app": "twelve"')})
    code, report = _lint(repo, "--changed", "apps/w12.yaml")
    assert (code, report["findings"]) == (0, [])


OVERLAY_BASE = {
    "base/kustomization.yaml": "resources: [cache.yaml, web.yaml]\n",
    "base/cache.yaml": CACHE,
    "base/web.yaml": WEB,
    "overlays/prod/kustomization.yaml": "resources: [../../base]\npatches:\n- path: patch.yaml\n",
    "overlays/prod/patch.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: cache}\nspec:\n  replicas: 2\n"
    ),
}

# The patch relabels the cache's pods in prod: web's required affinity (in base/web.yaml, which
# the commit does not touch) selects nothing there.
RELABEL = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: cache}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: redis}}
"""


@needs_kustomize
def test_a_patch_only_change_reports_the_rendered_findings(tmp_path: Path) -> None:
    repo = _committed(tmp_path, OVERLAY_BASE)
    code, report = _lint(repo, "--changed", "overlays/prod/patch.yaml")
    assert (code, report["findings"]) == (0, [])
    _stage(repo, {"overlays/prod/patch.yaml": RELABEL})
    code, report = _lint(repo, "--changed", "overlays/prod/patch.yaml")
    assert code == 1
    line, column = position(WEB, "- labelSelector")
    assert ("affinity-no-match", "base/web.yaml", line, column + 2) in _found(report)
    finding = next(f for f in report["findings"] if f["file"] == "base/web.yaml")
    assert finding["units"] == ["overlays/prod"]
    assert finding["because"] == [
        {
            "file": "overlays/prod/patch.yaml",
            "relation": "rendered-from",
            "object": None,
            "unit": "overlays/prod",
        }
    ]
    # The full lint finds the same in prod (the base unit is fine: its cache keeps app: cache).
    _, whole = _lint(repo, ".")
    assert [(f["rule"], f["file"], f["units"]) for f in whole["findings"]] == [
        (f["rule"], f["file"], f["units"]) for f in report["findings"]
    ]


@needs_kustomize
def test_a_broken_patch_reports_its_findings_as_the_full_lint_does(tmp_path: Path) -> None:
    """The issue's case: a full lint reports errors in a changed patch; --changed did not."""
    repo = _committed(tmp_path, OVERLAY_BASE)
    broken = RELABEL.replace("app: redis", "app: cache") + (
        "    spec:\n      topologySpreadConstraints:\n"
        "      - {maxSkew: 0, topologyKey: '', whenUnsatisfiable: DoNotSchedule,"
        " labelSelector: {matchLabels: {app: cache}}}\n"
    )
    _stage(repo, {"overlays/prod/patch.yaml": broken})
    _, whole = _lint(repo, ".")
    in_patch = [item for item in _found(whole) if item[1] == "overlays/prod/patch.yaml"]
    assert len([item for item in in_patch if item[0] == "api-validation"]) >= 2, whole["findings"]
    code, report = _lint(repo, "--changed", "overlays/prod/patch.yaml")
    assert code == 1
    assert [item for item in _found(report) if item[1] == "overlays/prod/patch.yaml"] == in_patch
    assert all("because" not in f for f in report["findings"] if f["file"] == "overlays/prod/patch.yaml")


CHART = {
    "charts/web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n",
    "charts/web/values.yaml": "topologyKey: kubernetes.io/hostname\n",
    "charts/web/templates/deploy.yaml": """\
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
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector:
              matchLabels: {app: web}
            matchLabelKeys: [pod-template-hash]
            topologyKey: {{ .Values.topologyKey | quote }}
      containers: [{name: c, image: nginx}]
""",
}


@needs_helm
def test_a_values_only_change_reports_the_rendered_findings(tmp_path: Path) -> None:
    repo = _committed(tmp_path, CHART)
    code, report = _lint(repo, "--changed", "charts/web/values.yaml")
    assert (code, report["findings"]) == (0, [])
    _stage(repo, {"charts/web/values.yaml": 'topologyKey: ""\n'})
    code, report = _lint(repo, "--changed", "charts/web/values.yaml")
    assert code == 1
    template = CHART["charts/web/templates/deploy.yaml"]
    line, column = position(template, "topologyKey:")
    found = _found(report)
    assert found and set(found) == {("api-validation", "charts/web/templates/deploy.yaml", line, column)}
    for finding in report["findings"]:
        assert finding["because"] == [
            {
                "file": "charts/web/values.yaml",
                "relation": "rendered-from",
                "object": None,
                "unit": "charts/web",
            }
        ]
    _, whole = _lint(repo, ".")
    assert _found(whole) == found


def test_the_reports_carry_the_because(tmp_path: Path) -> None:
    repo = _committed(tmp_path, {"a.yaml": CACHE, "b.yaml": WEB})
    _stage(repo, {"a.yaml": CACHE.replace("app: cache", "app: redis")})
    cause = Cause("a.yaml", "selects", ObjectRef("apps/v1", "Deployment", "default", "cache"))
    sarif = run("lint", "--format", "sarif", "--no-cache", "--changed", "a.yaml", cwd=repo)
    (result,) = json.loads(sarif.stdout)["runs"][0]["results"]
    assert result["properties"]["because"] == [
        {
            "file": "a.yaml",
            "relation": "selects",
            "object": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "namespace": "default",
                "name": "cache",
            },
            "unit": None,
        }
    ]
    assert result["properties"]["becauseText"] == sentence(cause)
    text = run("lint", "--format", "text", "--no-cache", "--changed", "a.yaml", cwd=repo)
    assert f"    note: {sentence(cause)}" in text.stdout.splitlines()
    # The summary counts the file linted and the one the change affects, apart.
    assert (
        text.stdout.splitlines()[-1] == "Found 1 problem (1 warning) in 1 file and 1 file the change affects."
    )
    github = run("lint", "--format", "github", "--no-cache", "--changed", "a.yaml", cwd=repo)
    assert sentence(cause) in github.stdout
    markdown = run("lint", "--format", "markdown", "--no-cache", "--changed", "a.yaml", cwd=repo)
    assert sentence(cause) in markdown.stdout


def test_only_the_findings_of_the_relation_are_reported(tmp_path: Path) -> None:
    """web runs 3 unspread replicas (replicas-not-spread, an info finding of its own) and selects
    the cache's pods: renaming them reports the term's finding, not that one."""
    web = WEB.replace("replicas: 1", "replicas: 3")
    repo = _committed(tmp_path, {"a.yaml": CACHE, "b.yaml": web})
    _, whole = _lint(repo, "--min-severity", "info", "b.yaml", "a.yaml")
    assert [f["rule"] for f in whole["findings"]] == ["replicas-not-spread"]
    _stage(repo, {"a.yaml": CACHE.replace("app: cache", "app: redis")})
    code, report = _lint(repo, "--min-severity", "info", "--changed", "a.yaml")
    assert code == 1
    assert [(f["rule"], f["file"]) for f in report["findings"]] == [("affinity-no-match", "b.yaml")]


@needs_helm
@needs_kustomize
def test_a_release_values_change_reports_the_release_findings(tmp_path: Path) -> None:
    """A Flux HelmRelease whose valuesFrom ConfigMap a configMapGenerator makes from the app's
    values.yaml (tests/test_flux.py's home lab, the layout of onedr0p/cluster-template): a
    commit that changes only that values.yaml reports the release's rendered findings."""
    from tests.test_flux import CHART as FLUX_CHART
    from tests.test_flux import REPOSITORY_CHART_REF, _home_lab, _write

    root = _home_lab(tmp_path / "home-ops", REPOSITORY_CHART_REF)
    _write(root / "charts" / "podinfo", FLUX_CHART)
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "before")
    values = "kubernetes/apps/default/echo/app/values.yaml"
    # Every pod in the budget: no voluntary eviction is allowed.
    _stage(root, {values: "pdb:\n  minAvailable: 100%\n"})
    code, after = _lint(root, "--render", "--changed", values)
    assert code == 1
    release = [f for f in after["findings"] if f["units"] == ["HelmRelease default/echo"]]
    assert release, after["findings"]
    for finding in release:
        assert finding["file"] != values
        assert {
            "file": values,
            "relation": "rendered-from",
            "object": None,
            "unit": "HelmRelease default/echo",
        } in (finding["because"])
    _, whole = _lint(root, "--render", ".")
    assert {(f["rule"], f["file"], f["line"]) for f in release} == {
        (f["rule"], f["file"], f["line"])
        for f in whole["findings"]
        if f["units"] == ["HelmRelease default/echo"]
    }


def test_a_change_that_moves_pods_reports_the_placement_it_breaks(tmp_path: Path) -> None:
    """On four nodes of 4 cpu (examples/clusters/unschedulable.yaml), alpha going from 2 to 4
    pods of 3 cpu leaves zeta's 2-cpu pod nowhere: its unschedulable finding, in b.yaml, is
    what the commit of a.yaml causes. A change that moves no pod (an annotation) reports none."""
    cluster = (REPO / "examples" / "clusters" / "unschedulable.yaml").read_text()
    repo = _committed(
        tmp_path,
        {
            "a.yaml": manifest([workload("alpha", replicas=2, pod=requests(cpu="3"))]),
            "b.yaml": manifest([workload("zeta", replicas=1, pod=requests(cpu="2"))]),
            "cluster.yaml": cluster,
        },
    )
    code, report = _lint(repo, "--cluster", "cluster.yaml", "--changed", "a.yaml")
    assert (code, report["findings"]) == (0, [])
    _stage(repo, {"a.yaml": manifest([workload("alpha", replicas=4, pod=requests(cpu="3"))])})
    code, report = _lint(repo, "--cluster", "cluster.yaml", "--changed", "a.yaml")
    assert code == 1
    assert [(f["rule"], f["file"], _causes(f)) for f in report["findings"]] == [
        ("unschedulable", "b.yaml", [("a.yaml", "placement", "alpha")])
    ]
    _git(repo, "commit", "-q", "-m", "four")
    annotated = json.loads(manifest([workload("alpha", replicas=4, pod=requests(cpu="3"))]))
    annotated["metadata"]["annotations"] = {"team": "a"}
    _stage(repo, {"a.yaml": manifest([annotated])})
    code, report = _lint(repo, "--cluster", "cluster.yaml", "--changed", "a.yaml")
    assert (code, report["findings"]) == (0, [])
