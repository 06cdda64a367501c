"""``kaffinity``: what only kaffinity knows of an object, as one CEL variable for its policies.

A kaffinity Policy's expression (and a ValidatingAdmissionPolicy annotated
``policy.kaffinity.io/kaffinity-only: "true"``) may read, besides ``object``, the variable
``kaffinity`` (``schemas/facts.schema.json`` documents it field by field):

- ``workload``: whether kaffinity models the object as a workload (the rest is empty if not);
- ``kind``, ``namespace``, ``name``, ``replicas`` (the pods it runs at once, API defaults applied);
- ``podTemplate``: the pod template as the pods are created: the API's defaults
  (:mod:`kaffinity.k8s.defaults`) and the selectors kube-apiserver or the scheduler merge from
  ``matchLabelKeys`` / ``mismatchLabelKeys`` (:mod:`kaffinity.expand.merge`);
- ``rollout``: the strategy's ``maxSurge`` / ``maxUnavailable`` resolved to pod counts as the
  controller resolves them (:mod:`kaffinity.k8s.fenceposts`), or null;
- ``neighbours``: the PodDisruptionBudgets and HorizontalPodAutoscalers that target it, the
  workloads its affinity terms and spread constraints match (``matches``) and those whose terms
  match it (``matchedBy``), as ``Kind/namespace/name``;
- ``placement``: on the declared cluster (``--cluster``), each replica's node and zone (null
  while Pending), the distinct ``nodes`` and ``zones`` used and the ``pending`` count; null
  without a cluster;
- ``findings``: the built-in rules' findings on the object, ``{rule, severity, line, message}``:
  every built-in rule's, whatever ``select``/``ignore`` say, with its own severity, before
  suppressions (the facts do not change with the run's settings).

These facts exist only in kaffinity: a policy that reads them cannot run in a cluster. Each part
is computed only when the expression reads it (``kaffinity.placement`` places the pods on the
declared cluster), once per run; ``kaffinity.findings`` are those the engine recorded, which runs
the built-in rules first (:mod:`kaffinity.engine.run`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from kaffinity.k8s.defaults import plain, pod_spec
from kaffinity.k8s.labels import ZONE
from kaffinity.k8s.model import Workload
from kaffinity.k8s.model.readers import dig
from kaffinity.load.source import Document

if TYPE_CHECKING:
    from kaffinity.context import Context

#: The top-level facts, in the order of the schema.
PARTS = (
    "workload",
    "kind",
    "namespace",
    "name",
    "replicas",
    "podTemplate",
    "rollout",
    "neighbours",
    "placement",
    "findings",
)


class _Facts:
    """What the facts of one context share: the workloads by document, the built-in findings."""

    def __init__(self, context: Context) -> None:
        self.workloads = {id(w.doc): w for w in context.inventory.every_workload}
        self._found: dict[int, list[dict[str, Any]]] | None = None
        self.context = context

    def found(self, doc: Document) -> list[dict[str, Any]]:
        if self._found is None:
            self._found = _builtin_findings(self.context)
        return self._found.get(id(doc), [])


def parts_read(text: str) -> frozenset[str]:
    """The facts an expression reads: ``kaffinity.placement`` -> placement; ``kaffinity`` used
    whole (passed on, indexed) -> all of them."""
    named = set(re.findall(r"(?<![\w.])kaffinity\s*\.\s*\??\s*(\w+)", text))
    whole = len(re.findall(r"(?<![\w.])kaffinity\b", text)) > len(
        re.findall(r"(?<![\w.])kaffinity\s*\.", text)
    )
    return frozenset(PARTS) if whole else frozenset(named & set(PARTS))


def facts(context: Context, doc: Document, parts: Collection[str] = PARTS) -> dict[str, Any]:
    """The ``kaffinity`` variable for the object of ``doc``: the ``parts`` asked for computed,
    the others null."""
    run = context.memo.get("policy.facts.run", lambda: _Facts(context))
    out: dict[str, Any] = dict.fromkeys(PARTS)
    workload = run.workloads.get(id(doc))
    out["workload"] = workload is not None
    if "findings" in parts:
        out["findings"] = run.found(doc)
    if workload is None:
        return out
    ref = workload.ref
    out.update(kind=ref.kind, namespace=ref.namespace or "", name=ref.name, replicas=workload.replicas)
    computed = {
        "podTemplate": pod_template,
        "rollout": rollout,
        "neighbours": neighbours,
        "placement": placement,
    }
    for part, compute in computed.items():
        if part in parts:
            out[part] = compute(context, workload)
    return out


def _builtin_findings(context: Context) -> dict[int, list[dict[str, Any]]]:
    """Every built-in rule's findings, by id() of their document, as the engine recorded them in
    the run state (:class:`kaffinity.context.RunState`): it runs the built-in rules before the
    policies, and those the settings leave out too when a policy reads the findings
    (``Rule.reads_findings``), for the facts only."""
    found: dict[int, list[dict[str, Any]]] = {}
    for key, items in context.run.found.items():  # a unit's copy of a rule may find the same twice
        unique = {(i["rule"], i["line"], i["message"]): i for i in items}
        found[key] = sorted(unique.values(), key=lambda i: (i["line"], i["rule"], i["message"]))
    return found


def pod_template(context: Context, workload: Workload) -> dict[str, Any] | None:
    """The template as the pods are created: defaults applied, label keys merged."""
    from kaffinity.expand.preview import selector_json

    template = dig(workload.doc.data, workload.template_path) if workload.template_path else workload.doc.data
    if not isinstance(template, Mapping):
        return None
    out: dict[str, Any] = plain(
        {"metadata": template.get("metadata") or {}, "spec": template.get("spec") or {}}
    )
    if isinstance(out["spec"], dict):
        pod_spec(out["spec"])
    base = len(workload.template_path)
    for term in context.expansions.of(workload).terms:
        if term.merged is None or not term.applied:
            continue
        holder = dig(out, term.path[base:])
        if isinstance(holder, dict):
            holder["labelSelector"] = selector_json(term.merged)
    return out


def rollout(context: Context, workload: Workload) -> dict[str, Any] | None:
    """The rolling update's numbers as pod counts (null without a rolling update)."""
    from kaffinity.k8s import fenceposts

    strategy = workload.strategy
    if strategy is None:
        return None
    replicas = workload.replicas
    budget = None
    if workload.ref.kind == "Deployment" and replicas is not None:
        budget = fenceposts.deployment_budget(workload, replicas)
    elif workload.ref.kind == "StatefulSet" and replicas is not None:
        budget = fenceposts.statefulset_budget(
            workload, replicas, context.settings.kube_version, context.settings.feature_gates
        )
    elif workload.ref.kind == "DaemonSet":
        nodes = len(context.cluster.nodes) if context.cluster is not None else None
        budget = fenceposts.daemonset_budget(workload, nodes) if nodes else None
    if budget is None:
        return {"type": strategy.type, "maxSurge": None, "maxUnavailable": None}
    return {"type": strategy.type, "maxSurge": budget.surge, "maxUnavailable": budget.unavailable}


def neighbours(context: Context, workload: Workload) -> dict[str, list[str]]:
    """Budgets, autoscalers and the workloads related by terms, as ``Kind/namespace/name``."""
    graph = context.graph
    vertex = next((m.id for m in graph.workloads() if m.workload is workload), None)
    pdbs: set[str] = set()
    matches: set[str] = set()
    matched_by: set[str] = set()
    if vertex is not None:
        for relation in graph.relations:
            if relation.owner == vertex:
                matches.update(_named(graph, other) for other in relation.matches if other != vertex)
            elif vertex in relation.matches:
                if relation.owner in graph.pdbs:
                    pdbs.add(str(graph.pdbs[relation.owner].ref))
                else:
                    matched_by.add(_named(graph, relation.owner))
    hpas = sorted(
        f"HorizontalPodAutoscaler/{workload.ref.namespace}/{dig(doc.data, ('metadata', 'name'))}"
        for doc in context.documents
        if isinstance(doc.data, Mapping)
        and doc.data.get("kind") == "HorizontalPodAutoscaler"
        and dig(doc.data, ("spec", "scaleTargetRef", "kind")) == workload.ref.kind
        and dig(doc.data, ("spec", "scaleTargetRef", "name")) == workload.ref.name
        and (dig(doc.data, ("metadata", "namespace")) or context.settings.namespace) == workload.ref.namespace
    )
    return {"pdbs": sorted(pdbs), "hpas": hpas, "matches": sorted(matches), "matchedBy": sorted(matched_by)}


def _named(graph: Any, vertex: str) -> str:
    member = graph.members.get(vertex)
    return str(member) if member is not None else vertex


def placement(context: Context, workload: Workload) -> dict[str, Any] | None:
    """Where each replica went on the declared cluster (null without one)."""
    run = context.placement
    if run is None:
        return None
    nodes = {node.name: node for node in run.sim.nodes}
    replicas = []
    for placed in run.by_workload.get(id(workload), ()):
        node = nodes.get(placed.node) if placed.node is not None else None
        zone = node.labels.get(ZONE) if node is not None else None
        replicas.append({"node": placed.node, "zone": zone})
    return {
        "replicas": replicas,
        "nodes": sorted({r["node"] for r in replicas if r["node"] is not None}),
        "zones": sorted({r["zone"] for r in replicas if r["zone"] is not None}),
        "pending": sum(1 for r in replicas if r["node"] is None),
    }
