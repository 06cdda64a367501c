"""A Markdown summary of a lint run: the GitHub Actions job summary (``$GITHUB_STEP_SUMMARY``).

GitHub-flavoured Markdown: a heading and a one-line verdict, the counts by severity, a table of
findings whose locations link to the file and line on GitHub, and the affinity graph as Mermaid.

Limits followed:

- a step's summary may hold at most 1 MiB ("Adding a job summary",
  https://docs.github.com/en/actions/using-workflows/workflow-commands-for-github-actions#adding-a-job-summary):
  the table stops at :data:`MAX_ROWS` rows or :data:`TABLE_BUDGET` characters, and each message
  at :data:`MAX_CELL` characters, so the whole summary stays far below it;
- GitHub renders Mermaid with mermaid.js, whose defaults refuse a diagram text above 50,000
  characters (``maxTextSize``, https://mermaid.js.org/config/schema-docs/config-properties-maxtextsize.html)
  or with more than 500 edges (``maxEdges``,
  https://mermaid.js.org/config/schema-docs/config-properties-maxedges.html); GitHub documents
  no limit of its own, so a larger graph is left out with a pointer to ``kaffinity graph``.
- links: ``{GITHUB_SERVER_URL}/{GITHUB_REPOSITORY}/blob/{GITHUB_SHA}/{path}#L{line}``, the
  variables GitHub sets on every runner ("Default environment variables",
  https://docs.github.com/en/actions/learn-github-actions/variables#default-environment-variables).

Text from the input (messages, which quote names, labels and a policy's ``messageExpression``;
fix hints; file names; rule names, a policy's among them; notices; unit names) is shown as code
spans (``kaffinity.load.display.code_span``), one per line, the lines joined by ``<br>``: in a
code span GitHub renders no HTML, emphasis, link or image, and its filters make no ``@mention``
(which would notify a user or team of a posted comment), ``#123`` reference, or autolink
(``www.``, ``https://``, e-mail; GFM "Autolinks (extension)"). Entities (``&#64;``) or backslashes
would not do: GitHub's mention, issue-reference and SHA filters (html-pipeline ``MentionFilter``
and the like) run on the text nodes of the rendered HTML, entities decoded, and skip only those
under ``IGNORE_PARENTS = %w(pre code a style script)``; nor could a list of patterns keep up with
a repository's own autolink references (``JIRA-123``).
In a table, ``|`` is written ``\\|``, which the GFM table extension reads back as ``|`` inside a
code span too (https://github.github.com/gfm/#tables-extension-, example 200). Control
characters, bidirectional controls and line separators are escaped (``\\033``, ``\\u202e``) as in
the text report. The one name in HTML (the graph's ``<summary>``) is HTML-escaped in ``<code>``.
"""

from __future__ import annotations

import html
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote

from kaffinity.findings import Finding, Severity
from kaffinity.load import display
from kaffinity.report.because import sentences

if TYPE_CHECKING:
    from kaffinity.context import Context
    from kaffinity.engine import LintResult

#: At most this many findings in the table; the rest are counted.
MAX_ROWS = 200
#: At most this many characters of table (well under GitHub's 1 MiB per step with the graph).
TABLE_BUDGET = 400_000
#: A message or fix hint longer than this is cut (before escaping).
MAX_CELL = 1_000
#: mermaid.js defaults GitHub renders with: ``maxTextSize`` and ``maxEdges``.
MERMAID_MAX_TEXT = 50_000
MERMAID_MAX_EDGES = 500

_ORDER = (Severity.ERROR, Severity.WARNING, Severity.INFO)
_STDIN = "<stdin>"


@dataclass(frozen=True, slots=True)
class GitHubLinks:
    """Where files of the run live on GitHub: ``server/repository/blob/sha``, and the checkout."""

    server: str
    repository: str
    sha: str
    workspace: str

    def url(self, file: str, line: int | None) -> str | None:
        """The blob URL of ``file`` at ``line``; None when the file is not under the workspace
        (or is not a file on disk: stdin, a ``--stdin-filename`` that names no file)."""
        if file == _STDIN or not os.path.isfile(file):
            return None
        relative = _under(os.path.abspath(file), os.path.abspath(self.workspace))
        if relative is None:
            relative = _under(os.path.realpath(file), os.path.realpath(self.workspace))
        if relative is None:
            return None
        anchor = f"#L{line}" if line is not None else ""
        path = quote(os.fsencode(relative.replace(os.sep, "/")), safe="/")
        return f"{self.server}/{self.repository}/blob/{quote(self.sha, safe='')}/{path}{anchor}"


def _under(path: str, folder: str) -> str | None:
    relative = os.path.relpath(path, folder)
    return None if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative


def github_links(environ: Mapping[str, str] | None = None) -> GitHubLinks | None:
    """The GitHub location of the checkout, from the runner's variables; None unless all of
    ``GITHUB_SERVER_URL``, ``GITHUB_REPOSITORY``, ``GITHUB_SHA`` and ``GITHUB_WORKSPACE`` are set."""
    env = os.environ if environ is None else environ
    names = ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_SHA", "GITHUB_WORKSPACE")
    values = [env.get(name, "").strip() for name in names]
    if not all(values):
        return None
    server, repository, sha, workspace = values
    return GitHubLinks(server.rstrip("/"), repository.strip("/"), sha, workspace)


def escape_markdown(text: str, *, table: bool = True) -> str:
    """Text from the input made inert Markdown for a table cell (``table``) or a paragraph: code
    spans, one per line, joined by ``<br>`` (``kaffinity.load.display.markdown_lines``)."""
    return display.markdown_lines(text, table=table)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _severity_words(count: int, severity: Severity) -> str:
    return f"{count} {severity.value}" if severity is Severity.INFO else _plural(count, severity.value)


def verdict(result: LintResult) -> str:
    """One line, as the text report's summary: "3 problems (1 error, 2 warnings) in 12 files"."""
    counts = Counter(finding.severity for finding in result.findings)
    files = _plural(result.files, "file")
    suppressed = f", {result.suppressed} suppressed" if result.suppressed else ""
    known = result.new_only
    if known is not None and known.known:  # --new-from-rev, --baseline
        suppressed += f"; {known.phrase}, not shown"
    if not result.findings:
        return f"No {'new ' if known is not None else ''}problems found in {files}{suppressed}."
    parts = ", ".join(_severity_words(counts[s], s) for s in _ORDER if counts[s])
    return f"{_plural(len(result.findings), 'problem')} ({parts}) in {files}{suppressed}."


def render(
    result: LintResult, *, context: Context | None = None, environ: Mapping[str, str] | None = None
) -> str:
    """The summary; ``context`` (the run's) adds the affinity graph, ``environ`` (default: the
    process environment) gives the GitHub variables the links are made of."""
    links = github_links(environ)
    blocks = ["## kaffinity", _status(result, context), _counts(result)]
    notes = _notes(result)
    if notes:
        blocks.append(notes)
    rendering = _rendering(result)
    if rendering:
        blocks.append(rendering)
    if result.findings:
        blocks.append(_table(result.findings, links))
    graph = _graph(result, context)
    if graph:
        blocks.append(graph)
    return "\n\n".join(blocks) + "\n"


def _status(result: LintResult, context: Context | None) -> str:
    line = f"**{verdict(result)}**"
    if context is not None and context.settings.fail_on is not None:
        threshold = context.settings.fail_on.value
        if result.exit_code:
            line += " The run failed: some input could not be read, parsed, or linted."
        elif result.failed(context.settings.fail_on):
            line += f" The run fails: findings at or above `{threshold}` (`--fail-on`)."
        else:
            line += f" The run passes: nothing at or above `{threshold}` (`--fail-on`)."
    elif result.exit_code:
        line += " The run failed: some input could not be read, parsed, or linted."
    return line


def _counts(result: LintResult) -> str:
    counts = Counter(finding.severity for finding in result.findings)
    rows = [(severity.value, counts[severity]) for severity in _ORDER]
    rows += [("files", result.files), ("documents", result.documents), ("suppressed", result.suppressed)]
    if result.skipped:
        rows.append(("skipped (not manifests)", result.skipped))
    summary = result.render
    if summary is not None and (summary.rendered or summary.unrendered):
        rows.append(("units rendered", summary.rendered))
        rows.append(("units read as written (not rendered)", len(summary.unrendered)))
    lines = ["| | count |", "|---|---:|"]
    lines += [f"| {name} | {count} |" for name, count in rows]
    return "\n".join(lines)


def _notes(result: LintResult) -> str:
    lines = []
    if result.load_errors:
        parse_errors = sum(1 for finding in result.findings if finding.rule == "parse-error")
        lines.append(
            f"- {_plural(parse_errors, 'input')} could not be read or parsed "
            "(the `parse-error` findings below); every other file was linted."
        )
    for message in result.notices:
        lines.append(f"- {escape_markdown(_cut(message), table=False)}")
    for message in result.internal_errors:
        lines.append(f"- internal error: {escape_markdown(_cut(message), table=False)}")
    return "\n".join(lines)


#: Units read as written the summary names one by one; the JSON and SARIF reports list all.
MAX_UNRENDERED = 20


def _rendering(result: LintResult) -> str:
    """How the run rendered: the engines used for charts and overlays, and the units read as
    written with why; "" when rendering was off or there was nothing to render."""
    summary = result.render
    if summary is None or not summary.enabled:
        return ""
    engines = [
        f"{what} with `{engine}`"
        for what, engine in (("charts", summary.helm), ("overlays", summary.kustomize))
        if engine is not None
    ]
    if not engines and not summary.unrendered:
        return ""
    lines = [f"Rendered {' and '.join(engines)}." if engines else "Nothing could be rendered."]
    if summary.unrendered:
        count = len(summary.unrendered)
        lines[0] += f" {_plural(count, 'unit')} read as written, not rendered:"
        lines.append("")
        for unit, reason in summary.unrendered[:MAX_UNRENDERED]:
            lines.append(
                f"- {escape_markdown(_cut(unit), table=False)}: {escape_markdown(_cut(reason), table=False)}"
            )
        if count > MAX_UNRENDERED:
            lines.append(f"- … and {count - MAX_UNRENDERED} more (the JSON and SARIF reports list them all)")
    return "\n".join(lines)


def _location(finding: Finding, links: GitHubLinks | None) -> str:
    name = display.quote_name(finding.file)
    where = name if finding.line is None else f"{name}:{finding.line}:{finding.column}"
    url = links.url(finding.file, finding.line) if links is not None else None
    text = escape_markdown(where)
    return f"[{text}]({url})" if url else text


def _table(findings: tuple[Finding, ...], links: GitHubLinks | None) -> str:
    """Errors first, then warnings, then infos; in each, the report order (file, line, column)."""
    ordered = sorted(findings, key=lambda finding: -finding.severity.rank)
    lines = ["| severity | location | rule | message | fix |", "|---|---|---|---|---|"]
    size = sum(len(line) + 1 for line in lines)
    shown = 0
    for finding in ordered:
        fix = escape_markdown(_cut(finding.fix)) if finding.fix else ""
        message = f"{finding.message} ({finding.unit_label})" if finding.units else finding.message
        if finding.because:  # lint --changed: why a finding in a file that did not change
            message += f" ({sentences(finding.because)})"
        rule = display.code_span(finding.rule, table=True)
        row = (
            f"| {finding.severity.value} | {_location(finding, links)} | {rule} "
            f"| {escape_markdown(_cut(message))} | {fix} |"
        )
        if shown >= MAX_ROWS or size + len(row) + 1 > TABLE_BUDGET:
            break
        lines.append(row)
        size += len(row) + 1
        shown += 1
    table = "\n".join(lines)
    rest = len(ordered) - shown
    if rest:
        table += f"\n\n… and {rest} more — see the annotations or the SARIF report."
    return table


def _graph(result: LintResult, context: Context | None) -> str:
    """The affinity graph as Mermaid in a ``<details>`` block; "" when there is nothing to draw."""
    if context is None:
        return ""
    graph = context.graph
    relations = graph.graph.number_of_edges()
    if not relations:
        return ""
    from kaffinity.graph.picture import render_mermaid

    text = render_mermaid(graph, result.findings)
    # Raw HTML (the block is HTML up to its blank line): the unit name escaped for HTML, in <code>.
    of = f" of unit <code>{html.escape(display.escape(result.units[0]))}</code>" if result.units else ""
    title = f"<summary>Affinity graph{of} ({_plural(relations, 'relation')})</summary>"
    if len(text) > MERMAID_MAX_TEXT or relations > MERMAID_MAX_EDGES:
        body = (
            f"The graph is too large for GitHub to draw ({len(text):,} characters of Mermaid, "
            f"{_plural(relations, 'edge')}; GitHub's Mermaid renderer stops at "
            f"{MERMAID_MAX_TEXT:,} characters or {MERMAID_MAX_EDGES} edges). Draw it with "
            "`kaffinity graph --format dot PATHS | dot -Tsvg > graph.svg`, "
            "or `kaffinity graph` on fewer paths."
        )
    else:
        body = f"```mermaid\n{text.rstrip()}\n```"
    return f"<details>\n{title}\n\n{body}\n\n</details>"
