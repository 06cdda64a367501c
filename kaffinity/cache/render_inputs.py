"""What a rendered unit's key hashes (:mod:`kaffinity.cache.rendered`): every file building an
overlay (:func:`kustomize_inputs`) or rendering a chart (:func:`chart_inputs`) reads, by name,
real path and bytes; None where something cannot be hashed (a remote input with the network on,
a symlinked folder, too many files): then the unit is rendered every run.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kaffinity.load.manifests import KUSTOMIZATION_NAMES
from kaffinity.load.parse import Limits

if TYPE_CHECKING:
    from kaffinity.repo.sandbox import Sandbox

#: Files a unit's key may hash: past it, the unit is rendered every run.
MAX_INPUTS = 20_000


# --- the inputs of a unit --------------------------------------------------------------------


@dataclass(slots=True)
class Inputs:
    """What a render reads, as hashed: one line per path (name, real path, kind, digest). ``None``
    from the functions below: something that cannot be hashed (remote, too many files)."""

    lines: list[str] = field(default_factory=list)
    #: Real paths of the files hashed and the folders listed: a cached entry may name only these.
    files: set[str] = field(default_factory=set)

    def add(self, path: str, limits: Limits) -> bool:
        """Hash the file or folder at ``path`` (a folder: its existence; a missing path: so
        marked). False past :data:`MAX_INPUTS`."""
        if len(self.lines) >= MAX_INPUTS:
            return False
        real = os.path.realpath(path)
        try:
            info = os.stat(real)
        except OSError:
            self.lines.append(f"{path}\0{real}\0missing")
            return True
        if stat.S_ISDIR(info.st_mode):
            self.lines.append(f"{path}\0{real}\0folder")
            self.files.add(real)
            return True
        if not stat.S_ISREG(info.st_mode) or info.st_size > limits.file_size:
            self.lines.append(f"{path}\0{real}\0other\0{info.st_size}")
            return True
        digest = hashlib.blake2b(digest_size=20)
        try:
            with open(real, "rb") as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
        except OSError:
            self.lines.append(f"{path}\0{real}\0unreadable")
            return True
        self.lines.append(f"{path}\0{real}\0file\0{digest.hexdigest()}")
        self.files.add(real)
        return True


def kustomize_inputs(directory: str, limits: Limits, *, network: bool) -> Inputs | None:
    """The files building the kustomization in ``directory`` reads (see the module's
    docstring), or None when one of them is remote (a URL, a remote base, ``helmCharts``)."""
    from kaffinity.load.manifests import find_kustomization
    from kaffinity.load.read import read_text
    from kaffinity.repo.preflight import _first_document

    inputs = Inputs()
    seen: set[str] = set()
    folders = [directory]
    while folders:
        folder = folders.pop()
        real = os.path.realpath(folder)
        if real in seen:
            continue
        seen.add(real)
        inputs.files.add(real)
        present = [name for name in KUSTOMIZATION_NAMES if os.path.isfile(os.path.join(folder, name))]
        inputs.lines.append(f"{folder}\0{real}\0kustomizations\0{','.join(present)}")
        path = find_kustomization(folder)
        if path is None:
            continue
        if not inputs.add(path, limits):
            return None
        _, text, problem = read_text(path, limits)
        if problem is not None:
            continue
        pending: list[Any] = [_first_document(text, limits, every=True, strict=False)]
        while pending:
            node = pending.pop()
            if isinstance(node, dict):
                for key, value in node.items():
                    if key == "helmCharts" and value:
                        return None  # kustomize runs helm, which pulls charts
                    for entry in _entries(key, value):
                        if not _entry(entry, key, folder, inputs, folders, pending, limits, network=network):
                            return None
                pending.extend(node.values())
            elif isinstance(node, list):
                pending.extend(node)
    return inputs


def _entries(key: str, value: Any) -> list[str]:
    """The paths (or URLs) a kustomization's field ``key`` names (kaffinity.repo.preflight's
    fields: the same that the preflight checks)."""
    from kaffinity.repo import preflight

    if key in preflight._LIST_KEYS and isinstance(value, list):
        found = [item for item in value if isinstance(item, str)]
    elif key in preflight._SCALAR_KEYS and isinstance(value, str):
        found = [value]
    else:
        return []
    if key in preflight._CONFIG_KEYS:
        found = [item for item in found if "\n" not in item]  # inline: the kustomization's bytes
    if key == "files":
        found = [item.split("=", 1)[1] if "=" in item else item for item in found]
    return [item for item in found if item.strip()]


def _entry(
    entry: str,
    key: str,
    folder: str,
    inputs: Inputs,
    folders: list[str],
    pending: list[Any],
    limits: Limits,
    *,
    network: bool,
) -> bool:
    """Hash what one entry names: a folder of resources to walk, a file (a configuration's
    own paths to look through); False when it cannot be (remote with the network on)."""
    from kaffinity.load.read import read_text
    from kaffinity.repo import preflight

    if preflight.is_remote(entry, folder):
        # With the network off, a remote entry builds to a refusal, or the overlay is built
        # without it (not cached): the entry's text decides. On, its content is not hashed here.
        inputs.lines.append(f"{folder}\0remote\0{entry}")
        return not network
    target = os.path.normpath(os.path.join(folder, entry))
    if os.path.isdir(target):
        if key in preflight.RESOURCE_KEYS:
            folders.append(target)
        return inputs.add(target, limits)
    if not inputs.add(target, limits):
        return False
    if key in preflight._CONFIG_KEYS and os.path.isfile(target):
        _, text, problem = read_text(target, limits)
        if problem is None:
            pending.append(preflight._first_document(text, limits, every=True, strict=False))
    return True


def chart_inputs(
    chart_dir: str, values_files: Sequence[str], limits: Limits, sandbox: Sandbox | None = None
) -> Inputs | None:
    """The files rendering the chart in ``chart_dir`` with ``values_files`` reads (see the
    module's docstring), or None when a folder in it is a symlink, or a dependency it lacks
    would be fetched (the network is on: what it fetches is not hashed here)."""
    inputs = Inputs()
    if not _add_tree(inputs, chart_dir, limits):
        return None
    for values in values_files:
        if not inputs.add(values, limits):
            return None
    from kaffinity.repo.dependencies import _listed, _locked, _present

    listed = _listed(chart_dir, limits)
    if listed is None:
        return inputs
    present = _present(os.path.join(chart_dir, "charts"), limits)
    locked = _locked(chart_dir, limits)
    for dependency in listed[1]:
        if dependency.name in present:
            continue
        if not _dependency(inputs, chart_dir, dependency, locked, limits, sandbox):
            return None
    return inputs


def _dependency(
    inputs: Inputs,
    chart_dir: str,
    dependency: Any,
    locked: Mapping[tuple[str, str], str],
    limits: Limits,
    sandbox: Sandbox | None,
) -> bool:
    """Hash what a dependency missing from ``charts/`` is taken from, as
    :func:`kaffinity.repo.dependencies.plan` takes it: a ``file://`` folder; with the network off,
    the chart kaffinity fetched before (the remote cache: an exact version), else nothing (a
    ``chart-dependency`` finding, from Chart.yaml's bytes). False with the network on."""
    repository = dependency.repository
    if repository.startswith("file://"):
        folder = os.path.normpath(os.path.join(chart_dir, repository.removeprefix("file://")))
        return _add_tree(inputs, folder, limits)
    if not repository or repository.startswith(("@", "alias:")):
        return True  # never taken: the finding comes from Chart.yaml's bytes
    if sandbox is None or sandbox.network:
        return False
    from kaffinity.repo.fetch.cache import NotFetched
    from kaffinity.repo.fetch.charts import fetch_chart

    version = locked.get((dependency.name, repository)) or dependency.version
    fetched = fetch_chart(repository, dependency.name, version, sandbox, limits=limits)
    if isinstance(fetched, NotFetched):
        inputs.lines.append(f"{repository}\0{dependency.name}\0{version}\0not fetched\0{fetched.reason}")
        return True
    inputs.lines.append(f"{repository}\0{dependency.name}\0{version}\0fetched")
    return _add_tree(inputs, fetched.path, limits)


def _add_tree(inputs: Inputs, folder: str, limits: Limits) -> bool:
    """Every file below ``folder`` (symlinks to files followed, sorted); False for a symlink to
    a folder, or past :data:`MAX_INPUTS`."""
    if not os.path.isdir(folder):
        inputs.lines.append(f"{folder}\0missing folder")
        return True
    for current, dirs, names in os.walk(folder):
        dirs.sort()
        inputs.files.add(os.path.realpath(current))
        if any(os.path.islink(os.path.join(current, name)) for name in dirs):
            return False
        for name in sorted(names):
            if not inputs.add(os.path.join(current, name), limits):
                return False
    return True
