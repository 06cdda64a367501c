"""A directory source as the repo-server reads it (``findManifests``): the ``*.yaml``/``*.yml``/
``*.json`` files of the path, below it with ``recurse``, kept by ``include`` and dropped by
``exclude`` (Argo's glob, ``*`` crossing ``/``, ``{a,b}`` alternatives); jsonnet is not
evaluated (the release says so)."""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Mapping
from typing import Any

from kaffinity.load.parse import Limits, SourceFile
from kaffinity.repo.gitops.argo.source import Source, source_block
from kaffinity.repo.gitops.releases import NotRendered
from kaffinity.repo.rendered import Rendered

_MANIFEST_EXTENSIONS = (".yaml", ".yml", ".json")
_JSONNET_EXTENSIONS = (".jsonnet", ".libsonnet")


# --- directory sources ------------------------------------------------------------------------


def directory_files(folder: str, options: Mapping[str, Any]) -> list[str]:
    """repository.go ``findManifests``: the manifest files of the folder (below it with
    ``recurse``), ``include``/``exclude`` globs matched against the path from the folder."""
    recurse = bool(options.get("recurse"))
    include = str(options.get("include") or "")
    exclude = str(options.get("exclude") or "")
    found: list[str] = []
    for current, folders, names in os.walk(folder):
        folders[:] = sorted(name for name in folders if not name.startswith(".")) if recurse else []
        for name in sorted(names):
            path = os.path.join(current, name)
            if not name.endswith((*_MANIFEST_EXTENSIONS, *_JSONNET_EXTENSIONS)) or not _regular(path):
                continue
            relative = os.path.relpath(path, folder).replace(os.sep, "/")
            if exclude and _glob(exclude, relative):
                continue
            if include and not _glob(include, relative):
                continue
            found.append(path)
    return found


def _glob(pattern: str, path: str) -> bool:
    """argo-cd util/glob ``Match`` (gobwas/glob without separators: ``*`` crosses ``/``; ``{a,b}``
    alternatives, at most 256 spellings expanded)."""
    spellings = [pattern]
    while any("{" in spelling for spelling in spellings):
        expanded = []
        for spelling in spellings:
            match = re.match(r"^(.*?)\{([^{}]*)\}(.*)$", spelling)
            if match is None:
                expanded.append(spelling)
                continue
            expanded.extend(match.group(1) + choice + match.group(3) for choice in match.group(2).split(","))
        if len(expanded) > 256 or expanded == spellings:
            return False
        spellings = expanded
    return any(fnmatch.fnmatchcase(path, spelling) for spelling in spellings)


def directory_release(unit: str, source: Source, limits: Limits) -> Rendered | NotRendered:
    from kaffinity.load.parse import parse
    from kaffinity.load.read import read_text

    assert source.folder is not None
    paths = directory_files(source.folder, source_block(source.spec, "directory"))
    if any(path.endswith(_JSONNET_EXTENSIONS) for path in paths):
        return NotRendered("its directory source holds jsonnet, which kaffinity does not evaluate")
    files: list[SourceFile] = []
    for path in paths:
        name, text, problem = read_text(path, limits)
        if problem is not None:
            continue
        parsed = parse(name, text, limits)
        # A file's problems were reported when it was linted; its objects are what Argo applies.
        files.append(SourceFile(parsed.name, parsed.text, parsed.documents, ()))
    return Rendered(unit, None, tuple(files))


def kustomize_files(folder: str, limits: Limits) -> list[str]:
    """The repository files a kustomize source's build reads objects from (its kustomization's
    closure, :func:`kaffinity.repo.kustomizations.find_kustomizations`): they belong to the Application's
    unit once it is rendered."""
    from kaffinity.repo.kustomizations import closure, find_kustomizations

    found = find_kustomizations([], [folder], limits)
    key = os.path.normpath(folder)
    return list(closure(key, found)) if key in found else []


def mentions_argo(folder: str) -> bool:
    """Whether a file of the folder (at most 200 files, 1 MiB each, looked at; regular files
    only, never through a symlink) names argoproj.io: then rendering it may produce
    Applications (app of apps)."""
    count = 0
    for current, folders, names in os.walk(folder):
        folders[:] = [name for name in folders if not name.startswith(".")]
        for name in names:
            count += 1
            if count > 200:
                return False
            path = os.path.join(current, name)
            if not name.endswith((".yaml", ".yml", ".json", ".tpl")) or not _regular(path):
                continue
            try:
                with open(path, "rb") as handle:
                    if b"argoproj.io" in handle.read(1 << 20):
                        return True
            except OSError:
                continue
    return False


def _regular(path: str) -> bool:
    """A regular file, not a symlink (nor a FIFO or device, whose reading could block)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
