"""The cache of repeated runs (``.kaffinity_cache``), as ruff's ``.ruff_cache`` and mypy's ``.mypy_cache``.

For each file, what the single-object stage made of it (:class:`kaffinity.stream.Checked`: its
findings placed, its suppression comments, its compact model), keyed by:

- the file's name and bytes (a BLAKE2b digest of both: a finding names its file);
- kaffinity's version and the format of an entry: each version has its own folder, and the
  folders of other versions are deleted when a run opens the cache (never trusted across
  versions);
- the settings the stage reads (:func:`kaffinity.stream.fingerprint`: the Kubernetes version,
  the feature gates, the rules selected, their severities, the limits...) and whether the
  rules ran (a context file of ``--changed`` is only compacted): one folder per fingerprint.

Layout: ``<dir>/<version>/<fingerprint>/<2 hex digits>/<key>``. An entry is a header (``MAGIC``,
then its own key) and the pickled :class:`~kaffinity.stream.Checked`. Reading never trusts an
entry: a truncated, corrupt or foreign file (wrong header, wrong key, a pickle that fails or is
not a ``Checked``) is a miss, and the file is linted and the entry written again. Entries are
written atomically (a temporary file in the same folder, then ``os.replace``), so runs at the
same time (pre-commit in two worktrees, an editor and a terminal) never read half an entry;
two runs writing the same key write the same bytes.

Pruning: a run that wrote entries deletes, in its fingerprint's folder, those no run has read or
written since it started (a read touches the entry, in whichever process reads it) when they are
more than twice those used (files edited since, deleted, renamed), and the fingerprint folders no
run has used for :data:`STALE_DAYS` days. The cache is the user's own
(as ``.mypy_cache``): its entries are pickles, and a cache folder that others can write to is
no safer than the code it would run. ``.kaffinity_cache`` holds a ``.gitignore`` (``*``) and a
``CACHEDIR.TAG``, as ruff's does, so that neither git nor backups take it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import shutil
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from kaffinity.engine import Checked

#: The default folder's name (in the config file's folder, else the working directory).
DEFAULT_DIR = ".kaffinity_cache"
#: The environment variable that names the folder (over ``cache-dir:``, under ``--cache-dir``).
ENV_DIR = "KAFFINITY_CACHE_DIR"
MAGIC = b"kaffinity-cache\n"
#: Bumped when what an entry (:class:`~kaffinity.engine.Checked`) holds changes shape.
FORMAT = 3
#: A fingerprint folder unused this long is deleted.
STALE_DAYS = 30
_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by kaffinity.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


class Cache:
    """The entries of one kaffinity version and one fingerprint under ``root``."""

    def __init__(self, root: str, fingerprint: str) -> None:
        import kaffinity

        self.root = root
        #: When this run opened the cache: an entry read or written since is in use.
        self.started = time.time()
        self.version = f"{kaffinity.__version__}-{FORMAT}"
        self.folder = os.path.join(root, self.version, fingerprint)
        self.written = 0
        #: Why the cache could not be written, once (None: it could, or nobody tried).
        self.error: str | None = None
        #: The shard folders known to exist.
        self._folders: set[str] = set()
        #: The thread that writes entries, in the process that made it (see put).
        self._writer: ThreadPoolExecutor | None = None
        self._writer_pid = 0
        self._pending: list[Future[None]] = []

    def __getstate__(self) -> dict[str, object]:
        """What a --jobs worker gets with each task: the folder and the run's start, not this
        process's writer thread, nor what it has read and written so far."""
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

    def _path(self, key: str) -> str:
        return os.path.join(self.folder, key[:2], key)

    def get(self, key: str) -> bytes | None:
        """The pickled entry of ``key`` (checked: header and key), or None."""
        try:
            with open(self._path(key), "rb") as handle:
                data = handle.read()
                header = MAGIC + key.encode() + b"\n"
                if not data.startswith(header):
                    return None
                # Used now: whichever process read it (a --jobs worker's own Cache is a copy),
                # pruning sees it by its time (see prune).
                os.utime(handle.fileno())
        except OSError:
            return None
        return data[len(header) :]

    def put(self, key: str, payload: bytes) -> None:
        """Write an entry atomically, in a thread of this process (its file-system calls overlap
        the parsing of the next files: creating thousands of files in fresh folders cost 1-2.5 s
        of system time at 10,000 workloads on the benchmark machine); :meth:`flush` waits for
        the writes. A cache that cannot be written is left alone (``error``)."""
        if self.error is not None:
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
        try:
            for attempt in (1, 2):
                if folder not in self._folders:
                    if not os.path.isdir(self.folder):
                        self._create()
                    os.makedirs(folder, exist_ok=True)
                    self._folders.add(folder)
                try:
                    with open(temporary, "wb") as out:
                        out.write(MAGIC + key.encode() + b"\n")
                        out.write(payload)
                    os.replace(temporary, path)
                    break
                except FileNotFoundError:  # another run pruned the folder meanwhile: again
                    self._folders.discard(folder)
                    if attempt == 2:
                        raise
                except BaseException:
                    with contextlib.suppress(OSError):
                        os.unlink(temporary)
                    raise
        except OSError as error:
            self.error = f"cannot write the cache in {self.root}: {error.strerror or error}"

    def _create(self) -> None:
        os.makedirs(self.folder, exist_ok=True)
        for name, text in ((".gitignore", "# created by kaffinity\n*\n"), ("CACHEDIR.TAG", _TAG)):
            path = os.path.join(self.root, name)
            if not os.path.exists(path):
                with contextlib.suppress(OSError), open(path, "w", encoding="utf-8") as out:
                    out.write(text)

    def prune(self) -> None:
        """Delete the other versions' folders, the fingerprints unused for :data:`STALE_DAYS`
        days, and (after a run that wrote entries) this fingerprint's unused entries when they
        outnumber the used ones twice. Never raises: another run may be pruning too."""
        self.flush()
        if not os.path.isdir(self.folder):
            return
        with contextlib.suppress(OSError):
            os.utime(self.folder)  # this fingerprint is in use
        for entry in _listdir(self.root):
            path = os.path.join(self.root, entry)
            if entry != self.version and os.path.isdir(path) and not entry.startswith("."):
                shutil.rmtree(path, ignore_errors=True)
        stale = time.time() - STALE_DAYS * 86400
        version = os.path.join(self.root, self.version)
        for entry in _listdir(version):
            path = os.path.join(version, entry)
            with contextlib.suppress(OSError):
                if path != self.folder and os.stat(path).st_mtime < stale:
                    shutil.rmtree(path, ignore_errors=True)
        if not self.written:
            return
        used = 0
        unused: list[str] = []
        # Read or written by this run, in this process or a worker (get touches what it reads),
        # or by another run since this one started: in use. (Where the file system keeps coarse
        # times, an entry used in the run's first second may count as unused: a later miss.)
        since = self.started
        for shard in _listdir(self.folder):
            for name in _listdir(os.path.join(self.folder, shard)):
                if name.startswith(".tmp-"):
                    continue
                path = os.path.join(self.folder, shard, name)
                try:
                    fresh = os.stat(path).st_mtime >= since
                except OSError:
                    continue
                if fresh:
                    used += 1
                else:
                    unused.append(path)
        if len(unused) > 2 * used:
            for path in unused:
                with contextlib.suppress(OSError):
                    os.unlink(path)


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def loads(payload: bytes) -> Checked | None:
    """An entry's :class:`~kaffinity.stream.Checked`, or None when it is not one (corrupt)."""
    from kaffinity.engine import Checked

    try:
        value = pickle.loads(payload)
    except Exception:  # noqa: BLE001 - a corrupt entry is a miss, whatever pickle says about it
        return None
    return value if isinstance(value, Checked) else None


def cache_root(settings_dir: str | None, base_dir: str = ".", flag: str | None = None) -> str:
    """The cache folder: ``--cache-dir``, else ``KAFFINITY_CACHE_DIR``, else ``cache-dir:``,
    else ``.kaffinity_cache`` in ``base_dir`` (the config file's folder, or here)."""
    return flag or os.environ.get(ENV_DIR) or settings_dir or os.path.join(base_dir, DEFAULT_DIR)
