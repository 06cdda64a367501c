"""kaffinity's answer to the oracle's ``cel`` request, in the oracle's form (oracle/main.go, ``doCEL``).

The oracle answers ``{"ok": true, "type": ..., "result": <exact JSON>}`` (``celJSON``: values JSON has no
form for are one-key objects such as ``{"@duration": "3600s"}``), ``"hasValue"`` for an optional result,
or ``{"ok": false, "stage": "compile" | "eval"}``. :func:`answer` gives kaffinity's answer in that form
(:func:`kaffinity.policy.cel.environment.compile_expression`, ``Compiled.evaluate``, ``object`` bound as
``dyn``, as a ValidatingAdmissionPolicy sees it) and :func:`agree` compares two answers.
"""

from __future__ import annotations

import base64
import datetime
import math
from collections.abc import Mapping
from typing import Any

from cel_expr_python import cel

from kaffinity.policy.cel import formatting, values
from kaffinity.policy.cel.environment import CelCompileError, CelEvaluationError, compile_expression

OBJECT = {"object": cel.Type.DYN}
#: cel-cpp's type names as cel-go names them.
_TYPE_NAMES = {
    "DURATION": "google.protobuf.Duration",
    "TIMESTAMP": "google.protobuf.Timestamp",
    "NULL": "null_type",
    "TYPE": "type",
}
#: kaffinity's message for an optional it cannot return (environment._OPTIONAL_RESULT).
_OPTIONAL_RESULT = "the value is an optional"


def type_name(kind: cel.Type) -> str:
    name = kind.name().split("<")[0]
    return _TYPE_NAMES.get(name, name.lower())


def as_json(value: object) -> Any:
    """A plain value from ``Compiled.evaluate`` in the oracle's ``celJSON`` form."""
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return ("Infinity" if value > 0 else "-Infinity") if math.isinf(value) else value
    if isinstance(value, bytes | bytearray):
        return {"@bytes": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, datetime.timedelta):
        return {"@duration": formatting.duration_text(value)}
    if isinstance(value, datetime.datetime):
        return {"@timestamp": formatting.timestamp_text(value)}
    if isinstance(value, cel.Type):
        return {"@type": type_name(value)}
    kind = values.kind_of(value)
    if kind is not None:
        return {"@" + values.KIND_NAMES[kind]: None}  # opaque: compared by type (see normal())
    if isinstance(value, Mapping):
        return {_key(key): as_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [as_json(item) for item in value]
    return {"@python": repr(value)}


def _key(key: object) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def answer(expr: str, kube_version: str = "1.37", obj: object = None) -> dict[str, Any]:
    """kaffinity's answer in the oracle's form (an optional result is read through its ``hasValue()``
    and ``value()``: kaffinity cannot return one, differences.yaml ``cel/optional-result``)."""
    try:
        compiled = compile_expression(expr, kube_version, OBJECT)
    except CelCompileError as error:
        return {"ok": False, "stage": "compile", "error": error.message}
    data = {"object": obj}
    try:
        value = compiled.evaluate(data)
    except CelEvaluationError as error:
        if _OPTIONAL_RESULT not in error.message:
            return {"ok": False, "stage": "eval", "error": error.message}
        return _optional(expr, kube_version, data)
    kind = values.kind_of(value)
    if kind is not None:
        name = values.KIND_NAMES[kind]
    else:
        name = type_name(compiled.expression.eval(data=data).type())
    return {"ok": True, "type": name, "result": as_json(value)}


def _optional(expr: str, kube_version: str, data: dict[str, object]) -> dict[str, Any]:
    has = compile_expression(f"({expr}).hasValue()", kube_version, OBJECT).evaluate(data)
    found: dict[str, Any] = {"ok": True, "type": "optional_type", "hasValue": has, "result": None}
    if has:
        found["result"] = as_json(
            compile_expression(f"({expr}).value()", kube_version, OBJECT).evaluate(data)
        )
    return found


def normal(found: Any) -> Any:
    """An answer's result with opaque values' text dropped (compared by type: their values are compared
    through their functions, e.g. ``quantity('1k').asInteger()``)."""
    if isinstance(found, dict):
        if len(found) == 1:
            key = next(iter(found))
            if key.startswith("@") and key[1:] in values.KIND_NAMES.values() and key != "@optional_type":
                return {key: None}
        return {key: normal(item) for key, item in found.items()}
    if isinstance(found, list):
        return [normal(item) for item in found]
    return found


def _same(a: Any, b: Any) -> bool:
    """Equal values of equal JSON types (``1`` is not ``1.0`` nor ``True``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


#: The oracle's stages as kaffinity's: the program's errors are compile errors.
_STAGES = {"program": "compile"}


def disagreement(oracle: Mapping[str, Any], mine: Mapping[str, Any]) -> str | None:
    """Why two answers differ (None when they agree): the stage, the type, whether an optional has a
    value, the value."""
    if oracle["ok"] != mine["ok"]:
        return f"stage: oracle {oracle.get('stage', 'ok')}, kaffinity {mine.get('stage', 'ok')}"
    if not oracle["ok"]:
        # An error building the program (cel-go's OptOptimize folding a constant: int('x')) is
        # one the API server reports with the compile errors (a CompilationResult's Error);
        # kaffinity finds it when compiling (kaffinity/policy/cel/homogeneous.py).
        if _STAGES.get(oracle["stage"], oracle["stage"]) != mine["stage"]:
            return f"stage: oracle {oracle['stage']}, kaffinity {mine['stage']}"
        return None
    if oracle["type"] != mine["type"]:
        return f"type: oracle {oracle['type']}, kaffinity {mine['type']}"
    if oracle.get("hasValue") != mine.get("hasValue"):
        return f"hasValue: oracle {oracle.get('hasValue')}, kaffinity {mine.get('hasValue')}"
    if not _same(normal(oracle.get("result")), normal(mine.get("result"))):
        return "value"
    return None
