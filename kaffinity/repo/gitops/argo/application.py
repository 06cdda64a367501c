"""One Argo CD Application rendered as the repo-server renders it (argo-cd
reposerver/repository/repository.go, ``GenerateManifests``): its sources (``spec.source`` or every
entry of ``spec.sources``), their files found in the checkout or fetched, and each source rendered
by its type -- **helm** (``helmTemplate`` and util/helm ``template``: ``valueFiles``, then
``valuesObject``/``values``, then ``parameters`` as ``--set``), **kustomize** (util/kustomize
``Build``: the Application's fields as a kustomization around the source, as ``kustomize edit``
adds them) or a **directory** of manifests (:mod:`kaffinity.repo.gitops.argo.directory`)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from kaffinity.load.parse import Limits
from kaffinity.load.source import Document
from kaffinity.repo.gitops.argo.directory import (
    directory_files,
    directory_release,
    kustomize_files,
    mentions_argo,
)
from kaffinity.repo.gitops.argo.readers import (
    as_int,
    as_list,
    as_mapping,
    as_strings,
    deep_merge,
    default_namespace,
    image_entry,
    inside_top,
    plain,
    read_confined,
    scalar_text,
    shown_path,
)
from kaffinity.repo.gitops.argo.source import (
    Source,
    git_ref,
    helm_repository_url,
    is_deployed,
    source_block,
    source_kind,
)
from kaffinity.repo.gitops.argo.strvals import strvals_set
from kaffinity.repo.gitops.releases import NotRendered, ReleaseInputs, ReleaseKey, this_repository
from kaffinity.repo.rendered import Rendered
from kaffinity.repo.sandbox import Sandbox

# --- one Application --------------------------------------------------------------------------


@dataclass
class _Plan:
    sources: list[Source]
    files: tuple[str, ...] = ()
    note: str = ""
    children_possible: bool = False


class Application:
    def __init__(self, unit: str, name: str, spec: Mapping[str, Any], doc: Document) -> None:
        self.unit = unit
        self.name = name
        self.spec = spec
        self.doc = doc
        self.root = ""
        #: The Kubernetes version charts render for (ReleaseInputs.kube_version).
        self.kube_version: str | None = None
        destination = as_mapping(spec.get("destination"))
        self.namespace = str(destination.get("namespace") or "") or None

    def _sources(self) -> list[Source]:
        raw = self.spec.get("sources")
        entries = raw if isinstance(raw, list) and raw else [self.spec.get("source")]
        sources = []
        for entry in entries:
            if not isinstance(entry, Mapping):
                continue
            sources.append(
                Source(
                    str(entry.get("repoURL") or ""),
                    str(entry.get("targetRevision") or ""),
                    str(entry.get("path") or "").strip(),
                    str(entry.get("chart") or ""),
                    str(entry.get("ref") or ""),
                    entry,
                )
            )
        return sources

    def plan(self, inputs: ReleaseInputs) -> _Plan:
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
            source.top = shown_path(self.root, self.doc.file)
            # Argo joins the path to the repository's top (Go's filepath.Join: a leading / too).
            folder = inside_top(source.top, source.path.lstrip("/") or ".")
            if folder is None or not os.path.isdir(folder):
                source.missing = NotRendered(
                    f"path {source.path!r} of {source.repo_url} is not in the checkout"
                )
                continue
            source.folder = folder
            kind = source_kind(source)
            if is_deployed(source) and kind == "directory":
                files.extend(directory_files(folder, source_block(source.spec, "directory")))
            elif is_deployed(source) and kind == "kustomize":
                files.extend(kustomize_files(folder, inputs.limits))
            if is_deployed(source) and mentions_argo(folder):
                plan.children_possible = True
        plan.files = tuple(os.path.normpath(path) for path in files)
        return plan

    def render(self, plan: _Plan, inputs: ReleaseInputs, timeout: float) -> Rendered | NotRendered:
        if not plan.sources:
            return NotRendered("it names no source (spec.source or spec.sources)")
        sandbox = inputs.sandbox
        self.kube_version = inputs.kube_version
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
            if not is_deployed(source):
                continue
            outcome = self._render_source(source, refs, inputs.limits, confined, timeout)
            if isinstance(outcome, NotRendered):
                return outcome
            if self.namespace and outcome.ok:
                default_namespace(outcome, self.namespace)
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

    def cache_key(self, plan: _Plan, inputs: ReleaseInputs) -> ReleaseKey | None:
        """What rendering the Application reads (:class:`ReleaseKey`), for one kind only: a
        single Helm source, its chart in the checkout or fetched at an exact ``targetRevision``
        into kaffinity's fetch cache (its files hashed), its ``valueFiles`` (each path resolved as
        :meth:`_value_file` does, a missing one so hashed), no ``fileParameters``; the rest of
        what it reads is the Application's own data (``helm.values``, ``parameters``,
        ``releaseName``, the destination namespace). None -- rendered every run -- for anything
        else: several sources, a git source fetched (a branch moves), a version range, a
        kustomize, directory or plugin source."""
        import copy

        from kaffinity.repo.gitops.releases import checkout_remotes, document_identity
        from kaffinity.repo.semver import is_exact

        if len(plan.sources) != 1:
            return None
        source = plan.sources[0]
        if source.missing is not None or not is_deployed(source) or source.ref:
            return None
        if source.chart:
            if not is_exact(source.revision or None):
                return None
            source = copy.copy(source)  # the plan's own is fetched when it renders
            if _fetch(source, inputs.sandbox) is not None:
                return None
        elif source.folder is None:
            return None
        assert source.folder is not None
        helm = source_block(source.spec, "helm")
        if source_kind(source) != "helm" or as_list(helm.get("fileParameters")):
            return None
        files = []
        for entry in as_strings(helm.get("valueFiles")):
            resolved = self._value_file(entry, source, {})
            if isinstance(resolved, NotRendered):
                return None
            files.append(resolved)
        arguments = {
            "release": "argocd Application",
            **document_identity(self.doc),
            "name": self.name,
            "namespace": self.namespace,
            "chart": source.folder,
            "top": source.top,
            "root": self.root,
            "remotes": list(checkout_remotes(self.root)),
            "kube_version": inputs.kube_version,
        }
        return ReleaseKey(source.folder, tuple(files), (self.doc.file,), arguments)

    def _render_source(
        self,
        source: Source,
        refs: Mapping[str, Source],
        limits: Limits,
        sandbox: Sandbox,
        timeout: float,
    ) -> Rendered | NotRendered:
        assert source.folder is not None
        kind = source_kind(source)
        if kind == "plugin":
            return NotRendered(
                "its source uses a config management plugin, which kaffinity does not run",
                folders=(os.path.normpath(source.folder),),
            )
        if kind == "helm":
            return self._helm(source, refs, limits, sandbox, timeout)
        if kind == "kustomize":
            return self._kustomize(source, limits, sandbox, timeout)
        return directory_release(self.unit, source, limits)

    # helm ------------------------------------------------------------------------------------

    def _helm(
        self,
        source: Source,
        refs: Mapping[str, Source],
        limits: Limits,
        sandbox: Sandbox,
        timeout: float,
    ) -> Rendered | NotRendered:
        from kaffinity.load.parse import parse_data
        from kaffinity.repo.helm.chart import render_chart

        assert source.folder is not None
        helm = source_block(source.spec, "helm")
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
            # Helm merges the values files, then applies each --set onto that deep_merge
            # (pkg/cli/values Options.MergeValues, strvals.ParseInto): the result, as the last
            # values given, is what the chart sees.
            base: dict[str, Any] = {}
            for path in values_files:
                text = read_confined(path, os.path.dirname(path), limits) or ""
                data, _ = parse_data(text)
                if isinstance(data, Mapping):
                    base = deep_merge(base, plain(data))
            for data in objects:
                base = deep_merge(base, data)
            try:
                for name, value, force in sets:
                    strvals_set(base, name, value, force_string=force)
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
        self, helm: Mapping[str, Any], source: Source, refs: Mapping[str, Source]
    ) -> list[str] | NotRendered:
        ignore_missing = bool(helm.get("ignoreMissingValueFiles"))
        values_files: list[str] = []
        for entry in as_strings(helm.get("valueFiles")):
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
        self, helm: Mapping[str, Any], source: Source, refs: Mapping[str, Source], limits: Limits
    ) -> list[tuple[str, str, bool]] | NotRendered:
        """``parameters`` (``--set``, ``--set-string`` with ``forceString``) and
        ``fileParameters`` (``--set-file``), in util/helm ``template``'s order."""
        sets: list[tuple[str, str, bool]] = []
        for parameter in as_list(helm.get("parameters")):
            if isinstance(parameter, Mapping) and parameter.get("name"):
                value = parameter.get("value")
                text = "" if value is None else scalar_text(value)
                sets.append((str(parameter["name"]), text, bool(parameter.get("forceString"))))
        for parameter in as_list(helm.get("fileParameters")):
            if isinstance(parameter, Mapping) and parameter.get("name") and parameter.get("path"):
                path = self._value_file(str(parameter["path"]), source, refs)
                if isinstance(path, NotRendered):
                    return path
                # _value_file kept it inside its repository (this one, a ref's, the chart's).
                content = read_confined(path, os.path.dirname(path), limits)
                if content is None:
                    return NotRendered(f"file parameter {parameter['path']} not found")
                sets.append((str(parameter["name"]), content, True))
        return sets

    def _value_file(self, entry: str, source: Source, refs: Mapping[str, Source]) -> str | NotRendered:
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
        resolved = inside_top(top, os.path.relpath(os.path.join(base, rest.lstrip("/")), top))
        if resolved is None:
            return NotRendered(f"values file {entry} leads outside the repository")
        return resolved

    # kustomize -------------------------------------------------------------------------------

    def _kustomize(
        self, source: Source, limits: Limits, sandbox: Sandbox, timeout: float
    ) -> Rendered | NotRendered:
        from kaffinity.load.manifests import find_kustomization
        from kaffinity.repo.kustomize.build import render_kustomization

        assert source.folder is not None
        if find_kustomization(source.folder) is None:
            return NotRendered(f"its kustomize source {source.path} has no kustomization file")
        options = source_block(source.spec, "kustomize")
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

    def _patches(self, options: Mapping[str, Any], source: Source, limits: Limits) -> list[Any] | NotRendered:
        """``patches``: inline ones as they are; a ``path`` one read (inside the repository)
        and given inline, the wrapper kustomization being elsewhere."""
        assert source.folder is not None
        top = source.top or self.root
        patches = []
        for entry in as_list(options.get("patches")):
            if not isinstance(entry, Mapping):
                continue
            patch = {
                key: plain(value) for key, value in entry.items() if key in ("patch", "target", "options")
            }
            if entry.get("path"):
                path = inside_top(top, os.path.relpath(os.path.join(source.folder, str(entry["path"])), top))
                text = read_confined(path, top, limits)
                if text is None:
                    return NotRendered(f"kustomize patch {entry['path']} not found in the repository")
                patch["patch"] = text
            if "patch" in patch:
                patches.append(patch)
        return patches

    def _components(
        self, options: Mapping[str, Any], source: Source, limits: Limits, sandbox: Sandbox
    ) -> list[str] | NotRendered:
        """``components``: folders in the repository, checked as the overlay is
        (:func:`kaffinity.repo.preflight.check_kustomization`), given by real path."""
        from kaffinity.repo.preflight import check_kustomization

        assert source.folder is not None
        top = source.top or self.root
        components = []
        for entry in as_strings(options.get("components")):
            folder = inside_top(top, os.path.relpath(os.path.join(source.folder, entry), top))
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
            fields["labels"] = [{"pairs": plain(labels), "includeSelectors": False}]
        else:
            fields["commonLabels"] = plain(labels)
    annotations = options.get("commonAnnotations")
    if isinstance(annotations, Mapping) and annotations:
        fields["commonAnnotations"] = plain(annotations)
    images = [image_entry(entry) for entry in as_strings(options.get("images"))]
    if images:
        fields["images"] = images
    replicas = [
        {"name": str(entry.get("name")), "count": as_int(entry.get("count"))}
        for entry in as_list(options.get("replicas"))
        if isinstance(entry, Mapping) and entry.get("name") and as_int(entry.get("count")) is not None
    ]
    if replicas:
        fields["replicas"] = replicas
    return fields


def _inline_values(helm: Mapping[str, Any]) -> list[Any] | NotRendered:
    """``valuesObject``, else ``values`` (a YAML string; an object in old Applications)."""
    from kaffinity.load.parse import parse_data

    inline = helm.get("valuesObject")
    if isinstance(inline, Mapping):
        return [plain(inline)]
    values = helm.get("values")
    if isinstance(values, str) and values.strip():
        data, problem = parse_data(values)
        if problem is not None or not isinstance(data, Mapping):
            return NotRendered("its helm.values is not a YAML mapping")
        return [plain(data)]
    if isinstance(values, Mapping):
        return [plain(values)]
    return []


def _fetch(source: Source, sandbox: Sandbox) -> NotRendered | None:
    """A remote source into the cache (:mod:`kaffinity.repo.fetch`): its folder and top set, or
    why not."""
    from kaffinity.repo.fetch.cache import NotFetched
    from kaffinity.repo.fetch.charts import fetch_chart
    from kaffinity.repo.fetch.git import fetch_git

    if source.chart:
        repository = helm_repository_url(source.repo_url)
        fetched = fetch_chart(repository, source.chart, source.revision or None, sandbox)
    elif source.repo_url:
        fetched = fetch_git(source.repo_url, git_ref(source.revision), sandbox)
    else:
        return NotRendered("a source has no repoURL")
    if isinstance(fetched, NotFetched):
        return NotRendered(fetched.reason, remote=fetched.offline)
    folder = fetched.path if source.chart else inside_top(fetched.path, source.path.lstrip("/") or ".")
    if folder is None or not os.path.isdir(folder):
        return NotRendered(f"path {source.path!r} is not in {source.repo_url} at {fetched.version}")
    source.folder, source.top = folder, fetched.path
    return None
