"""The remote cache: where fetched charts and git trees are kept (outside any repository, refused
when others can write it or it is a symbolic link), an entry written whole or not at all, a chart
archive extracted within Helm's limits; what a fetch gives (:class:`Fetched`, :class:`NotFetched`)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import posixpath
import re
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kaffinity.load.parse import DEFAULT_LIMITS, Limits
from kaffinity.repo.sandbox import WALK_ENTRIES, Sandbox

#: The remote cache's folder, for tests and runners that keep it elsewhere.
CACHE_ENV = "KAFFINITY_REMOTE_CACHE"
#: Bytes of a chart once extracted (Helm's loader.MaxDecompressedChartSize).
MAX_CHART_SIZE = 100 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Fetched:
    """A fetched chart's folder (holding ``Chart.yaml``) or a git tree's root, in the cache."""

    path: str
    #: What was fetched, as pinned: the chart version chosen, or the commit.
    version: str


@dataclass(frozen=True, slots=True)
class NotFetched:
    """Why something remote could not be had: one line for a note or a finding."""

    reason: str
    #: Only because the network is off (``--allow-network`` would fetch it).
    offline: bool = False


@dataclass(frozen=True, slots=True)
class GitRef:
    """Which tree of a git repository (Flux ``GitRepository.spec.ref``, Argo ``targetRevision``):
    the first that is set wins, in Flux's order: commit, name, semver, tag, branch."""

    branch: str | None = None
    tag: str | None = None
    semver: str | None = None
    commit: str | None = None
    name: str | None = None


class FetchFailed(Exception):
    """Fetching stopped: the message is the NotFetched reason."""


NETWORK_OFF = "the network is off (--allow-network allows it)"


# --- the cache -------------------------------------------------------------------------------


def cache_folder(sandbox: Sandbox | None = None, *, create: bool = True) -> str | None:
    """The remote cache's folder, made if missing (``create``; else None when there is none);
    raises FetchFailed when it may not be used: a symlink, someone else's or writable by others
    (kaffinity.cache's rule for its key folder), or inside a repository being linted."""
    from kaffinity.load.userfiles import private_problem, user_cache_folder

    override = os.environ.get(CACHE_ENV)
    if override:
        folder = os.path.abspath(override)
        parent = os.path.dirname(folder)
    else:
        parent = user_cache_folder()  # type: ignore[assignment]
        if parent is None:
            raise FetchFailed(f"no home folder for the remote cache (set {CACHE_ENV} or XDG_CACHE_HOME)")
        folder = os.path.join(parent, "remote")
    if sandbox is not None:
        from kaffinity.repo.sandbox import inside

        if sandbox.roots and inside(folder, sandbox.roots):
            raise FetchFailed(
                f"the remote cache {folder} is inside the repository being linted "
                f"(set {CACHE_ENV} to a folder outside it)"
            )
    if not create and not os.path.lexists(folder):
        return None
    try:
        os.makedirs(os.path.dirname(parent), exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(parent, 0o700)
        if not override:
            problem = private_problem(os.lstat(parent), parent, 0o022, "the cache")
            if problem is not None:
                raise FetchFailed(problem)
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
        problem = private_problem(os.lstat(folder), folder, 0o022, "the remote cache")
    except OSError as error:
        raise FetchFailed(f"cannot use the remote cache {folder}: {error.strerror or error}") from None
    if problem is not None:
        raise FetchFailed(problem)
    return folder


def entry_name(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:40]


def cached_entry(folder: str, name: str) -> dict[str, Any] | None:
    """The ``entry.json`` of a complete entry (a real folder, not a symlink), or None."""
    path = os.path.join(folder, name)
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return None
        with open(os.path.join(path, "entry.json"), encoding="utf-8") as handle:
            meta = json.load(handle)
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def store_entry(folder: str, name: str, meta: Mapping[str, Any], fill: Callable[[str], None]) -> str:
    """Make the entry ``name``: ``fill`` writes its content in a temporary folder, which is then
    renamed into place (atomic; a concurrent run's entry of the same name wins, it holds the
    same)."""
    temporary = tempfile.mkdtemp(prefix=".tmp-", dir=folder)
    try:
        fill(temporary)
        with open(os.path.join(temporary, "entry.json"), "w", encoding="utf-8") as handle:
            json.dump(dict(meta), handle)
        target = os.path.join(folder, name)
        try:
            os.rename(temporary, target)
        except OSError:
            if cached_entry(folder, name) is None:
                raise
            shutil.rmtree(temporary, ignore_errors=True)
        return target
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


# --- archives --------------------------------------------------------------------------------


def extract_chart(data: bytes, destination: str, limits: Limits = DEFAULT_LIMITS) -> None:
    """A chart archive's files into ``destination`` as Helm's loader reads them (the first path
    component dropped). Raises FetchFailed for an archive Helm refuses (absolute paths, ``..``,
    past the sizes) and for links, devices and too many entries, which kaffinity refuses."""
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            for count, member in enumerate(archive, start=1):
                if count > WALK_ENTRIES:
                    raise FetchFailed(f"the archive holds more than {WALK_ENTRIES:,} entries")
                relative = _member_path(member)
                if relative is None:
                    continue
                if member.size > limits.file_size:
                    raise FetchFailed(f"{member.name} is larger than the limit of {limits.file_size} bytes")
                total += member.size
                if total > MAX_CHART_SIZE:
                    raise FetchFailed(f"the chart is larger than {MAX_CHART_SIZE} bytes once extracted")
                source = archive.extractfile(member)
                if source is None:
                    continue
                target = os.path.join(destination, *relative.split("/"))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "xb") as handle:
                    shutil.copyfileobj(source, handle, 65536)
    except FileExistsError as error:
        raise FetchFailed(f"the archive holds {error.filename} twice") from None
    except (tarfile.TarError, OSError, EOFError, ValueError) as error:
        raise FetchFailed(f"not a readable chart archive (gzip tar): {error}") from None
    if not os.path.isfile(os.path.join(destination, "Chart.yaml")):
        raise FetchFailed("the archive holds no Chart.yaml at its top")


def _member_path(member: tarfile.TarInfo) -> str | None:
    """The path of ``member`` inside the chart (pkg/chart/loader/archive.go: the first component
    dropped, cleaned), None for what is skipped (folders, pax headers); raises FetchFailed for what
    is refused."""
    name = member.name.replace("\\", "/")
    if member.isdir() or member.type in (tarfile.XHDTYPE, tarfile.XGLTYPE):
        return None
    if member.issym() or member.islnk():
        raise FetchFailed(f"the archive holds a link ({member.name} -> {member.linkname})")
    if not member.isfile():
        raise FetchFailed(f"the archive holds {member.name}, which is not a regular file")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise FetchFailed(f"the archive holds an absolute path ({member.name})")
    relative = posixpath.normpath("/".join(name.split("/")[1:]) or ".")
    if relative == "." or relative.startswith("/"):
        raise FetchFailed(f"the archive holds content outside the chart folder ({member.name})")
    if relative == ".." or relative.startswith("../"):
        raise FetchFailed(f"the archive holds a path leading out of the chart ({member.name})")
    return relative


def cached_chart(folder: str, repository: str, name: str, version: str) -> Fetched | None:
    entry = entry_name("chart", repository.rstrip("/"), name, version)
    meta = cached_entry(folder, entry)
    if meta is None or meta.get("name") != name or meta.get("version") != version:
        return None
    return Fetched(os.path.join(folder, entry, "chart"), version)


def with_file_size(limits: Limits, size: int) -> Limits:
    from dataclasses import replace

    return replace(limits, file_size=max(limits.file_size, size))


def keep_chart(
    folder: str,
    repository: str,
    name: str,
    version: str,
    archive: bytes,
    limits: Limits,
    extra: Mapping[str, str],
) -> Fetched:
    def fill(temporary: str) -> None:
        chart = os.path.join(temporary, "chart")
        os.mkdir(chart)
        extract_chart(archive, chart, limits)
        _check_chart_name(chart, name)

    entry = entry_name("chart", repository.rstrip("/"), name, version)
    meta = {"kind": "chart", "repository": repository, "name": name, "version": version, **extra}
    path = store_entry(folder, entry, meta, fill)
    return Fetched(os.path.join(path, "chart"), version)


def _check_chart_name(chart: str, name: str) -> None:
    from kaffinity.load.parse.reader import _documents

    try:
        with open(os.path.join(chart, "Chart.yaml"), encoding="utf-8") as handle:
            text = handle.read(1024 * 1024)
        meta = next((data for data, _ in _documents(text, DEFAULT_LIMITS)), None)
    except Exception:  # noqa: BLE001 - any unreadable Chart.yaml is the archive's fault
        raise FetchFailed("the archive's Chart.yaml cannot be read") from None
    if not isinstance(meta, dict) or meta.get("name") != name:
        found = meta.get("name") if isinstance(meta, dict) else None
        raise FetchFailed(f"the archive holds chart {found!r}, not {name}")
