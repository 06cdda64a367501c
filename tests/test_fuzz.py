"""A mutation fuzzer that stays: the examples and cluster files, mutated line by
line with hostile values, must never make kaffinity fail.

Oracles, for every mutant (alone, and linted against a cluster, itself mutated sometimes):

- loading never raises; a rule never fails (no "internal error");
- every finding names a line of its file (or none, for a file that could not be read);
- the same input gives the same findings twice (determinism);
- every report format renders, and the JSON and SARIF ones parse;
- ``fix`` only inserts (an empty ``matchLabelKeys`` value it fills in aside), and fixing what
  it fixed finds nothing more to fix;
- each mutant is linted within a bounded time.

In CI it runs a bounded, derandomized number of mutants (``KAFFINITY_FUZZ_EXAMPLES``, default
60). ``KAFFINITY_FUZZ_MINUTES=60`` is the long mode for release checks: random mutants for that
long, counts printed. A failure it finds becomes a regression test beside the code it breaks.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kaffinity.config import Settings
from kaffinity.engine import LintResult, lint
from kaffinity.load.parse import SourceFile, parse
from kaffinity.report import render
from kaffinity.simulate.cluster import Cluster, cluster_from

from .kit import EXAMPLES, findings, keys

SEEDS = sorted(
    path for path in EXAMPLES.rglob("*") if path.suffix in (".yaml", ".yml", ".json") and path.is_file()
)
CLUSTERS = sorted((EXAMPLES / "clusters").glob("*.yaml"))
#: Values an earlier fuzzing campaign found trouble with, and more of their kind.
HOSTILE = [
    "1Ei",
    "1EB",
    "8Ei",
    ".nan",
    ".inf",
    "-.inf",
    '"1e1000000"',
    "1.0e+400",
    "2147483647",
    "-2147483648",
    "99999999999999999999999999",
    "-1",
    "0",
    "''",
    "null",
    "[]",
    "{}",
    "~",
    '"\\e]0;title\\a"',
    '"a\\nb: c"',
    "!!python/name:os.system",
    "!!binary aGVsbG8=",
    "{{ .Values.x }}",
    '"0.5"',
    "1e3",
    "0x10",
    "yes",
    "'100%'",
    "'150%'",
    "'-5%'",
    "kubernetes.io/hostname",
    "\u00e9\u00e8\u202e",
]
#: Keys whose values reach arithmetic (quantities, counts, percentages): mutated more often.
NUMERIC_KEYS = re.compile(
    r"^\s*-?\s*(cpu|memory|pods|ephemeral-storage|nvidia\.com/gpu|replicas|parallelism|completions|"
    r"maxSkew|minDomains|minAvailable|maxUnavailable|maxSurge|weight|count|minReplicas|maxReplicas|"
    r"value|priority|topologyKey|key|operator):"
)
_VALUE = re.compile(r"([\w./-]+)(:[ \t]+)([^,{}\[\]\s#][^,{}\[\]#]*?)(?=\s*(?:[,}\]]|#|$))")
_QUANTITY_KEYS = {"cpu", "memory", "pods", "ephemeral-storage", "nvidia.com/gpu", "storage"}
#: What the API reads as a quantity or a count, and breaks arithmetic when hostile.
NUMBERS = ["1Ei", "1EB", "8Ei", ".nan", ".inf", '"1e1000000"', "1.0e+400", "2147483647", "-1", "0", "1e3"]
EXAMPLES_DEFAULT = 60
LONG_MINUTES = float(os.environ.get("KAFFINITY_FUZZ_MINUTES", "0") or 0)
#: Seconds one mutant may take to lint (with a cluster): far above what any takes today.
PER_MUTANT_SECONDS = 30.0


@st.composite
def _mutant(draw: st.DrawFn, seeds: list[Path]) -> tuple[str, str]:
    """A seed file's text with a few line mutations."""
    path = draw(st.sampled_from(seeds))
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        at = draw(st.integers(0, len(lines) - 1))
        kind = draw(
            st.sampled_from(
                ["value", "value", "token", "token", "delete", "copy", "indent", "alias", "cut", "swap"]
            )
        )
        line = lines[at]
        if kind == "value" and ":" in line:
            key = line.split(":", 1)[0]
            lines[at] = f"{key}: {draw(st.sampled_from(HOSTILE))}"
        elif kind == "token" and (values := list(_VALUE.finditer(line))):
            # One value of the line, flow mappings included ({cpu: 100m, memory: 1Gi}); a
            # quantity or a count gets a hostile number more often.
            match = draw(st.sampled_from(values))
            numeric = match.group(1) in _QUANTITY_KEYS or bool(NUMERIC_KEYS.match(match.group(1) + ":"))
            hostile = draw(st.sampled_from(NUMBERS if numeric and draw(st.booleans()) else HOSTILE))
            lines[at] = line[: match.start(3)] + hostile + line[match.end(3) :]
        elif kind == "delete":
            del lines[at]
        elif kind == "copy":
            lines.insert(at, line)
        elif kind == "indent":
            shift = draw(st.sampled_from([-2, 2, 4]))
            lines[at] = (
                line[-shift:] if shift < 0 and line.startswith(" " * -shift) else " " * max(shift, 0) + line
            )
        elif kind == "alias" and ":" in line and not line.rstrip().endswith(":"):
            key, _, value = line.partition(":")
            lines[at] = f"{key}: &fuzz {value.strip() or 'x'}"
            lines.append(lines[at].replace("&fuzz", "*fuzz").split(":", 1)[0] + ": *fuzz")
        elif kind == "cut":
            lines = lines[:at]
        elif kind == "swap" and len(lines) > 1:
            other = draw(st.integers(0, len(lines) - 1))
            lines[at], lines[other] = lines[other], lines[at]
    return path.name, "\n".join(lines)


def _paths(data: object, path: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """The paths of the values of ``data`` whose key names a quantity or a count."""
    found: list[tuple[object, ...]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(key, str) and (key in _QUANTITY_KEYS or NUMERIC_KEYS.match(key + ":")):
                found.append((*path, key))
            found.extend(_paths(value, (*path, key)))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found.extend(_paths(value, (*path, index)))
    return found


_PARSED = {
    path: [doc.data for doc in parse(path.name, path.read_text(encoding="utf-8")).documents] for path in SEEDS
}
_TARGETS = [
    (path, index) for path, docs in _PARSED.items() for index, data in enumerate(docs) if _paths(data)
]


@st.composite
def _targeted(draw: st.DrawFn) -> tuple[str, str]:
    """One object of an example with one quantity or count replaced by a hostile number (the
    values that crashed kaffinity: ``memory: 1Ei``, ``.nan``, ``replicas: 2147483647``), as
    JSON (a YAML document too)."""
    path, index = draw(st.sampled_from(_TARGETS))
    target = draw(st.sampled_from(_paths(_PARSED[path][index])))
    return path.name, _with_number(_PARSED[path][index], target, draw(st.sampled_from(NUMBERS)))


def _with_number(data: object, target: tuple[object, ...], value: str) -> str:
    """A copy of ``data`` with the hostile number ``value`` at ``target``, as JSON."""
    copy: Any = json.loads(json.dumps(data))
    parent = copy
    for step in target[:-1]:
        parent = parent[step]
    parent[target[-1]] = {".nan": float("nan"), ".inf": float("inf")}.get(value, value.strip('"'))
    return json.dumps(copy, allow_nan=True)


def _assert_in_bounds(result: LintResult, files: list[SourceFile]) -> None:
    assert not result.internal_errors, result.internal_errors
    lines = {file.name: file.text.count("\n") + 1 for file in files}
    for finding in result.findings:
        if finding.line is not None and finding.file in lines:
            assert 1 <= finding.line <= lines[finding.file], finding
    sources = {file.name: file.text for file in files}
    for fmt in ("text", "json", "sarif", "github", "markdown"):
        out = render(result, fmt, sources=sources)
        if fmt in ("json", "sarif"):
            json.loads(out)


def _keys(result: LintResult) -> list[tuple[object, ...]]:
    return [(f.file, f.line, f.column, f.rule, f.message) for f in result.findings]


def _fix_inserts_only(files: list[SourceFile]) -> None:
    from kaffinity.expand.fixes import fix_files

    planning = Settings(plan_fixes=True)
    fixed, _ = fix_files(files, lint(files, planning).findings)
    for item in fixed:
        original, new = item.text, item.fixed
        # Only inserts: the original is a subsequence of the fixed text; where the original
        # has a `matchLabelKeys:` whose empty value (null, [], ~) the fix fills in, every other
        # line is still there, in order.
        if "matchLabelKeys" not in original:
            rest = iter(new)
            assert all(char in rest for char in original), item.file
        else:
            kept = iter(new.split("\n"))
            for line in original.split("\n"):
                if "matchLabelKeys" not in line:
                    assert any(line == candidate for candidate in kept), (item.file, line)
        again = [parse(item.file, new)]
        refixed, _ = fix_files(again, lint(again, planning).findings)
        assert not refixed, f"{item.file}: fixing the fixed text changed it again"


def _declared(text: str | None) -> Cluster | None:
    if text is None:
        return None
    return cluster_from([parse("cluster.yaml", text)], "default")


def _one(mutant: tuple[str, str], cluster_text: str | None) -> None:
    name, text = mutant
    started = time.monotonic()
    files = [parse(name, text)]
    cluster = _declared(cluster_text)
    result = lint(files, Settings(), cluster=cluster)
    _assert_in_bounds(result, files)
    assert _keys(lint(files, Settings(), cluster=_declared(cluster_text))) == _keys(result)
    if cluster is None:
        _fix_inserts_only(files)
    assert time.monotonic() - started < PER_MUTANT_SECONDS, f"{name}: took too long"


def _clusters() -> st.SearchStrategy[str | None]:
    plain = st.sampled_from(CLUSTERS).map(lambda path: path.read_text(encoding="utf-8"))
    mutated = _mutant(CLUSTERS).map(lambda pair: pair[1])
    return st.one_of(st.none(), plain, mutated)


@pytest.mark.skipif(LONG_MINUTES > 0, reason="the long mode runs instead (KAFFINITY_FUZZ_MINUTES)")
@settings(
    max_examples=int(os.environ.get("KAFFINITY_FUZZ_EXAMPLES", EXAMPLES_DEFAULT)),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.one_of(_mutant(SEEDS), _targeted()), _clusters())
def test_mutated_examples_never_break_kaffinity(mutant: tuple[str, str], cluster: str | None) -> None:
    _one(mutant, cluster)


@pytest.mark.skipif(LONG_MINUTES <= 0, reason="long mode: set KAFFINITY_FUZZ_MINUTES (release checks)")
def test_fuzz_for_minutes(tmp_path: Path) -> None:
    """Random mutants until the time is up. A failing mutant is kept (in
    ``KAFFINITY_FUZZ_FAILURES``, a folder, or the test's temporary one) and the run goes on, so
    one hour shows every failure it can find; the test fails at the end if there was one.

    Time and memory are oracles too: a mutant that runs past ``PER_MUTANT_SECONDS`` is stopped
    (an alarm) and one that needs more than ``KAFFINITY_FUZZ_MEMORY`` bytes of address space
    (default 6 GiB) fails with MemoryError; both are kept as failures. The mutant being run is
    written to ``current/`` first, so that even a run killed from outside shows its culprit."""
    import resource
    import signal

    deadline = time.monotonic() + LONG_MINUTES * 60
    kept = Path(os.environ.get("KAFFINITY_FUZZ_FAILURES") or tmp_path)
    kept.mkdir(parents=True, exist_ok=True)
    current = kept / "current"
    current.mkdir(exist_ok=True)
    counts = {"mutants": 0, "with a cluster": 0, "failures": 0}
    memory = int(os.environ.get("KAFFINITY_FUZZ_MEMORY") or 6 * 2**30)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (memory, hard))

    def too_long(signum: int, frame: object) -> None:
        raise TimeoutError(f"a mutant ran past {PER_MUTANT_SECONDS:g} s")

    previous = signal.signal(signal.SIGALRM, too_long)

    # Batches of random mutants (hypothesis stops only after its max_examples): a new random
    # batch while there is time.
    @settings(
        max_examples=200,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.one_of(_mutant(SEEDS), _targeted()), _clusters())
    def run(mutant: tuple[str, str], cluster: str | None) -> None:
        if time.monotonic() > deadline:
            return
        counts["mutants"] += 1
        counts["with a cluster"] += cluster is not None
        (current / "mutant.yaml").write_text(mutant[1], encoding="utf-8")
        (current / "cluster.yaml").write_text(cluster or "", encoding="utf-8")
        signal.alarm(int(PER_MUTANT_SECONDS) + 1)
        try:
            _one(mutant, cluster)
        except Exception as error:  # noqa: BLE001 - every failure is kept, the run goes on
            counts["failures"] += 1
            case = kept / f"failure-{counts['failures']:04d}"
            case.mkdir()
            (case / mutant[0]).write_text(mutant[1], encoding="utf-8")
            if cluster is not None:
                (case / "cluster.yaml").write_text(cluster, encoding="utf-8")
            (case / "error.txt").write_text(f"{type(error).__name__}: {error}"[:4000], encoding="utf-8")
        finally:
            signal.alarm(0)

    try:
        while time.monotonic() < deadline:
            run()
    finally:
        signal.signal(signal.SIGALRM, previous)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    print(f"fuzz: {LONG_MINUTES:g} minutes: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    assert not counts["failures"], f"{counts['failures']} failing mutants kept in {kept}"


def _fields() -> list[tuple[Path, int, tuple[object, ...]]]:
    """The first three places of each quantity or count key among the examples' objects."""
    chosen: list[tuple[Path, int, tuple[object, ...]]] = []
    per_key: dict[object, int] = {}
    for path, index in _TARGETS:
        for target in _paths(_PARSED[path][index]):
            if per_key.get(target[-1], 0) < 3:
                per_key[target[-1]] = per_key.get(target[-1], 0) + 1
                chosen.append((path, index, target))
    return chosen


@pytest.mark.parametrize("value", NUMBERS)
def test_hostile_numbers_in_every_numeric_field(value: str) -> None:
    """Every kind of quantity or count field of the examples (three places each) with each
    hostile number, linted alone and on a cluster: no rule fails (once failing: ``memory: 1Ei``,
    ``.nan``, ``1.0e+400``, ``replicas: 2147483647``)."""
    cluster = (EXAMPLES / "clusters" / "topology.yaml").read_text(encoding="utf-8")
    for path, index, target in _fields():
        name = f"{path.parent.name}-{path.name}"
        files = [parse(name, _with_number(_PARSED[path][index], target, value))]
        for declared in (None, _declared(cluster)):
            result = lint(files, Settings(), cluster=declared)
            assert not result.internal_errors, (name, target, result.internal_errors[:1])


# --- what the fuzzer found -------------------------------------------------------------------

AFFINITY_TO_UNLABELLED = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: pg}
spec:
  replicas: 1
  selector: {matchLabels: {app: pg}}
  template:
    metadata: {labels: {app: pg}}
    spec: {containers: [{name: pg, image: postgres}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: api, image: api}]
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: pg}}
              topologyKey: kubernetes.io/hostname
"""
NODE_WITHOUT_LABELS = """\
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Node
    metadata:
      name: node-a
      labels: {kubernetes.io/hostname: node-a, topology.kubernetes.io/zone: zone-a}
    status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
  - apiVersion: v1
    kind: Node
    metadata: {name: node-b}
    status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
  - apiVersion: v1
    kind: Node
    metadata:
      name: node-c
      labels: {kubernetes.io/hostname: node-c, topology.kubernetes.io/zone: zone-c}
    status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
  - apiVersion: v1
    kind: Pod
    metadata: {name: queue-legacy-0, namespace: other, labels: {app: queue}}
    spec: {nodeName: node-a, containers: [{name: queue, image: rabbitmq}]}
    status: {phase: Running}
"""


def test_required_affinity_to_pods_on_a_node_without_the_key() -> None:
    """Found by the long mode: the pods a required affinity needs run only on a node without its
    topology key (a cluster file's node without labels); `unschedulable` failed with an
    IndexError describing the empty set of domains."""
    files = [parse("app.yaml", AFFINITY_TO_UNLABELLED)]
    result = lint(files, Settings(), cluster=_declared(NODE_WITHOUT_LABELS))
    assert keys(findings(result, "unschedulable")) == [("unschedulable", 24, 15)]


BINARY_AND_TIMESTAMP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: cache}
spec:
  replicas: 1
  selector: {matchLabels: {app: cache}}
  template:
    metadata:
      labels: {app: cache}
      annotations: {built: !!timestamp 2001-12-14}
    spec:
      containers: [{name: cache, image: "redis:7"}]
      volumes:
        - name: scratch
          emptyDir:
            sizeLimit: !!binary aGVsbG8=
"""


def test_binary_and_timestamp_tags_are_strings() -> None:
    """Found by the long mode (an hour): `!!binary` made a bytes value and `!!timestamp`
    a date, neither of which JSON has; every rule that serialises the object failed. go-yaml
    decodes `!!binary` into a string, and the API server gets the JSON string; a timestamp's
    text stays a string. `sizeLimit: hello` is then not a quantity, as the API server says."""
    files = [parse("cache.yaml", BINARY_AND_TIMESTAMP)]
    result = lint(files, Settings())
    assert not result.internal_errors
    template = files[0].documents[0].data["spec"]["template"]
    assert template["metadata"]["annotations"]["built"] == "2001-12-14"
    assert template["spec"]["volumes"][0]["emptyDir"]["sizeLimit"] == "hello"
    assert keys(findings(result, "api-validation")) == [("api-validation", 16, 13)]
