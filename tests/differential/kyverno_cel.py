"""Kyverno's CEL policies (``kyverno/policies``, the ``*-cel`` folders) as the
ValidatingAdmissionPolicies Kyverno generates from them, with the resources of their own
``.kyverno-test`` fixtures: real policies and real objects for the admission differential.

Kyverno generates a VAP and a binding from a ClusterPolicy whose one rule validates with CEL
(``pkg/validatingadmissionpolicy/builder.go`` in kyverno/kyverno): the rule's ``match.any`` (or
``all``) ``resources.kinds`` and ``operations`` become ``matchConstraints.resourceRules``, its
``validate.cel`` gives ``validations``, ``variables``, ``paramKind`` and ``auditAnnotations``,
``validationFailureAction`` the binding's ``validationActions`` (Enforce: Deny, Audit: Audit) and
``failurePolicy`` the policy's. Policies that do not convert that way (several rules, exclusions,
namespace or name filters, preconditions) are left out.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

#: Where a checkout of github.com/kyverno/policies is: KAFFINITY_KYVERNO_POLICIES names it (the
#: repository is not vendored; without it these cases skip and say so).
KYVERNO = Path(os.environ.get("KAFFINITY_KYVERNO_POLICIES") or "/nonexistent/kyverno-policies")

#: kind -> (group, version, resource) of the kinds the policies name without a group.
_KINDS = {
    "Pod": ("", "v1", "pods"),
    "Service": ("", "v1", "services"),
    "Namespace": ("", "v1", "namespaces"),
    "ConfigMap": ("", "v1", "configmaps"),
    "Secret": ("", "v1", "secrets"),
    "PersistentVolumeClaim": ("", "v1", "persistentvolumeclaims"),
    "ServiceAccount": ("", "v1", "serviceaccounts"),
    "Deployment": ("apps", "v1", "deployments"),
    "StatefulSet": ("apps", "v1", "statefulsets"),
    "DaemonSet": ("apps", "v1", "daemonsets"),
    "ReplicaSet": ("apps", "v1", "replicasets"),
    "Job": ("batch", "v1", "jobs"),
    "CronJob": ("batch", "v1", "cronjobs"),
    "Ingress": ("networking.k8s.io", "v1", "ingresses"),
    "NetworkPolicy": ("networking.k8s.io", "v1", "networkpolicies"),
    "PodDisruptionBudget": ("policy", "v1", "poddisruptionbudgets"),
    "HorizontalPodAutoscaler": ("autoscaling", "v2", "horizontalpodautoscalers"),
    "Role": ("rbac.authorization.k8s.io", "v1", "roles"),
    "ClusterRole": ("rbac.authorization.k8s.io", "v1", "clusterroles"),
    "RoleBinding": ("rbac.authorization.k8s.io", "v1", "rolebindings"),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io", "v1", "clusterrolebindings"),
}


def _documents(path: Path) -> list[Any]:
    yaml = YAML(typ="safe")
    try:
        return [doc for doc in yaml.load_all(path.read_text(encoding="utf-8")) if isinstance(doc, dict)]
    except YAMLError:  # a file that is not plain YAML (a template): left out
        return []


def _resource_rules(match: dict[str, Any]) -> list[dict[str, Any]] | None:
    filters = match.get("any") or match.get("all")
    if not isinstance(filters, list) or len(filters) != 1:
        return None
    resources = filters[0].get("resources") or {}
    if set(resources) - {"kinds", "operations"}:
        return None  # names, namespaces, selectors: not a resource rule
    operations = resources.get("operations") or ["CREATE", "UPDATE"]
    rules = []
    for kind in resources.get("kinds") or []:
        if kind not in _KINDS:
            return None
        group, version, resource = _KINDS[kind]
        rules.append(
            {
                "apiGroups": [group],
                "apiVersions": [version],
                "operations": operations,
                "resources": [resource],
            }
        )
    return rules or None


def convert(policy: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The VAP and binding Kyverno would generate from ``policy`` (None: it would not, or not
    as simply)."""
    spec = policy.get("spec") or {}
    rules = spec.get("rules") or []
    if policy.get("kind") not in ("ClusterPolicy", "Policy") or len(rules) != 1:
        return None
    rule = rules[0]
    cel = (rule.get("validate") or {}).get("cel")
    if not isinstance(cel, dict) or rule.get("exclude") or rule.get("preconditions") or rule.get("context"):
        return None
    resource_rules = _resource_rules(rule.get("match") or {})
    if resource_rules is None or cel.get("paramKind") or cel.get("paramRef"):
        return None
    name = policy["metadata"]["name"]
    body: dict[str, Any] = {
        "failurePolicy": spec.get("failurePolicy") or "Fail",
        "matchConstraints": {"resourceRules": resource_rules},
        "validations": cel.get("expressions") or [],
    }
    if cel.get("variables"):
        body["variables"] = cel["variables"]
    if cel.get("auditAnnotations"):
        body["auditAnnotations"] = cel["auditAnnotations"]
    action = rule["validate"].get("failureAction") or spec.get("validationFailureAction") or "Audit"
    actions = ["Deny"] if str(action).lower() == "enforce" else ["Audit"]
    vap = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": body,
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": f"{name}-binding"},
        "spec": {"policyName": name, "validationActions": actions},
    }
    return vap, binding


def cases() -> Iterator[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """(id, vap, binding, object) for each resource of each convertible policy's fixture."""
    if not KYVERNO.is_dir():
        return
    for test in sorted(KYVERNO.glob("*-cel/*/.kyverno-test/kyverno-test.yaml")):
        folder = test.parent.parent
        policies = [doc for path in sorted(folder.glob("*.yaml")) for doc in _documents(path)]
        converted = [convert(doc) for doc in policies]
        if len(converted) != 1 or converted[0] is None:
            continue
        vap, binding = converted[0]
        for path in sorted(test.parent.glob("resource*.yaml")):
            if path.stat().st_size > 200_000:
                continue
            for index, obj in enumerate(_documents(path)):
                if not isinstance(obj.get("metadata"), dict) or not obj.get("apiVersion"):
                    continue
                yield f"{folder.parent.name}/{folder.name}/{path.name}#{index}", vap, binding, obj


#: The repository's own sample policies (Kyverno's and Gatekeeper's scheduling samples written as
#: VAPs, tests/data/admission/samples/REVIEW.md) and the kyverno/policies folders they render.
SAMPLES = Path(__file__).resolve().parents[1] / "data" / "admission" / "samples"
CORPUS = Path(os.environ.get("KAFFINITY_REAL_CORPUS", "/work/shared/corpus/real"))
_SAMPLE_SOURCES = {
    "kyverno-topologyspreadconstraints.yaml": "topologyspreadconstraints-policy",
    "kyverno-pdb-maxunavailable.yaml": "pdb-maxunavailable",
    "kyverno-require-pod-priorityclassname.yaml": "require-pod-priorityclassname",
    "kyverno-restrict-node-affinity.yaml": "restrict-node-affinity",
    "kyverno-restrict-controlplane-scheduling.yaml": "restrict-controlplane-scheduling",
}
#: Kinds of the real corpus the Gatekeeper samples read.
_CORPUS_KINDS = {"Deployment", "StatefulSet", "HorizontalPodAutoscaler", "PodDisruptionBudget"}


def _corpus_objects(limit: int) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(CORPUS.glob("*/*.yaml")):
        for index, obj in enumerate(_documents(path)):
            if obj.get("kind") in _CORPUS_KINDS and isinstance(obj.get("metadata"), dict):
                out.append((f"{path.parent.name}/{path.name}#{index}", obj))
        if len(out) >= limit:
            break
    return out[:limit]


def sample_cases(limit: int = 40) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(id, scenario without the object's name, object): each sample file with the resources of
    the kyverno/policies fixture it renders, or (Gatekeeper's) with objects of the real corpus."""
    corpus = _corpus_objects(limit) if CORPUS.is_dir() else []
    for path in sorted(SAMPLES.glob("*.yaml")):
        documents = _documents(path)
        policies = [d for d in documents if d.get("kind") == "ValidatingAdmissionPolicy"]
        bindings = [d for d in documents if d.get("kind") == "ValidatingAdmissionPolicyBinding"]
        params = [d for d in documents if d not in policies and d not in bindings]
        base = {"policies": policies, "bindings": bindings, "params": params, "namespaces": []}
        source = _SAMPLE_SOURCES.get(path.name)
        objects: list[tuple[str, dict[str, Any]]] = []
        if source is not None:
            folder = KYVERNO / "other-vpol" / source / ".kyverno-test"
            for resource in sorted(folder.glob("resource*.yaml")) if folder.is_dir() else []:
                objects += [(f"{resource.name}#{i}", o) for i, o in enumerate(_documents(resource))]
        else:
            objects = corpus
        for name, obj in objects:
            if isinstance(obj.get("metadata"), dict) and obj.get("apiVersion"):
                yield f"{path.name}:{name}", base, obj
