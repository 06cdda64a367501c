"""Policies' CEL expressions: compiled once per run, run against one activation per object.

The CEL environment (Kubernetes' libraries per version) is :mod:`kaffinity.policy.cel`'s; this
module is what the policies use of it:

- :func:`compile_cel` compiles an expression for the variables a policy has, once per run
  (:class:`Programs` keeps them), and raises :class:`CompileError` with the line and column
  inside the expression;
- :func:`activation` binds the variables of one evaluation (an object is converted once for all
  the expressions that read it, never once per expression);
- :meth:`Program.run` evaluates: a value, or the error CEL gave (a missing field, a bad
  conversion), which the caller treats as ``failurePolicy`` says.

The engine is imported here and only here, when a policy has an expression: a lint without
policies never loads it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from kaffinity.load.source import Span
from kaffinity.policy import guard

#: The variables of a ValidatingAdmissionPolicy's expressions (``authorizer`` is declared so
#: that an expression using it compiles; kaffinity cannot evaluate it offline).
ADMISSION_VARIABLES = (
    "object",
    "oldObject",
    "request",
    "params",
    "namespaceObject",
    "variables",
    "authorizer",
)
#: kaffinity's own variable: what kaffinity knows of an object (:mod:`kaffinity.policy.facts`).
FACTS = "kaffinity"


class CompileError(Exception):
    """An expression that does not compile; ``line`` and ``column`` count from 1 in its text."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


class EvaluationError(Exception):
    """What CEL said when an expression errored."""


def last_cost() -> int:
    """What the last evaluation on this thread was charged (upstream's cost of the Kubernetes
    library calls it made: :mod:`kaffinity.policy.cel.limits`)."""
    from kaffinity.policy.cel.limits import finish

    return finish()[0]


@dataclass
class Program:
    """A compiled expression."""

    text: str
    compiled: Any

    def run(self, bound: Any) -> Any:
        """The expression's value for ``bound`` (:meth:`Programs.activation`); raises
        :class:`EvaluationError` for a CEL error."""
        from kaffinity.policy.cel.environment import CelEvaluationError

        worker = guard.NOW.worker  # in a guarded process: the time limit's clock runs meanwhile
        if worker is not None:
            worker.evaluating(True)
        try:
            return self.compiled.evaluate(bound)
        except CelEvaluationError as error:
            raise EvaluationError(error.message) from None
        finally:
            if worker is not None:
                worker.evaluating(False)


@dataclass
class Programs:
    """The programs of one run, by (expression, variables): each compiled once."""

    kube_version: str
    compiled: dict[tuple[str, tuple[str, ...]], Program | CompileError] = field(default_factory=dict)
    environments: dict[tuple[str, ...], Any] = field(default_factory=dict)

    def get(self, text: str, names: Collection[str]) -> Program:
        key = (text, tuple(sorted(names)))
        found = self.compiled.get(key)
        if found is None:
            try:
                found = compile_cel(text, self.kube_version, key[1])
            except CompileError as error:
                found = error
            self.compiled[key] = found
        if isinstance(found, CompileError):
            raise found
        return found

    def activation(self, names: Collection[str], data: Mapping[str, Any]) -> Any:
        """One object's variables for the expressions compiled with ``names``. The values are
        plain data already (:func:`kaffinity.k8s.defaults.plain`): they are handed to CEL as they
        are, and CEL converts them once, on first use, for every expression run with it."""
        key = tuple(names)
        env = self.environments.get(key)
        if env is None:
            from kaffinity.policy.cel.environment import environment

            env = self.environments[key] = environment(self.kube_version, _types(tuple(sorted(names))))
        return env.Activation(data if type(data) is dict else dict(data))


@cache
def _types(names: tuple[str, ...]) -> Mapping[str, Any]:
    """The declarations of ``names``: all ``dyn``, as Kubernetes declares an object it has no
    schema for (the expression's types are checked when it runs)."""
    from cel_expr_python import cel

    return dict.fromkeys(names, cel.Type.DYN)


def compile_cel(text: str, kube_version: str, names: Collection[str]) -> Program:
    """``text`` compiled for ``names`` at ``kube_version``; :class:`CompileError` if it does not."""
    from kaffinity.policy.cel.environment import CelCompileError, compile_expression

    try:
        return Program(text, compile_expression(text, kube_version, _types(tuple(sorted(names)))))
    except CelCompileError as error:
        raise CompileError(error.message, error.line, error.column) from None


#: ``object.spec.template`` and ``object.?spec.?replicas``, ``object.spec.containers[0]``,
#: ``object.metadata.labels['app']``: an access chain from a root variable.
_CHAIN = re.compile(
    r"""(?<![\w.])(?P<root>[A-Za-z_]\w*)(?P<steps>(?:\s*\.\??\s*[A-Za-z_]\w*\b(?!\s*\()|\s*\[\s*(?:\d+|'[^']*'|"[^"]*")\s*\])+)"""
)
_STEP = re.compile(r"""\.\??\s*([A-Za-z_]\w*)|\[\s*(\d+|'[^']*'|"[^"]*")\s*\]""")


@dataclass(frozen=True)
class Chain:
    """An access chain from a root variable: its steps, where it starts in the text, and the
    first step read with ``.?`` (optional: absent is no error), if any."""

    steps: tuple[str | int, ...]
    start: int
    optional_from: int | None = None


def chain_spans(text: str, root: str) -> list[Chain]:
    """The access chains from ``root`` in ``text``, in order. A step followed by ``(`` is a
    method call, not a field."""
    out = []
    for match in _CHAIN.finditer(text):
        if match.group("root") != root:
            continue
        steps: list[str | int] = []
        optional = None
        for step in _STEP.finditer(match.group("steps")):
            name, index = step.group(1), step.group(2)
            if name is not None:
                if optional is None and step.group(0).startswith(".?"):
                    optional = len(steps)
                steps.append(name)
            elif index[0] in "'\"":
                steps.append(index[1:-1])
            else:
                steps.append(int(index))
        out.append(Chain(tuple(steps), match.start(), optional))
    return out


def chains(text: str, root: str) -> list[tuple[str | int, ...]]:
    """The steps of each access chain from ``root``: ``object.spec.replicas`` gives
    ``("spec", "replicas")``."""
    return [chain.steps for chain in chain_spans(text, root)]


def references(text: str, name: str) -> bool:
    """Whether ``text`` names the identifier ``name`` (outside of a field access)."""
    return re.search(rf"(?<![\w.]){re.escape(name)}\b", text) is not None


def place_in_file(file: str, span: Span, text: str, line: int, column: int) -> Span | None:
    """Where line ``line``, column ``column`` (1-based) of the expression ``text`` is in the
    file, the expression's field being at ``span``: it starts on that line, or on the next one
    for a block scalar (``|``, ``>``). None when the file does not show the text as it reads (a
    folded scalar, escapes in quotes): the caller points at the field."""
    import linecache

    lines = text.splitlines()
    if not lines or not lines[0].strip() or not 0 < line <= len(lines):
        return None
    wanted = lines[line - 1]
    for start in (span.line, span.line + 1):
        if lines[0].strip() in linecache.getline(file, start):
            at = linecache.getline(file, start + line - 1).find(wanted.strip())
            if at < 0:
                return None
            skipped = len(wanted) - len(wanted.lstrip())
            return Span(start + line - 1, at + column - skipped)
    return None
