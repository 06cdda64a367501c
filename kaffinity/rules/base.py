"""What a rule is: metadata kept apart from logic, and a check that yields violations."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kaffinity.findings import Severity, Violation

if TYPE_CHECKING:
    from kaffinity.context import Context

Check = Callable[["Context"], Iterator[Violation]]


@dataclass(frozen=True, slots=True)
class Rule:
    """A rule's identity and documentation, and its check.

    ``check`` may read the whole context but reports on one object per violation. Rules whose
    findings come from the loader or the engine itself (``parse-error``, ``helm-template``,
    ``unused-suppression``) have no check. ``docs`` is Markdown with the sections every rule
    has: what it finds, why it matters, a failing example, and the fix.
    """

    name: str
    category: str
    severity: Severity
    summary: str
    docs: str
    check: Check | None = None
    #: The rule needs every manifest of the repository (see ``context:``), not just some files.
    needs_context: bool = False
    #: The rule reads the declared cluster (``--cluster``): the engine skips it without one, so
    #: a lint without a cluster never imports the offline scheduler.
    needs_cluster: bool = False
