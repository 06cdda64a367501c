"""The release workflow (issue 33, item 4): .github/workflows/release.yml builds the sdist and the
wheel on a version tag, checks them and that the tag is the package's version, runs the tests,
publishes with PyPI trusted publishing and creates the GitHub release; every workflow and
action.yml validate against the schemas GitHub's editors use (SchemaStore's, vendored by
check-jsonschema: no network). docs/releasing.md is the procedure."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from .kit import REPO

WORKFLOWS = REPO / ".github" / "workflows"
RELEASE = WORKFLOWS / "release.yml"
_PINNED = re.compile(r"^\s*-?\s*uses:\s*([\w.-]+/[\w./-]+)@([0-9a-f]{40}) # v\d+(\.\d+)*\s*$")


def _check_jsonschema(schema: str, *paths: Path) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("check_jsonschema") is None:
        pytest.skip("check-jsonschema is not installed (pip install '.[test]')")
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, paths)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def _release() -> dict[str, Any]:
    loaded: dict[str, Any] = YAML(typ="safe").load(RELEASE.read_text(encoding="utf-8"))
    return loaded


def test_every_workflow_validates_against_githubs_workflow_schema() -> None:
    workflows = sorted(WORKFLOWS.glob("*.y*ml"))
    assert RELEASE in workflows
    checked = _check_jsonschema("vendor.github-workflows", *workflows)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_action_yml_validates_against_githubs_action_schema() -> None:
    checked = _check_jsonschema("vendor.github-actions", REPO / "action.yml")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_schema_check_fails_on_a_broken_release_workflow(tmp_path: Path) -> None:
    """The same check on the release workflow with its publish job's `runs-on` removed."""
    broken = RELEASE.read_text(encoding="utf-8").replace(
        "  publish:\n    name: publish to PyPI\n    needs: [build, test]\n    runs-on: ubuntu-latest\n",
        "  publish:\n    name: publish to PyPI\n    needs: [build, test]\n",
    )
    assert broken != RELEASE.read_text(encoding="utf-8")
    (tmp_path / "release.yml").write_text(broken, encoding="utf-8")
    checked = _check_jsonschema("vendor.github-workflows", tmp_path / "release.yml")
    assert checked.returncode == 1, checked.stdout + checked.stderr


def test_the_release_runs_on_version_tags_only() -> None:
    workflow = _release()
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads `on` as true
    assert triggers == {"push": {"tags": ["v*"]}}
    assert workflow["permissions"] == {"contents": "read"}


def test_every_third_party_action_is_pinned_by_commit_sha_with_its_version() -> None:
    text = RELEASE.read_text(encoding="utf-8").splitlines()
    lines = [line for line in text if "uses:" in line and not line.lstrip().startswith("#")]
    assert lines
    assert [line for line in lines if not _PINNED.match(line)] == []
    used = {_PINNED.match(line).group(1) for line in lines}  # type: ignore[union-attr]
    assert "pypa/gh-action-pypi-publish" in used


def test_only_the_publish_job_can_mint_an_id_token_and_it_uses_the_pypi_environment() -> None:
    jobs = _release()["jobs"]
    minting = {name for name, job in jobs.items() if job.get("permissions", {}).get("id-token") == "write"}
    assert minting == {"publish"}
    publish = jobs["publish"]
    assert publish["environment"]["name"] == "pypi"
    assert set(publish["needs"]) == {"build", "test"}
    (step,) = [step for step in publish["steps"] if "gh-action-pypi-publish" in step.get("uses", "")]
    assert "with" not in step or "password" not in step["with"]  # trusted publishing: no token
    writing = {name for name, job in jobs.items() if job.get("permissions", {}).get("contents") == "write"}
    assert writing == {"release"}
    assert jobs["release"]["needs"] == "publish"


def test_the_build_job_builds_checks_and_compares_the_tag_with_the_version() -> None:
    build = _release()["jobs"]["build"]
    script = "\n".join(step.get("run", "") for step in build["steps"])
    assert "python -m build" in script
    assert "twine check --strict dist/*" in script
    assert "check-wheel-contents dist/*.whl" in script
    assert "${{" not in script  # inputs through env: only (script injection)
    (compare,) = [step for step in build["steps"] if '"$TAG" != "v$built"' in step.get("run", "")]
    assert compare["env"] == {"TAG": "${{ github.ref_name }}"}
    test = _release()["jobs"]["test"]
    assert test["needs"] == "build"
    assert "bash .ci/run" in [step.get("run") for step in test["steps"]]


@pytest.mark.parametrize(("tag", "code"), [("v0.1.0", 0), ("v0.2.0", 1), ("0.1.0", 1)])
def test_the_tag_check_fails_when_the_tag_is_not_the_built_version(
    tmp_path: Path, tag: str, code: int
) -> None:
    """The build job's version step, run by bash on a dist/ holding a wheel of version 0.1.0."""
    (step,) = [s for s in _release()["jobs"]["build"]["steps"] if '"$TAG" != "v$built"' in s.get("run", "")]
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "kaffinity-0.1.0-py3-none-any.whl").write_bytes(b"")
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n\n## [0.1.0] - 2026-12-01\n", encoding="utf-8")
    ran = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=tmp_path,
        env={"TAG": tag, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == code, ran.stdout + ran.stderr


def test_the_tag_check_fails_on_an_undated_changelog_section(tmp_path: Path) -> None:
    (step,) = [s for s in _release()["jobs"]["build"]["steps"] if '"$TAG" != "v$built"' in s.get("run", "")]
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "kaffinity-0.1.0-py3-none-any.whl").write_bytes(b"")
    (tmp_path / "CHANGELOG.md").write_text("## [0.1.0] - not yet released\n", encoding="utf-8")
    ran = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=tmp_path,
        env={"TAG": "v0.1.0", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 1


def test_the_package_version_is_the_one_the_release_procedure_bumps() -> None:
    """docs/releasing.md: the version lives in kaffinity/__init__.py, which pyproject.toml reads."""
    import tomllib

    from kaffinity import __version__

    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "kaffinity.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)
    assert (REPO / "docs" / "releasing.md").is_file()
