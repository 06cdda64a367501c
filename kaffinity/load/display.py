"""Text from the input made safe to show: file names that are not UTF-8, control characters.

A report must not be broken by what it quotes (a JSON or SARIF file that is not valid UTF-8), nor
be used against the terminal that shows it (an escape sequence in a label key or a file name that
changes the window title, the colours, or forges a ``file:line:col: error`` line).

Names are quoted as git quotes paths (``quote.c`` ``quote_c_style``, with ``core.quotePath``
false for valid UTF-8): a name that holds a control character, a byte that is not UTF-8 (carried
by ``os.fsdecode`` as a lone surrogate, PEP 383), a double quote or a backslash is shown between
double quotes, with ``\\n``/``\\t``/... and ``\\"``/``\\\\`` escaped and every other such byte as
three octal digits (``"caf\\351.yaml"``); any other name is shown as it is. The same escapes
(without the quotes) are applied to messages in the text formats (:func:`escape`). The C1
controls (U+0080..U+009F, which some terminals read as ESC-sequences) count as control characters,
escaped byte by byte from their UTF-8 form as git does with ``core.quotePath`` on.
"""

from __future__ import annotations

import re
from typing import Any

#: git's short escapes (quote.c ``cq_lookup``).
_SHORT = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f", "\r": "\\r"}
#: What must be escaped in a message: C0 and C1 controls, DEL, lone surrogates.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
#: What makes a name quoted: the above, a double quote, a backslash.
_QUOTED = re.compile('[\x00-\x1f\x7f-\x9f\ud800-\udfff"\\\\]')
_SURROGATES = re.compile("[\ud800-\udfff]")


def _octal(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the undecodable byte itself
        return f"\\{code - 0xDC00:03o}"
    if 0xD800 <= code <= 0xDFFF:  # a lone surrogate from an escape in the input ("\ud800")
        return f"\\u{code:04x}"
    return "".join(f"\\{byte:03o}" for byte in char.encode("utf-8"))


def _escape_char(match: re.Match[str]) -> str:
    char = match.group(0)
    if char in _SHORT:
        return _SHORT[char]
    if char in '"\\':
        return "\\" + char
    return _octal(char)


def escape(text: str) -> str:
    """``text`` with every control character and undecodable byte escaped (no quotes added):
    for messages shown on a terminal or in a line-based format."""
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_escape_char, text)


def quote_name(name: str) -> str:
    """A file name as git shows it: unchanged when plain, else quoted with C-style escapes."""
    if _QUOTED.search(name) is None:
        return name
    return '"' + _QUOTED.sub(_escape_char, name) + '"'


def utf8(text: str) -> str:
    """``text`` with the lone surrogates (undecodable bytes of a file name) escaped, so that it
    encodes as UTF-8; control characters are left to the format (JSON escapes them itself)."""
    if _SURROGATES.search(text) is None:
        return text
    return _SURROGATES.sub(lambda match: _octal(match.group(0)), text)


def utf8_tree(value: Any) -> Any:
    """Every string (and key) of a JSON-like tree made encodable as UTF-8 by :func:`utf8`."""
    if isinstance(value, str):
        return utf8(value)
    if isinstance(value, dict):
        return {utf8_tree(key): utf8_tree(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [utf8_tree(item) for item in value]
    return value


def json_name(name: str) -> str:
    """A file name for a JSON report: as it is when it is UTF-8 (JSON escapes control characters
    itself, and a consumer reads the path back unchanged); quoted as :func:`quote_name` when it
    holds bytes that are not UTF-8 (JSON strings cannot carry them)."""
    return name if _SURROGATES.search(name) is None else quote_name(name)
