"""A chart's dependencies as ``helm template`` needs them (issue 32, item 3).

Helm renders the subcharts it finds in ``charts/`` (folders and ``.tgz`` archives: helm
pkg/chart/loader ``LoadFiles``, names starting with ``_`` or ``.`` skipped) and refuses a chart
whose ``Chart.yaml`` ``dependencies`` (``requirements.yaml`` for an ``apiVersion: v1`` chart)
name one that is not there (pkg/action ``CheckDependencies``, matching the subchart's own
``name``: "found in Chart.yaml, but missing in charts/ directory"); ``helm dependency build``
vendors them. helm-python-sdk's render skips that check, which rendered unvendored umbrella charts
to zero objects.

:func:`plan` lists each dependency and what is missing from ``charts/``. A missing one is taken
(as ``helm dependency build`` takes it: the ``Chart.lock`` version when the lock names it):

- ``repository: file://../x``: the folder in the repository (never outside it), walked as the
  chart is (:func:`kaffinity.repo.sandbox.walk_problem`) before it is copied;
- ``https://``, ``http://``, ``oci://``: fetched into the user's cache (:mod:`kaffinity.repo.fetch`),
  with the network (or from the cache: an exact version fetched before);
- otherwise (the network off, ``@name``/``alias:name`` naming the user's own ``helm repo``
  configuration, no repository, a fetch that failed): not taken, and a ``chart-dependency``
  finding at its item of ``Chart.yaml`` names it and the command that vendors it.

:func:`scratch_chart` then makes a copy of the chart in a scratch folder (never in the
repository) whose ``charts/`` holds what was taken, and an empty chart of the same name for each
dependency not taken, so that Helm renders the rest -- the parent and the dependencies it has --
as it would once they are all there; its condition, tags, alias and import-values are Helm's own.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kaffinity.load.parse import Limits
from kaffinity.load.source import Span
from kaffinity.repo.sandbox import Sandbox, inside, walk_problem

#: The rule of a dependency that is not in ``charts/`` and could not be taken.
DEPENDENCY_RULE = "chart-dependency"


@dataclass(frozen=True, slots=True)
class Dependency:
    name: str
    version: str | None
    repository: str
    span: Span | None


@dataclass(slots=True)
class Plan:
    chart_dir: str
    #: The file that lists the dependencies (Chart.yaml, or requirements.yaml).
    file: str
    dependencies: list[Dependency]
    #: Dependencies taken from elsewhere: (dependency, a chart folder to copy into charts/).
    taken: list[tuple[Dependency, str]] = field(default_factory=list)
    #: Dependencies neither in charts/ nor taken, and why.
    missing: list[tuple[Dependency, str]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Everything Chart.yaml names is in charts/: Helm renders the chart as it is."""
        return not self.taken and not self.missing


def plan(chart_dir: str, roots: Sequence[str], limits: Limits, sandbox: Sandbox) -> Plan | None:
    """What the chart's dependencies need, or None when it names none."""
    listed = _listed(chart_dir, limits)
    if listed is None:
        return None
    file, dependencies = listed
    present = _present(os.path.join(chart_dir, "charts"), limits)
    locked = _locked(chart_dir, limits)
    result = Plan(chart_dir, file, dependencies)
    for dependency in dependencies:
        if dependency.name in present:
            continue
        folder, why = _take(chart_dir, dependency, locked, roots, limits, sandbox)
        if folder is not None:
            result.taken.append((dependency, folder))
        else:
            result.missing.append((dependency, why))
    return result


def _documents(path: str, limits: Limits) -> list[Any]:
    from kaffinity.load.parse.reader import _documents, _parse_errors
    from kaffinity.load.read import read_text

    _, text, problem = read_text(path, limits)
    if problem is not None:
        return []
    try:
        return [data for data, _ in _documents(text, limits)]
    except _parse_errors():
        return []  # Helm says why when it loads the chart


def _listed(chart_dir: str, limits: Limits) -> tuple[str, list[Dependency]] | None:
    """The dependencies Chart.yaml (or, for apiVersion v1, requirements.yaml) lists, with the
    position of each item."""
    chart_file = os.path.join(chart_dir, "Chart.yaml")
    documents = _documents(chart_file, limits)
    meta = documents[0] if documents else None
    if not isinstance(meta, dict):
        return None
    file, items = chart_file, meta.get("dependencies")
    requirements = os.path.join(chart_dir, "requirements.yaml")
    if meta.get("apiVersion") == "v1" and not items and os.path.isfile(requirements):
        loaded = _documents(requirements, limits)
        if loaded and isinstance(loaded[0], dict):
            file, items = requirements, loaded[0].get("dependencies")
    if not isinstance(items, list) or not items:
        return None
    found = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        name = item.get("name")
        if name is not None and not isinstance(name, str):
            name = _as_written(item, "name", file)
        if not isinstance(name, str) or not name:
            continue
        version = item.get("version")
        repository = item.get("repository")
        span = getattr(item, "span", None)
        if span is None and hasattr(items, "pos") and index < len(items.pos) and items.pos[index] is not None:
            from kaffinity.load.source import unpack

            span = unpack(items.pos[index])
        if version is not None and not isinstance(version, str):
            # Helm reads the field as a string, as written (sigs.k8s.io/yaml into a string
            # field): an unquoted 1.10 is "1.10", not the float 1.1.
            version = _as_written(item, "version", file) or str(version)
        found.append(
            Dependency(
                name,
                str(version) if version is not None else None,
                repository.strip() if isinstance(repository, str) else "",
                span,
            )
        )
    return (file, found) if found else None


def _as_written(item: Any, key: str, file: str) -> str | None:
    """The plain scalar ``key`` of the mapping ``item`` as its line of ``file`` spells it."""
    from kaffinity.load.source import unpack

    try:
        position = unpack(item.pos[list(item).index(key)])
        with open(file, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if number == position.line:
                    match = re.match(rf"{re.escape(key)}\s*:\s*([^\s#,\]}}]+)", line[position.column - 1 :])
                    return match.group(1) if match else None
    except (AttributeError, ValueError, IndexError, TypeError, OSError, UnicodeDecodeError):
        return None
    return None


def _present(charts: str, limits: Limits) -> set[str]:
    """The names of the charts Helm loads from ``charts/``: each folder's Chart.yaml ``name``,
    each ``.tgz`` archive's (helm pkg/chart/loader ``LoadFiles``)."""
    names: set[str] = set()
    try:
        entries = list(os.scandir(charts))
    except OSError:
        return names
    for entry in entries:
        if entry.name[:1] in ("_", "."):
            continue
        if entry.name.endswith(".tgz") and entry.is_file():
            name = _archive_name(entry.path, limits)
        elif entry.is_dir():
            documents = _documents(os.path.join(entry.path, "Chart.yaml"), limits)
            name = documents[0].get("name") if documents and isinstance(documents[0], dict) else None
        else:
            continue
        if isinstance(name, str):
            names.add(name)
    return names


def _archive_name(path: str, limits: Limits) -> str | None:
    """The ``name`` in the Chart.yaml at the top of a chart archive (read bounded), or None."""
    try:
        if os.path.getsize(path) > limits.file_size:
            return None
        with tarfile.open(path, "r:gz") as archive:
            for count, member in enumerate(archive):
                if count > 10_000:
                    return None
                parts = member.name.replace("\\", "/").split("/")
                if len(parts) == 2 and parts[1] == "Chart.yaml" and member.isfile() and member.size < 1024**2:
                    handle = archive.extractfile(member)
                    if handle is None:
                        return None
                    from kaffinity.load.parse.reader import _documents

                    text = handle.read().decode("utf-8", "replace")
                    meta = next((data for data, _ in _documents(text, limits)), None)
                    name = meta.get("name") if isinstance(meta, dict) else None
                    return name if isinstance(name, str) else None
    except Exception:  # noqa: BLE001 - a broken archive: Helm says why when it loads the chart
        return None
    return None


def _locked(chart_dir: str, limits: Limits) -> dict[tuple[str, str], str]:
    """Chart.lock's (or requirements.lock's) exact versions, by (name, repository)."""
    versions: dict[tuple[str, str], str] = {}
    for name in ("Chart.lock", "requirements.lock"):
        path = os.path.join(chart_dir, name)
        if not os.path.isfile(path):
            continue
        documents = _documents(path, limits)
        lock = documents[0] if documents else None
        items = lock.get("dependencies") if isinstance(lock, dict) else None
        for item in items if isinstance(items, list) else ():
            if (
                isinstance(item, dict)
                and isinstance(item.get("name"), str)
                and item.get("version") is not None
            ):
                versions[(item["name"], str(item.get("repository") or ""))] = str(item["version"])
    return versions


def _take(
    chart_dir: str,
    dependency: Dependency,
    locked: dict[tuple[str, str], str],
    roots: Sequence[str],
    limits: Limits,
    sandbox: Sandbox,
) -> tuple[str | None, str]:
    """A chart folder for ``dependency``, or None and why there is none."""
    from kaffinity.repo.fetch.cache import NotFetched
    from kaffinity.repo.fetch.charts import fetch_chart

    repository = dependency.repository
    if not repository:
        return None, "it has no repository: it is to be vendored into charts/"
    if repository.startswith(("@", "alias:")):
        return None, (
            f"its repository {repository} names an entry of the helm repositories you added "
            "(helm repo add), which kaffinity does not read"
        )
    if repository.startswith("file://"):
        folder = os.path.normpath(os.path.join(chart_dir, repository.removeprefix("file://")))
        if not inside(folder, roots):
            return None, f"{repository} is outside the repository"
        if not os.path.isfile(os.path.join(folder, "Chart.yaml")):
            return None, f"{repository} holds no Chart.yaml"
        walked = walk_problem(folder, roots, limits.file_size)
        if walked is not None:
            return None, f"{walked[0]} {walked[1]}"
        return folder, ""
    version = locked.get((dependency.name, repository)) or dependency.version
    fetched = fetch_chart(repository, dependency.name, version, sandbox, limits=limits)
    if isinstance(fetched, NotFetched):
        prefix = f"chart {dependency.name} {version or '*'} from {repository}"
        reason = fetched.reason.removeprefix(prefix).removeprefix(":").strip()
        return None, ("it " + reason) if reason.startswith("is ") else reason
    return fetched.path, ""


def scratch_chart(chart: Plan, scratch: str) -> str:
    """A copy of the chart in ``scratch`` whose ``charts/`` holds the dependencies taken, and
    whose Chart.yaml (or requirements.yaml) no longer lists the missing ones, so that Helm's
    CheckDependencies lets the rest render as Helm renders a chart without them (``.Subcharts``
    lacks them, as it lacks a disabled one; the values are the chart's). The copy's folder.
    The chart was walked before (check_chart): its symlinks lead inside the repository, and
    are copied as the files they lead to."""
    target = os.path.join(scratch, os.path.basename(os.path.abspath(chart.chart_dir)) or "chart")
    shutil.copytree(chart.chart_dir, target, symlinks=False, ignore=shutil.ignore_patterns(".git"))
    charts = os.path.join(target, "charts")
    os.makedirs(charts, exist_ok=True)
    for dependency, folder in chart.taken:
        shutil.copytree(folder, _free(charts, dependency.name), symlinks=False)
    if chart.missing:
        listing = os.path.join(target, os.path.basename(chart.file))
        with open(listing, encoding="utf-8") as handle:
            text = handle.read()
        lines = [dependency.span.line for dependency, _ in chart.missing if dependency.span is not None]
        kept = _without_items(text, lines, [d.span.line for d in chart.dependencies if d.span is not None])
        if kept is not None and len(lines) == len(chart.missing):
            with open(listing, "w", encoding="utf-8") as handle:
                handle.write(kept)
        else:  # a flow-style list: an empty chart of the name in charts/ instead
            for dependency, _ in chart.missing:
                stub = _free(charts, dependency.name)
                os.makedirs(os.path.join(stub, "templates"))
                with open(os.path.join(stub, "Chart.yaml"), "w", encoding="utf-8") as handle:
                    json.dump({"apiVersion": "v2", "name": dependency.name, "version": "0.0.0"}, handle)
    return target


def _without_items(text: str, remove: Sequence[int], starts: Sequence[int]) -> str | None:
    """``text`` without the block-sequence items that begin on the lines ``remove`` (1-based; a
    ``- `` at the start of the line's content); each item ends before the next item of
    ``starts`` or the first later line indented no deeper than its dash. None when an item is
    not of that form (a flow sequence)."""
    lines = text.splitlines(keepends=True)
    drop: set[int] = set()
    following = sorted(starts)
    for line in remove:
        index = line - 1
        if index >= len(lines):
            return None
        content = lines[index].lstrip(" ")
        if not content.startswith("-"):
            return None
        indent = len(lines[index]) - len(content)
        end = next((start - 1 for start in following if start > line), len(lines))
        stop = index + 1
        while stop < end:
            body = lines[stop].strip()
            depth = len(lines[stop]) - len(lines[stop].lstrip(" "))
            if body and not body.startswith("#") and depth <= indent:
                break
            stop += 1
        drop.update(range(index, stop))
    kept = "".join(line for number, line in enumerate(lines) if number not in drop)
    return kept


def _free(charts: str, name: str) -> str:
    path = os.path.join(charts, name)
    number = 1
    while os.path.lexists(path):
        number += 1
        path = os.path.join(charts, f"{name}-{number}")
    return path


def vendor_command(chart_dir: str) -> str:
    return f"helm dependency build {chart_dir}"
