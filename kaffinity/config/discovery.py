"""Finding ``.kaffinity.yaml``: upward from the working directory, never above the git work
tree's top, never another user's file (the checkout is input: issue 31)."""

from __future__ import annotations

import os

from kaffinity.load.display import quote_name
from kaffinity.load.repository import within

CONFIG_NAMES = (".kaffinity.yaml", ".kaffinity.yml")


def find_config(start: str = ".", notes: list[str] | None = None) -> str | None:
    """The nearest ``.kaffinity.yaml`` in ``start`` or a folder above it, up to the root of the
    git work tree holding ``start`` (the first folder with a ``.git`` file or folder): a config
    in a shared folder above the repository (``/tmp``, a home folder, ``C:\\``) never applies to
    it. A config owned by another user is ignored, with a note in ``notes``: git refuses such a
    repository since CVE-2022-24765 (setup.c ``ensure_valid_ownership``). ``--config`` is used
    as given, found by no search."""
    folder = os.path.abspath(start)
    while True:
        for name in CONFIG_NAMES:
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate):
                problem = _untrusted(candidate)
                if problem is None:
                    return candidate
                if notes is not None:
                    notes.append(
                        f"{os.path.relpath(candidate)}: ignored: {problem} (pass --config to use it)"
                    )
                return None
        if os.path.lexists(os.path.join(folder, ".git")):  # a work tree's top: .git folder or file
            return None
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _untrusted(path: str) -> str | None:
    """Why a config found by the search may not be used, or None. As git's
    ``is_path_owned_by_current_uid`` (git-compat-util.h): the file must belong to the user
    running kaffinity; run as root, the user that ran sudo (``SUDO_UID``) is that user too.
    git judges a symlink by its own owner (lstat); here a symlink must lead to a file inside its
    repository, and that file's owner is judged. No owner check where the platform has no uids
    (Windows)."""
    real = os.path.realpath(path)
    root = repository_root(path)
    if not within(real, os.path.realpath(root)):
        return f"it links outside its repository ({quote_name(root)})"
    if not hasattr(os, "geteuid"):
        return None
    try:
        owner = os.stat(real).st_uid
    except OSError:
        return None  # read (and reported) as any unreadable config
    euid = os.geteuid()
    if owner == euid:
        return None
    sudo = os.environ.get("SUDO_UID", "")
    if euid == 0 and sudo.isdigit() and int(sudo) == owner:
        return None
    return f"owned by another user (uid {owner}, not {euid})"


def repository_root(config: str) -> str:
    """The folder a config's paths must stay in: the top of the git work tree holding the config
    file (the nearest folder upward with a ``.git`` entry, as git's discovery in setup.c looks
    for one; no git call), else the config's own folder."""
    from kaffinity.load.repository import work_tree

    start = os.path.dirname(os.path.abspath(config))
    return work_tree(start) or start
