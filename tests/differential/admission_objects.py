"""Builders of the admission scenarios' objects: policies, bindings, rules, namespaces,
Deployments, ConfigMaps and the documentation's ReplicaLimit params, and a scenario itself."""

from __future__ import annotations

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
