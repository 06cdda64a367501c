"""Suppressions: the ``kaffinity.io/ignore`` annotation and ``# kaffinity: ignore[...]`` comments.

An annotation on an object (or on its pod template) suppresses the named rules for findings on
that object; a reason may follow after `` -- ``. A comment suppresses findings on its own line
and on the line below it. Names may be rules, categories or ``all``. Each suppression remembers
which of its names suppressed something, so the engine can report the rest.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from kaffinity.k8s.model.readers import dig
from kaffinity.load.source import DataPath, Document, Span

ANNOTATION = "kaffinity.io/ignore"
_COMMENT = re.compile(r"(?:^|(?<=\s))#\s*kaffinity:\s*ignore\[([^\]]*)\]")


@dataclass(slots=True)
class Suppression:
    """One annotation or comment, with the names it lists and which of them were used."""

    file: str
    span: Span
    names: tuple[str, ...]
    doc: Document | None = None
    path: DataPath = ()
    used: set[str] = field(default_factory=set)

    def covers(self, rule: str, category: str) -> str | None:
        """The listed name that covers ``rule`` (most specific first), or None."""
        for name in (rule, category, "all"):
            if name in self.names:
                return name
        return None


def parse_names(value: str) -> tuple[str, ...]:
    """``"rule-a, rule-b -- reason"`` → ``("rule-a", "rule-b")``."""
    names = value.split(" -- ", 1)[0]
    return tuple(name.strip() for name in names.split(",") if name.strip())


def comment_suppressions(file: str, text: str) -> list[Suppression]:
    """Every ``# kaffinity: ignore[...]`` comment in a file."""
    if "kaffinity:" not in text:
        return []
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        if "kaffinity:" in line:
            for match in _COMMENT.finditer(line):
                found.append(Suppression(file, Span(number, match.start() + 1), parse_names(match.group(1))))
    return found


def annotation_suppressions(doc: Document, template_paths: Iterable[DataPath]) -> Iterator[Suppression]:
    """The annotations on the object and on its pod template."""
    for base in ((), *template_paths):
        annotations = dig(doc.data, (*base, "metadata", "annotations"))
        value = annotations.get(ANNOTATION) if isinstance(annotations, dict) else None
        if isinstance(value, str):
            path = (*base, "metadata", "annotations", ANNOTATION)
            yield Suppression(doc.file, doc.locate(path), parse_names(value), doc, path)
