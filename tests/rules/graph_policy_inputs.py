"""Inputs shared by the tests of the graph rules on cluster policy (tests/rules/
test_all_namespaces_anti_affinity.py, test_anti_affinity_blocks_daemonset.py, test_pdb_overlap.py,
test_replicas_not_spread.py): terms, budgets, autoscalers and the lookups of related locations.
"""

from __future__ import annotations

import functools
import json
import textwrap
from typing import Any

from kaffinity.engine import LintResult
from kaffinity.findings import Finding

from .. import kit
from ..kit import lint_text, position

ALL_NS, DAEMON, OVERLAP, SPREAD = (
    "all-namespaces-anti-affinity",
    "anti-affinity-blocks-daemonset",
    "pdb-overlap",
    "replicas-not-spread",
)


def lint_rule(text: str, rule: str, **settings: Any) -> LintResult:
    return lint_text(textwrap.dedent(text), select=(rule,), **settings)


#: StatefulSets of one replica unless said otherwise.
graph_workload = functools.partial(kit.workload, kind="StatefulSet")


def term(selector: dict[str, Any] | None, key: str = "kubernetes.io/hostname", **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"topologyKey": key, **more}
    if selector is not None:
        out["labelSelector"] = selector
    return out


def lint_objects(
    *objects: dict[str, Any], rule: str, cluster: list[dict[str, Any]] | None = None
) -> list[Finding]:
    """Lint objects (one JSON document each, so each starts on its own line) with one rule."""
    declared = kit.manifest(cluster) if cluster is not None else None
    return list(lint_text(kit.manifest(objects), "input.yaml", cluster=declared, select=(rule,)).findings)


def related_lines(finding: Finding) -> list[int | None]:
    return [location.span.line if location.span else None for location in finding.related]


def doc_line(objects_before: int) -> int:
    """The line on which the document after ``objects_before`` documents starts (see lint_objects())."""
    return 1 + 2 * objects_before


def doc_at(objects: tuple[dict[str, Any], ...], index: int, needle: str) -> tuple[int, int]:
    """(line, column) of ``needle`` in the document ``objects[index]`` as lint_objects() writes it."""
    return position(kit.manifest(objects), needle, 1, after=json.dumps(objects[index]))
