"""ValidatingAdmissionPolicy answers that kube-apiserver's own admission plugin gave (the oracle's
``admission`` op, tests/differential/test_admission.py) where kaffinity answered otherwise before
issue 35: each is kept here, without the oracle, as (rule, line, column), severity and message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kaffinity.config import Settings
from kaffinity.policy.check import policy_rules, reserved_names
from kaffinity.policy.load import load_policies

from .kit import findings, lint_text, policy_rules_of

V1 = "admissionregistration.k8s.io/v1"
DEPLOYMENTS = {
    "apiGroups": ["apps"],
    "apiVersions": ["v1"],
    "operations": ["CREATE"],
    "resources": ["deployments"],
}
NODES = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["nodes"]}


def policy(validations: list[dict[str, Any]], rules: list[Any] | None = None, **spec: Any) -> str:
    body = {"matchConstraints": {"resourceRules": rules or [DEPLOYMENTS]}, "validations": validations, **spec}
    return json.dumps(
        {"apiVersion": V1, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "p"}, "spec": body}
    )


def binding(actions: list[str] | None = None, **spec: Any) -> str:
    body: dict[str, Any] = {"policyName": "p", **spec}
    if actions is not None:
        body["validationActions"] = actions
    return json.dumps(
        {
            "apiVersion": V1,
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "b"},
            "spec": body,
        }
    )


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: test
  labels: {app: web}
spec:
  replicas: 7
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx}]
"""

NODE = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n"
CONFIGMAP_KIND = {"apiVersion": "v1", "kind": "ConfigMap"}


def found(tmp_path: Path, text: str, *documents: str) -> list[tuple[str, int | None, int | None, str, str]]:
    """(rule, line, column, severity, message) of the policy's findings on ``text``."""
    made = policy_rules_of(tmp_path, *(f"{document}\n" for document in documents))
    return [
        (f.rule, f.line, f.column, f.severity.value, f.message) for f in findings(lint_text(text, rules=made))
    ]


def problems(tmp_path: Path, *documents: str) -> list[str]:
    """What loading the policy file says (the API server's refusals), without the file's name."""
    path = tmp_path / "policy.yaml"
    path.write_text("".join(f"---\n{document}\n" for document in documents), encoding="utf-8")
    loaded = load_policies([str(path)], reserved_names())
    _, errors = policy_rules(loaded, Settings())
    return [line.split(": error: ", 1)[1] for line in [*loaded.errors, *errors]]


def test_a_binding_with_empty_resource_rules_matches_everything(tmp_path: Path) -> None:
    """matching.go: ``len(ResourceRules) == 0`` matches (the oracle denied; kaffinity matched nothing)."""
    said = found(
        tmp_path,
        DEPLOYMENT,
        policy([{"expression": "false", "message": "matched"}]),
        binding(["Deny"], matchResources={"resourceRules": []}),
    )
    assert said == [("p", 1, 1, "error", "matched (binding b)")]


def test_params_not_found_is_a_configuration_error_whatever_the_actions(tmp_path: Path) -> None:
    """dispatcher.go's addConfigError: denied though the binding only warns (kaffinity warned)."""
    ref = {"name": "limits", "parameterNotFoundAction": "Deny"}
    said = found(
        tmp_path,
        DEPLOYMENT,
        policy([{"expression": "true"}], paramKind=CONFIGMAP_KIND),
        binding(["Warn"], paramRef=ref),
    )
    message = (
        "failed to configure binding: no params found for policy binding with `Deny` "
        "parameterNotFoundAction (ConfigMap limits in namespace test) (binding b)"
    )
    assert said == [("p", 1, 1, "error", message)]


def test_a_configuration_error_is_skipped_under_ignore(tmp_path: Path) -> None:
    ref = {"name": "limits", "parameterNotFoundAction": "Deny"}
    ignored = policy([{"expression": "true"}], paramKind=CONFIGMAP_KIND, failurePolicy="Ignore")
    assert found(tmp_path, DEPLOYMENT, ignored, binding(["Deny"], paramRef=ref)) == []


def test_a_namespaced_param_kind_against_a_cluster_scoped_object_is_an_error(tmp_path: Path) -> None:
    """generic.CollectParams: no paramRef.namespace and no request namespace (the oracle denied a
    Node; kaffinity allowed it with parameterNotFoundAction Allow)."""
    ref = {"name": "limits", "parameterNotFoundAction": "Allow"}
    said = found(
        tmp_path,
        NODE,
        policy([{"expression": "true"}], [NODES], paramKind=CONFIGMAP_KIND),
        binding(["Deny"], paramRef=ref),
    )
    assert [(rule, line, column, severity) for rule, line, column, severity, _ in said] == [
        ("p", 1, 1, "error")
    ]
    assert said[0][4].startswith(
        "failed to configure binding: cannot use namespaced paramRef in policy binding that matches "
        "cluster-scoped resources"
    )


def test_a_cluster_scoped_param_kind_with_a_namespace_is_an_error(tmp_path: Path) -> None:
    kind = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass"}
    ref = {"name": "limits", "namespace": "config", "parameterNotFoundAction": "Allow"}
    said = found(
        tmp_path,
        DEPLOYMENT,
        policy([{"expression": "true"}], paramKind=kind),
        binding(["Audit"], paramRef=ref),
    )
    assert [(rule, line, column, severity) for rule, line, column, severity, _ in said] == [
        ("p", 1, 1, "error")
    ]
    assert "paramRef.namespace must not be provided for a cluster-scoped `paramKind`" in said[0][4]


def test_the_documentations_prod_param_is_found_in_the_default_namespace(tmp_path: Path) -> None:
    """The ReplicaLimit of the documentation is written without a namespace and bound with
    ``paramRef.namespace: default``: kubectl apply puts it there (kaffinity reported it missing
    on every Deployment). 7 replicas against its limit of 3."""
    kind = {"apiVersion": "rules.example.com/v1", "kind": "ReplicaLimit"}
    check = [
        {
            "expression": "object.spec.replicas <= params.maxReplicas",
            "messageExpression": (
                "'object.spec.replicas must be no greater than ' + string(params.maxReplicas)"
            ),
        }
    ]
    ref = {
        "name": "replica-limit-prod.example.com",
        "namespace": "default",
        "parameterNotFoundAction": "Deny",
    }
    param = json.dumps(
        {
            "apiVersion": "rules.example.com/v1",
            "kind": "ReplicaLimit",
            "metadata": {"name": "replica-limit-prod.example.com"},
            "maxReplicas": 3,
        }
    )
    said = found(tmp_path, DEPLOYMENT, policy(check, paramKind=kind), binding(["Deny"], paramRef=ref), param)
    assert said == [("p", 8, 3, "error", "object.spec.replicas must be no greater than 3 (binding b)")]


def test_a_false_match_condition_wins_over_an_erroring_one(tmp_path: Path) -> None:
    """matchconditions/matcher.go evaluates every condition: one false skips the policy (kaffinity
    stopped at the error and denied)."""
    conditions = [{"name": "a", "expression": "object.nope == 1"}, {"name": "b", "expression": "false"}]
    assert (
        found(
            tmp_path,
            DEPLOYMENT,
            policy([{"expression": "false"}], matchConditions=conditions),
            binding(["Deny"]),
        )
        == []
    )
    erring = [{"name": "a", "expression": "object.nope == 1"}, {"name": "b", "expression": "true"}]
    said = found(
        tmp_path, DEPLOYMENT, policy([{"expression": "false"}], matchConditions=erring), binding(["Deny"])
    )
    assert [(rule, line, column, severity) for rule, line, column, severity, _ in said] == [
        ("p", 1, 1, "error")
    ]
    assert said[0][4].startswith("expression 'object.nope == 1' resulted in error: ")


def test_a_namespace_being_created_carries_its_own_name_label(tmp_path: Path) -> None:
    """SetDefaults_Namespace: the policy's namespaceSelector on the name label selects it."""
    namespaces = {
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "operations": ["CREATE"],
        "resources": ["namespaces"],
    }
    constraints = {
        "resourceRules": [namespaces],
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}},
    }
    text = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n"
    said = found(
        tmp_path,
        text,
        policy([{"expression": "false", "message": "no team-a"}], matchConstraints=constraints),
        binding(["Deny"]),
    )
    assert said == [("p", 1, 1, "error", "no team-a (binding b)")]


def test_the_api_servers_refusals_of_bindings_and_policies(tmp_path: Path) -> None:
    """pkg/apis/admissionregistration/validation: a v1 binding without validationActions, a
    paramRef without parameterNotFoundAction, a policy without matchConstraints (kaffinity
    evaluated them: a binding without actions as Deny)."""
    good = policy([{"expression": "true"}])
    assert problems(tmp_path, good, binding()) == [
        "spec.validationActions: Required value: at least one validation action is required"
    ]
    ref = binding(["Deny"], paramRef={"name": "x"})
    assert problems(tmp_path, policy([{"expression": "true"}], paramKind=CONFIGMAP_KIND), ref) == [
        "spec.paramRef.parameterNotFoundAction: Required value"
    ]
    bare = json.dumps(
        {
            "apiVersion": V1,
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "p"},
            "spec": {"validations": [{"expression": "true"}]},
        }
    )
    # (and the binding then binds no policy the files hold)
    assert problems(tmp_path, bare, binding(["Deny"]))[0] == "spec.matchConstraints: Required value"
    # the compiler's type check: a messageExpression typed dyn
    dyn = policy([{"expression": "false", "messageExpression": "object.metadata.name"}])
    (said,) = problems(tmp_path, dyn, binding(["Deny"]))
    assert said.endswith("the expression does not compile: must evaluate to string but got dyn")


def test_the_request_of_a_cluster_scoped_object_has_no_namespace(tmp_path: Path) -> None:
    """The AdmissionRequest's empty ``omitempty`` fields are absent: ``request.namespace`` of a
    Node is a "no such key" error; the user is authenticated."""
    checks = [
        {"expression": "request.namespace == ''"},
        {"expression": "'system:authenticated' in request.userInfo.groups"},
    ]
    said = found(tmp_path, NODE, policy(checks, [NODES]), binding(["Deny"]))
    assert [(rule, line, column, severity) for rule, line, column, severity, _ in said] == [
        ("p", 1, 1, "error")
    ]
    assert said[0][4].startswith("expression 'request.namespace == ''' resulted in error: ")


def test_an_erroring_variable_is_said_as_upstream_says_it(tmp_path: Path) -> None:
    """activation.go around composition.go."""
    variables = [{"name": "broken", "expression": "object.nope"}]
    said = found(
        tmp_path,
        DEPLOYMENT,
        policy([{"expression": "variables.broken == 1"}], variables=variables),
        binding(["Deny"]),
    )
    assert [(rule, line, column, severity) for rule, line, column, severity, _ in said] == [
        ("p", 1, 1, "error")
    ]
    assert said[0][4].startswith(
        "expression 'variables.broken == 1' resulted in error: "
        'composited variable "broken" fails to evaluate: '
    )


def test_empty_labels_are_absent_and_messages_trimmed(tmp_path: Path) -> None:
    """ObjectMeta's labels are omitempty: ``labels: {}`` is not there; validator.go trims the
    message and the expression it falls back to."""
    text = NODE.replace("name: n1\n", "name: n1\n  labels: {}\n")
    checks = [
        {"expression": "has(object.metadata.labels)", "message": "  no labels  "},
        {"expression": " false "},
    ]
    said = found(tmp_path, text, policy(checks, [NODES]), binding(["Deny"]))
    assert sorted((severity, message) for *_, severity, message in said) == [
        ("error", "failed expression: false (binding b)"),
        ("error", "no labels (binding b)"),
    ]


def test_an_object_the_api_server_refuses_is_noted_once_not_evaluated(tmp_path: Path) -> None:
    """A label value with a space: the API server's validation refuses the Pod before
    validating admission. The Kyverno fixture's case (kubecost-cel/require-kubecost-labels):
    the oracle, which takes the object as valid, evaluates it; kaffinity says once, by the first
    policy by name, that none of the policies matching it evaluates it."""
    from kaffinity.policy.vap import NOT_EVALUATED

    text = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: badpod02\n  labels: {owner: John Doe}\n"
        "spec:\n  containers: [{name: busybox, image: 'busybox:1.35'}]\n"
    )
    pods = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
    first = policy([{"expression": "false"}], [pods])
    second = first.replace('"name": "p"', '"name": "a-first"')
    made = policy_rules_of(tmp_path, f"{first}\n", f"{second}\n", f"{binding(['Deny'])}\n")
    result = lint_text(text, rules=made)
    said = [
        (f.rule, f.line, f.column, f.severity.value, f.message)
        for f in findings(result)
        if f.category == "policy"
    ]
    assert said == [("a-first", 1, 1, "info", f"{NOT_EVALUATED} (a-first, p)")]


# -- auditAnnotations (validator.go, dispatcher.go): kaffinity did not evaluate them -------------


def annotated(*pairs: tuple[str, str], validations: list[dict[str, Any]] | None = None, **spec: Any) -> str:
    """The policy ``p`` with audit annotations (key, valueExpression)."""
    annotations = [{"key": key, "valueExpression": value} for key, value in pairs]
    return policy(validations or [], auditAnnotations=annotations, **spec)


def test_audit_annotations_are_published_trimmed(tmp_path: Path) -> None:
    """A string value, trimmed, is the annotation ``p/<key>`` (an info finding at the field it
    reads); null and a blank string publish nothing. The oracle's auditAnnotations:
    {"p/a": "padded", "p/d": "replicas 7"}."""
    made = annotated(
        ("a", "' padded '"),
        ("b", "null"),
        ("c", "'  '"),
        ("d", "'replicas ' + string(object.spec.replicas)"),
        validations=[{"expression": "false"}],
    )
    said = found(tmp_path, DEPLOYMENT, made, binding(["Warn"]))
    assert sorted(said) == [
        ("p", 1, 1, "info", "audit annotation p/a: padded"),
        ("p", 1, 1, "warning", "failed expression: false (binding b)"),
        ("p", 8, 3, "info", "audit annotation p/d: replicas 7"),
    ]


def test_an_erroring_audit_annotation_denies_under_fail_whatever_the_actions(tmp_path: Path) -> None:
    """dispatcher.go: AuditAnnotationActionError is a denied decision, though the binding only
    audits (the oracle: "ValidatingAdmissionPolicy 'p' with binding 'b' denied request:
    expression 'string(object.metadata.nope)' resulted in error: no such key: nope")."""
    made = annotated(("a", "string(object.metadata.nope)"), ("b", "'kept'"))
    said = sorted(found(tmp_path, DEPLOYMENT, made, binding(["Audit"])))
    assert [(rule, line, column, severity) for rule, line, column, severity, _ in said] == [
        ("p", 1, 1, "info"),
        ("p", 3, 1, "error"),
    ]
    assert said[0][4] == "audit annotation p/b: kept"
    assert said[1][4].startswith("expression 'string(object.metadata.nope)' resulted in error: ")
    assert said[1][4].endswith(" (binding b)")


def test_an_erroring_audit_annotation_is_skipped_under_ignore(tmp_path: Path) -> None:
    made = annotated(("a", "string(object.metadata.nope)"), ("b", "'kept'"), failurePolicy="Ignore")
    assert found(tmp_path, DEPLOYMENT, made, binding(["Deny"])) == [
        ("p", 1, 1, "info", "audit annotation p/b: kept")
    ]


def test_the_values_of_several_bindings_are_joined(tmp_path: Path) -> None:
    """auditAnnotationCollector: each binding's params give a value; the distinct ones joined by
    ", " (upstream in its informer's order: differences.yaml admission/audit-annotation-value-order)."""
    made = annotated(("max", "string(params.data.max)"), paramKind=CONFIGMAP_KIND)
    limits = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "config"}}
    params = [
        json.dumps({**limits, "metadata": {"name": n, "namespace": "config"}, "data": {"max": m}})
        for n, m in (("limits", "3"), ("other", "1"), ("same", "3"))
    ]
    bindings = [
        json.dumps(
            {
                "apiVersion": V1,
                "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": f"b{index}"},
                "spec": {
                    "policyName": "p",
                    "validationActions": ["Audit"],
                    "paramRef": {"name": name, "namespace": "config", "parameterNotFoundAction": "Deny"},
                },
            }
        )
        for index, name in enumerate(("limits", "other", "same"))
    ]
    assert found(tmp_path, DEPLOYMENT, made, *bindings, *params) == [
        ("p", 1, 1, "info", "audit annotation p/max: 3, 1")
    ]


def test_the_api_server_refuses_bad_audit_annotations(tmp_path: Path) -> None:
    """validateValidatingAdmissionPolicySpec / validateAuditAnnotation: a key given twice, a blank
    valueExpression, a type other than string or null (kaffinity accepted them all)."""
    assert problems(tmp_path, annotated(("a", "'x'"), ("a", "'y'"))) == [
        'spec.auditAnnotations[1].key: Duplicate value: "a"'
    ]
    assert problems(tmp_path, annotated(("a", " "))) == [
        "spec.auditAnnotations[0].valueExpression: Required value: valueExpression is not specified"
    ]
    for value, got in (("1", "int"), ("object.metadata.name", "dyn")):
        (said,) = problems(tmp_path, annotated(("a", value)))
        assert said.startswith("spec.auditAnnotations[0].valueExpression: ")
        assert said.endswith(f"must evaluate to one of [string null_type] but got {got}")
