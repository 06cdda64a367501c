"""``kaffinity policy check``: the policies themselves linted, before they lint anything.

What it reports, each at the line (and where it can, the column) of the policy file:

- **error**: what makes a policy unusable: a shape the API server (or kaffinity's Policy schema)
  refuses, an expression that does not compile for ``--kube-version`` (a library the version
  lacks included), a binding of a policy the files do not hold;
- **warning**: a field an expression reads that the matched kind does not have at that version
  (as kube-apiserver's type checking warns in ``status.typeChecking``); a field that is optional
  and read unguarded (no ``has()``, ``.?`` or ``in`` before it), which errors on the manifests
  that omit it; a binding's ``paramRef`` by name that no policy file holds; ``authorizer``,
  which kaffinity cannot evaluate offline;
- **info**: ``auditAnnotations``, which only annotate a cluster's audit log (``lint`` reports
  the values each object gets as info findings).

The kinds an expression is checked against: a ValidatingAdmissionPolicy's ``resourceRules``
(none with a ``*``, as type checking skips wildcards), a kaffinity Policy's ``match.kinds`` (all
workload kinds when absent), at its target.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from kaffinity.config import Settings
from kaffinity.findings import Severity
from kaffinity.k8s.defaults import defaulted
from kaffinity.load.source import DataPath, Document
from kaffinity.policy.admission import AdmissionPolicy, Expression, ResourceRule
from kaffinity.policy.check import policy_rules, reserved_names
from kaffinity.policy.expressions import (
    Chain,
    chain_spans,
    place_in_file,
    references,
)
from kaffinity.policy.load import Loaded, Policy, policies_in, read_policy_files
from kaffinity.policy.matching import param_candidates, resource_of

#: The workload kinds a kaffinity Policy without ``match.kinds`` checks, with their template.
_TEMPLATES: dict[tuple[str, str], DataPath] = {
    ("apps/v1", "Deployment"): ("spec", "template"),
    ("apps/v1", "StatefulSet"): ("spec", "template"),
    ("apps/v1", "DaemonSet"): ("spec", "template"),
    ("apps/v1", "ReplicaSet"): ("spec", "template"),
    ("v1", "ReplicationController"): ("spec", "template"),
    ("batch/v1", "Job"): ("spec", "template"),
    ("batch/v1", "CronJob"): ("spec", "jobTemplate", "spec", "template"),
    ("v1", "PodTemplate"): ("template",),
    ("v1", "Pod"): (),
}
#: Fields the API server requires of every object of these kinds (validation refuses them
#: absent): reading them needs no guard.
_REQUIRED: tuple[DataPath, ...] = (
    ("apiVersion",),
    ("kind",),
    ("metadata",),
    ("metadata", "name"),
    ("spec",),
    ("spec", "selector"),
    ("spec", "template"),
    ("spec", "template", "spec"),
    ("spec", "template", "spec", "containers"),
    ("spec", "jobTemplate"),
    ("spec", "jobTemplate", "spec"),
    ("spec", "jobTemplate", "spec", "template"),
    ("spec", "schedule"),
    ("spec", "containers"),
    ("template",),
)


@dataclass(frozen=True, order=True)
class Problem:
    """One problem of a policy file."""

    file: str
    line: int
    column: int
    severity: Severity
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.severity.value}: {self.message}"


def review(paths: Sequence[str], settings: Settings) -> list[Problem]:
    """Every problem of the policies under ``paths``, in file order."""
    files, missing = read_policy_files(paths, settings.limits)
    problems = [_parsed(line) for line in missing]
    loaded = policies_in(files, reserved_names())
    _, compile_errors = policy_rules(loaded, settings)
    problems += [_parsed(line) for line in [*loaded.errors, *compile_errors]]
    version = settings.kube_version
    for policy in loaded.admission:
        problems += _admission(policy, loaded, version)
    for own in loaded.policies:
        if own.expression is not None:
            problems += _own(own, version)
    return sorted(set(problems))


_ERROR_LINE = re.compile(r"^(?P<file>.*?):(?P<line>\d+):(?P<column>\d+): error: (?P<message>.*)$")


def _parsed(line: str) -> Problem:
    """An error line of the loader (``file:line:column: error: ...``) as a problem."""
    match = _ERROR_LINE.match(line)
    if match is None:  # kaffinity: error: FILE: message (no position)
        file, _, message = line.removeprefix("kaffinity: error: ").partition(": ")
        return Problem(file, 0, 0, Severity.ERROR, message)
    return Problem(match["file"], int(match["line"]), int(match["column"]), Severity.ERROR, match["message"])


def _admission(policy: AdmissionPolicy, loaded: Loaded, version: str) -> Iterator[Problem]:
    doc = policy.doc
    kinds = _kinds_of(policy.match.rules or (), version)
    expressions = [
        *policy.match_conditions,
        *policy.variables,
        *(v.expression for v in policy.validations),
        *(v.message_expression for v in policy.validations if v.message_expression is not None),
    ]
    for expression in expressions:
        if references(expression.text, "authorizer"):
            said = "reads `authorizer`: kaffinity cannot evaluate it offline and skips the expression"
            yield _at(doc, expression, None, Severity.WARNING, said)
        for kind in kinds:
            yield from _fields(doc, expression, kind, (), version)
    if policy.audit_annotations:
        said = "auditAnnotations only annotate a cluster's audit log: lint reports each object's values"
        yield Problem(doc.file, *doc.locate(("spec", "auditAnnotations")), Severity.INFO, said)
    yield from _params(policy, loaded)


def _params(policy: AdmissionPolicy, loaded: Loaded) -> Iterator[Problem]:
    """A binding's paramRef by name that no policy file holds (the linted manifests may; a
    cluster must)."""
    if policy.param_kind is None:
        return
    bindings = [binding for binding in loaded.bindings if binding.policy_name == policy.name]
    if not bindings:
        said = (
            f"paramKind {policy.param_kind[1]} but no binding in the files given: kaffinity applies "
            "the policy as bound with Deny, with params null"
        )
        yield Problem(policy.doc.file, *policy.doc.locate(("spec", "paramKind")), Severity.WARNING, said)
    candidates = param_candidates(loaded.params)
    for binding in bindings:
        ref = binding.param_ref
        if ref is None or ref.name is None:
            continue
        if not any(
            (param.api_version, param.kind) == policy.param_kind and param.name == ref.name
            for param in candidates
        ):
            where = f" in namespace {ref.namespace}" if ref.namespace else ""
            said = (
                f"param {policy.param_kind[1]} '{ref.name}'{where} is in no policy file: unless the "
                f"manifests hold it, every request is {'denied' if ref.not_found == 'Deny' else 'allowed'}"
            )
            at = binding.doc.locate(("spec", "paramRef", "name"))
            yield Problem(binding.doc.file, *at, Severity.WARNING, said)


def _own(policy: Policy, version: str) -> Iterator[Problem]:
    """A kaffinity Policy's expression against each kind it matches, at its target."""
    assert policy.expression is not None
    expression = Expression(policy.expression, ("spec", "expression"))
    for (api_version, kind), template in _TEMPLATES.items():
        if policy.kinds is not None and kind not in policy.kinds:
            continue
        if policy.target == "object":
            base: DataPath = ()
        elif policy.target == "podTemplate":
            base = template
        else:
            base = (*template, "spec") if template or kind != "Pod" else ("spec",)
        yield from _fields(policy.doc, expression, (api_version, kind), base, version)


def _kinds_of(rules: Sequence[ResourceRule], version: str) -> list[tuple[str, str]]:
    """The described kinds the rules name without wildcards (type checking's limit)."""
    from kaffinity.validate.schema import kinds_described

    out = []
    for api_version, kind in kinds_described(version):
        group, _, kind_version = api_version.rpartition("/")
        for rule in rules:
            if "*" in (*rule.groups, *rule.versions) or any("*" in r for r in rule.resources):
                continue
            if group in rule.groups and kind_version in rule.versions and resource_of(kind) in rule.resources:
                out.append((api_version, kind))
                break
    return out


def _fields(
    doc: Document, expression: Expression, kind: tuple[str, str], base: DataPath, version: str
) -> Iterator[Problem]:
    """Unknown and unguarded fields in ``expression``'s reads of ``object`` (at ``base`` of
    ``kind``)."""
    from kaffinity.validate.schema import field_schema

    root = field_schema(version, *kind)
    if root is None:
        return
    node: Any = root
    for step in base:
        node = _child(node, step)
    present = _always_present(version, kind)
    seen: set[tuple[str | int, ...]] = set()
    seen_fields: set[tuple[str | int, ...]] = set()
    for chain in chain_spans(expression.text, "object"):
        if chain.steps in seen:
            continue
        seen.add(chain.steps)
        unknown = _unknown(node, chain.steps)
        if unknown is not None:
            field = ".".join(str(step) for step in (*base, *chain.steps[: unknown + 1]))
            said = f"{kind[1]} ({kind[0]}) has no field {field} in Kubernetes {version}"
            yield _at(doc, expression, chain, Severity.WARNING, said)
            continue
        unguarded = _unguarded(expression.text, chain, base, present)
        if unguarded is not None and chain.steps[: unguarded + 1] not in seen_fields:
            seen_fields.add(chain.steps[: unguarded + 1])
            field = ".".join(str(step) for step in (*base, *chain.steps[: unguarded + 1]))
            said = (
                f"reads {field} unguarded: it is optional, and the expression errors on an object "
                "that omits it (guard it with has(), .? or 'in')"
            )
            yield _at(doc, expression, chain, Severity.WARNING, said)


def _child(node: Any, step: str | int) -> Any:
    """The schema of ``step`` under ``node`` (None: not described)."""
    if not isinstance(node, Mapping):
        return None
    if isinstance(step, int):
        return node.get("items")
    properties = node.get("properties")
    if isinstance(properties, Mapping) and step in properties:
        return properties[step]
    extra = node.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else None


def _unknown(node: Any, steps: Sequence[str | int]) -> int | None:
    """The index of the first step the schema says the type does not have, if any."""
    from kaffinity.validate.schema import KNOWN_FIELDS

    for index, step in enumerate(steps):
        if not isinstance(node, Mapping):
            return None
        known = node.get(KNOWN_FIELDS)
        if isinstance(step, str) and known is not None and step not in known:
            return index
        node = _child(node, step)
    return None


def _unguarded(text: str, chain: Chain, base: DataPath, present: frozenset[DataPath]) -> int | None:
    """The index of the first step of ``chain`` that may be absent and is read without a guard
    (``has(object.…)`` of it, ``.?`` at or before it, ``'name' in object.…``)."""
    for index, step in enumerate(chain.steps):
        if isinstance(step, int):
            return None  # list items: out of range is another matter
        if chain.optional_from is not None and index >= chain.optional_from:
            return None
        path = (*base, *chain.steps[: index + 1])
        if path in present:
            continue
        dotted = ".".join(str(s) for s in chain.steps[: index + 1])
        parent = ".".join(str(s) for s in chain.steps[:index])
        guarded = re.search(rf"has\(\s*object\.{re.escape(dotted)}\s*\)", text) or re.search(
            rf"['\"]{re.escape(str(step))}['\"]\s+in\s+object{re.escape('.' + parent if parent else '')}\b",
            text,
        )
        if guarded:
            continue
        # An earlier guard of this very chain (has() of a longer path counts for its prefix).
        if re.search(rf"has\(\s*object\.{re.escape(dotted)}\.", text):
            continue
        return index
    return None


@cache
def _always_present(version: str, kind: tuple[str, str]) -> frozenset[DataPath]:
    """The fields every stored object of ``kind`` has: the API server's defaults of a minimal
    object, and the fields its validation requires."""
    api_version, name = kind
    minimal: dict[str, Any] = {"apiVersion": api_version, "kind": name, "metadata": {"name": "x"}}
    template = _TEMPLATES.get(kind)
    if template is not None:
        holder: dict[str, Any] = minimal
        for step in template:
            assert isinstance(step, str)
            holder = holder.setdefault(step, {})
        holder.setdefault("spec", {"containers": [{"name": "c", "image": "i"}]})
    stored = defaulted(minimal, version, "default")
    return frozenset(_paths(stored, ())) | frozenset(_REQUIRED)


def _paths(data: Any, path: DataPath) -> Iterator[DataPath]:
    if isinstance(data, Mapping):
        for key, value in data.items():
            yield (*path, key)
            yield from _paths(value, (*path, key))


def _at(doc: Document, expression: Expression, chain: Chain | None, severity: Severity, said: str) -> Problem:
    """A problem at the chain in the expression's text when the file shows it, else at the
    expression's field."""
    span = doc.locate(expression.path)
    if chain is not None:
        before = expression.text[: chain.start]
        line, column = before.count("\n") + 1, chain.start - before.rfind("\n")
        span = place_in_file(doc.file, span, expression.text, line, column) or span
    return Problem(doc.file, span.line, span.column, severity, said)
