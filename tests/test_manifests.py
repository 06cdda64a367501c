"""YAML that is not a Kubernetes manifest never fails a run; what git ignores is not walked. A
load error is always reported, whatever the selection says.

The repository in tests/data/repository holds trimmed real files (its SOURCES.md names them):
mkdocs.yml with mkdocs-material's Python tags, Docker Compose files with a duplicate key and a
tab, a GitHub workflow, an Ansible playbook, a Jinja-templated Azure template, an OpenAPI spec,
a Helm chart's Chart.yaml and values.yaml, a kustomization, and one Deployment.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from kaffinity.load import repository
from kaffinity.load.files import discover, load
from kaffinity.load.manifests import is_kustomization, looks_like_manifest, skip_reason_for_name
from kaffinity.load.read import read

from .kit import EXAMPLES, keys, position, run, run_json

REPOSITORY = Path(__file__).parent / "data" / "repository"
MANIFEST = REPOSITORY / "deploy" / "operator.yaml"
NOT_MANIFESTS = sorted(
    path
    for path in REPOSITORY.rglob("*")
    if path.is_file() and path.suffix in (".yaml", ".yml", ".json") and path != MANIFEST
)
#: Broken files that are clearly meant as manifests: each stays a parse-error at (line, column).
BROKEN_MANIFESTS = {
    "duplicate.yaml": ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: b\n", (5, 3)),
    "tab.yaml": ("apiVersion: v1\nkind: Pod\nmetadata:\n\tname: x\n", (4, 1)),
    "broken.json": ('{\n  "apiVersion": "v1",\n  "kind": "Pod",\n  "metadata": {"name": "x"\n', (5, 1)),
}
GOOD = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ok\n"
BROKEN = "apiVersion: v1\nkind: Pod\nmetadata: {name: x\n"  # parse-error at 4:1


def _summary(report: dict[str, object]) -> tuple[object, object]:
    summary = report["summary"]
    assert isinstance(summary, dict)
    return summary["files"], summary["skipped"]


# --- which files are manifests -----------------------------------------------------------------


def test_the_fixtures_fail_without_the_rule() -> None:
    """The fixtures are files users reported as wrongly failing: parsed as manifests, three of them
    are errors (mkdocs.yml's ``!!python/name:`` tags are plain strings to go-yaml v2, as kubectl
    reads them: resolve() keeps an unknown tag's text)."""
    broken = sorted(
        path.relative_to(REPOSITORY).as_posix()
        for path in NOT_MANIFESTS
        if read(str(path), manifests_only=False).problems
    )
    assert broken == ["azure/bastion.json", "compose.yml", "local/stack.yml"]


@pytest.mark.parametrize("path", NOT_MANIFESTS, ids=lambda path: path.relative_to(REPOSITORY).as_posix())
def test_each_non_manifest_is_skipped_by_its_content_alone(path: Path, tmp_path: Path) -> None:
    """Under a name no rule knows, the content decides (but a kustomization is a Kubernetes-shaped
    document: only its name keeps it out of the objects)."""
    assert read(str(path)).skipped is not None
    renamed = tmp_path / f"renamed{path.suffix}"
    shutil.copyfile(path, renamed)
    file = read(str(renamed))
    if is_kustomization(str(path)):
        assert file.skipped is None and [doc.data["kind"] for doc in file.documents] == ["Kustomization"]
    else:
        assert file.skipped is not None and file.problems == () and file.documents == ()


def test_the_names_that_are_skipped_without_reading(tmp_path: Path) -> None:
    (tmp_path / "chart").mkdir()
    (tmp_path / "chart" / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    names = {
        "mkdocs.yml": "mkdocs configuration",
        "docker-compose.yml": "Docker Compose file",
        "docker-compose.override.yaml": "Docker Compose file",
        "compose.yaml": "Docker Compose file",
        "kustomization.yaml": "kustomization",
        "Kustomization": "kustomization",
        ".pre-commit-config.yaml": "pre-commit configuration",
        ".gitlab-ci.yml": "GitLab CI configuration",
        ".github/workflows/ci.yaml": "GitHub workflow",
        "package.json": "npm package",
        "chart/Chart.yaml": "Helm chart metadata",
        "chart/values.yaml": "Helm chart values",
        "chart/values-production.yaml": "Helm chart values",
    }
    for name, reason in names.items():
        assert skip_reason_for_name(str(tmp_path / name)) == reason, name
    # A values.yaml outside a chart, or a manifest named like a workflow elsewhere: the content decides.
    for name in ("values.yaml", "deploy/composer.yaml", "workflows/ci.yaml", "deployment.yaml"):
        assert skip_reason_for_name(str(tmp_path / name)) is None, name


def test_a_folder_with_non_manifests_is_clean() -> None:
    """`kaffinity lint .` on the repository: the Deployment is linted, the rest skipped, exit 0.
    Read as written: the trimmed rook-ceph chart's dependency is not vendored, so rendering it
    is a finding of its own (the chart dependency tests)."""
    code, report = run_json("--no-render", str(REPOSITORY))
    assert code == 0, report
    assert keys(report) == []
    # Walked: .github/ is hidden, so 8 of the 10 other files are seen (and skipped).
    assert _summary(report) == (1, len(NOT_MANIFESTS) - 1)
    assert report["summary"]["documents"] == 1


def test_files_named_explicitly_are_skipped_too() -> None:
    """pre-commit (`types: [yaml]`) names every changed YAML file, hidden ones included."""
    completed = run("lint", "--no-config", "--no-render", *map(str, NOT_MANIFESTS), str(MANIFEST))
    assert completed.returncode == 0, completed.stdout
    assert (
        completed.stdout
        == f"No problems found in 1 file; {len(NOT_MANIFESTS)} other YAML/JSON files skipped.\n"
    )


def test_a_python_tag_is_a_plain_string(tmp_path: Path) -> None:
    """``!!python/name:`` constructs nothing: go-yaml v2 (what kubectl reads with) keeps an unknown
    tag's text, so the Pod is named ``x`` and linted; no code runs."""
    (tmp_path / "python-tag.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: !!python/name:os.system x\n"
    )
    code, report = run_json(str(tmp_path))
    assert code in (0, 1)
    assert all(f["rule"] != "parse-error" for f in report["findings"])
    assert keys(report) == []  # a bare Pod named x: nothing to find, no parse-error at the tag
    assert report["summary"]["documents"] == 1


@pytest.mark.parametrize("name", sorted(BROKEN_MANIFESTS))
def test_a_broken_manifest_is_still_a_parse_error(tmp_path: Path, name: str) -> None:
    text, (line, column) = BROKEN_MANIFESTS[name]
    (tmp_path / name).write_text(text)
    code, report = run_json(str(tmp_path))
    assert code == 2
    assert [(f["rule"], f["line"], f["column"]) for f in report["findings"]] == [
        ("parse-error", line, column)
    ]
    assert _summary(report) == (1, 0)


def test_a_chart_template_keeps_its_warning_and_one_made_of_includes_is_skipped(tmp_path: Path) -> None:
    """Templates with manifest keys are helm-template warnings; a template that is only
    `{{ include }}` calls (rook's cluster-rbac.yaml) shows no manifest and is skipped."""
    template = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n"
    (tmp_path / "deployment.yaml").write_text(template)
    (tmp_path / "rbac.yaml").write_text(
        "{{- if ne .Release.Namespace .Values.operatorNamespace -}}\n"
        '{{ include "library.rbac" . }}\n{{- end }}\n'
    )
    code, report = run_json(str(tmp_path))
    assert code == 0
    assert [(Path(f["file"]).name, f["rule"]) for f in report["findings"]] == [
        ("deployment.yaml", "helm-template")
    ]
    assert keys(report) == [("helm-template", *position(template, "{{"))]  # the first template
    assert report["findings"][0]["severity"] == "info"
    assert _summary(report) == (1, 1)


def test_stdin_is_always_meant_as_manifests() -> None:
    compose = "services:\n\tweb: {}\n"
    completed = run("lint", "--no-config", "-", stdin=compose)
    assert completed.returncode == 2
    assert completed.stdout.startswith("<stdin>:2:1: error [parse-error]")
    code, report = run_json("-", stdin=compose)
    assert code == 2
    assert keys(report) == [("parse-error", *position(compose, "\t"))]  # the tab YAML forbids
    assert report["findings"][0]["file"] == "<stdin>"
    clean = run("lint", "--no-config", "-", stdin="services:\n  web: {}\n")
    assert clean.returncode == 0


def test_an_empty_list_is_a_manifest(tmp_path: Path) -> None:
    (tmp_path / "list.yaml").write_text("apiVersion: v1\nkind: List\nitems: []\n")
    (tmp_path / "list.json").write_text(
        '{\n    "apiVersion": "v1",\n    "items": [],\n    "kind": "List"\n}\n'
    )
    assert [file.skipped for file in load([str(tmp_path)])] == [None, None]


@pytest.mark.parametrize(
    ("text", "manifest"),
    [
        ("apiVersion: apps/v1\nkind: Deployment\nspec: {\n", True),
        ('"apiVersion": v1\n"kind": Pod\n', True),
        ('{"apiVersion": "v1", "kind": "Pod", "metadata": {', True),
        ('{"kind":"Pod","apiVersion":"v1"', True),
        ("---\nfoo: 1\n---\napiVersion: v1\nkind: ConfigMap\ndata: [\n", True),
        ('kind: NetworkPolicy\napiVersion: {{ template "minio.apiVersion" . }}\n', True),  # a chart template
        ("apiVersion: v2\nname: rook-ceph\n", False),  # Chart.yaml
        ("swagger: '2.0'\ndefinitions:\n  x:\n    kind: HTTPProxy\n    apiVersion: v1\n", False),
        ('{\n  "resources": [\n    {\n      "apiVersion": "2019-01-01",\n      "kind": "StorageV2"\n', False),
        ("- name: deploy\n  k8s:\n    definition:\n      apiVersion: v1\n      kind: Pod\n", False),
        ("apiVersion:\nkind:\n", False),
        ('properties:\n  "apiVersion": {"type": "string"}\n  "kind": {"type": "string"}\n', False),
    ],
)
def test_looks_like_manifest(text: str, manifest: bool) -> None:
    assert looks_like_manifest(text) is manifest


def test_the_cluster_file_is_read_whatever_it_holds(tmp_path: Path) -> None:
    """A cluster file is not a manifest by design: it is never skipped."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("nodes: [\n")
    completed = run("lint", "--no-config", "--cluster", str(cluster), str(MANIFEST))
    assert completed.returncode == 2
    assert f"{cluster}:2:1: error [parse-error]" in completed.stdout
    # The flow sequence is never closed: the parser stops at the end of the stream.
    code, report = run_json("--cluster", str(cluster), str(MANIFEST))
    assert code == 2
    assert keys(report) == [("parse-error", "nodes: [\n".count("\n") + 1, 1)]
    assert report["findings"][0]["file"] == str(cluster)


# --- what git ignores -------------------------------------------------------------------------


@pytest.fixture
def git_repository(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("build/\n*.rendered.yaml\n")
    (tmp_path / ".git" / "info" / "exclude").write_text("scratch.yaml\n")
    for name in ("build/web.yaml", "app/web.rendered.yaml", "scratch.yaml"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(BROKEN)
    (tmp_path / "app" / "web.yaml").write_text(GOOD)
    return tmp_path


def _linted(report: dict[str, object], root: Path) -> list[tuple[str, str]]:
    findings = report["findings"]
    assert isinstance(findings, list)
    return sorted(
        ((root / f["file"]).resolve().relative_to(root.resolve()).as_posix(), f["rule"]) for f in findings
    )


def test_what_git_ignores_is_not_walked(git_repository: Path) -> None:
    code, report = run_json(".", cwd=git_repository)
    assert (code, keys(report), _summary(report)) == (0, [], (1, 0))
    code, report = run_json(str(git_repository / "app"))  # a folder inside the work tree
    assert (code, keys(report)) == (0, [])


def test_ignored_files_named_explicitly_are_read(git_repository: Path) -> None:
    code, report = run_json("app", "scratch.yaml", "build", cwd=git_repository)
    assert code == 2
    assert _linted(report, git_repository) == [
        ("build/web.yaml", "parse-error"),
        ("scratch.yaml", "parse-error"),
    ]
    # Each where BROKEN's flow mapping is left open: the end of the stream.
    end = ("parse-error", BROKEN.count("\n") + 1, 1)
    assert keys(report) == [end, end]


@pytest.mark.parametrize("how", ["--no-gitignore", "config"])
def test_no_gitignore(git_repository: Path, how: str) -> None:
    if how == "config":
        (git_repository / ".kaffinity.yaml").write_text("gitignore: false\n")
        completed = run("lint", "--format", "json", ".", cwd=git_repository)
    else:
        completed = run("lint", "--format", "json", "--no-config", "--no-gitignore", ".", cwd=git_repository)
    assert completed.returncode == 2, completed.stderr
    report = json.loads(completed.stdout)
    assert _linted(report, git_repository) == [
        ("app/web.rendered.yaml", "parse-error"),
        ("build/web.yaml", "parse-error"),
        ("scratch.yaml", "parse-error"),
    ]
    # Each where BROKEN's flow mapping is left open: the end of the stream.
    assert keys(report) == [("parse-error", BROKEN.count("\n") + 1, 1)] * 3


def test_outside_a_work_tree_every_file_is_walked(tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "web.yaml").write_text(BROKEN)
    (tmp_path / ".gitignore").write_text("build/\n")  # no repository: nothing reads it
    assert list(discover([str(tmp_path)])) == [str(tmp_path / "build" / "web.yaml")]


def test_git_is_asked_once_per_folder_walked_and_never_for_files(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def git(cwd: str, *args: str) -> str | None:
        calls.append(cwd)
        return None

    monkeypatch.setattr(repository, "_git", git)
    list(discover([str(MANIFEST), str(REPOSITORY / "mkdocs.yml")]))
    assert calls == []
    list(discover([str(REPOSITORY), str(EXAMPLES / "parse-error")]))
    assert calls == [str(REPOSITORY), str(EXAMPLES / "parse-error")]
    list(discover([str(REPOSITORY)], gitignore=False, seen=set()))
    assert len(calls) == 2


# --- point 5a: nothing hides a load error -----------------------------------------------------


@pytest.fixture
def broken_and_good(tmp_path: Path) -> Path:
    (tmp_path / "bad.yaml").write_text(BROKEN)
    (tmp_path / "good.yaml").write_text(GOOD)
    return tmp_path


_HIDING = {
    "select another rule": ("--select", "revision-unscoped"),
    "ignore parse-error": ("--ignore", "parse-error"),
    "ignore its category": ("--ignore", "input"),
}


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "markdown"])
@pytest.mark.parametrize("hiding", sorted(_HIDING))
def test_a_parse_error_is_reported_whatever_the_selection(
    broken_and_good: Path, fmt: str, hiding: str
) -> None:
    completed = run("lint", "--no-config", "--format", fmt, *_HIDING[hiding], str(broken_and_good))
    assert completed.returncode == 2
    out = completed.stdout
    bad = str(broken_and_good / "bad.yaml")
    if fmt == "json":
        findings = json.loads(out)["findings"]
        assert [(f["rule"], f["severity"], f["file"], f["line"]) for f in findings] == [
            ("parse-error", "error", bad, 4)
        ]
    elif fmt == "sarif":
        sarif_run = json.loads(out)["runs"][0]
        (result,) = sarif_run["results"]
        assert (result["ruleId"], result["level"]) == ("parse-error", "error")
        assert sarif_run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "parse-error"
    elif fmt == "github":
        assert out.startswith(f"::error file={bad},line=4,col=1,title=kaffinity [parse-error]::")
    elif fmt == "markdown":
        assert "`parse-error`" in out and "could not be read or parsed" in out
    else:
        assert out.startswith(f"{bad}:4:1: error [parse-error]")


def test_missing_paths_are_reported_whatever_the_selection(broken_and_good: Path) -> None:
    missing = broken_and_good / "missing.yaml"
    code, report = run_json("--ignore", "parse-error", str(broken_and_good / "good.yaml"), str(missing))
    assert code == 2
    assert [(f["rule"], f["file"]) for f in report["findings"]] == [("parse-error", str(missing))]
    assert keys(report) == [("parse-error", None, None)]  # no line in a file that is not there


def test_severity_and_suppressions_do_not_hide_a_parse_error(broken_and_good: Path) -> None:
    (broken_and_good / ".kaffinity.yaml").write_text("severity:\n  parse-error: info\nignore: [input]\n")
    (broken_and_good / "bad.yaml").write_text(BROKEN + "# kaffinity: ignore[parse-error]\n")
    completed = run("lint", "--format", "json", ".", cwd=broken_and_good)
    assert completed.returncode == 2
    findings = json.loads(completed.stdout)["findings"]
    assert [(f["rule"], f["severity"], f["line"]) for f in findings] == [("parse-error", "error", 5)]


def test_a_cluster_file_error_is_reported_whatever_the_selection(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(BROKEN.replace("Pod", "Node"))
    code, report = run_json("--select", "unschedulable", "--cluster", str(cluster), str(MANIFEST))
    assert code == 2
    assert [(f["rule"], f["file"], f["line"]) for f in report["findings"]] == [
        ("parse-error", str(cluster), 4)
    ]


@pytest.mark.parametrize("command", ["expand", "graph", "place", "fix"])
def test_every_command_says_why_it_exits_2(broken_and_good: Path, command: str) -> None:
    cluster = ("--cluster", str(EXAMPLES / "clusters" / "topology.yaml")) if command == "place" else ()
    completed = run(command, "--no-config", *cluster, str(broken_and_good))
    assert completed.returncode == 2, completed.stdout + completed.stderr
    assert f"{broken_and_good / 'bad.yaml'}:4:1: error [parse-error]" in completed.stderr


@pytest.mark.parametrize("command", ["expand", "graph", "fix"])
def test_other_commands_skip_non_manifests_too(command: str) -> None:
    as_written = ("--no-render",) if command == "graph" else ()  # the chart: as above
    completed = run(command, "--no-config", *as_written, str(REPOSITORY))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "parse-error" not in completed.stderr
