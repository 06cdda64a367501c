"""Source positions: documents as loaded, with the line and column of every key and item.

Positions travel with the data. A mapping is a :class:`PosDict` (a plain ``dict`` that also
remembers where each key stood), a sequence a :class:`PosList` (where each item started), so a
rule can name any data path and the engine finds the nearest recorded position for it.
Lines and columns are 1-based and counted from the start of the file, whatever the document.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeAlias

PathItem: TypeAlias = str | int
DataPath: TypeAlias = tuple[PathItem, ...]


class Span(NamedTuple):
    """A 1-based line and column in a file."""

    line: int
    column: int


class PosDict(dict[str, Any]):
    """A mapping that remembers the position of each key (1-based line, column)."""

    __slots__ = ("pos", "span")

    def __init__(self, span: Span) -> None:
        super().__init__()
        self.span = span
        self.pos: dict[str, tuple[int, int]] = {}


class PosList(list[Any]):
    """A sequence that remembers the position of each item."""

    __slots__ = ("pos", "span")

    def __init__(self, span: Span) -> None:
        super().__init__()
        self.span = span
        self.pos: list[tuple[int, int]] = []


def format_path(path: DataPath) -> str:
    """Render a data path as ``spec.template.spec.affinity...[0].topologyKey``."""
    out: list[str] = []
    for item in path:
        if isinstance(item, int):
            out.append(f"[{item}]")
        elif not _is_plain_segment(item):
            out.append(f"[{item!r}]")
        else:
            out.append(f".{item}" if out else item)
    return "".join(out)


def _is_plain_segment(item: str) -> bool:
    return item != "" and all(c.isalnum() or c in "_-" for c in item)


@dataclass(frozen=True, slots=True)
class DuplicateKey:
    """A key given twice in one mapping (the later value wins, as in go-yaml)."""

    key: str
    span: Span


@dataclass(frozen=True, slots=True)
class Document:
    """One object of a file: a YAML/JSON document, or one item of a ``kind: List`` document.

    ``index`` counts documents in the file from 0. For an item of a List, ``root`` is the whole
    List document and ``prefix`` the data path of the item in it (``("items", 3)``); otherwise
    ``root is data`` and ``prefix == ()``. Positions are always looked up from the root, so they
    are counted from the start of the file.
    """

    file: str
    index: int
    data: Any
    root: Any
    span: Span
    prefix: DataPath = ()
    duplicate_keys: tuple[DuplicateKey, ...] = field(default=(), compare=False)

    def locate(self, path: DataPath) -> Span:
        """The position of ``path`` (relative to this object), or of its nearest recorded ancestor."""
        return locate(self.root, self.prefix + tuple(path), self.span)


def locate(data: Any, path: DataPath, default: Span) -> Span:
    """Follow ``path`` through ``data`` and return the deepest recorded position on the way."""
    best: tuple[int, int] = getattr(data, "span", default)
    node = data
    for item in path:
        in_dict = isinstance(node, PosDict) and isinstance(item, str) and item in node
        in_list = isinstance(node, PosList) and isinstance(item, int) and 0 <= item < len(node)
        if in_dict or in_list:
            best = node.pos[item]
        else:
            break
        node = node[item]
    return Span(*best)
