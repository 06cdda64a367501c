"""A git source fetched as a shallow checkout at a ref (a branch, a tag, a semver constraint over
tags, or a commit) with the ``git`` binary, confined (:mod:`kaffinity.repo.sandbox`), its
protocols limited and its tree checked before it is kept."""

from __future__ import annotations

import os
import re
import shutil
import stat
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence

from kaffinity.load.parse import DEFAULT_LIMITS, Limits
from kaffinity.repo.fetch.cache import (
    MAX_CHART_SIZE,
    NETWORK_OFF,
    Fetched,
    FetchFailed,
    GitRef,
    NotFetched,
    cache_folder,
    cached_entry,
    entry_name,
    store_entry,
)
from kaffinity.repo.sandbox import WALK_ENTRIES, Sandbox

_GIT_PROTOCOLS = "https:http:ssh:git"
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


# --- git -------------------------------------------------------------------------------------


def fetch_git(
    url: str,
    ref: GitRef,
    sandbox: Sandbox,
    *,
    limits: Limits = DEFAULT_LIMITS,
    local: bool = False,
) -> Fetched | NotFetched:
    """The tree of the git repository at ``url`` at ``ref`` (Flux's order: commit, name,
    semver, tag, branch; none: the remote's HEAD). ``local``: the URL is the runner's own
    (a test's ``file://`` remote), so git may read the disk; never for a checkout's URL."""
    what = f"git repository {url}"
    problem = _git_url_problem(url, local)
    if problem is not None:
        return NotFetched(f"{what}: {problem}")
    try:
        folder = cache_folder(sandbox, create=sandbox.network)
        commit = ref.commit.strip().lower() if ref.commit else None
        if commit is not None and not _COMMIT.fullmatch(commit):
            return NotFetched(f"{what}: commit {ref.commit!r} is not a full commit id")
        if commit is not None and folder is not None:
            hit = _git_entry(folder, url, commit)
            if hit is not None:
                return hit
        if not sandbox.network or folder is None:
            return NotFetched(f"{what} is remote and {NETWORK_OFF}", offline=True)
        git = shutil.which("git")
        if git is None:
            return NotFetched(f"{what}: git is not on the PATH")
        wanted: str | None = None
        if commit is None:
            commit, wanted = _resolve(git, url, ref, sandbox, local)
            hit = _git_entry(folder, url, commit)
            if hit is not None:
                return hit
        return _clone(git, folder, url, commit, wanted, sandbox, limits, local)
    except FetchFailed as failed:
        return NotFetched(f"{what}: {failed}")


def _git_url_problem(url: str, local: bool) -> str | None:
    if url.startswith("-"):
        return "not a URL"
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme in ("https", "http", "ssh", "git"):
        return None
    if scheme == "file":
        return None if local else "file:// URLs are not fetched (a checkout's URL must not read the disk)"
    if not scheme and re.match(r"^[\w.-]+@[\w.-]+:", url):
        return None  # scp-like ssh
    return f"only https, http, ssh and git URLs are fetched, not {url!r}"


def _git_entry(folder: str, url: str, commit: str) -> Fetched | None:
    entry = entry_name("git", url, commit)
    meta = cached_entry(folder, entry)
    if meta is None or meta.get("commit") != commit:
        return None
    return Fetched(os.path.join(folder, entry, "tree"), commit)


def _git(
    git: str,
    args: Sequence[str],
    sandbox: Sandbox,
    local: bool,
    cwd: str | None = None,
    limit: int = 16 * 1024**2,
) -> str:
    from kaffinity.repo.sandbox import run_tool

    protocols = _GIT_PROTOCOLS + (":file" if local else "")
    command = [
        git,
        "-c", "core.hooksPath=/dev/null",
        "-c", "core.symlinks=false",
        "-c", "core.fsmonitor=false",
        "-c", "protocol.file.allow=" + ("always" if local else "never"),
        "-c", "submodule.recurse=false",
        "-c", "credential.helper=",
        *args,
    ]  # fmt: skip
    outcome = run_tool(
        command,
        sandbox,
        timeout=sandbox.timeout,
        output_limit=limit,
        cwd=cwd,
        env={
            "GIT_ALLOW_PROTOCOL": protocols,
            "GIT_LFS_SKIP_SMUDGE": "1",
            "GIT_ASKPASS": "",
            "SSH_ASKPASS": "",
        },
    )
    if isinstance(outcome, str):
        raise FetchFailed(outcome)
    if outcome.stopped is not None:
        raise FetchFailed(f"git {args[0]} {outcome.stopped}")
    if outcome.code != 0:
        lines = [line for line in outcome.errors.splitlines() if line.strip()]
        first = next(
            (line for line in lines if line.startswith(("fatal:", "error:"))), lines[-1] if lines else ""
        )
        raise FetchFailed(f"git {args[0]} failed: {first.strip()}")
    return outcome.output


def _resolve(git: str, url: str, ref: GitRef, sandbox: Sandbox, local: bool) -> tuple[str, str]:
    """The commit ``ref`` names at ``url`` (``git ls-remote``), and the ref to fetch."""
    from kaffinity.repo.semver import newest

    listing = _git(git, ["ls-remote", "--", url], sandbox, local)
    refs: dict[str, str] = {}
    for line in listing.splitlines():
        sha, _, name = line.partition("\t")
        if _COMMIT.fullmatch(sha.strip()):
            refs[name.strip()] = sha.strip()

    def peeled(name: str) -> str | None:
        return refs.get(name + "^{}") or refs.get(name)

    if ref.name:
        name = ref.name
        found = peeled(name) or peeled(f"refs/heads/{name}") or peeled(f"refs/tags/{name}")
        target = (
            name
            if name in refs
            else f"refs/heads/{name}"
            if f"refs/heads/{name}" in refs
            else f"refs/tags/{name}"
        )
    elif ref.semver:
        tags = {
            name.removeprefix("refs/tags/"): name
            for name in refs
            if name.startswith("refs/tags/") and not name.endswith("^{}")
        }
        chosen = newest(tags, ref.semver)
        if chosen is None:
            raise FetchFailed(f"no tag matches {ref.semver}")
        target = tags[chosen]
        found = peeled(target)
    elif ref.tag:
        target = f"refs/tags/{ref.tag}"
        found = peeled(target)
    elif ref.branch:
        target = f"refs/heads/{ref.branch}"
        found = peeled(target)
    else:
        target = "HEAD"
        found = refs.get("HEAD")
    if found is None:
        raise FetchFailed(f"{target} not found")
    return found, target


def _clone(
    git: str,
    folder: str,
    url: str,
    commit: str,
    wanted: str | None,
    sandbox: Sandbox,
    limits: Limits,
    local: bool,
) -> Fetched:
    """A shallow fetch of ``wanted`` (or the commit itself) into a repository made here with no
    template, the commit's tree checked out into the entry; .git left out."""

    def fill(temporary: str) -> None:
        tree = os.path.join(temporary, "tree")
        store = os.path.join(temporary, "git")
        os.mkdir(tree)
        _git(git, ["init", "-q", "--bare", "--template=", store], sandbox, local)
        base = ["--git-dir", store]
        try:
            _git(
                git,
                [*base, "fetch", "-q", "--depth", "1", "--no-tags", "--", url, wanted or commit],
                sandbox,
                local,
            )
        except FetchFailed:
            # A server that does not serve a commit by id (git daemon's default): the whole history.
            _git(
                git, [*base, "fetch", "-q", "--no-tags", "--", url, "+refs/*:refs/fetched/*"], sandbox, local
            )
        _git(git, [*base, "--work-tree", tree, "checkout", "-q", "-f", commit, "--", "."], sandbox, local)
        shutil.rmtree(store)
        _check_tree(tree, limits)

    entry = entry_name("git", url, commit)
    path = store_entry(folder, entry, {"kind": "git", "url": url, "commit": commit}, fill)
    return Fetched(os.path.join(path, "tree"), commit)


def _check_tree(tree: str, limits: Limits) -> None:
    count = 0
    total = 0
    for current, folders, files in os.walk(tree):
        count += len(folders) + len(files)
        if count > WALK_ENTRIES:
            raise FetchFailed(f"the tree holds more than {WALK_ENTRIES:,} files")
        for name in files:
            info = os.lstat(os.path.join(current, name))
            if not stat.S_ISREG(info.st_mode):
                raise FetchFailed(f"the tree holds {name}, which is not a regular file")
            total += info.st_size
    if total > 16 * MAX_CHART_SIZE:
        raise FetchFailed(f"the tree is larger than {16 * MAX_CHART_SIZE} bytes")
