"""What kube-apiserver validates of an apps/v1 workload beside its pod template
(``pkg/apis/apps/validation``): its selector against its template's labels
(``ValidateDeploymentSpec``, ``ValidateReplicaSetSpec``, ``ValidateStatefulSetSpec``,
``ValidateDaemonSetSpec``) and its rolling update (``ValidateDeploymentStrategy``,
``ValidateRollingUpdateDeployment``, ``ValidateDaemonSetUpdateStrategy``,
``ValidateRollingUpdateDaemonSet``) after the apps/v1 defaulting (``pkg/apis/apps/v1/defaults.go``:
a Deployment's ``maxSurge`` and ``maxUnavailable`` default to 25%, a DaemonSet's to 0 and 1 — so a
DaemonSet's ``maxSurge: 1`` alone is refused).

Found by the oracle (tests/differential/test_validate.py, issue 35): kaffinity did not model them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kaffinity.k8s.labels import label_value, qualified_name
from kaffinity.load.source import DataPath, format_path
from kaffinity.validate.apiserver.fields import FieldValidator, _go_json, _map, _selector_json

#: ``validation.IsValidPercent`` (k8s.io/apimachinery/pkg/util/validation), with RegexError's words.
_PERCENT = re.compile(r"[0-9]+%")
_PERCENT_MESSAGE = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)
#: What ``strconv.Atoi`` reads (``intstr.IntOrString.IntValue`` of a string).
_ATOI = re.compile(r"[+-]?[0-9]+")


def _int_or_string(value: Any, default: int | str) -> int | str | None:
    """A field of type IntOrString: its default when absent or null, None when of another type
    (the schema rule reports it; the API server cannot decode the object)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    return value


def _value(value: int | str) -> int:
    """``getIntOrPercentValue``: a percentage's number, an integer, or ``IntValue()`` of another
    string (``strconv.Atoi``, 0 when it cannot read it)."""
    if isinstance(value, int):
        return value
    if _PERCENT.fullmatch(value):
        return int(value[:-1])
    return int(value) if _ATOI.fullmatch(value) else 0


#: The word each kind's "empty selector is invalid for ..." uses (ReplicaSet's says deployment).
_EMPTY_SELECTOR = {
    "Deployment": "deployment",
    "ReplicaSet": "deployment",
    "StatefulSet": "statefulset",
    "DaemonSet": "daemonset",
}


def _as_selector(selector: Mapping[str, Any]) -> bool:
    """Whether ``metav1.LabelSelectorAsSelector`` accepts the selector (``labels.NewRequirement``:
    qualified keys, label values, In/NotIn with values, Exists/DoesNotExist without, no other
    operator)."""
    labels = _map(selector.get("matchLabels"))
    for key, value in labels.items():
        if qualified_name(key) or (isinstance(value, str) and label_value(value)):
            return False
    expressions = selector.get("matchExpressions")
    for item in expressions if isinstance(expressions, list) else ():
        expression = _map(item)
        name, operator, listed = expression.get("key"), expression.get("operator"), expression.get("values")
        values = listed if isinstance(listed, list) else []
        if not isinstance(name, str) or qualified_name(name):
            return False
        if operator in ("In", "NotIn"):
            if not values:
                return False
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                return False
        else:
            return False
        if any(isinstance(value, str) and label_value(value) for value in values):
            return False
    return True


def _matches(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """``labels.Selector.Matches`` of a selector that ``_as_selector`` accepts."""
    for key, value in _map(selector.get("matchLabels")).items():
        if labels.get(key) != value:
            return False
    expressions = selector.get("matchExpressions")
    for expression in expressions if isinstance(expressions, list) else ():
        key, operator = expression.get("key"), expression.get("operator")
        values = expression.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


class AppsValidator(FieldValidator):
    """An apps/v1 workload's selector, a Deployment's ``spec.strategy`` and a DaemonSet's
    ``spec.updateStrategy``."""

    def workload_selector(self, kind: str, spec: Mapping[str, Any], template: DataPath) -> bool:
        """The selector: required, not empty, valid, and matching the template's labels
        (``ValidatePodTemplateSpecForReplicaSet``/``...ForStatefulSet``: not checked against an
        empty selector; a DaemonSet's is checked always, and a nil selector matches nothing).
        False when the pod template is not validated at all: a Deployment's, ReplicaSet's or
        StatefulSet's selector that ``LabelSelectorAsSelector`` refuses ("invalid label
        selector") leaves the template unvalidated (``ValidateDeploymentSpec``: the template is
        validated in the ``else`` branch)."""
        selector = spec.get("selector")
        path = ("spec", "selector")
        if not isinstance(selector, Mapping):
            # None: a fragment (a kustomize patch, a test fixture), whose selector is written
            # elsewhere; kaffinity does not report required fields missing (as
            # kaffinity.policy.vap.REQUIRED_FIELDS says). Another type: the schema rule's.
            return True
        self.label_selector(selector, path)
        if not _map(selector.get("matchLabels")) and not selector.get("matchExpressions"):
            shown = _selector_json(selector)  # omitempty: an empty selector prints {}
            self._add(path, f"Invalid value: {shown}: empty selector is invalid for {_EMPTY_SELECTOR[kind]}")
        if not _as_selector(selector):
            if kind == "DaemonSet":
                return True
            detail = "" if kind == "StatefulSet" else ": invalid label selector"
            self._add(path, f"Invalid value: {_selector_json(selector)}{detail}")
            return False
        metadata = _map(_map(spec.get("template")).get("metadata"))
        written = metadata.get("labels")
        labels = _map(written)
        empty = not _map(selector.get("matchLabels")) and not selector.get("matchExpressions")
        if empty and kind != "DaemonSet":
            return True
        if not _matches(selector, labels):
            where = (*template, "metadata", "labels")
            shown = _go_json(dict(labels)) if isinstance(written, Mapping) else "null"  # a nil map
            self._add(
                where,
                f"Invalid value: {shown}: `selector` does not match template `labels`",
                at=format_path(where),
            )
        return True

    def positive_int_or_percent(self, value: int | str, path: DataPath) -> None:
        """``ValidatePositiveIntOrPercent``: a non-negative integer or a ``[0-9]+%`` string."""
        if isinstance(value, int):
            if value < 0:  # ValidateNonnegativeField
                self.invalid(path, value, "must be greater than or equal to 0")
        elif not _PERCENT.fullmatch(value):
            self.invalid(path, value, _PERCENT_MESSAGE)

    def not_more_than_100_percent(self, value: int | str, path: DataPath) -> None:
        """``IsNotMoreThan100Percent``."""
        if isinstance(value, str) and _PERCENT.fullmatch(value) and int(value[:-1]) > 100:
            self.invalid(path, value, "must not be greater than 100%")

    def deployment_strategy(self, strategy: Any, path: DataPath) -> None:
        """``ValidateDeploymentStrategy`` of the defaulted strategy (a type outside the
        enumeration is the schema rule's)."""
        strategy = _map(strategy)
        kind = strategy.get("type") or "RollingUpdate"
        rolling = strategy.get("rollingUpdate")
        if kind == "Recreate":
            if rolling is not None:
                self.forbidden(
                    (*path, "rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"
                )
            return
        if kind != "RollingUpdate":
            return
        here = (*path, "rollingUpdate")
        rolling = _map(rolling)
        unavailable = _int_or_string(rolling.get("maxUnavailable"), "25%")
        surge = _int_or_string(rolling.get("maxSurge"), "25%")
        if unavailable is None or surge is None:
            return
        self.positive_int_or_percent(unavailable, (*here, "maxUnavailable"))
        self.positive_int_or_percent(surge, (*here, "maxSurge"))
        if _value(unavailable) == 0 and _value(surge) == 0:
            self.invalid((*here, "maxUnavailable"), unavailable, "may not be 0 when `maxSurge` is 0")
        self.not_more_than_100_percent(unavailable, (*here, "maxUnavailable"))

    def daemonset_strategy(self, strategy: Any, path: DataPath) -> None:
        """``ValidateDaemonSetUpdateStrategy`` of the defaulted strategy: exactly one of
        ``maxSurge`` and ``maxUnavailable`` is non-zero."""
        strategy = _map(strategy)
        if (strategy.get("type") or "RollingUpdate") != "RollingUpdate":
            return
        here = (*path, "rollingUpdate")
        rolling = _map(strategy.get("rollingUpdate"))
        unavailable = _int_or_string(rolling.get("maxUnavailable"), 1)
        surge = _int_or_string(rolling.get("maxSurge"), 0)
        if unavailable is None or surge is None:
            return
        for name, value in (("maxUnavailable", unavailable), ("maxSurge", surge)):
            self.positive_int_or_percent(value, (*here, name))
        for name, value in (("maxUnavailable", unavailable), ("maxSurge", surge)):
            self.not_more_than_100_percent(value, (*here, name))
        has_unavailable, has_surge = _value(unavailable) != 0, _value(surge) != 0
        if has_unavailable and has_surge:
            self.invalid((*here, "maxSurge"), surge, "may not be set when maxUnavailable is non-zero")
        elif not has_unavailable and not has_surge:
            self.required((*here, "maxUnavailable"), "cannot be 0 when maxSurge is 0")

    def replication_controller(self, spec: Mapping[str, Any]) -> None:
        """``ValidatePodTemplateSpecForRC``: the selector (a label map, defaulting to the
        template's labels: ``SetDefaults_ReplicationController``) matches the template's labels.
        Without either it is a fragment (see :meth:`workload_selector`)."""
        written = _map(_map(spec.get("template")).get("metadata")).get("labels")
        labels = _map(written)
        selector = _map(spec.get("selector")) or labels
        if selector and any(labels.get(key) != value for key, value in selector.items()):
            where = ("spec", "template", "metadata", "labels")
            shown = _go_json(dict(labels)) if isinstance(written, Mapping) else "null"
            self._add(
                where,
                f"Invalid value: {shown}: `selector` does not match template `labels`",
                at=format_path(where),
            )

    def apps(self, data: Mapping[str, Any]) -> bool:
        """An apps/v1 workload's selector and update strategy; False when its pod template is
        left unvalidated (see :meth:`workload_selector`)."""
        spec = data.get("spec")
        kind = data.get("kind")
        if kind == "ReplicationController" and data.get("apiVersion") == "v1" and isinstance(spec, Mapping):
            self.replication_controller(spec)
            return True
        if (
            not isinstance(spec, Mapping)
            or data.get("apiVersion") != "apps/v1"
            or kind not in _EMPTY_SELECTOR
        ):
            return True
        template = self.workload_selector(kind, spec, ("spec", "template"))
        if kind == "Deployment":
            self.deployment_strategy(spec.get("strategy"), ("spec", "strategy"))
        elif kind == "DaemonSet":
            self.daemonset_strategy(spec.get("updateStrategy"), ("spec", "updateStrategy"))
        return template
