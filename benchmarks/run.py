"""Load throughput of kaffinity, and its ratio to the parse floor.

``python benchmarks/run.py [--quick] [--sizes 1000,10000] [--repeat N] [--output benchmarks/RESULTS.md]``

For each corpus size (workloads; the corpus comes from ``generate.py`` and is cached under
``benchmarks/.corpus/``) it times, as the median of ``--repeat`` runs after one untimed run that
checks the result:

* ``read``: reading and decoding every file (kept out of ``floor`` and ``parse``);
* ``floor``: composing every text with ruamel's C composer and nothing else;
* ``parse``: ``kaffinity.loader.parse`` on the same texts, and (a diagnostic) the same with the
  cyclic garbage collector disabled;
* ``load``: ``kaffinity.loader.load([dir])`` (discovery + read + parse);
* ``lint``: ``lint(load([dir]), Settings())`` in-process, and ``engine``: ``lint`` alone;
* ``cli``: ``python -m kaffinity lint DIR --format json -o /dev/null`` as a subprocess,
  with its CPU time and peak RSS;

and once per run the start-up of ``python -c pass``, ``python -m kaffinity --version`` and
``kaffinity lint`` on one small file (median of 10). See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import hashlib
import importlib.metadata
import itertools
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from generate import GenerateResult, generate
from ruamel.yaml.cyaml import CSafeLoader

import kaffinity
from kaffinity.config import Settings, find_config
from kaffinity.engine import Context, LintResult, lint
from kaffinity.expand import expand
from kaffinity.loader import SourceFile, discover, load, parse
from kaffinity.model import build_inventory
from kaffinity.validation import validate_documents

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CACHE = os.path.join(HERE, ".corpus")
DEFAULT_OUTPUT = os.path.join(HERE, "RESULTS.md")
DEFAULT_SIZES = (1_000, 10_000)
SEED = 1
PER_FILE = 5
STARTUP_REPEAT = 10
# Targets (README.md): parse at most this many times the floor; growth per 10x workloads at most this.
PARSE_TARGET = 2.0
GROWTH_TARGET = 12.0
VALIDATION_TARGET = 0.5  # validation adds at most half the load time

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


def timed(fn: Callable[[], object], repeat: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of ``repeat`` calls of ``fn`` (warm it up before: see measure_size).

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


@dataclass(slots=True)
class ChildRun:
    wall: float
    cpu: float
    rss_kib: int
    returncode: int


def run_child(command: Sequence[str], cwd: str) -> ChildRun:
    """Run ``command`` from the small launcher and check that it did not fail."""
    with tempfile.NamedTemporaryFile(prefix="kaffinity-bench-", suffix=".err") as errors:
        launcher = [
            sys.executable,
            "-I",
            "-S",
            "-c",
            _LAUNCHER,
            json.dumps([list(command), cwd, errors.name]),
        ]
        report = subprocess.run(launcher, check=True, capture_output=True, text=True).stdout
        stderr = errors.read().decode("utf-8", "replace")
    run = ChildRun(**json.loads(report))
    # 0: clean, 1: findings. A Python traceback also exits with 1, so stderr must be empty too.
    if run.returncode not in (0, 1) or stderr.strip():
        raise RuntimeError(f"{shlex.join(command)} exited with {run.returncode}:\n{stderr[-3000:]}")
    return run


def timed_child(command: Sequence[str], cwd: str, repeat: int) -> tuple[list[float], list[float], list[int]]:
    run_child(command, cwd)  # warm-up (page cache; .pyc files where bytecode may be written)
    runs = [run_child(command, cwd) for _ in range(repeat)]
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


def timed_without_gc(texts: Sequence[tuple[str, str]], repeat: int) -> tuple[list[float], list[float]]:
    """A diagnostic: ``parse`` without the cyclic garbage collector, to show what it costs."""
    gc.disable()
    try:
        return timed(lambda: kaffinity_parse(texts), repeat)
    finally:
        gc.enable()


def time_engine(folder: str, settings: Settings, repeat: int) -> tuple[list[float], list[float]]:
    """``lint`` on files loaded beforehand; they are freed on return, before the next stage."""
    files = load([folder])
    lint(files, settings)
    return timed(lambda: lint(files, settings), repeat)


def time_validation(folder: str, settings: Settings, repeat: int) -> tuple[list[float], list[float]]:
    """The six validation rules' shared work (:func:`validate_documents`) on loaded objects.

    The first call, untimed, builds the validators of the version (once per version and kind)."""
    documents = [doc for file in load([folder]) for doc in file.documents]
    found = validate_documents(documents, settings)
    if found:
        raise RuntimeError(f"validation found problems in the generated corpus: {sorted(found)}")
    return timed(lambda: validate_documents(documents, settings), repeat)


def time_expansion(folder: str, settings: Settings, repeat: int) -> tuple[list[float], list[float]]:
    """The merged selectors of every workload (:class:`kaffinity.expand.Expansions`) and the four
    expansion rules that read them, on files loaded beforehand."""
    files = load([folder])
    expansion = dataclasses.replace(settings, select=("expansion",))
    result = lint(files, expansion)
    if result.internal_errors:
        raise RuntimeError(f"the expansion rules failed: {result.internal_errors}")
    inventory = build_inventory([doc for file in files for doc in file.documents])
    version, gates = settings.kube_version, settings.feature_gates
    if not any(term.applied for w in inventory.workloads for term in expand(w, version, gates).terms):
        raise RuntimeError("the generated corpus has no matchLabelKeys to merge")
    return timed(lambda: lint(files, expansion), repeat)


def time_graph(folder: str, settings: Settings, repeat: int) -> tuple[list[float], list[float]]:
    """The affinity graph (typed inventory, merged selectors, index, networkx graph, placement)
    and every graph rule, on files loaded beforehand: ``lint`` with ``select=("graph",)``."""
    files = load([folder])
    graph_only = dataclasses.replace(settings, select=("graph",))
    result = lint(files, graph_only)
    if result.internal_errors:
        raise RuntimeError(f"the graph rules failed: {result.internal_errors}")
    graph = Context(files, graph_only).graph
    if not any(data.get("type") == "selector" for _, data in graph.graph.nodes(data=True)):
        raise RuntimeError("the generated corpus has no selector matching many workloads")
    return timed(lambda: lint(files, graph_only), repeat)


def measure_graph(item: Corpus, repeat: int) -> list[Measurement]:
    """``--stages graph``: the parse floor (for the ratio) and the graph stage only."""
    folder = item.manifests
    texts = read_all(manifest_files(folder))
    rows = [
        Measurement(
            "floor",
            "parse floor (C composer only)",
            item.stats.workloads,
            item.stats.objects,
            *timed(lambda: parse_floor(texts), repeat),
        ),
        Measurement(
            "graph",
            "affinity graph + graph rules",
            item.stats.workloads,
            item.stats.objects,
            *time_graph(folder, Settings(), repeat),
        ),
    ]
    for row in rows:
        print(f"  {row.label:<40} {row.median:8.3f} s wall {row.cpu_median:8.3f} s CPU", flush=True)
    return rows


def measure_size(item: Corpus, repeat: int, cwd: str) -> list[Measurement]:
    """Every stage at one size. Each stage's first call checks the result and warms it up."""
    stats = item.stats
    folder = item.manifests
    settings = Settings()
    results: list[Measurement] = []

    def record(
        stage: str, label: str, times: tuple[list[float], list[float]], rss: Sequence[int] = ()
    ) -> None:
        walls, cpus = times
        results.append(Measurement(stage, label, stats.workloads, stats.objects, walls, cpus, list(rss)))
        print(
            f"  {label:<40} {statistics.median(walls):8.3f} s wall {statistics.median(cpus):8.3f} s CPU",
            flush=True,
        )

    paths = manifest_files(folder)
    print(f"{stats.workloads:,} workloads: {len(paths):,} files, {stats.objects:,} objects", flush=True)
    texts = read_all(paths)
    record("read", "read files (bytes -> str)", timed(lambda: read_all(paths), repeat))

    if parse_floor(texts) != stats.documents:
        raise RuntimeError("the parse floor composed a different number of documents than were written")
    record("floor", "parse floor (C composer only)", timed(lambda: parse_floor(texts), repeat))

    check_load(kaffinity_parse(texts), item)
    record("parse", "kaffinity.loader.parse", timed(lambda: kaffinity_parse(texts), repeat))
    record("parse-nogc", "kaffinity.loader.parse, gc disabled", timed_without_gc(texts, repeat))

    check_load(load([folder]), item)
    record("load", "kaffinity.loader.load([dir])", timed(lambda: load([folder]), repeat))

    record("validate", "schema + API validation (all objects)", time_validation(folder, settings, repeat))
    record("expand", "matchLabelKeys merge + expansion rules", time_expansion(folder, settings, repeat))
    record("graph", "affinity graph + graph rules", time_graph(folder, settings, repeat))

    check_lint(lint(load([folder]), settings), item)
    record("lint", "lint(load([dir]), Settings())", timed(lambda: lint(load([folder]), settings), repeat))

    record("engine", "lint(files, Settings()) (engine only)", time_engine(folder, settings, repeat))

    command = cli_command("lint", folder, "--format", "json", "-o", os.devnull)
    walls, cpus, rss = timed_child(command, cwd, repeat)
    record("cli", "kaffinity lint DIR (subprocess)", (walls, cpus), rss)
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
        ("date", datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")),
        (
            "CPU",
            f"{_cpu_model()} ({os.cpu_count()} logical cores, {usable} usable; all timings single-threaded)",
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


def results_table(rows: Sequence[Measurement], floors: dict[int, Measurement]) -> list[str]:
    lines = [
        "| stage | workloads | objects | median s | min s | CPU s | objects/s | workloads/s | x floor "
        "| x floor (CPU) | peak RSS MiB |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for row in rows:
        floor = floors[row.workloads]
        ratio = f"{row.median / floor.median:.2f}"
        cpu_ratio = f"{row.cpu_median / floor.cpu_median:.2f}"
        rss = f"{row.rss_mib:,.0f}" if row.rss_mib is not None else "-"
        lines.append(
            f"| {row.label} | {row.workloads:,} | {row.objects:,} | {row.median:.3f} | {row.best:.3f} "
            f"| {row.cpu_median:.3f} | {_rate(row.objects, row.median)} | {_rate(row.workloads, row.median)} "
            f"| {ratio} | {cpu_ratio} | {rss} |"
        )
    return lines


def startup_table(rows: Sequence[Measurement]) -> list[str]:
    lines = ["| command | median s | min s | CPU s | peak RSS MiB |", "|---|--:|--:|--:|--:|"]
    for row in rows:
        rss = f"{row.rss_mib:,.0f}" if row.rss_mib is not None else "-"
        lines.append(f"| `{row.label}` | {row.median:.3f} | {row.best:.3f} | {row.cpu_median:.3f} | {rss} |")
    return lines


def growth_table(by_size: dict[int, list[Measurement]]) -> list[str]:
    sizes = sorted(by_size)
    if len(sizes) < 2:
        return []
    pairs = list(itertools.pairwise(sizes))
    header = "| stage | " + " | ".join(f"{a:,} -> {b:,} (linear: {b / a:.1f}x)" for a, b in pairs) + " |"
    lines = [header, "|---|" + "--:|" * len(pairs)]
    for index, row in enumerate(by_size[sizes[0]]):
        cells = []
        for small, big in pairs:
            cells.append(f"{by_size[big][index].median / by_size[small][index].median:.2f}x")
        lines.append(f"| {row.label} | " + " | ".join(cells) + " |")
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
        f"- At {floor.workloads:,} workloads, `kaffinity.loader.load([dir])`, the path the CLI takes, "
        f"runs at **{load_ratio:.2f}x** the parse floor ({loaded.cpu_median:.2f} s against "
        f"{floor.cpu_median:.2f} s CPU, discovery and reading included; target <= {PARSE_TARGET:.0f}x: "
        f"{_verdict(load_ratio, PARSE_TARGET)}).",
        f"- `kaffinity.loader.parse` called file by file takes **{parse_ratio:.2f}x** the floor "
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
    growth = {row.stage: _stage(top, row.stage).median / row.median for row in first}
    # Stages that take under 5% of the floor's time (reading, the engine) are too short to judge.
    floor = _stage(top, "floor").median
    superlinear = [
        stage
        for stage, value in growth.items()
        if value > ideal * 1.2 and stage != "cli" and _stage(top, stage).median >= 0.05 * floor
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
    loaded, linted, engine, cli = (_stage(top, name) for name in ("load", "lint", "engine", "cli"))
    small = _stage(startup, "small")
    lines = _load_lines(top)
    validated = _stage(top, "validate")
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
    extra = linted.median - loaded.median - engine.median
    if extra > 0.1 * loaded.median:
        lines.append(
            f"- The engine alone, on files loaded earlier, takes {engine.median:.2f} s, yet "
            f"`lint(load([dir]))` takes {extra:.2f} s more than load and engine apart "
            f"({linted.median:.2f} s): the first garbage collection after `load()` walks every object "
            "just loaded, which sat uncollected in the youngest generation while the collector was "
            "paused. A `gc.freeze()` after loading avoids it."
        )
    else:
        lines.append(
            f"- The engine adds {engine.median:.2f} s to loading (in-process lint: {linted.median:.2f} s)."
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
    else:
        lines.append(
            f"- The 10,000 -> 100,000 growth target (<= {GROWTH_TARGET:.0f}x) is not measured by this run; "
            "see README.md."
        )
    return lines


def report(
    command: str,
    corpora: Sequence[Corpus],
    by_size: dict[int, list[Measurement]],
    startup: Sequence[Measurement],
    repeat: int,
    load_before: tuple[float, float, float],
    code: tuple[str, str],
) -> str:
    floors = {size: _stage(rows, "floor") for size, rows in by_size.items()}
    rows = [row for size in sorted(by_size) for row in by_size[size]]
    parts = [
        *_header(
            "kaffinity load benchmarks",
            "Written by `benchmarks/run.py`; see `benchmarks/README.md` for what each line measures.",
            command,
            machine(load_before, code),
        ),
        f"Median of {repeat} timed runs, after one untimed run that checks the result (and warms up); "
        f"start-up lines: median of {STARTUP_REPEAT}. "
        "Reading the files is timed on its own (`read`) and excluded from both `parse floor` and "
        "`kaffinity.loader.parse`; `load`, `lint` and the CLI include it. `x floor` divides a stage's "
        "median by the parse floor's median at the same size; `x floor (CPU)` does the same with CPU "
        "seconds, which other processes on the machine disturb less. objects = Kubernetes objects, the items "
        "of a `kind: List` counted one by one (what kaffinity calls documents).",
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
    growth = growth_table(by_size)
    if growth:
        parts += ["## Growth", "", "Median time at the larger size divided by the median at the smaller.", ""]
        parts += [*growth, ""]
    parts += [
        "## Start-up",
        "",
        *startup_table(startup),
        "",
        "## Reading",
        "",
        *reading(by_size, startup),
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


PLACE_OUTPUT_NAME = "benchmarks/PLACE.md"
#: (workloads in the corpus, nodes): about 2,500 and 10,000 pods on 1,000 nodes, and 10,000 pods
#: on 100 and 5,000 nodes, for the growth in pods and in nodes.
PLACE_CASES = ((850, 1_000), (3_400, 1_000), (3_400, 100), (3_400, 5_000))
#: A fifth of the pod templates carry scheduling rules (the issue's case).
PLACE_SCHEDULED_SHARE = 0.2


def place_corpus(workloads: int, nodes: int, scratch: str) -> tuple[list[Any], Any]:
    """A generated corpus's workloads, DaemonSets left out (on 1,000 nodes one DaemonSet alone
    is 1,000 pods), and its cluster of ``nodes`` Nodes."""
    from kaffinity.topology import cluster_from

    folder = os.path.join(scratch, f"place-{workloads}-{nodes}")
    generate(folder, workloads, nodes=nodes, scheduled_share=PLACE_SCHEDULED_SHARE)
    files = load([os.path.join(folder, "manifests")])
    cluster = cluster_from(load([os.path.join(folder, "cluster.yaml")]))
    inventory = build_inventory(doc for file in files for doc in file.documents)
    return [w for w in inventory.workloads if w.ref.kind != "DaemonSet"], cluster


def place_main(args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    """``--stages place``: the offline scheduler placing every pod, in pods per second."""
    from kaffinity.place import place_all

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
    lines = [
        *_header(
            "kaffinity offline-scheduler benchmark",
            "Written by `benchmarks/run.py --stages place`: `kaffinity.place.place_all` placing every pod "
            "of a generated corpus (DaemonSets left out; a fifth of the pod templates carry scheduling "
            "rules) on a generated cluster, on workloads loaded beforehand. `placing` is what `lint "
            "--cluster` runs (median of "
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
    for _, chosen, ruled, nodes, pods, pending, lint_mode, record in rows:
        cpu = statistics.median(lint_mode[1])
        lines.append(
            f"| {chosen:,} | {ruled:,} | {nodes:,} | {pods:,} | {pending:,} | {cpu:.2f} | "
            f"{_rate(pods, cpu)} | {record[1][0]:.2f} | {_rate(pods, record[1][0])} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    with open(output, "w", encoding="utf-8") as handle:
        handle.write(text)
    print(f"written to {output}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Load throughput of kaffinity against the parse floor.")
    parser.add_argument(
        "--quick", action="store_true", help="1,000 workloads, 3 runs; no RESULTS.md unless -o"
    )
    parser.add_argument("--sizes", type=_sizes, help="workload counts, comma-separated (default 1000,10000)")
    parser.add_argument("--repeat", type=int, help="timed runs per stage (default 5; --quick: 3)")
    parser.add_argument("--output", "-o", help=f"Markdown report (default {os.path.relpath(DEFAULT_OUTPUT)})")
    parser.add_argument("--no-cache", action="store_true", help="generate into a temporary folder")
    parser.add_argument(
        "--stages",
        choices=("all", "graph", "place"),
        default="all",
        help=f"graph: only the affinity graph stage and the parse floor (default output "
        f"{GRAPH_OUTPUT_NAME}); place: the offline scheduler (default output {PLACE_OUTPUT_NAME})",
    )
    args = parser.parse_args(argv)
    if args.stages == "graph":
        return graph_main(args, argv)
    if args.stages == "place":
        return place_main(args, argv)
    sizes: list[int] = args.sizes or ([1_000] if args.quick else list(DEFAULT_SIZES))
    repeat: int = args.repeat or (3 if args.quick else 5)
    output: str | None = args.output or (None if args.quick else DEFAULT_OUTPUT)
    command = shlex.join(["python", "benchmarks/run.py", *(sys.argv[1:] if argv is None else argv)])

    load_before = os.getloadavg()
    code_before = code_identity()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kaffinity-bench-") as scratch:
        cwd = os.path.join(scratch, "cwd")  # no .kaffinity.yaml above it
        os.makedirs(cwd)
        if find_config(cwd) is not None:
            print(f"warning: {find_config(cwd)} applies to the CLI runs", file=sys.stderr)
        corpora = [corpus(size, not args.no_cache, scratch) for size in sizes]
        by_size = {item.workloads: measure_size(item, repeat, cwd) for item in corpora}
        print("start-up", flush=True)
        startup = measure_startup(corpus(1, not args.no_cache, scratch), cwd)

    code = (code_before, code_identity())
    if code[0].split()[1] != code[1].split()[1]:
        print(f"warning: kaffinity changed during the run ({code[0]} -> {code[1]})", file=sys.stderr)
    text = report(command, corpora, by_size, startup, repeat, load_before, code)
    print()
    print(text)
    if output:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
        print(f"written to {output}")
    print(f"({time.perf_counter() - started:.0f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
