"""Inputs shared by the tests of the topology rules (tests/rules/test_topology_key_absent.py,
test_no_eligible_node.py, test_anti_affinity_exceeds_domains.py, test_spread_unsatisfiable.py,
test_unschedulable.py) and of their precedence (tests/test_topology_rules.py): nodes, running pods
and zones of a cluster file, workloads with anti-affinity or spread constraints, linted with the
cluster.
"""

from __future__ import annotations

from typing import Any

from kaffinity.config import Settings
from kaffinity.context import Context
from kaffinity.engine import LintResult
from kaffinity.load.parse import parse
from kaffinity.simulate.cluster import cluster_from

from .. import kit
from ..kit import lint_text, position

# --- building inputs ------------------------------------------------------------------------------


def node(
    name: str,
    zone: str | None = None,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    cpu: str = "4",
    unschedulable: bool = False,
    hostname: bool = True,
) -> dict[str, Any]:
    all_labels = {"kubernetes.io/hostname": name} if hostname else {}
    if zone is not None:
        all_labels["topology.kubernetes.io/zone"] = zone
    all_labels.update(labels or {})
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
        "spec": spec,
        "status": {
            "allocatable": {"cpu": cpu, "memory": "16Gi", "ephemeral-storage": "100Gi", "pods": "110"}
        },
    }


def running_pod(
    name: str, node_name: str, labels: dict[str, str], namespace: str = "t", **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "x"}], **spec},
        "status": {"phase": "Running"},
    }


def zones(count: int = 3, per_zone: int = 1) -> list[dict[str, Any]]:
    """``count`` zones a, b, c... with ``per_zone`` nodes each (n-a-0, n-a-1, ...)."""
    return [node(f"n-{chr(97 + z)}-{i}", zone=chr(97 + z)) for z in range(count) for i in range(per_zone)]


def pending_workload(
    name: str,
    kind: str = "Deployment",
    replicas: int | None = 1,
    labels: dict[str, str] | None = None,
    namespace: str = "t",
    **pod: Any,
) -> dict[str, Any]:
    """kit.workload with this file's defaults, the pod spec fields as keywords."""
    return kit.workload(name, namespace, labels or None, kind=kind, replicas=replicas, pod=pod)


def anti(key: str, labels: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": labels}, "topologyKey": key, **extra}
            ]
        }
    }


def spread(key: str, labels: dict[str, str], hard: bool = True, **extra: Any) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
            "labelSelector": {"matchLabels": labels},
            **extra,
        }
    ]


def text_of(objects: list[dict[str, Any]]) -> str:
    """One key per line, so that lines can be asserted."""
    return kit.manifest(objects, indent=2)


def context_of(
    objects: list[dict[str, Any]], cluster: list[dict[str, Any]] | None, **settings: Any
) -> Context:
    files = [parse("app.yaml", text_of(objects))]
    declared = cluster_from([parse("cluster.yaml", text_of(cluster))]) if cluster is not None else None
    return Context(files, Settings(**settings), declared)


def lint_on_cluster(
    objects: list[dict[str, Any]],
    cluster: list[dict[str, Any]] | None,
    select: tuple[str, ...] = ("topology",),
    **settings: Any,
) -> LintResult:
    declared = text_of(cluster) if cluster is not None else None
    return lint_text(text_of(objects), "app.yaml", cluster=declared, select=select, **settings)


def rules_of(result: LintResult) -> list[str]:
    return sorted(f.rule for f in result.findings)


def where(objects: list[dict[str, Any]], needle: str, occurrence: int = 1) -> tuple[int, int]:
    """(line, column) of the ``occurrence``-th ``needle`` in the linted text."""
    return position(text_of(objects), needle, occurrence)
