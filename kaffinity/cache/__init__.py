"""The cache of repeated runs (``.kaffinity_cache``), as ruff's ``.ruff_cache`` and mypy's ``.mypy_cache``.

For each file, what the single-object stage made of it (:class:`kaffinity.engine.FileResult`: its
findings placed, its suppression comments, its compact model), keyed by:

- the file's name and bytes (a BLAKE2b digest of both: a finding names its file);
- kaffinity's version and the format of an entry: each version has its own folder, and the
  folders of other versions are deleted when a run opens the cache (never trusted across
  versions);
- the settings the stage reads (:func:`kaffinity.stream.fingerprint`: the Kubernetes version,
  the feature gates, the rules selected, their severities, the limits...) and whether the
  rules ran (a context file of ``--changed`` is only compacted): one folder per fingerprint.

Layout: ``<dir>/<version>-<FORMAT>/<fingerprint>/<2 hex digits>/<key>``.

**The cache is input like the checkout** (issue 31): ``.kaffinity_cache`` sits in the checkout,
and a branch can commit files into it, or a symlink in its place. So:

- An entry is data, never code: JSON (:func:`encode`, :func:`decode`, the standard library's C
  codec), each object of a file rebuilt by this module's own decoder, which checks the shape of
  everything it reads (a wrong shape anywhere is a miss). Pickle is used only between this
  process and its own ``--jobs`` workers (a pipe between processes of one run), never for
  anything read from the cache.
- An entry is authenticated: an HMAC-SHA256 (:mod:`hmac`, RFC 2104) over the format, the
  version, the fingerprint, the key and the payload, with a secret that is not in the checkout:
  ``KAFFINITY_CACHE_KEY`` (a CI runner that keeps the cache with ``actions/cache`` sets it from
  a secret), else ``cache-key`` in the user's cache folder (``$XDG_CACHE_HOME/kaffinity``,
  ``~/.cache/kaffinity``), made at the first run (32 random bytes, mode 0600, in a folder
  that only its owner can write). A committed, copied or forged entry fails the check before a
  byte of it is decoded: a miss, and the file is linted. Without a usable secret the cache is
  off for the run, with one note.
- Files are opened without following symlinks (``O_NOFOLLOW``), must be regular files, and are
  read up to :func:`max_entry` bytes; folders are checked with ``lstat``: a version, fingerprint
  or shard folder that is a symlink is never used, nor a cache folder that is one (unless the
  folder was named by ``--cache-dir``).
- A cache folder that git tracks (``git ls-files``) is not used, with a note: it came with the
  checkout.
- kaffinity writes its ``.gitignore`` and ``CACHEDIR.TAG`` only in a folder it creates (or an
  empty one it is given), and uses no other folder: one that holds anything else and not
  kaffinity's ``CACHEDIR.TAG`` (``~/.cache``, a repository) is refused with a note.
- Pruning deletes only names of kaffinity's own patterns (:data:`_VERSION_NAME`,
  :data:`_HEX32`, :data:`_SHARD`, :data:`_KEY`, :data:`_TEMPORARY`), inside a folder that holds
  kaffinity's tag, with ``lstat`` and ``unlink``/``rmdir`` only: never through or at a symlink,
  never the folder itself, never a name it does not know.

Entries are written atomically (a temporary file created with ``O_EXCL | O_NOFOLLOW`` in the
same folder, then ``os.replace``), so runs at the same time (pre-commit in two worktrees, an
editor and a terminal) never read half an entry; two runs writing the same key write the same
bytes.

Pruning: a run that wrote entries deletes, in its fingerprint's folder, those no run has read or
written since it started (a read touches the entry, in whichever process reads it) when they are
more than twice those used (files edited since, deleted, renamed), and the fingerprint folders no
run has used for :data:`STALE_DAYS` days.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import os
import re
import stat
import threading
import time
from array import array as _array
from typing import TYPE_CHECKING, Any

from kaffinity.load.source import PosDict as _PosDict
from kaffinity.load.source import PosList as _PosList
from kaffinity.load.source import Span as _Span
from kaffinity.load.userfiles import private_problem, user_cache_folder

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from kaffinity.engine import FileResult
    from kaffinity.load.parse import Limits

#: The default folder's name (in the config file's folder, else the working directory).
DEFAULT_DIR = ".kaffinity_cache"
#: The environment variable that names the folder (over ``cache-dir:``, under ``--cache-dir``).
ENV_DIR = "KAFFINITY_CACHE_DIR"
#: The environment variable that holds the secret entries are authenticated with.
ENV_KEY = "KAFFINITY_CACHE_KEY"
#: Characters ``KAFFINITY_CACHE_KEY`` has at least: a short secret can be guessed.
MIN_KEY_CHARS = 16
#: Bumped when what an entry holds, or how, changes. 4: JSON and an HMAC (pickles before);
#: 5: YAML read as go-yaml v2 reads it (flow-collection colons, anchors redefined, merge keys);
#: 6: a finding keeps its anchor (what its fingerprint takes of its place: kaffinity.findings).
FORMAT = 6
#: An entry starts with this, then its key, its HMAC (hex) and the payload, a line each.
MAGIC = b"kaffinity-cache %d\n" % FORMAT
_HEADER = len(MAGIC) + 41 + 65
#: A fingerprint folder unused this long is deleted.
STALE_DAYS = 30
_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by kaffinity.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)
_GITIGNORE = "# created by kaffinity\n*\n"
#: The names pruning may delete, and nothing else (see the module's docstring).
_VERSION_NAME = re.compile(r"[0-9][0-9A-Za-z.+!_-]*-[0-9]+")
_HEX32 = re.compile(r"[0-9a-f]{32}")
_SHARD = re.compile(r"[0-9a-f]{2}")
_KEY = re.compile(r"[0-9a-f]{40}")
_TEMPORARY = re.compile(r"\.tmp-[0-9]+-[0-9]+-[0-9a-f]{40}")
#: Opening a file of the cache: never through a symlink, never blocking on a FIFO.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_READ = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
#: A stuck git (a network file system, a lock) must not hang a commit hook.
_GIT_TIMEOUT = 30


def max_entry(limits: Limits) -> int:
    """The size past which an entry is neither written nor read: four times the size of the
    largest file kaffinity reads (``limits.file_size``), at least 1 MiB. An entry holds the
    compact tree of its file as JSON, positions included: on the benchmark corpus 1.05 times the
    file's size (a CRD bundle, mostly dropped by compaction, far less; a dense flow sequence of
    numbers, ``[1,2,3]``, up to 6 times: past the cap, the file is simply linted every run)."""
    return max(4 * limits.file_size, 1 << 20)


class Cache:
    """The entries of one kaffinity version and one fingerprint under ``root``, authenticated
    with ``secret``. Use :func:`open_cache`, which checks the folder and finds the secret."""

    def __init__(
        self,
        root: str,
        fingerprint: str,
        secret: bytes,
        *,
        max_size: int = 1 << 27,
        named: bool = False,
    ) -> None:
        import kaffinity

        self.root = root
        #: When this run opened the cache: an entry read or written since is in use.
        self.started = time.time()
        self.version = f"{kaffinity.__version__}-{FORMAT}"
        self.fingerprint = fingerprint
        self.folder = os.path.join(root, self.version, fingerprint)
        self.max_size = max_size
        #: The folder was named by --cache-dir: it may be a symlink (to a larger disk, say).
        self.named = named
        self.written = 0
        #: Why the cache stopped being used or written, once (None: it could, or nobody tried).
        self.error: str | None = None
        self._secret = secret
        self._context = (
            MAGIC
            + self.version.encode("utf-8", "surrogateescape")
            + b"\0"
            + fingerprint.encode("utf-8", "surrogateescape")
            + b"\0"
        )
        #: The folders checked to be real folders (lstat), or made here.
        self._folders: set[str] = set()
        #: The thread that writes entries, in the process that made it (see put).
        self._writer: ThreadPoolExecutor | None = None
        self._writer_pid = 0
        self._pending: list[Future[None]] = []

    def __getstate__(self) -> dict[str, object]:
        """What a --jobs worker gets with each task: the folder, the secret and the run's start,
        not this process's writer thread, nor what it has read and written so far."""
        state = dict(self.__dict__)
        state.update(_writer=None, _writer_pid=0, _pending=[], _folders=set(), written=0)
        return state

    @staticmethod
    def key(name: str, data: bytes, *, local: bool = True) -> str:
        """The entry of the file ``name`` holding ``data``; ``local``: with its rules' findings
        (False: a context file's, compacted only)."""
        digest = hashlib.blake2b(name.encode("utf-8", "surrogateescape"), digest_size=20)
        digest.update(b"\0checked\0" if local else b"\0context\0")
        digest.update(data)
        return digest.hexdigest()

    def _mac(self, key: str, payload: bytes) -> bytes:
        mac = hmac.new(self._secret, self._context, hashlib.sha256)
        mac.update(key.encode("ascii") + b"\0")
        mac.update(payload)
        return mac.hexdigest().encode("ascii")

    def _path(self, key: str) -> str:
        return os.path.join(self.folder, key[:2], key)

    def get(self, key: str) -> bytes | None:
        """The payload of the entry ``key``, authenticated (its HMAC checked), or None: no such
        entry, or one that is not a regular file, is larger than ``max_size``, or whose header or
        HMAC is wrong (damaged, committed, copied from another user, or forged)."""
        if self.error is not None or not _KEY.fullmatch(key):
            return None
        shard = os.path.join(self.folder, key[:2])
        if shard not in self._folders and not self._ready(shard, make=False):
            return None
        try:
            descriptor = os.open(self._path(key), _READ)
        except OSError:
            return None  # none, or a symlink (ELOOP)
        try:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode) or info.st_size > self.max_size:
                return None
            data = _read_up_to(descriptor, self.max_size + 1)
            if len(data) > self.max_size or len(data) < _HEADER:
                return None
            if data[: len(MAGIC)] != MAGIC or data[len(MAGIC) : len(MAGIC) + 41] != key.encode() + b"\n":
                return None
            payload = data[_HEADER:]
            if data[_HEADER - 1 : _HEADER] != b"\n" or not hmac.compare_digest(
                data[_HEADER - 65 : _HEADER - 1], self._mac(key, payload)
            ):
                return None
            # Used now: whichever process read it (a --jobs worker's own Cache is a copy),
            # pruning sees it by its time (see prune).
            with contextlib.suppress(OSError, NotImplementedError):
                os.utime(descriptor if os.utime in os.supports_fd else self._path(key))
        except OSError:
            return None
        finally:
            os.close(descriptor)
        return payload

    def _real_folder(self, path: str) -> bool:
        """Whether ``path`` is a folder, not a symlink (remembered). A symlink stops the cache
        for the run (:attr:`error`): the checkout may have put it there."""
        try:
            info = os.lstat(path)
        except OSError:
            return False
        if stat.S_ISDIR(info.st_mode):
            self._folders.add(path)
            return True
        self.error = f"the cache is off: {path} is {_what(info)}, not a folder kaffinity made"
        return False

    def put(self, key: str, payload: bytes) -> None:
        """Write an entry atomically, in a thread of this process (its file-system calls overlap
        the parsing of the next files: creating thousands of files in fresh folders cost 1-2.5 s
        of system time at 10,000 workloads on the benchmark machine); :meth:`flush` waits for
        the writes. A cache that cannot be written is left alone (``error``); an entry larger
        than ``max_size`` is not written (it would not be read)."""
        if self.error is not None or len(payload) + _HEADER > self.max_size or not _KEY.fullmatch(key):
            return
        self.written += 1
        if self._writer is None or self._writer_pid != os.getpid():
            # A --jobs worker starts with a copy of the parent's cache: its own thread.
            from concurrent.futures import ThreadPoolExecutor

            self._writer = ThreadPoolExecutor(1, thread_name_prefix="kaffinity-cache")
            self._writer_pid = os.getpid()
            self._pending = []
        self._pending.append(self._writer.submit(self._write, key, payload))

    def flush(self) -> None:
        """Wait for the writes :meth:`put` started in this process."""
        if self._writer is None or self._writer_pid != os.getpid():
            return
        for future in self._pending:
            future.result()
        self._pending = []

    def _write(self, key: str, payload: bytes) -> None:
        if self.error is not None:
            return
        path = self._path(key)
        folder = os.path.dirname(path)
        # A name no other writer uses (process and thread), in the entry's own folder: the
        # rename is then atomic, and a reader sees the old entry, the new one, or none.
        temporary = os.path.join(folder, f".tmp-{os.getpid()}-{threading.get_ident()}-{key}")
        header = MAGIC + key.encode() + b"\n" + self._mac(key, payload) + b"\n"
        try:
            for attempt in (1, 2):
                if folder not in self._folders and not self._ready(folder, make=True):
                    return
                try:
                    _write_new(temporary, header, payload)
                    os.replace(temporary, path)  # replaces a symlink there, never its target
                    break
                except FileNotFoundError:  # another run pruned the folder meanwhile: again
                    self._folders.discard(folder)
                    if attempt == 2:
                        raise
                except IsADirectoryError:  # a folder where the entry goes: not ours, left alone
                    with contextlib.suppress(OSError):
                        os.unlink(temporary)
                    return
                except BaseException:
                    with contextlib.suppress(OSError):
                        os.unlink(temporary)
                    raise
        except OSError as error:
            self.error = f"cannot write the cache in {self.root}: {error.strerror or error}"

    def _ready(self, shard: str, *, make: bool) -> bool:
        """Whether the version, fingerprint and shard folders (and, to ``make`` them, the cache
        folder: :func:`_make_root`) are real folders, never symlinks: each checked once (lstat)
        or made here. Raises OSError only to ``make``."""
        if make and self.root not in self._folders:
            _make_root(self.root, self.named)
            self._folders.add(self.root)
        for path in (os.path.dirname(self.folder), self.folder, shard):
            if path in self._folders:
                continue
            if make:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(path)
            if not self._real_folder(path):
                return False
        return True

    def prune(self) -> None:
        """Delete the other versions' folders, the fingerprints unused for :data:`STALE_DAYS`
        days, and (after a run that wrote entries) this fingerprint's unused entries when they
        outnumber the used ones twice: only names of kaffinity's patterns, in a folder that
        holds kaffinity's tag, never through a symlink. Never raises: another run may be
        pruning too."""
        self.flush()
        if self.error is not None or not _is_ours(self.root, self.named):
            return
        version = os.path.join(self.root, self.version)
        if not (_is_folder(version) and _is_folder(self.folder)):
            return
        with contextlib.suppress(OSError):
            os.utime(self.folder)  # this fingerprint is in use
        for entry in _scan(self.root, follow=self.named):
            if entry.name != self.version and _VERSION_NAME.fullmatch(entry.name):
                _remove_tree(entry.path, _VERSION_LEVELS)
        stale = time.time() - STALE_DAYS * 86400
        for entry in _scan(version):
            if entry.path != self.folder and _HEX32.fullmatch(entry.name):
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_mtime < stale:
                        _remove_tree(entry.path, _VERSION_LEVELS[1:])
        if self.written:
            _prune_entries(self.folder, self.started)


def _prune_entries(folder: str, since: float) -> None:
    """Delete the entries of ``folder`` (a fingerprint's) that no run has read or written since
    ``since`` (this run's start) when they are more than twice those used: read or written by
    this run, in this process or a worker (get touches what it reads), or by another run since
    this one started. (Where the file system keeps coarse times, an entry used in the run's
    first second may count as unused: a later miss.)"""
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


# --- opening ---------------------------------------------------------------------------------------


def cache_root(settings_dir: str | None, base_dir: str = ".", flag: str | None = None) -> str:
    """The cache folder: ``--cache-dir``, else ``KAFFINITY_CACHE_DIR``, else ``cache-dir:``,
    else ``.kaffinity_cache`` in ``base_dir`` (the config file's folder, or here)."""
    return flag or os.environ.get(ENV_DIR) or settings_dir or os.path.join(base_dir, DEFAULT_DIR)


def open_cache(
    settings_dir: str | None,
    base_dir: str,
    flag: str | None,
    fingerprint: str,
    limits: Limits,
) -> tuple[Cache | None, str | None]:
    """The cache of this run (:func:`cache_root`) and a note to show, or None and why not (the
    run goes on without it): no secret (:func:`cache_secret`), a folder that is a symlink (unless
    named by ``--cache-dir``), not a folder, a folder kaffinity did not make, or one git tracks."""
    root = cache_root(settings_dir, base_dir, flag)
    named = bool(flag)
    problem = _root_problem(root, base_dir if not flag and not os.environ.get(ENV_DIR) else None, named)
    if problem is not None:
        return None, f"the cache is off: {problem} (--no-cache to skip it)"
    secret, problem = cache_secret()
    if secret is None:
        return None, f"the cache is off: {problem} (--no-cache to skip it)"
    tracked = _tracked_by_git(root)
    if tracked is not None:
        return None, (
            f"the cache is off: git tracks {tracked}, in the cache folder {root}: a cache that came "
            "with the checkout is never read (--no-cache to skip it)"
        )
    return Cache(root, fingerprint, secret, max_size=max_entry(limits), named=named), None


def _root_problem(root: str, base_dir: str | None, named: bool) -> str | None:
    """Why ``root`` cannot be the cache folder, or None. ``base_dir``: the folder a root from the
    config file (or the default) must stay in, with no symlink on the way (the checkout could
    have put one there); a relative root from the command line or the environment has none
    below the working folder either (which is often the checkout). ``named``: given by
    ``--cache-dir``, the folder itself may be a symlink."""
    if base_dir is not None:
        base = os.path.abspath(base_dir)
        target = os.path.abspath(os.path.join(base_dir, root))
        if not _inside(base, target):
            return f"the cache folder {root} is outside {base_dir}"
        problem = _symlink_below(base, target, last=True)
    elif not os.path.isabs(root) and _inside(os.path.abspath("."), os.path.abspath(root)):
        problem = _symlink_below(os.path.abspath("."), os.path.abspath(root), last=not named)
    else:
        problem = None
    if problem is not None:
        return problem
    try:
        info = os.stat(root) if named else os.lstat(root)
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"cannot use the cache folder {root}: {error.strerror or error}"
    if stat.S_ISLNK(info.st_mode):
        return f"the cache folder {root} is a symlink (name its target, or give it with --cache-dir)"
    if not stat.S_ISDIR(info.st_mode):
        return f"the cache folder {root} is not a folder"
    if _is_ours(root, named):
        return None
    names = _listdir(root)
    if names is None or any(not name.startswith(".tmp-tag-") for name in names):
        return (
            f"the cache folder {root} holds files kaffinity did not make, and no CACHEDIR.TAG of "
            "kaffinity's (give a new or empty folder)"
        )
    return None


def _inside(base: str, target: str) -> bool:
    try:
        return os.path.commonpath([base, target]) == base
    except ValueError:  # another drive
        return False


def _symlink_below(base: str, target: str, *, last: bool) -> str | None:
    """Why ``target`` cannot be the cache folder: a symlink between ``base`` and it (``last``:
    or ``target`` itself); None if there is none."""
    parts = [part for part in os.path.relpath(target, base).split(os.sep) if part not in ("", ".")]
    path = base
    for number, part in enumerate(parts, start=1):
        path = os.path.join(path, part)
        if number == len(parts) and not last:
            break
        with contextlib.suppress(OSError):
            if stat.S_ISLNK(os.lstat(path).st_mode):
                return f"{path} is a symlink: the cache folder is never one in a checkout, nor below one"
    return None


def _tracked_by_git(root: str) -> str | None:
    """A file under ``root`` that git tracks (committed with the checkout), or None: none, no
    work tree around ``root``, or no git. One ``git ls-files`` at most, only when a ``.git``
    is found above ``root``."""
    import subprocess

    from kaffinity.load.repository import work_tree

    path = os.path.abspath(root)
    top = work_tree(path)
    if top is None:
        return None
    if not os.path.lexists(path):
        return None
    try:
        # core.fsmonitor off: listing the index must run no hook (git-config(1)).
        done = subprocess.run(
            [
                "git",
                "--literal-pathspecs",
                "-c",
                "core.fsmonitor=false",
                "ls-files",
                "-z",
                "--cached",
                "--",
                os.path.relpath(path, top),
            ],
            cwd=top,
            capture_output=True,
            timeout=_GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0 or not done.stdout:
        return None
    first = done.stdout.split(b"\0", 1)[0]
    return os.fsdecode(first)


def key_file() -> str | None:
    """Where the secret is kept when ``KAFFINITY_CACHE_KEY`` is not set: ``cache-key`` in the
    user's cache folder (kaffinity.load.userfiles); None without a home folder."""
    folder = user_cache_folder()
    return None if folder is None else os.path.join(folder, "cache-key")


def cache_secret() -> tuple[bytes | None, str | None]:
    """The secret that authenticates entries, or None and why there is none: ``KAFFINITY_CACHE_KEY``
    (at least :data:`MIN_KEY_CHARS` characters), else the key file (:func:`key_file`), made if
    missing. The key file is refused if it, or its folder, is a symlink, not a regular file
    (folder), owned by another user, or open to others (the file readable or writable by group
    or others, the folder writable by them)."""
    value = os.environ.get(ENV_KEY)
    if value:
        if len(value) < MIN_KEY_CHARS:
            return None, f"{ENV_KEY} is shorter than {MIN_KEY_CHARS} characters"
        return value.encode("utf-8", "surrogateescape"), None
    path = key_file()
    if path is None:
        return None, f"no home folder for the cache's key (set {ENV_KEY} or XDG_CACHE_HOME)"
    folder = os.path.dirname(path)
    try:
        os.makedirs(os.path.dirname(folder), exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
        problem = _private(os.lstat(folder), folder, 0o022)
        if problem is not None:
            return None, problem
        secret = _read_key(path)
        if secret is None:
            _make_key(path)
            secret = _read_key(path)
    except _Refused as refused:
        return None, str(refused)
    except OSError as error:
        return None, f"cannot use the cache's key {path}: {error.strerror or error}"
    if secret is None:
        return None, f"cannot make the cache's key {path}"
    return secret, None


class _Refused(Exception):
    """A key file or folder that others could have written or read."""


def _private(info: os.stat_result, path: str, open_bits: int) -> str | None:
    """Why ``path`` may not hold the key (kaffinity.load.userfiles.private_problem)."""
    return private_problem(info, path, open_bits, "the cache's key")


def _read_key(path: str) -> bytes | None:
    """The key in the file at ``path`` (64 hex digits), None if there is none; raises _Refused."""
    try:
        descriptor = os.open(path, _READ)
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise _Refused(f"the cache's key {path} is a symlink") from None
        raise
    try:
        problem = _private(os.fstat(descriptor), path, 0o077)
        if problem is not None:
            raise _Refused(problem)
        text = _read_up_to(descriptor, 256).strip()
    finally:
        os.close(descriptor)
    if not re.fullmatch(rb"[0-9a-f]{64}", text):
        raise _Refused(f"the cache's key {path} is not 64 hex digits (delete it: a new one is made)")
    return bytes.fromhex(text.decode("ascii"))


def _make_key(path: str) -> None:
    """A new key file: 32 random bytes (``os.urandom``), hex, mode 0600, made under a temporary
    name and linked into place, so that of two runs making it at once the first one wins and
    both read its key."""
    temporary = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
    descriptor = os.open(temporary, _CREATE, 0o600)
    try:
        with open(descriptor, "wb") as out:
            out.write(os.urandom(32).hex().encode("ascii") + b"\n")
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass
        except OSError:  # no hard links here (some network file systems)
            if not os.path.lexists(path):
                os.replace(temporary, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


# --- the format of an entry -----------------------------------------------------------------------
#
# JSON: the C codec of the standard library, which builds dicts, lists, strings, numbers and
# nothing else. A file's trees (PosDict, PosList) are JSON objects: a PosDict's keys and values,
# then one more member, last, that holds its position and those of its keys ([line, column,
# [positions]]); a PosList is an object of that one member, with its items ([line, column,
# [positions], [items]]). Everything around the trees (documents, findings, suppressions,
# problems) is JSON arrays, rebuilt field by field with their types checked.

_SCALARS = frozenset({str, int, float, bool, type(None)})
_new_dict = dict.__new__
_new_list = list.__new__
_new_tuple = tuple.__new__


class _Unfit(Exception):
    """A value this format does not hold: the entry is not written (nor the file sent so)."""


def encode(checked: FileResult) -> bytes | None:
    """``checked`` as an entry's payload, or None if it holds what the format does not (the
    typed objects are not kept: they are built again where needed)."""
    import json

    try:
        return json.dumps(
            _checked_data(checked), ensure_ascii=True, check_circular=False, separators=(",", ":")
        ).encode("ascii")
    except (_Unfit, ValueError, TypeError, RecursionError):
        return None


def _checked_data(checked: FileResult) -> list[Any]:
    file = checked.file
    roots: dict[int, int] = {}
    trees: list[Any] = []
    documents = []
    places: dict[int, int] = {}
    for number, doc in enumerate(file.documents):
        places[id(doc)] = number
        index = roots.get(id(doc.root))
        if index is None:
            index = roots[id(doc.root)] = len(trees)
            trees.append(_tree(doc.root))
        if _follow(doc.root, doc.prefix) is not doc.data:
            raise _Unfit("a document that is not its root's")
        documents.append(
            [
                doc.file,
                doc.index,
                index,
                list(doc.span),
                list(doc.prefix),
                [[item.key, *item.span, *item.first] for item in doc.duplicate_keys],
            ]
        )
    return [
        file.name,
        file.text,
        file.skipped,
        file.compact,
        trees,
        documents,
        [[problem.rule, problem.message, _span(problem.span)] for problem in file.problems],
        [[rule, number, *_finding(finding)] for rule, number, finding in checked.findings],
        [_comment(comment, places) for comment in checked.comments],
        list(checked.internal_errors),
        list(checked.notices),
    ]


def _tree(value: Any) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    scalars = _SCALARS
    if kind is _PosDict:
        out = {key: item if type(item) in scalars else _tree(item) for key, item in value.items()}
        last = ""
        while last in out:
            last += "\0"
        out[last] = [value.span[0], value.span[1], list(value.pos)]
        return out
    if kind is _PosList:
        items = [item if type(item) in scalars else _tree(item) for item in value]
        return {"": [value.span[0], value.span[1], list(value.pos), items]}
    raise _Unfit(kind.__name__)


def _span(span: Any) -> list[int] | None:
    return None if span is None else [span[0], span[1]]


def _finding(finding: Any) -> list[Any]:
    obj = finding.object
    edit = finding.edit
    return [
        finding.file,
        finding.line,
        finding.column,
        finding.rule,
        finding.message,
        finding.severity.value,
        finding.category,
        finding.path,
        None if obj is None else [obj.api_version, obj.kind, obj.namespace, obj.name],
        [[place.file, _span(place.span), place.path, place.message] for place in finding.related],
        finding.fix,
        None if edit is None else [edit.start, edit.end, edit.text],
        list(finding.units),
        finding.anchor,
    ]


def _comment(comment: Any, places: dict[int, int]) -> list[Any]:
    place = None
    if comment.doc is not None:
        place = places.get(id(comment.doc))
        if place is None:
            raise _Unfit("a suppression on another file's document")
    return [
        comment.file,
        list(comment.span),
        list(comment.names),
        place,
        list(comment.path),
        sorted(comment.used),
    ]


def decode(payload: bytes) -> FileResult | None:
    """The :class:`~kaffinity.engine.FileResult` an entry's payload holds, or None when anything in it
    has the wrong shape (a miss). Runs no code of the payload's choosing: JSON, then this
    module's own constructors, each field's type checked."""
    import json

    try:
        data = json.loads(payload, object_hook=_node)
        return _checked(data)
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, RecursionError, AttributeError):
        return None


def _node(pairs: dict[str, Any]) -> Any:
    """A PosDict or PosList from its JSON object (see the format above); ValueError if it is not
    one. Called for every mapping and sequence of every file read from the cache: few checks."""
    if not pairs:
        raise ValueError("an empty object")
    meta = pairs.pop(next(reversed(pairs)))
    if type(meta) is not list or not 3 <= len(meta) <= 4:
        raise ValueError("not a tree")
    line, column, positions = meta[0], meta[1], meta[2]
    if type(line) is not int or type(column) is not int or type(positions) is not list:
        raise ValueError("not a position")
    try:
        packed: Any = _array("Q", positions)
    except TypeError:  # a missing position (rendered input): a list, as kaffinity.k8s.compact keeps
        if any(item is not None and type(item) is not int for item in positions):
            raise ValueError("not a position") from None
        packed = positions
    node: Any
    if len(meta) == 3:
        node = _new_dict(_PosDict)
        node.update(pairs)
        values: Any = pairs.values()
    else:
        values = meta[3]
        if pairs or type(values) is not list:
            raise ValueError("not a list")
        node = _new_list(_PosList)
        node.extend(values)
    if list in set(map(type, values)):  # a JSON array is never a value of a tree
        raise ValueError("a list in a tree")
    node.span = _new_tuple(_Span, (line, column))
    node.pos = packed
    return node


def _index(value: Any, size: int) -> int:
    if type(value) is not int or not 0 <= value < size:
        raise ValueError("not an index")
    return value


def _is(value: Any, *kinds: type) -> Any:
    if type(value) not in kinds:
        raise ValueError(f"{type(value).__name__}, not {kinds}")
    return value


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(_is(item, str) for item in _is(value, list))


def _span_of(value: Any) -> Any:
    line, column = _is(value, list)
    return _Span(_is(line, int), _is(column, int))


def _optional_span(value: Any) -> Any:
    return None if value is None else _span_of(value)


def _data_path(value: Any) -> tuple[str | int, ...]:
    return tuple(_is(item, str, int) for item in _is(value, list))


def _duplicate_keys(value: Any) -> tuple[Any, ...]:
    """A document's duplicate keys as an entry stores them (this cache's and the render cache's)."""
    from kaffinity.load.source import DuplicateKey

    return tuple(
        DuplicateKey(_is(key, str), _span_of([line, column]), _span_of([first, at]))
        for key, line, column, first, at in (_is(item, list) for item in _is(value, list))
    )


def _load_problems(value: Any) -> tuple[Any, ...]:
    """A file's load problems as an entry stores them (this cache's and the render cache's)."""
    from kaffinity.load.parse import LoadProblem

    return tuple(
        LoadProblem(_is(rule, str), _is(message, str), _optional_span(span))
        for rule, message, span in (_is(item, list) for item in _is(value, list))
    )


def _checked(data: Any) -> FileResult:
    from kaffinity.engine import FileResult
    from kaffinity.load.parse import SourceFile
    from kaffinity.load.source import Document

    name, text, skipped, compact, trees, docs, problems, findings, comments, errors, notices = _is(data, list)
    _is(trees, list)
    documents = []
    for file, index, root, span, prefix, duplicates in (_is(item, list) for item in _is(docs, list)):
        tree = trees[_index(root, len(trees))]
        path = _data_path(prefix)
        node = tree
        for step in path:
            node = _child(node, step)
        documents.append(
            Document(
                _is(file, str),
                _is(index, int),
                node,
                tree,
                _span_of(span),
                path,
                _duplicate_keys(duplicates),
            )
        )
    source = SourceFile(
        _is(name, str),
        _is(text, str),
        tuple(documents),
        _load_problems(problems),
        _is(skipped, str, type(None)),
        _is(compact, bool),
    )
    found = []
    for rule, number, *finding in (_is(item, list) for item in _is(findings, list)):
        if number is not None:
            _index(number, len(documents))
        found.append((_is(rule, str), number, _finding_of(finding)))
    return FileResult(
        source,
        tuple(found),
        tuple(_comment_of(item, documents) for item in _is(comments, list)),
        _strings(errors),
        _strings(notices),
    )


def _finding_of(data: list[Any]) -> Any:
    from kaffinity.findings import Finding, Location, Severity
    from kaffinity.k8s.model import ObjectRef
    from kaffinity.load.edits import Edit

    file, line, column, rule, message, severity, category, path, obj, related, fix, edit, units, anchor = data
    optional = (int, type(None))
    ref = None
    if obj is not None:
        api_version, kind, namespace, name = _is(obj, list)
        ref = ObjectRef(
            _is(api_version, str), _is(kind, str), _is(namespace, str, type(None)), _is(name, str)
        )
    change = None
    if edit is not None:
        start, end, replacement = _is(edit, list)
        change = Edit(_is(start, int), _is(end, int), _is(replacement, str))
    return Finding(
        _is(file, str),
        _is(line, *optional),
        _is(column, *optional),
        _is(rule, str),
        _is(message, str),
        Severity(_is(severity, str)),
        _is(category, str),
        _is(path, str),
        ref,
        tuple(
            Location(_is(where, str), _optional_span(span), _is(place, str), _is(words, str))
            for where, span, place, words in (_is(item, list) for item in _is(related, list))
        ),
        _is(fix, str, type(None)),
        change,
        _strings(units),
        anchor=_is(anchor, str),
    )


def _comment_of(data: Any, documents: list[Any]) -> Any:
    from kaffinity.suppress import Suppression

    file, span, names, place, path, used = _is(data, list)
    doc = None if place is None else documents[_index(place, len(documents))]
    return Suppression(
        _is(file, str), _span_of(span), _strings(names), doc, _data_path(path), set(_strings(used))
    )


def _child(node: Any, step: str | int) -> Any:
    """One step of a document's path (see :class:`~kaffinity.load.source.Document`): a key of a
    mapping, an index of a sequence; ValueError otherwise."""
    if type(node) is _PosDict and type(step) is str:
        return node[step]
    if type(node) is _PosList and type(step) is int and step >= 0:
        return node[step]
    raise ValueError("not a document's path")


def _follow(data: Any, path: tuple[str | int, ...]) -> Any:
    for item in path:
        data = data[item]
    return data
