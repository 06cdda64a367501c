"""What a lint run gives back: :class:`LintResult`, and the exit codes the engine decides."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kaffinity.findings import Finding, Severity
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.repo.rendering import RenderSummary


#: The rule of input that could not be read or parsed: always reported, and the run exits 2.
LOAD_ERROR = "parse-error"
#: The exit code of a run in which kaffinity itself failed (a rule crashed): not 2, which bad input
#: gets, so that a bug cannot pass for a user's mistake.
INTERNAL_ERROR = 3


@dataclass(frozen=True, slots=True)
class NewOnly:
    """What ``--new-from-rev REV`` or ``--baseline FILE`` left out of a result: ``against`` is
    ``rev`` or ``baseline``, ``ref`` the revision or the file, ``known`` the findings that were
    there already (not shown), ``fixed`` the baseline's entries that no longer occur."""

    against: str
    ref: str
    known: int
    fixed: int = 0

    @property
    def phrase(self) -> str:
        """``12 findings also at main`` / ``12 findings in the baseline``, for the summaries."""
        what = f"{self.known} finding{'s' if self.known != 1 else ''}"
        if self.against == "baseline":
            return f"{what} in the baseline"
        return (
            f"{what} also at {self.ref}"
            if self.against == "rev"
            else f"{what} in the baseline or at {self.ref}"
        )


@dataclass(frozen=True, slots=True)
class LintResult:
    findings: tuple[Finding, ...]
    rules: tuple[Rule, ...]
    files: int
    documents: int
    suppressed: int
    load_errors: bool
    internal_errors: tuple[str, ...] = ()
    severities: dict[str, Severity] = field(default_factory=dict)
    #: The deployment units the input was read as, when there were several (kaffinity.repo.units).
    units: tuple[str, ...] = ()
    #: Files read and skipped: not Kubernetes manifests (``SourceFile.skipped``); not in ``files``.
    skipped: int = 0
    #: Work left undone because it passed a limit (``limits:``): one line each, naming the limit.
    notices: tuple[str, ...] = ()
    #: Findings left out of the report by ``--min-severity`` (they still decide the exit code).
    hidden: int = 0
    #: What was rendered and what was read as written (``kaffinity lint``; the reports count it).
    render: RenderSummary | None = None
    #: Findings left out because they were there before (``--new-from-rev``, ``--baseline``).
    new_only: NewOnly | None = None

    def failed(self, threshold: Severity | None) -> bool:
        return threshold is not None and any(f.severity.reaches(threshold) for f in self.findings)

    @property
    def exit_code(self) -> int:
        """3 when a rule crashed (a bug, whatever else happened), 2 when an input could not be
        read or parsed, else 0 (findings decide 1 against ``--fail-on``, in the CLI)."""
        return INTERNAL_ERROR if self.internal_errors else 2 if self.load_errors else 0
