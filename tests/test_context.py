"""``lint --changed`` / ``--context`` / ``context:``: the rules read the whole set of manifests,
the report covers the changed files only (what pre-commit needs, as it passes changed files)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kaffinity.load.repository import repository_manifests
from tests.kit import findings, keys, lint_json, position, run, run_json

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

# Required affinity to the cache: satisfied only when cache.yaml is read too.
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

# Two budgets over the same pods: pdb-overlap reports the first with the second as related.
PDB = """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: %s}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: cache}}
"""

# Exists with values: kube-apiserver rejects it (api-validation, an error).
BROKEN_API = WEB.replace(
    "{matchLabels: {app: cache}}", "{matchExpressions: [{key: app, operator: Exists, values: [x]}]}"
)


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    return tmp_path


def _rules(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(finding["file"], finding["rule"]) for finding in report["findings"]]


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not on the PATH")


def test_without_context_the_lone_file_guesses(tmp_path: Path) -> None:
    (tmp_path / "web.yaml").write_text(WEB)
    report = lint_json("web.yaml", cwd=tmp_path, config=True).report
    assert _rules(report) == [("web.yaml", "affinity-no-match")]
    assert keys(report) == [("affinity-no-match", *position(WEB, "labelSelector"))]


@needs_git
def test_changed_reads_the_repository_and_reports_the_changed_file_only(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"web.yaml": WEB, "deploy/cache.yaml": CACHE, "deploy/pdb.yaml": PDB % "a"})
    # cache.yaml satisfies web's affinity; the lone PDB in the context is fine and not reported.
    done = lint_json("--changed", "web.yaml", cwd=repo, config=True)
    code, report, stderr = done.code, done.report, done.stderr
    assert (code, keys(report), stderr) == (0, [], "")
    assert report["summary"]["files"] == 1


@needs_git
def test_findings_in_context_files_are_not_reported(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"web.yaml": WEB, "cache.yaml": CACHE, "bad.yaml": BROKEN_API})
    code, report = run_json("--changed", "web.yaml", cwd=repo, config=True)
    assert (code, keys(report)) == (0, [])
    code, report = run_json("--changed", "web.yaml", "bad.yaml", cwd=repo, config=True)
    assert code == 1
    assert {file for file, _ in _rules(report)} == {"bad.yaml"}
    # bad.yaml's own finding: the values Exists forbids. The API server refuses the Deployment, so
    # its term (Exists selects its own pods) rolls nothing out: revision-unscoped gives way.
    assert keys(report) == [("api-validation", *position(BROKEN_API, "values"))]
    assert [f["severity"] for f in report["findings"]] == ["error"]


@needs_git
def test_a_context_finding_that_names_a_changed_file_is_reported(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"cache.yaml": CACHE, "a-pdb.yaml": PDB % "a", "b-pdb.yaml": PDB % "b"})
    whole = lint_json("a-pdb.yaml", "b-pdb.yaml", "cache.yaml", cwd=repo, config=True).report
    overlap = findings(whole, "pdb-overlap")
    assert overlap, whole["findings"]
    places = {overlap[0]["file"], *(place["file"] for place in overlap[0]["related"])}
    assert places == {"a-pdb.yaml", "b-pdb.yaml"}
    # Each at its budget's selector, the other's selector related.
    selector = position(PDB, "selector")
    assert keys(whole) == [("pdb-overlap", *selector), ("pdb-overlap", *selector)]
    assert [[(r["file"], r["line"], r["column"]) for r in f["related"]] for f in overlap] == [
        [("b-pdb.yaml", *selector)],
        [("a-pdb.yaml", *selector)],
    ]
    for changed in sorted(places):
        report = lint_json("--changed", changed, cwd=repo, config=True).report
        # Each budget's finding names the other: both involve the changed file.
        found = [(f["rule"], f["file"], f["line"], f["column"]) for f in report["findings"]]
        assert found == [
            ("pdb-overlap", "a-pdb.yaml", *selector),
            ("pdb-overlap", "b-pdb.yaml", *selector),
        ], changed
    # The budgets cover the changed workload's pods: their overlap is part of what the change
    # causes (issue 33), each finding with its because.
    report = lint_json("--changed", "cache.yaml", cwd=repo, config=True).report
    found = [
        (f["rule"], f["file"], [(c["file"], c["relation"]) for c in f["because"]]) for f in report["findings"]
    ]
    assert found == [
        ("pdb-overlap", "a-pdb.yaml", [("cache.yaml", "budget")]),
        ("pdb-overlap", "b-pdb.yaml", [("cache.yaml", "budget")]),
    ]


@needs_git
def test_gitignored_and_hidden_files_are_not_context(tmp_path: Path) -> None:
    repo = _repo(
        tmp_path,
        {
            ".gitignore": "rendered/\n",
            "web.yaml": WEB,
            "rendered/cache.yaml": CACHE,
            ".hidden/cache.yaml": CACHE,
        },
    )
    assert repository_manifests(str(repo)) is not None
    listed = {Path(path).resolve() for path in repository_manifests(str(repo)) or ()}
    assert listed == {(repo / "web.yaml").resolve()}
    report = lint_json("--changed", "web.yaml", cwd=repo, config=True).report
    assert _rules(report) == [("web.yaml", "affinity-no-match")]
    assert keys(report) == [("affinity-no-match", *position(WEB, "labelSelector"))]


@needs_git
def test_untracked_files_are_context_and_deleted_ones_are_not(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"web.yaml": WEB, "old.yaml": CACHE})
    (repo / "old.yaml").unlink()  # still in the index
    (repo / "new.yaml").write_text(CACHE)  # untracked, not ignored
    names = {Path(path).name for path in repository_manifests(str(repo)) or ()}
    assert names == {"web.yaml", "new.yaml"}
    done = lint_json("--changed", "web.yaml", cwd=repo, config=True)
    code, report, stderr = done.code, done.report, done.stderr
    assert (code, keys(report), stderr) == (0, [], "")


@needs_git
def test_the_repository_is_found_from_the_changed_file(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", {"web.yaml": WEB, "cache.yaml": CACHE})
    done = lint_json("--changed", str(repo / "web.yaml"), cwd=tmp_path, config=True)
    code, report, stderr = done.code, done.report, done.stderr
    assert (code, keys(report), stderr) == (0, [], "")


def test_no_context_says_so_once_and_skips_the_rules_that_would_guess(tmp_path: Path) -> None:
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    (outside / "web.yaml").write_text(WEB)
    (outside / "bad.yaml").write_text(BROKEN_API)
    done = lint_json("--changed", "web.yaml", "bad.yaml", cwd=outside, config=True)
    code, report, stderr = done.code, done.report, done.stderr
    if repository_manifests(str(outside)) is not None:
        pytest.skip("the temporary folder is inside a git work tree on this machine")
    assert len(stderr.splitlines()) == 1, stderr
    assert stderr.startswith("kaffinity: no context: not in a git repository")
    assert "rules that need every manifest" in stderr
    # Single-object rules still run; the graph rule that would guess does not.
    assert code == 1
    rules = {rule for _, rule in _rules(report)}
    assert "api-validation" in rules
    assert not rules & {"affinity-no-match", "replicas-not-spread"}
    assert ("bad.yaml", "api-validation", *position(BROKEN_API, "values")) in [
        (f["file"], f["rule"], f["line"], f["column"]) for f in report["findings"]
    ]
    completed = run("lint", "--format", "json", "web.yaml", "bad.yaml", cwd=outside)
    assert "affinity-no-match" in completed.stdout  # without --changed, the input is all there is


def test_explicit_context_and_config_context(tmp_path: Path) -> None:
    (tmp_path / "web.yaml").write_text(WEB)
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "cache.yaml").write_text(CACHE)
    (tmp_path / "deploy" / "bad.yaml").write_text(BROKEN_API)
    done = lint_json("--no-config", "--context", "deploy", "web.yaml", cwd=tmp_path, config=True)
    code, report, stderr = done.code, done.report, done.stderr
    assert (code, keys(report), stderr) == (0, [], "")
    (tmp_path / ".kaffinity.yaml").write_text("context: [deploy]\n")
    done = lint_json("web.yaml", cwd=tmp_path, config=True)
    code, report, stderr = done.code, done.report, done.stderr
    assert (code, keys(report), stderr) == (0, [], "")
    # A file named both on the command line and in the context is reported, once.
    code, report = run_json("deploy/bad.yaml", cwd=tmp_path, config=True)
    assert code == 1
    assert {file for file, _ in _rules(report)} == {"deploy/bad.yaml"}
    assert keys(report) == [("api-validation", *position(BROKEN_API, "values"))]
    assert report["summary"]["files"] == 1


def test_a_missing_context_path_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "web.yaml").write_text(WEB)
    completed = run("lint", "--no-config", "--context", "nowhere", "web.yaml", cwd=tmp_path)
    assert completed.returncode == 2
    assert completed.stderr.strip() == "kaffinity: error: nowhere: context path not found"


def test_an_unreadable_context_file_is_noted_not_reported(tmp_path: Path) -> None:
    (tmp_path / "web.yaml").write_text(WEB)
    (tmp_path / "ctx").mkdir()
    (tmp_path / "ctx" / "cache.yaml").write_text(CACHE)
    (tmp_path / "ctx" / "broken.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: [\n")
    done = lint_json("--no-config", "--context", "ctx", "web.yaml", cwd=tmp_path, config=True)
    code, report, stderr = done.code, done.report, done.stderr
    assert (code, keys(report)) == (0, [])
    assert stderr.startswith("kaffinity: note: 1 context file(s) could not be read")
    assert "ctx/broken.yaml:" in stderr


def test_a_broken_changed_file_still_exits_2(tmp_path: Path) -> None:
    (tmp_path / "ctx").mkdir()
    (tmp_path / "ctx" / "cache.yaml").write_text(CACHE)
    broken = "apiVersion: v1\nkind: Pod\nmetadata: [\n"
    (tmp_path / "web.yaml").write_text(broken)
    code, report = run_json("--no-config", "--context", "ctx", "web.yaml", cwd=tmp_path, config=True)
    assert code == 2
    assert _rules(report) == [("web.yaml", "parse-error")]
    # The flow sequence is never closed: the parser stops at the end of the stream.
    assert keys(report) == [("parse-error", broken.count("\n") + 1, 1)]


def test_stdin_with_context(tmp_path: Path) -> None:
    (tmp_path / "ctx").mkdir()
    (tmp_path / "ctx" / "cache.yaml").write_text(CACHE)
    completed = run(
        "lint", "--format", "json", "--no-config", "--context", "ctx", "-", stdin=WEB, cwd=tmp_path
    )
    assert (completed.returncode, keys(json.loads(completed.stdout))) == (0, [])


def test_refused_objects_are_read_from_api_validation_not_validated_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The rules that give way to api-validation on an object the API server refuses
    (Context.refused) read what the rule found when the engine ran it: the objects are validated
    once per run, not again for each context that asks."""
    from kaffinity.validate import documents
    from tests.kit import lint_text

    calls: list[int] = []
    validate = documents.validate_documents

    def counted(docs: Any, settings: Any) -> Any:
        calls.append(len(docs))
        return validate(docs, settings)

    monkeypatch.setattr(documents, "validate_documents", counted)
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 3\n"
        "  selector: {matchLabels: {app: api}}\n  template:\n    metadata: {labels: {app: web}}\n"
        "    spec: {containers: [{name: c, image: x}]}\n"
    )
    result = lint_text(text, select=("api-validation", "replicas-not-spread", "revision-unscoped"))
    assert [finding.rule for finding in result.findings] == ["api-validation"]
    assert calls == [1]
