"""``kaffinity explain`` output: each Pending pod of a capture, why, and what would let it run
(text), or the JSON contract documented in docs/explain.md::

    {"capture": {"file", "nodes", "boundPods", "pendingPods", "notQueued": [{"namespace", "name"}]},
     "pods": [{"namespace", "name", "owner": {"kind", "namespace", "name", "via"} | null,
               "priority", "nominatedNodeName", "queue": 1,
               "outcome": "pending" | "preempts" | "schedulable", "node": "n1" | null,
               "message": "0/6 nodes are available: ...",
               "nodes": [{"plugin", "reason", "count", "nodes": [...]}],
               "rejected": {"n1": {"plugin", "reasons": [...]}},
               "blockers": [{"kind", "reason", "term": {...}, "domains": [...], "nodes": 3,
                             "workloads": [WORKLOAD]}],
               "remedies": [{"kind", "node", "labels", "taints", "allocatable", "like",
                             "workloads": [WORKLOAD], "priority", "preemptionPolicy", "refused"}],
               "sameAs": "namespace/name" | null, "terminating": [WORKLOAD]}]}

    WORKLOAD = {"workload": "Deployment prod/web", "count": 3, "pods": [...], "nodes": [...],
                "budgets": [{"name": "prod/web", "disruptionsAllowed": 0 | null}]}
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from kaffinity.explain.pending_words import in_domains
from kaffinity.explain.wording import name_list
from kaffinity.load.display import escape, utf8_tree

if TYPE_CHECKING:
    from kaffinity.explain.blockers import Blocker, PodGroup
    from kaffinity.explain.remedy import Remedy
    from kaffinity.explain.why import CaptureReport, Explained

#: How many node names a text line lists per reason.
SHOWN_NODES = 5


def _name(each: Explained) -> str:
    ref = each.workload.ref
    return f"{ref.namespace or 'default'}/{ref.name}"


def outcome(each: Explained) -> str:
    if each.waiting:
        return "waiting"
    if each.node is None:
        return "pending"
    return "preempts" if each.victims else "schedulable"


def _group_json(group: PodGroup) -> dict[str, Any]:
    return {
        "workload": group.owner,
        "count": group.count,
        "pods": group.pods,
        "nodes": sorted(group.nodes),
        "budgets": [{"name": name, "disruptionsAllowed": allowed} for name, allowed in group.budgets.items()],
    }


def _blocker_json(blocker: Blocker) -> dict[str, Any]:
    return {
        "kind": blocker.kind,
        "reason": blocker.reason,
        "term": blocker.term,
        "domains": blocker.domains,
        "nodes": blocker.nodes,
        "workloads": [_group_json(group) for group in blocker.groups],
    }


def _remedy_json(remedy: Remedy) -> dict[str, Any]:
    return {
        "kind": remedy.kind,
        "node": remedy.node,
        "labels": remedy.labels,
        "taints": remedy.taints,
        "allocatable": remedy.allocatable,
        "like": remedy.like,
        "workloads": [_group_json(group) for group in remedy.groups],
        "priority": remedy.priority,
        "preemptionPolicy": "PreemptLowerPriority" if remedy.policy else None,
        "refused": remedy.refused,
    }


def _pod_json(each: Explained, queue: int) -> dict[str, Any]:
    from kaffinity.explain.why import plugin_of

    owner = each.owner
    same = each.same_as
    return {
        "namespace": each.workload.ref.namespace or "default",
        "name": each.workload.ref.name,
        "owner": (
            {"kind": owner.kind, "namespace": owner.namespace, "name": owner.name, "via": owner.via}
            if owner is not None
            else None
        ),
        "priority": each.priority,
        "nominatedNodeName": each.nominated,
        "queue": queue,
        "outcome": outcome(each),
        "node": each.node,
        "message": each.message,
        # A replica refused exactly as an earlier one (``sameAs``) leaves its nodes to that one's:
        # 200 Pending replicas on 5,000 nodes would repeat a million entries.
        "nodes": [
            {
                "plugin": group.plugin,
                "reason": group.reason,
                "count": len(group.nodes),
                "nodes": list(group.nodes),
            }
            for group in (each.groups if same is None else ())
        ],
        "rejected": {
            node: {"plugin": plugin_of(reasons[0]) if reasons else "", "reasons": reasons}
            for node, reasons in (each.rejected.items() if same is None else ())
        },
        "blockers": [_blocker_json(blocker) for blocker in each.blockers],
        "remedies": [_remedy_json(remedy) for remedy in each.remedies],
        "sameAs": f"{same.ref.namespace or 'default'}/{same.ref.name}" if same is not None else None,
        "terminating": [_group_json(group) for group in each.terminating],
    }


def render_json(report: CaptureReport, file: str) -> str:
    document = {
        "capture": {
            "file": file,
            "nodes": report.nodes,
            "boundPods": report.bound,
            "pendingPods": report.queued + len(report.skipped),
            "notQueued": [
                {"namespace": pod.ref.namespace or "default", "name": pod.ref.name} for pod in report.skipped
            ],
        },
        "pods": [_pod_json(each, index) for index, each in enumerate(report.explained, start=1)],
    }
    return json.dumps(utf8_tree(document), indent=2) + "\n"


# --- text --------------------------------------------------------------------------------------


def _nodes(names: tuple[str, ...] | list[str]) -> str:
    count = len(names)
    word = "node" if count == 1 else "nodes"
    return f"{count} {word} ({name_list(list(names), SHOWN_NODES)})"


def _group_text(group: PodGroup) -> str:
    pods = name_list(group.pods, total=group.count)
    text = f"{group.owner} ({group.count} pod{'s' if group.count != 1 else ''}: {pods})"
    if group.budgets:
        budgets = ", ".join(
            f"{name}, {allowed} disruption(s) allowed" if allowed is not None else name
            for name, allowed in group.budgets.items()
        )
        text += f", protected by PodDisruptionBudget {budgets}"
        if any(allowed is not None and allowed <= 0 for allowed in group.budgets.values()):
            # DefaultPreemption prefers victims no budget protects, but evicts them anyway
            # (filterPodsWithPDBViolation only orders them; the docs: "Limitations of preemption").
            text += " (evicting it violates the budget)"
    return text


def _term_text(blocker: Blocker) -> str:
    term = blocker.term
    if blocker.kind == "ports":
        return f"host port {', '.join(term['ports'])}"
    selector = term.get("selector") or "{}"
    key = term.get("topologyKey")
    if blocker.kind == "spread":
        counts = ", ".join(f"{domain}: {count}" for domain, count in term["counts"].items())
        return f"spread constraint {selector} on {key}, maxSkew {term['maxSkew']} (pods per domain: {counts})"
    words = {
        "anti-affinity": "its required anti-affinity",
        "existing-anti-affinity": "the required anti-affinity of running pods",
        "affinity": "its required affinity",
    }[blocker.kind]
    return f"{words} {selector} on {key}"


def _blocker_lines(blocker: Blocker) -> list[str]:
    head = f"    {_term_text(blocker)} refuses {blocker.nodes} node(s)"
    key = blocker.term.get("topologyKey")
    where = f" {in_domains(key, blocker.domains)}" if blocker.domains and isinstance(key, str) else ""
    if blocker.kind == "affinity":
        if not blocker.groups:
            return [f"{head}: no running pod matches it"]
        lines = [f"{head}: none of the pods it matches runs{where}; they run elsewhere:"]
    elif blocker.kind == "spread":
        lines = [f"{head}; the pods it counts:"]
    elif blocker.kind == "ports":
        lines = [f"{head}; held by:"]
    else:
        lines = [f"{head}; the pods it selects{where}:"]
    return lines + [f"      {_group_text(group)}" for group in blocker.groups]


def _remedy_text(remedy: Remedy) -> str:
    victims = "; ".join(_group_text(group) for group in remedy.groups)
    if remedy.kind == "preemption":
        return f"preemption: the scheduler evicts {victims} and nominates node {remedy.node}"
    if remedy.kind == "priority":
        asked = f"a priority of {remedy.priority} or more"
        if remedy.policy:
            asked = f"preemptionPolicy PreemptLowerPriority with {asked}"
        return f"{asked}: preemption would evict {victims} on node {remedy.node}"
    if remedy.kind == "move":
        return f"taking {victims} off their node(s): it would run on {remedy.node}"
    if remedy.kind == "tolerate":
        return f"a toleration of {', '.join(remedy.taints)}: it would run on {remedy.node}"
    labels = ", ".join(f"{key}={value}" for key, value in remedy.labels.items())
    resources = ", ".join(f"{key}={value}" for key, value in remedy.allocatable.items())
    parts = [f"labels {labels}" if labels else "", f"allocatable {resources}" if resources else ""]
    if remedy.taints:
        parts.append(f"taints {', '.join(remedy.taints)}")
    shape = "; ".join(part for part in parts if part)
    if remedy.like:
        node = f"a new node like {remedy.like}" + (f" but with {shape}" if shape else "")
    else:
        node = f"a new node with {shape or 'no labels'}"
    if remedy.node is None:
        return f"not even {node}: {', '.join(remedy.refused)}"
    return node


def _pod_text(each: Explained, queue: int, total: int) -> list[str]:
    owner = f", {each.owner}" if each.owner is not None else ""
    nominated = f", nominated to {each.nominated}" if each.nominated else ""
    head = f"{queue}. Pod {_name(each)} (priority {each.priority}{owner}{nominated})"
    if each.node is not None and not each.victims:
        return [
            f"{head}: kaffinity's scheduler places it on {each.node} now "
            "(the capture may predate its binding)"
        ]
    lines = [f"{head}: Pending", f"  FailedScheduling: {each.message}"]
    if each.groups:
        lines.append("  nodes refused:")
        lines += [
            f"    {group.plugin or '?'}: {group.reason}: {_nodes(group.nodes)}" for group in each.groups
        ]
    if each.waiting:
        victims = "; ".join(_group_text(group) for group in each.terminating)
        lines.append(
            f"  waiting: preemption nominated node {each.nominated} and its victims are still terminating "
            f"there ({victims}); it runs there once they are gone"
        )
        return lines
    if each.same_as is not None:
        same = each.same_as.ref
        lines.append(f"  the same as {same.namespace or 'default'}/{same.name} above")
        return lines
    if each.blockers:
        lines.append("  behind it:")
        for blocker in each.blockers:
            lines += _blocker_lines(blocker)
    if each.remedies:
        lines.append("  it would run with:")
        lines += [f"    - {_remedy_text(remedy)}" for remedy in each.remedies]
    return lines


def render_text(report: CaptureReport) -> str:
    lines: list[str] = []
    for index, each in enumerate(report.explained, start=1):
        lines += _pod_text(each, index, len(report.explained))
        lines.append("")
    if report.skipped:
        names = [f"{pod.ref.namespace or 'default'}/{pod.ref.name}" for pod in report.skipped]
        lines.append(
            f"not in kube-scheduler's queue (another scheduler, or scheduling gates): {name_list(names)}"
        )
    pending = len(report.pending)
    placed = len(report.explained) - pending
    lines.append(
        f"{len(report.explained)} Pending pod(s) explained on {report.nodes} node(s) "
        f"with {report.bound} bound pod(s)" + (f"; {placed} would be placed now" if placed else "")
    )
    return "\n".join(escape(line) for line in lines) + "\n"
