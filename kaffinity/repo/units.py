"""Deployment units: which objects of a repository run in a cluster together.

A repository holds more than one deployment: kustomize overlays over a shared base, a folder per
environment, install variants (argo-cd's ``install.yaml`` and ``namespace-install.yaml``), a Helm
chart. Only one copy of an object -- one ``kind/namespace/name`` -- ever exists in a cluster
(kube-apiserver stores one object per name: a second ``kubectl apply`` replaces the first), so
the rules that read several objects together (categories ``graph``, ``topology``, ``rollout``)
and the offline scheduler must never see two copies at once. Each is run per *unit*: the objects
that are deployed together. The rules that read one object at a time read every object once.

How units are found (docs/repositories.md):

1. A folder with a ``kustomization.yaml`` that no other kustomization uses is a unit: its
   ``resources`` (and those of the bases and components it uses, recursively) are its objects.
   The files a kustomization names as patches, replacements, generators or transformers are
   *fragments*: parts of objects, never objects of their own, so they are not linted.
2. A Helm chart folder (``Chart.yaml``) is a unit of its own; an in-tree subchart (a chart in
   another chart's ``charts/``) belongs to its parent (:func:`chart_of`). Rendered, a chart is
   one unit per variant (:func:`chart_variants`: each ``ci/*-values.yaml``, or each
   ``helm-values:`` file).
3. The remaining files: where two files define the same object with different content, they
   are variants of each other. The folder that tells them apart (the first path component below
   their common folder: ``envs/prod`` and ``envs/staging``; or the file itself when they sit side
   by side) is a variant; every variant is a unit, with the files of the variant's folder and the
   shared files around it (those in the same folder tree that belong to no variant, and those in
   the folders above it). Files that take part in no variant form one more unit.
4. ``units:`` in ``.kaffinity.yaml`` names the units instead (``one``: the whole input is one).

Within a unit, an object defined twice with the same content is read once; defined twice with
different content (a layout the inference could not tell apart), the first in canonical order
is read and a note says so.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from kaffinity.k8s.model.build import object_ref
from kaffinity.k8s.model.objects import document_key
from kaffinity.load.parse import DEFAULT_LIMITS, Limits, SourceFile
from kaffinity.load.source import DataPath, Document, Span
from kaffinity.repo.kustomizations import (
    Kustomization,
    closure,
    find_kustomizations,
    needs_network,
)
from kaffinity.repo.sandbox import DEFAULT_SANDBOX, Budget, Sandbox

if TYPE_CHECKING:
    from kaffinity.repo.gitops.releases import NotRendered, Release
    from kaffinity.repo.rendered import Rendered

Identity = tuple[str, str, str, str]


class UnitCache(Protocol):
    """Rendered units by the hash of their inputs (kaffinity.cache.rendered.RenderCache: the
    cache layer sits above this one, so the builder knows it by what it does)."""

    def kustomization(self, directory: str, render: Callable[[], Rendered]) -> Rendered: ...

    def chart(
        self,
        chart_dir: str,
        values_files: Sequence[str],
        arguments: Mapping[str, Any],
        render: Callable[[], Rendered],
    ) -> Rendered: ...


@dataclass(frozen=True, slots=True)
class Unit:
    """Objects deployed together. ``name`` is shown in reports (a folder or a file); ``source``
    says how it was found: ``kustomize``, ``helm``, ``variant``, ``config`` or ``files``."""

    name: str
    source: str
    documents: tuple[Document, ...]
    #: The files the unit claims (a kustomization's resources, a chart's files), normalised.
    files: tuple[str, ...] = ()
    #: Why a unit that a tool builds (a kustomization, a chart, a release) was read as written
    #: instead: one of :data:`NOT_RENDERED` (``"rendering off"`` until :func:`render_units`
    #: builds it), or for a release its own reason (NotRendered.reason); None once built, and
    #: for the units of plain files. The summary counts them.
    not_rendered: str | None = None
    #: A chart variant's values files (``ci/*-values.yaml``, a ``helm-values:`` entry).
    values: tuple[str, ...] = ()


#: Why a unit was read as written (:attr:`Unit.not_rendered`): rendering was not asked
#: (``--no-render``), no tool renders it, it needs the network and that is off, the run's render
#: budget was spent, or the tool failed or was refused (a ``parse-error`` says why).
NOT_RENDERED = ("rendering off", "no tool", "network off", "budget spent", "failed")


@dataclass(frozen=True, slots=True)
class Layout:
    """How the input is read: the units, every object once, and what was left out."""

    units: tuple[Unit, ...]
    #: Every object once, for the rules that read one object at a time (fragments left out).
    documents: tuple[Document, ...]
    #: Files read as parts of objects (kustomize patches): never objects of their own.
    fragments: frozenset[str] = frozenset()
    kustomizations: tuple[Kustomization, ...] = ()
    notes: tuple[str, ...] = ()
    #: The unit of each rendered object, by id(document): a finding of a rule that reads one
    #: object at a time names it, as the object exists only in that unit's build.
    membership: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    #: For rendered objects, by id(document): where an overlay's patch spells a data path,
    #: when that is more precise than the file the object comes from (Rendered.patch_place).
    places: Mapping[int, Callable[[Document, DataPath], tuple[str, Span] | None]] = field(
        default_factory=dict
    )

    @property
    def several(self) -> bool:
        return len(self.units) > 1


def single(documents: Iterable[Document]) -> Layout:
    """The whole input as one unit (``units: one``; a single file)."""
    docs = tuple(documents)
    return Layout((Unit("", "files", docs),), docs)


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
    whole = _Whole(files)
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
    whole: _Whole,
) -> list[Unit]:
    """The units found: kustomizations, charts, then variants of the files neither claims."""
    claimed: set[str] = set()
    units = list(_kustomize_units(kustomizations, by_path, claimed))
    units.extend(_chart_units(objects, claimed))  # after: the kustomizations claim files first
    rest = [file for file in objects if os.path.normpath(file.name) not in claimed]
    units.extend(_variant_units(rest, default_namespace, notes, whole))
    if any(k.uses_helm for k in kustomizations.values()):
        notes.append("kustomizations with helmCharts are read without their charts")
    return units


def _final_units(
    units: list[Unit],
    documents: tuple[Document, ...],
    default_namespace: str,
    notes: list[str],
    whole: _Whole,
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


# --- rendering -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RenderedLayout:
    """A layout whose kustomize and Helm units were built (``--render``), and the files the
    rendered objects point at (their text serves the reports and comment suppressions)."""

    layout: Layout
    files: tuple[SourceFile, ...]
    #: The charts rendered: their templates' ``helm-template`` problems no longer apply.
    charts: tuple[str, ...]


def render_units(
    layout: Layout,
    *,
    limits: Limits = DEFAULT_LIMITS,
    helm_values: Mapping[str, Sequence[str]] | None = None,
    namespace: str | None = None,
    sandbox: Sandbox = DEFAULT_SANDBOX,
    kube_version: str | None = None,
    cache: UnitCache | None = None,
) -> RenderedLayout:
    """Build each kustomize unit (kustomize, or kubectl kustomize) and render each chart (helm,
    or helm-python-sdk) with kaffinity.repo.render; the rules then read what the tools produce, each
    object pointed at the file that defines it. A unit that cannot be built keeps the objects of
    its files as written, and the failure is a ``parse-error`` of its kustomization or chart;
    without the tool, or for an overlay that needs the network (remote resources), a note says
    once that those units were read as written; so it does for the units left when the run's
    render budget (``sandbox.budget``) is spent. ``cache``: overlays and charts whose inputs
    are unchanged since a run rendered them come from it (kaffinity.cache.rendered)."""
    builder = _Builder(layout, limits, helm_values or {}, namespace, sandbox, kube_version, cache)
    units = [built for unit in layout.units for built in builder.build(unit)]

    def current() -> tuple[Document, ...]:
        rendered = [unit for unit in units if unit.source.endswith("(rendered)")]
        return tuple(
            [doc for doc in layout.documents if os.path.normpath(doc.file) not in builder.replaced]
            + list({id(doc): doc for unit in rendered for doc in unit.documents}.values())
        )

    # GitOps releases (kaffinity.repo.gitops.releases), found among the objects as built: a HelmRelease
    # an overlay patches is rendered with the overlay's values.
    from kaffinity.repo.gitops import argo, flux
    from kaffinity.repo.gitops.releases import ReleaseInputs

    owners = {
        id(doc): unit.name for unit in units if unit.source.endswith("(rendered)") for doc in unit.documents
    }
    inputs = ReleaseInputs(current(), limits=limits, sandbox=sandbox, kube_version=kube_version, units=owners)
    found = [release for kind in (flux, argo) for release in kind.releases(inputs)]
    built = [builder.release(release) for release in found]
    if builder.plugin_built:  # read as written because a plugin builds them, not failed
        units = [
            replace(unit, not_rendered="built by an Argo CD plugin")
            if unit.not_rendered == "failed" and os.path.normpath(unit.name) in builder.plugin_built
            else unit
            for unit in units
        ]
    # The files a rendered release deploys belong to its unit (Release.files): the units that
    # read them as written (a plain folder a Flux Kustomization substitutes) or built them
    # otherwise (the overlay it builds) give them up, so no object is placed twice.
    claimed = {
        path
        for release, unit in zip(found, built, strict=True)
        if unit.source.endswith("(rendered)")
        for path in release.files
    }
    if claimed:
        units = [unit for unit in (_without_files(unit, claimed) for unit in units) if unit is not None]
    units.extend(built)
    rendered = [unit for unit in units if unit.source.endswith("(rendered)")]
    documents = current()
    membership: dict[int, list[str]] = defaultdict(list)
    for unit in rendered:
        for doc in unit.documents:
            membership[id(doc)].append(unit.name)
    new = Layout(
        tuple(units),
        documents,
        layout.fragments,
        layout.kustomizations,
        (*layout.notes, *builder.notes()),
        {key: tuple(names) for key, names in membership.items()},
        builder.places,
    )
    return RenderedLayout(new, tuple(builder.files), tuple(builder.charts))


def _without_files(unit: Unit, claimed: set[str]) -> Unit | None:
    """``unit`` without the objects of ``claimed`` files; None when none is left."""
    kept = tuple(doc for doc in unit.documents if os.path.normpath(doc.file) not in claimed)
    if len(kept) == len(unit.documents):
        return unit
    return replace(unit, documents=kept) if kept else None


class _Builder:
    """Renders the units of one layout (:func:`render_units`) and remembers what it did."""

    def __init__(
        self,
        layout: Layout,
        limits: Limits,
        helm_values: Mapping[str, Sequence[str]],
        namespace: str | None,
        sandbox: Sandbox,
        kube_version: str | None = None,
        cache: UnitCache | None = None,
    ) -> None:
        from kaffinity.repo.engines import helm_engine, kustomize_engine

        #: Rendered units by the hash of their inputs (kaffinity.cache.rendered), or None.
        self.cache = cache
        self.limits = limits
        self.sandbox = sandbox
        self.budget = Budget(sandbox.budget)
        #: Units left unrendered because the budget was spent.
        self.unspent: list[str] = []
        self.namespace = namespace
        self.kube_version = kube_version
        self.engines = {"kustomize": kustomize_engine(), "helm": helm_engine()}
        self.values = {os.path.abspath(chart): list(files) for chart, files in helm_values.items()}
        by_folder = {k.folder: k for k in layout.kustomizations}
        # An overlay whose closure names a remote resource needs the network to build (allowed
        # only by the person running kaffinity: --allow-network).
        self.networked = (
            set() if sandbox.network else {folder for folder in by_folder if needs_network(folder, by_folder)}
        )
        self.files: list[SourceFile] = []
        self.charts: list[str] = []
        self.replaced: set[str] = set()
        self.missing: set[str] = set()
        #: Overlays built without their remote resources (the network is off).
        self.remote: list[str] = []
        #: Overlays that do not build without their remote resources (read as written).
        self.offline: list[str] = []
        #: Folders a release builds with a tool kaffinity does not run (NotRendered.folders).
        self.plugin_built: set[str] = set()
        #: The remote entries those builds left out.
        self.left_out: list[str] = []
        #: Units whose build failed or was refused (a parse-error or chart-dependency says why).
        self.failed: list[str] = []
        #: Releases read as written, and why (kaffinity.repo.gitops.releases).
        self.unrendered: list[tuple[str, NotRendered]] = []
        #: Releases found by a guess (Release.note), and the guess.
        self.guesses: list[tuple[str, str]] = []
        self.places: dict[int, Callable[[Document, DataPath], tuple[str, Span] | None]] = {}

    def build(self, unit: Unit) -> list[Unit]:
        """The unit as its tool builds it: a kustomization once; a chart once per variant
        (:func:`chart_variants`), each a unit of its own. A unit that cannot be built is kept
        as written, with :attr:`Unit.not_rendered` saying why."""
        if unit.source not in self.engines:
            return [unit]
        if self.engines[unit.source] is None:
            self.missing.add(unit.source)
            return [replace(unit, not_rendered="no tool")]
        if unit.source == "kustomize":
            return [self._build(unit)]
        from kaffinity.load.charts import is_library

        if is_library(unit.name, self.limits):
            return [replace(unit, not_rendered=None)]  # nothing to deploy: only its users render it
        variants = chart_variants(unit.name, self.values.get(os.path.abspath(unit.name)))
        if not variants:
            return [self._build(unit)]
        return [
            self._build(replace(unit, name=f"{unit.name} ({label})", values=(values,)), unit.name)
            for label, values in variants
        ]

    def _build(self, unit: Unit, chart: str | None = None) -> Unit:
        from kaffinity.repo.helm.chart import render_chart
        from kaffinity.repo.kustomize.build import render_kustomization

        left = self.budget.left()
        if left <= 0:
            self.unspent.append(unit.name)
            return replace(unit, not_rendered="budget spent")
        timeout = min(self.sandbox.timeout, left)
        if unit.source == "kustomize":
            remote = unit.name in self.networked

            def build() -> Rendered:
                return render_kustomization(
                    unit.name, self.limits, timeout=timeout, sandbox=self.sandbox, local_only=remote
                )

            # Built without its remote resources: not cached (kaffinity.cache.rendered).
            rendered = build() if remote or self.cache is None else self.cache.kustomization(unit.name, build)
            if remote:
                if not rendered.ok:
                    # Built without its remote resources, the overlay may not build at all (a
                    # patch whose target the remote resource defines: "no matches for Id"):
                    # that is kaffinity's doing, not the author's error. Read as written, and
                    # the note says the network would build it.
                    self.offline.append(unit.name)
                    return replace(unit, not_rendered="network off")
                self.remote.append(unit.name)
                self.left_out.extend(entry for entry in rendered.left_out if entry not in self.left_out)
        else:

            def draw() -> Rendered:
                return render_chart(
                    chart or unit.name,
                    unit.values,
                    namespace=self.namespace,
                    kube_version=self.kube_version,
                    limits=self.limits,
                    timeout=timeout,
                    sandbox=self.sandbox,
                )

            rendered = (
                draw()
                if self.cache is None
                else self.cache.chart(
                    chart or unit.name,
                    unit.values,
                    {"namespace": self.namespace, "kube_version": self.kube_version},
                    draw,
                )
            )
        self.files.extend(rendered.files)
        if not rendered.ok and not rendered.documents:
            self.failed.append(unit.name)
            return replace(unit, not_rendered="failed")
        self.replaced.update(unit.files)
        self.places.update((key, rendered.patch_place) for key in rendered.patches)
        if unit.source == "helm" and (chart or unit.name) not in self.charts:
            self.charts.append(chart or unit.name)
        return replace(
            unit, source=f"{unit.source} (rendered)", documents=rendered.documents, not_rendered=None
        )

    def release(self, release: Release) -> Unit:
        """A GitOps release rendered as its controller would (kaffinity.repo.gitops.releases); read as
        written (its object only) when it cannot be."""
        from kaffinity.repo.gitops.releases import NotRendered

        left = self.budget.left()
        if left <= 0:
            self.unspent.append(release.name)
            return Unit(release.name, release.source, (release.document,), not_rendered="budget spent")
        if release.note:
            self.guesses.append((release.name, release.note))
        outcome = release.render(min(self.sandbox.timeout, left))
        if isinstance(outcome, NotRendered):
            self.unrendered.append((release.name, outcome))
            self._withdraw(outcome.folders)
            # A release's own reason (jsonnet, a plugin, a values file missing) says more than
            # "failed": it is the unit's.
            why = "network off" if outcome.remote else outcome.reason
            return Unit(release.name, release.source, (release.document,), not_rendered=why)
        self.files.extend(outcome.files)
        if not outcome.ok:
            return Unit(release.name, release.source, (release.document,), not_rendered="failed")
        self.replaced.update(release.files)
        self.places.update((key, outcome.patch_place) for key in outcome.patches)
        return Unit(release.name, f"{release.source} (rendered)", outcome.documents, release.files)

    def _withdraw(self, folders: Sequence[str]) -> None:
        """Forget the first-pass build failures of units in ``folders``: a tool kaffinity does
        not run builds them (NotRendered.folders), so what plain kustomize or Helm says of them
        is no finding. Their units stay read as written (:attr:`plugin_built`)."""
        from kaffinity.repo.rendered import RENDER_PROBLEM

        if not folders:
            return
        wanted = {os.path.normpath(folder) for folder in folders}
        self.plugin_built.update(wanted)
        self.failed = [name for name in self.failed if os.path.normpath(name) not in wanted]
        self.files = [
            file
            for file in self.files
            if not (
                file.problems
                and not file.documents
                and os.path.normpath(os.path.dirname(file.name)) in wanted
                and all(problem.rule == RENDER_PROBLEM for problem in file.problems)
            )
        ]

    def notes(self) -> list[str]:
        notes = []
        remote = [name for name, why in self.unrendered if why.remote]
        if remote:
            notes.append(
                f"{len(remote)} release(s) read as written: what they deploy is remote and the "
                f"network is off (first: {remote[0]}; --allow-network allows it)"
            )
        other = [(name, why) for name, why in self.unrendered if not why.remote]
        if other:
            notes.append(
                f"{len(other)} release(s) read as written (first: {other[0][0]}: {other[0][1].reason})"
            )
        if self.guesses:
            notes.append(
                f"{len(self.guesses)} release(s) found by a guess (first: {self.guesses[0][0]}: "
                f"{self.guesses[0][1]})"
            )
        if self.remote:
            network = "--offline" if self.sandbox.offline else "off; --allow-network allows it"
            notes.append(
                f"{len(self.remote)} kustomization(s) built without their remote resources, which "
                f"need the network ({network}): {_listed(self.remote)}; "
                f"left out: {_listed(self.left_out)}"
            )
        if self.offline:
            notes.append(
                f"{len(self.offline)} kustomization(s) read as written: they do not build without "
                f"their remote resources, which need the network (off; --allow-network allows it): "
                f"{_listed(self.offline)}"
            )
        if self.failed:
            notes.append(
                f"{len(self.failed)} unit(s) read as written: their build failed (a finding at "
                f"each says why: parse-error, chart-dependency): {_listed(list(dict.fromkeys(self.failed)))}"
            )
        if self.unspent:
            notes.append(
                f"{len(self.unspent)} unit(s) not rendered, read as written: the render budget of "
                f"{self.sandbox.budget:g} s was spent (first: {self.unspent[0]}; --render-budget)"
            )
        if "kustomize" in self.missing:
            notes.append(
                "kustomize overlays read as written, without their patches, namespace or replicas "
                "(no kustomize or kubectl on the PATH to build them)"
            )
        if "helm" in self.missing:
            notes.append(
                "Helm charts not rendered (no helm on the PATH, and kaffinity[helm] is not installed)"
            )
        return notes


def _listed(names: Sequence[str], most: int = 5) -> str:
    """Names for a note: the first ``most``, and how many more."""
    shown = ", ".join(names[:most])
    return shown if len(names) <= most else f"{shown} and {len(names) - most} more"


def unrendered_note(units: Iterable[Unit]) -> str | None:
    """The note of a run that did not render (``--no-render``): the overlays and charts read as
    written, which are not what gets deployed (an overlay without its patches, namespace and
    replicas; a chart's templates unread). None when there is none."""
    names = [unit.name for unit in units if unit.not_rendered == "rendering off"]
    if not names:
        return None
    return (
        f"{len(names)} overlay(s) and chart(s) read as written, not as built (rendering is off): "
        f"{_listed(names)}"
    )


def chart_variants(chart: str, configured: Sequence[str] | None) -> list[tuple[str, str]]:
    """The variants a chart is rendered in, as (label, values file): each ``helm-values:`` file
    of the chart when the config names some; else each ``ci/*-values.yaml``, as chart-testing
    (``ct lint``/``ct install``) tests a chart once per file and not with its defaults alone
    (helm/chart-testing pkg/chart/chart.go, ValuesFilePathsForCI: the ``ci`` folder's files
    matching ``*-values.yaml``; the defaults are tested only where there is none). Empty: the
    chart once, with its defaults. Labels are the files' paths relative to the chart."""
    if configured:
        files = list(configured)
    else:
        folder = os.path.join(chart, "ci")
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return []
        files = [
            os.path.join(folder, name)
            for name in names
            if name.endswith("-values.yaml") and os.path.isfile(os.path.join(folder, name))
        ]
    out = []
    for path in files:
        relative = os.path.relpath(path, chart)
        out.append((path if relative.startswith("..") else relative, path))
    return out


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


# --- variants ------------------------------------------------------------------------------


def identity(doc: Document, default_namespace: str) -> Identity | None:
    """What makes an object one object in a cluster: group, kind, namespace and name."""
    data = doc.data
    if not isinstance(data, Mapping):
        return None
    kind, api_version = data.get("kind"), data.get("apiVersion")
    metadata = data.get("metadata")
    if not isinstance(kind, str) or not isinstance(api_version, str) or not isinstance(metadata, Mapping):
        return None
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        return None  # generateName: a new object each time
    # As kaffinity.k8s.model.build.object_ref names it: namespaced kinds default to the default namespace.
    namespace = "" if kind in _CLUSTER_SCOPED else metadata.get("namespace")
    if not isinstance(namespace, str) or (not namespace and kind not in _CLUSTER_SCOPED):
        namespace = default_namespace
    return (api_version.rpartition("/")[0], kind, namespace, name)


_CLUSTER_SCOPED = frozenset(("Namespace", "Node"))


#: What the units of a layout may hold together, as a multiple of the input's objects (plus a
#: floor): past it, the remaining variants are read without the shared files around them, so
#: a folder of a thousand fixtures that all define the same object stays linear.
UNIT_BUDGET_FACTOR, UNIT_BUDGET_FLOOR = 20, 20_000

Versions = dict[str, dict[Identity, int]]


#: Folders of test data, and golden files: each file is a test case of its own, never deployed
#: with the files around it (istio's operator/pkg/helm/testdata/output/*.golden.yaml).
FIXTURE_FOLDERS = frozenset(("testdata", "fixtures", "__fixtures__", "golden", "__snapshots__"))
_GOLDEN = (".golden.yaml", ".golden.yml", ".golden.json")


def is_fixture(path: str) -> bool:
    """A test fixture: a golden file, or a file in a test-data folder."""
    parts = os.path.normpath(path).split(os.sep)
    return path.endswith(_GOLDEN) or any(part in FIXTURE_FOLDERS for part in parts[:-1])


def _variant_units(
    files: Sequence[SourceFile], default_namespace: str, notes: list[str], whole: _Whole
) -> list[Unit]:
    """Units of the files no kustomization or chart claims: each test fixture on its own;
    variants where two files define the same object differently, the shared files around them,
    and the rest."""
    fixtures = [file for file in files if is_fixture(file.name)]
    if fixtures:
        others = [file for file in files if not is_fixture(file.name)]
        return _fixture_units(fixtures) + _variant_units(others, default_namespace, notes, whole)
    if not files:
        return []
    paths = [os.path.normpath(file.name) for file in files]
    versions = _versions(files, paths, default_namespace, whole)
    if not versions:
        return [Unit("", "files", tuple(doc for file in files for doc in file.documents))]
    leaves, refined = _leaves(versions)
    final = leaves - refined
    tree = _tree(paths, leaves, final, refined)
    by_path = dict(zip(paths, files, strict=True))
    needs = _single_needs(final, tree, by_path, default_namespace)
    total = sum(len(file.documents) for file in files)
    units, placed = _variant_group_units(
        final, versions, needs, tree, by_path, total, default_namespace, notes
    )
    rest = [path for path in paths if path not in placed]
    if rest:
        units.append(Unit("(other files)", "files", tuple(d for p in rest for d in by_path[p].documents)))
    return units


def _fixture_units(fixtures: Sequence[SourceFile]) -> list[Unit]:
    """Each test fixture with objects on its own."""
    return [
        Unit(os.path.normpath(file.name), "fixture", file.documents, (os.path.normpath(file.name),))
        for file in fixtures
        if file.documents
    ]


def _single_needs(
    final: set[str], tree: _Tree, by_path: Mapping[str, SourceFile], default_namespace: str
) -> dict[str, _Needs]:
    """What each variant that is one file needs from the files around it."""
    return {
        leaf: _needs(by_path[leaf], default_namespace)
        for leaf in final
        if tree.members[leaf] == [leaf] and leaf in by_path
    }


def _leaves(versions: Versions) -> tuple[set[str], set[str]]:
    """The variants (files or folders that define an object differently from another), and those
    refined: a folder leaf with leaves inside it (a repository that varies against another one,
    whose own files vary too), whose other files are shared by the leaves inside it."""
    leaves: set[str] = set()
    for component in _components(versions):
        _split(sorted(component), _common_folder(component), versions, leaves)
    refined = {
        ancestor
        for leaf in leaves
        for ancestor in _ancestors(leaf)
        if ancestor in leaves and ancestor != leaf
    }
    return leaves, refined


def _tree(paths: Sequence[str], leaves: set[str], final: set[str], refined: set[str]) -> _Tree:
    """Each file's deepest variant, the files of each final variant, and the others by folder."""
    owner: dict[str, str] = {}
    for path in paths:
        found = _deepest_prefix(path, leaves)
        if found is not None:
            owner[path] = found
    members: dict[str, list[str]] = defaultdict(list)
    free_by_folder: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        if owner.get(path) in final:
            members[owner[path]].append(path)
        else:
            free_by_folder[os.path.dirname(path) or "."].append(path)
    return _Tree(owner, members, free_by_folder, refined)


def _variant_group_units(
    final: set[str],
    versions: Versions,
    needs: dict[str, _Needs],
    tree: _Tree,
    by_path: Mapping[str, SourceFile],
    total: int,
    default_namespace: str,
    notes: list[str],
) -> tuple[list[Unit], set[str]]:
    """A unit per group of variants, with the files they share while the units hold at most
    ``UNIT_BUDGET_FACTOR`` times the input's objects (a note says how many went without); the
    units and the files they placed."""
    budget = UNIT_BUDGET_FACTOR * total + UNIT_BUDGET_FLOOR
    units: list[Unit] = []
    placed: set[str] = set()
    alone = 0
    for scope, group in _variants(final, tree.members, versions, needs):
        shared = _shared(scope, group, tree, needs, by_path, default_namespace)
        chosen = [path for leaf in group for path in tree.members[leaf]]
        docs = [doc for path in chosen for doc in by_path[path].documents]
        context = [doc for path in shared for doc in by_path[path].documents]
        if budget - len(docs) - len(context) < 0:
            context, alone = [], alone + 1
        else:
            placed.update(shared)
        budget -= len(docs) + len(context)
        placed.update(chosen)
        units.append(Unit(_name(group), "variant", (*docs, *context)))
    if alone:
        notes.append(
            f"{alone} variant(s) read without the files they share with the others: the units "
            f"would hold more than {UNIT_BUDGET_FACTOR} times the input's objects"
        )
    return units, placed


@dataclass(frozen=True, slots=True)
class _Tree:
    """Where the variants are: each file's deepest variant (``owner``), each final variant's
    files (``members``), the files of no final variant by folder, and the refined variants."""

    owner: Mapping[str, str]
    members: Mapping[str, list[str]]
    free_by_folder: Mapping[str, list[str]]
    refined: set[str]


def _shared(
    scope: str,
    group: Sequence[str],
    tree: _Tree,
    needs: dict[str, _Needs],
    by_path: Mapping[str, SourceFile],
    default_namespace: str,
) -> list[str]:
    """The shared files of a variant (see :func:`_related_folders`)."""
    files_of_its_own = tree.members[group[0]] == [group[0]]
    beside: list[str] = []
    if files_of_its_own:
        beside = [
            path
            for path in tree.free_by_folder.get(scope, ())
            if (leaf := tree.owner.get(path)) is None or (leaf in tree.refined and _under(scope, leaf))
        ]
        for path in beside:
            if path not in needs:
                needs[path] = _needs(by_path[path], default_namespace)
    joining = _alongside(group, beside, needs)
    return [
        path
        for folder in _related_folders(
            scope, tree.free_by_folder, tree.owner, tree.refined, beside=not files_of_its_own, joining=joining
        )
        for path in folder
    ]


def _name(group: Sequence[str]) -> str:
    """A variant's name: its folder or file; of files grouped side by side, what their names
    share (``k/c1-*``) and how many they are."""
    if len(group) == 1:
        return group[0]
    return f"{os.path.commonprefix(list(group))}* ({len(group)} files)"  # noqa: RUF071 - by character: c1-*


def _related_folders(
    scope: str,
    free_by_folder: Mapping[str, list[str]],
    owner: Mapping[str, str],
    refined: set[str],
    *,
    beside: bool,
    joining: set[str] | frozenset[str] = frozenset(),
) -> Iterator[list[str]]:
    """The shared files of a variant that varies in folder ``scope`` (the files of no variant;
    of a refined folder leaf, only the files of the leaves it contains):

    - a variant *folder* (``beside``: ``envs/prod``) shares the files of ``scope`` itself
      (``envs/common.yaml``) and of the folders above it, not those of the folders beside it
      (in a repository of samples, ``ai-ml/a`` and ``ai-ml/b`` are other samples);
    - a variant *file* shares the files of the folders above and below ``scope``, not those
      beside it in its own folder: files side by side that vary are alternatives, and so, as
      far as anything can tell, are the files next to them (a folder of test cases holds one
      deployment per file, and a budget of one case must not count the pods of another),
      except those ``joining`` it (:func:`_alongside`)."""
    for folder, paths in free_by_folder.items():
        above = _under(scope, folder)  # scope itself, or a folder above it
        if not (above or (not beside and _under(folder, scope))):
            continue
        alongside = folder == scope and not beside
        kept = [
            path
            for path in paths
            if ((leaf := owner.get(path)) is None or (leaf in refined and _under(scope, leaf)))
            and (not alongside or path in joining)
        ]
        if kept:
            yield kept


def _ancestors(path: str) -> Iterator[str]:
    current = path
    while True:
        yield current
        parent = os.path.dirname(current)
        if not parent or parent == current:
            return
        current = parent


def _variants(
    leaves: Iterable[str],
    members: Mapping[str, list[str]],
    versions: Versions,
    needs: Mapping[str, _Needs],
) -> Iterator[tuple[str, list[str]]]:
    """The variants, as (the folder they vary in, their leaves). A folder leaf (``envs/prod``)
    is one variant. Files that vary side by side in one folder are variants of their own,
    except where one needs another's pods: a required pod affinity is a dependency (its pods
    cannot start alone), so ``c1-router.yaml`` (affinity to app=mysql) goes with
    ``c1-mysql.yaml`` and ``c2-router.yaml`` with ``c2-mysql.yaml``, in name order and never
    two versions of an object in one variant. Nothing else groups files: fixtures side by side
    (a folder of test cases) are separate deployments."""
    by_folder: dict[str, list[str]] = defaultdict(list)
    for leaf in sorted(leaves):
        if members[leaf] == [leaf]:  # a file
            by_folder[os.path.dirname(leaf) or "."].append(leaf)
        else:
            yield os.path.dirname(leaf) or ".", [leaf]
    for folder, side_by_side in sorted(by_folder.items()):
        groups: list[tuple[list[str], dict[Identity, int]]] = []  # leaves, and the versions they hold
        for leaf in side_by_side:
            held = versions.get(leaf, {})
            for group, chosen in groups:
                if all(chosen.get(key, version) == version for key, version in held.items()) and any(
                    _depends(needs.get(leaf), needs.get(other)) for other in group
                ):
                    group.append(leaf)
                    chosen.update(held)
                    break
            else:
                groups.append(([leaf], dict(held)))
        for group, _ in groups:
            yield folder, group


@dataclass(frozen=True, slots=True)
class _Needs:
    """What a file's workloads require of other pods (required pod affinity: namespace and
    selector) and the pods they create (namespace and labels)."""

    requires: tuple[tuple[str, Any], ...]
    pods: tuple[tuple[str, Mapping[str, str]], ...]
    #: The disruption budgets' selectors (namespace and selector).
    budgets: tuple[tuple[str, Any], ...] = ()


def _needs(file: SourceFile, default_namespace: str) -> _Needs:
    from kaffinity.k8s.model import PodDisruptionBudget, Workload, build_object

    requires: list[tuple[str, Any]] = []
    pods: list[tuple[str, Mapping[str, str]]] = []
    budgets: list[tuple[str, Any]] = []
    for doc in file.documents:
        workload = build_object(doc, default_namespace)
        if isinstance(workload, PodDisruptionBudget):
            budgets.append((workload.ref.namespace or default_namespace, workload.selector))
        if not isinstance(workload, Workload):
            continue
        namespace = workload.ref.namespace or default_namespace
        pods.append((namespace, dict(workload.pod.labels)))
        affinity = workload.pod.affinity
        terms = affinity.pod_affinity.required if affinity and affinity.pod_affinity else ()
        for term in terms:
            for scope in term.namespaces or (namespace,):
                requires.append((scope, term.label_selector))
    return _Needs(tuple(requires), tuple(pods), tuple(budgets))


def _alongside(group: Sequence[str], beside: Sequence[str], needs: Mapping[str, _Needs]) -> set[str]:
    """The files beside a variant file that go with it: those that read its pods (a required
    affinity or a disruption budget that selects them: ``mysql-pdb.yaml`` beside
    ``c1-mysql.yaml`` and ``c2-mysql.yaml`` is for either), and, for each pod affinity it
    requires, the files whose pods it needs; of several such files (``c1-mysql.yaml`` and
    ``c2-mysql.yaml`` for ``c1-router.yaml``), those whose names share the most with the
    variant's: they are alternatives, and the closest name is the one meant."""
    from kaffinity.k8s.selectors import selector_matches

    def provides(path: str, scope: str, selector: Any) -> bool:
        return any(
            namespace == scope and selector_matches(selector, labels)
            for namespace, labels in needs[path].pods
        )

    chosen: set[str] = set()
    for leaf in group:
        mine = needs.get(leaf)
        if mine is None:
            continue
        for path in beside:
            readers = needs[path].requires + needs[path].budgets
            if any(
                scope == namespace and selector_matches(selector, labels)
                for scope, selector in readers
                for namespace, labels in mine.pods
            ):
                chosen.add(path)
        for scope, selector in mine.requires:
            providers = [path for path in beside if provides(path, scope, selector)]
            if not providers:
                continue
            name = os.path.basename(leaf)
            closeness = {
                path: len(os.path.commonprefix([name, os.path.basename(path)]))  # noqa: RUF071 - by character
                for path in providers
            }
            best = max(closeness.values())
            chosen.update(path for path in providers if closeness[path] == best)
    return chosen


def _depends(one: _Needs | None, other: _Needs | None) -> bool:
    """Whether either needs the other's pods (a required pod affinity that they match)."""
    from kaffinity.k8s.selectors import selector_matches

    if one is None or other is None:
        return False
    return any(
        scope == namespace and selector_matches(selector, labels)
        for first, second in ((one, other), (other, one))
        for scope, selector in first.requires
        for namespace, labels in second.pods
    )


def _versions(
    files: Sequence[SourceFile], paths: Sequence[str], default_namespace: str, whole: _Whole
) -> Versions:
    """For each file that defines an object some other file defines with different content:
    which version of each such object it holds (objects the same everywhere are left out)."""
    where: dict[Identity, list[tuple[str, Document]]] = defaultdict(list)
    for path, file in zip(paths, files, strict=True):
        for doc in file.documents:
            key = identity(doc, default_namespace)
            if key is not None:
                where[key].append((path, doc))
    seen: dict[Identity, dict[Any, int]] = defaultdict(dict)
    held: dict[str, dict[Identity, int]] = defaultdict(dict)
    for key, occurrences in where.items():
        if len({path for path, _ in occurrences}) < 2:
            continue  # defined in one file only (once, or again within that file)
        contents = seen[key]
        for path, doc in occurrences:
            held[path][key] = contents.setdefault(_frozen(whole.data(doc)), len(contents))
    varying = {key for key, contents in seen.items() if len(contents) > 1}
    out: Versions = {}
    for path, objects in held.items():
        mine = {key: version for key, version in objects.items() if key in varying}
        if mine:
            out[path] = mine
    return out


class _Whole:
    """The whole content of a document of a compact file (:mod:`kaffinity.k8s.compact`), which
    kept only what the rules read: the file is read again, once, for the objects another file
    defines too (copies per environment are compared in full, as before compaction)."""

    def __init__(self, files: Iterable[SourceFile]) -> None:
        self.compact = {file.name: file for file in files if file.compact}
        self.read: dict[str, dict[tuple[int, DataPath], Any] | None] = {}

    def data(self, doc: Document) -> Any:
        file = self.compact.get(doc.file)
        if file is None:
            return doc.data
        if doc.file not in self.read:
            from kaffinity.load.read import read

            again = read(file.name)
            self.read[doc.file] = (
                {(other.index, other.prefix): other.data for other in again.documents}
                if len(again.documents) == len(file.documents)
                else None
            )
        documents = self.read[doc.file]
        if documents is None:  # changed since it was linted: what is kept is compared
            return doc.data
        return documents.get((doc.index, doc.prefix), doc.data)


def _frozen(value: Any) -> Any:
    """A hashable copy of loaded data: equal for equal content, whatever the positions. Built
    without recursion (data nests as deep as ``limits.depth``): children before parents."""
    if not isinstance(value, dict | list):
        return value
    done: dict[int, Any] = {}
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in done:
            continue
        children = node.values() if isinstance(node, dict) else node
        if not ready:
            stack.append((node, True))
            stack.extend((child, False) for child in children if isinstance(child, dict | list))
            continue
        if isinstance(node, dict):
            done[id(node)] = frozenset((key, done.get(id(item), item)) for key, item in node.items())
        else:
            done[id(node)] = tuple(done.get(id(item), item) for item in node)
    return done[id(value)]


def _components(versions: Versions) -> Iterator[set[str]]:
    """Files linked by the objects they define in different versions (union-find)."""
    parent: dict[str, str] = {path: path for path in versions}

    def root(path: str) -> str:
        while parent[path] != path:
            parent[path] = parent[parent[path]]
            path = parent[path]
        return path

    first: dict[Identity, str] = {}
    for path in sorted(versions):
        for key in versions[path]:
            other = first.setdefault(key, path)
            a, b = root(path), root(other)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[str, set[str]] = defaultdict(set)
    for path in versions:
        groups[root(path)].add(path)
    for head in sorted(groups):
        yield groups[head]


def _split(paths: Sequence[str], folder: str, versions: Versions, leaves: set[str]) -> None:
    """Group conflicting ``paths`` by the first path component below ``folder``. Sibling folders
    that vary (``envs/prod`` and ``envs/staging``) are variants; a folder whose files vary only
    against files beside it is looked into, and its varying files are the variants. A group
    whose files still hold two versions of an object is split again one level down."""
    groups: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        relative = os.path.relpath(path, folder)
        head = relative.split(os.sep, 1)[0]
        groups[os.path.normpath(os.path.join(folder, head))].append(path)
    folders = [key for key, group in groups.items() if group != [key]]
    for key, group in groups.items():
        inside = group != [key]
        if key != folder and inside and (len(folders) < 2 or _varies(group, versions)):
            _split(group, key, versions, leaves)
        else:
            leaves.add(key)


def _varies(paths: Iterable[str], versions: Versions) -> bool:
    chosen: dict[Identity, int] = {}
    for path in paths:
        for key, version in versions.get(path, {}).items():
            if chosen.setdefault(key, version) != version:
                return True
    return False


def _common_folder(paths: Iterable[str]) -> str:
    folders = [os.path.dirname(path) or "." for path in paths]
    try:
        return os.path.commonpath(folders) or "."
    except ValueError:  # absolute and relative paths mixed
        return "."


def _under(path: str, folder: str) -> bool:
    if folder in (".", ""):
        return not path.startswith("..")
    return path == folder or path.startswith(folder + os.sep)


def _deepest_prefix(path: str, leaves: set[str]) -> str | None:
    current = path
    while True:
        if current in leaves:
            return current
        parent = os.path.dirname(current)
        if not parent or parent == current:
            return None
        current = parent


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
        if not any(_under(where[id(file)], p) for _, prefixes in named for p in prefixes)
    ]
    units = []
    for name, prefixes in named:
        members = [file for file in files if any(_under(where[id(file)], p) for p in prefixes)]
        units.append(Unit(name, "config", tuple(d for f in (*members, *shared) for d in f.documents)))
    return units


# --- one object once -----------------------------------------------------------------------


def _once(unit: Unit, default_namespace: str, clashes: list[Document], whole: _Whole) -> Unit:
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
