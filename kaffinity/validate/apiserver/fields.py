"""What every validator of :mod:`kaffinity.validate.apiserver` shares: the :class:`Target` (a
version, its gates), the :class:`Problem` it answers with in field.Error's words, and
:class:`FieldValidator`, with k8s.io/apimachinery's metav1 checks of labels and label selectors
(``ValidateLabels``, ``ValidateLabelSelector``), the weights of preferred terms, the deprecated
node labels of ``pkg/api/pod/warnings.go`` and the create-time merge of ``matchLabelKeys``."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from kaffinity.expand.merge import merge_keys
from kaffinity.k8s import gates as fg
from kaffinity.k8s.labels import label_value, qualified_name
from kaffinity.load.source import DataPath, format_path

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


def _go_json(value: Any) -> str:
    """``json.Marshal``: compact, map keys sorted, no HTML escaping needed here."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _selector_json(selector: Any) -> str:
    """A metav1.LabelSelector as json.Marshal writes it (fields in struct order, empty ones left
    out: ``omitempty``), or null."""
    if not isinstance(selector, Mapping):
        return "null"
    parts = []
    labels = selector.get("matchLabels")
    if isinstance(labels, Mapping) and labels:
        parts.append(f'"matchLabels":{_go_json(dict(labels))}')
    expressions = selector.get("matchExpressions")
    if isinstance(expressions, list) and expressions:
        items = []
        for item in expressions:
            requirement = item if isinstance(item, Mapping) else {}
            fields = [f'"key":{_go_json(requirement.get("key") or "")}']
            fields.append(f'"operator":{_go_json(requirement.get("operator") or "")}')
            if requirement.get("values"):
                fields.append(f'"values":{_go_json(list(requirement["values"]))}')
            items.append("{" + ",".join(fields) + "}")
        parts.append(f'"matchExpressions":[{",".join(items)}]')
    return "{" + ",".join(parts) + "}"


class FieldValidator:
    """The state of one object's validation (its target, whether it is a Pod being created and
    its labels, the problems found) and what every part of it uses. Each part of the pod spec
    is a subclass (:mod:`kaffinity.validate.apiserver.affinity`, ``tolerations``, ``spread``,
    ``policy``), brought together by :class:`kaffinity.validate.apiserver.pod.PodValidator`."""

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

    def labels(self, labels: Any, path: DataPath, at: str | None = None) -> None:
        """``ValidateLabels``: errors name the map itself (or ``at``), not the key."""
        if not isinstance(labels, Mapping):
            return
        at = at if at is not None else format_path(path)
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

    # -- shared by the parts of the pod spec -------------------------------------------------

    def deprecated_label(self, key: str, path: DataPath) -> None:
        """Node affinity keys and spread topology keys (not pod affinity topology keys)."""
        if key in DEPRECATED_NODE_LABELS:
            self._add(path, f"{format_path(path)}: {key} is {DEPRECATED_NODE_LABELS[key]}", rule=API_WARNING)

    def weight(self, value: Any, path: DataPath) -> None:
        weight = 0 if value is None else _integer(value)
        if weight is not None and not 1 <= weight <= 100:
            self.invalid(path, weight, "must be in the range 1-100")

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
