"""What a change can reach (``lint --changed``): the namespaces whose objects the cross-object
stage needs to report on a change exactly as a run over the whole repository does.

A pre-commit run reads the whole repository as context, but it reports only the findings of the
changed files and of the objects a changed object relates to (:mod:`kaffinity.graph.changes`).
Those findings read, of the other objects, only the pods that a term, a spread constraint or a
budget selects, and the objects of their own namespace (budgets, autoscalers, Services, the
pods they count): in Kubernetes every relation between namespaced objects stays in one
namespace but a pod (anti-)affinity term's, which reaches the namespaces its ``namespaces`` and
``namespaceSelector`` name (kube-scheduler's ``framework.AffinityTerm``: the term's namespaces,
or all those its namespace selector matches; its own when it names none).

So the cross-object stage runs on the namespaces closed under those terms, and on every
cluster-scoped object (Namespaces, Nodes, PriorityClasses...). From the namespaces of the changed
objects (now and at ``HEAD``), until nothing is added:

- a term of an object kept reaches namespaces: each of them that holds a pod its label selector
  may select is kept (what the term selects is then whole);
- a term of an object elsewhere may select a pod kept: that object's namespace is kept (the
  object may be related to the change, and its findings then need what it selects).

"May select" over-approximates: only the selector's ``matchLabels`` are compared (the
``matchExpressions``, ``matchLabelKeys`` and ``mismatchLabelKeys`` only narrow it), the
controller's run-time labels (``pod-template-hash``...) match any value, and a term with a
``namespaceSelector`` reaches every namespace. A larger closure costs time, never a finding.

What is not a built-in workload, PodTemplate or Pod and has a pod template (the custom
workload kinds kaffinity knows or is told of) makes the whole repository the scope: their
templates are not read here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kaffinity.config import Settings
    from kaffinity.load.source import Document

_TERMS = ("podAffinity", "podAntiAffinity")
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

#: A term's reach: None for every namespace, else the namespaces it names.
_Scope = "frozenset[str] | None"


class _Whole(Exception):
    """The change's reach is not worked out here: the whole repository is the scope."""


def reached(
    documents: Sequence[Document], changed: Iterable[Document], settings: Settings
) -> set[int] | None:
    """The ids of the ``documents`` the cross-object stage needs for the change whose documents
    (new and previous versions) are ``changed``: those of the namespaces the change reaches,
    and every cluster-scoped one; None: all of them."""
    try:
        return _reached(documents, list(changed), settings)
    except _Whole:
        return None


def _reached(documents: Sequence[Document], changed: list[Document], settings: Settings) -> set[int] | None:
    from kaffinity.expand.merge import CONTROLLER_LABELS

    if settings.workload_kinds:
        raise _Whole
    derived = frozenset(CONTROLLER_LABELS)
    default = settings.namespace
    kept: set[str] = set()
    for doc in changed:
        namespace = _namespace(doc.data, default)
        if namespace is not None:
            kept.add(namespace)
    if not kept:
        return None
    pods: dict[str, list[Mapping[str, Any]]] = {}
    terms: list[tuple[str, frozenset[str] | None, Mapping[str, Any]]] = []
    homes: list[str | None] = []
    for doc in (*documents, *changed):
        data = doc.data
        namespace = _namespace(data, default)
        homes.append(namespace)
        if namespace is None:
            continue
        for labels, spec in _templates(data):
            pods.setdefault(namespace, []).append(labels)
            for scope, selector in _cross_terms(spec):
                terms.append((namespace, scope, selector))
    _close(kept, pods, terms, derived)
    return {
        id(doc)
        for doc, namespace in zip(documents, homes, strict=False)
        if namespace is None or namespace in kept
    }


def _close(
    kept: set[str],
    pods: Mapping[str, list[Mapping[str, Any]]],
    terms: Sequence[tuple[str, frozenset[str] | None, Mapping[str, Any]]],
    derived: frozenset[str],
) -> None:
    """Add to ``kept`` what the cross-namespace ``terms`` (owner's namespace, reach, selector)
    of its objects may select, and the namespaces of the terms that may select its pods, until
    nothing is added."""
    while True:
        before = len(kept)
        for owner, scope, selector in terms:
            if owner in kept:
                for namespace in pods if scope is None else scope:
                    if namespace not in kept and _may_select(selector, pods.get(namespace, ()), derived):
                        kept.add(namespace)
            elif any(
                _may_select(selector, pods.get(namespace, ()), derived)
                for namespace in (kept if scope is None else scope & kept)
            ):
                kept.add(owner)
        if len(kept) == before:
            return


def _namespace(data: Mapping[str, Any], default: str) -> str | None:
    """The namespace of an object; None for a cluster-scoped one (kept whatever the change)."""
    from kaffinity.k8s.model.kinds import CLUSTER_SCOPED

    kind = data.get("kind")
    if not isinstance(kind, str) or kind in CLUSTER_SCOPED:
        return None
    metadata = data.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, Mapping) else None
    return namespace if isinstance(namespace, str) and namespace else default


def _templates(data: Mapping[str, Any]) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """The pod templates of an object: (labels, pod spec)."""
    from kaffinity.k8s.model.kinds import WORKLOAD_KINDS, custom_workload_kind

    kind = data.get("kind")
    spec = data.get("spec")
    template: Any = None
    if kind == "Pod":
        template = data
    elif kind == "PodTemplate":
        template = data.get("template")
    elif kind in WORKLOAD_KINDS or kind in ("ReplicaSet", "ReplicationController"):
        if kind == "CronJob":
            job = spec.get("jobTemplate") if isinstance(spec, Mapping) else None
            spec = job.get("spec") if isinstance(job, Mapping) else None
        template = spec.get("template") if isinstance(spec, Mapping) else None
    elif custom_workload_kind(data) is not None:
        raise _Whole
    if not isinstance(template, Mapping):
        return
    metadata, pod = template.get("metadata"), template.get("spec")
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    yield (labels if isinstance(labels, Mapping) else {}), (pod if isinstance(pod, Mapping) else {})


def _cross_terms(spec: Mapping[str, Any]) -> Iterator[tuple[frozenset[str] | None, Mapping[str, Any]]]:
    """The (anti-)affinity terms of a pod spec that reach other namespaces: (their namespaces,
    None for all; their label selector)."""
    affinity = spec.get("affinity")
    if not isinstance(affinity, Mapping):
        return
    for name in _TERMS:
        block = affinity.get(name)
        if not isinstance(block, Mapping):
            continue
        for term in _terms(block):
            names = term.get("namespaces")
            if term.get("namespaceSelector") is not None:
                scope: frozenset[str] | None = None
            elif isinstance(names, list) and names:
                scope = frozenset(item for item in names if isinstance(item, str))
            else:
                continue  # its own namespace: kept with it
            selector = term.get("labelSelector")
            yield scope, selector if isinstance(selector, Mapping) else {}


def _terms(block: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    required, preferred = block.get(_REQUIRED), block.get(_PREFERRED)
    for term in required if isinstance(required, list) else ():
        if isinstance(term, Mapping):
            yield term
    for weighted in preferred if isinstance(preferred, list) else ():
        term = weighted.get("podAffinityTerm") if isinstance(weighted, Mapping) else None
        if isinstance(term, Mapping):
            yield term


def _may_select(
    selector: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], derived: frozenset[str]
) -> bool:
    """Whether ``selector`` may select one of ``pods`` (their template labels): its
    ``matchLabels`` all agree, a label the controller sets agreeing with any value."""
    wanted = selector.get("matchLabels")
    pairs = [
        (key, str(value))
        for key, value in (wanted.items() if isinstance(wanted, Mapping) else ())
        if key not in derived
    ]
    return any(all(str(labels.get(key)) == value for key, value in pairs) for labels in pods)
