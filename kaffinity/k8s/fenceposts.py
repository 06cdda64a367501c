"""Rolling-update arithmetic: a strategy's maxSurge / maxUnavailable resolved as the controllers
resolve them (``intstr.GetScaledValueFromIntOrPercent``, ``deploymentutil.ResolveFenceposts``,
the DaemonSet and StatefulSet controllers' counts).

Light on purpose (no simulator): ``revision-unscoped`` and ``pdb-blocks-eviction`` use it without
a cluster, and :mod:`kaffinity.simulate.rollout` replays the controllers' steps with it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from kaffinity.k8s import gates as fg
from kaffinity.k8s.model import Workload

_PERCENT = re.compile(r"^(-?\d+)%$")


def scaled(value: int | str | None, total: int, round_up: bool) -> int | None:
    """``intstr.GetScaledValueFromIntOrPercent``: an int as is, ``"N%"`` of ``total`` rounded up
    or down; None for anything else (the API server rejects it; the schema rules report it)."""
    if isinstance(value, int):
        return value
    if not isinstance(value, str):
        return None
    match = _PERCENT.match(value)
    if match is None:
        return None
    percent = int(match.group(1))
    exact = percent * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def _describe(name: str, value: int | str | None, result: int, total: int, rounding: str) -> str:
    if isinstance(value, str):
        return f"{name} {result} ({value} of {total}, rounded {rounding})"
    return f"{name} {result}"


@dataclass(frozen=True, slots=True)
class Budget:
    """A strategy's numbers, resolved against the pod count, and how they were resolved."""

    surge: int
    unavailable: int
    text: str


def _fenceposts(workload: Workload, total: int, unavailable_up: bool) -> Budget | None:
    """maxSurge (rounded up) and maxUnavailable resolved against ``total``, both as written;
    None when the strategy has no rolling update or a value does not resolve."""
    strategy = workload.strategy
    if strategy is None:
        return None
    surge = scaled(strategy.max_surge, total, True)
    unavailable = scaled(strategy.max_unavailable, total, unavailable_up)
    if surge is None or unavailable is None or surge < 0 or unavailable < 0:
        return None
    rounding = "up" if unavailable_up else "down"
    text = ", ".join(
        (
            _describe("maxSurge", strategy.max_surge, surge, total, "up"),
            _describe("maxUnavailable", strategy.max_unavailable, unavailable, total, rounding),
        )
    )
    return Budget(surge, unavailable, text)


def deployment_budget(workload: Workload, replicas: int) -> Budget | None:
    """``deploymentutil.ResolveFenceposts`` (surge rounds up, unavailable down; both 0: 1)."""
    budget = _fenceposts(workload, replicas, False)
    if budget is None:
        return None
    surge, unavailable, text = budget.surge, budget.unavailable, budget.text
    if surge == 0 and unavailable == 0:
        unavailable = 1
        text += " (both 0: the controller takes maxUnavailable 1)"
    # deploymentutil.MaxUnavailable: never more than the replicas.
    return Budget(surge, min(unavailable, replicas), text)


def daemonset_budget(workload: Workload, desired: int) -> Budget | None:
    """``util.SurgeCount`` / ``util.UnavailableCount``: percentages of the nodes that should run
    the pod, both rounded up; unavailable 1 when both are 0 (``updatedDesiredNodeCounts``)."""
    budget = _fenceposts(workload, desired, True)
    if budget is None:
        return None
    if budget.surge == 0 and budget.unavailable == 0 and desired > 0:
        return Budget(0, 1, budget.text + " (both 0: the controller takes maxUnavailable 1)")
    return budget


def statefulset_parallel_gate(version: str, gates: Mapping[str, bool]) -> bool:
    """``MaxUnavailableStatefulSet``: alpha (off) from 1.24, beta and on by default from 1.35."""
    return fg.gate_state(fg.MAX_UNAVAILABLE_STATEFULSET, version, gates).enabled


def statefulset_budget(
    workload: Workload, replicas: int, version: str, gates: Mapping[str, bool]
) -> Budget | None:
    """How many pods a StatefulSet replaces at once: ``maxUnavailable`` (rounded up, at least 1,
    ``getStatefulSetMaxUnavailable``) only with the gate on and ``Parallel`` pods; else 1."""
    strategy = workload.strategy
    if strategy is None:
        return None
    parallel = workload.pod_management_policy == "Parallel"
    if not parallel:
        return Budget(
            0, 1, "podManagementPolicy OrderedReady: one pod at a time, each Running and Ready first"
        )
    if not statefulset_parallel_gate(version, gates):
        return Budget(0, 1, f"one pod at a time (feature gate {fg.MAX_UNAVAILABLE_STATEFULSET} is off)")
    unavailable = scaled(strategy.max_unavailable, replicas, True)
    if unavailable is None:
        return None
    unavailable = max(unavailable, 1)
    return Budget(
        0, unavailable, _describe("maxUnavailable", strategy.max_unavailable, unavailable, replicas, "up")
    )
