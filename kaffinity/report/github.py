"""GitHub Actions workflow commands (``::error file=...,line=...::message``).

Escaping follows the actions toolkit (``@actions/core`` ``command.ts``): in the message ``%``,
CR and LF are percent-encoded; in properties ``:`` and ``,`` are too.
"""

from __future__ import annotations

from kaffinity.engine import LintResult
from kaffinity.findings import Severity

_COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(result: LintResult) -> str:
    lines = []
    for finding in result.findings:
        properties = [f"file={escape_property(finding.file)}"]
        if finding.line is not None:
            properties.append(f"line={finding.line}")
            properties.append(f"col={finding.column}")
        properties.append(f"title={escape_property(f'kaffinity [{finding.rule}]')}")
        message = finding.message if not finding.units else f"{finding.message} ({finding.unit_label})"
        if finding.fix:
            message += f"\nfix: {finding.fix}"
        lines.append(f"::{_COMMANDS[finding.severity]} {','.join(properties)}::{escape_data(message)}")
    return "".join(line + "\n" for line in lines)
