"""Edits as text: an :class:`Edit` (replace a range of characters), :func:`apply` several, and
the line of an offset (:func:`line_of`)."""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace ``text[start:end]`` (character offsets) with ``text``; a pure insertion if start == end."""

    start: int
    end: int
    text: str


@functools.lru_cache(maxsize=8)
def _line_starts(text: str) -> tuple[int, ...]:
    """The offset at which each line of ``text`` starts (a str caches its hash: a lookup of the
    same text is cheap)."""
    return (0, *(match.end() for match in re.finditer("\n", text)))


def line_of(text: str, offset: int) -> int:
    """The 1-based line of ``offset`` in ``text``, without counting the lines before it each
    time: a lint plans one edit per finding, and a file of a thousand workloads has thousands
    (counting made the hints quadratic in the file's size)."""
    return bisect.bisect_right(_line_starts(text), offset)


def apply(text: str, edits: Iterable[Edit]) -> str:
    """Apply edits made on ``text``; ValueError if two overlap or start at the same offset
    (two insertions at one place have no defined order)."""
    ordered = sorted(edits, key=lambda edit: (edit.start, edit.end))
    pieces: list[str] = []
    done = 0
    previous: Edit | None = None
    for edit in ordered:
        if not 0 <= edit.start <= edit.end <= len(text):
            raise ValueError(f"edit {edit} is outside the text ({len(text)} characters)")
        if previous is not None and (edit.start < previous.end or edit.start == previous.start):
            raise ValueError(f"edits overlap: {previous} and {edit}")
        pieces += (text[done : edit.start], edit.text)
        done = edit.end
        previous = edit
    pieces.append(text[done:])
    return "".join(pieces)
