"""The Argo CD releases among a repository's objects: Applications in files, and those an app of
apps renders (followed :data:`MAX_DEPTH` deep), each rendered once."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

from kaffinity.load.source import Document
from kaffinity.repo.gitops.argo.application import Application
from kaffinity.repo.gitops.argo.applicationset import WALKS, Unevaluated, generated_applications
from kaffinity.repo.gitops.argo.readers import as_mapping, checkout_root
from kaffinity.repo.gitops.releases import NotRendered, Release, ReleaseInputs
from kaffinity.repo.rendered import Rendered

GROUP = "argoproj.io"
#: Argo CD's own namespace, where Applications live unless they say otherwise.
DEFAULT_NAMESPACE = "argocd"
#: How deep app-of-apps are followed through renders (Applications in files are always found).
MAX_DEPTH = 3
#: Apps of apps rendered to find their children (each at most once; in file order).
MAX_PARENT_RENDERS = 50


def releases(inputs: ReleaseInputs) -> Iterator[Release]:
    """The releases of this kind among ``inputs.documents``: each Application (those generated
    by ApplicationSets and those parents render included) once."""
    finder = _Finder(inputs)
    WALKS.clear()
    for doc in inputs.documents:
        data = doc.data
        if not isinstance(data, Mapping) or not str(data.get("apiVersion", "")).startswith(GROUP + "/"):
            continue
        if data.get("kind") == "Application":
            yield from finder.application(doc, data, depth=0)
        elif data.get("kind") == "ApplicationSet":
            yield from finder.application_set(doc, data)


class _Finder:
    def __init__(self, inputs: ReleaseInputs) -> None:
        self.inputs = inputs
        self.seen: set[tuple[str, str]] = set()
        self.sets: set[tuple[str, str, str]] = set()
        #: Renders done to find the children of an app of apps, before the run's render budget
        #: applies: bounded in number and in time (half the budget).
        self.parents = 0
        self.started = time.perf_counter()

    def application(self, doc: Document, data: Mapping[str, Any], depth: int) -> Iterator[Release]:
        metadata = as_mapping(data.get("metadata"))
        name = str(metadata.get("name") or "")
        namespace = str(metadata.get("namespace") or DEFAULT_NAMESPACE)
        if not name or (namespace, name) in self.seen:
            return
        self.seen.add((namespace, name))
        unit = f"Application {namespace}/{name}"
        app = Application(unit, name, as_mapping(data.get("spec")), doc)
        app.root = checkout_root(doc, self.inputs.sandbox)
        plan = app.plan(self.inputs)
        cache: dict[str, Rendered | NotRendered] = {}

        def render(timeout: float) -> Rendered | NotRendered:
            if "outcome" not in cache:
                cache["outcome"] = app.render(plan, self.inputs, timeout)
            return cache["outcome"]

        # An app of apps is rendered here, to find its children: not cached.
        key = None if plan.children_possible else (lambda: app.cache_key(plan, self.inputs))
        yield Release(unit, "argocd", doc, render, plan.files, plan.note, key=key)
        # App of apps: Applications only this one's render produces.
        if depth < MAX_DEPTH and plan.children_possible and self._may_render_parent():
            self.parents += 1
            outcome = render(self.inputs.sandbox.timeout)
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
        return self.parents < MAX_PARENT_RENDERS and spent < self.inputs.sandbox.budget / 2

    def application_set(self, doc: Document, data: Mapping[str, Any], depth: int = 0) -> Iterator[Release]:
        metadata = as_mapping(data.get("metadata"))
        name = str(metadata.get("name") or "")
        namespace = str(metadata.get("namespace") or DEFAULT_NAMESPACE)
        if ("ApplicationSet", namespace, name) in self.sets:
            return
        self.sets.add(("ApplicationSet", namespace, name))
        unit = f"ApplicationSet {namespace}/{name}"
        spec = as_mapping(data.get("spec"))
        root = checkout_root(doc, self.inputs.sandbox)
        try:
            applications = list(generated_applications(spec, root, self.inputs.limits))
        except Unevaluated as why:
            reason = str(why)
            yield Release(unit, "argocd", doc, lambda _timeout: NotRendered(reason))
            return
        for generated in applications:
            app_meta = dict(generated.get("metadata") or {})
            app_meta.setdefault("namespace", namespace)
            yield from self.application(doc, {**generated, "metadata": app_meta}, depth=depth)
