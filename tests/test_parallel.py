"""``--jobs N``: files parsed by worker processes give exactly what parsing them here gives."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from kaffinity import parallel
from kaffinity.loader import DEFAULT_LIMITS, Limits, SourceFile, discover, read
from kaffinity.source import PosDict, PosList

from .conftest import EXAMPLES, run_cli


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
def _tagged(paths: Sequence[str], limits: Limits, manifests_only: bool = True) -> list[SourceFile]:
    return [SourceFile(f"{os.getpid()}:{path}", "", (), ()) for path in paths]


def _die(paths: Sequence[str], limits: Limits, manifests_only: bool = True) -> list[SourceFile]:
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
        completed = run_cli("lint", "--no-config", "--format", "json", *jobs, *extra, str(EXAMPLES))
        assert completed.returncode == 2, completed.stderr  # examples/parse-error fails on purpose
        outputs.add(completed.stdout)
    assert len(outputs) == 1


def test_jobs_zero_is_a_usage_error() -> None:
    completed = run_cli("lint", "--no-config", "--jobs", "0", str(EXAMPLES))
    assert completed.returncode == 2
    assert "--jobs" in completed.stderr and "Traceback" not in completed.stderr
