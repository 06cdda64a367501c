"""The Markdown summary (``--format markdown``, the GitHub job summary): verdict, counts, the
findings table and its escaping, links to GitHub, the row cap, and the Mermaid graph.

The rendered summary is read back with markdown-it-py (CommonMark with GFM tables; it ships
with rich, which typer depends on), so a test sees the table GitHub would draw, cell by cell.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from kaffinity.config import Settings
from kaffinity.context import Context
from kaffinity.engine import LintResult
from kaffinity.findings import Finding, Severity
from kaffinity.load.files import load
from kaffinity.load.parse import parse
from kaffinity.report import markdown
from kaffinity.report.markdown import MAX_ROWS, github_links, render

from .kit import EXAMPLES, REPO, lint_paths, run

GITHUB = {
    "GITHUB_SERVER_URL": "https://github.example.com/",
    "GITHUB_REPOSITORY": "acme/manifests",
    "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567",
}
GRAPH_EXAMPLE = EXAMPLES / "all-namespaces-anti-affinity" / "fail.yaml"


def finding(message: str = "m", *, file: str = "a.yaml", line: int | None = 3, **extra: object) -> Finding:
    fields: dict[str, object] = {
        "file": file,
        "line": line,
        "column": None if line is None else 5,
        "rule": "test-rule",
        "message": message,
        "severity": Severity.ERROR,
        "category": "test",
        **extra,
    }
    return Finding(**fields)  # type: ignore[arg-type]


def result_of(*findings: Finding, files: int = 1, **extra: object) -> LintResult:
    fields: dict[str, object] = {
        "findings": tuple(findings),
        "rules": (),
        "files": files,
        "documents": files,
        "suppressed": 0,
        "load_errors": False,
        **extra,
    }
    return LintResult(**fields)  # type: ignore[arg-type]


class _Tables(HTMLParser):
    """Rows of the HTML tables (cells as text, ``<br>`` as a newline) and the tags seen in cells."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None
        self.tags_in_cells: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.cell = []
        elif self.cell is not None:
            self.tags_in_cells.add(tag)
            if tag == "br":
                self.cell.append("\n")
            if tag == "a":
                self.links.append(dict(attrs).get("href") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append("".join(self.cell))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def tables(summary: str) -> _Tables:
    parser = _Tables()
    parser.feed(MarkdownIt("commonmark").enable("table").render(summary))
    return parser


def findings_rows(summary: str) -> list[list[str]]:
    """The rows of the findings table (the one whose header starts with "severity")."""
    rows = tables(summary).rows
    start = next(index for index, row in enumerate(rows) if row[:1] == ["severity"])
    return rows[start + 1 :]


def test_hostile_text_stays_in_its_cell() -> None:
    message = (
        "a | b <script>alert(1)</script> &amp; **bold** `code` [x](javascript:1) ~~s~~ "
        "_i_\\\nline 2\r\nline 3"
    )
    fix = "use <b>this</b> | not that"
    summary = render(result_of(finding(message, fix=fix)), environ={})
    rows = findings_rows(summary)
    assert len(rows) == 1
    assert rows[0] == ["error", "a.yaml:3:5", "test-rule", message.replace("\r\n", "\n"), fix]
    parsed = tables(summary)
    assert parsed.tags_in_cells <= {"br", "code"}  # `code` is the rule name's code span
    # In code spans: the source holds the text as it is, the rendered HTML holds no tag of it.
    html = MarkdownIt("commonmark").enable("table").render(summary)
    assert "<script" not in html and "<b>" not in html
    assert all("\n" not in line or not line.startswith("| error") for line in summary.splitlines())


def test_counts_and_verdict() -> None:
    findings = [
        finding("e"),
        finding("w1", severity=Severity.WARNING),
        finding("w2", severity=Severity.WARNING, line=4),
        finding("i", severity=Severity.INFO),
    ]
    summary = render(result_of(*findings, files=12, suppressed=1), environ={})
    assert "4 problems (1 error, 2 warnings, 1 info) in 12 files, 1 suppressed." in summary
    counts = dict((row[0], row[1]) for row in tables(summary).rows[1:7])
    assert counts == {
        "error": "1",
        "warning": "2",
        "info": "1",
        "files": "12",
        "documents": "12",
        "suppressed": "1",
    }
    # Errors first, then warnings, then infos.
    assert [row[0] for row in findings_rows(summary)] == ["error", "warning", "warning", "info"]


def test_empty_run() -> None:
    summary = render(result_of(files=0), environ={})
    assert "No problems found in 0 files." in summary
    assert "| severity |" not in summary
    assert "<details>" not in summary


def test_rows_are_capped() -> None:
    extra = 7
    findings = [finding(f"problem {n}", line=n + 1) for n in range(MAX_ROWS + extra)]
    summary = render(result_of(*findings), environ={})
    assert len(findings_rows(summary)) == MAX_ROWS
    assert f"and {extra} more — see the annotations or the SARIF report" in summary


def test_the_summary_stays_far_below_githubs_1_mib_limit() -> None:
    # Long messages made of characters that grow most when escaped.
    findings = [finding("<&>|" * 2_000, fix="<&>" * 2_000, line=n + 1) for n in range(2 * MAX_ROWS)]
    summary = render(result_of(*findings), environ={})
    assert len(summary.encode()) < 512 * 1024
    rows = findings_rows(summary)
    assert 0 < len(rows) < MAX_ROWS
    assert f"and {len(findings) - len(rows)} more" in summary
    assert rows[0][3].endswith("…")


def test_no_links_without_the_github_variables(tmp_path: Path) -> None:
    manifest = tmp_path / "app.yaml"
    manifest.write_text("kind: x\n")
    result = result_of(finding(file=str(manifest)))
    assert "](" not in render(result, environ={"GITHUB_WORKSPACE": str(tmp_path)})
    assert github_links({**GITHUB}) is None
    links = github_links({**GITHUB, "GITHUB_WORKSPACE": str(tmp_path)})
    assert links is not None
    assert links.server == "https://github.example.com"


def test_links_to_the_file_and_line_under_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "repo"
    (workspace / "k8s dir").mkdir(parents=True)
    (workspace / "k8s dir" / "app.yaml").write_text("kind: x\n")
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text("kind: x\n")
    monkeypatch.chdir(workspace)
    result = result_of(
        finding(file="k8s dir/app.yaml", line=7),
        finding(file="k8s dir/app.yaml", line=None),
        finding(file=str(outside), line=2),
        finding(file="<stdin>", line=4),
        finding(file="missing.yaml", line=1),
    )
    summary = render(result, environ={**GITHUB, "GITHUB_WORKSPACE": str(workspace)})
    base = f"https://github.example.com/acme/manifests/blob/{GITHUB['GITHUB_SHA']}"
    assert tables(summary).links == [f"{base}/k8s%20dir/app.yaml#L7", f"{base}/k8s%20dir/app.yaml"]
    locations = [row[1] for row in findings_rows(summary)]
    assert f"{outside}:2:5" in locations
    assert "<stdin>:4:5" in locations
    assert "missing.yaml:1:5" in locations


def test_stdin_findings_are_plain_locations() -> None:
    environ = {**GITHUB, "GITHUB_WORKSPACE": str(REPO)}
    text = GRAPH_EXAMPLE.read_text(encoding="utf-8")
    completed = run("lint", "--no-config", "--format", "markdown", "-", stdin=text, cwd=REPO, env=environ)
    assert completed.returncode == 1, completed.stderr
    rows = findings_rows(completed.stdout)
    assert len(rows) == 2
    assert all(row[1].startswith("<stdin>:") for row in rows)
    assert "](" not in completed.stdout
    assert "`<stdin>:" in completed.stdout  # a code span, not a link


def test_load_and_internal_errors_are_mentioned() -> None:
    result = result_of(
        finding("cannot read", line=None, rule="parse-error"),
        load_errors=True,
        internal_errors=("rule x crashed: <boom>",),
    )
    summary = render(result, environ={})
    assert "1 input could not be read or parsed" in summary
    assert "internal error: `rule x crashed: <boom>`" in summary
    assert "The run failed" in summary


def _context(path: Path) -> tuple[LintResult, Context]:
    files = load([str(path)])
    context = Context(files, Settings(), None)
    return lint_paths(path), context


def test_the_graph_is_drawn_when_there_are_relations() -> None:
    result, context = _context(GRAPH_EXAMPLE)
    summary = render(result, context=context, environ={})
    assert (
        "<details>\n<summary>Affinity graph (3 relations)</summary>\n\n```mermaid\nflowchart LR\n" in summary
    )
    assert summary.rstrip().endswith("```\n\n</details>")
    assert "The run fails: findings at or above `error`" in summary
    assert "```mermaid" not in render(result, environ={})  # no context, no graph


def test_no_graph_without_relations() -> None:
    files = [parse("a.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\n")]
    context = Context(files, Settings(), None)
    summary = render(result_of(), context=context, environ={})
    assert "mermaid" not in summary
    assert "<details>" not in summary


def test_a_graph_too_large_for_github_is_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    result, context = _context(GRAPH_EXAMPLE)
    monkeypatch.setattr(markdown, "MERMAID_MAX_TEXT", 100)
    summary = render(result, context=context, environ={})
    assert "```mermaid" not in summary
    assert "too large for GitHub to draw" in summary
    assert "`kaffinity graph" in summary


def test_output_is_deterministic() -> None:
    result, context = _context(GRAPH_EXAMPLE)
    environ = {**GITHUB, "GITHUB_WORKSPACE": str(REPO)}
    first = render(result, context=context, environ=environ)
    assert first == render(result, context=context, environ=environ)


def test_cli_markdown_format_and_report(tmp_path: Path) -> None:
    environ = {**GITHUB, "GITHUB_WORKSPACE": str(REPO)}
    target = tmp_path / "summary.md"
    completed = run(
        "lint",
        "--no-config",
        "--format",
        "markdown",
        "--report",
        f"markdown={target}",
        str(GRAPH_EXAMPLE.relative_to(REPO)),
        cwd=REPO,
        env=environ,
    )
    assert completed.returncode == 1, completed.stderr
    assert completed.stdout == target.read_text(encoding="utf-8")
    link = f"/blob/{GITHUB['GITHUB_SHA']}/examples/all-namespaces-anti-affinity/fail.yaml#L25)"
    assert link in completed.stdout
    assert "```mermaid" in completed.stdout
