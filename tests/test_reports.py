"""Report formats: text with code frames, JSON shape, SARIF 2.1.0 validity, GitHub escaping."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator, Draft202012Validator

from kaffinity.load.resources import schema
from kaffinity.report import render
from kaffinity.report.github import escape_data, escape_property
from kaffinity.rules import BY_NAME
from kaffinity.rules.base import Rule

from .kit import (
    CROSS_WORKLOAD,
    EXAMPLES,
    POLICY_EXAMPLES,
    SHARED,
    example_settings,
    expected,
    findings,
    keys,
    lint_paths,
    lint_text,
    position,
    run,
)
from .test_engine import ZONE_ANTI

SARIF_SCHEMA = SHARED / "schemas" / "sarif-schema-2.1.0.json"
ALL_FORMATS = ("text", "json", "sarif", "github")


def _report(fmt: str, *paths: str, cwd: Path | None = None) -> tuple[int, str]:
    completed = run("lint", "--no-config", "--format", fmt, *paths, cwd=cwd)
    return completed.returncode, completed.stdout


def test_text_report_lines_frames_and_summary() -> None:
    code, out = _report("text", "examples/parse-error/fail.yaml", cwd=EXAMPLES.parent)
    assert code == 2
    # Where the flow mapping of line 6 breaks: the colon of the next key.
    path = EXAMPLES / "parse-error" / "fail.yaml"
    line, column = position(path.read_text(encoding="utf-8"), ":  # expect: parse-error")
    assert keys(lint_paths(path)) == [("parse-error", line, column)]
    lines = out.splitlines()
    assert lines[0].startswith(f"examples/parse-error/fail.yaml:{line}:{column}: error [parse-error] ")
    assert lines[1] == f"  {line} | spec:  # expect: parse-error"
    assert lines[2] == "    |" + " " * column + "^"
    assert lines[-1] == "Found 1 problem (1 error) in 1 file."


def test_text_report_clean_run() -> None:
    code, out = _report("text", "examples/parse-error/pass.yaml", cwd=EXAMPLES.parent)
    assert code == 0
    assert keys(lint_paths(EXAMPLES / "parse-error" / "pass.yaml")) == []
    assert out == "No problems found in 1 file.\n"


def test_color_only_when_asked() -> None:
    plain = run("lint", "--no-config", str(EXAMPLES / "parse-error" / "fail.yaml"))
    colored = run("lint", "--no-config", "--color", "always", str(EXAMPLES / "parse-error" / "fail.yaml"))
    assert "\x1b[" not in plain.stdout
    assert "\x1b[31;1merror\x1b[0m" in colored.stdout
    # The same finding, at the same place, colored or not.
    path = EXAMPLES / "parse-error" / "fail.yaml"
    [(rule, line, column)] = keys(lint_paths(path))
    assert (rule, line, column) == ("parse-error", *position(path.read_text(encoding="utf-8"), ":  # expect"))
    assert plain.stdout.startswith(f"{path}:{line}:{column}: error [{rule}] ")
    assert colored.stdout.startswith(f"\x1b[1m{path}:{line}:{column}\x1b[0m: ")


def test_json_report_matches_documented_schema() -> None:
    code, out = _report("json", str(EXAMPLES))
    report = json.loads(out)
    Draft202012Validator(schema("output.schema.json")).validate(report)
    assert code == 2
    # Cross-workload rules (category graph) see every example at once: they are checked per example.
    markers = Counter(
        rule
        for path in EXAMPLES.rglob("*")
        if path.suffix in (".yaml", ".json")
        and not example_settings(path)
        and POLICY_EXAMPLES not in path.parents
        for rule, _ in expected(path)
        if BY_NAME[rule].category not in CROSS_WORKLOAD
    )
    found = Counter(
        f["rule"]
        for f in report["findings"]
        if not example_settings(Path(f["file"])) and f["category"] not in CROSS_WORKLOAD
    )
    assert found == markers
    assert report["summary"]["rules"] == dict(Counter(f["rule"] for f in report["findings"]))
    assert report["summary"]["suppressed"] == 1
    unused = findings(report, "unused-suppression")
    annotation = next(f for f in unused if f["path"])
    assert annotation["object"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "namespace": "default",
        "name": "web",
    }
    assert annotation["path"] == "metadata.annotations[kaffinity.io/ignore]"


def test_json_report_is_deterministic_and_sorted() -> None:
    first = _report("json", str(EXAMPLES))[1]
    assert first == _report("json", str(EXAMPLES))[1]
    findings = json.loads(first)["findings"]
    assert findings == sorted(
        findings, key=lambda f: (f["file"], f["line"] or 0, f["column"] or 0, f["rule"])
    )


@pytest.fixture(scope="module")
def sarif_schema() -> dict[str, Any]:
    if not SARIF_SCHEMA.is_file():
        pytest.skip(f"the official SARIF schema is not at {SARIF_SCHEMA}")
    return json.loads(SARIF_SCHEMA.read_text())


@pytest.mark.parametrize("target", ["examples", "examples/parse-error/pass.yaml"])
def test_sarif_is_valid_against_the_official_schema(sarif_schema: dict[str, Any], target: str) -> None:
    _, out = _report("sarif", target, cwd=EXAMPLES.parent)
    sarif = json.loads(out)
    Draft7Validator(sarif_schema).validate(sarif)
    (run,) = sarif["runs"]
    # Every result carries its fingerprint (docs/output.md#fingerprints), each distinct.
    marks = [result["partialFingerprints"]["kaffinity/v1"] for result in run["results"]]
    assert all(re.fullmatch(r"[0-9a-f]{32}:[1-9][0-9]*", mark) for mark in marks)
    assert len(set(marks)) == len(marks)
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    assert {"parse-error", "helm-template", "unused-suppression"} <= set(rules)
    assert all(rule["help"]["text"] for rule in rules.values())
    if target.endswith("pass.yaml"):
        assert run["results"] == []
    else:
        result = next(
            r
            for r in run["results"]
            if r["ruleId"] == "parse-error"
            and r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("/fail.yaml")
        )
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"] == {
            "uri": "examples/parse-error/fail.yaml",
            "uriBaseId": "%SRCROOT%",
        }
        text = (EXAMPLES / "parse-error" / "fail.yaml").read_text(encoding="utf-8")
        region = location["region"]
        assert set(region) == {"startLine", "startColumn"}
        assert (region["startLine"], region["startColumn"]) == position(text, ":  # expect: parse-error")
        assert result["level"] == "error"
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "parse-error"
        notes = [r for r in run["results"] if r["ruleId"] == "unused-suppression"]
        assert {r["level"] for r in notes} == {"note"}


def test_github_escaping_follows_the_actions_toolkit() -> None:
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


def test_github_annotations(tmp_path: Path) -> None:
    bad = tmp_path / "we:ird,name.yaml"
    text = "apiVersion: v1\nkind: Pod\nmetadata: [\n"
    bad.write_text(text)
    code, out = _report("github", str(bad))
    assert code == 2
    # The flow sequence is never closed: the parser stops at the end of the stream.
    end = (text.count("\n") + 1, 1)
    assert keys(lint_text(text, bad.name)) == [("parse-error", *end)]
    escaped = escape_property(str(bad))
    assert out.startswith(
        f"::error file={escaped},line={end[0]},col={end[1]},title=kaffinity [parse-error]::"
    )
    assert out.count("\n") == 1


def test_format_auto_picks_github_on_actions() -> None:
    target = str(EXAMPLES / "parse-error" / "fail.yaml")
    on_actions = run("lint", "--no-config", target, env={"GITHUB_ACTIONS": "true"})
    assert on_actions.stdout.startswith("::error file=")
    [(rule, line, column)] = keys(lint_paths(target))
    assert (line, column) == position(Path(target).read_text(encoding="utf-8"), ":  # expect")
    assert f",line={line},col={column},title=kaffinity [{rule}]::" in on_actions.stdout
    assert not run("lint", "--no-config", target).stdout.startswith("::")


@pytest.mark.parametrize("fmt", ALL_FORMATS)
def test_output_file(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"report.{fmt}"
    completed = run("lint", "--no-config", "--format", fmt, "-o", str(out), str(EXAMPLES / "helm-template"))
    assert completed.stdout == ""
    assert completed.returncode == 0  # helm-template is a warning; default --fail-on error
    assert "helm-template" in out.read_text()
    # The file holds the finding where the example marks it, as each format spells a location.
    fail = EXAMPLES / "helm-template" / "fail.yaml"
    line, column = position(fail.read_text(encoding="utf-8"), "{{ include")
    assert keys(lint_paths(EXAMPLES / "helm-template")) == [("helm-template", line, column)]
    written = out.read_text()
    if fmt == "json":
        assert keys(json.loads(written)) == [("helm-template", line, column)]
    elif fmt == "sarif":
        [result] = json.loads(written)["runs"][0]["results"]
        region = result["locations"][0]["physicalLocation"]["region"]
        assert (result["ruleId"], region["startLine"], region["startColumn"]) == (
            "helm-template",
            line,
            column,
        )
    elif fmt == "github":
        assert f"fail.yaml,line={line},col={column},title=kaffinity [helm-template]::" in written
    else:
        assert f"fail.yaml:{line}:{column}: info [helm-template] " in written


def test_output_file_that_cannot_be_written(tmp_path: Path) -> None:
    (tmp_path / "no").write_text("")  # a file where the folder would be
    completed = run("lint", "--no-config", "-o", str(tmp_path / "no" / "such" / "dir.txt"), str(EXAMPLES))
    assert completed.returncode == 2
    assert "cannot write" in completed.stderr


def test_related_locations_in_every_format(
    zone_rules: tuple[Rule, ...], sarif_schema: dict[str, Any]
) -> None:
    result = lint_text(ZONE_ANTI, rules=zone_rules)
    text = render(result, "text", sources={"test.yaml": ZONE_ANTI})
    assert "\n    note: test.yaml:15:15: the selector\n" in text
    (finding,) = json.loads(render(result, "json"))["findings"]
    assert finding["related"][0]["line"] == 15 and finding["related"][0]["message"] == "the selector"
    sarif = json.loads(render(result, "sarif"))
    Draft7Validator(sarif_schema).validate(sarif)
    (sarif_result,) = sarif["runs"][0]["results"]
    assert sarif_result["relatedLocations"][0]["physicalLocation"]["region"] == {
        "startLine": 15,
        "startColumn": 15,
    }
    assert sarif_result["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == "Deployment/shop/web"


ROLLOUT = ("examples/rollout-deadlock/fail.yaml", "--cluster", "examples/clusters/rollout-deadlock.yaml")


def test_concise_is_one_line_per_finding_naming_the_object_and_the_summary() -> None:
    code, out = _report("concise", *ROLLOUT, cwd=EXAMPLES.parent)
    assert code == 1
    lines = out.splitlines()
    path = EXAMPLES / "rollout-deadlock" / "fail.yaml"
    line, column = position(path.read_text(encoding="utf-8"), "labelSelector: # expect")
    # revision-unscoped's warning on the same term gives way to the replay on the declared cluster.
    assert keys(lint_paths(path, cluster=ROLLOUT[2])) == [("rollout-deadlock", line, column)]
    where = f"examples/rollout-deadlock/fail.yaml:{line}:{column}"
    on = "Deployment ex-rollout-deadlock-fail/nginx-deployment: "
    assert [line.split(" ", 3)[:3] for line in lines[:-1]] == [[f"{where}:", "error", "[rollout-deadlock]"]]
    assert all(line.split(" ", 3)[3].startswith(on) for line in lines[:-1])
    assert lines[-1] == "Found 1 problem (1 error) in 1 file."


def test_min_severity_hides_from_the_report_not_from_the_exit_code() -> None:
    spread = "examples/replicas-not-spread/fail.yaml"  # two infos beside the rollout's error
    completed = run(
        "lint",
        "--no-config",
        "--format",
        "concise",
        "--min-severity",
        "error",
        *ROLLOUT,
        spread,
        cwd=EXAMPLES.parent,
    )
    assert completed.returncode == 1
    lines = completed.stdout.splitlines()
    assert [line.split(" ")[2] for line in lines[:-1]] == ["[rollout-deadlock]"]
    # The error shown is the finding of the data, where the example marks it; the infos beside
    # it are found, only not shown.
    path = EXAMPLES / "rollout-deadlock" / "fail.yaml"
    where = position(path.read_text(encoding="utf-8"), "labelSelector: # expect")
    found = lint_paths(path, EXAMPLES.parent / spread, cluster=ROLLOUT[2])
    assert sorted(finding.severity.value for finding in found.findings) == ["error", "info", "info"]
    assert ("rollout-deadlock", *where) in keys(found)
    assert lines[0].startswith("examples/rollout-deadlock/fail.yaml:{}:{}: error ".format(*where))
    assert lines[-1].endswith("; 2 below --min-severity not shown.")
    # A warning alone hidden, --fail-on warning: the run still fails.
    target = "examples/revision-unscoped/fail.yaml"
    hidden = run(
        "lint", "--no-config", "--min-severity", "error", "--fail-on", "warning", target, cwd=EXAMPLES.parent
    )
    assert hidden.returncode == 1
    assert hidden.stdout.startswith("No problems shown in 1 file;")


def test_github_names_files_as_the_workspace_does_and_says_where_in_the_text() -> None:
    code, out = _report("github", "./examples/revision-unscoped/fail.yaml", cwd=EXAMPLES.parent)
    assert code == 0
    line = out.splitlines()[0]
    file = "examples/revision-unscoped/fail.yaml"
    properties, message = line.split("::", 2)[1:]
    assert properties.startswith(f"warning file={file},line=")
    row, column = properties.split("line=")[1].split(",col=")[0], properties.split(",col=")[1].split(",")[0]
    assert message.startswith(f"{file}:{row}:{column}: ")
    # The first annotation is the first finding: the anti-affinity term the example marks.
    path = EXAMPLES / "revision-unscoped" / "fail.yaml"
    first = keys(lint_paths(path))[0]
    assert first == ("revision-unscoped", *position(path.read_text(encoding="utf-8"), "labelSelector:", 1))
    assert (int(row), int(column)) == first[1:]


def test_sarif_rule_names_differ_from_ids_and_link_to_the_docs() -> None:
    code, out = _report("sarif", *ROLLOUT, cwd=EXAMPLES.parent)
    assert code == 1
    rules = json.loads(out)["runs"][0]["tool"]["driver"]["rules"]
    assert all(rule["name"].lower() != rule["id"].lower() for rule in rules)
    by_id = {rule["id"]: rule for rule in rules}
    assert by_id["schema"]["name"] == "SchemaCheck"
    assert by_id["rollout-deadlock"]["name"] == "RolloutDeadlock"
    assert by_id["rollout-deadlock"]["helpUri"].endswith("/docs/rules.md#rollout-deadlock")
    # The result points at its rule by index, and sits where the example marks it.
    [result] = [r for r in json.loads(out)["runs"][0]["results"] if r["ruleId"] == "rollout-deadlock"]
    assert rules[result["ruleIndex"]]["name"] == "RolloutDeadlock"
    region = result["locations"][0]["physicalLocation"]["region"]
    text = (EXAMPLES / "rollout-deadlock" / "fail.yaml").read_text(encoding="utf-8")
    assert (region["startLine"], region["startColumn"]) == position(text, "labelSelector: # expect")
    rules_md = (EXAMPLES.parent / "docs" / "rules.md").read_text()
    assert all(f"\n## {rule['id']}\n" in rules_md for rule in rules)  # every link has its section


def test_rules_say_which_rules_fix_can_fix() -> None:
    listed = json.loads(run("rules", "--format", "json").stdout)
    assert [rule["name"] for rule in listed if rule["fixable"]] == ["revision-unscoped"]
    table = run("rules").stdout.splitlines()
    assert table[0].split()[:4] == ["rule", "category", "severity", "fix"]
    row = next(line for line in table if line.startswith("revision-unscoped "))
    assert row.split()[3] == "yes"


def _multitool() -> Path | None:
    """Microsoft's SARIF Multitool (npm ``@microsoft/sarif-multitool``), as .ci/run installs it
    under .ci/node, or where ``SARIF_MULTITOOL`` says."""
    import os

    given = os.environ.get("SARIF_MULTITOOL")
    candidates = [Path(given)] if given else []
    candidates.append(
        EXAMPLES.parent
        / ".ci"
        / "node"
        / "node_modules"
        / "@microsoft"
        / "sarif-multitool-linux"
        / "Sarif.Multitool"
    )
    return next((path for path in candidates if path.is_file()), None)


def test_the_sarif_multitool_finds_no_error_or_warning(tmp_path: Path) -> None:
    """The SARIF of a run with findings, a policy and every rule passes Microsoft's validator with
    the GitHub ingestion rules (rule kinds Sarif, Gh, Ghas) at levels error and warning."""
    import subprocess

    tool = _multitool()
    if tool is None:
        pytest.skip("the SARIF Multitool is not installed (npm install @microsoft/sarif-multitool)")
    report = tmp_path / "run.sarif"
    args = ("--policy", str(POLICY_EXAMPLES / "admission.yaml"), "-o", str(report))
    run("lint", "--no-config", "--format", "sarif", *ROLLOUT, *args, cwd=EXAMPLES.parent)
    out = tmp_path / "validation.sarif"
    subprocess.run(
        [str(tool), "validate", str(report), "--rule-kind", "Sarif;Gh;Ghas", "--level", "Error;Warning",
         "-o", str(out), "--log", "ForceOverwrite"],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    results = [result for run_ in json.loads(out.read_text())["runs"] for result in run_.get("results", [])]
    assert [(r["ruleId"], r["level"], r["message"]) for r in results] == []


def test_a_file_level_error_has_a_region_in_sarif(tmp_path: Path) -> None:
    """Issue 33: a finding of a whole file (a kustomization kustomize cannot build) had no region
    in SARIF, where GitHub code scanning needs ``region.startLine``: its first line."""
    from kaffinity.repo.engines import kustomize_engine

    if kustomize_engine() is None:
        pytest.skip("neither kustomize nor kubectl is on the PATH")
    (tmp_path / "kustomization.yaml").write_text("resources:\n- missing.yaml\n")
    report = json.loads(run("lint", "--no-config", "--no-cache", "--format", "json", str(tmp_path)).stdout)
    assert [(f["rule"], f["line"]) for f in report["findings"]] == [("parse-error", None)]
    completed = run("lint", "--no-config", "--no-cache", "--format", "sarif", str(tmp_path))
    [result] = json.loads(completed.stdout)["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}
