"""Another revision's tree, written to a folder of its own: what ``lint --new-from-rev REV`` lints.

The user's repository is only read: no worktree is added (``git worktree add`` writes under
``.git/worktrees`` and runs the post-checkout hook), nothing of the work tree or the index is
touched. The tree is listed with ``git ls-tree`` and its files written from ``git cat-file
--batch``, so that no attribute of the checkout decides what is written (``git archive`` leaves
out what an ``export-ignore`` in the revision's ``.gitattributes`` says, and applies
``export-subst``) and no filter or hook of any kind runs. Bounded: files larger than the file
size limit are left out (kaffinity would not read them), the whole tree is refused past
:data:`MAX_TREE_BYTES`, and git gets :data:`GIT_TIMEOUT` seconds per call.

Paths are checked as git's ``verify_path`` would (no ``..``, no ``.git``, no empty component,
no absolute path): a crafted tree object cannot write outside the folder. A symbolic link is
written only when it stays inside the folder; submodules (gitlinks) are left out. The folder is
made a git work tree of its own (``git init``, no template: no hook) whose index is REV's tree
(:func:`_tracked`), so that the lint of REV finds its repository root where the lint of the work
tree does (kaffinity.repo.sandbox), and git lists and ignores its files as it does the work
tree's.
"""

from __future__ import annotations

import os
import posixpath
import subprocess
import time

#: Seconds for each git call, and for writing the whole tree.
GIT_TIMEOUT = 120
#: The most a revision's tree may hold (files kaffinity would read): 2 GiB.
MAX_TREE_BYTES = 2 << 30
#: The longest symbolic link written (PATH_MAX on Linux): a longer one is left out, not read.
MAX_LINK_BYTES = 4096


#: git reads the repository only: no credential prompt, and no object fetched on demand from a
#: partial clone's promisor remote (``GIT_NO_LAZY_FETCH``, git 2.44+).
def _env() -> dict[str, str]:
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_NO_LAZY_FETCH": "1"}


class RevisionError(Exception):
    """REV cannot be linted: not a commit, not in a repository, git failed, too large."""


def _git(cwd: str, *args: str, data: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(
            # core.fsmonitor off: reading the index or the work tree runs no hook (git-config(1)).
            ["git", "-c", "core.fsmonitor=false", *args],
            cwd=cwd,
            env=_env(),
            input=data,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except FileNotFoundError:
        raise RevisionError("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise RevisionError(f"git {args[0]} took more than {GIT_TIMEOUT} s") from None
    except OSError as error:
        raise RevisionError(f"git {args[0]}: {error.strerror or error}") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RevisionError(said[-1] if said else f"git {args[0]} failed")
    return done.stdout


def resolve(rev: str, start: str = ".") -> tuple[str, str]:
    """The top of the work tree holding ``start`` and the commit ``rev`` names in it;
    :class:`RevisionError` outside a repository or when ``rev`` names no commit."""
    try:
        top = _git(start, "rev-parse", "--show-toplevel").decode("utf-8", "surrogateescape").strip()
    except RevisionError:
        raise RevisionError("--new-from-rev needs a git repository, and this is not one") from None
    if not rev or rev.startswith("-") or "\0" in rev:  # never an option of git's
        raise RevisionError(f"--new-from-rev: '{rev}' is not a revision")
    try:
        sha = _git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
    except RevisionError:
        raise RevisionError(
            f"--new-from-rev: '{rev}' is not a commit of this repository (a shallow clone may lack "
            "it: fetch it, e.g. git fetch --depth=1 origin <sha>)"
        ) from None
    return top, sha.decode("ascii").strip()


def _safe(name: str) -> bool:
    """A tree path git itself would check out (``read-cache.c``, ``verify_path``)."""
    parts = name.split("/")
    return not name.startswith("/") and all(
        part not in ("", ".", "..") and part.lower() != ".git" for part in parts
    )


def export(top: str, sha: str, dest: str, max_file: int) -> int:
    """Write the tree of commit ``sha`` of the repository at ``top`` into the empty folder
    ``dest``; the number of files written. Files larger than ``max_file`` are left out."""
    started = time.monotonic()
    listing = _git(top, "ls-tree", "-r", "-z", "--full-tree", "-l", sha)
    blobs: list[tuple[str, str, str]] = []  # mode, object, path
    total = 0
    for record in filter(None, listing.split(b"\0")):
        meta, _, raw = record.partition(b"\t")
        mode, kind, oid, size = meta.decode("ascii").split()
        name = raw.decode("utf-8", "surrogateescape")
        if kind != "blob" or not _safe(name) or not size.isdigit():
            continue  # a submodule (commit), a path git would refuse, a blob this clone lacks
        if int(size) > (MAX_LINK_BYTES if mode == "120000" else max_file):
            continue
        total += int(size)
        if total > MAX_TREE_BYTES:
            raise RevisionError(f"the tree of {sha[:12]} holds more than {MAX_TREE_BYTES >> 30} GiB")
        blobs.append((mode, oid, name))
    _tracked(top, sha, dest)
    # The files first, the symbolic links last: no file or folder is written through a link.
    # A path listed twice (a tree git fsck would refuse) is written once.
    blobs.sort(key=lambda blob: blob[0] == "120000")
    seen: set[str] = set()
    written = 0
    with subprocess.Popen(
        ["git", "cat-file", "--batch"], cwd=top, env=_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as batch:
        try:
            for mode, oid, name in blobs:
                if time.monotonic() - started > GIT_TIMEOUT:
                    raise RevisionError(f"writing the tree of {sha[:12]} took more than {GIT_TIMEOUT} s")
                if name in seen:
                    continue
                seen.add(name)
                written += _write(batch, mode, oid, name, dest)
        finally:
            if batch.stdin is not None:
                batch.stdin.close()
            batch.kill()
    _links_inside(dest)
    return written


def _tracked(top: str, sha: str, dest: str) -> None:
    """Make ``dest`` a git work tree whose index is REV's tree, as the work tree's index is the
    work tree's: its files are tracked, so a ``.gitignore`` of REV does not hide a file REV
    tracks (``git ls-files --others --ignored`` lists untracked files only), and ``--changed``
    lists REV's manifests as it lists the work tree's. No object is copied: the repository's
    object store is an alternate of ``dest``'s (``objects/info/alternates``, gitrepository-layout)."""
    _git(dest, "init", "--quiet", "--template=")
    common = _git(top, "rev-parse", "--git-common-dir").decode("utf-8", "surrogateescape").strip()
    objects = os.path.join(os.path.abspath(os.path.join(top, common)), "objects")
    alternates = os.path.join(dest, ".git", "objects", "info")
    os.makedirs(alternates, exist_ok=True)
    with open(
        os.path.join(alternates, "alternates"), "w", encoding="utf-8", errors="surrogateescape"
    ) as handle:
        handle.write(objects + "\n")
    _git(dest, "read-tree", sha)


def _write(batch: subprocess.Popen[bytes], mode: str, oid: str, name: str, dest: str) -> int:
    """One blob from ``git cat-file --batch``, written at ``name`` below ``dest`` (a symbolic link
    only when it stays inside ``dest``): 1 when a file was written."""
    assert batch.stdin is not None and batch.stdout is not None
    batch.stdin.write(oid.encode("ascii") + b"\n")
    batch.stdin.flush()
    header = batch.stdout.readline().split()
    if len(header) == 2 and header[1] == b"missing":
        return 0  # not in this clone (a partial or shallow one): as absent as from the work tree
    if len(header) != 3:
        raise RevisionError(f"git cat-file: no object {oid}")
    content = batch.stdout.read(int(header[2]))
    batch.stdout.read(1)  # the newline after the content
    parts = name.split("/")
    target = os.path.join(dest, *parts)
    if not _folders(dest, parts[:-1]):
        return 0  # a folder of its path is a file or a link of the tree
    if mode == "120000":
        link = content.decode("utf-8", "surrogateescape")
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), link))
        if link.startswith("/") or resolved == ".." or resolved.startswith("../"):
            return 0  # out of the tree: kaffinity would not follow it either
        try:
            os.symlink(link, target)
        except OSError:
            return 0  # a name the file system refuses, or one a folder of the tree holds
        return 0  # _links_inside checks it once every link is there (one may go through another)
    try:
        handle = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except OSError:
        return 0  # written already as a folder of another path, or a name the file system refuses
    with os.fdopen(handle, "wb") as out:
        out.write(content)
    if mode == "100755":
        os.chmod(target, 0o755)
    return 1


def _folders(dest: str, parts: list[str]) -> bool:
    """Make the folders ``parts`` below ``dest``, one at a time, refusing one that is a link or
    a file (``os.makedirs`` would follow a link out of the tree); whether they are there."""
    path = dest
    for part in parts:
        path = os.path.join(path, part)
        if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
            return False
        if not os.path.lexists(path):
            try:
                os.mkdir(path)
            except OSError:
                return False
    return True


def _links_inside(dest: str) -> None:
    """Remove each symbolic link of the written tree that leads out of ``dest``, as the tree is
    once all are written: one link may lead out only through another (``a -> b/../..`` with
    ``b -> ../..``), so links are checked together, again until none is removed."""
    top = os.path.realpath(dest)
    links = [
        os.path.join(folder, name)
        for folder, folders, files in os.walk(dest)
        for name in (*folders, *files)
        if os.path.islink(os.path.join(folder, name))
    ]
    removed = True
    while removed:
        removed = False
        for link in list(links):
            if not os.path.realpath(link).startswith(top + os.sep):
                os.unlink(link)
                links.remove(link)
                removed = True
