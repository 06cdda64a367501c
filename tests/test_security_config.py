"""Issue 31: a checkout cannot widen what kaffinity does through its configuration.

``.kaffinity.yaml`` may lower a limit, never raise it (only ``--limit`` and ``KAFFINITY_LIMITS``
do); its paths stay inside the repository (symlinks followed) while the same paths on the
command line are read; discovery stops at the work tree's top and ignores another user's
config; file names after ``--pre-commit`` are never options.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kaffinity.cli.precommit import split
from kaffinity.config import LIMIT_NAMES, ConfigError, find_config, load_settings, parse_limits, with_limits
from kaffinity.config import Settings as _Settings
from kaffinity.load.parse import DEFAULT_LIMITS
from kaffinity.load.resources import schema

from .kit import run

#: A manifest with one warning (revision-unscoped): exit 1 under ``fail-on: warning``, 0 otherwise.
WARNS = (
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n"
    "  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n"
    "    spec:\n      topologySpreadConstraints:\n"
    "        - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule,\n"
    "           labelSelector: {matchLabels: {app: web}}}\n"
    "      containers: [{name: web, image: nginx}]\n"
)
POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: web, image: web}]\n"
CLUSTER = "apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {kubernetes.io/hostname: n1}}\n"


def _repository(path: Path) -> Path:
    """A git work tree (a real one when git is installed, else just its ``.git`` folder)."""
    path.mkdir(parents=True, exist_ok=True)
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(path)], check=True, capture_output=True, timeout=60)
    else:
        (path / ".git").mkdir()
    return path


def _nested(depth: int) -> str:
    return (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\ndata: " + "[" * depth + "]" * depth + "\n"
    )


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ": error: " in line]


# Limits ----------------------------------------------------------------------------------------

_RAISED = {
    "file-size": "64Mi",
    "depth": 401,
    "alias-nodes": 1_000_001,
    "pods": 150_001,
    "nodes": 15_001,
    "findings": 100_001,
}


def test_the_schema_maxima_are_the_defaults() -> None:
    properties = schema("config.schema.json")["properties"]["limits"]["properties"]
    assert set(properties) == set(LIMIT_NAMES) == set(_RAISED)
    for name, field in LIMIT_NAMES.items():
        integer = properties[name] if "type" in properties[name] else properties[name]["oneOf"][0]
        assert integer["maximum"] == getattr(DEFAULT_LIMITS, field), name


@pytest.mark.parametrize(
    ("name", "value"), [*_RAISED.items(), ("file-size", 33554433), ("file-size", "33Mi")]
)
def test_a_config_that_raises_a_limit_is_an_error_at_its_line(
    tmp_path: Path, name: str, value: object
) -> None:
    (tmp_path / "p.yaml").write_text(POD)
    (tmp_path / ".kaffinity.yaml").write_text(f"fail-on: warning\nlimits:\n  {name}: {value}\n")
    completed = run("lint", "p.yaml", cwd=tmp_path)
    assert completed.returncode == 2 and completed.stdout == ""
    [error] = _errors(completed.stderr)
    assert error.startswith(f".kaffinity.yaml:3:3: error: limits.{name}: {value} is more than the default")
    assert f"--limit {name}={value}" in error


def test_a_config_may_lower_every_limit(tmp_path: Path) -> None:
    config = tmp_path / ".kaffinity.yaml"
    config.write_text(
        "limits: {file-size: 1Mi, depth: 10, alias-nodes: 10, pods: 10, nodes: 10, findings: 10}\n"
    )
    limits = load_settings(str(config), [], []).limits
    assert (limits.file_size, limits.depth, limits.alias_nodes) == (1 << 20, 10, 10)
    assert (limits.pods, limits.nodes, limits.findings) == (10, 10, 10)
    config.write_text("limits: {file-size: 32Mi, depth: 400, pods: 150000}\n")  # the defaults: allowed
    assert load_settings(str(config), [], []).limits == DEFAULT_LIMITS


def test_a_config_asks_for_at_most_one_process_per_core(tmp_path: Path) -> None:
    from kaffinity.load.parallel import default_jobs

    config = tmp_path / ".kaffinity.yaml"
    config.write_text("jobs: 1000\n")
    assert load_settings(str(config), [], []).jobs == default_jobs()
    config.write_text("jobs: 1\n")
    assert load_settings(str(config), [], []).jobs == 1


def test_the_command_line_and_the_environment_raise_every_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    raised = {"file-size": "64Mi", "depth": "10000", "alias-nodes": "5000000", "pods": "300000"}
    monkeypatch.setenv("KAFFINITY_LIMITS", ",".join(f"{k}={v}" for k, v in raised.items()))
    limits = with_limits(_Settings(), ["nodes=20000", "findings=200000,pods=400000"]).limits
    assert (limits.file_size, limits.depth, limits.alias_nodes) == (64 << 20, 10_000, 5_000_000)
    assert (limits.pods, limits.nodes, limits.findings) == (400_000, 20_000, 200_000)  # --limit wins


@pytest.mark.parametrize(
    ("source", "value", "message"),
    [
        ("--limit", "speed=3", "--limit: 'speed=3' is not NAME=VALUE with NAME one of file-size, depth"),
        ("--limit", "depth=10001", "--limit: depth: '10001' is not a whole number from 1 to 10000"),
        ("--limit", "pods=0", "--limit: pods: '0' is not a whole number from 1 to"),
        ("--limit", "file-size=lots", "--limit: file-size: 'lots' is not a size such as 64Mi"),
        ("KAFFINITY_LIMITS", "pods=x", "KAFFINITY_LIMITS: pods: 'x' is not a whole number from 1 to"),
    ],
)
def test_a_bad_limit_is_a_usage_error(tmp_path: Path, source: str, value: str, message: str) -> None:
    (tmp_path / "p.yaml").write_text(POD)
    if source == "--limit":
        completed = run("lint", "--no-config", "--limit", value, "p.yaml", cwd=tmp_path)
    else:
        env = {**os.environ, "KAFFINITY_LIMITS": value}
        completed = run("lint", "--no-config", "p.yaml", cwd=tmp_path, env=env)
    assert completed.returncode == 2 and completed.stdout == ""
    assert completed.stderr.startswith(f"kaffinity: error: {message}"), completed.stderr
    with pytest.raises(ConfigError):
        parse_limits([value], source)


def test_a_raised_limit_reads_what_the_default_refuses(tmp_path: Path) -> None:
    """500 levels of nesting: past the default depth (400) and a config's 300; read with the
    limit raised by ``--limit`` or ``KAFFINITY_LIMITS``, whatever the config says."""
    (tmp_path / "deep.yaml").write_text(_nested(500))
    (tmp_path / ".kaffinity.yaml").write_text("limits: {depth: 300}\n")

    def parse_errors(*options: str, env: dict[str, str] | None = None) -> list[str]:
        completed = run("lint", "--format", "json", *options, "deep.yaml", cwd=tmp_path, env=env)
        return [f["message"] for f in json.loads(completed.stdout)["findings"] if f["rule"] == "parse-error"]

    assert parse_errors() == ["nesting deeper than 300 levels (limits: depth)"]
    assert parse_errors("--no-config") == ["nesting deeper than 400 levels (limits: depth)"]
    assert parse_errors("--limit", "depth=600") == []
    assert parse_errors(env={**os.environ, "KAFFINITY_LIMITS": "depth=600"}) == []
    assert parse_errors("--limit", "depth=450", env={**os.environ, "KAFFINITY_LIMITS": "depth=600"}) == [
        "nesting deeper than 450 levels (limits: depth)"  # the command line over the environment
    ]


# Discovery -------------------------------------------------------------------------------------


@pytest.mark.parametrize("git", ["folder", "file"])
def test_a_config_above_the_work_tree_is_not_used(tmp_path: Path, git: str) -> None:
    (tmp_path / ".kaffinity.yaml").write_text("fail-on: warning\n")  # a shared parent folder
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    if git == "folder":
        (repo / ".git").mkdir()
    else:  # a linked worktree or a submodule: .git is a file naming the git directory
        (repo / ".git").write_text("gitdir: /nowhere\n")
    (repo / "sub" / "t.yaml").write_text(WARNS)
    assert find_config(str(repo / "sub")) is None
    assert run("lint", "--no-gitignore", "t.yaml", cwd=repo / "sub").returncode == 0
    (repo / ".kaffinity.yaml").write_text("fail-on: warning\n")  # the repository's own: used
    assert find_config(str(repo / "sub")) == str(repo / ".kaffinity.yaml")
    assert run("lint", "--no-gitignore", "t.yaml", cwd=repo / "sub").returncode == 1


def test_without_a_work_tree_the_search_goes_up(tmp_path: Path) -> None:
    (tmp_path / ".kaffinity.yaml").write_text("fail-on: warning\n")
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert find_config(str(tmp_path / "a" / "b")) == str(tmp_path / ".kaffinity.yaml")


def _owned_by_another_user(path: Path) -> None:
    if not hasattr(os, "chown"):
        pytest.skip("no file ownership on this platform")
    try:
        os.chown(path, 54321, -1)
    except PermissionError:
        pytest.skip("changing a file's owner needs root")


def test_a_config_owned_by_another_user_is_ignored_with_a_note(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo")
    config = repo / ".kaffinity.yaml"
    config.write_text("fail-on: warning\n")
    (repo / "t.yaml").write_text(WARNS)
    _owned_by_another_user(config)
    env = {key: value for key, value in os.environ.items() if key != "SUDO_UID"}
    ignored = run("lint", "t.yaml", cwd=repo, env=env)
    assert ignored.returncode == 0  # fail-on: warning not applied
    notes = [line for line in ignored.stderr.splitlines() if line.startswith("kaffinity: note: ")]
    assert notes == [
        f"kaffinity: note: .kaffinity.yaml: ignored: owned by another user (uid 54321, not {os.geteuid()}) "
        "(pass --config to use it)"
    ]
    # Given explicitly, it is used; run as root by sudo from its owner (git's SUDO_UID), too.
    assert run("lint", "--config", ".kaffinity.yaml", "t.yaml", cwd=repo, env=env).returncode == 1
    if os.geteuid() == 0:
        sudo = run("lint", "t.yaml", cwd=repo, env={**env, "SUDO_UID": "54321"})
        assert sudo.returncode == 1 and "note" not in sudo.stderr


def test_a_config_linking_outside_its_repository_is_ignored(tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text("fail-on: warning\n")
    repo = _repository(tmp_path / "repo")
    (repo / ".kaffinity.yaml").symlink_to(outside)
    (repo / "t.yaml").write_text(WARNS)
    completed = run("lint", "t.yaml", cwd=repo)
    assert completed.returncode == 0
    assert f"kaffinity: note: .kaffinity.yaml: ignored: it links outside its repository ({repo})" in (
        completed.stderr
    )


# Paths -----------------------------------------------------------------------------------------


def _escaping_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository and, beside it, a folder it must not reach (a cluster, a policy folder)."""
    outside = tmp_path / "outside"
    (outside / "policies").mkdir(parents=True)
    (outside / "cluster.yaml").write_text(CLUSTER)
    (outside / "secret.yaml").write_text("password: hunter2\n")
    # Not a valid policy: reading it is an error naming it.
    (outside / "policies" / "bad.yaml").write_text("apiVersion: kaffinity.io/v1alpha1\nkind: Policy\n")
    repo = _repository(tmp_path / "repo")
    (repo / "app").mkdir()
    (repo / "app" / "p.yaml").write_text(POD)
    (repo / "link").symlink_to(outside)
    return repo, outside


@pytest.mark.parametrize(
    ("text", "where", "key"),
    [
        (
            "render: true\nhelm-values:\n  charts/web: [../../secret.yaml]\n",
            "3:16",
            "helm-values.charts/web.0",
        ),
        (
            "helm-values:\n  charts/web: [values.yaml, {outside}/secret.yaml]\n",
            "2:29",
            "helm-values.charts/web.1",
        ),
        ("helm-values:\n  ../outside: [values.yaml]\n", "2:3", "helm-values.../outside"),
        ("cluster: {outside}/cluster.yaml\n", "1:1", "cluster"),
        ("cluster: link/cluster.yaml\n", "1:1", "cluster"),
        ("cache-dir: ../..\n", "1:1", "cache-dir"),
        ("cache-dir: link\n", "1:1", "cache-dir"),
        ("policies: [app, ../outside/policies]\n", "1:17", "policies.1"),
        ("context:\n  - link/\n", "2:5", "context.0"),
    ],
)
def test_a_config_path_outside_the_repository_is_an_error_at_its_line(
    tmp_path: Path, text: str, where: str, key: str
) -> None:
    repo, outside = _escaping_repo(tmp_path)
    (repo / ".kaffinity.yaml").write_text(text.format(outside=outside))
    completed = run("lint", "app", cwd=repo)
    assert completed.returncode == 2 and completed.stdout == ""
    [error] = _errors(completed.stderr)
    assert error.startswith(f".kaffinity.yaml:{where}: error: {key}: "), error
    assert f"is outside the repository ({repo})" in error
    assert "bad.yaml" not in completed.stderr  # the policies outside were not read
    assert not (tmp_path / ".kaffinity_cache").exists() and not (outside / ".kaffinity_cache").exists()


def test_the_same_paths_on_the_command_line_are_read(tmp_path: Path) -> None:
    repo, outside = _escaping_repo(tmp_path)
    (repo / "app" / "p.yaml").write_text(WARNS)
    cache = tmp_path / "cache"
    options = ["--cluster", str(outside / "cluster.yaml"), "--context", "link", "--cache-dir", str(cache)]
    completed = run("lint", "--format", "json", *options, "app", cwd=repo)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["summary"]["files"] == 1
    assert cache.is_dir()
    policies = run("lint", "--policy", "../outside/policies", "app", cwd=repo)
    assert policies.returncode == 2 and "../outside/policies/bad.yaml" in policies.stderr  # read
    env = {**os.environ, "KAFFINITY_CACHE_DIR": str(tmp_path / "env-cache")}
    assert run("lint", "app", cwd=repo, env=env).returncode == 0
    assert (tmp_path / "env-cache").is_dir()


def test_paths_inside_the_work_tree_are_read_from_a_nested_config(tmp_path: Path) -> None:
    """The root is the work tree's top, not the config's folder: a config in a subfolder may
    name a sibling folder; without a work tree, its own folder bounds it."""
    root = tmp_path / "repo"
    (root / "deploy").mkdir(parents=True)
    (root / "cluster.yaml").write_text("kind: [\n")  # a parse-error once read
    (root / "deploy" / "p.yaml").write_text(POD)
    (root / "deploy" / ".kaffinity.yaml").write_text("cluster: ../cluster.yaml\n")
    outside = run("lint", "p.yaml", cwd=root / "deploy")
    assert outside.returncode == 2
    assert _errors(outside.stderr)[0].startswith(
        ".kaffinity.yaml:1:1: error: cluster: ../cluster.yaml is outside"
    )
    (root / ".git").mkdir()
    inside = run("lint", "--no-gitignore", "p.yaml", cwd=root / "deploy")
    assert inside.returncode == 2 and _errors(inside.stderr) == []
    assert f"{root / 'cluster.yaml'}:2:1: error [parse-error]" in inside.stdout


# pre-commit ------------------------------------------------------------------------------------


def test_committed_files_named_like_options_are_linted_as_files(tmp_path: Path) -> None:
    """As pre-commit runs the hook: entry, the user's args, then the commit's file names."""
    for name in ("--config=quiet.yaml", "-o", "--fail-on=none", "--report=json=out.yaml"):
        (tmp_path / name).write_text(WARNS)
    (tmp_path / "--cache-dir=..").mkdir()
    (tmp_path / "quiet.yaml").write_text("fail-on: none\n")
    entry = ["lint", "--no-gitignore", "--fail-on", "warning", "--pre-commit"]
    args = ["--format", "json", "--min-severity", "info"]
    files = ["--config=quiet.yaml", "-o", "--fail-on=none", "--cache-dir=..", "--report=json=out.yaml"]
    completed = run(*entry, *args, *files, cwd=tmp_path)
    assert completed.returncode == 1, completed.stderr  # the warnings fail: no option was read
    report = json.loads(completed.stdout)
    linted = {finding["file"] for finding in report["findings"]}
    assert linted == {"--config=quiet.yaml", "-o", "--fail-on=none", "--report=json=out.yaml"}
    assert not (tmp_path / "out.yaml").exists() and not (tmp_path.parent / ".kaffinity_cache").exists()
    assert (tmp_path / "quiet.yaml").read_text() == "fail-on: none\n"


def test_the_options_end_at_the_first_operand() -> None:
    valued = {"--fail-on", "-o", "--context"}
    assert split(["--fail-on", "error", "--context", "k8s/", "a.yaml", "--closed"], valued) == (
        ["--fail-on", "error", "--context", "k8s/"],
        ["a.yaml", "--closed"],
    )
    assert split(["--closed", "--", "-x.yaml"], valued) == (["--closed"], ["-x.yaml"])
    assert split(["-", "--closed"], valued) == ([], ["-", "--closed"])
