"""Kustomizations as kaffinity reads them before any tool runs: the files and folders each names.

:mod:`kaffinity.repo.units` finds deployment units from them (an overlay no other kustomization
uses is a unit; the files it names as patches are fragments); the GitOps releases
(:mod:`kaffinity.repo.gitops.argo`, :mod:`kaffinity.repo.gitops.flux`) claim a build's files with
:func:`closure`. Field names follow kustomize's ``types.Kustomization``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kaffinity.load.manifests import KUSTOMIZATION_NAMES, find_kustomization
from kaffinity.load.parse import DEFAULT_LIMITS, Limits, SourceFile

#: Kustomization fields whose entries are objects (files or folders of another kustomization).
_RESOURCE_FIELDS = ("resources", "bases", "components", "crds")
#: Fields whose entries are files that are not objects of their own (kustomize's
#: types.Kustomization: patches, replacements, generator and transformer configurations).
_FRAGMENT_LIST_FIELDS = (
    "patchesStrategicMerge",
    "configurations",
    "generators",
    "transformers",
    "validators",
)
_FRAGMENT_PATH_FIELDS = ("patches", "patchesJson6902", "replacements")


@dataclass(frozen=True, slots=True)
class Kustomization:
    """A kustomization file as read: the files and folders it names."""

    path: str
    folder: str
    resource_files: tuple[str, ...]
    folders: tuple[str, ...]  # bases, components, resources that are folders
    fragments: tuple[str, ...]
    uses_helm: bool = False
    #: Resources or bases fetched from elsewhere (a URL, a git repository): building it needs
    #: the network, so --render reads it as written.
    remote: bool = False
    #: ``kind: Component``: a piece other kustomizations use, never deployed alone.
    component: bool = False


def find_kustomizations(
    files: Sequence[SourceFile], roots: Sequence[str], limits: Limits = DEFAULT_LIMITS
) -> dict[str, Kustomization]:
    """Every kustomization below the folders named, and in the folders of the files loaded and
    above them (up to the folder named), by folder."""
    candidates: set[str] = set()
    for root in roots:
        if os.path.isdir(root):
            candidates.update(_walk_kustomizations(root))
        elif os.path.basename(root) in KUSTOMIZATION_NAMES:  # a repository's listing (--changed)
            candidates.add(os.path.normpath(root))
    folders = {os.path.dirname(os.path.normpath(file.name)) or "." for file in files}
    for folder in folders:
        path = find_kustomization(folder)
        if path is not None:
            candidates.add(path)
    found: dict[str, Kustomization] = {}
    pending = sorted(candidates)
    while pending:
        path = pending.pop()
        folder = os.path.dirname(path) or "."
        if folder in found:
            continue
        kustomization = _read_kustomization(path, limits)
        if kustomization is None:
            continue
        found[folder] = kustomization
        for child in kustomization.folders:  # bases outside the walked folders
            if child not in found:
                child_path = find_kustomization(child)
                if child_path is not None:
                    pending.append(child_path)
    return found


def _walk_kustomizations(root: str) -> Iterator[str]:
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in KUSTOMIZATION_NAMES:
            if name in names:
                yield os.path.normpath(os.path.join(folder, name))
                break


def _read_kustomization(path: str, limits: Limits) -> Kustomization | None:
    from kaffinity.load.parse import parse_data
    from kaffinity.load.read import read_text

    # apiVersion and kind are optional in a kustomization: read the mapping as it is.
    _, text, problem = read_text(path, limits)
    if problem is not None:
        return None
    data, problem = parse_data(text)
    if problem is not None or not isinstance(data, Mapping):
        return None
    folder = os.path.dirname(path) or "."
    files: list[str] = []
    folders: list[str] = []
    fragments: list[str] = []
    remote = False
    for key in _RESOURCE_FIELDS:
        for entry in _strings(data.get(key)):
            target = _local(folder, entry)
            if target is None:
                remote = True
                continue
            if os.path.isdir(target):
                folders.append(target)
            else:
                files.append(target)
    for key in _FRAGMENT_LIST_FIELDS:
        for entry in _strings(data.get(key)):
            if "\n" not in entry and (target := _local(folder, entry)) is not None:
                fragments.append(target)
    for key in _FRAGMENT_PATH_FIELDS:
        items = data.get(key)
        for item in items if isinstance(items, list) else ():
            if isinstance(item, Mapping) and isinstance(item.get("path"), str):
                target = _local(folder, item["path"])
                if target is not None:
                    fragments.append(target)
    return Kustomization(
        path,
        folder,
        tuple(files),
        tuple(folders),
        tuple(fragments),
        uses_helm=bool(data.get("helmCharts")),
        remote=remote,
        component=data.get("kind") == "Component",
    )


def _strings(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _local(folder: str, entry: str) -> str | None:
    """A kustomization entry as a local path; None for remote ones (URLs, git repositories)."""
    from kaffinity.repo.preflight import is_remote

    if is_remote(entry, folder):
        return None
    return os.path.normpath(os.path.join(folder, entry))


def needs_network(folder: str, kustomizations: Mapping[str, Kustomization]) -> bool:
    """Whether building the kustomization in ``folder`` fetches a remote resource (its own or a
    base's, recursively)."""
    seen: set[str] = set()
    stack = [folder]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        kustomization = kustomizations.get(current)
        if kustomization is None:
            continue
        if kustomization.remote:
            return True
        stack.extend(kustomization.folders)
    return False


def closure(folder: str, kustomizations: Mapping[str, Kustomization]) -> list[str]:
    """The resource files of a kustomization and of those it uses, each once, in order."""
    out: list[str] = []
    seen: set[str] = set()
    stack = [folder]
    visited: set[str] = set()
    while stack:
        current = stack.pop(0)
        if current in visited:
            continue
        visited.add(current)
        kustomization = kustomizations.get(current)
        if kustomization is None:
            continue
        for path in kustomization.resource_files:
            if path not in seen:
                seen.add(path)
                out.append(path)
        stack.extend(kustomization.folders)
    return out
