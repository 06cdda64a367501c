"""Findings: what a rule found, where, on which object. Immutable and sortable."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from kaffinity.k8s.model import ObjectRef
from kaffinity.load.source import DataPath, Document, Span

if TYPE_CHECKING:
    from collections.abc import Callable

    from kaffinity.load.edits import Edit


class Severity(str, Enum):
    """How bad a finding is; ordered error > warning > info."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return _RANK[self]

    def reaches(self, threshold: Severity) -> bool:
        return self.rank >= threshold.rank


_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}


@dataclass(frozen=True, slots=True)
class Location:
    """A place in a file: ``span`` is None when the whole file is meant (it could not be read)."""

    file: str
    span: Span | None
    path: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class Related:
    """Another place involved in a violation, named like the violation itself: a data path."""

    doc: Document
    path: DataPath
    message: str = ""


#: Related places one finding shows at most; its message names and counts the rest ("b1, b2, b3
#: and 997 more"). A thousand budgets selecting the same pods made each of a thousand findings
#: list the other 999: a 183 MB report.
MAX_RELATED = 10


@dataclass(frozen=True, slots=True)
class Violation:
    """What a rule's check yields: a data path on one object, the message, and optional extras.

    ``doc`` is the document the path is relative to; the engine turns the path into a line and
    column. ``related`` are other places worth showing (the other side of a conflict), also as
    data paths. ``fix`` is a hint for the user. ``field`` is the path to report when it is not
    the data path rendered (the API server names some errors by a path of its own).
    """

    doc: Document
    path: DataPath
    message: str
    related: tuple[Related, ...] = ()
    fix: str | None = None
    field: str | None = None
    edit: Edit | None = None
    #: This finding's severity when it differs from the rule's default (the configured one wins).
    severity: Severity | None = None
    #: The file ``edit`` applies to, when it is not the document's (a rendered object's term is
    #: written in an overlay's patch: kaffinity.expand.fixes.plan_revision_fix).
    edit_file: str | None = None
    #: Computes (``fix``, ``edit``, ``edit_file``) when the finding is reported, not before: a
    #: rule whose hint needs its fix planned (the file composed again) pays only for the
    #: findings a report shows (a pre-commit run reports the changed files only).
    plan: Callable[[], tuple[str, Edit | None, str | None]] | None = None


#: Why ``lint --changed`` reports a finding in a file the change did not touch (:class:`Cause`):
#: the finding's object has a term that selects the changed object's pods, before or after the
#: change (``selects``); a term of the changed object selects the finding's object
#: (``selected-by``); a PodDisruptionBudget is one and covers the other's pods (``budget``); a
#: HorizontalPodAutoscaler is one and scales the other (``autoscaler``); the changed object
#: changes where the pods of the finding's unit are placed on the declared cluster
#: (``placement``); the finding's unit is rendered from the changed file (``rendered-from``: a
#: patch, a values file, a kustomization, a chart's file, a release's valuesFrom); the finding
#: names a place in the changed file (``names``).
CAUSE_SELECTS, CAUSE_SELECTED_BY, CAUSE_BUDGET, CAUSE_AUTOSCALER = (
    "selects",
    "selected-by",
    "budget",
    "autoscaler",
)
CAUSE_PLACEMENT, CAUSE_RENDERED_FROM, CAUSE_NAMES = "placement", "rendered-from", "names"
CAUSES = (
    CAUSE_SELECTS,
    CAUSE_SELECTED_BY,
    CAUSE_BUDGET,
    CAUSE_AUTOSCALER,
    CAUSE_PLACEMENT,
    CAUSE_RENDERED_FROM,
    CAUSE_NAMES,
)
#: Causes one finding keeps at most (a label many objects select, changed once).
MAX_CAUSES = 5


@dataclass(frozen=True, slots=True)
class Cause:
    """Why a finding in a file that did not change is reported by ``lint --changed``: the
    changed ``file``, how the finding relates to it (``relation``, one of :data:`CAUSES`), the
    changed object when one is meant (before or after the change), and the unit rendered from
    the file (``rendered-from``)."""

    file: str
    relation: str
    object: ObjectRef | None = None
    unit: str = ""


@dataclass(frozen=True, slots=True)
class Finding:
    """One reported problem; reports list them in :meth:`sort_key` order."""

    file: str
    line: int | None
    column: int | None
    rule: str
    message: str
    severity: Severity = field(compare=False)
    category: str = field(compare=False)
    path: str = field(default="", compare=False)
    object: ObjectRef | None = field(default=None, compare=False)
    related: tuple[Location, ...] = field(default=(), compare=False)
    fix: str | None = field(default=None, compare=False)
    edit: Edit | None = field(default=None, compare=False, repr=False)
    #: The deployment units the finding was found in, when the input holds several
    #: (kaffinity.repo.units); empty for the rules that read one object at a time.
    units: tuple[str, ...] = field(default=(), compare=False)
    #: ``lint --changed``: why a finding in a file that did not change is reported (empty for a
    #: finding in a changed file, and without ``--changed``).
    because: tuple[Cause, ...] = field(default=(), compare=False)
    #: The file ``edit`` applies to: the finding's own file when None (a rendered object's term
    #: written in an overlay's patch or a chart's values file). Last, so that the positional
    #: form of the cache (kaffinity.cache) stays as it is: rendered objects are never cached.
    edit_file: str | None = field(default=None, compare=False, repr=False)

    @property
    def object_label(self) -> str:
        """The object it is on, as people say it: ``Deployment shop/web``, ``Namespace prod``
        ("" when it is on no object: a file that does not parse)."""
        obj = self.object
        if obj is None or not obj.kind or obj.kind == "None":
            return ""
        scope = f"{obj.namespace}/" if obj.namespace else ""
        return f"{obj.kind} {scope}{obj.name}" if obj.name else obj.kind

    @property
    def unit_label(self) -> str:
        """Where the finding came from when the input holds several deployment units:
        ``unit overlays/prod``, ``units a, b and 3 more``; empty otherwise."""
        if not self.units:
            return ""
        if len(self.units) == 1:
            return f"unit {self.units[0]}"
        shown = ", ".join(self.units[:2])
        more = len(self.units) - 2
        return f"units {shown} and {more} more" if more > 0 else f"units {shown.replace(', ', ' and ')}"

    @property
    def span(self) -> Span | None:
        return None if self.line is None or self.column is None else Span(self.line, self.column)

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.file, self.line or 0, self.column or 0, self.rule, self.message)
