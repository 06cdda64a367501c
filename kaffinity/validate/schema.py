"""Validate objects against kaffinity's extended Kubernetes schemas (``schemas/kubernetes-*.json``).

The schemas are generated from upstream OpenAPI by ``scripts/generate_schemas.py``. Each has one
entry point per workload kind that lists every field of the object (so an unknown one is
reported, as strict field validation does) but checks only the scheduling subtree.

Three kinds of problem come out, each for its own rule:

* ``schema``: a wrong type, an unknown field, a value outside an enumeration;
* ``field-unavailable``: a field the target version does not know (``x-kaffinity-since``);
* ``proposal-field``: a field or operator that exists only in a proposal
  (``x-kaffinity-proposal``, ``x-kaffinity-proposal-values``), unless proposals are honoured.

Validators are built once per (version, proposals, kind) and reused for every object.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import extend

from kaffinity.load.resources import schema
from kaffinity.load.source import DataPath
from kaffinity.validate.fastschema import Predicate

SCHEMA = "schema"
FIELD_UNAVAILABLE = "field-unavailable"
PROPOSAL_FIELD = "proposal-field"

_SINCE, _PROPOSAL, _PROPOSAL_VALUES = (
    "x-kaffinity-since",
    "x-kaffinity-proposal",
    "x-kaffinity-proposal-values",
)
_KNOWN = "x-kaffinity-known"  # internal: additionalProperties: false, as a set (see _inlined)
_JSON_TYPES = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (dict, "object"),
    (list, "array"),
)


# Keys that are not fields in files that are not plain manifests: strategic-merge-patch
# directives of kustomize patches ($patch, $retainKeys, $setElementOrder/...) and the JMESPath
# bindings of Kyverno / chainsaw assertions ("(replicas >= `1`)").
_NOT_FIELDS = ("$", "(")


@dataclass(frozen=True, slots=True)
class SchemaProblem:
    """One problem at one data path (relative to the object)."""

    rule: str
    path: DataPath
    message: str
    fix: str | None = None


def schema_name(version: str) -> str:
    return f"kubernetes-{version}.schema.json"


def kube_schema(version: str) -> Mapping[str, Any]:
    """The extended schema of one Kubernetes minor version."""
    loaded: Mapping[str, Any] = schema(schema_name(version))
    return loaded


@cache
def _entry_points(version: str) -> dict[tuple[str, str], str]:
    """(apiVersion, kind) -> the ``$defs`` reference that validates it."""
    points: dict[tuple[str, str], str] = {}
    for choice in kube_schema(version)["allOf"]:
        properties = choice["if"]["properties"]
        points[properties["apiVersion"]["const"], properties["kind"]["const"]] = choice["then"]["$ref"]
    return points


def _known(
    validator: Validator, known: frozenset[str], instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if isinstance(instance, dict) and not known.issuperset(instance):
        yield ValidationError("unknown fields", validator=_KNOWN, instance=instance)


def _since(
    validator: Validator, since: str, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    yield ValidationError(since, validator=_SINCE, instance=instance)


def _proposal(proposals: bool) -> Any:
    def check(
        validator: Validator, source: str, instance: Any, schema: Mapping[str, Any]
    ) -> Iterator[ValidationError]:
        if not proposals:
            yield ValidationError(source, validator=_PROPOSAL, instance=instance)

    return check


def _proposal_values(proposals: bool) -> Any:
    def check(
        validator: Validator, sources: Mapping[str, str], instance: Any, schema: Mapping[str, Any]
    ) -> Iterator[ValidationError]:
        if not proposals and isinstance(instance, str) and instance in sources:
            yield ValidationError(sources[instance], validator=_PROPOSAL_VALUES, instance=instance)

    return check


@cache
def validator_for(version: str, proposals: bool, api_version: str, kind: str) -> Validator | None:
    """The validator of one kind at one version, or None when the schema has no entry for it."""
    target = _entry_points(version).get((api_version, kind))
    if target is None:
        return None
    validator: Validator = _validator_class(proposals)(_inlined(version, target.removeprefix("#/$defs/")))
    return validator


@cache
def _valid_for(version: str, proposals: bool, api_version: str, kind: str) -> Predicate | None:
    """Whether jsonschema finds nothing wrong, compiled (:mod:`kaffinity.validate.fastschema`); None if
    the schema uses a keyword the compiler does not handle."""
    from kaffinity.validate.fastschema import Unsupported, compile_schema

    validator = validator_for(version, proposals, api_version, kind)
    if validator is None:
        return None
    try:
        return compile_schema(validator.schema, _fast_keywords(proposals))
    except Unsupported:
        return None


def _fast_keywords(proposals: bool) -> dict[str, Callable[[Any], Predicate]]:
    """kaffinity's keywords as closures, each exactly as its jsonschema function above decides."""

    def known(names: frozenset[str]) -> Predicate:
        return lambda item: not isinstance(item, dict) or names.issuperset(item)

    def proposal_values(sources: Mapping[str, str]) -> Predicate:
        return lambda item: proposals or not (isinstance(item, str) and item in sources)

    return {
        _KNOWN: known,
        _SINCE: lambda since: lambda item: False,
        _PROPOSAL: lambda source: lambda item: proposals,
        _PROPOSAL_VALUES: proposal_values,
    }


@cache
def _validator_class(proposals: bool) -> Any:
    """Draft 2020-12 with kaffinity's keywords; the proposal keywords depend on ``--proposals``."""
    return extend(  # type: ignore[no-untyped-call]
        Draft202012Validator,
        {
            _KNOWN: _known,
            _SINCE: _since,
            _PROPOSAL: _proposal(proposals),
            _PROPOSAL_VALUES: _proposal_values(proposals),
        },
    )


def _inlined(version: str, name: str) -> dict[str, Any]:
    """One definition with every ``$ref`` replaced by what it names (they do not recurse).

    jsonschema resolves a ``$ref`` anew each time it meets one, which costs more than the
    validation itself; the inlined schema is built once per kind and version.
    """
    defs = kube_schema(version)["$defs"]

    def inline(node: Any) -> Any:
        if isinstance(node, list):
            return [inline(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {key: inline(value) for key, value in node.items() if key != "$ref"}
        target = node.get("$ref")
        if isinstance(target, str):
            out = {**inline(defs[target.removeprefix("#/$defs/")]), **out}
        if out.get("additionalProperties") is False and isinstance(out.get("properties"), dict):
            # Fields kaffinity lists but does not check ({}) need no descent: one set lookup
            # per key finds the unknown ones.
            properties = out["properties"]
            out["properties"] = {name: sub for name, sub in properties.items() if sub != {}}
            out[_KNOWN] = frozenset(properties)
            del out["additionalProperties"]
        return out

    inlined: dict[str, Any] = inline(defs[name])
    return inlined


def field_schema(version: str, api_version: str, kind: str) -> Mapping[str, Any] | None:
    """The schema of one kind at ``version``, references inlined, for walking its fields (None
    for kinds the schemas do not cover). An object's ``KNOWN_FIELDS`` entry names every field
    the API has; ``properties`` describes those kaffinity checks ({} elsewhere: not described)."""
    name = _entry_points(version).get((api_version, kind))
    return _inlined_cached(version, name.removeprefix("#/$defs/")) if name else None


#: In :func:`field_schema`'s objects: the names of every field of the type.
KNOWN_FIELDS = _KNOWN


@cache
def _inlined_cached(version: str, name: str) -> dict[str, Any]:
    return _inlined(version, name)


def kinds_described(version: str) -> list[tuple[str, str]]:
    """Every (apiVersion, kind) the schemas of ``version`` describe."""
    return sorted(_entry_points(version))


def check_object(data: Mapping[str, Any], version: str, proposals: bool = False) -> list[SchemaProblem]:
    """Every schema problem of one object; [] for kinds the schemas do not cover."""
    api_version, kind = data.get("apiVersion"), data.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return []
    validator = validator_for(version, proposals, api_version, kind)
    if validator is None:
        return []
    return _check(data, validator, _valid_for(version, proposals, api_version, kind), version)


#: The definition that validates the pod template of a custom workload kind.
_TEMPLATE = "kaffinity.PodTemplateSpec"


@cache
def _template_validator(version: str, proposals: bool) -> Validator:
    validator: Validator = _validator_class(proposals)(_inlined(version, _TEMPLATE))
    return validator


@cache
def _template_valid(version: str, proposals: bool) -> Predicate | None:
    from kaffinity.validate.fastschema import Unsupported, compile_schema

    try:
        return compile_schema(_template_validator(version, proposals).schema, _fast_keywords(proposals))
    except Unsupported:
        return None


def check_template(template: Any, version: str, proposals: bool = False) -> list[SchemaProblem]:
    """Every schema problem of a custom workload's pod template (a core/v1 PodTemplateSpec),
    at paths relative to the template."""
    validator = _template_validator(version, proposals)
    return _check(template, validator, _template_valid(version, proposals), version)


def _check(data: Any, validator: Validator, valid: Predicate | None, version: str) -> list[SchemaProblem]:
    if valid is not None and valid(data):
        return []  # the common case, decided without jsonschema (see kaffinity.validate.fastschema)
    problems: list[SchemaProblem] = []
    rejected: list[DataPath] = []  # proposal fields: what is inside them is moot
    mistyped: set[DataPath] = set()  # a value of the wrong type: one problem, not also a bad enum
    for error in sorted(validator.iter_errors(data), key=_order):
        path = tuple(error.absolute_path)
        if path in mistyped or any(path[: len(prefix)] == prefix for prefix in rejected):
            continue
        if error.validator == _PROPOSAL:
            rejected.append(path)
        elif error.validator in ("type", "oneOf", "anyOf"):
            mistyped.add(path)
        problems += _problems(error, path, version)
    return problems


def _order(error: ValidationError) -> tuple[tuple[str, ...], int]:
    """By path; at one path a proposal marker first (what is inside is moot), then a type error
    (it explains any other error at the same place)."""
    rank = 0 if error.validator == _PROPOSAL else 1 if error.validator in ("type", "oneOf", "anyOf") else 2
    return tuple(map(str, error.absolute_path)), rank


def _field(path: DataPath) -> str:
    """The name a message uses for the value at ``path``: ``values[0]``, ``topologyKey``."""
    indexes = ""
    for item in reversed(path):
        if isinstance(item, int):
            indexes = f"[{item}]{indexes}"
        else:
            return f"{item}{indexes}"
    return f"object{indexes}"


def _problems(error: ValidationError, path: DataPath, version: str) -> list[SchemaProblem]:
    keyword, instance = error.validator, error.instance
    field = _field(path)
    if keyword == _SINCE:
        return [
            SchemaProblem(
                FIELD_UNAVAILABLE,
                path,
                f"{field} is not a field of Kubernetes {version}: it was added in {error.message}; "
                "the API server rejects it (strict field validation) or drops it",
                f"upgrade the cluster to {error.message} or later, or remove {field}",
            )
        ]
    if keyword in (_PROPOSAL, _PROPOSAL_VALUES):
        what = f"operator {instance}" if keyword == _PROPOSAL_VALUES else field
        return [
            SchemaProblem(
                PROPOSAL_FIELD,
                path,
                f"{what} exists only in a proposal, {error.message}; no Kubernetes release accepts it",
                "remove it (or lint with --proposals to check it as the proposal specifies)",
            )
        ]
    if keyword == _KNOWN and isinstance(instance, dict):
        known = sorted(error.validator_value)  # type: ignore[arg-type]
        return [
            SchemaProblem(SCHEMA, (*path, key), f'unknown field "{key}"{_did_you_mean(str(key), known)}')
            for key in instance
            if key not in known and not str(key).startswith(_NOT_FIELDS)
        ]
    if keyword == "type":
        expected = [t for t in _as_list(error.validator_value) if t != "null"]
        return [SchemaProblem(SCHEMA, path, f"{field} must be {_or(expected)}, not {_describe(instance)}")]
    if keyword in ("oneOf", "anyOf"):
        choices: list[Any] = list(error.validator_value)  # type: ignore[arg-type]
        expected = sorted({t for sub in choices for t in _as_list(sub.get("type")) if t != "null"})
        return [SchemaProblem(SCHEMA, path, f"{field} must be {_or(expected)}, not {_describe(instance)}")]
    if keyword == "enum":
        values: list[Any] = list(error.validator_value)  # type: ignore[arg-type]
        allowed = ", ".join(json.dumps(value) for value in values if value is not None)
        return [
            SchemaProblem(
                SCHEMA, path, f"Unsupported value: {json.dumps(instance)}: supported values: {allowed}"
            )
        ]
    return [SchemaProblem(SCHEMA, path, error.message)]


def _as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or ())


def _or(types: list[str]) -> str:
    named = [f"an {t}" if t[0] in "aeiou" else f"a {t}" for t in types]
    return " or ".join(named) if named else "absent"


def _describe(instance: Any) -> str:
    if instance is None:
        return "null"
    kind = next((name for cls, name in _JSON_TYPES if isinstance(instance, cls)), type(instance).__name__)
    shown = json.dumps(instance, default=str)
    return f"{kind} {shown}" if len(shown) <= 40 else f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _did_you_mean(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    return f' (did you mean "{close[0]}"?)' if close else ""
