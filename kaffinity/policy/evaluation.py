"""A ValidatingAdmissionPolicy's CEL, compiled once and evaluated per object as kube-apiserver
evaluates it (``staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating``): its
validations in order, their messages and messageExpressions, within upstream's
``RuntimeCELCostBudget``, then its auditAnnotations (:mod:`kaffinity.policy.vap` decides which
objects and bindings)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kaffinity.load.source import DataPath
from kaffinity.policy.admission import (
    AdmissionPolicy,
    Expression,
    Validation,
)
from kaffinity.policy.cel.limits import MAX_MESSAGE_BYTES, OUT_OF_BUDGET, RUNTIME_COST_BUDGET
from kaffinity.policy.expressions import (
    ADMISSION_VARIABLES,
    FACTS,
    CompileError,
    EvaluationError,
    Program,
    Programs,
    chains,
    last_cost,
    references,
)
from kaffinity.policy.facts import parts_read

if TYPE_CHECKING:
    pass


#: The longest message a messageExpression may give, in bytes once trimmed: a longer one is
#: dropped for ``message`` (``MaxEvaluatedMessageExpressionSizeBytes``, 5 KiB, in
#: ``staging/src/k8s.io/apiserver/pkg/apis/cel/config.go``; ``validating/validator.go``).
_MAX_MESSAGE = MAX_MESSAGE_BYTES


@dataclass
class Compiled:
    """A policy's expressions, compiled for its variables."""

    conditions: list[tuple[Expression, Program]] = field(default_factory=list)
    variables: list[tuple[Expression, Program]] = field(default_factory=list)
    validations: list[tuple[Validation, Program, Program | None]] = field(default_factory=list)
    #: ``auditAnnotations``: each ``valueExpression`` (its ``name`` the key) and its program
    annotations: list[tuple[Expression, Program]] = field(default_factory=list)
    offline: list[Expression] = field(default_factory=list)  # those that read ``authorizer``
    facts: frozenset[str] = frozenset()  # the parts of ``kaffinity`` the expressions read


def compile_policy(
    policy: AdmissionPolicy, programs: Programs
) -> tuple[Compiled, list[tuple[Expression, CompileError]]]:
    """Every expression of ``policy`` compiled, and those that do not compile."""
    names = [*ADMISSION_VARIABLES, *([FACTS] if policy.kaffinity_only else [])]
    compiled, errors = Compiled(), []

    def build(expression: Expression) -> Program | None:
        if policy.kaffinity_only:
            compiled.facts |= parts_read(expression.text)
        if references(expression.text, "authorizer"):
            compiled.offline.append(expression)
            return None
        try:
            return programs.get(expression.text, names)
        except CompileError as error:
            errors.append((expression, error))
            return None

    for condition in policy.match_conditions:
        program = _typed(condition, build(condition), "bool", errors)
        if program is not None:
            compiled.conditions.append((condition, program))
    for variable in policy.variables:
        program = build(variable)
        if program is not None:
            compiled.variables.append((variable, program))
    for validation in policy.validations:
        program = _typed(validation.expression, build(validation.expression), "bool", errors)
        message = None
        if validation.message_expression:
            message = _typed(
                validation.message_expression, build(validation.message_expression), "string", errors
            )
        if program is not None:
            compiled.validations.append((validation, program, message))
    for annotation in policy.audit_annotations:
        program = _typed(annotation, build(annotation), ANNOTATION_TYPES, errors)
        if program is not None:
            compiled.annotations.append((annotation, program))
    return compiled, errors


#: What a ``valueExpression`` may give: ``AuditAnnotationCondition.ReturnTypes`` (validating/
#: ``interface.go``); the policy's validation compiles it so (``validateAuditAnnotation`` in
#: ``pkg/apis/admissionregistration/validation``) and refuses any other type, ``dyn`` included.
ANNOTATION_TYPES = ("string", "null")


#: The variables upstream declares with a type (``request``, ``namespaceObject``, ``variables``,
#: ``authorizer``), which kaffinity declares dyn.
TYPED = ("request", "namespaceObject", "variables", "authorizer")


def _typed(
    expression: Expression,
    program: Program | None,
    wanted: str | tuple[str, ...],
    errors: list[tuple[Expression, CompileError]],
) -> Program | None:
    """``program`` if the checker types it as ``wanted``: the API server's compiler refuses
    any other result type, ``dyn`` included (``CompileCELExpression`` in
    ``admission/plugin/cel/compile.go``: ``IsExactType`` of the accessor's ``ReturnTypes``),
    so such a policy never exists. ``object``, ``oldObject`` and ``params`` are dyn there as
    here; the others are typed upstream (an AdmissionRequest, a Namespace, each variable by its
    expression in ``composition.go``) and dyn here: an expression that reads one of them is
    taken to have the type wanted."""
    if program is None:
        return None
    found = program.compiled.return_type().name().lower()
    allowed = (wanted,) if isinstance(wanted, str) else wanted
    if found not in allowed and not (
        found == "dyn" and any(references(expression.text, name) for name in TYPED)
    ):
        # compile.go's words: one type as itself, several as cel-go prints the list
        said = (
            wanted if isinstance(wanted, str) else f"one of [{' '.join(_GO_TYPE.get(t, t) for t in wanted)}]"
        )
        errors.append((expression, CompileError(f"must evaluate to {said} but got {found}")))
        return None
    return program


_GO_TYPE = {"null": "null_type"}


def evaluate(
    policy: AdmissionPolicy,
    compiled: Compiled,
    programs: Programs,
    names: Sequence[str],
    data: dict[str, Any],
    bound: Any = None,
    published: dict[str, list[str]] | None = None,
) -> Iterator[tuple[DataPath, str, bool]]:
    """What the validations and audit annotations say of one (object, binding, params): (path,
    message, denies) per failure, ``denies`` when it is an error whatever the binding's
    ``validationActions`` (an audit annotation's error: ``dispatcher.go`` appends it to the
    denied decisions as it is). ``bound``: an activation of ``data`` already made (no
    variables). The validations share upstream's ``RuntimeCELCostBudget``, the audit
    annotations another (``validator.go`` gives each filter the whole budget): past it, the
    policy's decision is that error alone (``Validate`` returns it instead of the decisions).
    ``published``: each annotation key's distinct values so far (the dispatcher's
    ``auditAnnotationCollector``), to which this evaluation's are added."""
    fail = policy.failure_policy == "Fail"
    values: dict[str, str] = {}
    try:
        said = list(_evaluate_within(policy, compiled, programs, names, data, bound, _Budget(), values))
    except _OutOfBudget:
        if fail:
            yield (), OUT_OF_BUDGET, False
        return
    yield from said
    if published is not None:
        for key, value in values.items():
            known = published.setdefault(key, [])
            if value not in known:  # auditAnnotationCollector.add: the same value once
                known.append(value)


class _OutOfBudget(Exception):
    """The expressions of one policy evaluation passed ``RuntimeCELCostBudget``."""


class _Budget:
    """What is left of ``RuntimeCELCostBudget`` for one policy evaluation (activation.go
    subtracts each expression's actual cost)."""

    def __init__(self) -> None:
        self.left = RUNTIME_COST_BUDGET

    def run(self, program: Program, bound: Any) -> Any:
        """``program.run(bound)``, its cost subtracted; :class:`_OutOfBudget` past the budget."""
        try:
            return program.run(bound)
        finally:
            self.left -= last_cost()
            if self.left < 0:
                raise _OutOfBudget


def _evaluate_within(
    policy: AdmissionPolicy,
    compiled: Compiled,
    programs: Programs,
    names: Sequence[str],
    data: dict[str, Any],
    bound: Any,
    budget: _Budget,
    annotations: dict[str, str],
) -> Iterator[tuple[DataPath, str, bool]]:
    fail = policy.failure_policy == "Fail"
    values: dict[str, Any] = {}
    broken: dict[str, str] = {}
    data["variables"] = values
    if bound is None:
        bound = programs.activation(names, data)
    stale = False  # the activation lacks a variable evaluated since it was made
    for expression, program in compiled.variables:
        if stale and "variables" in expression.text:
            bound, stale = programs.activation(names, data), False
        try:
            values[expression.name] = budget.run(program, bound)
        except EvaluationError as error:
            broken[expression.name] = str(error)
        stale = True
    if stale:
        bound = programs.activation(names, data)
    # Every match condition is evaluated (matchconditions/matcher.go, ``Match``): one false skips
    # the policy whatever the others gave; otherwise the errors, together, follow failurePolicy.
    errors = []
    for condition, program in compiled.conditions:
        reads = [name for name in broken if references_variable(condition.text, name)]
        if reads:
            errors.append(_variable_error(condition.text, reads[0], broken[reads[0]]))
            continue
        try:
            if budget.run(program, bound) is False:
                return
        except EvaluationError as error:
            errors.append(f"expression '{condition.text}' resulted in error: {error}")
    if errors:
        if fail:
            # utilerrors.NewAggregate's Error(): the distinct messages, one as itself, several [a, b]
            distinct = list(dict.fromkeys(errors))
            yield (), distinct[0] if len(distinct) == 1 else f"[{', '.join(distinct)}]", False
        return
    yield from _decide(compiled, bound, broken, budget, fail, annotations)


def _decide(
    compiled: Compiled,
    bound: Any,
    broken: Mapping[str, str],
    budget: _Budget,
    fail: bool,
    annotations: dict[str, str],
) -> Iterator[tuple[DataPath, str, bool]]:
    """The validations, then the audit annotations (``validator.go``'s ``Validate``), once the
    match conditions let the policy apply."""
    for validation, program, message_program in compiled.validations:
        said = _validate(validation, program, message_program, bound, broken, budget)
        if said is not None and (fail or not said[1]):
            yield expression_path(validation.expression), said[0], False
    if compiled.annotations:
        yield from _annotate(compiled.annotations, bound, broken, _Budget(), fail, annotations)


#: The longest audit annotation value published, in bytes (``maxAuditAnnotationValueLength``,
#: ``validating/dispatcher.go``: a longer one is cut there).
MAX_ANNOTATION_VALUE = 10 * 1024


def _annotate(
    compiled: Sequence[tuple[Expression, Program]],
    bound: Any,
    broken: Mapping[str, str],
    budget: _Budget,
    fail: bool,
    annotations: dict[str, str],
) -> Iterator[tuple[DataPath, str, bool]]:
    """The audit annotations (``validator.go``, after the validations): a string value, trimmed,
    is published under its key (an empty one is not), null publishes nothing; an error is a
    denial under ``failurePolicy: Fail`` and nothing under ``Ignore``; another type (which the
    API server's compiler refuses, but a ``dyn`` kaffinity lets through may give) is a denial
    under either."""
    for expression, program in compiled:
        text = expression.text
        reads = [name for name in broken if references_variable(text, name)]
        if reads:
            error = _variable_error(text, reads[0], broken[reads[0]])
        else:
            try:
                value = budget.run(program, bound)
            except EvaluationError as failed:
                error = f"expression '{text}' resulted in error: {failed}"
            else:
                if isinstance(value, str):
                    value = value.strip()  # strings.TrimSpace
                    if value:
                        cut = value.encode("utf-8", "surrogatepass")[:MAX_ANNOTATION_VALUE]
                        annotations[expression.name] = cut.decode("utf-8", "replace")
                elif value is not None:
                    yield (
                        expression_path(expression),
                        f"valueExpression '{text}' resulted in unsupported return type: "
                        f"{_cel_type(value)}. Return type must be either string or null.",
                        True,
                    )
                continue
        if fail:
            yield expression_path(expression), error, True


def _cel_type(value: Any) -> str:
    """The CEL type name of an evaluated value, as cel-go prints it."""
    for kind, name in (
        (bool, "bool"),
        (int, "int"),
        (float, "double"),
        (bytes, "bytes"),
        (list, "list"),
        (dict, "map"),
    ):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _validate(
    validation: Validation,
    program: Program,
    message: Program | None,
    bound: Any,
    broken: Mapping[str, str],
    budget: _Budget,
) -> tuple[str, bool] | None:
    """One validation: None when it holds, else what it says and whether it is an error (which
    counts only under ``failurePolicy: Fail``) rather than a false."""
    text = validation.expression.text
    reads = [name for name in broken if references_variable(text, name)]
    if reads:
        return _variable_error(text, reads[0], broken[reads[0]]), True
    try:
        result = budget.run(program, bound)
    except EvaluationError as error:
        # the expression as written (activation.go: GetExpression())
        return f"expression '{text}' resulted in error: {error}", True
    if result is True:
        return None
    if result is not False:
        return f"expression '{text}' must evaluate to bool, not {type(result).__name__}", True
    return _message(validation, message, bound, budget), False


def _variable_error(text: str, name: str, error: str) -> str:
    """An expression that reads a variable whose evaluation failed, as upstream says it: the
    variable's error (``composition.go``) inside the expression's (``activation.go``)."""
    return f"expression '{text}' resulted in error: composited variable \"{name}\" fails to evaluate: {error}"


def references_variable(text: str, name: str) -> bool:
    return re.search(rf"\bvariables\s*\.\s*{re.escape(name)}\b", text) is not None


def _message(validation: Validation, program: Program | None, bound: Any, budget: _Budget) -> str:
    """``messageExpression`` when it gives a one-line, non-empty string of at most 5 KiB
    (trimmed, as ``validator.go`` trims it); else ``message``; else the API server's ``failed
    expression: ...``."""
    if program is not None:
        try:
            said = budget.run(program, bound)
        except EvaluationError:
            said = None
        if isinstance(said, str):
            said = said.strip()
            if said and "\n" not in said and len(said.encode("utf-8", "surrogatepass")) <= _MAX_MESSAGE:
                return said
    # validator.go: the message and the expression, each trimmed (Go's strings.TrimSpace)
    if validation.message and validation.message.strip():
        return validation.message.strip()
    return f"failed expression: {validation.expression.text.strip()}"


def expression_path(expression: Expression) -> DataPath:
    """Where a failed validation (or an audit annotation) points: the first field its
    expression reads of ``object`` (the deepest part of it the manifest writes), else the
    object. (A validation has no ``fieldPath``: that is a CRD validation rule's field.)"""
    for chain in chains(expression.text, "object"):
        if chain:
            return chain
    return ()
