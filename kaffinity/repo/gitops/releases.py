"""GitOps releases as deployment units: what a Flux or Argo CD controller would deploy.

A GitOps repository rarely holds the pods themselves: it holds *releases*, objects a controller
turns into objects -- Flux's ``Kustomization`` (kustomize-controller builds a path of a source)
and ``HelmRelease`` (helm-controller renders a chart with values), Argo CD's ``Application`` and
``ApplicationSet`` (the repo-server renders a helm, kustomize or directory source). Linting the
release object finds no pod; each release is rendered as its controller would and is a unit of
its own, named after it (:func:`kaffinity.repo.units.render_units` asks each kind for its
releases among the objects of the repository, rendered ones included, so a HelmRelease patched
by an overlay is rendered with the overlay's values).

The kinds live in their own modules (:mod:`kaffinity.repo.gitops.flux`, :mod:`kaffinity.repo.gitops.argo`);
each offers ``releases(documents, context) -> Iterator[Release]``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kaffinity.load.parse import DEFAULT_LIMITS, Limits
from kaffinity.load.source import Document
from kaffinity.repo.rendered import Rendered
from kaffinity.repo.sandbox import DEFAULT_SANDBOX, Sandbox


@dataclass(frozen=True, slots=True)
class ReleaseInputs:
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
    #: The unit that rendered each rendered object, by ``id`` of its document: two overlays
    #: render two versions of one release (``apps/staging`` and ``apps/production`` patch one
    #: HelmRelease), and each release unit is named after the overlay it comes from.
    units: Mapping[int, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NotRendered:
    """Why a release was read as written: ``reason`` is one line for the run's note
    ("its chart is remote and the network is off", ...). ``remote``: only because something
    must be fetched and the network is off (``--allow-network`` would render it)."""

    reason: str
    remote: bool = False
    #: Folders of the repository that the release builds with a tool kaffinity does not run (an
    #: Argo CD config management plugin): what they hold is that tool's input, so their own
    #: first-pass build failing (a kustomization naming the plugin's generated ``all.yaml``) is
    #: not the author's error.
    folders: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ReleaseKey:
    """Everything rendering a release reads, for the render cache
    (:meth:`kaffinity.cache.rendered.RenderCache.release`): the chart folder it renders (every
    file below it hashed, as a chart unit's: :func:`kaffinity.cache.render_inputs.chart_inputs`),
    the values files, other files read (the release's own file: its positions), and the rest
    as data (``arguments``: the release object as read, the merged values, the namespace...).
    A kind gives one only for a release whose inputs are all here; None: rendered every run."""

    chart: str
    values_files: tuple[str, ...]
    files: tuple[str, ...]
    arguments: Mapping[str, Any]


def document_identity(doc: Document) -> dict[str, Any]:
    """A release object as a key part: its file, place in it, and its whole data as kaffinity
    read it (after the overlay that patched it), key order kept."""
    import json

    return {
        "file": doc.file,
        "index": doc.index,
        "span": list(doc.span),
        "prefix": [repr(step) for step in doc.prefix],
        "data": json.dumps(doc.data, default=repr, ensure_ascii=True),
    }


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
    #: A guess made in finding the release that the run's notes state even when it renders
    #: (Argo CD: a ``repoURL`` taken for this repository by the checkout folder's name).
    note: str = ""
    #: What its render reads (:class:`ReleaseKey`), asked before it renders; None (or no
    #: function): the release is rendered every run.
    key: Callable[[], ReleaseKey | None] | None = None


# --- "is this repository": a release's source URL against the checkout's own remotes ---------
#
# Generic (Argo CD's ``repoURL``, Flux's ``GitRepository.spec.url``): whether a URL a release
# names is the repository being linted, so that its path is read from the checkout instead of
# being fetched. Read from the checkout's ``.git/config`` as a file (no git subprocess: nothing
# in the checkout runs), bounded in size.

_GIT_CONFIG_LIMIT = 256 * 1024


def checkout_remotes(root: str) -> tuple[str, ...]:
    """The URLs of the remotes in the git configuration of the work tree ``root``
    (``[remote "..."] url = ...``; a linked worktree's ``.git`` file is followed to its common
    folder), or ``()``. Read as text, never more than 256 KiB, errors ignored."""
    dot_git = os.path.join(root, ".git")
    folder = dot_git
    if os.path.isfile(dot_git):
        text = _small_text(dot_git)
        line = next((line for line in text.splitlines() if line.startswith("gitdir:")), "")
        folder = os.path.join(root, line[len("gitdir:") :].strip()) if line else ""
        common = _small_text(os.path.join(folder, "commondir")).strip() if folder else ""
        if common:
            folder = os.path.join(folder, common)
    if not folder or not os.path.isdir(folder):
        return ()
    urls: list[str] = []
    section = ""
    for raw in _small_text(os.path.join(folder, "config")).splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line.strip("[]").strip().lower()
        elif section.startswith("remote ") and "=" in line:
            key, _, value = line.partition("=")
            if key.strip().lower() == "url":
                urls.append(value.strip().strip('"'))
    return tuple(urls)


def repository_key(url: str) -> tuple[str, str] | None:
    """A git URL as ``(host, owner/name)``, lower-cased, for comparison: ``https://`` and
    ``ssh://`` URLs, scp-like ``git@host:owner/name``, a trailing ``.git`` or ``/`` and a port
    or user ignored (``https://github.com/argoproj/argocd-example-apps.git`` and
    ``git@github.com:argoproj/argocd-example-apps`` are one key). None for a local path."""
    text = url.strip()
    match = re.match(r"^[a-z][a-z0-9+.-]*://(?:[^@/]*@)?([^/:]+)(?::\d+)?/(.+)$", text, re.I)
    if match is None:
        match = re.match(r"^(?:[^@/]+@)?([^/:]+):(?!//)(.+)$", text)
    if match is None:
        return None
    path = match.group(2).strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    path = path.strip("/")
    return (match.group(1).lower(), path.lower()) if path else None


def this_repository(url: str, root: str, path: str = "") -> str | None:
    """Whether ``url`` names the repository checked out at ``root``: ``"remote"`` when it
    matches one of the checkout's remotes (:func:`checkout_remotes`, compared by
    :func:`repository_key`), ``"folder"`` when no remote matches but ``path`` exists in the
    checkout and the URL's repository name is the checkout folder's name (``name``, or
    ``owner+name``/``owner_name`` as some tools name clones, any owner) -- a guess callers say they made --,
    else None."""
    key = repository_key(url)
    if key is None:
        return None
    remotes = {repository_key(remote) for remote in checkout_remotes(root)}
    if key in remotes:
        return "remote"
    owner, _, name = key[1].rpartition("/")
    folder = os.path.basename(os.path.normpath(root)).lower()
    names = {name, f"{owner}+{name}", f"{owner}_{name}"} if owner else {name}
    if folder.rpartition("+")[2] == name:  # an ``owner+name`` clone of a fork or mirror
        names.add(folder)
    target = os.path.normpath(os.path.join(root, path.strip("/"))) if path else root
    inside = target == os.path.normpath(root) or target.startswith(os.path.normpath(root) + os.sep)
    if folder in names and inside and os.path.exists(target):
        return "folder"
    return None


def _small_text(path: str) -> str:
    """A regular file's first 256 KiB (never a FIFO or device, whose reading could block)."""
    import stat

    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return ""
    with open(descriptor, "rb") as handle:
        try:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                return ""
            return handle.read(_GIT_CONFIG_LIMIT).decode("utf-8", "replace")
        except OSError:
            return ""
