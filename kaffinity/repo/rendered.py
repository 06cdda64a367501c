"""What rendering one unit gives: :class:`Rendered`, its files and the :class:`Section` of each
line a rendered stream took from a chart template."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kaffinity.load.parse import LoadProblem, SourceFile
from kaffinity.load.source import (
    DataPath,
    Document,
    Span,
    locate_depth,
)

#: The rule of a render failure: bad input, as a manifest that does not parse.
RENDER_PROBLEM = "parse-error"


@dataclass(frozen=True, slots=True)
class Section:
    """Lines ``first..last`` of a rendered file (stdin, or a render whose origin is not on disk)
    that came from ``origin`` (a chart template, as ``# Source:`` names it)."""

    file: str
    first: int
    last: int
    origin: str


@dataclass(frozen=True, slots=True)
class Rendered:
    """What rendering one unit (an overlay, a chart, a rendered stream) gave.

    ``files``: one :class:`SourceFile` per file the rendered documents point at, with that file's
    text (comment suppressions are read from it) and the documents in rendered order; a file
    whose documents could not be mapped keeps the rendered text and positions. A failed render
    is a file with one problem (rule ``parse-error``) naming the kustomization, the chart, or the
    template and line the tool gave.
    """

    unit: str
    engine: str | None
    files: tuple[SourceFile, ...]
    seconds: float = 0.0
    sections: tuple[Section, ...] = field(default=())
    #: By ``id`` of a rendered document: the overlay's patches that touch it, as (patch file,
    #: tree of positions shaped like the document), in the order kustomize applies them.
    patches: dict[int, tuple[tuple[str, Any], ...]] = field(default_factory=dict, compare=False)
    #: Remote resources left out of a build without the network (``local_only``).
    left_out: tuple[str, ...] = ()

    @property
    def documents(self) -> tuple[Document, ...]:
        return tuple(doc for file in self.files for doc in file.documents)

    @property
    def problems(self) -> tuple[tuple[str, LoadProblem], ...]:
        return tuple((file.name, problem) for file in self.files for problem in file.problems)

    #: False: nothing was rendered (the problems say why), though none is a ``parse-error``.
    built: bool = True
    #: When the run streams (kaffinity.stream.stage_rendered): the single-object stage's
    #: ``FileResult`` of each of ``files``, whose documents (compact) are ``files``' own.
    results: tuple[Any, ...] = field(default=(), compare=False)

    @property
    def ok(self) -> bool:
        """Rendered: no problem but ``chart-dependency`` findings (a chart rendered without the
        dependencies it lacks, kaffinity.repo.dependencies)."""
        return self.built and all(problem.rule == "chart-dependency" for _, problem in self.problems)

    def patch_location(self, doc: Document, path: DataPath) -> tuple[str, Span] | None:
        """Where one of the overlay's patches spells ``path`` (a field it added or set), when
        that is more precise than the origin file: a patch that spells the path deeper than
        the origin does, or the whole of it (the patch's value is the one rendered). None: the
        finding belongs at ``doc.file``, ``doc.locate(path)``."""
        patches = self.patches.get(id(doc))
        if not patches:
            return None
        best, _ = locate_depth(doc.root, tuple(path), doc.span)
        location: tuple[str, Span] | None = None
        for file, tree in patches:
            depth, span = locate_depth(tree, tuple(path), doc.span)
            if depth > best or (depth == best == len(path) and depth > 0):
                best, location = depth, (file, span)
        return location

    def origin(self, file: str, line: int) -> str | None:
        """The template that produced ``line`` of the rendered ``file``, when the documents there
        could not be mapped to it (the template is not on disk): for a report to show
        ``<stdin>:1209 (from web/templates/deployment.yaml)``."""
        for section in self.sections:
            if section.file == file and section.first <= line <= section.last:
                return section.origin
        return None
