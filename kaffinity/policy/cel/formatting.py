"""``<string>.format(<list>)`` as kube-apiserver evaluates it: cel-go's strings extension version 2.

Kubernetes enables ``ext.Strings(ext.StringsVersion(2))`` from 1.29 (``environment/base.go``), whose
``format`` is cel-go's ``ext/formatting.go`` (``parseFormatString`` with ``stringFormatter``; the
``formatting_v2.go`` formatter is strings version 4, which Kubernetes does not enable), with the
locale ``en_US``:

* ``%s``: ``FormatString``: a double as Go's ``strconv.FormatFloat(f, 'g', -1, 64)`` (``1e+06``,
  ``+Inf``, ``-0``); a list as ``[a, b]`` whose items are CEL literals (``formatList``:
  ``["app", "side"]``, doubles ``%.6f``, ``duration("1.5s")``); a map ``{"a":1, "b":2}`` sorted by
  its keys' text (``formatMap``); a duration as ``3723.5s``; a timestamp as RFC 3339; a type by name;
* ``%d`` integers; ``%f`` and ``%e`` doubles (or the strings ``NaN``, ``Infinity``,
  ``-Infinity``) printed by ``golang.org/x/text/message`` for ``en_US``: digits grouped by commas,
  ``∞``, and ``%e`` as ``1.234568`` times ten to ``⁰⁶`` (a multiplication sign, superscript
  digits), whose precision upstream passes as the *width*
  (``fmt.Sprintf("%%%de", precision)``); ``%b``, ``%o``, ``%x``/``%X`` as Go's ``fmt``;
* errors: an argument missing, a clause that is not ``s d f e b x X o``, a value the clause does not
  take (``%d`` on a double), and, when the format string and the list are literals, too many
  arguments. cel-go's ``stringFormatValidator`` reports those of literal calls when compiling
  (:func:`check_literal_calls`).
"""

from __future__ import annotations

import datetime
import math
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal

from cel_expr_python import cel

from kaffinity.policy.cel import scan, values

_TIMES = "\u00d7"  # x/text's multiplication sign
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_DEFAULT_PRECISION = 6
_FLOAT_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_TYPE_NAMES = {
    "DURATION": "google.protobuf.Duration",
    "TIMESTAMP": "google.protobuf.Timestamp",
    "NULL": "null_type",
}


class FormatError(ValueError):
    """A format string or argument cel-go's formatter refuses."""


# --- Go's text for CEL values ---------------------------------------------------------------


def go_float(value: float) -> str:
    """Go's ``strconv.FormatFloat(value, 'g', -1, 64)``: the shortest digits, ``%e`` form when the
    exponent is below -4 or at least 6 (``1e+06``, ``1.5e-05``), ``+Inf``, ``-Inf``, ``NaN``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits)) or "0"
    assert isinstance(exponent, int)
    if text == "0":
        return "-0" if sign else "0"
    point = len(text) + exponent  # the decimal point's position in the digits
    power = point - 1
    if power < -4 or power >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        body = f"{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
    elif point <= 0:
        body = "0." + "0" * -point + text
    elif point >= len(text):
        body = text + "0" * (point - len(text))
    else:
        body = text[:point] + "." + text[point:]
    return ("-" if sign else "") + body


def duration_text(value: datetime.timedelta) -> str:
    """cel-go's ``string(duration)``: the seconds, shortest (``3723.5s``)."""
    micros = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
    whole, fraction = divmod(abs(micros), 1_000_000)
    text = f"{whole}.{fraction:06d}".rstrip("0").rstrip(".")
    return ("-" if micros < 0 else "") + text + "s"


def timestamp_text(value: datetime.datetime) -> str:
    """cel-go's ``string(timestamp)``: RFC 3339 in UTC, the fraction's zeros trimmed."""
    value = value.astimezone(datetime.UTC)
    text = f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
    text += f"T{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    return text + "Z"


def type_text(value: cel.Type) -> str:
    """A type's CEL name (``int``, ``list``, ``google.protobuf.Duration``)."""
    name = value.name().split("<")[0]
    return _TYPE_NAMES.get(name, name.lower())


def go_text(value: object) -> str:
    """A value as Go's ``%v`` would show it in an error (close enough for messages)."""
    return str(value)


def go_quote(text: str) -> str:
    """Go's ``%q`` (``strconv.Quote``): printable code points as themselves, the rest escaped."""
    out = ['"']
    for c in text:
        code = ord(c)
        if c in ('"', "\\"):
            out.append("\\" + c)
        elif c == " " or (code >= 0x20 and unicodedata.category(c)[0] in "LMNPS"):
            out.append(c)
        elif c in "\a\b\f\n\r\t\v":
            out.append(
                {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}[c]
            )
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _kind(value: object) -> str:
    """The CEL type name of a runtime value (cel-go's ``TypeName``)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes | bytearray):
        return "bytes"
    if value is None:
        return "null_type"
    if isinstance(value, datetime.timedelta):
        return "google.protobuf.Duration"
    if isinstance(value, datetime.datetime):
        return "google.protobuf.Timestamp"
    if isinstance(value, cel.Type):
        return "type"
    return values.type_name(value)


def _bytes_text(value: bytes | bytearray) -> str:
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(
            'could not convert argument "invalid UTF-8 in bytes, cannot convert to string" to string'
        ) from None


# --- the clauses (cel-go's stringFormatter) ---------------------------------------------------


def format_string(value: object) -> str:
    """``FormatString`` (``%s``)."""
    if values.kind_of(value) is None:
        if isinstance(value, list | tuple):
            return _format_list(value)
        if isinstance(value, Mapping):
            return _format_map(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        return _bytes_text(value)
    if value is None:
        return "null"
    if isinstance(value, datetime.timedelta):
        return duration_text(value)
    if isinstance(value, datetime.datetime):
        return timestamp_text(value)
    if isinstance(value, cel.Type):
        return type_text(value)
    raise FormatError(_clause_error("s", _kind(value)))


def _literal(value: object) -> str:
    """``clauseForType`` then ``quoteForCEL``: an item of a list or map as a CEL literal."""
    if isinstance(value, bool) or value is None or isinstance(value, cel.Type):
        return format_string(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return go_quote(go_float(value))
        return f"{value:.{_DEFAULT_PRECISION}f}"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bytes | bytearray):
        return "b" + go_quote(_bytes_text(value))
    if isinstance(value, datetime.timedelta):
        return f'duration("{duration_text(value)}")'
    if isinstance(value, datetime.datetime):
        return f'timestamp("{timestamp_text(value)}")'
    if values.kind_of(value) is None and isinstance(value, list | tuple | Mapping):
        return format_string(value)
    raise FormatError(f"no formatting function for {_kind(value)}")


def _format_list(items: Sequence[object]) -> str:
    return "[" + ", ".join(_literal(item) for item in items) + "]"


def _format_map(items: Mapping[object, object]) -> str:
    pairs = []
    for key, item in items.items():
        if isinstance(key, str):
            key_text = go_quote(key)
        elif isinstance(key, bool | int):
            key_text = format_string(key)
        else:
            raise FormatError(f"no formatting function for map key of type {_kind(key)}")
        pairs.append((key_text, _literal(item)))
    pairs.sort(key=lambda pair: pair[0].encode())
    return "{" + ", ".join(f"{key}:{item}" for key, item in pairs) + "}"


def _decimal(value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise FormatError(_clause_error("d", _kind(value)))


def _float_argument(value: object, clause: str) -> float:
    if isinstance(value, float):
        return value
    if isinstance(value, str) and value in _FLOAT_WORDS:
        return _FLOAT_WORDS[value]
    raise FormatError(_clause_error(clause, _kind(value)))


def _grouped(text: str) -> str:
    """x/text's en_US grouping of the integer digits (``1,234,567.89``)."""
    whole, dot, fraction = text.partition(".")
    sign = "-" if whole.startswith("-") else ""
    whole = whole.lstrip("-")
    groups: list[str] = []
    while len(whole) > 3:
        groups.insert(0, whole[-3:])
        whole = whole[:-3]
    groups.insert(0, whole)
    return sign + ",".join(groups) + dot + fraction


def _special(number: float) -> str | None:
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "∞" if number > 0 else "-∞"
    return None


def _fixed(precision: int | None) -> Callable[[object], str]:
    def clause(value: object) -> str:
        number = _float_argument(value, "f")
        special = _special(number)
        if special:
            return special
        if number == 0:
            number = 0.0  # x/text prints negative zero without its sign
        return _grouped(f"{number:.{_DEFAULT_PRECISION if precision is None else precision}f}")

    return clause


def _scientific(precision: int | None) -> Callable[[object], str]:
    """``%e``: upstream formats ``%<precision>e`` (a width) with x/text's printer."""
    width = _DEFAULT_PRECISION if precision is None else precision

    def clause(value: object) -> str:
        number = _float_argument(value, "e")
        special = _special(number)
        if special is None:
            mantissa, _, exponent = f"{0.0 if number == 0 else number:.{_DEFAULT_PRECISION}e}".partition("e")
            power = int(exponent)
            exponent = f"{'-' if power < 0 else ''}{abs(power):02d}".translate(_SUPERSCRIPT)
            special = f"{mantissa}{_TIMES}10{exponent}"
        return special.rjust(width)

    return clause


def _binary(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return format(value, "b")
    raise FormatError(f"only integers and bools can be formatted as binary, was given {_kind(value)}")


def _hex(upper: bool) -> Callable[[object], str]:
    def clause(value: object) -> str:
        if isinstance(value, str):
            text = value.encode().hex()
        elif isinstance(value, bytes | bytearray):
            text = bytes(value).hex()
        elif isinstance(value, int) and not isinstance(value, bool):
            text = format(value, "x")
        else:
            raise FormatError(
                f"only integers, byte buffers, and strings can be formatted as hex, was given {_kind(value)}"
            )
        return text.upper() if upper else text

    return clause


def _octal(value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return format(value, "o")
    raise FormatError(f"octal clause can only be used on integers, was given {_kind(value)}")


_CLAUSE_ERRORS = {
    "s": "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, "
    "durations, and timestamps, was given {}",
    "d": "decimal clause can only be used on integers, was given {}",
    "f": "fixed-point clause can only be used on doubles, was given {}",
    "e": "scientific clause can only be used on doubles, was given {}",
    "b": "only integers and bools can be formatted as binary, was given {}",
    "x": "only integers, byte buffers, and strings can be formatted as hex, was given {}",
    "o": "octal clause can only be used on integers, was given {}",
}


def _clause_error(clause: str, kind: str) -> str:
    return _CLAUSE_ERRORS[clause.lower()].format(kind)


# --- parsing (cel-go's parseFormatString) ----------------------------------------------------


def parse(text: str, argument: Callable[[int, str, int | None], str], size: int) -> tuple[str, int]:
    """``parseFormatString``: the text with each clause replaced by ``argument(index, verb,
    precision)``, and how many arguments the clauses took; :class:`FormatError` as upstream."""
    out: list[str] = []
    raw = text.encode()  # upstream walks bytes
    i = taken = 0
    while i < len(raw):
        if raw[i] != ord("%"):
            j = raw.find(b"%", i)
            j = len(raw) if j < 0 else j
            out.append(raw[i:j].decode())
            i = j
            continue
        if raw[i + 1 : i + 2] == b"%":
            out.append("%")
            i += 2
            continue
        if taken >= size:
            raise FormatError(f"index {taken} out of range")
        if i + 1 >= len(raw):
            raise FormatError("unexpected end of string")
        read, verb, precision = _clause(raw[i + 1 :])
        try:
            out.append(argument(taken, verb, precision))
        except FormatError as error:
            raise FormatError(f"error during formatting: {error}") from None
        i += 1 + read
        taken += 1
    return "".join(out), taken


def _clause(raw: bytes) -> tuple[int, str, int | None]:
    """``parseFormattingClause``: bytes read, the verb, the precision."""
    prefix = "could not parse formatting clause: "
    i, precision = 0, None
    if raw[:1] == b".":
        digits = re.match(rb"\d*", raw[1:])
        assert digits is not None
        i = 1 + len(digits.group())
        if i >= len(raw):
            raise FormatError(
                prefix + "error while parsing precision: could not find end of precision specifier"
            )
        if not digits.group():
            raise FormatError(
                prefix + "error while parsing precision: error while converting precision to integer: "
                'strconv.Atoi: parsing "": invalid syntax'
            )
        precision = int(digits.group())
    verb = chr(raw[i])
    if verb not in "sdfebxXo":
        shown = raw[i:].decode("utf-8", "replace")[:1]
        raise FormatError(prefix + f'unrecognized formatting clause "{shown}"')
    return i + 1, verb, precision


def _formatter(verb: str, precision: int | None) -> Callable[[object], str]:
    simple: dict[str, Callable[[object], str]] = {
        "s": format_string,
        "d": _decimal,
        "b": _binary,
        "o": _octal,
    }
    if verb in simple:
        return simple[verb]
    if verb == "f":
        return _fixed(precision)
    if verb == "e":
        return _scientific(precision)
    return _hex(verb == "X")


def format_string_call(text: str, arguments: Sequence[object]) -> str:
    """``<string>.format(<list>)``."""
    return parse(
        text, lambda index, verb, precision: _formatter(verb, precision)(arguments[index]), len(arguments)
    )[0]


def format_call(text: str, arguments: Sequence[object]) -> str:
    """The overload's implementation (a CEL error on a refused format)."""
    return format_string_call(text, arguments)


# --- the compile-time check (cel-go's stringFormatValidator) ---------------------------------

#: The CEL kinds each clause takes when compiling (``stringFormatChecker``): dyn passes every one.
_CLAUSE_KINDS = {
    "s": {
        "list",
        "map",
        "int",
        "uint",
        "double",
        "bool",
        "string",
        "timestamp",
        "bytes",
        "duration",
        "type",
        "null",
    },
    "d": {"int", "uint"},
    "f": {"double", "string"},
    "e": {"double", "string"},
    "b": {"int", "uint", "bool"},
    "x": {"int", "uint", "string", "bytes"},
    "X": {"int", "uint", "string", "bytes"},
    "o": {"int", "uint"},
}


def check(text: str, kinds: Sequence[str]) -> tuple[str, int | None] | None:
    """Why cel-go's validator refuses ``text.format([...])`` whose items have the checked ``kinds``
    (``int``, ``list``, ``map``...; ``dyn`` passes every clause), and the index of the item at
    fault (None: the call); None when it accepts it."""
    fault: list[int] = []

    def argument(index: int, verb: str, precision: int | None) -> str:
        kind = kinds[index]
        if kind != "dyn" and kind not in _CLAUSE_KINDS[verb]:
            fault.append(index)
            raise FormatError(_clause_error(verb, _KIND_NAMES.get(kind, kind)))
        return ""

    try:
        _, taken = parse(text, argument, len(kinds))
    except FormatError as error:
        return str(error), (fault[0] if fault else None)
    if len(kinds) > taken:
        return f"too many arguments supplied to string.format (expected {taken}, got {len(kinds)})", None
    return None


_KIND_NAMES = {
    "null": "null_type",
    "timestamp": "google.protobuf.Timestamp",
    "duration": "google.protobuf.Duration",
}


def check_literal_calls(
    text: str, decode: Callable[[str], str | None], kind: Callable[[str], str]
) -> tuple[str, int] | None:
    """cel-go's ``stringFormatValidator`` over ``text``: the first refused literal call's message
    and the offset to report it at. ``decode`` gives a string literal's value (None if it is
    not one), ``kind`` an item's checked kind (``int``, ``list``, ``dyn``...)."""
    for call in scan.literal_calls(text):
        pattern = decode(call.literal)
        if pattern is None:
            continue
        kinds = [kind(item) for item, _ in call.items]
        refused = check(pattern, kinds)
        if refused is None:
            continue
        message, index = refused
        return message, call.call if index is None else call.items[index][1]
    return None
