"""What the repository holds that releases refer to: sources, ConfigMaps and Secrets by kind,
namespace and name; where a source's files are (this checkout, or a fetched tree, an
``ExternalArtifact``'s mapped folders); and the data of a ConfigMap or Secret."""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kaffinity.load.source import Document
from kaffinity.repo.gitops.releases import NotRendered, ReleaseInputs

KUSTOMIZE_GROUP = "kustomize.toolkit.fluxcd.io/"
HELM_GROUP = "helm.toolkit.fluxcd.io/"
SOURCE_GROUPS = ("source.toolkit.fluxcd.io/", "source.extensions.fluxcd.io/")
#: kustomize-controller's opt-out of substitution, as a label or an annotation (kustomize_varsub.go).
SUBSTITUTE_KEY = "kustomize.toolkit.fluxcd.io/substitute"
#: Variable names postBuild accepts (kustomize_varsub.go, ``varsubRegex``).
VARIABLE_NAME = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")
#: helm-controller's longest release name (internal/release/name.go ``ShortenName``).
RELEASE_NAME_MAX = 53
DEFAULT_VALUES_KEY = "values.yaml"


def api_version(data: Any) -> str:
    value = data.get("apiVersion") if isinstance(data, dict) else None
    return value if isinstance(value, str) else ""


def is_kustomization(data: Any) -> bool:
    return api_version(data).startswith(KUSTOMIZE_GROUP) and data.get("kind") == "Kustomization"


def is_helm_release(data: Any) -> bool:
    return api_version(data).startswith(HELM_GROUP) and data.get("kind") == "HelmRelease"


def metadata_of(data: Any) -> Mapping[str, Any]:
    metadata = data.get("metadata") if isinstance(data, dict) else None
    return metadata if isinstance(metadata, dict) else {}


def namespace_of(data: Any) -> str:
    namespace = metadata_of(data).get("namespace")
    return namespace if isinstance(namespace, str) and namespace else "default"


def object_name(data: Any) -> str:
    name = metadata_of(data).get("name")
    return name if isinstance(name, str) else ""


def kind_and_name(doc: Document) -> str:
    return f"{doc.data.get('kind')} {namespace_of(doc.data)}/{object_name(doc.data)}"


def spec_of(data: Any) -> Mapping[str, Any]:
    spec = data.get("spec") if isinstance(data, dict) else None
    return spec if isinstance(spec, dict) else {}


def as_mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def as_string(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# --- what the repository holds -----------------------------------------------------------------


class Index:
    """The objects releases refer to (sources, ConfigMaps, Secrets), by kind, namespace and
    name, and where this repository is."""

    def __init__(self, inputs: ReleaseInputs) -> None:
        self.inputs = inputs
        self.objects: dict[tuple[str, str, str], Document] = {}
        for doc in inputs.documents:
            data = doc.data
            kind = data.get("kind") if isinstance(data, dict) else None
            if not isinstance(kind, str):
                continue
            api = api_version(data)
            if (kind in ("ConfigMap", "Secret") and api == "v1") or api.startswith(SOURCE_GROUPS):
                self.objects.setdefault((kind, namespace_of(data), object_name(data)), doc)

    def get(self, kind: str, namespace: str, name: str) -> Document | None:
        return self.objects.get((kind, namespace, name))

    def root(self, doc: Document) -> str:
        from kaffinity.repo.sandbox import repository_root

        if self.inputs.roots:
            real = os.path.realpath(doc.file)
            for root in self.inputs.roots:
                top = repository_root(root)
                if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
                    return top
        return repository_root(doc.file)

    def this(self, kind: str, namespace: str, name: str, root: str) -> tuple[bool, str]:
        """Whether the source ``kind namespace/name`` is this repository, and the guess made
        when it is taken for it without its URL being a remote of the checkout (a note says
        so): a GitRepository whose url is a remote of the checkout
        (:func:`kaffinity.repo.gitops.releases.this_repository`), or ``flux-system/flux-system``, the
        source ``flux bootstrap`` writes to sync the repository it commits into."""
        from kaffinity.repo.gitops.releases import this_repository

        if kind != "GitRepository":
            return False, ""
        bootstrap = (namespace, name) == ("flux-system", "flux-system")
        source = self.get(kind, namespace, name)
        url = as_string(spec_of(source.data).get("url")) if source is not None else None
        how = this_repository(url, root) if url is not None else None
        if how == "remote":
            return True, ""
        if how == "folder":
            return (
                True,
                f"GitRepository {namespace}/{name} ({url}) taken for this repository by its folder's name",
            )
        if bootstrap:
            where = f" ({url} is not a remote of the checkout)" if url else " (not in the repository)"
            return (
                True,
                f"GitRepository flux-system/flux-system{where} taken for this repository, "
                "which flux bootstrap syncs",
            )
        return False, ""


@dataclass(frozen=True, slots=True)
class SourceTree:
    """Where a source's files are: a folder (the checkout's root, or a fetched tree)."""

    path: str
    local: bool


def source_tree(
    kind: str, name: str, namespace: str, index: Index, owner: Document, inputs: ReleaseInputs
) -> SourceTree | NotRendered:
    """The folder of a Kustomization's or chart's source, fetched when remote (and allowed)."""
    from kaffinity.repo.fetch.cache import GitRef, NotFetched
    from kaffinity.repo.fetch.git import fetch_git

    root = index.root(owner)
    if kind == "ExternalArtifact":
        return artifact_tree(name, namespace, index, owner, inputs)
    if index.this(kind, namespace, name, root)[0]:
        return SourceTree(root, local=True)
    source = index.get(kind, namespace, name)
    if source is None:
        return NotRendered(f"its source {kind} {namespace}/{name} is not in the repository")
    if kind != "GitRepository":
        return NotRendered(f"its source {kind} {namespace}/{name} is an artifact kaffinity does not fetch")
    spec = spec_of(source.data)
    url = as_string(spec.get("url"))
    if url is None:
        return NotRendered(f"its source GitRepository {namespace}/{name} has no url")
    ref = as_mapping(spec.get("ref"))
    fetched = fetch_git(
        url,
        GitRef(
            branch=as_string(ref.get("branch")),
            tag=as_string(ref.get("tag")),
            semver=as_string(ref.get("semver")),
            commit=as_string(ref.get("commit")),
            name=as_string(ref.get("name")),
        ),
        inputs.sandbox,
    )
    if isinstance(fetched, NotFetched):
        return NotRendered(fetched.reason, remote=fetched.offline)
    return SourceTree(fetched.path, local=False)


def artifact_tree(
    name: str, namespace: str, index: Index, owner: Document, inputs: ReleaseInputs
) -> SourceTree | NotRendered:
    """An ``ExternalArtifact`` an ``ArtifactGenerator`` (source.extensions.fluxcd.io) composes
    from this repository: the artifact's folders are the repository's folders its ``copy``
    rules name (``from: "@repo/apps/**"``, ``to: "@artifact/"``). Read back as a folder of the
    checkout when every rule copies a whole folder of this repository and keeps its layout
    below it (the flux2-kustomize-helm-example layout); anything else is not rendered."""
    for doc in index.inputs.documents:
        data = doc.data
        if not (api_version(data).startswith(SOURCE_GROUPS) and data.get("kind") == "ArtifactGenerator"):
            continue
        if namespace_of(data) != namespace:
            continue
        spec = spec_of(data)
        for artifact in spec.get("artifacts") or ():
            if not isinstance(artifact, dict) or artifact.get("name") != name:
                continue
            return _ArtifactMap.of(spec, artifact, namespace, index, owner, inputs)
    return NotRendered(f"its source ExternalArtifact {namespace}/{name} is not in the repository")


@dataclass(frozen=True, slots=True)
class _ArtifactMap:
    """An artifact's folders as folders of this repository: (artifact prefix, repository folder)."""

    root: str
    folders: tuple[tuple[str, str], ...]

    @staticmethod
    def of(
        spec: Mapping[str, Any],
        artifact: Mapping[str, Any],
        namespace: str,
        index: Index,
        owner: Document,
        inputs: ReleaseInputs,
    ) -> SourceTree | NotRendered:
        aliases: dict[str, SourceTree | NotRendered] = {}
        for source in spec.get("sources") or ():
            if isinstance(source, dict) and isinstance(source.get("alias"), str):
                aliases[source["alias"]] = source_tree(
                    str(source.get("kind")),
                    str(source.get("name")),
                    as_string(source.get("namespace")) or namespace,
                    index,
                    owner,
                    inputs,
                )
        folders: list[tuple[str, str]] = []
        for rule in artifact.get("copy") or ():
            origin = str(as_mapping(rule).get("from") or "")
            target = str(as_mapping(rule).get("to") or "")
            match = re.match(r"^@([^/]+)/(.*?)/?\*\*$", origin)
            if not match or not target.startswith("@artifact/"):
                return NotRendered(f"its artifact copies {origin!r}, which kaffinity does not compose")
            tree = aliases.get(match.group(1))
            if tree is None:
                return NotRendered(
                    f"its artifact copies from @{match.group(1)}, not a source of its generator"
                )
            if isinstance(tree, NotRendered):
                return tree
            inside = os.path.normpath(target[len("@artifact/") :] or ".")
            folders.append((inside, os.path.normpath(os.path.join(tree.path, match.group(2)))))
        # Every rule must keep the repository's layout: the artifact's root is one folder of it.
        roots = set()
        for inside, folder in folders:
            if inside == ".":
                roots.add(folder)
            elif folder.endswith(os.sep + inside):
                roots.add(folder[: -len(inside) - 1])
            else:
                roots.add("")  # renamed on the way: not a folder of the repository
        if len(roots) != 1 or "" in roots:
            return NotRendered("its artifact composes folders of several places, which kaffinity does not")
        return SourceTree(roots.pop(), local=True)


# --- values and variables from ConfigMaps and Secrets ---------------------------------------------


@dataclass(frozen=True, slots=True)
class _Data:
    """A ConfigMap's or Secret's data, decoded; ``sealed``: keys whose values are encrypted
    (SOPS), known by name only."""

    values: Mapping[str, str]
    sealed: frozenset[str]


def object_data(doc: Document) -> _Data:
    data = doc.data
    values: dict[str, str] = {}
    sealed: set[str] = set()
    encrypted = isinstance(data.get("sops"), dict)
    if data.get("kind") == "Secret":
        for key, value in as_mapping(data.get("data")).items():
            if encrypted or not isinstance(value, str):
                sealed.add(key)
                continue
            try:
                values[key] = base64.b64decode(value, validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                sealed.add(key)
    for key, value in as_mapping(data.get("stringData" if data.get("kind") == "Secret" else "data")).items():
        if encrypted and isinstance(value, str) and value.startswith("ENC["):
            sealed.add(key)
        elif isinstance(value, str | int | float | bool):
            values[key] = value if isinstance(value, str) else json.dumps(value)
    return _Data(values, frozenset(sealed - set(values)))


def shown_path(path: str, doc: Document) -> str:
    """``path`` named as the documents name their files: relative to the working folder when
    the release's own file is (so findings name ``charts/x/templates/y.yaml``)."""
    if os.path.isabs(doc.file):
        return path
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def within_folder(path: str, root: str) -> bool:
    from kaffinity.repo.sandbox import inside

    return inside(path, (root,))
