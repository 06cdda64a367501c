"""The rule ``api-warning`` (kaffinity/rules/api_warning.py): the warnings the API server returns on
create, reported at the field.

Upstream: kubernetes/kubernetes ``pkg/api/pod/warnings.go`` (null label selectors, deprecated
node labels).

The warning's text is the API server's own (``pkg/api/pod/warnings.go``): where a test asserts
its words, upstream's wording is the subject.
"""

from __future__ import annotations

from ..kit import only, position
from .validation_inputs import (
    ANTI_POD_SPEC,
    NODE_REQUIRED,
    SPREAD,
    TEMPLATE,
    assert_at,
    check_schema,
    deployment,
    lint_schema,
    node_required,
    pod,
)

# -- 8. warnings --------------------------------------------------------------------------------

NULL_SELECTOR = "a null labelSelector results in matching no pod"


def test_null_label_selector_warning_in_pod_affinity_terms() -> None:
    text = deployment(
        """\
        affinity:
          podAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              - topologyKey: kubernetes.io/hostname
          podAntiAffinity:
            preferredDuringSchedulingIgnoredDuringExecution:
              - weight: 10
                podAffinityTerm:
                  topologyKey: kubernetes.io/hostname
                  labelSelector: null
        """
    )
    findings = lint_schema(text).findings
    # The first term has no labelSelector: reported at the term (its first key); the second at
    # its `labelSelector: null`.
    assert {(f.rule, f.line, f.column, f.path) for f in findings} == {
        (
            "api-warning",
            *position(text, "topologyKey: kubernetes.io/hostname", 1),
            f"{TEMPLATE}.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector",
        ),
        (
            "api-warning",
            *position(text, "labelSelector: null"),
            f"{TEMPLATE}.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
            ".podAffinityTerm.labelSelector",
        ),
    }
    assert all(NULL_SELECTOR in f.message for f in findings)


def test_null_label_selector_warning_in_a_spread_constraint() -> None:
    text = pod(
        """\
        topologySpreadConstraints:
          - maxSkew: 1
            topologyKey: topology.kubernetes.io/zone
            whenUnsatisfiable: ScheduleAnyway
        """
    )
    finding = only(lint_schema(text))
    assert_at(
        finding,
        "api-warning",
        text,
        "maxSkew",
        "spec.topologySpreadConstraints[0].labelSelector",
    )
    assert NULL_SELECTOR in finding.message


def test_an_empty_label_selector_is_no_warning() -> None:
    text = pod(
        """\
        topologySpreadConstraints:
          - maxSkew: 1
            topologyKey: topology.kubernetes.io/zone
            whenUnsatisfiable: ScheduleAnyway
            labelSelector: {}
        """
    )
    check_schema(text)


def test_deprecated_label_as_node_selector_key() -> None:
    text = pod("nodeSelector:\n  beta.kubernetes.io/os: linux\n")
    finding = only(lint_schema(text))
    assert_at(
        finding, "api-warning", text, "beta.kubernetes.io/os", "spec.nodeSelector[beta.kubernetes.io/os]"
    )
    assert '"kubernetes.io/os"' in finding.message


def test_deprecated_label_as_node_affinity_key() -> None:
    text = node_required("{key: failure-domain.beta.kubernetes.io/zone, operator: In, values: [a]}")
    finding = only(lint_schema(text))
    assert_at(
        finding,
        "api-warning",
        text,
        "failure-domain",
        f"{NODE_REQUIRED}.nodeSelectorTerms[0].matchExpressions[0].key",
        at="key:",
    )
    assert "topology.kubernetes.io/zone" in finding.message


def test_deprecated_label_as_spread_topology_key() -> None:
    text = pod(SPREAD.replace("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"))
    finding = only(lint_schema(text), "api-warning")
    path = "spec.topologySpreadConstraints[0].topologyKey"
    assert_at(finding, "api-warning", text, "failure-domain", path, at="topologyKey")


def test_deprecated_label_as_pod_affinity_topology_key_is_no_warning() -> None:
    text = deployment(
        ANTI_POD_SPEC.replace("kubernetes.io/hostname", "failure-domain.beta.kubernetes.io/zone")
    )
    check_schema(text)


def test_preferred_node_affinity_value_that_is_no_label_value() -> None:
    # pkg/api/node/util.go GetWarningsForNodeSelectorTerm(checkLabelValue: true) on preferred
    # terms (required terms refuse it): found by the oracle (tests/differential/test_validate.py)
    text = pod(
        """\
        affinity:
          nodeAffinity:
            preferredDuringSchedulingIgnoredDuringExecution:
              - weight: 1
                preference:
                  matchExpressions: [{key: app, operator: In, values: [x y]}]
        """
    )
    finding = only(lint_schema(text))
    path = (
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
        ".preference.matchExpressions[0].values[0]"
    )
    assert_at(finding, "api-warning", text, "x y", path)
    assert finding.message == (
        f"{path}: x y is invalid, a valid label must be an empty string or consist of alphanumeric "
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
        "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    )
