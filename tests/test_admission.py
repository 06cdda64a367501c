"""ValidatingAdmissionPolicies run offline: the answers kube-apiserver gives, at the right lines.

The cases are those of the Kubernetes documentation's "Validating Admission Policy" page (the
replicas demo bound by a namespace selector, params by name and by selector, matchConditions,
variables, messageExpression, the Warn and Audit actions, failurePolicy), written here as
fixtures. Each test compares (rule, line, column) and the severity the binding's actions give;
the message is checked only where it is the API server's own answer.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from kaffinity.policy.check import reserved_names
from kaffinity.policy.load import load_policies
from kaffinity.policy.vap import INCOMPLETE

from .kit import findings, keys, line_of, lint_text, policy_rules_of, position, run

REPLICAS_POLICY = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: demo-policy.example.com
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups:   ["apps"]
      apiVersions: ["v1"]
      operations:  ["CREATE", "UPDATE"]
      resources:   ["deployments"]
  validations:
    - expression: "object.spec.replicas <= 5"
"""

TEST_BINDING = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: demo-binding-test.example.com
spec:
  policyName: demo-policy.example.com
  validationActions: [{actions}]
  matchResources:
    namespaceSelector:
      matchLabels:
        environment: test
"""

NAMESPACES = """\
apiVersion: v1
kind: Namespace
metadata:
  name: test
  labels: {environment: test}
---
apiVersion: v1
kind: Namespace
metadata:
  name: prod
  labels: {environment: prod}
"""


def deployment(name: str, namespace: str | None, replicas: int | None = None, image: str = "nginx") -> str:
    # As ``kubectl create deployment`` makes it: labelled app=<name>.
    lines = [
        "apiVersion: apps/v1",
        "kind: Deployment",
        "metadata:",
        f"  name: {name}",
        f"  labels: {{app: {name}}}",
    ]
    if namespace:
        lines.append(f"  namespace: {namespace}")
    lines.append("spec:")
    if replicas is not None:
        lines.append(f"  replicas: {replicas}")
    lines += [
        "  selector:",
        f"    matchLabels: {{app: {name}}}",
        "  template:",
        "    metadata:",
        f"      labels: {{app: {name}}}",
        "    spec:",
        "      containers:",
        "      - name: main",
        f"        image: {image}",
    ]
    return "\n".join(lines) + "\n"


def rules(tmp_path: Path, *documents: str, kube_version: str = "1.33") -> list[Any]:
    """The rules of a policy file made of ``documents``; it must load without errors."""
    return policy_rules_of(tmp_path, *documents, kube_version=kube_version)


def severities(result: Any) -> list[str]:
    return [finding.severity.value for finding in findings(result)]


def test_the_replicas_demo_denies_in_the_test_namespace_only(tmp_path: Path) -> None:
    made = rules(tmp_path, REPLICAS_POLICY, TEST_BINDING.format(actions="Deny"))
    text = "---\n".join(
        [NAMESPACES, deployment("web", "test", 6), deployment("api", "prod", 6), deployment("ok", "test", 5)]
    )
    result = lint_text(text, rules=made)
    assert keys(result) == [("demo-policy.example.com", *position(text, "replicas: 6", 1))]
    (finding,) = findings(result)
    assert finding.severity.value == "error"
    # The API server's answer: "... denied request: failed expression: object.spec.replicas <= 5"
    assert finding.message.startswith("failed expression: object.spec.replicas <= 5")


@pytest.mark.parametrize(
    ("actions", "severity"), [("Warn", "warning"), ("Audit", "info"), ("Warn, Audit", "warning")]
)
def test_validation_actions_give_the_severity(tmp_path: Path, actions: str, severity: str) -> None:
    made = rules(tmp_path, REPLICAS_POLICY, TEST_BINDING.format(actions=actions))
    text = NAMESPACES + "---\n" + deployment("web", "test", 6)
    result = lint_text(text, rules=made)
    assert keys(result) == [("demo-policy.example.com", *position(text, "replicas: 6"))]
    assert severities(result) == [severity]


def test_a_policy_without_a_binding_applies_with_deny_to_everything_it_matches(tmp_path: Path) -> None:
    made = rules(tmp_path, REPLICAS_POLICY)
    text = "---\n".join([NAMESPACES, deployment("web", "test", 6), deployment("api", "prod", 7)])
    result = lint_text(text, rules=made)
    assert [line for _, line, _ in keys(result)] == [
        line_of(text, "replicas: 6"),
        line_of(text, "replicas: 7"),
    ]
    assert set(severities(result)) == {"error"}


def test_object_is_defaulted_as_the_api_server_stores_it(tmp_path: Path) -> None:
    """No ``replicas`` written: the API server stores 1, so ``>= 2`` fails, at ``spec``."""
    policy = REPLICAS_POLICY.replace("object.spec.replicas <= 5", "object.spec.replicas >= 2")
    made = rules(tmp_path, policy)
    text = deployment("web", "test")
    assert keys(lint_text(text, rules=made)) == [("demo-policy.example.com", *position(text, "spec:", 1))]


PARAM_POLICY = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replicalimit-policy.example.com
spec:
  failurePolicy: Fail
  paramKind:
    apiVersion: rules.example.com/v1
    kind: ReplicaLimit
  matchConstraints:
    resourceRules:
    - apiGroups:   ["apps"]
      apiVersions: ["v1"]
      operations:  ["CREATE", "UPDATE"]
      resources:   ["deployments"]
  validations:
    - expression: "object.spec.replicas <= params.maxReplicas"
      messageExpression: "'object.spec.replicas must be no greater than ' + string(params.maxReplicas)"
      reason: Invalid
"""

PARAM_BINDINGS = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replicalimit-binding-test.example.com
spec:
  policyName: replicalimit-policy.example.com
  validationActions: [Deny]
  paramRef:
    name: replica-limit-test.example.com
    namespace: default
    parameterNotFoundAction: Deny
  matchResources:
    namespaceSelector:
      matchLabels:
        environment: test
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replicalimit-binding-nontest
spec:
  policyName: replicalimit-policy.example.com
  validationActions: [Deny]
  paramRef:
    name: replica-limit-prod.example.com
    namespace: default
    parameterNotFoundAction: Deny
  matchResources:
    namespaceSelector:
      matchExpressions:
      - key: environment
        operator: NotIn
        values: [test]
"""

PARAMS = """\
apiVersion: rules.example.com/v1
kind: ReplicaLimit
metadata:
  name: replica-limit-test.example.com
  namespace: default
maxReplicas: 3
---
apiVersion: rules.example.com/v1
kind: ReplicaLimit
metadata:
  name: replica-limit-prod.example.com
  namespace: default
maxReplicas: 100
"""


def test_params_by_name_per_binding_and_the_message_expression(tmp_path: Path) -> None:
    made = rules(tmp_path, PARAM_POLICY, PARAM_BINDINGS, PARAMS)
    text = "---\n".join(
        [
            NAMESPACES,
            deployment("web", "test", 5),
            deployment("api", "prod", 5),
            deployment("big", "prod", 200),
        ]
    )
    result = lint_text(text, rules=made)
    assert keys(result) == [
        ("replicalimit-policy.example.com", *position(text, "replicas: 5", 1)),
        ("replicalimit-policy.example.com", *position(text, "replicas: 200")),
    ]
    messages = [finding.message for finding in findings(result)]
    assert messages[0].startswith("object.spec.replicas must be no greater than 3")
    assert messages[1].startswith("object.spec.replicas must be no greater than 100")


def test_a_param_not_found_denies_or_allows_as_the_binding_says(tmp_path: Path) -> None:
    text = NAMESPACES + "---\n" + deployment("web", "test", 5)
    made = rules(tmp_path, PARAM_POLICY, PARAM_BINDINGS)  # no ReplicaLimit objects
    assert keys(lint_text(text, rules=made)) == [
        ("replicalimit-policy.example.com", *position(text, "apiVersion: apps/v1"))
    ]
    allowing = PARAM_BINDINGS.replace("parameterNotFoundAction: Deny", "parameterNotFoundAction: Allow")
    assert keys(lint_text(text, rules=rules(tmp_path, PARAM_POLICY, allowing))) == []


def test_params_from_a_configmap_selected_by_label_each_evaluated(tmp_path: Path) -> None:
    policy = """\
    apiVersion: admissionregistration.k8s.io/v1
    kind: ValidatingAdmissionPolicy
    metadata:
      name: max-replicas
    spec:
      paramKind: {apiVersion: v1, kind: ConfigMap}
      matchConstraints:
        resourceRules:
        - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
      validations:
        - expression: "object.spec.replicas <= int(params.data.maxReplicas)"
          messageExpression: >-
            'at most ' + params.data.maxReplicas + ' replicas (' + params.metadata.name + ')'

    ---
    apiVersion: admissionregistration.k8s.io/v1
    kind: ValidatingAdmissionPolicyBinding
    metadata:
      name: max-replicas
    spec:
      policyName: max-replicas
      validationActions: [Warn]
      paramRef:
        selector:
          matchLabels: {policy: max-replicas}
        parameterNotFoundAction: Allow
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: limit-a, namespace: test, labels: {policy: max-replicas}}
    data: {maxReplicas: "4"}
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: limit-b, namespace: test, labels: {policy: max-replicas}}
    data: {maxReplicas: "2"}
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: elsewhere, namespace: prod, labels: {policy: max-replicas}}
    data: {maxReplicas: "1"}
    """
    made = rules(tmp_path, policy)
    text = "---\n".join([NAMESPACES, deployment("web", "test", 3), deployment("api", "prod", 1)])
    result = lint_text(text, rules=made)
    # Two params in the request's namespace: each evaluated; only limit-b (2) is broken.
    assert keys(result) == [("max-replicas", *position(text, "replicas: 3"))]
    assert findings(result)[0].message.startswith("at most 2 replicas (limit-b)")
    assert severities(result) == ["warning"]


MATCH_CONDITIONS = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: demo-policy.example.com
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups:   ["*"]
        apiVersions: ["*"]
        operations:  ["CREATE", "UPDATE"]
        resources:   ["*"]
  matchConditions:
    - name: 'exclude-leases'
      expression: >-
        !(request.resource.group == "coordination.k8s.io" && request.resource.resource == "leases")
    - name: 'exclude-kubelet-requests'
      expression: '!("system:nodes" in request.userInfo.groups)'
    - name: 'rbac'
      expression: 'request.resource.group != "rbac.authorization.k8s.io"'
  validations:
    - expression: "object.metadata.name.startsWith('demo')"
"""


def test_match_conditions_skip_what_they_exclude(tmp_path: Path) -> None:
    made = rules(tmp_path, MATCH_CONDITIONS)
    text = textwrap.dedent(
        """\
        apiVersion: coordination.k8s.io/v1
        kind: Lease
        metadata: {name: lease-a, namespace: test}
        ---
        apiVersion: rbac.authorization.k8s.io/v1
        kind: Role
        metadata: {name: role-a, namespace: test}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: demo-config, namespace: test}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: other-config, namespace: test}
        """
    )
    result = lint_text(text, rules=made)
    assert keys(result) == [("demo-policy.example.com", *position(text, "name: other-config"))]


VARIABLES = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: image-matches-namespace-environment.policy.example.com
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups:   ["apps"]
      apiVersions: ["v1"]
      operations:  ["CREATE", "UPDATE"]
      resources:   ["deployments"]
  variables:
  - name: environment
    expression: >-
      'environment' in namespaceObject.metadata.labels ?
      namespaceObject.metadata.labels['environment'] : 'prod'
  - name: exempt
    expression: "'exempt' in object.metadata.labels && object.metadata.labels['exempt'] == 'true'"
  - name: containers
    expression: "object.spec.template.spec.containers"
  - name: containersToCheck
    expression: "variables.containers.filter(c, c.image.contains('example.com'))"
  validations:
  - expression: >-
      variables.exempt ||
      variables.containersToCheck.all(c, c.image.startsWith(variables.environment + '.'))
    messageExpression: >-
      'only ' + variables.environment + ' images are allowed in namespace ' +
      namespaceObject.metadata.name
"""


def test_variables_and_the_namespace_object(tmp_path: Path) -> None:
    made = rules(tmp_path, VARIABLES)
    text = "---\n".join(
        [
            NAMESPACES,
            deployment("invalid", "prod", image="dev.example.com/nginx"),
            deployment("valid", "prod", image="prod.example.com/nginx"),
            deployment("testing", "test", image="test.example.com/nginx"),
            deployment("other", "test", image="docker.io/nginx"),
        ]
    )
    result = lint_text(text, rules=made)
    rule = "image-matches-namespace-environment.policy.example.com"
    # No field of object in the expression (variables only): the finding is on the object.
    assert keys(result) == [(rule, *position(text, "apiVersion: apps/v1", 1))]
    assert findings(result)[0].message.startswith("only prod images are allowed in namespace prod")


def test_a_missing_field_errors_as_in_the_api_server(tmp_path: Path) -> None:
    """The documentation's example reads ``object.metadata.labels`` unguarded: on an object
    without labels CEL says "no such key", and failurePolicy Fail makes that a denial."""
    made = rules(tmp_path, VARIABLES)
    text = deployment("invalid", "prod", image="dev.example.com/nginx").replace(
        "  labels: {app: invalid}\n", "", 1
    )
    result = lint_text(text, rules=made)
    # A validation without a field path is reported at the object: its first line.
    assert keys(result) == [
        ("image-matches-namespace-environment.policy.example.com", *position(text, "apiVersion"))
    ]
    (finding,) = findings(result)
    # The API server's words are the subject: CEL's error on the missing key.
    # (upstream's words: activation.go's around composition.go's, as the oracle answers)
    assert 'resulted in error: composited variable "exempt" fails to evaluate' in finding.message


def test_an_undeclared_namespace_has_only_its_name_label(tmp_path: Path) -> None:
    made = rules(tmp_path, VARIABLES)
    text = deployment("invalid", "elsewhere", image="dev.example.com/nginx")
    result = lint_text(text, rules=made)
    assert keys(result) == [
        ("image-matches-namespace-environment.policy.example.com", *position(text, "apiVersion"))
    ]
    # The policy's messageExpression is the subject: it reads the namespace object's name label.
    assert findings(result)[0].message.startswith("only prod images are allowed in namespace elsewhere")


@pytest.mark.parametrize(("failure_policy", "found"), [("Fail", True), ("Ignore", False)])
def test_an_expression_error_follows_the_failure_policy(
    tmp_path: Path, failure_policy: str, found: bool
) -> None:
    policy = REPLICAS_POLICY.replace("failurePolicy: Fail", f"failurePolicy: {failure_policy}").replace(
        "object.spec.replicas <= 5", "object.spec.paused == false"
    )
    made = rules(tmp_path, policy)
    text = deployment("web", "test", 2)  # no paused field: "no such key"
    result = lint_text(text, rules=made)
    assert keys(result) == ([("demo-policy.example.com", *position(text, "spec:", 1))] if found else [])
    if found:
        assert "resulted in error" in findings(result)[0].message


def test_a_validation_has_no_field_path(tmp_path: Path) -> None:
    """``fieldPath`` is a CRD validation rule's field, not a ValidatingAdmissionPolicy's
    (admissionregistration/v1 Validation: expression, message, messageExpression, reason):
    the API server refuses it, and so does kaffinity, at its line."""
    policy = REPLICAS_POLICY + "      fieldPath: spec.replicas\n"
    path = tmp_path / "policy.yaml"
    path.write_text(policy)
    loaded = load_policies([str(path)], reserved_names())
    assert [error.split(": error: ")[0] for error in loaded.errors] == [
        "{}:{}:{}".format(path, *position(policy, "fieldPath"))
    ]


def test_a_kubectl_capture_of_a_list_reads_like_the_objects(tmp_path: Path) -> None:
    listed = "apiVersion: v1\nkind: List\nitems:\n" + textwrap.indent(
        "- " + textwrap.indent(REPLICAS_POLICY, "  ").lstrip(), ""
    )
    made = rules(tmp_path, listed)
    text = deployment("web", "test", 6)
    assert keys(lint_text(text, rules=made)) == [("demo-policy.example.com", *position(text, "replicas: 6"))]


def test_authorizer_is_reported_once_at_the_policy_and_skipped(tmp_path: Path) -> None:
    policy = REPLICAS_POLICY.replace(
        '"object.spec.replicas <= 5"',
        "\"authorizer.group('apps').resource('deployments').check('create').allowed()\"",
    )
    made = rules(tmp_path, policy)
    result = lint_text(deployment("web", "test", 6), rules=made)
    assert [(f.file, f.line, f.severity.value) for f in findings(result)] == [
        (str(tmp_path / "policy.yaml"), line_of(policy, "authorizer"), "warning")
    ]


def test_the_cli_runs_a_policy_with_its_binding_and_exits_1(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(REPLICAS_POLICY + "---\n" + TEST_BINDING.format(actions="Deny"))
    (tmp_path / "app.yaml").write_text(NAMESPACES + "---\n" + deployment("web", "test", 6))
    completed = run(
        "lint",
        "--no-config",
        "--select",
        "policy",
        str(tmp_path / "app.yaml"),
        "--policy",
        str(tmp_path / "policy.yaml"),
    )
    assert completed.returncode == 1
    assert (
        f"app.yaml:{line_of(NAMESPACES + '---' + chr(10) + deployment('web', 'test', 6), 'replicas: 6')}:3"
        in completed.stdout
    )


HPA_POLICY = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: cpu-target
spec:
  matchConstraints:
    matchPolicy: {match_policy}
    resourceRules:
    - apiGroups: [autoscaling]
      apiVersions: [v2]
      operations: [CREATE]
      resources: [horizontalpodautoscalers]
  validations:
    - expression: >-
        object.spec.metrics.all(m, m.type != 'Resource' || m.resource.target.averageUtilization <= 70)
    - expression: request.kind.version == 'v2' && request.requestKind.version == 'v1'
"""

HPA_V1 = """\
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  targetCPUUtilizationPercentage: 90
"""


@pytest.mark.parametrize(("match_policy", "found"), [("Equivalent", True), ("Exact", False)])
def test_equivalent_matches_by_another_version_and_converts(
    tmp_path: Path, match_policy: str, found: bool
) -> None:
    """An autoscaling/v1 HPA, a policy on v2: with Equivalent (the default) the API server
    converts it (targetCPUUtilizationPercentage 90 -> a cpu Utilization metric of 90) and the
    policy denies it; with Exact it does not match."""
    made = rules(tmp_path, HPA_POLICY.format(match_policy=match_policy))
    result = lint_text(HPA_V1, rules=made)
    # Converted: the first validation fails (90 > 70), the second holds (v2 matched, v1 sent).
    assert keys(result) == ([("cpu-target", *position(HPA_V1, "spec:"))] if found else [])


def test_objects_the_api_server_refuses_reach_no_policy(tmp_path: Path) -> None:
    """A Deployment without a template is refused by validation before admission: the policy
    does not evaluate it (the built-in rules say why it is refused), and says so once, as a note
    at the object (issue 35: not silently)."""
    made = rules(
        tmp_path, REPLICAS_POLICY.replace("object.spec.replicas <= 5", "object.spec.template != null")
    )
    text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: half}\nspec:\n  replicas: 2\n"
    result = lint_text(text, rules=made)
    assert keys(result) == [("demo-policy.example.com", 1, 1)]
    (finding,) = findings(result)
    assert finding.severity.value == "info"
    # no template: a fragment rather than a validation error
    assert finding.message == f"{INCOMPLETE} (demo-policy.example.com)"
    # a policy that does not match the object says nothing of it
    other = rules(tmp_path, REPLICAS_POLICY.replace('resources:   ["deployments"]', 'resources:   ["pods"]'))
    assert keys(lint_text(text, rules=other)) == []


def test_deny_with_warn_and_a_file_of_no_policy_are_errors(tmp_path: Path) -> None:
    """The API server refuses a binding that both denies and warns; a --policy path that holds
    no policy at all (a list, params alone) is an error, not a silent pass."""
    binding = TEST_BINDING.format(actions="Deny, Warn")
    path = tmp_path / "binding.yaml"
    path.write_text(REPLICAS_POLICY + "---\n" + binding)
    loaded = load_policies([str(path)], reserved_names())
    assert [error.split(": error: ")[0] for error in loaded.errors] == [
        "{}:{}:{}".format(path, *position(REPLICAS_POLICY + "---\n" + binding, "validationActions"))
    ]
    params = tmp_path / "params.yaml"
    params.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: limits}\n")
    assert load_policies([str(params)], reserved_names()).errors == [
        f"kaffinity: error: {params}: no policy (Policy or ValidatingAdmissionPolicy) found"
    ]


#: The documentation's auditAnnotations example ("Audit annotations": the high replica count).
AUDIT_POLICY = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: demo-policy.example.com
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups:   ["apps"]
      apiVersions: ["v1"]
      operations:  ["CREATE", "UPDATE"]
      resources:   ["deployments"]
  validations:
    - expression: "object.spec.replicas > 50"
      messageExpression: "'Deployment spec.replicas set to ' + string(object.spec.replicas)"
  auditAnnotations:
    - key: "high-replica-count"
      valueExpression: "'Deployment spec.replicas set to ' + string(object.spec.replicas)"
"""


def test_the_documentations_audit_annotation_is_published(tmp_path: Path) -> None:
    """validator.go/dispatcher.go: the valueExpression's string is the request's audit annotation
    ``demo-policy.example.com/high-replica-count`` (the oracle's auditAnnotations), an info
    finding at the field it reads, next to the Audit binding's own finding."""
    made = rules(tmp_path, AUDIT_POLICY, TEST_BINDING.format(actions="Audit"))
    text = NAMESPACES + "---\n" + deployment("web", "test", 60) + "---\n" + deployment("api", "test", 7)
    result = lint_text(text, rules=made)
    at_60, at_7 = position(text, "replicas: 60"), position(text, "replicas: 7")
    said = sorted((f.rule, f.line, f.column, f.severity.value, f.message) for f in findings(result))
    name, annotation = (
        "demo-policy.example.com",
        "audit annotation demo-policy.example.com/high-replica-count",
    )
    assert said == [
        (name, *at_60, "info", f"{annotation}: Deployment spec.replicas set to 60"),
        (name, *at_7, "info", "Deployment spec.replicas set to 7 (binding demo-binding-test.example.com)"),
        (name, *at_7, "info", f"{annotation}: Deployment spec.replicas set to 7"),
    ]
