"""Units rendered (:func:`render_units`): each kustomization and chart unit built with its tool
(kustomize or kubectl kustomize, the helm binary or helm-python-sdk: :mod:`kaffinity.repo.kustomize`,
:mod:`kaffinity.repo.helm`), a chart once per variant (:func:`chart_variants`), and the GitOps
releases among the objects (:mod:`kaffinity.repo.gitops`) rendered as their controllers would."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from kaffinity.load.parse import DEFAULT_LIMITS, Limits, SourceFile
from kaffinity.load.source import DataPath, Document, Span
from kaffinity.repo.kustomizations import (
    needs_network,
)
from kaffinity.repo.sandbox import DEFAULT_SANDBOX, Budget, Sandbox
from kaffinity.repo.units.unit import Layout, Unit, UnitCache

if TYPE_CHECKING:
    from kaffinity.repo.gitops.releases import NotRendered, Release
    from kaffinity.repo.rendered import Rendered


# --- rendering -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RenderedLayout:
    """A layout whose kustomize and Helm units were built (``--render``), and the files the
    rendered objects point at (their text serves the reports and comment suppressions)."""

    layout: Layout
    files: tuple[SourceFile, ...]
    #: The charts rendered: their templates' ``helm-template`` problems no longer apply.
    charts: tuple[str, ...]
    #: When the run streams: the single-object stage's result of each of ``files``
    #: (:attr:`kaffinity.repo.rendered.Rendered.results`), in the units' order.
    results: tuple[Any, ...] = ()


def render_units(
    layout: Layout,
    *,
    limits: Limits = DEFAULT_LIMITS,
    helm_values: Mapping[str, Sequence[str]] | None = None,
    namespace: str | None = None,
    sandbox: Sandbox = DEFAULT_SANDBOX,
    kube_version: str | None = None,
    cache: UnitCache | None = None,
    jobs: int = 1,
    whole: Callable[[Document], Document] | None = None,
) -> RenderedLayout:
    """Build each kustomize unit (kustomize, or kubectl kustomize) and render each chart (helm, or
    helm-python-sdk) with kaffinity.repo.kustomize and kaffinity.repo.helm; the rules then read what
    the tools produce, each object pointed at the file that defines it. A unit that cannot be built
    keeps the objects of its files as written, and the failure is a ``parse-error`` of its
    kustomization or chart; without the tool, or for an overlay that needs the network (remote
    resources), a note says once that those units were read as written; so it does for the units
    left when the run's render budget (``sandbox.budget``) is spent. ``cache``: overlays and charts
    whose inputs are unchanged since a run rendered them come from it (kaffinity.cache.rendered),
    and each render goes through it (its single-object stage, when the run streams).

    ``jobs``: overlays and charts render from that many threads at once (each tool in a process
    of its own, confined and timed as alone; the run's budget is one deadline for them all);
    what they give is taken in the layout's order, so the units, files and notes are those of
    one render after the other. ``whole``: the whole document of a compact one (the run
    streams), for what the GitOps releases read of the objects around them (a ConfigMap's
    data)."""
    builder = _Builder(layout, limits, helm_values or {}, namespace, sandbox, kube_version, cache)
    units = builder.build_all(layout.units, jobs)

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
    documents = current() if whole is None else tuple(map(whole, current()))
    inputs = ReleaseInputs(documents, limits=limits, sandbox=sandbox, kube_version=kube_version, units=owners)
    found = [release for kind in (flux, argo) for release in kind.releases(inputs)]
    built = builder.release_all(found, jobs)
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
        builder.patch_locations,
    )
    return RenderedLayout(new, tuple(builder.files), tuple(builder.charts), tuple(builder.results))


def _without_files(unit: Unit, claimed: set[str]) -> Unit | None:
    """``unit`` without the objects of ``claimed`` files; None when none is left."""
    kept = tuple(doc for doc in unit.documents if os.path.normpath(doc.file) not in claimed)
    if len(kept) == len(unit.documents):
        return unit
    return replace(unit, documents=kept) if kept else None


_T = TypeVar("_T")
_R = TypeVar("_R")

#: The C stack of a render thread: 8 MiB, and 4 KiB a level of nesting the loader accepts (as
#: kaffinity.load.parse.limits makes room for in the main thread).
_STACK_BASE = 8 << 20
_STACK_PER_LEVEL = 4 << 10


@dataclass(frozen=True, slots=True)
class _Kept:
    """A unit :meth:`_Builder.build` keeps as written, without a render."""

    unit: Unit


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
        #: The single-object stage's results of ``files`` (Rendered.results), when staged.
        self.results: list[Any] = []
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
        self.patch_locations: dict[int, Callable[[Document, DataPath], tuple[str, Span] | None]] = {}

    def build_all(self, units: Sequence[Unit], jobs: int) -> list[Unit]:
        """Every unit as :meth:`build` gives it: the renders from ``jobs`` threads, what they
        gave taken in order."""
        planned = [(unit, self.build(unit)) for unit in units]
        renders = [(each, chart) for _, plan in planned for each, chart in plan if isinstance(each, Unit)]
        given = iter(self._pooled(lambda job: self._render(*job), renders, jobs))
        out: list[Unit] = []
        for unit, plan in planned:
            if not plan:
                out.append(unit)
            for each, chart in plan:
                out.append(self._take(each, chart, next(given)) if isinstance(each, Unit) else each.unit)
        return out

    def _pooled(self, render: Callable[[_T], _R], jobs: Sequence[_T], threads: int) -> list[_R]:
        """``render`` of each of ``jobs``, in order, from up to ``threads`` threads."""
        if threads <= 1 or len(jobs) <= 1:
            return [render(job) for job in jobs]
        import threading
        from concurrent.futures import ThreadPoolExecutor

        # A thread's C stack is fixed when it starts (the main thread's grows: make_room): as
        # deep as the data the loader accepts needs, for the parse of a tool's output and the
        # single-object stage, in the threads of the pool.
        previous = threading.stack_size(_STACK_BASE + _STACK_PER_LEVEL * self.limits.depth)
        try:
            with ThreadPoolExecutor(max_workers=min(threads, len(jobs))) as pool:
                return list(pool.map(render, jobs))
        finally:
            threading.stack_size(previous)

    def build(self, unit: Unit) -> list[tuple[Unit | _Kept, str | None]]:
        """How the unit is built as its tool builds it: a kustomization once; a chart once per
        variant (:func:`chart_variants`), each a unit of its own, rendered from its chart (the
        pair's second). A unit that cannot be built is kept as written (:class:`_Kept`), with
        :attr:`Unit.not_rendered` saying why; ``[]``: kept as it is."""
        if unit.source not in self.engines:
            return []
        if self.engines[unit.source] is None:
            self.missing.add(unit.source)
            return [(_Kept(replace(unit, not_rendered="no tool")), None)]
        if unit.source == "kustomize":
            return [(unit, None)]
        from kaffinity.load.charts import is_library

        if is_library(unit.name, self.limits):
            # Nothing to deploy: only its users render it.
            return [(_Kept(replace(unit, not_rendered=None)), None)]
        variants = chart_variants(unit.name, self.values.get(os.path.abspath(unit.name)))
        if not variants:
            return [(unit, None)]
        return [
            (replace(unit, name=f"{unit.name} ({label})", values=(values,)), unit.name)
            for label, values in variants
        ]

    def _render(self, unit: Unit, chart: str | None = None) -> Rendered | None:
        """What building the unit gives (from the cache, or its tool), or None: the run's render
        budget is spent. Runs in a thread of its own (:meth:`build_all`): reads the builder,
        changes nothing of it."""
        from kaffinity.repo.helm.chart import render_chart
        from kaffinity.repo.kustomize.build import render_kustomization

        left = self.budget.left()
        if left <= 0:
            return None
        timeout = min(self.sandbox.timeout, left)
        cache = self.cache
        if unit.source == "kustomize":
            remote = unit.name in self.networked

            def build() -> Rendered:
                return render_kustomization(
                    unit.name, self.limits, timeout=timeout, sandbox=self.sandbox, local_only=remote
                )

            if cache is None:
                return build()
            # Built without its remote resources: not cached (kaffinity.cache.rendered).
            return cache.staged(build()) if remote else cache.kustomization(unit.name, build)

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

        if cache is None:
            return draw()
        return cache.chart(
            chart or unit.name,
            unit.values,
            {"namespace": self.namespace, "kube_version": self.kube_version},
            draw,
        )

    def _take(self, unit: Unit, chart: str | None, rendered: Rendered | None) -> Unit:
        """The unit as built (:meth:`_render` gave ``rendered``), what the builder keeps of it
        noted, in the layout's order."""
        if rendered is None:
            self.unspent.append(unit.name)
            return replace(unit, not_rendered="budget spent")
        if unit.source == "kustomize":
            remote = unit.name in self.networked
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
        self._files(rendered)
        if not rendered.ok and not rendered.documents:
            self.failed.append(unit.name)
            return replace(unit, not_rendered="failed")
        self.replaced.update(unit.files)
        self.patch_locations.update((key, rendered.patch_location) for key in rendered.patches)
        if unit.source == "helm" and (chart or unit.name) not in self.charts:
            self.charts.append(chart or unit.name)
        return replace(
            unit, source=f"{unit.source} (rendered)", documents=rendered.documents, not_rendered=None
        )

    def release_all(self, releases: Sequence[Release], jobs: int) -> list[Unit]:
        """Every release as :meth:`release` gives it: the renders from ``jobs`` threads, what
        they gave taken in order."""
        outcomes = self._pooled(self._render_release, releases, jobs)
        return [self.release(release, outcome) for release, outcome in zip(releases, outcomes, strict=True)]

    def _render_release(self, release: Release) -> Rendered | NotRendered | None:
        """What rendering the release gives (through the run's single-object stage), or None:
        the run's render budget is spent. Runs in a thread of its own (:meth:`release_all`)."""

        left = self.budget.left()
        if left <= 0:
            return None
        timeout = min(self.sandbox.timeout, left)
        if self.cache is None:
            return release.render(timeout)
        # From the cache when what it reads (Release.key) is unchanged; staged when rendered.
        return self.cache.release(release.key, lambda: release.render(timeout))

    def release(self, release: Release, outcome: Rendered | NotRendered | None) -> Unit:
        """A GitOps release rendered as its controller would (kaffinity.repo.gitops.releases),
        ``outcome`` what :meth:`_render_release` gave; read as written (its object only) when it
        cannot be."""
        from kaffinity.repo.gitops.releases import NotRendered

        if outcome is None:
            self.unspent.append(release.name)
            return Unit(release.name, release.source, (release.document,), not_rendered="budget spent")
        if release.note:
            self.guesses.append((release.name, release.note))
        if isinstance(outcome, NotRendered):
            self.unrendered.append((release.name, outcome))
            self._withdraw(outcome.folders)
            # A release's own reason (jsonnet, a plugin, a values file missing) says more than
            # "failed": it is the unit's.
            why = "network off" if outcome.remote else outcome.reason
            return Unit(release.name, release.source, (release.document,), not_rendered=why)
        self._files(outcome)
        if not outcome.ok:
            return Unit(release.name, release.source, (release.document,), not_rendered="failed")
        self.replaced.update(release.files)
        self.patch_locations.update((key, outcome.patch_location) for key in outcome.patches)
        return Unit(release.name, f"{release.source} (rendered)", outcome.documents, release.files)

    def _files(self, rendered: Rendered) -> None:
        """Keep the files a render gave, and their results when it was staged."""
        self.files.extend(rendered.files)
        if rendered.results:
            self.results.extend(rendered.results)

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

        def withdrawn(file: SourceFile) -> bool:
            return bool(
                file.problems
                and not file.documents
                and os.path.normpath(os.path.dirname(file.name)) in wanted
                and all(problem.rule == RENDER_PROBLEM for problem in file.problems)
            )

        self.files = [file for file in self.files if not withdrawn(file)]
        self.results = [result for result in self.results if not withdrawn(result.file)]

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
