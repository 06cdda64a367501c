"""Finding and reading manifest files: directories walked (gitignore, excludes), files read within
the limits, classified as manifests or skipped, and parsed (:mod:`kaffinity.load.parse`).

:func:`load` is the entry point of the loading stage: discovery, then reading in this process or
in several (:mod:`kaffinity.load.parallel`, ``--jobs N``).
"""

from __future__ import annotations

import gc
import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence

from kaffinity.load.parse import (
    DEFAULT_LIMITS,
    MANIFEST_SUFFIXES,
    STDIN,
    Limits,
    SourceFile,
    gc_paused,
)
from kaffinity.load.read import read


def discover(
    paths: Iterable[str],
    excluded: ExcludeFn | None = None,
    seen: set[tuple[int, int]] | None = None,
    *,
    gitignore: bool = True,
) -> Iterator[str]:
    """Expand paths into manifest files, in a stable order.

    Directories are walked recursively for ``*.yaml``, ``*.yml`` and ``*.json``; hidden entries
    are skipped (an explicitly named hidden directory is still walked), symlinked directories are
    followed once (loops survive). A symlink met in a folder is followed only when it leads
    inside the folder's git work tree (or, outside any, the folder named): the checkout is
    attacker input, and git stores symlinks, so a committed ``x.yaml -> ~/.kube/config`` must
    not be read and shown in a finding (issue 31, docs/security.md). A path named here is
    read wherever it leads: naming it is the choice of the person running kaffinity.

    ``-`` stands for stdin. A path that does not exist is yielded
    as is, so that reading it reports the problem. ``seen``: the (device, inode) pairs of files
    and folders already read by an earlier call, which are skipped (the set is updated).
    ``gitignore``: in a folder inside a git work tree, what git ignores (``.gitignore``,
    ``.git/info/exclude``, the global excludes file) is not walked; files named explicitly are
    read whatever git says (:func:`kaffinity.load.repository.ignored_paths`, one git call per folder).
    """
    if seen is None:
        seen = set()
    for path in paths:
        if path == STDIN:
            yield STDIN
            continue
        if excluded is not None and excluded(path):
            continue
        if os.path.isdir(path):
            yield from map(shown, _walk(path, seen, excluded, gitignore))
        elif _first_visit(path, seen):
            yield shown(path)


def shown(path: str) -> str:
    """``path`` without its leading ``./`` (``./overlays/prod/patch.yaml`` is
    ``overlays/prod/patch.yaml``): the name every report, the code frame's text and the units
    use for the file, whether ``.``, ``./overlays`` or ``overlays`` was linted. Ruff names files
    so (relative to the working folder, no ``./``: ruff_linter ``fs::relativize_path``), and
    GitHub's annotations and code scanning need the repository-relative path. A name that would
    become ``-`` (stdin) or empty keeps its prefix."""
    stripped = path
    while stripped.startswith("./") or stripped.startswith("." + os.sep):
        stripped = stripped[2:].lstrip("/" + os.sep)
    return stripped if stripped not in ("", STDIN) else path


def _walk(
    top: str, seen: set[tuple[int, int]], excluded: ExcludeFn | None, gitignore: bool = True
) -> Iterator[str]:
    if not _first_visit(top, seen):
        return
    from kaffinity.load.repository import work_tree

    ignored: frozenset[str] = frozenset()
    if gitignore:
        from kaffinity.load.repository import ignored_paths

        ignored = ignored_paths(top)
    allowed = os.path.realpath(work_tree(os.path.realpath(top)) or top)
    for root, dirs, files in os.walk(top, followlinks=True):
        kept = []
        for directory in sorted(dirs):
            full = os.path.join(root, directory)
            if directory.startswith(".") or (excluded is not None and excluded(full)):
                continue
            if ignored and os.path.normpath(full) in ignored:
                continue
            if _first_visit(full, seen) and _stays_in(full, allowed):
                kept.append(directory)
        dirs[:] = kept
        for file in sorted(files):
            full = os.path.join(root, file)
            if (
                file.endswith(MANIFEST_SUFFIXES)
                and not file.startswith(".")
                and not (excluded is not None and excluded(full))
                and not (ignored and os.path.normpath(full) in ignored)
                and _stays_in(full, allowed)
                and _first_visit(full, seen, regular=True)
            ):
                yield full


def _stays_in(path: str, allowed: str) -> bool:
    """Whether ``path`` is no symlink, or one that leads inside the folder ``allowed`` (a real
    path). One ``lstat``; a link's target is resolved only for links."""
    if not os.path.islink(path):
        return True
    from kaffinity.load.repository import within

    return within(os.path.realpath(path), allowed)


def _first_visit(path: str, seen: set[tuple[int, int]], *, regular: bool = False) -> bool:
    """Whether ``path`` is seen for the first time (one ``stat``, on the discovery hot path).
    ``regular``: a FIFO, socket or device found in a folder is never read either (a FIFO would
    block the walk). A path that cannot be stat'ed (broken link, loop) is visited: reading it
    reports the problem."""
    try:
        info = os.stat(path)
    except OSError:
        return True
    if regular and not stat.S_ISREG(info.st_mode):
        return False
    identity = (info.st_dev, info.st_ino)
    if identity in seen:
        return False
    seen.add(identity)
    return True


def anchor_patterns(patterns: Iterable[str], base: str) -> tuple[str, ...]:
    """Anchor glob patterns that hold a ``/`` at ``base`` (the config file's folder, or the
    working directory for flags); patterns without one match at any depth and stay as they are."""
    anchored = []
    for raw in patterns:
        pattern = raw.strip().rstrip("/")
        pattern = pattern.removeprefix("./")
        if "/" in pattern and not os.path.isabs(pattern):
            pattern = os.path.join(os.path.abspath(base), pattern)
        anchored.append(pattern.replace(os.sep, "/"))
    return tuple(anchored)


class ExcludeFn:
    """Glob patterns (``**`` for any depth), anchored at ``base`` when they hold a ``/``; and
    ``folders``, excluded with everything under them."""

    def __init__(self, patterns: Sequence[str], base: str = ".", folders: Iterable[str] = ()) -> None:
        regexes = [_glob_regex(pattern) for pattern in anchor_patterns(patterns, base)]
        self.pattern = re.compile("|".join(f"(?:{regex})" for regex in regexes)) if regexes else None
        self.folders = tuple(os.path.abspath(folder) for folder in folders)

    def __call__(self, path: str) -> bool:
        if self.folders:
            full = os.path.abspath(path)
            if any(full == folder or full.startswith(folder + os.sep) for folder in self.folders):
                return True
        if self.pattern is None:
            return False
        parts = os.path.abspath(path).replace(os.sep, "/").split("/")
        # A pattern that names a folder excludes everything below it.
        return any(self.pattern.fullmatch("/".join(parts[:end])) for end in range(2, len(parts) + 1))


def _glob_regex(pattern: str) -> str:
    out = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif pattern[index] == "*":
            out.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(pattern[index]))
            index += 1
    regex = "".join(out)
    # A pattern without a slash matches at any depth, as in .gitignore.
    return regex if "/" in pattern else f"(?:.*/)?{regex}"


def load(
    paths: Sequence[str],
    excluded: ExcludeFn | None = None,
    seen: set[tuple[int, int]] | None = None,
    jobs: int = 1,
    limits: Limits = DEFAULT_LIMITS,
    *,
    gitignore: bool = True,
    manifests_only: bool = True,
) -> list[SourceFile]:
    """Discover and read every manifest under ``paths`` (skipping those in ``seen``, and in
    folders what git ignores unless ``gitignore`` is off, see :func:`discover`), parsing in up to
    ``jobs`` processes (:mod:`kaffinity.load.parallel`; the result is the same for any ``jobs``).
    Files that are not Kubernetes manifests come back skipped (:func:`read`, ``manifests_only``).

    What is loaded lives as long as the run, so it is moved out of the garbage collector's
    reach afterwards (``gc.freeze``): otherwise the first collection after loading walks every
    object again (1.3 s at 10,000 workloads). The data holds no reference cycles, so nothing
    is leaked; objects are still freed by reference counting.

    A command's progress indicator (:func:`kaffinity.load.progress.current`) shows the files read.
    """
    from kaffinity.load.progress import current

    progress = current()
    with gc_paused():
        with progress.stage("finding files"):
            found = list(discover(paths, excluded, seen, gitignore=gitignore))
        files = []
        with progress.stage("reading files", len(found)):
            if jobs > 1:
                from kaffinity.load.parallel import read_all

                files = read_all(found, jobs, limits, progress.tick, manifests_only=manifests_only)
            else:
                for path in found:
                    progress.tick(path)
                    files.append(read(path, limits, manifests_only=manifests_only))
        # Frozen before the collector is enabled again: the first allocation after that would
        # otherwise start a collection of the youngest generation, which is now every object
        # loaded (0.4 s at 10,000 workloads).
        gc.freeze()
    return files
