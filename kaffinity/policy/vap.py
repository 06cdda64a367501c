"""A ValidatingAdmissionPolicy as a rule: what kube-apiserver would answer to a CREATE of each
manifest, with the finding at the field the failing expression reads.

For every object of the input (policies, bindings and their params aside) the rule does what
the API server's admission plugin does (``staging/src/k8s.io/apiserver/pkg/admission/plugin/
policy/validating``: ``dispatcher.go``, ``validator.go``):

0. an object the API server refuses before admission (a ``schema`` or ``api-validation``
   error, no name, a required field missing: a patch, a half-written fixture) is not
   evaluated, as no policy ever sees it;
1. the policy's ``matchConstraints`` must select it (:mod:`kaffinity.policy.matching`);
2. each binding of the policy whose ``matchResources`` select it is evaluated; a policy with no
   binding in the files given applies as if bound once, with ``validationActions: [Deny]``;
3. a binding with a ``paramRef`` finds its params (by name or selector): none found is a denial
   with ``parameterNotFoundAction: Deny``, a pass with ``Allow``; several are each evaluated;
4. ``matchConditions``: one false skips the policy; an error fails it under ``failurePolicy:
   Fail`` and skips it under ``Ignore``;
5. ``variables`` are evaluated in order; an error in one counts only where it is read;
6. each validation that is false is a finding: its ``messageExpression`` (when it gives a
   one-line string of at most 5 KiB once trimmed, as ``validator.go`` has it), else its
   ``message``, else ``failed expression: <expression>``. A validation that errors is a finding
   under ``Fail``, nothing under ``Ignore``;
7. the expressions of one evaluation share upstream's cost budget, and each has its per-call
   limit (:mod:`kaffinity.policy.cel.limits`); on Linux an evaluation that runs too long or
   grows too large is stopped (:mod:`kaffinity.policy.guard`): the object's decision is then
   "running out of cost budget", an error under ``Fail``, nothing under ``Ignore``.

A finding's severity comes from the binding's ``validationActions``: Deny → error, Warn →
warning, Audit → info. ``auditAnnotations`` are evaluated after the validations
(:mod:`kaffinity.policy.evaluation`): each value the object's request would get is an info
finding, ``audit annotation <policy>/<key>: <value>``; an annotation's error under ``failurePolicy:
Fail`` is an error whatever the actions (``dispatcher.go`` denies with it).

``object`` is the manifest defaulted as the API server would store it (:mod:`kaffinity.k8s.
defaults`), ``oldObject`` is null, ``request`` a CREATE by nobody (empty ``userInfo``),
``namespaceObject`` the object's Namespace from the input or the cluster file (null for a
cluster-scoped object). ``authorizer`` cannot be evaluated offline: an expression that uses it
is reported once, at the policy, and skipped.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kaffinity.findings import Severity, Violation
from kaffinity.k8s.conversion import convert
from kaffinity.k8s.defaults import defaulted, plain
from kaffinity.k8s.model.readers import dig
from kaffinity.load.source import DataPath, Document
from kaffinity.policy.admission import (
    ACTIONS,
    AdmissionPolicy,
    Binding,
    is_admission,
)
from kaffinity.policy.cel.limits import OUT_OF_BUDGET
from kaffinity.policy.evaluation import Compiled, evaluate, expression_path
from kaffinity.policy.expressions import (
    ADMISSION_VARIABLES,
    FACTS,
    Programs,
)
from kaffinity.policy.facts import facts
from kaffinity.policy.guard import Guarded, begin, guarded
from kaffinity.policy.matching import (
    NAMESPACE_NAME_LABEL,
    Param,
    ParamError,
    Request,
    find_params,
    labels_of,
    matches,
    namespaced_kind,
    param_candidates,
    params_by_kind,
    request_of,
)
from kaffinity.rules.base import POLICY_CATEGORY, Rule

if TYPE_CHECKING:
    from kaffinity.context import Context
    from kaffinity.policy.known import Known


#: What every admission rule of one context shares: the defaulted objects, the requests, the
#: namespaces and the param candidates, made once per context.
@dataclass
class Shared:
    """What the policies read of one context (its namespaces, params, refused objects, and the
    activations that read its namespaces); the objects themselves are the run's
    (:class:`Objects`)."""

    objects: Objects
    #: The activation of an object (no params, no variables' values) for the policies without
    #: params or facts: CEL converts an object once per activation, so they share one.
    plain_activations: dict[int, Any] = field(default_factory=dict)
    #: id() of the objects kube-apiserver would refuse before admission (None: not yet read)
    rejected: dict[int, str] | None = None
    namespaces: dict[str, tuple[dict[str, str], dict[str, Any]]] | None = None
    params: dict[tuple[str, str], list[Param]] | None = None


@dataclass
class Objects:
    """Each object's request, labels and defaulted copy, by id() of its document: made once per
    run, whichever context (a unit, the reported files) asks first."""

    requests: dict[int, Request | None] = field(default_factory=dict)
    labels: dict[int, dict[str, str]] = field(default_factory=dict)
    request_data: dict[int, dict[str, Any]] = field(default_factory=dict)
    defaulted: dict[int, dict[str, Any]] = field(default_factory=dict)
    params: dict[int, dict[str, Any]] = field(default_factory=dict)  # as params, defaulted once


def shared(context: Context) -> Shared:
    """What the policies share of one context, over the objects of the whole run."""
    return context.memo.get(
        "policy.vap.shared", lambda: Shared(context.run.memo.get("policy.vap.objects", Objects))
    )


def admission_rule(
    policy: AdmissionPolicy,
    bindings: Sequence[Binding],
    compiled: Compiled,
    programs: Programs,
    param_documents: Sequence[Document],
    peers: Sequence[AdmissionPolicy] = (),
    known: Known | None = None,
) -> Rule:
    """The rule that checks ``policy`` with ``bindings`` (none: bound once with Deny);
    ``peers``: every admission policy of the run (one of them notes a refused object);
    ``known``: the namespaces and params found before the stream, for a rule that runs file by
    file (:mod:`kaffinity.policy.streamed`)."""
    names = [*ADMISSION_VARIABLES, *([FACTS] if policy.kaffinity_only else [])]

    def check(context: Context) -> Iterator[Violation]:
        for expression in compiled.offline:
            yield Violation(
                policy.doc,
                expression.path,
                "this expression reads `authorizer`, which kaffinity cannot evaluate offline: it was skipped",
                severity=Severity.WARNING,
            )
        state = shared(context) if known is None else seed(context, known, param_documents)
        for doc in context.documents:
            if is_admission(doc.data) or not begin(doc):
                continue
            yield from _check_object(
                policy, bindings, compiled, programs, names, context, state, doc, param_documents, peers
            )

    def stopped(doc: Document | None, seconds: float) -> Iterator[Violation]:
        """An object whose evaluation :mod:`kaffinity.policy.guard` stopped: as upstream's
        evaluation out of budget, an error under ``failurePolicy: Fail``, nothing under Ignore."""
        if doc is not None and policy.failure_policy == "Fail":
            yield Violation(doc, (), f"{OUT_OF_BUDGET} (an expression ran over {seconds:g} s)")

    def prepare(context: Context) -> None:
        """What the built-in rules read too: the validation, and the facts' graph and placement."""
        _rejected(context, shared(context))
        if known is None:  # file by file, no facts: the guarded process builds what it reads
            prepare_facts(context, compiled.facts)

    bound = ", ".join(binding.name for binding in bindings) or "none in the files given: bound with Deny"
    docs = (
        f"The ValidatingAdmissionPolicy `{policy.name}`, evaluated as kube-apiserver would on a "
        f"CREATE of each manifest it matches.\n\nDefined in `{policy.doc.file}`; bindings: {bound}."
    )
    return Rule(
        name=policy.name,
        category=POLICY_CATEGORY,
        severity=_severity(bindings[0].actions) if bindings else Severity.ERROR,
        summary=f"ValidatingAdmissionPolicy {policy.name}",
        docs=docs,
        check=guarded(
            Guarded(
                check,
                stopped,
                own=(policy.doc,),
                prepare=prepare,
                served=known is not None,
                carry=refused_indexes,
                restore=refuse,
            )
        ),
        # The namespaces, the params and the facts may be in any manifest of the repository
        # (known: found before the stream, the rule reads one object).
        needs_all_manifests=known is None,
        streams=known is not None,
        unit_objects=known is not None,
        # Its CEL reads the object as written (and the params, the namespace), any field of it:
        # no compact model holds what it reads, so a run with policies reads its input whole.
        reads=None,
        reads_findings="findings" in compiled.facts,
    )


def _check_object(
    policy: AdmissionPolicy,
    bindings: Sequence[Binding],
    compiled: Compiled,
    programs: Programs,
    names: Sequence[str],
    context: Context,
    state: Shared,
    doc: Document,
    param_documents: Sequence[Document],
    peers: Sequence[AdmissionPolicy],
) -> Iterator[Violation]:
    seen = _identify(context, state, doc)
    if seen is None:
        return
    key = id(doc)
    request, labels, namespace_labels, namespace_data = seen
    version = matches(policy.match, request, labels, namespace_labels)
    if version is None:
        return
    active = _active(policy, bindings, request, labels, namespace_labels)
    if not active:
        return
    refused = _rejected(context, state).get(key)
    if refused is not None:
        yield from _refused_note(policy, peers, request, labels, namespace_labels, doc, refused)
        return
    run = state.objects
    if key not in run.defaulted:
        run.defaulted[key] = _stored(doc, programs.kube_version, request)
    obj, request_data = run.defaulted[key], run.request_data[key]
    converted = version != request.version
    if converted:  # matched by an equivalent version: the policy sees the object converted
        obj = convert(obj, request.group, version)
        request_data = _request_as(request_data, version)
    base = {
        "object": obj,
        "oldObject": None,
        "request": request_data,
        "namespaceObject": namespace_data,
        "authorizer": None,
    }
    if FACTS in names:
        base[FACTS] = facts(context, doc, compiled.facts)
    published: dict[str, list[str]] = {}
    for binding in active:
        severity = _severity(binding.actions)
        for param, problem in _params(policy, bindings, binding, request, context, state, param_documents):
            if problem is not None:
                # A configuration error (dispatcher.go's addConfigError): denied whatever the
                # binding's validationActions under failurePolicy Fail, skipped under Ignore.
                if policy.failure_policy == "Fail":
                    yield Violation(doc, (), _said(binding, problem), severity=Severity.ERROR)
                continue
            data = {**base, "params": param}
            # The variables are evaluated with it too; the validations then with one more.
            shareable = param is None and FACTS not in names and not converted
            bound = state.plain_activations.get(key) if shareable else None
            if shareable and bound is None:
                bound = state.plain_activations[key] = programs.activation(names, {**data, "variables": {}})
            for path, message, denies in evaluate(policy, compiled, programs, names, data, bound, published):
                yield Violation(
                    doc, path, _said(binding, message), severity=Severity.ERROR if denies else severity
                )
    yield from _published(policy, compiled, doc, published)


#: What an audit annotation a policy publishes on an object says (then its value).
PUBLISHED = "audit annotation "


def _published(
    policy: AdmissionPolicy, compiled: Compiled, doc: Document, published: Mapping[str, list[str]]
) -> Iterator[Violation]:
    """The audit annotations the policy adds to the object's request, each an info finding:
    ``<policy name>/<key>``, its distinct values over the bindings and params joined by ", "
    (``auditAnnotationCollector.publish`` in ``validating/dispatcher.go``)."""
    for expression, _ in compiled.annotations:
        values = published.get(expression.name)
        if values:
            said = f"{PUBLISHED}{policy.name}/{expression.name}: {', '.join(values)}"
            yield Violation(doc, expression_path(expression), said, severity=Severity.INFO)


def prepare_facts(context: Context, parts: Collection[str]) -> None:
    """Compute what the ``kaffinity`` variable's ``parts`` read of ``context`` that the
    built-in rules read too (the graph, the placement), before :mod:`kaffinity.policy.guard`
    forks: the guarded process then shares it instead of computing it again."""
    _ = context.inventory
    if {"neighbours", "rollout"} & set(parts):
        _ = context.graph
    if "placement" in parts:
        _ = context.placement


#: The validation rules whose findings mean the API server refuses the object outright.
REFUSING = ("schema", "api-validation")


def _rejected(context: Context, state: Shared) -> dict[int, str]:
    """The objects the API server refuses before validating admission runs (it decodes and
    validates an object first: ``schema`` and ``api-validation`` errors), which no policy sees,
    by id(), with what the note on them says: a half-written object (a patch, a fixture) is not
    also a policy's CEL error."""
    if state.rejected is None:
        found = context.validation
        refused = {id(doc): INCOMPLETE for doc in context.documents if _incomplete(doc.data)}
        refused.update({id(v.doc): NOT_EVALUATED for rule in REFUSING for v in found.get(rule, ())})
        state.rejected = refused
    return state.rejected


def refused_indexes(context: Context) -> dict[int, str] | None:
    """The refused objects (:func:`_rejected`) by index in the context's documents, as a guarded
    process is told them (None: not read)."""
    refused = shared(context).rejected
    if refused is None:
        return None
    return {number: refused[id(doc)] for number, doc in enumerate(context.documents) if id(doc) in refused}


def refuse(context: Context, indexes: Mapping[int, str] | None) -> None:
    """The refused objects of ``context`` as :func:`refused_indexes` gave them."""
    if indexes is not None:
        documents = context.documents
        shared(context).rejected = {id(documents[number]): said for number, said in indexes.items()}


#: Fields kube-apiserver's validation requires of each kind (``pkg/apis/apps/validation``,
#: ``batch/validation``, ``core/validation``: "Required value"). kaffinity's built-in rules do
#: not report them missing (a kustomize patch or a test fixture writes part of an object on
#: purpose), but no admission policy would ever see such an object.
REQUIRED_FIELDS: dict[str, tuple[tuple[DataPath, ...], ...]] = {
    # Each requirement: one of its paths must be written.
    "Deployment": ((("spec", "selector"),), (("spec", "template", "spec", "containers"),)),
    "ReplicaSet": ((("spec", "selector"),), (("spec", "template", "spec", "containers"),)),
    "StatefulSet": ((("spec", "selector"),), (("spec", "template", "spec", "containers"),)),
    "DaemonSet": ((("spec", "selector"),), (("spec", "template", "spec", "containers"),)),
    # The selector defaults to the template's labels (SetDefaults_ReplicationController).
    "ReplicationController": (
        (("spec", "selector"), ("spec", "template", "metadata", "labels")),
        (("spec", "template", "spec", "containers"),),
    ),
    "Job": ((("spec", "template", "spec", "containers"),),),
    "CronJob": (
        (("spec", "schedule"),),
        (("spec", "jobTemplate", "spec", "template", "spec", "containers"),),
    ),
    "Pod": ((("spec", "containers"),),),
    "HorizontalPodAutoscaler": ((("spec", "scaleTargetRef"),), (("spec", "maxReplicas"),)),
}


def _incomplete(data: Any) -> bool:
    """An object without a name, or without a field its kind requires."""
    if not isinstance(data, Mapping):
        return False
    metadata = data.get("metadata")
    if not isinstance(metadata, Mapping) or not (metadata.get("name") or metadata.get("generateName")):
        return True
    required = REQUIRED_FIELDS.get(str(data.get("kind")), ())
    return any(all(dig(data, path) in (None, [], {}) for path in paths) for paths in required)


def _active(
    policy: AdmissionPolicy,
    bindings: Sequence[Binding],
    request: Request,
    labels: Mapping[str, str],
    namespace_labels: Mapping[str, str] | None,
) -> list[Binding]:
    """The bindings whose ``matchResources`` select the request (none given: bound once with
    Deny)."""
    if not bindings:
        return [Binding(name="", doc=policy.doc, policy_name=policy.name, actions=("Deny",))]
    return [
        binding
        for binding in bindings
        if binding.match is None or matches(binding.match, request, labels, namespace_labels) is not None
    ]


#: What the policies say of an object the API server refuses before admission (then the names
#: of those that match it): for its validation errors, or as a fragment (a patch, a fixture).
NOT_EVALUATED = (
    "not evaluated: the API server refuses this object before admission (see its validation "
    "errors), so no admission policy sees it"
)
INCOMPLETE = (
    "not evaluated: this object lacks its name or a field the API server requires (a patch or a "
    "fragment is not an object admission sees)"
)


def _refused_note(
    policy: AdmissionPolicy,
    peers: Sequence[AdmissionPolicy],
    request: Request,
    labels: Mapping[str, str],
    namespace_labels: Mapping[str, str] | None,
    doc: Document,
    said: str,
) -> Iterator[Violation]:
    """The note on an object the API server refuses before validating admission: said once per
    object, by the first (by name) of the policies that match it, naming them all."""
    matched = sorted(
        {policy.name}
        | {p.name for p in peers if matches(p.match, request, labels, namespace_labels) is not None}
    )
    if matched[0] == policy.name:
        yield Violation(doc, (), f"{said} ({', '.join(matched)})", severity=Severity.INFO)


def _stored(doc: Document, kube_version: str, request: Request) -> dict[str, Any]:
    """The object as validating admission sees it: defaulted, empty metadata maps absent, a
    Namespace with its own name label."""
    obj = _omit_empty(defaulted(doc.data, kube_version, request.namespace))
    if _is_namespace(request):
        metadata = obj.setdefault("metadata", {})
        metadata["labels"] = {**(metadata.get("labels") or {}), NAMESPACE_NAME_LABEL: request.name}
    return obj


def _omit_empty(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as the API server serves it to CEL: ObjectMeta's ``labels`` and
    ``annotations`` are ``omitempty`` (``k8s.io/apimachinery/pkg/apis/meta/v1/types.go``), so an
    empty map written is absent (``has(object.metadata.labels)`` is false)."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        for field_name in ("labels", "annotations"):
            if metadata.get(field_name) in ({}, None) and field_name in metadata:
                del metadata[field_name]
    return obj


def _is_namespace(request: Request) -> bool:
    return request.kind == "Namespace" and request.group == ""


def _request_as(request: dict[str, Any], version: str) -> dict[str, Any]:
    """``request`` of an object converted to ``version``: ``kind`` and ``resource`` say the
    version the policy matched, ``requestKind`` and ``requestResource`` the one written."""
    return {
        **request,
        "kind": {**request["kind"], "version": version},
        "resource": {**request["resource"], "version": version},
    }


def _identify(
    context: Context, state: Shared, doc: Document
) -> tuple[Request, dict[str, str], dict[str, str] | None, dict[str, Any] | None] | None:
    """An object's request, labels, and its namespace's labels and object, made once per
    context (None: a document that is no object)."""
    key = id(doc)
    run = state.objects
    if key not in run.requests:
        data = doc.data
        request = request_of(data, context.settings.namespace) if isinstance(data, Mapping) else None
        run.requests[key] = request
        if request is not None:
            run.labels[key] = labels_of(data)
            if _is_namespace(request):
                # A Namespace being created carries its own name label: SetDefaults_Namespace
                # (pkg/apis/core/v1/defaults.go) puts it on before admission, so its selectors
                # and its CEL see it.
                run.labels[key][NAMESPACE_NAME_LABEL] = request.name
            run.request_data[key] = request.as_cel()
    request = run.requests[key]
    if request is None:
        return None
    return request, run.labels[key], *_namespace(context, state, request.namespace)


def _params(
    policy: AdmissionPolicy,
    bindings: Sequence[Binding],
    binding: Binding,
    request: Request,
    context: Context,
    state: Shared,
    param_documents: Sequence[Document],
) -> Iterator[tuple[Any, str | None]]:
    """Each params object to evaluate with (None: no params), or the configuration error
    instead (upstream's words, ``failed to configure binding: ...``, then what was looked for)."""
    ref = binding.param_ref
    if policy.param_kind is None or ref is None:
        # generic.CollectParams: no paramKind, or a binding without paramRef: null params
        yield None, None
        return
    if state.params is None:
        state.params = params_by_kind(param_candidates([*param_documents, *context.documents]))
    candidates = state.params.get(policy.param_kind, [])
    refs = [b.param_ref for b in bindings if b.param_ref is not None]
    namespaced = namespaced_kind(policy.param_kind, candidates, refs)
    default_namespace = context.settings.namespace
    try:
        found = find_params(ref, request, candidates, namespaced, default_namespace)
    except ParamError as error:
        wanted = ref.name or "any matching the selector"
        where = ref.namespace or request.namespace if namespaced else None
        looked = f"{policy.param_kind[1]} {wanted}{f' in namespace {where}' if where else ''}"
        yield None, f"failed to configure binding: {error} ({looked})"
        return
    for param in found:
        # As the API server stores it: defaulted (a PodDisruptionBudget written without ``spec``
        # has ``spec: {}``, a Deployment its replicas), in its namespace.
        stored = state.objects.params
        key = id(param.doc)
        if key not in stored:
            where = (param.namespace or default_namespace) if namespaced else None
            stored[key] = defaulted(param.doc.data, context.settings.kube_version, where)
        yield stored[key], None


def _said(binding: Binding, message: str) -> str:
    return f"{message} (binding {binding.name})" if binding.name else message


def _severity(actions: Sequence[str]) -> Severity:
    """The most severe of a binding's actions: Deny → error, Warn → warning, Audit → info."""
    found = [Severity(ACTIONS[action]) for action in actions if action in ACTIONS]
    order = [Severity.ERROR, Severity.WARNING, Severity.INFO]
    return min(found, key=order.index) if found else Severity.ERROR


def _namespaces(context: Context, state: Shared) -> dict[str, tuple[dict[str, str], dict[str, Any]]]:
    """Each known namespace's labels and object (:func:`known_namespaces`), once per context."""
    if state.namespaces is None:
        state.namespaces = known_namespaces(context)
    return state.namespaces


def known_namespaces(context: Context) -> dict[str, tuple[dict[str, str], dict[str, Any]]]:
    """Each namespace's labels (with the name label the API server adds) and object, from the
    cluster file then the input (the input wins)."""
    found: dict[str, tuple[dict[str, str], dict[str, Any]]] = {}
    known = [
        *(context.cluster.namespaces if context.cluster is not None else ()),
        *context.inventory.namespaces,
    ]
    for namespace in known:
        name = namespace.ref.name
        obj = plain(namespace.doc.data)
        labels = {**labels_of(obj), NAMESPACE_NAME_LABEL: name}
        obj.setdefault("metadata", {})["labels"] = labels
        found[name] = (labels, obj)
    return found


def seed(context: Context, known: Known, param_documents: Sequence[Document]) -> Shared:
    """The context's shared state with what the stream knew beforehand (a policy run file by
    file: :mod:`kaffinity.policy.streamed`): the namespaces and the params of the whole input."""
    state = shared(context)
    if state.namespaces is None and known.namespaces is not None:
        state.namespaces = known.namespaces
    if state.params is None:
        state.params = params_by_kind(param_candidates([*param_documents, *known.params]))
    return state


def _namespace(
    context: Context, state: Shared, name: str | None
) -> tuple[dict[str, str] | None, dict[str, Any] | None]:
    """A namespace's labels and object (None, None for a cluster-scoped object)."""
    if name is None:
        return None, None
    return _namespaces(context, state).get(name) or _unknown_namespace(name)


def namespace_object(context: Context, name: str | None) -> dict[str, Any] | None:
    """``namespaceObject``: the Namespace ``name`` as a policy reads it (None: cluster-scoped)."""
    return _namespace(context, shared(context), name)[1]


def _unknown_namespace(name: str) -> tuple[dict[str, str], dict[str, Any]]:
    """A namespace neither the input nor the cluster file declares: what the API server would
    have made of ``kubectl create namespace <name>``."""
    labels = {NAMESPACE_NAME_LABEL: name}
    return labels, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
