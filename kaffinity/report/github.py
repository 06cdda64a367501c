"""GitHub Actions workflow commands (``::error file=...,line=...::message``).

Escaping follows the actions toolkit (``@actions/core`` ``command.ts``): in the message ``%``,
CR and LF are percent-encoded; in properties ``:`` and ``,`` are too. Before that, the control
characters that come from the input (a label key, a file name) are escaped as in the text
format (``kaffinity.load.display``), in the message and in every property (``file=``,
``title=``): the log shows ESC-sequences as colours, a line break in a name would otherwise end the
command, and bidirectional controls (U+202E...) or line separators (U+2028...) would reorder or
break what the annotation and the log show; they are written as ``\\033``, ``\\u202e``.
"""

from __future__ import annotations

import os

from kaffinity.engine import LintResult
from kaffinity.findings import Severity
from kaffinity.load.display import escape, quote_name
from kaffinity.report.because import sentences

_COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workspace_path(file: str) -> str:
    """A file as GitHub names it: relative to the workspace (the working directory), without a
    leading ``./`` (the SARIF report and the job summary say the same)."""
    if os.path.isabs(file):
        relative = os.path.relpath(file)
        return file if relative.startswith("..") else relative
    return os.path.normpath(file)


def render(result: LintResult) -> str:
    lines = []
    for finding in result.findings:
        name = quote_name(workspace_path(finding.file))
        properties = [f"file={escape_property(name)}"]
        where = name
        if finding.line is not None:
            properties.append(f"line={finding.line}")
            properties.append(f"col={finding.column}")
            where += f":{finding.line}:{finding.column}"
        properties.append(f"title={escape_property(f'kaffinity [{escape(finding.rule)}]')}")
        # The place in the text too: past GitHub's ten annotations of a kind, the log line is all
        # that is left of one (as ruff and yamllint write theirs).
        on = f"{escape(finding.object_label)}: " if finding.object_label else ""
        message = f"{where}: {on}{escape(finding.message)}"
        if finding.units:
            message += f" ({escape(finding.unit_label)})"
        if finding.because:  # lint --changed: why a finding in a file that did not change
            message += f"\n{escape(sentences(finding.because))}"
        if finding.fix:
            message += f"\nfix: {escape(finding.fix)}"
        lines.append(f"::{_COMMANDS[finding.severity]} {','.join(properties)}::{escape_data(message)}")
    summary = result.render
    if summary is not None and summary.unrendered:
        # One notice for the run, never one per file: the units read as written and why.
        shown = [f"{escape(unit)}: {escape(reason)}" for unit, reason in summary.unrendered[:_SHOWN]]
        more = len(summary.unrendered) - len(shown)
        count = len(summary.unrendered)
        message = (
            f"{count} unit{'s' if count != 1 else ''} read as written, not rendered: "
            + "; ".join(shown)
            + (f"; and {more} more" if more else "")
        )
        title = escape_property("kaffinity [not rendered]")
        lines.append(f"::notice title={title}::{escape_data(message)}")
    return "".join(line + "\n" for line in lines)


#: Units the notice of units read as written names (the JSON and SARIF reports list them all).
_SHOWN = 10
