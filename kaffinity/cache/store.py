"""The store of one kaffinity version and one fingerprint: :class:`Cache`, its entries
authenticated with an HMAC-SHA256 (:mod:`hmac`, RFC 2104), read within :func:`max_entry` bytes
and written atomically (see :mod:`kaffinity.cache` for why, and :mod:`kaffinity.cache.folder`
for the folder's own checks and pruning).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import stat
import sys
import threading
import time
from typing import TYPE_CHECKING

from kaffinity.cache.folder import (
    _HEX32,
    _KEY,
    _READ,
    _VERSION_LEVELS,
    _VERSION_NAME,
    STALE_DAYS,
    _is_folder,
    _is_ours,
    _make_root,
    _prune_entries,
    _read_up_to,
    _remove_tree,
    _scan,
    _what,
    _write_new,
)

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from kaffinity.engine import FileResult
    from kaffinity.load.parse import Limits

#: Bumped when what an entry holds, or how, changes. 4: JSON and an HMAC (pickles before);
#: 5: YAML read as go-yaml v2 reads it (flow-collection colons, anchors redefined, merge keys);
#: 6: a finding keeps its anchor (what its fingerprint takes of its place: kaffinity.findings);
#: 7: compact pod templates keep ``runtimeClassName`` and ``volumes``, and PVs, PVCs,
#: StorageClasses and RuntimeClasses are kept whole (kaffinity.k8s.compact).
FORMAT = 7

#: Seconds before a run's start that still count as "used by this run" when pruning (see prune).
_TIME_SLACK = 2.0

#: An entry starts with this, then its key, its HMAC (hex) and the payload, a line each.
MAGIC = b"kaffinity-cache %d\n" % FORMAT
_HEADER = len(MAGIC) + 41 + 65


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
        self._mac_prefix = (
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
        #: What :meth:`later` keeps to encode and write at :meth:`write_later`: (key, result).
        self._later: list[tuple[str, FileResult]] = []
        #: The processes :meth:`write_later` forked, and the pipes they answer on (see flush).
        self._children: list[tuple[int, int]] = []

    def __getstate__(self) -> dict[str, object]:
        """What a --jobs worker gets with each task: the folder, the secret and the run's start,
        not this process's writer thread, nor what it has read and written so far."""
        state = dict(self.__dict__)
        state.update(
            _writer=None, _writer_pid=0, _pending=[], _folders=set(), written=0, _later=[], _children=[]
        )
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
        mac = hmac.new(self._secret, self._mac_prefix, hashlib.sha256)
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

    def later(self, key: str, result: FileResult) -> None:
        """Keep ``result`` to be written as the entry ``key`` by :meth:`write_later` (encoding
        it is the cost of a cold run: it is done off this process's path, when it can be)."""
        if self.error is None and _KEY.fullmatch(key):
            self._later.append((key, result))

    def write_later(self) -> None:
        """Encode and write what :meth:`later` kept: on Linux in a forked process, while this one
        goes on to the cross-object stage and the report (the cold run's extra work on the
        second core: JSON encoding is CPU-bound, so a thread would hold the GIL this process
        needs); :meth:`flush` waits for it. Elsewhere, or if the fork fails, here and now."""
        kept, self._later = self._later, []
        if not kept or self.error is not None:
            return
        self.written += len(kept)
        from kaffinity.cache.entries import encode

        if sys.platform.startswith("linux"):
            self._idle()  # the writer thread's entries on disk, and the thread idle, before the fork
            try:
                reading, writing = os.pipe()
            except OSError:
                reading = writing = -1
            pid = -1
            if reading >= 0:
                try:
                    pid = os.fork()
                except OSError:
                    os.close(reading)
                    os.close(writing)
            if pid == 0:  # the child: encode, write, say why it failed if it did, and leave
                try:
                    os.close(reading)
                    for key, result in kept:
                        encoded = encode(result)
                        if encoded is not None and len(encoded) + _HEADER <= self.max_size:
                            self._write(key, encoded)
                        if self.error is not None:
                            break
                    os.write(writing, (self.error or "").encode("utf-8", "replace")[:4000])
                finally:
                    os._exit(0)  # no atexit handler, no stdio buffer of the parent flushed twice
            if pid > 0:
                os.close(writing)
                self._children.append((pid, reading))
                return
        for key, result in kept:
            encoded = encode(result)
            if encoded is not None:
                self.put(key, encoded)

    def flush(self) -> None:
        """Wait for the writes :meth:`put` started in this process, and those of
        :meth:`write_later`'s process."""
        children, self._children = self._children, []
        for pid, reading in children:
            try:
                said = _read_up_to(reading, 4000)
                os.waitpid(pid, 0)
            except OSError:
                said = b""
            finally:
                os.close(reading)
            if said and self.error is None:
                self.error = said.decode("utf-8", "replace")
        self._idle()

    def _idle(self) -> None:
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
            # Slack before the run's start: file times come from the kernel's coarse clock (a
            # tick behind time.time()) and some file systems keep seconds, so an entry this run
            # touched in its first milliseconds can carry a time just before ``started``.
            _prune_entries(self.folder, self.started - _TIME_SLACK)
