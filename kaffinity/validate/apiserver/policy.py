"""PodDisruptionBudgets as kube-apiserver validates them (``pkg/apis/policy/validation``:
``ValidatePodDisruptionBudgetSpec``) and whether it refuses one (:func:`budget_refused`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kaffinity.load.source import DataPath, format_path
from kaffinity.validate.apiserver.fields import (
    API_VALIDATION,
    FieldValidator,
    Target,
    _go_json,
    _quote,
    _selector_json,
)

#: From 1.34 field.Error prints a value that is no string or number as JSON (kubernetes#132314,
#: "Nicer value rendering in API errors"); before, with ``%#v``.
_JSON_VALUES = 34


def _int_or_string(value: int | str, minor: int) -> str:
    """An ``intstr.IntOrString`` as field.Error prints it: JSON from 1.34 (``"150%"``), Go's
    ``%#v`` before (a value, not a Stringer)."""
    if minor >= _JSON_VALUES:
        return _go_json(value)
    if isinstance(value, str):
        return f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{_quote(value)}}}"
    return f'intstr.IntOrString{{Type:0, IntVal:{value}, StrVal:""}}'


def _spec(spec: Mapping[str, Any], minor: int) -> str:
    """The internal policy.PodDisruptionBudgetSpec as field.Invalid prints it."""
    if minor < _JSON_VALUES:
        return "policy.PodDisruptionBudgetSpec{...}"
    fields = (
        ("MinAvailable", spec.get("minAvailable")),
        ("Selector", None),
        ("MaxUnavailable", spec.get("maxUnavailable")),
        ("UnhealthyPodEvictionPolicy", spec.get("unhealthyPodEvictionPolicy")),
    )
    shown = [
        f'"{name}":{_selector_json(spec.get("selector")) if name == "Selector" else _go_json(value)}'
        for name, value in fields
    ]
    return "{" + ",".join(shown) + "}"


#: ``validation.IsValidPercent`` (k8s.io/apimachinery/pkg/util/validation), with RegexError's words.
_PERCENT = re.compile(r"[0-9]+%")
_PERCENT_MESSAGE = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)


class BudgetValidator(FieldValidator):
    """``ValidatePodDisruptionBudgetSpec``."""

    def budget_spec(self, spec: Mapping[str, Any], path: DataPath) -> None:
        """``ValidatePodDisruptionBudgetSpec`` (pkg/apis/policy/validation/validation.go), with the
        create-time option ``AllowInvalidLabelValueInSelector: false``; unhealthyPodEvictionPolicy
        is the schema's enumeration."""
        minimum, maximum = spec.get("minAvailable"), spec.get("maxUnavailable")
        if minimum is not None and maximum is not None:
            # field.Invalid(fldPath, spec, ...): Go prints the whole struct, pointers and all.
            self._add(
                (*path, "maxUnavailable"),
                f"Invalid value: {_spec(spec, self.target.minor)}: minAvailable and maxUnavailable cannot "
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
            self._add(path, f"Invalid value: {_int_or_string(value, self.target.minor)}: {_PERCENT_MESSAGE}")
        elif int(value[:-1]) > 100:
            self._add(
                path,
                f"Invalid value: {_int_or_string(value, self.target.minor)}: must not be greater than 100%",
            )


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
    validator = BudgetValidator(Target(version), is_pod=False)
    validator.budget_spec(spec, ("spec",))
    return any(problem.rule == API_VALIDATION for problem in validator.problems)
