"""``kaffinity place`` output: one line per pod (text), or the JSON contract.

JSON (documented in docs/simulation.md, tested as a contract)::

    {"nodes": ["n1", ...],
     "pods": [{"unit": "" | "overlays/prod",
               "object": {"apiVersion", "kind", "namespace", "name"}, "replica": 0,
               "node": "n2" | null, "feasible": ["n1", "n2"], "rejected": {"n3": ["reason", ...]},
               "victims": [{"namespace", "name", "node"}], "added": "general-a-3" | null}],
     "added": [{"node": "general-a-3", "pool": "general", "kind": "ClusterTopology" | "NodePool"}]}

``feasible``: the nodes that pass every enabled filter when that pod is placed; ``rejected``:
every other node with the reasons of the first filter it failed. ``victims``: the pods
preemption evicted for it; ``added``: the node the autoscaler added for it (and, at the top, every
node autoscaling added, in order).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kaffinity.load.display import escape, quote_name, utf8_tree
from kaffinity.simulate.framework.types import Placement
from kaffinity.simulate.place import PlacementRun
from kaffinity.simulate.plugins.nodename import REASON_NODE_NAME


def _object(placement: Placement) -> dict[str, Any]:
    ref = placement.pod.workload.ref
    return {"apiVersion": ref.api_version, "kind": ref.kind, "namespace": ref.namespace, "name": ref.name}


def render_json(run: PlacementRun, units: Sequence[tuple[str, PlacementRun]] = ()) -> str:
    """``units``: (name, run) of each deployment unit when the input holds several; each pod
    then names its unit (``"unit"``), and the units are placed on the cluster one at a time."""
    runs = units or [("", run)]
    pods = [
        {
            "unit": unit,
            "object": _object(placement),
            "replica": placement.pod.replica,
            "node": placement.node,
            "feasible": placement.feasible or [],
            "rejected": placement.rejected or {},
            "victims": [
                {"namespace": victim.namespace, "name": victim.name, "node": node.name}
                for victim, node in placement.victims
            ],
            "added": placement.added[0].name if placement.added else None,
        }
        for unit, each in runs
        for placement in each.placements
    ]
    added = [
        {"node": node.name, "pool": pool.name, "kind": pool.kind}
        for _, each in runs
        for node, pool in each.sim.added
    ]
    nodes = [node.name for node in run.sim.nodes]
    document = utf8_tree({"nodes": nodes, "pods": pods, "added": added})
    return json.dumps(document, indent=2) + "\n"


def _how(placement: Placement) -> str:
    """`` (new node of pool general)``, `` (preempting ns/a on n1, ...)``; "" when simply placed."""
    if placement.added is not None:
        return f" (new node of {placement.added[1].word})"
    if placement.victims:
        names = ", ".join(f"{victim.namespace}/{victim.name}" for victim, _ in placement.victims)
        return f" (preempting {names})"
    return ""


def render_text(run: PlacementRun, units: Sequence[tuple[str, PlacementRun]] = ()) -> str:
    if units:
        return "".join(f"== unit {escape(name)} ==\n{render_text(each)}" for name, each in units)
    total = len(run.sim.nodes)
    lines = []
    for placement in run.placements:
        pod = placement.pod
        span = pod.workload.doc.span
        where = f"{quote_name(pod.workload.doc.file)}:{span.line}:{span.column}"
        who = escape(f"{pod.workload.ref} replica {pod.replica}")
        if placement.node is not None:
            lines.append(f"{where}: {who} -> {escape(placement.node)}{escape(_how(placement))}")
        elif pod.constraints.node_name:
            # spec.nodeName: no scheduler involved, the node's kubelet refuses the pod
            # The other nodes' "didn't match the requested node name" says nothing here.
            own = sorted(reason for reason in placement.reasons or () if reason != REASON_NODE_NAME)
            reasons = ", ".join(own) or "no such node"
            named = escape(pod.constraints.node_name)
            lines.append(f"{where}: {who} rejected (spec.nodeName {named}): {escape(reasons)}")
        else:
            why = f" (no scale-up: {placement.no_scale_up})" if placement.no_scale_up else ""
            lines.append(f"{where}: {who} Pending: {escape(placement.summary(total) + why)}")
    pending = len(run.pending)
    grown = len(run.sim.added)
    lines.append(
        f"{len(run.placements) - pending} pod(s) placed, {pending} Pending, on {total} node(s)"
        + (f" ({grown} added by autoscaling)" if grown else "")
        + (f" ({len(run.existing)} existing pod(s))" if run.existing else "")
    )
    return "\n".join(lines) + "\n"
