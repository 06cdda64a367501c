"""A deployment unit (:class:`Unit`: objects deployed together, how it was found, why it was read
as written) and the :class:`Layout` of an input: its units, every object once, what was left out."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kaffinity.load.source import DataPath, Document, Span
from kaffinity.repo.kustomizations import (
    Kustomization,
)

if TYPE_CHECKING:
    from kaffinity.repo.gitops.releases import NotRendered, ReleaseKey
    from kaffinity.repo.rendered import Rendered


Identity = tuple[str, str, str, str]


class UnitCache(Protocol):
    """Rendered units by the hash of their inputs (kaffinity.cache.rendered.RenderCache: the
    cache layer sits above this one, so the builder knows it by what it does)."""

    def kustomization(self, directory: str, render: Callable[[], Rendered]) -> Rendered: ...

    def chart(
        self,
        chart_dir: str,
        values_files: Sequence[str],
        arguments: Mapping[str, Any],
        render: Callable[[], Rendered],
    ) -> Rendered: ...

    def release(
        self, key_of: Callable[[], ReleaseKey | None] | None, render: Callable[[], Rendered | NotRendered]
    ) -> Rendered | NotRendered: ...

    def staged(self, rendered: Rendered) -> Rendered: ...


@dataclass(frozen=True, slots=True)
class Unit:
    """Objects deployed together. ``name`` is shown in reports (a folder or a file); ``source``
    says how it was found: ``kustomize``, ``helm``, ``variant``, ``config`` or ``files``."""

    name: str
    source: str
    documents: tuple[Document, ...]
    #: The files the unit claims (a kustomization's resources, a chart's files), normalised.
    files: tuple[str, ...] = ()
    #: Why a unit that a tool builds (a kustomization, a chart, a release) was read as written
    #: instead: one of :data:`NOT_RENDERED` (``"rendering off"`` until :func:`render_units`
    #: builds it), or for a release its own reason (NotRendered.reason); None once built, and
    #: for the units of plain files. The summary counts them.
    not_rendered: str | None = None
    #: A chart variant's values files (``ci/*-values.yaml``, a ``helm-values:`` entry).
    values: tuple[str, ...] = ()


#: Why a unit was read as written (:attr:`Unit.not_rendered`): rendering was not asked
#: (``--no-render``), no tool renders it, it needs the network and that is off, the run's render
#: budget was spent, or the tool failed or was refused (a ``parse-error`` says why).
NOT_RENDERED = ("rendering off", "no tool", "network off", "budget spent", "failed")


@dataclass(frozen=True, slots=True)
class Layout:
    """How the input is read: the units, every object once, and what was left out."""

    units: tuple[Unit, ...]
    #: Every object once, for the rules that read one object at a time (fragments left out).
    documents: tuple[Document, ...]
    #: Files read as parts of objects (kustomize patches): never objects of their own.
    fragments: frozenset[str] = frozenset()
    kustomizations: tuple[Kustomization, ...] = ()
    notes: tuple[str, ...] = ()
    #: The unit of each rendered object, by id(document): a finding of a rule that reads one
    #: object at a time names it, as the object exists only in that unit's build.
    membership: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    #: For rendered objects, by id(document): where an overlay's patch spells a data path,
    #: when that is more precise than the file the object comes from (Rendered.patch_location).
    places: Mapping[int, Callable[[Document, DataPath], tuple[str, Span] | None]] = field(
        default_factory=dict
    )

    @property
    def several(self) -> bool:
        return len(self.units) > 1


def single(documents: Iterable[Document]) -> Layout:
    """The whole input as one unit (``units: one``; a single file)."""
    docs = tuple(documents)
    return Layout((Unit("", "files", docs),), docs)
