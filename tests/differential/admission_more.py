"""More admission scenarios: matching (``matching/matching_test.go``: resource rules,
exclusions, names, scope, selectors, a Namespace being created, ``matchPolicy``), evaluation
(messages, reasons, defaults, the request, errors under each failurePolicy, matchConditions,
variables, several bindings and policies) and what the API server's validation refuses. Inputs
only: the answers come from the oracle."""

from __future__ import annotations

import itertools
from typing import Any

from tests.differential.admission_objects import (
    Scenario,
    binding,
    deployment,
    deployments,
    namespace,
    policy,
    rule,
    scenario,
)


def matching() -> list[Scenario]:
    out = []
    checks = [{"expression": "false", "message": "matched"}]
    cases: list[tuple[str, dict[str, Any], dict[str, Any] | None, dict[str, Any]]] = [
        ("binding resourceRules empty", {}, {"resourceRules": []}, deployment()),
        ("binding resourceRules other", {}, {"resourceRules": [rule("", "v1", "pods")]}, deployment()),
        ("binding resourceRules same", {}, {"resourceRules": [deployments()]}, deployment()),
        ("binding excludes", {}, {"excludeResourceRules": [deployments()]}, deployment()),
        (
            "binding excludes by name",
            {},
            {"excludeResourceRules": [deployments(resourceNames=["web"])]},
            deployment(),
        ),
        (
            "binding excludes other name",
            {},
            {"excludeResourceRules": [deployments(resourceNames=["api"])]},
            deployment(),
        ),
        ("policy resourceNames", {"rules": [deployments(resourceNames=["web"])]}, None, deployment()),
        ("policy resourceNames other", {"rules": [deployments(resourceNames=["api"])]}, None, deployment()),
        ("scope Namespaced", {"rules": [deployments(scope="Namespaced")]}, None, deployment()),
        ("scope Cluster", {"rules": [deployments(scope="Cluster")]}, None, deployment()),
        ("operations UPDATE only", {"rules": [deployments(operations=["UPDATE"])]}, None, deployment()),
        ("operations *", {"rules": [deployments(operations=["*"])]}, None, deployment()),
        ("resources */*", {"rules": [deployments(resources=["*/*"])]}, None, deployment()),
        (
            "resources */status",
            {"rules": [deployments(resources=["deployments/status"])]},
            None,
            deployment(),
        ),
        ("object selector", {"objectSelector": {"matchLabels": {"app": "web"}}}, None, deployment()),
        ("object selector other", {"objectSelector": {"matchLabels": {"app": "api"}}}, None, deployment()),
        (
            "object selector DoesNotExist",
            {"objectSelector": {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}},
            None,
            deployment(),
        ),
        (
            "namespace selector",
            {"namespaceSelector": {"matchLabels": {"environment": "test"}}},
            None,
            deployment(),
        ),
        (
            "namespace selector undeclared",
            {"namespaceSelector": {"matchLabels": {"environment": "test"}}},
            None,
            deployment(ns="other"),
        ),
        (
            "namespace selector name label",
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "other"}}},
            None,
            deployment(ns="other"),
        ),
        (
            "namespace selector default ns",
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "default"}}},
            None,
            deployment(ns=None),
        ),
        (
            "binding ns selector prod",
            {},
            {"namespaceSelector": {"matchLabels": {"environment": "prod"}}},
            deployment(ns="prod"),
        ),
        ("binding object selector", {}, {"objectSelector": {"matchLabels": {"app": "web"}}}, deployment()),
        (
            "binding object selector other",
            {},
            {"objectSelector": {"matchLabels": {"app": "api"}}},
            deployment(),
        ),
    ]
    for name, match, bound, obj in cases:
        rules = match.pop("rules", [deployments()])
        constraints = {"resourceRules": rules, **match}
        spec: dict[str, Any] = {}
        if bound is not None:
            spec["matchResources"] = bound
        out.append(
            scenario(
                f"matching {name}",
                [policy(validations=checks, rules=rules, matchConstraints=constraints)],
                [binding(actions=["Deny"], **spec)],
                obj,
            )
        )
    # a Namespace being created: its own labels and its name label
    ns_rules = [rule("", "v1", "namespaces")]
    for selector, labels in itertools.product(
        (
            {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}},
            {"matchLabels": {"environment": "prod"}},
            {"matchExpressions": [{"key": "environment", "operator": "Exists"}]},
        ),
        ({}, {"environment": "prod"}),
    ):
        constraints = {"resourceRules": ns_rules, "namespaceSelector": selector}
        out.append(
            scenario(
                f"namespace created {selector} {labels}",
                [
                    policy(
                        validations=[
                            {"expression": "object.metadata.name != 'team-a'", "message": "no team-a"}
                        ],
                        rules=ns_rules,
                        matchConstraints=constraints,
                    )
                ],
                [binding(actions=["Deny"])],
                namespace("team-a", **labels),
            )
        )
    for name, message in (
        (
            "namespace created reads its own name label",
            "string(object.metadata.labels['kubernetes.io/metadata.name'])",
        ),
        # a messageExpression typed dyn: the API server's compiler refuses the policy
        (
            "namespace created, a dyn messageExpression",
            "object.metadata.labels['kubernetes.io/metadata.name']",
        ),
    ):
        name_label = "object.metadata.labels['kubernetes.io/metadata.name'] == 'x'"
        out.append(
            scenario(
                name,
                [
                    policy(
                        validations=[{"expression": name_label, "messageExpression": message}], rules=ns_rules
                    )
                ],
                [binding(actions=["Deny"])],
                namespace("team-a"),
            )
        )
    # matchPolicy: an HPA written as autoscaling/v2 matched by an autoscaling/v1 rule
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "test"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 4,
        },
    }
    for policy_kind in ("Equivalent", "Exact"):
        out.append(
            scenario(
                f"matchPolicy {policy_kind}",
                [
                    policy(
                        validations=[
                            {
                                "expression": "object.spec.maxReplicas < 3",
                                "messageExpression": "request.kind.version + ' ' + object.apiVersion",
                            }
                        ],
                        rules=[rule("autoscaling", "v1", "horizontalpodautoscalers")],
                        matchConstraints={
                            "resourceRules": [rule("autoscaling", "v1", "horizontalpodautoscalers")],
                            "matchPolicy": policy_kind,
                        },
                    )
                ],
                [binding(actions=["Deny"])],
                hpa,
            )
        )
    return out


def evaluation() -> list[Scenario]:
    out = []
    cases: list[tuple[str, dict[str, Any]]] = [
        ("message", {"expression": "object.spec.replicas < 2", "message": "too many"}),
        (
            "messageExpression",
            {
                "expression": "object.spec.replicas < 2",
                "messageExpression": "'replicas: ' + string(object.spec.replicas)",
            },
        ),
        (
            "messageExpression empty",
            {"expression": "object.spec.replicas < 2", "message": "m", "messageExpression": "''"},
        ),
        (
            "messageExpression multiline",
            {"expression": "object.spec.replicas < 2", "message": "m", "messageExpression": "'a\\nb'"},
        ),
        (
            "messageExpression errors",
            {"expression": "object.spec.replicas < 2", "message": "m", "messageExpression": "object.nope"},
        ),
        (
            "messageExpression trimmed",
            {"expression": "object.spec.replicas < 2", "messageExpression": "'  spaced  '"},
        ),
        (
            "reason Forbidden",
            {"expression": "object.spec.replicas < 2", "reason": "Forbidden", "message": "f"},
        ),
        ("missing field", {"expression": "object.spec.paused == true"}),
        ("has()", {"expression": "has(object.spec.paused)"}),
        ("default strategy", {"expression": "object.spec.strategy.type == 'Recreate'"}),
        (
            "defaulted revisionHistoryLimit",
            {"expression": "object.spec.revisionHistoryLimit == 10", "message": "r"},
        ),
        (
            "defaulted progressDeadlineSeconds",
            {"expression": "object.spec.progressDeadlineSeconds != 600", "message": "p"},
        ),
        (
            "defaulted pod fields",
            {"expression": "object.spec.template.spec.restartPolicy != 'Always'", "message": "rp"},
        ),
        (
            "defaulted container fields",
            {
                "expression": "object.spec.template.spec.containers.all(c, c.imagePullPolicy != 'Always')",
                "message": "ipp",
            },
        ),
        (
            "request fields",
            {
                "expression": "request.operation != 'CREATE'",
                "messageExpression": (
                    "request.namespace + '/' + request.name + ' ' +"
                    " request.kind.kind + ' ' + request.resource.resource"
                ),
            },
        ),
        ("oldObject null", {"expression": "oldObject != null", "message": "old"}),
        (
            "namespaceObject",
            {
                "expression": "namespaceObject.metadata.name == 'x'",
                "messageExpression": "namespaceObject.metadata.name",
            },
        ),
        ("division by zero", {"expression": "1 / (object.spec.replicas - 7) == 1"}),
        ("non-bool", {"expression": "object.spec.replicas"}),
    ]
    for (name, validation), failure in itertools.product(cases, ("Fail", "Ignore")):
        if name == "non-bool":
            continue  # refused at compile time by the API server's type check? left to the property
        out.append(
            scenario(
                f"validation {name} {failure}",
                [policy(validations=[validation], failurePolicy=failure)],
                [binding(actions=["Deny"])],
                deployment(),
            )
        )
    # matchConditions: false wins over an error; an error follows failurePolicy
    for first, second, failure in itertools.product(
        ("false", "true", "object.nope == 1"), ("false", "true", "object.nope == 1"), ("Fail", "Ignore")
    ):
        out.append(
            scenario(
                f"matchConditions {first} / {second} {failure}",
                [
                    policy(
                        validations=[{"expression": "false", "message": "evaluated"}],
                        matchConditions=[
                            {"name": "first", "expression": first},
                            {"name": "second", "expression": second},
                        ],
                        failurePolicy=failure,
                    )
                ],
                [binding(actions=["Deny"])],
                deployment(),
            )
        )
    # variables: an error counts only where read
    for read in (True, False):
        out.append(
            scenario(
                f"variable error read={read}",
                [
                    policy(
                        validations=[
                            {"expression": "variables.broken == 1" if read else "true"},
                            {"expression": "false", "message": "second"},
                        ],
                        variables=[{"name": "broken", "expression": "object.nope"}],
                    )
                ],
                [binding(actions=["Deny"])],
                deployment(),
            )
        )
    # several bindings, several policies
    out.append(
        scenario(
            "two bindings deny and warn",
            [policy()],
            [binding("a-deny", actions=["Deny"]), binding("b-warn", actions=["Warn"])],
            deployment(),
        )
    )
    out.append(
        scenario(
            "two policies",
            [
                policy("p1"),
                policy("p2", [{"expression": "object.metadata.name != 'web'", "message": "no web"}]),
            ],
            [binding("b1", "p1", ["Deny"]), binding("b2", "p2", ["Warn"])],
            deployment(),
        )
    )
    return out


def refused() -> list[Scenario]:
    """What the API server's validation refuses: the objects never exist."""
    out = []
    cases: list[tuple[str, list[Any], list[Any]]] = [
        ("binding without validationActions", [policy()], [binding()]),
        ("binding with empty validationActions", [policy()], [binding(actions=[])]),
        ("binding Deny and Warn", [policy()], [binding(actions=["Deny", "Warn"])]),
        ("binding duplicate action", [policy()], [binding(actions=["Deny", "Deny"])]),
        ("binding unknown action", [policy()], [binding(actions=["Block"])]),
        (
            "binding paramRef name and selector",
            [policy(paramKind={"apiVersion": "v1", "kind": "ConfigMap"})],
            [
                binding(
                    actions=["Deny"],
                    paramRef={"name": "a", "selector": {}, "parameterNotFoundAction": "Deny"},
                )
            ],
        ),
        (
            "binding paramRef without parameterNotFoundAction",
            [policy(paramKind={"apiVersion": "v1", "kind": "ConfigMap"})],
            [binding(actions=["Deny"], paramRef={"name": "a"})],
        ),
        ("binding bad policyName", [policy()], [binding(policy_name="Not_A_Name", actions=["Deny"])]),
        (
            "policy without matchConstraints",
            [{**policy(), "spec": {"validations": [{"expression": "true"}]}}],
            [binding(actions=["Deny"])],
        ),
        ("policy without validations", [policy(validations=[])], [binding(actions=["Deny"])]),
        ("policy empty resourceRules", [policy(rules=[])], [binding(actions=["Deny"])]),
        ("policy bad failurePolicy", [policy(failurePolicy="Maybe")], [binding(actions=["Deny"])]),
        ("policy empty expression", [policy(validations=[{"expression": ""}])], [binding(actions=["Deny"])]),
        (
            "policy bad reason",
            [policy(validations=[{"expression": "true", "reason": "Nope"}])],
            [binding(actions=["Deny"])],
        ),
        (
            "policy message with newline",
            [policy(validations=[{"expression": "true", "message": "a\nb"}])],
            [binding(actions=["Deny"])],
        ),
        (
            "policy duplicate variable",
            [policy(variables=[{"name": "a", "expression": "1"}, {"name": "a", "expression": "2"}])],
            [binding(actions=["Deny"])],
        ),
        (
            "policy bad matchCondition name",
            [policy(matchConditions=[{"name": "not a name!", "expression": "true"}])],
            [binding(actions=["Deny"])],
        ),
        (
            "policy auditAnnotation bad key",
            [policy(auditAnnotations=[{"key": "bad key", "valueExpression": "'x'"}])],
            [binding(actions=["Deny"])],
        ),
        (
            "policy resourceNames with Namespaced scope",
            [policy(rules=[deployments(scope="Nope")])],
            [binding(actions=["Deny"])],
        ),
    ]
    for name, policies, bindings in cases:
        out.append(scenario(f"refused {name}", policies, bindings, deployment()))
    return out
