"""A Flux ``Kustomization`` rendered as kustomize-controller builds it: the folder of its source
(``spec.sourceRef``, ``spec.path``), a ``kustomization.yaml`` generated when the folder has none
(fluxcd/pkg kustomize/kustomize_generator.go, ``generateKustomization``), the Kustomization's own
fields added (``Generator.WriteFile``), and the folders Kustomizations of this repository build
(their postBuild variables and targetNamespace reach the HelmReleases inside)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kaffinity.load.source import Document
from kaffinity.repo.gitops.flux.envsubst import (
    SubstitutionError,
    Variables,
    as_built,
    post_build,
    substituted_release,
)
from kaffinity.repo.gitops.flux.index import (
    SOURCE_GROUPS,
    Index,
    SourceTree,
    api_version,
    artifact_tree,
    as_mapping,
    as_string,
    is_kustomization,
    metadata_of,
    namespace_of,
    shown_path,
    source_tree,
    spec_of,
    within_folder,
)
from kaffinity.repo.gitops.releases import NotRendered, Release, ReleaseInputs


@dataclass(frozen=True, slots=True)
class _Scope:
    """The folder a Kustomization of this repository builds, and what it does to its objects."""

    folder: str
    variables: Variables
    namespace: str | None


def kustomization_scopes(inputs: ReleaseInputs, index: Index) -> list[_Scope]:
    scopes = []
    for doc in inputs.documents:
        if not is_kustomization(doc.data):
            continue
        folder = local_folder(doc, index)
        variables = post_build(doc, index)
        if folder is None or isinstance(variables, NotRendered):
            continue
        scopes.append(
            _Scope(os.path.realpath(folder), variables, as_string(spec_of(doc.data).get("targetNamespace")))
        )
    return sorted(scopes, key=lambda scope: -len(scope.folder))


def place_in_scopes(index: Index, scopes: Sequence[_Scope]) -> None:
    """Objects a Kustomization of this repository deploys into its targetNamespace are
    found there too (a ConfigMap a configMapGenerator made, with no namespace of its own)."""
    for (kind, _, name), doc in list(index.objects.items()):
        namespace = _scope_namespace(doc, scopes)
        if namespace is not None:
            index.objects.setdefault((kind, namespace, name), doc)


def _scope_namespace(doc: Document, scopes: Sequence[_Scope]) -> str | None:
    real = os.path.realpath(doc.file)
    for scope in scopes:
        if within_folder(real, scope.folder):
            return scope.namespace
    return None


def in_scope(doc: Document, scopes: Sequence[_Scope]) -> Document:
    real = os.path.realpath(doc.file)
    for scope in scopes:
        if within_folder(real, scope.folder):
            if scope.variables.enabled and (scope.variables.values or scope.variables.sealed):
                doc = substituted_release(doc, scope.variables.values, scope.variables.sealed)
            if scope.namespace and namespace_of(doc.data) != scope.namespace:
                data = dict(doc.data)
                data["metadata"] = {**metadata_of(data), "namespace": scope.namespace}
                doc = replace(doc, data=data, root=data, prefix=())
            return doc
    return doc


# --- Kustomization -----------------------------------------------------------------------------


def kustomization_release(doc: Document, name: str, index: Index) -> Release:
    spec = spec_of(doc.data)
    files: tuple[str, ...] = ()
    folder, guess = _local_source(doc, index)
    if isinstance(folder, str):
        files = _built_files(folder, doc, index)

    def render(timeout: float) -> Any:
        return _render_kustomization(doc, spec, index, timeout)

    return Release(name, "flux", doc, render, files, note=guess)


def local_folder(doc: Document, index: Index) -> str | None:
    """The Kustomization's folder when its source is this repository (no fetch)."""
    return _local_source(doc, index)[0]


def _local_source(doc: Document, index: Index) -> tuple[str | None, str]:
    """The Kustomization's folder when its source is this repository, and the guess made."""
    spec = spec_of(doc.data)
    reference = as_mapping(spec.get("sourceRef"))
    kind = str(reference.get("kind") or "GitRepository")
    name = str(reference.get("name") or "")
    namespace = as_string(reference.get("namespace")) or namespace_of(doc.data)
    root = index.root(doc)
    if kind == "ExternalArtifact":
        return _local_artifact(doc, name, namespace, index)
    local, guess = index.this(kind, namespace, name, root)
    if not local:
        return None, ""
    return inside_root(root, str(spec.get("path") or "./")), guess


def _local_artifact(doc: Document, name: str, namespace: str, index: Index) -> tuple[str | None, str]:
    """An ExternalArtifact's folder when its generator copies from this repository only (so
    nothing is fetched in finding it), and the guess made in taking its sources for it."""
    root = index.root(doc)
    guesses: list[str] = []
    for generator in index.inputs.documents:
        data = generator.data
        if not (api_version(data).startswith(SOURCE_GROUPS) and data.get("kind") == "ArtifactGenerator"):
            continue
        for source in spec_of(data).get("sources") or ():
            if not isinstance(source, dict):
                continue
            where = as_string(source.get("namespace")) or namespace_of(data)
            local, guess = index.this(str(source.get("kind")), where, str(source.get("name")), root)
            if not local:
                return None, ""
            guesses.append(guess)
    tree = artifact_tree(name, namespace, index, doc, index.inputs)
    if isinstance(tree, NotRendered):
        return None, ""
    path = str(spec_of(doc.data).get("path") or "./")
    return inside_root(tree.path, path), next((guess for guess in guesses if guess), "")


def inside_root(root: str, path: str) -> str | None:
    """A source's path (``./apps``, ``/apps``: both from the source's root) when it stays inside
    the root (kaffinity.repo.sandbox.joined_inside)."""
    from kaffinity.repo.sandbox import joined_inside

    return joined_inside(root, path.lstrip("/"))


def _built_files(folder: str, doc: Document, index: Index) -> tuple[str, ...]:
    """The repository files a local Kustomization's build reads objects from (so they belong
    to its unit once it is rendered), named as the documents name their files."""
    from kaffinity.load.manifests import find_kustomization

    if not os.path.isdir(folder):
        return ()
    if find_kustomization(folder) is None:
        paths = [path for path, is_folder in _generated_resources(folder) if not is_folder]
        folders = [path for path, is_folder in _generated_resources(folder) if is_folder]
    else:
        paths, folders = [], [folder]
    if folders:
        from kaffinity.repo.kustomizations import closure, find_kustomizations

        found = find_kustomizations([], folders, index.inputs.limits)
        for child in folders:
            if child in found or os.path.normpath(child) in found:
                paths.extend(closure(os.path.normpath(child), found))
    relative = not os.path.isabs(doc.file)
    return tuple(
        dict.fromkeys(
            os.path.normpath(os.path.relpath(path) if relative else os.path.abspath(path)) for path in paths
        )
    )


def _generated_resources(folder: str) -> list[tuple[str, bool]]:
    """What kustomize-controller's generated kustomization lists for a folder without one
    (fluxcd/pkg kustomize_generator.go ``generateKustomization``): each ``.yaml``/``.yml`` file
    below it, and a sub-folder holding a kustomization as one entry (not walked into); hidden
    entries are left out, as source-controller's default ignore rules leave out ``.git/`` and
    ``.github/`` (fluxcd/pkg sourceignore)."""
    from kaffinity.load.manifests import KUSTOMIZATION_NAMES

    found: list[tuple[str, bool]] = []
    for current, dirs, names in os.walk(folder):
        dirs.sort()
        kept = []
        for child in dirs:
            if child.startswith("."):
                continue
            path = os.path.join(current, child)
            if any(os.path.isfile(os.path.join(path, name)) for name in KUSTOMIZATION_NAMES):
                found.append((path, True))
            else:
                kept.append(child)
        dirs[:] = kept
        for name in sorted(names):
            if name.endswith((".yaml", ".yml")) and not name.startswith("."):
                found.append((os.path.join(current, name), False))
    return found


def patches_of(container: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``patches`` (inline patch and target), and v1beta2's / v2beta1's older
    ``patchesStrategicMerge`` and ``patchesJson6902`` as patches of their own (fluxcd/pkg
    kustomize_generator.go ``getPatchesStrategicMerge``, ``getPatchesJson6902``)."""
    patches = [
        {key: value for key, value in patch.items() if key in ("patch", "target")}
        for patch in container.get("patches") or ()
        if isinstance(patch, dict)
    ]
    for merge in container.get("patchesStrategicMerge") or ():
        if isinstance(merge, dict):
            patches.append({"patch": json.dumps(merge)})
    for entry in container.get("patchesJson6902") or ():
        if isinstance(entry, dict):
            patches.append({"patch": json.dumps(entry.get("patch")), "target": entry.get("target")})
    return patches


def _wrapper_fields(spec: Mapping[str, Any], folder: str, tree: SourceTree) -> dict[str, Any] | NotRendered:
    """What kustomize-controller adds to the folder's kustomization (kustomize_generator.go
    ``WriteFile``; kustomize-controller's generator adds components, namePrefix/nameSuffix and
    commonMetadata), as fields of kaffinity's wrapper kustomization."""
    fields: dict[str, Any] = {}
    if as_string(spec.get("targetNamespace")):
        fields["namespace"] = spec["targetNamespace"]
    for key in ("namePrefix", "nameSuffix"):
        if as_string(spec.get(key)):
            fields[key] = spec[key]
    patches = patches_of(spec)
    if patches:
        fields["patches"] = patches
    images = [
        {key: image[key] for key in ("name", "newName", "newTag", "digest") if key in image}
        for image in spec.get("images") or ()
        if isinstance(image, dict)
    ]
    if images:
        fields["images"] = images
    components = []
    for component in spec.get("components") or ():
        if not isinstance(component, str):
            continue
        path = inside_root(tree.path, os.path.join(os.path.relpath(folder, tree.path), component))
        if path is None or not os.path.isdir(path):
            return NotRendered(f"its component {component} is not a folder of its source")
        components.append(os.path.realpath(path))
    if components:
        fields["components"] = components  # real paths: made relative to the scratch kustomization
    common = as_mapping(spec.get("commonMetadata"))
    if as_mapping(common.get("labels")):
        fields["labels"] = [
            {"pairs": dict(common["labels"]), "includeSelectors": False, "includeTemplates": False}
        ]
    if as_mapping(common.get("annotations")):
        fields["commonAnnotations"] = dict(common["annotations"])
    return fields


def _render_kustomization(doc: Document, spec: Mapping[str, Any], index: Index, timeout: float) -> Any:
    from kaffinity.load.manifests import find_kustomization
    from kaffinity.repo.kustomize.build import render_kustomization

    reference = as_mapping(spec.get("sourceRef"))
    tree = source_tree(
        str(reference.get("kind") or "GitRepository"),
        str(reference.get("name") or ""),
        as_string(reference.get("namespace")) or namespace_of(doc.data),
        index,
        doc,
        index.inputs,
    )
    if isinstance(tree, NotRendered):
        return tree
    folder = inside_root(tree.path, str(spec.get("path") or "./"))
    if folder is None:
        return NotRendered(f"its path {spec.get('path')} leads outside its source")
    if not os.path.isdir(folder):
        return NotRendered(f"its path {spec.get('path')} is not a folder of its source")
    variables = post_build(doc, index)
    if isinstance(variables, NotRendered):
        return variables
    fields = _wrapper_fields(spec, folder, tree)
    if isinstance(fields, NotRendered):
        return fields
    sandbox = index.inputs.sandbox
    if not tree.local:
        sandbox = replace(sandbox, roots=(*sandbox.roots, os.path.realpath(tree.path)))
    if find_kustomization(folder) is not None and "components" not in fields:
        try:
            return render_kustomization(
                shown_path(folder, doc),
                index.inputs.limits,
                timeout=timeout,
                sandbox=sandbox,
                wrapper_fields=fields,
                transform=lambda text: as_built(text, variables, index),
            )
        except SubstitutionError as error:
            return failure(doc, f"postBuild substitution failed: {error}", index)
    return _render_generated(doc, folder, tree, fields, variables, index, timeout, sandbox)


def _render_generated(
    doc: Document,
    folder: str,
    tree: SourceTree,
    fields: Mapping[str, Any],
    variables: Variables,
    index: Index,
    timeout: float,
    sandbox: Any,
) -> Any:
    """A folder without a kustomization, built as kustomize-controller builds it: a generated
    kustomization listing its files (or, for a folder with a kustomization and
    ``spec.components``, a kustomization of the folder and the components). Written in a
    scratch folder outside the repository (the checkout is never written): files are copied
    there (kustomize reads resource files only below the kustomization; folders are named by
    relative paths, as kustomize wants them), built, and each object pointed back at the file it
    was copied from (same text, same positions)."""
    from kaffinity.load.manifests import find_kustomization
    from kaffinity.load.parse import SourceFile
    from kaffinity.repo.kustomize.build import render_kustomization
    from kaffinity.repo.sandbox import path_problem

    limits = index.inputs.limits
    entries = [(folder, True)] if find_kustomization(folder) is not None else _generated_resources(folder)
    if not entries:
        return NotRendered(f"its path {os.path.relpath(folder, tree.path)} holds no manifests")
    fields = dict(fields)
    components = fields.pop("components", [])
    roots = (*sandbox.roots, os.path.realpath(tree.path))
    with tempfile.TemporaryDirectory(prefix="kaffinity-flux-") as scratch:
        real = os.path.realpath(scratch)
        copies: dict[str, str] = {}
        resources: list[str] = []
        for path, is_folder in entries:
            problem = path_problem(path, roots, limits.file_size)
            if problem is not None:
                return failure(doc, f"cannot render: {problem}", index)
            if is_folder:
                resources.append(os.path.relpath(os.path.realpath(path), real))
                continue
            relative = os.path.relpath(path, folder)
            copy = os.path.join(real, "files", relative)
            os.makedirs(os.path.dirname(copy), exist_ok=True)
            shutil.copyfile(path, copy)
            copies[copy] = path
            resources.append(os.path.join("files", relative))
        with open(os.path.join(real, "kustomization.yaml"), "w", encoding="utf-8") as handle:
            json.dump(
                {
                    "apiVersion": "kustomize.config.k8s.io/v1beta1",
                    "kind": "Kustomization",
                    "resources": resources,
                    **({"components": [os.path.relpath(c, real) for c in components]} if components else {}),
                },
                handle,
            )
        try:
            rendered = render_kustomization(
                real,
                limits,
                timeout=timeout,
                sandbox=replace(sandbox, roots=(*roots, real)),
                wrapper_fields=fields,
                transform=lambda text: as_built(text, variables, index),
            )
        except SubstitutionError as error:
            return failure(doc, f"postBuild substitution failed: {error}", index)
    scratch_problems = [problem for name, problem in rendered.problems if within_folder(name, real)]
    if scratch_problems:  # the scratch kustomization is gone: the Kustomization is what failed
        shown = shown_path(folder, doc).rstrip(os.sep) + os.sep
        message = scratch_problems[0].message.replace(os.path.join(real, "files") + os.sep, shown)
        return failure(doc, message.replace("'files/", f"'{shown}"), index)
    as_given = not os.path.isabs(doc.file)

    def back(name: str) -> str:
        original = copies.get(os.path.realpath(name)) or copies.get(name) or name
        if not as_given or not os.path.isabs(original):
            return original
        return shown_path(original, doc)

    files = []
    for file in rendered.files:
        name = back(file.name)
        documents = tuple(replace(item, file=name) for item in file.documents)
        files.append(SourceFile(name, file.text, documents, file.problems, file.skipped))
    return replace(rendered, unit=folder, files=tuple(files), patches={})


def failure(doc: Document, message: str, index: Index) -> Any:
    """A release that its controller would fail to apply: a ``parse-error`` at its object."""
    from kaffinity.load.parse import LoadProblem, SourceFile
    from kaffinity.load.read import read_text
    from kaffinity.repo.rendered import RENDER_PROBLEM, Rendered

    _, text, _ = read_text(doc.file, index.inputs.limits)
    problem = LoadProblem(RENDER_PROBLEM, message, doc.span)
    return Rendered(doc.file, None, (SourceFile(doc.file, text, (), (problem,)),))
