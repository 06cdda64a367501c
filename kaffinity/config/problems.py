"""What is wrong with a config file, each problem at its line: unknown keys, the schema's errors
in words, limits raised, paths outside the repository, an unknown Kubernetes version and its
feature gates, unknown rule names and severities."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kaffinity.config.limits import _SIZE, _raised_message, parse_size
from kaffinity.config.settings import (
    DEFAULT_KUBE_VERSION,
    KUBE_VERSIONS,
    _did_you_mean,
    _unknown_rule,
    error_at,
)
from kaffinity.config.versions import unknown_version
from kaffinity.load.display import quote_name
from kaffinity.load.parse import DEFAULT_LIMITS
from kaffinity.load.repository import within
from kaffinity.load.source import Document

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError


def _validate(doc: Document, rule_names: Sequence[str], categories: Sequence[str]) -> list[str]:
    """Every problem of the config, in order: unknown keys, the schema's errors (by path), the
    Kubernetes version and its feature gates, then unknown rule names."""
    from kaffinity.load.resources import schema

    data = doc.data
    if not isinstance(data, dict):
        return [error_at(doc.file, doc.span, "the configuration must be a mapping of settings")]
    schema_doc = schema("config.schema.json")
    known = list(schema_doc["properties"])
    names = {*rule_names, *categories, "all"}
    return [
        *(
            error_at(doc.file, doc.locate((key,)), f"unknown key '{key}'{_did_you_mean(key, known)}")
            for key in data
            if key not in known
        ),
        *_schema_errors(doc, schema_doc),
        *_file_size_errors(doc),
        *_version_errors(doc),
        *_rule_name_errors(doc, names),
        *_severity_errors(doc, names),
    ]


def _schema_errors(doc: Document, schema_doc: Mapping[str, Any]) -> list[str]:
    """The schema's errors by path (an unknown key is said once, above)."""
    from jsonschema import Draft202012Validator

    from kaffinity.load.schema_words import said, shown

    validator = Draft202012Validator(schema_doc)
    errors = []
    for found in sorted(validator.iter_errors(doc.data), key=lambda e: [str(p) for p in e.absolute_path]):
        if found.validator == "additionalProperties" and not found.absolute_path:
            continue
        error = _closest(found)
        path = tuple(error.absolute_path)
        where = ".".join(str(item) for item in path)
        message = _pattern_message(path, error.instance) if error.validator == "pattern" else None
        if len(path) == 2 and path[0] == "limits":  # file-size: oneOf an integer or a quantity
            alternatives = error.context if error.validator == "oneOf" else None
            over = next((e for e in alternatives or [error] if e.validator == "maximum"), None)
            if over is not None:
                message = _raised_message(str(path[1]), over.instance, over.validator_value)
            elif path[1] == "file-size":
                message = f"expected bytes or a quantity such as 16Mi or 10M, got {shown(error.instance)}"
        errors.append(error_at(doc.file, doc.locate(path), f"{where}: {message or said(error)}"))
    return errors


def _closest(found: ValidationError) -> ValidationError:
    """Of a oneOf / anyOf that failed, the alternative that came closest, when one did: its error
    lies deeper in the value."""
    if found.validator in ("oneOf", "anyOf") and found.context:
        deepest = max(found.context, key=lambda inner: len(inner.absolute_path))
        if len(deepest.absolute_path) > len(found.absolute_path):
            return deepest
    return found


def _file_size_errors(doc: Document) -> list[str]:
    """``limits.file-size`` written as a quantity (the schema checks the integers): a size, at
    most the default."""
    limits = doc.data.get("limits")
    value = limits.get("file-size") if isinstance(limits, dict) else None
    if not isinstance(value, str) or _SIZE.fullmatch(value) is None:  # else the schema's error
        return []
    where = doc.locate(("limits", "file-size"))
    try:
        size = parse_size(value)
    except ValueError as error:
        return [error_at(doc.file, where, f"limits.file-size: {error}")]
    if size > DEFAULT_LIMITS.file_size:
        return [error_at(doc.file, where, f"limits.file-size: {_raised_message('file-size', value, '32Mi')}")]
    return []


#: The settings that name paths read (or, ``cache-dir``, written): each must stay in the
#: repository. ``exclude`` and ``units`` only match paths, never reach one.
_PATH_KEYS = ("cluster", "cache-dir", "context", "policies", "helm-values", "baseline")


def _outside_errors(doc: Document, base: str, root: str) -> list[str]:
    """The paths of the config that resolve outside ``root`` (symlinks followed, as
    ``os.path.realpath``): a checkout decides which files of the repository are read, not
    which files of the machine (issue 31). The same paths on the command line are read."""
    data = doc.data
    real_root = os.path.realpath(root)
    found: list[tuple[tuple[Any, ...], str]] = []
    for key in _PATH_KEYS:
        value = data.get(key)
        if isinstance(value, str):
            found.append(((key,), value))
        elif isinstance(value, list):
            found.extend(((key, index), item) for index, item in enumerate(value) if isinstance(item, str))
        elif isinstance(value, dict):  # helm-values: chart folder -> values files
            for chart, files in value.items():
                found.append(((key, chart), str(chart)))
                if isinstance(files, list):
                    found.extend(
                        ((key, chart, index), item)
                        for index, item in enumerate(files)
                        if isinstance(item, str)
                    )
    errors = []
    for where, value in found:
        resolved = os.path.realpath(os.path.join(base, value))
        if not within(resolved, real_root):
            shown = ".".join(str(step) for step in where)
            option = _PATH_OPTIONS[where[0]]
            errors.append(
                error_at(
                    doc.file,
                    doc.locate(where),
                    f"{shown}: {quote_name(value)} is outside the repository ({quote_name(root)}): "
                    f"a path outside it is read only when given on the command line{option}",
                )
            )
    return errors


_PATH_OPTIONS = {
    "cluster": " (--cluster)",
    "cache-dir": " (--cache-dir, KAFFINITY_CACHE_DIR)",
    "context": " (--context)",
    "policies": " (--policy)",
    "helm-values": "",
    "baseline": " (--baseline)",
}


def _version_errors(doc: Document) -> list[str]:
    """An unknown ``kube-version``, else the problems of the feature gates for it."""
    data = doc.data
    version = data.get("kube-version", DEFAULT_KUBE_VERSION)
    if not isinstance(version, str):
        return []
    if version not in KUBE_VERSIONS:
        return [error_at(doc.file, doc.locate(("kube-version",)), unknown_version(version))]
    gates = data.get("feature-gates")
    if not isinstance(gates, dict):
        return []
    from kaffinity.k8s.gates import gate_problems

    valid = {name: value for name, value in gates.items() if isinstance(value, bool)}
    return [
        error_at(doc.file, doc.locate(("feature-gates", name)), message)
        for name, message in gate_problems(version, valid)
    ]


def _rule_name_errors(doc: Document, names: set[str]) -> list[str]:
    """Names in ``select`` and ``ignore`` that are no rule, category or ``all``."""
    return [
        error_at(doc.file, doc.locate((key, index)), _unknown_rule(name, names))
        for key in ("select", "ignore")
        for index, name in enumerate(doc.data.get(key) or [])
        if isinstance(name, str) and name not in names
    ]


def _severity_errors(doc: Document, names: set[str]) -> list[str]:
    """``severity`` keys that are no rule or category (``all`` has no one severity)."""
    severity = doc.data.get("severity")
    if not isinstance(severity, dict):
        return []
    errors = []
    for name in severity:
        at = doc.locate(("severity", name))
        if name == "all":  # a rule's or a category's severity only: each rule has its own default
            errors.append(
                error_at(
                    doc.file, at, "severity: 'all' cannot be given one severity; name rules or categories"
                )
            )
        elif name not in names:
            errors.append(error_at(doc.file, at, _unknown_rule(name, names - {"all"})))
    return errors


def _pattern_message(path: tuple[Any, ...], value: Any) -> str | None:
    """A readable message for a ``workloads`` value that does not match its pattern."""
    if len(path) != 3 or path[0] != "workloads":
        return None
    if path[2] == "apiVersion":
        return (
            f"'{value}' is not the group/version of a custom resource (example.com/v1, or "
            "example.com/* for every version); the built-in kinds need no entry"
        )
    if path[2] == "kind":
        return f"'{value}' is not a kind (a name such as MyApp)"
    return f"'{value}' is not a dotted path of field names (such as spec.template)"
