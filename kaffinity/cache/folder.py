"""The cache folder on disk, read as untrusted input (see :mod:`kaffinity.cache`): files opened
without following symlinks and read within a bound; the folder made with kaffinity's
``CACHEDIR.TAG`` and ``.gitignore`` or adopted only when it is kaffinity's (or empty); pruning
by kaffinity's own names only, with ``lstat`` and ``unlink``/``rmdir``, never through or at a
symlink, never the folder itself, never a name it does not know.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import threading

#: A fingerprint folder unused this long is deleted.
STALE_DAYS = 30
_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by kaffinity.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)
_GITIGNORE = "# created by kaffinity\n*\n"
#: The names pruning may delete, and nothing else (see kaffinity.cache's docstring).
_VERSION_NAME = re.compile(r"[0-9][0-9A-Za-z.+!_-]*-[0-9]+")
_HEX32 = re.compile(r"[0-9a-f]{32}")
_SHARD = re.compile(r"[0-9a-f]{2}")
_KEY = re.compile(r"[0-9a-f]{40}")
_TEMPORARY = re.compile(r"\.tmp-[0-9]+-[0-9]+-[0-9a-f]{40}")
#: Opening a file of the cache: never through a symlink, never blocking on a FIFO.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_READ = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


# --- pruning --------------------------------------------------------------------------------------


def _prune_entries(folder: str, since: float) -> None:
    """Delete the entries of ``folder`` (a fingerprint's) that no run has read or written since
    ``since`` (this run's start) when they are more than twice those used: read or written by
    this run, in this process or a worker (get touches what it reads), or by another run since
    this one started (the caller gives ``since`` with a little slack: file times come from a
    coarser clock than ``time.time()``)."""
    used = 0
    unused: list[str] = []
    for shard in _scan(folder):
        if not _SHARD.fullmatch(shard.name) or not shard.is_dir(follow_symlinks=False):
            continue
        for entry in _scan(shard.path):
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if not _KEY.fullmatch(entry.name) or not stat.S_ISREG(info.st_mode):
                continue
            if info.st_mtime >= since:
                used += 1
            else:
                unused.append(entry.path)
    if len(unused) > 2 * used:
        for path in unused:
            with contextlib.suppress(OSError):
                os.unlink(path)


#: The names below a version folder, level by level: fingerprints, shards, entries (with their
#: temporaries).
_VERSION_LEVELS: tuple[tuple[re.Pattern[str], ...], ...] = ((_HEX32,), (_SHARD,), (_KEY, _TEMPORARY))


def _remove_tree(path: str, levels: tuple[tuple[re.Pattern[str], ...], ...]) -> None:
    """Delete the real folder ``path``: at each level below it, only the names of ``levels``, real
    folders and (at the last level) regular files; then the folders left empty. Symlinks, other
    names and anything below them stay (and so does the folder that holds them)."""
    if levels:
        last = len(levels) == 1
        for entry in _scan(path):
            if not any(pattern.fullmatch(entry.name) for pattern in levels[0]):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if last and stat.S_ISREG(info.st_mode):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
            elif not last and stat.S_ISDIR(info.st_mode):
                _remove_tree(entry.path, levels[1:])
    with contextlib.suppress(OSError):
        os.rmdir(path)  # only if empty; a symlink is not removed by rmdir


# --- reading and writing files --------------------------------------------------------------------


def _read_up_to(descriptor: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.read(descriptor, min(limit - size, 1 << 24))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _write_new(path: str, *parts: bytes) -> None:
    """A new file at ``path`` (never through a symlink there: ``O_EXCL | O_NOFOLLOW``); a
    leftover of a run that died with this process id is replaced."""
    try:
        descriptor = os.open(path, _CREATE, 0o666)
    except FileExistsError:
        os.unlink(path)  # a symlink is unlinked, not followed
        descriptor = os.open(path, _CREATE, 0o666)
    with open(descriptor, "wb") as out:
        for part in parts:
            out.write(part)


def _read_small(path: str, limit: int = 4096) -> bytes | None:
    """A small regular file's bytes, never through a symlink; None if it is not one."""
    try:
        descriptor = os.open(path, _READ)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        return _read_up_to(descriptor, limit)
    except OSError:
        return None
    finally:
        os.close(descriptor)


def _what(info: os.stat_result) -> str:
    if stat.S_ISLNK(info.st_mode):
        return "a symlink"
    if stat.S_ISDIR(info.st_mode):
        return "a folder"
    return "a file"


def _is_folder(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _is_ours(root: str, named: bool = False) -> bool:
    """Whether ``root`` is a folder that holds kaffinity's ``CACHEDIR.TAG``, exactly as it writes
    it (a symlink only when ``named`` by ``--cache-dir``)."""
    try:
        info = os.stat(root) if named else os.lstat(root)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and _read_small(os.path.join(root, "CACHEDIR.TAG")) == _TAG.encode()


def _make_root(root: str, named: bool = False) -> None:
    """Make the cache folder with its ``CACHEDIR.TAG`` and ``.gitignore`` (as ruff's: neither git
    nor backups take it), atomically: made under a temporary name, then renamed into place, so
    that another run sees it whole or not at all. An existing folder is used only if it is
    kaffinity's (:func:`_is_ours`), or empty (then it gets the two files). Raises OSError."""
    if os.path.lexists(root):
        _adopt(root, named)
        return
    parent = os.path.dirname(os.path.abspath(root))
    os.makedirs(parent, exist_ok=True)
    temporary = os.path.join(parent, f".{os.path.basename(root)}.tmp-{os.getpid()}-{threading.get_ident()}")
    os.mkdir(temporary)
    try:
        _write_new(os.path.join(temporary, "CACHEDIR.TAG"), _TAG.encode())
        _write_new(os.path.join(temporary, ".gitignore"), _GITIGNORE.encode())
        os.rename(temporary, root)  # onto nothing, or an empty folder; else another run's
    except OSError as error:
        for name in ("CACHEDIR.TAG", ".gitignore"):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(temporary, name))
        with contextlib.suppress(OSError):
            os.rmdir(temporary)
        if error.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.EISDIR) and not os.path.lexists(root):
            raise
        _adopt(root, named)


def _adopt(root: str, named: bool) -> None:
    """Use an existing folder: kaffinity's, or empty (it gets the tag). Raises OSError."""
    if _is_ours(root, named):
        return
    names = _listdir(root)
    if names is None:
        raise OSError(errno.ENOTDIR, "not a folder")
    if any(not name.startswith(".tmp-tag-") for name in names):
        raise OSError(
            errno.EEXIST, "it holds files kaffinity did not make (and no CACHEDIR.TAG of kaffinity's)"
        )
    for name, text in ((".gitignore", _GITIGNORE), ("CACHEDIR.TAG", _TAG)):
        temporary = os.path.join(root, f".tmp-tag-{os.getpid()}-{threading.get_ident()}")
        _write_new(temporary, text.encode())
        os.replace(temporary, os.path.join(root, name))


def _listdir(path: str) -> list[str] | None:
    try:
        return os.listdir(path)
    except OSError:
        return None


def _scan(path: str, *, follow: bool = False) -> list[os.DirEntry[str]]:
    """The entries of the real folder ``path`` (not a symlink to one, unless ``follow``), or none."""
    if not follow and not _is_folder(path):
        return []
    try:
        with os.scandir(path) as entries:
            return list(entries)
    except OSError:
        return []
