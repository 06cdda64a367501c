"""The secret the cache's entries are authenticated with: ``KAFFINITY_CACHE_KEY``, else
``cache-key`` in the user's cache folder, made at the first run (32 random bytes, mode 0600,
in a folder only its owner can write); never in the checkout (see :mod:`kaffinity.cache`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import threading

from kaffinity.cache.folder import _CREATE, _READ, _read_up_to
from kaffinity.load.userfiles import private_problem, user_cache_folder

#: The environment variable that holds the secret entries are authenticated with.
ENV_KEY = "KAFFINITY_CACHE_KEY"
#: Characters ``KAFFINITY_CACHE_KEY`` has at least: a short secret can be guessed.
MIN_KEY_CHARS = 16


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
