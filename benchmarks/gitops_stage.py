"""``benchmarks/run.py --stages gitops`` (issue 36, item 6): the GitOps monorepo of
:mod:`gitops` linted whole with no, a cold and a warm cache, with ``--jobs 1`` and ``--jobs 2``,
and by the pre-commit hook after a one-file commit, with each engine set; beside two parse floors.

Called by run.py's ``main`` with run.py itself (``bench``: its child launcher, engine sets, report
helpers), so that both stay one implementation. See benchmarks/README.md, *GitOps monorepo*.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import gitops
from ruamel.yaml import YAML

GITOPS_HEADING = "## GitOps monorepo"
GITOPS_REPEAT = 3  # timed runs per line (--quick: 1)
#: The repository of the stage: overlays, charts, releases, plain workloads (--gitops-size).
GITOPS_SIZE = (gitops.OVERLAYS, gitops.CHARTS, gitops.RELEASES, gitops.WORKLOADS)
FLOOR_REPEAT = 3
# Targets.
COLD_TOLERANCE = 0.05  # the cache's first run within 1.05x of a run without it (issue 36, item 5)
JOBS_SPEEDUP = 1.6  # --jobs 2 over --jobs 1 (issue 36, item 4's target at 10k; here for the renders)
WARM_COMMIT = 0.5  # a warm one-file commit, wall seconds (issue 33)
#: The pre-commit hook's command (.pre-commit-hooks.yaml ``entry``), run from the repository.
HOOK = ("lint", "--changed", "--fail-on", "warning", "--pre-commit")
#: The tools whose calls are counted (a shim on the PATH logs each build or template).
COUNTED = ("kustomize", "helm", "kubectl")
RENDERING = ("build", "template", "kustomize")


@dataclass(frozen=True, slots=True)
class GitOpsCase:
    """One line: ``arguments`` of ``kaffinity``; ``cache``: ``none`` (--no-cache), ``cold`` (a
    fresh folder per run) or ``warm`` (a folder one untimed run of the same command filled);
    ``changes``: a file rewritten before every run (a new commit of it); ``fetch``: the remote
    cache emptied before every run and the network allowed (charts fetched from the loopback
    repository); ``renders``: at most this many tool calls (the target of a warm line)."""

    key: str
    label: str
    cache: str
    arguments: tuple[str, ...]
    changes: str | None = None
    fetch: bool = False
    renders: int | None = None


def gitops_cases(repo: gitops.GitOpsResult) -> tuple[GitOpsCase, ...]:
    whole = ("lint", ".", "--format", "json")

    def hook(key: str, label: str, path: str, renders: int) -> GitOpsCase:
        return GitOpsCase(key, f"hook, {label} changed (warm)", "warm", (*HOOK, path), path, renders=renders)

    return (
        GitOpsCase(
            "fetch", "lint . --allow-network, empty remote cache", "none", (*whole, "--jobs", "2"), fetch=True
        ),
        GitOpsCase("jobs1", "lint . --jobs 1", "none", (*whole, "--jobs", "1")),
        GitOpsCase("jobs2", "lint . --jobs 2", "none", (*whole, "--jobs", "2")),
        GitOpsCase("cold", "lint . --jobs 2 (cold cache)", "cold", (*whole, "--jobs", "2")),
        GitOpsCase("warm", "lint . --jobs 2 (warm cache)", "warm", (*whole, "--jobs", "2"), renders=0),
        GitOpsCase("hook-nocache", "hook, a manifest changed, --no-cache", "none", (*HOOK, repo.manifest)),
        hook("manifest", "a manifest", repo.manifest, 0),
        hook("patch", "an overlay's patch", repo.patch, 1),
        # A values file in the chart's folder is a file of the chart (Helm loads every file of the
        # folder: .Files): each of the chart's variants renders again.
        hook("values", "a chart's values file", repo.values, len(gitops.CHART_ENVIRONMENTS)),
        hook("release", "a release", repo.release, 1),
    )


@dataclass(slots=True)
class Line:
    engines: str
    case: GitOpsCase
    runs: list[Any] = field(default_factory=list)  # run.ChildRun
    #: Tool calls (builds and templates) of each timed run; None: not counted (no shim).
    calls: list[int] | None = None
    reason: str = ""


# --- the repository and its floors -------------------------------------------------------------


def write_repository(scratch: str, size: Sequence[int], url: str) -> tuple[str, str, gitops.GitOpsResult]:
    """:func:`gitops.gitops` at ``size`` naming ``url``, made a git repository with one commit:
    (repository folder, chart repository folder, result)."""
    out = os.path.join(scratch, "gitops")
    overlays, charts, releases, workloads = size
    result = gitops.gitops(out, url, overlays, charts, releases, workloads)
    root = os.path.join(out, "repo")
    gitops.commit(root)
    return root, os.path.join(out, "served"), result


def repository_texts(root: str) -> list[tuple[str, str]]:
    """Every YAML file of the repository (chart templates left out: they are Go templates)."""
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git" and not (d == "templates" and _in_chart(folder)))
        found += [os.path.join(folder, n) for n in sorted(names) if n.endswith((".yaml", ".yml"))]
    texts = []
    for path in found:
        with open(path, encoding="utf-8") as handle:
            texts.append((os.path.relpath(path, root), handle.read()))
    return texts


def _in_chart(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, "Chart.yaml"))


def _tool(env: dict[str, str], *command: str, cwd: str) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} failed: {done.stderr.strip()[-2000:]}")
    return done.stdout


def rendered_texts(
    root: str, served: str, repo: gitops.GitOpsResult, env: dict[str, str], scratch: str
) -> list[tuple[str, str]] | None:
    """The YAML kaffinity lints, as the tools print it: ``kustomize build`` (else ``kubectl
    kustomize``) of each overlay, ``helm template`` of each chart with each environment's values
    and of each release's chart (its archive) with the release's values; and the files no unit
    renders (plain manifests, release objects) as they are. None without the helm binary."""
    helm = shutil.which("helm", path=env.get("PATH"))
    kustomize = shutil.which("kustomize", path=env.get("PATH"))
    kubectl = shutil.which("kubectl", path=env.get("PATH"))
    if helm is None or (kustomize is None and kubectl is None):
        return None
    build = [kustomize, "build"] if kustomize else [str(kubectl), "kustomize"]
    texts = [(f"{overlay} (built)", _tool(env, *build, overlay, cwd=root)) for overlay in repo.overlays]
    for chart in repo.charts:
        for name in gitops.CHART_ENVIRONMENTS:
            values = f"{chart}/values-{name}.yaml"
            texts.append(
                (f"{values} (rendered)", _tool(env, helm, "template", chart, "-f", values, cwd=root))
            )
    yaml = YAML(typ="safe")
    for path in repo.releases:
        with open(os.path.join(root, path), encoding="utf-8") as handle:
            release = yaml.load(handle)
        spec = release["spec"]
        if release["kind"] == "HelmRelease":
            chart, version = spec["chart"]["spec"]["chart"], spec["chart"]["spec"]["version"]
            name, namespace, values = spec["releaseName"], release["metadata"]["namespace"], spec["values"]
        else:
            source = spec["source"]
            chart, version = source["chart"], source["targetRevision"]
            name, namespace = source["helm"]["releaseName"], spec["destination"]["namespace"]
            values = source["helm"]["valuesObject"]
        values_file = os.path.join(scratch, "release-values.json")
        with open(values_file, "w", encoding="utf-8") as handle:
            json.dump(values, handle)
        archive = os.path.join(served, f"{chart}-{version}.tgz")
        command = (helm, "template", name, archive, "--namespace", namespace, "-f", values_file)
        texts.append((f"{path} (rendered)", _tool(env, *command, cwd=root)))
    for folder in ("manifests", "releases"):
        texts += [(f"{folder}/{name}", text) for name, text in repository_texts(os.path.join(root, folder))]
    return texts


@dataclass(slots=True)
class Floor:
    label: str
    texts: int
    documents: int
    mib: float
    wall: list[float]
    cpu: list[float]


def measure_floor(bench: ModuleType, label: str, texts: list[tuple[str, str]], repeat: int) -> Floor:
    documents = bench.parse_floor(texts)  # the checking run, which also warms it up
    walls, cpus = bench.timed(lambda: bench.parse_floor(texts), repeat)
    size = sum(len(text.encode("utf-8")) for _, text in texts) / 2**20
    return Floor(label, len(texts), documents, size, walls, cpus)


# --- running the lines ---------------------------------------------------------------------------


def counting_path(env: dict[str, str], folder: str) -> tuple[dict[str, str], str]:
    """``env`` with a folder of shims first on its PATH: one per tool of :data:`COUNTED` found
    there, a shell script that appends its arguments to a log and runs the tool. Returns the
    environment and the log's path. Each call costs one ``sh`` start more (about a millisecond)."""
    os.makedirs(folder, exist_ok=True)
    log = os.path.join(folder, "calls.log")
    for tool in COUNTED:
        found = shutil.which(tool, path=env.get("PATH"))
        if found is None:
            continue
        shim = os.path.join(folder, tool)
        with open(shim, "w", encoding="utf-8") as handle:
            handle.write(
                f'#!/bin/sh\necho "{tool} $*" >> {shlex.quote(log)}\nexec {shlex.quote(found)} "$@"\n'
            )
        os.chmod(shim, 0o755)
    return {**env, "PATH": os.pathsep.join([folder, env.get("PATH", "")])}, log


def _calls(log: str | None) -> int | None:
    """Tool calls that render (``kustomize build``, ``helm template``, ``kubectl kustomize``)
    logged since the log was last emptied; empties it."""
    if log is None:
        return None
    try:
        with open(log, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        lines = []
    with open(log, "w", encoding="utf-8"):
        pass
    return sum(1 for line in lines if len(line.split()) > 1 and line.split()[1] in RENDERING)


def _command(bench: ModuleType, case: GitOpsCase, cache: str | None, output: str) -> list[str]:
    cache_arguments = ["--cache-dir", cache] if cache is not None else ["--no-cache"]
    network = ["--allow-network"] if case.fetch else []
    if case.arguments[: len(HOOK)] == HOOK:  # options before --pre-commit (what follows it is paths)
        arguments = [*HOOK[:-1], *cache_arguments, "-o", output, *case.arguments[len(HOOK) - 1 :]]
    else:
        arguments = [*case.arguments, *cache_arguments, *network, "-o", output]
    return list(bench.cli_command(*arguments))


def measure_case(
    bench: ModuleType,
    case: GitOpsCase,
    folder: str,
    env: dict[str, str],
    repeat: int,
    scratch: str,
    log: str | None,
) -> tuple[list[Any], list[int] | None]:
    """``repeat`` runs of ``case`` from the repository ``folder`` (as measure_render_case runs
    the render stage's); the tool calls of each."""
    runs: list[Any] = []
    calls: list[int] = []
    warm = tempfile.mkdtemp(prefix="gitops-warm-", dir=scratch)
    output = os.path.join(scratch, f"gitops-{case.key}.out")
    remote = env[gitops_remote_env()]
    try:
        if case.cache == "warm":
            bench.run_child(_command(bench, case, warm, output), folder, env)
        _calls(log)
        for number in range(repeat):
            if case.changes is not None:
                bench._rewrite(os.path.join(folder, case.changes), number)
            if case.fetch:
                shutil.rmtree(remote, ignore_errors=True)
            cache = None
            if case.cache == "cold":
                cache = tempfile.mkdtemp(prefix="gitops-cold-", dir=scratch)
            elif case.cache == "warm":
                cache = warm
            runs.append(bench.run_child(_command(bench, case, cache, output), folder, env))
            calls.append(_calls(log) or 0)
            if case.cache == "cold" and cache is not None:
                shutil.rmtree(cache, ignore_errors=True)
    finally:
        shutil.rmtree(warm, ignore_errors=True)
        if case.changes is not None:
            subprocess.run(["git", "checkout", "-q", "--", case.changes], cwd=folder, check=False)
    return runs, calls if log is not None else None


def gitops_remote_env() -> str:
    """The variable naming the remote cache (kaffinity.repo.fetch.cache.CACHE_ENV)."""
    return "KAFFINITY_REMOTE_CACHE"


# --- the report ------------------------------------------------------------------------------


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x" if base > 0 else "-"


def gitops_table(lines: Sequence[Line], floors: Sequence[Floor]) -> list[str]:
    output_floor = next((f for f in floors if f.label == "output"), None)
    files_floor = next((f for f in floors if f.label == "files"), None)
    table = [
        "| engines | line | cache | median (s) | min (s) | CPU (s) | peak RSS (MiB) | renders "
        "| x output floor (CPU) | x files floor (CPU) | x `--jobs 1` (wall) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for line in lines:
        if not line.runs:
            table.append(
                f"| {line.engines} | {line.case.label} | {line.case.cache} | {line.reason} | | | | | | | |"
            )
            continue
        walls = [run.wall for run in line.runs]
        cpu = statistics.median(run.cpu for run in line.runs)
        rss = max(run.rss_kib for run in line.runs) / 1024
        renders = "-" if line.calls is None else "/".join(str(c) for c in sorted(set(line.calls)))
        jobs1 = next(
            (o for o in lines if o.engines == line.engines and o.case.key == "jobs1" and o.runs), None
        )
        speed = (
            _ratio(statistics.median(walls), statistics.median(r.wall for r in jobs1.runs)) if jobs1 else "-"
        )
        cells = [
            f"{statistics.median(walls):.3f}",
            f"{min(walls):.3f}",
            f"{cpu:.3f}",
            f"{rss:.0f}",
            renders,
            _ratio(cpu, statistics.median(output_floor.cpu)) if output_floor else "-",
            _ratio(cpu, statistics.median(files_floor.cpu)) if files_floor else "-",
            speed,
        ]
        table.append(f"| {line.engines} | {line.case.label} | {line.case.cache} | {' | '.join(cells)} |")
    return table


def _median(line: Line | None) -> float | None:
    return statistics.median(run.wall for run in line.runs) if line and line.runs else None


def gitops_targets(lines: Sequence[Line], same: dict[str, bool]) -> list[tuple[str, str, str]]:
    """(target, measured, verdict) per engine set measured."""
    found: list[tuple[str, str, str]] = []
    engines = list(dict.fromkeys(line.engines for line in lines if line.runs))
    for name in engines:
        by = {line.case.key: line for line in lines if line.engines == name and line.runs}
        counted = [line for line in by.values() if line.case.renders is not None and line.calls is not None]
        if counted:
            over = [
                f"{line.case.key} {max(line.calls or [0])} > {line.case.renders}"
                for line in counted
                if max(line.calls or [0]) > (line.case.renders or 0)
            ]
            measured = ", ".join(f"{line.case.key} {max(line.calls or [0])}" for line in counted)
            found.append(
                (
                    f"a warm run renders only what changed ({name}): tool calls of `warm` 0, of a hook "
                    "commit at most the units of the changed file (a manifest 0, a patch 1, a chart's values "
                    f"file its {len(gitops.CHART_ENVIRONMENTS)} variants, a release 1)",
                    measured,
                    "met" if not over else "**not met**",
                )
            )
        else:
            found.append(
                (
                    f"a warm run renders only what changed ({name})",
                    "tool calls not counted (helm-python-sdk renders in-process)",
                    "not measured",
                )
            )
        cold, nocache = by.get("cold"), by.get("jobs2")
        if cold and nocache:
            ratio = min(r.wall for r in cold.runs) / min(r.wall for r in nocache.runs)
            found.append(
                (
                    f"the cache's first run within {1 + COLD_TOLERANCE:.2f}x of `--no-cache` ({name})",
                    f"{ratio:.2f}x (fastest runs: cold / `--jobs 2 --no-cache`)",
                    "met" if ratio <= 1 + COLD_TOLERANCE else "**not met**",
                )
            )
        jobs1, jobs2 = _median(by.get("jobs1")), _median(by.get("jobs2"))
        if jobs1 and jobs2:
            found.append(
                (
                    f"`--jobs 2` at least {JOBS_SPEEDUP}x `--jobs 1` ({name})",
                    f"{jobs1 / jobs2:.2f}x ({jobs1:.2f} s -> {jobs2:.2f} s wall)",
                    "met" if jobs1 / jobs2 >= JOBS_SPEEDUP else "**not met**",
                )
            )
        commit = _median(by.get("manifest"))
        if commit is not None:
            found.append(
                (
                    f"a warm one-file commit (the hook, a manifest changed) at most {WARM_COMMIT} s ({name})",
                    f"{commit:.3f} s",
                    "met" if commit <= WARM_COMMIT else "**not met**",
                )
            )
        if name in same:
            found.append(
                (
                    f"output byte-identical: no, cold and warm cache, `--jobs 1` and `--jobs 2` ({name})",
                    "identical" if same[name] else "**different**",
                    "met" if same[name] else "**not met**",
                )
            )
    return found


def gitops_section(
    results: Results,
    repo: gitops.GitOpsResult,
    size: Sequence[int],
    repeat: int,
    command_line: str,
    facts: Sequence[tuple[str, str]],
) -> str:
    lines, floors, same, notes, profile = (
        results.lines,
        results.floors,
        results.same,
        results.notes,
        results.profile,
    )
    overlays, charts, releases, workloads = size
    text = [
        GITOPS_HEADING,
        "",
        f"Written by `{command_line}` (issue 36, item 6). The repository is benchmarks/gitops.py's at "
        f"{overlays} overlays (over {-(-overlays // len(gitops.ENVIRONMENTS))} bases), {charts} charts "
        f"(each rendered with {len(gitops.CHART_ENVIRONMENTS)} environments' values), {releases} releases "
        f"(Flux HelmReleases and Argo CD Applications) of {len(repo.served)} chart versions served by a "
        f"loopback chart repository, and {workloads} plain workloads; a git repository with one commit. "
        "Every command runs from the repository, each a fresh `python -m kaffinity` with bytecode, "
        f"the remote cache filled by the first line; median of {repeat} runs. The hook is "
        "`kaffinity lint --changed --fail-on warning --pre-commit FILE`; its FILE is rewritten before "
        f"every run: `{repo.manifest}`, `{repo.patch}`, `{repo.values}`, `{repo.release}`. "
        "**renders**: the tool calls (builds and templates) of a run, counted by shims on the PATH.",
        "",
        "| floor | what is composed | files | documents | MiB | median (s) | CPU (s) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    what = {
        "output": "the YAML kaffinity lints: the tools' output for every overlay, chart variant and release, "
        "and the files no unit renders",
        "files": "every YAML file of the repository (chart templates left out)",
    }
    for floor in floors:
        text.append(
            f"| {floor.label} | {what[floor.label]} | {floor.texts:,} | {floor.documents:,} "
            f"| {floor.mib:.1f} | {statistics.median(floor.wall):.3f} | {statistics.median(floor.cpu):.3f} |"
        )
    text += ["", *gitops_table(lines, floors), "", "| target | measured | verdict |", "|---|---|---|"]
    text += [
        f"| {target} | {measured} | {verdict} |" for target, measured, verdict in gitops_targets(lines, same)
    ]
    if profile:
        text += [
            "",
            "Where a warm `lint . --jobs 1` spends its time, from cProfile (first engine set; cumulative "
            "seconds, profiler overhead included):",
            "",
            "| part | seconds |",
            "|---|---:|",
            *(f"| {label} | {value:.3f} |" for label, value in profile),
        ]
    text += ["", *(f"- {note}" for note in notes), *(f"- {name}: {value}" for name, value in facts)]
    return "\n".join(text) + "\n"


#: Where a warm ``lint .`` spends its time (run.py's PROFILE_PARTS, and the releases).
RELEASE_PARTS = (("of which the GitOps releases (found, rendered)", "kaffinity/repo/gitops/releases.py:"),)


def gitops_profile(
    bench: ModuleType, folder: str, env: dict[str, str], scratch: str
) -> list[tuple[str, float]]:
    """cProfile of one warm ``lint . --jobs 1`` in a child process: cumulative seconds by part
    (``run.profile_parts``), and the tools' renders."""
    cache = tempfile.mkdtemp(prefix="gitops-profile-", dir=scratch)
    # One process: with --jobs 2 the workers' part would not be in the profile.
    arguments = ["lint", ".", "--jobs", "1", "--cache-dir", cache, "-o", os.devnull]
    stats = bench.profiled(arguments, folder, env, scratch, "gitops")
    shutil.rmtree(cache, ignore_errors=True)
    parsing = next(
        fragment for _, fragment in bench.PROFILE_PARTS if fragment.endswith("load/parse/objects.py:_parse")
    )
    # The rendered output's parsing too, here.
    parts: list[tuple[str, float]] = bench.profile_parts(
        stats,
        dict.fromkeys(parsing, "YAML parsing (kaffinity.load.parse; the files and the rendered output)"),
    )
    renders = [
        value[3]
        for (file, _, name), value in stats.items()
        if file.endswith(("kaffinity/repo/helm/chart.py", "kaffinity/repo/kustomize/build.py"))
        and name in ("render_chart", "render_kustomization")
    ]
    parts.append(("of which the tools' renders (render_chart, render_kustomization)", sum(renders)))
    return parts


# --- the stage -------------------------------------------------------------------------------


@dataclass(slots=True)
class Results:
    """What the stage measured."""

    lines: list[Line] = field(default_factory=list)
    floors: list[Floor] = field(default_factory=list)
    #: Per engine set: the JSON of jobs1, jobs2, cold and warm byte-identical.
    same: dict[str, bool] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    profile: list[tuple[str, float]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Setup:
    bench: ModuleType
    folder: str
    served: str
    repo: gitops.GitOpsResult
    scratch: str
    repeat: int


def measure_engines(setup: Setup, name: str, found: dict[str, str], counted: bool, results: Results) -> None:
    """Every line with one engine set (its environment ``found``); ``counted``: through shims
    that count the tools' calls. The first engine set with the helm binary also measures the
    output floor, the first measured the profile."""
    bench, folder, scratch = setup.bench, setup.folder, setup.scratch
    env = {k: v for k, v in found.items() if k not in ("PYTHONDONTWRITEBYTECODE", bench.CACHE_ENV)}
    env.update(
        PYTHONPYCACHEPREFIX=os.path.join(scratch, "pycache"),  # bytecode, as pip installs kaffinity
        NO_PROXY="127.0.0.1,localhost",
        KAFFINITY_REMOTE_CACHE=os.path.join(scratch, "remote"),
    )
    if not any(floor.label == "output" for floor in results.floors):
        rendered = rendered_texts(folder, setup.served, setup.repo, env, scratch)
        if rendered is None:
            results.notes.append(f"{name}: no helm binary: the output floor is not measured")
        else:
            results.floors.insert(0, measure_floor(bench, "output", rendered, FLOOR_REPEAT))
    log = None
    if counted:
        env, log = counting_path(env, os.path.join(scratch, "shims"))
    bench.run_child(
        bench.cli_command("lint", setup.repo.manifest, "--no-cache", "-o", os.devnull), folder, env
    )
    outputs: dict[str, bytes] = {}
    for case in gitops_cases(setup.repo):
        runs, calls = measure_case(bench, case, folder, env, setup.repeat, scratch, log)
        results.lines.append(Line(name, case, runs, calls))
        with open(os.path.join(scratch, f"gitops-{case.key}.out"), "rb") as handle:
            outputs[case.key] = handle.read()
        median = statistics.median(run.wall for run in runs)
        renders = "" if calls is None else f", {max(calls)} renders"
        print(f"  {case.label:<50} {median:7.3f} s wall (median of {len(runs)}){renders}", flush=True)
    compared = [outputs[key] for key in ("jobs1", "jobs2", "cold", "warm")]
    results.same[name] = all(one == compared[0] for one in compared)
    if not results.same[name]:
        print(f"  {name}: the JSON outputs are NOT byte-identical", file=sys.stderr)
    if outputs["fetch"] != outputs["jobs2"]:
        results.notes.append(
            f"{name}: the JSON of the run that fetched the charts differs from that of the runs that "
            "took them from the remote cache"
        )
    if not results.profile:
        results.profile = gitops_profile(bench, folder, env, scratch)


def main(bench: ModuleType, args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    """The stage: the repository and its server, the floors, every engine set, the section."""
    size: Sequence[int] = getattr(args, "gitops_size", None) or GITOPS_SIZE
    repeat = args.repeat or (1 if args.quick else GITOPS_REPEAT)
    output: str | None = args.output or (None if args.quick else bench.DEFAULT_OUTPUT)
    command_line = shlex.join(["python", "benchmarks/run.py", *(sys.argv[1:] if argv is None else argv)])
    load_before = os.getloadavg()
    code_before = bench.code_identity()
    results = Results()
    with (
        tempfile.TemporaryDirectory(prefix="kaffinity-bench-") as scratch,
        # The server first (of the folder gitops.gitops fills): the releases name its URL, a free port.
        gitops.serve(os.path.join(scratch, "gitops", "served")) as server,
    ):
        folder, served, repo = write_repository(scratch, size, server.url)
        results.floors.append(measure_floor(bench, "files", repository_texts(folder), FLOOR_REPEAT))
        setup = Setup(bench, folder, served, repo, scratch, repeat)
        for number, (name, found, reason) in enumerate(bench.render_engines()):
            print(name, flush=True)
            if found is None:
                results.lines += [Line(name, case, reason=reason) for case in gitops_cases(repo)]
            else:
                measure_engines(setup, name, found, number == 0, results)  # the binaries: calls counted
        archives = sum(1 for request in server.requests if request.endswith(".tgz"))
        results.notes.append(
            f"the loopback chart repository answered {len(server.requests)} requests ({archives} archives)"
        )
    facts = bench.machine(load_before, (code_before, bench.code_identity()))
    section = gitops_section(results, repo, size, repeat, command_line, facts)
    print()
    print(section)
    if output:
        document = ""
        if os.path.exists(output):
            with open(output, encoding="utf-8") as handle:
                document = handle.read()
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(bench.replace_section(document, GITOPS_HEADING, section))
        print(f"written to {output} (section {GITOPS_HEADING!r})")
    return 0 if all(results.same.values()) else 1
