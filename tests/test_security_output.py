"""Text from a hostile checkout cannot be used against whoever reads a report (issue 31): names,
labels, annotation values, file names and a policy's message holding terminal escapes (an OSC 8
link, a screen clear), bidirectional controls (U+202E), line separators (U+2028, U+0085), a
carriage return and a forged ``file:line:col: error`` line, HTML, a Markdown link, an
``@org/team`` mention, a ``#123`` reference and a bare URL.

In every format: no raw control, bidirectional control or line separator reaches the output
(the checks read the bytes, decoded strictly as UTF-8); no forged line stands as a line of its
own. The text formats and stderr show them escaped (``\\033``, ``\\u202e``); the Markdown summary
shows them in code spans only (no HTML, link, mention, reference or autolink outside one); JSON
keeps the data exact (the decoded value is the original string), SARIF too once its own
``\\[``/``\\]``/``\\\\`` escapes are read back.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from kaffinity.engine import LintResult
from kaffinity.findings import Finding, Severity
from kaffinity.load.display import code_span, escape, json_text, markdown_lines
from kaffinity.report import render

from .kit import run, run_bytes

#: The hostile text: an OSC 8 hyperlink, a screen clear, RLO, LINE SEPARATOR, NEXT LINE, CR, a
#: forged finding line, HTML, a Markdown link, a team mention, an issue reference, a bare URL.
HOSTILE = (
    "\x1b]8;;http://x\x1b\\ \x1b[2J \u202e \u2028 \u0085 \r"
    "\nfile.yaml:1:1: error [x] fake <img src=x> [link](http://evil) @org/team #123 https://evil.example"
)
#: Raw characters no output may hold: C0 but the line break, DEL, C1, the Unicode bidirectional
#: controls, the line and paragraph separators; U+FFFD: bytes that were not UTF-8.
RAW = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufffd]"
)
#: What the hostile text shows as in the text formats: each character escaped.
SHOWN = "\\033]8;;http://x\\033\\ \\033[2J \\u202e \\u2028 \\302\\205 \\r\\nfile.yaml:1:1: error [x] fake"
#: What must not become markup, a link, a mention or a reference in Markdown.
MARKERS = ("<img", "[link](http://evil)", "@org/team", "#123", "https://evil.example", "http://x")
POLICY = "hostile-message"


def _q(text: str) -> str:
    """A YAML double-quoted scalar (JSON's escapes are YAML's)."""
    return json.dumps(text)


MANIFEST = f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {_q("web" + HOSTILE)}
  labels: {{{_q("k" + HOSTILE)}: {_q(HOSTILE)}}}
  annotations:
    {_q("note" + HOSTILE)}: {_q(HOSTILE)}
    kaffinity.io/ignore: {_q("nope" + HOSTILE + " -- " + HOSTILE)}
spec:
  replicas: 3
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      nodeSelector: {{{_q("zone" + HOSTILE)}: {_q(HOSTILE)}}}
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector:
              matchLabels: {{app: web}}
            topologyKey: {_q(HOSTILE)}
      containers: [{{name: c, image: nginx}}]
"""

POLICY_FILE = f"""\
apiVersion: kaffinity.io/v1alpha1
kind: Policy
metadata:
  name: {POLICY}
spec:
  description: {_q(HOSTILE)}
  message: {_q(HOSTILE)}
  schema:
    required: [priorityClassName]
"""


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    (tmp_path / "app.yaml").write_text(MANIFEST, encoding="utf-8")
    (tmp_path / "policy.yaml").write_text(POLICY_FILE, encoding="utf-8")
    return tmp_path


def _raw(*args: str, cwd: Path, stdin: bytes | None = None) -> tuple[int, str, str]:
    """The command, its output decoded strictly (a byte that is not UTF-8 fails the test). Kept
    over :func:`kit.run_bytes`: the strict decoding is what these tests are about (``kit.run``
    replaces what is not UTF-8)."""
    completed = run_bytes(*args, cwd=cwd, stdin=stdin)
    return completed.returncode, completed.stdout.decode("utf-8"), completed.stderr.decode("utf-8")


#: ``kaffinity lint`` of the hostile manifest with the hostile policy (add ``--format`` and
#: ``app.yaml``).
LINT_HOSTILE = ("lint", "--no-config", "--policy", "policy.yaml")


def _clean(text: str) -> None:
    found = RAW.search(text)
    assert found is None, f"raw U+{ord(found.group(0)):04X} in the output" if found else ""


def _no_forged_line(text: str) -> None:
    assert not [line for line in text.splitlines() if line.lstrip("|# -`").startswith("file.yaml")]
    assert "\nfile.yaml" not in text


@pytest.mark.parametrize("fmt", ["text", "concise", "github"])
def test_line_formats_show_the_hostile_text_escaped(hostile: Path, fmt: str) -> None:
    code, out, err = _raw(*LINT_HOSTILE, "--format", fmt, "app.yaml", cwd=hostile)
    assert code == 1, err
    _clean(out + err)
    _no_forged_line(out)
    assert SHOWN in out  # shown, escaped: the policy's message, the names, the label values
    if fmt == "github":
        assert all(line.startswith("::") for line in out.splitlines())
        assert f"title=kaffinity [{POLICY}]" in out
        return
    heads = [line for line in out.splitlines() if re.match(r"^\S.*:\d+:\d+: ", line)]
    assert heads and all(line.startswith("app.yaml:") for line in heads)
    assert any(f"error [{POLICY}] " in line for line in heads)


class _Text(HTMLParser):
    """The text of rendered HTML outside ``<code>``, the text inside, and the tags seen."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.code = 0
        self.outside: list[str] = []
        self.inside: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.code += tag == "code"

    def handle_endtag(self, tag: str) -> None:
        self.code -= tag == "code"

    def handle_data(self, data: str) -> None:
        (self.inside if self.code else self.outside).append(data)


def _html(markdown: str) -> _Text:
    parser = _Text()
    parser.feed(MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown))
    return parser


def test_markdown_shows_the_hostile_text_in_code_spans_only(hostile: Path) -> None:
    code, out, err = _raw(*LINT_HOSTILE, "--format", "markdown", "app.yaml", cwd=hostile)
    assert code == 1, err
    _clean(out + err)
    _no_forged_line(out)
    parsed = _html(out)
    table = {"table", "thead", "tbody", "tr", "th", "td", "br"}
    assert parsed.tags <= {"h2", "p", "strong", "code", *table, "details", "summary", "pre"}
    outside = "".join(parsed.outside)
    inside = "".join(parsed.inside)
    for marker in MARKERS:
        assert marker not in outside, marker  # GitHub links, mentions, references only text
        assert marker in inside, marker  # ... and the text is still shown, as it is
    # The lines as the text report shows them; CR LF is a line break in a cell (<br>).
    assert SHOWN.replace("\\r\\n", "") in inside


def test_markdown_summary_of_a_unit_escapes_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """The graph's ``<summary>`` is raw HTML: the unit name is HTML-escaped, in ``<code>``."""
    from types import SimpleNamespace

    from kaffinity.report.markdown import _graph

    monkeypatch.setattr("kaffinity.graph.picture.render_mermaid", lambda graph, findings: "graph LR\n")
    edges = SimpleNamespace(number_of_edges=lambda: 1)
    context = SimpleNamespace(graph=SimpleNamespace(graph=edges))
    unit = "<b>@org/team" + HOSTILE
    result = LintResult(
        findings=(), rules=(), files=1, documents=1, suppressed=0, load_errors=False, units=(unit,)
    )
    block = _graph(result, context)  # type: ignore[arg-type]
    _clean(block)
    assert "<code>&lt;b&gt;@org/team\\033]8;;http://x" in block
    parsed = _html(block)
    assert "@org/team" not in "".join(parsed.outside) and "b" not in parsed.tags


def _policy_finding(findings: list[dict[str, Any]]) -> dict[str, Any]:
    return next(finding for finding in findings if finding["rule"] == POLICY)


def test_json_keeps_the_data_exact(hostile: Path) -> None:
    code, out, err = _raw(*LINT_HOSTILE, "--format", "json", "app.yaml", cwd=hostile)
    assert code == 1, err
    _clean(out + err)
    assert "\\u202e" in out and "\\u2028" in out and "\\u0085" in out and "\\u001b" in out
    report = json.loads(out)
    finding = _policy_finding(report["findings"])
    assert finding["message"].startswith(HOSTILE + ": ")
    assert finding["object"]["name"] == "web" + HOSTILE


def _sarif_text(text: str) -> str:
    """A SARIF plain-text message as a viewer reads it (vscode-codeql ``unescapeSarifText``)."""
    return re.sub(r"\\([\\\[\]])", r"\1", text)


def test_sarif_keeps_the_data_exact_and_has_no_link(hostile: Path) -> None:
    code, out, err = _raw(*LINT_HOSTILE, "--format", "sarif", "app.yaml", cwd=hostile)
    assert code == 1, err
    _clean(out + err)
    run_ = json.loads(out)["runs"][0]
    result = next(result for result in run_["results"] if result["ruleId"] == POLICY)
    text = result["message"]["text"]
    assert "[link](http://evil)" not in text and "\\[link\\](http://evil)" in text
    assert _sarif_text(text).startswith(HOSTILE + ": ")
    rule = next(rule for rule in run_["tool"]["driver"]["rules"] if rule["id"] == POLICY)
    assert "markdown" not in rule["help"]  # a policy's description is not given as Markdown
    assert _sarif_text(rule["help"]["text"]).startswith(HOSTILE)
    assert _sarif_text(rule["shortDescription"]["text"]) == HOSTILE
    built_in = next(rule for rule in run_["tool"]["driver"]["rules"] if rule["id"] == "api-validation")
    assert built_in["help"]["markdown"]  # the built-in rules keep theirs


def test_stderr_notes_are_one_line_each(tmp_path: Path) -> None:
    """A file name and a policy's expression reach stderr (a parse error, a policy that does not
    compile): escaped, one line each."""
    name = "b\nfile.yaml:1:1: error [x] fake\x1b[2J\u202e\u2028.yaml"
    (tmp_path / name).write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p\n")
    (tmp_path / "app.yaml").write_text(MANIFEST, encoding="utf-8")
    (tmp_path / "bad.yaml").write_text(
        f"apiVersion: kaffinity.io/v1alpha1\nkind: Policy\nmetadata: {{name: bad}}\nspec:\n"
        f"  message: m\n  expression: {_q('object.' + chr(0x202E) + HOSTILE)}\n",
        encoding="utf-8",
    )
    code, out, err = _raw("graph", "--no-config", ".", cwd=tmp_path)
    assert code == 2
    _clean(out + err)
    _no_forged_line(err)
    assert '"b\\nfile.yaml:1:1: error [x] fake\\033[2J\\u202e\\u2028.yaml":' in err
    code, out, err = _raw("lint", "--no-config", "--policy", "bad.yaml", "app.yaml", cwd=tmp_path)
    assert code == 2
    _clean(out + err)
    _no_forged_line(err)
    assert any(line.startswith("bad.yaml:6:3: error: spec.expression") for line in err.splitlines())


def test_policy_test_output_is_escaped(hostile: Path) -> None:
    code, out, err = _raw("policy", "test", "--no-config", ".", cwd=hostile)
    assert code == 1, err
    _clean(out + err)
    _no_forged_line(out)
    assert f"unexpected [{POLICY}] {SHOWN}" in out


@pytest.mark.parametrize("fmt", ["mermaid", "dot", "json"])
def test_graph_formats_carry_no_raw_character(hostile: Path, fmt: str) -> None:
    code, out, err = _raw("graph", "--no-config", "--format", fmt, "app.yaml", cwd=hostile)
    assert code == 0, err
    _clean(out + err)
    _no_forged_line(out)
    if fmt == "json":
        assert any(node.get("name") == "web" + HOSTILE for node in json.loads(out)["nodes"])
    else:
        assert "\\u202e" in out  # the name and the topology key are drawn, escaped


def test_place_output_is_escaped(hostile: Path) -> None:
    node = "n" + HOSTILE
    (hostile / "cluster.yaml").write_text(
        f"apiVersion: v1\nkind: Node\nmetadata:\n  name: {_q(node)}\n"
        f"  labels: {{kubernetes.io/hostname: {_q(node)}, {_q('zone' + HOSTILE)}: {_q(HOSTILE)}}}\n"
        'status:\n  allocatable: {cpu: "4", memory: 16Gi, pods: "110"}\n',
        encoding="utf-8",
    )
    for fmt in ("text", "json"):
        code, out, err = _raw(
            "place", "--no-config", "--cluster", "cluster.yaml", "--format", fmt, "app.yaml", cwd=hostile
        )
        assert code in (0, 1), err
        _clean(out + err)
        _no_forged_line(out)
        if fmt == "json":
            assert json.loads(out)["nodes"] == [node]


def test_code_frame_shows_the_line_escaped_with_the_caret_in_place(tmp_path: Path) -> None:
    """A raw U+202E in the source line: shown as ``\\u202e``; the caret under the column's
    character of the line as shown (after the escape's six columns, not one)."""
    (tmp_path / "frame.yaml").write_text(
        'apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {a\u202eb: c, "bad key!": x}\n'
        "spec:\n  containers: [{name: c, image: nginx}]\n",
        encoding="utf-8",
    )
    completed = run("lint", "--no-config", "frame.yaml", cwd=tmp_path)
    assert completed.returncode == 1
    _clean(completed.stdout)
    lines = completed.stdout.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("frame.yaml:5:20:")))
    source, caret = lines[at + 1], lines[at + 2]
    assert source == '  5 |   labels: {a\\u202eb: c, "bad key!": x}'
    assert source[caret.index("^")] == '"'
    first = lines.index(next(line for line in lines if line.startswith("frame.yaml:5:12:")))
    assert lines[first + 1][lines[first + 2].index("^")] == "a"


# -- the reports in process: a rule name that is itself hostile ---------------------------------


def _result(rule: str) -> LintResult:
    finding = Finding(
        file="a.yaml",
        line=1,
        column=1,
        rule=rule,
        message=HOSTILE,
        severity=Severity.ERROR,
        category="policy",
        fix=HOSTILE,
    )
    return LintResult(findings=(finding,), rules=(), files=1, documents=1, suppressed=0, load_errors=False)


@pytest.mark.parametrize("fmt", ["text", "concise", "github", "markdown"])
def test_a_hostile_rule_name_is_escaped_in_every_line_format(fmt: str) -> None:
    """Policy names are validated as DNS subdomains; the reports escape a rule name anyway."""
    out = render(_result("x" + HOSTILE), fmt, sources={"a.yaml": "a: b\n"})
    _clean(out)
    _no_forged_line(out)
    if fmt == "markdown":
        parsed = _html(out)
        assert not any(marker in "".join(parsed.outside) for marker in MARKERS)
    elif fmt == "github":  # a property: ":" and "," percent-encoded too
        assert (
            "title=kaffinity [x\\033]8;;http%3A//x\\033\\ \\033[2J \\u202e \\u2028 \\302\\205 \\r\\n" in out
        )
    else:
        assert "[x" + SHOWN in out


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_a_hostile_rule_name_stays_exact_in_json(fmt: str) -> None:
    out = render(_result("x" + HOSTILE), fmt)
    _clean(out)
    document = json.loads(out)
    rule = document["findings"][0]["rule"] if fmt == "json" else document["runs"][0]["results"][0]["ruleId"]
    assert rule == "x" + HOSTILE


# -- the helpers ---------------------------------------------------------------------------------

TRICKY = [
    "`",
    "a``b",
    " a",
    "a ",
    " ",
    "a|b",
    "a\\|b",
    "\\",
    "` x `",
    "``",
    "<b>&amp;</b>",
    "@org #1 www.x.com",
]


@pytest.mark.parametrize("text", TRICKY)
def test_code_span_renders_the_text_as_it_is(text: str) -> None:
    """In a paragraph and in a table cell, the code span reads back as the text (escaped)."""
    paragraph = _html(code_span(text))
    assert "".join(paragraph.inside) == escape(text) and not "".join(paragraph.outside).strip()
    cell = _html(f"| h |\n|---|\n| {code_span(text, table=True)} |\n")
    assert "".join(cell.inside) == escape(text)


def test_markdown_lines_split_every_line_break() -> None:
    assert markdown_lines("a\r\nb\rc\nd") == "`a`<br>`b`<br>`c`<br>`d`"
    assert markdown_lines("") == ""


def test_escape_makes_bidi_controls_and_separators_visible() -> None:
    assert escape("a\u202eb\u2028c\u2029d\u2066e\u200ff\u061cg\u0085h") == (
        "a\\u202eb\\u2028c\\u2029d\\u2066e\\u200ff\\u061cg\\302\\205h"
    )
    assert escape("é中\u200d") == "é中\u200d"  # letters and joiners are not controls


def test_json_text_escapes_what_json_dumps_leaves_raw() -> None:
    value = {"k\u202e": ["\x7f\x85\u2028\u2029\u200e\x1b é"]}
    text = json_text(value)
    _clean(text)
    assert json.loads(text) == value


def test_the_progress_line_shows_a_hostile_file_name_escaped() -> None:
    """The progress line (stderr, on a terminal) names the file being read: escaped."""
    from kaffinity.load.progress import TerminalProgress

    from .test_progress import FakeTerminal, redrawn

    stream = FakeTerminal()
    progress = TerminalProgress(stream, delay=0.0)
    try:
        with progress.stage("reading files", 2):
            progress.tick("a\u202eb\x1b]0;t\x07\nfile.yaml")
            shown = redrawn(stream, "file.yaml")
    finally:
        progress.close()
    assert any("a\\u202eb\\033]0;t\\a\\nfile.yaml" in line for line in shown)
    drawn = stream.getvalue()
    assert "\u202e" not in drawn and "\x07" not in drawn and "\x1b]0;" not in drawn


def test_the_last_line_of_defence_is_one_escaped_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unexpected exception whose message quotes the input: one line, escaped, exit 3."""
    from kaffinity import cli

    def crash(**_: object) -> None:
        raise ValueError("name" + HOSTILE)

    monkeypatch.delenv("KAFFINITY_DEBUG", raising=False)
    monkeypatch.setattr(cli, "app", crash)
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == 3
    err = capsys.readouterr().err
    _clean(err)
    assert err.count("\n") == 1 and err.startswith("kaffinity: internal error: ValueError: name\\033]8;;")


def test_json_text_escapes_del_in_an_ascii_text() -> None:
    assert json_text({"a": "\x7f"}, indent=None) == '{"a": "\\u007f"}'
