"""The deployment units of what a run read (:mod:`kaffinity.repo.units`), built with the tools
when ``--render`` asks (the render cache's life with them), the unit a command shows
(``--unit``, ``graph --focus``), and what the reports say of rendering. Notes, as data."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING, Optional

from kaffinity.run.notes import Notes, RunError

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Sequence

    from kaffinity.cache.rendered import RenderCache
    from kaffinity.config import Settings
    from kaffinity.engine import FileResult
    from kaffinity.load.parse import SourceFile
    from kaffinity.load.source import Document
    from kaffinity.repo.rendered import Rendered
    from kaffinity.repo.rendering import RenderSummary
    from kaffinity.repo.sandbox import Sandbox
    from kaffinity.repo.units import Layout, Unit
    from kaffinity.simulate.cluster import Cluster


def layout(
    files: list[SourceFile],
    paths: Optional[list[str]],
    settings: Settings,
    notes: Notes,
    *,
    kustomized: bool = True,
    changed: Optional[Collection[str]] = None,
    touched: Optional[dict[str, tuple[str, ...]]] = None,
    cached: bool = False,
    cache_dir: Optional[str] = None,
    results: Optional[list[FileResult]] = None,
) -> tuple[list[SourceFile], Layout]:
    """The deployment units of what was read (kaffinity.repo.units), built with the tools when
    ``--render`` asks; notes about it. The files come back with those the rendered objects
    point at, and without the helm-template problems of the charts rendered. ``changed``
    (``--changed``: the files reported on): only the overlays and charts that hold one of them
    are built; the others' findings could land on no file reported. ``touched`` gets those
    built, by name, with the changed files each holds. ``cached`` (``lint``): rendered units
    come from the cache when their inputs are unchanged (kaffinity.cache.rendered;
    ``--no-cache``, ``cache: false``), ``cache_dir`` its folder. ``results`` (the run streams:
    ``files`` are compact, :mod:`kaffinity.stream`): the rendered units go through the
    single-object stage too (:func:`kaffinity.stream.stage_rendered`), their results added to it,
    and the render cache keeps them."""
    from kaffinity.load.charts import with_chart_notes
    from kaffinity.repo.units import read_layout, render_units

    files = with_chart_notes(files, settings.limits)  # one helm-template per chart, not rendered yet
    roots = [path for path in (paths or ["."]) if path != "-"]
    read = read_layout(
        files,
        roots,
        default_namespace=settings.namespace,
        configured=settings.units,
        limits=settings.limits,
        kustomized=kustomized,
    )
    if settings.render and _renders(read):
        from kaffinity.repo.sandbox import roots_for

        sandbox = settings.sandbox
        if not sandbox.roots:  # paths from the checkout stay in the repositories linted
            sandbox = replace(sandbox, roots=roots_for(roots or ["."]))
        held = _untouched(read, changed, settings, touched) if changed is not None else {}
        if held:
            read = replace(
                read,
                units=tuple(
                    replace(unit, source=_HELD) if unit.name in held else unit for unit in read.units
                ),
            )
        store = _render_cache(settings, sandbox, notes, cached, cache_dir, staged=results is not None)
        built = render_units(
            read,
            limits=settings.limits,
            helm_values=settings.helm_values,
            namespace=None,
            sandbox=sandbox,
            kube_version=settings.kube_version,
            cache=store,
            jobs=_jobs(settings),
            whole=_whole(files) if results is not None else None,
        )
        if results is not None:
            results.extend(built.results)
        # --changed builds the units of the changed files (and reads context): never prune then.
        if store is not None and (error := store.close(complete=changed is None)) is not None:
            notes.note(f"{error} (--no-cache to skip it)")
        read = built.layout
        if held:  # read as written, as the files they are: not counted as left unrendered
            read = replace(
                read,
                units=tuple(
                    replace(unit, source=held[unit.name], not_rendered=None) if unit.source == _HELD else unit
                    for unit in read.units
                ),
            )
        if built.charts:
            from kaffinity.load.charts import rendered_with
            from kaffinity.repo.units.layout import chart_of

            rendered = {os.path.abspath(chart) for chart in built.charts}
            cache: dict[str, Optional[str]] = {}
            files = [
                replace(file, problems=tuple(p for p in file.problems if p.rule != "helm-template"))
                if (chart := chart_of(file.name, cache)) is not None and rendered_with(chart, rendered)
                else file
                for file in files
            ]
        files = [*files, *built.files]
    else:
        from kaffinity.repo.units.render import unrendered_note

        # Overlays and charts read as written are not what gets deployed: one note says so.
        unrendered = unrendered_note(read.units)
        if unrendered is not None:
            read = replace(read, notes=(*read.notes, unrendered))
    for note in read.notes:
        notes.note(note)
    if results is not None:
        results[:] = _staged(results, read)
    return files, read


def _staged(results: Sequence[FileResult], layout: Layout) -> list[FileResult]:
    """The single-object stage's results of the files read, as a run reading them whole has them:
    the stage runs on the objects of the layout (``Layout.documents``), not on a kustomization's
    patches (fragments), nor on the files a rendered unit replaced (their objects are checked as
    rendered): those files' findings are dropped."""
    present = {id(doc) for doc in layout.documents}
    kept = []
    for result in results:
        documents = result.file.documents
        if not documents or all(id(doc) in present for doc in documents):
            kept.append(result)
            continue
        some = any(id(doc) in present for doc in documents)
        findings = tuple(
            item
            for item in result.findings
            if (some if item[1] is None else id(documents[item[1]]) in present)
        )
        kept.append(
            replace(
                result,
                findings=findings,
                internal_errors=result.internal_errors if some else (),
                notices=result.notices if some else (),
            )
        )
    return kept


def _render_cache(
    settings: Settings,
    sandbox: Sandbox,
    notes: Notes,
    cached: bool,
    cache_dir: Optional[str],
    *,
    staged: bool,
) -> Optional[RenderCache]:
    """The render cache of the run (kaffinity.cache.rendered), when it caches; when the run
    streams (``staged``), through the single-object stage, with or without a cache folder."""
    from kaffinity.cache.rendered import RenderCache, open_render_cache

    stage = _stage(settings) if staged else None
    if cached and settings.cache:
        store, note = open_render_cache(
            settings.cache_dir, settings.base_dir, cache_dir, settings.limits, sandbox, stage
        )
        if note is not None:
            notes.note(note)
        if store is not None or stage is None:
            return store
    return RenderCache(None, settings.limits, sandbox, stage[0]) if stage is not None else None


def _stage(settings: Settings) -> tuple[Callable[[Rendered], Rendered], str]:
    """The single-object stage of a rendered unit (kaffinity.stream.stage_rendered), and what its
    results depend on (kaffinity.stream.fingerprint)."""
    from functools import partial

    from kaffinity.engine.single import single_object_rules
    from kaffinity.rules import RULES
    from kaffinity.stream import fingerprint, stage_rendered

    rules = single_object_rules(RULES, settings)
    return partial(stage_rendered, settings=settings, rules=rules), fingerprint(settings)


def _jobs(settings: Settings) -> int:
    from kaffinity.load.parallel import default_jobs

    return settings.jobs or default_jobs()


def _whole(files: Sequence[SourceFile]) -> Callable[[Document], Document]:
    """The whole document of a compact ConfigMap or Secret (kaffinity.stream.KEPT_WHOLE), read
    again from its file (kaffinity.k8s.compact.Sources), for the GitOps releases that read their
    data (Flux's ``valuesFrom``, ``substituteFrom``); any other document as it is."""
    from kaffinity.k8s.compact import Sources
    from kaffinity.stream import KEPT_WHOLE

    sources = Sources(files)
    # The documents of the files read (a rendered object points at the same file, but is whole).
    compact = {id(doc) for file in files if file.compact for doc in file.documents}

    def whole(doc: Document) -> Document:
        data = doc.data
        if id(doc) not in compact or not isinstance(data, dict):
            return doc
        if (data.get("apiVersion"), data.get("kind")) not in KEPT_WHOLE:
            return doc
        found = sources.data(doc)
        if found is data:
            return doc
        return replace(doc, data=found, root=found if not doc.prefix else doc.root)

    return whole


#: The source a unit that ``--changed`` does not build carries through render_units (which
#: builds only the sources it has an engine for), restored after.
_HELD = "held (--changed)"


def _untouched(
    layout: Layout,
    changed: Collection[str],
    settings: Settings,
    touched: Optional[dict[str, tuple[str, ...]]] = None,
) -> dict[str, str]:
    """The overlays and charts that hold none of the ``changed`` files, by name, with their
    source (kaffinity.repo.changed.touches says what an overlay and a chart hold); ``touched``
    gets the others, with the changed files each holds."""
    from kaffinity.repo.changed import touches

    found = touches(layout, changed, settings.helm_values)
    if touched is not None:
        touched.update(found)
    return {
        unit.name: unit.source
        for unit in layout.units
        if unit.source in ("kustomize", "helm") and unit.name not in found
    }


def _renders(layout: Layout) -> bool:
    """Whether the layout has a unit to build: an overlay, a chart or a GitOps release (nothing
    else renders: a layout without any is left exactly as read)."""
    from kaffinity.repo.rendering import has_release

    return any(unit.source in ("kustomize", "helm") for unit in layout.units) or has_release(layout.documents)


def render_summary(settings: Settings, layout: Layout) -> RenderSummary:
    """What the reports say of rendering: the engines used for the kinds of units there were,
    the units rendered and those read as written (Unit.not_rendered)."""
    from kaffinity.repo.rendering import RenderSummary

    if not settings.render:
        return RenderSummary(enabled=False)
    kinds = {unit.source.partition(" ")[0] for unit in layout.units}
    helm = kustomize = None
    if kinds & {"helm", "flux", "argocd"}:
        from kaffinity.repo.engines import helm_engine

        helm = helm_engine()
    if kinds & {"kustomize", "flux", "argocd"}:
        from kaffinity.repo.engines import kustomize_engine

        kustomize = kustomize_engine()
    rendered = sum(1 for unit in layout.units if unit.source.endswith("(rendered)"))
    unrendered = tuple((unit.name, unit.not_rendered) for unit in layout.units if unit.not_rendered)
    return RenderSummary(True, helm, kustomize, rendered, unrendered)


def choose_unit(layout: Layout, name: Optional[str], notes: Notes) -> Unit:
    """The unit named by ``--unit`` (a usage error for an unknown name), else the first."""
    if name is None:
        if layout.several:
            names = ", ".join(unit.name for unit in layout.units[:5])
            more = f" and {len(layout.units) - 5} more" if len(layout.units) > 5 else ""
            notes.note(
                f"{len(layout.units)} deployment units ({names}{more}); "
                f"showing {layout.units[0].name} (choose one with --unit)",
            )
        return layout.units[0]
    for unit in layout.units:
        if unit.name == name:
            return unit
    known = ", ".join(unit.name or "(the whole input)" for unit in layout.units)
    raise RunError(f"kaffinity: error: --unit {name}: no such deployment unit (units: {known})")


def focused_unit(
    files: list[SourceFile],
    settings: Settings,
    cluster: Cluster | None,
    layout: Layout,
    focus: list[str],
    notes: Notes,
) -> Unit | None:
    """``graph --focus`` without ``--unit`` in several deployment units: the first unit whose
    graph holds every focused object, with a note naming it (and the other units that hold them
    too: ``--unit`` chooses one of those); None (the first unit, whose error then says what is
    missing) when none does, or there is one unit. ``place`` shows every unit; a graph is one
    picture, of one unit."""
    from kaffinity.context import Context
    from kaffinity.graph.view import FocusError, resolve

    if not layout.several:
        return None
    holding = []
    for each in layout.units:
        graph = Context(files, settings, cluster, each.documents).graph.graph
        try:
            for text in focus:
                resolve(graph, text)
        except FocusError:
            continue
        holding.append(each)
    if not holding:
        return None
    what = ", ".join(focus)
    if len(holding) == 1:
        notes.note(f"--focus {what}: drawing unit {holding[0].name}, the one that holds it")
    else:
        names = ", ".join(each.name for each in holding[:5])
        more = f" and {len(holding) - 5} more" if len(holding) > 5 else ""
        notes.note(
            f"--focus {what}: in {len(holding)} deployment units ({names}{more}); "
            f"drawing {holding[0].name} (choose one with --unit)"
        )
    return holding[0]


def only(layout: Layout, unit: Unit) -> Layout:
    """``layout`` with ``unit`` alone (the one a graph draws)."""
    from kaffinity.repo import units

    return units.Layout((unit,), layout.documents, layout.fragments, places=layout.places)
