"""``--jobs N`` past loading: the fixes planned in a forked child while the cross-object rules run
here (:meth:`kaffinity.engine.record.Recorder.plan_ahead`), the typed objects of the files a
worker sends built as they arrive, the chunks that shrink as the files left do
(:func:`kaffinity.load.parallel.map_all`): the same reports as ``--jobs 1``, a failure in the
child reported as the run's own, and no child left behind."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from kaffinity.engine.record import MIN_FORKED_PLANS
from kaffinity.load import parallel
from kaffinity.rules import revision_unscoped

from .kit import run_bytes, run_raw

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 generated workloads in 60 files (graph, topology and revision-unscoped findings in many
    files, enough of them for the fixes to be planned in a child), and a cluster of 30 nodes."""
    folder = tmp_path_factory.mktemp("jobs")
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "generate.py"),
            "--workloads",
            "300",
            "--nodes",
            "30",
            str(folder),
        ],
        check=True,
        capture_output=True,
    )
    assert len(list((folder / "manifests").rglob("*.yaml"))) >= parallel.MIN_FILES
    return folder


def _children() -> set[int]:
    """This process's children (zombies included: a child not waited for is still listed)."""
    found: set[int] = set()
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as listing:
            found.update(int(pid) for pid in listing.read().split())
    return found


def _lint(corpus: Path, jobs: str, *more: str) -> subprocess.CompletedProcess[bytes]:
    return run_bytes("lint", "--no-config", "--no-cache", "--jobs", jobs, *more, corpus / "manifests")


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="children are forked on Linux")


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "sarif", "text"])
@pytest.mark.parametrize("cluster", [False, True])
def test_jobs_give_the_same_report(corpus: Path, fmt: str, cluster: bool) -> None:
    """The same bytes with one process and with two, with a cluster (the placement's rules) and
    without, in every format that carries the fixes."""
    more = ["-f", fmt, *(["--cluster", str(corpus / "cluster.yaml")] if cluster else [])]
    before = _children()
    one, two = _lint(corpus, "1", *more), _lint(corpus, "2", *more)
    assert one.returncode == two.returncode
    assert one.stdout == two.stdout
    assert one.stderr == two.stderr
    assert _children() <= before  # the pool's workers and the planning child were waited for
    if fmt == "json":
        findings = json.loads(one.stdout)["findings"]
        categories = {finding["category"] for finding in findings}
        assert "graph" in categories
        assert cluster == ("topology" in categories)
        promise = revision_unscoped.FIX_PROMISE
        planned = [
            finding
            for finding in findings
            if finding["rule"] == "revision-unscoped" and promise in (finding["fix"] or "")
        ]
        assert len(planned) >= MIN_FORKED_PLANS  # planned in the child with --jobs 2
        assert len({finding["file"] for finding in findings}) > parallel.MIN_FILES // 2


@pytest.mark.slow
@linux_only
def test_a_plan_that_fails_in_the_child_is_the_runs_internal_error(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan that raises, in the child as here: exit code 3 and the same report either way; the
    findings are all there, each keeping its violation's own hint."""

    def broken(*args: object) -> object:
        raise ZeroDivisionError("planned to fail")

    monkeypatch.setattr(revision_unscoped, "_fix_hint", broken)
    runs = [
        run_raw("lint", "--no-config", "--no-cache", "-f", "json", "--jobs", jobs, corpus / "manifests")
        for jobs in ("1", "2")
    ]
    assert [done.returncode for done in runs] == [3, 3]
    assert runs[0].stdout == runs[1].stdout
    assert runs[0].stderr == runs[1].stderr
    findings = json.loads(runs[1].stdout)["findings"]
    unscoped = [finding for finding in findings if finding["rule"] == "revision-unscoped"]
    assert len(unscoped) >= MIN_FORKED_PLANS
    assert not any(revision_unscoped.FIX_PROMISE in (finding["fix"] or "") for finding in unscoped)


@pytest.mark.slow
@linux_only
def test_a_child_that_dies_is_replaced_by_this_process(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The planning child killed (the out-of-memory killer, say): the plans are made here, and
    the report is the one ``--jobs 1`` gives."""
    here = os.getpid()
    fix_hint = revision_unscoped._fix_hint

    def dies_in_a_child(*args: object) -> object:
        if os.getpid() != here:
            os._exit(9)
        return fix_hint(*args)  # type: ignore[arg-type]

    expected = _lint(corpus, "1", "-f", "json").stdout
    monkeypatch.setattr(revision_unscoped, "_fix_hint", dies_in_a_child)
    before = _children()
    assert _lint(corpus, "2", "-f", "json").stdout == expected
    assert _children() <= before


def _pid() -> int:
    return os.getpid()


def _raise() -> int:
    raise KeyError("in the task")


def _die() -> int:
    if os.getpid() != _PARENT[0]:
        os._exit(7)
    return -1


_PARENT = [os.getpid()]


@linux_only
def test_forked_computes_in_a_child_and_waits_for_it() -> None:
    before = _children()
    value = parallel.forked(_pid, 2)
    assert value() != os.getpid()
    assert value() == value()  # asked again: the same value, the child waited for once
    assert _children() <= before


def test_forked_with_one_job_computes_here() -> None:
    assert parallel.forked(_pid, 1)() == os.getpid()


@linux_only
def test_forked_raises_here_what_the_task_raises() -> None:
    value = parallel.forked(_raise, 2)
    with pytest.raises(KeyError):
        value()


@linux_only
def test_forked_runs_the_task_here_when_the_child_dies() -> None:
    _PARENT[0] = os.getpid()
    before = _children()
    assert parallel.forked(_die, 2)() == -1
    assert _children() <= before


def _sent(paths: Sequence[str]) -> list[bytes | None]:
    """A worker's stand-in: each path with the worker's pid; None (done here) for every seventh."""
    return [None if int(path) % 7 == 0 else pickle.dumps((os.getpid(), path)) for path in paths]


@pytest.mark.parametrize("count", [parallel.MIN_FILES, 100, 1001])
@pytest.mark.parametrize("jobs", [2, 3])
def test_every_path_once_in_order_whatever_the_chunks(count: int, jobs: int) -> None:
    """Chunks of every size, from both ends, the last ones small: each path done once, in order,
    some by a worker, those it could not send done here."""
    paths = [str(index) for index in range(count)]
    done = parallel.map_all(paths, jobs, lambda path: (os.getpid(), path), _sent)
    assert [path for _, path in done] == paths
    assert {pid for pid, _ in done} - {os.getpid()}
    assert all(pid == os.getpid() for pid, path in done if int(path) % 7 == 0)
