"""Only what is new: finding fingerprints, ``lint --new-from-rev REV``, ``--baseline FILE`` and
``kaffinity baseline write`` (docs/adopting.md; issue 33).

The repositories are written by the tests: a ``k8s/`` folder of plain manifests at the root of
a git work tree, as GoogleCloudPlatform/microservices-demo keeps its ``kubernetes-manifests/``.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator, Draft202012Validator
from ruamel.yaml import YAML

from kaffinity.engine import LintResult
from kaffinity.findings import Finding, Severity, anchor_of, parse_path, stable_path
from kaffinity.k8s.model import ObjectRef
from kaffinity.load.source import format_path
from kaffinity.report.baseline import left_out
from kaffinity.report.fingerprint import fingerprints

from .kit import REPO, run, run_json, workload
from .test_reports import SARIF_SCHEMA

ZONE = "topology.kubernetes.io/zone"


def _exclusive(name: str, namespace: str) -> dict[str, Any]:
    """Required anti-affinity against tier=batch pods of every namespace on a zone key: an error
    (all-namespaces-anti-affinity)."""
    term = {"labelSelector": {"matchLabels": {"tier": "batch"}}, "namespaceSelector": {}, "topologyKey": ZONE}
    return workload(name, namespace, kind="StatefulSet", anti=[term])


def _budget(name: str, namespace: str, min_available: int | str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": name}}},
    }


def _objects(min_available: int | str = 1) -> list[dict[str, Any]]:
    """Old findings: an all-namespaces anti-affinity (error) and a budget that blocks every
    eviction of a one-replica Deployment (pdb-blocks-eviction)."""
    return [
        _exclusive("exclusive", "batch"),
        workload("reports", "reports", {"app": "reports", "tier": "batch"}),
        workload("web", "shop"),
        _budget("web", "shop", min_available),
    ]


def _reversed_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _reversed_keys(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_keys(item) for item in value]
    return value


def _yaml(objects: list[dict[str, Any]], indent: int = 2) -> str:
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.indent(mapping=indent, sequence=indent + 2, offset=indent)
    out = io.StringIO()
    yaml.dump_all(objects, out)
    return out.getvalue()


def _styles(objects: list[dict[str, Any]]) -> dict[str, str]:
    """The same objects written as people write them: block style with 2 or 4 spaces, flow style
    (JSON, one line per object), keys in reverse order, documents in reverse order, and ten lines
    inserted above everything."""
    return {
        "block": _yaml(objects),
        "indent-4": _yaml(objects, 4),
        "flow": "\n---\n".join(json.dumps(obj) for obj in objects) + "\n",
        "key-order": _yaml([_reversed_keys(obj) for obj in objects]),
        "document-order": _yaml(list(reversed(objects))),
        "ten-lines-above": "".join(f"# line {number}\n" for number in range(10)) + _yaml(objects),
    }


def _report(*args: str | Path) -> tuple[int, dict[str, Any]]:
    result = run("lint", "--no-config", "--no-cache", "--format", "json", *args)
    return result.returncode, json.loads(result.stdout)


def _prints(report: dict[str, Any]) -> Counter[tuple[str, str, str]]:
    """(rule, object name, fingerprint) of each finding."""
    return Counter(
        (finding["rule"], (finding["object"] or {}).get("name", ""), finding["fingerprint"])
        for finding in report["findings"]
    )


# --- fingerprints -----------------------------------------------------------------------------


def test_a_fingerprint_survives_reformatting_and_changes_with_the_value(tmp_path: Path) -> None:
    seen = {}
    for style, text in _styles(_objects()).items():
        path = tmp_path / style / "app.yaml"
        path.parent.mkdir()
        path.write_text(text)
        code, report = _report(path)
        assert code == 1, report
        seen[style] = _prints(report)
    block = seen["block"]
    assert {rule for rule, _, _ in block} >= {"all-namespaces-anti-affinity", "pdb-blocks-eviction"}
    for style, prints in seen.items():
        assert prints == block, style
    # The value the budget finding is about changes (1 -> "100%": it still blocks every eviction).
    changed = tmp_path / "changed.yaml"
    changed.write_text(_yaml(_objects(min_available="100%")))
    _, report = _report(changed)
    before = {(rule, name): mark for rule, name, mark in block}
    after = {(rule, name): mark for rule, name, mark in _prints(report)}
    assert set(after) == set(before)
    assert after[("pdb-blocks-eviction", "web")] != before[("pdb-blocks-eviction", "web")]
    assert (
        after[("all-namespaces-anti-affinity", "exclusive")]
        == before[("all-namespaces-anti-affinity", "exclusive")]
    )


def test_reordered_containers_keep_their_findings(tmp_path: Path) -> None:
    """A finding in the second container keeps its fingerprint when it becomes the first."""
    bad = {"name": "sidecar", "image": "x", "resources": {"limits": {"cpu": "2..5"}}}
    good = {"name": "app", "image": "x"}
    prints = []
    for containers in ([good, bad], [bad, good]):
        path = tmp_path / f"{containers[0]['name']}.yaml"
        path.write_text(_yaml([workload("web", "shop", pod={"containers": containers})]))
        _, report = _report(path)
        (finding,) = [f for f in report["findings"] if f["rule"] == "api-validation"]
        prints.append(finding["fingerprint"])
    assert prints[0] == prints[1]


def test_the_stable_path_names_list_items_by_their_key() -> None:
    data = {
        "spec": {
            "containers": [{"name": "a"}, {"name": "b", "ports": [{"containerPort": 80, "protocol": "TCP"}]}],
            "topologySpreadConstraints": [{"topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}],
            "tolerations": [{"key": "k"}],
            "volumes": [{"name": "v"}, {"name": "v"}],
        }
    }
    assert stable_path(data, "spec.containers[1].ports[0].containerPort") == (
        "spec.containers[name=b].ports[containerPort=80,protocol=TCP].containerPort"
    )
    assert stable_path(data, "spec.topologySpreadConstraints[0]") == (
        f"spec.topologySpreadConstraints[topologyKey={ZONE},whenUnsatisfiable=DoNotSchedule]"
    )
    assert stable_path(data, "spec.tolerations[0].key") == "spec.tolerations[0].key"  # atomic: the index
    assert stable_path(data, "spec.volumes[1]") == "spec.volumes[name=v#2]"  # a duplicate name: counted
    assert stable_path(data, "spec.missing[3].x") == "spec.missing[3].x"
    path = ("metadata", "annotations", "kaffinity.io/ignore")
    assert parse_path(format_path(path)) == path
    # The value decides where it is a field or a term; a whole pod spec or container does not.
    assert anchor_of(data, ("spec", "tolerations", 0)).endswith('\t{"key":"k"}')
    assert "\t" not in anchor_of(data, ("spec",))
    assert "\t" not in anchor_of(data, ("spec", "containers", 1))


def test_sarif_carries_the_fingerprints(tmp_path: Path) -> None:
    path = tmp_path / "app.yaml"
    path.write_text(_yaml(_objects()))
    _, report = _report(path)
    sarif = json.loads(run("lint", "--no-config", "--no-cache", "--format", "sarif", path).stdout)
    results = sarif["runs"][0]["results"]
    assert [result["partialFingerprints"] for result in results] == [
        {"kaffinity/v1": finding["fingerprint"]} for finding in report["findings"]
    ]
    if SARIF_SCHEMA.is_file():
        Draft7Validator(json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))).validate(sarif)


def test_two_alike_findings_are_counted_not_merged() -> None:
    """Two findings that hash alike (the same rule, object, path and value: a rule that says
    two things of one field) get occurrences 1 and 2; a baseline that knows one of them leaves
    the second shown."""
    ref = ObjectRef("apps/v1", "Deployment", "shop", "web")

    def made(line: int, message: str) -> Finding:
        return Finding(
            "app.yaml",
            line,
            3,
            "api-validation",
            message,
            Severity.ERROR,
            "schema",
            path="spec.replicas",
            object=ref,
            anchor="spec.replicas\t3",
        )

    findings = (made(5, "first"), made(5, "second"))
    marks = fingerprints(findings, frozenset())
    assert [mark.rpartition(":")[2] for mark in marks] == ["1", "2"]
    assert len({mark.rpartition(":")[0] for mark in marks}) == 1
    result = LintResult(findings, (), 1, 1, 0, False)
    digest = marks[0].rpartition(":")[0]
    kept = left_out(result, Counter({digest: 1}), "baseline", "b.json")
    assert [finding.message for finding in kept.findings] == ["second"]
    assert kept.new_only is not None and (kept.new_only.known, kept.new_only.fixed) == (1, 0)
    # Moved ten lines down, the same finding: the same fingerprint.
    assert fingerprints((replace(findings[0], line=15),), frozenset()) == marks[:1]


# --- a repository with old findings ---------------------------------------------------------


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        [
            "git",
            "-c",
            "user.name=kaffinity",
            "-c",
            "user.email=test@example.com",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.strip()


@pytest.fixture
def repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git work tree with old findings in k8s/app.yaml, one commit; the working directory;
    temporary folders under tmp_path/tmp (the test checks that REV's tree is removed)."""
    repo = tmp_path / "repo"
    (repo / "k8s").mkdir(parents=True)
    _git(repo, "init", "--quiet")
    (repo / "k8s" / "app.yaml").write_text(_yaml(_objects()))
    _git(repo, "add", ".")
    _git(repo, "commit", "--quiet", "-m", "old findings")
    monkeypatch.chdir(repo)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    return repo


def test_an_unchanged_repository_has_nothing_new(repository: Path) -> None:
    code, report = run_json("--no-cache", ".")
    assert code == 1
    old = len(report["findings"])
    assert old >= 2
    code, report = run_json("--no-cache", "--new-from-rev", "HEAD", ".")
    assert (code, report["findings"]) == (0, [])
    assert report["summary"]["new_only"] == {"against": "rev", "ref": "HEAD", "known": old, "fixed": 0}
    # Nothing written into the repository, no worktree added, REV's tree removed.
    assert _git(repository, "status", "--porcelain") == ""
    assert len(_git(repository, "worktree", "list").splitlines()) == 1
    assert os.listdir(tempfile.gettempdir()) == []

    written = run("baseline", "write", "--no-config", "--no-cache", ".")
    assert written.returncode == 0
    baseline = repository / ".kaffinity-baseline.json"
    data = json.loads(baseline.read_text())
    Draft202012Validator(json.loads((REPO / "schemas" / "baseline.schema.json").read_text())).validate(data)
    assert sum(entry["count"] for entry in data["findings"]) == old
    code, report = run_json("--no-cache", "--baseline", str(baseline), ".")
    assert (code, report["findings"]) == (0, [])
    assert report["summary"]["new_only"]["known"] == old


def _the_commit_that_adds_one(repository: Path) -> None:
    """Reorders the documents, re-indents them, puts ten lines above them and adds one
    all-namespaces anti-affinity (an error) in a new namespace."""
    objects = [*reversed(_objects()), _exclusive("exclusive", "jobs")]
    text = "".join(f"# {number}\n" for number in range(10)) + _yaml(objects, 4)
    (repository / "k8s" / "app.yaml").write_text(text)
    _git(repository, "commit", "--quiet", "-am", "one more")


def test_a_commit_that_adds_one_finding_and_moves_the_others(repository: Path) -> None:
    run("baseline", "write", "--no-config", "--no-cache", "-o", "baseline.json", ".")
    _the_commit_that_adds_one(repository)
    code, report = run_json("--no-cache", "--new-from-rev", "HEAD~1", ".")
    assert code == 1
    assert [(f["rule"], f["object"]["namespace"], f["object"]["name"]) for f in report["findings"]] == [
        ("all-namespaces-anti-affinity", "jobs", "exclusive")
    ]
    (finding,) = report["findings"]
    assert finding["line"] > 10
    code, by_baseline = run_json("--no-cache", "--baseline", "baseline.json", ".")
    assert code == 1
    assert by_baseline["findings"] == report["findings"]
    # Against the new commit itself: nothing is new.
    code, report = run_json("--no-cache", "--new-from-rev", "HEAD", ".")
    assert (code, report["findings"]) == (0, [])


def test_a_fixed_baseline_entry_is_noted(repository: Path) -> None:
    run("baseline", "write", "--no-config", "--no-cache", "-o", "baseline.json", ".")
    objects = _objects()[:3]  # the budget removed: its finding is fixed
    (repository / "k8s" / "app.yaml").write_text(_yaml(objects))
    code, report = run_json("--no-cache", "--baseline", "baseline.json", ".")
    assert (code, report["findings"]) == (0, [])
    assert report["summary"]["new_only"]["fixed"] == 1
    assert len(report["summary"]["notices"]) == 1


def test_the_config_names_the_baseline_inside_the_repository(repository: Path) -> None:
    run("baseline", "write", "--no-config", "--no-cache", "-o", "base/line.json", ".")
    (repository / ".kaffinity.yaml").write_text("baseline: base/line.json\n")
    result = run("lint", "--no-cache", "--format", "json", ".")
    assert result.returncode == 0
    assert json.loads(result.stdout)["summary"]["new_only"]["against"] == "baseline"
    (repository / ".kaffinity.yaml").write_text("cache: false\nbaseline: ../outside.json\n")
    result = run("lint", "--no-cache", ".")
    assert result.returncode == 2
    assert result.stderr.startswith(".kaffinity.yaml:2:1: error: baseline:")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("{not json", 1),
        ('{"version": 1, "fingerprints": "kaffinity/v1", "findings": {}}', 1),
        ('{\n  "version": 2,\n  "fingerprints": "kaffinity/v1",\n  "findings": []\n}', 2),
        ('{"version": 1,\n "fingerprints": "kaffinity/v0",\n "findings": []}', 2),
        ('{"version": 1, "fingerprints": "kaffinity/v1", "findings": [\n  {"fingerprint": "abc"}\n]}', 2),
        (
            '{"version": 1, "fingerprints": "kaffinity/v1", "findings": [\n'
            '  {"fingerprint": "0123456789abcdef0123456789abcdef",\n   "count": 0}\n]}',
            3,
        ),
    ],
)
def test_a_broken_baseline_is_a_usage_error_at_its_line(repository: Path, text: str, line: int) -> None:
    (repository / "baseline.json").write_text(text)
    result = run("lint", "--no-config", "--baseline", "baseline.json", ".")
    assert result.returncode == 2
    (said,) = result.stderr.splitlines()
    assert said.startswith(f"baseline.json:{line}:")
    assert result.stdout == ""


def test_a_missing_baseline_is_a_usage_error(repository: Path) -> None:
    result = run("lint", "--no-config", "--baseline", "nowhere.json", ".")
    assert result.returncode == 2
    assert result.stderr.splitlines() == ["kaffinity: error: nowhere.json: baseline file not found"]


@pytest.mark.parametrize("rev", ["no-such-branch", "HEAD~5", "--output=x", "0" * 40])
def test_a_bad_rev_is_a_usage_error(repository: Path, rev: str) -> None:
    result = run("lint", "--no-config", f"--new-from-rev={rev}", ".")
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("kaffinity: error: --new-from-rev")
    assert result.stdout == ""
    assert not (repository / "x").exists()


def test_new_from_rev_outside_a_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    (tmp_path / "app.yaml").write_text(_yaml(_objects()))
    result = run("lint", "--no-config", "--new-from-rev", "HEAD", ".")
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("kaffinity: error: --new-from-rev")


def test_a_file_outside_the_repository_is_all_new(repository: Path, tmp_path: Path) -> None:
    """A path outside the repository has no version at REV: REV's lint does not read it as it is
    now (its findings were counted as known, and hidden)."""
    outside = tmp_path / "outside.yaml"
    outside.write_text(_yaml([_exclusive("other", "jobs")]))
    code, report = run_json("--no-cache", "--new-from-rev", "HEAD", "k8s/app.yaml", str(outside))
    assert code == 1
    assert [f["object"]["name"] for f in report["findings"]] == ["other"]


def test_the_baseline_is_read_within_the_runs_limits(repository: Path) -> None:
    """A baseline larger than the default file-size limit is read when the command line raises
    the limit, as its error says."""
    written = run("baseline", "write", "--no-config", "--no-cache", ".")
    assert written.returncode == 0
    baseline = repository / ".kaffinity-baseline.json"
    size = len(baseline.read_bytes())
    small = f"--max-file-size={size // 2}"
    result = run("lint", "--no-config", "--no-cache", small, "--baseline", str(baseline), "k8s/app.yaml")
    assert result.returncode == 2
    assert result.stderr.startswith(".kaffinity-baseline.json:1:1: error: not a baseline")
    code, report = run_json(
        "--no-cache", f"--max-file-size={size * 2}", "--baseline", str(baseline), "k8s/app.yaml"
    )
    assert (code, report["findings"]) == (0, [])


def test_a_file_new_since_rev_is_all_new(repository: Path) -> None:
    (repository / "k8s" / "more.yaml").write_text(_yaml([_exclusive("other", "jobs")]))
    _git(repository, "add", ".")
    _git(repository, "commit", "--quiet", "-m", "a new file")
    code, report = run_json("--no-cache", "--new-from-rev", "HEAD~1", "k8s/more.yaml")
    assert code == 1
    assert [f["object"]["name"] for f in report["findings"]] == ["other"]


def test_the_real_command_line(repository: Path) -> None:
    """As a user runs it: a subprocess in the repository, the text report and its summary."""
    _the_commit_that_adds_one(repository)
    completed = run(
        "lint",
        "--no-config",
        "--no-cache",
        "--format",
        "concise",
        "--new-from-rev",
        "HEAD~1",
        ".",
        cwd=repository,
    )
    assert completed.returncode == 1
    lines = completed.stdout.splitlines()
    assert len(lines) == 2  # the new finding, and the summary that counts the others
    assert "[all-namespaces-anti-affinity] StatefulSet jobs/exclusive:" in lines[0]


def test_changed_files_against_rev_and_paths_from_elsewhere(
    repository: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As pre-commit runs it (--changed, the changed file only, the repository as context), and
    with the repository named by an absolute path from another folder: the same one new finding."""
    _the_commit_that_adds_one(repository)
    code, report = run_json("--no-cache", "--changed", "--new-from-rev", "HEAD~1", "k8s/app.yaml")
    assert code == 1
    assert [(f["object"]["namespace"], f["object"]["name"]) for f in report["findings"]] == [
        ("jobs", "exclusive")
    ]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, report = run_json("--no-cache", "--new-from-rev", "HEAD~1", str(repository))
    assert code == 1
    assert [(f["object"]["namespace"], f["object"]["name"]) for f in report["findings"]] == [
        ("jobs", "exclusive")
    ]


def test_file_level_findings_match_from_anywhere(
    repository: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A finding on no object (a suppression comment naming no rule) is known by its file,
    named from the repository's top: the same whether linted as ./k8s, k8s or an absolute path."""
    text = "# kaffinity: ignore[no-such-rule]\n" + _yaml([workload("web", "shop")])
    (repository / "k8s" / "comment.yaml").write_text(text)
    _git(repository, "add", ".")
    _git(repository, "commit", "--quiet", "-m", "a comment")
    code, report = run_json("--no-cache", ".")
    assert [f["object"] for f in report["findings"] if f["rule"] == "unused-suppression"] == [None]
    for target in ("./k8s", "k8s", str(repository / "k8s")):
        code, report = run_json("--no-cache", "--new-from-rev", "HEAD", target)
        assert (code, report["findings"]) == (0, []), target
    monkeypatch.chdir(tmp_path)
    code, report = run_json("--no-cache", "--new-from-rev", "HEAD", str(repository / "k8s"))
    assert (code, report["findings"]) == (0, [])


def test_a_baseline_of_the_whole_repository_over_a_part_fixes_nothing(repository: Path) -> None:
    """Linting one file, or a few rules, with the repository's baseline: the entries of the other
    files and rules are not found, and not fixed either."""
    (repository / "k8s" / "other.yaml").write_text(_yaml([_exclusive("other", "jobs")]))
    run("baseline", "write", "--no-config", "--no-cache", "-o", "baseline.json", ".")
    for args in (
        ("k8s/other.yaml",),
        ("--changed", "k8s/other.yaml"),
        ("--select", "pdb-blocks-eviction", "."),
    ):
        code, report = run_json("--no-cache", "--baseline", "baseline.json", *args)
        assert (code, report["findings"]) == (0, []), args
        assert report["summary"]["new_only"]["fixed"] == 0, args
    (repository / "k8s" / "other.yaml").unlink()
    code, report = run_json("--no-cache", "--baseline", "baseline.json", ".")
    assert report["summary"]["new_only"]["fixed"] == 1


def test_a_tracked_file_that_gitignore_names_is_linted_at_rev_too(repository: Path) -> None:
    """git never ignores a tracked file: REV's tree is tracked in its own index, so a .gitignore
    pattern that matches a committed manifest hides it neither now nor at REV."""
    (repository / ".gitignore").write_text("k8s/generated-*.yaml\n")
    (repository / "k8s" / "generated-app.yaml").write_text(_yaml([_exclusive("generated", "jobs")]))
    _git(repository, "add", "--force", ".")
    _git(repository, "commit", "--quiet", "-m", "a generated manifest, committed")
    code, report = run_json("--no-cache", ".")
    assert "generated" in {f["object"]["name"] for f in report["findings"] if f["object"]}
    code, report = run_json("--no-cache", "--new-from-rev", "HEAD", ".")
    assert (code, report["findings"]) == (0, [])
    code, report = run_json("--no-cache", "--changed", "--new-from-rev", "HEAD", "k8s/app.yaml")
    assert (code, report["findings"]) == (0, [])


def _object(repo: Path, data: bytes, kind: str = "blob") -> str:
    args = ["git", "hash-object", "-w", "--stdin", *(["-t", kind, "--literally"] if kind != "blob" else [])]
    return subprocess.run(args, cwd=repo, input=data, capture_output=True, check=True).stdout.decode().strip()


@pytest.mark.parametrize("twice", [True, False], ids=["a-path-listed-twice", "a-link-through-a-link"])
def test_a_hostile_tree_writes_nothing_outside_its_folder(tmp_path: Path, twice: bool) -> None:
    """A crafted tree (git fsck would refuse it; a clone can carry it): in ``p1/p2``, link
    ``a -> b/../../pwned`` reads as inside (``p1/pwned``) while ``b`` is missing, then
    ``b -> ../`` (``p1``, inside) makes ``a`` lead out of the folder; the same path ``a``
    listed again as a file was written through the link. Links are written last and checked
    together once all are there; a path is written once."""
    from kaffinity.load.revision import export

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)

    def tree(entries: list[tuple[str, str, str]]) -> str:
        data = b"".join(f"{mode} {name}".encode() + b"\0" + bytes.fromhex(oid) for mode, name, oid in entries)
        return _object(repo, data, "tree")

    inner = [("120000", "a", _object(repo, b"b/../../pwned")), ("120000", "b", _object(repo, b"../"))]
    if twice:
        inner.append(("100644", "a", _object(repo, b"owned\n")))
    root = tree([("40000", "p1", tree([("40000", "p2", tree(inner))]))])
    commit = (
        subprocess.run(
            ["git", "-c", "user.name=a", "-c", "user.email=a@b", "commit-tree", root, "-m", "x"],
            cwd=repo,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    dest = tmp_path / "rev"
    dest.mkdir()
    export(str(repo), commit, str(dest), 1 << 20)
    assert not (tmp_path / "pwned").exists()
    top = os.path.realpath(dest)
    for folder, folders, files in os.walk(dest):
        for name in (*folders, *files):
            assert os.path.realpath(os.path.join(folder, name)).startswith(top + os.sep)
