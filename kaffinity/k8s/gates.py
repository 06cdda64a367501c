"""Feature gates of the scheduling fields, per Kubernetes minor version.

Defaults follow kubernetes ``pkg/features/kube_features.go`` (the versioned feature specs); see
docs/validation.md for the gates' history. Only gates that change how kaffinity's
fields are validated, stored or merged are modelled; a gate name close to one of them is taken
for a typo, any other name is accepted and ignored (it does not concern scheduling fields).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Stage:
    since: str  # first minor version of this stage
    stage: str  # alpha | beta | GA
    default: bool
    locked: bool = False


@dataclass(frozen=True, slots=True)
class Gate:
    name: str  # its enhancement (KEP) is noted above each gate below
    stages: tuple[Stage, ...]
    removed: str | None = None  # first minor version without the gate

    def stage_at(self, version: str) -> Stage | None:
        if self.removed is not None and minor(version) >= minor(self.removed):
            return None
        current = None
        for stage in self.stages:
            if minor(stage.since) <= minor(version):
                current = stage
        return current


MATCH_LABEL_KEYS_IN_POD_AFFINITY = "MatchLabelKeysInPodAffinity"
MATCH_LABEL_KEYS_IN_SPREAD = "MatchLabelKeysInPodTopologySpread"
SPREAD_SELECTOR_MERGE = "MatchLabelKeysInPodTopologySpreadSelectorMerge"
NODE_INCLUSION_POLICY = "NodeInclusionPolicyInPodTopologySpread"
MIN_DOMAINS = "MinDomainsInPodTopologySpread"
TOLERATION_COMPARISON = "TaintTolerationComparisonOperators"
MAX_UNAVAILABLE_STATEFULSET = "MaxUnavailableStatefulSet"

GATES: dict[str, Gate] = {
    gate.name: gate
    for gate in (
        # KEP-3633
        Gate(
            MATCH_LABEL_KEYS_IN_POD_AFFINITY,
            (
                Stage("1.29", "alpha", False),
                Stage("1.31", "beta", True),
                Stage("1.33", "GA", True, locked=True),
            ),
        ),
        # KEP-3243
        Gate(
            MATCH_LABEL_KEYS_IN_SPREAD,
            (Stage("1.25", "alpha", False), Stage("1.27", "beta", True)),
        ),
        # KEP-3243
        Gate(SPREAD_SELECTOR_MERGE, (Stage("1.34", "beta", True),)),
        # KEP-3094
        Gate(
            NODE_INCLUSION_POLICY,
            (
                Stage("1.25", "alpha", False),
                Stage("1.26", "beta", True),
                Stage("1.33", "GA", True, locked=True),
            ),
        ),
        # KEP-3022
        Gate(
            MIN_DOMAINS,
            (
                Stage("1.24", "alpha", False),
                Stage("1.27", "beta", True),
                Stage("1.30", "GA", True, locked=True),
            ),
            removed="1.32",
        ),
        # KEP-5471
        Gate(TOLERATION_COMPARISON, (Stage("1.35", "alpha", False),)),
        # KEP-961
        Gate(
            MAX_UNAVAILABLE_STATEFULSET,
            (Stage("1.24", "alpha", False), Stage("1.35", "beta", True)),
        ),
    )
}


def minor(version: str) -> int:
    return int(version.split(".")[1])


def gate_problems(version: str, gates: Mapping[str, bool]) -> list[tuple[str, str]]:
    """What kube-apiserver would refuse to start with: a locked gate set against its value, a
    gate the version does not have; and names that look like a typo of a known gate."""
    problems = []
    for name, value in gates.items():
        gate = GATES.get(name)
        if gate is None:
            close = difflib.get_close_matches(name, list(GATES), n=1, cutoff=0.85)
            if close:
                problems.append((name, f"unknown feature gate '{name}' (did you mean '{close[0]}'?)"))
            continue
        stage = gate.stage_at(version)
        if stage is None:
            when = f"was removed in {gate.removed}" if gate.removed else f"arrives in {gate.stages[0].since}"
            problems.append((name, f"{name} is not a feature gate of Kubernetes {version} (it {when})"))
        elif stage.locked and value != stage.default:
            problems.append(
                (
                    name,
                    f"{name} is {stage.stage} in Kubernetes {version} and locked to "
                    f"{str(stage.default).lower()}; kube-apiserver refuses to start with "
                    f"{name}={str(value).lower()}",
                )
            )
    return problems


@dataclass(frozen=True, slots=True)
class GateState:
    """Whether a gate is on at the target version, and why (for messages)."""

    name: str
    enabled: bool
    stage: str | None  # None: the version has no such gate
    explicit: bool

    def why(self, version: str) -> str:
        value = "on" if self.enabled else "off"
        if self.explicit:
            return f"feature gate {self.name} is set {value}"
        if self.stage is None:
            return f"Kubernetes {version} has no feature gate {self.name}"
        return f"feature gate {self.name} is {self.stage} and {value} by default in Kubernetes {version}"


def gate_state(name: str, version: str, gates: Mapping[str, bool]) -> GateState:
    gate = GATES[name]
    stage = gate.stage_at(version)
    if name in gates and stage is not None:
        return GateState(name, gates[name], stage.stage, explicit=True)
    if stage is None:
        # Removed gates were GA (always on); gates not yet born are off.
        born = minor(version) >= minor(gate.stages[0].since)
        return GateState(name, born, None, explicit=False)
    return GateState(name, stage.default, stage.stage, explicit=False)
