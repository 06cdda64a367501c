"""Hostile input: a one-line error with file and line, exit 2, no traceback, other files linted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kaffinity.load.parse import parse

from .kit import EXAMPLES, findings, keys, lines, lint_paths, position, run, run_json

GOOD = (
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ok\n"
    "  annotations:\n    kaffinity.io/ignore: nothing-here\n"
)

# Each is clearly meant as a manifest (apiVersion and kind keys at the start of a line), so
# it is a parse-error; the same damage in YAML that is no manifest is skipped (NOT_MANIFESTS).
_MANIFEST = b"apiVersion: v1\nkind: List\n"
_BOMB = b'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + b"".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n".encode() for i in range(8)
)
HOSTILE: dict[str, tuple[bytes, int | None]] = {
    # name: (content, the line the error must name; None when no line exists)
    "malformed.yaml": (b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: [x\n  labels: {}\n", 5),
    "binary.yaml": (b"apiVersion: v1\nkind: Pod\n\x00\x01\x02\xff\xfe", 3),
    "latin1.yaml": (b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: caf\xe9\n", 4),
    "deep.yaml": (_MANIFEST + b"a: " + b"[" * 10_000 + b"]" * 10_000 + b"\n", 3),
    "deeper.json": (
        b'{"apiVersion": "v1", "kind": "List", "items": ' + b"[" * 200_000 + b"]" * 200_000 + b"}",
        1,
    ),
    "compact.yaml": (_MANIFEST + b"items:\n" + b"- " * 30_000 + b"x\n", 4),
    # At the anchor &f (line 8): expanding it in g takes the file past 1,000,000 nodes.
    "bomb.yaml": (_MANIFEST + _BOMB, 8),
    "tabs.yaml": (b"apiVersion: v1\nkind: Pod\nmetadata:\n\tname: x\n", 4),
}
# The same hostile content in files that do not look like manifests: skipped quietly, and
# still no traceback, no hang, no memory blow-up.
NOT_MANIFESTS: dict[str, bytes] = {
    "binary.yaml": b"\x00\x01\x02\xff\xfe",
    "latin1.yaml": b"name: caf\xe9\n",
    "deep.yaml": b"a: " + b"[" * 10_000 + b"]" * 10_000 + b"\n",
    "deeper.json": b"[" * 200_000 + b"]" * 200_000,
    "compact.yaml": b"- " * 30_000 + b"x\n",
    "bomb.yaml": _BOMB,
    "tabs.yaml": b"services:\n\tweb: {}\n",
}


@pytest.fixture
def hostile_dir(tmp_path: Path) -> Path:
    for name, (content, _) in HOSTILE.items():
        (tmp_path / name).write_bytes(content)
    (tmp_path / "empty.yaml").write_bytes(b"")
    (tmp_path / "only-comments.yaml").write_text("# nothing\n---\n---\n")
    (tmp_path / "zz-good.yaml").write_text(GOOD)
    return tmp_path


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_each_hostile_file_gives_one_line_error_exit_2(hostile_dir: Path, name: str) -> None:
    completed = run("lint", "--no-config", str(hostile_dir / name))
    assert completed.returncode == 2, completed.stdout + completed.stderr
    headline = [line for line in completed.stdout.splitlines() if "[parse-error]" in line]
    assert len(headline) == 1, completed.stdout
    line = HOSTILE[name][1]
    prefix = f"{hostile_dir / name}:{line}:" if line else f"{hostile_dir / name}:"
    assert headline[0].startswith(prefix), headline[0]
    assert lines(lint_paths(hostile_dir / name)) == [("parse-error", line)]


def test_hostile_files_that_are_no_manifests_are_skipped(tmp_path: Path) -> None:
    for name, content in NOT_MANIFESTS.items():
        (tmp_path / name).write_bytes(content)
    (tmp_path / "zz-good.yaml").write_text(GOOD)
    completed = run("lint", "--no-config", "--format", "json", str(tmp_path))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert completed.stderr == ""
    report = json.loads(completed.stdout)
    assert [finding["rule"] for finding in report["findings"]] == ["unused-suppression"]
    assert keys(report) == [("unused-suppression", *position(GOOD, "kaffinity.io/ignore"))]
    assert (report["summary"]["files"], report["summary"]["skipped"]) == (1, len(NOT_MANIFESTS))


def test_alias_bomb_names_its_line(hostile_dir: Path) -> None:
    completed = run("lint", "--no-config", "--format", "json", str(hostile_dir / "bomb.yaml"))
    assert completed.returncode == 2
    assert '"line": ' in completed.stdout and "alias" in completed.stdout


def test_other_files_are_still_linted(hostile_dir: Path) -> None:
    completed = run("lint", "--no-config", str(hostile_dir))
    assert completed.returncode == 2
    out = completed.stdout
    assert out.count("[parse-error]") == len(HOSTILE)
    # The good file after all the bad ones is still linted: its useless suppression is found.
    assert f"{hostile_dir / 'zz-good.yaml'}:6:5: info [unused-suppression]" in out
    assert "empty.yaml" not in out and "only-comments.yaml" not in out
    # As data: each hostile file's error on its line, in file order, and the good file's finding.
    result = lint_paths(hostile_dir)
    assert lines(findings(result, "parse-error")) == [
        ("parse-error", HOSTILE[name][1]) for name in sorted(HOSTILE)
    ]
    assert keys(findings(result, "unused-suppression")) == [
        ("unused-suppression", *position(GOOD, "kaffinity.io/ignore"))
    ]


def test_unreadable_and_missing_inputs(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder.yaml"
    folder.mkdir()
    (folder / "inner.yaml").write_text(GOOD)
    completed = run("lint", "--no-config", str(tmp_path / "missing.yaml"), str(folder))
    assert completed.returncode == 2
    assert (
        f"{tmp_path / 'missing.yaml'}: error [parse-error] cannot read: No such file or directory"
        in completed.stdout
    )
    assert "inner.yaml:6:5" in completed.stdout
    # The folder named like a manifest is walked; a missing file has no line (in file order).
    result = lint_paths(tmp_path / "missing.yaml", folder)
    assert keys(result) == [
        ("unused-suppression", *position(GOOD, "kaffinity.io/ignore")),
        ("parse-error", None, None),
    ]
    assert [Path(f.file).name for f in result.findings] == ["inner.yaml", "missing.yaml"]


def test_non_utf8_on_stdin() -> None:
    data = b"kind: Pod\nname: \xff\n"
    completed = run("lint", "--no-config", "-", stdin=data)
    assert completed.returncode == 2
    assert completed.stdout.startswith("<stdin>:2:7: error [parse-error] not valid UTF-8")
    code, report = run_json("-", stdin=data)
    assert code == 2
    # At the first byte that is not UTF-8.
    assert keys(report) == [("parse-error", *position(data.decode("latin-1"), "\xff"))]


def _mutations(data: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every path of ``data`` (mappings and lists), each with every value of the wrong shape."""
    children = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, child in children:
        for odd in (None, 7, -1, True, "x", "", [], {}, [7], {"x": 7}):
            yield (*path, key), odd
        yield from _mutations(child, (*path, key))


def _replaced(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(data, dict):
        return {**data, head: _replaced(data[head], rest, value)}
    return [_replaced(item, rest, value) if i == head else item for i, item in enumerate(data)]


@pytest.mark.parametrize(
    "example", ["api-validation/fail.yaml", "api-validation/pass.yaml", "schema/fail.yaml"]
)
def test_validation_survives_any_value_anywhere(example: str) -> None:
    """Every field of the examples replaced by values of every odd shape: no validation crashes."""
    from kaffinity.validate.apiserver import Target, validate
    from kaffinity.validate.schema import check_object

    (doc,) = parse(example, (EXAMPLES / example).read_text(encoding="utf-8")).documents
    deployment = json.loads(json.dumps(doc.data))
    template = deployment["spec"]["template"]
    # The same pod as a bare Pod too: Pods take the create-time matchLabelKeys merge.
    pod = {"apiVersion": "v1", "kind": "Pod", **template}
    targets = [Target("1.33"), Target("1.37", {"TaintTolerationComparisonOperators": True}, proposals=True)]
    for data in (deployment, pod):
        for path, value in _mutations(data):
            mutated = _replaced(data, path, value)
            for target in targets:
                validate(mutated, target)
                check_object(mutated, target.version, target.proposals)


@pytest.mark.parametrize(
    "example", ["merged-selector-rejected/fail.yaml", "match-label-key-missing/fail.yaml"]
)
def test_expansion_survives_any_value_anywhere(example: str) -> None:
    """The merge, its rules and its preview on every odd shape of every field: no crash."""
    from kaffinity.config import Settings
    from kaffinity.engine import lint
    from kaffinity.expand.preview import previews, render_diff, render_json, render_yaml

    (doc,) = parse(example, (EXAMPLES / example).read_text(encoding="utf-8")).documents
    deployment = json.loads(json.dumps(doc.data))
    pod = {"apiVersion": "v1", "kind": "Pod", **deployment["spec"]["template"]}
    mutated = [_replaced(data, path, value) for data in (deployment, pod) for path, value in _mutations(data)]
    text = "".join(f"---\n{json.dumps(item)}\n" for item in mutated)
    files = [parse("mutated.yaml", text)]
    rows = text.splitlines()
    for version in ("1.30", "1.33", "1.37"):
        result = lint(files, Settings(kube_version=version, select=("expansion",)))
        assert result.internal_errors == ()
        # Whatever the shape, each finding is located in the file: a line and a column within it.
        for finding in result.findings:
            assert finding.line is not None and 1 <= finding.line <= len(rows), finding
            assert finding.column is not None and 1 <= finding.column <= len(rows[finding.line - 1]), finding
    items = list(previews(files, "1.37", {}, "default"))
    assert items  # most mutations keep a key to merge
    for rendered in (
        render_diff(items, "1.37"),
        render_yaml(files, items, "1.37"),
        render_json(items, "1.37", {}),
    ):
        assert rendered
