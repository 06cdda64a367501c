"""The GitHub Action (action.yml), run for real: its steps' scripts under bash with the variables
a runner sets, after evaluating the few ``${{ }}`` expressions the action uses.

The install step runs once per module (a real ``pip install`` of this repository into a
virtualenv, ~30-60 s); the lint step then runs for each scenario in a fresh fake runner.
Runner conventions mimicked: ``bash --noprofile --norc -eo pipefail {0}``, the working directory is
``GITHUB_WORKSPACE``, and each step gets its own ``GITHUB_OUTPUT`` and ``GITHUB_STEP_SUMMARY``
files ("Workflow syntax: jobs.<job_id>.steps[*].shell",
https://docs.github.com/en/actions/writing-workflows/workflow-syntax-for-github-actions#jobsjob_idstepsshell;
"Workflow commands: setting an output parameter", .../workflow-commands-for-github-actions).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version
from ruamel.yaml import YAML

from .kit import EXAMPLES, POLICY_EXAMPLES, REPO, expected, lint_paths
from .test_reports import SARIF_SCHEMA

ACTION = REPO / "action.yml"
_EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)
_INPUT = re.compile(r"inputs\.([A-Za-z0-9_-]+)")
_STEP_OUTPUT = re.compile(r"steps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)")
_ANNOTATION = re.compile(
    r"^::(error|warning|notice) file=([^,]+),line=(\d+),col=(\d+),title=kaffinity \[([a-z0-9.-]+)\]::(.*)$"
)

SERVER, REPOSITORY, SHA = "https://github.com", "acme/manifests", "0123456789abcdef0123456789abcdef01234567"
BAD = EXAMPLES / "all-namespaces-anti-affinity" / "fail.yaml"  # an error and a warning, with relations
GOOD = EXAMPLES / "all-namespaces-anti-affinity" / "pass.yaml"
BROKEN = EXAMPLES / "parse-error" / "fail.yaml"
WARNINGS = EXAMPLES / "affinity-no-match" / "fail.yaml"  # warnings only


def load_action() -> dict[str, Any]:
    data: dict[str, Any] = YAML(typ="safe").load(ACTION.read_text(encoding="utf-8"))
    return data


def evaluate(
    value: str,
    inputs: dict[str, str],
    outputs: dict[str, dict[str, str]],
    action_path: str,
    runner_temp: str = "/runner-temp",
) -> str:
    """``${{ }}`` expressions of exactly the forms the action uses; any other fails the test."""

    def one(match: re.Match[str]) -> str:
        expression = match.group(1).strip()
        if expression == "github.action_path":
            return action_path
        if expression == "runner.temp":
            return runner_temp
        if expression == "runner.os":
            return "Linux"
        found = _INPUT.fullmatch(expression)
        if found:
            assert found.group(1) in inputs, f"input {found.group(1)} is used but not declared"
            return inputs[found.group(1)]
        found = _STEP_OUTPUT.fullmatch(expression)
        if found:
            return outputs.get(found.group(1), {}).get(found.group(2), "")
        pytest.fail(f"action.yml uses an expression the test does not know: {expression!r}")

    return _EXPRESSION.sub(one, value)


def parse_outputs(text: str) -> dict[str, str]:
    """A ``GITHUB_OUTPUT`` file: ``name=value`` lines and ``name<<DELIMITER`` blocks."""
    outputs: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            block = []
            for item in lines:
                if item == delimiter:
                    break
                block.append(item)
            outputs[name] = "\n".join(block)
        elif line:
            name, _, value = line.partition("=")
            outputs[name] = value
    return outputs


@dataclass
class StepRun:
    code: int
    stdout: str
    stderr: str
    summary: str
    outputs: dict[str, str]


@dataclass
class Runner:
    """A fake runner: a workspace, a temp folder and the variables GitHub sets."""

    root: Path

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def temp(self) -> Path:
        return self.root / "runner-temp"

    def environment(self) -> dict[str, str]:
        inherited = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("GITHUB_", "RUNNER_", "INPUT_", "KAFFINITY"))
        }
        return {
            **inherited,
            "GITHUB_ACTIONS": "true",
            "GITHUB_WORKSPACE": str(self.workspace),
            "RUNNER_TEMP": str(self.temp),
            "GITHUB_SERVER_URL": SERVER,
            "GITHUB_REPOSITORY": REPOSITORY,
            "GITHUB_SHA": SHA,
            "NO_COLOR": "1",
        }

    def run_step(
        self, step: dict[str, Any], inputs: dict[str, str], outputs: dict[str, dict[str, str]], number: int
    ) -> StepRun:
        assert step.get("shell") == "bash", "every step says shell: bash"
        folder = self.root / f"step-{number}"
        folder.mkdir()
        script = folder / "script.sh"
        script.write_text(step["run"], encoding="utf-8")
        output_file, summary_file = folder / "output", folder / "summary.md"
        output_file.touch()
        summary_file.touch()
        env = {
            **self.environment(),
            "GITHUB_OUTPUT": str(output_file),
            "GITHUB_STEP_SUMMARY": str(summary_file),
            **{
                name: evaluate(str(value), inputs, outputs, str(REPO), str(self.temp))
                for name, value in step["env"].items()
            },
        }
        completed = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=self.workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        return StepRun(
            completed.returncode,
            completed.stdout,
            completed.stderr,
            summary_file.read_text(encoding="utf-8"),
            parse_outputs(output_file.read_text(encoding="utf-8")),
        )


def _inputs(action: dict[str, Any], given: dict[str, str]) -> dict[str, str]:
    declared = action["inputs"]
    unknown = set(given) - set(declared)
    assert not unknown, f"not inputs of the action: {unknown}"
    return {name: given.get(name, str(spec.get("default", ""))) for name, spec in declared.items()}


def _new_runner(root: Path) -> Runner:
    runner = Runner(root)
    runner.temp.mkdir(parents=True)
    copies = {
        BAD: "k8s/bad/fail.yaml",
        GOOD: "k8s/good/pass.yaml",
        WARNINGS: "warn/fail.yaml",
        BROKEN: "broken/fail.yaml",
        POLICY_EXAMPLES / "fail.yaml": "apps/fail.yaml",
        POLICY_EXAMPLES / "scheduling.yaml": "policies/scheduling.yaml",
        POLICY_EXAMPLES / "admission.yaml": "policies/admission.yaml",
    }
    for source, target in copies.items():
        destination = runner.workspace / target
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, destination)
    return runner


@pytest.fixture(scope="module")
def action() -> dict[str, Any]:
    return load_action()


@pytest.fixture(scope="module")
def official_sarif() -> dict[str, Any]:
    """The SARIF 2.1.0 schema, as tests/test_reports.py reads it."""
    if not SARIF_SCHEMA.is_file():
        pytest.skip(f"the official SARIF schema is not at {SARIF_SCHEMA}")
    schema: dict[str, Any] = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    return schema


@pytest.fixture(scope="module")
def installed(action: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The install step, run once for real with the default inputs: its outputs."""
    runner = _new_runner(tmp_path_factory.mktemp("install"))
    (install,) = [step for step in action["runs"]["steps"] if step.get("id") == "install"]
    run = runner.run_step(install, _inputs(action, {}), {}, 0)
    assert run.code == 0, run.stdout + run.stderr
    assert Path(run.outputs["python"]).is_file()
    assert run.stdout.startswith("kaffinity "), run.stdout
    return run.outputs


@dataclass
class ActionRun:
    runner: Runner
    code: int
    stdout: str
    stderr: str
    summary: str
    outputs: dict[str, str]


def run_action(
    action: dict[str, Any],
    installed: dict[str, str],
    root: Path,
    prepare: Callable[[Path], dict[str, str]] | None = None,
    **given: str,
) -> ActionRun:
    """Every step after the install, as a runner would, with ``given`` inputs (``_`` for ``-``);
    the action's outputs are evaluated from the steps' outputs as ``outputs:`` declares them.
    ``prepare``: called with the workspace before the steps run; the inputs it returns are added."""
    runner = _new_runner(root)
    if prepare is not None:
        given = {**given, **prepare(runner.workspace)}
    inputs = _inputs(action, {name.replace("_", "-"): value for name, value in given.items()})
    outputs: dict[str, dict[str, str]] = {"install": installed}
    code, stdout, stderr, summary = 0, "", "", ""
    for number, step in enumerate(action["runs"]["steps"], start=1):
        if step.get("id") == "install" or "uses" in step:
            # The install ran once (the fixture); actions/cache is a JavaScript action the harness
            # does not run: every run here is a cache miss (the key is checked on its own below).
            continue
        run = runner.run_step(step, inputs, outputs, number)
        outputs[step["id"]] = run.outputs
        stdout, stderr, summary = stdout + run.stdout, stderr + run.stderr, summary + run.summary
        code = run.code
        if code:
            break
    declared = {
        name: evaluate(str(spec["value"]), inputs, outputs, str(REPO))
        for name, spec in action["outputs"].items()
    }
    return ActionRun(runner, code, stdout, stderr, summary, declared)


def workflow_annotations(stdout: str) -> list[tuple[str, str, int, int, str]]:
    found = []
    for line in stdout.splitlines():
        match = _ANNOTATION.match(line)
        if match:
            command, file, line_no, column, rule, _ = match.groups()
            found.append((command, file, int(line_no), int(column), rule))
    return found


# --- the action's declaration ---------------------------------------------------------------


def test_declares_a_composite_bash_action_with_its_inputs_used(action: dict[str, Any]) -> None:
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    assert [step.get("id") or step.get("uses") for step in steps] == [
        "lock",
        "pip-cache",
        "install",
        "actions/cache/save@v4",
        "lint",
    ]
    used: set[str] = set()
    for step in (step for step in steps if "uses" not in step):
        assert step["shell"] == "bash"
        # Inputs reach scripts through env only (script injection hardening).
        assert "${{" not in step["run"], f"an expression inside run: of step {step['id']}"
        for value in step["env"].values():
            for expression in _EXPRESSION.findall(str(value)):
                found = _INPUT.fullmatch(expression.strip())
                if found:
                    used.add(found.group(1))
    declared = set(action["inputs"])
    assert used == declared, f"declared but unused: {declared - used}; used but undeclared: {used - declared}"
    assert {"paths", "cluster", "kube-version", "config", "fail-on", "sarif-file", "version"} <= declared
    assert action["inputs"]["paths"]["default"] == "."
    assert action["inputs"]["sarif-file"]["default"] == "kaffinity.sarif"
    assert action["inputs"]["version"]["default"] == ""


def test_outputs_map_to_the_lint_steps_outputs(action: dict[str, Any]) -> None:
    ids = {step["id"] for step in action["runs"]["steps"] if "id" in step}
    assert {"errors", "warnings", "infos", "findings", "sarif-file", "exit-code"} <= set(action["outputs"])
    for name, spec in action["outputs"].items():
        (expression,) = _EXPRESSION.findall(spec["value"])
        found = _STEP_OUTPUT.fullmatch(expression.strip())
        assert found, f"output {name} is not a step output"
        assert found.group(1) in ids
        assert spec["description"]


def test_the_evaluator_refuses_unknown_expressions() -> None:
    with pytest.raises(pytest.fail.Exception):
        evaluate("${{ github.token }}", {}, {}, "/action")
    assert evaluate("${{ inputs.a }}-${{steps.s.outputs.b}}", {"a": "1"}, {"s": {"b": "2"}}, "/x") == "1-2"
    assert parse_outputs("a=1\nb<<EOF\nx\ny\nEOF\nc=d=e\n") == {"a": "1", "b": "x\ny", "c": "d=e"}


# --- the action, run ------------------------------------------------------------------------


@pytest.mark.slow
def test_findings_fail_the_step_with_annotations_sarif_summary_and_outputs(
    action: dict[str, Any], installed: dict[str, str], tmp_path: Path, official_sarif: dict[str, Any]
) -> None:
    run = run_action(action, installed, tmp_path, paths="k8s/bad")
    assert run.code == 1, run.stderr

    # Annotations: the findings of an in-process lint of the same file, at the example's markers.
    reference = lint_paths(BAD)
    commands = {"error": "error", "warning": "warning", "info": "notice"}
    assert sorted(workflow_annotations(run.stdout)) == sorted(
        (commands[f.severity.value], "k8s/bad/fail.yaml", f.line, f.column, f.rule)
        for f in reference.findings
    )
    assert sorted((rule, line) for _, _, line, _, rule in workflow_annotations(run.stdout)) == expected(BAD)
    assert {command for command, *_ in workflow_annotations(run.stdout)} == {"error", "warning"}

    # SARIF: valid, where the input says, with both results.
    sarif_path = run.runner.workspace / run.outputs["sarif-file"]
    assert run.outputs["sarif-file"] == "kaffinity.sarif"
    sarif = json.loads(sarif_path.read_text(encoding="utf-8"))
    Draft7Validator(official_sarif).validate(sarif)
    assert len(sarif["runs"][0]["results"]) == len(reference.findings) == 2

    # The job summary: counts, linked findings, the graph.
    assert "| error | 1 |" in run.summary
    assert "| warning | 1 |" in run.summary
    for _, line in expected(BAD):
        assert f"]({SERVER}/{REPOSITORY}/blob/{SHA}/k8s/bad/fail.yaml#L{line})" in run.summary
    assert "```mermaid\nflowchart LR\n" in run.summary
    assert "2 problems (1 error, 1 warning) in 1 file" in run.summary

    # Outputs, from the JSON report.
    assert {
        key: run.outputs[key] for key in ("errors", "warnings", "infos", "findings", "files", "exit-code")
    } == {
        "errors": "1",
        "warnings": "1",
        "infos": "0",
        "findings": "2",
        "files": "1",
        "exit-code": "1",
    }
    report = json.loads(Path(run.outputs["json-file"]).read_text(encoding="utf-8"))
    assert report["summary"]["findings"] == 2
    assert Path(run.outputs["markdown-file"]).read_text(encoding="utf-8") == run.summary


@pytest.mark.slow
def test_clean_input_passes(action: dict[str, Any], installed: dict[str, str], tmp_path: Path) -> None:
    run = run_action(action, installed, tmp_path, paths="k8s/good", sarif_file="reports/out/k.sarif")
    assert run.code == 0, run.stderr
    assert workflow_annotations(run.stdout) == []
    assert "No problems found in 1 file." in run.summary
    assert "| error | 0 |" in run.summary
    assert run.outputs["errors"] == run.outputs["findings"] == "0"
    assert run.outputs["exit-code"] == "0"
    sarif = json.loads((run.runner.workspace / "reports/out/k.sarif").read_text(encoding="utf-8"))
    assert sarif["runs"][0]["results"] == []


@pytest.mark.slow
def test_fail_on_none_reports_without_failing(
    action: dict[str, Any], installed: dict[str, str], tmp_path: Path
) -> None:
    run = run_action(action, installed, tmp_path, paths="k8s/bad", fail_on="none")
    assert run.code == 0, run.stderr
    assert len(workflow_annotations(run.stdout)) == 2
    assert run.outputs["errors"] == "1"
    assert run.outputs["exit-code"] == "0"


@pytest.mark.slow
def test_fail_on_decides_the_exit_code(
    action: dict[str, Any], installed: dict[str, str], tmp_path: Path
) -> None:
    warnings = len(lint_paths(WARNINGS).findings)
    run = run_action(action, installed, tmp_path / "default", paths="warn")
    assert run.code == 0, run.stderr
    assert run.outputs["warnings"] == str(warnings)
    assert {command for command, *_ in workflow_annotations(run.stdout)} == {"warning"}
    run = run_action(action, installed, tmp_path / "warning", paths="warn", fail_on="warning")
    assert run.code == 1, run.stderr
    assert run.outputs["exit-code"] == "1"


@pytest.mark.slow
def test_extra_args_reach_kaffinity(
    action: dict[str, Any], installed: dict[str, str], tmp_path: Path
) -> None:
    run = run_action(
        action,
        installed,
        tmp_path / "ignore",
        paths="k8s/bad",
        args="--ignore\n all-namespaces-anti-affinity",
    )
    assert run.code == 0, run.stderr
    assert run.outputs["findings"] == "0"
    run = run_action(action, installed, tmp_path / "unknown", paths="k8s/bad", args="--no-such-option")
    assert run.code == 2
    assert run.stderr.splitlines()[0] == "kaffinity: error: no such option: --no-such-option"


def test_policies_reach_kaffinity(action: dict[str, Any], installed: dict[str, str], tmp_path: Path) -> None:
    """Each path of ``policies`` is a --policy: a kaffinity Policy and a ValidatingAdmissionPolicy."""
    run = run_action(
        action,
        installed,
        tmp_path,
        paths="apps",
        policies="policies/scheduling.yaml\npolicies/admission.yaml",
        args="--select policy",
    )
    assert run.code == 1, run.stderr
    rules = {rule for *_, rule in workflow_annotations(run.stdout)}
    assert {"zone-spread-required", "zone-spread.scheduling.example.com"} <= rules


@pytest.mark.slow
def test_input_that_does_not_parse_exits_2(
    action: dict[str, Any], installed: dict[str, str], tmp_path: Path
) -> None:
    run = run_action(action, installed, tmp_path, paths="broken")
    assert run.code == 2
    assert [rule for *_, rule in workflow_annotations(run.stdout)] == ["parse-error"]
    assert "could not be read or parsed" in run.summary
    assert run.outputs["exit-code"] == "2"
    assert (run.runner.workspace / "kaffinity.sarif").is_file()


@pytest.mark.slow
def test_usage_error_exits_2_without_reports(
    action: dict[str, Any], installed: dict[str, str], tmp_path: Path
) -> None:
    run = run_action(action, installed, tmp_path, paths="k8s/good", kube_version="0.1")
    assert run.code == 2
    assert run.outputs["sarif-file"] == ""
    assert run.outputs["exit-code"] == "2"
    assert "stopped before linting (exit code 2)" in run.summary
    assert not (run.runner.workspace / "kaffinity.sarif").exists()


@pytest.mark.slow
def test_paths_are_split_and_globbed_but_never_run(
    action: dict[str, Any], installed: dict[str, str], tmp_path: Path
) -> None:
    run = run_action(action, installed, tmp_path, paths="k8s/good\n  k8s/**/fail.yaml $(touch pwned)")
    assert run.code == 2  # `$(touch` and `pwned)` are paths that do not exist
    assert not (run.runner.workspace / "pwned").exists()
    files = {file for _, file, *_ in workflow_annotations(run.stdout)}
    assert "k8s/bad/fail.yaml" in files
    assert run.outputs["files"] == "4"  # pass.yaml, fail.yaml and the two missing paths


@pytest.mark.slow
def test_a_checkout_cannot_run_code_through_the_action(
    action: dict[str, Any], installed: dict[str, str], tmp_path: Path
) -> None:
    """The workspace is the pull request (issue 31): a kaffinity/ package, a json.py and a
    .kaffinity_cache of its own are never imported or read; rendering (on by default) stays
    offline whatever the checkout says; every Python of the action runs with -I."""
    root = tmp_path / "runner"
    root.mkdir()
    workspace = root / "workspace"
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    for name in ("kaffinity/__init__.py", "kaffinity/__main__.py", "json.py", "pip/__main__.py"):
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(code)
    (workspace / ".kaffinity.yaml").write_text("render: true\n")
    (workspace / ".kaffinity_cache").mkdir()
    (workspace / ".kaffinity_cache" / "entry").write_bytes(b"not a cache entry")
    run = run_action(action, installed, root, paths="k8s/good")
    assert run.code == 0, run.stdout + run.stderr
    assert not marker.exists(), marker.read_text()
    assert run.outputs["files"] == "1"
    lint = next(step for step in action["runs"]["steps"] if step.get("id") == "lint")["run"]
    assert "-I -m kaffinity lint" in lint and "--no-cache" in lint and "--offline" in lint
    calls = re.findall(
        r'"\$(?:KAFFINITY|python|bin/python)" (-\S*)',
        "".join(str(step.get("run", "")) for step in action["runs"]["steps"]),
    )
    assert calls and set(calls) == {"-I"}


def _overlays(root: Path, remote: bool = False) -> None:
    """The gitops fixture's base and prod overlay in the workspace (and an overlay naming a
    remote base: building it needs the network)."""
    workspace = root / "workspace"
    gitops = REPO / "tests" / "data" / "gitops"
    shutil.copytree(gitops / "base", workspace / "deploy" / "base")
    shutil.copytree(gitops / "overlays" / "prod", workspace / "deploy" / "overlays" / "prod")
    if remote:
        (workspace / "deploy" / "remote").mkdir()
        (workspace / "deploy" / "remote" / "kustomization.yaml").write_text(
            "resources:\n  - https://github.com/example/app//deploy?ref=v1\n"
        )


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("kustomize") is None and shutil.which("kubectl") is None,
    reason="neither kustomize nor kubectl is on the PATH (GitHub's runners have both)",
)
def test_the_action_renders_by_default_and_says_with_what(
    action: dict[str, Any], installed: dict[str, str], tmp_path: Path
) -> None:
    engine = "kustomize" if shutil.which("kustomize") else "kubectl kustomize"
    _overlays(tmp_path / "default", remote=True)
    run = run_action(action, installed, tmp_path / "default", paths="deploy")
    assert run.code == 0, run.stdout + run.stderr
    # The prod overlay as built: one worker per node rolled by surging only.
    assert workflow_annotations(run.stdout) == [
        ("warning", "deploy/overlays/prod/one-per-node.yaml", 15, 15, "revision-unscoped")
    ]
    report = json.loads(Path(run.outputs["json-file"]).read_text(encoding="utf-8"))
    render = report["summary"]["render"]
    assert (render["enabled"], render["engines"]["kustomize"]) == (True, engine)
    # The remote base stays unfetched (the network is the workflow's input, off by default): the
    # overlay is built without it.
    assert (render["rendered"], render["unrendered_units"]) == (2, [])
    assert "--offline" in run.stderr  # the note says what kept the remote resource out
    assert (run.outputs["rendered"], run.outputs["unrendered"]) == ("2", "0")
    assert f"overlays with `{engine}`" in run.summary
    rows = dict(re.findall(r"^\| ([a-z ()]+) \| (\d+) \|$", run.summary, re.MULTILINE))
    assert (rows["units rendered"], rows["units read as written (not rendered)"]) == ("2", "0")

    _overlays(tmp_path / "off")
    run = run_action(action, installed, tmp_path / "off", paths="deploy", render="false")
    report = json.loads(Path(run.outputs["json-file"]).read_text(encoding="utf-8"))
    assert report["summary"]["render"]["enabled"] is False
    assert (run.outputs["rendered"], run.outputs["unrendered"]) == ("0", "0")


# --- the documentation ----------------------------------------------------------------------


def _workflow_blocks(text: str) -> list[dict[str, Any]]:
    """The YAML blocks of a Markdown text that are workflows (a mapping of ``jobs:``; the
    configuration's ``jobs:`` is a number)."""
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.DOTALL)
    loaded = [YAML(typ="safe").load(block) for block in blocks]
    return [block for block in loaded if isinstance(block, dict) and isinstance(block.get("jobs"), dict)]


@pytest.mark.parametrize("document", ["README.md", "docs/github-action.md"])
def test_documented_workflows_use_the_action_as_declared(action: dict[str, Any], document: str) -> None:
    from .install_snippets import ref_problem

    text = (REPO / document).read_text(encoding="utf-8")
    workflows = _workflow_blocks(text)
    assert workflows, f"no complete workflow in {document}"
    for workflow in workflows:
        (job,) = workflow["jobs"].values()
        assert job["permissions"]["security-events"] == "write"
        uses = [step for step in job["steps"] if "uses" in step]
        ours = [step for step in uses if step["uses"].startswith("kaffinity/kaffinity@")]
        # A ref that exists: until the first release tag, a commit SHA (issue 33: the docs'
        # @v0.1.0 named no tag); tests/install_snippets.py's placeholder rule.
        assert len(ours) == 1
        assert ref_problem(ours[0]["uses"].partition("@")[2], text) is None
        assert set(ours[0].get("with", {})) <= set(action["inputs"])
        (upload,) = [step for step in uses if step["uses"].startswith("github/codeql-action/upload-sarif@")]
        # Also after findings failed the step, but not after a usage error (no SARIF): the job
        # then fails once, with kaffinity's reason, not again in the upload.
        step_id = ours[0]["id"]
        assert upload["if"] == f"always() && steps.{step_id}.outputs.sarif-file != ''"
        assert upload["with"]["sarif_file"] == f"${{{{ steps.{step_id}.outputs.sarif-file }}}}"


def _shipped_workflows() -> list[tuple[str, str]]:
    """Every workflow the repository ships: the complete ones in the documentation and any file
    under .github/workflows."""
    shipped = []
    for document in ("README.md", "docs/github-action.md"):
        for number, block in enumerate(
            re.findall(r"```yaml\n(.*?)```", (REPO / document).read_text("utf-8"), re.DOTALL)
        ):
            loaded = YAML(typ="safe").load(block)
            if isinstance(loaded, dict) and isinstance(loaded.get("jobs"), dict):
                shipped.append((f"{document}#{number}", block))
    folder = REPO / ".github" / "workflows"
    for path in sorted(folder.glob("*.y*ml")) if folder.is_dir() else ():
        shipped.append((str(path.relative_to(REPO)), path.read_text(encoding="utf-8")))
    return shipped


def test_shipped_workflows_match_githubs_workflow_schema(tmp_path: Path) -> None:
    """check-jsonschema's bundled copy of SchemaStore's github-workflow schema (no network)."""
    workflows = _shipped_workflows()
    assert workflows
    files = []
    for number, (_, text) in enumerate(workflows):
        files.append(tmp_path / f"workflow-{number}.yaml")
        files[-1].write_text(text, encoding="utf-8")
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.github-workflows",
            *map(str, files),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, (
        f"{[name for name, _ in workflows]}\n{completed.stdout}{completed.stderr}"
    )


def test_the_schema_check_catches_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        "on: push\njobs:\n  lint:\n    steps: [{uses: a/b@v1}]\n", encoding="utf-8"
    )  # no runs-on
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.github-workflows",
            str(broken),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 1, completed.stdout + completed.stderr


# --- the lock and the cache -----------------------------------------------------------------

LOCK = REPO / "constraints" / "action.txt"


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"{path.name}: not an exact pin: {line}"
            pins[canonicalize_name(name)] = version
    return pins


@pytest.mark.parametrize("lock", ["action.txt", "floors.txt"])
def test_the_locks_pin_every_dependency_within_its_declared_range(lock: str) -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    pins = _pins(REPO / "constraints" / lock)
    for text in pyproject["project"]["dependencies"]:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{lock} does not pin {name}"
        assert requirement.specifier.contains(pins[name]), (
            f"{lock}: {name}=={pins[name]} not in {requirement}"
        )
        if lock == "floors.txt":  # the floor is the declared lower bound itself
            floors = [spec.version for spec in requirement.specifier if spec.operator == ">="]
            assert floors and Version(pins[name]) == Version(floors[0]), (
                f"{name}: {pins[name]} vs {requirement}"
            )


def test_the_install_step_installs_from_the_lock_with_a_pip_cache_keyed_on_it(
    action: dict[str, Any], tmp_path: Path
) -> None:
    steps = {step.get("id") or step["uses"]: step for step in action["runs"]["steps"]}
    install, cache, save = steps["install"], steps["pip-cache"], steps["actions/cache/save@v4"]
    assert cache["uses"] == "actions/cache/restore@v4" and save["with"] == cache["with"]
    assert '--constraint "$KAFFINITY_SOURCE/constraints/action.txt"' in install["run"]
    runner = _new_runner(tmp_path)
    run = runner.run_step(steps["lock"], _inputs(action, {}), {}, 0)
    assert run.code == 0, run.stderr
    assert run.outputs == {"hash": hashlib.sha256(LOCK.read_bytes()).hexdigest()}
    outputs = {"lock": run.outputs}
    inputs = _inputs(action, {})
    temp = str(runner.temp)
    path = evaluate(cache["with"]["path"], inputs, outputs, str(REPO), temp)
    key = evaluate(cache["with"]["key"], inputs, outputs, str(REPO), temp)
    assert path == evaluate(install["env"]["PIP_CACHE_DIR"], inputs, outputs, str(REPO), temp)
    assert path == f"{temp}/kaffinity-pip-cache"
    assert key == f"kaffinity-pip-Linux-{run.outputs['hash']}"


def test_the_pip_cache_is_never_saved_where_a_fork_reaches_trusted_runs(action: dict[str, Any]) -> None:
    """pull_request_target and workflow_run run in the base branch's cache scope (issue 31): a
    cache they saved would be restored by the trusted runs; saved on a miss only."""
    (save,) = [step for step in action["runs"]["steps"] if step.get("uses") == "actions/cache/save@v4"]
    condition = save["if"]
    assert "steps.pip-cache.outputs.cache-hit != 'true'" in condition
    (events,) = re.findall(r"fromJSON\('(\[.*?\])'\)", condition)
    assert "), github.event_name)" in condition
    allowed = set(json.loads(events))
    assert allowed == {"push", "pull_request", "merge_group", "schedule", "workflow_dispatch"}
    assert not allowed & {"pull_request_target", "workflow_run", "issue_comment"}


def test_the_action_page_lists_every_input_and_output(action: dict[str, Any]) -> None:
    page = (REPO / "docs" / "github-action.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (`[^|]+`) \|", page, re.MULTILINE)
    documented = {name for row in rows for name in re.findall(r"`([a-z-]+)`", row)}
    assert set(action["inputs"]) | set(action["outputs"]) <= documented


# --- errors and notes on stderr (issue 33, item 5) ------------------------------------------------

#: A workflow command's escaping undone, as the runner does (@actions/core command.ts escapes).
_UNESCAPE = (("%0A", "\n"), ("%0D", "\r"), ("%3A", ":"), ("%2C", ","), ("%25", "%"))


def _unescape(text: str) -> str:
    for escaped, raw in _UNESCAPE:
        text = text.replace(escaped, raw)
    return text


def error_commands(stdout: str) -> list[tuple[dict[str, str], str]]:
    """The ``::error`` commands that are not findings: (properties, message), unescaped."""
    found = []
    for line in stdout.splitlines():
        match = re.match(r"^::error (?P<properties>[^:]*)::(?P<message>.*)$", line)
        if match and _ANNOTATION.match(line) is None:
            properties = dict(item.split("=", 1) for item in match["properties"].split(","))
            found.append(
                ({key: _unescape(value) for key, value in properties.items()}, _unescape(match["message"]))
            )
    return found


def summary_messages(summary: str) -> list[str]:
    """The list items of the job summary's Messages section."""
    _, found, rest = summary.partition("\n### Messages\n")
    assert found, summary
    return [line for line in rest.splitlines() if line.startswith("- ")]


@pytest.mark.slow
@pytest.mark.parametrize(
    "given", [{"args": "--no-such-option"}, {"kube_version": "0.1"}, {"config": "missing.yaml"}]
)
def test_a_usage_error_is_an_error_annotation_and_in_the_summary(
    action: dict[str, Any], installed: dict[str, str], tmp_path: Path, given: dict[str, str]
) -> None:
    run = run_action(action, installed, tmp_path, paths="k8s/good", **given)
    assert run.code == 2
    assert run.outputs["exit-code"] == "2"
    ((properties, message),) = error_commands(run.stdout)
    assert properties["title"] == "kaffinity"
    # The annotation says what stderr says: kaffinity's own error line.
    assert message == run.stderr.splitlines()[0]
    # No place: a missing file is named in the message, not annotated (GitHub would show it on
    # no file of the pull request).
    assert "file" not in properties
    assert len(summary_messages(run.summary)) == 1


@pytest.mark.slow
def test_a_config_error_is_annotated_at_its_line(
    action: dict[str, Any], installed: dict[str, str], tmp_path: Path
) -> None:
    root = tmp_path / "runner"
    (root / "workspace").mkdir(parents=True)
    (root / "workspace" / ".kaffinity.yaml").write_text("render: true\nfail-on: sometimes\n")
    run = run_action(action, installed, root, paths="k8s/good")
    assert run.code == 2
    ((properties, message),) = error_commands(run.stdout)
    assert (properties["file"], properties["line"], properties["col"]) == (".kaffinity.yaml", "2", "1")
    assert message.startswith(".kaffinity.yaml:2:1: ")


@pytest.mark.slow
def test_annotation_properties_are_escaped(
    action: dict[str, Any], installed: dict[str, str], tmp_path: Path
) -> None:
    """``:`` and ``,`` would end a property, ``%`` starts an escape: each is percent-encoded."""
    name = "odd,name:100%.yaml"
    root = tmp_path / "runner"
    (root / "workspace").mkdir(parents=True)
    (root / "workspace" / name).write_text("fail-on: sometimes\n")
    run = run_action(action, installed, root, paths="k8s/good", config=name)
    assert run.code == 2
    (command,) = [line for line in run.stdout.splitlines() if line.startswith("::error ")]
    assert "file=odd%2Cname%3A100%25.yaml," in command
    ((properties, _),) = error_commands(run.stdout)
    assert properties["file"] == name


@pytest.mark.slow
def test_notes_on_stderr_reach_the_job_summary(
    action: dict[str, Any], installed: dict[str, str], tmp_path: Path
) -> None:
    run = run_action(action, installed, tmp_path, paths="k8s/good", args="--feature-gates UnknownGate=true")
    assert run.code == 0, run.stderr
    notes = [line for line in run.stderr.splitlines() if line.startswith("kaffinity: note: ")]
    assert len(notes) == 1
    (item,) = summary_messages(run.summary)
    assert "UnknownGate" in item
    assert error_commands(run.stdout) == []


# --- only what a pull request adds ----------------------------------------------------------


def _git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        [
            "git",
            "-c",
            "user.name=kaffinity",
            "-c",
            "user.email=test@example.com",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.strip()


def _pull_request(workspace: Path) -> dict[str, str]:
    """The workspace as actions/checkout leaves it on a pull request, one commit deep: an origin
    with the base (k8s/bad/fail.yaml, an error and a warning) and the head, which puts ten
    lines above the old findings and adds one error in a new file; the base's SHA as input."""
    origin = workspace.parent / "origin"
    shutil.copytree(workspace, origin)
    _git(origin, "init", "--quiet")
    _git(origin, "add", ".")
    _git(origin, "commit", "--quiet", "-m", "base")
    base = _git(origin, "rev-parse", "HEAD")
    old = (origin / "k8s" / "bad" / "fail.yaml").read_text(encoding="utf-8")
    (origin / "k8s" / "bad" / "fail.yaml").write_text("# moved\n" * 10 + old, encoding="utf-8")
    added = old.replace("ex-all-namespaces-anti-affinity-fail", "added")
    (origin / "k8s" / "bad" / "added.yaml").write_text(added, encoding="utf-8")
    _git(origin, "add", ".")
    _git(origin, "commit", "--quiet", "-m", "head")
    shutil.rmtree(workspace)
    subprocess.run(
        ["git", "clone", "--quiet", "--depth=1", origin.as_uri(), str(workspace)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return {"new-from-rev": base}


@pytest.mark.slow
def test_new_from_rev_fetches_the_base_and_reports_only_what_the_head_adds(
    action: dict[str, Any], installed: dict[str, str], tmp_path: Path, official_sarif: dict[str, Any]
) -> None:
    run = run_action(action, installed, tmp_path, prepare=_pull_request, paths="k8s")
    assert run.code == 1, run.stderr
    # The base's findings (an error and a warning, moved ten lines down) are not shown; the
    # copies the head adds in new namespaces are.
    annotations = workflow_annotations(run.stdout)
    assert sorted((command, file, rule) for command, file, _, _, rule in annotations) == [
        ("error", "k8s/bad/added.yaml", "all-namespaces-anti-affinity"),
        ("warning", "k8s/bad/added.yaml", "all-namespaces-anti-affinity"),
    ]
    report = json.loads(Path(run.outputs["json-file"]).read_text(encoding="utf-8"))
    assert report["summary"]["new_only"]["known"] == 2
    assert (run.outputs["errors"], run.outputs["findings"]) == ("1", "2")
    sarif = json.loads((run.runner.workspace / run.outputs["sarif-file"]).read_text(encoding="utf-8"))
    Draft7Validator(official_sarif).validate(sarif)
    assert [result["partialFingerprints"] for result in sarif["runs"][0]["results"]] == [
        {"kaffinity/v1": finding["fingerprint"]} for finding in report["findings"]
    ]
    # The base was fetched into the shallow clone; the work tree is untouched.
    assert _git(run.runner.workspace, "status", "--porcelain", "--untracked-files=no") == ""


@pytest.mark.slow
def test_a_baseline_input_leaves_its_findings_out(
    action: dict[str, Any], installed: dict[str, str], tmp_path: Path
) -> None:
    def with_baseline(workspace: Path) -> dict[str, str]:
        written = subprocess.run(
            [
                installed["python"],
                "-I",
                "-m",
                "kaffinity",
                "baseline",
                "write",
                "--no-cache",
                "-o",
                "kb.json",
                "k8s",
            ],
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert written.returncode == 0, written.stderr
        return {"baseline": "kb.json"}

    run = run_action(action, installed, tmp_path, prepare=with_baseline, paths="k8s")
    assert run.code == 0, run.stderr
    assert workflow_annotations(run.stdout) == []
    report = json.loads(Path(run.outputs["json-file"]).read_text(encoding="utf-8"))
    assert report["summary"]["new_only"] == {"against": "baseline", "ref": "kb.json", "known": 2, "fixed": 0}


@pytest.mark.slow
def test_a_rev_that_is_not_there_is_a_usage_error(
    action: dict[str, Any], installed: dict[str, str], tmp_path: Path
) -> None:
    def shallow(workspace: Path) -> dict[str, str]:
        _pull_request(workspace)
        return {"new-from-rev": "--upload-pack=touch pwned"}

    run = run_action(action, installed, tmp_path, prepare=shallow, paths="k8s")
    assert run.code == 2
    assert run.outputs["sarif-file"] == ""
    assert not (run.runner.workspace / "pwned").exists()
