"""Kubernetes 1.29's literal validators: a bad ``duration('1x')``, ``timestamp('x')`` or ``matches('[')``
literal is a compile error, not an evaluation error.

Upstream: ``staging/src/k8s.io/apiserver/pkg/cel/environment/base.go`` adds, from 1.29,
``cel.ASTValidators(cel.ValidateDurationLiterals(), cel.ValidateTimestampLiterals(),
cel.ValidateRegexLiterals(), ...)`` (cel-go ``cel/validator.go``: each evaluates a call whose
argument is a literal and reports "invalid <function> argument" at the argument).

cel-cpp has no such validators and kaffinity has no syntax tree, so the calls are found in the
text: a ``duration``/``timestamp`` call or a ``.matches`` call whose argument is one string
literal, evaluated on its own by cel-cpp (RE2 for the pattern, as upstream).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from cel_expr_python import cel

_LITERAL = r"""[rR]?(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")"""
#: ``duration('...')``/``timestamp('...')`` not a member call, and ``.matches('...')``.
_CALLS = re.compile(
    rf"(?<![\w.])(?P<conversion>duration|timestamp)\(\s*(?P<value>{_LITERAL})\s*\)"
    rf"|\.(?P<member>matches)\(\s*(?P<pattern>{_LITERAL})\s*\)"
)


@dataclass(frozen=True)
class BadLiteral:
    """A literal upstream refuses: the message, and the 0-based offset of the literal."""

    message: str
    offset: int


@lru_cache(maxsize=1)
def _bare() -> cel.Env:
    """An environment with the standard library only, to evaluate one literal call."""
    return cel.NewEnv()


@lru_cache(maxsize=1024)
def _fails(probe: str) -> bool:
    """Whether evaluating ``probe`` (built from one literal) ends in an error."""
    try:
        value = _bare().compile(probe).eval()
    except RuntimeError:
        return True
    return value.type() == cel.Type.ERROR


def bad_literal(text: str) -> BadLiteral | None:
    """The first literal argument in ``text`` that Kubernetes' validators refuse, if any."""
    for call in _CALLS.finditer(text):
        if call.group("conversion"):
            function, literal, offset = call.group("conversion"), call.group("value"), call.start("value")
            probe = f"{function}({literal})"
        else:
            function, literal, offset = "matches", call.group("pattern"), call.start("pattern")
            probe = f"''.matches({literal})"
        if _fails(probe):
            return BadLiteral(f"invalid {function} argument", offset)
    return None
