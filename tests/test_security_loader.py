"""A symlink committed in the checkout never makes kaffinity read a file outside the repository
(issue 31): a folder walk follows a symlink only when it leads inside the folder's git work tree
(or the folder named, outside any); what the person running kaffinity names is read wherever it is."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .kit import lint_json, run

MARKER = "kaffinity-secret-4b1d"
#: A manifest with a problem on its marker line: read, it would be a finding that shows the line.
SECRET = f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: leak}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: leak}}}}
  template:
    metadata: {{labels: {{app: leak}}}}
    spec:
      containers: [{{name: c, image: nginx}}]
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution: [{{topologyKey: "{MARKER} x"}}]
"""
GOOD = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: fine}
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A git work tree ``repo`` with a manifest, and ``outside/secret.yaml`` beside it."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.yaml").write_text(SECRET)
    repo = tmp_path / "repo"
    (repo / "manifests").mkdir(parents=True)
    (repo / "manifests" / "fine.yaml").write_text(GOOD)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def test_a_symlinked_file_leading_outside_is_not_read(checkout: Path) -> None:
    (checkout / "manifests" / "leak.yaml").symlink_to(checkout.parent / "outside" / "secret.yaml")
    done = lint_json("--no-cache", ".", cwd=checkout)
    assert MARKER not in done.stdout + done.stderr
    assert (done.code, done.report["summary"]["files"]) == (0, 1)


def test_a_symlinked_folder_leading_outside_is_not_walked(checkout: Path) -> None:
    (checkout / "manifests" / "vendor").symlink_to(checkout.parent / "outside")
    done = lint_json("--no-cache", "manifests", cwd=checkout)
    assert MARKER not in done.stdout + done.stderr
    assert (done.code, done.report["summary"]["files"]) == (0, 1)


def test_a_symlink_inside_the_repository_is_followed(checkout: Path) -> None:
    (checkout / "shared").mkdir()
    (checkout / "shared" / "secret.yaml").write_text(SECRET)
    (checkout / "manifests" / "linked.yaml").symlink_to(checkout / "shared" / "secret.yaml")
    done = lint_json("--no-cache", "manifests", cwd=checkout)
    assert MARKER not in done.stderr
    assert done.code == 1
    assert {f["file"] for f in done.report["findings"]} == {"manifests/linked.yaml"}


def test_a_symlink_named_on_the_command_line_is_read(checkout: Path) -> None:
    """Naming a path is the choice of the person running kaffinity, wherever it leads."""
    (checkout / "leak.yaml").symlink_to(checkout.parent / "outside" / "secret.yaml")
    done = run("lint", "--no-config", "--no-cache", "--format", "json", "leak.yaml", cwd=checkout)
    assert done.returncode == 1
    assert {f["file"] for f in json.loads(done.stdout)["findings"]} == {"leak.yaml"}


def test_a_policy_folder_symlink_leading_outside_is_not_read(checkout: Path) -> None:
    """Read, the outside policy's name (not a DNS subdomain) would be quoted in an error."""
    (checkout.parent / "outside" / "policy.yaml").write_text(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\n"
        f"metadata: {{name: {MARKER.upper()}}}\nspec:\n  validations: [{{expression: 'true'}}]\n"
    )
    (checkout / "policies").mkdir()
    (checkout / "policies" / "p.yaml").symlink_to(checkout.parent / "outside" / "policy.yaml")
    done = run("lint", "--no-config", "--no-cache", "--policy", "policies", "manifests", cwd=checkout)
    assert MARKER.upper() not in done.stdout + done.stderr
    assert done.returncode == 2  # the folder holds no policy file kaffinity reads
    named = run("lint", "--no-config", "--no-cache", "--policy", "policies/p.yaml", "manifests", cwd=checkout)
    assert (named.returncode, MARKER.upper() in named.stderr) == (2, True)  # named: read, and refused


def test_the_changed_context_skips_a_tracked_symlink_leading_outside(checkout: Path) -> None:
    """``lint --changed`` (pre-commit) reads the repository's files as git lists them."""
    (checkout / "manifests" / "leak.yaml").symlink_to(checkout.parent / "outside" / "secret.yaml")
    subprocess.run(["git", "-C", str(checkout), "add", "-A"], check=True)
    done = run(
        "lint",
        "--no-config",
        "--no-cache",
        "--changed",
        "--format",
        "json",
        "manifests/fine.yaml",
        cwd=checkout,
    )
    assert MARKER not in done.stdout + done.stderr
    assert done.returncode == 0, done.stdout


def test_no_git_hook_of_the_checkout_runs(checkout: Path) -> None:
    """A repository's ``core.fsmonitor`` names a program git would run when it reads the index
    (git-config(1)); kaffinity's git commands turn it off, whether it walks the checkout or
    lints what changed since a revision."""
    ran = checkout.parent / "hook-ran"
    hook = checkout.parent / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {ran}\n")
    hook.chmod(0o755)
    git = ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    subprocess.run([*git, "config", "core.fsmonitor", str(hook)], check=True)
    (checkout / "manifests" / "fine.yaml").write_text(GOOD + "data: {a: b}\n")
    for args in ((".",), ("--changed", "manifests/fine.yaml")):
        done = lint_json("--no-cache", *args, cwd=checkout)
        assert done.code == 0, done.stderr
    assert not ran.exists()
