"""Reading ValidatingAdmissionPolicies, their bindings and their params, as a cluster holds them.

The objects are read as kube-apiserver stores them (``admissionregistration.k8s.io/v1``; the
``v1beta1`` and ``v1alpha1`` spellings of the same fields are read too, as the Kubernetes
documentation's examples still use them). A ``kubectl get validatingadmissionpolicies,
validatingadmissionpolicybindings -o yaml`` capture is a ``List``; the loader gives its items as
documents, so a capture reads like the objects themselves.

Defaults are the API server's (``pkg/apis/admissionregistration/v1/defaults.go``):
``failurePolicy: Fail``, ``matchPolicy: Equivalent``, empty namespace and object selectors
(everything), ``parameterNotFoundAction: Deny``.

Every other object in a policy file is a *param candidate*: a ConfigMap, or any kind a policy's
``paramKind`` names. The manifests being linted are candidates too (they are what will be in
the cluster). A binding's ``paramRef`` finds them by name or label selector
(:mod:`kaffinity.policy.admit`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from kaffinity.config import error_at
from kaffinity.k8s.model import LabelSelector
from kaffinity.k8s.model.terms import label_selector
from kaffinity.load.source import DataPath, Document, format_path

GROUP = "admissionregistration.k8s.io"
API_VERSIONS = frozenset(f"{GROUP}/{version}" for version in ("v1", "v1beta1", "v1alpha1"))
POLICY_KIND = "ValidatingAdmissionPolicy"
BINDING_KIND = "ValidatingAdmissionPolicyBinding"
KINDS = frozenset({POLICY_KIND, BINDING_KIND})
#: An annotation that marks a ValidatingAdmissionPolicy as meant for kaffinity only: its
#: expressions may read the ``kaffinity`` variable, which no cluster has.
KAFFINITY_ONLY = "policy.kaffinity.io/kaffinity-only"
#: binding ``validationActions`` -> the severity of a finding.
ACTIONS = {"Deny": "error", "Warn": "warning", "Audit": "info"}


@dataclass(frozen=True)
class Expression:
    """A CEL expression as written, with the data path of its text in its document."""

    text: str
    path: DataPath
    name: str = ""  # a variable's or a match condition's name


@dataclass(frozen=True)
class Validation:
    """One of ``spec.validations``: the expression, what a failure says, where it points."""

    expression: Expression
    message: str | None = None
    message_expression: Expression | None = None
    reason: str = "Invalid"


@dataclass(frozen=True)
class ResourceRule:
    """A NamedRuleWithOperations: which groups, versions, resources, operations and scope."""

    groups: tuple[str, ...]
    versions: tuple[str, ...]
    resources: tuple[str, ...]
    operations: tuple[str, ...]
    scope: str = "*"
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class MatchResources:
    """``matchConstraints`` or a binding's ``matchResources``. ``rules`` None: unset (a binding
    that does not narrow what its policy matches)."""

    rules: tuple[ResourceRule, ...] | None
    excluded: tuple[ResourceRule, ...] = ()
    namespace_selector: LabelSelector | None = None
    object_selector: LabelSelector | None = None
    match_policy: str = "Equivalent"


@dataclass(frozen=True)
class ParamRef:
    name: str | None
    namespace: str | None
    selector: LabelSelector | None
    not_found: str = "Deny"


@dataclass(frozen=True)
class AdmissionPolicy:
    """A ValidatingAdmissionPolicy as the API server evaluates it."""

    name: str
    doc: Document
    failure_policy: str
    param_kind: tuple[str, str] | None  # (apiVersion, kind)
    match: MatchResources
    match_conditions: tuple[Expression, ...]
    variables: tuple[Expression, ...]
    validations: tuple[Validation, ...]
    #: ``spec.auditAnnotations``: each ``valueExpression``, named by its ``key``
    audit_annotations: tuple[Expression, ...] = ()
    kaffinity_only: bool = False


@dataclass(frozen=True)
class Binding:
    """A ValidatingAdmissionPolicyBinding; ``actions`` as written (Deny, Warn, Audit)."""

    name: str
    doc: Document
    policy_name: str
    actions: tuple[str, ...]
    match: MatchResources | None = None
    param_ref: ParamRef | None = None


def field_prefix(path: Iterable[Any]) -> str:
    """``spec.match.kinds[0]: `` before an error about that field (:func:`format_path`); nothing
    for the document itself."""
    shown = format_path(tuple(path))
    return f"{shown}: " if shown else ""


def is_admission(data: Any) -> bool:
    """Whether a document is a ValidatingAdmissionPolicy or a binding."""
    return isinstance(data, Mapping) and data.get("apiVersion") in API_VERSIONS and data.get("kind") in KINDS


def read_admission(doc: Document) -> tuple[AdmissionPolicy | Binding | None, list[str]]:
    """The policy or binding of ``doc``, or None and its mistakes at their places."""
    errors = shape_errors(doc)
    if errors:
        return None, errors
    data = doc.data
    if data["kind"] == POLICY_KIND:
        return _policy(doc), []
    return _binding(doc), []


@cache
def _validator() -> Any:
    """The validator of ``schemas/admission.schema.json``, built once per process."""
    from jsonschema import Draft202012Validator

    from kaffinity.load.resources import schema

    return Draft202012Validator(schema("admission.schema.json"))


def shape_errors(doc: Document) -> list[str]:
    """What the API server's validation would refuse in the policy or binding, at its place
    (the fields kaffinity reads; ``pkg/apis/admissionregistration/validation``)."""
    from kaffinity.load.schema_words import said as in_words

    found = sorted(_validator().iter_errors(doc.data), key=lambda e: [str(s) for s in e.absolute_path])
    out = []
    for error in found:
        path: DataPath = tuple(error.absolute_path)
        message = in_words(error)
        if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
            known = error.schema.get("properties", {})
            extra = next((key for key in error.instance if key not in known), None)
            if extra is not None:  # at the field itself, as kubectl's strict validation says it
                path, message = (*path, extra), f'unknown field "{extra}"'
        out.append(error_at(doc.file, doc.locate(path), f"{field_prefix(path)}{message}"))
    if not out:
        out += _name_errors(doc)
    if not out:
        for path, said in _api_errors(doc.data):
            known = path
            while known and doc.locate(known) == doc.locate(()) and len(known) > 1:
                known = known[:-1]  # a field not written: at its parent
            out.append(error_at(doc.file, doc.locate(known), f"{format_path(path)}: {said}"))
    return out


def _api_errors(data: Mapping[str, Any]) -> Iterator[tuple[DataPath, str]]:
    """What ``pkg/apis/admissionregistration/validation/validation.go`` refuses that the schema
    does not say, for every served version (v1alpha1's ``parameterNotFoundAction`` default
    aside): a binding's ``validationActions`` (``validateValidationActions``: at least one,
    no Deny with Warn) and ``paramRef`` (``validateParamRef``: a name or a selector, not both,
    and ``parameterNotFoundAction``); a policy's ``matchConstraints`` with ``resourceRules``
    (``validateValidatingAdmissionPolicySpec``: they give the type information) and a
    validation or an audit annotation."""
    spec = data.get("spec") if isinstance(data.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    if data.get("kind") == BINDING_KIND:
        yield from _binding_api_errors(data, spec)
    else:
        yield from _policy_api_errors(data, spec)


#: ``maxAuditAnnotations`` and ``maxAuditAnnotationValueExpressionLength`` (bytes, trimmed)
#: of ``pkg/apis/admissionregistration/validation/validation.go``
MAX_AUDIT_ANNOTATIONS = 20
MAX_VALUE_EXPRESSION = 5 * 1024


def _audit_annotation_errors(
    data: Mapping[str, Any], spec: Mapping[str, Any]
) -> Iterator[tuple[DataPath, str]]:
    """``validateValidatingAdmissionPolicySpec``'s checks of ``auditAnnotations``: at most 20,
    keys distinct, and ``validateAuditAnnotation``: ``<policy name>/<key>`` a qualified name, a
    ``valueExpression`` (trimmed) given and at most 5 KiB. (Its type is checked when it is
    compiled: :func:`kaffinity.policy.evaluation.compile_policy`.)"""
    policy_name = str((data.get("metadata") or {}).get("name", ""))
    annotations = spec.get("auditAnnotations") or ()
    if len(annotations) > MAX_AUDIT_ANNOTATIONS:
        yield (
            ("spec", "auditAnnotations"),
            f"Invalid value: must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations",
        )
    keys: set[str] = set()
    for index, annotation in enumerate(annotations):
        at = ("spec", "auditAnnotations", index)
        if not isinstance(annotation, Mapping):
            continue
        given = str(annotation.get("key") or "")
        key = f"{policy_name}/{given}"
        for said in qualified_name_errors(key):
            yield (*at, "key"), f"Invalid value: {json.dumps(key)}: {said}"
        value = str(annotation.get("valueExpression") or "").strip()
        if not value:
            yield (*at, "valueExpression"), "Required value: valueExpression is not specified"
        elif len(value.encode("utf-8", "surrogatepass")) > MAX_VALUE_EXPRESSION:
            yield (
                (*at, "valueExpression"),
                f"Required value: must not exceed {MAX_VALUE_EXPRESSION} bytes in length",
            )
        if given in keys:
            yield (*at, "key"), f"Duplicate value: {json.dumps(given)}"
        keys.add(given)


def _binding_api_errors(data: Mapping[str, Any], spec: Mapping[str, Any]) -> Iterator[tuple[DataPath, str]]:
    actions = spec.get("validationActions") or []
    if "Deny" in actions and "Warn" in actions:
        yield (
            ("spec", "validationActions"),
            "Deny and Warn may not be used together (the API server refuses them)",
        )
    if not actions:
        yield ("spec", "validationActions"), "Required value: at least one validation action is required"
    ref = spec.get("paramRef")
    if isinstance(ref, Mapping):
        if ref.get("name") and ref.get("selector") is not None:
            yield ("spec", "paramRef", "name"), "Forbidden: name and selector are mutually exclusive"
        if not ref.get("name") and ref.get("selector") is None:
            yield ("spec", "paramRef"), "Required value: one of name or selector must be specified"
        defaulted = str(data.get("apiVersion", "")).endswith("/v1alpha1")  # SetDefaults_ParamRef
        if not ref.get("parameterNotFoundAction") and not defaulted:
            yield ("spec", "paramRef", "parameterNotFoundAction"), "Required value"


def _policy_api_errors(data: Mapping[str, Any], spec: Mapping[str, Any]) -> Iterator[tuple[DataPath, str]]:
    constraints = spec.get("matchConstraints")
    if not isinstance(constraints, Mapping):
        yield ("spec", "matchConstraints"), "Required value"
    elif not constraints.get("resourceRules"):
        yield ("spec", "matchConstraints", "resourceRules"), "Required value"
    for index, condition in enumerate(spec.get("matchConditions") or ()):
        # validateMatchCondition: the name is a qualified name
        name = str(condition.get("name", "")) if isinstance(condition, Mapping) else ""
        for said in qualified_name_errors(name):
            yield ("spec", "matchConditions", index, "name"), f"Invalid value: {json.dumps(name)}: {said}"
    yield from _audit_annotation_errors(data, spec)
    if not spec.get("validations") and not spec.get("auditAnnotations"):
        yield (
            ("spec", "validations"),
            "Required value: validations or auditAnnotations must contain at least one item",
        )


#: apimachinery ``IsDNS1123Subdomain`` (``pkg/util/validation/validation.go``): the longest name,
#: in bytes, and the form of one.
DNS1123_SUBDOMAIN_MAX = 253
_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*"
_DNS1123_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    f"validation is '{_DNS1123_SUBDOMAIN}')"
)


def dns_subdomain_errors(value: str) -> list[str]:
    """What apimachinery's ``IsDNS1123Subdomain`` says of ``value`` (nothing: a valid name)."""
    import re2  # linear time, as Go's regexp: the name is anyone's

    errors = []
    encoded = value.encode("utf-8", "surrogatepass")  # Go's len(): bytes
    if len(encoded) > DNS1123_SUBDOMAIN_MAX:
        errors.append(f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters")
    if re2.fullmatch(_DNS1123_SUBDOMAIN.encode(), encoded) is None:
        errors.append(_DNS1123_MESSAGE)
    return errors


_NAME_PART = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def qualified_name_errors(value: str) -> list[str]:
    """apimachinery's ``IsQualifiedName`` (``pkg/util/validation/validation.go``): an optional
    DNS-subdomain prefix and ``/``, then a name of at most 63 characters."""
    parts = value.split("/")
    if len(parts) > 2:
        return [
            f"a qualified name must be a name, optionally after a DNS subdomain prefix and '/' ({_NAME_PART})"
        ]
    errors = []
    if len(parts) == 2:
        prefix, value = parts
        errors += (
            [f"prefix part {said}" for said in dns_subdomain_errors(prefix)]
            if prefix
            else ["prefix part must be non-empty"]
        )
    if not value:
        errors.append("name part must be non-empty")
    elif len(value) > 63:
        errors.append("name part must be no more than 63 characters")
    if value and _QUALIFIED_NAME.fullmatch(value) is None:
        errors.append(f"name part {_NAME_PART}")
    return errors


def _name_errors(doc: Document) -> list[str]:
    """kube-apiserver refuses a policy or binding whose ``metadata.name`` (and a binding's
    ``spec.policyName``) is not a DNS subdomain: ``ValidateObjectMeta(..., NameIsDNSSubdomain)``
    and ``validateValidatingAdmissionPolicyBindingSpec`` in
    ``pkg/apis/admissionregistration/validation/validation.go``. Said as the API server says
    it, the value quoted with its control and non-ASCII characters escaped."""
    import json

    fields: list[DataPath] = [("metadata", "name")]
    if doc.data.get("kind") == BINDING_KIND:
        fields.append(("spec", "policyName"))
    out = []
    for path in fields:
        value = doc.data[path[0]][path[1]]
        for message in dns_subdomain_errors(value):
            said = f"{format_path(path)}: Invalid value: {json.dumps(value, ensure_ascii=True)}: {message}"
            out.append(error_at(doc.file, doc.locate(path), said))
    return out


def _policy(doc: Document) -> AdmissionPolicy:
    data = doc.data
    spec = data["spec"]
    base: DataPath = ("spec",)
    param = spec.get("paramKind")
    annotations = data["metadata"].get("annotations") or {}
    return AdmissionPolicy(
        name=data["metadata"]["name"],
        doc=doc,
        failure_policy=spec.get("failurePolicy") or "Fail",
        param_kind=(str(param.get("apiVersion", "")), str(param.get("kind", ""))) if param else None,
        match=match_resources(spec.get("matchConstraints") or {}, (*base, "matchConstraints"), unset=False),
        match_conditions=_named(spec.get("matchConditions"), (*base, "matchConditions")),
        variables=_named(spec.get("variables"), (*base, "variables")),
        validations=tuple(
            _validation(item, (*base, "validations", index))
            for index, item in enumerate(spec.get("validations") or ())
        ),
        audit_annotations=tuple(
            Expression(
                str(item.get("valueExpression") or ""),
                (*base, "auditAnnotations", index, "valueExpression"),
                str(item.get("key") or ""),
            )
            for index, item in enumerate(spec.get("auditAnnotations") or ())
            if isinstance(item, Mapping)
        ),
        kaffinity_only=str(annotations.get(KAFFINITY_ONLY, "")).lower() == "true",
    )


def _binding(doc: Document) -> Binding:
    data = doc.data
    spec = data["spec"]
    ref = spec.get("paramRef")
    match = spec.get("matchResources")
    return Binding(
        name=data["metadata"]["name"],
        doc=doc,
        policy_name=spec["policyName"],
        actions=tuple(spec.get("validationActions") or ()),
        match=match_resources(match, ("spec", "matchResources"), unset=True) if match is not None else None,
        param_ref=(
            ParamRef(
                name=ref.get("name"),
                namespace=ref.get("namespace"),
                selector=label_selector(ref.get("selector"), ("spec", "paramRef", "selector")),
                not_found=ref.get("parameterNotFoundAction") or "Deny",
            )
            if ref is not None
            else None
        ),
    )


def match_resources(raw: Mapping[str, Any], path: DataPath, unset: bool) -> MatchResources:
    """A MatchResources; ``unset``: absent ``resourceRules`` leave the rules to the policy."""
    rules = raw.get("resourceRules")
    return MatchResources(
        rules=_rules(rules) if rules is not None or not unset else None,
        excluded=_rules(raw.get("excludeResourceRules")),
        namespace_selector=label_selector(raw.get("namespaceSelector"), (*path, "namespaceSelector")),
        object_selector=label_selector(raw.get("objectSelector"), (*path, "objectSelector")),
        match_policy=raw.get("matchPolicy") or "Equivalent",
    )


def _rules(raw: Any) -> tuple[ResourceRule, ...]:
    return tuple(
        ResourceRule(
            groups=_strings(rule.get("apiGroups")),
            versions=_strings(rule.get("apiVersions")),
            resources=_strings(rule.get("resources")),
            operations=_strings(rule.get("operations")),
            scope=rule.get("scope") or "*",
            names=_strings(rule.get("resourceNames")),
        )
        for rule in raw or ()
    )


def _named(raw: Any, path: DataPath) -> tuple[Expression, ...]:
    return tuple(
        Expression(item["expression"], (*path, index, "expression"), item["name"])
        for index, item in enumerate(raw or ())
    )


def _validation(raw: Mapping[str, Any], path: DataPath) -> Validation:
    message_expression = raw.get("messageExpression")
    return Validation(
        expression=Expression(raw["expression"], (*path, "expression")),
        message=raw.get("message") or None,
        message_expression=(
            Expression(message_expression, (*path, "messageExpression")) if message_expression else None
        ),
        reason=raw.get("reason") or "Invalid",
    )


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(item) for item in value or ())


def bindings_of(policies: Sequence[AdmissionPolicy], bindings: Sequence[Binding]) -> dict[str, list[Binding]]:
    """Each policy's bindings, by policy name, in the order given."""
    out: dict[str, list[Binding]] = {policy.name: [] for policy in policies}
    for binding in bindings:
        if binding.policy_name in out:
            out[binding.policy_name].append(binding)
    return out


_FIELD_STEP = re.compile(r"""\.?([A-Za-z_$][\w$-]*)|\[\s*(\d+|'[^']*'|"[^"]*")\s*\]""")


def field_path(text: str) -> DataPath | None:
    """A validation's ``fieldPath`` (``spec.replicas``, ``spec.containers[0].name``,
    ``metadata.labels['app']``) as a data path; None when it does not parse."""
    steps: list[str | int] = []
    position = 0
    text = text.strip()
    while position < len(text):
        match = _FIELD_STEP.match(text, position)
        if match is None:
            return None
        name, index = match.group(1), match.group(2)
        if name is not None:
            steps.append(name)
        elif index[0] in "'\"":
            steps.append(index[1:-1])
        else:
            steps.append(int(index))
        position = match.end()
    return tuple(steps)
