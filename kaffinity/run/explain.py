"""``kaffinity explain CAPTURE``'s run: a live cluster's capture read (nodes, bound pods, budgets,
PriorityClasses: :func:`kaffinity.simulate.cluster.cluster_from`), its Pending pods scheduled in
queue order and explained (:mod:`kaffinity.explain.why`), the outcome as text or JSON
(:mod:`kaffinity.report.explain`).

Bad input is exit code 2 with one line naming the file and line: a file the loader cannot read
(not YAML, past ``limits: file_size``, too many nodes), or one that holds no Node (not a
capture). Exit code 0 when the capture holds no Pending pod kube-scheduler would take, 1 when
it holds some (each explained).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Optional

from kaffinity.load.display import quote_name
from kaffinity.run.notes import Notes, Outcome, RunError

if TYPE_CHECKING:
    from kaffinity.config import Settings
    from kaffinity.explain.why import CaptureReport
    from kaffinity.simulate.cluster import Cluster

#: The command that makes a capture (said when a file is not one).
CAPTURE_COMMAND = (
    "kubectl get nodes,pods,poddisruptionbudgets,priorityclasses,runtimeclasses,storageclasses,"
    "persistentvolumes,persistentvolumeclaims -A -o yaml"
)


def read_capture(path: str, settings: Settings) -> Cluster:
    """The capture at ``path`` as a cluster; a :class:`RunError` (exit 2) when it cannot be read
    or is no capture."""
    from kaffinity.load.files import load
    from kaffinity.simulate.cluster import cluster_from

    name = quote_name(path)
    if os.path.isdir(path):
        raise RunError(f"kaffinity: error: {name}: a folder; give the capture file")
    if not os.path.isfile(path):
        raise RunError(f"kaffinity: error: {name}: capture file not found")
    files = load([path], limits=settings.limits, gitignore=False, manifests_only=False)
    cluster = cluster_from(files, settings.namespace, settings.limits.nodes)
    for file in cluster.files:
        for problem in file.problems:
            if problem.rule == "parse-error":
                span = problem.span
                where = (
                    f"{quote_name(file.name)}:{span.line}:{span.column}" if span else quote_name(file.name)
                )
                raise RunError(f"{where}: error: {problem.message}")
    if not cluster.nodes:
        line = next((doc.span.line for file in cluster.files for doc in file.documents), 1)
        raise RunError(
            f"{name}:{line}:1: error: not a cluster capture: it holds no Node "
            f"(make one with: {CAPTURE_COMMAND})"
        )
    return cluster


def explain_file(path: str, settings: Settings, pod: Optional[str] = None) -> CaptureReport:
    """The capture at ``path`` read, its Pending pods scheduled in queue order and explained
    (``pod``: ``namespace/name``, or a name in the default namespace, of the only one kept);
    a :class:`RunError` (exit 2) on bad input."""
    from kaffinity.explain.capture import pending_documents
    from kaffinity.explain.why import explain_capture
    from kaffinity.k8s.model import build_inventory
    from kaffinity.k8s.model.build import priority_classes
    from kaffinity.simulate.place import Priorities

    cluster = read_capture(path, settings)
    documents = [doc for file in cluster.files for doc in file.documents]
    pending = [
        workload
        for workload in build_inventory(pending_documents(documents), settings.namespace).workloads
        if workload.ref.kind == "Pod"
    ]
    if pod is not None:
        wanted = pod if "/" in pod else f"{settings.namespace}/{pod}"
        if not any(f"{w.ref.namespace or 'default'}/{w.ref.name}" == wanted for w in pending):
            raise RunError(f"kaffinity: error: --pod {pod}: no Pending pod {wanted} in {quote_name(path)}")
        pod = wanted
    return explain_capture(
        cluster,
        pending,
        version=settings.kube_version,
        gates=settings.feature_gates,
        priorities=Priorities.of(priority_classes(documents)),
        only=pod,
    )


def explain_run(
    path: str, settings: Settings, pod: Optional[str], output_format: str, notes: Notes
) -> Outcome:
    """Exit code 0 when no pod is Pending, 1 when some are (explained), 2 on bad input."""
    from kaffinity.report.explain import render_json, render_text

    report = explain_file(path, settings, pod)
    text = render_json(report, path) if output_format == "json" else render_text(report)
    return Outcome(text, (), 1 if report.explained or report.skipped else 0)
