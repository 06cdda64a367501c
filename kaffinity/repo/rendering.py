"""Rendering by default (issue 32): whether a run has anything to render, and what it rendered.

``kaffinity lint`` renders what it can (charts, overlays, GitOps releases: :mod:`kaffinity.repo.units`)
unless told not to (``--no-render``, ``render: false``). Every repository streams, file by file
through the single-object stage and the cache (:mod:`kaffinity.stream`), and its rendered units
go through the same stage (issue 36): :func:`has_release` (a Flux or Argo CD release among the
objects, compact or whole) says whether a layout has releases to render;
:func:`renderable_on_disk` (a kustomization, or a ``Chart.yaml`` when a Helm engine is there)
finds from the disk alone, before anything is parsed, whether a run may render.

:class:`RenderSummary` is what the reports count: the engines used, the units rendered, and the
units read as written with the reason (``Unit.not_rendered``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from kaffinity.load.manifests import KUSTOMIZATION_NAMES
from kaffinity.load.source import Document

#: The file that makes a folder a Helm chart (helm.sh/helm/v3 pkg/chartutil ChartfileName).
CHART_FILE = "Chart.yaml"

#: The kinds a GitOps controller turns into objects, by API group: Flux's helm-controller and
#: kustomize-controller (fluxcd/helm-controller api/v2 HelmRelease; fluxcd/kustomize-controller
#: api/v1 Kustomization, whose group tells it from kustomize's own kustomize.config.k8s.io
#: Kustomization), Argo CD's Application and ApplicationSet (argoproj/argo-cd
#: pkg/apis/application/v1alpha1).
RELEASE_KINDS = frozenset(
    {
        ("helm.toolkit.fluxcd.io", "HelmRelease"),
        ("kustomize.toolkit.fluxcd.io", "Kustomization"),
        ("argoproj.io", "Application"),
        ("argoproj.io", "ApplicationSet"),
    }
)


def is_release(doc: Document) -> bool:
    """Whether the document is a GitOps release (:data:`RELEASE_KINDS`), compact or whole."""
    data = doc.data
    if not isinstance(data, dict):
        return False
    api_version, kind = data.get("apiVersion"), data.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return False
    return (api_version.rpartition("/")[0], kind) in RELEASE_KINDS


def has_release(documents: Iterable[Document]) -> bool:
    """Whether any of ``documents`` is a GitOps release."""
    return any(is_release(doc) for doc in documents)


def renderable_on_disk(roots: Iterable[str], *, charts: bool | Callable[[], bool] = True) -> bool:
    """Whether the layout of ``roots`` may hold a unit to build: a kustomization, or (``charts``)
    a Helm chart, below the folders named, beside or above the files named (as
    :func:`kaffinity.repo.kustomizations.find_kustomizations` and
    :func:`kaffinity.repo.units.layout.chart_of` find them), or a kustomization or ``Chart.yaml`` named
    itself (a ``--changed`` listing). From the disk alone, before anything is parsed; one walk of
    each folder, stopping at the first kustomization. ``charts`` may be a function (is there an
    engine to render charts?), asked only once a chart is found."""
    found = renderable_kinds(roots)
    if "kustomize" in found:
        return True
    if "helm" not in found:
        return False
    return charts() if callable(charts) else charts


def renderable_kinds(roots: Iterable[str]) -> set[str]:
    """``kustomize`` and ``helm`` if a kustomization or a chart is found (see
    :func:`renderable_on_disk`); the walk stops at the first kustomization."""
    from kaffinity.load.manifests import find_kustomization
    from kaffinity.repo.units.layout import chart_of

    found: set[str] = set()
    folders: set[str] = set()
    cache: dict[str, str | None] = {}
    for root in roots:
        if os.path.isdir(root):
            for path in _walk(root, (*KUSTOMIZATION_NAMES, CHART_FILE)):
                found.add("helm" if os.path.basename(path) == CHART_FILE else "kustomize")
                if "kustomize" in found:
                    return found
            if "helm" not in found and chart_of(os.path.join(root, "x"), cache) is not None:
                found.add("helm")  # a folder inside a chart (its templates/)
        elif os.path.basename(root) in KUSTOMIZATION_NAMES:
            return {*found, "kustomize"}
        elif os.path.basename(root) == CHART_FILE:
            found.add("helm")
        else:
            folders.add(os.path.dirname(os.path.normpath(root)) or ".")
    for folder in sorted(folders):
        if find_kustomization(folder) is not None:
            return {*found, "kustomize"}
        if "helm" not in found and chart_of(os.path.join(folder, "x"), cache) is not None:
            found.add("helm")
    return found


def _walk(root: str, names: tuple[str, ...]) -> Iterator[str]:
    """The files of ``names`` below ``root``, hidden folders skipped (as the units walk); a
    folder with a kustomization and a ``Chart.yaml`` gives both."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        kustomization = next((name for name in KUSTOMIZATION_NAMES if name in files), None)
        if kustomization is not None:
            yield os.path.join(folder, kustomization)
        if CHART_FILE in names and CHART_FILE in files:
            yield os.path.join(folder, CHART_FILE)


@dataclass(frozen=True, slots=True)
class RenderSummary:
    """What the run rendered, for the reports (docs/output.md, ``summary.render``)."""

    #: Rendering was on (the default; False: ``--no-render``, ``render: false``).
    enabled: bool
    #: The engine of charts (``helm binary``, ``helm-python-sdk``) and of overlays
    #: (``kustomize``, ``kubectl kustomize``) used; None: there was none, or none was needed.
    helm: str | None = None
    kustomize: str | None = None
    #: Units built by a tool (overlays, charts, releases).
    rendered: int = 0
    #: Units read as written, each with why (:data:`kaffinity.repo.units.unit.NOT_RENDERED`: ``no
    #: tool``, ``network off``, ``budget spent``, ``failed``).
    unrendered: tuple[tuple[str, str], ...] = ()
