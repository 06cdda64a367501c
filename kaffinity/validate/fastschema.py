"""A yes/no answer to "does jsonschema find nothing wrong?", compiled from a schema into closures.

Almost every object in a large manifest set is valid, and jsonschema's general machinery (a
validator object per descent, an error generator per keyword) made schema validation the largest
rule cost: 1.6 s CPU at 10,000 workloads, half the time it takes to parse them. The closures
compiled here answer the same question for the keywords kaffinity's extended schemas use, about
ten times faster; :func:`kaffinity.validate.schema.check_object` asks jsonschema for the errors only when
they answer no.

The closures answer exactly as jsonschema would (``tests/test_fastschema.py`` compares them on
every example, the real-world corpus when present, and generated objects); were one ever to say
no wrongly, jsonschema would run and find nothing, but a wrong yes would lose findings, so every
keyword is handled in full or not at all. A schema using a keyword (or value) not handled here
gets no closure (:class:`Unsupported`), and jsonschema does all the work.

Semantics follow jsonschema's Draft 2020-12 validator: ``integer`` accepts a float without a
fraction, booleans are not numbers and ``true`` is not ``1`` in ``const``/``enum``, ``format`` is
an annotation (no format checker is given), ``if``/``then`` apply ``then`` only where ``if`` holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Predicate = Callable[[Any], bool]

#: Keywords that never make an instance invalid here.
_ANNOTATIONS = frozenset(
    ("description", "title", "$schema", "$id", "$comment", "format", "default", "examples")
)
_TYPES: dict[str, Predicate] = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
    "number": lambda value: isinstance(value, (int, float)) and not isinstance(value, bool),
    "integer": lambda value: (
        (isinstance(value, int) and not isinstance(value, bool))
        or (isinstance(value, float) and value.is_integer())
    ),
}


class Unsupported(Exception):
    """The schema uses a keyword (or a value) these closures do not handle."""


def _always(value: Any) -> bool:
    return True


def _never(value: Any) -> bool:
    return False


def _scalar_equal(value: Any, expected: Any) -> bool:
    """jsonschema's equality for a scalar ``expected``: ``true`` is not ``1``, ``1`` is ``1.0``."""
    if isinstance(value, bool) or isinstance(expected, bool):
        return isinstance(value, bool) and isinstance(expected, bool) and value == expected
    if isinstance(value, (dict, list)):
        return False
    return bool(value == expected)


def compile_schema(schema: Any, keywords: Mapping[str, Callable[[Any], Predicate]]) -> Predicate:
    """The closure of ``schema``. ``keywords``: kaffinity's own keywords, each turned into a
    check by a function of the keyword's value. Raises :class:`Unsupported`."""
    if schema is True or schema == {}:
        return _always
    if schema is False:
        return _never
    if not isinstance(schema, dict):
        raise Unsupported(repr(schema))
    checks: list[Predicate] = []
    for keyword, value in schema.items():
        if keyword in _ANNOTATIONS or (keyword.startswith("x-") and keyword not in keywords):
            continue
        if keyword in keywords:
            checks.append(keywords[keyword](value))
        elif keyword in _COMPILERS:
            checks.append(_COMPILERS[keyword](value, schema, keywords))
        elif keyword in ("then", "else"):
            continue  # compiled with "if"
        else:
            raise Unsupported(keyword)
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    return lambda value: all(check(value) for check in checks)


def _type(value: Any, schema: Any, keywords: Any) -> Predicate:
    names = [value] if isinstance(value, str) else list(value)
    if any(name not in _TYPES for name in names):
        raise Unsupported(f"type {value}")
    tests = [_TYPES[name] for name in names]
    return tests[0] if len(tests) == 1 else lambda item: any(test(item) for test in tests)


def _properties(value: Any, schema: Any, keywords: Any) -> Predicate:
    compiled = {name: compile_schema(sub, keywords) for name, sub in value.items()}
    pairs = [(name, check) for name, check in compiled.items() if check is not _always]

    def check(item: Any) -> bool:
        if not isinstance(item, dict):
            return True
        return all(check(item[name]) for name, check in pairs if name in item)

    return check


def _additional_properties(value: Any, schema: Any, keywords: Any) -> Predicate:
    if "patternProperties" in schema:
        raise Unsupported("patternProperties")
    listed = frozenset(schema.get("properties") or ())
    sub = compile_schema(value, keywords)
    if sub is _always:
        return _always

    def check(item: Any) -> bool:
        if not isinstance(item, dict):
            return True
        return all(sub(child) for key, child in item.items() if key not in listed)

    return check


def _items(value: Any, schema: Any, keywords: Any) -> Predicate:
    if "prefixItems" in schema or not isinstance(value, (dict, bool)):
        raise Unsupported("items")
    sub = compile_schema(value, keywords)
    if sub is _always:
        return _always
    return lambda item: not isinstance(item, list) or all(sub(child) for child in item)


def _enum(value: Any, schema: Any, keywords: Any) -> Predicate:
    if any(isinstance(choice, (dict, list)) for choice in value):
        raise Unsupported("enum of containers")
    choices = list(value)
    return lambda item: any(_scalar_equal(item, choice) for choice in choices)


def _const(value: Any, schema: Any, keywords: Any) -> Predicate:
    if isinstance(value, (dict, list)):
        raise Unsupported("const container")
    return lambda item: _scalar_equal(item, value)


def _required(value: Any, schema: Any, keywords: Any) -> Predicate:
    names = list(value)
    return lambda item: not isinstance(item, dict) or all(name in item for name in names)


def _if(value: Any, schema: Any, keywords: Any) -> Predicate:
    if "else" in schema:
        raise Unsupported("else")
    condition = compile_schema(value, keywords)
    then = compile_schema(schema.get("then", True), keywords)
    return lambda item: not condition(item) or then(item)


def _all_of(value: Any, schema: Any, keywords: Any) -> Predicate:
    subs = [compile_schema(sub, keywords) for sub in value]
    return lambda item: all(sub(item) for sub in subs)


def _contains(value: Any, schema: Any, keywords: Any) -> Predicate:
    """At least one item valid (``minContains``/``maxContains`` change that: not handled)."""
    if "minContains" in schema or "maxContains" in schema:
        raise Unsupported("minContains/maxContains")
    sub = compile_schema(value, keywords)
    return lambda item: not isinstance(item, list) or any(sub(child) for child in item)


def _counted(
    kind: type[dict[Any, Any]] | type[list[Any]], most: bool
) -> Callable[[Any, Any, Any], Predicate]:
    """``minProperties``/``maxProperties`` (dicts) and ``minItems``/``maxItems`` (lists)."""

    def compile_count(value: Any, schema: Any, keywords: Any) -> Predicate:
        if isinstance(value, bool) or not isinstance(value, int):
            raise Unsupported("count")
        if most:
            return lambda item: not isinstance(item, kind) or len(item) <= value
        return lambda item: not isinstance(item, kind) or len(item) >= value

    return compile_count


_COMPILERS: dict[str, Callable[[Any, Any, Any], Predicate]] = {
    "contains": _contains,
    "minProperties": _counted(dict, most=False),
    "maxProperties": _counted(dict, most=True),
    "minItems": _counted(list, most=False),
    "maxItems": _counted(list, most=True),
    "type": _type,
    "properties": _properties,
    "additionalProperties": _additional_properties,
    "items": _items,
    "enum": _enum,
    "const": _const,
    "required": _required,
    "if": _if,
    "allOf": _all_of,
}
