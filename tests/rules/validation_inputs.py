"""Inputs shared by the validation rules' tests (tests/rules/test_schema.py, test_api_validation.py,
test_api_warning.py, test_field_unavailable.py, test_gated_field_dropped.py, test_proposal_field.py):
small inline manifests and the rule selection of category schema.

Upstream behaviour is the reference: kubernetes/kubernetes ``pkg/apis/core/validation/validation.go``,
``pkg/api/pod/{util,warnings}.go``, ``pkg/registry/core/pod/strategy.go`` (the matchLabelKeys
merge) and ``pkg/features/kube_features.go``.
"""

from __future__ import annotations

import textwrap
from typing import Any

from kaffinity.engine import LintResult
from kaffinity.findings import Finding

from .. import kit
from ..kit import assert_found, lint_text, position

TEMPLATE = "spec.template.spec"


# -- manifests and lookups ---------------------------------------------------------------------


def lint_schema(text: str, **settings: Any) -> LintResult:
    """These tests are about the validation rules (category schema); the expansion rules, which
    also read matchLabelKeys, have their own tests (test_expand.py)."""
    return lint_text(text, **{"select": ("schema",), **settings})


def check_schema(text: str, *problems: kit.Problem, **settings: Any) -> LintResult:
    """kit.check with the validation rules, as :func:`lint_schema`."""
    return kit.check(text, *problems, **{"select": ("schema",), **settings})


def deployment(pod_spec: str, labels: str = "{app: web}", api_version: str = "apps/v1") -> str:
    """A Deployment whose pod template spec holds ``pod_spec`` (YAML, any indentation)."""
    head = (
        f"apiVersion: {api_version}\n"
        "kind: Deployment\n"
        "metadata: {name: web}\n"
        "spec:\n"
        "  selector: {matchLabels: {app: web}}\n"
        "  template:\n"
        f"    metadata: {{labels: {labels}}}\n"
        "    spec:\n"
        "      containers: [{name: c, image: i}]\n"
    )
    return head + textwrap.indent(textwrap.dedent(pod_spec), " " * 6)


def pod(pod_spec: str, labels: str | None = "{app: web}") -> str:
    """A bare Pod (validated after the create-time merge of matchLabelKeys)."""
    head = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n"
    if labels is not None:
        head += f"  labels: {labels}\n"
    head += "spec:\n  containers: [{name: c, image: i}]\n"
    return head + textwrap.indent(textwrap.dedent(pod_spec), " " * 2)


def assert_at(finding: Finding, rule: str, text: str, needle: str, path: str, at: str | None = None) -> None:
    """The finding is ``rule``'s, on the line of ``text`` holding ``needle``, in the column where
    ``at`` (default: ``needle``) starts on that line, at field ``path``."""
    line, column = position(text, needle)
    if at is not None:
        column = text.splitlines()[line - 1].index(at) + 1
    assert_found([finding], rule, line, column, path=path)


# -- 1. pod affinity matchLabelKeys across versions ----------------------------------------------

ANTI_MATCH_KEYS = deployment(
    """\
    affinity:
      podAntiAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {app: web}}
            topologyKey: kubernetes.io/hostname
            matchLabelKeys: [pod-template-hash]
    """
)
ANTI_TERM = f"{TEMPLATE}.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"


# -- 2. topology spread matchLabelKeys: legacy and merge regimes --------------------------------

SPREAD = """\
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
    labelSelector: {matchLabels: {app: web}}
    matchLabelKeys: [app]
"""
SPREAD_POD = pod(SPREAD)


# -- 3. pod affinity: the create-time merge of a bare Pod ---------------------------------------

ANTI_POD_SPEC = """\
affinity:
  podAntiAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: web}}
        topologyKey: kubernetes.io/hostname
        matchLabelKeys: [app]
"""


# -- 4. node affinity ---------------------------------------------------------------------------

NODE_REQUIRED = f"{TEMPLATE}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"


def node_required(requirement: str, kind: str = "matchExpressions") -> str:
    return deployment(
        f"""\
        affinity:
          nodeAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              nodeSelectorTerms:
                - {kind}:
                    - {requirement}
        """
    )


def toleration(operator: str, value: str) -> str:
    return pod(
        f"""\
        tolerations:
          - key: example.com/cores
            operator: {operator}
            value: {value}
            effect: NoSchedule
        """
    )


# -- 6. proposals -------------------------------------------------------------------------------

RDE = "requiredDuringSchedulingRequiredDuringExecution"
