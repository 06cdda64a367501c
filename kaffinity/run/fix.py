"""``kaffinity fix``'s run: the files linted as lint lints them (the units built, rendering as
configured, so that a finding on a rendered object is the one lint reports), and the safe
fixes of the findings planned as edits of the files that wrote the terms
(kaffinity.expand.fixes). Writing them back, or a diff, or stdin's stream on stdout, is the
command line's: this run computes the edits and the folders they may be written in."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Optional

from kaffinity.run.inputs import BufferedStdin, buffer_stdin
from kaffinity.run.layout import layout
from kaffinity.run.notes import Notes
from kaffinity.run.workspace import input_problems, load, run_rules

if TYPE_CHECKING:
    from kaffinity.config import Settings
    from kaffinity.engine import LintResult
    from kaffinity.expand.fixes import FileFix
    from kaffinity.run.inputs import Stdin


@dataclass(frozen=True)
class FixPlan:
    """The files fixed (their text as read and fixed), the fixes that could not be planned
    (one line each), the folders a fix may write in, whether an input could not be read, the
    lint result the fixes come from, and stdin's bytes as read (written back with the fix)."""

    fixed: list[FileFix]
    problems: list[str]
    roots: tuple[str, ...]
    broken: bool
    result: LintResult
    stdin: BufferedStdin


def fix_run(paths: Optional[list[str]], settings: Settings, stdin: Stdin, notes: Notes) -> FixPlan:
    """The fixes of ``paths``' findings, planned."""
    from kaffinity.expand.fixes import allowed_roots, fix_files
    from kaffinity.repo.sandbox import roots_for

    settings = replace(settings, plan_fixes=True)
    # stdin in, stdin out, as in place: every byte kept that a fix does not change (a byte order
    # mark too), and a stream that cannot be fixed comes out as it went in. The bytes are read
    # here (the loader then reads the same bytes) so that they can be written back exactly.
    buffered = buffer_stdin(stdin, settings.limits.file_size)
    inputs = load(paths, settings, stdin)
    # The units are built as lint builds them (rendering as configured), so that a finding on a
    # rendered object is the one lint reports; its fix edits the file of the input that wrote
    # the term (an overlay's patch: kaffinity.expand.fixes.plan_revision_fix), never the output.
    files, units = layout(list(inputs), paths, settings, notes)
    broken = input_problems(files, settings, units, notes)
    result = run_rules(files, settings, layout=units)
    fixed, problems = fix_files(inputs, result.findings)
    # The repositories too, as rendering reads them (a patch of a layer below the overlay named).
    given = [path for path in paths or ["."] if path != "-"]
    roots = tuple(dict.fromkeys([*allowed_roots(paths or ["."]), *roots_for(given)]))
    return FixPlan(list(fixed), list(problems), roots, broken, result, buffered)
