"""``--jobs N``: files parsed by worker processes give exactly what parsing them here gives."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from kaffinity.load import parallel
from kaffinity.load.files import discover
from kaffinity.load.parse import DEFAULT_LIMITS, Limits, SourceFile
from kaffinity.load.read import read
from kaffinity.load.source import PosDict, PosList

from .kit import EXAMPLES, run


def _deep(value: Any) -> Any:
    """Data with its positions, so that equality also compares every recorded line and column."""
    if isinstance(value, PosDict):
        return ("map", value.span, tuple(value.pos), tuple((key, _deep(item)) for key, item in value.items()))
    if isinstance(value, PosList):
        return ("seq", value.span, tuple(value.pos), tuple(_deep(item) for item in value))
    return (type(value).__name__, value)


def _snapshot(files: Sequence[SourceFile]) -> list[Any]:
    return [
        (
            file.name,
            file.text,
            file.problems,
            [
                (doc.file, doc.index, doc.span, doc.prefix, doc.duplicate_keys, _deep(doc.root))
                for doc in file.documents
            ],
        )
        for file in files
    ]


# Tasks are sent to workers by name, so these stand-ins live at module level.
def _tagged(paths: Sequence[str], limits: Limits, manifests_only: bool = True) -> list[bytes | None]:
    return [parallel._sendable(SourceFile(f"{os.getpid()}:{path}", "", (), ())) for path in paths]


def _die(paths: Sequence[str], limits: Limits, manifests_only: bool = True) -> list[bytes | None]:
    os._exit(9)


@pytest.fixture(scope="module")
def example_paths() -> list[str]:
    paths = list(discover([str(EXAMPLES)]))
    assert len(paths) >= parallel.MIN_FILES  # enough for the pool to be used
    return paths


@pytest.mark.parametrize("jobs", [2, 3])
def test_workers_parse_what_this_process_parses(example_paths: list[str], jobs: int) -> None:
    """Every example (parse errors, Helm templates, Lists, duplicate keys among them), with
    positions, problems and order."""
    serial = [read(path) for path in example_paths]
    assert _snapshot(parallel.read_all(example_paths, jobs, DEFAULT_LIMITS)) == _snapshot(serial)


def test_workers_do_the_parsing(example_paths: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool is really used: some chunks are parsed in another process (forked children run
    the patched function too), and this process reads chunks from the end no worker started."""
    parent = os.getpid()
    monkeypatch.setattr(parallel, "_read_chunk", _tagged)
    files = parallel.read_all(example_paths, 2, DEFAULT_LIMITS)
    pids = {file.name.split(":", 1)[0] for file in files if ":" in file.name}
    assert pids and str(parent) not in pids
    assert [file.name.split(":", 1)[-1] for file in files] == example_paths


def test_a_broken_pool_falls_back_to_this_process(
    example_paths: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that dies (the out-of-memory killer, say) loses nothing: its files are read here."""
    monkeypatch.setattr(parallel, "_read_chunk", _die)
    files = parallel.read_all(example_paths, 2, DEFAULT_LIMITS)
    assert _snapshot(files) == _snapshot([read(path) for path in example_paths])


def test_a_pool_that_cannot_start_reads_everything_here(
    example_paths: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """fork refused (too many processes, say): no traceback, every file read in this process."""
    from concurrent.futures import ProcessPoolExecutor

    def refuse(*args: object, **kwargs: object) -> None:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(ProcessPoolExecutor, "submit", refuse)
    files = parallel.read_all(example_paths, 64, DEFAULT_LIMITS)
    assert _snapshot(files) == _snapshot([read(path) for path in example_paths])


def test_limits_reach_the_workers(example_paths: list[str]) -> None:
    tiny = Limits(file_size=200)
    files = parallel.read_all(example_paths, 2, tiny)
    assert _snapshot(files) == _snapshot([read(path, tiny) for path in example_paths])
    assert any("more than the limit of 200 bytes" in str(file.problems) for file in files)


def test_few_files_are_read_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Below MIN_FILES no pool is started (it would cost more than it saves)."""

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("a pool was started")

    monkeypatch.setattr("concurrent.futures.ProcessPoolExecutor", fail)
    paths = []
    for index in range(parallel.MIN_FILES - 1):
        path = tmp_path / f"{index:03}.yaml"
        path.write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{index}\n")
        paths.append(str(path))
    assert len(parallel.read_all(paths, 8, DEFAULT_LIMITS)) == len(paths)


@pytest.mark.parametrize("extra", [[], ["--cluster", str(EXAMPLES / "clusters" / "topology.yaml")]])
def test_cli_output_is_the_same_for_any_jobs(extra: list[str]) -> None:
    """The whole command, byte for byte: JSON and SARIF, --jobs 1, 2 and the default."""
    outputs = set()
    for jobs in (["--jobs", "1"], ["--jobs", "2"], []):
        completed = run("lint", "--no-config", "--format", "json", *jobs, *extra, str(EXAMPLES))
        assert completed.returncode == 2, completed.stderr  # examples/parse-error fails on purpose
        outputs.add(completed.stdout)
    assert len(outputs) == 1


def test_jobs_zero_is_a_usage_error() -> None:
    completed = run("lint", "--no-config", "--jobs", "0", str(EXAMPLES))
    assert completed.returncode == 2
    assert "--jobs" in completed.stderr


def _nested(name: str, levels: int) -> str:
    """A ConfigMap nested ``levels`` deep in all (its mapping, ``data`` and the lists)."""
    lists = levels - 2
    head = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n"
    return f"{head}  a: {'[' * lists}{']' * lists}\n"


def _hostile_folder(folder: Path, deep: dict[str, int]) -> None:
    from .test_hostile import HOSTILE, NOT_MANIFESTS
    from .test_robustness import MALFORMED

    for name, (content, _) in {**HOSTILE, **MALFORMED}.items():
        (folder / name).write_bytes(content)
    (folder / "not-manifests").mkdir()
    for name, content in NOT_MANIFESTS.items():
        (folder / "not-manifests" / name).write_bytes(content)
    for name, levels in deep.items():
        (folder / f"{name}.yaml").write_text(_nested(name, levels))
    for index in range(parallel.MIN_FILES):
        (folder / f"pod-{index:03}.yaml").write_text(
            f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p{index}\n"
        )


def _same_for_any_jobs(folder: Path, *options: str) -> str:
    outputs = {}
    for jobs in ("1", "2", "3"):
        completed = run("lint", *options, "--format", "json", "--jobs", jobs, ".", cwd=folder)
        assert completed.returncode == 2  # the hostile files are parse errors
        outputs[jobs] = completed.stdout
    assert outputs["1"] == outputs["2"] == outputs["3"]
    return outputs["1"]


@pytest.mark.slow
def test_every_hostile_file_and_deep_files_same_output_for_any_jobs(tmp_path: Path) -> None:
    """One file nested 240 levels deep used to make ``--jobs 2`` abort the whole run
    (RecursionError pickling it back), where ``--jobs 1`` was clean. At the default depth limit
    (400) a file nested 400 levels deep is read, one nested 401 levels is a parse error."""
    import json

    _hostile_folder(tmp_path, {"deep-240": 240, "deep-400": 400, "deep-401": 401})
    report = json.loads(_same_for_any_jobs(tmp_path, "--no-config"))
    errors = {Path(item["file"]).name for item in report["findings"] if item["rule"] == "parse-error"}
    assert "deep-401.yaml" in errors and "deep-240.yaml" not in errors and "deep-400.yaml" not in errors
    assert len(errors) >= 12  # the malformed and hostile files, as their own tests say


@pytest.mark.slow
def test_deep_files_under_the_largest_depth_limit_same_output_for_any_jobs(tmp_path: Path) -> None:
    """``limits: depth`` up to the schema's cap: whatever ``--jobs 1`` says of files nested
    thousands of levels deep, the workers say the same."""
    import json

    deep = {"deep-1000": 1000, "deep-5000": 5000, "deep-10000": 10000, "deep-10001": 10001}
    _hostile_folder(tmp_path, deep)
    report = json.loads(_same_for_any_jobs(tmp_path, "--limit", "depth=10000"))
    errors = {Path(item["file"]).name for item in report["findings"] if item["rule"] == "parse-error"}
    # Read up to the limit (the interpreter's default recursion limit refused them past ~480
    # levels, as "nesting deeper than 10000 levels"); one level more is refused.
    assert {name for name in errors if name.startswith("deep-")} == {"deep-10001.yaml"}


def test_a_file_too_deep_to_pickle_is_read_here(tmp_path: Path) -> None:
    """A worker that cannot pickle a file sends None for it alone, and this process reads it."""
    deep = tmp_path / "deep.yaml"
    deep.write_text(_nested("deep", 400))
    file = read(str(deep))
    assert file.problems == ()
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        assert parallel._sendable(file) is None
    finally:
        sys.setrecursionlimit(limit)
    assert parallel._sendable(read(str(EXAMPLES / "clusters" / "topology.yaml"))) is not None


def test_under_a_larger_depth_limit_files_deeper_than_the_default_are_read_here(tmp_path: Path) -> None:
    """Where pickle's C recursion limit is not the interpreter's (Python 3.12+), a worker could
    parse and send a file that this process, its stack deeper, cannot parse: under a raised
    ``depth:`` every file nested deeper than the default is read here."""
    large = Limits(depth=10_000)
    deep, shallow = tmp_path / "deep.yaml", tmp_path / "shallow.yaml"
    deep.write_text(_nested("deep", DEFAULT_LIMITS.depth + 1))
    shallow.write_text(_nested("shallow", DEFAULT_LIMITS.depth))
    deep_file, shallow_file = read(str(deep), large), read(str(shallow), large)
    assert deep_file.problems == () == shallow_file.problems
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)  # so that pickle does not refuse either (short of the C stack)
    try:
        assert parallel._sendable(deep_file, large) is None
        assert parallel._sendable(shallow_file, large) is not None
        assert parallel._sendable(deep_file) is not None  # the default limit: pickle decides
    finally:
        sys.setrecursionlimit(limit)
