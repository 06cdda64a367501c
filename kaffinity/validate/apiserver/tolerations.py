"""Tolerations as kube-apiserver validates them (``pkg/apis/core/validation``:
``ValidateTolerations``), with KEP-5471's Lt/Gt comparisons."""

from __future__ import annotations

import re
from typing import Any

from kaffinity.k8s import gates as fg
from kaffinity.k8s.labels import label_value
from kaffinity.load.source import DataPath
from kaffinity.validate.apiserver.fields import FieldValidator, _items, _quote, _text

# KEP-5471: Lt/Gt toleration values are integers in canonical form (no sign, no leading zero).
_CANONICAL_INTEGER = re.compile(r"0|-?[1-9][0-9]*")
_GO_INTEGER = re.compile(r"[+-]?[0-9]+")


class TolerationValidator(FieldValidator):
    """``ValidateTolerations``."""

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
