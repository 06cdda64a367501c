"""The user's own files: kaffinity's folder in the user's cache, and the test that a file or
folder there is the user's alone.

Both the lint cache's key (kaffinity.cache) and the remote cache (kaffinity.repo.fetch) live in
``$XDG_CACHE_HOME/kaffinity`` (XDG Base Directory Specification: a relative value is ignored),
else ``~/.cache/kaffinity``: outside any checkout, so a pull request can neither plant nor read
what is there.
"""

from __future__ import annotations

import os
import stat

_POSIX = os.name == "posix"


def user_cache_folder() -> str | None:
    """``$XDG_CACHE_HOME/kaffinity``, else ``~/.cache/kaffinity``; None without a home folder."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "kaffinity")


def private_problem(info: os.stat_result, path: str, open_bits: int, what: str) -> str | None:
    """Why ``path`` (lstat ``info``), called ``what`` in the message ("the cache's key"), may not
    be trusted: a symlink, not what it should be (a folder when ``open_bits`` is 0o022, else a
    regular file), owned by another user, or with ``open_bits`` set; None if fine (off POSIX:
    only its type)."""
    folder = open_bits == 0o022
    name = f"{what} {'folder ' if folder else ''}{path}"
    if stat.S_ISLNK(info.st_mode):
        return f"{name} is a symlink"
    if not (stat.S_ISDIR(info.st_mode) if folder else stat.S_ISREG(info.st_mode)):
        return f"{what} {path} is not a {'folder' if folder else 'regular file'}"
    if _POSIX:
        if info.st_uid != os.geteuid():
            return f"{name} belongs to another user"
        if info.st_mode & open_bits:
            whom = "writable" if folder else "readable or writable"
            return f"{name} is {whom} by others (chmod go-rwx)"
    return None
