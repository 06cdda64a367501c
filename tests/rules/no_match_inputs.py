"""Inputs shared by the tests of the no-match rules (tests/rules/test_affinity_no_match.py,
test_preferred_no_match.py, test_pdb_no_match.py, test_anti_affinity_no_match.py) and their
"did you mean" hints (kaffinity.explain.suggest): StatefulSets with required or preferred terms,
budgets.
"""

from __future__ import annotations

from typing import Any

from kaffinity.engine import LintResult
from kaffinity.findings import Location

from ..kit import lint_text

RULES = ("affinity-no-match", "preferred-no-match", "pdb-no-match")


def lint_no_match(text: str, **settings: Any) -> LintResult:
    return lint_text(text, **{"select": RULES, **settings})


def statefulset_yaml(
    name: str,
    labels: str,
    affinity: str = "",
    namespace: str = "shop",
    replicas: int = 1,
    extra_spec: str = "",
) -> str:
    text = f"""\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {name}
  namespace: {namespace}
spec:
  serviceName: {name}
  replicas: {replicas}
  selector:
    matchLabels: {labels}
  template:
    metadata:
      labels: {labels}
    spec:
      containers: [{{name: c, image: busybox}}]
"""
    if extra_spec:
        text += extra_spec
    if affinity:
        text += "      affinity:\n" + affinity
    return text + "---\n"


def span_of(location: Location) -> tuple[int, int] | None:
    return (location.span.line, location.span.column) if location.span is not None else None
