"""GitOps releases as deployment units: what a Flux or Argo CD controller would deploy.

A GitOps repository rarely holds the pods themselves: it holds *releases*, objects a controller
turns into objects -- Flux's ``Kustomization`` (kustomize-controller builds a path of a source)
and ``HelmRelease`` (helm-controller renders a chart with values), Argo CD's ``Application`` and
``ApplicationSet`` (the repo-server renders a helm, kustomize or directory source). Linting the
release object finds no pod; each release is rendered as its controller would and is a unit of
its own, named after it (:func:`kaffinity.repo.units.render_units` asks each kind for its
releases among the objects of the repository, rendered ones included, so a HelmRelease patched
by an overlay is rendered with the overlay's values).

The kinds live in their own modules (:mod:`kaffinity.repo.flux`, :mod:`kaffinity.repo.argo`);
each offers ``releases(documents, context) -> Iterator[Release]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kaffinity.load.parse import DEFAULT_LIMITS, Limits
from kaffinity.load.source import Document
from kaffinity.repo.render import Rendered
from kaffinity.repo.sandbox import DEFAULT_SANDBOX, Sandbox


@dataclass(frozen=True, slots=True)
class ReleaseContext:
    """What finding and rendering releases may use."""

    #: Every object of the repository (rendered overlays' objects included): sources
    #: (HelmRepository, GitRepository, OCIRepository), ConfigMaps and Secrets for ``valuesFrom``
    #: and ``substituteFrom``, AppProjects.
    documents: Sequence[Document]
    #: The folders linted (the repository's work tree is found from them).
    roots: Sequence[str] = ()
    limits: Limits = DEFAULT_LIMITS
    sandbox: Sandbox = DEFAULT_SANDBOX
    #: The Kubernetes version charts are rendered for (render_chart's ``kube_version``).
    kube_version: str | None = None


@dataclass(frozen=True, slots=True)
class NotRendered:
    """Why a release was read as written: ``reason`` is one line for the run's note
    ("its chart is remote and the network is off", ...). ``remote``: only because something
    must be fetched and the network is off (``--allow-network`` would render it)."""

    reason: str
    remote: bool = False


@dataclass(frozen=True, slots=True)
class Release:
    """One release found in the repository."""

    #: The unit's name in reports: ``HelmRelease podinfo/podinfo`` (kind namespace/name).
    name: str
    #: ``flux`` or ``argocd``.
    source: str
    #: The object that defines the release (where failures and notes point).
    document: Document
    #: Renders the release at the timeout given (seconds): its objects, each pointed at the file
    #: a person edits (the chart's template, the patch, the kustomize resource), or why not.
    render: Callable[[float], Rendered | NotRendered]
    #: Repository files whose objects the release deploys (normalised paths): they belong to
    #: this unit once it is rendered.
    files: tuple[str, ...] = field(default=())
