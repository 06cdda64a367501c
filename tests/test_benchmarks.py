"""The benchmark harness (benchmarks/run.py) on a tiny corpus: every stage runs and checks its
result, the tables and the targets' verdicts are computed from the numbers. The timings
themselves are the benchmark's business, not asserted here."""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import shutil
import subprocess
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

from .kit import REPO, lint_json

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


# --- the GitOps monorepo (--stages gitops, issue 36) ------------------------------------------

#: A small repository for the tests: overlays, charts, releases, plain workloads.
SMALL_GITOPS = (10, 3, 4, 20)
LOOPBACK = "http://127.0.0.1:8879"


def _gitops_files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()
    }


def test_the_gitops_repository_is_deterministic(tmp_path: Path) -> None:
    import gitops

    first = gitops.gitops(str(tmp_path / "one"), LOOPBACK, *SMALL_GITOPS)
    second = gitops.gitops(str(tmp_path / "two"), LOOPBACK, *SMALL_GITOPS)
    assert first == second
    one, two = _gitops_files(tmp_path / "one"), _gitops_files(tmp_path / "two")
    assert one == two  # the repository and the chart repository, byte for byte
    gitops.commit(str(tmp_path / "one" / "repo"))
    gitops.commit(str(tmp_path / "two" / "repo"))
    heads = [
        subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=tmp_path / name / "repo",
            capture_output=True,
            text=True,
            check=False,
        )
        for name in ("one", "two")
    ]
    assert heads[0].returncode == 0 and heads[0].stdout == heads[1].stdout  # one commit, the same


def test_the_gitops_repository_holds_what_it_says(tmp_path: Path) -> None:
    import gitops
    from ruamel.yaml import YAML

    overlays, charts, releases, workloads = SMALL_GITOPS
    result = gitops.gitops(str(tmp_path), LOOPBACK, overlays, charts, releases, workloads)
    root = tmp_path / "repo"
    assert (
        len(result.overlays) == overlays and len(result.charts) == charts and len(result.releases) == releases
    )
    yaml = YAML(typ="safe")
    for overlay in result.overlays:
        kustomization = yaml.load((root / overlay / "kustomization.yaml").read_text())
        assert kustomization["resources"] == ["../../base"]
        patch = yaml.load((root / overlay / "scheduling-patch.yaml").read_text())
        assert patch["kind"] == "Deployment" and patch["spec"]["replicas"] >= 1
    config = yaml.load((root / ".kaffinity.yaml").read_text())
    assert sorted(config["helm-values"]) == sorted(result.charts)
    for chart in result.charts:
        assert (root / chart / "Chart.yaml").is_file()
        assert config["helm-values"][chart] == [
            f"{chart}/values-{env}.yaml" for env in gitops.CHART_ENVIRONMENTS
        ]
        assert all((root / values).is_file() for values in config["helm-values"][chart])
    kinds = [yaml.load((root / path).read_text())["kind"] for path in result.releases]
    assert kinds.count("HelmRelease") == (releases + 1) // 2
    assert kinds.count("Application") == releases // 2
    # Every release names a chart version the loopback repository serves, at the URL given.
    index = yaml.load((tmp_path / "served" / "index.yaml").read_text())
    for path in result.releases:
        release = yaml.load((root / path).read_text())
        if release["kind"] == "HelmRelease":
            chart = release["spec"]["chart"]["spec"]
            name, version = chart["chart"], chart["version"]
        else:
            source = release["spec"]["source"]
            assert source["repoURL"] == LOOPBACK
            name, version = source["chart"], source["targetRevision"]
        entry = next(e for e in index["entries"][name] if e["version"] == version)
        archive = tmp_path / "served" / entry["urls"][0]
        assert hashlib.sha256(archive.read_bytes()).hexdigest() == entry["digest"]
    sources = yaml.load((root / "releases/flux/sources/platform-charts.yaml").read_text())
    assert sources["spec"]["url"] == LOOPBACK
    assert result.corpus.workloads == workloads
    assert all(
        (root / path).is_file() for path in (result.manifest, result.patch, result.values, result.release)
    )


def test_the_gitops_defaults_are_the_issues_numbers(tmp_path: Path) -> None:
    import gitops

    result = gitops.gitops(str(tmp_path))
    assert (len(result.overlays), len(result.charts), len(result.releases)) == (100, 30, 20)
    assert run.GITOPS_HEADING == "## GitOps monorepo"


@pytest.mark.slow
def test_the_gitops_repository_lints_with_its_releases_rendered_from_the_loopback_repository(
    tmp_path: Path,
) -> None:
    import gitops

    if not (shutil.which("kustomize") or shutil.which("kubectl")):
        pytest.skip("neither kustomize nor kubectl is on the PATH: the overlays would not render")
    if not (shutil.which("helm") or importlib.util.find_spec("helm_python")):
        pytest.skip("no helm binary and helm-python-sdk (kaffinity[helm]) not installed")
    overlays, charts, releases, workloads = SMALL_GITOPS
    with gitops.serve(str(tmp_path / "served")) as served:
        result = gitops.gitops(str(tmp_path), served.url, overlays, charts, releases, workloads)
        root = tmp_path / "repo"
        gitops.commit(str(root))
        env = {"KAFFINITY_REMOTE_CACHE": str(tmp_path / "remote"), "NO_PROXY": "127.0.0.1"}
        done = lint_json(".", "--allow-network", "--no-cache", cwd=root, env=env, config=True)
    assert done.code in (0, 1)
    summary = done.report["summary"]
    # Every overlay, every chart variant and every release rendered; nothing read as written.
    assert summary["render"]["unrendered"] == 0
    assert summary["render"]["rendered"] == overlays + charts * len(gitops.CHART_ENVIRONMENTS) + releases
    units = set(summary["units"])
    for path in result.releases:
        name = Path(path).stem if path.startswith("releases/argocd/") else Path(path).parent.name
        unit = (
            f"Application argocd/{name}"
            if path.startswith("releases/argocd/")
            else f"HelmRelease {name}/{name}"
        )
        assert unit in units
    # The releases' charts came from the loopback repository, once each.
    archives = sorted(request for request in served.requests if request.endswith(".tgz"))
    versions = {(name, version) for name, version in result.served}
    assert archives and len(archives) == len(set(archives))
    assert all(tuple(a.lstrip("/").removesuffix(".tgz").rsplit("-", 1)) in versions for a in archives)
    assert not [f for f in done.report["findings"] if f["rule"] == "parse-error"]
    # Each release's pods are linted: its Deployment or StatefulSet, in the release's namespace.
    rendered = {(f["object"]["namespace"], f["object"]["name"]) for f in done.report["findings"]}
    assert any(namespace == name for namespace, name in rendered)


def _line(engines: str, key: str, walls: list[float], calls: list[int] | None = None) -> Any:
    import gitops_stage as stage

    case = next(
        c
        for c in stage.gitops_cases(argparse.Namespace(manifest="M", patch="P", values="V", release="R"))
        if c.key == key
    )
    runs = [run.ChildRun(wall, wall, 50_000, 0) for wall in walls]
    return stage.Line(engines, case, runs, calls)


def test_the_gitops_targets_are_judged_from_the_numbers() -> None:
    import gitops_stage as stage

    lines = [
        _line("bins", "jobs1", [10.0], [180]),
        _line("bins", "jobs2", [5.0], [180]),
        _line("bins", "cold", [5.1], [180]),
        _line("bins", "warm", [1.0], [0]),
        _line("bins", "manifest", [0.4], [0]),
        _line("bins", "patch", [0.5], [1]),
        _line("bins", "values", [0.5], [2]),
        _line("bins", "release", [0.5], [1]),
    ]
    judged = {
        target.split(" (")[0]: (measured, verdict)
        for target, measured, verdict in stage.gitops_targets(lines, {"bins": True})
    }
    assert judged["a warm run renders only what changed"][1] == "met"
    assert judged["the cache's first run within 1.05x of `--no-cache`"] == (
        "1.02x (fastest runs: cold / `--jobs 2 --no-cache`)",
        "met",
    )
    assert judged["`--jobs 2` at least 1.6x `--jobs 1`"] == ("2.00x (10.00 s -> 5.00 s wall)", "met")
    assert judged["a warm one-file commit"][1] == "met"
    assert judged["output byte-identical: no, cold and warm cache, `--jobs 1` and `--jobs 2`"][1] == "met"
    # A warm run that renders the releases again, a slow cold run, different outputs: not met.
    lines[3] = _line("bins", "warm", [1.0], [20])
    lines[2] = _line("bins", "cold", [5.5], [180])
    verdicts = [verdict for _, _, verdict in stage.gitops_targets(lines, {"bins": False})]
    assert verdicts == ["**not met**", "**not met**", "met", "met", "**not met**"]


def test_a_full_run_keeps_the_gitops_section(tmp_path: Path) -> None:
    output = tmp_path / "RESULTS.md"
    output.write_text("# old\n\n## GitOps monorepo\n\nkept\n\n## Scale\n\nscale\n")
    text = run.keep_scale_section(str(output), "# Benchmarks\n\n## Results\n\nnew\n")
    assert run.extract_section(text, run.GITOPS_HEADING) == "## GitOps monorepo\n\nkept\n"
    assert run.extract_section(text, run.SCALE_HEADING) == "## Scale\n\nscale\n"


@pytest.mark.slow
def test_the_gitops_stage_runs_every_line_and_compares_outputs(tmp_path: Path) -> None:
    output = tmp_path / "RESULTS.md"
    output.write_text("# Benchmarks\n\n## Scale\n\nkept\n")
    args = argparse.Namespace(repeat=1, quick=True, output=str(output), gitops_size=(5, 1, 2, 5))
    assert run.gitops_main(args, ["--stages", "gitops"]) == 0
    text = output.read_text()
    assert run.extract_section(text, run.SCALE_HEADING) == "## Scale\n\nkept\n"
    section = run.extract_section(text, run.GITOPS_HEADING)
    assert section is not None
    import gitops_stage as stage

    engines = run.render_engines()
    cases = stage.gitops_cases(argparse.Namespace(manifest="M", patch="P", values="V", release="R"))
    rows = [
        line
        for line in section.splitlines()
        if line.startswith(tuple(f"| {name} | " for name, _, _ in engines))
    ]
    assert len(rows) == len(engines) * len(cases)
    assert "| files | " in section
    for name in [name for name, env, _ in engines if env is not None]:
        target = f"output byte-identical: no, cold and warm cache, `--jobs 1` and `--jobs 2` ({name})"
        assert f"| {target} | identical | met |" in section
