"""Which objects an admission policy and its bindings see, and the params a binding finds.

Each manifest is taken as the API server would receive it: a CREATE of its resource, by the
request's group, version, resource, namespace and name. Matching follows kube-apiserver's
``staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/matching/matching.go``:

1. the namespace selector, against the labels of the object's Namespace (a Namespace object
   itself: its own labels; another cluster-scoped object: always matches);
2. the object selector, against the object's labels;
3. the resource rules: one must match (groups, versions, resources, operations, scope and
   resource names, ``*`` a wildcard), and no excluded rule may.

The Namespace comes from the input or the cluster file. One that neither declares has only the
label the API server puts on every namespace, ``kubernetes.io/metadata.name``.

``matchPolicy: Equivalent`` (the default) also matches a resource by the other versions it is
served under, and the policy sees the object converted to the version matched
(:mod:`kaffinity.k8s.conversion`: the HorizontalPodAutoscaler, ``autoscaling/v1`` and ``v2``;
the other scheduling kinds have one version in the Kubernetes versions kaffinity knows).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kaffinity.k8s.conversion import EQUIVALENT_VERSIONS
from kaffinity.k8s.model import LabelSelector
from kaffinity.k8s.model.kinds import CLUSTER_SCOPED
from kaffinity.k8s.model.readers import dig
from kaffinity.k8s.selectors import selector_matches
from kaffinity.load.source import Document
from kaffinity.policy.admission import MatchResources, ParamRef, ResourceRule

#: The label kube-apiserver puts on every Namespace (``NamespaceDefaultLabelName``).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


#: Who creates the objects: an authenticated user (every authenticated request carries the
#: ``system:authenticated`` group, ``k8s.io/apiserver/pkg/authentication/group``), so that a
#: policy reading ``request.userInfo.groups`` or ``username`` sees them (an empty list or name
#: is left out of the AdmissionRequest upstream: reading it is a "no such key" error).
USER_INFO = {"username": "kaffinity", "groups": ["system:authenticated"]}

#: Kinds whose resource name is not what apimachinery's guess gives.
_RESOURCES = {"Endpoints": "endpoints"}


@dataclass(frozen=True)
class Request:
    """The admission attributes of a CREATE of one manifest."""

    group: str
    version: str
    kind: str
    resource: str
    namespace: str | None  # None: cluster-scoped
    name: str

    def as_cel(self) -> dict[str, Any]:
        """``request`` as a policy reads it: ``cel.CreateAdmissionRequest``
        (``admission/plugin/cel/condition.go``) of a CREATE, serialized as the AdmissionRequest's
        JSON, whose empty ``omitempty`` fields are absent (``k8s.io/api/admission/v1/types.go``:
        ``subResource``, ``requestSubResource``; ``namespace`` of a cluster-scoped object; ``name``
        when unwritten): reading them is a "no such key" error."""
        kind = {"group": self.group, "version": self.version, "kind": self.kind}
        resource = {"group": self.group, "version": self.version, "resource": self.resource}
        out: dict[str, Any] = {
            "uid": "",
            "kind": kind,
            "resource": resource,
            "requestKind": dict(kind),
            "requestResource": dict(resource),
            "operation": "CREATE",
            "userInfo": {
                key: list(value) if isinstance(value, list) else value for key, value in USER_INFO.items()
            },
            "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        }
        if self.name:
            out["name"] = self.name
        if self.namespace:
            out["namespace"] = self.namespace
        elif self.kind == "Namespace" and self.group == "" and self.name:
            # a Namespace's CREATE has its own name as namespace (createHandler,
            # k8s.io/apiserver/pkg/endpoints/handlers/create.go)
            out["namespace"] = self.name
        return out


def resource_of(kind: str) -> str:
    """The lower-case plural resource of a kind, as apimachinery's ``UnsafeGuessKindToResource``
    guesses it (kinds ending in ``s`` take ``es``, in ``y`` take ``ies``)."""
    if kind in _RESOURCES:
        return _RESOURCES[kind]
    lower = kind.lower()
    if lower.endswith("s"):
        return lower + "es"
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    return lower + "s"


def request_of(data: Mapping[str, Any], default_namespace: str) -> Request | None:
    """The CREATE request of an object (None for a document that is not an object)."""
    api_version, kind = data.get("apiVersion"), data.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    group, _, version = api_version.rpartition("/")
    metadata = data.get("metadata") if isinstance(data.get("metadata"), Mapping) else {}
    assert isinstance(metadata, Mapping)
    namespace = None
    if kind not in CLUSTER_SCOPED:
        namespace = str(metadata.get("namespace") or default_namespace)
    return Request(group, version, kind, resource_of(kind), namespace, str(metadata.get("name") or ""))


def rule_matches(rule: ResourceRule, request: Request) -> bool:
    """A NamedRuleWithOperations against a CREATE of a main resource (no subresource)."""
    if not _any(rule.operations, "CREATE") or not _any(rule.groups, request.group):
        return False
    if not _any(rule.versions, request.version):
        return False
    if not any(pattern in ("*", "*/*", request.resource) for pattern in rule.resources):
        return False
    namespaced = request.namespace is not None
    if (rule.scope == "Cluster" and namespaced) or (rule.scope == "Namespaced" and not namespaced):
        return False
    return not rule.names or request.name in rule.names


def _any(patterns: Iterable[str], value: str) -> bool:
    return any(pattern in ("*", value) for pattern in patterns)


def matches(
    match: MatchResources,
    request: Request,
    labels: Mapping[str, str],
    namespace_labels: Mapping[str, str] | None,
) -> str | None:
    """The version ``match`` selects the request by (its own, or with ``matchPolicy:
    Equivalent`` an equivalent one the object is converted to), None if it does not select it;
    ``namespace_labels``: of its namespace (None for a cluster-scoped object)."""
    # The resource rules first: they turn most objects away, and read only the request.
    version = _version_matched(match.rules, request, match.match_policy)
    if version is None:
        return None
    if match.excluded and _version_matched(match.excluded, request, match.match_policy) is not None:
        return None
    if request.kind == "Namespace" and request.group == "":
        if not _selects(match.namespace_selector, labels):
            return None
    elif namespace_labels is not None and not _selects(match.namespace_selector, namespace_labels):
        return None
    return version if _selects(match.object_selector, labels) else None


def _version_matched(rules: Sequence[ResourceRule] | None, request: Request, policy: str) -> str | None:
    """The version some rule matches the request by: its own first, then (``Equivalent``) the
    other versions its resource is served under (:data:`EQUIVALENT_VERSIONS`)."""
    # No rules (a binding's unset or empty ``resourceRules``) match every request: ``Matcher.
    # Matches`` in ``matching/matching.go`` (``len(matchResources.ResourceRules) == 0``).
    if not rules or any(rule_matches(rule, request) for rule in rules):
        return request.version
    if policy != "Equivalent":
        return None
    for version in EQUIVALENT_VERSIONS.get((request.group, request.resource), ()):
        if version != request.version:
            other = replace(request, version=version)
            if any(rule_matches(rule, other) for rule in rules):
                return version
    return None


def _selects(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """A policy's namespace or object selector: absent or empty selects everything."""
    return selector is None or selector.is_empty or selector_matches(selector, labels)


def labels_of(data: Mapping[str, Any]) -> dict[str, str]:
    raw = dig(data, ("metadata", "labels"))
    return {str(key): str(value) for key, value in raw.items()} if isinstance(raw, Mapping) else {}


@dataclass(frozen=True)
class Param:
    """A param candidate: an object a binding's ``paramRef`` may find."""

    api_version: str
    kind: str
    namespace: str | None
    name: str
    labels: Mapping[str, str]
    doc: Document


def param_candidates(documents: Iterable[Document]) -> list[Param]:
    """Every object of ``documents``, its namespace as written (None: unwritten; where it lands
    depends on its kind's scope, :func:`find_params`)."""
    out = []
    for doc in documents:
        data = doc.data
        if not isinstance(data, Mapping) or not isinstance(data.get("kind"), str):
            continue
        metadata = data.get("metadata") if isinstance(data.get("metadata"), Mapping) else {}
        assert isinstance(metadata, Mapping)
        namespace = metadata.get("namespace")
        out.append(
            Param(
                str(data.get("apiVersion")),
                data["kind"],
                str(namespace) if namespace else None,
                str(metadata.get("name") or ""),
                labels_of(data),
                doc,
            )
        )
    return out


def params_by_kind(candidates: Iterable[Param]) -> dict[tuple[str, str], list[Param]]:
    """Param candidates by (apiVersion, kind): a binding looks among its policy's kind only."""
    out: dict[tuple[str, str], list[Param]] = {}
    for param in candidates:
        out.setdefault((param.api_version, param.kind), []).append(param)
    return out


def built_in(api_version: Any) -> bool:
    """Whether an apiVersion is a built-in group's (core, ``apps``, ``policy``, ``*.k8s.io``)."""
    group = str(api_version or "").rpartition("/")[0]
    return "." not in group or group.endswith(".k8s.io")


def namespaced_kind(kind: tuple[str, str], candidates: Sequence[Param], refs: Iterable[ParamRef]) -> bool:
    """Whether a param kind is namespaced: a built-in kind by its registry
    (:data:`CLUSTER_SCOPED`); a custom kind by its CRD, which the files do not hold: namespaced
    when a param of it is written with a namespace or a binding's ``paramRef`` names one (a
    namespace on a cluster-scoped kind's paramRef is a configuration error), else cluster-scoped."""
    if built_in(kind[0]):
        return kind[1] not in CLUSTER_SCOPED
    return any(param.namespace for param in candidates) or any(ref.namespace for ref in refs)


class ParamError(Exception):
    """A binding's params cannot be resolved: a configuration error upstream."""


def find_params(
    ref: ParamRef,
    request: Request,
    candidates: Sequence[Param],
    namespaced: bool,
    default_namespace: str,
) -> list[Param]:
    """The params ``ref`` finds for ``request`` among ``candidates`` (of the policy's
    ``paramKind``), as ``generic.CollectParams`` (``policy/generic/policy_dispatcher.go``)
    finds them: a namespaced kind in ``ref.namespace``, else the request's namespace (none: a
    cluster-scoped object, an error); a cluster-scoped kind with ``ref.namespace``, an error;
    then by name or by label selector. A namespaced param written without a namespace is in
    ``default_namespace``, where ``kubectl apply`` creates it. Raises :class:`ParamError`,
    with upstream's message, also when none is found and ``parameterNotFoundAction`` is Deny."""
    wanted: str | None = None
    if namespaced:
        wanted = ref.namespace or request.namespace
        if not wanted:
            raise ParamError(
                "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
            )
    elif ref.namespace:
        raise ParamError("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
    found = []
    for param in candidates:
        if namespaced and (param.namespace or default_namespace) != wanted:
            continue
        if ref.name is not None:
            if param.name == ref.name:
                found.append(param)
        elif _selects(ref.selector, param.labels):
            found.append(param)
    if not found and ref.not_found == "Deny":
        raise ParamError("no params found for policy binding with `Deny` parameterNotFoundAction")
    return found
