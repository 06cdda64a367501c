"""The API server's own validation of scheduling fields, for one object at one version.

A faithful port of the checks kube-apiserver runs when a Pod or a pod template is created, as
far as they concern scheduling (``pkg/apis/core/validation/validation.go``:
``validateAffinity``, ``validatePodAffinityTerm``, ``validateMatchLabelKeysAndMismatchLabelKeys``,
``validateTopologySpreadConstraints``, ``ValidateTolerations``; the metav1 label selector and
label checks of k8s.io/apimachinery), with the same field paths and the same messages; what
``pkg/api/pod/warnings.go`` answers with a warning; and what ``pkg/api/pod/util.go``
(``dropDisabledFields``) drops silently when a feature gate is off.

What the extended schemas already report (types, unknown fields, values outside an enumeration,
proposal fields) is not reported again here. A value of the wrong type is skipped; a null or
missing value reads as Go's zero value, as the API server decodes it.

For a bare Pod the create-time merge of ``matchLabelKeys`` / ``mismatchLabelKeys`` into the
label selectors (``podStrategy.PrepareForCreate``, :func:`kaffinity.expand.merge.merge_keys`) runs
before validation, as upstream; pod templates, and Pods that exist already, are validated
without it (the ``merged-selector-rejected`` rule validates the pods a template creates).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from kaffinity.expand.merge import is_existing, merge_keys
from kaffinity.k8s import gates as fg
from kaffinity.k8s.labels import dns1123_label, dns1123_subdomain, label_value, qualified_name
from kaffinity.k8s.model.kinds import pod_template_path
from kaffinity.k8s.model.readers import dig
from kaffinity.load.source import DataPath, format_path

if TYPE_CHECKING:
    from kaffinity.k8s.model import WorkloadKind

API_VALIDATION = "api-validation"
API_WARNING = "api-warning"
GATED_FIELD_DROPPED = "gated-field-dropped"


# pkg/api/node/util.go (deprecatedNodeLabels), used by pkg/api/pod/warnings.go.
def _deprecated(since: str, replacement: str) -> str:
    return f'deprecated since {since}; use "{replacement}" instead'


DEPRECATED_NODE_LABELS = {
    "beta.kubernetes.io/arch": _deprecated("v1.14", "kubernetes.io/arch"),
    "beta.kubernetes.io/os": _deprecated("v1.14", "kubernetes.io/os"),
    "failure-domain.beta.kubernetes.io/region": _deprecated("v1.17", "topology.kubernetes.io/region"),
    "failure-domain.beta.kubernetes.io/zone": _deprecated("v1.17", "topology.kubernetes.io/zone"),
    "beta.kubernetes.io/instance-type": _deprecated("v1.17", "node.kubernetes.io/instance-type"),
    "app.kubernetes.io/created-by": "deprecated since v1.9",
    "scheduler.alpha.kubernetes.io/preferAvoidPods": (
        "deprecated since v1.22; use Taints and Tolerations instead"
    ),
    "node-role.kubernetes.io/master": 'use "node-role.kubernetes.io/control-plane" instead',
}
# KEP-5471: Lt/Gt toleration values are integers in canonical form (no sign, no leading zero).
_CANONICAL_INTEGER = re.compile(r"0|-?[1-9][0-9]*")
_GO_INTEGER = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class Target:
    """What the objects are validated for: a version, its gates, and whether proposals count."""

    version: str
    gates: Mapping[str, bool] = field(default_factory=dict)
    proposals: bool = False

    @cached_property
    def _states(self) -> dict[str, fg.GateState]:
        """Every modelled gate's state, worked out once per run rather than once per term."""
        return {name: fg.gate_state(name, self.version, self.gates) for name in fg.GATES}

    @cached_property
    def minor(self) -> int:
        return fg.minor(self.version)

    def gate(self, name: str) -> fg.GateState:
        return self._states[name]


@dataclass(frozen=True, slots=True)
class Problem:
    """One answer of the API server: ``path`` places it, ``field`` is the path it names."""

    rule: str
    path: DataPath
    field: str
    message: str
    fix: str | None = None


def validate(
    data: Mapping[str, Any], target: Target, workload_kinds: Sequence[WorkloadKind] = ()
) -> list[Problem]:
    """Everything the API server would reject, warn about or drop in this object's scheduling
    fields; ``workload_kinds``: the configured custom workload kinds, whose pod templates are
    validated as the API server validates a pod template (the pods their controllers create
    go through it)."""
    kind = data.get("kind")
    if not isinstance(kind, str):
        return []
    # Only a Pod being created is merged; one read back from a cluster was merged at its creation.
    checker = _Checker(
        target, is_pod=kind == "Pod" and data.get("apiVersion") == "v1" and not is_existing(data)
    )
    if kind == "PodDisruptionBudget":
        spec = data.get("spec")
        if isinstance(spec, Mapping):
            checker.budget_spec(spec, ("spec",))
        return checker.problems
    api_version = data.get("apiVersion")
    base = pod_template_path(kind, api_version if isinstance(api_version, str) else None, workload_kinds)
    if base is None:
        return []
    template = dig(data, base)
    if not isinstance(template, Mapping):
        return []
    metadata = template.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    checker.pod_labels = (
        {k: v for k, v in labels.items() if isinstance(v, str)} if isinstance(labels, Mapping) else {}
    )
    checker.labels(labels, (*base, "metadata", "labels"))
    spec = template.get("spec")
    if isinstance(spec, Mapping):
        checker.pod_spec(spec, (*base, "spec"))
    return checker.problems


def budget_refused(data: Mapping[str, Any], version: str) -> bool:
    """Whether kube-apiserver refuses this PodDisruptionBudget (``ValidatePodDisruptionBudgetSpec``,
    or a budget field of a type the schema refuses): it never exists, so no rule reasons about
    what it would protect."""
    spec = data.get("spec")
    if not isinstance(spec, Mapping):
        return False
    for name in ("minAvailable", "maxUnavailable"):
        value = spec.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, str))):
            return True
    checker = _Checker(Target(version), is_pod=False)
    checker.budget_spec(spec, ("spec",))
    return any(problem.rule == API_VALIDATION for problem in checker.problems)


def _int_or_string(value: int | str) -> str:
    """An ``intstr.IntOrString`` as field.Error prints it (``%#v``: a value, not a Stringer)."""
    if isinstance(value, str):
        return f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{_quote(value)}}}"
    return f'intstr.IntOrString{{Type:0, IntVal:{value}, StrVal:""}}'


#: ``validation.IsValidPercent`` (k8s.io/apimachinery/pkg/util/validation), with RegexError's words.
_PERCENT = re.compile(r"[0-9]+%")
_PERCENT_MESSAGE = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)


def _text(value: Any) -> str | None:
    """A string field as Go reads it: null is "", another type is skipped (the schema reports it)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else None


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _strings(value: Any) -> list[tuple[int, str]]:
    return (
        [(i, item) for i, item in enumerate(value) if isinstance(item, str)]
        if isinstance(value, list)
        else []
    )


def _items(value: Any) -> Iterator[tuple[int, Mapping[str, Any]]]:
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield i, item if isinstance(item, Mapping) else {}


def _match_labels_keys(selector: Mapping[str, Any]) -> set[Any]:
    labels = selector.get("matchLabels")
    return set(labels) if isinstance(labels, Mapping) else set()


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _quote(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class _Checker:
    def __init__(self, target: Target, is_pod: bool) -> None:
        self.target = target
        self.is_pod = is_pod
        self.pod_labels: dict[str, str] = {}
        self.problems: list[Problem] = []
        #: The nodes checked already, by id (kept alive, so that no id is reused): a node that
        #: YAML aliases repeat is checked once, and its errors, at one place in the file, are
        #: reported once (a term anchored once and aliased 141 times made 141,000 errors).
        self.seen: dict[tuple[int, bool], Any] = {}

    # -- reporting, in field.Error's words --------------------------------------------------

    def _add(self, path: DataPath, message: str, at: str | None = None, rule: str = API_VALIDATION) -> None:
        self.problems.append(Problem(rule, path, at if at is not None else format_path(path), message))

    def invalid(self, path: DataPath, value: Any, detail: str, at: str | None = None) -> None:
        self._add(path, f"Invalid value: {_quote(value)}: {detail}", at)

    def required(self, path: DataPath, detail: str) -> None:
        self._add(path, f"Required value: {detail}")

    def forbidden(self, path: DataPath, detail: str) -> None:
        self._add(path, f"Forbidden: {detail}")

    def warn(self, path: DataPath, detail: str) -> None:
        self._add(path, f"{format_path(path)}: {detail}", rule=API_WARNING)

    def dropped(self, path: DataPath, state: fg.GateState, lost: str) -> None:
        name = format_path(path[-1:]) if path else ""
        message = f"the API server drops {name} silently: {state.why(self.target.version)}; {lost}"
        self.problems.append(
            Problem(
                GATED_FIELD_DROPPED,
                path,
                format_path(path),
                message,
                f"enable {state.name}, or remove {name}",
            )
        )

    # -- names and labels -------------------------------------------------------------------

    def label_name(self, key: str, path: DataPath, at: str | None = None) -> None:
        for detail in qualified_name(key):
            self.invalid(path, key, detail, at)

    def labels(self, labels: Any, path: DataPath) -> None:
        """``ValidateLabels``: errors name the map itself, not the key."""
        if not isinstance(labels, Mapping):
            return
        at = format_path(path)
        for key, value in labels.items():
            self.label_name(key, (*path, key), at)
            if isinstance(value, str):
                for detail in label_value(value):
                    self.invalid((*path, key), value, detail, at)

    def once(self, node: Any, flag: bool) -> bool:
        """Whether ``node`` (checked with ``flag``) is seen for the first time."""
        key = (id(node), flag)
        if key in self.seen:
            return False
        self.seen[key] = node
        return True

    def label_selector(self, selector: Any, path: DataPath, pod_selector: bool = False) -> None:
        """metav1 ``ValidateLabelSelector``; ``pod_selector``: a pod affinity term's (Gt/Lt proposal)."""
        if not isinstance(selector, Mapping) or not self.once(selector, pod_selector):
            return
        self.labels(selector.get("matchLabels"), (*path, "matchLabels"))
        for i, expression in _items(selector.get("matchExpressions")):
            here = (*path, "matchExpressions", i)
            operator, values = expression.get("operator"), expression.get("values")
            numeric = pod_selector and self.target.proposals  # the Gt/Lt proposal
            self.operator_values(operator, values, here, numeric=numeric)
            key = _text(expression.get("key"))
            if key is not None:
                self.label_name(key, (*here, "key"))
            for j, value in _strings(values):
                for detail in label_value(value):
                    self.invalid((*here, "values", j), value, detail)

    def operator_values(self, operator: Any, values: Any, here: DataPath, numeric: bool) -> None:
        """How many values each operator takes (label and node selector requirements alike)."""
        count = len(values) if isinstance(values, list) else 0
        if operator in ("In", "NotIn") and count == 0:
            self.required((*here, "values"), "must be specified when `operator` is 'In' or 'NotIn'")
        elif operator in ("Exists", "DoesNotExist") and count > 0:
            self.forbidden(
                (*here, "values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            )
        elif operator in ("Gt", "Lt") and numeric and count != 1:
            self.required((*here, "values"), "must be specified single value when `operator` is 'Lt' or 'Gt'")
        elif operator is None:  # absent or null: "" (other values: the schema's enumeration)
            self.invalid((*here, "operator"), "", "not a valid selector operator")

    # -- disruption budgets ------------------------------------------------------------------

    def budget_spec(self, spec: Mapping[str, Any], path: DataPath) -> None:
        """``ValidatePodDisruptionBudgetSpec`` (pkg/apis/policy/validation/validation.go), with the
        create-time option ``AllowInvalidLabelValueInSelector: false``; unhealthyPodEvictionPolicy
        is the schema's enumeration."""
        minimum, maximum = spec.get("minAvailable"), spec.get("maxUnavailable")
        if minimum is not None and maximum is not None:
            # field.Invalid(fldPath, spec, ...): Go prints the whole struct, pointers and all.
            self._add(
                (*path, "maxUnavailable"),
                "Invalid value: policy.PodDisruptionBudgetSpec{...}: minAvailable and maxUnavailable cannot "
                "be both set",
                at=format_path(path),
            )
        for name, value in (("minAvailable", minimum), ("maxUnavailable", maximum)):
            if isinstance(value, (int, str)) and not isinstance(value, bool):
                self.int_or_percent(value, (*path, name))
        self.label_selector(spec.get("selector"), (*path, "selector"))

    def int_or_percent(self, value: int | str, path: DataPath) -> None:
        """apps validation ``ValidatePositiveIntOrPercent`` then ``IsNotMoreThan100Percent``."""
        if isinstance(value, int):
            if value < 0:  # ValidateNonnegativeField
                self.invalid(path, value, "must be greater than or equal to 0")
            return
        if not _PERCENT.fullmatch(value):
            self._add(path, f"Invalid value: {_int_or_string(value)}: {_PERCENT_MESSAGE}")
        elif int(value[:-1]) > 100:
            self._add(path, f"Invalid value: {_int_or_string(value)}: must not be greater than 100%")

    # -- the pod spec -----------------------------------------------------------------------

    def pod_spec(self, spec: Mapping[str, Any], path: DataPath) -> None:
        self.labels(spec.get("nodeSelector"), (*path, "nodeSelector"))
        self.node_selector_warnings(spec.get("nodeSelector"), (*path, "nodeSelector"))
        affinity = spec.get("affinity")
        if isinstance(affinity, Mapping):
            self.node_affinity(affinity.get("nodeAffinity"), (*path, "affinity", "nodeAffinity"))
            for group in ("podAffinity", "podAntiAffinity"):
                self.pod_affinity(affinity.get(group), (*path, "affinity", group))
        self.tolerations(spec.get("tolerations"), (*path, "tolerations"))
        self.spread_constraints(spec.get("topologySpreadConstraints"), (*path, "topologySpreadConstraints"))
        self.quantities(spec, path)

    def quantities(self, spec: Mapping[str, Any], path: DataPath) -> None:
        """Resource quantities kube-apiserver cannot decode: ``resource.Quantity.UnmarshalJSON``
        fails with ParseQuantity's error and the whole object is refused (``1EB``, ``.nan``)."""
        from kaffinity.k8s.quantity import quantity_error

        places: list[tuple[Any, DataPath]] = [
            (spec.get("overhead"), (*path, "overhead")),
            *(
                (_map(spec.get("resources")).get(kind), (*path, "resources", kind))
                for kind in ("requests", "limits")
            ),
        ]
        for group in ("initContainers", "containers", "ephemeralContainers"):
            for i, container in _items(spec.get(group)):
                resources = _map(container.get("resources"))
                for kind in ("requests", "limits"):
                    places.append((resources.get(kind), (*path, group, i, "resources", kind)))
        for i, volume in _items(spec.get("volumes")):
            empty_dir = _map(volume.get("emptyDir"))
            if "sizeLimit" in empty_dir:
                places.append(({"sizeLimit": empty_dir["sizeLimit"]}, (*path, "volumes", i, "emptyDir")))
        for values, here in places:
            if isinstance(values, Mapping):
                for name, value in values.items():
                    error = quantity_error(value)
                    if error is not None:
                        self.invalid((*here, name), value, error)

    def node_selector_warnings(self, selector: Any, path: DataPath) -> None:
        if isinstance(selector, Mapping):
            for key in selector:
                if key in DEPRECATED_NODE_LABELS:
                    where = f"{format_path(path)}[{key}]"
                    self._add((*path, key), f"{where}: {DEPRECATED_NODE_LABELS[key]}", rule=API_WARNING)

    def deprecated_label(self, key: str, path: DataPath) -> None:
        """Node affinity keys and spread topology keys (not pod affinity topology keys)."""
        if key in DEPRECATED_NODE_LABELS:
            self._add(path, f"{format_path(path)}: {key} is {DEPRECATED_NODE_LABELS[key]}", rule=API_WARNING)

    # -- node affinity ----------------------------------------------------------------------

    def node_affinity(self, affinity: Any, path: DataPath) -> None:
        if not isinstance(affinity, Mapping):
            return
        for name in (
            "requiredDuringSchedulingIgnoredDuringExecution",
            "requiredDuringSchedulingRequiredDuringExecution",
        ):
            if name.endswith("RequiredDuringExecution") and not self.target.proposals:
                continue  # a proposal field: the schema rule reports it
            selector = affinity.get(name)
            if isinstance(selector, Mapping):
                terms = selector.get("nodeSelectorTerms")
                here = (*path, name, "nodeSelectorTerms")
                if not isinstance(terms, list) or not terms:
                    self.required(here, "must have at least one node selector term")
                for i, term in _items(terms):
                    self.node_selector_term(term, (*here, i), required=True)
        for i, preferred in _items(affinity.get("preferredDuringSchedulingIgnoredDuringExecution")):
            here = (*path, "preferredDuringSchedulingIgnoredDuringExecution", i)
            self.weight(preferred.get("weight"), (*here, "weight"))
            preference = preferred.get("preference")
            if isinstance(preference, Mapping):
                self.node_selector_term(preference, (*here, "preference"), required=False)

    def weight(self, value: Any, path: DataPath) -> None:
        weight = 0 if value is None else _integer(value)
        if weight is not None and not 1 <= weight <= 100:
            self.invalid(path, weight, "must be in the range 1-100")

    def node_selector_term(self, term: Mapping[str, Any], path: DataPath, required: bool) -> None:
        if not self.once(term, required):
            return
        for j, requirement in _items(term.get("matchExpressions")):
            here = (*path, "matchExpressions", j)
            operator, values = requirement.get("operator"), requirement.get("values")
            self.operator_values(operator, values, here, numeric=True)
            key = _text(requirement.get("key"))
            if key is not None:
                self.label_name(key, (*here, "key"))
                self.deprecated_label(key, (*here, "key"))
            # Values of required terms are label values from 1.33 (kubernetes#128212); preferred
            # terms always skip the check.
            if required and self.target.minor >= 33:
                for k, value in _strings(values):
                    for detail in label_value(value):
                        self.invalid((*here, "values", k), value, detail)
        for j, requirement in _items(term.get("matchFields")):
            here = (*path, "matchFields", j)
            operator, values = requirement.get("operator"), requirement.get("values")
            count = len(values) if isinstance(values, list) else 0
            if operator in ("In", "NotIn"):
                if count != 1:
                    self.required(
                        (*here, "values"),
                        "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                    )
            elif operator is None or operator in ("Exists", "DoesNotExist", "Gt", "Lt"):
                self.invalid((*here, "operator"), operator or "", "not a valid selector operator")
            key = _text(requirement.get("key"))
            if key is not None and key != "metadata.name":
                self.invalid((*here, "key"), key, "not a valid field selector key")
                continue  # the values are node names only for metadata.name
            for k, value in _strings(values):
                for detail in dns1123_subdomain(value):
                    self.invalid((*here, "values", k), value, detail)

    # -- pod affinity -----------------------------------------------------------------------

    def pod_affinity(self, affinity: Any, path: DataPath) -> None:
        if not isinstance(affinity, Mapping):
            return
        for i, term in _items(affinity.get("requiredDuringSchedulingIgnoredDuringExecution")):
            self.pod_affinity_term(term, (*path, "requiredDuringSchedulingIgnoredDuringExecution", i))
        for i, weighted in _items(affinity.get("preferredDuringSchedulingIgnoredDuringExecution")):
            here = (*path, "preferredDuringSchedulingIgnoredDuringExecution", i)
            self.weight(weighted.get("weight"), (*here, "weight"))
            inner = weighted.get("podAffinityTerm")
            self.pod_affinity_term(inner if isinstance(inner, Mapping) else {}, (*here, "podAffinityTerm"))

    def pod_affinity_term(self, term: Mapping[str, Any], path: DataPath) -> None:
        selector = term.get("labelSelector")
        match_keys, mismatch_keys = self.affinity_label_keys(term, path)
        merged = self.merged(selector, match_keys, mismatch_keys)
        self.label_selector(merged, (*path, "labelSelector"), pod_selector=True)
        self.label_selector(term.get("namespaceSelector"), (*path, "namespaceSelector"))
        for i, name in _strings(term.get("namespaces")):
            for detail in dns1123_label(name):
                # Upstream names the child "namespace" (singular), not the list item.
                self.invalid((*path, "namespaces", i), name, detail, at=format_path((*path, "namespace")))
        topology_key = _text(term.get("topologyKey"))
        if topology_key is not None:
            if not topology_key:
                self.required((*path, "topologyKey"), "can not be empty")
            self.label_name(topology_key, (*path, "topologyKey"))
        if selector is None:
            self.warn((*path, "labelSelector"), "a null labelSelector results in matching no pod")
        if match_keys or mismatch_keys:
            self.match_label_keys(path, match_keys, mismatch_keys, merged)

    def affinity_label_keys(self, term: Mapping[str, Any], path: DataPath) -> tuple[list[str], list[str]]:
        """The keys that reach validation: none when the gate drops them (reported as dropped)."""
        match_keys = [key for _, key in _strings(term.get("matchLabelKeys"))]
        mismatch_keys = [key for _, key in _strings(term.get("mismatchLabelKeys"))]
        if not match_keys and not mismatch_keys:
            return [], []
        state = self.target.gate(fg.MATCH_LABEL_KEYS_IN_POD_AFFINITY)
        if state.enabled:
            return match_keys, mismatch_keys
        if state.stage is not None:  # the field exists but is off; unknown before 1.29 (schema)
            lost = (
                "the term is not narrowed to pods with the same values of those labels (for example, "
                "pods of the old revision still count during a rolling update)"
            )
            for name, keys in (("matchLabelKeys", match_keys), ("mismatchLabelKeys", mismatch_keys)):
                if keys:
                    self.dropped((*path, name), state, lost)
        return [], []

    def merged(self, selector: Any, match_keys: Sequence[str], mismatch_keys: Sequence[str]) -> Any:
        """The selector a bare Pod is validated with: matchLabelKeys merged in at create
        (``podStrategy.PrepareForCreate``, ``pkg/registry/core/pod/strategy.go``)."""
        if not self.is_pod or not isinstance(selector, Mapping) or not (match_keys or mismatch_keys):
            return selector
        written = selector.get("matchExpressions")
        expressions = list(written) if isinstance(written, list) else []
        expressions += [
            {"key": key, "operator": operator, "values": [value]}
            for key, operator, value in merge_keys(self.pod_labels, match_keys, mismatch_keys)
        ]
        return {**selector, "matchExpressions": expressions}

    def match_label_keys(
        self, path: DataPath, match_keys: list[str], mismatch_keys: list[str], selector: Any
    ) -> None:
        """``validateMatchLabelKeysAndMismatchLabelKeys`` (1.29+), in upstream's order."""
        for name, keys in (("matchLabelKeys", match_keys), ("mismatchLabelKeys", mismatch_keys)):
            if not keys:
                continue
            if not isinstance(selector, Mapping):
                self.forbidden((*path, name), "must not be specified when labelSelector is not set")
                continue
            for i, key in enumerate(keys):
                self.label_name(key, (*path, name, i))
        if isinstance(selector, Mapping):
            self.keys_in_selector(path, match_keys, selector)
        mismatch = set(mismatch_keys)
        for i, key in enumerate(match_keys):
            if key in mismatch:
                self.invalid(
                    (*path, "matchLabelKeys", i), key, "exists in both matchLabelKeys and mismatchLabelKeys"
                )

    def keys_in_selector(self, path: DataPath, keys: list[str], selector: Mapping[str, Any]) -> None:
        """A matchLabelKeys key that the (merged) selector holds twice. Upstream reports it at
        ``<term>[i]``, i being the key's index in matchLabelKeys."""
        index = {key: i for i, key in enumerate(keys)}
        seen = _match_labels_keys(selector)
        for _, expression in _items(selector.get("matchExpressions")):
            key = expression.get("key")
            if isinstance(key, str):
                if key in index and key in seen:
                    i = index[key]
                    self.invalid(
                        (*path, "matchLabelKeys", i),
                        key,
                        "exists in both matchLabelKeys and labelSelector",
                        at=format_path((*path, i)),
                    )
                seen.add(key)

    # -- tolerations ------------------------------------------------------------------------

    def tolerations(self, tolerations: Any, path: DataPath) -> None:
        for i, toleration in _items(tolerations):
            here = (*path, i)
            key, operator = _text(toleration.get("key")), _text(toleration.get("operator"))
            value, effect = _text(toleration.get("value")), _text(toleration.get("effect"))
            if key:
                self.label_name(key, (*here, "key"))
            if key == "" and operator is not None and operator != "Exists":
                self.invalid(
                    (*here, "operator"),
                    operator,
                    "operator must be Exists when `key` is empty, "
                    'which means "match all values and all keys"',
                )
            if (
                toleration.get("tolerationSeconds") is not None
                and effect is not None
                and effect != "NoExecute"
            ):
                self.invalid(
                    (*here, "effect"), effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"
                )
            if value is None:
                continue
            if operator in ("", "Equal"):
                details = label_value(value)
                if details:  # upstream joins the messages, and names the operator
                    self.invalid((*here, "operator"), value, ";".join(details))
            elif operator == "Exists":
                if value:
                    self.invalid(
                        (*here, "operator"), value, "value must be empty when `operator` is 'Exists'"
                    )
            elif operator in ("Lt", "Gt") and self.target.minor >= 35:
                self.comparison_toleration(value, operator, here)

    def comparison_toleration(self, value: str, operator: str, here: DataPath) -> None:
        """KEP-5471 (alpha 1.35): Lt/Gt tolerations need the gate and an integer value."""
        state = self.target.gate(fg.TOLERATION_COMPARISON)
        if not state.enabled:
            self._add(
                (*here, "operator"),
                # field.NotSupported with the operators this API server accepts: without the
                # gate, Equal and Exists only.
                f'Unsupported value: {_quote(operator)}: supported values: "Equal", "Exists" '
                f"({state.why(self.target.version)})",
            )
            return
        if not value:
            self.invalid((*here, "value"), value, "must be non-empty")
        elif not _CANONICAL_INTEGER.fullmatch(value):
            self.invalid((*here, "value"), value, "must be a valid decimal integer in canonical form")
        # Then strconv.ParseInt(value, 10, 64), whose error upstream appends verbatim.
        if not _GO_INTEGER.fullmatch(value):
            self.invalid(
                (*here, "value"), value, f"strconv.ParseInt: parsing {_quote(value)}: invalid syntax"
            )
        elif not -(2**63) <= int(value, 10) < 2**63:
            self.invalid(
                (*here, "value"), value, f"strconv.ParseInt: parsing {_quote(value)}: value out of range"
            )

    # -- topology spread --------------------------------------------------------------------

    def spread_constraints(self, constraints: Any, path: DataPath) -> None:
        if not isinstance(constraints, list):
            return
        items = list(_items(constraints))
        for i, constraint in items:
            here = (*path, i)
            max_skew = _integer(constraint.get("maxSkew")) if constraint.get("maxSkew") is not None else 0
            if max_skew is not None and max_skew <= 0:
                self.invalid((*here, "maxSkew"), max_skew, "must be greater than zero")
            topology_key = _text(constraint.get("topologyKey"))
            if topology_key == "":
                self.required((*here, "topologyKey"), "can not be empty")
            elif topology_key is not None:
                self.deprecated_label(topology_key, (*here, "topologyKey"))
            action = _text(constraint.get("whenUnsatisfiable"))
            if action == "":  # absent or null (other values: the schema's enumeration)
                self._add(
                    (*here, "whenUnsatisfiable"),
                    'Unsupported value: "": supported values: "DoNotSchedule", "ScheduleAnyway"',
                )
            for _, later in items[i + 1 :]:
                if (
                    topology_key is not None
                    and action is not None
                    and (
                        _text(later.get("topologyKey")),
                        _text(later.get("whenUnsatisfiable")),
                    )
                    == (topology_key, action)
                ):
                    pair = "{" + f"{topology_key}, {action}" + "}"
                    self._add(
                        (*here, "topologyKey"),
                        f"Duplicate value: {_quote(pair)}",
                        at=format_path(here) + ".{topologyKey, whenUnsatisfiable}",
                    )
                    break
            self.min_domains(constraint, here, action)
            self.spread_gated_fields(constraint, here)
            selector = constraint.get("labelSelector")
            match_keys = self.spread_label_keys(constraint, here)
            self.label_selector(self.spread_merged(selector, match_keys), (*here, "labelSelector"))
            if selector is None:
                self.warn((*here, "labelSelector"), "a null labelSelector results in matching no pod")

    def min_domains(self, constraint: Mapping[str, Any], here: DataPath, action: str | None) -> None:
        raw = constraint.get("minDomains")
        min_domains = _integer(raw)
        if min_domains is None:
            return
        state = self.target.gate(fg.MIN_DOMAINS)
        if not state.enabled:
            self.dropped(
                (*here, "minDomains"),
                state,
                "the constraint spreads over the domains that exist, however few (pods are not held Pending "
                "to wait for more domains)",
            )
            return
        if min_domains <= 0:
            self.invalid((*here, "minDomains"), min_domains, "must be greater than zero")
        if action is not None and action != "DoNotSchedule":
            self.invalid(
                (*here, "minDomains"),
                min_domains,
                f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}",
            )

    def spread_gated_fields(self, constraint: Mapping[str, Any], here: DataPath) -> None:
        state = self.target.gate(fg.NODE_INCLUSION_POLICY)
        if state.enabled:
            return
        lost = {
            "nodeAffinityPolicy": (
                "skew is computed over all nodes, including those the pod's node affinity excludes"
            ),
            "nodeTaintsPolicy": "skew is computed as if taints did not exist",
        }
        for name, what in lost.items():
            if constraint.get(name) is not None:
                self.dropped((*here, name), state, what)

    def spread_label_keys(self, constraint: Mapping[str, Any], here: DataPath) -> list[str]:
        keys = [key for _, key in _strings(constraint.get("matchLabelKeys"))]
        if not keys:
            return []
        state = self.target.gate(fg.MATCH_LABEL_KEYS_IN_SPREAD)
        if not state.enabled:
            self.dropped(
                (*here, "matchLabelKeys"),
                state,
                "skew is counted over every pod the selector matches (for example, pods of the old revision "
                "during a rolling update)",
            )
            return []
        selector = constraint.get("labelSelector")
        if not isinstance(selector, Mapping):
            self.forbidden((*here, "matchLabelKeys"), "must not be specified when labelSelector is not set")
            if not self.merge_regime():  # the legacy check goes on to the keys' syntax
                for i, key in enumerate(keys):
                    self.label_name(key, (*here, "matchLabelKeys", i))
            return keys
        if self.merge_regime():
            for i, key in enumerate(keys):
                self.label_name(key, (*here, "matchLabelKeys", i))
            self.keys_in_selector(here, keys, self.spread_merged(selector, keys))
            return keys
        # The legacy regime (ValidateMatchLabelKeysInTopologySpread): any key of the selector.
        selector_keys = _match_labels_keys(selector)
        selector_keys |= {
            named
            for _, e in _items(selector.get("matchExpressions"))
            if isinstance(named := e.get("key"), str)
        }
        for i, key in enumerate(keys):
            self.label_name(key, (*here, "matchLabelKeys", i))
            if key in selector_keys:
                self.invalid(
                    (*here, "matchLabelKeys", i), key, "exists in both matchLabelKeys and labelSelector"
                )
        return keys

    def merge_regime(self) -> bool:
        return self.target.gate(fg.SPREAD_SELECTOR_MERGE).enabled

    def spread_merged(self, selector: Any, keys: list[str]) -> Any:
        if not keys or not self.merge_regime():
            return selector
        return self.merged(selector, keys, [])
