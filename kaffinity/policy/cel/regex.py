"""Kubernetes' regex library (every version): ``'abc 123'.find('[0-9]+')``, ``findAll(re[, limit])``.

Upstream: ``staging/src/k8s.io/apiserver/pkg/cel/library/regex.go`` over Go's ``regexp``
(RE2: ``FindString``, ``FindAllString``), which matches in time linear in the text.

kaffinity matches with RE2 itself (Google's ``google-re2`` binding, the C++ library Go's
``regexp`` restates), never with Python's backtracking :mod:`re`: a pattern such as
``^([a-z0-9]+-?)+$`` against a 40-character hostile name takes microseconds, as upstream. A
pattern is first compiled by cel-cpp's own ``matches`` (RE2 too), so what it refuses
(back-references, look-arounds, possessive quantifiers) is the same error as in ``matches``.
RE2's syntax is Go's: ``$`` is the end of the text, ``\\z``, ``\\pL`` and ``\\s`` (without
``\\v``) are Go's. ``findAll`` skips an empty match right after a match, as Go's
``FindAllString`` does.

Memory: each compiled pattern may use RE2's default budget (8 MiB, ``max_mem``; past it RE2
falls back from its DFA to its NFA, still linear); at most :data:`_CACHED` patterns are kept.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from cel_expr_python import cel

from kaffinity.policy.cel import limits
from kaffinity.policy.cel.library import functions, overload

T = cel.Type
#: Compiled patterns kept (each may hold up to RE2's ``max_mem`` of automata).
_CACHED = 64
#: RE2's own default (``RE2::Options::kDefaultMaxMem``): what a pattern's automata may use.
_MAX_MEM = 8 << 20


@lru_cache(maxsize=1)
def _re2_checker() -> cel.Expression:
    """An expression that compiles ``pattern`` with RE2 (cel-cpp's ``matches``)."""
    env = cel.NewEnv(variables={"pattern": T.STRING})
    return env.compile("''.matches(pattern)")


@lru_cache(maxsize=1)
def _options() -> Any:
    """RE2's options as Go's ``regexp.Compile`` has them (Perl classes, leftmost-first)."""
    import re2

    options = re2.Options()
    options.max_mem = _MAX_MEM
    options.log_errors = False
    return options


@lru_cache(maxsize=_CACHED)
def compile_pattern(pattern: str) -> Any:
    """The pattern compiled by RE2 (a ``re2`` regular expression: ``search``, ``finditer``);
    ValueError, as upstream's error, when RE2 refuses it."""
    checked = _re2_checker().eval(data={"pattern": pattern})
    if checked.type() == T.ERROR:
        message = str(checked.value()).split(": ", 1)[-1]
        raise ValueError(message)
    import re2

    try:
        return re2.compile(pattern, _options())
    except re2.error as error:  # e.g. a program larger than max_mem
        raise ValueError(f"error parsing regexp: {error}") from None


def find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    """Go's ``FindAllString(text, limit)``: every match (at most ``limit`` when not negative)."""
    found: list[str] = []
    compiled = compile_pattern(pattern)  # regex.go compiles first: a bad pattern fails even at 0
    if limit == 0:
        return found
    previous_end = -1
    for match in compiled.finditer(text):
        if limit >= 0 and len(found) >= limit:
            break
        # Each match is linear in the text, but a text may hold as many matches as characters:
        # past the evaluation's deadline, stop (the cost-limit error).
        limits.check_time()
        start, end = match.span()
        if start == end and start == previous_end:
            continue
        previous_end = end
        found.append(match.group(0))
    return found


def _find(text: str, pattern: str) -> str:
    """``<string>.find(pattern)``: the first match, or ''."""
    match = compile_pattern(pattern).search(text)
    return str(match.group(0)) if match else ""


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
