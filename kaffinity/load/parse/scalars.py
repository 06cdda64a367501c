"""Scalars and keys as Kubernetes reads them: plain scalars resolved as go-yaml v2 does (YAML
1.1), keys made strings as sigs.k8s.io/yaml does, and the values and keys kubectl refuses
(NaN and infinities, null and uint64 keys)."""

from __future__ import annotations

import math
import re
from typing import Any

from kaffinity.load.parse.results import LoadError
from kaffinity.load.source import Span

_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_BINARY = "tag:yaml.org,2002:binary"
_MERGE = "tag:yaml.org,2002:merge"
_MERGE_NEEDS_MAPS = (
    "a merge key (<<) needs a mapping or a sequence of mappings (map merge requires map or sequence of maps)"
)
# The tags go-yaml resolves (resolve.go, ``resolvableTag``, and ``!!binary``); another
# `tag:yaml.org,2002:` tag (`!!python/name:x`) keeps the text, as a tag of another tool does.
_RESOLVED_TAGS = frozenset(
    "tag:yaml.org,2002:" + name for name in ("bool", "int", "float", "null", "timestamp", "binary")
)
# The tag our composer gives every scalar without an explicit one (we resolve those ourselves).
_IMPLICIT = "?"
_YAML11_BOOL = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE"), False),
}
_YAML11_NULL = frozenset(("", "~", "null", "Null", "NULL"))
_YAML11_SPECIAL_FLOAT = {
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), float("inf")),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), float("-inf")),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), float("nan")),
}
# First characters of every plain scalar that resolve_plain may turn into something other than
# the string itself (nulls, YAML 1.1 booleans, numbers); "" too: the empty scalar is null.
_RESOLVE = frozenset("~nNyYoOtTfF+-.0123456789") | {""}
# Plain keys as resolved and interned (bounded: the keys of a manifest set are few).
_PLAIN_KEYS: dict[str, str] = {}
_PLAIN_KEYS_SIZE = 100_000
_OCTAL = re.compile(r"[-+]?0[0-7]+\Z")
_INT = re.compile(r"[-+]?(?:0[bB][01]+|0[xX][0-9a-fA-F]+|0[oO][0-7]+|[1-9][0-9]*|0)\Z")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z")


def resolve_plain(text: str) -> Any:
    """Resolve a plain (unquoted) scalar as go-yaml v2 does for Kubernetes manifests.

    gopkg.in/yaml.v2 v2.4.0 resolve.go, ``resolve``: the YAML 1.1 map of nulls, booleans and
    special floats; a text that starts with `.` is a float if ``strconv.ParseFloat`` reads it
    (Go's float literal: `_` only between digits); one that starts with a sign or a digit
    (underscores taken out) is an int64 (``ParseInt``, base from the prefix: `0x`, `0o`,
    `0b`, a leading `0` for octal), else a uint64 (``ParseUint``: no sign), else a float of
    ``yamlStyleFloat``'s form; a number that overflows what ``ParseFloat`` reads stays the
    text (`1e400`), as does a timestamp (a string in an ``interface{}``: decode.go, ``scalar``).
    """
    if text in _YAML11_NULL:
        return None
    boolean = _YAML11_BOOL.get(text)
    if boolean is not None:
        return boolean
    first = text[0]
    if first not in "+-.0123456789":
        return text
    special = _YAML11_SPECIAL_FLOAT.get(text)
    if special is not None:
        return special
    if first == ".":
        return _finite(float(text.replace("_", "")), text) if _DOT_FLOAT.match(text) else text
    plain = text.replace("_", "")
    number: int | None = None
    if _OCTAL.match(plain):
        number = int(plain, 8)
    elif _INT.match(plain):
        number = int(plain, 0)
    if number is not None and (
        _INT64_MIN <= number <= _INT64_MAX or (number <= _UINT64_MAX and plain[0] not in "+-")
    ):
        return number
    if _FLOAT.match(plain):  # also `08`, `09` (not octal) and integers past 64 bits
        return _finite(float(plain), text)
    return text


def _finite(value: float, text: str) -> Any:
    """``value``, or ``text`` where ``strconv.ParseFloat`` fails with a range error."""
    return value if value - value == 0.0 else text


_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1
# strconv.ParseFloat of a text that starts with `.`: Go's float literal, `_` between digits.
_DOT_FLOAT = re.compile(r"\.[0-9](?:_?[0-9])*(?:[eE][-+]?[0-9](?:_?[0-9])*)?\Z")


def _key_string(value: Any) -> str:
    """Map keys become strings, as in sigs.k8s.io/yaml's conversion to JSON (v1.6.0 yaml.go,
    ``convertToJSONableObject``: ``strconv.Itoa`` of an int, ``FormatFloat(key, 'g', -1, 32)``
    of a float). A null key is "null" here; the loader refuses it (:func:`_unsupported_key`)."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _float_key(value)
    return str(value)


def _float_key(value: float) -> str:
    """Go's ``strconv.FormatFloat(value, 'g', -1, 32)``, then `.inf`, `-.inf`, `.nan` for its
    `+Inf`, `-Inf`, `NaN` (sigs.k8s.io/yaml): the shortest digits that read back as the same
    float32, in exponent form below 1e-4 and from 1e6 on."""
    import struct

    if math.isnan(value):
        return ".nan"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        single = value * float("inf")
    if single - single != 0.0:
        return ".inf" if single > 0 else "-.inf"
    shown = ""
    for precision in range(9):
        shown = f"{single:.{precision}e}"
        if struct.unpack("f", struct.pack("f", float(shown)))[0] == single:
            break
    mantissa, exponent_text = shown.split("e")
    digits = mantissa.replace("-", "").replace(".", "").rstrip("0") or "0"
    exponent = int(exponent_text)
    if exponent < -4 or exponent >= 6:
        sign = "-" if mantissa.startswith("-") else ""
        head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{head}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    return f"{float(shown):.{max(len(digits) - exponent - 1, 0)}f}"


def _unsupported_key(value: Any) -> str | None:
    """Why sigs.k8s.io/yaml cannot make ``value`` a JSON key (kubectl refuses the document:
    "unsupported map key of type"), or None."""
    if value is None:
        return 'a null key: kubectl cannot convert it to JSON ("unsupported map key of type: <nil>")'
    if value.__class__ is int and value > _INT64_MAX:
        return (
            f"the key {value} is a uint64: kubectl cannot convert it to JSON "
            '("unsupported map key of type: uint64")'
        )
    return None


def _not_json(value: float, text: str, span: Span) -> LoadError:
    """A NaN or infinity: JSON cannot hold it, and kubectl refuses the document (sigs.k8s.io/yaml's
    ``json.Marshal``: "json: unsupported value: NaN")."""
    shown = "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
    return LoadError(
        f"{text!r} is not a number JSON can hold: kubectl refuses it (json: unsupported value: {shown})", span
    )
