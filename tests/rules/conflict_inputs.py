"""Inputs shared by the tests of affinity-deadlock and affinity-conflict (tests/rules/
test_affinity_deadlock.py, test_affinity_conflict.py): workloads in block YAML whose pod
(anti-)affinity terms are tagged ``# <tag>`` on their first line, to find their line and column.

Upstream: the InterPodAffinity Filter (``satisfyPodAffinity`` with the self-match exception,
``satisfyPodAntiAffinity``, ``satisfyExistingPodsAntiAffinity`` in
``pkg/scheduler/framework/plugins/interpodaffinity/filtering.go``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kaffinity.engine import LintResult
from kaffinity.rules import BY_NAME

from ..kit import keys, line_of, lint_text

DEADLOCK, CONFLICT = "affinity-deadlock", "affinity-conflict"
HOST, ZONE, REGION = "kubernetes.io/hostname", "topology.kubernetes.io/zone", "topology.kubernetes.io/region"


def term(tag: str, key: str, selector: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A pod (anti-)affinity term; ``tag`` ends up as a comment on its first line."""
    return {"tag": tag, "key": key, "selector": selector or {}, "extra": extra}


def block_workload(
    name: str,
    *,
    namespace: str = "shop",
    kind: str = "StatefulSet",
    labels: dict[str, str] | None = None,
    replicas: int = 1,
    affinity: Sequence[dict[str, Any]] = (),
    anti: Sequence[dict[str, Any]] = (),
) -> str:
    """A workload in block YAML, each term's first line tagged ``# <tag>`` to find its line."""
    labels = labels or {"app": name}
    lines = [
        "apiVersion: apps/v1",
        f"kind: {kind}",
        f"metadata: {{name: {name}, namespace: {namespace}}}",
        "spec:",
    ]
    if kind != "DaemonSet":
        lines.append(f"  replicas: {replicas}")
    if kind == "StatefulSet":
        lines.append(f"  serviceName: {name}")
    lines += [
        f"  selector: {{matchLabels: {json.dumps(labels)}}}",
        "  template:",
        f"    metadata: {{labels: {json.dumps(labels)}}}",
        "    spec:",
        "      containers: [{name: c, image: busybox}]",
    ]
    if affinity or anti:
        lines.append("      affinity:")
    for field, terms in (("podAffinity", affinity), ("podAntiAffinity", anti)):
        if not terms:
            continue
        lines += [f"        {field}:", "          requiredDuringSchedulingIgnoredDuringExecution:"]
        for t in terms:
            lines.append(f"            - labelSelector: {json.dumps(t['selector'])}  # {t['tag']}")
            lines.append(f"              topologyKey: {t['key']}")
            lines += [f"              {k}: {json.dumps(v)}" for k, v in t["extra"].items()]
    return "\n".join(lines) + "\n"


def namespace(name: str, labels: dict[str, str]) -> str:
    return f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {name}, labels: {json.dumps(labels)}}}\n"


def stream(*docs: str) -> str:
    return "---\n".join(docs)


def lint_graph(text: str, *rules: str, **settings: Any) -> LintResult:
    chosen = [BY_NAME[rule] for rule in rules or (DEADLOCK, CONFLICT)]
    return lint_text(text, rules=chosen, **settings)


def found(result: LintResult) -> list[tuple[str, int | None, int | None]]:
    return sorted(keys(result), key=str)


def term_at(text: str, tag: str) -> tuple[int, int]:
    """(line, column) of the term tagged ``# tag``: where its labelSelector starts."""
    line = line_of(text, f"# {tag}", ending=True)
    return line, text.splitlines()[line - 1].index("labelSelector") + 1


def at(text: str, rule: str, *tags: str) -> list[tuple[str, int | None, int | None]]:
    """The findings of ``rule`` expected at the terms with these tags, as :func:`found` lists them."""
    return sorted(((rule, *term_at(text, tag)) for tag in tags), key=str)
