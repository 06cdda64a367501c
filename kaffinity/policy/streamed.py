"""Policies in the single-object stage: what of a run's policies runs file by file, in the
``--jobs`` workers and through the cache (:mod:`kaffinity.stream`), and what the parent must know
of the input before the stream starts.

A policy check reads one object, and besides it only:

- the object's Namespace (a ``namespaceSelector``, ``namespaceObject``), from the cluster file
  and the linted manifests;
- a ValidatingAdmissionPolicy's params (a binding's ``paramRef``), from the policy files and
  the linted manifests.

Both are found before the stream (:func:`prescan`): the files whose bytes name a Namespace or a
param kind are parsed once more, and their Namespaces and param candidates are what every
worker's check reads (:class:`Known`). Their content is part of the cache's key
(:attr:`PolicyStream.digest`), with the policy files' bytes: a changed policy, binding, param
or Namespace misses every entry. So a policy's check gives, file by file, what it gives on the
whole input (``kube-apiserver`` reads the same: the object, its namespace from the informer, the
params by ``paramRef``: ``staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/
dispatcher.go``).

What needs several objects stays in the engine, on the compact files: a kaffinity Policy
reading the facts (``kaffinity.placement``, ``.neighbours``, ``.findings``, ``.rollout``: the
graph and the placement, :mod:`kaffinity.policy.facts`) whose expression reads nothing of
``object``, ``namespaceObject`` nor ``kaffinity.podTemplate`` (the compact model keeps
everything of a workload but its pod spec's undeclared fields: what the finding points at is
declared in ``Rule.reads``). :func:`plan` says when a run cannot stream its policies, and why:
a policy that reads the facts with the object, a ValidatingAdmissionPolicy reading the facts
or ``authorizer``, a facts policy reading the built-in findings under ``select``/``ignore``/
``severity`` (the single-object stage runs only the enabled rules, at the run's severities), or
Namespaces and params read from the manifests with units (each unit its own namespaces and
params): then the input is read whole, as before.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from kaffinity.policy.expressions import FACTS, references
from kaffinity.policy.known import Known, PolicyStream

if TYPE_CHECKING:
    from kaffinity.config import Settings
    from kaffinity.load.files import ExcludeFn
    from kaffinity.load.source import Document
    from kaffinity.policy.load import Loaded
    from kaffinity.rules.base import Rule
    from kaffinity.simulate.cluster import Cluster

#: The facts a policy run on compact files may read: the typed model's and the engine's.
COMPACT_FACTS = frozenset(
    {"workload", "kind", "namespace", "name", "replicas", "rollout", "neighbours", "placement", "findings"}
)


#: The fields a facts policy's ``fieldPath`` may name to run on compact files: compaction
#: keeps a workload whole but for its pod spec (:mod:`kaffinity.k8s.compact`).
_KEPT_STEPS = frozenset(
    {
        "spec",
        "metadata",
        "name",
        "namespace",
        "labels",
        "annotations",
        "replicas",
        "strategy",
        "updateStrategy",
        "rollingUpdate",
        "maxSurge",
        "maxUnavailable",
        "selector",
        "minReadySeconds",
        "podManagementPolicy",
        "parallelism",
        "completions",
        "schedule",
    }
)


def plan(loaded: Loaded, settings: Settings) -> tuple[frozenset[str], bool, bool, str | None]:
    """The names of the policies that run file by file; whether they read the namespaces, the
    params; and why the run cannot stream its policies (None: it can)."""
    from kaffinity.policy.facts import parts_read

    per_object: set[str] = set()
    namespaces = params = False
    for policy in loaded.policies:
        text = policy.expression or ""
        if policy.expression is None or not references(text, FACTS):
            per_object.add(policy.name)
            namespaces = namespaces or references(text, "namespaceObject")
            continue
        parts = parts_read(text)
        if policy.schema is not None or references(text, "object") or references(text, "namespaceObject"):
            return frozenset(), False, False, f"policy {policy.name} reads the facts and the object"
        if not parts <= COMPACT_FACTS:
            return frozenset(), False, False, f"policy {policy.name} reads kaffinity.podTemplate"
        steps = set(policy.field_path.replace("[", ".").split(".")) if policy.field_path else set()
        if policy.target != "object" or not steps <= _KEPT_STEPS:
            return frozenset(), False, False, f"policy {policy.name} points into the pod spec"
        if "findings" in parts and (settings.select != ("all",) or settings.ignore or settings.severity):
            return (
                frozenset(),
                False,
                False,
                f"policy {policy.name} reads the findings under select/ignore/severity",
            )
    for admission in loaded.admission:
        if not isinstance(settings.units, str):  # each unit admits its objects: not file by file
            return frozenset(), False, False, f"policy {admission.name} runs per unit"
        if admission.kaffinity_only:
            return frozenset(), False, False, f"policy {admission.name} reads the facts"
        texts = [expression.text for expression in _expressions(admission)]
        if any(references(text, "authorizer") for text in texts):
            return frozenset(), False, False, f"policy {admission.name} reads authorizer"
        per_object.add(admission.name)
        own = [binding for binding in loaded.bindings if binding.policy_name == admission.name]
        selectors = [admission.match.namespace_selector] + [
            binding.match.namespace_selector for binding in own if binding.match is not None
        ]
        namespaces = namespaces or any(selector is not None for selector in selectors)
        namespaces = namespaces or any(references(text, "namespaceObject") for text in texts)
        params = params or (
            admission.param_kind is not None and any(binding.param_ref is not None for binding in own)
        )
    # "auto" streams only what has nothing to render (kaffinity.run.workspace.stream): one unit.
    if (namespaces or params) and not isinstance(settings.units, str):
        return frozenset(), False, False, "the policies read namespaces or params, and the input has units"
    return frozenset(per_object), namespaces, params, None


def _expressions(admission: Any) -> Iterable[Any]:
    yield from admission.match_conditions
    yield from admission.variables
    for validation in admission.validations:
        yield validation.expression
        if validation.message_expression is not None:
            yield validation.message_expression
    yield from admission.audit_annotations


def prescan(
    targets: Sequence[tuple[Sequence[str], ExcludeFn | None]],
    settings: Settings,
    loaded: Loaded,
    namespaces: bool,
    params: bool,
    cluster: Callable[[], Cluster | None] = lambda: None,
) -> tuple[Known, list[bytes]]:
    """The Namespaces and param candidates of the files under ``targets`` (each paths and their
    exclusions, in the order the run reads them): only the files whose bytes name a Namespace or
    a param kind are parsed. Also the bytes that make the digest (every file parsed)."""
    from kaffinity.load.files import discover
    from kaffinity.load.read import from_bytes, read_bytes, skipped_by_name

    needles = []
    if namespaces:
        needles.append(b"Namespace")
    if params:
        needles.extend(
            admission.param_kind[1].encode() for admission in loaded.admission if admission.param_kind
        )
    files = []
    digest: list[bytes] = []
    seen: set[tuple[int, int]] = set()
    for paths, excluded in targets:
        for path in discover(paths, excluded, seen, gitignore=settings.gitignore):
            if skipped_by_name(path) is not None:
                continue
            name, raw, problem = read_bytes(path, settings.limits)
            if problem is not None or not any(needle in raw for needle in needles):
                continue
            digest.append(name.encode() + b"\0" + raw)
            files.append(from_bytes(path, name, raw, problem, settings.limits))
    documents = [doc for file in files for doc in file.documents]
    known_namespaces = _namespaces(files, settings, cluster) if namespaces else None
    known_params: tuple[Document, ...] = ()
    if params:
        kinds = {admission.param_kind[1] for admission in loaded.admission if admission.param_kind}
        known_params = tuple(
            doc for doc in documents if isinstance(doc.data, dict) and doc.data.get("kind") in kinds
        )
    return Known(known_namespaces, known_params), digest


def _namespaces(
    files: Sequence[Any], settings: Settings, cluster: Callable[[], Cluster | None]
) -> dict[str, tuple[dict[str, str], dict[str, Any]]]:
    """Each namespace's labels and object as a policy reads them (the cluster file's, then the
    manifests'): :func:`kaffinity.policy.vap.known_namespaces`."""
    from kaffinity.context import Context
    from kaffinity.policy.vap import known_namespaces

    context = Context(list(files), settings, cluster())
    return known_namespaces(context)


def policy_digest(paths: Sequence[str], settings: Settings, more: Iterable[bytes] = ()) -> str:
    """The digest of the policy files' names and bytes (and ``more``: the known objects')."""
    from kaffinity.load.files import load

    hasher = hashlib.blake2b(digest_size=16)
    present = [path for path in paths if os.path.exists(path)]
    files = load(present, limits=settings.limits, gitignore=False, manifests_only=False) if present else []
    for file in files:
        hasher.update(file.name.encode() + b"\0" + file.text.encode() + b"\0")
    if settings.cluster is not None and os.path.exists(settings.cluster):
        from kaffinity.load.read import read_bytes

        # Read as the cluster file itself is (kaffinity.run.workspace.load_cluster): within the
        # file-size limit, a pipe without a writer read as empty (``cluster:`` may come from the
        # repository's own config). Its problem, if any, is load_cluster's to report.
        _, raw, problem = read_bytes(settings.cluster, settings.limits)
        hasher.update(b"cluster\0" + raw + (problem.message.encode() if problem is not None else b""))
    for part in more:
        hasher.update(b"known\0" + part + b"\0")
    return hasher.hexdigest()


#: The rules of each policy stream, made once per process (a worker makes its own).
_MADE: dict[str, list[Rule]] = {}


def per_object_rules(stream: PolicyStream, settings: Settings) -> list[Rule]:
    """The rules of ``stream``'s per-object policies, made once per process."""
    made = _MADE.get(stream.digest)
    if made is None:
        from kaffinity.policy.check import reserved_names
        from kaffinity.policy.load import load_policies

        made = _made(stream, settings, load_policies(stream.paths, reserved_names()))
    return made


def _made(stream: PolicyStream, settings: Settings, loaded: Loaded) -> list[Rule]:
    """The per-object rules of ``stream`` made from ``loaded``, kept for this process."""
    from kaffinity.policy.check import policy_rules
    from kaffinity.policy.guard import reset

    rules, _ = policy_rules(loaded, settings, stream)
    _MADE.clear()  # one stream at a time: those of an earlier run (in-process) are done
    reset()
    made = _MADE[stream.digest] = [rule for rule in rules if rule.name in stream.per_object]
    return made


def stream_policies(
    settings: Settings,
    targets: Sequence[tuple[Sequence[str], ExcludeFn | None]],
    loaded: Loaded | None = None,
    cluster: Callable[[], Cluster | None] = lambda: None,
) -> tuple[PolicyStream | None, str | None]:
    """The run's policies as the single-object stage runs them, or None and why the input must
    be read whole (:func:`plan`). ``loaded``: the policies, read already (a run reads them once)."""
    if loaded is None:
        from kaffinity.policy.check import reserved_names
        from kaffinity.policy.load import load_policies

        loaded = load_policies(settings.policies, reserved_names())
    per_object, namespaces, params, why = plan(loaded, settings)
    if why is not None:
        return None, why
    known, parts = (
        prescan(targets, settings, loaded, namespaces, params, cluster)
        if namespaces or params
        else (Known(), [])
    )
    names = sorted(name.encode() for name in per_object)
    stream = PolicyStream(
        tuple(settings.policies),
        per_object,
        known,
        policy_digest(settings.policies, settings, [*names, *parts]),
    )
    _made(stream, settings, loaded)  # this process's rules (a forked worker's too), from what was read
    return stream, None
