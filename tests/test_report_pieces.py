"""The JSON and SARIF reports written in pieces as they are made (``kaffinity.load.display.json_pieces``,
``kaffinity.report.render_pieces``, ``kaffinity.cli.output.emit``): never the whole text in
memory, and the same bytes as the whole text: every lone surrogate, control character and
invisible character escaped as before, wherever a piece ends."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kaffinity.load.display import json_pieces, json_text, utf8_tree
from kaffinity.report import render, render_pieces

from .kit import lint_paths, manifest, run_bytes, workload

#: A lone surrogate (an undecodable byte of a file name, another), DEL, a C1 control, a line
#: separator, a bidirectional control, a backslash and a quote.
HOSTILE = "x" + os.fsdecode(b"\xff") + '\ud800\x7f\x85\u2028\u202e\\"é'


def test_the_escapes_of_a_json_text_exact() -> None:
    value = {"a" + os.fsdecode(b"\xff"): HOSTILE, "b": [1, None, 2.5, "\x00\x1f"]}
    expected = (
        '{\n  "a\\\\377": "x\\\\377\\\\ud800\\u007f\\u0085\\u2028\\u202e\\\\\\"é",\n'
        '  "b": [\n    1,\n    null,\n    2.5,\n    "\\u0000\\u001f"\n  ]\n}'
    )
    assert json_text(value) == expected
    assert "".join(json_pieces(value)) == expected
    assert json_text(value, indent=None) == (
        '{"a\\\\377": "x\\\\377\\\\ud800\\u007f\\u0085\\u2028\\u202e\\\\\\"é", '
        '"b": [1, null, 2.5, "\\u0000\\u001f"]}'
    )
    assert json.loads(expected) == utf8_tree(value)  # what utf8_tree makes of it, exactly


def test_pieces_join_to_the_text_wherever_they_end() -> None:
    value = {"items": [f"{index}{HOSTILE * (index % 3)}" for index in range(6000)]}
    pieces = list(json_pieces(value))
    assert len(pieces) > 1
    for piece in pieces:
        piece.encode("utf-8")  # strict: no lone surrogate left in any piece
    joined = "".join(pieces)
    assert joined == json_text(value)
    assert json.loads(joined) == utf8_tree(value)


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_the_report_in_pieces_is_the_report(tmp_path: Path, fmt: str) -> None:
    (tmp_path / os.fsdecode(b"a\xff.yaml")).write_text(manifest([workload("a", replicas=3)]))
    (tmp_path / "b\u2028.yaml").write_text(manifest([workload("b", replicas=3)]))
    result = lint_paths(tmp_path)
    assert result.findings
    pieces = list(render_pieces(result, fmt))
    assert "".join(pieces) == render(result, fmt)
    shown = run_bytes("lint", "--no-config", "--format", fmt, ".", cwd=tmp_path)
    written = run_bytes("lint", "--no-config", "--format", fmt, ".", "-o", "out/report", cwd=tmp_path)
    assert shown.returncode == written.returncode
    report = (tmp_path / "out" / "report").read_bytes()
    assert shown.stdout == report and report.endswith(b"}\n")
    document = json.loads(report.decode("utf-8"))  # strict: valid UTF-8
    found = document["findings"] if fmt == "json" else document["runs"][0]["results"]
    assert len(found) == len(result.findings)
