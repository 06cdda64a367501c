"""The repository's manifests: the default context of ``kaffinity lint --changed``.

pre-commit passes only the files a commit changes, but the cross-workload rules need every
manifest the changed ones may meet. Unless ``context:`` names them, they are the manifests of the
git work tree around the working directory, as git lists them: tracked files and untracked ones
that ``.gitignore`` does not exclude (so rendered charts and vendored folders that are ignored
stay out), with the suffixes and the hidden-entry rule that folder discovery uses.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence

from kaffinity.load.parse import MANIFEST_SUFFIXES, LoadError, decode

#: A stuck git (a network file system, a lock) must not hang a commit hook.
_GIT_TIMEOUT = 30


def within(real: str, root: str) -> bool:
    """Whether the real path ``real`` is the real folder ``root`` or below it (by whole path
    components: ``/repo-other`` is not below ``/repo``). The one containment test of the paths a
    checkout names (docs/security.md)."""
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def work_tree(path: str) -> str | None:
    """The top of the git work tree holding ``path`` (a file or a folder), or None: the nearest
    folder from it upward with a ``.git`` entry, a folder or the file of a linked worktree or a
    submodule, as git's discovery looks for one (``setup.c``, ``setup_git_directory_gently``),
    without running git. git refuses ``.git`` as a name inside a tree (``verify_path``), so a
    checkout cannot plant one below its own top. ``path`` as given (absolute), symlinks kept."""
    folder = os.path.abspath(path)
    if not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    while True:
        if os.path.lexists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def repository_manifests(start: str = ".") -> list[str] | None:
    """The manifest files of the git work tree holding ``start``, relative to the working
    directory, in a stable order; None when ``start`` is in no work tree or git is unavailable."""
    top = _git(start, "rev-parse", "--show-toplevel")
    if top is None:
        return None
    listed = _git(
        top.strip(),
        "ls-files",
        "-z",
        "--cached",
        "--others",
        "--exclude-standard",
        "--",
        *(f"*{suffix}" for suffix in MANIFEST_SUFFIXES),
    )
    if listed is None:
        return None
    root = top.strip()
    real_root = os.path.realpath(root)
    files = []
    for name in sorted(set(filter(None, listed.split("\0")))):
        if any(part.startswith(".") for part in name.split("/")):
            continue  # as folder discovery does: .github/, .pre-commit-config.yaml, ...
        path = os.path.join(root, name)
        if os.path.islink(path) and not within(os.path.realpath(path), real_root):
            continue  # a committed symlink out of the work tree is not read (docs/security.md)
        if os.path.isfile(path):  # listed in the index but deleted from the work tree
            files.append(os.path.relpath(path))
    return files


def ignored_paths(folder: str) -> frozenset[str]:
    """What git ignores below ``folder`` (``.gitignore``, ``.git/info/exclude``, the global
    excludes file): untracked files and whole folders, as normalised paths that start with
    ``folder`` as given. Empty when ``folder`` is in no work tree or git is unavailable; tracked
    files are never ignored, as in git. One ``git ls-files`` call; a folder git ignores entirely
    was named on purpose, so nothing below it counts as ignored.
    """
    listed = _git(folder, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
    if not listed:
        return frozenset()
    ignored = set()
    for name in listed.split("\0"):
        path = os.path.normpath(os.path.join(folder, name))
        if name and path != os.path.normpath(folder):
            ignored.add(path)
    return frozenset(ignored)


#: git as kaffinity runs it in a checkout: core.fsmonitor off, so that listing or reading the
#: index runs no hook a repository's configuration names (git-config(1), core.fsmonitor).
_GIT = ("git", "-c", "core.fsmonitor=false")


def _git(cwd: str, *args: str) -> str | None:
    try:
        done = subprocess.run(
            [*_GIT, *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="surrogateescape",
            timeout=_GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def previous_versions(paths: Sequence[str], size_limit: int) -> dict[str, str]:
    """The text each of ``paths`` had at ``HEAD`` of its git work tree (``lint --changed``: a
    staged commit changes them), by the path as given. Left out: a file new since ``HEAD``, one
    outside a work tree, larger than ``size_limit`` bytes, or not text; all of them when git is
    unavailable. Two ``git cat-file`` calls per work tree (sizes first, then the blobs small
    enough), whatever the number of files: ``git cat-file --batch`` prints objects as stored,
    running no filter or textconv (git-cat-file(1))."""
    wanted: dict[str, list[tuple[str, str]]] = {}
    for path in paths:
        top = work_tree(path)
        if top is None or "\n" in path:
            continue
        relative = os.path.relpath(os.path.abspath(path), top)
        if relative.startswith(".."):
            continue
        wanted.setdefault(top, []).append((path, relative.replace(os.sep, "/")))
    found: dict[str, str] = {}
    for top, names in wanted.items():
        request = "".join(f"HEAD:{relative}\n" for _, relative in names)
        sizes = _git_bytes(top, request.encode(), "cat-file", "--batch-check")
        if sizes is None:
            continue
        small: list[tuple[str, str]] = []
        for (path, relative), line in zip(names, sizes.decode("utf-8", "replace").splitlines(), strict=False):
            parts = line.split(" ")
            if len(parts) == 3 and parts[1] == "blob" and parts[2].isdigit() and int(parts[2]) <= size_limit:
                small.append((path, relative))
        if not small:
            continue
        blobs = _git_bytes(
            top, "".join(f"HEAD:{relative}\n" for _, relative in small).encode(), "cat-file", "--batch"
        )
        if blobs is None:
            continue
        position = 0
        for path, _ in small:
            end = blobs.find(b"\n", position)
            header = blobs[position:end].split(b" ") if end >= 0 else []
            if len(header) != 3 or header[1] != b"blob" or not header[2].isdigit():
                break  # the two calls disagree (the index moved): keep what was read
            size = int(header[2])
            content = blobs[end + 1 : end + 1 + size]
            position = end + 1 + size + 1
            try:
                found[path] = decode(content)
            except (LoadError, UnicodeDecodeError):
                continue
    return found


def _git_bytes(cwd: str, stdin: bytes, *args: str) -> bytes | None:
    try:
        done = subprocess.run(
            [*_GIT, *args], cwd=cwd, input=stdin, capture_output=True, timeout=_GIT_TIMEOUT, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None
