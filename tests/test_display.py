"""Reports that cannot be broken or used against the terminal: file names that are not UTF-8,
control characters from the input (label keys, topology keys, object names, file names,
``--stdin-filename``), in every format."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from kaffinity.load.display import escape, json_name, quote_name, utf8, utf8_tree

from .kit import run_bytes

#: Raw control characters that may not reach a terminal (C0 but the line break, DEL, C1).
_RAW = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")

#: A workload whose object name, namespace, label key and topology key carry line breaks and
#: terminal escapes (an OSC title change, a colour), and a forged ``file:line:col: error`` line.
HOSTILE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: "we\\nb\\e[31m"
  namespace: "n\\ns\\x9b"
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector:
              matchLabels: {"\\e]0;pwned\\a": x, app: web}
            topologyKey: "kubernetes.io/host\\nforged.yaml:1:1: error [x] y\\e[0m"
      nodeSelector: {"zone\\e[2J": a}
      containers: [{name: c, image: nginx}]
"""


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A folder with the hostile manifest under a non-UTF-8 name and under a name with a line
    break and an ESC-sequence."""
    (tmp_path / os.fsdecode(b"a\xff.yaml")).write_text(HOSTILE)
    (tmp_path / "b\n\x1b[31mc.yaml").write_text(HOSTILE)
    return tmp_path


def test_escape_and_quote_name() -> None:
    assert quote_name("plain/é.yaml") == "plain/é.yaml"
    assert quote_name(os.fsdecode(b"caf\xe9.yaml")) == '"caf\\351.yaml"'  # as git shows it
    assert quote_name("a\nb\x1b.yaml") == '"a\\nb\\033.yaml"'
    assert quote_name('a"b') == '"a\\"b"'
    assert escape("key\x1b]0;t\x07 \x9b") == "key\\033]0;t\\a \\302\\233"
    assert escape("a\\b") == "a\\b"  # messages are not quoted: only controls are escaped
    assert utf8(os.fsdecode(b"\xff") + "\x1b") == "\\377\x1b"  # JSON escapes the ESC itself
    assert json_name("a\nb") == "a\nb"
    assert utf8_tree({os.fsdecode(b"k\xff"): [os.fsdecode(b"\xfe")]}) == {"k\\377": ["\\376"]}


@pytest.mark.parametrize("fmt", ["text", "github", "markdown"])
def test_line_formats_carry_no_raw_control_character(hostile: Path, fmt: str) -> None:
    completed = run_bytes("lint", "--no-config", "--format", fmt, ".", cwd=hostile)
    assert completed.returncode == 1, completed.stderr
    out = completed.stdout
    assert _RAW.search(out) is None, out
    text = out.decode("utf-8")  # strict: valid UTF-8
    if fmt == "markdown":  # in a code span: the name as the text report shows it
        assert '`"a\\377.yaml' in text
        return
    # Every format names files relative to the working folder, without "./" (issue 33).
    assert '"a\\377.yaml' in text
    assert "b\\n\\033[31mc.yaml" in text
    if fmt == "text":
        # Every finding line names one of the two files: no forged line.
        heads = [line for line in text.splitlines() if re.match(r"^\S.*:\d+:\d+: ", line)]
        names = ('"a\\377.yaml":', '"b\\n\\033[31mc.yaml":')
        assert heads and all(line.startswith(names) for line in heads)
        assert not any(line.startswith("forged.yaml") for line in text.splitlines())


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_json_formats_are_valid_utf8(hostile: Path, fmt: str) -> None:
    completed = run_bytes("lint", "--no-config", "--format", fmt, ".", cwd=hostile)
    assert completed.returncode == 1, completed.stderr
    document = json.loads(completed.stdout.decode("utf-8"))  # strict UTF-8, then JSON
    text = json.dumps(document)
    assert "\\ud" not in text  # no lone surrogate escaped by JSON either
    if fmt == "json":
        files = {finding["file"] for finding in document["findings"]}
        assert files == {'"a\\377.yaml"', "b\n\x1b[31mc.yaml"}
    else:
        uris = {
            result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for result in document["runs"][0]["results"]
        }
        assert uris == {"a%FF.yaml", "b%0A%1B%5B31mc.yaml"}  # RFC 3986 over the name's bytes


def test_stdin_filename_with_control_characters(tmp_path: Path) -> None:
    name = "x\n\x1b]0;t\x07y.yaml:1:1: error [forged] z"
    for fmt in ("text", "github"):
        completed = run_bytes(
            "lint",
            "--no-config",
            "--format",
            fmt,
            "-",
            "--stdin-filename",
            name,
            cwd=tmp_path,
            stdin=HOSTILE.encode(),
        )
        assert completed.returncode == 1
        assert _RAW.search(completed.stdout) is None
        assert not any(line.startswith(b"y.yaml") for line in completed.stdout.splitlines())
    broken = run_bytes("lint", "--no-config", "-", "--stdin-filename", name, cwd=tmp_path, stdin=b"a: [\n")
    assert broken.returncode == 2
    assert _RAW.search(broken.stdout + broken.stderr) is None


def test_parse_error_on_stderr_names_the_file_escaped(tmp_path: Path) -> None:
    broken = b"apiVersion: v1\nkind: Pod\nmetadata: {name: p\n"
    (tmp_path / os.fsdecode(b"bad\xff\x1b.yaml")).write_bytes(broken)
    completed = run_bytes("expand", "--no-config", ".", cwd=tmp_path)
    assert completed.returncode == 2
    assert _RAW.search(completed.stderr) is None
    assert completed.stderr.decode("utf-8").startswith('"bad\\377\\033.yaml":')


@pytest.mark.parametrize("fmt", ["mermaid", "dot", "json"])
def test_graph_labels_escaped(tmp_path: Path, fmt: str) -> None:
    # The anti-affinity selects the workload's own pods: a relation, drawn with its labels.
    (tmp_path / "d.yaml").write_text(HOSTILE.replace('{"\\e]0;pwned\\a": x, app: web}', "{app: web}"))
    completed = run_bytes("graph", "--no-config", "--format", fmt, ".", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert _RAW.search(completed.stdout) is None
    text = completed.stdout.decode("utf-8")
    if fmt == "mermaid":
        # Each line is a statement: nothing a line break in a name would have split off.
        assert all(
            re.match(r"^(flowchart|  (subgraph|end|n\d|linkStyle|classDef|class|%%))", line)
            or line.startswith("    n")
            for line in text.splitlines()
        ), text
        assert "we\\nb\\033[31m" in text
    elif fmt == "dot":
        assert "we\\\\nb\\\\033[31m" in text  # DOT shows the backslash
    else:
        json.loads(text)


@pytest.mark.parametrize("fmt", ["diff", "yaml", "json"])
def test_expand_output_escaped(hostile: Path, fmt: str) -> None:
    # A label key with an ESC-sequence in matchLabelKeys: expand's note quotes it.
    (hostile / "keys.yaml").write_text(
        HOSTILE.replace('{"\\\\e]0;pwned\\\\a": x, app: web}', "{app: web}").replace(
            "      nodeSelector:", '            matchLabelKeys: ["k\\\\e[31m"]\n      nodeSelector:'
        )
    )
    completed = run_bytes("expand", "--no-config", "--format", fmt, ".", cwd=hostile)
    assert completed.returncode in (0, 1), completed.stderr
    assert _RAW.search(completed.stdout) is None
    text = completed.stdout.decode("utf-8")
    if fmt == "json":
        json.loads(text)


def test_place_text_escaped(tmp_path: Path) -> None:
    (tmp_path / os.fsdecode(b"w\xff\x1b.yaml")).write_text(
        HOSTILE.replace("nodeSelector", "tolerations: []\n      x")
    )
    (tmp_path / "cluster.yaml").write_text("")
    for fmt in ("text", "json"):
        completed = run_bytes(
            "place", "--no-config", "--cluster", "cluster.yaml", "--format", fmt, ".", cwd=tmp_path
        )
        assert completed.returncode == 1, completed.stderr
        assert _RAW.search(completed.stdout) is None
        text = completed.stdout.decode("utf-8")
        if fmt == "text":
            assert text.startswith(
                '"w\\377\\033.yaml":1:1: Deployment/n\\ns\\302\\233/we\\nb\\033[31m replica 0'
            )
        else:
            json.loads(text)
