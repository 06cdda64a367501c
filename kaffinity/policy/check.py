"""A Policy as a rule: which workloads it matches, what its schema checks, where a finding points.

Each policy becomes a :class:`~kaffinity.rules.base.Rule` of category ``policy``. The rule's
name is the policy's name and its severity the policy's. Its check:

- takes every workload of the input that ``spec.match`` selects;
- finds the target in it: the object, the pod template (``metadata`` and ``spec``) or the pod
  spec, wherever the kind keeps it (a Deployment's ``spec.template``, a CronJob's
  ``spec.jobTemplate.spec.template``, a bare Pod itself, a configured custom kind's). A
  policy therefore never checks the wrong level, as a check on a Deployment's ``spec.affinity``
  would;
- validates the target against the policy's JSON Schema (the validator is built once per run),
  and/or evaluates the policy's CEL ``expression`` with the target as ``object``, defaulted as
  the API server stores it, and ``kaffinity``, what kaffinity knows of the workload
  (:mod:`kaffinity.policy.facts`). A CEL finding points at the first field of ``object`` the
  expression reads (the deepest part of it the manifest writes). An expression that errors on
  a workload is a finding saying so.

ValidatingAdmissionPolicies are rules of their own (:mod:`kaffinity.policy.vap`);
:func:`policy_rules` makes the rules of every policy read, compiling their expressions once.

A workload that breaks the schema gets one finding. It points at the field the schema's most
relevant error names (``jsonschema.exceptions.best_match``), under the target. So a missing
``topologySpreadConstraints`` is reported at the pod spec of that very workload, in a file of
many documents too.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from kaffinity.config import Settings, error_at
from kaffinity.findings import Violation
from kaffinity.k8s.compact import Fields
from kaffinity.k8s.defaults import defaulted
from kaffinity.k8s.model import Workload
from kaffinity.k8s.model.readers import dig
from kaffinity.k8s.selectors import selector_matches
from kaffinity.load.source import DataPath, format_path
from kaffinity.policy.admission import KAFFINITY_ONLY, field_path
from kaffinity.policy.cel.limits import COST_EXCEEDED
from kaffinity.policy.expressions import (
    FACTS,
    CompileError,
    EvaluationError,
    Program,
    Programs,
    chains,
    place_in_file,
    references,
)
from kaffinity.policy.guard import Guarded, begin, guarded, timed
from kaffinity.policy.load import Loaded, Policy
from kaffinity.rules.base import POLICY_CATEGORY, Rule

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

    from kaffinity.context import Context
    from kaffinity.load.source import Document
    from kaffinity.policy.known import Known, PolicyStream

CATEGORY = POLICY_CATEGORY


def reserved_names() -> frozenset[str]:
    """What a policy may not be named: a built-in rule, a category, ``policy`` or ``all``."""
    from kaffinity.rules import CATEGORIES, RULES

    return frozenset({rule.name for rule in RULES} | set(CATEGORIES) | {CATEGORY, "all"})


#: The variables of a kaffinity Policy's expression.
POLICY_VARIABLES = ("object", "namespaceObject", FACTS)


def policy_rules(
    loaded: Loaded, settings: Settings, stream: PolicyStream | None = None
) -> tuple[list[Rule], list[str]]:
    """A rule per policy of ``loaded``, and the expressions that do not compile (errors at their
    line: the policy is left out). Each expression is compiled once, for ``--kube-version``.
    ``stream``: the run streams its policies (:mod:`kaffinity.policy.streamed`): those it names
    run file by file, with what it knows of the input; the others on the compact files."""
    from kaffinity.policy.admission import bindings_of
    from kaffinity.policy.evaluation import compile_policy
    from kaffinity.policy.vap import admission_rule

    programs = Programs(settings.kube_version)
    rules: list[Rule] = []
    errors: list[str] = []
    for policy in loaded.policies:
        program = None
        if policy.expression is not None:
            try:
                program = programs.get(policy.expression, POLICY_VARIABLES)
            except CompileError as error:
                errors.append(_compile_error(policy.doc, ("spec", "expression"), error))
                continue
        known = stream.known if stream is not None and policy.name in stream.per_object else None
        rule = policy_rule(policy, program, programs, known)
        if stream is not None and known is None:
            # Read on the compact files (the facts): what the finding points at is kept whole.
            rule = replace(rule, reads=Fields())
        rules.append(rule)
    bound = bindings_of(loaded.admission, loaded.bindings)
    for admission in loaded.admission:
        compiled, problems = compile_policy(admission, programs)
        if problems:
            errors.extend(
                _compile_error(admission.doc, where.path, _hinted(error)) for where, error in problems
            )
            continue
        known = stream.known if stream is not None and admission.name in stream.per_object else None
        rules.append(
            admission_rule(
                admission, bound[admission.name], compiled, programs, loaded.params, loaded.admission, known
            )
        )
    return rules, errors


def _hinted(error: CompileError) -> CompileError:
    """A ValidatingAdmissionPolicy that reads ``kaffinity`` without the annotation: say how."""
    if "undeclared reference to 'kaffinity" in error.message:
        hint = f'{error.message}; a policy reads it when annotated {KAFFINITY_ONLY}: "true"'
        return CompileError(hint, error.line, error.column)
    return error


def _compile_error(doc: Document, path: DataPath, error: CompileError) -> str:
    """``file:line:column: error: ...`` at the very character of the expression CEL names, when
    the file shows the expression as it reads; else at its field, saying where in it."""
    span = doc.locate(path)
    text = doc.data
    for step in path:
        text = text[step]
    found = place_in_file(doc.file, span, str(text), error.line, error.column)
    if found is not None:
        return error_at(
            doc.file, found, f"{format_path(path)}: the expression does not compile: {error.message}"
        )
    inside = f" (line {error.line}, column {error.column} of the expression)"
    said = f"{format_path(path)}: the expression does not compile{inside}: {error.message}"
    return error_at(doc.file, span, said)


def policy_rule(
    policy: Policy,
    program: Program | None = None,
    programs: Programs | None = None,
    known: Known | None = None,
) -> Rule:
    """The rule that checks ``policy`` (``program``: its compiled expression, if it has one;
    ``known``: the namespaces found before the stream, for a rule run file by file)."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(policy.schema) if policy.schema is not None else None
    valid = _fast(policy.schema) if policy.schema is not None else None

    def check(context: Context) -> Iterator[Violation]:
        if known is not None:
            from kaffinity.policy.vap import seed

            seed(context, known, ())
        for workload in context.inventory.every_workload:
            if not matches(policy, workload) or not begin(workload.doc):
                continue
            path, target = _target(policy, workload)
            if target is None:
                continue
            if validator is not None:
                with timed():  # a schema's ``pattern`` runs Python's re on the manifest
                    found = (
                        None
                        if valid is not None and valid(target)
                        else list(_schema_check(policy, validator, workload, path, target))
                    )
                yield from found or ()
            if program is not None and programs is not None:
                yield from _expression_check(policy, program, programs, context, workload, path)

    def stopped(doc: Document | None, seconds: float) -> Iterator[Violation]:
        """A workload whose check :mod:`kaffinity.policy.guard` stopped."""
        if doc is not None:
            what = "the expression resulted in error" if program is not None else "the schema check"
            said = f"{what}: {COST_EXCEEDED} (it ran over {seconds:g} s)"
            yield Violation(doc, (), f"{policy.message}: {said}")

    def prepare(context: Context) -> None:
        from kaffinity.policy.facts import parts_read
        from kaffinity.policy.vap import prepare_facts

        prepare_facts(context, parts_read(program.text) if program is not None else ())

    from kaffinity.policy.facts import parts_read

    where = f"Defined in `{policy.doc.file}` (a `{policy.target}` policy)."
    docs = f"{policy.description or policy.message}\n\n{where}"
    return Rule(
        name=policy.name,
        category=CATEGORY,
        severity=policy.severity,
        summary=policy.message,
        docs=docs,
        # Run file by file, the guarded process builds the typed objects it reads: not the
        # stage's process, whose typed objects would keep the whole documents alive.
        check=guarded(
            Guarded(check, stopped, own=(policy.doc,), prepare=None if known else prepare, served=bool(known))
        ),
        # What kaffinity knows of a workload (its neighbours, its placement) reads them all.
        needs_all_manifests=program is not None and references(program.text, FACTS),
        streams=known is not None,
        # Its expression and schema read the object as written, any field of it: no compact
        # model holds what it reads, so a run with policies reads its input whole.
        reads=None,
        reads_findings=program is not None and "findings" in parts_read(program.text),
    )


def _fast(schema: Any) -> Any:
    """The schema's closure (:mod:`kaffinity.validate.fastschema`): a quick yes for the valid
    targets, the many; jsonschema runs only on a no. None: a keyword it does not handle."""
    from kaffinity.validate.fastschema import Unsupported, compile_schema

    try:
        return compile_schema(schema, {})
    except Unsupported:
        return None


def _schema_check(
    policy: Policy, validator: Any, workload: Workload, path: DataPath, target: Any
) -> Iterator[Violation]:
    from jsonschema.exceptions import best_match
    from referencing.exceptions import Unresolvable

    try:
        error = best_match(validator.iter_errors(target))
    except (RecursionError, Unresolvable) as problem:  # a schema the load-time probe let by
        said = f"{policy.message}: the policy's schema cannot be evaluated ({problem!r:.80})"
        yield Violation(workload.doc, path, said)
        return
    if error is None:
        return
    at: DataPath = (*path, *error.absolute_path)
    yield Violation(workload.doc, at, f"{policy.message}: {_said(error)}")


def _expression_check(
    policy: Policy, program: Program, programs: Programs, context: Context, workload: Workload, path: DataPath
) -> Iterator[Violation]:
    """The policy's expression on one workload's target: false is a finding at the first field
    it reads, an error a finding saying so."""
    from kaffinity.policy.facts import facts, parts_read
    from kaffinity.policy.vap import namespace_object, shared

    ref = workload.ref
    target = None
    if references(program.text, "object"):  # not made for an expression that never reads it
        objects = shared(context).objects.defaulted
        whole = objects.get(id(workload.doc))
        if whole is None:
            whole = objects[id(workload.doc)] = defaulted(
                workload.doc.data, programs.kube_version, ref.namespace
            )
        target = dig(whole, path) if path else whole
    data = {
        "object": target,
        "namespaceObject": namespace_object(context, ref.namespace),
        FACTS: facts(context, workload.doc, parts_read(program.text)),
    }
    bound = programs.activation(POLICY_VARIABLES, data)
    try:
        result = program.run(bound)
    except EvaluationError as error:
        yield Violation(workload.doc, path, f"{policy.message}: the expression resulted in error: {error}")
        return
    if result is True:
        return
    if result is not False:
        said = f"the expression must evaluate to bool, not {type(result).__name__}"
        yield Violation(workload.doc, path, f"{policy.message}: {said}")
        return
    chain = field_path(policy.field_path) if policy.field_path else None
    if chain is None:
        chain = next((found for found in chains(program.text, "object") if found), ())
    yield Violation(workload.doc, (*path, *chain), policy.message)


def matches(policy: Policy, workload: Workload) -> bool:
    """Whether ``spec.match`` selects ``workload``: every condition given holds."""
    ref = workload.ref
    if policy.kinds is not None and ref.kind not in policy.kinds:
        return False
    if policy.namespaces is not None and ref.namespace not in policy.namespaces:
        return False
    if policy.min_replicas is not None and (
        workload.replicas is None or workload.replicas < policy.min_replicas
    ):
        return False
    if policy.selector is not None:
        labels = dig(workload.doc.data, ("metadata", "labels"))
        own = {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}
        return selector_matches(policy.selector, own)
    return True


def _target(policy: Policy, workload: Workload) -> tuple[DataPath, Any]:
    """The path of the policy's target in the workload's document, and the value there (None
    when the workload has none: a template without a spec)."""
    if policy.target == "object":
        path: DataPath = ()
    elif policy.target == "podTemplate":
        path = workload.template_path
    else:
        path = workload.pod.spec_path
    value = dig(workload.doc.data, path) if path else workload.doc.data
    return path, value if isinstance(value, dict) else None


#: The longest account of a schema error in a message; jsonschema quotes the whole value.
_MAX_SAID = 160


def _said(error: ValidationError) -> str:
    """What the schema found, in a line: jsonschema's own words, except where they repeat the
    whole value (``contains``: the list; long values: cut)."""
    if error.validator == "contains" and isinstance(error.instance, list):
        return f"none of its {len(error.instance)} items matches the policy's schema"
    said = error.message
    return said if len(said) <= _MAX_SAID else said[: _MAX_SAID - 3] + "..."
