"""The hostile-checkout fuzzer: every command family, run on a repository an attacker wrote.

Issue 31's security review fuzzed each command family with hostile repositories. This file keeps
those families as tests. Each run builds, in a temporary folder, a small git repository from the
examples with a few hostile mutations: of its manifests, its ``.kaffinity.yaml``, its policies,
and of its layout (symlinks to a folder outside it, options as file names). Beside it stands an
``outside/`` folder with a secret.

Then one command of the family runs in process, in the repository, with the configuration the
repository holds. The oracles:

- the exit code is 0, 1 or 2: never 3 (an internal error), never a traceback;
- nothing outside the repository is changed or deleted: ``outside/`` and the fake home are
  compared before and after;
- no file outside the repository is printed: the secret's marker never appears in the output;
- the text formats never carry raw terminal controls, bidi controls or line separators;
- each command finishes within :data:`PER_RUN_SECONDS`.

CI runs a bounded, derandomized number of examples per family (``KAFFINITY_FUZZ_EXAMPLES``,
default :data:`EXAMPLES_DEFAULT`). ``KAFFINITY_FUZZ_MINUTES=60`` is the long mode: random
repositories for that long across the families, each failure kept (``KAFFINITY_FUZZ_FAILURES``)
and the counts printed; see docs/security.md.
"""

from __future__ import annotations

import gc
import hashlib
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .kit import EXAMPLES, POLICY_EXAMPLES, no_internal_error, run_raw

EXAMPLES_DEFAULT = 12
LONG_MINUTES = float(os.environ.get("KAFFINITY_FUZZ_MINUTES", "0") or 0)
PER_RUN_SECONDS = 60.0
MARKER = "KAFFINITY-FUZZ-SECRET-7f3a"

MANIFESTS = sorted(
    path
    for path in EXAMPLES.rglob("*.yaml")
    if path.is_file() and "clusters" not in path.parts and "policies" not in path.parts
)
CLUSTERS = sorted((EXAMPLES / "clusters").glob("*.yaml"))
#: The policy files (fixtures aside): ValidatingAdmissionPolicies and kaffinity Policies.
POLICIES = [POLICY_EXAMPLES / name for name in ("admission.yaml", "facts.yaml", "scheduling.yaml")]

#: Values the review found trouble with, and more of their kind: escapes, paths out of the
#: repository, URLs, templates, huge numbers.
HOSTILE = [
    '"\\e[2J\\e]8;;http://evil.example\\e\\\\x"',
    '"\\u202eevil\\u2028forged: line\\x85"',
    '"a\\nfile.yaml:1:1: error [x] forged"',
    '"<img src=x onerror=alert(1)> @org/team #123 https://evil.example"',
    "../outside/secret.yaml",
    "../../outside",
    "@OUTSIDE@/secret.yaml",
    "/proc/self/environ",
    "http://127.0.0.1:9/x",
    "git@github.com:org/repo.git",
    '{{ .Files.Get "secret" }}',
    "99999999999999999999",
    "1Ei",
    ".nan",
    "-1",
    "null",
    "[]",
    "{}",
    "yes",
    "!!python/object/apply:os.system ['touch pwned']",
    "&a [*a]",
]
#: A config's keys and hostile values: paths leaving the repository, limits raised, rendering on.
CONFIG_LINES = [
    "cache-dir: ../outside",
    "cache-dir: ../..",
    "cache-dir: @OUTSIDE@",
    "render: true",
    "helm-values: {charts/web: [../outside/secret.yaml], ../outside: [/etc/passwd]}",
    "policies: [../outside]",
    "cluster: ../outside/secret.yaml",
    "context: [../outside]",
    "limits: {file-size: 10Gi, alias-nodes: 100000000, pods: 100000000, nodes: 100000000}",
    "limits: {file-size: 64, depth: 10000}",
    "policies: [policies]",
    "fail-on: none",
    "ignore: [all]",
    "min-severity: error",
    "kube-version: '1.99'",
    "units: one",
]
#: The text formats, where a raw control is a forged line or a hidden one.
TEXT_FORMATS = ("text", "concise", "github", "markdown")
_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _mutate(draw: st.DrawFn, text: str) -> str:
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 3))):
        if not lines:
            break
        at = draw(st.integers(0, len(lines) - 1))
        line = lines[at]
        kind = draw(st.sampled_from(["value", "value", "delete", "copy", "indent"]))
        if kind == "value" and ":" in line and not line.lstrip().startswith("#"):
            key = line.split(":", 1)[0]
            lines[at] = f"{key}: {draw(st.sampled_from(HOSTILE))}"
        elif kind == "delete":
            del lines[at]
        elif kind == "copy":
            lines.insert(at, line)
        elif kind == "indent":
            lines[at] = "  " + line
    return "\n".join(lines)


@st.composite
def repositories(draw: st.DrawFn) -> dict[str, str | None]:
    """A repository as ``{path: text}``; ``None`` marks a symlink to ``../outside``."""
    files: dict[str, str | None] = {}
    for index, seed in enumerate(draw(st.lists(st.sampled_from(MANIFESTS), min_size=1, max_size=3))):
        text = seed.read_text(encoding="utf-8")
        mutated = _mutate(draw, text) if draw(st.booleans()) else text
        files[f"manifests/{index}-{seed.parent.name}.yaml"] = mutated
    policy = draw(st.sampled_from(POLICIES)).read_text(encoding="utf-8")
    files["policies/policy.yaml"] = _mutate(draw, policy) if draw(st.booleans()) else policy
    cluster = draw(st.sampled_from(CLUSTERS)).read_text(encoding="utf-8")
    files["cluster.yaml"] = _mutate(draw, cluster) if draw(st.booleans()) else cluster
    # Half the repositories keep a config kaffinity accepts, so that the commands run to the end.
    hostile_config = draw(st.booleans())
    config = draw(st.lists(st.sampled_from(CONFIG_LINES), max_size=3, unique=True)) if hostile_config else []
    files[".kaffinity.yaml"] = "\n".join(config) + "\n"
    for hostile in draw(st.lists(st.sampled_from(["link", "options", "cache"]), max_size=2, unique=True)):
        if hostile == "link":  # a committed symlink out of the repository
            files["manifests/outside"] = None
        elif hostile == "options":  # a committed file named like an option
            files["--config=manifests/quiet.yaml"] = "ignore: [all]\n"
        else:  # a committed cache folder that is a symlink out of the repository
            files[".kaffinity_cache"] = None
    return files


def _snapshot(folder: Path) -> dict[str, str]:
    seen: dict[str, str] = {}
    for root, dirs, names in os.walk(folder):
        for name in sorted(dirs + names):
            path = Path(root, name)
            key = str(path.relative_to(folder))
            if path.is_symlink():
                seen[key] = "-> " + os.readlink(path)
            elif path.is_file():
                seen[key] = hashlib.blake2b(path.read_bytes()).hexdigest()
            else:
                seen[key] = "dir"
    return seen


@contextmanager
def _sandbox(base: Path, files: dict[str, str | None]) -> Iterator[Path]:
    """The repository ``files`` in ``base/in/repo``, ``base/in/outside`` beside it, a fake home; the
    working directory and the environment are restored afterwards."""
    if base.exists():
        shutil.rmtree(base)
    # ../.. of the repository stays inside the sandbox too (cache-dir: ../..).
    repo, outside, home = base / "in" / "repo", base / "in" / "outside", base / "home"
    for folder in (repo / ".git", outside / "keep", home):
        folder.mkdir(parents=True)
    (outside / "secret.yaml").write_text(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {MARKER}\ndata:\n  key: {MARKER}\n",
        encoding="utf-8",
    )
    (outside / "keep" / "data").write_text(MARKER, encoding="utf-8")
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            path.symlink_to(os.path.relpath(outside, path.parent))
        else:
            # Absolute paths out of the repository point into the sandbox's own outside/
            # folder: a regression must never reach the machine's real folders.
            path.write_text(text.replace("@OUTSIDE@", str(outside)), encoding="utf-8")
    # The command makes room on the stack for the depth limit (kaffinity.load.parse.make_room);
    # hypothesis wants the recursion limit it started with back.
    saved_cwd, saved_env, saved_limit = os.getcwd(), dict(os.environ), sys.getrecursionlimit()
    os.environ.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), NO_COLOR="1")
    for name in ("GITHUB_ACTIONS", "KAFFINITY_CACHE_DIR", "KAFFINITY_PROGRESS"):
        os.environ.pop(name, None)
    os.chdir(repo)
    try:
        yield repo
    finally:
        os.chdir(saved_cwd)
        sys.setrecursionlimit(saved_limit)
        os.environ.clear()
        os.environ.update(saved_env)


#: Each family: the command lines to run in the repository.
FAMILIES: dict[str, list[list[str]]] = {
    "lint": [["lint", "--format", fmt, "."] for fmt in (*TEXT_FORMATS, "json", "sarif")],
    "lint-changed": [["lint", "--changed", "--format", "text", "manifests"]],
    "place": [["place", "--cluster", "cluster.yaml", "manifests"]],
    "graph": [["graph", "manifests"], ["graph", "--format", "mermaid", "manifests"]],
    "expand": [["expand", "manifests"]],
    "fix": [["fix", "--diff", "manifests"], ["fix", "manifests"]],
    "policy": [
        ["policy", "check", "policies"],
        ["policy", "test", "policies", "manifests"],
        ["lint", "--policy", "policies", "--format", "github", "."],
    ],
}


def _run_family(base: Path, family: str, files: dict[str, str | None]) -> list[int]:
    """Run ``family``'s commands on the repository ``files``; their exit codes."""
    codes: list[int] = []
    with _sandbox(base, files) as repo:
        before_outside = _snapshot(base / "in" / "outside")
        before_home = _snapshot(base / "home")
        for args in FAMILIES[family]:
            started = time.monotonic()
            result = run_raw(*args)
            took = time.monotonic() - started
            gc.collect()  # thousands of runs in one process (the kit unfreezes what each froze)
            output = result.stdout + result.stderr
            where = f"kaffinity {' '.join(args)} in {repo}"
            no_internal_error(result.returncode, output)
            assert result.returncode in (0, 1, 2), (where, result.returncode, output[-2000:])
            codes.append(result.returncode)
            assert MARKER not in output, f"{where}: printed a file from outside the repository"
            fmt = args[args.index("--format") + 1] if "--format" in args else "text"
            if fmt in TEXT_FORMATS and args[0] == "lint":
                raw = _RAW.search(result.stdout.replace("\n", "").replace("\t", ""))
                assert raw is None, f"{where}: raw control {raw.group()!r} in the output"
            assert took < PER_RUN_SECONDS, f"{where}: took {took:.1f} s"
        assert _snapshot(base / "in" / "outside") == before_outside, "a file outside the repository changed"
        assert not (repo / "pwned").exists() and not (base / "in" / "outside" / "pwned").exists()
        changed_home = {
            key: value
            for key, value in _snapshot(base / "home").items()
            if before_home.get(key) != value and not key.startswith(".cache/kaffinity")
        }
        assert not changed_home, f"the home folder changed outside kaffinity's own cache: {changed_home}"
    return codes


_SHORT = settings(
    max_examples=int(os.environ.get("KAFFINITY_FUZZ_EXAMPLES", EXAMPLES_DEFAULT)),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.mark.slow
@pytest.mark.skipif(LONG_MINUTES > 0, reason="the long mode runs instead (KAFFINITY_FUZZ_MINUTES)")
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_hostile_repositories_never_escape(family: str, tmp_path: Path) -> None:
    @_SHORT
    @given(repositories())
    def check(files: dict[str, str | None]) -> None:
        _run_family(tmp_path / "case", family, files)

    check()


@pytest.mark.skipif(LONG_MINUTES <= 0, reason="long mode: set KAFFINITY_FUZZ_MINUTES (release checks)")
def test_fuzz_families_for_minutes(tmp_path: Path) -> None:
    """Random hostile repositories across every family until the time is up; each failure is
    kept (its files and the error) and the run goes on; the counts are printed."""
    deadline = time.monotonic() + LONG_MINUTES * 60
    kept = Path(os.environ.get("KAFFINITY_FUZZ_FAILURES") or tmp_path / "failures")
    kept.mkdir(parents=True, exist_ok=True)
    counts = dict.fromkeys(FAMILIES, 0)
    exits = dict.fromkeys(range(4), 0)
    failures = 0

    @settings(max_examples=50, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(sorted(FAMILIES)), repositories())
    def batch(family: str, files: dict[str, str | None]) -> None:
        nonlocal failures
        if time.monotonic() > deadline:
            return
        counts[family] += 1
        try:
            for code in _run_family(tmp_path / "case", family, files):
                exits[code] += 1
        except Exception as error:  # noqa: BLE001 - every failure is kept, the run goes on
            failures += 1
            case = kept / f"failure-{failures:04d}-{family}"
            case.mkdir()
            for name, text in files.items():
                path = case / "repo" / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text if text is not None else "(symlink to ../outside)\n", encoding="utf-8")
            (case / "error.txt").write_text(f"{type(error).__name__}: {error}"[:4000], encoding="utf-8")

    def report(minutes: float) -> None:
        print(
            f"fuzz families: {minutes:g} minutes: {sum(counts.values())} repositories ("
            + ", ".join(f"{family} {count}" for family, count in counts.items())
            + "), commands by exit code: "
            + ", ".join(f"{code}: {count}" for code, count in exits.items())
            + f"; {failures} failures",
            flush=True,
        )

    started, shown = time.monotonic(), 0
    while time.monotonic() < deadline:
        batch()
        if (elapsed := int((time.monotonic() - started) // 300)) > shown:  # every 5 minutes
            shown = elapsed
            report(elapsed * 5)
    report(LONG_MINUTES)
    assert not failures, f"{failures} failing repositories kept in {kept}"
