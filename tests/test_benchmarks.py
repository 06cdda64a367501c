"""The benchmark harness (benchmarks/run.py) on a tiny corpus: every stage runs and checks its
result, the tables and the targets' verdicts are computed from the numbers. The timings
themselves are the benchmark's business, not asserted here."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kaffinity.config import Settings
from kaffinity.k8s.model import build_inventory
from kaffinity.load.files import load
from kaffinity.simulate.cluster import cluster_from
from kaffinity.simulate.place import place_all

from .kit import REPO

BENCHMARKS = REPO / "benchmarks"
WORKLOADS = 200  # the smallest corpus with a shared selector and matchLabelKeys (the checks need both)
NODES = 40


def _import_run() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))  # run.py imports generate.py beside it
    try:
        spec = importlib.util.spec_from_file_location("benchmarks_run", BENCHMARKS / "run.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCHMARKS))


run = _import_run()


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every stage of one size, once, with a tracemalloc run and a small cluster."""
    scratch = tmp_path_factory.mktemp("bench")
    cwd = scratch / "cwd"
    cwd.mkdir()
    item = run.corpus(WORKLOADS, False, str(scratch))
    jobs = run.cli_has_jobs(str(cwd))
    notes: list[str] = []
    plan = run.Plan(repeat=1, trace=True, clusters=(NODES,))
    rows = run.measure_size(item, plan, str(cwd), str(scratch), jobs, notes)
    return {"item": item, "rows": rows, "jobs": jobs, "notes": notes, "scratch": scratch, "plan": plan}


def _row(rows: list[Any], stage: str) -> Any:
    return next(row for row in rows if row.stage == stage)


@pytest.mark.slow
def test_every_stage_is_measured_once_and_in_process_ones_are_traced(measured: dict[str, Any]) -> None:
    rows = measured["rows"]
    stages = [row.stage for row in rows]
    expected = ["read", "floor", "parse", "parse-nogc", "load", "schema", "expand", "graph", "lint", "rules"]
    expected += [f"simulate-{NODES}", "report-text", "report-json", "report-sarif"]
    expected += ["cli-jobs1", "cli", "cli-cluster"] if measured["jobs"] else ["cli", "cli-cluster"]
    assert stages == expected
    assert all(len(row.wall) == 1 and len(row.cpu) == 1 for row in rows)  # repeat 1: the checking run
    in_process = [row for row in rows if not row.stage.startswith("cli")]
    # parse-nogc allocates what parse does: not traced again.
    assert all(row.traced_kib is not None for row in in_process if row.stage != "parse-nogc")
    assert _row(rows, "parse-nogc").traced_kib is None
    # Loading holds every object built: more than the composer alone, which keeps nothing.
    assert _row(rows, "load").traced_kib > _row(rows, "floor").traced_kib
    assert all(row.rss_kib and row.traced_kib is None for row in rows if row.stage.startswith("cli"))


@pytest.mark.slow
def test_simulate_reports_the_pods_the_scheduler_places(measured: dict[str, Any]) -> None:
    item, rows = measured["item"], measured["rows"]
    simulated = _row(rows, f"simulate-{NODES}")
    files = load([item.manifests])
    cluster = cluster_from(load([run.cluster_file(item, NODES)]))
    assert len(cluster.nodes) == NODES
    inventory = build_inventory(doc for file in files for doc in file.documents)
    placed = place_all(
        inventory.workloads, cluster, version=Settings().kube_version, namespaces=inventory.namespaces
    )
    assert (simulated.nodes, simulated.pods, simulated.pending) == (
        NODES,
        len(placed.placements),
        len(placed.pending),
    )
    cli = _row(rows, "cli-cluster")
    assert (cli.nodes, cli.pods) == (NODES, simulated.pods)


@pytest.mark.slow
def test_the_cluster_file_belongs_to_the_corpus(measured: dict[str, Any], tmp_path: Path) -> None:
    """cluster_file generates the corpus again with nodes and keeps only cluster.yaml: that
    holds only if the manifests do not depend on the nodes."""
    item = measured["item"]
    run.generate(str(tmp_path), WORKLOADS, per_file=run.PER_FILE, seed=run.SEED, nodes=NODES, zones=run.ZONES)
    assert (tmp_path / "cluster.yaml").read_bytes() == Path(run.cluster_file(item, NODES)).read_bytes()
    ours = sorted(Path(item.manifests).rglob("*.yaml"))
    theirs = sorted((tmp_path / "manifests").rglob("*.yaml"))
    assert [p.relative_to(item.manifests) for p in ours] == [
        p.relative_to(tmp_path / "manifests") for p in theirs
    ]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(ours, theirs, strict=True))


@pytest.mark.slow
def test_jobs_outputs_are_compared_byte_for_byte(measured: dict[str, Any]) -> None:
    if not measured["jobs"]:
        pytest.skip("kaffinity lint has no --jobs")
    rows, scratch = measured["rows"], measured["scratch"]
    assert _row(rows, "cli-jobs1").same_output is True
    outputs = [scratch / f"lint-{WORKLOADS}-{name}.json" for name in ("jobs1", "default")]
    assert outputs[0].read_bytes() == outputs[1].read_bytes()
    assert json.loads(outputs[0].read_text())["summary"]["documents"] == measured["item"].stats.objects


@pytest.mark.slow
def test_a_failing_check_stops_the_run(measured: dict[str, Any]) -> None:
    def check(result: object) -> None:
        raise RuntimeError(f"wrong: {result}")

    stage = run.Stage("x", "x", lambda: 42, check)
    with pytest.raises(RuntimeError, match="wrong: 42"):
        run.measure(stage, measured["item"], run.Plan(3, False, ()))


@pytest.mark.slow
def test_the_report_has_every_section_and_a_verdict_per_target(measured: dict[str, Any]) -> None:
    item, rows = measured["item"], measured["rows"]
    startup = [
        run.Measurement("python", "python -c pass", 0, 0, [0.02], [0.02], [11_000]),
        run.Measurement("version", "python -m kaffinity --version", 0, 0, [0.2], [0.2], [16_000]),
        run.Measurement("small", "kaffinity lint (one small file)", 0, 0, [0.3], [0.3], [40_000]),
    ]
    code = run.code_identity()
    text = run.report(
        "cmd",
        [item],
        {WORKLOADS: rows},
        startup,
        {WORKLOADS: measured["plan"]},
        ["a note"],
        (0.0, 0.0, 0.0),
        (code, code),
    )
    for heading in (
        "## Machine",
        "## Corpus",
        "## Results",
        "## Simulation",
        "## Start-up",
        "## Targets",
        "## Reading",
    ):
        assert heading in text
    assert "| start-up: `kaffinity --version` < 0.15 s | 0.200 s | **not met** |" in text
    assert "| start-up: `kaffinity lint` of one file < 0.4 s | 0.300 s | met |" in text
    assert "not measured at 10,000 (" in text  # the lint target is set at 10,000 workloads
    assert "- a note." in text
    assert f"| lint with a cluster of {NODES:,} nodes | {WORKLOADS:,} | {NODES:,} |" in text


def _fake(stage: str, workloads: int, wall: float, **fields: Any) -> Any:
    row = run.Measurement(stage, stage, workloads, workloads * 2, [wall], [wall], fields.pop("rss", []))
    for name, value in fields.items():
        setattr(row, name, value)
    return row


def _size(workloads: int, scale: float, rss_mib: int, same: bool = True) -> list[Any]:
    return [
        _fake("floor", workloads, 1.0 * scale),
        _fake("lint", workloads, 2.5 * scale),
        _fake("cli-jobs1", workloads, 1.8 * scale, rss=[rss_mib * 1024], same_output=same),
        _fake("cli", workloads, 1.0 * scale, rss=[rss_mib * 1024]),
    ]


def test_targets_are_judged_from_the_numbers() -> None:
    by_size = {10_000: _size(10_000, 1.0, 400), 100_000: _size(100_000, 13.0, 900)}
    by_size[10_000].append(_fake("simulate-1000", 10_000, 2.0, nodes=1_000, pods=1_900, pending=10))
    startup = [_fake("version", 0, 0.1), _fake("small", 0, 0.5)]
    judged = [(measured, verdict) for _, measured, verdict in run.targets(by_size, startup)]
    lint, jobs, growth, memory, placing, version, small = judged
    assert lint == ("1.80x (1.80 s CPU of `cli-jobs1` / 1.00 s) at 10,000 workloads", "met")
    assert jobs[1] == "met" and "1.80x at 10,000" in jobs[0]
    assert growth == ("13.0x (1.8 -> 23.4 s wall); in-process lint 13.0x", "**not met**")
    assert memory == ("900 MiB", "met")
    assert placing == ("950 pods/s (1,900 pods, 10 Pending, in 2.0 s CPU)", "**not met**")
    assert version[1] == "met" and small[1] == "**not met**"

    by_size[100_000][2].same_output = False
    by_size[100_000][2].rss_kib = [2048 * 1024]
    verdicts = [verdict for _, _, verdict in run.targets(by_size, startup)]
    assert (verdicts[1], verdicts[3]) == ("**not met**", "**not met**")


def test_targets_not_measured_say_so() -> None:
    # A kaffinity without --jobs: no cli-jobs1 rows.
    by_size = {
        size: [row for row in _size(size, scale, rss) if row.stage != "cli-jobs1"]
        for size, scale, rss in ((1_000, 0.1, 80), (10_000, 1.0, 400))
    }
    results = run.targets(by_size, [_fake("version", 0, 0.1), _fake("small", 0, 0.1)])
    lint, jobs, growth, memory, placing = results[:5]
    assert lint[2] == "met" and "`cli`" in lint[1]  # without --jobs the CLI runs on one core
    assert jobs[1:] == ("this kaffinity lint has no --jobs", "not measured")
    assert growth[2] == memory[2] == placing[2] == "not measured"
    assert "linear from 1,000: about 3,600 MiB at 100,000" in memory[1]


def test_growth_matches_stages_by_name() -> None:
    small = [_fake("floor", 1_000, 1.0), _fake("simulate-100", 1_000, 2.0)]
    big = [
        _fake("floor", 10_000, 9.0),
        _fake("simulate-1000", 10_000, 50.0),
        _fake("simulate-100", 10_000, 30.0),
    ]
    lines = run.growth_table({1_000: small, 10_000: big})
    assert lines[2:] == ["| floor | 9.00x |", "| simulate-100 | 15.00x |", "| simulate-1000 | - |"]


def _args(**given: Any) -> argparse.Namespace:
    defaults = {"repeat": None, "quick": False, "nodes": None, "simulate_budget": run.SIMULATE_BUDGET}
    return argparse.Namespace(**{**defaults, **given})


def test_plans_per_size() -> None:
    assert run.plan_for(1_000, _args(quick=True), {}) == run.Plan(2, True, (100,))
    assert run.plan_for(10_000, _args(), {}) == run.Plan(5, True, (100, 1_000, 5_000))
    assert run.plan_for(1_000, _args(), {}) == run.Plan(5, True, (100,))
    # 100,000 workloads: one run each, no simulation, and no tracing (it would need > 8 GiB).
    assert run.plan_for(100_000, _args(), {}) == run.Plan(1, False, ())
    assert run.plan_for(100_000, _args(repeat=2), {}).repeat == 2
    # The estimate scales the previous size's largest traced peak.
    previous = {10_000: [_fake("lint", 10_000, 1.0, traced_kib=100 * 1024)]}
    assert run.trace_estimate(100_000, previous) == 100 * 2**20 * 10 * run.TRACE_FACTOR
    assert run.plan_for(100_000, _args(), previous).trace


@pytest.mark.slow
def test_a_cluster_estimated_over_the_budget_is_skipped(measured: dict[str, Any]) -> None:
    notes: list[str] = []
    plan = run.Plan(1, False, (NODES, NODES * 40), simulate_budget=0.0)
    rows = run.measure_simulate(measured["item"], plan, Settings(), notes)
    assert [row.nodes for row in rows] == [NODES]
    assert len(notes) == 1 and f"simulate on {NODES * 40:,} nodes" in notes[0]


def test_the_render_repository_is_deterministic_with_overlays_and_a_chart(tmp_path: Path) -> None:
    import generate

    first = generate.repository(str(tmp_path / "one"), 200)
    second = generate.repository(str(tmp_path / "two"), 200)
    assert first == second
    one, two = tmp_path / "one", tmp_path / "two"
    names = sorted(str(path.relative_to(one)) for path in one.rglob("*") if path.is_file())
    assert names == sorted(str(path.relative_to(two)) for path in two.rglob("*") if path.is_file())
    assert all((one / name).read_bytes() == (two / name).read_bytes() for name in names)
    assert len(first.overlays) == generate.REPOSITORY_BASES * len(generate.REPOSITORY_OVERLAYS)
    assert not first.manifest.startswith("apps/")
    for overlay in first.overlays:
        assert (one / overlay / "kustomization.yaml").is_file()
    assert (one / first.chart / "Chart.yaml").is_file()
    assert all((one / name).is_file() for name in (first.patch, first.values, first.manifest))


@pytest.mark.slow
def test_the_render_stage_runs_every_case_and_compares_outputs(tmp_path: Path) -> None:
    output = tmp_path / "RESULTS.md"
    args = argparse.Namespace(sizes=[200], repeat=1, quick=True, output=str(output))
    assert run.render_main(args, ["--stages", "render"]) == 0
    text = output.read_text()
    assert text.startswith(run.RENDER_HEADING)
    engines = run.render_engines()
    cases = run.render_cases(argparse.Namespace(manifest="M", patch="P", values="V"))
    names = tuple(f"| {name} | " for name, _, _ in engines)
    rows = [line for line in text.splitlines() if line.startswith(names)]
    assert len(rows) == len(engines) * len(cases)
    measured = [name for name, env, _ in engines if env is not None]
    for name in measured:
        assert f"- {name}: the JSON of `lint .` is byte-identical with no, a cold and a warm cache" in text
        assert f"at or under {run.RENDER_TARGET} s with {name}:" in text
    if measured:  # the profile of a warm one-file commit, every part of it
        for label, _ in run.PROFILE_PARTS:
            assert f"| {label} | " in text
