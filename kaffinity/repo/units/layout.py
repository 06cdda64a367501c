"""How units are found (:func:`read_layout`): kustomize overlays no other kustomization uses, Helm
charts (an in-tree subchart belongs to its parent: :func:`chart_of`), variants of the remaining
files, or the units ``.kaffinity.yaml`` names; within a unit, an object defined twice is read
once."""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace

from kaffinity.k8s.compact import Sources
from kaffinity.k8s.model.build import object_ref
from kaffinity.k8s.model.objects import document_key
from kaffinity.load.parse import DEFAULT_LIMITS, Limits, SourceFile
from kaffinity.load.source import Document
from kaffinity.repo.kustomizations import (
    Kustomization,
    closure,
    find_kustomizations,
)
from kaffinity.repo.units.unit import Identity, Layout, Unit, single
from kaffinity.repo.units.variants import identity, under_folder, variant_units


def read_layout(
    files: Sequence[SourceFile],
    roots: Sequence[str] = (),
    *,
    default_namespace: str = "default",
    configured: Sequence[tuple[str, Sequence[str]]] | str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    kustomized: bool = True,
) -> Layout:
    """Find the deployment units of the loaded ``files``.

    ``roots``: the folders and files the user named (kustomizations are looked for below the
    folders). ``configured``: ``units:`` of the config: ``"one"``, or (name, path prefixes) pairs.
    ``kustomized``: False when :func:`kaffinity.repo.rendering.renderable_on_disk` said none is
    there (the folders are not walked again).
    """
    if configured == "one":
        return single(doc for file in files for doc in file.documents)
    whole = Sources(files)
    kustomizations = find_kustomizations(files, roots, limits) if kustomized else {}
    # Patches and the kustomization files themselves: build input, never objects of a cluster.
    fragments = frozenset(path for k in kustomizations.values() for path in (k.path, *k.fragments))
    by_path = {os.path.normpath(file.name): file for file in files}
    objects = [file for path, file in by_path.items() if path not in fragments]
    documents = tuple(doc for file in objects for doc in file.documents)
    notes: list[str] = []
    if isinstance(configured, Sequence) and not isinstance(configured, str) and configured:
        units = _configured_units(objects, configured)
    else:
        units = _found_units(kustomizations, by_path, objects, default_namespace, notes, whole)
    units = _final_units(units, documents, default_namespace, notes, whole)
    return Layout(
        tuple(units),
        documents,
        fragments,
        tuple(kustomizations.values()),
        tuple(notes),
    )


def _found_units(
    kustomizations: Mapping[str, Kustomization],
    by_path: Mapping[str, SourceFile],
    objects: Sequence[SourceFile],
    default_namespace: str,
    notes: list[str],
    whole: Sources,
) -> list[Unit]:
    """The units found: kustomizations, charts, then variants of the files neither claims."""
    claimed: set[str] = set()
    units = list(_kustomize_units(kustomizations, by_path, claimed))
    units.extend(_chart_units(objects, claimed))  # after: the kustomizations claim files first
    rest = [file for file in objects if os.path.normpath(file.name) not in claimed]
    units.extend(variant_units(rest, default_namespace, notes, whole))
    if any(k.uses_helm for k in kustomizations.values()):
        notes.append("kustomizations with helmCharts are read without their charts")
    return units


def _final_units(
    units: list[Unit],
    documents: tuple[Document, ...],
    default_namespace: str,
    notes: list[str],
    whole: Sources,
) -> list[Unit]:
    """The units named, each object once in each (a note on those defined again), and a single
    unit of files nameless."""
    # A chart whose templates are all unrendered has no object yet, but is a unit (--render).
    units = [unit for unit in units if unit.documents or unit.source in ("helm", "kustomize")]
    if not units:
        units = [Unit("", "files", documents)]
    units = [replace(unit, name=unit.name or "(other files)") for unit in units]
    clashes: list[Document] = []
    units = [_once(unit, default_namespace, clashes, whole) for unit in units]
    if clashes:
        first = min(clashes, key=lambda doc: (doc.file, doc.index))
        notes.append(
            f"{len(clashes)} object(s) defined again later in the same unit with other content "
            f"(first: {first.file}:{first.span.line}): the last definition is read, as "
            "`kubectl apply -f` leaves it (`units:` in .kaffinity.yaml can separate them)"
        )
    if len(units) == 1 and units[0].source in ("files", "variant", "fixture"):
        units = [replace(units[0], name="")]
    return units


# --- kustomize -----------------------------------------------------------------------------


def _kustomize_units(
    kustomizations: Mapping[str, Kustomization], by_path: Mapping[str, SourceFile], claimed: set[str]
) -> Iterator[Unit]:
    """One unit per kustomization no other one uses (an overlay, or a lone base)."""
    used = {child for k in kustomizations.values() for child in k.folders}
    for folder in sorted(kustomizations):
        members = closure(folder, kustomizations)
        for path in members:
            claimed.add(path)
        if folder in used or kustomizations[folder].component:
            continue
        docs = tuple(doc for path in members if (file := by_path.get(path)) for doc in file.documents)
        yield Unit(folder, "kustomize", docs, tuple(members), "rendering off")


# --- Helm ----------------------------------------------------------------------------------


def chart_of(path: str, cache: dict[str, str | None] | None = None) -> str | None:
    """The Helm chart folder (holding ``Chart.yaml``) a file belongs to, if any: the parent's for
    a file of an in-tree subchart (a chart folder in another chart's ``charts/``), which Helm
    renders only as a dependency of its parent, with the parent's values (helm/helm
    pkg/chart/loader: a folder of ``charts/`` is a dependency of the chart; pkg/chartutil
    ProcessDependencies and CoalesceValues give it ``.Values.<name>`` of the parent's values)."""
    cache = {} if cache is None else cache
    found = _nearest_chart(path, cache)
    while found is not None and os.path.basename(os.path.dirname(found)) == "charts":
        parent = os.path.dirname(os.path.dirname(found)) or "."
        if not os.path.isfile(os.path.join(parent, "Chart.yaml")):
            break
        found = _nearest_chart(os.path.join(parent, "Chart.yaml"), cache)
    return found


def _nearest_chart(path: str, cache: dict[str, str | None]) -> str | None:
    folder = os.path.dirname(os.path.normpath(path)) or "."
    trail: list[str] = []
    found: str | None = None
    while True:
        if folder in cache:
            found = cache[folder]
            break
        trail.append(folder)
        if os.path.isfile(os.path.join(folder, "Chart.yaml")):
            found = folder
            break
        parent = os.path.dirname(folder)
        if not parent or parent == folder or folder in (".", os.sep):
            break
        folder = parent
    for visited in trail:
        cache[visited] = found
    return found


def _chart_units(files: Sequence[SourceFile], claimed: set[str]) -> list[Unit]:
    cache: dict[str, str | None] = {}
    by_chart: dict[str, list[Document]] = defaultdict(list)
    members: dict[str, list[str]] = defaultdict(list)
    for file in files:
        path = os.path.normpath(file.name)
        if path in claimed:
            continue
        chart = chart_of(path, cache)
        if chart is not None:
            claimed.add(path)
            by_chart[chart].extend(file.documents)
            members[chart].append(path)
    return [
        Unit(chart, "helm", tuple(by_chart[chart]), tuple(members[chart]), "rendering off")
        for chart in sorted(members)
    ]


# --- configured units ----------------------------------------------------------------------


def _configured_units(
    files: Sequence[SourceFile], configured: Sequence[tuple[str, Sequence[str]]]
) -> list[Unit]:
    """``units:`` of the config: each unit's files are those under its paths; files under no
    unit's paths are shared by every unit."""
    named = [(name, [os.path.abspath(p) for p in prefixes]) for name, prefixes in configured]
    where = {id(file): os.path.abspath(file.name) for file in files}
    shared = [
        file
        for file in files
        if not any(under_folder(where[id(file)], p) for _, prefixes in named for p in prefixes)
    ]
    units = []
    for name, prefixes in named:
        members = [file for file in files if any(under_folder(where[id(file)], p) for p in prefixes)]
        units.append(Unit(name, "config", tuple(d for f in (*members, *shared) for d in f.documents)))
    return units


# --- one object once -----------------------------------------------------------------------


def _once(unit: Unit, default_namespace: str, clashes: list[Document], whole: Sources) -> Unit:
    """The unit with each object once. Of copies with different content the last applied is
    read, as ``kubectl apply -f`` leaves it (files in lexical order, documents in file order:
    the canonical order); the documents it replaces are added to ``clashes``."""
    keys = {id(doc): identity(doc, default_namespace) for doc in unit.documents}
    counts = Counter(key for key in keys.values() if key is not None)
    if not counts or counts.most_common(1)[0][1] < 2:
        return unit  # every object once: nothing to choose (the common case, and no sort)
    chosen: dict[Identity, Document] = {}
    replaced: set[int] = set()
    repeated = [doc for doc in unit.documents if (key := keys[id(doc)]) is not None and counts[key] > 1]
    for doc in sorted(repeated, key=lambda d: document_key(object_ref(d, default_namespace), d)):
        key = keys[id(doc)]
        if key is None:
            continue
        first = chosen.get(key)
        if first is not None:
            replaced.add(id(first))
            if whole.data(first) != whole.data(doc):
                clashes.append(first)
        chosen[key] = doc
    if not replaced:
        return unit
    kept = tuple(doc for doc in unit.documents if id(doc) not in replaced)
    return replace(unit, documents=kept)
