"""Kubernetes' format library (Kubernetes 1.31): ``format.dns1123Label().validate(name)``.

Upstream: ``staging/src/k8s.io/apiserver/pkg/cel/library/format.go`` (``ConstantFormats``,
``format.named``, ``validate``), whose validators are k8s.io/apimachinery's
``pkg/util/validation/validation.go`` (``IsDNS1123Label``, ``IsDNS1123Subdomain``,
``IsDNS1035Label``, ``IsQualifiedName``, ``IsValidPortName``, ``IsValidLabelValue``, the
``RegexError``/``MaxLenError`` messages), ``pkg/api/validation/generic.go`` (``NameIsDNSLabel``
and friends with ``maskTrailingDash`` for the ``...Prefix`` formats), Go's
``url.ParseRequestURI`` (``uri``) and kube-openapi's ``strfmt`` (``uuid``, ``byte``, ``date``,
``datetime``).

``validate`` and ``format.named`` return optionals upstream; a Python function cannot return a
CEL optional, so they return the value inside (the errors, ``[]`` when valid; the format, ``{}``
for an unknown name) and :mod:`~kaffinity.policy.cel.respell` wraps every call in
``optional.ofNonZeroValue(...)``: a true optional, so ``== optional.none()``, ``orValue``, ``or``,
``optMap`` all work as upstream.

``datetime`` is strfmt's ``IsDateTime`` (a date, ``T``, a time with seconds and a zone);
``date`` is ``YYYY-MM-DD`` on the calendar.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
from collections.abc import Callable, Mapping

from cel_expr_python import cel

from kaffinity.policy.cel import values
from kaffinity.policy.cel.library import functions, overload
from kaffinity.policy.cel.urls import parse as parse_url
from kaffinity.policy.cel.values import FORMAT, OPAQUE

T = cel.Type
Validator = Callable[[str], list[str]]

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _LABEL_FMT + "(\\." + _LABEL_FMT + ")*"
_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character"
)
_QUALIFIED_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_UUID = re.compile(r"(?i)(^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$)|(^[0-9a-f]{32}$)")
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})\Z")
#: strfmt's ``IsDateTime``: a date, ``T``, then ``rxDateTime``'s time with seconds and a zone.
_DATETIME = re.compile(
    r"(\d{4}-\d{2}-\d{2})[Tt]([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):?[0-5]\d)\Z"
)


def regex_error(message: str, pattern: str, *examples: str) -> str:
    """apimachinery's ``RegexError``: the message, examples and the pattern."""
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def _max_length(length: int) -> str:
    """apimachinery's ``MaxLenError``."""
    return f"must be no more than {length} characters"


def _full(pattern: str, value: str) -> bool:
    """Whether ``pattern`` matches all of ``value`` (Go's ``^...$``), with RE2 as Go does: linear
    in the value whatever it holds (a backtracking engine is linear on these patterns too, but
    the value is anyone's)."""
    import re2

    return re2.fullmatch(pattern, value) is not None


def dns1123_label(value: str) -> list[str]:
    """``IsDNS1123Label``."""
    errors = [_max_length(63)] if len(value) > 63 else []
    if not _full(_LABEL_FMT, value):
        if _full(_SUBDOMAIN_FMT, value):
            errors.append("must not contain dots")
        else:
            errors.append(regex_error(_LABEL_MSG, _LABEL_FMT, "my-name", "123-abc"))
    return errors


def dns1123_subdomain(value: str) -> list[str]:
    """``IsDNS1123Subdomain``."""
    errors = [_max_length(253)] if len(value) > 253 else []
    if not _full(_SUBDOMAIN_FMT, value):
        errors.append(regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN_FMT, "example.com"))
    return errors


def dns1035_label(value: str) -> list[str]:
    """``IsDNS1035Label``."""
    errors = [_max_length(63)] if len(value) > 63 else []
    if not _full(_DNS1035_FMT, value):
        errors.append(regex_error(_DNS1035_MSG, _DNS1035_FMT, "my-name", "abc-123"))
    return errors


def qualified_name(value: str) -> list[str]:
    """``IsQualifiedName``: ``[prefix/]name``, the prefix a DNS subdomain."""
    parts = value.split("/")
    if len(parts) > 2:
        return [
            "a qualified name "
            + regex_error(_QUALIFIED_MSG, _QUALIFIED_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    errors: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors += ["prefix part " + error for error in dns1123_subdomain(prefix)]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part " + _max_length(63))
    if not _full(_QUALIFIED_FMT, name):
        errors.append(
            "name part " + regex_error(_QUALIFIED_MSG, _QUALIFIED_FMT, "MyName", "my.name", "123-abc")
        )
    return errors


def port_name(value: str) -> list[str]:
    """``IsValidPortName``: an IANA service name."""
    errors = [_max_length(15)] if len(value) > 15 else []
    if not _full("[-a-z0-9]+", value):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", value):
        errors.append("must contain at least one letter (a-z)")
    if "--" in value:
        errors.append("must not contain consecutive hyphens")
    if value.startswith("-") or value.endswith("-"):
        errors.append("must not begin or end with a hyphen")
    return errors


def label_value(value: str) -> list[str]:
    """``IsValidLabelValue``."""
    errors = [_max_length(63)] if len(value) > 63 else []
    if not _full(_LABEL_VALUE_FMT, value):
        errors.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors


def _prefix(validate: Validator) -> Validator:
    """generic.go's ``prefix=true``: ``maskTrailingDash`` (a generateName may end in a dash)."""

    def check(value: str) -> list[str]:
        if len(value) > 1 and value.endswith("-"):
            value = value[:-2] + "a"
        return validate(value)

    return check


def _uri(value: str) -> list[str]:
    """``uri``: ``url.ParseRequestURI``'s error, if any."""
    try:
        parse_url(value, request=True)
    except ValueError as error:
        return [f'parse "{value}": {error}']
    return []


def _matches(pattern: re.Pattern[str], message: str) -> Validator:
    """A validator giving ``message`` when ``pattern`` does not match."""
    return lambda value: [] if pattern.search(value) else [message]


def _byte(value: str) -> list[str]:
    """``byte``: standard base64 (strfmt's ``IsByte``), not empty (``strfmt.Default.Validates("byte",
    "")`` is false: the oracle answers "invalid base64")."""
    if not value:
        return ["invalid base64"]
    try:
        base64.b64decode(value.replace("\r", "").replace("\n", ""), validate=True)
    except (binascii.Error, ValueError):
        return ["invalid base64"]
    return []


def _calendar_date(text: str) -> bool:
    """Whether ``text`` is ``YYYY-MM-DD`` and a day of the calendar."""
    match = _DATE.match(text)
    if not match:
        return False
    try:
        datetime.date(*(int(part) for part in match.groups()))
    except ValueError:
        return False
    return True


def _date(value: str) -> list[str]:
    """``date``: a full date (strfmt's ``IsDate``)."""
    return [] if _calendar_date(value) else ["invalid date"]


def _datetime(value: str) -> list[str]:
    """``datetime``: strfmt's ``IsDateTime``."""
    match = _DATETIME.match(value)
    return [] if match and _calendar_date(match.group(1)) else ["invalid datetime"]


#: ``ConstantFormats``: each format's name and validator.
FORMATS: dict[str, Validator] = {
    "dns1123Label": dns1123_label,
    "dns1123Subdomain": dns1123_subdomain,
    "dns1035Label": dns1035_label,
    "qualifiedName": qualified_name,
    "portName": port_name,
    "dns1123LabelPrefix": _prefix(dns1123_label),
    "dns1123SubdomainPrefix": _prefix(dns1123_subdomain),
    "dns1035LabelPrefix": _prefix(dns1035_label),
    "labelValue": label_value,
    "uri": _uri,
    "uuid": _matches(_UUID, "does not match the UUID format"),
    "byte": _byte,
    "date": _date,
    "datetime": _datetime,
}


def _validate(value: object, text: str) -> list[str]:
    """``<Format>.validate(text)``: the errors (``[]`` when valid); each call is wrapped in
    ``optional.ofNonZeroValue`` (:mod:`~kaffinity.policy.cel.respell`), upstream's optional."""
    name = values.text(value, FORMAT, "validate")
    return FORMATS[name](text)


def _named(name: str) -> dict[str, object]:
    """``format.named(name)``: the format (``{}`` for an unknown name), wrapped in
    ``optional.ofNonZeroValue`` as :func:`_validate`'s calls are."""
    return values.make(FORMAT, name) if name in FORMATS else {}


def _constant(name: str) -> Callable[[], Mapping[str, object]]:
    """``format.<name>()``."""
    return lambda: values.make(FORMAT, name)


def declarations() -> list[cel.FunctionDecl]:
    """format.go's functions."""
    table: dict[str, list[cel.Overload]] = {
        "format.named": [overload("format-named", OPAQUE, [T.STRING], _named)],
        "validate": [
            overload("format-validate", T.List(T.STRING), [OPAQUE, T.STRING], _validate, member=True)
        ],
    }
    for name in FORMATS:
        table[f"format.{name}"] = [overload(f"format.{name}", OPAQUE, [], _constant(name))]
    return functions(table)
