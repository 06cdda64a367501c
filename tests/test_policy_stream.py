"""Policies streamed and cached (kaffinity.policy.streamed): they run file by file in the
single-object stage, their entries are keyed with the policies, their params and the namespaces
they read, and the report is the one the input read whole gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import kaffinity.run.lint
import kaffinity.stream
from tests.kit import run, run_bytes

ROOT = Path(__file__).resolve().parent.parent

POLICY = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: max-replicas.example.com}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    namespaceSelector: {matchLabels: {team: web}}
    resourceRules:
      - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  validations:
    - expression: object.spec.replicas <= int(params.data.max)
      messageExpression: "'at most ' + params.data.max + ' replicas in ' + namespaceObject.metadata.name"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: max-replicas.example.com}
spec:
  policyName: max-replicas.example.com
  validationActions: [Warn]
  paramRef: {name: limits, namespace: web, parameterNotFoundAction: Deny}
"""

NAMESPACE = """\
apiVersion: v1
kind: Namespace
metadata: {name: web, labels: {team: web}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: limits, namespace: web}
data: {max: "3"}
"""


def _deployment(name: str, replicas: int) -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: web}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: app, image: app:1}}]
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Manifests whose Namespace and param (a ConfigMap) live among them, and a policy file."""
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "a.yaml").write_text(_deployment("a", 5))
    (folder / "b.yaml").write_text(_deployment("b", 2))
    (folder / "namespace.yaml").write_text(NAMESPACE)
    (tmp_path / "policy.yaml").write_text(POLICY)
    return folder


class _Spy:
    """Whether ``lint`` streamed, and the files the single-object stage checked (not cached)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.streams: list[bool] = []
        self.checked: list[str] = []
        stream, file_result = kaffinity.run.lint.stream, kaffinity.stream.file_result

        def spied_stream(*args: Any) -> Any:
            made = stream(*args)
            self.streams.append(made is not None)
            return made

        def spied_result(file: Any, *args: Any, **kwargs: Any) -> Any:
            self.checked.append(Path(file.name).name)
            return file_result(file, *args, **kwargs)

        monkeypatch.setattr(kaffinity.run.lint, "stream", spied_stream)
        monkeypatch.setattr(kaffinity.stream, "file_result", spied_result)

    def lint(self, *args: str | Path) -> tuple[int, str]:
        self.streams.clear()
        self.checked.clear()
        done = run("lint", "--no-config", "--format", "json", *args)
        return done.returncode, done.stdout


def _policy_findings(stdout: str) -> list[tuple[str, int, str, str]]:
    return [
        (Path(f["file"]).name, f["line"], f["severity"], f["message"])
        for f in json.loads(stdout)["findings"]
        if f["category"] == "policy"
    ]


def _whole(monkeypatch: pytest.MonkeyPatch, *args: str | Path) -> str:
    with monkeypatch.context() as patched:
        patched.setattr(kaffinity.run.lint, "stream", lambda *_: None)
        return run("lint", "--no-config", "--format", "json", *args).stdout


def test_policies_run_file_by_file_and_a_warm_run_takes_their_entries(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, policy = tmp_path / "cache", tmp_path / "policy.yaml"
    args = ("--cache-dir", str(cache), "--policy", str(policy), str(repo))
    whole = _whole(monkeypatch, "--no-cache", "--policy", str(policy), str(repo))
    spy = _Spy(monkeypatch)
    cold = spy.lint(*args)
    assert spy.streams == [True]
    assert sorted(spy.checked) == ["a.yaml", "b.yaml", "namespace.yaml"]
    # The param and the namespace come from the manifests: a's 5 replicas break the limit of 3.
    assert _policy_findings(cold[1]) == [
        ("a.yaml", 5, "warning", "at most 3 replicas in web (binding max-replicas.example.com)")
    ]
    assert cold[1] == whole
    warm = spy.lint(*args)
    assert spy.checked == []  # every file's entry, the policy's findings with it
    assert warm == cold


@pytest.mark.parametrize(
    ("where", "old", "new", "expected"),
    [
        ("policy.yaml", "'at most '", "'no more than '", ("warning", "no more than 3 replicas in web")),
        (
            "policy.yaml",
            "validationActions: [Warn]",
            "validationActions: [Deny]",
            ("error", "at most 3 replicas in web"),
        ),
        ("repo/namespace.yaml", 'max: "3"', 'max: "4"', ("warning", "at most 4 replicas in web")),
    ],
    ids=["policy", "binding", "param"],
)
def test_a_changed_policy_binding_or_param_misses_the_entries(
    repo: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
    old: str,
    new: str,
    expected: tuple[str, str],
) -> None:
    cache, policy = tmp_path / "cache", tmp_path / "policy.yaml"
    args = ("--cache-dir", str(cache), "--policy", str(policy), str(repo))
    spy = _Spy(monkeypatch)
    spy.lint(*args)
    edited = tmp_path / where
    edited.write_text(edited.read_text().replace(old, new))
    _, stdout = spy.lint(*args)
    assert "a.yaml" in spy.checked  # a.yaml's bytes did not change: its entry missed all the same
    severity, message = expected
    assert _policy_findings(stdout) == [
        ("a.yaml", 5, severity, f"{message} (binding max-replicas.example.com)")
    ]
    assert stdout == _whole(monkeypatch, "--no-cache", "--policy", str(policy), str(repo))


def test_a_namespace_among_the_manifests_decides_the_match(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, policy = tmp_path / "cache", tmp_path / "policy.yaml"
    args = ("--cache-dir", str(cache), "--policy", str(policy), str(repo))
    spy = _Spy(monkeypatch)
    assert _policy_findings(spy.lint(*args)[1])
    namespace = repo / "namespace.yaml"
    namespace.write_text(namespace.read_text().replace("team: web", "team: api"))
    _, stdout = spy.lint(*args)
    assert spy.streams == [True]
    assert _policy_findings(stdout) == []  # the namespaceSelector no longer selects web
    assert stdout == _whole(monkeypatch, "--no-cache", "--policy", str(policy), str(repo))


def test_a_policy_that_reads_the_object_with_the_facts_reads_the_input_whole(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = tmp_path / "facts.yaml"
    policy.write_text(
        "apiVersion: kaffinity.io/v1alpha1\nkind: Policy\nmetadata: {name: facts-and-object}\n"
        "spec:\n  target: object\n  message: m\n"
        "  expression: object.spec.replicas < 4 || kaffinity.placement == null\n"
    )
    spy = _Spy(monkeypatch)
    spy.lint("--no-cache", "--policy", str(policy), str(repo))
    assert spy.streams == [False]


@pytest.mark.slow
def test_the_benchmark_policies_report_the_same_whatever_the_jobs_and_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ten policies of ``benchmarks/run.py --stages policy`` on 300 generated workloads:
    ``--jobs`` 1 and 2 (the workers run the policies past ``MIN_FILES`` files), without the
    cache, cold and warm, and read whole: one report."""
    subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "generate.py"), "--workloads", "300", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    manifests = tmp_path / "manifests"
    policies = [
        "--policy",
        str(ROOT / "examples" / "policies"),
        "--policy",
        str(ROOT / "benchmarks" / "policies"),
    ]
    base = ("lint", "--no-config", "-f", "json", *policies)
    reports = {
        (jobs, mode): run_bytes(*base, "--jobs", jobs, *cache, manifests).stdout
        for jobs in ("1", "2")
        for mode, cache in (
            ("none", ("--no-cache",)),
            ("cold", ("--cache-dir", str(tmp_path / f"cache{jobs}"))),
            ("warm", ("--cache-dir", str(tmp_path / f"cache{jobs}"))),
        )
    }
    assert len(set(reports.values())) == 1
    whole = _whole(monkeypatch, "--no-cache", "--jobs", "1", *policies, manifests)
    assert reports["1", "none"].decode() == whole
    assert b'"category": "policy"' in reports["1", "none"]


def test_the_cluster_file_in_the_policies_digest_is_read_within_the_limits(tmp_path: Path) -> None:
    """The cluster file (``cluster:`` may come from the repository's config) goes into the
    policies' cache key read as the cluster itself is: a pipe without a writer does not hang the
    run, a file over the size limit is not read, and a changed cluster changes the key."""
    from dataclasses import replace

    from kaffinity.config import Settings
    from kaffinity.load.parse import DEFAULT_LIMITS
    from kaffinity.policy.streamed import policy_digest

    limits = replace(DEFAULT_LIMITS, file_size=1024)

    pipe = tmp_path / "pipe.yaml"
    os.mkfifo(pipe)
    assert len(policy_digest([], Settings(cluster=str(pipe)))) == 32
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * 2048)
    other = tmp_path / "other.yaml"
    other.write_bytes(b"x" * 2048)  # as large, other bytes: neither is read
    first, second = Settings(cluster=str(big), limits=limits), Settings(cluster=str(other), limits=limits)
    assert policy_digest([], first) == policy_digest([], second)
    big.write_bytes(b"kind: List\n")
    assert policy_digest([], first) != policy_digest([], second)
