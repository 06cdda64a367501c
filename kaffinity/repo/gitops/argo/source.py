"""An Application's source (``repoURL``, ``targetRevision``, ``path``, ``chart``, ``ref``) and its type
as util/app/discovery ``AppType`` finds it: an explicit ``helm:``/``kustomize:``/``directory:``/
``plugin:`` block, else ``kustomization.yaml`` (it wins, being walked after ``Chart.yaml``), else
``Chart.yaml``, else a directory of manifests."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kaffinity.repo.gitops.releases import NotRendered


@dataclass
class Source:
    repo_url: str
    revision: str
    path: str
    chart: str
    ref: str
    spec: Mapping[str, Any]
    #: Where its files are: a folder (the checkout's, or the cache's), or why not.
    folder: str | None = None
    #: The top of its repository (for ``/``-rooted and ``$ref`` value files).
    top: str | None = None
    missing: NotRendered | None = None


# --- source types --------------------------------------------------------------------------------


def is_deployed(source: Source) -> bool:
    """repository.go: a source with ``ref`` and neither ``path`` nor ``chart`` only provides
    values files to the others."""
    return not (source.ref and not source.path and not source.chart)


def source_block(spec: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = spec.get(key)
    return value if isinstance(value, Mapping) else {}


def source_kind(source: Source) -> str:
    """v1alpha1 ``ExplicitType`` then util/app/discovery ``AppType``."""
    if source.chart:
        return "helm"
    for key in ("plugin", "helm", "kustomize", "directory"):
        if isinstance(source.spec.get(key), Mapping):
            return key
    from kaffinity.load.manifests import find_kustomization

    folder = source.folder or ""
    if find_kustomization(folder) is not None:
        return "kustomize"
    if os.path.isfile(os.path.join(folder, "Chart.yaml")):
        return "helm"
    return "directory"


def helm_repository_url(url: str) -> str:
    """A Helm repository ``repoURL``: ``oci://`` kept, a bare ``host/path`` (Argo's OCI form,
    without a scheme) read as ``oci://host/path``."""
    if re.match(r"^[a-z][a-z0-9+.-]*://", url, re.I):
        return url
    return "oci://" + url.strip("/")


def git_ref(revision: str) -> Any:
    from kaffinity.repo.fetch.cache import GitRef

    if not revision or revision == "HEAD":
        return GitRef()
    if re.fullmatch(r"[0-9a-f]{40}", revision):
        return GitRef(commit=revision)
    if any(char in revision for char in "*^~><=") or re.fullmatch(r"v?\d+\.x(\.x)?", revision):
        return GitRef(semver=revision)
    return GitRef(name=revision)
