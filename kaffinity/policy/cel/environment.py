"""The CEL environment of each Kubernetes version, and compiling an expression in it.

Kubernetes builds its environments from ``staging/src/k8s.io/apiserver/pkg/cel/environment/base.go``
(``baseOpts``: each option or library with the version that introduced it). What kaffinity
offers, by Kubernetes minor (none found added after 1.34, up to 1.37):

======  =====================================================================================
 1.27   standard macros and functions; cel-go strings extension version 0 (``charAt``,
        ``indexOf``, ``join``...); Kubernetes ``lists``, ``regex`` and ``urls`` libraries.
        (The ``authorizer`` library, also here, needs a live cluster: not offered.)
 1.28   optional types (``x.?y``, ``optional.of``); cross-type numeric comparisons
        (``1 < 2.5``); the ``quantity`` library.
 1.29   strings extension version 2 (``format``, ``strings.quote``); the ``sets`` extension;
        bad duration, timestamp and regular expression literals are compile errors.
 1.30   the ``ip`` and ``cidr`` libraries.
 1.31   the ``format`` library (authorizer selectors: not offered).
 1.32   two-variable comprehensions (``all(i, v, ...)``, ``transformList``...).
 1.33   the ``semver`` library (its version 1: ``semver(s, true)`` normalises).
 1.34   the lists extension version 3 (``slice``, ``flatten``, ``sort``, ``distinct``,
        ``reverse``, ``lists.range``, ``sortBy``).
 1.37   the Kubernetes lists library version 1 (``<dyn>.includes(<dyn>)``).
======  =====================================================================================

cel-cpp (via cel-expr-python) provides the standard library and the cel-go extensions
(``sets``, ``lists``, ``optional``, two-variable comprehensions, enabled through an environment
config); kaffinity's modules beside this one provide Kubernetes' own libraries and cel-go's
strings extension (:mod:`~kaffinity.policy.cel.strings`, :mod:`~kaffinity.policy.cel.formatting`:
cel-cpp's differs past the end of a string and formats otherwise). What cel-cpp spells
differently (two-variable ``exists_one``, the format library's optionals) is respelled before
compiling (:mod:`~kaffinity.policy.cel.respell`). Each of these was found by the differential
test against kube-apiserver's own environment (tests/differential/test_cel.py, issue 35); what
still differs is listed, with the reason, in tests/differential/differences.yaml (``cel``).

Differences from cel-go's settings in base.go:

* ``CrossTypeNumericComparisons``: cel-cpp's runtime compares int, uint and double with each
  other, but its type checker has no such overloads and declaring them collides with the
  runtime's. An expression whose only type errors are such comparisons is compiled again
  without type checking (:attr:`Compiled.checked` is False); the rest of it was checked by the
  first attempt. Compared through ``dyn`` values (``object.replicas < 2.5``), cel-cpp compares
  across types in every version, where Kubernetes 1.27 ends in a "no such overload" error.
* ``HomogeneousAggregateLiterals`` (and 1.29's ``ValidateHomogeneousAggregateLiterals``):
  cel-cpp accepts ``[1, 'a']``; kaffinity refuses it from the checked syntax tree cel-cpp hands
  out, where the elements' types are known as upstream knows them
  (:mod:`~kaffinity.policy.cel.homogeneous`).
* 1.29's literal validators (``duration('1x')``, ``timestamp('x')``, ``x.matches('[')``) and
  cel-go's ``string.format`` validator (``'%d'.format([1.5])``, too many arguments) are found in
  the text rather than the syntax tree (:mod:`~kaffinity.policy.cel.literals`,
  :mod:`~kaffinity.policy.cel.scan`).
* ``DefaultUTCTimeZone``: cel-cpp's time functions also default to UTC.
* Cost limits: cel-cpp tracks no cost. kaffinity charges its Python functions what upstream's
  cost model does and applies ``PerCallLimit``, cel-cpp stops comprehensions after 10,000
  iterations, and an evaluation has a time limit (:mod:`~kaffinity.policy.cel.limits`,
  :mod:`kaffinity.policy.guard`). The compile-time cost estimate is not computed (kube-apiserver
  does not refuse a ValidatingAdmissionPolicy by it).
* Library functions on lists are declared on ``list(dyn)`` and return ``dyn``, and Kubernetes'
  opaque types are one map type (:mod:`~kaffinity.policy.cel.lists`,
  :mod:`~kaffinity.policy.cel.values`). Where cel-cpp's checked syntax tree gives a list's
  element type, ``sum``/``min``/``max`` are renamed to typed functions (upstream's result type)
  and the functions are refused off their element types, as upstream does when compiling; on a
  ``dyn`` list some type errors upstream reports when compiling are errors here when evaluating.

Speed (measured on this machine): building an environment ~0.6 ms (once per version and
variables), compiling ~0.05 ms, evaluating ~5-20 us once the data is an :func:`activation`.
* ``transformMap`` and ``transformMapEntry`` fail to plan in cel-cpp as packaged (its runtime
  lacks ``cel.@mapInsert``): they are respelled over ``transformList``
  (:mod:`~kaffinity.policy.cel.respell`).
* ``optional.unwrap``/``unwrapOpt`` are in cel-cpp's runtime but not its checker: declared
  here on ``list(dyn)`` (:func:`~kaffinity.policy.cel.lists.unwrap_declarations`). base.go
  enables optional types unversioned (each release gets its cel-go's newest): kaffinity uses
  cel-cpp's optional version 2 (with ``<list>.first()`` and ``last()``) from 1.28, as
  kube-apiserver 1.37's environment admits them in a new expression at 1.28.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_optional

from kaffinity.config import KUBE_VERSIONS
from kaffinity.policy.cel import (
    comparisons,
    formatting,
    homogeneous,
    ip,
    limits,
    lists,
    literals,
    quantity,
    regex,
    respell,
    semver,
    strings,
    urls,
)
from kaffinity.policy.cel import format as named_formats
from kaffinity.policy.cel.convert import activation_data
from kaffinity.policy.cel.library import Library

#: The Kubernetes minors kaffinity knows (1.x), oldest first.
KUBE_MINORS: tuple[int, ...] = tuple(int(version.split(".")[1]) for version in KUBE_VERSIONS)

#: Kubernetes' own libraries, with the minor that introduced each.
LIBRARIES: tuple[Library, ...] = (
    Library("urls", 0, urls.declarations),
    Library("regex", 0, regex.declarations),
    Library("lists", 0, lists.declarations),
    Library("lists.v1", 37, lists.includes_declarations),
    Library("transformMap", 32, lists.transform_map_declarations),
    Library("quantity", 28, lambda: quantity.declarations() + comparisons.declarations()),
    Library("ip", 30, ip.declarations),
    Library("format", 31, named_formats.declarations),
    Library("semver", 33, semver.declarations),
)
#: cel-go's strings extension (base.go: version 0, then version 2 from 1.29), restated in Python
#: (:mod:`~kaffinity.policy.cel.strings`: cel-cpp's differs past the end of a string and in
#: ``format``).
STRINGS = (Library("strings", 0, strings.declarations_v0), Library("strings.v2", 29, strings.declarations_v2))
_STRINGS_V2, _OPTIONAL, _SETS, _FORMATS, _TWO_VARIABLE, _LISTS = 29, 28, 29, 31, 32, 34
_LITERAL_VALIDATORS = 29

#: cel-cpp's own bound on one evaluation's comprehensions, and how kaffinity says it.
_ITERATIONS = "Iteration budget exceeded"
_ITERATIONS_SAID = "kaffinity's CEL engine stops after 10000 comprehension iterations"
_OPTIONAL_RESULT = "the value is an optional, which kaffinity's CEL engine cannot return"
_ERROR = re.compile(r"ERROR: <input>:(\d+):(\d+): (.*)")
_STATUS = re.compile(r"^[A-Z_]+: ")
_NAMED = re.compile(r"(?:undeclared reference to|found no matching overload for) '([^']+)'")
_SYNTAX = re.compile(r"unsupported syntax '([^']+)'")
_NUMBER = "(?:int|uint|double)"
_CROSS_NUMERIC = re.compile(
    rf"found no matching overload for '_(?:<|<=|>|>=)_' applied to '\({_NUMBER}, {_NUMBER}\)'"
)


class CelCompileError(Exception):
    """An expression that does not compile: a one-line message at a 1-based line and column of
    the expression's text."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


class CelEvaluationError(Exception):
    """An expression whose evaluation ended in a CEL error (upstream's runtime error)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Compiled:
    """A compiled expression: evaluate it with :meth:`evaluate` as often as needed."""

    text: str
    kube_version: str
    expression: cel.Expression = field(repr=False)
    #: False when compiled without type checking (see the module's cross-type comparisons).
    checked: bool = True

    def evaluate(self, data: Mapping[str, object] | cel.Activation) -> object:
        """The expression's value, as a plain Python value (opaque Kubernetes values stay the
        maps :mod:`kaffinity.policy.cel.values` describes); :class:`CelEvaluationError` when it
        is a CEL error.

        ``data`` is an :func:`activation` (fastest when several expressions read one object:
        cel-expr-python converts an activation's data once, on first use) or a mapping of
        variable names to plain values (converted again on every call)."""
        seconds = limits.time_limit()
        limits.start(time.process_time() + seconds if seconds else 0.0)
        try:
            if isinstance(data, cel.Activation):
                value = self.expression.eval(data)
            else:
                value = self.expression.eval(data=data)
        except MemoryError:  # cel-cpp's std::bad_alloc under the guard's memory limit
            raise CelEvaluationError(f"{limits.COST_EXCEEDED} (out of memory)") from None
        except (RuntimeError, ValueError) as error:  # data cel-expr-python cannot take (a PosDict),
            # or cel-cpp's std::length_error (``lists.range(-1)``: "vector::reserve")
            message = _STATUS.sub("", str(error)).removesuffix(" [INVALID_ARGUMENT]")
            if message == "vector::reserve":
                message = "a list of negative size (lists.range)"
            if _ITERATIONS in message:
                message = f"{limits.COST_EXCEEDED} ({_ITERATIONS_SAID})"
            raise CelEvaluationError(message) from None
        if limits.finish()[1]:  # a library call passed the limit: cel-go cancels the evaluation
            raise CelEvaluationError(limits.COST_EXCEEDED)
        return result(value)

    def cost(self) -> int:
        """What the last evaluation on this thread was charged (its Kubernetes library calls)."""
        return limits.finish()[0]

    def return_type(self) -> cel.Type:
        """The type the checker gave the expression (``dyn`` when unchecked)."""
        return self.expression.return_type()


def result(value: cel.Value) -> object:
    """A CEL value as plain Python; :class:`CelEvaluationError` for an error value."""
    try:
        if value.type() == cel.Type.ERROR:
            raise CelEvaluationError(_STATUS.sub("", str(value.value())))
        return value.plain_value()
    except (TypeError, RuntimeError, SystemError):  # cel-expr-python cannot convert an optional
        # (typed "error"; inside a list, [optional.none()], its converter raises SystemError)
        raise CelEvaluationError(_OPTIONAL_RESULT) from None


def activation(
    kube_version: str, variables: Mapping[str, cel.Type], data: Mapping[str, Any]
) -> cel.Activation:
    """The data of one evaluation (variable name to a YAML value, made plain by
    :func:`kaffinity.policy.cel.convert.activation_data`) for expressions compiled with the same
    ``kube_version`` and ``variables``: build it once per object, evaluate every expression with it."""
    return environment(kube_version, variables).Activation(activation_data(data))


def minor_of(kube_version: str) -> int:
    """The minor of ``1.N``; ValueError for a version kaffinity does not know."""
    if kube_version not in KUBE_VERSIONS:
        raise ValueError(f"kube-version '{kube_version}' is not one kaffinity knows")
    return int(kube_version.split(".")[1])


def _config(minor: int) -> str:
    """The cel-expr-python environment config naming the cel-go extensions of ``minor``."""
    lines = ["extensions:"]
    if minor >= _SETS:
        lines.append("  - name: sets")
    if minor >= _TWO_VARIABLE:
        lines.append("  - name: two-var-comprehensions")
    if minor >= _LISTS:
        lines.append("  - name: lists")
    return "\n".join(lines) + "\n" if len(lines) > 1 else ""


def _extensions(minor: int) -> list[cel.CelExtensionBase]:
    """cel-cpp's versioned extensions (strings, optional) and Kubernetes' libraries of ``minor``."""
    found: list[cel.CelExtensionBase] = [
        library.extension() for library in STRINGS if library.introduced <= minor
    ]
    if minor >= _OPTIONAL:
        # base.go enables cel.OptionalTypes() unversioned: each release has its cel-go's newest
        # optional library, whose <list>.first()/last() cel-cpp has in its version 2 (the oracle:
        # `[1, 2].first()` compiles as a new expression at 1.28).
        found.append(ext_optional.ExtOptional(version=2))
    found += [library.extension() for library in LIBRARIES if library.introduced <= minor]
    return found


def _build(minor: int, variables: Mapping[str, cel.Type]) -> cel.Env:
    """A new environment (~0.6 ms: hence :func:`environment`'s cache)."""
    config = _config(minor)
    return cel.NewEnv(
        config=cel.NewEnvConfigFromYaml(config) if config else None,
        variables=dict(variables),
        extensions=_extensions(minor),
        # declarations only (cel-cpp's runtime has them): an extension would register no function
        functions=lists.unwrap_declarations() if minor >= _OPTIONAL else None,
    )


_CACHE: dict[tuple[int, tuple[tuple[str, str], ...]], cel.Env] = {}
_LOCK = threading.Lock()


def environment(kube_version: str, variables: Mapping[str, cel.Type]) -> cel.Env:
    """The environment of ``kube_version`` declaring ``variables``: built once per version and
    set of variables (names and types), then shared."""
    minor = minor_of(kube_version)
    key = (minor, tuple(sorted((name, kind.name()) for name, kind in variables.items())))
    found = _CACHE.get(key)
    if found is None:
        with _LOCK:
            found = _CACHE.get(key)
            if found is None:
                found = _CACHE[key] = _build(minor, variables)
    return found


@dataclass(frozen=True)
class _Problem:
    """One of cel-cpp's compile errors."""

    line: int
    column: int
    message: str


def _problems(error: str) -> list[_Problem]:
    """The errors in cel-cpp's message (``ERROR: <input>:L:C: text`` lines, carets left out)."""
    found = []
    for line in error.splitlines():
        match = _ERROR.search(line)
        if match:
            text = match.group(3).replace(" (in container '')", "").removesuffix(" [INVALID_ARGUMENT]")
            found.append(_Problem(int(match.group(1)), int(match.group(2)), text))
    return found


def _try(text: str, kube_version: str, variables: Mapping[str, cel.Type]) -> cel.Expression | str:
    """The compiled expression, or cel-cpp's error text."""
    try:
        return environment(kube_version, variables).compile(_respelled(text, kube_version).text)
    except RuntimeError as error:
        return str(error)


def compile_expression(text: str, kube_version: str, variables: Mapping[str, cel.Type]) -> Compiled:
    """``text`` compiled for ``kube_version``; :class:`CelCompileError` when it does not compile,
    saying which Kubernetes version it needs when a newer one has what it uses."""
    compiled = _try(text, kube_version, variables)
    if not isinstance(compiled, str):
        _refuse_bad_literals(text, kube_version)
        compiled = _checked_tree(text, kube_version, compiled, variables)
        _refuse_bad_formats(text, kube_version, variables)
        return Compiled(text, kube_version, compiled)
    problems = _mapped(_problems(compiled), text, _respelled(text, kube_version))
    if not problems:
        raise CelCompileError(_planning_message(compiled))
    if minor_of(kube_version) >= _OPTIONAL and all(_CROSS_NUMERIC.search(p.message) for p in problems):
        respelled = _respelled(text, kube_version).text
        unchecked = environment(kube_version, variables).compile(respelled, disable_check=True)
        return Compiled(text, kube_version, unchecked, checked=False)
    raise _version_gate(text, kube_version, variables, problems) or CelCompileError(
        problems[0].message, problems[0].line, problems[0].column
    )


def _mapped(problems: list[_Problem], text: str, respelled: respell.Respelled) -> list[_Problem]:
    """``problems`` found in the respelled text, at their places in ``text``."""
    if not respelled.inserted:
        return problems
    lines = respelled.text.split("\n")
    found = []
    for problem in problems:
        offset = sum(len(line) + 1 for line in lines[: problem.line - 1]) + problem.column - 1
        found.append(_Problem(*_position(text, respelled.original_offset(offset)), problem.message))
    return found


def _respelled(text: str, kube_version: str) -> respell.Respelled:
    """``text`` as cel-cpp must read it (:mod:`~kaffinity.policy.cel.respell`)."""
    minor = minor_of(kube_version)
    return respell.respell(text, two_variable=minor >= _TWO_VARIABLE, formats=minor >= _FORMATS)


def _checked_tree(
    text: str, kube_version: str, compiled: cel.Expression, variables: Mapping[str, cel.Type]
) -> cel.Expression:
    """What kaffinity reads in cel-cpp's checked syntax tree (:mod:`~kaffinity.policy.cel.homogeneous`):
    a list or map literal mixing element types is a compile error in every version (base.go's
    ``cel.HomogeneousAggregateLiterals()``), as are lists.go's functions off their element types;
    ``sum``/``min``/``max`` of a list of durations, timestamps, doubles or uints are renamed to
    lists.py's typed functions (upstream's result types) and the expression compiled again."""
    if "[" not in text and "{" not in text and "(" not in text:
        return compiled
    dyn = frozenset(name for name, kind in variables.items() if kind == cel.Type.DYN)
    respelled = _respelled(text, kube_version)
    env = environment(kube_version, variables)

    def fails(checked_expr: bytes) -> str | None:
        """The error of a constant sub-expression, evaluated as cel-go's OptOptimize does."""
        try:
            value = env.deserialize(homogeneous.probe(checked_expr)).eval()
        except RuntimeError:
            return None
        return _STATUS.sub("", str(value.value())) if value.type() == cel.Type.ERROR else None

    found = homogeneous.check(compiled.serialize(), dyn, respelled.is_inserted, fails)
    if found.mixed:
        offset = respelled.original_offset(found.mixed.offset)
        raise CelCompileError(found.mixed.message, *_position(text, offset))
    if not found.typed:
        return compiled
    renamed = respelled.renamed(
        [(call, f"{lists.TYPED_SUFFIX}{element}") for call, element in found.typed if call > 0]
    )
    try:
        typed = environment(kube_version, variables).compile(renamed.text)
    except RuntimeError as error:  # a duration where upstream's checker also refuses one
        problems = _mapped(_problems(str(error)), text, renamed)
        if not problems:
            raise CelCompileError(_planning_message(str(error))) from None
        raise CelCompileError(problems[0].message, problems[0].line, problems[0].column) from None
    again = homogeneous.check(typed.serialize(), dyn, renamed.is_inserted)
    if again.mixed:
        offset = renamed.original_offset(again.mixed.offset)
        raise CelCompileError(again.mixed.message, *_position(text, offset))
    return typed


def _refuse_bad_literals(text: str, kube_version: str) -> None:
    """From 1.29, a literal a duration, timestamp or regular expression cannot be is a compile
    error (:mod:`kaffinity.policy.cel.literals`)."""
    if minor_of(kube_version) < _LITERAL_VALIDATORS:
        return
    bad = literals.bad_literal(text)
    if bad:
        raise CelCompileError(bad.message, *_position(text, bad.offset))


def _refuse_bad_formats(text: str, kube_version: str, variables: Mapping[str, cel.Type]) -> None:
    """From 1.29, cel-go's ``stringFormatValidator`` (strings version 2, ext/formatting.go):
    ``'<literal>'.format([<list literal>])`` whose clauses do not fit the items' checked types, or
    that has too many items, is a compile error (:func:`kaffinity.policy.cel.formatting.check`)."""
    if minor_of(kube_version) < _STRINGS_V2 or ".format" not in text.replace(" ", ""):
        return
    env = environment(kube_version, variables)

    def decode(literal: str) -> str | None:
        try:
            value = env.compile(literal).eval()
        except RuntimeError:
            return None
        found = value.plain_value() if value.type() == cel.Type.STRING else None
        return found if isinstance(found, str) else None

    def kind(item: str) -> str:
        try:
            name = env.compile(_respelled(item, kube_version).text).return_type().name()
        except RuntimeError:  # an item naming a comprehension's variable: not known here
            return "dyn"
        return _KINDS.get(name.split("<")[0], name.split("<")[0].lower())

    refused = formatting.check_literal_calls(text, decode, kind)
    if refused:
        raise CelCompileError(refused[0], *_position(text, refused[1]))


#: cel-cpp's type names as the kinds the format check knows.
_KINDS = {"NULL": "null", "TYPE": "type", "optional_type": "optional_type"}


def _position(text: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of a 0-based offset into ``text``."""
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


def _planning_message(error: str) -> str:
    """An error cel-cpp raised after type checking, when planning the evaluation."""
    if "cel.@mapInsert" in error:
        return "transformMap and transformMapEntry are not supported by kaffinity's CEL engine"
    return _STATUS.sub("", error.splitlines()[0]).removesuffix(" [INVALID_ARGUMENT]")


def _needed_minor(text: str, kube_version: str, variables: Mapping[str, cel.Type]) -> int | None:
    """The oldest newer minor in which ``text`` compiles (type errors aside), if any."""
    for minor in KUBE_MINORS:
        if minor <= minor_of(kube_version):
            continue
        newer = f"1.{minor}"
        compiled = _try(text, newer, variables)
        if not isinstance(compiled, str):
            return minor
        if minor >= _OPTIONAL and all(_CROSS_NUMERIC.search(p.message) for p in _problems(compiled)):
            return minor
    return None


def _version_gate(
    text: str, kube_version: str, variables: Mapping[str, cel.Type], problems: list[_Problem]
) -> CelCompileError | None:
    """The error saying what needs a newer Kubernetes, when a newer one compiles ``text``."""
    needed = _needed_minor(text, kube_version, variables)
    if needed is None:
        return None
    where, subject = problems[0], "this expression"
    named = [(problem, match.group(1)) for problem in problems if (match := _NAMED.search(problem.message))]
    # A two-variable macro's errors name its variables first; a library function is named alone.
    chosen = next(((p, name) for p, name in named if name in _GATED), named[0] if named else None)
    syntax = next(((p, match.group(1)) for p in problems if (match := _SYNTAX.search(p.message))), None)
    if chosen:
        where, name = chosen
        subject = _GATED.get(name, _code)(name)
    elif syntax:
        where, subject = syntax[0], f"the syntax {_code(syntax[1])}"
    two_variable_exists_one = respell.respell(text, two_variable=True, formats=False).text != text
    if two_variable_exists_one and "exists_one" in text and not any(name in _GATED for _, name in named):
        # its errors name only the variables: say which macro (cel-go ext/comprehensions.go)
        line, column = _position(text, text.index("exists_one"))
        where, subject = _Problem(line, column, ""), _GATED["existsOne"]("exists_one")
    message = f"{subject} needs Kubernetes 1.{needed} or later (kube-version is {kube_version})"
    return CelCompileError(message, where.line, where.column)


def _code(name: str) -> str:
    """A name as the version-gate message shows it."""
    return f"`{name}`"


_COMPARISON = {"_<_": "<", "_<=_": "<=", "_>_": ">", "_>=_": ">="}
_MACROS = ("all", "exists", "existsOne", "transformList", "transformMap", "transformMapEntry")
#: The names an error may point at, and how the version-gate message calls them.
_GATED: dict[str, Callable[[str], str]] = {
    **{name: _code for name in ("optional", "hasValue", "orValue", "value", "optMap", "optFlatMap", "or")},
    **{name: _code for name in ("format", "strings", "sets", "lists", "slice", "flatten", "sort", "sortBy")},
    **{name: _code for name in ("distinct", "reverse", "first", "last", "quote")},
    **{name: (lambda name: f"{_code(name)} with two variables") for name in _MACROS},
    **{
        name: (lambda name: f"comparing numbers of different types with {_code(_COMPARISON[name])}")
        for name in _COMPARISON
    },
}
