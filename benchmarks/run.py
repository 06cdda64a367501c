"""Throughput of kaffinity, stage by stage, and its ratio to the parse floor.

``python benchmarks/run.py [--quick] [--sizes 1000,10000] [--repeat N] [--nodes 100,1000,5000] [-o FILE]``

For each corpus size (workloads; the corpus comes from ``generate.py`` and is cached under
``benchmarks/.corpus/``) it times, as the median of ``--repeat`` runs after one run that checks
the result:

* ``read``: reading and decoding every file (kept out of ``floor`` and ``parse``);
* ``floor``: composing every text with ruamel's C composer and nothing else;
* ``parse``: ``kaffinity.load.parse.parse`` on the same texts, and (a diagnostic) the same with the
  cyclic garbage collector disabled;
* ``load``: ``kaffinity.load.files.load([dir])`` (discovery + read + parse);
* ``schema``, ``expand``, ``graph``: schema + API validation, the matchLabelKeys merge and the
  affinity graph, each with its rules, on files loaded beforehand;
* ``lint``: ``lint(load([dir]), Settings())`` in-process, and ``rules``: ``lint`` alone (every
  rule that needs no cluster) on files loaded beforehand;
* ``simulate``: ``lint`` with a declared cluster of 100, 1,000 and 5,000 generated Nodes (the
  offline scheduler placing every pod, and the cluster's rules), in pods per second;
* ``report``: rendering the corpus's lint result as text, JSON and SARIF;
* ``cli``: ``python -m kaffinity lint DIR`` as a subprocess, with ``--jobs 1``, with the default
  jobs (the two JSON outputs must be byte-identical) and with ``--cluster``, with CPU time and
  peak RSS;

in-process stages also get the peak of memory they allocate, traced by ``tracemalloc`` in one
extra, untimed run; and once per run the start-up of ``python -c pass``, ``python -m kaffinity
--version`` and ``kaffinity lint`` on one small file (median of 10). The report ends with the
targets and a verdict for each. See ``benchmarks/README.md``.

Other stages write their own file: ``--stages graph`` (GRAPH.md), ``place`` (PLACE.md), ``policy``
(POLICY.md), and ``scale`` (issue 23), whose lines go into the ``## Scale`` section of RESULTS.md
(the rest of the file is left as it is, and a full run keeps that section): ``kaffinity lint DIR``
with ``--jobs 1`` and ``--jobs 2``, with a cold and a warm ``--cache-dir``, and the pre-commit
``kaffinity lint --no-config --context DIR --changed FILE``, in child processes, beside the parse
floor, with a verdict for each of the issue's targets.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import hashlib
import importlib.metadata
import importlib.util
import itertools
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from generate import GenerateResult, generate
from gitops_stage import GITOPS_HEADING
from ruamel.yaml.cyaml import CSafeLoader

import kaffinity
from kaffinity.config import Settings, find_config
from kaffinity.context import Context
from kaffinity.engine import LintResult, lint
from kaffinity.expand.merge import expand
from kaffinity.k8s.model import build_inventory
from kaffinity.load.files import discover, load
from kaffinity.load.parse import SourceFile, parse
from kaffinity.report import render
from kaffinity.rules import RULES
from kaffinity.validate.documents import validate_documents

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CACHE = os.path.join(HERE, ".corpus")
DEFAULT_OUTPUT = os.path.join(HERE, "RESULTS.md")
DEFAULT_SIZES = (1_000, 10_000)
SEED = 1
PER_FILE = 5
STARTUP_REPEAT = 10
#: Timed runs per stage without --repeat (--quick: 2, to stay under a minute); from LARGE_SIZE
#: workloads up, 1.
REPEAT, QUICK_REPEAT, LARGE_SIZE = 5, 2, 100_000
#: A checking run at least this long (seconds) is the measurement: no further timed runs.
LONG_RUN = 60.0
# Targets (README.md): parse at most this many times the floor; growth per 10x workloads at most this.
PARSE_TARGET = 2.0
GROWTH_TARGET = 12.0
VALIDATION_TARGET = 0.5  # validation adds at most half the load time
TARGET_SIZE = 10_000  # the lint, --jobs and placement targets are set at 10,000 workloads
MEMORY_TARGET_MIB = 1024.0  # peak memory at 100,000 workloads
PODS_PER_SECOND_TARGET = 1_000.0  # placing the 10,000 workloads' pods on 1,000 nodes
TARGET_NODES = 1_000
VERSION_TARGET, SMALL_LINT_TARGET = 0.15, 0.4  # start-up: --version, lint of one small file

#: The simulate stage's clusters at TARGET_SIZE workloads (--nodes); smaller corpora get the
#: smallest, larger ones none (one 100,000-workload placement takes far longer than the rest).
CLUSTERS = (100, 1_000, 5_000)
ZONES = 3
#: A cluster (other than the target's 1,000 nodes) whose simulate run is estimated to take longer
#: than this (seconds; from the cluster before it, growing with the square of the nodes:
#: DaemonSet pods and the nodes each pod is filtered against both grow with them) is skipped
#: (--simulate-budget).
SIMULATE_BUDGET = 900.0

#: tracemalloc's run is skipped where it would need more than this: its own bookkeeping about
#: doubles the size of the small objects a corpus is made of, and the inputs stay loaded.
TRACE_LIMIT = 8 * 2**30
TRACE_FACTOR = 3  # estimate: the traced peak at the previous size, scaled, times this
TRACE_BYTES_PER_WORKLOAD = 40 * 1024 * TRACE_FACTOR  # without a previous size (~35 KiB loaded)
#: ... and where a run traced would take longer than this (tracing slows these stages 5-6x).
TRACE_SECONDS, TRACE_SLOWDOWN = 300.0, 6.0

# Runs one command and reports its wall time, CPU time and peak RSS. It is a separate, small
# process on purpose: Linux charges a child, at exec, with the high-water RSS of the process it
# was forked from (signal->maxrss), so wait4() in this big process would report our own peak.
_LAUNCHER = """
import json, os, subprocess, sys, time
command, cwd, errors = json.loads(sys.argv[1])
with open(errors, "wb") as stderr:
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=stderr)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
child.returncode = code = os.waitstatus_to_exitcode(status)
print(json.dumps({"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_kib": usage.ru_maxrss,
                  "returncode": code}))
"""


@dataclass(slots=True)
class Corpus:
    workloads: int
    root: str
    manifests: str
    stats: GenerateResult


@dataclass(slots=True)
class Measurement:
    """One stage at one size: wall and CPU seconds of each timed run, peak RSS for subprocesses."""

    stage: str
    label: str
    workloads: int
    objects: int
    wall: list[float]
    cpu: list[float]
    rss_kib: list[int] = field(default_factory=list)
    #: tracemalloc's peak in the untimed traced run (in-process stages); None: not traced
    traced_kib: int | None = None
    #: simulate: the cluster's nodes, the pods placed (Pending ones included) and the Pending
    nodes: int = 0
    pods: int = 0
    pending: int = 0
    #: cli with --jobs 1: whether its JSON output is byte-identical to the default jobs' run
    same_output: bool | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.wall)

    @property
    def best(self) -> float:
        return min(self.wall)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu)

    @property
    def rss_mib(self) -> float | None:
        return max(self.rss_kib) / 1024 if self.rss_kib else None

    @property
    def traced_mib(self) -> float | None:
        return self.traced_kib / 1024 if self.traced_kib is not None else None


# --- corpus ----------------------------------------------------------------------------------


def _generator_digest() -> str:
    with open(os.path.join(HERE, "generate.py"), "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()[:10]


def corpus(workloads: int, cache: bool, scratch: str) -> Corpus:
    """The corpus of ``workloads`` workloads: from the cache, or generated (into it)."""
    name = f"w{workloads}-k{PER_FILE}-s{SEED}-{_generator_digest()}"
    base = CACHE if cache else scratch
    root = os.path.join(base, name)
    stamp = os.path.join(root, "corpus.json")
    if os.path.isfile(stamp):
        with open(stamp, encoding="utf-8") as handle:
            stats = GenerateResult(**json.load(handle))
        return Corpus(workloads, root, os.path.join(root, "manifests"), stats)
    os.makedirs(base, exist_ok=True)
    if cache:  # corpora of an older generate.py, and unfinished ones, are stale
        prefix = f"w{workloads}-k{PER_FILE}-s{SEED}-"
        for entry in os.listdir(base):
            if entry.startswith((prefix, f".{prefix}")) and entry != name:
                shutil.rmtree(os.path.join(base, entry), ignore_errors=True)
    partial = tempfile.mkdtemp(prefix=f".{name}-", dir=base)
    stats = generate(partial, workloads, per_file=PER_FILE, seed=SEED)
    with open(os.path.join(partial, "corpus.json"), "w", encoding="utf-8") as handle:
        json.dump(dataclasses.asdict(stats), handle)
    os.chmod(partial, 0o755)  # mkdtemp makes it private
    os.rename(partial, root)
    return Corpus(workloads, root, os.path.join(root, "manifests"), stats)


def cluster_file(item: Corpus, nodes: int) -> str:
    """``cluster.yaml`` of ``nodes`` Nodes as ``generate.py --nodes`` writes it beside this corpus
    (the manifests do not depend on the nodes), kept in the corpus's folder."""
    path = os.path.join(item.root, f"cluster-n{nodes}-z{ZONES}.yaml")
    if not os.path.isfile(path):
        partial = tempfile.mkdtemp(prefix=".cluster-", dir=item.root)
        try:
            generate(partial, item.workloads, per_file=PER_FILE, seed=SEED, nodes=nodes, zones=ZONES)
            os.rename(os.path.join(partial, "cluster.yaml"), path)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return path


def manifest_files(folder: str) -> list[str]:
    """Every manifest under ``folder``, in kaffinity's order (checked against its discovery)."""
    found = sorted(
        os.path.join(root, name)
        for root, _, files in os.walk(folder)
        for name in files
        if name.endswith((".yaml", ".yml", ".json"))
    )
    discovered = list(discover([folder]))
    if sorted(discovered) != found:
        raise RuntimeError(f"kaffinity discovers {len(discovered)} files under {folder}, not {len(found)}")
    return discovered


# --- timing ----------------------------------------------------------------------------------

T = TypeVar("T")


def timed(fn: Callable[[], object], repeat: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of ``repeat`` calls of ``fn`` (warm it up before: see :func:`measure`).

    The garbage collector is left as the code under test sets it (on, unless that code pauses it).
    Each call starts after a full collection, and what a call returns is freed outside the timed
    region, so that no run pays for another's objects (a full collection walks every live
    object: holding a loaded corpus while timing made ``parse`` some 10-40% slower).
    """
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(repeat):
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
        del result
    gc.collect()
    return walls, cpus


def with_collector(fn: Callable[[], T]) -> T:
    return fn()


def without_collector(fn: Callable[[], T]) -> T:
    """``fn()`` with Python's cyclic garbage collector off (a diagnostic of what it costs)."""
    gc.disable()
    try:
        return fn()
    finally:
        gc.enable()


def traced_peak(fn: Callable[[], object]) -> int:
    """The most memory (bytes) one call of ``fn`` holds at a time, traced by tracemalloc.

    Only what the call allocates counts, not the inputs prepared before it. Tracing slows Python
    code several times over, so this call is never a timed one."""
    gc.collect()
    tracemalloc.start()
    try:
        result = fn()
        peak = tracemalloc.get_traced_memory()[1]
        del result
    finally:
        tracemalloc.stop()
    gc.collect()
    return peak


def _no_check(result: object) -> None:
    return None


@dataclass(slots=True)
class Stage:
    """One in-process stage. ``run`` is what is timed, on inputs prepared beforehand; ``check``
    sees what the first, checking run returned; ``first`` (if given) replaces ``run`` in that run,
    to keep what the check reads (the placement of ``simulate``). ``collector``: False times the
    stage with the cyclic garbage collector off. ``trace``: False skips the tracemalloc run (the
    collector changes the time, not what is allocated)."""

    stage: str
    label: str
    run: Callable[[], object]
    check: Callable[[Any], None] = _no_check
    first: Callable[[], object] | None = None
    collector: bool = True
    trace: bool = True


@dataclass(frozen=True, slots=True)
class Plan:
    """How one size is measured: timed runs per stage, whether to trace memory, the clusters."""

    repeat: int
    trace: bool
    clusters: tuple[int, ...]
    simulate_budget: float = SIMULATE_BUDGET


def measure(stage: Stage, item: Corpus, plan: Plan) -> Measurement:
    """Check and warm up ``stage`` with one run, time it ``plan.repeat`` times, and trace the
    memory of one more run. A checking run of :data:`LONG_RUN` seconds or more, or one with
    ``repeat`` 1, is the measurement itself (any one-time cost is small beside it)."""
    collector = with_collector if stage.collector else without_collector
    gc.collect()
    started, cpu_started = time.perf_counter(), time.process_time()
    result = collector(stage.first or stage.run)
    cpu = time.process_time() - cpu_started
    wall = time.perf_counter() - started
    stage.check(result)
    del result
    if plan.repeat == 1 or wall >= LONG_RUN:
        walls, cpus = [wall], [cpu]
    else:
        walls, cpus = collector(lambda: timed(stage.run, plan.repeat))
    traced = None
    if plan.trace and stage.trace and wall * TRACE_SLOWDOWN <= TRACE_SECONDS:
        traced = collector(lambda: traced_peak(stage.run)) // 1024
    row = Measurement(
        stage.stage, stage.label, item.stats.workloads, item.stats.objects, walls, cpus, traced_kib=traced
    )
    _print_row(row)
    return row


def _print_row(row: Measurement) -> None:
    traced = f" {row.traced_mib:8.1f} MiB traced" if row.traced_mib is not None else ""
    rss = f" {row.rss_mib:8.1f} MiB peak RSS" if row.rss_mib is not None else ""
    print(f"  {row.label:<48} {row.median:8.3f} s wall {row.cpu_median:8.3f} s CPU{traced}{rss}", flush=True)


@dataclass(slots=True)
class ChildRun:
    wall: float
    cpu: float
    rss_kib: int
    returncode: int


def run_child(command: Sequence[str], cwd: str, env: dict[str, str] | None = None) -> ChildRun:
    """Run ``command`` from the small launcher and check that it did not fail. ``env``: the
    environment of the command (default: this process's)."""
    with tempfile.NamedTemporaryFile(prefix="kaffinity-bench-", suffix=".err") as errors:
        launcher = [
            sys.executable,
            "-I",
            "-S",
            "-c",
            _LAUNCHER,
            json.dumps([list(command), cwd, errors.name]),
        ]
        report = subprocess.run(launcher, check=True, capture_output=True, text=True, env=env).stdout
        stderr = errors.read().decode("utf-8", "replace")
    run = ChildRun(**json.loads(report))
    # 0: clean, 1: findings. A Python traceback also exits with 1, so stderr must be empty too.
    if run.returncode not in (0, 1) or stderr.strip():
        raise RuntimeError(f"{shlex.join(command)} exited with {run.returncode}:\n{stderr[-3000:]}")
    return run


def timed_child(
    command: Sequence[str], cwd: str, repeat: int, warm_up: bool = True
) -> tuple[list[float], list[float], list[int]]:
    """``repeat`` runs of ``command``, after one that warms up (page cache; .pyc files where
    bytecode may be written) unless ``warm_up`` is False. As in :func:`measure`, a warm-up run is
    the measurement if ``repeat`` is 1, and no run follows one of :data:`LONG_RUN` seconds or more."""
    runs = [run_child(command, cwd)]
    if warm_up and repeat > 1 and runs[0].wall < LONG_RUN:
        runs = []
    while len(runs) < repeat and (not runs or runs[-1].wall < LONG_RUN):
        runs.append(run_child(command, cwd))
    return [r.wall for r in runs], [r.cpu for r in runs], [r.rss_kib for r in runs]


# --- the stages ------------------------------------------------------------------------------


def read_all(paths: Sequence[str]) -> list[tuple[str, str]]:
    texts = []
    for path in paths:
        with open(path, "rb") as handle:
            texts.append((path, handle.read().decode("utf-8-sig")))
    return texts


def parse_floor(texts: Sequence[tuple[str, str]]) -> int:
    """ruamel's C composer and nothing else; returns the number of YAML documents."""
    documents = 0
    for _, text in texts:
        loader = CSafeLoader(text)
        while loader.check_node():
            loader.get_node()
            documents += 1
        loader.dispose()
    return documents


def kaffinity_parse(texts: Sequence[tuple[str, str]]) -> list[SourceFile]:
    return [parse(name, text) for name, text in texts]


def check_lint(result: LintResult, item: Corpus) -> None:
    if result.documents != item.stats.objects or result.load_errors or result.internal_errors:
        raise RuntimeError(
            f"lint saw {result.documents} objects (expected {item.stats.objects}), "
            f"load errors: {result.load_errors}, internal errors: {result.internal_errors}"
        )


def cli_command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "kaffinity", *arguments]


def check_load(files: Sequence[SourceFile], item: Corpus) -> None:
    objects = sum(len(file.documents) for file in files)
    problems = [(file.name, problem) for file in files for problem in file.problems]
    if problems or objects != item.stats.objects:
        raise RuntimeError(
            f"kaffinity loaded {objects} objects (expected {item.stats.objects}) "
            f"with {len(problems)} problems, e.g. {problems[:3]}"
        )


def check_floor(documents: int, item: Corpus) -> None:
    if documents != item.stats.documents:
        raise RuntimeError(
            f"the parse floor composed {documents} documents; {item.stats.documents} were written"
        )


def floor_stage(texts: Sequence[tuple[str, str]], item: Corpus) -> Stage:
    return Stage(
        "floor",
        "parse floor (C composer only)",
        lambda: parse_floor(texts),
        lambda documents: check_floor(documents, item),
    )


def load_stages(paths: Sequence[str], texts: Sequence[tuple[str, str]], item: Corpus) -> list[Stage]:
    """Reading, the parse floor, kaffinity's parse (with and without the collector) and load."""
    folder = item.manifests
    return [
        Stage("read", "read files (bytes -> str)", lambda: read_all(paths)),
        floor_stage(texts, item),
        Stage(
            "parse",
            "kaffinity.load.parse.parse",
            lambda: kaffinity_parse(texts),
            lambda f: check_load(f, item),
        ),
        Stage(
            "parse-nogc",
            "kaffinity.load.parse.parse, gc disabled",
            lambda: kaffinity_parse(texts),
            lambda f: check_load(f, item),
            collector=False,
            trace=False,
        ),
        Stage(
            "load", "kaffinity.load.files.load([dir])", lambda: load([folder]), lambda f: check_load(f, item)
        ),
    ]


def lint_stage(item: Corpus, settings: Settings) -> Stage:
    """The whole command in-process: load and every rule that needs no cluster."""
    folder = item.manifests
    return Stage(
        "lint",
        "lint(load([dir]), Settings())",
        lambda: lint(load([folder]), settings),
        lambda result: check_lint(result, item),
    )


def rules_stage(item: Corpus, settings: Settings) -> Stage:
    """Every rule that needs no cluster (``lint(files, settings)``: the engine with the whole
    registry; the cluster's rules skip themselves) on files loaded beforehand."""
    files = load([item.manifests])
    return Stage(
        "rules",
        "every rule without a cluster: lint(files)",
        lambda: lint(files, settings),
        lambda result: check_lint(result, item),
    )


def validation_stage(item: Corpus, settings: Settings) -> Stage:
    """The six validation rules' shared work (:func:`validate_documents`) on loaded objects.

    The first call, the checking one, builds the validators of the version (once per version
    and kind)."""
    documents = [doc for file in load([item.manifests]) for doc in file.documents]

    def check(found: dict[str, list[Any]]) -> None:
        if found:
            raise RuntimeError(f"validation found problems in the generated corpus: {sorted(found)}")

    return Stage(
        "schema",
        "schema + API validation (all objects)",
        lambda: validate_documents(documents, settings),
        check,
    )


def _check_rules(result: LintResult, what: str) -> None:
    if result.internal_errors:
        raise RuntimeError(f"the {what} rules failed: {result.internal_errors}")


def expansion_stage(item: Corpus, settings: Settings) -> Stage:
    """The merged selectors of every workload (:class:`kaffinity.expand.merge.Expansions`) and the four
    expansion rules that read them, on files loaded beforehand."""
    files = load([item.manifests])
    expansion = dataclasses.replace(settings, select=("expansion",))
    inventory = build_inventory([doc for file in files for doc in file.documents])
    version, gates = settings.kube_version, settings.feature_gates
    if not any(term.applied for w in inventory.workloads for term in expand(w, version, gates).terms):
        raise RuntimeError("the generated corpus has no matchLabelKeys to merge")
    return Stage(
        "expand",
        "matchLabelKeys merge + expansion rules",
        lambda: lint(files, expansion),
        lambda result: _check_rules(result, "expansion"),
    )


def graph_stage(item: Corpus, settings: Settings) -> Stage:
    """The affinity graph (typed inventory, merged selectors, index, networkx graph, placement)
    and every graph rule, on files loaded beforehand: ``lint`` with ``select=("graph",)``."""
    files = load([item.manifests])
    graph_only = dataclasses.replace(settings, select=("graph",))
    contexts = [Context(files, graph_only)]  # the checking run's; it keeps the graph

    def check(result: LintResult) -> None:
        _check_rules(result, "graph")
        graph = contexts.pop().graph.graph
        if not any(data.get("type") == "selector" for _, data in graph.nodes(data=True)):
            raise RuntimeError("the generated corpus has no selector matching many workloads")

    return Stage(
        "graph",
        "affinity graph + graph rules",
        lambda: lint(files, graph_only),
        check,
        first=lambda: lint(files, graph_only, context=contexts[0]),
    )


@dataclass(slots=True)
class Placed:
    """What the checking run of ``simulate`` placed: pods (Pending ones included) and Pending."""

    pods: int = 0
    pending: int = 0


def simulate_stage(item: Corpus, settings: Settings, nodes: int) -> tuple[Stage, Placed]:
    """``lint`` with a declared cluster, as ``kaffinity lint DIR --cluster FILE`` runs it: every
    rule, the cluster's rules among them, and the offline scheduler placing every pod
    (``Context.placement``), on manifests and a cluster loaded beforehand."""
    from kaffinity.simulate.cluster import cluster_from

    cluster_path = cluster_file(item, nodes)
    files = load([item.manifests])
    cluster = cluster_from(load([cluster_path]), settings.namespace)
    if len(cluster.nodes) != nodes:
        raise RuntimeError(f"{cluster_path} declares {len(cluster.nodes)} nodes, not {nodes}")
    placed = Placed()
    contexts = [Context(files, settings, cluster)]  # the checking run's; it keeps the placement

    def check(result: LintResult) -> None:
        check_lint(result, item)
        placement = contexts.pop().placement
        if placement is None or not placement.placements:
            raise RuntimeError("lint with a cluster placed no pods")
        placed.pods, placed.pending = len(placement.placements), len(placement.pending)

    stage = Stage(
        f"simulate-{nodes}",
        f"lint with a cluster of {nodes:,} nodes",
        lambda: lint(files, settings, cluster=cluster),
        check,
        first=lambda: lint(files, settings, context=contexts[0]),
    )
    return stage, placed


def report_stages(item: Corpus, settings: Settings) -> list[Stage]:
    """Rendering the corpus's lint result (no cluster) as text (with code frames), JSON and SARIF,
    as the CLI does (``kaffinity.report.render``)."""
    files = load([item.manifests])
    result = lint(files, settings)
    check_lint(result, item)
    sources = {file.name: file.text for file in files}

    def check(text: str) -> None:
        if not text:
            raise RuntimeError("a report rendered nothing")

    def check_json(text: str) -> None:
        if len(json.loads(text)["findings"]) != len(result.findings):
            raise RuntimeError("the JSON report does not list every finding")

    def renderer(fmt: str) -> Callable[[], str]:
        return lambda: render(result, fmt, sources=sources)

    return [
        Stage(
            f"report-{fmt}",
            f"render the lint result as {fmt}",
            renderer(fmt),
            check_json if fmt == "json" else check,
        )
        for fmt in ("text", "json", "sarif")
    ]


def measure_graph(item: Corpus, repeat: int) -> list[Measurement]:
    """``--stages graph``: the parse floor (for the ratio) and the graph stage only."""
    texts = read_all(manifest_files(item.manifests))
    plan = Plan(repeat, trace=False, clusters=())
    return [
        measure(floor_stage(texts, item), item, plan),
        measure(graph_stage(item, Settings()), item, plan),
    ]


def cli_has(cwd: str, *options: str) -> bool:
    """Whether ``kaffinity lint --help`` lists every one of ``options``."""
    environment = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    done = subprocess.run(
        cli_command("lint", "--help"), cwd=cwd, capture_output=True, text=True, env=environment, check=False
    )
    listed = set(re.findall(r"--[a-z][a-z0-9-]*", done.stdout))
    return all(option in listed for option in options)


def cli_has_jobs(cwd: str) -> bool:
    """Whether ``kaffinity lint`` takes ``--jobs`` (the rows that need it are skipped otherwise)."""
    return cli_has(cwd, "--jobs")


def measure_cli(
    item: Corpus, repeat: int, cwd: str, scratch: str, jobs: bool, simulated: Measurement | None
) -> list[Measurement]:
    """The whole command as a subprocess: ``kaffinity lint DIR --jobs 1`` and with the default
    jobs (their JSON outputs compared byte for byte), and with ``--cluster FILE`` on the cluster
    of the ``simulated`` row (it places the same pods)."""
    stats = item.stats

    def child(stage: str, label: str, *arguments: str) -> Measurement:
        command = cli_command("lint", item.manifests, "--format", "json", *arguments)
        # No warm-up: the in-process stages have just read these files and imported these modules.
        walls, cpus, rss = timed_child(command, cwd, repeat, warm_up=False)
        row = Measurement(stage, label, stats.workloads, stats.objects, walls, cpus, rss)
        _print_row(row)
        return row

    outputs = {
        name: os.path.join(scratch, f"lint-{stats.workloads}-{name}.json") for name in ("jobs1", "default")
    }
    rows = []
    if jobs:
        single = child(
            "cli-jobs1", "kaffinity lint DIR --jobs 1 (subprocess)", "--jobs", "1", "-o", outputs["jobs1"]
        )
        rows.append(single)
    default_label = (
        "kaffinity lint DIR (subprocess, default jobs)" if jobs else "kaffinity lint DIR (subprocess)"
    )
    rows.append(child("cli", default_label, "-o", outputs["default"]))
    if jobs:
        with open(outputs["jobs1"], "rb") as one, open(outputs["default"], "rb") as default:
            single.same_output = one.read() == default.read()
        print(f"  --jobs 1 and default jobs: JSON outputs {'identical' if single.same_output else 'DIFFER'}")
    if simulated is not None:
        nodes = simulated.nodes
        path = cluster_file(item, nodes)
        # As the in-process stage (BENCH_PODS); a config may only lower a limit (issue 31).
        row = child(
            "cli-cluster",
            f"kaffinity lint DIR --cluster ({nodes:,} nodes)",
            "--limit",
            f"pods={BENCH_PODS}",
            "--cluster",
            path,
            "-o",
            os.devnull,
        )
        row.nodes, row.pods, row.pending = nodes, simulated.pods, simulated.pending
        rows.append(row)
    return rows


def simulate_estimate(done: Sequence[Measurement], nodes: int) -> float | None:
    """Seconds the simulate stage is expected to take on ``nodes`` nodes, from the largest
    cluster measured below it: DaemonSet pods and the nodes each pod is filtered against both
    grow with the nodes, so the time grows with their square."""
    smaller = [row for row in done if row.nodes < nodes]
    if not smaller:
        return None
    last = max(smaller, key=lambda row: row.nodes)
    return last.median * (nodes / last.nodes) ** 2


#: ``limits: pods`` for the simulate stages: the generated corpus asks for more pods than the
#: default limit (150,000) at 10,000 workloads on 1,000 nodes (527,091, most of them Pending),
#: and the benchmark measures placing them all, as it did before the limit.
BENCH_PODS = 10_000_000


def measure_simulate(item: Corpus, plan: Plan, settings: Settings, notes: list[str]) -> list[Measurement]:
    """``simulate`` on each of the plan's clusters, smallest first; one whose estimated time
    exceeds the budget is skipped, with a note, unless it is the target's."""
    settings = dataclasses.replace(settings, limits=dataclasses.replace(settings.limits, pods=BENCH_PODS))
    rows: list[Measurement] = []
    for nodes in sorted(plan.clusters):
        estimate = simulate_estimate(rows, nodes)
        if estimate is not None and estimate > plan.simulate_budget and nodes != TARGET_NODES:
            note = (
                f"simulate on {nodes:,} nodes at {item.workloads:,} workloads not run: estimated "
                f"{estimate / 60:,.0f} min per run (budget {plan.simulate_budget / 60:,.0f} min, "
                "--simulate-budget)"
            )
            print(f"  {note}", flush=True)
            notes.append(note)
            continue
        stage, placed = simulate_stage(item, settings, nodes)
        row = measure(stage, item, plan)
        del stage
        row.nodes, row.pods, row.pending = nodes, placed.pods, placed.pending
        print(
            f"    {placed.pods:,} pods ({placed.pending:,} Pending): "
            f"{_rate(row.pods, row.cpu_median)} pods/s (CPU)"
        )
        rows.append(row)
    return rows


def measure_size(
    item: Corpus, plan: Plan, cwd: str, scratch: str, jobs: bool, notes: list[str]
) -> list[Measurement]:
    """Every stage at one size. Each stage's first call checks the result and warms it up."""
    stats = item.stats
    folder = item.manifests
    settings = Settings()
    paths = manifest_files(folder)
    print(f"{stats.workloads:,} workloads: {len(paths):,} files, {stats.objects:,} objects", flush=True)
    if not plan.trace:
        print("  (no tracemalloc run at this size: see TRACE_LIMIT)", flush=True)
    texts = read_all(paths)
    results = [measure(stage, item, plan) for stage in load_stages(paths, texts, item)]
    del texts
    # Each stage loads its inputs when built and frees them once measured, before the next.
    for build in (validation_stage, expansion_stage, graph_stage, lint_stage, rules_stage):
        results.append(measure(build(item, settings), item, plan))
    simulated = measure_simulate(item, plan, settings, notes)
    results += simulated
    results += [measure(stage, item, plan) for stage in report_stages(item, settings)]
    # The CLI on the target's cluster if it was simulated, else on the smallest.
    cluster = next(
        (row for row in simulated if row.nodes == TARGET_NODES), simulated[0] if simulated else None
    )
    results += measure_cli(item, plan.repeat, cwd, scratch, jobs, cluster)
    return results


def measure_startup(small: Corpus, cwd: str) -> list[Measurement]:
    results = []
    small_file = manifest_files(small.manifests)[0]
    commands = (
        ("python", "python -c pass", [sys.executable, "-c", "pass"]),
        ("version", "python -m kaffinity --version", cli_command("--version")),
        (
            "small",
            "kaffinity lint (one small file)",
            cli_command("lint", small_file, "--format", "json", "-o", os.devnull),
        ),
    )
    for stage, label, command in commands:
        walls, cpus, rss = timed_child(command, cwd, STARTUP_REPEAT)
        results.append(Measurement(stage, label, 0, 0, walls, cpus, rss))
        print(f"  {label:<40} {statistics.median(walls):8.3f} s", flush=True)
    return results


# --- reporting -------------------------------------------------------------------------------


def _git(*arguments: str) -> str:
    try:
        done = subprocess.run(["git", *arguments], cwd=ROOT, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return ""
    return done.stdout.strip()


def code_identity() -> str:
    """The commit, and a digest of kaffinity's sources as they are on disk (edits show up)."""
    digest = hashlib.sha256()
    package = os.path.dirname(os.path.abspath(kaffinity.__file__))
    for root, dirs, files in os.walk(package):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                digest.update(name.encode())
                with open(os.path.join(root, name), "rb") as handle:
                    digest.update(handle.read())
    commit = _git("rev-parse", "--short", "HEAD") or "?"
    dirty = " + uncommitted changes" if _git("status", "--porcelain", "--", "kaffinity") else ""
    return f"sources {digest.hexdigest()[:12]} (commit {commit}{dirty})"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine(load_before: tuple[float, float, float], code: tuple[str, str]) -> list[tuple[str, str]]:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    after = os.getloadavg()
    before_code, after_code = code
    changed = ""
    if after_code.split()[1] != before_code.split()[1]:
        changed = f"; **the sources changed during the run**, to {after_code}"
    elif after_code != before_code:
        changed = f"; the repository moved on during the run, to {after_code.split(' ', 2)[2]}"
    return [
        ("date", datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")),
        (
            "CPU",
            f"{_cpu_model()} ({os.cpu_count()} logical cores, {usable} usable; in-process timings "
            "single-threaded)",
        ),
        ("OS", platform.platform()),
        ("Python", f"{platform.python_implementation()} {platform.python_version()} ({sys.executable})"),
        ("ruamel.yaml", importlib.metadata.version("ruamel.yaml")),
        ("ruamel.yaml.clib", importlib.metadata.version("ruamel.yaml.clib")),
        ("kaffinity", f"{kaffinity.__version__}, {before_code}{changed}"),
        (
            "load average (1 min)",
            f"{load_before[0]:.2f} before the run, {after[0]:.2f} after it "
            "(other processes share these cores: compare wall and CPU columns)",
        ),
    ]


def _rate(count: int, seconds: float) -> str:
    return f"{count / seconds:,.0f}" if count and seconds > 0 else "-"


def _mib(value: float | None) -> str:
    return f"{value:,.0f}" if value is not None else "-"


def results_table(rows: Sequence[Measurement], floors: dict[int, Measurement]) -> list[str]:
    lines = [
        "| stage | workloads | objects | median s | min s | CPU s | documents/s | workloads/s | x floor "
        "| x floor (CPU) | peak MiB (traced) | peak RSS MiB |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for row in rows:
        floor = floors[row.workloads]
        ratio = f"{row.median / floor.median:.2f}"
        cpu_ratio = f"{row.cpu_median / floor.cpu_median:.2f}"
        lines.append(
            f"| {row.label} | {row.workloads:,} | {row.objects:,} | {row.median:.3f} | {row.best:.3f} "
            f"| {row.cpu_median:.3f} | {_rate(row.objects, row.median)} | {_rate(row.workloads, row.median)} "
            f"| {ratio} | {cpu_ratio} | {_mib(row.traced_mib)} | {_mib(row.rss_mib)} |"
        )
    return lines


def simulation_table(rows: Sequence[Measurement]) -> list[str]:
    """The ``simulate`` rows (and the CLI with a cluster): pods placed and pods per second."""
    lines = [
        "| stage | workloads | nodes | pods | Pending | median s | CPU s | pods/s (CPU) | peak MiB (traced) "
        "| peak RSS MiB |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for row in rows:
        lines.append(
            f"| {row.label} | {row.workloads:,} | {row.nodes:,} | {f'{row.pods:,}' if row.pods else '-'} | "
            f"{f'{row.pending:,}' if row.pods else '-'} | {row.median:.3f} | {row.cpu_median:.3f} | "
            f"{_rate(row.pods, row.cpu_median)} | {_mib(row.traced_mib)} | {_mib(row.rss_mib)} |"
        )
    return lines


def startup_table(rows: Sequence[Measurement]) -> list[str]:
    lines = ["| command | median s | min s | CPU s | peak RSS MiB |", "|---|--:|--:|--:|--:|"]
    for row in rows:
        lines.append(
            f"| `{row.label}` | {row.median:.3f} | {row.best:.3f} | {row.cpu_median:.3f} "
            f"| {_mib(row.rss_mib)} |"
        )
    return lines


def growth_table(by_size: dict[int, list[Measurement]]) -> list[str]:
    """Each stage's median at one size divided by its median at the size before (stages are
    matched by name; "-" where a stage ran at one of the two sizes only)."""
    sizes = sorted(by_size)
    if len(sizes) < 2:
        return []
    pairs = list(itertools.pairwise(sizes))
    header = "| stage | " + " | ".join(f"{a:,} -> {b:,} (linear: {b / a:.1f}x)" for a, b in pairs) + " |"
    lines = [header, "|---|" + "--:|" * len(pairs)]
    stages = {row.stage: row.label for size in sizes for row in by_size[size]}  # in order, first label
    for stage, label in stages.items():
        cells = []
        for small, big in pairs:
            before, after = _find(by_size[small], stage), _find(by_size[big], stage)
            cells.append(f"{after.median / before.median:.2f}x" if before and after else "-")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def corpus_table(corpora: Sequence[Corpus]) -> list[str]:
    lines = [
        "| workloads | with scheduling rules | namespaces | files | YAML documents | objects | MB |",
        "|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for item in corpora:
        s = item.stats
        lines.append(
            f"| {s.workloads:,} | {s.scheduled:,} | {s.namespaces:,} | {s.files:,} | {s.documents:,} "
            f"| {s.objects:,} | {s.bytes / 1e6:.1f} |"
        )
    return lines


def _stage(rows: Sequence[Measurement], stage: str) -> Measurement:
    return next(row for row in rows if row.stage == stage)


def _find(rows: Sequence[Measurement], stage: str) -> Measurement | None:
    return next((row for row in rows if row.stage == stage), None)


def _verdict(value: float, target: float) -> str:
    return "met" if value <= target else "**not met**"


def _load_lines(top: Sequence[Measurement]) -> list[str]:
    floor, parsed, nogc = _stage(top, "floor"), _stage(top, "parse"), _stage(top, "parse-nogc")
    loaded, read = _stage(top, "load"), _stage(top, "read")
    load_ratio = loaded.cpu_median / floor.cpu_median
    parse_ratio = parsed.cpu_median / floor.cpu_median
    nogc_ratio = nogc.cpu_median / floor.cpu_median
    collector = parsed.cpu_median - nogc.cpu_median
    lines = [
        f"- At {floor.workloads:,} workloads, `kaffinity.load.files.load([dir])`, the path the CLI takes, "
        f"runs at **{load_ratio:.2f}x** the parse floor ({loaded.cpu_median:.2f} s against "
        f"{floor.cpu_median:.2f} s CPU, discovery and reading included; target <= {PARSE_TARGET:.0f}x: "
        f"{_verdict(load_ratio, PARSE_TARGET)}).",
        f"- `kaffinity.load.parse.parse` called file by file takes **{parse_ratio:.2f}x** the floor "
        f"({_verdict(parse_ratio, PARSE_TARGET)}), and {nogc_ratio:.2f}x with the garbage collector "
        f"disabled: the collector costs {collector:.2f} s of its {parsed.cpu_median:.2f} s CPU "
        f"({collector / parsed.cpu_median:.0%}), rescanning the containers built so far, in which it "
        "finds nothing to free. What remains above the floor is kaffinity's own work: building "
        "PosDict/PosList with positions, resolving scalars as YAML 1.1, flattening Lists.",
    ]
    # Where load sits between parse without the collector (0) and parse with it (1).
    without = nogc.cpu_median + read.cpu_median
    share = (loaded.cpu_median - without) / max(parsed.cpu_median - nogc.cpu_median, 1e-9)
    if share < 0.3:
        lines.append(
            f"- `load` ({loaded.cpu_median:.2f} s CPU) stays near the gc-disabled line ({without:.2f} s with "
            f"reading), far below `parse` with the collector ({parsed.cpu_median + read.cpu_median:.2f} s): "
            "it pauses the collector while loading."
        )
    else:
        lines.append(
            f"- `load` ({loaded.cpu_median:.2f} s CPU) pays for the collector much as `parse` does "
            f"({share:.0%} of its cost); pausing the collector while loading would bring it near "
            f"{without:.2f} s."
        )
    return lines


def _growth_lines(by_size: dict[int, list[Measurement]]) -> list[str]:
    sizes = sorted(by_size)
    first, top = by_size[sizes[0]], by_size[sizes[-1]]
    ideal = sizes[-1] / sizes[0]
    growth = {
        row.stage: big.median / row.median for row in first if (big := _find(top, row.stage)) is not None
    }
    # Stages that take under 5% of the floor's time (reading, rendering) are too short to judge.
    floor = _stage(top, "floor").median
    superlinear = [
        stage
        for stage, value in growth.items()
        if value > ideal * 1.2 and not stage.startswith("cli") and _stage(top, stage).median >= 0.05 * floor
    ]
    line = (
        f"- Growth {sizes[0]:,} -> {sizes[-1]:,} (linear: {ideal:.0f}x): floor {growth['floor']:.1f}x, "
        f"parse {growth['parse']:.1f}x (gc disabled: {growth['parse-nogc']:.1f}x), load "
        f"{growth['load']:.1f}x, lint {growth['lint']:.1f}x, CLI {growth['cli']:.1f}x (its fixed start-up "
        "weighs more in the small run). "
    )
    if superlinear:
        line += f"More than 1.2x linear: {', '.join(superlinear)}"
        line += (
            "; with the collector on only, whose full collections rescan everything loaded so far."
            if "parse-nogc" not in superlinear and "parse" in superlinear
            else "."
        )
    else:
        line += "No in-process stage grows more than 1.2x linearly."
    rss_small = _stage(first, "cli").rss_mib or 0.0
    rss_big = _stage(top, "cli").rss_mib or 0.0
    per_workload = (rss_big - rss_small) * 1024 / (sizes[-1] - sizes[0])
    memory = (
        f"- The CLI's peak RSS grows by about {per_workload:,.0f} KiB per workload "
        f"({rss_small:,.0f} -> {rss_big:,.0f} MiB): every file's text and every object, with positions, "
        "is held until the report is written."
    )
    return [line, memory]


def reading(by_size: dict[int, list[Measurement]], startup: Sequence[Measurement]) -> list[str]:
    """A short interpretation, computed from the numbers so that it never goes stale."""
    sizes = sorted(by_size)
    top = by_size[sizes[-1]]
    loaded, linted, rules, cli = (_stage(top, name) for name in ("load", "lint", "rules", "cli"))
    small = _stage(startup, "small")
    lines = _load_lines(top)
    validated = _stage(top, "schema")
    share = validated.cpu_median / loaded.cpu_median
    lines.append(
        f"- Schema and API-server validation of the {validated.workloads:,} workloads takes "
        f"{validated.cpu_median:.2f} s CPU ({_rate(validated.workloads, validated.cpu_median)} workloads/s): "
        f"**{share:.0%}** on top of loading ({loaded.cpu_median:.2f} s; target <= {VALIDATION_TARGET:.0%}: "
        f"{_verdict(share, VALIDATION_TARGET)})."
    )
    expanded = _stage(top, "expand")
    lines.append(
        f"- The matchLabelKeys merge and the four expansion rules take {expanded.cpu_median:.2f} s CPU on "
        f"loaded files ({_rate(expanded.workloads, expanded.cpu_median)} workloads/s, "
        f"{expanded.cpu_median / loaded.cpu_median:.0%} of loading), the typed inventory included."
    )
    extra = linted.median - loaded.median - rules.median
    if extra > 0.1 * loaded.median:
        lines.append(
            f"- The rules alone, on files loaded earlier, take {rules.median:.2f} s, yet "
            f"`lint(load([dir]))` takes {extra:.2f} s more than load and rules apart "
            f"({linted.median:.2f} s): the first garbage collection after `load()` walks every object "
            "just loaded, which sat uncollected in the youngest generation while the collector was "
            "paused. A `gc.freeze()` after loading avoids it."
        )
    else:
        lines.append(
            f"- The rules add {rules.median:.2f} s to loading (in-process lint: {linted.median:.2f} s)."
        )
    rendered = [row for row in top if row.stage.startswith("report-")]
    lines.append(
        "- Rendering the result takes "
        + ", ".join(f"{row.cpu_median:.2f} s CPU as {row.stage.removeprefix('report-')}" for row in rendered)
        + f" ({sum(row.cpu_median for row in rendered) / linted.cpu_median:.0%} of the in-process lint for "
        "the three together)."
    )
    lines.append(
        f"- The CLI takes {cli.median:.2f} s wall "
        f"({cli.cpu_median:.2f} s CPU) for {cli.workloads:,} workloads, {cli.median / linted.median:.2f}x "
        f"the in-process lint; a lint of one small file takes {small.median:.2f} s, nearly all of it "
        f"start-up. Peak RSS: {cli.rss_mib or 0:,.0f} MiB."
    )
    busy = max(_stage(rows, "parse").median / _stage(rows, "parse").cpu_median for rows in by_size.values())
    if busy > 1.1:
        lines.append(
            f"- Other processes competed for the CPU during this run (wall time up to {busy - 1:.0%} above "
            "CPU time for parse): the CPU columns and `x floor (CPU)` are the steadier numbers."
        )
    if len(sizes) >= 2:
        lines += _growth_lines(by_size)
    if 10_000 in by_size and 100_000 in by_size:
        growth = _stage(by_size[100_000], "load").median / _stage(by_size[10_000], "load").median
        lines.append(
            f"- Load growth 10,000 -> 100,000: {growth:.1f}x "
            f"(target <= {GROWTH_TARGET:.0f}x: {_verdict(growth, GROWTH_TARGET)})."
        )
    return lines


NOT_MEASURED = "not measured"


def _single_core_cli(rows: Sequence[Measurement]) -> Measurement:
    """``--jobs 1``; without ``--jobs`` the CLI runs on one core anyway."""
    return _find(rows, "cli-jobs1") or _stage(rows, "cli")


def _lint_target(by_size: dict[int, list[Measurement]]) -> tuple[str, str, str]:
    size = TARGET_SIZE if TARGET_SIZE in by_size else max(by_size)
    rows = by_size[size]
    single, floor = _single_core_cli(rows), _stage(rows, "floor")
    ratio = single.cpu_median / floor.cpu_median
    measured = (
        f"{ratio:.2f}x ({single.cpu_median:.2f} s CPU of `{single.label}` / {floor.cpu_median:.2f} s) "
        f"at {size:,} workloads"
    )
    verdict = _verdict(ratio, PARSE_TARGET)
    if size != TARGET_SIZE:
        verdict = f"{NOT_MEASURED} at {TARGET_SIZE:,} ({verdict} at {size:,})"
    return (
        f"`kaffinity lint` (no cluster) <= {PARSE_TARGET:.0f}x the parse floor on one core",
        measured,
        verdict,
    )


def _jobs_target(by_size: dict[int, list[Measurement]]) -> tuple[str, str, str]:
    name = "`--jobs N` (default: cores) gives output identical to `--jobs 1`"
    compared = {size: row for size, rows in by_size.items() if (row := _find(rows, "cli-jobs1"))}
    if not compared:
        return name, "this kaffinity lint has no --jobs", NOT_MEASURED
    differ = [size for size, row in compared.items() if not row.same_output]
    speed = ", ".join(
        f"{row.median / _stage(by_size[size], 'cli').median:.2f}x at {size:,}"
        for size, row in sorted(compared.items())
    )
    where = ", ".join(f"{size:,}" for size in sorted(differ or compared))
    measured = (
        f"JSON {'differs' if differ else 'byte-identical'} at {where} workloads; "
        f"speed-up of the default jobs over --jobs 1 (wall): {speed}"
    )
    return name, measured, "**not met**" if differ else "met"


def _growth_target(by_size: dict[int, list[Measurement]]) -> tuple[str, str, str]:
    name = f"100,000 workloads cost <= {GROWTH_TARGET:.0f}x the time of 10,000 (`kaffinity lint --jobs 1`)"
    if not (TARGET_SIZE in by_size and LARGE_SIZE in by_size):
        return name, "run `--sizes 10000,100000`", NOT_MEASURED
    small, big = _single_core_cli(by_size[TARGET_SIZE]), _single_core_cli(by_size[LARGE_SIZE])
    growth = big.median / small.median
    lint_growth = _stage(by_size[LARGE_SIZE], "lint").median / _stage(by_size[TARGET_SIZE], "lint").median
    measured = (
        f"{growth:.1f}x ({small.median:.1f} -> {big.median:.1f} s wall); in-process lint {lint_growth:.1f}x"
    )
    return name, measured, _verdict(growth, GROWTH_TARGET)


def _memory_target(by_size: dict[int, list[Measurement]]) -> tuple[str, str, str]:
    name = f"peak memory at 100,000 workloads < {MEMORY_TARGET_MIB / 1024:.0f} GiB (the CLI's peak RSS)"

    def peak(size: int) -> float:
        return max(row.rss_mib or 0.0 for row in by_size[size] if row.stage in ("cli", "cli-jobs1"))

    if LARGE_SIZE in by_size:
        value = peak(LARGE_SIZE)
        verdict = "met" if value < MEMORY_TARGET_MIB else "**not met**"
        return name, f"{value:,.0f} MiB", verdict
    sizes = sorted(by_size)
    measured = f"{peak(sizes[-1]):,.0f} MiB at {sizes[-1]:,}"
    if len(sizes) >= 2:
        a, b = sizes[-2], sizes[-1]
        guess = peak(b) + (peak(b) - peak(a)) / (b - a) * (LARGE_SIZE - b)
        measured += f" (linear from {a:,}: about {guess:,.0f} MiB at {LARGE_SIZE:,})"
    return name, measured, NOT_MEASURED


def _placement_target(by_size: dict[int, list[Measurement]]) -> tuple[str, str, str]:
    name = (
        f"placing the pods of {TARGET_SIZE:,} workloads on {TARGET_NODES:,} nodes: >= "
        f"{PODS_PER_SECOND_TARGET:,.0f} pods/s (`lint` with the cluster, CPU)"
    )
    row = _find(by_size.get(TARGET_SIZE, ()), f"simulate-{TARGET_NODES}")
    if row is None:
        others = [r for rows in by_size.values() for r in rows if r.stage.startswith("simulate-")]
        seen = "; ".join(
            f"{r.workloads:,} workloads on {r.nodes:,} nodes: {_rate(r.pods, r.cpu_median)} pods/s"
            for r in others
        )
        return name, f"this run: {seen}" if seen else "no simulate run", NOT_MEASURED
    rate = row.pods / row.cpu_median
    measured = (
        f"{rate:,.0f} pods/s ({row.pods:,} pods, {row.pending:,} Pending, in {row.cpu_median:.1f} s CPU)"
    )
    return name, measured, "met" if rate >= PODS_PER_SECOND_TARGET else "**not met**"


def _startup_targets(startup: Sequence[Measurement]) -> list[tuple[str, str, str]]:
    version, small = _stage(startup, "version"), _stage(startup, "small")
    return [
        (
            f"start-up: `kaffinity --version` < {VERSION_TARGET} s",
            f"{version.median:.3f} s",
            "met" if version.median < VERSION_TARGET else "**not met**",
        ),
        (
            f"start-up: `kaffinity lint` of one file < {SMALL_LINT_TARGET} s",
            f"{small.median:.3f} s",
            "met" if small.median < SMALL_LINT_TARGET else "**not met**",
        ),
    ]


def targets(
    by_size: dict[int, list[Measurement]], startup: Sequence[Measurement]
) -> list[tuple[str, str, str]]:
    """Each target of the issue: (what it asks, what this run measured, met / not met / not measured)."""
    return [
        _lint_target(by_size),
        _jobs_target(by_size),
        _growth_target(by_size),
        _memory_target(by_size),
        _placement_target(by_size),
        *_startup_targets(startup),
    ]


def targets_table(by_size: dict[int, list[Measurement]], startup: Sequence[Measurement]) -> list[str]:
    lines = ["| target | measured | verdict |", "|---|---|---|"]
    lines += [f"| {name} | {measured} | {verdict} |" for name, measured, verdict in targets(by_size, startup)]
    return lines


def _runs(plans: dict[int, Plan]) -> str:
    by_repeat: dict[int, list[int]] = {}
    for size, plan in sorted(plans.items()):
        by_repeat.setdefault(plan.repeat, []).append(size)
    return "; ".join(
        f"{'Median of ' if repeat > 1 else ''}{repeat} timed run{'s' if repeat > 1 else ''} at "
        + ", ".join(f"{size:,}" for size in sizes)
        + " workloads"
        for repeat, sizes in by_repeat.items()
    )


def report(
    command: str,
    corpora: Sequence[Corpus],
    by_size: dict[int, list[Measurement]],
    startup: Sequence[Measurement],
    plans: dict[int, Plan],
    notes: Sequence[str],
    load_before: tuple[float, float, float],
    code: tuple[str, str],
) -> str:
    floors = {size: _stage(rows, "floor") for size, rows in by_size.items()}
    rows = [row for size in sorted(by_size) for row in by_size[size]]
    untraced = [f"{size:,}" for size, plan in sorted(plans.items()) if not plan.trace]
    parts = [
        *_header(
            "kaffinity benchmarks",
            "Written by `benchmarks/run.py`; see `benchmarks/README.md` for what each line measures.",
            command,
            machine(load_before, code),
        ),
        f"{_runs(plans)}, after one run that checks the result (and warms up); that run is "
        f"the measurement where one run is asked for or it took {LONG_RUN:.0f} s or more. Start-up lines: "
        f"median of {STARTUP_REPEAT}. "
        "Reading the files is timed on its own (`read`) and excluded from both `parse floor` and "
        "`kaffinity.load.parse.parse`; `load`, `lint` and the CLI include it. `x floor` divides a stage's "
        "median by the parse floor's median at the same size; `x floor (CPU)` does the same with CPU "
        "seconds, which other processes on the machine disturb less. objects = Kubernetes objects, the items "
        "of a `kind: List` counted one by one (what kaffinity calls documents; documents/s counts them). "
        "`peak MiB (traced)`: the most memory an in-process stage held at once beyond its inputs, "
        "traced by tracemalloc in one more, untimed run (`-`: not traced, as a traced run would "
        f"take over {TRACE_SECONDS / 60:.0f} min"
        + (f", or at {', '.join(untraced)} workloads, over {TRACE_LIMIT / 2**30:.0f} GiB" if untraced else "")
        + ")"
        + "; `peak RSS MiB`: the CLI process's (with --jobs, the largest process's, not their sum).",
        "",
        "## Corpus",
        "",
        *corpus_table(corpora),
        "",
        "## Results",
        "",
        *results_table(rows, floors),
        "",
    ]
    simulated = [row for row in rows if row.nodes]
    if simulated:
        parts += [
            "## Simulation",
            "",
            "`lint` with a generated cluster, in-process on files loaded beforehand and as the CLI: "
            "every rule and the offline scheduler placing every pod (DaemonSets: one per node they "
            "may run on). pods/s divides the pods placed, Pending ones included, by the CPU seconds of "
            "the whole lint.",
            "",
            *simulation_table(simulated),
            "",
        ]
    growth = growth_table(by_size)
    if growth:
        parts += ["## Growth", "", "Median time at the larger size divided by the median at the smaller.", ""]
        parts += [*growth, ""]
    parts += [
        "## Start-up",
        "",
        *startup_table(startup),
        "",
        "## Targets",
        "",
        *targets_table(by_size, startup),
        "",
        "## Reading",
        "",
        *reading(by_size, startup),
        *(f"- {note}." for note in notes),
        "",
    ]
    return "\n".join(parts)


# --- main ------------------------------------------------------------------------------------


def _sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(part.replace("_", "")) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of numbers: {text!r}") from None
    if not sizes or sizes[0] < 1:
        raise argparse.ArgumentTypeError("sizes must be positive numbers of workloads")
    return sizes


GRAPH_OUTPUT_NAME = "benchmarks/GRAPH.md"


def _header(title: str, intro: str, command: str, facts: Sequence[tuple[str, str]]) -> list[str]:
    """The opening of a results file: title, what it measures, the machine, the command."""
    return [
        f"# {title}",
        "",
        intro,
        "",
        "## Machine",
        "",
        *(f"- {name}: {value}" for name, value in facts),
        "",
        "## Command",
        "",
        f"```\n{command}\n```",
        "",
    ]


def graph_main(args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    """``--stages graph``: the graph stage's cost and its growth with the number of workloads."""
    sizes: list[int] = args.sizes or [1_000, 10_000, 100_000]
    repeat: int = args.repeat or 3
    output: str = args.output or os.path.join(ROOT, GRAPH_OUTPUT_NAME)
    command = shlex.join(["python", "benchmarks/run.py", *(sys.argv[1:] if argv is None else argv)])
    load_before = os.getloadavg()
    code_before = code_identity()
    rows: dict[int, list[Measurement]] = {}
    with tempfile.TemporaryDirectory(prefix="kaffinity-bench-") as scratch:
        for size in sizes:
            item = corpus(size, not args.no_cache, scratch)
            print(f"{item.stats.workloads:,} workloads", flush=True)
            rows[size] = measure_graph(item, repeat)
    lines = [
        *_header(
            "kaffinity affinity-graph benchmark",
            "Written by `benchmarks/run.py --stages graph`: the affinity graph (typed inventory, merged "
            "selectors, label index, relations, placement fixpoint) and every rule of category "
            "`graph`, timed as `lint(files, select=graph)` on files loaded beforehand; median of "
            f"{repeat} runs after one untimed run. `x floor` divides by the parse floor at the same size.",
            command,
            machine(load_before, (code_before, code_identity())),
        ),
        "## Results",
        "",
        "| workloads | objects | graph s | CPU s | workloads/s | x floor (CPU) | growth |",
        "|--:|--:|--:|--:|--:|--:|--:|",
    ]
    previous: Measurement | None = None
    for size in sizes:
        floor, graph = rows[size]
        growth = (
            f"{graph.median / previous.median:.1f}x for {graph.workloads / previous.workloads:.0f}x"
            if previous
            else "-"
        )
        lines.append(
            f"| {graph.workloads:,} | {graph.objects:,} | {graph.median:.3f} | {graph.cpu_median:.3f} | "
            f"{_rate(graph.workloads, graph.cpu_median)} | "
            f"{graph.cpu_median / floor.cpu_median:.2f} | {growth} |"
        )
        previous = graph
    text = "\n".join(lines) + "\n"
    print(text)
    with open(output, "w", encoding="utf-8") as handle:
        handle.write(text)
    print(f"written to {output}")
    return 0


POLICY_OUTPUT_NAME = "benchmarks/POLICY.md"
#: The ten policies of ``--stages policy``: the library's seven and three CEL ones.
POLICY_PATHS = ("examples/policies", "benchmarks/policies")


def policy_rules_for(settings: Settings) -> list[Any]:
    """The ten benchmark policies' rules: read, checked and compiled (timed with the lint)."""
    from kaffinity.policy.check import policy_rules, reserved_names
    from kaffinity.policy.load import load_policies

    loaded = load_policies([os.path.join(ROOT, path) for path in POLICY_PATHS], reserved_names())
    made, errors = policy_rules(loaded, settings)
    if loaded.errors or errors or len(made) != 10:
        raise RuntimeError(f"the benchmark policies: {len(made)} rules, {[*loaded.errors, *errors]}")
    return made


def policy_stages(item: Corpus, settings: Settings) -> list[Stage]:
    """The built-in rules alone and with the ten policies, in-process on files loaded
    beforehand (what the policies cost the engine)."""
    files = load([item.manifests])

    def check(result: LintResult) -> None:
        _check_rules(result, "policies")
        if not any(f.category == "policy" for f in result.findings):
            raise RuntimeError("the policies found nothing on the corpus")

    return [
        Stage(
            "rules",
            "built-in rules: lint(files)",
            lambda: lint(files, settings),
            lambda r: check_lint(r, item),
        ),
        Stage(
            "policies",
            "built-in rules + 10 policies: lint(files, rules + policy_rules(...))",
            lambda: lint(files, settings, (*RULES, *policy_rules_for(settings))),
            check,
        ),
    ]


def policy_commands(item: Corpus, cwd: str, repeat: int) -> dict[str, Measurement]:
    """``kaffinity lint DIR`` without and with the ten policies, each in a fresh process (as a
    user runs it; in one process, the trees earlier runs froze would weigh on the later)."""
    flags = [flag for path in POLICY_PATHS for flag in ("--policy", os.path.join(ROOT, path))]
    out = {}
    for stage, extra in (("lint", []), ("lint+policies", flags)):
        command = cli_command("lint", "--no-config", "--format", "json", item.manifests, *extra)
        walls, cpus, rss = timed_child(command, cwd, repeat)
        stats = item.stats
        out[stage] = Measurement(
            stage, shlex.join(command[1:]), stats.workloads, stats.objects, walls, cpus, rss
        )
        _print_row(out[stage])
    return out


#: The cache modes of the policy stage's memory rows: no cache, a cold one (new folder), warm.
POLICY_MEMORY_MODES = ("no cache", "cold", "warm")
#: The issue-36 target: peak RSS with the ten policies at most this times without them.
POLICY_MEMORY_TARGET = 1.2


def policy_memory(item: Corpus, cwd: str, scratch: str) -> dict[tuple[str, str], int]:
    """Peak RSS (KiB) of ``kaffinity lint DIR --jobs 1`` without and with the ten policies, with
    no cache, a cold cache (a new folder) and a warm one (the same folder again): one run each
    (memory is not disturbed by load)."""
    flags = [flag for path in POLICY_PATHS for flag in ("--policy", os.path.join(ROOT, path))]
    out: dict[tuple[str, str], int] = {}
    for stage, extra in (("lint", []), ("lint+policies", flags)):
        folder = tempfile.mkdtemp(prefix="cache-", dir=scratch)
        for mode in POLICY_MEMORY_MODES:
            cache = ["--no-cache"] if mode == "no cache" else ["--cache-dir", folder]
            command = cli_command(
                "lint", "--no-config", "--format", "json", "--jobs", "1", *cache, item.manifests, *extra
            )
            _, _, rss = timed_child(command, cwd, 1, warm_up=False)
            out[stage, mode] = rss[0]
            print(f"  {stage} ({mode}): peak RSS {rss[0] / 1024:.0f} MiB", flush=True)
    return out


def policy_memory_lines(
    sizes: Sequence[int], memory: Mapping[int, Mapping[tuple[str, str], int]]
) -> list[str]:
    """The memory table of ``--stages policy``: peak RSS without and with the policies, the ratio."""
    lines = [
        "",
        "## Memory",
        "",
        "Peak RSS of `kaffinity lint DIR --format json --jobs 1` in a fresh process, without and with "
        "the ten policies: no cache (`--no-cache`), a cold cache (a new folder) and a warm one (the "
        f"same folder again). Target (issue 36): with the policies at most {POLICY_MEMORY_TARGET}x "
        "without them.",
        "",
        "| workloads | cache | without MiB | with the policies MiB | ratio | target |",
        "|--:|--|--:|--:|--:|--|",
    ]
    for size in sizes:
        row = memory[size]
        for mode in POLICY_MEMORY_MODES:
            without, with_policies = row["lint", mode], row["lint+policies", mode]
            ratio = with_policies / without
            verdict = "met" if ratio <= POLICY_MEMORY_TARGET else "missed"
            lines.append(
                f"| {size:,} | {mode} | {without / 1024:.0f} | {with_policies / 1024:.0f} | {ratio:.2f} "
                f"| at most {POLICY_MEMORY_TARGET}x: {verdict} |"
            )
    return lines


def policy_main(args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    """``--stages policy``: what ten policies add to a lint, and whether a lint without policies
    imports the CEL engine."""
    sizes: list[int] = args.sizes or [1_000, 10_000]
    repeat: int = args.repeat or 3
    output: str = args.output or os.path.join(ROOT, POLICY_OUTPUT_NAME)
    command = shlex.join(["python", "benchmarks/run.py", *(sys.argv[1:] if argv is None else argv)])
    load_before = os.getloadavg()
    code_before = code_identity()
    settings = Settings()
    rows: dict[int, dict[str, Measurement]] = {}
    memory: dict[int, dict[tuple[str, str], int]] = {}
    with tempfile.TemporaryDirectory(prefix="kaffinity-bench-") as scratch:
        for size in sizes:
            item = corpus(size, not args.no_cache, scratch)
            print(f"{item.stats.workloads:,} workloads", flush=True)
            plan = Plan(repeat, trace=False, clusters=())
            rows[size] = {stage.stage: measure(stage, item, plan) for stage in policy_stages(item, settings)}
            cwd = os.path.join(scratch, "cwd")  # no .kaffinity.yaml above it
            os.makedirs(cwd, exist_ok=True)
            rows[size].update(policy_commands(item, cwd, repeat))
            memory[size] = policy_memory(item, cwd, scratch)
    probe = (
        "import sys, kaffinity.cli; from kaffinity.cli import app; print('cel_expr_python' in sys.modules)"
    )
    imported = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    lines = [
        *_header(
            "kaffinity policy benchmark",
            "Written by `benchmarks/run.py --stages policy`: the built-in rules alone and with ten policies "
            f"({', '.join(POLICY_PATHS)}: four JSON Schema policies, four ValidatingAdmissionPolicies in CEL "
            "with params, variables and matchConditions, two CEL policies on the kaffinity facts): "
            "in-process on files loaded beforehand (`rules`, `+ policies`), and the whole command "
            "`kaffinity lint DIR --format json` in a fresh process without and with them; reading and "
            f"compiling the policies is timed with them. Median of {repeat} runs; CPU seconds, and the "
            "wall seconds of the commands.",
            command,
            machine(load_before, (code_before, code_identity())),
        ),
        "## Results",
        "",
        "| workloads | rules s | + policies s | added to the rules | `kaffinity lint` s | with the "
        "policies s | added to the lint | wall s, without / with | target |",
        "|--:|--:|--:|--:|--:|--:|--:|--:|--|",
    ]
    for size in sizes:
        row = rows[size]
        rules_s, policies_s = row["rules"].cpu_median, row["policies"].cpu_median
        lint_s, both_s = row["lint"].cpu_median, row["lint+policies"].cpu_median
        added = both_s / lint_s - 1
        verdict = "met" if added <= 0.5 else "missed"
        lines.append(
            f"| {row['lint'].workloads:,} | {rules_s:.2f} | {policies_s:.2f} "
            f"| {policies_s / rules_s - 1:+.0%} "
            f"| {lint_s:.2f} | {both_s:.2f} | {added:+.0%} "
            f"| {row['lint'].median:.2f} / {row['lint+policies'].median:.2f} "
            f"({row['lint+policies'].median / row['lint'].median - 1:+.0%}) | at most +50%: {verdict} |"
        )
    lines += [
        "",
        f"A lint without policies imports the CEL engine: **{imported.strip()}** "
        "(`cel_expr_python` in `sys.modules` after importing the CLI).",
        *policy_memory_lines(sizes, memory),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    with open(output, "w", encoding="utf-8") as handle:
        handle.write(text)
    print(f"written to {output}")
    return 0


PLACE_OUTPUT_NAME = "benchmarks/PLACE.md"
#: (workloads in the corpus, nodes): about 2,500 and 10,000 pods on 1,000 nodes, and 10,000 pods
#: on 100 and 5,000 nodes, for the growth in pods and in nodes.
PLACE_CASES = ((850, 1_000), (3_400, 1_000), (3_400, 100), (3_400, 5_000))
#: A fifth of the pod templates carry scheduling rules (the issue's case).
PLACE_SCHEDULED_SHARE = 0.2


def place_corpus(workloads: int, nodes: int, scratch: str) -> tuple[list[Any], Any]:
    """A generated corpus's workloads, DaemonSets left out (on 1,000 nodes one DaemonSet alone
    is 1,000 pods), and its cluster of ``nodes`` Nodes."""
    from kaffinity.simulate.cluster import cluster_from

    folder = os.path.join(scratch, f"place-{workloads}-{nodes}")
    generate(folder, workloads, nodes=nodes, scheduled_share=PLACE_SCHEDULED_SHARE)
    files = load([os.path.join(folder, "manifests")])
    cluster = cluster_from(load([os.path.join(folder, "cluster.yaml")]))
    inventory = build_inventory(doc for file in files for doc in file.documents)
    return [w for w in inventory.workloads if w.ref.kind != "DaemonSet"], cluster


#: The PostFilter case: (workloads, nodes), and what the crowded cluster's existing pods request.
POSTFILTER_CASE = (3_400, 1_000)  # one of PLACE_CASES: its corpus is generated once
assert POSTFILTER_CASE in PLACE_CASES
CROWDING_POD = {"cpu": "1500m", "memory": "4Gi"}
SPILL_POOL = """\
apiVersion: kaffinity.io/v1alpha1
kind: ClusterTopology
metadata: {name: spill}
spec:
  zones:
    - name: eu-west-1a
      region: eu-west-1
      pools:
        - name: spill
          count: 0
          max: 1000
          labels: {node.kubernetes.io/pool: general}
          allocatable: {cpu: "8", memory: 32Gi, pods: 110}
"""


def postfilter_rows(scratch: str, repeat: int, chosen: list[Any], cluster: Any) -> list[str]:
    """What preemption and autoscaling cost: the ``PostFilter`` table's rows.

    On the 1,000-node case: the filters alone; with preemption and autoscaling on but nothing for
    them to do (every pod priority 0, no pool: what ``lint --cluster`` pays by default); with a
    pool that may grow by 1,000 nodes; and a crowded cluster (one existing priority-0 pod of
    1.5 cpu per node) under workloads of priority 1,000, filters only and with preemption.
    ``chosen`` and ``cluster``: the case's workloads and cluster, as :func:`place_corpus` made
    them in ``scratch`` for the placement table."""
    from kaffinity.k8s.model import build_inventory
    from kaffinity.simulate.cluster import cluster_from
    from kaffinity.simulate.framework.profile import FILTER_PLUGINS, FILTERS, PREEMPTION
    from kaffinity.simulate.place import place_all

    workloads, nodes = POSTFILTER_CASE
    folder = os.path.join(scratch, f"place-{workloads}-{nodes}")
    spill = os.path.join(scratch, "spill.yaml")
    with open(spill, "w", encoding="utf-8") as handle:
        handle.write(SPILL_POOL)
    grown = cluster_from(load([os.path.join(folder, "cluster.yaml"), spill]))
    crowd = os.path.join(scratch, "crowd.yaml")
    with open(crowd, "w", encoding="utf-8") as handle:
        for node in cluster.nodes:
            handle.write(
                "---\napiVersion: v1\nkind: Pod\n"
                f"metadata: {{name: batch-{node.ref.name}, namespace: batch, labels: {{app: batch}}}}\n"
                f"spec: {{nodeName: {node.ref.name}, priority: 0, containers: [{{name: c, image: i, "
                f"resources: {{requests: {{cpu: {CROWDING_POD['cpu']}, "
                f"memory: {CROWDING_POD['memory']}}}}}}}]}}\n"
                'status: {phase: Running, startTime: "2026-11-25T08:00:00Z"}\n'
            )
    crowded = cluster_from(load([os.path.join(folder, "cluster.yaml"), crowd]))
    services = os.path.join(scratch, "services.yaml")
    with open(services, "w", encoding="utf-8") as handle:
        handle.write("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: services}\n")
        handle.write("value: 1000\nglobalDefault: true\n")
    classes = build_inventory(doc for file in load([services]) for doc in file.documents).priority_classes
    version = Settings().kube_version
    cases: list[tuple[str, Any, tuple[str, ...], Any]] = [
        ("filters only", cluster, FILTER_PLUGINS, ()),
        ("+ preemption and autoscaling, nothing to do", cluster, FILTERS, ()),
        ("+ a pool that may grow by 1,000 nodes", grown, FILTERS, ()),
        ("crowded, priority 1,000 over 0: filters only", crowded, FILTER_PLUGINS, classes),
        ("crowded, priority 1,000 over 0: + preemption", crowded, (*FILTER_PLUGINS, PREEMPTION), classes),
    ]
    rows = []
    for label, declared, filters, chosen_classes in cases:

        def run(
            declared: Any = declared, filters: tuple[str, ...] = filters, picked: Any = chosen_classes
        ) -> Any:
            return place_all(chosen, declared, version=version, filters=filters, classes=picked)

        first = run()
        pods, pending = len(first.placements), len(first.pending)
        victims = sum(len(p.victims) for p in first.placements)
        added = len(first.sim.added)
        del first
        cpu = statistics.median(timed(run, repeat)[1])
        print(f"  {label}: {pods:,} pods, {pending:,} Pending: {cpu:.2f} s CPU", flush=True)
        rows.append(
            f"| {label} | {pods:,} | {pending:,} | {victims:,} | {added:,} | {cpu:.2f} | {_rate(pods, cpu)} |"
        )
    return rows


def place_main(args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    """``--stages place``: the offline scheduler placing every pod, in pods per second."""
    from kaffinity.simulate.place import place_all

    repeat: int = args.repeat or 3
    output: str = args.output or os.path.join(ROOT, PLACE_OUTPUT_NAME)
    command = shlex.join(["python", "benchmarks/run.py", *(sys.argv[1:] if argv is None else argv)])
    load_before = os.getloadavg()
    code_before = code_identity()
    rows = []
    version = Settings().kube_version
    with tempfile.TemporaryDirectory(prefix="kaffinity-bench-") as scratch:
        for workloads, nodes in PLACE_CASES:
            chosen, cluster = place_corpus(workloads, nodes, scratch)
            if (workloads, nodes) == POSTFILTER_CASE:
                post_case = (chosen, cluster)
            ruled = sum(
                1
                for w in chosen
                if w.pod.topology_spread_constraints
                or (w.pod.affinity and (w.pod.affinity.pod_affinity or w.pod.affinity.pod_anti_affinity))
            )
            first = place_all(chosen, cluster, version=Settings().kube_version)
            pods, pending = len(first.placements), len(first.pending)

            def run(
                record: bool, chosen: list[Any] = chosen, cluster: Any = cluster, version: str = version
            ) -> object:
                return place_all(chosen, cluster, version=version, record=record)

            lint_mode = timed(lambda: run(False), repeat)
            record = timed(lambda: run(True), 1)
            row = (workloads, len(chosen), ruled, nodes, pods, pending, lint_mode, record)
            rows.append(row)
            print(
                f"  {len(chosen):,} workloads, {pods:,} pods on {nodes:,} nodes: "
                f"{statistics.median(lint_mode[1]):.2f} s CPU, recorded {record[1][0]:.2f} s",
                flush=True,
            )
        post_rows = postfilter_rows(scratch, repeat, *post_case)
    lines = [
        *_header(
            "kaffinity offline-scheduler benchmark",
            "Written by `benchmarks/run.py --stages place`: `kaffinity.simulate.place.place_all` placing "
            "every pod of a generated corpus (DaemonSets left out; a fifth of the pod templates carry "
            "scheduling rules) on a generated cluster, on workloads loaded beforehand. `placing` is what "
            "`lint --cluster` runs (median of "
            f"{repeat} runs after one untimed run); `recorded` is what `kaffinity place --format json` "
            "runs, which filters every node for every pod to list the feasible ones (one run).",
            command,
            machine(load_before, (code_before, code_identity())),
        ),
        "## Results",
        "",
        "| workloads | with inter-pod or spread rules | nodes | pods | Pending | placing CPU s | pods/s "
        "| recorded CPU s | pods/s |",
        "|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for _, picked, ruled, node_count, pods, pending, lint_mode, record in rows:
        cpu = statistics.median(lint_mode[1])
        lines.append(
            f"| {picked:,} | {ruled:,} | {node_count:,} | {pods:,} | {pending:,} | {cpu:.2f} | "
            f"{_rate(pods, cpu)} | {record[1][0]:.2f} | {_rate(pods, record[1][0])} |"
        )
    workloads, nodes = POSTFILTER_CASE
    lines += [
        "",
        "## PostFilter: preemption and autoscaling",
        "",
        f"The {workloads:,}-workload corpus on its {nodes:,} nodes again (`placing`, median of "
        f"{repeat}), with "
        "the PostFilter steps: first with nothing for them to do (the default of `lint --cluster`: "
        "the Pending pods try them and fail), then with a pool of 8-cpu nodes that may grow by "
        "1,000, then on a crowded cluster: every node runs one existing priority-0 pod of "
        f"{CROWDING_POD['cpu']} cpu and {CROWDING_POD['memory']}, and every workload gets priority "
        "1,000 (a `globalDefault` PriorityClass), so a pod that finds no room preempts.",
        "",
        "| case | pods | Pending | evicted | nodes added | CPU s | pods/s |",
        "|---|--:|--:|--:|--:|--:|--:|",
        *post_rows,
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    with open(output, "w", encoding="utf-8") as handle:
        handle.write(text)
    print(f"written to {output}")
    return 0


# --- --stages scale (issue 23) -----------------------------------------------------------------

SCALE_HEADING = "## Scale"
SCALE_SIZES = (1_000, 10_000, 100_000)
SCALE_REPEAT = 3  # timed runs per line without --repeat (1 from LARGE_SIZE workloads up)
# Issue 23's targets.
SCALE_RSS_MIB = ((TARGET_SIZE, 160.0), (LARGE_SIZE, 1024.0))  # peak RSS of lint DIR --jobs 1
SCALE_SPEEDUP = 1.6  # --jobs 2 over --jobs 1 at TARGET_SIZE (wall)
SCALE_FLOOR = 1.6  # lint DIR --jobs 1 over the parse floor at TARGET_SIZE (CPU: one core)
SCALE_GROWTH = 11.0  # lint DIR --jobs 1, LARGE_SIZE over TARGET_SIZE (wall)
SCALE_WARM_CHANGED = ((1_000, 0.5), (TARGET_SIZE, 1.5))  # warm lint --changed ONE_FILE (wall, s)
#: "cold no slower than before": a cold cache's fastest wall time at most this fraction above that
#: of the same command with --no-cache (the CLI as it was before the cache); the margin is the
#: run-to-run noise of this 2-core machine.
COLD_TOLERANCE = 0.05
CACHE_ENV = "KAFFINITY_CACHE_DIR"
NOT_AVAILABLE = "not available"
FAILED = "failed (see the notes)"
#: The changed file of the pre-commit lines: the first manifest, in sorted order, holding one.
CHANGED_KIND = re.compile(r"^kind:[ \t]*Deployment[ \t]*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class ScaleCase:
    """One line of ``--stages scale``. ``jobs``: the --jobs value of a whole-folder lint (None:
    the pre-commit command, as a hook runs it); ``cache``: none (--no-cache), cold (a fresh
    empty cache folder for every run) or warm (a folder one run has filled); ``compare``: the
    case whose JSON output this one's must equal byte for byte."""

    key: str
    jobs: str | None
    cache: str
    compare: str | None = None


SCALE_CASES = (
    ScaleCase("jobs1", "1", "none"),
    ScaleCase("jobs2", "2", "none", "jobs1"),
    ScaleCase("cold", "1", "cold", "jobs1"),
    ScaleCase("warm", "1", "warm", "jobs1"),
    ScaleCase("changed", None, "none"),
    ScaleCase("changed-cold", None, "cold", "changed"),
    ScaleCase("changed-warm", None, "warm", "changed"),
)
CACHE_WORDS = {"none": "none", "cold": "cold (fresh dir per run)", "warm": "warm (after one run)"}


@dataclass(frozen=True, slots=True)
class CliFeatures:
    """What this ``kaffinity lint`` takes: ``--jobs``, and ``--no-cache`` with ``--cache-dir``."""

    jobs: bool
    cache: bool


@dataclass(slots=True)
class ScaleLine:
    """One case at one size: its runs (None: not run, ``reason`` says why), the JSON output of
    its last run, whether that equals its ``compare`` case's, and the cache folder's files and
    bytes after one run."""

    case: ScaleCase
    label: str
    row: Measurement | None = None
    reason: str = ""
    output: str = ""
    same_output: bool | None = None
    cache_size: tuple[int, int] | None = None


def scale_arguments(
    case: ScaleCase, folder: str, changed: str, cache_dir: str | None, output: str, cli: CliFeatures
) -> list[str]:
    """``kaffinity``'s arguments for ``case`` (``cache_dir`` None: no cache, ``--no-cache`` where
    the CLI has a cache)."""
    if case.jobs is None:
        arguments = ["lint", "--no-config", "--context", folder, "--changed", changed]
    else:
        arguments = ["lint", folder, *(["--jobs", case.jobs] if cli.jobs else [])]
    if cache_dir is not None:
        arguments += ["--cache-dir", cache_dir]
    elif cli.cache:
        arguments.append("--no-cache")
    return [*arguments, "--format", "json", "-o", output]


def scale_label(case: ScaleCase, cli: CliFeatures) -> str:
    """The command of ``case`` as the report shows it: DIR the corpus's manifests, FILE the
    changed file, CACHE the cache folder."""
    cache = "CACHE" if case.cache != "none" else None
    shown = scale_arguments(case, "DIR", "FILE", cache, "OUT", cli)
    return shlex.join(["kaffinity", *shown[: shown.index("--format")]])


def changed_file(paths: Sequence[str], texts: Sequence[tuple[str, str]]) -> str:
    """The pre-commit lines' changed file: the first manifest in sorted order holding a
    Deployment (the first one at all if none does)."""
    by_name = dict(texts)
    ordered = sorted(paths)
    return next((path for path in ordered if CHANGED_KIND.search(by_name[path])), ordered[0])


def folder_size(folder: str) -> tuple[int, int]:
    """Files and bytes under ``folder``."""
    files = size = 0
    for root, _, names in os.walk(folder):
        for name in names:
            files += 1
            size += os.path.getsize(os.path.join(root, name))
    return files, size


@dataclass(frozen=True, slots=True)
class ScaleRun:
    """Where one size's lines run: the corpus, the changed file, the CLI's features, the working
    folder (no ``.kaffinity.yaml`` above it), a scratch folder, timed runs and environment."""

    item: Corpus
    changed: str
    cli: CliFeatures
    cwd: str
    scratch: str
    repeat: int
    env: dict[str, str]


@dataclass(slots=True)
class CaseRunner:
    """The runs of one case at one size: a warm case's cache folder, filled by one untimed run
    (``start``); a fresh empty folder for every cold run, removed after it."""

    case: ScaleCase
    run: ScaleRun
    line: ScaleLine
    runs: list[ChildRun] = field(default_factory=list)
    warm: str | None = None

    def command(self, cache_dir: str | None) -> list[str]:
        run = self.run
        arguments = scale_arguments(
            self.case, run.item.manifests, run.changed, cache_dir, self.line.output, run.cli
        )
        return cli_command(*arguments)

    def start(self) -> None:
        if self.case.cache == "warm":
            self.warm = tempfile.mkdtemp(prefix="cache-warm-", dir=self.run.scratch)
            run_child(self.command(self.warm), self.run.cwd, self.run.env)
            self.line.cache_size = folder_size(self.warm)

    @property
    def done(self) -> bool:
        """``repeat`` runs, or one of :data:`LONG_RUN` seconds or more."""
        return len(self.runs) >= self.run.repeat or (bool(self.runs) and self.runs[-1].wall >= LONG_RUN)

    def once(self) -> None:
        if self.case.cache == "cold":
            fresh = tempfile.mkdtemp(prefix="cache-cold-", dir=self.run.scratch)
            try:
                self.runs.append(run_child(self.command(fresh), self.run.cwd, self.run.env))
                self.line.cache_size = self.line.cache_size or folder_size(fresh)
            finally:
                shutil.rmtree(fresh, ignore_errors=True)
        else:
            self.runs.append(run_child(self.command(self.warm), self.run.cwd, self.run.env))

    def close(self) -> None:
        if self.warm is not None:
            shutil.rmtree(self.warm, ignore_errors=True)
            self.warm = None

    def row(self) -> Measurement:
        stats = self.run.item.stats
        return Measurement(
            f"scale-{self.case.key}",
            self.line.label,
            stats.workloads,
            stats.objects,
            [r.wall for r in self.runs],
            [r.cpu for r in self.runs],
            [r.rss_kib for r in self.runs],
        )


def scale_line(case: ScaleCase, run: ScaleRun) -> ScaleLine:
    """``case``'s line at one size, with the reason it cannot run if this CLI lacks an option."""
    line = ScaleLine(case, scale_label(case, run.cli))
    line.output = os.path.join(run.scratch, f"scale-{run.item.workloads}-{case.key}.json")
    if case.cache != "none" and not run.cli.cache:
        line.reason = f"{NOT_AVAILABLE}: `kaffinity lint --help` lists no --no-cache / --cache-dir"
    elif case.jobs not in (None, "1") and not run.cli.jobs:
        line.reason = f"{NOT_AVAILABLE}: `kaffinity lint --help` lists no --jobs"
    if line.reason:
        print(f"  {line.label:<76} {line.reason}", flush=True)
    return line


def _attempt(
    runner: CaseRunner, step: Callable[[], None], active: list[CaseRunner], notes: list[str]
) -> None:
    """``step`` of ``runner``. A cache line that fails is reported as failed, with the error in
    the notes, and the other lines go on; any other line's failure stops the benchmark."""
    try:
        step()
    except (RuntimeError, subprocess.CalledProcessError) as error:
        if runner.case.cache == "none":
            raise
        line = runner.line
        line.reason = FAILED
        workloads = runner.run.item.workloads
        message = " ".join(str(error).split())  # one line: a Markdown list item
        notes.append(f"{workloads:,} workloads, `{line.label}` failed: {message[-600:]}")
        print(f"  {line.label:<76} FAILED: {error}", flush=True)
        active.remove(runner)


def _same_file(one: str, other: str) -> bool:
    with open(one, "rb") as first, open(other, "rb") as second:
        return first.read() == second.read()


def measure_scale_size(run: ScaleRun, notes: list[str]) -> dict[str, ScaleLine]:
    """Every line at one size, and each JSON output compared with the one it must equal.

    The lines run in rounds, one run of each per round, each round starting one line later than
    the one before, so that a machine that speeds up or slows down during the benchmark (a
    shared 2-core VM does) weighs on every line alike, not on whichever ran first."""
    lines = {case.key: scale_line(case, run) for case in SCALE_CASES}
    runners = [CaseRunner(line.case, run, line) for line in lines.values() if not line.reason]
    active = list(runners)
    try:
        for runner in runners:
            _attempt(runner, runner.start, active, notes)
        for number in range(run.repeat):
            shift = number % len(runners) if runners else 0
            for runner in [*runners[shift:], *runners[:shift]]:
                if runner in active and not runner.done:
                    _attempt(runner, runner.once, active, notes)
    finally:
        for runner in runners:
            runner.close()
    for runner in active:
        row = runner.line.row = runner.row()
        print(
            f"  {row.label:<76} {row.median:8.3f} s wall {row.cpu_median:8.3f} s CPU "
            f"{row.rss_mib or 0:8.1f} MiB peak RSS",
            flush=True,
        )
    for line in lines.values():
        other = lines[line.case.compare] if line.case.compare else None
        if other is not None and line.row is not None and other.row is not None:
            line.same_output = _same_file(line.output, other.output)
            if not line.same_output:
                print(f"  `{line.label}`: JSON output DIFFERS from `{other.label}`", flush=True)
    return lines


@dataclass(slots=True)
class ScaleResults:
    """``--stages scale``'s measurements: per size, the parse floor, the changed file and the lines."""

    corpora: list[Corpus] = field(default_factory=list)
    floors: dict[int, Measurement] = field(default_factory=dict)
    changed: dict[int, str] = field(default_factory=dict)
    lines: dict[int, dict[str, ScaleLine]] = field(default_factory=dict)
    repeats: dict[int, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def row(self, size: int, key: str) -> Measurement | None:
        line = self.lines.get(size, {}).get(key)
        return line.row if line is not None else None


def _scale_cells(line: ScaleLine, floor: Measurement) -> list[str]:
    """A line's cells after its command, cache and workloads (its reason where it did not run)."""
    row = line.row
    if row is None:
        return [line.reason, *[""] * 7]
    compared = "-"
    if line.same_output is not None:
        compared = f"{'identical to' if line.same_output else '**differs from**'} `{line.case.compare}`"
    size = "-"
    if line.cache_size is not None:
        files, total = line.cache_size
        size = f"{files:,} files, {total / 2**20:,.1f} MiB"
    return [
        f"{row.median:.3f}",
        f"{row.best:.3f}",
        f"{row.cpu_median:.3f}",
        f"{row.median / floor.median:.2f}",
        f"{row.cpu_median / floor.cpu_median:.2f}",
        _mib(row.rss_mib),
        compared,
        size,
    ]


def scale_table(results: ScaleResults) -> list[str]:
    lines = [
        "| line | command | cache | workloads | median s | min s | CPU s | x floor | x floor (CPU) "
        "| peak RSS MiB | JSON output | cache folder after a run |",
        "|---|---|---|--:|--:|--:|--:|--:|--:|--:|---|---|",
    ]
    for size in sorted(results.lines):
        floor = results.floors[size]
        lines.append(
            f"| floor | parse floor (C composer only, in-process) | - | {floor.workloads:,} "
            f"| {floor.median:.3f} | {floor.best:.3f} | {floor.cpu_median:.3f} | 1.00 | 1.00 | - | - | - |"
        )
        for key, line in results.lines[size].items():
            cells = [key, f"`{line.label}`", CACHE_WORDS[line.case.cache], f"{size:,}"]
            lines.append("| " + " | ".join([*cells, *_scale_cells(line, floor)]) + " |")
    return lines


def _not_measured(size: int, elsewhere: str) -> str:
    return f"{NOT_MEASURED} at {size:,}" + (f" (this run: {elsewhere})" if elsewhere else "")


def _at_sizes(results: ScaleResults, value: Callable[[int], str | None]) -> str:
    """``value`` at every size where it is known: "X at 1,000; Y at 10,000"."""
    found = [(size, value(size)) for size in sorted(results.lines)]
    return "; ".join(f"{text} at {size:,}" for size, text in found if text is not None)


def _rss_target(results: ScaleResults, size: int, limit: float) -> tuple[str, str, str]:
    name = f"peak RSS of `kaffinity lint DIR --jobs 1` at {size:,} workloads <= {limit:,.0f} MiB"

    def peaks(at: int) -> dict[str, float]:
        return {
            key: rss
            for key in ("jobs1", "cold", "warm")
            if (row := results.row(at, key)) is not None and (rss := row.rss_mib) is not None
        }

    if size not in results.lines:
        shown = _at_sizes(results, lambda at: f"{max(p.values()):,.0f} MiB" if (p := peaks(at)) else None)
        return name, shown or "-", _not_measured(size, "")
    found = peaks(size)
    if not found:
        return name, "-", NOT_MEASURED
    worst = max(found.values())
    measured = f"**{worst:,.0f} MiB** (" + ", ".join(f"{k}: {v:,.0f}" for k, v in found.items()) + ")"
    return name, measured, _verdict(worst, limit)


def _speedup_target(results: ScaleResults) -> tuple[str, str, str]:
    name = f"`--jobs 2` >= {SCALE_SPEEDUP}x faster than `--jobs 1` at {TARGET_SIZE:,} (wall, --no-cache)"

    def speedup(size: int) -> str | None:
        one, two = results.row(size, "jobs1"), results.row(size, "jobs2")
        if one is None or two is None:
            return None
        return f"{one.median / two.median:.2f}x ({one.median:.2f} -> {two.median:.2f} s)"

    if TARGET_SIZE not in results.lines:
        return name, _at_sizes(results, speedup) or "-", _not_measured(TARGET_SIZE, "")
    one, two = results.row(TARGET_SIZE, "jobs1"), results.row(TARGET_SIZE, "jobs2")
    if one is None or two is None:
        reason = results.lines[TARGET_SIZE]["jobs2"].reason
        return name, reason or "-", _unrun(reason)
    ratio = one.median / two.median
    verdict = "met" if ratio >= SCALE_SPEEDUP else "**not met**"
    return name, f"**{speedup(TARGET_SIZE)}**", verdict


def _unrun(reason: str) -> str:
    """The verdict of a target whose line did not run for ``reason``: a command that failed does
    not meet it."""
    if reason.startswith(NOT_AVAILABLE):
        return NOT_AVAILABLE
    return "**not met** (the command failed)" if reason == FAILED else NOT_MEASURED


def _failed(results: ScaleResults, keys: Sequence[str]) -> list[str]:
    return [
        f"`{key}` at {size:,}"
        for size, lines in sorted(results.lines.items())
        for key in keys
        if lines[key].reason == FAILED
    ]


def _identity_target(results: ScaleResults, keys: Sequence[str], name: str) -> tuple[str, str, str]:
    """Whether the JSON output of the lines ``keys`` equals the output they are compared with,
    at every size."""
    compared = [
        (size, line)
        for size, lines in sorted(results.lines.items())
        for key in keys
        if (line := lines[key]).same_output is not None
    ]
    if not compared:
        reasons = {lines[key].reason for lines in results.lines.values() for key in keys}
        text = "; ".join(sorted(r for r in reasons if r)) or "-"
        return name, text, _unrun(text)
    differ = [f"`{line.case.key}` at {size:,}" for size, line in compared if not line.same_output]
    sizes = ", ".join(f"{size:,}" for size in sorted({size for size, _ in compared}))
    failed = _failed(results, keys)
    measured = "differs: " + ", ".join(differ) if differ else f"byte-identical at {sizes} workloads"
    if failed:
        measured += "; failed: " + ", ".join(failed)
    return name, measured, "**not met**" if differ or failed else "met"


def _floor_target(results: ScaleResults) -> tuple[str, str, str]:
    name = (
        f"`kaffinity lint DIR --jobs 1` <= {SCALE_FLOOR}x the parse floor at {TARGET_SIZE:,} (CPU, one core)"
    )

    def ratio(size: int) -> str | None:
        row = results.row(size, "jobs1")
        if row is None:
            return None
        floor = results.floors[size]
        return (
            f"{row.cpu_median / floor.cpu_median:.2f}x ({row.cpu_median:.2f} s / {floor.cpu_median:.2f} s "
            f"CPU; wall {row.median / floor.median:.2f}x)"
        )

    row = results.row(TARGET_SIZE, "jobs1")
    if row is None:
        return name, _at_sizes(results, ratio) or "-", _not_measured(TARGET_SIZE, "")
    value = row.cpu_median / results.floors[TARGET_SIZE].cpu_median
    return name, f"**{ratio(TARGET_SIZE)}**", _verdict(value, SCALE_FLOOR)


def _scale_growth_target(results: ScaleResults) -> tuple[str, str, str]:
    name = (
        f"growth {TARGET_SIZE:,} -> {LARGE_SIZE:,} workloads <= {SCALE_GROWTH:.0f}x "
        "(`kaffinity lint DIR --jobs 1 --no-cache`, wall)"
    )
    small, big = results.row(TARGET_SIZE, "jobs1"), results.row(LARGE_SIZE, "jobs1")
    if small is None or big is None:
        return name, f"needs `--sizes {TARGET_SIZE},{LARGE_SIZE}`", NOT_MEASURED
    growth = big.median / small.median
    floor = results.floors[LARGE_SIZE].median / results.floors[TARGET_SIZE].median
    measured = (
        f"**{growth:.1f}x** ({small.median:.1f} -> {big.median:.1f} s; CPU "
        f"{big.cpu_median / small.cpu_median:.1f}x; parse floor {floor:.1f}x)"
    )
    return name, measured, _verdict(growth, SCALE_GROWTH)


def _warm_changed_target(results: ScaleResults, size: int, limit: float) -> tuple[str, str, str]:
    name = (
        f"warm cache: `kaffinity lint --no-config --context DIR --changed FILE` at {size:,} "
        f"workloads <= {limit} s (wall)"
    )
    if size not in results.lines:
        return name, "-", _not_measured(size, "")
    line = results.lines[size]["changed-warm"]
    if line.row is None:
        return name, line.reason, _unrun(line.reason)
    nocache = results.row(size, "changed")
    extra = f" (--no-cache: {nocache.median:.3f} s)" if nocache is not None else ""
    return name, f"**{line.row.median:.3f} s**{extra}", _verdict(line.row.median, limit)


def _cold_target(results: ScaleResults, cold: str, base: str, what: str) -> tuple[str, str, str]:
    """Judged on the fastest run of each line (a cold run is cold every time): on a shared
    machine the minimum of a few runs varies far less than their median."""
    name = (
        f"cold cache no slower than before: `{what}` with a fresh cache folder <= "
        f"{1 + COLD_TOLERANCE:.2f}x the same with --no-cache (fastest run, wall), every size"
    )
    pairs = {
        size: (row, other)
        for size in sorted(results.lines)
        if (row := results.row(size, cold)) is not None and (other := results.row(size, base)) is not None
    }
    if not pairs:
        reasons = {lines[cold].reason for lines in results.lines.values() if lines[cold].reason}
        text = "; ".join(sorted(reasons)) or "-"
        return name, text, _unrun(text)
    measured = "; ".join(
        f"{row.best / other.best:.2f}x at {size:,} ({row.best:.3f} vs {other.best:.3f} s; medians "
        f"{row.median:.3f} vs {other.median:.3f} s)"
        for size, (row, other) in pairs.items()
    )
    worst = max(row.best / other.best for row, other in pairs.values())
    failed = _failed(results, (cold,))
    if failed:
        return name, f"{measured}; failed: {', '.join(failed)}", "**not met** (the command failed)"
    return name, measured, _verdict(worst, 1 + COLD_TOLERANCE)


def scale_targets(results: ScaleResults) -> list[tuple[str, str, str]]:
    """Issue 23's targets: (what it asks, what this run measured, met / not met / not measured)."""
    return [
        *(_rss_target(results, size, limit) for size, limit in SCALE_RSS_MIB),
        _speedup_target(results),
        _identity_target(
            results, ("jobs2",), "`--jobs 2` JSON output byte-identical to `--jobs 1` (every size)"
        ),
        _floor_target(results),
        _scale_growth_target(results),
        *(_warm_changed_target(results, size, limit) for size, limit in SCALE_WARM_CHANGED),
        _cold_target(results, "cold", "jobs1", "kaffinity lint DIR --jobs 1"),
        _cold_target(results, "changed-cold", "changed", "kaffinity lint --changed FILE"),
        _identity_target(
            results,
            ("cold", "warm", "changed-cold", "changed-warm"),
            "(check) a cold or warm cache gives JSON output byte-identical to --no-cache (every size)",
        ),
    ]


def scale_section(results: ScaleResults, command: str, facts: Sequence[tuple[str, str]]) -> str:
    """The ``## Scale`` section of the results file."""
    repeats = ", ".join(f"{n} at {size:,}" for size, n in sorted(results.repeats.items()))
    changed = "; ".join(
        f"`{os.path.relpath(results.changed[item.workloads], item.manifests)}` at {item.workloads:,}"
        for item in results.corpora
    )
    parts = [
        SCALE_HEADING,
        "",
        "Written by `benchmarks/run.py --stages scale` (issue 23; the rest of this file is the full "
        "run's). Each command runs as a subprocess from an empty folder with `KAFFINITY_CACHE_DIR` "
        "unset; the table gives the median (timed runs per line: "
        f"{repeats}; none after a run of {LONG_RUN:.0f} s or more), the minimum, the CPU time "
        "(workers included) and the peak RSS (the largest process's). DIR is the corpus's "
        "manifests folder, FILE the first manifest in sorted order that holds a Deployment "
        f"({changed}), CACHE a cache folder: cold, a fresh empty one for every run; warm, one "
        "that a first, untimed run of the same command filled. `x floor` divides by the parse floor "
        "(ruamel's C composer alone, in-process, on texts read beforehand) at the same size. "
        "JSON output: the last run's, compared byte for byte with the line named.",
        "",
        "### Machine",
        "",
        *(f"- {name}: {value}" for name, value in facts),
        "",
        "### Command",
        "",
        f"```\n{command}\n```",
        "",
        "### Corpus",
        "",
        *corpus_table(results.corpora),
        "",
        "### Results",
        "",
        *scale_table(results),
        "",
        "### Targets",
        "",
        "| target | measured | verdict |",
        "|---|---|---|",
        *(f"| {name} | {measured} | {verdict} |" for name, measured, verdict in scale_targets(results)),
        "",
    ]
    if results.notes:
        parts += ["### Notes", "", *(f"- {note}" for note in results.notes), ""]
    return "\n".join(parts)


def _section_bounds(lines: Sequence[str], heading: str) -> tuple[int, int] | None:
    """Where the section ``heading`` (a ``## `` line) starts and ends among ``lines``: up to the
    next heading of its level or above, outside code fences."""
    fence = False
    start = None
    for number, line in enumerate(lines):
        text = line.rstrip("\r\n")
        if text.startswith("```"):
            fence = not fence
        elif fence:
            continue
        elif start is None and text == heading:
            start = number
        elif start is not None and (text.startswith(("# ", "## "))):
            return start, number
    return (start, len(lines)) if start is not None else None


def extract_section(document: str, heading: str) -> str | None:
    lines = document.splitlines(keepends=True)
    bounds = _section_bounds(lines, heading)
    return "".join(lines[bounds[0] : bounds[1]]).rstrip("\n") + "\n" if bounds else None


def replace_section(document: str, heading: str, section: str) -> str:
    """``document`` with its section ``heading`` replaced by ``section`` (appended if absent)."""
    section = section.rstrip("\n") + "\n"
    lines = document.splitlines(keepends=True)
    bounds = _section_bounds(lines, heading)
    if bounds is None:
        return (document.rstrip("\n") + "\n\n" if document.strip() else "") + section
    start, end = bounds
    rest = "".join(lines[end:])
    return "".join(lines[:start]) + section + ("\n" + rest if rest else "")


def keep_scale_section(output: str, text: str) -> str:
    """``text`` (the full run's report) with the Scale, Rendered units and GitOps monorepo
    sections of the file ``output`` appended, if it has them: a full run leaves ``--stages
    scale``'s, ``--stages render``'s and ``--stages gitops``'s results in place."""
    if not os.path.exists(output):
        return text
    with open(output, encoding="utf-8") as handle:
        document = handle.read()
    for heading in (SCALE_HEADING, RENDER_HEADING, GITOPS_HEADING):
        section = extract_section(document, heading)
        if section is not None:
            text = replace_section(text, heading, section)
    return text


def scale_size(item: Corpus, run: ScaleRun, results: ScaleResults) -> None:
    """The parse floor and every line at one size."""
    paths = manifest_files(item.manifests)
    print(f"{item.stats.workloads:,} workloads: {len(paths):,} files, {item.stats.objects:,} objects")
    texts = read_all(paths)
    results.changed[item.workloads] = changed = changed_file(paths, texts)
    plan = Plan(run.repeat, trace=False, clusters=())
    results.floors[item.workloads] = measure(floor_stage(texts, item), item, plan)
    del texts
    print(f"  changed file: {os.path.relpath(changed, item.manifests)}", flush=True)
    results.lines[item.workloads] = measure_scale_size(
        dataclasses.replace(run, changed=changed), results.notes
    )


def scale_main(args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    """``--stages scale``: issue 23's lines (--jobs 1 and 2, cold and warm cache, pre-commit
    ``--changed``), with the parse floor, into the ``## Scale`` section of the results file."""
    sizes: list[int] = args.sizes or list(SCALE_SIZES)
    output: str = args.output or DEFAULT_OUTPUT
    command = shlex.join(["python", "benchmarks/run.py", *(sys.argv[1:] if argv is None else argv)])
    load_before = os.getloadavg()
    code_before = code_identity()
    results = ScaleResults()
    env = {name: value for name, value in os.environ.items() if name != CACHE_ENV}
    with tempfile.TemporaryDirectory(prefix="kaffinity-bench-") as scratch:
        cwd = os.path.join(scratch, "cwd")  # no .kaffinity.yaml above it
        os.makedirs(cwd)
        if find_config(cwd) is not None:
            print(f"warning: {find_config(cwd)} applies to the CLI runs", file=sys.stderr)
        cli = CliFeatures(jobs=cli_has(cwd, "--jobs"), cache=cli_has(cwd, "--no-cache", "--cache-dir"))
        if not cli.cache:
            results.notes.append(
                "`kaffinity lint --help` lists no `--no-cache` / `--cache-dir`: the cache lines are "
                f"{NOT_AVAILABLE}, and the no-cache lines run without `--no-cache` (there is no cache)"
            )
        if not cli.jobs:
            results.notes.append("`kaffinity lint --help` lists no `--jobs`: `--jobs 2` is not available")
        for note in results.notes:
            print(f"note: {note}", flush=True)
        # One small lint first, so that no line pays for compiling or first reading the modules.
        warm_up = corpus(1, not args.no_cache, scratch)
        no_cache = ("--no-cache",) if cli.cache else ()
        run_child(
            cli_command("lint", warm_up.manifests, "--format", "json", "-o", os.devnull, *no_cache), cwd, env
        )
        for size in sizes:
            item = corpus(size, not args.no_cache, scratch)
            results.corpora.append(item)
            repeat = args.repeat or (1 if size >= LARGE_SIZE else SCALE_REPEAT)
            results.repeats[size] = repeat
            scale_size(item, ScaleRun(item, "", cli, cwd, scratch, repeat, env), results)
        if cli.cache and os.listdir(cwd):  # every run had --no-cache or --cache-dir
            results.notes.append(
                f"the working folder of the runs holds {sorted(os.listdir(cwd))} afterwards, although "
                "every run had --no-cache or --cache-dir"
            )
    facts = machine(load_before, (code_before, code_identity()))
    section = scale_section(results, command, facts)
    print()
    print(section)
    document = ""
    if os.path.exists(output):
        with open(output, encoding="utf-8") as handle:
            document = handle.read()
    with open(output, "w", encoding="utf-8") as handle:
        handle.write(replace_section(document, SCALE_HEADING, section))
    print(f"written to {output} (section {SCALE_HEADING!r})")
    return 0


# --- --stages render (issue 33) ----------------------------------------------------------------

RENDER_HEADING = "## Rendered units"
RENDER_SIZE = 1_000
RENDER_REPEAT = 5
RENDER_TARGET = 0.5  # warm one-file commit, wall seconds (issue 33)
#: The pre-commit hook's command (.pre-commit-hooks.yaml ``entry``), run from the repository.
HOOK = ("lint", "--changed", "--fail-on", "warning", "--pre-commit")


@dataclass(frozen=True, slots=True)
class RenderCase:
    """One line of ``--stages render``: ``arguments`` of ``kaffinity`` (FILE: ``changes``, a
    file rewritten before every run, so that each run is a new commit of it); ``cache``: none,
    cold (a fresh folder per run) or warm (a folder one run has filled)."""

    key: str
    label: str
    cache: str
    arguments: tuple[str, ...]
    changes: str | None = None


def render_cases(repo: Any) -> tuple[RenderCase, ...]:
    whole = ("lint", ".", "--format", "json")
    return (
        RenderCase("nocache", "lint . --no-cache", "none", whole),
        RenderCase("cold", "lint . (cold cache)", "cold", whole),
        RenderCase("warm", "lint . (warm cache)", "warm", whole),
        RenderCase(
            "manifest-nocache", "hook, a manifest changed, --no-cache", "none", (*HOOK, repo.manifest)
        ),
        RenderCase(
            "manifest", "hook, a manifest changed (warm)", "warm", (*HOOK, repo.manifest), repo.manifest
        ),
        RenderCase(
            "patch", "hook, an overlay's patch changed (warm)", "warm", (*HOOK, repo.patch), repo.patch
        ),
        RenderCase(
            "values", "hook, the chart's values changed (warm)", "warm", (*HOOK, repo.values), repo.values
        ),
    )


def render_engines() -> list[tuple[str, dict[str, str] | None, str]]:
    """The engine sets: the tools on the PATH (``kustomize`` and ``helm`` binaries), and the
    fallbacks (the PATH without the folders holding them: ``kubectl kustomize`` and
    helm-python-sdk). Each with its environment, or None and why it is not measured."""
    path = os.environ.get("PATH", "")
    tools = {name: shutil.which(name) for name in ("kustomize", "helm")}
    found: list[tuple[str, dict[str, str] | None, str]] = []
    if all(tools.values()):
        found.append(("kustomize + helm binaries", dict(os.environ), ""))
    else:
        found.append(("kustomize + helm binaries", None, "kustomize or helm is not on the PATH"))
    folders = {os.path.dirname(os.path.realpath(t)) for t in tools.values() if t} | {
        os.path.dirname(t) for t in tools.values() if t
    }
    kept = os.pathsep.join(
        folder
        for folder in path.split(os.pathsep)
        if os.path.realpath(folder) not in folders and folder not in folders
    )
    env = {**os.environ, "PATH": kept}
    if shutil.which("kubectl", path=kept) and importlib.util.find_spec("helm_python") is not None:
        found.append(("kubectl kustomize + helm-python-sdk", env, ""))
    else:
        found.append(
            ("kubectl kustomize + helm-python-sdk", None, "no kubectl, or helm-python-sdk is not installed")
        )
    return found


def render_repository(scratch: str, workloads: int) -> tuple[str, Any]:
    """benchmarks/generate.py's repository (a base + overlays and a chart around the corpus), as
    a git repository with one commit."""
    from generate import repository

    folder = os.path.join(scratch, f"repo-{workloads}")
    repo = repository(folder, workloads)
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "generated"]):
        subprocess.run([*git, *command], cwd=folder, check=True, capture_output=True)
    return folder, repo


def _rewrite(path: str, number: int) -> None:
    """A new commit of ``path``: a comment line that says which run this is (the YAML is the
    same; its bytes, and so a rendered unit's key, are not)."""
    with open(path, encoding="utf-8") as handle:
        lines = [line for line in handle.read().splitlines() if not line.startswith("# bench run ")]
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join([f"# bench run {number}", *lines]) + "\n")


def measure_render_case(
    case: RenderCase, folder: str, env: dict[str, str], repeat: int, scratch: str
) -> list[ChildRun]:
    """``repeat`` runs of ``case`` from the repository ``folder``; a warm case's folder filled
    by one untimed run first; the file ``changes`` rewritten before every run."""
    runs: list[ChildRun] = []
    warm = tempfile.mkdtemp(prefix="render-warm-", dir=scratch)
    output = os.path.join(scratch, f"render-{case.key}.out")

    def command(cache: str | None) -> list[str]:
        cache_arguments = ["--cache-dir", cache] if cache is not None else ["--no-cache"]
        hook = case.arguments[: len(HOOK)] == HOOK
        # Options before --pre-commit (what follows it is paths).
        arguments = (
            [*HOOK[:-1], *cache_arguments, "-o", output, *case.arguments[len(HOOK) - 1 :]]
            if hook
            else [*case.arguments, *cache_arguments, "-o", output]
        )
        return cli_command(*arguments)

    try:
        if case.cache == "warm":
            run_child(command(warm), folder, env)
        for number in range(repeat):
            if case.changes is not None:
                _rewrite(os.path.join(folder, case.changes), number)
            if case.cache == "cold":
                fresh = tempfile.mkdtemp(prefix="render-cold-", dir=scratch)
                runs.append(run_child(command(fresh), folder, env))
                shutil.rmtree(fresh, ignore_errors=True)
            else:
                runs.append(run_child(command(warm if case.cache == "warm" else None), folder, env))
    finally:
        shutil.rmtree(warm, ignore_errors=True)
        if case.changes is not None:
            subprocess.run(["git", "checkout", "-q", "--", case.changes], cwd=folder, check=False)
    return runs


def render_main(args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    """``--stages render``: the repository of generate.py's ``repository`` (1,000 workloads,
    overlays, a chart) linted whole (no cache, cold, warm) and by the pre-commit hook after a
    one-file commit (a manifest, an overlay's patch, the chart's values) with a warm cache, with
    each engine set; the ``## Rendered units`` section of the results file."""
    size = (args.sizes or [RENDER_SIZE])[0]
    repeat = args.repeat or (2 if args.quick else RENDER_REPEAT)
    output: str | None = args.output or (None if args.quick else DEFAULT_OUTPUT)
    command_line = shlex.join(["python", "benchmarks/run.py", *(sys.argv[1:] if argv is None else argv)])
    load_before = os.getloadavg()
    code_before = code_identity()
    rows: list[tuple[str, RenderCase, list[ChildRun] | None, str]] = []
    same: list[str] = []
    profile: list[tuple[str, float]] | None = None
    with tempfile.TemporaryDirectory(prefix="kaffinity-bench-") as scratch:
        folder, repo = render_repository(scratch, size)
        for engines, found, reason in render_engines():
            print(f"{engines}", flush=True)
            outputs: dict[str, bytes] = {}
            # Bytecode as an installed kaffinity has it (pip compiles it): never compiling every
            # module in every run, even where PYTHONDONTWRITEBYTECODE is set; in the scratch folder.
            env = None
            if found is not None:
                env = {name: value for name, value in found.items() if name != "PYTHONDONTWRITEBYTECODE"}
                env["PYTHONPYCACHEPREFIX"] = os.path.join(scratch, "pycache")
                run_child(cli_command("lint", repo.manifest, "--no-cache", "-o", os.devnull), folder, env)
            for case in render_cases(repo):
                if env is None:
                    rows.append((engines, case, None, reason))
                    continue
                runs = measure_render_case(case, folder, env, repeat, scratch)
                rows.append((engines, case, runs, ""))
                with open(os.path.join(scratch, f"render-{case.key}.out"), "rb") as handle:
                    outputs[case.key] = handle.read()
                median = statistics.median(run.wall for run in runs)
                print(f"  {case.label:<50} {median:7.3f} s wall (median of {len(runs)})", flush=True)
            if outputs:
                equal = outputs["nocache"] == outputs["cold"] == outputs["warm"]
                verb = "is" if equal else "is NOT"
                same.append(
                    f"{engines}: the JSON of `lint .` {verb} byte-identical with no, a cold and a warm cache"
                )
                if not equal:
                    print(f"  {same[-1]}", file=sys.stderr)
            if env is not None and profile is None:
                profile = render_profile(folder, repo, env, scratch)
    facts = machine(load_before, (code_before, code_identity()))
    section = render_section(rows, same, repo, size, repeat, command_line, facts, profile or [])
    print()
    print(section)
    if output:
        document = ""
        if os.path.exists(output):
            with open(output, encoding="utf-8") as handle:
                document = handle.read()
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(replace_section(document, RENDER_HEADING, section))
        print(f"written to {output} (section {RENDER_HEADING!r})")
    return 0 if all("is NOT" not in line for line in same) else 1


#: Where a warm one-file commit spends its time: (label, a function's ``file:name`` in the
#: profile), cumulative seconds of the first such function.
PROFILE_PARTS = (
    ("the whole command", "kaffinity/__main__.py:<module>"),
    ("imports of the CLI (typer, kaffinity.cli, ...)", "kaffinity/__main__.py:<module>-lint"),
    ("`lint`", "kaffinity/cli/lint.py:lint"),
    (
        "reading the files, whole (the changed one and the context)",
        "kaffinity/run/workspace.py:load_in_context",
    ),
    ("of which YAML parsing (kaffinity.load.parse)", "kaffinity/load/parse/objects.py:_parse"),
    ("the units (kaffinity.repo.units: layout, renders, cache)", "kaffinity/run/layout.py:layout"),
    ("of which render_units (renders or cache hits)", "kaffinity/repo/units/render.py:render_units"),
    ("the rules (kaffinity.engine.lint)", "kaffinity/engine/run.py:lint"),
    ("of which the affinity graphs (one per unit)", "kaffinity/context.py:graph"),
    ("of which the typed objects (inventory)", "kaffinity/context.py:inventory"),
    ("of which schema validation", "kaffinity/context.py:validation"),
)


#: What the profile says stands between a warm one-file commit and the target (issue 33).
RENDER_READING = (
    "What stands in the way of the target: in a repository with kustomizations `lint` reads every "
    "file whole (docs/cache.md, *When lint reads files whole instead*): the per-file cache of the "
    "single-object stage is not used there, so a one-file commit parses the whole repository's "
    "YAML again (the largest part above); then the cross-object rules build one affinity graph "
    "and one set of typed objects per unit, and the CLI imports its modules. Rendering itself "
    "costs almost nothing warm: the hook builds only the units that hold the changed file (the "
    "patch and values lines render one unit), and a whole `lint .` takes every unchanged unit from "
    "the render cache (the warm line against `--no-cache`). Reaching 0.5 s needs the rendered "
    "objects to go through the streamed, cached single-object stage, so that a repository that "
    "renders streams as a plain one does (issue 23's warm `--changed` at 1,000 workloads, 0.55 s), "
    "and a graph restricted to what the changed objects reach: issue 36, items 1 and 5.",
)


def profiled(
    arguments: Sequence[str], folder: str, env: dict[str, str], scratch: str, name: str
) -> dict[Any, Any]:
    """cProfile's statistics of one warm ``kaffinity ARGUMENTS`` in a child process run from
    ``folder`` (one untimed run first fills the cache folder ARGUMENTS name)."""
    import pstats

    run_child(cli_command(*arguments), folder, env)  # warm
    stats_file = os.path.join(scratch, f"{name}.prof")
    command = [sys.executable, "-m", "cProfile", "-o", stats_file, "-m", "kaffinity", *arguments]
    subprocess.run(command, cwd=folder, env=env, check=False, capture_output=True)
    stats: dict[Any, Any] = pstats.Stats(stats_file).stats  # type: ignore[attr-defined]
    return stats


def profile_parts(stats: dict[Any, Any], labels: dict[str, str] | None = None) -> list[tuple[str, float]]:
    """The cumulative seconds of :data:`PROFILE_PARTS` in ``stats`` (cProfile's overhead
    included: compare parts with each other, not with the timed runs); ``labels``: another
    label for a part, by its fragment."""

    def cumulative(fragment: str) -> float:
        return max(
            (value[3] for (file, _, name), value in stats.items() if f"{file}:{name}".endswith(fragment)),
            default=0.0,
        )

    parts = []
    for label, fragment in PROFILE_PARTS:
        if fragment.endswith("-lint"):
            value = cumulative(fragment.removesuffix("-lint")) - cumulative("kaffinity/cli/lint.py:lint")
        else:
            value = cumulative(fragment)
        parts.append(((labels or {}).get(fragment, label), value))
    return parts


def render_profile(folder: str, repo: Any, env: dict[str, str], scratch: str) -> list[tuple[str, float]]:
    """cProfile of one warm one-file commit (the hook, a manifest changed), in a child process:
    :func:`profile_parts`."""
    cache = tempfile.mkdtemp(prefix="render-profile-", dir=scratch)
    arguments = [*HOOK[:-1], "--cache-dir", cache, "-o", os.devnull, HOOK[-1], repo.manifest]
    stats = profiled(arguments, folder, env, scratch, "render")
    shutil.rmtree(cache, ignore_errors=True)
    return profile_parts(stats)


def render_section(
    rows: Sequence[tuple[str, RenderCase, list[ChildRun] | None, str]],
    same: Sequence[str],
    repo: Any,
    size: int,
    repeat: int,
    command_line: str,
    facts: Sequence[tuple[str, str]],
    profile: Sequence[tuple[str, float]] = (),
) -> str:
    lines = [
        RENDER_HEADING,
        "",
        f"Written by `{command_line}` (issue 33). The repository is benchmarks/generate.py's "
        f"`repository` at {size:,} workloads: {len(repo.overlays)} overlays over "
        f"{len(repo.overlays) // 2} bases, a chart, the other namespaces as plain manifests, in a "
        "git repository. The hook is `kaffinity lint --changed --fail-on warning --pre-commit FILE` "
        "(.pre-commit-hooks.yaml), run from the repository; its FILE is rewritten before every run "
        f"(a new commit of it): `{repo.manifest}`, `{repo.patch}`, `{repo.values}`. Median of "
        f"{repeat} runs, wall seconds, each in a fresh process, with bytecode (as pip installs "
        "kaffinity: `PYTHONDONTWRITEBYTECODE` is dropped, `PYTHONPYCACHEPREFIX` a scratch folder; "
        "one untimed run compiles it).",
        "",
        "| engines | command | cache | median (s) | min (s) | CPU (s) | peak RSS (MiB) |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for engines, case, runs, reason in rows:
        if runs is None:
            lines.append(f"| {engines} | {case.label} | {case.cache} | {reason} | | | |")
            continue
        walls = [run.wall for run in runs]
        cpu = statistics.median(run.cpu for run in runs)
        rss = max(run.rss_kib for run in runs) / 1024
        lines.append(
            f"| {engines} | {case.label} | {case.cache} | {statistics.median(walls):.3f} | {min(walls):.3f} "
            f"| {cpu:.3f} | {rss:.0f} |"
        )
    lines += ["", *(f"- {line}" for line in same)]
    for engines, case, runs, _ in rows:
        if runs is not None and case.key == "manifest":
            median = statistics.median(run.wall for run in runs)
            verdict = "met" if median <= RENDER_TARGET else "NOT met"
            lines.append(
                f"- target: a warm one-file commit (`{case.label}`) at or under {RENDER_TARGET} s with "
                f"{engines}: {median:.3f} s, {verdict}"
            )
    if profile:
        lines += [
            "",
            "Where a warm one-file commit (the hook, a manifest changed) spends its time, from "
            "cProfile (first engine set; cumulative seconds, profiler overhead included):",
            "",
            "| part | seconds |",
            "|---|---:|",
            *(f"| {label} | {value:.3f} |" for label, value in profile),
            "",
            *RENDER_READING,
        ]
    lines += ["", *(f"- {name}: {value}" for name, value in facts)]
    return "\n".join(lines) + "\n"


def gitops_main(args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    """``--stages gitops`` (issue 36, item 6): benchmarks/gitops_stage.py, with this module's
    launcher, engine sets and report helpers."""
    import gitops_stage

    return gitops_stage.main(sys.modules[__name__], args, argv)


def _gitops_size(text: str) -> tuple[int, ...]:
    try:
        size = tuple(int(part) for part in text.split(","))
    except ValueError:
        size = ()
    if len(size) != 4 or min(size) < 1:
        raise argparse.ArgumentTypeError(
            f"four positive numbers, overlays,charts,releases,workloads: {text!r}"
        )
    return size


def trace_estimate(workloads: int, previous: dict[int, list[Measurement]]) -> int:
    """Bytes the tracemalloc run at ``workloads`` may need: the largest traced peak at the size
    before, scaled, times :data:`TRACE_FACTOR`; without one, a guess per workload."""
    smaller = [size for size in previous if size < workloads]
    if smaller:
        size = max(smaller)
        peak = max((row.traced_kib or 0) for row in previous[size]) * 1024
        if peak:
            return peak * workloads // size * TRACE_FACTOR
    return workloads * TRACE_BYTES_PER_WORKLOAD


def plan_for(workloads: int, args: argparse.Namespace, previous: dict[int, list[Measurement]]) -> Plan:
    """Timed runs (``--repeat``, else 2 with ``--quick``, 5, and 1 from 100,000 workloads up),
    tracing (where it fits in :data:`TRACE_LIMIT`) and the clusters of ``simulate`` at one size."""
    repeat = args.repeat or (QUICK_REPEAT if args.quick else 1 if workloads >= LARGE_SIZE else REPEAT)
    nodes: tuple[int, ...] = tuple(args.nodes or CLUSTERS)
    if args.quick or workloads < TARGET_SIZE:
        clusters = nodes[:1]
    else:
        clusters = nodes if workloads == TARGET_SIZE else ()
    trace = trace_estimate(workloads, previous) <= TRACE_LIMIT
    return Plan(repeat, trace, clusters, args.simulate_budget)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Throughput of kaffinity, stage by stage, against the parse floor."
    )
    parser.add_argument(
        "--quick", action="store_true", help="1,000 workloads, 100 nodes, 2 runs; no RESULTS.md unless -o"
    )
    parser.add_argument(
        "--sizes",
        type=_sizes,
        help="workload counts, comma-separated (default 1000,10000; e.g. 1000,10000,100000)",
    )
    parser.add_argument(
        "--repeat", type=int, help="timed runs per stage (default 5, 1 from 100,000 workloads up; --quick: 2)"
    )
    parser.add_argument("--output", "-o", help=f"Markdown report (default {os.path.relpath(DEFAULT_OUTPUT)})")
    parser.add_argument("--no-cache", action="store_true", help="generate into a temporary folder")
    parser.add_argument(
        "--nodes",
        type=_sizes,
        help="clusters of the simulate stage at 10,000 workloads (default 100,1000,5000); smaller corpora "
        "(and --quick) get the smallest",
    )
    parser.add_argument(
        "--simulate-budget",
        type=float,
        default=SIMULATE_BUDGET,
        help="skip a cluster whose simulate run is estimated to take longer than this many seconds "
        f"(default {SIMULATE_BUDGET:.0f})",
    )
    parser.add_argument(
        "--stages",
        choices=("all", "graph", "place", "policy", "scale", "render", "gitops"),
        default="all",
        help=f"graph: only the affinity graph stage and the parse floor (default output "
        f"{GRAPH_OUTPUT_NAME}); place: the offline scheduler (default output {PLACE_OUTPUT_NAME}); "
        f"policy: ten policies on top of the rules (default output {POLICY_OUTPUT_NAME}); scale: "
        "--jobs 1 and 2, cold and warm cache, pre-commit --changed, at 1k, 10k, 100k by default "
        "(the Scale section of the output, default benchmarks/RESULTS.md); render: a repository of "
        "overlays and a chart, whole and by the pre-commit hook after a one-file commit, no, cold and "
        "warm cache, with each engine set (the Rendered units section; --quick: 2 runs, prints only); "
        "gitops: a GitOps monorepo (overlays, charts, releases from a loopback chart repository) whole "
        "and by the hook, no, cold and warm cache, --jobs 1 and 2 (the GitOps monorepo section; "
        "--quick: 1 run, prints only)",
    )
    parser.add_argument(
        "--gitops-size",
        type=_gitops_size,
        help="--stages gitops: overlays,charts,releases,plain workloads (default 100,30,20,600)",
    )
    args = parser.parse_args(argv)
    stages = {
        "graph": graph_main,
        "place": place_main,
        "policy": policy_main,
        "scale": scale_main,
        "render": render_main,
        "gitops": gitops_main,
    }
    if args.stages in stages:
        return stages[args.stages](args, argv)
    sizes: list[int] = args.sizes or ([1_000] if args.quick else list(DEFAULT_SIZES))
    output: str | None = args.output or (None if args.quick else DEFAULT_OUTPUT)
    command = shlex.join(["python", "benchmarks/run.py", *(sys.argv[1:] if argv is None else argv)])

    load_before = os.getloadavg()
    code_before = code_identity()
    started = time.perf_counter()
    by_size: dict[int, list[Measurement]] = {}
    plans: dict[int, Plan] = {}
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="kaffinity-bench-") as scratch:
        cwd = os.path.join(scratch, "cwd")  # no .kaffinity.yaml above it
        os.makedirs(cwd)
        if find_config(cwd) is not None:
            print(f"warning: {find_config(cwd)} applies to the CLI runs", file=sys.stderr)
        jobs = cli_has_jobs(cwd)
        if not jobs:
            note = (
                "`kaffinity lint` has no --jobs: the --jobs 1 rows and the identical-output check are skipped"
            )
            print(f"note: {note}", flush=True)
            notes.append(note)
        corpora = [corpus(size, not args.no_cache, scratch) for size in sizes]
        for item in corpora:
            plans[item.workloads] = plan = plan_for(item.workloads, args, by_size)
            by_size[item.workloads] = measure_size(item, plan, cwd, scratch, jobs, notes)
        print("start-up", flush=True)
        startup = measure_startup(corpus(1, not args.no_cache, scratch), cwd)

    code = (code_before, code_identity())
    if code[0].split()[1] != code[1].split()[1]:
        print(f"warning: kaffinity changed during the run ({code[0]} -> {code[1]})", file=sys.stderr)
    text = report(command, corpora, by_size, startup, plans, notes, load_before, code)
    print()
    print(text)
    if output:
        text = keep_scale_section(output, text)  # read before the file is truncated
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
        print(f"written to {output}")
    print(f"({time.perf_counter() - started:.0f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
