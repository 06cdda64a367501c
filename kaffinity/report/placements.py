"""``kaffinity place`` output: one line per pod (text), or the JSON contract.

JSON (documented in docs/simulation.md, tested as a contract)::

    {"nodes": ["n1", ...],
     "pods": [{"unit": "" | "overlays/prod",
               "object": {"apiVersion", "kind", "namespace", "name"}, "replica": 0,
               "node": "n2" | null, "feasible": ["n1", "n2"], "rejected": {"n3": ["reason", ...]}}]}

``feasible``: the nodes that pass every enabled filter when that pod is placed; ``rejected``:
every other node with the reasons of the first filter it failed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kaffinity.display import escape, quote_name, utf8_tree
from kaffinity.place import PlacementRun
from kaffinity.simulate import Placement


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
        }
        for unit, each in runs
        for placement in each.placements
    ]
    document = utf8_tree({"nodes": [node.name for node in run.sim.nodes], "pods": pods})
    return json.dumps(document, indent=2) + "\n"


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
            lines.append(f"{where}: {who} -> {escape(placement.node)}")
        else:
            lines.append(f"{where}: {who} Pending: {escape(placement.summary(total))}")
    pending = len(run.pending)
    lines.append(
        f"{len(run.placements) - pending} pod(s) placed, {pending} Pending, on {total} node(s)"
        + (f" ({len(run.existing)} existing pod(s))" if run.existing else "")
    )
    return "\n".join(lines) + "\n"
