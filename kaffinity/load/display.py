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

Beyond git (which prints them raw with ``core.quotePath`` off): the Unicode bidirectional
controls (the ``Bidi_Control`` property of Unicode's PropList.txt: U+061C, U+200E, U+200F,
U+202A..U+202E, U+2066..U+2069), which reorder what a terminal or a browser shows ("Trojan
Source", CVE-2021-42574), and the line and paragraph separators U+2028 and U+2029 (line breaks
for some terminals, editors and JavaScript) are escaped too, as ``\\u202e``: the code point,
as YAML, JSON and Python write it (U+0085, NEXT LINE, is a C1 control: ``\\302\\205``).

The same characters are written as ``\\uXXXX`` JSON escapes in the JSON reports
(:func:`json_text`): the decoded value stays exact, and the bytes hold no raw control.

Markdown (the job summary, a pull-request comment) gets text from the input as code spans
(:func:`code_span`): GitHub renders nothing inside one, neither HTML nor links, nor does it
turn ``@name`` into a mention, ``#123`` into a reference or ``https://...`` into a link
(its mention, reference and autolink filters skip ``code`` elements).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

#: git's short escapes (quote.c ``cq_lookup``).
_SHORT = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f", "\r": "\\r"}
#: The Unicode bidirectional controls (PropList.txt ``Bidi_Control``) and the line and
#: paragraph separators: shown as ``\\uXXXX``.
_INVISIBLE = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
#: What must be escaped in a message: C0 and C1 controls, DEL, the above, lone surrogates.
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f{_INVISIBLE}\ud800-\udfff]")
#: What makes a name quoted: the above, a double quote, a backslash.
_QUOTED = re.compile(f'[\x00-\x1f\x7f-\x9f{_INVISIBLE}\ud800-\udfff"\\\\]')
_SURROGATES = re.compile("[\ud800-\udfff]")
#: What a JSON text writes as a ``\\uXXXX`` escape beyond what ``json.dumps`` escapes (C0, ``"``
#: and ``\\``): DEL, C1 controls and the above.
_JSON_UNSAFE = re.compile(f"[\x7f-\x9f{_INVISIBLE}]")


def _octal(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the undecodable byte itself
        return f"\\{code - 0xDC00:03o}"
    if 0xD800 <= code <= 0xDFFF or code > 0xFF:  # a lone surrogate ("\ud800"), a bidi control
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


def json_text(value: Any, *, indent: int | None = 2) -> str:
    """``value`` as JSON text, valid UTF-8, whose strings decode to exactly what they hold (a
    consumer needs the true value), with every control character, bidirectional control and
    line separator written as a ``\\uXXXX`` escape (RFC 8259 section 7): ``json.dumps`` escapes
    only C0; the rest would reach a terminal that shows the file, or a JavaScript parser older
    than ES2019 (U+2028), raw. They can only occur inside strings: the escape changes no value."""
    # Made encodable in the text (_json_safe), not the tree (utf8_tree): walking the tree first
    # cost as much as dumping it, and the same characters come out.
    if indent is not None:
        return "".join(json_pieces(value, indent=indent))
    import json

    return _json_safe(json.dumps(value, ensure_ascii=False))


def json_pieces(value: Any, *, indent: int = 2) -> Iterator[str]:
    """:func:`json_text`'s text (indented) in pieces of a few thousand encoder chunks, for a
    report written as it is made: never the whole text in memory (a 10k-workload report is
    15 MB; what ``json.dumps`` does with an indent, one list of every chunk then one join,
    holds a string object per chunk at once, several times the text)."""
    import json

    batch: list[str] = []
    for chunk in json.JSONEncoder(ensure_ascii=False, indent=indent).iterencode(value):
        batch.append(chunk)
        if len(batch) == _BATCH:
            yield _json_safe("".join(batch))
            batch.clear()
    yield _json_safe("".join(batch))


def _json_safe(text: str) -> str:
    """JSON ``text`` (``ensure_ascii=False``) made as :func:`json_text` promises, a character at
    a time (so a piece of it can be): a lone surrogate, which ``json.dumps`` writes as it is,
    becomes what :func:`utf8` makes of it, JSON-escaped (its backslash doubled: the text of
    ``utf8_tree(value)`` dumped); DEL, C1 controls and invisible characters a ``\\uXXXX``."""
    if text.isascii():  # the common case, and a fast test: only DEL could be there
        return text.replace("\x7f", "\\u007f")
    if _SURROGATES.search(text) is not None:
        text = _SURROGATES.sub(lambda match: _octal(match.group(0)).replace("\\", "\\\\"), text)
    return _JSON_UNSAFE.sub(lambda match: f"\\u{ord(match.group(0)):04x}", text)


_BATCH = 4096


#: What splits a text into the lines of a Markdown cell.
_LINE_BREAKS = re.compile("\r\n|\r|\n")
_BACKTICKS = re.compile("`+")


def code_span(text: str, *, table: bool = False) -> str:
    """One line of text from the input as a GitHub-flavoured Markdown code span, which renders
    it as it is: no HTML, emphasis, link, image, autolink (``www.``, ``https://``, e-mail), nor
    GitHub's ``@mention``, ``#123`` reference or ``:emoji:`` (GitHub's filters skip ``code``).

    Control characters and bidirectional controls are escaped first (:func:`escape`); line
    breaks become ``\\n`` (a code span cannot hold one: see :func:`markdown_lines`). The fence is
    one backtick more than the longest run in the text, with a space inside each end when the
    text starts or ends with a backtick or a space (CommonMark 0.31 section 6.1, "Code spans":
    one space is stripped from each end when both are there). In a table cell (``table``) a
    ``|`` is written ``\\|``, which the GFM table extension turns back into ``|`` before the cell
    is parsed, inside code spans too (GFM spec example 200; cmark-gfm ``unescape_pipes``)."""
    text = escape(text)
    if not text:
        return ""
    runs = _BACKTICKS.findall(text)
    fence = "`" * (max(map(len, runs), default=0) + 1)
    if text.strip(" ") and (text[0] in "` " or text[-1] in "` "):
        text = f" {text} "
    if table:
        text = text.replace("|", "\\|")
    return f"{fence}{text}{fence}"


def markdown_lines(text: str, *, table: bool = False) -> str:
    """Text from the input, of one line or more, for a Markdown paragraph or table cell: each
    line a :func:`code_span`, the lines joined by ``<br>``."""
    return "<br>".join(code_span(line, table=table) for line in _LINE_BREAKS.split(text))


def patch_lines(text: str) -> list[str]:
    """``text`` in lines as ``diff`` and ``patch`` count them, each with its end: at ``\n`` only.
    ``str.splitlines`` also ends a line at U+2028, U+0085, ``\v``, ``\f``..., so a diff made of
    its lines adds line breaks the file does not have, and does not apply."""
    return [line for line in re.split(r"(?<=\n)", text) if line]


def columns(text: str) -> int:
    """How many terminal columns ``text`` (already escaped: no control character) takes: two
    for a wide or full-width character (Unicode East_Asian_Width W or F), none for a combining
    mark, one for any other (as ``wcwidth`` counts them)."""
    if text.isascii():
        return len(text)
    import unicodedata

    return sum(
        0 if unicodedata.combining(char) else 2 if unicodedata.east_asian_width(char) in "WF" else 1
        for char in text
    )
