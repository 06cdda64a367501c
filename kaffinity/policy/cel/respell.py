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

* cel-go's ``transformMap(k, v, [filter,] value)`` and ``transformMapEntry(k, v, [filter,] entry)``
  (``ext/comprehensions.go``, 1.32): cel-cpp as packaged cannot plan them (its runtime lacks
  ``cel.@mapInsert``), so they become ``kaffinity.mapOf(<receiver>.transformList(k, v, [filter,]
  [k, value]))`` and ``kaffinity.mapOfMaps(<receiver>.transformList(k, v, [filter,] entry))``,
  whose Python functions build the map and refuse a key twice as cel-go does ("insert failed: key
  1 already exists").

The rewriting inserts text; :class:`Respelled` maps a position in the respelled text back to the
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
_TRANSFORM_MAP = re.compile(r"\.\s*(transformMapEntry|transformMap)\s*\(")
#: The Python functions that build the map (kaffinity/policy/cel/lists.py, from 1.32).
MAP_OF, MAP_OF_MAPS = "kaffinity.mapOf", "kaffinity.mapOfMaps"


@dataclass
class Respelled:
    """The respelled text and, per rewriting stage, the insertions it made (offset in that stage's
    input text, length)."""

    text: str
    stages: list[list[tuple[int, int]]] = field(default_factory=list)

    @property
    def inserted(self) -> bool:
        return any(self.stages)

    def original_offset(self, offset: int) -> int:
        """The offset in the expression's own text of ``offset`` in :attr:`text` (inside an
        insertion: where it was inserted)."""
        for stage in reversed(self.stages):
            offset = _before(stage, offset)
        return offset

    def renamed(self, calls: list[tuple[int, str]]) -> Respelled:
        """:attr:`text` with ``suffix`` added to the name of each call whose ``(`` is at the offset
        (lists.py's typed ``sum``/``min``/``max``), as one more stage."""
        text, inserted = self.text, []
        for call, suffix in sorted(calls, reverse=True):
            end = call
            while end > 0 and text[end - 1].isspace():
                end -= 1
            text = text[:end] + suffix + text[end:]
            inserted.append((end, len(suffix)))
        return Respelled(text, [*self.stages, inserted])

    def is_inserted(self, offset: int) -> bool:
        """Whether ``offset`` in :attr:`text` is inside text the respelling inserted."""
        for stage in reversed(self.stages):
            offset, inside = _locate(stage, offset)
            if inside:
                return True
        return False


def _before(inserted: list[tuple[int, int]], offset: int) -> int:
    """``offset`` in the text before ``inserted`` were made."""
    return _locate(inserted, offset)[0]


def _locate(inserted: list[tuple[int, int]], offset: int) -> tuple[int, bool]:
    """``offset`` in the text before ``inserted`` were made, and whether it fell inside one of
    them (then the offset where that insertion was made)."""
    shift = 0
    for at, length in sorted(inserted):
        if offset < at + shift:
            break
        if offset < at + shift + length:
            return at, True
        shift += length
    return offset - shift, False


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
    arguments = _arguments(text, spans, i)
    return arguments[-1][1] + 1 if arguments else None


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
    if text[i - 1] in ")]}":
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
    respelled = Respelled(text)
    if two_variable and "exists_one" in text:
        respelled.text = _exists_one(text)
    if two_variable and "transformMap" in text:
        _transform_maps(respelled)
    if formats and ("validate" in text or "named" in text):
        _wrap_format_calls(respelled)
    return respelled


def _exists_one(text: str) -> str:
    """Two-variable ``exists_one`` as cel-cpp's ``existsOne`` (same length)."""
    spans = _literal_spans(text)
    for call in reversed(list(_EXISTS_ONE.finditer(text))):
        if not _in_literal(spans, call.start()) and _top_level_commas(text, spans, call.end()) == 2:
            name = text.index("exists_one", call.start())
            text = text[:name] + "existsOne " + text[name + len("exists_one") :]
    return text


def _wrap_format_calls(respelled: Respelled) -> None:
    """Each ``<Format>.validate(...)`` and ``format.named(...)`` wrapped in ``optional.ofNonZeroValue``."""
    text = respelled.text
    spans = _literal_spans(text)
    wraps: list[tuple[int, int]] = []  # (start, end) of each call to wrap
    for call in _VALIDATE.finditer(text):
        end = _closing(text, spans, call.end())
        if not _in_literal(spans, call.start()) and end is not None:
            wraps.append((_receiver_start(text, spans, call.start()), end))
    for call in _NAMED.finditer(text):
        end = _closing(text, spans, call.end())
        if not _in_literal(spans, call.start()) and end is not None:
            wraps.append((call.start(), end))
    if not wraps:
        return
    insertions = sorted(
        [(start, _WRAP) for start, _ in wraps] + [(end, ")") for _, end in wraps], reverse=True
    )
    stage: list[tuple[int, int]] = []
    for at, piece in insertions:
        text = text[:at] + piece + text[at:]
        stage.append((at, len(piece)))
    respelled.text = text
    respelled.stages.append(stage)


def _arguments(text: str, spans: list[tuple[int, int]], i: int) -> list[tuple[int, int]]:
    """The (start, end) of each top-level argument of the call whose ``(`` ends just before ``i``
    (``[]`` when it is not closed)."""
    found: list[tuple[int, int]] = []
    depth, start = 0, i
    skip = dict(spans)  # the string literals: (start, end)
    while i < len(text):
        span = skip.get(i)
        if span is not None:
            i = span
            continue
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            if depth == 0:
                return [*found, (start, i)]
            depth -= 1
        elif text[i] == "," and depth == 0:
            found.append((start, i))
            start = i + 1
        i += 1
    return []


def _transform_maps(respelled: Respelled) -> None:
    """Each ``transformMap``/``transformMapEntry`` call rewritten (see the module), the innermost
    (rightmost) first; one stage each."""
    while True:
        text = respelled.text
        spans = _literal_spans(text)
        calls = [call for call in _TRANSFORM_MAP.finditer(text) if not _in_literal(spans, call.start())]
        arguments = _arguments(text, spans, calls[-1].end()) if calls else []
        if len(arguments) not in (3, 4):
            return
        call = calls[-1]
        entries = call.group(1) == "transformMapEntry"
        first = text[arguments[0][0] : arguments[0][1]].strip()
        last_start, last_end = arguments[-1]
        edits = [
            (last_end + 1, "", ")"),
            # transformMapEntry (17) -> transformList (13) and 4 spaces: the same length
            (call.start(1), call.group(1), "transformList" + (" " * 4 if entries else "")),
            (_receiver_start(text, spans, call.start()), "", (MAP_OF_MAPS if entries else MAP_OF) + "("),
        ]
        if not entries:
            edits += [(last_end, "", "]"), (last_start, "", f"[{first}, ")]
        stage: list[tuple[int, int]] = []
        for at, old, new in sorted(edits, key=lambda edit: edit[0], reverse=True):
            text = text[:at] + new + text[at + len(old) :]
            if len(new) > len(old):
                stage.append((at + len(old), len(new) - len(old)))
        respelled.text = text
        respelled.stages.append(stage)


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
