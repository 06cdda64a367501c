"""Install instructions that work today (issue 33, item 4): every install snippet of the README and
docs/*.md names an extra, a hook, an Action input, a tag or a commit that exists
(tests/install_snippets.py says what is checked and the placeholder rule), and the checker fails
on each kind of bad snippet."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from . import install_snippets
from .install_snippets import documents, problems
from .kit import REPO

URL = install_snippets.repository_url()


@pytest.mark.parametrize("document", documents(), ids=lambda path: str(path.relative_to(REPO)))
def test_every_install_snippet_names_something_that_exists(document: Path) -> None:
    assert problems(document.read_text(encoding="utf-8"), document=str(document)) == []


def test_the_docs_pin_kaffinity_somewhere() -> None:
    """The checker has something to check: the pre-commit rev, the Action ref and a pip install."""
    text = "\n".join(path.read_text(encoding="utf-8") for path in documents())
    assert f"repo: {URL}" in text
    assert "uses: kaffinity/kaffinity@<commit-sha>" in text
    assert f"git+{URL}@<commit-sha>" in text


def test_the_repository_url_is_the_one_pyproject_declares() -> None:
    assert URL == "https://github.com/kaffinity/kaffinity"


LINK = "See [install.md](docs/install.md).\n"
SHA = "<commit-sha>"


def _block(*lines: str, link: bool = True) -> str:
    return "```\n" + "\n".join(lines) + "\n```\n" + (LINK if link else "")


def _step(*with_: str) -> str:
    return _block(f"      - uses: kaffinity/kaffinity@{SHA}", "        id: k", "        with:", *with_)


BAD = {
    # The README's snippets before issue 33: a tag that does not exist, PyPI without a release.
    "a missing tag in rev:": _block(
        "repos:", f"  - repo: {URL}", "    rev: v0.1.0", "    hooks:", "      - id: kaffinity"
    ),
    "a missing tag in uses:": _block("    steps:", "      - uses: kaffinity/kaffinity@v0.1.0"),
    "a branch in uses:": _block("      - uses: kaffinity/kaffinity@main"),
    "PyPI": _block("pip install 'kaffinity[helm]'"),
    "PyPI inline": "Run `pip install kaffinity` first.\n",
    "an unknown extra": _block("pip install '.[helmet]'"),
    "an unknown extra from git": _block(f"pip install 'kaffinity[hlem] @ git+{URL}@{SHA}'"),
    "another URL": _block(f"pip install 'kaffinity @ git+https://github.com/someone/kaffinity@{SHA}'"),
    "nothing pinned": _block(f"pip install 'kaffinity @ git+{URL}'"),
    "a missing commit": _block(f"pip install 'kaffinity @ git+{URL}@{'0' * 40}'"),
    "a placeholder unexplained": _block(f"      - uses: kaffinity/kaffinity@{SHA}", link=False),
    "an unknown hook": _block(
        f"  - repo: {URL}", f"    rev: {SHA}", "    hooks:", "      - id: kaffinity-helm"
    ),
    "another repo URL": _block("  - repo: https://github.com/kaffinity/kaffinity-hooks", f"    rev: {SHA}"),
    "an unknown input": _step("          path: manifests/"),
    "a PyPI version input": _step("          version: 0.1.0"),
    "a missing constraints file": _block("pip install --constraint constraints/nope.txt ."),
}


@pytest.mark.parametrize("name", BAD)
def test_the_checker_fails_on_a_bad_snippet(name: str) -> None:
    assert len(problems(BAD[name])) == 1, problems(BAD[name])


GOOD = (
    "```sh\npip install . && kaffinity lint examples/\npip install '.[test]' && pytest\n```\n"
    f"```sh\npip install 'kaffinity[helm] @ git+{URL}@<commit-sha>'\npip install pre-commit\n```\n"
    f"```yaml\nrepos:\n  - repo: {URL}\n    rev: <commit-sha>  # install.md\n    hooks:\n"
    "      - id: kaffinity\n      - id: kaffinity-json\n```\n"
    "```yaml\n    steps:\n      - uses: actions/checkout@v4\n      - uses: kaffinity/kaffinity@<commit-sha>\n"
    "        id: kaffinity\n        with:\n          paths: |\n            manifests/\n"
    "          fail-on: warning\n      - uses: github/codeql-action/upload-sarif@v3\n"
    "        with:\n          sarif_file: x\n```\n"
    "After the first release: `kaffinity/kaffinity@vX.Y.Z`; the `helm` extra (`kaffinity[helm]`).\n"
)


def test_the_checker_passes_what_exists() -> None:
    assert problems(GOOD) == []


def test_a_commit_of_the_repository_and_an_existing_tag_are_valid_refs() -> None:
    import subprocess

    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    sha = head.stdout.strip()
    assert install_snippets.ref_problem(sha, "") is None
    assert install_snippets.ref_problem("v999.0.0", "") is not None  # no such tag


def test_the_readmes_pre_commit_snippet_works_after_autoupdate(tmp_path: Path) -> None:
    """The README's snippet as written, its repo a clone of this repository (the URL is not
    reachable from the tests): `pre-commit autoupdate`, as docs/install.md says, writes the SHA of
    the clone's newest commit (no tag: pre-commit's RevInfo.update takes `git rev-parse
    FETCH_HEAD`), a commit `rev:` pre-commit can install."""
    import re
    import shutil
    import subprocess
    import sys

    if importlib.util.find_spec("pre_commit") is None or shutil.which("git") is None:
        pytest.skip("pre-commit or git is not installed (pip install '.[test]')")
    clone = tmp_path / "kaffinity"
    cloned = subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], capture_output=True, check=False)
    if cloned.returncode != 0:
        pytest.skip(f"cannot clone the repository: {cloned.stderr!r}")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    (snippet,) = [block for block in re.findall(r"```yaml\n(.*?)```", readme, re.DOTALL) if "repos:" in block]
    app = tmp_path / "app"
    app.mkdir()
    subprocess.run(["git", "init", "-q", str(app)], check=True)
    (app / ".pre-commit-config.yaml").write_text(snippet.replace(URL, str(clone)), encoding="utf-8")
    updated = subprocess.run(
        [sys.executable, "-m", "pre_commit", "autoupdate", "--repo", str(clone)],
        cwd=app,
        env={**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert updated.returncode == 0, updated.stdout + updated.stderr
    head = subprocess.run(
        ["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    )
    config = (app / ".pre-commit-config.yaml").read_text(encoding="utf-8")
    (rev,) = re.findall(r"rev: (\S+)", config)
    # No tag: the SHA itself. On a tagged commit (the release workflow's run) pre-commit writes
    # the tag (`git describe --tags --exact`): the same commit.
    commit = subprocess.run(
        ["git", "-C", str(clone), "rev-parse", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert commit.stdout.strip() == head.stdout.strip(), config
