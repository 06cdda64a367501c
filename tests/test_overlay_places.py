"""Where findings of a base and overlays are shown (issue 33, item 5): a related place on a value
an overlay patch set is shown in the patch, as the finding's own place is; the files of a
repository linted as ``.`` are named as ruff names them, relative to the working folder without
``./``, in every format, and a finding in a patch keeps its code frame.

The repository is the base + overlays layout of kustomize's docs (``base/`` with the resources,
``overlays/prod/`` with a kustomization and a strategic-merge patch), as
argoproj/argocd-example-apps' kustomize-guestbook and flux2-kustomize-helm-example lay it out.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kaffinity.repo.engines import kustomize_engine

from .kit import line_of, lint_json, position, run

needs_kustomize = pytest.mark.skipif(
    kustomize_engine() is None, reason="neither kustomize nor kubectl on the PATH"
)

DEPLOY = """\
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
      containers:
        - name: web
          image: nginx:1.27
"""

PDB = """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 1
  selector:
    matchLabels: {app: web}
"""

# prod runs one replica (so the base's budget allows no eviction) and a spread whose maxSkew
# the API server refuses: both values are the patch's.
PATCH = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  template:
    spec:
      topologySpreadConstraints:
        - maxSkew: 0
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: DoNotSchedule
          labelSelector:
            matchLabels: {app: web}
"""


def repository(root: Path) -> Path:
    files = {
        "base/deploy.yaml": DEPLOY,
        "base/pdb.yaml": PDB,
        "base/kustomization.yaml": "resources: [deploy.yaml, pdb.yaml]\n",
        "overlays/prod/kustomization.yaml": (
            "resources: [../../base]\nnamespace: prod\npatches:\n  - path: patch.yaml\n"
        ),
        "overlays/prod/patch.yaml": PATCH,
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@needs_kustomize
def test_a_related_place_on_a_value_the_overlay_set_is_in_the_patch(tmp_path: Path) -> None:
    root = repository(tmp_path)
    done = lint_json(".", cwd=root)
    assert done.code == 1, done.stderr
    report = done.report
    (budget,) = [finding for finding in report["findings"] if finding["rule"] == "pdb-blocks-eviction"]
    assert (budget["file"], budget["line"]) == ("base/pdb.yaml", line_of(PDB, "minAvailable"))
    (replicas,) = budget["related"]
    assert replicas["path"] == "spec.replicas"
    # The patch set replicas: 1; the base's replicas: 3 is not what the budget counted.
    assert (replicas["file"], replicas["line"], replicas["column"]) == (
        "overlays/prod/patch.yaml",
        *position(PATCH, "replicas"),
    )
    completed = run("lint", "--no-config", "--format", "sarif", ".", cwd=root)
    assert completed.returncode == 1, completed.stderr
    sarif = json.loads(completed.stdout)
    (result,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "pdb-blocks-eviction"]
    (related,) = result["relatedLocations"]
    assert related["physicalLocation"]["artifactLocation"]["uri"] == "overlays/prod/patch.yaml"
    assert related["physicalLocation"]["region"]["startLine"] == line_of(PATCH, "replicas")


Location = tuple[str, int, int]


def _locations(fmt: str, out: str) -> set[Location]:
    """Every location a report names, (file, line, column): findings and related places (the
    ``github`` format shows no related places)."""
    if fmt == "json":
        report: Any = json.loads(out)
        return {(f["file"], f["line"], f["column"]) for f in report["findings"]} | {
            (r["file"], r["line"], r["column"]) for f in report["findings"] for r in f["related"]
        }
    if fmt == "sarif":
        results = json.loads(out)["runs"][0]["results"]
        return {
            (
                location["physicalLocation"]["artifactLocation"]["uri"],
                location["physicalLocation"]["region"]["startLine"],
                location["physicalLocation"]["region"]["startColumn"],
            )
            for result in results
            for location in (*result["locations"], *result.get("relatedLocations", ()))
        }
    if fmt == "github":
        found = re.findall(r"^::\w+ file=([^,]+),line=(\d+),col=(\d+),", out, re.MULTILINE)
    else:
        found = re.findall(r"^(?:    note: )?([^\s:]+\.yaml):(\d+):(\d+):", out, re.MULTILINE)
    return {(file, int(line), int(column)) for file, line, column in found}


@needs_kustomize
@pytest.mark.parametrize("target", [".", "./", "./overlays/prod", "overlays/prod"])
@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_files_are_named_relative_to_the_working_folder(tmp_path: Path, target: str, fmt: str) -> None:
    root = repository(tmp_path)
    # The budget in the base, the spread's maxSkew in the patch, and (related to the budget) the
    # patch's replicas, where the formats show related places.
    expected = {
        ("base/pdb.yaml", *position(PDB, "minAvailable")),
        ("overlays/prod/patch.yaml", *position(PATCH, "maxSkew")),
    }
    if fmt != "github":
        expected.add(("overlays/prod/patch.yaml", *position(PATCH, "replicas")))
    completed = run("lint", "--no-config", "--format", fmt, target, cwd=root)
    assert completed.returncode == 1, completed.stderr
    assert _locations(fmt, completed.stdout) == expected


@needs_kustomize
@pytest.mark.parametrize("target", [".", "./overlays/prod", "overlays/prod"])
def test_a_finding_in_a_patch_shows_its_code_frame(tmp_path: Path, target: str) -> None:
    root = repository(tmp_path)
    completed = run("lint", "--no-config", "--format", "text", target, cwd=root)
    assert completed.returncode == 1, completed.stderr
    out = completed.stdout.splitlines()
    line, column = position(PATCH, "maxSkew")
    found = [
        i for i, text in enumerate(out) if text.startswith(f"overlays/prod/patch.yaml:{line}:{column}: ")
    ]
    assert found
    for at in found:  # each: the patch's line, then the caret under its column
        assert out[at + 1] == f"  {line} | {PATCH.splitlines()[line - 1]}"
        assert out[at + 2].index("^") == len(f"  {line} | ") + column - 1


def test_a_plain_folder_linted_as_dot_names_its_files_without_dot_slash(tmp_path: Path) -> None:
    (tmp_path / "apps").mkdir()
    # A whole Deployment: its selector matches its template's labels (else api-validation too).
    spread = PATCH.replace(
        "spec:\n  replicas: 1\n", "spec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n"
    ).replace("  template:\n    spec:\n", "  template:\n    metadata: {labels: {app: web}}\n    spec:\n")
    (tmp_path / "apps" / "web.yaml").write_text(spread)
    for target in (".", "./apps", "./apps/web.yaml"):
        for fmt in ("text", "json", "sarif", "github"):
            completed = run("lint", "--no-config", "--no-render", "--format", fmt, target, cwd=tmp_path)
            assert completed.returncode == 1, completed.stderr
            at = ("apps/web.yaml", *position(spread, "maxSkew"))
            assert _locations(fmt, completed.stdout) == {at}, (target, fmt)
