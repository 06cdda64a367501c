"""The Flux releases among a repository's objects (rendered ones included), each named after its
object, and where two objects share a name, after where each comes from."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

from kaffinity.load.source import Document
from kaffinity.repo.gitops.flux.helmrelease import helm_release
from kaffinity.repo.gitops.flux.index import Index, is_helm_release, is_kustomization, kind_and_name
from kaffinity.repo.gitops.flux.kustomization import (
    in_scope,
    kustomization_release,
    kustomization_scopes,
    place_in_scopes,
)
from kaffinity.repo.gitops.releases import Release, ReleaseInputs


def releases(inputs: ReleaseInputs) -> Iterator[Release]:
    """The Flux releases among ``inputs.documents``: each ``Kustomization`` and ``HelmRelease``,
    named ``Kustomization <namespace>/<name>``; where two different objects of one name are
    found (a cluster folder per environment, an overlay per environment), each name is followed
    by where it comes from (the folder of its file, or the overlay that rendered it). A
    HelmRelease below the folder of a Kustomization of this repository is read as that
    Kustomization deploys it: its postBuild variables substituted, in its targetNamespace."""
    index = Index(inputs)
    scopes = kustomization_scopes(inputs, index)
    place_in_scopes(index, scopes)
    found: list[tuple[Document, Document]] = []  # (as deployed, as found)
    for doc in inputs.documents:
        if is_kustomization(doc.data):
            found.append((doc, doc))
        elif is_helm_release(doc.data):
            found.append((in_scope(doc, scopes), doc))
    names = {id(doc): kind_and_name(doc) for doc, _ in found}
    contents: dict[str, set[str]] = {}
    for doc, _ in found:
        contents.setdefault(names[id(doc)], set()).add(_content(doc))
    seen: set[tuple[str, str]] = set()
    for doc, original in found:
        name = names[id(doc)]
        key = (name, _content(doc))
        if key in seen:
            continue  # the same object from two units (a base two overlays share unchanged)
        seen.add(key)
        if len(contents[name]) > 1:
            name = f"{name} ({_where(original, inputs)})"
        if is_kustomization(doc.data):
            yield kustomization_release(doc, name, index)
        else:
            yield helm_release(doc, name, index)


def _content(doc: Document) -> str:
    return json.dumps(doc.data, sort_keys=True, default=str)


def _where(doc: Document, inputs: ReleaseInputs) -> str:
    unit = inputs.units.get(id(doc))
    return unit or os.path.dirname(os.path.normpath(doc.file)) or "."
