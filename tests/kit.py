"""The test kit: the one place for the helpers every test file needs (tests/README.md shows how).

- running the command: :func:`run` (in process: :func:`kaffinity.cli.main` with its own
  arguments, streams, environment and working directory, all restored afterwards),
  :func:`run_bytes` (the same, the output as bytes) and :func:`run_process` (``python -m
  kaffinity`` in a new process, for the tests whose subject is the process) fail the test on an
  internal error (exit code 3, the line ``kaffinity: internal error``), whatever the test
  expects;
- linting through the command: :func:`lint_json` (``lint --format json --no-config ARGS``, in a
  folder, with an environment: a :class:`LintRun`, its code, report, stdout and stderr) and
  :func:`run_json` (its code and report);
- linting in process: :func:`lint_text`, :func:`lint_paths`;
- what was found: :func:`keys`, :func:`findings`, :func:`assert_found` and :func:`check`
  compare (rule, line, column) and the JSON report's fields, not the wording of messages;
- where: :func:`line_of` and :func:`position` find a line (and column) in a manifest;
- what is linted: :func:`workload` builds a workload object (with :func:`term`, :func:`spread`,
  :func:`toleration`, :func:`requests`), :func:`node`, :func:`zones` and :func:`cluster` a
  cluster file, :func:`budget` a PodDisruptionBudget; :func:`manifest` writes objects as YAML,
  :func:`workloads` reads the workloads of a manifest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import io
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

from kaffinity.config import Settings
from kaffinity.engine import INTERNAL_ERROR, LintResult, lint
from kaffinity.findings import Finding
from kaffinity.k8s.model import Workload, WorkloadKind, build_inventory
from kaffinity.load.files import load
from kaffinity.load.parse import parse
from kaffinity.report.json import finding_dict
from kaffinity.rules import RULES
from kaffinity.rules.base import Rule
from kaffinity.simulate.cluster import cluster_from

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
#: Policies and their fixtures (``kaffinity policy test``): their markers name policies, not rules.
POLICY_EXAMPLES = EXAMPLES / "policies"
SHARED = REPO.parent / "shared"
_EXPECT = re.compile(r"#\s*expect:\s*([a-z0-9-]+(?:\s*,\s*[a-z0-9-]+)*)")
_SETTINGS = re.compile(r"^#\s*settings:\s*(\{.*\})\s*$", re.MULTILINE)

#: Rule categories that read several workloads (or a cluster) together: linting the examples
#: folder at once would let the examples see each other, so they are checked example by example.
CROSS_WORKLOAD = frozenset(("graph", "topology", "rollout"))

Problem = tuple[str, int | None, int | None]


# -- running the command -------------------------------------------------------------------------


def no_internal_error(code: int, stderr: str | bytes) -> None:
    """Fail unless the run ended as kaffinity means runs to end: an internal error (a crashed
    rule, an unexpected exception) exits 3 with one ``internal error`` line, and no test may
    pass through one, even a test that expects a failure (exit 2 is bad input, not a bug)."""
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
    assert code != INTERNAL_ERROR, f"internal error (exit code 3):\n{text}"
    assert "internal error" not in text, text
    assert "Traceback" not in text, text


Args = str | os.PathLike[str]
#: Variables for the command: set over the test's environment, left out where None.
Env = Mapping[str, str | None] | None


def run(
    *args: Args,
    stdin: str | bytes | None = None,
    cwd: Path | None = None,
    env: Env = None,
) -> subprocess.CompletedProcess[str]:
    """The command line in process (:func:`kaffinity.cli.main`, as ``python -m kaffinity ARGS``
    runs it): its exit code, stdout and stderr; an internal error fails the test. The process's
    state is the test's again afterwards (:func:`_in_process`)."""
    completed = run_raw(*args, stdin=stdin, cwd=cwd, env=env)
    no_internal_error(completed.returncode, completed.stderr)
    return completed


def run_raw(
    *args: Args,
    stdin: str | bytes | None = None,
    cwd: Path | None = None,
    env: Env = None,
) -> subprocess.CompletedProcess[str]:
    """:func:`run` without the guard: only for the tests of the internal error itself."""
    completed = _run_bytes(args, stdin, cwd, env)
    return subprocess.CompletedProcess(
        completed.args,
        completed.returncode,
        completed.stdout.decode("utf-8", "replace"),
        completed.stderr.decode("utf-8", "replace"),
    )


def run_bytes(
    *args: Args,
    stdin: str | bytes | None = None,
    cwd: Path | None = None,
    env: Env = None,
) -> subprocess.CompletedProcess[bytes]:
    """:func:`run` with stdout and stderr as the bytes written: for the tests of what reaches the
    terminal (escapes, file names that are no UTF-8)."""
    completed = _run_bytes(args, stdin, cwd, env)
    no_internal_error(completed.returncode, completed.stderr)
    return completed


def _run_bytes(
    args: Sequence[Args], stdin: str | bytes | None, cwd: Path | None, env: Env
) -> subprocess.CompletedProcess[bytes]:
    from kaffinity.cli import main

    argv = [os.fspath(arg) for arg in args]
    with _in_process(argv, stdin, cwd, _environment(env)) as (out, err):
        try:
            main()
            code = 0
        except SystemExit as exit:  # main() always ends with one
            code = _exit_code(exit.code, err)
    return subprocess.CompletedProcess(["kaffinity", *argv], code, out.getvalue(), err.getvalue())


def run_process(
    *args: Args,
    stdin: str | bytes | None = None,
    cwd: Path | None = None,
    env: Env = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m kaffinity ARGS`` in a new process, as a user runs it; an internal error fails
    the test. Only for the tests whose subject is the process: start-up and imports, signals,
    the entry point, the standard streams' encoding, environment variables read at import."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    completed = subprocess.run(
        [sys.executable, "-m", "kaffinity", *map(os.fspath, args)],
        input=data,
        capture_output=True,
        cwd=cwd,
        env=_environment(env),
        timeout=120,
        check=False,
    )
    no_internal_error(completed.returncode, completed.stderr)
    return subprocess.CompletedProcess(
        completed.args,
        completed.returncode,
        completed.stdout.decode("utf-8", "replace"),
        completed.stderr.decode("utf-8", "replace"),
    )


def _environment(env: Env) -> dict[str, str]:
    """The test's environment without ``GITHUB_ACTIONS`` (the suite may itself run on GitHub
    Actions; ``--format auto`` must not see that by accident), with ``NO_COLOR=1``, and ``env``
    (a variable given as None is left out)."""
    inherited = {key: value for key, value in os.environ.items() if key != "GITHUB_ACTIONS"}
    merged = {**inherited, "NO_COLOR": "1", **(env or {})}
    return {key: value for key, value in merged.items() if value is not None}


def _exit_code(code: object, err: io.BytesIO) -> int:
    """The exit status ``sys.exit(code)`` gives a process: None is 0, a text is printed (1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.flush()
    err.write(f"{code}\n".encode())
    return 1


class _Kept(io.BytesIO):
    """A standard stream's bytes, still readable after the command closed its stream."""

    def close(self) -> None:
        pass


@contextlib.contextmanager
def _in_process(
    argv: list[str], stdin: str | bytes | None, cwd: Path | None, environment: dict[str, str]
) -> Iterator[tuple[_Kept, _Kept]]:
    """Run the command as a process of its own would, and leave no trace: the arguments, the
    standard streams (UTF-8 as on a pipe; stdin empty unless given), the environment, the
    working directory, the signal handlers, the recursion limit, the collector (the command
    freezes what it loaded, ``gc.freeze``) and the caches that read the environment or the
    working directory are the test's again afterwards."""
    from kaffinity.policy.cel.limits import time_limit
    from kaffinity.report.fingerprint import _top

    data = stdin.encode() if isinstance(stdin, str) else (stdin or b"")
    out, err = _Kept(), _Kept()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_argv, saved_environ, saved_cwd = sys.argv, dict(os.environ), os.getcwd()
    saved_signals = {number: signal.getsignal(number) for number in _SIGNALS}
    saved_limit, collecting = sys.getrecursionlimit(), gc.isenabled()
    caches = (time_limit, _top)  # KAFFINITY_CEL_TIME_LIMIT; the working directory's work tree
    sys.argv = ["kaffinity", *argv]
    sys.stdin = io.TextIOWrapper(_Kept(data), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", newline="\n")
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", newline="\n")
    os.environ.clear()
    os.environ.update(environment)
    for cached in caches:
        cached.cache_clear()
    try:
        if cwd is not None:
            os.chdir(cwd)
        yield out, err
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(ValueError):  # closed by the command
                stream.flush()
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv = saved_argv
        os.environ.clear()
        os.environ.update(saved_environ)
        os.chdir(saved_cwd)
        for number, handler in saved_signals.items():
            signal.signal(number, handler)
        sys.setrecursionlimit(saved_limit)
        gc.unfreeze()
        if collecting:
            gc.enable()
        for cached in caches:
            cached.cache_clear()
        _at_exit()


def _at_exit() -> None:
    """What the command's process would end at its exit: the policies' guarded process (one per
    run's context, stopped by ``atexit`` in a process of its own)."""
    guard = sys.modules.get("kaffinity.policy.guard")
    if guard is not None:
        guard._stop_current()


_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE)


@dataclasses.dataclass(frozen=True)
class LintRun:
    """What one ``kaffinity lint --format json`` printed: its exit code, stdout and stderr, and
    :attr:`report`, stdout read as the JSON report."""

    code: int
    stdout: str
    stderr: str

    @property
    def report(self) -> dict[str, Any]:
        """The JSON report; the test fails (showing stderr) when stdout is not one."""
        try:
            report: dict[str, Any] = json.loads(self.stdout)
        except ValueError:
            raise AssertionError(f"no JSON report (exit code {self.code}):\n{self.stderr}") from None
        return report


def lint_json(
    *args: Args,
    stdin: str | bytes | None = None,
    cwd: Path | None = None,
    env: Env = None,
    config: bool = False,
) -> LintRun:
    """``kaffinity lint --format json --no-config ARGS`` (``config=True``: without
    ``--no-config``, the folder's configuration read) in ``cwd``, with ``env``, through
    :func:`run` (an internal error fails the test)."""
    options = ("--format", "json") if config else ("--format", "json", "--no-config")
    completed = run("lint", *options, *args, stdin=stdin, cwd=cwd, env=env)
    return LintRun(completed.returncode, completed.stdout, completed.stderr)


def run_json(*args: Args, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    """``kaffinity lint --format json --no-config ARGS``: the exit code and the report
    (:func:`lint_json`, for the tests that need only these two)."""
    done = lint_json(*args, **kwargs)
    return done.code, done.report


def added_lines(diff: str) -> list[str]:
    """The ``+`` lines of a unified diff (without the ``+++`` header)."""
    return [line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]


# -- linting in process --------------------------------------------------------------------------


def lint_text(
    text: str,
    name: str = "test.yaml",
    rules: Sequence[Rule] = RULES,
    *,
    cluster: str | None = None,
    **settings: Any,
) -> LintResult:
    """Lint one manifest in process, on the cluster ``cluster`` (its text, read as
    ``cluster.yaml``) if given; a rule that crashed fails the test."""
    declared = cluster_from([parse("cluster.yaml", cluster)]) if cluster is not None else None
    result = lint([parse(name, text)], Settings(**settings), rules, cluster=declared)
    assert not result.internal_errors, result.internal_errors
    return result


def policy_rules_of(folder: Path, *documents: str, **settings: Any) -> list[Rule]:
    """The rules of a policy file made of ``documents`` (dedented, joined with ``---``) written
    in ``folder``, for ``Settings(**settings)``; the file must load and compile without errors."""
    from kaffinity.policy.check import policy_rules, reserved_names
    from kaffinity.policy.load import load_policies

    path = folder / "policy.yaml"
    path.write_text("---\n".join(textwrap.dedent(doc) for doc in documents), encoding="utf-8")
    loaded = load_policies([str(path)], reserved_names())
    made, errors = policy_rules(loaded, Settings(**settings))
    assert not loaded.errors and not errors, [*loaded.errors, *errors]
    return made


def lint_paths(*paths: str | Path, rules: Sequence[Rule] = RULES, **settings: Any) -> LintResult:
    """Lint as the CLI does; a ``cluster`` path (relative: to the repository) is loaded too."""
    cluster = None
    if settings.get("cluster"):
        path = Path(settings["cluster"])
        settings["cluster"] = str(path if path.is_absolute() else REPO / path)
        cluster = cluster_from(load([settings["cluster"]]))
    result = lint(load([str(path) for path in paths]), Settings(**settings), rules, cluster=cluster)
    assert not result.internal_errors, result.internal_errors
    return result


# -- what was found ------------------------------------------------------------------------------

Report = LintResult | dict[str, Any] | Sequence[Finding] | Sequence[dict[str, Any]]


def _all(result: Report) -> list[Any]:
    if isinstance(result, LintResult):
        assert not result.internal_errors, result.internal_errors  # a crashed rule finds nothing
        return list(result.findings)
    if isinstance(result, dict):
        return list(result["findings"])
    return list(result)


def _as_dict(finding: Finding | dict[str, Any]) -> dict[str, Any]:
    return finding if isinstance(finding, dict) else finding_dict(finding)


def keys(result: Report) -> list[Problem]:
    """Findings compared by (rule, line, column), never by message text, in report order."""
    return [(f["rule"], f["line"], f["column"]) for f in map(_as_dict, _all(result))]


def lines(result: Report) -> list[tuple[str, int | None]]:
    """Findings by (rule, line), in report order: for the tests where the column says nothing."""
    return [(rule, line) for rule, line, _ in keys(result)]


@overload
def findings(result: LintResult | Sequence[Finding], rule: str | None = None) -> list[Finding]: ...
@overload
def findings(
    result: dict[str, Any] | Sequence[dict[str, Any]], rule: str | None = None
) -> list[dict[str, Any]]: ...
def findings(result: Report, rule: str | None = None) -> list[Any]:
    """The findings of one rule (all with ``rule=None``), in report order: ``Finding`` objects
    of an in-process result, dicts of a JSON report (or of its ``findings`` list)."""
    return [f for f in _all(result) if rule is None or _as_dict(f)["rule"] == rule]


def only(result: Report, rule: str | None = None) -> Any:
    """The one finding (of ``rule``): the test fails when there are none or several."""
    found = [f for f in _all(result) if rule is None or _as_dict(f)["rule"] == rule]
    assert len(found) == 1, keys(result)
    return found[0]


def assert_found(
    result: Report, rule: str, line: int | None, column: int | None, **fields: Any
) -> dict[str, Any]:
    """The finding of ``rule`` at (line, column), with these JSON report fields (``path``,
    ``severity``, ``fix``, ``object``, ``related`` ...); its report dict is returned, so the test
    can check the rest. Related locations may be given as (line, column) pairs."""
    wanted = (rule, line, column)
    here = [f for f in map(_as_dict, _all(result)) if (f["rule"], f["line"], f["column"]) == wanted]
    assert here, f"no {rule} at {line}:{column}; found {keys(result)}"
    assert len(here) == 1, f"{len(here)} findings of {rule} at {line}:{column}"
    (found,) = here
    for name, value in fields.items():
        actual = found[name]
        if name == "related" and all(isinstance(item, tuple) for item in value):
            actual = [(item["line"], item["column"]) for item in actual]
        assert actual == value, f"{rule} at {line}:{column}: {name} is {actual!r}, not {value!r}"
    return found


def check(text: str, *problems: Problem, rules: Sequence[Rule] = RULES, **settings: Any) -> LintResult:
    """Lint ``text`` (dedented) and compare its findings with ``problems``, each (rule, line,
    column), in report order: every problem found, nothing else; with no problem, the manifest
    must be clean. As yamllint's ``RuleTestCase.check(conf, text, problem=(line, col))``; the
    result is returned for the test to check the findings' fields."""
    result = lint_text(textwrap.dedent(text), rules=rules, **settings)
    assert keys(result) == list(problems), keys(result)
    return result


# -- where ---------------------------------------------------------------------------------------


def line_of(
    text: str, needle: str, occurrence: int | None = None, after: str = "", *, ending: bool = False
) -> int:
    """The 1-based line of ``text`` that contains ``needle`` (with ``ending``: that ends with it,
    as a ``# tag`` comment): the only one (``occurrence=None``; the test fails when there are
    several), or the n-th; counted from the first line that contains ``after``, if given."""
    lines = text.splitlines()
    start = next(number for number, line in enumerate(lines) if after in line) if after else 0
    found = [
        number + 1
        for number in range(start, len(lines))
        if (lines[number].endswith(needle) if ending else needle in lines[number])
    ]
    if occurrence is None:
        assert len(found) == 1, (needle, found)
        return found[0]
    assert len(found) >= occurrence, (needle, occurrence, found)
    return found[occurrence - 1]


def position(text: str, needle: str, occurrence: int | None = None, after: str = "") -> tuple[int, int]:
    """(line, column), 1-based, of ``needle`` in ``text`` (as :func:`line_of` finds it): the
    column is where it starts, as a finding's column is where its field starts."""
    line = line_of(text, needle, occurrence, after)
    return line, text.splitlines()[line - 1].index(needle) + 1


# -- what is linted ------------------------------------------------------------------------------


def workload(
    name: str,
    namespace: str | None = "default",
    labels: dict[str, str] | None = None,
    *,
    kind: str = "Deployment",
    replicas: int | None = 1,
    affinity: Sequence[dict[str, Any]] = (),
    anti: Sequence[dict[str, Any]] = (),
    preferred: Sequence[dict[str, Any]] = (),
    spread: Sequence[dict[str, Any]] | None = None,
    pod: dict[str, Any] | None = None,
    replicas_first: bool = False,
    preferred_affinity: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """A workload object (``kind``: Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or a bare
    Pod) with pod labels ``labels`` (default ``app: name``): ``affinity`` and ``anti`` are
    required pod (anti-)affinity terms, ``preferred`` preferred anti-affinity terms (weight 10,
    as ``preferred_affinity`` the preferred affinity terms),
    ``spread`` the topology spread constraints, ``pod`` more pod spec fields; no namespace with
    ``namespace=None``. A DaemonSet has no replicas; a Job runs ``replicas`` pods at once. Key
    order is fixed (``replicas_first`` puts ``replicas`` first in the spec), as line and column
    numbers depend on it."""
    labels = labels if labels is not None else {"app": name}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}], **(pod or {})}
    terms: dict[str, Any] = {}
    if affinity or preferred_affinity:
        terms["podAffinity"] = {}
        if affinity:
            terms["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = list(affinity)
        if preferred_affinity:
            terms["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": 10, "podAffinityTerm": term} for term in preferred_affinity
            ]
    if anti or preferred:
        terms["podAntiAffinity"] = {}
        if anti:
            terms["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = list(anti)
        if preferred:
            terms["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": 10, "podAffinityTerm": term} for term in preferred
            ]
    if terms:
        spec["affinity"] = terms
    if spread is not None:
        spec["topologySpreadConstraints"] = list(spread)
    metadata: dict[str, Any] = {"name": name} if namespace is None else {"name": name, "namespace": namespace}
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {**metadata, "labels": labels}, "spec": spec}
    template = {"metadata": {"labels": labels}, "spec": spec}
    body: dict[str, Any] = {}
    if kind == "Job":
        spec["restartPolicy"] = "Never"
        body = {"parallelism": replicas, "template": template}
    else:
        with_replicas = replicas is not None and kind != "DaemonSet"
        if with_replicas and replicas_first:
            body["replicas"] = replicas
        body |= {"selector": {"matchLabels": labels}, "template": template}
        if with_replicas and not replicas_first:
            body["replicas"] = replicas
        if kind == "StatefulSet":
            body["serviceName"] = name
    api = "batch/v1" if kind == "Job" else "apps/v1"
    return {"apiVersion": api, "kind": kind, "metadata": metadata, "spec": body}


def requests(cpu: str | None = None, memory: str | None = None) -> dict[str, Any]:
    """Pod spec fields (for ``workload(pod=...)``): one container requesting ``cpu`` and
    ``memory``."""
    wanted = {key: value for key, value in (("cpu", cpu), ("memory", memory)) if value is not None}
    return {"containers": [{"name": "c", "image": "x", "resources": {"requests": wanted}}]}


def toleration(key: str, value: str | None = None, effect: str = "NoSchedule") -> dict[str, Any]:
    """A toleration of the taint ``key`` (``Equal`` to ``value``, or ``Exists`` without one)."""
    if value is None:
        return {"key": key, "operator": "Exists", "effect": effect}
    return {"key": key, "operator": "Equal", "value": value, "effect": effect}


def spread(
    key: str = "topology.kubernetes.io/zone",
    labels: dict[str, str] | None = None,
    *,
    max_skew: int = 1,
    when: str = "DoNotSchedule",
    **more: Any,
) -> dict[str, Any]:
    """A topology spread constraint over ``key`` selecting ``labels`` (``more``: its other
    fields as written, ``minDomains=3``, ``matchLabelKeys=[...]``)."""
    constraint: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    if labels is not None:
        constraint["labelSelector"] = {"matchLabels": labels}
    return constraint | more


def term(labels: dict[str, str], key: str = "kubernetes.io/hostname", **more: Any) -> dict[str, Any]:
    """A pod (anti-)affinity term selecting ``labels`` over ``key`` (``more``: its other fields,
    ``namespaces=[...]``, ``matchLabelKeys=[...]``), for ``workload(affinity=/anti=/preferred=)``."""
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key} | more


def node(
    name: str,
    labels: dict[str, str] | None = None,
    *,
    zone: str | None = None,
    cpu: str = "4",
    memory: str = "16Gi",
    pods: str = "110",
    taints: Sequence[dict[str, str]] = (),
    unschedulable: bool = False,
) -> dict[str, Any]:
    """A Node for a cluster file: labelled with its hostname (and ``zone``, and ``labels``), with
    this allocatable, these taints (``{"key": ..., "value": ..., "effect": ...}``)."""
    labelled = {"kubernetes.io/hostname": name}
    if zone is not None:
        labelled["topology.kubernetes.io/zone"] = zone
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = list(taints)
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labelled | (labels or {})},
        "spec": spec,
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}},
    }


def cluster(*nodes: dict[str, Any], indent: int | None = None) -> str:
    """A cluster file (``--cluster``) of these nodes, ending with a line break (so that more
    documents may follow a ``---``); ``cluster(*zones(...))`` for many."""
    return manifest(nodes, indent) + "\n"


def zones(count: int, per_zone: int = 1, **fields: Any) -> list[dict[str, Any]]:
    """``per_zone`` nodes in each of ``count`` zones (``z0``, ``z1``...; nodes ``z0-n0``...), each
    a :func:`node` with ``fields``."""
    return [node(f"z{z}-n{n}", zone=f"z{z}", **fields) for z in range(count) for n in range(per_zone)]


def budget(
    name: str,
    namespace: str | None = "default",
    labels: dict[str, str] | None = None,
    *,
    min_available: int | str | None = None,
    max_unavailable: int | str | None = None,
) -> dict[str, Any]:
    """A PodDisruptionBudget selecting ``labels`` (default ``app: name``)."""
    spec: dict[str, Any] = {}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    spec["selector"] = {"matchLabels": labels if labels is not None else {"app": name}}
    metadata: dict[str, Any] = {"name": name} if namespace is None else {"name": name, "namespace": namespace}
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": metadata, "spec": spec}


def manifest(objects: Iterable[dict[str, Any]], indent: int | None = None) -> str:
    """Objects as one YAML stream (JSON is YAML): one line per object, or with ``indent`` one key
    per line, so that lines can be asserted."""
    return "\n---\n".join(json.dumps(obj, indent=indent) for obj in objects)


def workloads(text: str, kinds: tuple[WorkloadKind, ...] = (), name: str = "w.yaml") -> list[Workload]:
    """The workloads of a manifest, as the rules see them."""
    return list(build_inventory(parse(name, text).documents, workload_kinds=kinds).workloads)


def workload_of(text: str, name: str = "w.yaml") -> Workload:
    """The only workload of a manifest (the test fails if there are more or none)."""
    (found,) = workloads(text, name=name)
    return found


# -- examples ------------------------------------------------------------------------------------


def expected(path: Path) -> list[tuple[str, int]]:
    """``# expect: rule`` markers in an example: the rule must report on that line."""
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = _EXPECT.search(line)
        if match:
            found += [(rule.strip(), number) for rule in match.group(1).split(",")]
    return sorted(found)


def example_settings(path: Path) -> dict[str, Any]:
    """``# settings: {"kube_version": "1.28"}`` in an example: the Settings it is linted with."""
    match = _SETTINGS.search(path.read_text(encoding="utf-8"))
    settings: dict[str, Any] = json.loads(match.group(1)) if match else {}
    return settings


#: For each finding an example must give: the text it starts at (a needle, and which occurrence
#: of it, None for the only one), its severity and its data path.
ExampleFindings = Sequence[tuple[str, int | None, str, str]]


def assert_example(path: Path, rule: str, found: ExampleFindings, *, others: bool = False) -> None:
    """``examples/<rule>/<file>`` linted with its ``# settings:`` finds exactly ``found``, all of
    ``rule``, each at its (line, column) with its severity and data path; ``[]`` for a passing
    example (the fixed variant), where nothing at all may be found. ``others``: the example also
    shows other rules (a cluster's other findings), which are left out of the comparison."""
    text = path.read_text(encoding="utf-8")
    result = lint_paths(path, **example_settings(path))
    at = [position(text, needle, occurrence) for needle, occurrence, _, _ in found]
    shown = [key for key in keys(result) if key[0] == rule or not others]
    assert shown == [(rule, *where) for where in at]
    for where, (_, _, severity, data_path) in zip(at, found, strict=True):
        assert_found(result, rule, *where, severity=severity, path=data_path)
