"""ValidatingAdmissionPolicy, kaffinity against kube-apiserver's own admission plugin (the
oracle's ``admission`` op): the documentation's and the plugin tests' scenarios
(:mod:`tests.differential.admission_scenarios`), then generated policies, bindings, params,
namespaces and objects. Each compares whether the API server refuses a policy or binding, and
what every binding does to the object (:mod:`tests.differential.admission_cases`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.differential import differences
from tests.differential.admission_cases import kaffinity_says, oracle_says
from tests.differential.admission_scenarios import (
    binding,
    configmap,
    deployment,
    deployments,
    namespace,
    policy,
    replica_limit,
    rule,
    scenario,
    scenarios,
)
from tests.differential.kyverno_cel import cases as kyverno_cases
from tests.differential.kyverno_cel import sample_cases
from tests.differential.oracle import DEFAULT_EXAMPLES, Oracle, compared, examples

#: Scenarios whose difference is documented (differences.yaml, admission section).
KNOWN = {
    # kaffinity cannot tell a CRD that does not exist: it looks for params of any kind
    "param kind unknown Fail ['Warn']": "unknown-param-kind",
    "param kind unknown Fail ['Audit']": "unknown-param-kind",
    "param kind unknown Fail ['Deny']": "unknown-param-kind",
}

ALL = scenarios()


def _agree(kaffinity: dict[str, Any], oracle: dict[str, Any]) -> bool:
    if kaffinity["refused"] or oracle["refused"]:
        return bool(kaffinity["refused"]) == bool(oracle["refused"])
    return bool(kaffinity["findings"] == oracle["findings"] and _same_annotations(kaffinity, oracle))


def _same_annotations(kaffinity: dict[str, Any], oracle: dict[str, Any]) -> bool:
    """The audit annotations alike, each one's distinct values in any order (upstream's order
    is a Go map's: differences.yaml, admission/audit-annotation-value-order)."""
    ours, theirs = kaffinity["annotations"], oracle["annotations"]
    if ours == theirs:
        return True

    def unordered(found: dict[str, str]) -> dict[str, list[str]]:
        return {key: sorted(value.split(", ")) for key, value in found.items()}

    return unordered(ours) == unordered(theirs) and differences.known(
        "admission", "audit-annotation-value-order"
    )


def _compare(oracle: Oracle, case: dict[str, Any], folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    request = {key: value for key, value in case.items() if key != "name"}
    theirs = oracle_says(oracle, request)
    ours = kaffinity_says(request, folder)
    compared("admission")
    return ours, theirs


@pytest.mark.parametrize("case", ALL, ids=[case["name"] for case in ALL])
def test_scenario(oracle: Oracle, case: dict[str, Any], tmp_path: Path) -> None:
    ours, theirs = _compare(oracle, case, tmp_path)
    if case["name"] in KNOWN:
        differences.known("admission", KNOWN[case["name"]])
        assert not _agree(ours, theirs), f"{case['name']}: now agrees, drop it from KNOWN"
        return
    assert _agree(ours, theirs), (ours, {k: v for k, v in theirs.items() if k != "raw"}, theirs["raw"])


def test_there_are_enough_scenarios() -> None:
    assert len(ALL) >= 180


# -- generated ---------------------------------------------------------------------------------

_LABELS = st.dictionaries(
    st.sampled_from(["app", "tier", "environment"]),
    st.sampled_from(["web", "api", "test", "prod"]),
    max_size=2,
)
_SELECTOR = st.one_of(
    st.just({}),
    st.builds(lambda labels: {"matchLabels": labels}, _LABELS),
    st.builds(
        lambda key, op, values: {
            "matchExpressions": [
                {"key": key, "operator": op, **({"values": values} if op in ("In", "NotIn") else {})}
            ]
        },
        st.sampled_from(["app", "environment", "kubernetes.io/metadata.name"]),
        st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]),
        st.lists(st.sampled_from(["web", "test", "prod", "other"]), min_size=1, max_size=2, unique=True),
    ),
)
#: Expressions over the object and params: CEL library functions (format, optionals) are the CEL
#: area's; these read fields, compare and combine.
_CHECK = st.sampled_from(
    [
        "object.spec.replicas <= 5",
        "object.spec.replicas > 1",
        "has(object.metadata.labels) && object.metadata.labels.app == 'web'",
        "object.metadata.name.startsWith('w')",
        "object.spec.template.spec.containers.all(c, c.image.startsWith('nginx'))",
        "object.spec.paused == true",
        "namespaceObject.metadata.name != 'prod'",
        "request.namespace == 'test'",
        "params == null || int(params.data.max) >= object.spec.replicas",
        "params != null && params.data.max == '3'",
        "variables.small",
        "variables.missing == 1",
        "true",
        "false",
    ]
)
_MESSAGE = st.one_of(
    st.just({}),
    st.just({"message": "says no"}),
    st.just({"messageExpression": "'replicas ' + string(object.spec.replicas)"}),
    st.just({"messageExpression": "''", "message": "fallback"}),
    st.just({"reason": "Forbidden"}),
)
#: auditAnnotations' valueExpressions: strings (padded, empty), null, errors (a missing field, a
#: Node's replicas, a cluster-scoped object's namespace), and types the API server refuses (dyn,
#: int, a ternary of string and null).
_VALUE = st.sampled_from(
    [
        "'x'",
        "' padded '",
        "''",
        "null",
        "'replicas ' + string(object.spec.replicas)",
        "string(object.metadata.name)",
        "has(object.metadata.labels) && object.metadata.labels.app == 'web' ? 'web' : 'other'",
        "string(object.metadata.nope)",
        "request.namespace",
        "namespaceObject.metadata.name",
        "params == null ? 'no params' : 'params ' + params.metadata.name",
        "variables.small ? 'small' : 'large'",
    ]
)
_REFUSED = ("object.metadata.name", "1", "object.spec.replicas > 3 ? 'many' : null")
_CONDITION = st.sampled_from(
    ["true", "false", "object.metadata.name == 'web'", "object.nope == 1", "request.userInfo.username != ''"]
)


def _params(draw: st.DrawFn, param_kind: str | None) -> list[dict[str, Any]]:
    """Params of the policy's kind: ConfigMaps in namespaces, or ReplicaLimits with or without one."""
    params = []
    if param_kind == "ReplicaLimit":
        for name, ns, limit in draw(
            st.lists(
                st.tuples(
                    st.sampled_from(["limits", "other"]),
                    st.sampled_from([None, "config", "test", "default"]),
                    st.sampled_from([1, 3, 9]),
                ),
                # one at least: a kind no object shows is one the cluster does not serve
                # (differences.yaml: admission/unknown-param-kind)
                min_size=1,
                max_size=3,
                unique_by=lambda t: (t[0], t[1] or "default"),  # unwritten: where kubectl puts it
            )
        ):
            params.append(replica_limit(name, limit, ns, {"role": "limits"}))
    elif param_kind is not None:
        for name, ns, max_ in draw(
            st.lists(
                st.tuples(
                    st.sampled_from(["limits", "other"]),
                    st.sampled_from(["config", "test", "prod"]),
                    st.sampled_from(["1", "3", "9"]),
                ),
                max_size=3,
                unique_by=lambda t: (t[0], t[1]),
            )
        ):
            params.append(configmap(name, ns, {"role": "limits"}, max=max_))
    return params


def _annotations(draw: st.DrawFn, param_kind: str | None, variables: bool) -> list[dict[str, str]]:
    """Up to two audit annotations; one in ten with a type the API server refuses, or a key
    given twice (refused: Duplicate value)."""
    drawn = draw(
        st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), _VALUE), max_size=2, unique_by=lambda t: t[0])
    )
    if drawn and draw(st.integers(0, 9)) == 0:
        drawn[-1] = draw(st.sampled_from([(drawn[0][0], "'again'"), *(("z", v) for v in _REFUSED)]))
    return [
        {"key": key, "valueExpression": value}
        for key, value in drawn
        if ("params" not in value or param_kind is not None) and ("variables" not in value or variables)
    ]


def _with_annotations(
    draw: st.DrawFn, spec: dict[str, Any], param_kind: str | None, validations: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Audit annotations put in ``spec``, and the validations kept: a policy may have
    annotations and no validation."""
    annotations = _annotations(draw, param_kind, "variables" in spec)
    if not annotations:
        return validations
    spec["auditAnnotations"] = annotations
    return [] if draw(st.booleans()) else validations


@st.composite
def _scenarios(draw: st.DrawFn) -> dict[str, Any]:
    param_kind = draw(st.sampled_from([None, "ConfigMap", "ReplicaLimit"]))
    # distinct expressions: kaffinity reports one finding per place and message
    validations = [
        {"expression": check, **draw(_MESSAGE)}
        for check in draw(st.lists(_CHECK, min_size=1, max_size=2, unique=True))
    ]
    spec: dict[str, Any] = {"failurePolicy": draw(st.sampled_from(["Fail", "Ignore"]))}
    if draw(st.booleans()):
        spec["variables"] = [
            {"name": "small", "expression": "object.spec.replicas < 3"},
            {"name": "missing", "expression": "object.nope"},
        ]
    else:
        validations = [v for v in validations if "variables." not in v["expression"]] or [
            {"expression": "true"}
        ]
    if param_kind is None:
        validations = [v for v in validations if "params" not in v["expression"]] or [{"expression": "true"}]
    elif param_kind == "ConfigMap":
        spec["paramKind"] = {"apiVersion": "v1", "kind": "ConfigMap"}
    else:  # the documentation's custom kind: its scope inferred from the files on both sides
        spec["paramKind"] = {"apiVersion": "rules.example.com/v1", "kind": "ReplicaLimit"}
        for validation in validations:
            if "params" in validation["expression"]:
                validation["expression"] = "params == null || object.spec.replicas <= params.maxReplicas"
    validations = _with_annotations(draw, spec, param_kind, validations)
    conditions = draw(st.lists(_CONDITION, max_size=2, unique=True))
    if conditions:
        spec["matchConditions"] = [{"name": f"c{i}", "expression": c} for i, c in enumerate(conditions)]
    constraints: dict[str, Any] = {"resourceRules": [deployments(), rule("", "v1", "nodes")]}
    if draw(st.booleans()):
        constraints["namespaceSelector"] = draw(_SELECTOR)
    if draw(st.booleans()):
        constraints["objectSelector"] = draw(_SELECTOR)
    made_bindings = []
    for index in range(draw(st.integers(1, 2))):
        body: dict[str, Any] = {}
        if param_kind is not None and draw(st.booleans()):
            ref: dict[str, Any] = draw(
                st.sampled_from([{"name": "limits"}, {"selector": {"matchLabels": {"role": "limits"}}}])
            )
            if draw(st.booleans()):
                ref["namespace"] = draw(st.sampled_from(["config", "test"]))
            ref["parameterNotFoundAction"] = draw(st.sampled_from(["Deny", "Allow"]))
            body["paramRef"] = ref
        if draw(st.booleans()):
            body["matchResources"] = draw(
                st.sampled_from(
                    [
                        {"resourceRules": []},
                        {"resourceRules": [rule("", "v1", "nodes")]},
                        {"excludeResourceRules": [deployments()]},
                        {"namespaceSelector": {"matchLabels": {"environment": "test"}}},
                        {"objectSelector": {"matchLabels": {"app": "web"}}},
                    ]
                )
            )
        actions = draw(st.sampled_from([["Deny"], ["Warn"], ["Audit"], ["Warn", "Audit"], ["Deny", "Audit"]]))
        made_bindings.append(binding(f"b{index}", actions=actions, **body))
    params = _params(draw, param_kind)
    if draw(st.integers(0, 4)) == 0:
        obj: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "web", "labels": draw(_LABELS)},
        }
    else:
        obj = deployment(
            draw(st.sampled_from(["web", "api"])),
            ns=draw(st.sampled_from(["test", "prod", "other", None])),
            replicas=draw(st.sampled_from([None, 1, 3, 7])),
        )
        obj["metadata"]["labels"].update(draw(_LABELS))
    namespaces = [
        namespace("test", environment="test"),
        namespace("prod", environment="prod"),
        namespace("config"),
    ]
    return scenario(
        "generated",
        [policy(validations=validations, matchConstraints=constraints, **spec)],
        made_bindings,
        obj,
        params=params,
        namespaces=namespaces,
    )


@settings(
    max_examples=examples(),
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=_scenarios())
@example(  # a binding's `resourceRules: []` matches every request its policy matches
    case=scenario(
        "example", [policy()], [binding(actions=["Deny"], matchResources={"resourceRules": []})], deployment()
    )
)
@example(  # params not found: a configuration error, denied though the binding only warns
    case=scenario(
        "example",
        [policy(validations=[{"expression": "true"}], paramKind={"apiVersion": "v1", "kind": "ConfigMap"})],
        [binding(actions=["Warn"], paramRef={"name": "limits", "parameterNotFoundAction": "Deny"})],
        deployment(),
    )
)
@example(  # ... and skipped under failurePolicy: Ignore
    case=scenario(
        "example",
        [
            policy(
                validations=[{"expression": "true"}],
                paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
                failurePolicy="Ignore",
            )
        ],
        [binding(actions=["Deny"], paramRef={"name": "limits", "parameterNotFoundAction": "Deny"})],
        deployment(),
    )
)
@example(  # a namespaced param kind without paramRef.namespace against a cluster-scoped object
    case=scenario(
        "example",
        [
            policy(
                validations=[{"expression": "true"}],
                rules=[rule("", "v1", "nodes")],
                paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
            )
        ],
        [binding(actions=["Deny"], paramRef={"name": "limits", "parameterNotFoundAction": "Allow"})],
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
    )
)
@example(  # a false match condition wins over an erroring one
    case=scenario(
        "example",
        [
            policy(
                validations=[{"expression": "false"}],
                matchConditions=[
                    {"name": "a", "expression": "object.nope == 1"},
                    {"name": "b", "expression": "false"},
                ],
            )
        ],
        [binding(actions=["Deny"])],
        deployment(),
    )
)
@example(  # a v1 binding without validationActions is refused
    case=scenario("example", [policy()], [binding()], deployment())
)
@example(  # a Namespace being created carries its own name label
    case=scenario(
        "example",
        [
            policy(
                validations=[{"expression": "false", "message": "selected"}],
                rules=[rule("", "v1", "namespaces")],
                matchConstraints={
                    "resourceRules": [rule("", "v1", "namespaces")],
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}},
                },
            )
        ],
        [binding(actions=["Deny"])],
        namespace("team-a"),
    )
)
@example(  # request.namespace of a cluster-scoped object is absent; the user is authenticated
    case=scenario(
        "example",
        [
            policy(
                validations=[
                    {"expression": "request.namespace == ''"},
                    {"expression": "'system:authenticated' in request.userInfo.groups"},
                ],
                rules=[rule("", "v1", "nodes")],
            )
        ],
        [binding(actions=["Deny"])],
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {}}},
    )
)
@example(  # an erroring variable, said as upstream says it; a trimmed message
    case=scenario(
        "example",
        [
            policy(
                validations=[
                    {"expression": "variables.missing == 1"},
                    {"expression": "false", "message": " m "},
                ],
                variables=[{"name": "missing", "expression": "object.nope"}],
            )
        ],
        [binding(actions=["Deny"])],
        deployment(),
    )
)
@example(  # audit annotations: a string published trimmed, null and '' not; the Warn binding warns
    case=scenario(
        "example",
        [
            policy(
                validations=[{"expression": "false"}],
                auditAnnotations=[
                    {"key": "a", "valueExpression": "' padded '"},
                    {"key": "b", "valueExpression": "null"},
                    {"key": "c", "valueExpression": "''"},
                ],
            )
        ],
        [binding(actions=["Warn"])],
        deployment(),
    )
)
@example(  # an erroring audit annotation under Fail denies, though the binding only audits
    case=scenario(
        "example",
        [
            policy(
                validations=[],
                auditAnnotations=[{"key": "a", "valueExpression": "string(object.metadata.nope)"}],
            )
        ],
        [binding(actions=["Audit"])],
        deployment(),
    )
)
@example(  # ... and under Ignore is skipped, the others published
    case=scenario(
        "example",
        [
            policy(
                validations=[],
                failurePolicy="Ignore",
                auditAnnotations=[
                    {"key": "a", "valueExpression": "string(object.metadata.nope)"},
                    {"key": "b", "valueExpression": "'kept'"},
                ],
            )
        ],
        [binding(actions=["Deny"])],
        deployment(),
    )
)
@example(  # a key given twice, a valueExpression not string or null, or blank: the policy is refused
    case=scenario(
        "example",
        [
            policy(
                auditAnnotations=[
                    {"key": "a", "valueExpression": "'x'"},
                    {"key": "a", "valueExpression": "'y'"},
                ]
            )
        ],
        [binding(actions=["Deny"])],
        deployment(),
    )
)
@example(
    case=scenario(
        "example",
        [policy(auditAnnotations=[{"key": "a", "valueExpression": "1"}])],
        [binding(actions=["Deny"])],
        deployment(),
    )
)
@example(
    case=scenario(
        "example",
        [policy(auditAnnotations=[{"key": "a", "valueExpression": " "}])],
        [binding(actions=["Deny"])],
        deployment(),
    )
)
@example(  # two bindings' params give two values: joined (in an order upstream does not fix)
    case=scenario(
        "example",
        [
            policy(
                validations=[],
                paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
                auditAnnotations=[{"key": "max", "valueExpression": "string(params.data.max)"}],
            )
        ],
        [
            binding(
                "b1",
                actions=["Audit"],
                paramRef={"name": "other", "namespace": "config", "parameterNotFoundAction": "Deny"},
            ),
            binding(
                "b0",
                actions=["Audit"],
                paramRef={"name": "limits", "namespace": "config", "parameterNotFoundAction": "Deny"},
            ),
        ],
        deployment(),
        params=[configmap("limits", "config", {}, max="3"), configmap("other", "config", {}, max="1")],
    )
)
def test_generated(oracle: Oracle, case: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("admission")
    ours, theirs = _compare(oracle, case, folder)
    assert _agree(ours, theirs), (ours, {k: v for k, v in theirs.items() if k != "raw"}, theirs["raw"], case)


def test_cel_errors_are_compared_up_to_the_library_words() -> None:
    """cel-go and cel-expr-python word an evaluation error differently (documented); the rest of
    the message is compared."""
    from tests.differential.admission_cases import comparable

    assert differences.known("admission", "cel-error-wording")
    said = "expression 'object.nope == 1' resulted in error: "
    assert comparable(said + "no such key: nope") == comparable(said + 'Key not found in map : "nope"')
    assert comparable(said + "x") != comparable("expression 'object.other == 1' resulted in error: x")


# -- Kyverno's CEL policies on their own fixtures ---------------------------------------------

#: Every third fixture at the default count (the machine's two cores are shared), all in the long
#: mode (KAFFINITY_DIFFERENTIAL_EXAMPLES above the default).
KYVERNO_CASES = list(kyverno_cases())[:: 1 if examples() > DEFAULT_EXAMPLES else 3]

#: Kyverno fixtures whose difference is documented.
KYVERNO_KNOWN = {
    # `rules: null` written: the typed ClusterRole/Role serializes it as null (no omitempty);
    # kaffinity drops every field written as null
    f"other-cel/{name}/resource.yaml#{index}": "null-field-without-omitempty"
    for name, index in (
        ("restrict-clusterrole-nodesproxy", 4),
        ("restrict-escalation-verbs-roles", 4),
        ("restrict-escalation-verbs-roles", 7),
        ("restrict-secret-role-verbs", 12),
        ("restrict-secret-role-verbs", 13),
        ("restrict-wildcard-resources", 8),
        ("restrict-wildcard-resources", 17),
        ("restrict-wildcard-verbs", 7),
        ("restrict-wildcard-verbs", 15),
    )
}


@pytest.mark.skipif(
    not KYVERNO_CASES, reason="KAFFINITY_KYVERNO_POLICIES names no checkout of kyverno/policies"
)
@pytest.mark.parametrize("case", KYVERNO_CASES, ids=[case[0] for case in KYVERNO_CASES])
def test_kyverno_cel_policy_on_its_fixture(oracle: Oracle, case: tuple[Any, ...], tmp_path: Path) -> None:
    """The VAP Kyverno generates from one of its CEL policies, on each resource of the policy's
    own kyverno-test fixture."""
    name, vap, bound, obj = case
    request = {"policies": [vap], "bindings": [bound], "params": [], "namespaces": [], "object": obj}
    ours, theirs = _compare(oracle, request, tmp_path)
    if ours["not_evaluated"]:
        # kaffinity's validation refuses the object (a label value with a space, a negative
        # maxUnavailable, ephemeral containers on create...): the admission op takes it as valid
        assert differences.known("admission", "object-refused-before-admission")
        return
    if name in KYVERNO_KNOWN:
        assert differences.known("admission", KYVERNO_KNOWN[name])
        assert not _agree(ours, theirs), f"{name}: now agrees, drop it from KYVERNO_KNOWN"
        return
    assert _agree(ours, theirs), (ours, {k: v for k, v in theirs.items() if k != "raw"}, theirs["raw"])


# -- the repository's Kyverno and Gatekeeper samples (as VAPs) on real objects ----------------

SAMPLE_CASES = list(sample_cases())[:: 1 if examples() > DEFAULT_EXAMPLES else 3]


@pytest.mark.parametrize("case", SAMPLE_CASES, ids=[case[0] for case in SAMPLE_CASES])
def test_sample_policies_on_real_objects(oracle: Oracle, case: tuple[Any, ...], tmp_path: Path) -> None:
    """tests/data/admission/samples (Kyverno's and Gatekeeper's scheduling samples written as
    VAPs) on the resources of the Kyverno fixtures they render, or on Deployments,
    StatefulSets, HPAs and PDBs of the real-world corpus."""
    _, base, obj = case
    ours, theirs = _compare(oracle, {**base, "object": obj}, tmp_path)
    if ours["not_evaluated"]:
        assert differences.known("admission", "object-refused-before-admission")
        return
    assert _agree(ours, theirs), (ours, {k: v for k, v in theirs.items() if k != "raw"}, theirs["raw"])
