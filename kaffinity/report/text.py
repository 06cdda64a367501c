"""``file:line:col: severity [rule] Kind namespace/name: message``, grouped by file, with a
two-line code frame (``text``) or one line each (``concise``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from itertools import groupby

from kaffinity.engine import LintResult
from kaffinity.findings import Finding, Severity
from kaffinity.load.display import columns, escape, quote_name
from kaffinity.report.because import sentence

_COLORS = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.INFO: "34"}
_BOLD, _DIM, _CYAN, _GREEN = "1", "2", "36", "32"
Style = Callable[..., str]


def _ansi(text: str, *codes: str) -> str:
    return f"\x1b[{';'.join(codes)}m{text}\x1b[0m"


def _plain(text: str, *codes: str) -> str:
    return text


def render(result: LintResult, *, color: bool = False, sources: Mapping[str, str]) -> str:
    style: Style = _ansi if color else _plain

    blocks: list[str] = []
    lines_of: dict[str, list[str]] = {}
    for file, group in groupby(result.findings, key=lambda f: f.file):
        lines: list[str] = []
        if file not in lines_of:
            lines_of[file] = sources.get(file, "").splitlines()
        for finding in group:
            lines.append(_headline(finding, style))
            lines.extend(_frame(finding, lines_of[file], style))
            for related in finding.related:
                name = quote_name(related.file)
                where = f"{name}:{related.span.line}:{related.span.column}" if related.span else name
                note = escape(related.message or related.path)
                lines.append(f"    {style('note', _CYAN)}: {where}: {note}")
            if finding.units:
                lines.append(f"    {style('in', _CYAN)}: {escape(finding.unit_label)}")
            for cause in finding.because:  # lint --changed: why a finding elsewhere is shown
                lines.append(f"    {style('note', _CYAN)}: {escape(sentence(cause))}")
            if finding.fix:
                lines.append(f"    {style('fix', _GREEN)}: {escape(finding.fix)}")
        blocks.append("\n".join(lines))
    blocks.append(_summary(result))
    return "\n\n".join(blocks) + "\n"


def _headline(finding: Finding, style: Style) -> str:
    where = quote_name(finding.file)
    if finding.line is not None:
        where += f":{finding.line}:{finding.column}"
    severity = style(finding.severity.value, _COLORS[finding.severity], _BOLD)
    on = f"{escape(finding.object_label)}: " if finding.object_label else ""
    rule = style(f"[{escape(finding.rule)}]", _DIM)
    return f"{style(where, _BOLD)}: {severity} {rule} {on}{escape(finding.message)}"


def render_concise(result: LintResult, *, color: bool = False) -> str:
    """One line per finding, ``file:line:col: severity [rule] Kind namespace/name: message``, and
    the summary line: for a terminal, grep, or an editor's problem matcher."""
    style: Style = _ansi if color else _plain
    lines = [_headline(finding, style) for finding in result.findings]
    return "".join(f"{line}\n" for line in [*lines, _summary(result)])


def _frame(finding: Finding, lines: list[str], style: Style) -> list[str]:
    """The source line and a caret under the column.

    The line is shown with its control characters, bidirectional controls and line separators
    escaped (``kaffinity.load.display.escape``: ``\\033``, ``\\u202e``) and each tab as one space.
    The column counts code points (as the SARIF report's ``columnKind``); the caret goes under the
    same character of the line as shown: after as many terminal columns as the escaped text
    before it takes (an escape's length; two for a wide character)."""
    if finding.line is None or finding.column is None or not 0 < finding.line <= len(lines):
        return []
    line = lines[finding.line - 1].replace("\t", " ")
    source = escape(line)
    gutter = str(finding.line)
    pad = " " * len(gutter)
    caret = style("^", _COLORS[finding.severity], _BOLD)
    before = columns(escape(line[: finding.column - 1]))
    return [f"  {gutter} | {source}", f"  {pad} | {' ' * before}{caret}"]


def _summary(result: LintResult) -> str:
    counts = Counter(finding.severity for finding in result.findings)
    files = f"{result.files} file{'s' if result.files != 1 else ''}"
    # lint --changed: findings in files the change did not touch, shown for their because.
    affected = len({finding.file for finding in result.findings if finding.because})
    if affected:
        files += f" and {affected} file{'s' if affected != 1 else ''} the change affects"
    suppressed = f", {result.suppressed} suppressed" if result.suppressed else ""
    if result.skipped:
        # Files that are not Kubernetes manifests (mkdocs.yml, compose files, workflows, ...).
        suppressed += f"; {result.skipped} other YAML/JSON file{'s' if result.skipped != 1 else ''} skipped"
    if result.hidden:
        suppressed += f"; {result.hidden} below --min-severity not shown"
    known = result.new_only.known if result.new_only is not None else 0
    if result.new_only is not None and known:  # --new-from-rev, --baseline
        suppressed += f"; {result.new_only.phrase}, not shown"
    suppressed += render_counts(result)
    if not result.findings:
        return (
            f"No problems shown in {files}{suppressed}."
            if result.hidden or known
            else f"No problems found in {files}{suppressed}."
        )
    parts = [
        f"{counts[severity]} {severity.value}{_plural(counts[severity], severity)}"
        for severity in Severity
        if counts[severity]
    ]
    total = len(result.findings)
    return f"Found {total} problem{'s' if total != 1 else ''} ({', '.join(parts)}) in {files}{suppressed}."


def render_counts(result: LintResult) -> str:
    """``; 3 units rendered, 1 read as written`` when units were rendered or left as written
    (nothing when nothing was to render: the line is what it always was)."""
    summary = result.render
    if summary is None or not (summary.rendered or summary.unrendered):
        return ""
    parts = []
    if summary.rendered:
        parts.append(f"{summary.rendered} unit{'s' if summary.rendered != 1 else ''} rendered")
    if summary.unrendered:
        count = len(summary.unrendered)
        unit = "" if parts else (" unit" if count == 1 else " units")
        parts.append(f"{count}{unit} read as written (not rendered)")
    return "; " + ", ".join(parts)


def _plural(count: int, severity: Severity) -> str:
    return "s" if count != 1 and severity is not Severity.INFO else ""
