"""The rule ``schema`` (kaffinity/rules/schema.py): the OpenAPI schema of the chosen version, each
unknown field or wrong type its own finding at its own line and column.

Upstream: the OpenAPI documents of kubernetes/kubernetes ``api/openapi-spec/v3`` the schemas are
generated from; ``$patch`` directives as ``k8s.io/apimachinery`` strategic merge patch reads them.
"""

from __future__ import annotations

import pytest

from kaffinity.findings import Finding

from ..kit import findings, only, position
from .validation_inputs import (
    SPREAD,
    TEMPLATE,
    assert_at,
    check_schema,
    deployment,
    lint_schema,
    pod,
    toleration,
)


def where(findings: list[Finding]) -> list[tuple[str, int | None, int | None, str]]:
    return [(finding.rule, finding.line, finding.column, finding.path) for finding in findings]


@pytest.mark.parametrize("operator", ["Lt", "Gt"])
def test_toleration_comparison_is_outside_the_enumeration_before_1_35(operator: str) -> None:
    text = toleration(operator, '"10"')
    finding = only(lint_schema(text, kube_version="1.34"))
    assert_at(finding, "schema", text, "operator:", "spec.tolerations[0].operator")


# -- 7. schema ----------------------------------------------------------------------------------


def test_each_unknown_field_is_its_own_finding_on_its_own_line() -> None:
    text = pod(
        """\
        tolerations:
          - key: example.com/gpu
            operater: Exists
            efect: NoSchedule
        """
    )
    findings = lint_schema(text).findings
    assert where(list(findings)) == [
        ("schema", *position(text, "operater"), "spec.tolerations[0].operater"),
        ("schema", *position(text, "efect"), "spec.tolerations[0].efect"),
    ]
    assert 'did you mean "operator"' in findings[0].message
    assert 'did you mean "effect"' in findings[1].message


def test_unknown_field_without_a_close_name_has_no_suggestion() -> None:
    text = pod("affinity:\n  zzzzz: {}\n")
    finding = only(lint_schema(text))
    assert_at(finding, "schema", text, "zzzzz", "spec.affinity.zzzzz")
    assert finding.fix is None  # no close name to suggest
    assert "did you mean" not in finding.message  # nor in the wording


def test_a_type_error_is_not_also_an_enum_error() -> None:
    text = deployment(
        """\
        topologySpreadConstraints:
          - maxSkew: 1
            topologyKey: topology.kubernetes.io/zone
            whenUnsatisfiable: 3
            labelSelector: {matchLabels: {app: web}}
        """
    )
    finding = only(lint_schema(text))
    assert_at(
        finding,
        "schema",
        text,
        "whenUnsatisfiable",
        f"{TEMPLATE}.topologySpreadConstraints[0].whenUnsatisfiable",
    )


def test_a_value_outside_the_enumeration() -> None:
    text = deployment(SPREAD.replace("DoNotSchedule", "DoNotSchedul"))
    finding = only(lint_schema(text))
    assert_at(
        finding,
        "schema",
        text,
        "whenUnsatisfiable",
        f"{TEMPLATE}.topologySpreadConstraints[0].whenUnsatisfiable",
    )
    assert "Unsupported value" in finding.message


def test_patch_directives_are_not_fields() -> None:
    text = deployment(
        """\
        $setElementOrder/tolerations: [{key: a}]
        affinity:
          $patch: replace
          nodeAffinity:
            $retainKeys: [requiredDuringSchedulingIgnoredDuringExecution]
        tolerations:
          - {key: a, operator: Exists, $patch: delete}
        """
    )
    check_schema(text)


PDB = """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: VALUE
  selector: {matchLabels: {app: web}}
"""


@pytest.mark.parametrize("value", ["null", '"50%"', "2"])
def test_int_or_string_accepts_int_string_and_null(value: str) -> None:
    check_schema(PDB.replace("VALUE", value))


@pytest.mark.parametrize("value", ["[2]", "true"])
def test_int_or_string_rejects_other_types(value: str) -> None:
    finding = only(lint_schema(PDB.replace("VALUE", value)))
    assert (finding.rule, finding.line, finding.path) == ("schema", 5, "spec.minAvailable")


def test_kinds_with_an_unknown_api_version_are_not_schema_checked() -> None:
    old = deployment("affinty: {}\ntolerations: [{key: a, operater: Exists}]\n", api_version="apps/v1beta1")
    assert findings(lint_schema(old), "schema") == []
    assert len(findings(lint_schema(old.replace("apps/v1beta1", "apps/v1")), "schema")) == 2
    custom = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec:\n  affinty: {}\n"
    check_schema(custom)
