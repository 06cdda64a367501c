"""cel-go's strings extension as Kubernetes enables it: version 0 up to 1.28, version 2 from 1.29.

Upstream: ``staging/src/k8s.io/apiserver/pkg/cel/environment/base.go`` enables
``ext.Strings(ext.StringsVersion(0))`` before 1.29 and ``ext.Strings(ext.StringsVersion(2))`` from
1.29; the functions are cel-go's ``ext/strings.go`` (``charAt``, ``indexOfOffset``,
``lastIndexOfOffset``, ``lowerASCII``, ``replaceN``, ``splitN``, ``substr``, ``substrRange``,
``trimSpace``, ``upperASCII``, ``joinValSeparator``, ``quote``), version 1's ``format`` and
``strings.quote`` (:mod:`~kaffinity.policy.cel.formatting`) and version 2's ``join``.

cel-cpp's strings extension differs from cel-go's where offsets pass the end of the string
(cel-go answers -1, or the string's length for an empty substring: ``'abc'.indexOf('c', 4)`` is -1,
``'tacocat'.indexOf('', 30)`` is 7) and in ``split('')`` of an empty string (``[]``), and its
``format`` is cel-cpp's own, so kaffinity declares all of them here instead (differential test:
tests/differential/test_cel.py). Strings are sequences of code points, as Go's ``[]rune``.
"""

from __future__ import annotations

from collections.abc import Sequence

from cel_expr_python import cel

from kaffinity.policy.cel import formatting
from kaffinity.policy.cel.library import functions, overload

T = cel.Type
#: Go's ``unicode.IsSpace`` (what ``strings.TrimSpace`` trims): Python's ``str.strip()`` also
#: trims U+001C..U+001F, which Go keeps.
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def _out_of_range(index: int) -> ValueError:
    return ValueError(f"index out of range: {index}")


def char_at(text: str, index: int) -> str:
    """``charAt``: the code point at ``index``; ``''`` at the end; an error past it."""
    if index < 0 or index > len(text):
        raise _out_of_range(index)
    return text[index] if index < len(text) else ""


def index_of(text: str, sub: str, offset: int = 0) -> int:
    """``indexOfOffset``: -1 when ``offset`` is at or past the end (the empty string: the offset,
    clamped to the end); an error for a negative offset."""
    if offset < 0:
        raise _out_of_range(offset)
    if sub == "":
        return min(offset, len(text))
    if offset >= len(text):
        return -1
    return text.find(sub, offset)


def last_index_of(text: str, sub: str, *offset: int) -> int:
    """``lastIndexOf``/``lastIndexOfOffset``: the last match starting at or before ``offset``."""
    if not offset:
        if sub == "":
            return len(text)
        if len(text.encode()) < len(sub.encode()):  # Go compares the byte lengths here
            return -1
        start = len(text) - 1
    else:
        start = offset[0]
        if start < 0:
            raise _out_of_range(start)
        if sub == "":
            return min(start, len(text))
    if start >= len(text):
        return -1
    start = min(start, len(text) - len(sub))
    if start < 0:
        return -1
    return text.rfind(sub, 0, start + len(sub))


def _ascii(text: str, convert: str) -> str:
    return "".join(getattr(c, convert)() if c < "\x80" else c for c in text)


def lower_ascii(text: str) -> str:
    return _ascii(text, "lower")


def upper_ascii(text: str) -> str:
    return _ascii(text, "upper")


def replace(text: str, old: str, new: str, count: int = -1) -> str:
    """Go's ``strings.Replace`` (a negative count: every match)."""
    return text.replace(old, new, count if count >= 0 else -1)


def split(text: str, separator: str, count: int = -1) -> list[str]:
    """Go's ``strings.SplitN``: ``count`` 0 gives ``[]``, a negative one every part; an empty
    separator splits into code points (and an empty string into ``[]``)."""
    if count == 0:
        return []
    if separator == "":
        parts = list(text)
        if 0 < count < len(parts):
            parts = [*parts[: count - 1], "".join(parts[count - 1 :])]
        return parts
    return text.split(separator, count - 1 if count > 0 else -1)


def substring(text: str, start: int, *end: int) -> str:
    """``substr``/``substrRange``."""
    if end:
        stop = end[0]
        if start > stop:
            raise ValueError(f"invalid substring range. start: {start}, end: {stop}")
        for index in (start, stop):
            if index < 0 or index > len(text):
                raise _out_of_range(index)
        return text[start:stop]
    if start < 0 or start > len(text):
        raise _out_of_range(start)
    return text[start:]


def trim(text: str) -> str:
    return text.strip(_GO_SPACE)


def join(items: Sequence[object], separator: str = "") -> str:
    """``joinValSeparator``: every item must be a string."""
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"join: invalid input: {formatting.go_text(item)}")
    return separator.join(items)  # type: ignore[arg-type]


def quote(text: str) -> str:
    """``strings.quote``: CEL's escapes for ``\\a \\b \\f \\n \\r \\t \\v \\\\ "``, the rest as is."""
    escapes = {
        "\a": "\\a",
        "\b": "\\b",
        "\f": "\\f",
        "\n": "\\n",
        "\r": "\\r",
        "\t": "\\t",
        "\v": "\\v",
        "\\": "\\\\",
        '"': '\\"',
    }
    return '"' + "".join(escapes.get(c, c) for c in text) + '"'


def declarations_v0() -> list[cel.FunctionDecl]:
    """Version 0's functions (every Kubernetes version): ``charAt`` ... ``upperAscii``, ``join``."""
    S, N = T.STRING, T.INT
    return functions(
        {
            "charAt": [overload("string_char_at_int", S, [S, N], char_at, member=True)],
            "indexOf": [
                overload("string_index_of_string", N, [S, S], index_of, member=True),
                overload("string_index_of_string_int", N, [S, S, N], index_of, member=True),
            ],
            "lastIndexOf": [
                overload("string_last_index_of_string", N, [S, S], last_index_of, member=True),
                overload("string_last_index_of_string_int", N, [S, S, N], last_index_of, member=True),
            ],
            "lowerAscii": [overload("string_lower_ascii", S, [S], lower_ascii, member=True)],
            "upperAscii": [overload("string_upper_ascii", S, [S], upper_ascii, member=True)],
            "replace": [
                overload("string_replace_string_string", S, [S, S, S], replace, member=True),
                overload("string_replace_string_string_int", S, [S, S, S, N], replace, member=True),
            ],
            "split": [
                overload("string_split_string", T.List(S), [S, S], split, member=True),
                overload("string_split_string_int", T.List(S), [S, S, N], split, member=True),
            ],
            "substring": [
                overload("string_substring_int", S, [S, N], substring, member=True),
                overload("string_substring_int_int", S, [S, N, N], substring, member=True),
            ],
            "trim": [overload("string_trim", S, [S], trim, member=True)],
            "join": [
                overload("list_join", S, [T.List(S)], join, member=True),
                overload("list_join_string", S, [T.List(S), S], join, member=True),
            ],
        }
    )


def declarations_v2() -> list[cel.FunctionDecl]:
    """Version 1's ``format`` and ``strings.quote`` (from Kubernetes 1.29)."""
    S = T.STRING
    return functions(
        {
            "format": [overload("string_format", S, [S, T.List(T.DYN)], formatting.format_call, member=True)],
            "strings.quote": [overload("strings_quote", S, [S], quote)],
        }
    )
