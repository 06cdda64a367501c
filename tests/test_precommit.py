"""The published pre-commit hooks, run by the real ``pre-commit run``.

pre-commit builds the hook's environment as a user's machine would (a virtualenv with kaffinity
pip-installed from a git repository), so this also checks the packaging: the entry point and the
schemas shipped as package data. The repository under test is a snapshot of this checkout
committed to a temporary git repository, so uncommitted work is what gets tested; a user's
``.pre-commit-config.yaml`` names it at its commit (as ``try-repo`` does, but ``try-repo`` clones
it again and builds a new environment at each call: here the environment is built once, in the
module's pre-commit home, and every test's commit runs the hooks in it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kit import REPO, no_internal_error
from tests.test_context import BROKEN_API, CACHE, WEB

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")

_SNAPSHOT = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "kaffinity", "schemas")


def _env(home: Path) -> dict[str, str]:
    inherited = {
        key: value for key, value in os.environ.items() if not key.startswith(("GIT_", "PRE_COMMIT"))
    }
    return {
        **inherited,
        "PRE_COMMIT_HOME": str(home),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "kaffinity tests",
        "GIT_AUTHOR_EMAIL": "tests@kaffinity.invalid",
        "GIT_COMMITTER_NAME": "kaffinity tests",
        "GIT_COMMITTER_EMAIL": "tests@kaffinity.invalid",
        "NO_COLOR": "1",
    }


def _git(cwd: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def hooks(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A git repository holding this checkout's hooks and package, and pre-commit's home."""
    root = tmp_path_factory.mktemp("precommit")
    env = _env(root / "home")
    snapshot = root / "kaffinity"
    snapshot.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    for name in _SNAPSHOT:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, snapshot / name, ignore=ignore)
        else:
            shutil.copy2(source, snapshot / name)
    _git(snapshot, env, "init", "-q")
    _git(snapshot, env, "add", ".")
    _git(snapshot, env, "commit", "-q", "-m", "snapshot")
    revision = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=snapshot, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()
    # Outside the user's repository (pre-commit then does not ask for it to be staged): every
    # hook of the snapshot, at its commit, as a user's configuration names them.
    (root / "config.yaml").write_text(
        f"repos:\n  - repo: {snapshot}\n    rev: {revision}\n"
        "    hooks: [{id: kaffinity}, {id: kaffinity-all}]\n",
        encoding="utf-8",
    )
    return snapshot, env


def _run_hook(hooks: tuple[Path, dict[str, str]], repo: Path, hook: str) -> subprocess.CompletedProcess[str]:
    """``pre-commit run HOOK`` in ``repo`` on what is staged, as a commit runs it."""
    snapshot, env = hooks
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pre_commit",
            "run",
            hook,
            "--config",
            str(snapshot.parent / "config.yaml"),
            "--verbose",
            "--color",
            "never",
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def _user_repo(path: Path, env: dict[str, str], committed: dict[str, str]) -> Path:
    path.mkdir()
    for name, text in committed.items():
        (path / name).write_text(text)
    _git(path, env, "init", "-q")
    _git(path, env, "add", ".")
    _git(path, env, "commit", "-q", "-m", "manifests")
    return path


@pytest.mark.slow
def test_the_hook_fails_on_a_bad_manifest_and_passes_once_fixed(
    hooks: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    _, env = hooks
    repo = _user_repo(tmp_path / "app", env, {"cache.yaml": CACHE, "README.md": "# app\n"})

    (repo / "web.yaml").write_text(BROKEN_API)
    _git(repo, env, "add", "web.yaml")
    failed = _run_hook(hooks, repo, "kaffinity")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "kaffinity" in failed.stdout and "Failed" in failed.stdout
    line = next(n for n, text in enumerate(BROKEN_API.splitlines(), 1) if "values: [x]" in text)
    column = BROKEN_API.splitlines()[line - 1].index("values") + 1
    assert (
        f"web.yaml:{line}:{column}: error [api-validation] Deployment default/web: Forbidden" in failed.stdout
    ), failed.stdout
    no_internal_error(failed.returncode, failed.stdout + failed.stderr)

    # Fixed: web's required affinity is satisfied by cache.yaml, which the commit does not touch:
    # the hook read it as context (no affinity-no-match), and reported nothing on it.
    (repo / "web.yaml").write_text(WEB)
    _git(repo, env, "add", "web.yaml")
    passed = _run_hook(hooks, repo, "kaffinity")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout
    assert "No problems found in 1 file." in passed.stdout, passed.stdout
    assert "affinity-no-match" not in passed.stdout


@pytest.mark.slow
def test_the_whole_repository_hook(hooks: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    _, env = hooks
    repo = _user_repo(tmp_path / "app", env, {"cache.yaml": CACHE, "web.yaml": WEB})
    (repo / "notes.txt").write_text("no manifest changed\n")
    _git(repo, env, "add", "notes.txt")
    passed = _run_hook(hooks, repo, "kaffinity-all")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "No problems found in 2 files." in passed.stdout, passed.stdout


@pytest.mark.slow
def test_a_warning_blocks_the_commit_and_shows_and_mkdocs_passes(
    hooks: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """The hooks fail on warnings (pre-commit shows output only on failure): a typo'd required
    affinity is not committed unseen; a commit of mkdocs.yml (no manifest) passes."""
    _, env = hooks
    repo = _user_repo(tmp_path / "app", env, {"README.md": "# app\n"})
    (repo / "mkdocs.yml").write_text("site_name: app\nnav:\n  - Home: index.md\n")
    _git(repo, env, "add", "mkdocs.yml")
    passed = _run_hook(hooks, repo, "kaffinity")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    warning = (REPO / "examples" / "revision-unscoped" / "fail.yaml").read_text()
    (repo / "web.yaml").write_text(warning)
    _git(repo, env, "add", "web.yaml")
    failed = _run_hook(hooks, repo, "kaffinity")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "warning [revision-unscoped]" in failed.stdout, failed.stdout


@pytest.mark.slow
def test_committed_files_named_like_options_are_files(
    hooks: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """pre-commit appends the file names to the hook's args with no ``--`` (issue 31): a commit
    of ``--config=quiet.yaml`` and ``-oreport.yaml`` lints them, it neither reads quiet.yaml as
    the config (fail-on: none) nor writes the report to report.yaml."""
    _, env = hooks
    repo = _user_repo(tmp_path / "app", env, {"quiet.yaml": "fail-on: none\n"})
    warning = (REPO / "examples" / "revision-unscoped" / "fail.yaml").read_text()
    for name in ("--config=quiet.yaml", "-oreport.yaml"):
        (repo / name).write_text(warning)
        _git(repo, env, "add", "--", name)
    failed = _run_hook(hooks, repo, "kaffinity")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    for name in ("--config=quiet.yaml", "-oreport.yaml"):
        assert f"\n{name}:" in failed.stdout and "warning [revision-unscoped]" in failed.stdout, failed.stdout
    assert not (repo / "report.yaml").exists()
    no_internal_error(failed.returncode, failed.stdout + failed.stderr)


@pytest.mark.slow
def test_the_hook_blocks_what_a_change_causes_in_a_base_overlays_and_chart_repository(
    hooks: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """Issue 33's journey through the real pre-commit, in a repository of a kustomize base, an
    overlay and a chart (kubernetes-sigs/kustomize examples/helloWorld's ``base/`` and
    ``overlays/<env>/``, a chart folder as ``helm create`` makes): a commit that renames a label
    another file's required affinity selects is blocked with that finding, in the file the
    commit did not touch, and why; so is a commit that changes only the overlay's patch, and one
    that changes only the chart's values file."""
    from kaffinity.findings import Cause
    from kaffinity.k8s.model import ObjectRef
    from kaffinity.repo.engines import kustomize_engine
    from kaffinity.report.because import sentence
    from tests.kit import position
    from tests.test_changed import CHART, OVERLAY_BASE, RELABEL

    if kustomize_engine() is None:
        pytest.skip("neither kustomize nor kubectl is on the PATH")
    _, env = hooks
    repo = _user_repo(tmp_path / "app", env, {"README.md": "# app\n"})
    for name, text in {**OVERLAY_BASE, **CHART}.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, env, "add", ".")
    _git(repo, env, "commit", "-q", "-m", "base, overlay and chart")
    line, column = position(WEB, "- labelSelector")
    web = f"base/web.yaml:{line}:{column + 2}: warning [affinity-no-match] Deployment default/web:"

    # 1. The label the base's web selects, renamed in base/cache.yaml only.
    (repo / "base/cache.yaml").write_text(CACHE.replace("app: cache", "app: redis"))
    _git(repo, env, "add", "base/cache.yaml")
    failed = _run_hook(hooks, repo, "kaffinity")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert web in failed.stdout, failed.stdout
    renamed = Cause("base/cache.yaml", "selects", ObjectRef("apps/v1", "Deployment", "default", "cache"))
    assert f"    note: {sentence(renamed)}" in failed.stdout.splitlines(), failed.stdout
    no_internal_error(failed.returncode, failed.stdout + failed.stderr)
    _git(repo, env, "reset", "-q", "--hard")

    # 2. Only the overlay's patch: it relabels the cache's pods in prod.
    (repo / "overlays/prod/patch.yaml").write_text(RELABEL)
    _git(repo, env, "add", "overlays/prod/patch.yaml")
    failed = _run_hook(hooks, repo, "kaffinity")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert web in failed.stdout, failed.stdout
    patched = Cause("overlays/prod/patch.yaml", "rendered-from", unit="overlays/prod")
    assert f"    note: {sentence(patched)}" in failed.stdout.splitlines(), failed.stdout
    _git(repo, env, "reset", "-q", "--hard")

    # 3. Only the chart's values file.
    (repo / "charts/web/values.yaml").write_text('topologyKey: ""\n')
    _git(repo, env, "add", "charts/web/values.yaml")
    failed = _run_hook(hooks, repo, "kaffinity")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    line, column = position(CHART["charts/web/templates/deploy.yaml"], "topologyKey:")
    assert f"charts/web/templates/deploy.yaml:{line}:{column}: error [api-validation]" in failed.stdout
    valued = Cause("charts/web/values.yaml", "rendered-from", unit="charts/web")
    assert f"    note: {sentence(valued)}" in failed.stdout.splitlines(), failed.stdout
    no_internal_error(failed.returncode, failed.stdout + failed.stderr)
