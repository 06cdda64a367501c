"""Reading policy files: kaffinity's ``Policy`` objects and ValidatingAdmissionPolicies.

A path is a file or a folder (every ``*.yaml``, ``*.yml`` and ``*.json`` in it). A document is:

- a ``kaffinity.io/v1alpha1`` ``Policy``: checked against ``schemas/policy.schema.json``; its
  own JSON Schema (``spec.schema``) against the 2020-12 metaschema;
- a ``ValidatingAdmissionPolicy`` or ``ValidatingAdmissionPolicyBinding``
  (:mod:`kaffinity.policy.admission`), checked against ``schemas/admission.schema.json``;
- anything else: a param a binding's ``paramRef`` may name (a ConfigMap, a custom resource).

A policy may not reuse a built-in rule's name or another policy's. Its expressions are
compiled when its rule is made (:func:`kaffinity.policy.check.policy_rules`), where the
Kubernetes version is known.

A bad policy is reported as ``file:line:column: error: ...`` with the position of the field at
fault. It is left out, and the other policies still load: the caller runs them and the built-in
rules, then exits 2 (see :class:`Loaded`).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from kaffinity.config import error_at
from kaffinity.findings import Severity
from kaffinity.k8s.model import LabelSelector
from kaffinity.k8s.model.terms import label_selector
from kaffinity.load.files import load
from kaffinity.load.parse import DEFAULT_LIMITS, Limits, SourceFile
from kaffinity.load.source import DataPath, Document
from kaffinity.policy.admission import (
    AdmissionPolicy,
    Binding,
    field_path,
    field_prefix,
    is_admission,
    read_admission,
)

API_VERSION = "kaffinity.io/v1alpha1"
KIND = "Policy"
#: What ``spec.target`` may name: where in a workload the policy's schema looks.
TARGETS = ("object", "podTemplate", "podSpec")


@dataclass(frozen=True)
class Policy:
    """One Policy, read from its document; ``None`` in a match field means "any"."""

    name: str
    doc: Document
    message: str
    schema: Mapping[str, Any] | None
    expression: str | None = None
    field_path: str | None = None
    target: str = "podSpec"
    severity: Severity = Severity.ERROR
    description: str = ""
    kinds: frozenset[str] | None = None
    namespaces: frozenset[str] | None = None
    selector: LabelSelector | None = None
    min_replicas: int | None = None


@dataclass
class Loaded:
    """The policies that loaded, and one line per problem (file:line:column: error: ...).

    ``admission``: the ValidatingAdmissionPolicies, ``bindings`` theirs, ``params`` every other
    object of the policy files."""

    policies: list[Policy] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    admission: list[AdmissionPolicy] = field(default_factory=list)
    bindings: list[Binding] = field(default_factory=list)
    params: list[Document] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        """Every policy's rule name."""
        return [*(policy.name for policy in self.policies), *(policy.name for policy in self.admission)]


def load_policies(
    paths: Sequence[str], reserved: Collection[str] = (), limits: Limits = DEFAULT_LIMITS
) -> Loaded:
    """Every policy under ``paths``; ``reserved``: names a policy may not take (the built-in
    rules and categories)."""
    files, missing = read_policy_files(paths, limits)
    loaded = policies_in(files, reserved)
    loaded.errors[:0] = missing
    if files and not loaded.names and not loaded.bindings and not loaded.errors:
        # Params alone, or nothing at all: a path that was meant to hold policies holds none.
        loaded.errors.append(
            f"kaffinity: error: {', '.join(paths)}: no policy (Policy or ValidatingAdmissionPolicy) found"
        )
    return loaded


def read_policy_files(
    paths: Sequence[str], limits: Limits = DEFAULT_LIMITS
) -> tuple[list[SourceFile], list[str]]:
    """The files under ``paths``, and an error for each path that does not exist or holds none."""
    missing = [
        f"kaffinity: error: {path}: policy file not found" for path in paths if not os.path.exists(path)
    ]
    present = [path for path in paths if os.path.exists(path)]
    files = load(present, limits=limits, gitignore=False, manifests_only=False) if present else []
    if present and not files:
        missing.append(
            f"kaffinity: error: {', '.join(present)}: no policy file (*.yaml, *.yml, *.json) found"
        )
    return files, missing


def policies_in(files: Sequence[SourceFile], reserved: Collection[str] = ()) -> Loaded:
    """The policies of files already read (:func:`load_policies` reads them from paths)."""
    loaded = Loaded()
    seen: dict[str, Document] = {}
    for file in files:
        for problem in file.problems:
            loaded.errors.append(error_at(file.name, problem.span, problem.message))
        for doc in file.documents:
            if is_admission(doc.data):
                read, errors = read_admission(doc)
                loaded.errors.extend(errors)
                if isinstance(read, Binding):
                    loaded.bindings.append(read)
                elif read is not None:
                    _add(loaded, read, reserved, seen)
                continue
            if not _is_policy(doc.data):
                loaded.params.append(doc)
                continue
            policy, errors = _policy(doc)
            loaded.errors.extend(errors)
            if policy is not None:
                _add(loaded, policy, reserved, seen)
    _unbound(loaded)
    return loaded


def _is_policy(data: Any) -> bool:
    """A kaffinity Policy, or what was meant as one (its kind, or kaffinity's group, or not
    an object at all): the rest is taken for params."""
    if not isinstance(data, Mapping):
        return True
    return data.get("kind") == KIND or str(data.get("apiVersion", "")).startswith("kaffinity.io/")


def _unbound(loaded: Loaded) -> None:
    """A binding whose policy is not in the files given binds nothing: an error at its name."""
    known = {policy.name for policy in loaded.admission}
    for binding in loaded.bindings:
        if binding.policy_name not in known:
            at = binding.doc.locate(("spec", "policyName"))
            said = (
                f"binding '{binding.name}' names policy '{binding.policy_name}', "
                "which the policy files do not hold"
            )
            loaded.errors.append(error_at(binding.doc.file, at, said))


def _add(
    loaded: Loaded, policy: Policy | AdmissionPolicy, reserved: Collection[str], seen: dict[str, Document]
) -> None:
    """``policy`` into ``loaded``, unless its name is reserved or taken (then an error)."""
    doc = policy.doc
    name_at = doc.locate(("metadata", "name"))
    if policy.name in reserved:
        taken = f"'{policy.name}' is a built-in rule or category: name the policy otherwise"
        loaded.errors.append(error_at(doc.file, name_at, taken))
    elif policy.name in seen:
        first = seen[policy.name]
        where = f"{first.file}:{first.locate(('metadata', 'name')).line}"
        loaded.errors.append(
            error_at(doc.file, name_at, f"a policy named '{policy.name}' is defined at {where}")
        )
    else:
        seen[policy.name] = doc
        if isinstance(policy, AdmissionPolicy):
            loaded.admission.append(policy)
        else:
            loaded.policies.append(policy)


def _policy(doc: Document) -> tuple[Policy | None, list[str]]:
    """The Policy of ``doc``, or None and why not."""
    data = doc.data
    if not isinstance(data, Mapping):
        return None, [error_at(doc.file, doc.span, "a policy file holds Policy objects, not a bare value")]
    kind = data.get("kind")
    if data.get("apiVersion") != API_VERSION or kind != KIND:
        shown = f"{data.get('apiVersion')} {kind}"
        return None, [
            error_at(
                doc.file, doc.span, f"{shown} is not a policy: expected apiVersion {API_VERSION}, kind {KIND}"
            )
        ]
    errors = _shape_errors(doc)
    if not errors and "fieldPath" in data["spec"] and field_path(data["spec"]["fieldPath"]) is None:
        said = f"spec.fieldPath '{data['spec']['fieldPath']}' is not a field path"
        errors = [error_at(doc.file, doc.locate(("spec", "fieldPath")), said)]
    if errors:
        return None, errors
    spec = data["spec"]
    match = spec.get("match") or {}
    return (
        Policy(
            name=data["metadata"]["name"],
            doc=doc,
            message=spec["message"],
            schema=spec.get("schema"),
            expression=spec.get("expression"),
            field_path=spec.get("fieldPath"),
            target=spec.get("target", "podSpec"),
            severity=Severity(spec.get("severity", "error")),
            description=spec.get("description", ""),
            kinds=_set(match.get("kinds")),
            namespaces=_set(match.get("namespaces")),
            selector=label_selector(match.get("labelSelector"), ("spec", "match", "labelSelector")),
            min_replicas=match.get("minReplicas"),
        ),
        [],
    )


@cache
def _policy_validator() -> Any:
    """The validator of ``schemas/policy.schema.json``, built once per process."""
    from jsonschema import Draft202012Validator

    from kaffinity.load.resources import schema

    return Draft202012Validator(schema("policy.schema.json"))


def _shape_errors(doc: Document) -> list[str]:
    """The Policy's own mistakes (its schema file's, then its JSON Schema's), at their places."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    from kaffinity.load.schema_words import said

    validator = _policy_validator()
    found = sorted(
        validator.iter_errors(doc.data), key=lambda error: [str(step) for step in error.absolute_path]
    )
    if found:
        return [
            error_at(
                doc.file,
                doc.locate(tuple(error.absolute_path)),
                f"{field_prefix(error.absolute_path)}{said(error)}",
            )
            for error in found
        ]
    if "schema" not in doc.data["spec"]:
        return []
    try:
        Draft202012Validator.check_schema(doc.data["spec"]["schema"])
    except SchemaError as error:
        path: DataPath = ("spec", "schema", *error.absolute_path)
        return [
            error_at(doc.file, doc.locate(path), f"spec.schema is not a valid JSON Schema: {said(error)}")
        ]
    return _reference_errors(doc)


#: Keywords whose value names another schema.
_REFERENCES = ("$ref", "$dynamicRef")


def _reference_errors(doc: Document) -> list[str]:
    """A ``$ref`` outside the policy (nothing is fetched: it could only fail), and a schema
    that refers to itself without end (``$ref: "#"``): errors at their places, not crashes."""
    from jsonschema import Draft202012Validator
    from referencing.exceptions import Unresolvable

    own = doc.data["spec"]["schema"]
    for path, ref in _references(own, ("spec", "schema")):
        if not ref.startswith("#"):
            outside = (
                f"{field_prefix(path)}'{ref}' is outside the policy: "
                "only references within it ('#...') are read"
            )
            return [error_at(doc.file, doc.locate(path), outside)]
    try:
        Draft202012Validator(own).is_valid({})
    except (RecursionError, Unresolvable) as error:
        endless = "endless references" if isinstance(error, RecursionError) else str(error)
        return [
            error_at(doc.file, doc.locate(("spec", "schema")), f"spec.schema cannot be evaluated: {endless}")
        ]
    return []


def _references(schema: Any, path: DataPath) -> Iterator[tuple[DataPath, str]]:
    """Every ``$ref`` / ``$dynamicRef`` in ``schema``, with its path."""
    if isinstance(schema, Mapping):
        for key, value in schema.items():
            if key in _REFERENCES and isinstance(value, str):
                yield (*path, key), value
            else:
                yield from _references(value, (*path, key))
    elif isinstance(schema, list):
        for index, item in enumerate(schema):
            yield from _references(item, (*path, index))


def _set(values: Any) -> frozenset[str] | None:
    return frozenset(values) if values else None
