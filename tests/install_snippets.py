"""Every install snippet of the README and docs/*.md refers to something that exists (issue 33:
the README's `rev: v0.1.0` and `kaffinity/kaffinity@v0.1.0` named a tag that did not exist, and
`pip install 'kaffinity[helm]'` a package PyPI does not have).

A snippet is a fenced code block or an inline code span of a Markdown file. What is checked:

- ``pip install``: ``.`` or ``.[extras]`` (a checkout), ``kaffinity[extras] @ git+URL@REF`` or
  ``git+URL@REF`` (the repository), never ``kaffinity`` alone (a PyPI install: no release is
  published yet); the extras exist in pyproject.toml's ``[project.optional-dependencies]``;
  a ``-r``/``-c``/``--constraint`` file exists.
- pre-commit: a ``repo:`` naming kaffinity is the repository's URL (pyproject.toml's
  ``[project.urls] Repository``); its ``rev:`` is a valid REF; its ``- id:`` hooks exist in
  .pre-commit-hooks.yaml.
- the Action: ``kaffinity/kaffinity@REF`` names a valid REF; the keys under the step's ``with:``
  are inputs of action.yml; a ``version`` input names a release (a tag ``vVERSION``).
- ``kaffinity[extra]`` anywhere names an extra that exists.

A valid REF (the placeholder rule): the placeholder ``<commit-sha>`` (in a file that links to
docs/install.md, which says how to get the SHA, or docs/install.md itself), the template
``vX.Y.Z`` (a future tag, in prose about releases), a full 40-character SHA of a commit of this
repository, or a tag that ``git tag`` lists. A branch name or a tag that does not exist is not.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import tomllib
from functools import cache
from pathlib import Path

from ruamel.yaml import YAML

from .kit import REPO

PLACEHOLDER = "<commit-sha>"
TEMPLATE = "vX.Y.Z"
_SHA = re.compile(r"[0-9a-f]{40}")
_FENCE = re.compile(r"^( *)(```|~~~)[^\n]*\n(.*?)^\1\2 *$", re.DOTALL | re.MULTILINE)
_INLINE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_EXTRA = re.compile(r"kaffinity\[([^\]]*)\]")
_ACTION = re.compile(r"kaffinity/kaffinity@([^\s`'\"]+)")


def documents(root: Path = REPO) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


@cache
def _pyproject(root: Path) -> dict[str, object]:
    return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))


def repository_url(root: Path = REPO) -> str:
    urls = _pyproject(root)["project"]["urls"]  # type: ignore[index]
    return str(urls["Repository"]).rstrip("/")


def extras(root: Path = REPO) -> set[str]:
    return set(_pyproject(root)["project"]["optional-dependencies"])  # type: ignore[index]


@cache
def hook_ids(root: Path = REPO) -> set[str]:
    hooks = YAML(typ="safe").load((root / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    return {hook["id"] for hook in hooks}


@cache
def action_inputs(root: Path = REPO) -> set[str]:
    action = YAML(typ="safe").load((root / "action.yml").read_text(encoding="utf-8"))
    return set(action["inputs"])


@cache
def tags(root: Path = REPO) -> frozenset[str]:
    listed = subprocess.run(
        ["git", "-C", str(root), "tag", "--list"], capture_output=True, text=True, check=False
    )
    return frozenset(listed.stdout.split())


def _is_commit(sha: str, root: Path) -> bool:
    found = subprocess.run(
        ["git", "-C", str(root), "cat-file", "-e", f"{sha}^{{commit}}"], capture_output=True, check=False
    )
    return found.returncode == 0


def ref_problem(ref: str, text: str, root: Path = REPO) -> str | None:
    """Why ``ref`` (a ``rev:``, an ``@ref``) names nothing, or None (the placeholder rule).
    ``text`` is the whole document: the placeholder needs a link to install.md in it."""
    if ref == PLACEHOLDER:
        return None if "install.md" in text else f"{PLACEHOLDER} without a link to docs/install.md"
    if ref == TEMPLATE:
        return None
    if _SHA.fullmatch(ref):
        return None if _is_commit(ref, root) else f"{ref} is not a commit of this repository"
    if ref in tags(root):
        return None
    return f"{ref!r} is not a tag of this repository (git tag lists {sorted(tags(root)) or 'none'})"


def _extras_problems(spec: str, root: Path) -> list[str]:
    return [
        f"no extra {name!r} in pyproject.toml"
        for found in _EXTRA.finditer(spec)
        for name in (part.strip() for part in found.group(1).split(","))
        if name and name not in extras(root)
    ]


def _requirement_problems(argument: str, text: str, root: Path) -> list[str]:
    """One argument of ``pip install``."""
    if argument.startswith((".", "./")):
        local = argument.split("[", 1)[0]
        problems = [] if (root / local).exists() else [f"{local} does not exist"]
        return problems + [
            f"no extra {name!r} in pyproject.toml"
            for name in re.findall(r"[\w-]+", argument.partition("[")[2])
            if name not in extras(root)
        ]
    name, _, url = argument.partition(" @ ") if " @ " in argument else ("", "", argument)
    url = url.strip()
    if url.startswith("git+"):
        location, _, ref = url.removeprefix("git+").rpartition("@")
        if not location:
            location, ref = url.removeprefix("git+"), ""
        problems = _extras_problems(name or argument, root)
        if location.rstrip("/").removesuffix(".git") != repository_url(root):
            problems.append(f"{location} is not the repository's URL {repository_url(root)}")
        if not ref:
            problems.append(f"{argument}: no commit pinned (@{PLACEHOLDER})")
        else:
            problem = ref_problem(ref, text, root)
            problems += [problem] if problem else []
        return problems
    if re.match(r"kaffinity\b", argument, re.IGNORECASE):
        return [f"{argument!r} installs from PyPI, which has no kaffinity release yet"]
    return []  # another package


def pip_problems(command: str, text: str, root: Path = REPO) -> list[str]:
    """The problems of one ``pip install ...`` command line."""
    try:
        words = shlex.split(command.split("#", 1)[0] if " #" in command else command)
    except ValueError:
        return [f"cannot parse {command!r}"]
    if "install" not in words:
        return []
    words = words[words.index("install") + 1 :]
    problems: list[str] = []
    skip = False
    for index, word in enumerate(words):
        if skip:
            skip = False
            continue
        if word in ("&&", ";", "|"):
            break
        if word in ("-r", "--requirement", "-c", "--constraint"):
            if index + 1 < len(words) and not (root / words[index + 1]).exists():
                problems.append(f"{words[index + 1]} does not exist")
            skip = True
            continue
        if word.startswith("-"):  # -e . checks the path next; --upgrade and the like
            continue
        problems += _requirement_problems(word, text, root)
    return problems


def _step_inputs(lines: list[str], start: int) -> list[str]:
    """The keys under ``with:`` of the step whose ``uses:`` is ``lines[start]``."""
    column = lines[start].index("uses:")
    found: list[str] = []
    inside: int | None = None
    for line in lines[start + 1 :]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" -"))
        if indent < column or (indent == column and line.lstrip().startswith("-")):
            break
        if line.lstrip(" ").startswith("- ") and len(line) - len(line.lstrip(" ")) < column:
            break
        if indent == column:
            inside = None
            if line.strip().startswith("with:"):
                inside = -1
            continue
        if inside is not None:
            if inside == -1:
                inside = indent
            if indent == inside:
                key = line.strip().split(":", 1)[0]
                found.append(key)
    return found


def block_problems(block: str, text: str, root: Path = REPO) -> list[str]:
    """The problems of one code block (``text``: the whole document, for the placeholder rule)."""
    problems: list[str] = []
    joined = re.sub(r"\\\n\s*", " ", block)
    for line in joined.splitlines():
        found = re.search(r"\bpip3?\s+install\b.*", line)
        if found:
            problems += pip_problems(found.group(0), text, root)
    lines = block.splitlines()
    ours = False
    for index, line in enumerate(lines):
        stripped = line.split(" #", 1)[0].strip().removeprefix("- ").strip()
        if stripped.startswith("repo:"):
            url = stripped.removeprefix("repo:").strip().strip("'\"")
            ours = "kaffinity" in url
            if ours and url.rstrip("/").removesuffix(".git") != repository_url(root):
                problems.append(f"repo: {url} is not the repository's URL {repository_url(root)}")
        elif stripped.startswith("rev:") and ours:
            problem = ref_problem(stripped.removeprefix("rev:").strip().strip("'\""), text, root)
            problems += [f"rev: {problem}"] if problem else []
        elif stripped.startswith("id:") and ours:
            hook = stripped.removeprefix("id:").strip().strip("'\"")
            if hook not in hook_ids(root):
                problems.append(f"no hook {hook!r} in .pre-commit-hooks.yaml")
        elif stripped.startswith("uses:") and "kaffinity/kaffinity@" in stripped:
            ref = stripped.split("@", 1)[1].strip().strip("'\"")
            problem = ref_problem(ref, text, root)
            problems += [f"uses: {problem}"] if problem else []
            for key in _step_inputs(lines, index):
                if key not in action_inputs(root):
                    problems.append(f"no input {key!r} in action.yml")
                if key == "version":
                    problems.append("the version input installs from PyPI, which has no release yet")
    problems += _extras_problems(block, root)
    return problems


def inline_problems(span: str, text: str, root: Path = REPO) -> list[str]:
    problems: list[str] = []
    found = re.search(r"\bpip3?\s+install\b.*", span)
    if found:
        problems += pip_problems(found.group(0), text, root)
    for ref in _ACTION.findall(span):
        problem = ref_problem(ref, text, root)
        problems += [f"{span}: {problem}"] if problem else []
    rev = re.fullmatch(r"rev:\s*(\S+)", span.strip())
    if rev:
        problem = ref_problem(rev.group(1), text, root)
        problems += [f"{span}: {problem}"] if problem else []
    return problems + _extras_problems(span, root)


def problems(text: str, root: Path = REPO, document: str = "") -> list[str]:
    """Every install snippet of a Markdown ``text`` (the file ``document``) that names something
    that does not exist."""
    if document.endswith("install.md"):  # the page that says how to get the SHA
        text += "\n[install.md](install.md)"
    found: list[str] = []
    for block in _FENCE.finditer(text):
        found += dict.fromkeys(block_problems(block.group(3), text, root))  # once per block
    prose = _FENCE.sub("", text)
    for span in _INLINE.finditer(prose):
        found += inline_problems(span.group(2), text, root)
    return found
