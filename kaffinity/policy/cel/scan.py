"""Finding things in a CEL expression's text: string literals and comments to skip, and
``'<literal>'.format([<items>])`` calls (what cel-go's ``stringFormatValidator`` checks, ext/formatting.go
``matchConstantFormatStringWithListLiteralArgs``).

kaffinity has no syntax tree of an expression (cel-expr-python does not expose one), so the few
checks upstream makes on it are made on the text, skipping string literals and comments.
"""

from __future__ import annotations

import re

_STRING_LITERAL = re.compile(
    r"""[rR]?(?:'''(?:[^\\]|\\.)*?'''|\"\"\"(?:[^\\]|\\.)*?\"\"\"|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")""",
    re.S,
)
_FORMAT_CALL = re.compile(r"\s*\.\s*format\s*(\()\s*\[")
_CLOSE_CALL = re.compile(r"\s*\)")
_OPEN, _CLOSE = "([{", ")]}"


class LiteralCall:
    """``'<format>'.format([<items>])`` in an expression's text: the format literal's text, the
    items' texts and 0-based offsets, and the offset of the call's ``(`` (where cel-go reports)."""

    def __init__(self, literal: str, items: list[tuple[str, int]], call: int) -> None:
        self.literal = literal
        self.items = items
        self.call = call


def skip_literal(text: str, i: int) -> int | None:
    """The end of a string literal or comment starting at ``i``, if one does."""
    if text.startswith("//", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    if text[i] in "'\"rRbB":
        if i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_") and text[i] not in "'\"":
            return None
        start = i + 1 if text[i] in "bB" else i
        found = _STRING_LITERAL.match(text, start)
        if found and (text[i] in "'\"" or found.group()[0] in "'\"rR"):
            return found.end()
    return None


def literal_calls(text: str) -> list[LiteralCall]:
    """Every ``format`` call whose receiver is a string literal and whose argument is a list
    literal (what ``matchConstantFormatStringWithListLiteralArgs`` matches)."""
    found: list[LiteralCall] = []
    i = 0
    while i < len(text):
        end = skip_literal(text, i)
        if end is None:
            i += 1
            continue
        literal = text[i:end]
        call = _FORMAT_CALL.match(text, end)
        if literal[0] in "'\"rR" and call:
            items = _items(text, call.end())
            if items is not None:
                found.append(LiteralCall(literal, items, call.start(1)))
        i = end
    return found


def _items(text: str, i: int) -> list[tuple[str, int]] | None:
    """The items of the list literal whose ``[`` ends just before ``i`` (None when it is not
    closed, or not followed by the call's ``)``)."""
    items: list[tuple[str, int]] = []
    depth, start = 0, i
    while i < len(text):
        end = skip_literal(text, i)
        if end is not None:
            i = end
            continue
        c = text[i]
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            if depth == 0:
                if c != "]" or not _CLOSE_CALL.match(text, i + 1):
                    return None
                last = text[start:i]
                if last.strip():
                    items.append((last.strip(), start + len(last) - len(last.lstrip())))
                return items
            depth -= 1
        elif c == "," and depth == 0:
            item = text[start:i]
            items.append((item.strip(), start + len(item) - len(item.lstrip())))
            start = i + 1
        i += 1
    return None
