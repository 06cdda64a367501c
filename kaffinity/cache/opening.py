"""Opening the cache of a run: which folder (``--cache-dir``, ``KAFFINITY_CACHE_DIR``,
``cache-dir:``, ``.kaffinity_cache``), and the checks that keep a folder that came with the
checkout from being used (a symlink on the way, a folder kaffinity did not make, one git tracks).
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import TYPE_CHECKING

from kaffinity.cache.folder import _is_ours, _listdir
from kaffinity.cache.secret import cache_secret
from kaffinity.cache.store import Cache, max_entry

if TYPE_CHECKING:
    from kaffinity.load.parse import Limits

#: The default folder's name (in the config file's folder, else the working directory).
DEFAULT_DIR = ".kaffinity_cache"
#: The environment variable that names the folder (over ``cache-dir:``, under ``--cache-dir``).
ENV_DIR = "KAFFINITY_CACHE_DIR"
#: A stuck git (a network file system, a lock) must not hang a commit hook.
_GIT_TIMEOUT = 30


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
