"""The admission scenarios: inputs written from the Kubernetes documentation's "Validating
Admission Policy" page (the replicas demo, params by name and selector, the prod param,
matchConditions, variables, messageExpression, auditAnnotations, the actions) and from the cases
``k8s.io/apiserver/pkg/admission/plugin/policy/validating/admission_test.go`` covers (paramRef by
name and selector, namespaced and cluster-scoped param kinds, parameterNotFoundAction, native
param types, Audit/Warn/all actions, definitions that do not match, invalid param kinds), and
matching (``matching/matching_test.go``: resource rules, exclusions, names, scope, selectors,
``matchPolicy``). Inputs only: the answers come from the oracle.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

V1 = "admissionregistration.k8s.io/v1"
Scenario = dict[str, Any]


def policy(
    name: str = "p.example.com",
    validations: list[dict[str, Any]] | None = None,
    *,
    rules: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "matchConstraints": {"resourceRules": rules if rules is not None else [deployments()]},
        "validations": validations
        if validations is not None
        else [{"expression": "object.spec.replicas <= 5"}],
    }
    body.update(spec)
    return {"apiVersion": V1, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name}, "spec": body}


def binding(
    name: str = "b.example.com",
    policy_name: str = "p.example.com",
    actions: list[str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {"policyName": policy_name}
    if actions is not None:
        body["validationActions"] = actions
    body.update(spec)
    return {
        "apiVersion": V1,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": body,
    }


def deployments(**more: Any) -> dict[str, Any]:
    return {
        "apiGroups": ["apps"],
        "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"],
        "resources": ["deployments"],
        **more,
    }


def rule(group: str, version: str, resource: str, **more: Any) -> dict[str, Any]:
    return {
        "apiGroups": [group],
        "apiVersions": [version],
        "operations": ["CREATE"],
        "resources": [resource],
        **more,
    }


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def deployment(
    name: str = "web", ns: str | None = "test", replicas: int | None = 7, **meta: Any
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": {"app": name}, **meta}
    if ns is not None:
        metadata["namespace"] = ns
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata, "spec": spec}


def configmap(name: str, ns: str | None, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if ns is not None:
        metadata["namespace"] = ns
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def replica_limit(
    name: str, limit: int, ns: str | None = None, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if ns is not None:
        metadata["namespace"] = ns
    if labels:
        metadata["labels"] = labels
    return {
        "apiVersion": "rules.example.com/v1",
        "kind": "ReplicaLimit",
        "metadata": metadata,
        "maxReplicas": limit,
    }


NAMESPACES = [namespace("test", environment="test"), namespace("prod", environment="prod")]


def scenario(
    name: str, policies: list[Any], bindings: list[Any], obj: dict[str, Any], **more: Any
) -> Scenario:
    return {
        "name": name,
        "policies": policies,
        "bindings": bindings,
        "params": more.pop("params", []),
        "namespaces": more.pop("namespaces", NAMESPACES),
        "object": obj,
        **more,
    }


def _docs() -> list[Scenario]:
    out = []
    test_only = {"namespaceSelector": {"matchLabels": {"environment": "test"}}}
    for actions, ns, replicas in itertools.product(
        (["Deny"], ["Warn"], ["Audit"], ["Warn", "Audit"], ["Deny", "Audit"]),
        ("test", "prod", "other"),
        (3, 7),
    ):
        out.append(
            scenario(
                f"docs replicas {actions} {ns} {replicas}",
                [policy("demo-policy.example.com", failurePolicy="Fail")],
                [
                    binding(
                        "demo-binding-test.example.com",
                        "demo-policy.example.com",
                        actions,
                        matchResources=test_only,
                    )
                ],
                deployment(ns=ns, replicas=replicas),
            )
        )
    # the ReplicaLimit params of the documentation: test by name in default, prod by a NotIn selector
    limits = policy(
        "replicalimit-policy.example.com",
        [
            {
                "expression": "object.spec.replicas <= params.maxReplicas",
                "messageExpression": (
                    "'object.spec.replicas must be no greater than ' + string(params.maxReplicas)"
                ),
                "reason": "Invalid",
            }
        ],
        failurePolicy="Fail",
        paramKind={"apiVersion": "rules.example.com/v1", "kind": "ReplicaLimit"},
    )
    bindings = [
        binding(
            "replicalimit-binding-test.example.com",
            "replicalimit-policy.example.com",
            ["Deny"],
            paramRef={"name": "replica-limit-test.example.com", "namespace": "default"},
            matchResources=test_only,
        ),
        binding(
            "replicalimit-binding-nontest",
            "replicalimit-policy.example.com",
            ["Deny"],
            paramRef={"name": "replica-limit-prod.example.com", "namespace": "default"},
            matchResources={
                "namespaceSelector": {
                    "matchExpressions": [{"key": "environment", "operator": "NotIn", "values": ["test"]}]
                }
            },
        ),
    ]
    # as the documentation's files write them: no namespace (kubectl apply puts them in default)
    params = [
        replica_limit("replica-limit-test.example.com", 3),
        replica_limit("replica-limit-prod.example.com", 100),
    ]
    # as the documentation writes the bindings (no parameterNotFoundAction: the API server of
    # 1.37 refuses them), and with it as the v1 API requires
    with_action = copy.deepcopy(bindings)
    for bound in with_action:
        bound["spec"]["paramRef"]["parameterNotFoundAction"] = "Deny"
    for (label, made), ns, replicas in itertools.product(
        (("", bindings), (" with parameterNotFoundAction", with_action)),
        ("test", "prod", "other"),
        (2, 4, 150),
    ):
        out.append(
            scenario(
                f"docs replicalimit{label} {ns} {replicas}",
                [limits],
                made,
                deployment(ns=ns, replicas=replicas),
                params=params,
                paramScopes={"rules.example.com/v1, Kind=ReplicaLimit": "Namespaced"},
            )
        )
    # matchConditions of the documentation: exclude leases, exclude kubelet requests
    conditions = policy(
        "demo-policy.example.com",
        [{"expression": "!object.metadata.name.startsWith('forbidden')"}],
        rules=[
            {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"], "resources": ["*"]}
        ],
        matchConditions=[
            {
                "name": "exclude-leases",
                "expression": (
                    "!(request.resource.group == 'coordination.k8s.io' &&"
                    " request.resource.resource == 'leases')"
                ),
            },
            {
                "name": "exclude-kubelet-requests",
                "expression": "!('system:nodes' in request.userInfo.groups)",
            },
        ],
    )
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "forbidden-lease", "namespace": "test"},
        "spec": {},
    }
    for obj in (deployment("forbidden-web"), deployment("web"), lease, configmap("forbidden-cm", "test")):
        out.append(
            scenario(
                f"docs matchConditions {obj['kind']} {obj['metadata']['name']}",
                [conditions],
                [binding(policy_name="demo-policy.example.com", actions=["Deny"])],
                obj,
            )
        )
    # variables: images from example.com, except in the test namespace (the documentation's foo policy)
    images = policy(
        "image-matches-namespace-environment.policy.example.com",
        [
            {
                "expression": (
                    "variables.environment != 'prod' || variables.exempt ||"
                    " variables.containers.all(c,"
                    " c.image.startsWith(variables.environment + '.example.com/'))"
                ),
                "messageExpression": (
                    "'only ' + variables.environment + ' images are allowed in"
                    " namespace ' + namespaceObject.metadata.name"
                ),
            }
        ],
        variables=[
            {
                "name": "environment",
                "expression": (
                    "'environment' in namespaceObject.metadata.labels ?"
                    " namespaceObject.metadata.labels['environment'] : 'prod'"
                ),
            },
            {
                "name": "exempt",
                "expression": (
                    "has(object.metadata.labels) && 'exempt' in"
                    " object.metadata.labels && object.metadata.labels['exempt'] == 'true'"
                ),
            },
            {"name": "containers", "expression": "object.spec.template.spec.containers"},
        ],
    )
    for ns, image, exempt in itertools.product(
        ("test", "prod", "other"), ("nginx", "prod.example.com/nginx"), (False, True)
    ):
        obj = deployment(ns=ns)
        obj["spec"]["template"]["spec"]["containers"][0]["image"] = image
        if exempt:
            obj["metadata"]["labels"]["exempt"] = "true"
        out.append(
            scenario(
                f"docs variables {ns} {image} {exempt}",
                [images],
                [binding(policy_name=images["metadata"]["name"], actions=["Deny"])],
                obj,
            )
        )
    # auditAnnotations of the documentation
    audit = policy(
        "demo-policy.example.com",
        [
            {
                "expression": "object.spec.replicas > 50",
                "messageExpression": "'Deployment spec.replicas set to ' + string(object.spec.replicas)",
            }
        ],
        auditAnnotations=[
            {
                "key": "high-replica-count",
                "valueExpression": "'Deployment spec.replicas set to ' + string(object.spec.replicas)",
            }
        ],
    )
    for actions, replicas in itertools.product((["Audit"], ["Deny"], ["Warn"]), (60, 7)):
        out.append(
            scenario(
                f"docs audit {actions} {replicas}",
                [audit],
                [binding(policy_name="demo-policy.example.com", actions=actions)],
                deployment(replicas=replicas),
            )
        )
    return out


def _params() -> list[Scenario]:
    """admission_test.go's TestParamRef: the param kind's scope, the paramRef's name or selector,
    its namespace, parameterNotFoundAction, params present or not, namespaced or cluster-scoped
    objects."""
    out = []
    check = [{"expression": "params.data.max == '3'", "message": "params say no"}]
    for scope, by, ref_ns, action, present, cluster in itertools.product(
        ("Namespaced", "Cluster"),
        ("name", "selector"),
        (None, "config"),
        ("Deny", "Allow"),
        (True, False),
        (False, True),
    ):
        kind = "ConfigMap" if scope == "Namespaced" else "PriorityClass"
        if kind == "ConfigMap":
            param_kind = {"apiVersion": "v1", "kind": "ConfigMap"}
            params = (
                [configmap("limits", "config" if ref_ns else "test", {"role": "limits"}, max="3")]
                if present
                else []
            )
            checks = check
        else:
            param_kind = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass"}
            params = (
                [
                    {
                        "apiVersion": "scheduling.k8s.io/v1",
                        "kind": "PriorityClass",
                        "metadata": {"name": "limits", "labels": {"role": "limits"}},
                        "value": 3,
                    }
                ]
                if present
                else []
            )
            checks = [{"expression": "params.value == 3", "message": "params say no"}]
        ref: dict[str, Any] = (
            {"name": "limits"} if by == "name" else {"selector": {"matchLabels": {"role": "limits"}}}
        )
        if ref_ns:
            ref["namespace"] = ref_ns
        ref["parameterNotFoundAction"] = action
        rules = [deployments(), rule("", "v1", "nodes")] if cluster else [deployments()]
        obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}} if cluster else deployment()
        out.append(
            scenario(
                f"paramRef {scope} {by} ns={ref_ns} {action} present={present} cluster={cluster}",
                [policy(validations=checks, rules=rules, paramKind=param_kind)],
                [binding(actions=["Deny"], paramRef=ref)],
                obj,
                params=params,
                namespaces=[*NAMESPACES, namespace("config")],
            )
        )
    # failurePolicy Ignore skips the parameter-resolution errors; Warn/Audit bindings still deny them
    for failure, actions in itertools.product(("Fail", "Ignore"), (["Warn"], ["Audit"], ["Deny"])):
        out.append(
            scenario(
                f"param not found {failure} {actions}",
                [
                    policy(
                        validations=check,
                        paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
                        failurePolicy=failure,
                    )
                ],
                [binding(actions=actions, paramRef={"name": "missing", "parameterNotFoundAction": "Deny"})],
                deployment(),
            )
        )
        out.append(
            scenario(
                f"param kind unknown {failure} {actions}",
                [
                    policy(
                        validations=check,
                        paramKind={"apiVersion": "nothing.example.com/v1", "kind": "Nope"},
                        failurePolicy=failure,
                    )
                ],
                [binding(actions=actions, paramRef={"name": "x", "parameterNotFoundAction": "Deny"})],
                deployment(),
            )
        )
    # a policy with a paramKind and a binding without paramRef: validated with null params
    out.append(
        scenario(
            "paramKind without paramRef",
            [
                policy(
                    validations=[{"expression": "params == null"}],
                    paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
                )
            ],
            [binding(actions=["Deny"])],
            deployment(),
        )
    )
    # several params by selector: each evaluated
    several = [configmap(f"c{i}", "test", {"role": "limits"}, max=str(i)) for i in (2, 3, 9)]
    out.append(
        scenario(
            "selector finds several params",
            [
                policy(
                    validations=[
                        {
                            "expression": "int(params.data.max) >= 3",
                            "messageExpression": "'max ' + params.data.max",
                        }
                    ],
                    paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
                )
            ],
            [
                binding(
                    actions=["Deny"],
                    paramRef={
                        "selector": {"matchLabels": {"role": "limits"}},
                        "parameterNotFoundAction": "Deny",
                    },
                )
            ],
            deployment(),
            params=several,
        )
    )
    return out


def _matching() -> list[Scenario]:
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


def _evaluation() -> list[Scenario]:
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


def _refused() -> list[Scenario]:
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


def scenarios() -> list[Scenario]:
    """Every scenario, each with a unique name."""
    found = [*_docs(), *_params(), *_matching(), *_evaluation(), *_refused()]
    names = [s["name"] for s in found]
    assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]
    return [copy.deepcopy(s) for s in found]
