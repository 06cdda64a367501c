"""A Flux ``HelmRelease`` rendered as helm-controller renders it: its chart found (``spec.chart.spec``
with a HelmRepository, GitRepository or Bucket source, or ``spec.chartRef``), rendered with its
values (:mod:`kaffinity.repo.gitops.flux.values`), hooks left out as helm-controller leaves them,
objects put in the release's namespace, and post-rendered with kustomize
(``postRenderers[].kustomize``)."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kaffinity.load.source import Document
from kaffinity.repo.gitops.flux.index import (
    RELEASE_NAME_MAX,
    Index,
    as_mapping,
    as_string,
    metadata_of,
    namespace_of,
    object_name,
    shown_path,
    source_tree,
    spec_of,
    within_folder,
)
from kaffinity.repo.gitops.flux.kustomization import failure, inside_root, patches_of
from kaffinity.repo.gitops.flux.values import plain, release_values, values_locations
from kaffinity.repo.gitops.releases import NotRendered, Release, ReleaseKey

# --- HelmRelease ---------------------------------------------------------------------------------


def release_name(data: Any) -> str:
    """The Helm release name helm-controller gives a HelmRelease: ``spec.releaseName``, else
    ``[<targetNamespace>-]<name>`` (api/v2 ``GetReleaseName``), shortened past 53 characters to
    40 and a hash (internal/release/name.go ``ShortenName``)."""
    spec = spec_of(data)
    name = as_string(spec.get("releaseName"))
    if name is None:
        target = as_string(spec.get("targetNamespace"))
        name = f"{target}-{object_name(data)}" if target else object_name(data)
    if len(name) <= RELEASE_NAME_MAX:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()
    return name[: RELEASE_NAME_MAX - 13] + "-" + digest[:12]


def helm_release(doc: Document, name: str, index: Index) -> Release:
    def render(timeout: float) -> Any:
        rendered = _render_helm_release(doc, index, timeout)
        if not isinstance(rendered, NotRendered) and rendered.ok:
            locations = values_locations(doc, rendered, index)
            rendered = replace(rendered, patches={**rendered.patches, **locations})
        return rendered

    return Release(
        name, "flux", doc, render, note=_chart_guess(doc, index), key=lambda: _cache_key(doc, index)
    )


def _cache_key(doc: Document, index: Index) -> ReleaseKey | None:
    """What rendering the HelmRelease reads (:class:`ReleaseKey`): the chart folder found as
    :func:`_render_helm_release` finds it (in the checkout, or fetched at an exact version into
    kaffinity's fetch cache: its files are hashed), its values files, the values merged from
    ``valuesFrom`` and ``spec.values`` (the exact data the chart is given), the release object
    and its file (``values_locations`` reads its positions), the checkout's remotes (which
    GitRepository is this repository). None -- rendered every run -- when its chart is a
    version range or a git branch fetched with the network on (what they resolve to may change
    between runs), or it does not render (nothing to cache)."""
    from kaffinity.repo.gitops.releases import checkout_remotes, document_identity

    chart = _chart(doc, index)
    if isinstance(chart, NotRendered) or not chart.pinned:
        return None
    values = release_values(doc, index)
    if isinstance(values, NotRendered):
        return None
    root = index.root(doc)
    arguments = {
        "release": "flux HelmRelease",
        **document_identity(doc),
        "values": json.dumps(values, default=repr, ensure_ascii=True),
        "chart": chart.folder,
        "shown": shown_path(chart.folder, doc),
        "root": root,
        "remotes": list(checkout_remotes(root)),
        "kube_version": index.inputs.kube_version,
    }
    return ReleaseKey(chart.folder, chart.values_files, (doc.file,), arguments)


def _chart_guess(doc: Document, index: Index) -> str:
    """The guess made in reading a HelmRelease's chart from this repository (a note says so)."""
    template = as_mapping(as_mapping(spec_of(doc.data).get("chart")).get("spec"))
    reference = as_mapping(template.get("sourceRef"))
    if reference.get("kind") != "GitRepository":
        return ""
    namespace = as_string(reference.get("namespace")) or namespace_of(doc.data)
    return index.this("GitRepository", namespace, str(reference.get("name") or ""), index.root(doc))[1]


@dataclass(frozen=True, slots=True)
class _Chart:
    folder: str
    values_files: tuple[str, ...]
    #: The same chart every run: in the checkout, or fetched at an exact version (a range, a
    #: tag or a git tree fetched may resolve to another: the release is not cached).
    pinned: bool = True


def _chart(doc: Document, index: Index) -> _Chart | NotRendered:
    """The chart a HelmRelease names, on disk (fetched when remote and allowed)."""
    spec = spec_of(doc.data)
    namespace = namespace_of(doc.data)
    reference = as_mapping(spec.get("chartRef"))
    if reference:
        kind = str(reference.get("kind"))
        name = str(reference.get("name"))
        ref_namespace = as_string(reference.get("namespace")) or namespace
        source = index.get(kind, ref_namespace, name)
        if source is None:
            return NotRendered(f"its chartRef {kind} {ref_namespace}/{name} is not in the repository")
        if kind == "OCIRepository":
            return _oci_chart(source, index)
        if kind == "HelmChart":
            return _chart_template(spec_of(source.data), namespace_of(source.data), doc, index)
        return NotRendered(f"its chartRef kind {kind} is not a chart source")
    template = as_mapping(as_mapping(spec.get("chart")).get("spec"))
    if not template:
        return NotRendered("it names no chart (spec.chart.spec or spec.chartRef)")
    return _chart_template(template, namespace, doc, index)


def _chart_template(
    template: Mapping[str, Any], namespace: str, doc: Document, index: Index
) -> _Chart | NotRendered:
    """A chart from ``spec.chart.spec`` (or a HelmChart's spec): chart, version, sourceRef,
    valuesFiles (paths in the source: the chart's for a Helm repository, the source's root for
    a git one; source-controller internal/helm/chart builder)."""
    from kaffinity.repo.fetch.cache import NotFetched
    from kaffinity.repo.fetch.charts import fetch_chart
    from kaffinity.repo.semver import is_exact

    chart = as_string(template.get("chart"))
    reference = as_mapping(template.get("sourceRef"))
    kind = str(reference.get("kind") or "HelmRepository")
    name = str(reference.get("name") or "")
    ref_namespace = as_string(reference.get("namespace")) or namespace
    if chart is None:
        return NotRendered("its chart has no name")
    listed = [item for item in template.get("valuesFiles") or () if isinstance(item, str)]
    if as_string(template.get("valuesFile")):
        listed.append(template["valuesFile"])
    version = as_string(template.get("version"))
    if kind == "HelmRepository":
        source = index.get(kind, ref_namespace, name)
        if source is None:
            return NotRendered(f"its source HelmRepository {ref_namespace}/{name} is not in the repository")
        url = as_string(spec_of(source.data).get("url"))
        if url is None:
            return NotRendered(f"its source HelmRepository {ref_namespace}/{name} has no url")
        fetched = fetch_chart(url, chart, version, index.inputs.sandbox)
        if isinstance(fetched, NotFetched):
            return NotRendered(fetched.reason, remote=fetched.offline)
        return _with_values(fetched.path, fetched.path, listed, pinned=is_exact(version))
    tree = source_tree(kind, name, ref_namespace, index, doc, index.inputs)
    if isinstance(tree, NotRendered):
        return tree
    folder = inside_root(tree.path, chart)
    if folder is None or not os.path.isfile(os.path.join(folder, "Chart.yaml")):
        return NotRendered(f"its chart {chart} is not a chart folder of its source")
    return _with_values(folder, tree.path, listed, pinned=tree.local)


def _with_values(folder: str, base: str, listed: Sequence[str], *, pinned: bool) -> _Chart | NotRendered:
    files = []
    for item in listed:
        path = inside_root(base, item)
        if path is None or not os.path.isfile(path):
            return NotRendered(f"its values file {item} is not in its source")
        files.append(path)
    return _Chart(folder, tuple(files), pinned)


def _oci_chart(source: Document, index: Index) -> _Chart | NotRendered:
    """An OCIRepository holding a chart (``oci://host/path/<chart>``, ``ref.tag``/``semver``)."""
    from kaffinity.repo.fetch.cache import NotFetched
    from kaffinity.repo.fetch.charts import fetch_chart
    from kaffinity.repo.semver import is_exact

    spec = spec_of(source.data)
    url = as_string(spec.get("url"))
    if url is None or not url.startswith("oci://"):
        return NotRendered(f"its OCIRepository {object_name(source.data)} has no oci:// url")
    ref = as_mapping(spec.get("ref"))
    version = as_string(ref.get("tag")) or as_string(ref.get("semver"))
    repository, _, chart = url.rstrip("/").rpartition("/")
    fetched = fetch_chart(repository, chart, version, index.inputs.sandbox)
    if isinstance(fetched, NotFetched):
        return NotRendered(fetched.reason, remote=fetched.offline)
    return _Chart(fetched.path, (), pinned=is_exact(version))


def _render_helm_release(doc: Document, index: Index, timeout: float) -> Any:
    from kaffinity.repo.helm.chart import render_chart

    chart = _chart(doc, index)
    if isinstance(chart, NotRendered):
        return chart
    values = release_values(doc, index)
    if isinstance(values, NotRendered):
        return values
    spec = spec_of(doc.data)
    namespace = as_string(spec.get("targetNamespace")) or namespace_of(doc.data)
    sandbox = index.inputs.sandbox
    root = index.root(doc)
    if not within_folder(chart.folder, root):
        sandbox = replace(sandbox, roots=(*sandbox.roots, root, os.path.realpath(chart.folder)))
    rendered = render_chart(
        shown_path(chart.folder, doc),
        chart.values_files,
        release_name(doc.data),
        namespace,
        index.inputs.limits,
        timeout=timeout,
        sandbox=sandbox,
        values_objects=[values] if values else [],
        kube_version=index.inputs.kube_version,
    )
    if not rendered.ok:
        return rendered
    rendered = _without_hooks(rendered, spec)
    _in_namespace(rendered, namespace)
    patches = _post_renderers(spec)
    if not patches:
        return rendered
    return _post_render(doc, rendered, patches, index, timeout)


def _in_namespace(rendered: Any, namespace: str) -> None:
    """Namespaced objects the chart writes no namespace for are created in the release's
    namespace (helm-controller installs with the release's namespace: Helm's kube client sets
    it on each namespaced object that has none)."""
    from kaffinity.k8s.model.kinds import CLUSTER_SCOPED
    from kaffinity.load.source import PosDict

    for item in rendered.documents:
        metadata = item.data.get("metadata") if isinstance(item.data, dict) else None
        if (
            not isinstance(metadata, dict)
            or item.data.get("kind") in CLUSTER_SCOPED
            or metadata.get("namespace")
        ):
            continue
        metadata["namespace"] = namespace
        if isinstance(metadata, PosDict) and len(metadata.pos) == len(metadata) - 1:
            metadata.pos.append(metadata.pos[-1] if len(metadata.pos) else 0)


def _without_hooks(rendered: Any, spec: Mapping[str, Any]) -> Any:
    """What helm-controller leaves in the cluster of the chart's hooks: test hooks
    (``helm.sh/hook: test``) only run when ``spec.test.enable`` asks, as ``helm test`` after the
    release, never on install (helm-controller internal/action/test.go); ``install.disableHooks``
    (and ``upgrade.disableHooks``) install without any hook (Helm's ``--no-hooks``)."""
    from kaffinity.load.parse import SourceFile

    disabled = as_mapping(spec.get("install")).get("disableHooks") is True

    def dropped(item: Document) -> bool:
        annotations = metadata_of(item.data).get("annotations")
        hook = annotations.get("helm.sh/hook") if isinstance(annotations, dict) else None
        if not isinstance(hook, str):
            return False
        return disabled or any(kind.strip().startswith("test") for kind in hook.split(","))

    if not any(dropped(item) for item in rendered.documents):
        return rendered
    files = tuple(
        SourceFile(file.name, file.text, tuple(d for d in file.documents if not dropped(d)), file.problems)
        for file in rendered.files
    )
    return replace(rendered, files=files)


def _post_renderers(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The kustomize fields of ``postRenderers[].kustomize`` (helm-controller
    internal/postrender/kustomize.go: patches, images; v2beta1's patchesStrategicMerge and
    patchesJson6902), all renderers in order."""
    patches: list[Any] = []
    images: list[Any] = []
    for renderer in spec.get("postRenderers") or ():
        kustomize = as_mapping(as_mapping(renderer).get("kustomize"))
        patches.extend(patches_of(kustomize))
        images.extend(image for image in kustomize.get("images") or () if isinstance(image, dict))
    fields: dict[str, Any] = {}
    if patches:
        fields["patches"] = patches
    if images:
        fields["images"] = images
    return fields


def _post_render(
    doc: Document, rendered: Any, fields: Mapping[str, Any], index: Index, timeout: float
) -> Any:
    """The chart's output run through kustomize with the post-renderer's patches, as
    helm-controller does; each object keeps its template's positions (aligned with what the
    patch changed)."""
    from kaffinity.load.parse import SourceFile
    from kaffinity.repo.kustomize.build import render_kustomization
    from kaffinity.repo.origins import repoint

    originals = [item for file in rendered.files for item in file.documents]
    with tempfile.TemporaryDirectory(prefix="kaffinity-postrender-") as scratch:
        real = os.path.realpath(scratch)
        with open(os.path.join(real, "rendered.yaml"), "w", encoding="utf-8") as handle:
            handle.write("\n---\n".join(json.dumps(plain(item.data)) for item in originals))
        with open(os.path.join(real, "kustomization.yaml"), "w", encoding="utf-8") as handle:
            json.dump({"resources": ["rendered.yaml"], **fields}, handle)
        sandbox = replace(index.inputs.sandbox, roots=(real,))
        patched = render_kustomization(real, index.inputs.limits, timeout=timeout, sandbox=sandbox)
    if not patched.ok:
        problem = patched.problems[0][1]
        return failure(doc, f"postRenderers: {problem.message}", index)
    by_key = {_key(item.data): item for item in originals}
    texts = {file.name: file.text for file in rendered.files}
    mapped: dict[str, list[Document]] = {}
    for item in patched.documents:
        original = by_key.get(_key(item.data))
        if original is None:  # a patch renamed it: kept at the release
            mapped.setdefault(doc.file, []).append(
                replace(item, file=doc.file, root=item.data, span=doc.span)
            )
            continue
        mapped.setdefault(original.file, []).append(repoint(item, original))
    if doc.file in mapped and doc.file not in texts:
        from kaffinity.load.read import read_text

        texts[doc.file] = read_text(doc.file, index.inputs.limits)[1]
    files = tuple(SourceFile(name, texts.get(name, ""), tuple(items), ()) for name, items in mapped.items())
    return replace(rendered, files=files)


def _key(data: Any) -> tuple[str, str, str]:
    return (str(data.get("kind")), str(metadata_of(data).get("namespace") or ""), object_name(data))
