"""Scheduling semantics around the scheduler, judged by upstream's code (issue 35, item 3).

The Priority admission plugin (plugin/pkg/admission/priority, run by the oracle's ``schedule`` op
on the pod before kube-scheduler sees it) and DefaultPreemption: generated PriorityClasses
(values, ``globalDefault``, ``preemptionPolicy``) and a pod naming one of them, another, none, or a
built-in class, with or without its own ``preemptionPolicy``, on a node a lower-priority pod
fills. kaffinity's answer (:func:`kaffinity.simulate.place.admit` and the placement: refused,
placed by preemption, or Pending) must be the oracle's (refused at admission with the same
``Forbidden`` text, a nominated node, or none).

The cluster file kaffinity reads lists the classes as a capture does (``kubectl get
priorityclasses`` includes the two built-in ones, which the API server creates and the oracle's
fake client does not: they are handed to it too).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kaffinity.k8s.model import build_inventory
from kaffinity.load.parse import parse
from kaffinity.simulate.cluster import cluster_from
from kaffinity.simulate.place import place_all
from tests.differential.oracle import Oracle, compared, examples

AREA = "schedule"
#: Each case builds a scheduler in the oracle (about 0.1 s): fewer cases than the default.
CASES = 60
VERSION = "1.37"
#: The classes every cluster has (pkg/apis/scheduling/v1/helpers.go, systemPriorityClasses).
SYSTEM = [
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "system-cluster-critical"},
        "value": 2_000_000_000,
        "preemptionPolicy": "PreemptLowerPriority",
    },
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "system-node-critical"},
        "value": 2_000_001_000,
        "preemptionPolicy": "PreemptLowerPriority",
    },
]
NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
    "status": {
        "allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"},
        "capacity": {"cpu": "1", "memory": "1Gi", "pods": "10"},
    },
}

NAMES = ("gold", "silver", "bronze")
POLICIES = (None, "Never", "PreemptLowerPriority")


@st.composite
def priority_classes(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Up to three user classes, each with a value, maybe globalDefault, maybe a policy."""
    names = draw(st.lists(st.sampled_from(NAMES), max_size=3, unique=True))
    found = []
    for name in names:
        pc: dict[str, Any] = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": draw(st.sampled_from((-5, 0, 3, 100, 1_000_000))),
        }
        if draw(st.booleans()):
            pc["globalDefault"] = True
        policy = draw(st.sampled_from(POLICIES))
        if policy is not None:
            pc["preemptionPolicy"] = policy
        found.append(pc)
    # Several globalDefault classes exist only through the race the plugin allows for (its
    # validatePriorityClass refuses a second one); upstream then takes the lowest value, and
    # among equal ones the first its lister returns (informer map order: not deterministic).
    # So the lowest value is kept by one default class only.
    defaults = [pc for pc in found if pc.get("globalDefault")]
    lowest = min((pc["value"] for pc in defaults), default=None)
    for pc in [pc for pc in defaults if pc["value"] == lowest][1:]:
        del pc["globalDefault"]
    return found


def _pod(name: str, cpu: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            **spec,
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


def _text(*objects: dict[str, Any]) -> str:
    return "\n---\n".join(json.dumps(obj) for obj in objects) + "\n"


def _kaffinity(classes: list[dict[str, Any]], low: dict[str, Any], pod: dict[str, Any]) -> dict[str, Any]:
    """What kaffinity says of ``pod``: refused (with the error), nominated (preemption), node, or none."""
    cluster = cluster_from([parse("cluster.yaml", _text(NODE, low, *SYSTEM, *classes))])
    inventory = build_inventory(parse("app.yaml", _text(pod)).documents)
    run = place_all(inventory.workloads, cluster, version=VERSION)
    (workload,) = inventory.workloads
    refused = run.refused.get(id(workload))
    if refused is not None:
        return {"refused": refused.refused}
    (placement,) = run.placements
    if placement.victims:
        return {"nominated": placement.node}
    return {"node": placement.node}


def _stored(pc: dict[str, Any]) -> dict[str, Any]:
    """A PriorityClass as the API server stores it: ``SetDefaults_PriorityClass``
    (pkg/apis/scheduling/v1/defaults.go) sets ``preemptionPolicy: PreemptLowerPriority`` when
    unset. The oracle decodes the classes without that defaulting (its scheme does not install
    the scheduling group), so they are handed to it as stored."""
    return {"preemptionPolicy": "PreemptLowerPriority", **pc}


def _oracle(
    oracle: Oracle, classes: list[dict[str, Any]], low: dict[str, Any], pod: dict[str, Any]
) -> dict[str, Any]:
    stored = [_stored(pc) for pc in (*SYSTEM, *classes)]
    answer = oracle.ask(
        {"op": "schedule", "nodes": [NODE], "pods": [low], "pod": pod, "priorityClasses": stored}
    )
    if not answer["ok"]:
        assert answer["stage"] == "admission", answer
        return {"refused": answer["error"].split(" is forbidden: ", 1)[1]}
    if answer.get("nominatedNode"):
        return {"nominated": answer["nominatedNode"]}
    return {"node": answer["node"]}


@settings(max_examples=examples(CASES), derandomize=True, deadline=None, database=None)
@given(
    classes=priority_classes(),
    name=st.sampled_from((None, *NAMES, "missing", "system-cluster-critical")),
    policy=st.sampled_from(POLICIES),
    low=st.sampled_from((0, 5, 200)),
    cpu=st.sampled_from(("50m", "500m")),
)
# Cases kaffinity got wrong before issue 35 (it read the pod's own preemptionPolicy only and
# counted a missing class as 0); the regression tests without the oracle are in
# tests/rules/test_needs_preemption.py and tests/rules/test_unschedulable.py. The class's Never
# keeps the pod from preempting ...
@example(
    classes=[
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "gold"},
            "value": 100,
            "preemptionPolicy": "Never",
        }
    ],
    name="gold",
    policy=None,
    low=0,
    cpu="500m",
)
# ... a class no one declared refuses the pod ...
@example(classes=[], name="missing", policy=None, low=0, cpu="50m")
# ... a pod's own Never with no class and no globalDefault is refused (PreemptLowerPriority computed) ...
@example(classes=[], name=None, policy="Never", low=0, cpu="50m")
# ... and a globalDefault class gives its value and policy to a pod naming none.
@example(
    classes=[
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "gold"},
            "value": 100,
            "globalDefault": True,
        }
    ],
    name=None,
    policy=None,
    low=5,
    cpu="500m",
)
def test_priority_admission_and_preemption_agree(
    oracle: Oracle, classes: list[dict[str, Any]], name: str | None, policy: str | None, low: int, cpu: str
) -> None:
    spec: dict[str, Any] = {}
    if name is not None:
        spec["priorityClassName"] = name
    if policy is not None:
        spec["preemptionPolicy"] = policy
    bound = _pod("low", "900m", nodeName="n1", priority=low)
    pod = _pod("p", cpu, **spec)
    compared(AREA)
    assert _kaffinity(classes, bound, pod) == _oracle(oracle, classes, bound, pod)
