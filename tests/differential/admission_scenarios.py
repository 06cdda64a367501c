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

from tests.differential.admission_more import evaluation, matching, refused
from tests.differential.admission_objects import (
    NAMESPACES,
    Scenario,
    binding,
    configmap,
    deployment,
    deployments,
    namespace,
    policy,
    replica_limit,
    rule,
    scenario,
)

__all__ = [
    "binding",
    "configmap",
    "deployment",
    "deployments",
    "namespace",
    "policy",
    "replica_limit",
    "rule",
    "scenario",
    "scenarios",
]


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


def scenarios() -> list[Scenario]:
    """Every scenario, each with a unique name."""
    found = [*_docs(), *_params(), *matching(), *evaluation(), *refused()]
    names = [s["name"] for s in found]
    assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]
    return [copy.deepcopy(s) for s in found]
