"""A JSON Schema error of kaffinity's own files (configuration, cluster, policy, baseline) said in
kaffinity's words: what was expected, then what was written (``expected one of error, warning,
info, none, got 'foo'``), instead of jsonschema's ``'foo' is not one of ['error', ...]``.

The caller names the field (``fail-on: ...``) and its place (``file:line:col``); this module
says what is wrong with the value. Keywords it does not know keep jsonschema's message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema.exceptions import SchemaError, ValidationError

#: JSON Schema types as a YAML file's reader calls them.
_TYPES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "a mapping",
    "null": "null",
}


def shown(value: Any) -> str:
    """A value as the message quotes it: a string in quotes, the rest as JSON (YAML's flow
    style for these): ``'foo'``, ``3``, ``[1]``, ``{"a": 1}``, ``true``, ``null``."""
    if isinstance(value, str):
        return f"'{value}'"
    try:
        text = json.dumps(value, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        text = str(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _words(values: Sequence[Any]) -> str:
    """``a, b or c``."""
    items = [value if isinstance(value, str) else shown(value) for value in values]
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def _types(expected: Any) -> str:
    names = expected if isinstance(expected, list) else [expected]
    return _words([_TYPES.get(str(name), str(name)) for name in names])


def _expected(schema: Mapping[str, Any] | bool) -> str | None:
    """What a schema (one alternative of a oneOf / anyOf) asks for, in a few words."""
    if not isinstance(schema, Mapping):
        return None
    if "enum" in schema:
        return _words(schema["enum"])
    if "const" in schema:
        return shown(schema["const"])
    if "pattern" in schema and schema.get("type", "string") == "string":
        return f"a string matching {schema['pattern']}"
    if "type" in schema:
        return _types(schema["type"])
    return None


#: Keywords that bound a number: what the value must be.
_BOUNDS = {
    "minimum": "at least",
    "maximum": "at most",
    "exclusiveMinimum": "more than",
    "exclusiveMaximum": "less than",
}
#: Keywords that bound a size: the bound and what is counted.
_SIZES = {
    "minLength": ("at least", "character"),
    "maxLength": ("at most", "character"),
    "minItems": ("at least", "item"),
    "maxItems": ("at most", "item"),
    "minProperties": ("at least", "key"),
    "maxProperties": ("at most", "key"),
}


def said(error: ValidationError | SchemaError) -> str:
    """What is wrong with the value ``error`` is about, in kaffinity's words (no field name)."""
    keyword: Any = error.validator
    value: Any = error.validator_value
    instance: Any = error.instance
    got = f", got {shown(instance)}"
    if keyword in _BOUNDS:
        return f"expected {_BOUNDS[keyword]} {value}{got}"
    if keyword in _SIZES:
        bound, unit = _SIZES[keyword]
        return f"expected {bound} {value} {unit}{'' if value == 1 else 's'}{got}"
    simple: dict[str, Callable[[], str]] = {
        "enum": lambda: ", ".join(v if isinstance(v, str) else shown(v) for v in value),
        "const": lambda: shown(value),
        "type": lambda: _types(value),
        "pattern": lambda: f"a string matching {value}",
        "uniqueItems": lambda: "no item twice",
        "format": lambda: f"a {value}",
    }
    if keyword in simple:
        prefix = "one of " if keyword == "enum" else ""
        return f"expected {prefix}{simple[keyword]()}{got}"
    if keyword == "required":
        missing = [name for name in value if isinstance(instance, Mapping) and name not in instance]
        names = [f"'{name}'" for name in missing or value]
        return f"missing required key{'' if len(names) == 1 else 's'} {_words(names)}"
    if keyword == "additionalProperties" and isinstance(instance, Mapping):
        known = error.schema.get("properties", {}) if isinstance(error.schema, Mapping) else {}
        extra = [f"'{key}'" for key in instance if key not in known]
        if extra:
            return f"unknown key{'' if len(extra) == 1 else 's'} {_words(extra)}"
    if keyword in ("oneOf", "anyOf") and isinstance(value, list):
        return _alternatives(value, instance)
    if keyword == "not":
        return f"{shown(instance)} is not allowed here"
    return str(error.message)


def _alternatives(options: list[Any], instance: Any) -> str:
    """A oneOf / anyOf none of whose options the value meets."""
    keys = [option.get("required") if isinstance(option, Mapping) else None for option in options]
    if keys and all(isinstance(names, list) and len(names) == 1 for names in keys):
        # A mapping that must hold one key of several (a Policy's schema or expression).
        names = [f"'{one[0]}'" for one in keys if isinstance(one, list)]
        return f"missing key {_words(names)}"
    alternatives = [_expected(option) for option in options]
    if alternatives and all(alternatives):
        return f"expected {_words([text for text in alternatives if text])}, got {shown(instance)}"
    return f"{shown(instance)} is none of the forms this field takes"
