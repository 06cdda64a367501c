"""Kubernetes' regex library (every version): ``'abc 123'.find('[0-9]+')``, ``findAll(re[, limit])``.

Upstream: ``staging/src/k8s.io/apiserver/pkg/cel/library/regex.go`` over Go's ``regexp``
(RE2 syntax; ``FindString``, ``FindAllString``).

kaffinity matches with Python's :mod:`re` after checking the pattern with RE2 itself: cel-cpp's
``matches`` compiles with RE2, so a pattern RE2 refuses (back-references, look-arounds,
possessive quantifiers) is an error here as upstream. What remains different where both accept
a pattern: Python's ``$`` also matches before a final newline (RE2's only at the very end),
Python has no ``\\pL``-style Unicode classes, and Go's ``\\s`` does not include ``\\v``. RE2's
``\\z`` is given to Python as ``\\Z``. ``findAll`` skips an empty match right after a match,
as Go's ``FindAllString`` does (Python reports it).
"""

from __future__ import annotations

import re
from functools import lru_cache

from cel_expr_python import cel

from kaffinity.policy.cel.library import functions, overload

T = cel.Type
#: RE2's end-of-text ``\z`` (an odd number of backslashes before ``z``), Python's ``\Z``.
_PYTHON_END = re.compile(r"((?:^|[^\\])(?:\\\\)*)\\z")


@lru_cache(maxsize=1)
def _re2_checker() -> cel.Expression:
    """An expression that compiles ``pattern`` with RE2 (cel-cpp's ``matches``)."""
    env = cel.NewEnv(variables={"pattern": T.STRING})
    return env.compile("''.matches(pattern)")


@lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """The pattern, refused as upstream when RE2 refuses it."""
    checked = _re2_checker().eval(data={"pattern": pattern})
    if checked.type() == T.ERROR:
        message = str(checked.value()).split(": ", 1)[-1]
        raise ValueError(message)
    try:
        return re.compile(_PYTHON_END.sub(r"\1\\Z", pattern))
    except re.error as error:
        raise ValueError(f"error parsing regexp: {error}") from None


def find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    """Go's ``FindAllString(text, limit)``: every match (at most ``limit`` when not negative)."""
    found: list[str] = []
    previous_end = -1
    for match in compile_pattern(pattern).finditer(text):
        if limit >= 0 and len(found) >= limit:
            break
        if match.start() == match.end() and match.start() == previous_end:
            continue
        previous_end = match.end()
        found.append(match.group(0))
    return found


def _find(text: str, pattern: str) -> str:
    """``<string>.find(pattern)``: the first match, or ''."""
    match = compile_pattern(pattern).search(text)
    return match.group(0) if match else ""


def declarations() -> list[cel.FunctionDecl]:
    """regex.go's functions."""
    strings = T.List(T.STRING)
    return functions(
        {
            "find": [overload("string_find_string", T.STRING, [T.STRING, T.STRING], _find, member=True)],
            "findAll": [
                overload("string_find_all_string", strings, [T.STRING, T.STRING], find_all, member=True),
                overload(
                    "string_find_all_string_int", strings, [T.STRING, T.STRING, T.INT], find_all, member=True
                ),
            ],
        }
    )
