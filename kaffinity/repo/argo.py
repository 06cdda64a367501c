"""Argo CD releases: ``Application`` and ``ApplicationSet`` (argoproj.io) as units.

Each Application is rendered as Argo CD's repo-server renders it (argo-cd
reposerver/repository/repository.go, ``GenerateManifests``), one release named
``Application <namespace>/<name>`` (the Application's own namespace, ``argocd`` when unset):

- its sources: ``spec.source``, or every entry of ``spec.sources`` (multi-source); a source with
  ``ref`` and neither ``path`` nor ``chart`` only lends its files to ``$<ref>/...`` value files;
- where a source's files are: ``repoURL`` naming *this* repository (a remote of the checkout, or
  -- a guess the run's notes state -- the checkout folder's name, :func:`kaffinity.repo.releases.
  this_repository`) is read from the checkout at ``path``; a Helm repository with ``chart:``
  (HTTP, ``oci://`` or a bare registry host, as Argo's ``IsHelmOci`` allows) is fetched with
  :func:`kaffinity.repo.fetch.fetch_chart`, another git repository with :func:`fetch_git` --
  only when the network is allowed, otherwise the release is read as written and the run's note
  lists it;
- its type as util/app/discovery ``AppType`` finds it: an explicit ``helm:``/``kustomize:``/
  ``directory:``/``plugin:`` block, else ``kustomization.yaml`` (it wins, being walked after
  ``Chart.yaml``), else ``Chart.yaml``, else a directory of manifests;
- **helm** (``helmTemplate`` and util/helm ``template``): ``helm template <releaseName>`` in the
  namespace ``spec.destination.namespace``; ``valueFiles`` in order (relative to the source path,
  ``/``-rooted ones to the repository's top, ``$ref/...`` to a ``ref`` source's top; missing ones
  skipped under ``ignoreMissingValueFiles``), then ``valuesObject`` (or ``values``, a YAML
  string), then ``parameters`` and ``fileParameters`` as ``--set``/``--set-string``/``--set-file``
  (Helm's strvals: dotted paths, ``[i]`` list indexes, ``\\.`` escapes, typed scalars);
- **kustomize** (util/kustomize ``Build``): ``namePrefix``, ``nameSuffix``, ``images``,
  ``commonLabels``, ``commonAnnotations``, ``namespace``, ``patches``, ``components`` and
  ``replicas`` as fields of a kustomization around the source
  (:func:`kaffinity.repo.render.render_kustomization`'s ``wrapper_fields``), as ``kustomize edit``
  adds them to the source's own;
- **directory** (``findManifests``): the ``*.yaml``/``*.yml``/``*.json`` files of the path,
  below it with ``recurse``, kept by ``include`` and dropped by ``exclude`` (Argo's glob, ``*``
  crossing ``/``, ``{a,b}`` alternatives); jsonnet is not evaluated (the release says so).

An Application another one renders (app of apps) is a release too: those in the repository's
files, and those only a parent's render produces (found by rendering the parent, at most
:data:`MAX_DEPTH` levels down); each Application once, by namespace and name.

ApplicationSets (argo-cd applicationset/generators): the ``list``, ``git`` (``directories`` and
``files``, when its ``repoURL`` is this repository), ``matrix`` and ``merge`` generators are
evaluated and the template rendered with each parameter set (fasttemplate, or Go templates under
``goTemplate: true``: :mod:`kaffinity.repo.argo_template`); each Application generated is a
release as above. Other generators (clusters, scmProvider, pullRequest, clusterDecisionResource,
plugin) need a cluster or an API: the ApplicationSet is one release read as written, and says why.
"""

from __future__ import annotations

import fnmatch
import json
import os
import posixpath
import re
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kaffinity.load.parse import Limits, SourceFile
from kaffinity.load.source import Document
from kaffinity.repo.releases import NotRendered, Release, ReleaseContext, this_repository
from kaffinity.repo.rendered import Rendered
from kaffinity.repo.sandbox import Sandbox

GROUP = "argoproj.io"
#: Argo CD's own namespace, where Applications live unless they say otherwise.
DEFAULT_NAMESPACE = "argocd"
#: How deep app-of-apps are followed through renders (Applications in files are always found).
MAX_DEPTH = 3
#: Apps of apps rendered to find their children (each at most once; in file order).
MAX_PARENT_RENDERS = 50
#: Parameter sets one ApplicationSet may generate.
MAX_GENERATED = 500
_MANIFEST_EXTENSIONS = (".yaml", ".yml", ".json")
_JSONNET_EXTENSIONS = (".jsonnet", ".libsonnet")
_UNEVALUATED_GENERATORS = ("clusters", "scmProvider", "pullRequest", "clusterDecisionResource", "plugin")


def releases(context: ReleaseContext) -> Iterator[Release]:
    """The releases of this kind among ``context.documents``: each Application (those generated
    by ApplicationSets and those parents render included) once."""
    finder = _Finder(context)
    _WALKS.clear()
    for doc in context.documents:
        data = doc.data
        if not isinstance(data, Mapping) or not str(data.get("apiVersion", "")).startswith(GROUP + "/"):
            continue
        if data.get("kind") == "Application":
            yield from finder.application(doc, data, depth=0)
        elif data.get("kind") == "ApplicationSet":
            yield from finder.application_set(doc, data)


class _Finder:
    def __init__(self, context: ReleaseContext) -> None:
        self.context = context
        self.seen: set[tuple[str, str]] = set()
        self.sets: set[tuple[str, str, str]] = set()
        #: Renders done to find the children of an app of apps, before the run's render budget
        #: applies: bounded in number and in time (half the budget).
        self.parents = 0
        self.started = time.perf_counter()

    def application(self, doc: Document, data: Mapping[str, Any], depth: int) -> Iterator[Release]:
        metadata = _mapping(data.get("metadata"))
        name = str(metadata.get("name") or "")
        namespace = str(metadata.get("namespace") or DEFAULT_NAMESPACE)
        if not name or (namespace, name) in self.seen:
            return
        self.seen.add((namespace, name))
        unit = f"Application {namespace}/{name}"
        app = _Application(unit, name, _mapping(data.get("spec")), doc)
        app.root = _root(doc, self.context.sandbox)
        plan = app.plan(self.context)
        cache: dict[str, Rendered | NotRendered] = {}

        def render(timeout: float) -> Rendered | NotRendered:
            if "outcome" not in cache:
                cache["outcome"] = app.render(plan, self.context, timeout)
            return cache["outcome"]

        yield Release(unit, "argocd", doc, render, plan.files, plan.note)
        # App of apps: Applications only this one's render produces.
        if depth < MAX_DEPTH and plan.children_possible and self._may_render_parent():
            self.parents += 1
            outcome = render(self.context.sandbox.timeout)
            if isinstance(outcome, Rendered) and outcome.ok:
                for child in outcome.documents:
                    child_data = child.data
                    if not isinstance(child_data, Mapping) or not str(
                        child_data.get("apiVersion", "")
                    ).startswith(GROUP + "/"):
                        continue
                    if child_data.get("kind") == "Application":
                        yield from self.application(child, child_data, depth + 1)
                    elif child_data.get("kind") == "ApplicationSet":
                        yield from self.application_set(child, child_data, depth + 1)

    def _may_render_parent(self) -> bool:
        spent = time.perf_counter() - self.started
        return self.parents < MAX_PARENT_RENDERS and spent < self.context.sandbox.budget / 2

    def application_set(self, doc: Document, data: Mapping[str, Any], depth: int = 0) -> Iterator[Release]:
        metadata = _mapping(data.get("metadata"))
        name = str(metadata.get("name") or "")
        namespace = str(metadata.get("namespace") or DEFAULT_NAMESPACE)
        if ("ApplicationSet", namespace, name) in self.sets:
            return
        self.sets.add(("ApplicationSet", namespace, name))
        unit = f"ApplicationSet {namespace}/{name}"
        spec = _mapping(data.get("spec"))
        root = _root(doc, self.context.sandbox)
        try:
            applications = list(_generate(spec, root, self.context.limits))
        except _Unevaluated as why:
            reason = str(why)
            yield Release(unit, "argocd", doc, lambda _timeout: NotRendered(reason))
            return
        for generated in applications:
            app_meta = dict(generated.get("metadata") or {})
            app_meta.setdefault("namespace", namespace)
            yield from self.application(doc, {**generated, "metadata": app_meta}, depth=depth)


# --- one Application --------------------------------------------------------------------------


@dataclass
class _Source:
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


@dataclass
class _Plan:
    sources: list[_Source]
    files: tuple[str, ...] = ()
    note: str = ""
    children_possible: bool = False


class _Application:
    def __init__(self, unit: str, name: str, spec: Mapping[str, Any], doc: Document) -> None:
        self.unit = unit
        self.name = name
        self.spec = spec
        self.doc = doc
        self.root = ""
        #: The Kubernetes version charts render for (ReleaseContext.kube_version).
        self.kube_version: str | None = None
        destination = _mapping(spec.get("destination"))
        self.namespace = str(destination.get("namespace") or "") or None

    def _sources(self) -> list[_Source]:
        raw = self.spec.get("sources")
        entries = raw if isinstance(raw, list) and raw else [self.spec.get("source")]
        sources = []
        for entry in entries:
            if not isinstance(entry, Mapping):
                continue
            sources.append(
                _Source(
                    str(entry.get("repoURL") or ""),
                    str(entry.get("targetRevision") or ""),
                    str(entry.get("path") or "").strip(),
                    str(entry.get("chart") or ""),
                    str(entry.get("ref") or ""),
                    entry,
                )
            )
        return sources

    def plan(self, context: ReleaseContext) -> _Plan:
        """Where each source's files are (the checkout's, found now; the cache's, fetched when
        rendering), and the repository files a directory source deploys."""
        plan = _Plan(self._sources())
        if not plan.sources:
            return plan
        files: list[str] = []
        for source in plan.sources:
            if source.chart:
                continue  # a Helm repository: fetched when rendering
            found = this_repository(source.repo_url, self.root, source.path) if source.repo_url else None
            if found is None:
                continue
            if found == "folder":
                plan.note = (
                    f"its repoURL {source.repo_url} was taken for this repository (the checkout "
                    "folder's name; no git remote matches)"
                )
            # Paths as the documents name theirs (relative when the user gave relative paths):
            # the release's files and findings are then the same names as the first pass's.
            source.top = _shown(self.root, self.doc.file)
            # Argo joins the path to the repository's top (Go's filepath.Join: a leading / too).
            folder = _inside(source.top, source.path.lstrip("/") or ".")
            if folder is None or not os.path.isdir(folder):
                source.missing = NotRendered(
                    f"path {source.path!r} of {source.repo_url} is not in the checkout"
                )
                continue
            source.folder = folder
            kind = _kind(source)
            if _is_deployed(source) and kind == "directory":
                files.extend(_directory_files(folder, _block(source.spec, "directory")))
            elif _is_deployed(source) and kind == "kustomize":
                files.extend(_kustomize_files(folder, context.limits))
            if _is_deployed(source) and _mentions_argo(folder):
                plan.children_possible = True
        plan.files = tuple(os.path.normpath(path) for path in files)
        return plan

    def render(self, plan: _Plan, context: ReleaseContext, timeout: float) -> Rendered | NotRendered:
        if not plan.sources:
            return NotRendered("it names no source (spec.source or spec.sources)")
        sandbox = context.sandbox
        self.kube_version = context.kube_version
        roots = [self.root]
        for source in plan.sources:
            if source.missing is not None:
                return source.missing
            if source.folder is None:
                missing = _fetch(source, sandbox)
                if missing is not None:
                    return missing
                roots.append(source.top or self.root)
        confined = replace(sandbox, roots=tuple(dict.fromkeys([*sandbox.roots, *roots])))
        refs = {f"${source.ref}": source for source in plan.sources if source.ref}
        outcomes: list[Rendered] = []
        for source in plan.sources:
            if not _is_deployed(source):
                continue
            outcome = self._render_source(source, refs, context.limits, confined, timeout)
            if isinstance(outcome, NotRendered):
                return outcome
            if self.namespace and outcome.ok:
                _default_namespace(outcome, self.namespace)
            outcomes.append(outcome)
        if not outcomes:
            return NotRendered("none of its sources deploys anything (only ref sources)")
        if len(outcomes) == 1:
            return outcomes[0]
        patches: dict[int, Any] = {}
        for outcome in outcomes:
            patches.update(outcome.patches)
        return Rendered(
            self.unit,
            outcomes[0].engine,
            tuple(file for outcome in outcomes for file in outcome.files),
            sum(outcome.seconds for outcome in outcomes),
            tuple(section for outcome in outcomes for section in outcome.sections),
            patches,
        )

    def _render_source(
        self,
        source: _Source,
        refs: Mapping[str, _Source],
        limits: Limits,
        sandbox: Sandbox,
        timeout: float,
    ) -> Rendered | NotRendered:
        assert source.folder is not None
        kind = _kind(source)
        if kind == "plugin":
            return NotRendered(
                "its source uses a config management plugin, which kaffinity does not run",
                folders=(os.path.normpath(source.folder),),
            )
        if kind == "helm":
            return self._helm(source, refs, limits, sandbox, timeout)
        if kind == "kustomize":
            return self._kustomize(source, limits, sandbox, timeout)
        return _directory(self.unit, source, limits)

    # helm ------------------------------------------------------------------------------------

    def _helm(
        self,
        source: _Source,
        refs: Mapping[str, _Source],
        limits: Limits,
        sandbox: Sandbox,
        timeout: float,
    ) -> Rendered | NotRendered:
        from kaffinity.load.parse import parse_data
        from kaffinity.repo.helm.chart import render_chart

        assert source.folder is not None
        helm = _block(source.spec, "helm")
        if not os.path.isfile(os.path.join(source.folder, "Chart.yaml")):
            return NotRendered(f"its helm source {source.path or source.chart} has no Chart.yaml")
        values_files = self._values_files(helm, source, refs)
        if isinstance(values_files, NotRendered):
            return values_files
        objects = _inline_values(helm)
        if isinstance(objects, NotRendered):
            return objects
        sets = self._sets(helm, source, refs, limits)
        if isinstance(sets, NotRendered):
            return sets
        if sets:
            # Helm merges the values files, then applies each --set onto that merge
            # (pkg/cli/values Options.MergeValues, strvals.ParseInto): the result, as the last
            # values given, is what the chart sees.
            base: dict[str, Any] = {}
            for path in values_files:
                text = _read_confined(path, os.path.dirname(path), limits) or ""
                data, _ = parse_data(text)
                if isinstance(data, Mapping):
                    base = _merge(base, _plain(data))
            for data in objects:
                base = _merge(base, data)
            try:
                for name, value, force in sets:
                    _strvals_set(base, name, value, force_string=force)
            except ValueError as error:
                return NotRendered(f"helm parameter not understood: {error}")
            objects = [base]
        release = str(helm.get("releaseName") or self.name)
        return render_chart(
            source.folder,
            values_files,
            release=release,
            namespace=self.namespace,
            limits=limits,
            timeout=timeout,
            sandbox=sandbox,
            values_objects=objects,
            kube_version=self.kube_version,
        )

    def _values_files(
        self, helm: Mapping[str, Any], source: _Source, refs: Mapping[str, _Source]
    ) -> list[str] | NotRendered:
        ignore_missing = bool(helm.get("ignoreMissingValueFiles"))
        values_files: list[str] = []
        for entry in _strings(helm.get("valueFiles")):
            resolved = self._value_file(entry, source, refs)
            if isinstance(resolved, NotRendered):
                return resolved
            if not os.path.isfile(resolved):
                if ignore_missing:
                    continue
                return NotRendered(f"values file {entry} not found (Argo CD fails the same way)")
            values_files.append(resolved)
        return values_files

    def _sets(
        self, helm: Mapping[str, Any], source: _Source, refs: Mapping[str, _Source], limits: Limits
    ) -> list[tuple[str, str, bool]] | NotRendered:
        """``parameters`` (``--set``, ``--set-string`` with ``forceString``) and
        ``fileParameters`` (``--set-file``), in util/helm ``template``'s order."""
        sets: list[tuple[str, str, bool]] = []
        for parameter in _list(helm.get("parameters")):
            if isinstance(parameter, Mapping) and parameter.get("name"):
                value = parameter.get("value")
                text = "" if value is None else _scalar_text(value)
                sets.append((str(parameter["name"]), text, bool(parameter.get("forceString"))))
        for parameter in _list(helm.get("fileParameters")):
            if isinstance(parameter, Mapping) and parameter.get("name") and parameter.get("path"):
                path = self._value_file(str(parameter["path"]), source, refs)
                if isinstance(path, NotRendered):
                    return path
                # _value_file kept it inside its repository (this one, a ref's, the chart's).
                content = _read_confined(path, os.path.dirname(path), limits)
                if content is None:
                    return NotRendered(f"file parameter {parameter['path']} not found")
                sets.append((str(parameter["name"]), content, True))
        return sets

    def _value_file(self, entry: str, source: _Source, refs: Mapping[str, _Source]) -> str | NotRendered:
        """util/io/path ``ResolveValueFilePathOrUrl``, and ``$ref/`` references (repository.go
        ``getResolvedValueFiles``): a path in the source's repository, never outside it."""
        if re.match(r"^[a-z][a-z0-9+.-]*://", entry, re.I):
            return NotRendered(f"values file {entry} is a URL, which kaffinity does not fetch", remote=True)
        top, base, rest = source.top or self.root, source.folder or self.root, entry
        if entry.startswith("$"):
            ref, _, rest = entry.partition("/")
            referenced = refs.get(ref)
            if referenced is None:
                return NotRendered(f"values file {entry}: no source has ref {ref[1:]}")
            if referenced.missing is not None:
                return referenced.missing
            if referenced.top is None:
                return NotRendered(f"values file {entry}: its repository is not in the checkout")
            top = base = referenced.top
        elif entry.startswith("/"):
            base = top
        resolved = _inside(top, os.path.relpath(os.path.join(base, rest.lstrip("/")), top))
        if resolved is None:
            return NotRendered(f"values file {entry} leads outside the repository")
        return resolved

    # kustomize -------------------------------------------------------------------------------

    def _kustomize(
        self, source: _Source, limits: Limits, sandbox: Sandbox, timeout: float
    ) -> Rendered | NotRendered:
        from kaffinity.load.manifests import find_kustomization
        from kaffinity.repo.kustomize.build import render_kustomization

        assert source.folder is not None
        if find_kustomization(source.folder) is None:
            return NotRendered(f"its kustomize source {source.path} has no kustomization file")
        options = _block(source.spec, "kustomize")
        fields = _kustomize_fields(options)
        patches = self._patches(options, source, limits)
        if isinstance(patches, NotRendered):
            return patches
        if patches:
            fields["patches"] = patches
        components = self._components(options, source, limits, sandbox)
        if isinstance(components, NotRendered):
            return components
        if components:
            fields["components"] = components
        return render_kustomization(
            source.folder, limits, timeout=timeout, sandbox=sandbox, wrapper_fields=fields
        )

    def _patches(
        self, options: Mapping[str, Any], source: _Source, limits: Limits
    ) -> list[Any] | NotRendered:
        """``patches``: inline ones as they are; a ``path`` one read (inside the repository)
        and given inline, the wrapper kustomization being elsewhere."""
        assert source.folder is not None
        top = source.top or self.root
        patches = []
        for entry in _list(options.get("patches")):
            if not isinstance(entry, Mapping):
                continue
            patch = {
                key: _plain(value) for key, value in entry.items() if key in ("patch", "target", "options")
            }
            if entry.get("path"):
                path = _inside(top, os.path.relpath(os.path.join(source.folder, str(entry["path"])), top))
                text = _read_confined(path, top, limits)
                if text is None:
                    return NotRendered(f"kustomize patch {entry['path']} not found in the repository")
                patch["patch"] = text
            if "patch" in patch:
                patches.append(patch)
        return patches

    def _components(
        self, options: Mapping[str, Any], source: _Source, limits: Limits, sandbox: Sandbox
    ) -> list[str] | NotRendered:
        """``components``: folders in the repository, checked as the overlay is
        (:func:`kaffinity.repo.preflight.check_kustomization`), given by real path."""
        from kaffinity.repo.preflight import check_kustomization

        assert source.folder is not None
        top = source.top or self.root
        components = []
        for entry in _strings(options.get("components")):
            folder = _inside(top, os.path.relpath(os.path.join(source.folder, entry), top))
            if folder is None or not os.path.isdir(folder):
                if options.get("ignoreMissingComponents"):
                    continue
                return NotRendered(f"kustomize component {entry} not found in the repository")
            refusal = check_kustomization(folder, sandbox.roots, limits, network=sandbox.network)
            if refusal is not None:
                return NotRendered(f"kustomize component {entry}: {refusal.message}", remote=refusal.remote)
            components.append(os.path.realpath(folder))
        return components


def _kustomize_fields(options: Mapping[str, Any]) -> dict[str, Any]:
    """Argo's ``kustomize`` options as kustomization fields (util/kustomize ``Build`` runs
    ``kustomize edit set nameprefix|namesuffix|namespace|image|replicas`` and ``edit add
    label|annotation``)."""
    fields: dict[str, Any] = {}
    for key in ("namePrefix", "nameSuffix", "namespace"):
        if isinstance(options.get(key), str) and options[key]:
            fields[key] = options[key]
    labels = options.get("commonLabels")
    if isinstance(labels, Mapping) and labels:
        if options.get("labelWithoutSelector"):
            fields["labels"] = [{"pairs": _plain(labels), "includeSelectors": False}]
        else:
            fields["commonLabels"] = _plain(labels)
    annotations = options.get("commonAnnotations")
    if isinstance(annotations, Mapping) and annotations:
        fields["commonAnnotations"] = _plain(annotations)
    images = [_image(entry) for entry in _strings(options.get("images"))]
    if images:
        fields["images"] = images
    replicas = [
        {"name": str(entry.get("name")), "count": _int(entry.get("count"))}
        for entry in _list(options.get("replicas"))
        if isinstance(entry, Mapping) and entry.get("name") and _int(entry.get("count")) is not None
    ]
    if replicas:
        fields["replicas"] = replicas
    return fields


def _inline_values(helm: Mapping[str, Any]) -> list[Any] | NotRendered:
    """``valuesObject``, else ``values`` (a YAML string; an object in old Applications)."""
    from kaffinity.load.parse import parse_data

    inline = helm.get("valuesObject")
    if isinstance(inline, Mapping):
        return [_plain(inline)]
    values = helm.get("values")
    if isinstance(values, str) and values.strip():
        data, problem = parse_data(values)
        if problem is not None or not isinstance(data, Mapping):
            return NotRendered("its helm.values is not a YAML mapping")
        return [_plain(data)]
    if isinstance(values, Mapping):
        return [_plain(values)]
    return []


def _fetch(source: _Source, sandbox: Sandbox) -> NotRendered | None:
    """A remote source into the cache (:mod:`kaffinity.repo.fetch`): its folder and top set, or
    why not."""
    from kaffinity.repo.fetch import NotFetched, fetch_chart, fetch_git

    if source.chart:
        repository = _helm_repository(source.repo_url)
        fetched = fetch_chart(repository, source.chart, source.revision or None, sandbox)
    elif source.repo_url:
        fetched = fetch_git(source.repo_url, _git_ref(source.revision), sandbox)
    else:
        return NotRendered("a source has no repoURL")
    if isinstance(fetched, NotFetched):
        return NotRendered(fetched.reason, remote=fetched.offline)
    folder = fetched.path if source.chart else _inside(fetched.path, source.path.lstrip("/") or ".")
    if folder is None or not os.path.isdir(folder):
        return NotRendered(f"path {source.path!r} is not in {source.repo_url} at {fetched.version}")
    source.folder, source.top = folder, fetched.path
    return None


# --- source types --------------------------------------------------------------------------------


def _is_deployed(source: _Source) -> bool:
    """repository.go: a source with ``ref`` and neither ``path`` nor ``chart`` only provides
    values files to the others."""
    return not (source.ref and not source.path and not source.chart)


def _block(spec: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = spec.get(key)
    return value if isinstance(value, Mapping) else {}


def _kind(source: _Source) -> str:
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


def _helm_repository(url: str) -> str:
    """A Helm repository ``repoURL``: ``oci://`` kept, a bare ``host/path`` (Argo's OCI form,
    without a scheme) read as ``oci://host/path``."""
    if re.match(r"^[a-z][a-z0-9+.-]*://", url, re.I):
        return url
    return "oci://" + url.strip("/")


def _git_ref(revision: str) -> Any:
    from kaffinity.repo.fetch import GitRef

    if not revision or revision == "HEAD":
        return GitRef()
    if re.fullmatch(r"[0-9a-f]{40}", revision):
        return GitRef(commit=revision)
    if any(char in revision for char in "*^~><=") or re.fullmatch(r"v?\d+\.x(\.x)?", revision):
        return GitRef(semver=revision)
    return GitRef(name=revision)


# --- directory sources ------------------------------------------------------------------------


def _directory_files(folder: str, options: Mapping[str, Any]) -> list[str]:
    """repository.go ``findManifests``: the manifest files of the folder (below it with
    ``recurse``), ``include``/``exclude`` globs matched against the path from the folder."""
    recurse = bool(options.get("recurse"))
    include = str(options.get("include") or "")
    exclude = str(options.get("exclude") or "")
    found: list[str] = []
    for current, folders, names in os.walk(folder):
        folders[:] = sorted(name for name in folders if not name.startswith(".")) if recurse else []
        for name in sorted(names):
            path = os.path.join(current, name)
            if not name.endswith((*_MANIFEST_EXTENSIONS, *_JSONNET_EXTENSIONS)) or not _regular(path):
                continue
            relative = os.path.relpath(path, folder).replace(os.sep, "/")
            if exclude and _glob(exclude, relative):
                continue
            if include and not _glob(include, relative):
                continue
            found.append(path)
    return found


def _glob(pattern: str, path: str) -> bool:
    """argo-cd util/glob ``Match`` (gobwas/glob without separators: ``*`` crosses ``/``; ``{a,b}``
    alternatives, at most 256 spellings expanded)."""
    spellings = [pattern]
    while any("{" in spelling for spelling in spellings):
        expanded = []
        for spelling in spellings:
            match = re.match(r"^(.*?)\{([^{}]*)\}(.*)$", spelling)
            if match is None:
                expanded.append(spelling)
                continue
            expanded.extend(match.group(1) + choice + match.group(3) for choice in match.group(2).split(","))
        if len(expanded) > 256 or expanded == spellings:
            return False
        spellings = expanded
    return any(fnmatch.fnmatchcase(path, spelling) for spelling in spellings)


def _directory(unit: str, source: _Source, limits: Limits) -> Rendered | NotRendered:
    from kaffinity.load.parse import parse
    from kaffinity.load.read import read_text

    assert source.folder is not None
    paths = _directory_files(source.folder, _block(source.spec, "directory"))
    if any(path.endswith(_JSONNET_EXTENSIONS) for path in paths):
        return NotRendered("its directory source holds jsonnet, which kaffinity does not evaluate")
    files: list[SourceFile] = []
    for path in paths:
        name, text, problem = read_text(path, limits)
        if problem is not None:
            continue
        parsed = parse(name, text, limits)
        # A file's problems were reported when it was linted; its objects are what Argo applies.
        files.append(SourceFile(parsed.name, parsed.text, parsed.documents, ()))
    return Rendered(unit, None, tuple(files))


def _kustomize_files(folder: str, limits: Limits) -> list[str]:
    """The repository files a kustomize source's build reads objects from (its kustomization's
    closure, :func:`kaffinity.repo.kustomizations.find_kustomizations`): they belong to the Application's
    unit once it is rendered."""
    from kaffinity.repo.kustomizations import closure, find_kustomizations

    found = find_kustomizations([], [folder], limits)
    key = os.path.normpath(folder)
    return list(closure(key, found)) if key in found else []


def _mentions_argo(folder: str) -> bool:
    """Whether a file of the folder (at most 200 files, 1 MiB each, looked at; regular files
    only, never through a symlink) names argoproj.io: then rendering it may produce
    Applications (app of apps)."""
    count = 0
    for current, folders, names in os.walk(folder):
        folders[:] = [name for name in folders if not name.startswith(".")]
        for name in names:
            count += 1
            if count > 200:
                return False
            path = os.path.join(current, name)
            if not name.endswith((".yaml", ".yml", ".json", ".tpl")) or not _regular(path):
                continue
            try:
                with open(path, "rb") as handle:
                    if b"argoproj.io" in handle.read(1 << 20):
                        return True
            except OSError:
                continue
    return False


def _regular(path: str) -> bool:
    """A regular file, not a symlink (nor a FIFO or device, whose reading could block)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


# --- ApplicationSets -----------------------------------------------------------------------------


class _Unevaluated(Exception):
    """A generator or template kaffinity cannot evaluate from the repository alone."""


def _generate(spec: Mapping[str, Any], root: str, limits: Limits) -> Iterator[Mapping[str, Any]]:
    """The Applications an ApplicationSet generates (applicationset/controllers
    ``generateApplications``: each generator's parameter sets, the template rendered with each)."""
    from kaffinity.repo.argo_template import TemplateError, fast_render, go_render, render_value

    template = spec.get("template")
    if not isinstance(template, Mapping):
        raise _Unevaluated("it has no template")
    go = bool(spec.get("goTemplate"))
    missing_error = any("missingkey=error" in str(option) for option in _list(spec.get("goTemplateOptions")))
    generators = spec.get("generators")
    if not isinstance(generators, list) or not generators:
        raise _Unevaluated("it has no generators")
    if spec.get("templatePatch"):
        raise _Unevaluated("its templatePatch is not evaluated by kaffinity")
    count = 0
    for generator in generators:
        if not isinstance(generator, Mapping):
            continue
        local_template = generator.get("template") if isinstance(generator.get("template"), Mapping) else None
        effective = _merge(_plain(template), _plain(local_template)) if local_template else _plain(template)
        for params in _params(generator, root, limits, go, depth=0):
            count += 1
            if count > MAX_GENERATED:
                raise _Unevaluated(f"it generates more than {MAX_GENERATED} Applications")

            def render(text: str, params: Mapping[str, Any] = params) -> str:
                return (
                    go_render(text, params, missing_error=missing_error) if go else fast_render(text, params)
                )

            try:
                application = render_value(effective, render)
            except TemplateError as error:
                raise _Unevaluated(f"its template: {error}") from None
            yield application


def _params(
    generator: Mapping[str, Any], root: str, limits: Limits, go: bool, depth: int
) -> list[dict[str, Any]]:
    if depth > 2:
        raise _Unevaluated("its generators nest deeper than kaffinity evaluates")
    for key in _UNEVALUATED_GENERATORS:
        if key in generator:
            raise _Unevaluated(
                f"its {key} generator needs a cluster or an API, which kaffinity does not query"
            )
    selector = generator.get("selector")
    if isinstance(generator.get("list"), Mapping):
        found = _list_params(generator["list"], go)
    elif isinstance(generator.get("git"), Mapping):
        found = _git_params(generator["git"], root, limits, go)
    elif isinstance(generator.get("matrix"), Mapping):
        found = _matrix_params(generator["matrix"], root, limits, go, depth)
    elif isinstance(generator.get("merge"), Mapping):
        found = _merge_params(generator["merge"], root, limits, go, depth)
    else:
        raise _Unevaluated(
            f"its generator {', '.join(map(str, generator)) or '{}'} is not evaluated by kaffinity"
        )
    if isinstance(selector, Mapping) and selector:
        found = [params for params in found if _selected(selector, params)]
    return found


def _list_params(generator: Mapping[str, Any], go: bool) -> list[dict[str, Any]]:
    """applicationset/generators/list.go: each element; without Go templates, its ``values``
    flattened as ``values.<key>`` and other values as they are."""
    if generator.get("elementsYaml"):
        raise _Unevaluated("its list generator's elementsYaml is not evaluated by kaffinity")
    found = []
    for element in _list(generator.get("elements")):
        if not isinstance(element, Mapping):
            continue
        if go:
            found.append(_plain(element))
            continue
        params: dict[str, Any] = {}
        for key, value in element.items():
            if key == "values" and isinstance(value, Mapping):
                params.update({f"values.{k}": _scalar_text(v) for k, v in value.items()})
            else:
                params[str(key)] = value if isinstance(value, str) else _scalar_text(value)
        found.append(params)
    return found


def _git_params(generator: Mapping[str, Any], root: str, limits: Limits, go: bool) -> list[dict[str, Any]]:
    """applicationset/generators/git.go: directories (``path.Match`` on each folder of the
    repository, ``exclude`` winning) and files (the doublestar glob; each file's object, or each
    item of its list, flattened unless Go templates)."""
    url = str(generator.get("repoURL") or "")
    if not url or this_repository(url, root) is None:
        raise _Unevaluated(f"its git generator reads {url or 'a repository'}, which is not this checkout")
    prefix = str(generator.get("pathParamPrefix") or "")
    values = _mapping(generator.get("values"))
    found: list[dict[str, Any]] = []
    if generator.get("directories"):
        items = [item for item in generator["directories"] if isinstance(item, Mapping)]
        for folder in _all_folders(root):
            included = any(
                _path_match(str(item.get("path", "")), folder) and not item.get("exclude") for item in items
            )
            excluded = any(
                _path_match(str(item.get("path", "")), folder) and item.get("exclude") for item in items
            )
            if included and not excluded:
                found.append(_path_params(folder, None, prefix, go))
    elif generator.get("files"):
        from kaffinity.load.parse import parse_data

        items = [item for item in generator["files"] if isinstance(item, Mapping)]
        files = sorted(
            {
                path
                for path in _all_files(root)
                if any(
                    _doublestar(str(item.get("path", "")), path) and not item.get("exclude") for item in items
                )
                and not any(
                    _doublestar(str(item.get("path", "")), path) and item.get("exclude") for item in items
                )
            }
        )
        for path in files:
            text = _read_confined(os.path.join(root, path), root, limits)
            data, problem = parse_data(text or "")
            if problem is not None or data is None:
                raise _Unevaluated(f"its git files generator cannot read {path}")
            objects = data if isinstance(data, list) else [data]
            for obj in objects:
                if not isinstance(obj, Mapping):
                    continue
                params = _plain(obj) if go else {k: _scalar_text(v) for k, v in _flatten(_plain(obj)).items()}
                params.update(_path_params(posixpath.dirname(path), path, prefix, go))
                found.append(params)
    else:
        raise _Unevaluated("its git generator names neither directories nor files")
    if values:
        from kaffinity.repo.argo_template import fast_render, go_render

        for params in found:
            rendered = {
                str(key): (go_render(str(value), params) if go else fast_render(str(value), params))
                for key, value in values.items()
            }
            if go:
                params["values"] = rendered
            else:
                params.update({f"values.{key}": value for key, value in rendered.items()})
    return found


def _path_params(folder: str, file: str | None, prefix: str, go: bool) -> dict[str, Any]:
    from kaffinity.repo.argo_template import sanitize_name

    base = posixpath.basename(folder)
    if go:
        value: dict[str, Any] = {
            "path": folder,
            "basename": base,
            "basenameNormalized": sanitize_name(base),
            "segments": folder.split("/"),
        }
        if file is not None:
            value["filename"] = posixpath.basename(file)
            value["filenameNormalized"] = sanitize_name(posixpath.basename(file))
        if prefix:
            return {prefix: {"path": value}}
        return {"path": value}
    name = f"{prefix}.path" if prefix else "path"
    params = {name: folder, f"{name}.basename": base, f"{name}.basenameNormalized": sanitize_name(base)}
    if file is not None:
        params[f"{name}.filename"] = posixpath.basename(file)
        params[f"{name}.filenameNormalized"] = sanitize_name(posixpath.basename(file))
    for index, segment in enumerate(folder.split("/")):
        if segment:
            params[f"{name}[{index}]"] = segment
    return params


def _matrix_params(
    generator: Mapping[str, Any], root: str, limits: Limits, go: bool, depth: int
) -> list[dict[str, Any]]:
    """applicationset/generators/matrix.go: two generators; the second rendered with each
    parameter set of the first, the sets merged."""
    from kaffinity.repo.argo_template import fast_render, go_render, render_value

    children = [child for child in _list(generator.get("generators")) if isinstance(child, Mapping)]
    if len(children) != 2:
        raise _Unevaluated("its matrix generator does not have two generators")
    found = []
    for first in _params(children[0], root, limits, go, depth + 1):

        def render(text: str, params: Mapping[str, Any] = first) -> str:
            return go_render(text, params) if go else fast_render(text, params)

        second = render_value(_plain(children[1]), render)
        for other in _params(second, root, limits, go, depth + 1):
            found.append(_merge(first, other) if go else {**first, **other})
            if len(found) > MAX_GENERATED:
                raise _Unevaluated(f"it generates more than {MAX_GENERATED} Applications")
    return found


def _merge_params(
    generator: Mapping[str, Any], root: str, limits: Limits, go: bool, depth: int
) -> list[dict[str, Any]]:
    """applicationset/generators/merge.go: the first generator's sets, each overridden by the
    sets of the others that agree on every ``mergeKeys`` value."""
    keys = [str(key) for key in _list(generator.get("mergeKeys"))]
    children = [child for child in _list(generator.get("generators")) if isinstance(child, Mapping)]
    if not keys or not children:
        raise _Unevaluated("its merge generator has no mergeKeys or generators")
    base = _params(children[0], root, limits, go, depth + 1)
    for child in children[1:]:
        others = _params(child, root, limits, go, depth + 1)
        for index, params in enumerate(base):
            merged = params
            for other in others:
                if all(_lookup(params, key) == _lookup(other, key) for key in keys):
                    merged = _merge(merged, other) if go else {**merged, **other}
            base[index] = merged
    return base


def _lookup(params: Mapping[str, Any], key: str) -> Any:
    if key in params:
        return params[key]
    value: Any = params
    for part in key.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _selected(selector: Mapping[str, Any], params: Mapping[str, Any]) -> bool:
    """A generator's label ``selector`` over its parameter sets (matchLabels; matchExpressions
    In/NotIn/Exists/DoesNotExist)."""
    for key, value in _mapping(selector.get("matchLabels")).items():
        if str(_lookup(params, str(key))) != str(value):
            return False
    for expression in _list(selector.get("matchExpressions")):
        if not isinstance(expression, Mapping):
            return False
        key, operator = str(expression.get("key")), str(expression.get("operator"))
        actual = _lookup(params, key)
        values = [str(value) for value in _list(expression.get("values"))]
        if operator == "In" and str(actual) not in values:
            return False
        if operator == "NotIn" and actual is not None and str(actual) in values:
            return False
        if operator == "Exists" and actual is None:
            return False
        if operator == "DoesNotExist" and actual is not None:
            return False
    return True


#: The walks of a checkout in one call of :func:`releases` (a matrix evaluates its git
#: generator once per parameter set of the other).
_WALKS: dict[tuple[str, str], list[str]] = {}


def _all_folders(root: str) -> list[str]:
    """Every folder of the checkout (relative, ``/``-separated), hidden ones left out, as the
    repo-server's ``GetGitDirectories`` lists them."""
    if ("folders", root) in _WALKS:
        return _WALKS["folders", root]
    found: list[str] = _WALKS.setdefault(("folders", root), [])
    for current, folders, _ in os.walk(root):
        folders[:] = sorted(
            name
            for name in folders
            if not name.startswith(".") and not os.path.islink(os.path.join(current, name))
        )
        for name in folders:
            found.append(os.path.relpath(os.path.join(current, name), root).replace(os.sep, "/"))
    return found


def _all_files(root: str) -> list[str]:
    if ("files", root) in _WALKS:
        return _WALKS["files", root]
    found: list[str] = _WALKS.setdefault(("files", root), [])
    for current, folders, names in os.walk(root):
        folders[:] = sorted(
            name
            for name in folders
            if not name.startswith(".") and not os.path.islink(os.path.join(current, name))
        )
        found.extend(
            os.path.relpath(os.path.join(current, name), root).replace(os.sep, "/") for name in sorted(names)
        )
    return found


def _path_match(pattern: str, path: str) -> bool:
    """Go's ``path.Match``: ``*``, ``?`` and ``[...]`` within one segment."""
    parts, names = pattern.split("/"), path.split("/")
    return len(parts) == len(names) and all(
        fnmatch.fnmatchcase(name, part) for part, name in zip(parts, names, strict=True)
    )


def _doublestar(pattern: str, path: str) -> bool:
    """bmatcuk/doublestar ``Match`` (git files generator): ``**`` spans folders."""
    regex = ""
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            regex += "(?:[^/]*/)*"
            index += 3
        elif pattern.startswith("**", index):
            regex += ".*"
            index += 2
        elif pattern[index] == "*":
            regex += "[^/]*"
            index += 1
        elif pattern[index] == "?":
            regex += "[^/]"
            index += 1
        else:
            regex += re.escape(pattern[index])
            index += 1
    return re.fullmatch(regex, path) is not None


# --- Helm's strvals (--set), the subset Argo's parameters produce -------------------------------


def _strvals_set(base: dict[str, Any], name: str, value: str, *, force_string: bool) -> None:
    """helm.sh/helm/v3 pkg/strvals ``ParseInto`` (``--set``) or ``ParseIntoString``
    (``--set-string``) of ``name=value``: a dotted path, ``\\.`` an escaped dot, ``[i]`` a list
    index (lists grow with nulls), ``{a,b}`` a list; typed scalars unless a string is forced."""
    steps = _strvals_path(name)
    parsed: Any
    if value.startswith("{") and value.endswith("}"):
        parsed = [_typed(item, force_string) for item in value[1:-1].split(",")] if value[1:-1] else []
    else:
        parsed = _typed(value, force_string)
    container: Any = base
    for position, step in enumerate(steps):
        if position == len(steps) - 1:
            _strvals_put(container, step, parsed, name)
            return
        following = steps[position + 1]
        empty: Any = [] if isinstance(following, int) else {}
        current = _strvals_get(container, step, name)
        if not isinstance(current, (dict, list)) or isinstance(following, int) != isinstance(current, list):
            current = empty
            _strvals_put(container, step, current, name)
        container = current


def _strvals_get(container: Any, step: str | int, name: str) -> Any:
    if isinstance(step, int):
        if not isinstance(container, list):
            raise ValueError(f"{name}: not a list")
        return container[step] if step < len(container) else None
    if not isinstance(container, dict):
        raise ValueError(f"{name}: not a map")
    return container.get(step)


def _strvals_put(container: Any, step: str | int, value: Any, name: str) -> None:
    if isinstance(step, int):
        if not isinstance(container, list):
            raise ValueError(f"{name}: not a list")
        container.extend([None] * (step + 1 - len(container)))
        container[step] = value
    elif isinstance(container, dict):
        container[step] = value
    else:
        raise ValueError(f"{name}: not a map")


def _strvals_path(name: str) -> list[str | int]:
    """The steps of a ``--set`` key: ``a.b[0].c`` is ``a``, ``b``, 0, ``c``."""
    steps: list[str | int] = []
    current = ""
    index = 0
    while index < len(name):
        char = name[index]
        if char == "\\" and index + 1 < len(name):
            current += name[index + 1]
            index += 2
            continue
        if char == "[":
            close = name.find("]", index)
            if close < 0 or not name[index + 1 : close].isdigit():
                raise ValueError(f"bad list index in {name}")
            if int(name[index + 1 : close]) > _MAX_INDEX:
                raise ValueError(f"list index in {name} is over {_MAX_INDEX}")
            steps.extend([current] if current else [])
            current = ""
            steps.append(int(name[index + 1 : close]))
            index = close
        elif char == ".":
            steps.extend([current] if current else [])
            current = ""
        else:
            current += char
        index += 1
    steps.extend([current] if current else [])
    if not steps or not isinstance(steps[0], str):
        raise ValueError(f"bad key {name}")
    return steps


#: strvals' bound on a list index (helm pkg/strvals ``MaxIndex``).
_MAX_INDEX = 65536


def _typed(text: str, force_string: bool) -> Any:
    """strvals ``typedVal``: ``true``/``false``, ``null``, ``0`` and integers without a leading
    zero are typed; the rest are strings."""
    if force_string:
        return text
    lowered = text.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    if lowered == "null":
        return None
    if text == "0":
        return 0
    if re.fullmatch(r"-?[1-9]\d*", text) and abs(int(text)) < 2**63:
        return int(text)
    return text


# --- small helpers -------------------------------------------------------------------------------


def _root(doc: Document, sandbox: Sandbox) -> str:
    from kaffinity.repo.sandbox import repository_root

    if sandbox.roots:
        real = os.path.realpath(doc.file)
        for root in sandbox.roots:
            if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
                return root
        return sandbox.roots[0]
    return repository_root(doc.file)


def _default_namespace(outcome: Rendered, namespace: str) -> None:
    """Argo CD applies each namespaced object that names no namespace in
    ``spec.destination.namespace`` (argo-cd controller/sync.go hands it to gitops-engine's
    ``sync.NewSyncContext`` as the namespace of such objects): so are the objects read."""
    from kaffinity.k8s.model import CLUSTER_SCOPED

    for doc in outcome.documents:
        data = doc.data
        if not isinstance(data, dict) or data.get("kind") in CLUSTER_SCOPED:
            continue
        metadata = data.get("metadata")
        if isinstance(metadata, dict) and not metadata.get("namespace"):
            metadata["namespace"] = namespace


def _shown(root: str, like: str) -> str:
    """``root`` relative to the working folder when ``like`` (a document's file) is relative
    and ``root`` is at or below the working folder; else as it is."""
    if os.path.isabs(like):
        return root
    relative = os.path.relpath(root)
    return root if relative == ".." or relative.startswith(".." + os.sep) else relative


def _inside(top: str, relative: str) -> str | None:
    """``top/relative`` when it stays inside ``top`` (kaffinity.repo.sandbox.joined_inside)."""
    from kaffinity.repo.sandbox import joined_inside

    return joined_inside(top, relative)


def _read_confined(path: str | None, top: str, limits: Limits) -> str | None:
    from kaffinity.load.read import read_text

    if path is None or _inside(top, os.path.relpath(path, top)) is None or not os.path.isfile(path):
        return None
    _, text, problem = read_text(path, limits)
    return None if problem is not None else text


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _strings(value: Any) -> list[str]:
    return (
        [str(item) for item in value if isinstance(item, (str, int, float))]
        if isinstance(value, list)
        else []
    )


def _plain(value: Any) -> Any:
    """Kaffinity's positioned data as plain JSON data."""
    return json.loads(json.dumps(value, default=str))


def _scalar_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def _int(value: Any) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """jeremywohl/flatten DotStyle (git files generator): ``a.b.c``, lists as ``a.0``."""
    flat: dict[str, Any] = {}
    items: Sequence[tuple[Any, Any]]
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    else:
        return {prefix: value}
    for key, item in items:
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(item, (Mapping, list)) and item:
            flat.update(_flatten(item, name))
        else:
            flat[name] = item
    return flat


def _merge(base: Any, override: Any) -> Any:
    """Helm's ``mergeMaps`` (pkg/cli/values): maps merged key by key, anything else replaced."""
    if not isinstance(base, dict) or not isinstance(override, dict):
        return override
    merged = dict(base)
    for key, value in override.items():
        merged[key] = _merge(merged[key], value) if isinstance(merged.get(key), dict) else value
    return merged


def _image(entry: str) -> dict[str, str]:
    """``kustomize edit set image`` syntax (Argo's ``images``): ``name=newName:tag``,
    ``name:tag``, ``name@digest``, ``name=newName@digest``."""
    name, _, new = entry.partition("=")
    image: dict[str, str] = {}
    target = new or name
    digest = ""
    if "@" in target:
        target, _, digest = target.partition("@")
    tag = ""
    slash = target.rfind("/")
    colon = target.rfind(":")
    if colon > slash:
        target, tag = target[:colon], target[colon + 1 :]
    if new:
        image["name"] = name.partition(":")[0].partition("@")[0]
        image["newName"] = target
    else:
        image["name"] = target
    if tag:
        image["newTag"] = tag
    if digest:
        image["digest"] = digest
    return image
