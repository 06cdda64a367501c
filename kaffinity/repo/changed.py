"""What a change is (``lint --changed``): the files it changes, their previous versions, and the
deployment units whose rendered output it changes.

pre-commit passes the files a commit changes. What the change causes reaches further than those
files: an overlay rendered from a changed patch, a chart from a changed values file, a release
from a changed ``valuesFrom`` ConfigMap has other objects than before, wherever their findings
land (the base's file, the chart's template). And a term in an unchanged file may select, or have
selected, the pods of a changed object: :mod:`kaffinity.graph.changes` finds those relations,
over the previous version of each changed file (``git show HEAD:path``, read with
:func:`kaffinity.load.repository.previous_versions`) as well as the new one.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kaffinity.load.charts import chart_template_root
from kaffinity.load.source import Document
from kaffinity.repo.rendering import is_release

if TYPE_CHECKING:
    from kaffinity.load.parse import Limits
    from kaffinity.repo.units import Layout, Unit


@dataclass(frozen=True, slots=True)
class Change:
    """What ``lint --changed`` reports on.

    ``files``: the changed files, named as read. ``previous``: the documents each changed file
    had at ``HEAD`` (absent: a new file, no git repository). ``units``: the units whose rendered
    output the change changes, by name, with the changed files they are rendered from.
    ``reach``: the documents (by ``id``) the cross-object stage needs to report on the change
    as over the whole repository (:func:`kaffinity.graph.reach.reached`); None: all of them."""

    files: frozenset[str]
    previous: Mapping[str, tuple[Document, ...]] = field(default_factory=dict)
    units: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    reach: frozenset[int] | None = None


def previous_documents(changed: Collection[str], limits: Limits) -> dict[str, tuple[Document, ...]]:
    """The documents of each of ``changed`` at ``HEAD`` of its git work tree, parsed as the
    loader parses files (within ``limits``); a version that does not parse is left out."""
    from kaffinity.load.parse import parse
    from kaffinity.load.repository import previous_versions

    found: dict[str, tuple[Document, ...]] = {}
    for name, text in previous_versions(sorted(changed), limits.file_size).items():
        source = parse(name, text, limits)
        if not any(problem.rule == "parse-error" for problem in source.problems):
            found[name] = source.documents
    return found


def _abs(path: str) -> str:
    return os.path.abspath(path)


def touches(
    layout: Layout, changed: Collection[str], helm_values: Mapping[str, Sequence[str]]
) -> dict[str, tuple[str, ...]]:
    """The overlays and charts (units of source ``kustomize`` and ``helm``, before rendering)
    that hold one of the ``changed`` files, by name, with those files. An overlay holds its
    resources, those of its bases and components, and the files of each of those kustomizations'
    folders (the kustomization, patches, generators' files); a chart, the files below its
    folder (values, ``Chart.yaml``, templates) and its ``helm-values:`` files."""
    named = {_abs(path): path for path in changed}
    by_folder = {_abs(k.folder): k for k in layout.kustomizations}
    values = {_abs(chart): {_abs(p) for p in files} for chart, files in helm_values.items()}

    def closure(folder: str) -> Iterator[str]:
        seen: set[str] = set()
        stack = [_abs(folder)]
        while stack:
            current = stack.pop()
            if current in seen or current not in by_folder:
                continue
            seen.add(current)
            yield current
            stack.extend(_abs(child) for child in by_folder[current].folders)

    found: dict[str, tuple[str, ...]] = {}
    for unit in layout.units:
        hit: list[str] = []
        if unit.source == "kustomize":
            held = {_abs(path) for path in unit.files}
            near = set()
            for folder in closure(unit.name):
                kustomization = by_folder[folder]
                near.add(folder)
                held.update(_abs(path) for path in (kustomization.path, *kustomization.fragments))
            hit = [name for path, name in named.items() if path in held or os.path.dirname(path) in near]
        elif unit.source == "helm":
            chart = _abs(unit.name)
            extra = values.get(chart, set())
            hit = [name for path, name in named.items() if path.startswith(chart + os.sep) or path in extra]
        if hit:
            found[unit.name] = tuple(sorted(hit))
    return found


def rendered_touches(
    layout: Layout,
    before: Mapping[str, tuple[str, ...]],
    changed: Collection[str],
    changed_documents: Iterable[Document],
) -> dict[str, tuple[str, ...]]:
    """The rendered units whose output the change changes, by name, with the changed files.

    ``before``: :func:`touches` of the layout as read (a chart's variants, ``chart (ci/x.yaml)``,
    inherit the chart's). A GitOps release (built by :func:`kaffinity.repo.units.render_units`)
    is touched by a changed file that holds its object or a ConfigMap or Secret its
    ``valuesFrom`` names (``changed_documents``: the changed files' documents, new and old), one
    its rendered objects come from, a file of a chart they were rendered from, or a
    kustomization or patch beside their files, or a file beside the release's own object."""
    named = {_abs(path): path for path in changed}
    found: dict[str, tuple[str, ...]] = {}
    for unit in layout.units:
        base = unit.name.split(" (", 1)[0]
        if unit.name in before or base in before:
            found[unit.name] = before.get(unit.name) or before[base]
    releases = [
        unit
        for unit in layout.units
        if unit.source.endswith("(rendered)") and not unit.source.startswith(("kustomize", "helm"))
    ]
    if not releases or not named:
        return found
    labels: dict[str, list[str]] = {}
    references: dict[tuple[str, str, str], list[str]] = {}
    for doc in changed_documents:
        data = doc.data
        kind, metadata = data.get("kind"), data.get("metadata")
        if not isinstance(kind, str) or not isinstance(metadata, Mapping):
            continue
        name, namespace = metadata.get("name"), metadata.get("namespace")
        if not isinstance(name, str):
            continue
        if is_release(doc):  # its unit is named ``Kind namespace/name``
            labels.setdefault(
                f"{kind} {namespace}/{name}" if isinstance(namespace, str) else kind, []
            ).append(doc.file if isinstance(namespace, str) else f"{name}\0{doc.file}")
        elif kind in ("ConfigMap", "Secret"):
            references.setdefault((kind, namespace if isinstance(namespace, str) else "", name), []).append(
                doc.file
            )
    wanted = {unit.name for unit in releases}
    release_docs = _release_documents(layout.documents, wanted)
    fragments = {_abs(path) for path in layout.fragments}
    for unit in releases:
        hit = set(labels.get(unit.name, ()))
        kind, _, rest = unit.name.partition(" ")
        hit.update(
            entry.split("\0", 1)[1]
            for entry in labels.get(kind, ())
            if rest.endswith("/" + entry.split("\0", 1)[0])
        )
        for reference in _values_from(release_docs.get(unit.name), rest.partition("/")[0]):
            hit.update(references.get(reference, ()))
            hit.update(references.get((reference[0], "", reference[2]), ()))
        hit.update(_rendered_from(unit, named, fragments))
        release = release_docs.get(unit.name)
        if release is not None:
            # The release's own folder: its values files, the kustomization that generates its
            # valuesFrom ConfigMap (the layout of a Flux app: helmrelease.yaml, values.yaml,
            # kustomization.yaml side by side).
            home = os.path.dirname(_abs(release.file))
            hit.update(name for path, name in named.items() if os.path.dirname(path) == home)
        if hit:
            found[unit.name] = tuple(sorted({*found.get(unit.name, ()), *hit}))
    return found


def _release_documents(documents: Iterable[Document], wanted: Collection[str]) -> dict[str, Document]:
    """The object of each release named in ``wanted`` (``Kind namespace/name``)."""
    found: dict[str, Document] = {}
    for doc in documents:
        data = doc.data
        kind = data.get("kind")
        if not is_release(doc):
            continue
        metadata = data.get("metadata")
        if not isinstance(metadata, Mapping):
            continue
        label = f"{kind} {metadata.get('namespace') or 'default'}/{metadata.get('name')}"
        if label in wanted:
            found.setdefault(label, doc)
    return found


def _values_from(doc: Document | None, namespace: str) -> Iterator[tuple[str, str, str]]:
    """The ConfigMaps and Secrets a HelmRelease's ``spec.valuesFrom`` names: (kind, namespace,
    name), in the release's namespace (helm-controller reads them there)."""
    if doc is None:
        return
    spec = doc.data.get("spec")
    entries: Any = spec.get("valuesFrom") if isinstance(spec, Mapping) else None
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, Mapping) and entry.get("kind") in ("ConfigMap", "Secret"):
            yield str(entry.get("kind")), namespace, str(entry.get("name"))


def _rendered_from(unit: Unit, named: Mapping[str, str], fragments: Collection[str]) -> Iterator[str]:
    """The changed files a rendered unit's objects come from: a file they point at, a file of
    the chart that holds one of them (its values, ``Chart.yaml``), a kustomization or patch in
    the folder of one of them."""
    files = {_abs(doc.file) for doc in unit.documents}
    folders = {os.path.dirname(path) for path in files}
    charts = {chart for path in files if (chart := chart_template_root(path)) is not None}
    for path, name in named.items():
        if (
            path in files
            or any(path.startswith(chart + os.sep) for chart in charts)
            or (path in fragments and os.path.dirname(path) in folders)
        ):
            yield name
