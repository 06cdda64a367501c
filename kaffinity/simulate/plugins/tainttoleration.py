"""TaintToleration (``pkg/scheduler/framework/plugins/tainttoleration``).

Filter: the first NoSchedule / NoExecute taint no toleration tolerates
(``v1helper.TolerationsTolerateTaint``); PreferNoSchedule only scores. Score: fewer untolerated
PreferNoSchedule taints first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kaffinity.k8s import gates as fg
from kaffinity.k8s.model import Taint, Toleration
from kaffinity.simulate.framework.types import Constraints, SimNode

if TYPE_CHECKING:
    from kaffinity.simulate.framework.snapshot import Snapshot

BLOCKING = ("NoSchedule", "NoExecute")
_NO_EXECUTE = ("NoExecute",)


def blocking_effects(constraints: Constraints) -> tuple[str, ...]:
    """The taint effects that keep a pod off a node: NoSchedule and NoExecute for the scheduler
    (TaintToleration); NoExecute alone for a pod with ``spec.nodeName``, which the kubelet admits
    (pkg/kubelet/lifecycle/predicate.go)."""
    return _NO_EXECUTE if constraints.node_name else BLOCKING


def taint_reason(taint: Taint, version: str) -> str:
    """TaintToleration's reason: the taint is named up to 1.34 (kubernetes#134740 dropped it)."""
    if fg.minor(version) >= 35:
        return "node(s) had untolerated taint(s)"
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


def tolerates(toleration: Toleration, taint: Taint, comparison: bool = False) -> bool:
    """``Toleration.ToleratesTaint`` (core/v1 helpers); Gt/Lt (KEP-5471) when its gate is on."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    operator = toleration.operator or "Equal"
    if operator == "Equal":
        return toleration.value == taint.value
    if operator == "Exists":
        return True
    if comparison and operator in ("Gt", "Lt"):
        have, want = _integer(taint.value), _integer(toleration.value)
        if have is None or want is None:
            return False
        return have > want if operator == "Gt" else have < want
    return False


def _integer(text: str) -> int | None:
    try:
        return int(text, 10)
    except ValueError:
        return None


# --- pods and nodes --------------------------------------------------------------------------


def untolerated(
    tolerations: Sequence[Toleration],
    taints: Sequence[Taint],
    comparison: bool,
    effects: tuple[str, ...] = BLOCKING,
) -> Taint | None:
    """The first NoSchedule / NoExecute taint nothing tolerates (``FindMatchingUntoleratedTaint``)."""
    for taint in taints:
        if taint.effect not in effects:
            continue
        if not any(tolerates(t, taint, comparison) for t in tolerations):
            return taint
    return None


def filter_node(
    constraints: Constraints,
    node: SimNode,
    version: str,
    comparison: bool,
    effects: tuple[str, ...] = BLOCKING,
) -> str | None:
    """Filter: the reason for the first taint of ``effects`` the pod does not tolerate."""
    taint = untolerated(constraints.tolerations, node.taints, comparison, effects)
    if taint is not None:
        return taint_reason(taint, version)
    return None


def score(sim: Snapshot, constraints: Constraints) -> dict[SimNode, int]:
    """Untolerated PreferNoSchedule taints per node (TaintToleration Score; nonzero only)."""
    key = constraints.signature()[-1]  # the tolerations
    found = sim.taint_scores.get(key)
    if found is None:
        found = {}
        for node in sim.prefer_tainted:
            count = sum(
                1
                for taint in node.taints
                if taint.effect == "PreferNoSchedule"
                and not any(tolerates(t, taint, sim.comparison) for t in constraints.tolerations)
            )
            if count:
                found[node] = count
        sim.taint_scores[key] = found
    return found
