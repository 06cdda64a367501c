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

- An entry is data, never code: JSON (:func:`~kaffinity.cache.entries.encode`,
  :func:`~kaffinity.cache.entries.decode`, the standard library's C codec), each object of a
  file rebuilt by the cache's own decoder (:mod:`kaffinity.cache.trees`), which checks the
  shape of everything it reads (a wrong shape anywhere is a miss). Pickle is used only between this
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
  read up to :func:`~kaffinity.cache.store.max_entry` bytes; folders are checked with
  ``lstat``: a version, fingerprint or shard folder that is a symlink is never used, nor a
  cache folder that is one (unless the folder was named by ``--cache-dir``).
- A cache folder that git tracks (``git ls-files``) is not used, with a note: it came with the
  checkout.
- kaffinity writes its ``.gitignore`` and ``CACHEDIR.TAG`` only in a folder it creates (or an
  empty one it is given), and uses no other folder: one that holds anything else and not
  kaffinity's ``CACHEDIR.TAG`` (``~/.cache``, a repository) is refused with a note.
- Pruning deletes only names of kaffinity's own patterns (:mod:`kaffinity.cache.folder`:
  ``_VERSION_NAME``, ``_HEX32``, ``_SHARD``, ``_KEY``, ``_TEMPORARY``), inside a folder that holds
  kaffinity's tag, with ``lstat`` and ``unlink``/``rmdir`` only: never through or at a symlink,
  never the folder itself, never a name it does not know.

Entries are written atomically (a temporary file created with ``O_EXCL | O_NOFOLLOW`` in the
same folder, then ``os.replace``), so runs at the same time (pre-commit in two worktrees, an
editor and a terminal) never read half an entry; two runs writing the same key write the same
bytes.

Pruning: a run that wrote entries deletes, in its fingerprint's folder, those no run has read or
written since it started (a read touches the entry, in whichever process reads it) when they are
more than twice those used (files edited since, deleted, renamed), and the fingerprint folders no
run has used for :data:`~kaffinity.cache.folder.STALE_DAYS` days.

The package: :mod:`~kaffinity.cache.store` (:class:`Cache`: entries, HMAC, atomic writes),
:mod:`~kaffinity.cache.folder` (the folder on disk: safe opening, the tag, pruning),
:mod:`~kaffinity.cache.opening` (:func:`open_cache`: which folder, and whether to use it),
:mod:`~kaffinity.cache.secret` (the key), :mod:`~kaffinity.cache.entries` and
:mod:`~kaffinity.cache.trees` (the format of an entry), :mod:`~kaffinity.cache.rendered` and
:mod:`~kaffinity.cache.render_inputs` (the rendered units, by the hash of their inputs).
"""

from kaffinity.cache.entries import decode, encode
from kaffinity.cache.opening import DEFAULT_DIR, ENV_DIR, cache_root, open_cache
from kaffinity.cache.secret import ENV_KEY, MIN_KEY_CHARS, cache_secret, key_file
from kaffinity.cache.store import FORMAT, MAGIC, Cache, max_entry

__all__ = [
    "DEFAULT_DIR",
    "ENV_DIR",
    "ENV_KEY",
    "FORMAT",
    "MAGIC",
    "MIN_KEY_CHARS",
    "Cache",
    "cache_root",
    "cache_secret",
    "decode",
    "encode",
    "key_file",
    "max_entry",
    "open_cache",
]
