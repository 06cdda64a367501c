"""An expression's text as cel-cpp must read it to mean what cel-go means, and positions mapped back.

Two things cel-go has that cel-cpp (as cel-expr-python packages it) cannot say directly:

* cel-go's two-variable ``exists_one(k, v, p)`` (``ext/comprehensions.go`` declares both
  ``existsOne`` and ``exists_one`` with three arguments, Kubernetes 1.32): cel-cpp's
  ``exists_one`` takes one variable; it is respelled ``existsOne`` (same length, plus a space).
* The ``format`` library's optionals (``staging/src/k8s.io/apiserver/pkg/cel/library/format.go``:
  ``format.named`` returns ``optional.none()`` for an unknown name, ``<Format>.validate`` returns
  ``optional.none()`` when valid, else ``optional.of(<errors>)``): a Python function cannot return
  a CEL optional, so kaffinity's functions return the value (the errors, ``[]`` when valid; the
  format, ``{}`` when unknown) and each call is wrapped in ``optional.ofNonZeroValue(...)``,
  which is exactly upstream's optional: ``format.dns1123Label().validate(s) == optional.none()``
  and ``.orValue([...])`` compile and answer as upstream.

The wrapping inserts text; :class:`Respelled` maps a position in the respelled text back to the
expression's own, for compile errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kaffinity.policy.cel.scan import skip_literal

_EXISTS_ONE = re.compile(r"\.\s*exists_one\s*\(")
_VALIDATE = re.compile(r"\.\s*validate\s*\(")
_NAMED = re.compile(r"(?<![\w.])format\s*\.\s*named\s*\(")
_WRAP = "optional.ofNonZeroValue("


@dataclass
class Respelled:
    """The respelled text and the insertions made (offset in the original text, length)."""

    text: str
    inserted: list[tuple[int, int]] = field(default_factory=list)

    def original_offset(self, offset: int) -> int:
        """The offset in the expression's own text of ``offset`` in :attr:`text` (inside an
        insertion: where it was inserted)."""
        shift = 0
        for at, length in sorted(self.inserted):
            if offset < at + shift:
                break
            if offset < at + shift + length:
                return at
            shift += length
        return offset - shift


def _literal_spans(text: str) -> list[tuple[int, int]]:
    spans, i = [], 0
    while i < len(text):
        end = skip_literal(text, i)
        if end is None:
            i += 1
        else:
            spans.append((i, end))
            i = end
    return spans


def _in_literal(spans: list[tuple[int, int]], offset: int) -> bool:
    return any(start <= offset < end for start, end in spans)


def _closing(text: str, spans: list[tuple[int, int]], i: int) -> int | None:
    """The offset just past the ``)`` closing the call whose ``(`` ends just before ``i``."""
    depth = 0
    while i < len(text):
        span = next((end for start, end in spans if start == i), None)
        if span is not None:
            i = span
            continue
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            if depth == 0:
                return i + 1
            depth -= 1
        i += 1
    return None


def _name_start(text: str, i: int) -> int:
    """The start of the name (letters, digits, ``_``) ending just before ``i``."""
    while i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"):
        i -= 1
    return i


def _opening(text: str, spans: list[tuple[int, int]], i: int) -> int:
    """The offset of the bracket opening the group whose closing bracket is at ``i - 1``."""
    depth, j = 0, i - 1
    while j >= 0:
        inner = next((start for start, end in spans if end == j + 1), None)
        if inner is not None:
            j = inner - 1
            continue
        if text[j] in ")]}":
            depth += 1
        elif text[j] in "([{":
            depth -= 1
            if depth == 0:
                return j
        j -= 1
    return 0


def _operand_start(text: str, spans: list[tuple[int, int]], i: int) -> int | None:
    """The start of the operand (a literal, a call or index, a name) ending just before ``i``;
    None when none does."""
    literal = next((start for start, end in spans if end == i), None)
    if literal is not None:
        return literal
    if text[i - 1] in ")]":
        return _name_start(text, _opening(text, spans, i))
    if text[i - 1].isalnum() or text[i - 1] == "_":
        return _name_start(text, i)
    return None


def _receiver_start(text: str, spans: list[tuple[int, int]], dot: int) -> int:
    """Where the receiver of the member call at ``dot`` begins: a chain of names, selections
    (``.`` and ``.?``), calls, indexes and literals, read backwards."""
    i = dot
    while True:
        i = len(text[:i].rstrip())
        start = _operand_start(text, spans, i) if i > 0 else None
        if start is None:
            return i
        before = len(text[:start].rstrip())
        if text[before - 1 : before] == ".":
            i = before - 1
        elif text[before - 2 : before] == ".?":
            i = before - 2
        else:
            return start


def respell(text: str, *, two_variable: bool, formats: bool) -> Respelled:
    """``text`` as cel-cpp must read it (see the module): ``two_variable`` from Kubernetes 1.32,
    ``formats`` from 1.31."""
    if not (two_variable and "exists_one" in text) and not (
        formats and ("validate" in text or "named" in text)
    ):
        return Respelled(text)
    spans = _literal_spans(text)
    if two_variable:
        for call in reversed(list(_EXISTS_ONE.finditer(text))):
            if not _in_literal(spans, call.start()) and _top_level_commas(text, spans, call.end()) == 2:
                name = text.index("exists_one", call.start())
                text = text[:name] + "existsOne " + text[name + len("exists_one") :]
    if not formats:
        return Respelled(text)
    wraps: list[tuple[int, int]] = []  # (start, end) of each call to wrap
    for call in _VALIDATE.finditer(text):
        end = _closing(text, spans, call.end())
        if not _in_literal(spans, call.start()) and end is not None:
            wraps.append((_receiver_start(text, spans, call.start()), end))
    for call in _NAMED.finditer(text):
        end = _closing(text, spans, call.end())
        if not _in_literal(spans, call.start()) and end is not None:
            wraps.append((call.start(), end))
    insertions = sorted(
        [(start, _WRAP) for start, _ in wraps] + [(end, ")") for _, end in wraps], reverse=True
    )
    respelled = Respelled(text)
    for at, piece in insertions:
        respelled.text = respelled.text[:at] + piece + respelled.text[at:]
        respelled.inserted.append((at, len(piece)))
    return respelled


def _top_level_commas(text: str, spans: list[tuple[int, int]], i: int) -> int:
    """The commas at the top level of the call whose ``(`` ends just before ``i``."""
    depth = commas = 0
    while i < len(text):
        span = next((end for start, end in spans if start == i), None)
        if span is not None:
            i = span
            continue
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            if depth == 0:
                return commas
            depth -= 1
        elif text[i] == "," and depth == 0:
            commas += 1
        i += 1
    return commas
