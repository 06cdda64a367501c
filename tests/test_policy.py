"""Policies (``--policy``, ``policies:``): kaffinity.io/v1alpha1 Policy objects as rules.

The fixtures in tests/data/policies take their workloads' shapes from the real corpus. A
finding points at the field the policy's schema names, under the level the policy targets;
a bad policy is an error at its own line, and the other policies and the built-in rules run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kaffinity.load.parse import parse
from kaffinity.policy.check import policy_rule
from kaffinity.policy.load import _policy, load_policies

from .kit import POLICY_EXAMPLES, REPO, findings, keys, lint_text, position, run, run_json

DATA = REPO / "tests" / "data" / "policies"
WORKLOADS = DATA / "workloads.yaml"
TEXT = WORKLOADS.read_text(encoding="utf-8")


def _policy_keys(*policy_files: Path, args: tuple[str, ...] = ()) -> tuple[int, list[tuple[str, int, int]]]:
    flags = [flag for path in policy_files for flag in ("--policy", str(path))]
    code, report = run_json(str(WORKLOADS), "--select", "policy", *flags, *args)
    return code, [(f["rule"], f["line"], f["column"]) for f in report["findings"]]


def test_a_finding_points_at_the_field_under_the_target_of_each_kind() -> None:
    code, found = _policy_keys(DATA / "scheduling.yaml")
    assert code == 1
    frontend_spec = position(TEXT, "spec:", 1, after="labels: {app: frontend}")
    postgres_key = position(TEXT, "topologyKey: topology.kubernetes.io/zone", 1, after="podAntiAffinity")
    cronjob_key = position(TEXT, "topologyKey: topology.kubernetes.io/region")
    assert found == [
        ("zone-spread-required", *frontend_spec),  # no topologySpreadConstraints in its pod spec
        ("hostname-only-anti-affinity", *postgres_key),
        ("hostname-only-anti-affinity", *cronjob_key),  # spec.jobTemplate.spec.template.spec
    ]


def test_match_selects_kinds_namespaces_labels_and_replicas() -> None:
    """worker (2 replicas) and the CronJob are not zone-spread's; postgres (3, zone spread)
    passes it; still-runs matches only namespace shop with tier=prod: frontend."""
    loaded = load_policies([str(DATA / "scheduling.yaml"), str(DATA / "bad.yaml")])
    rules = [policy_rule(policy) for policy in loaded.policies]
    result = lint_text(TEXT, rules=rules, name=str(WORKLOADS))
    named = {(finding.rule, str(finding.object)) for finding in findings(result)}
    assert ("zone-spread-required", "Deployment/shop/frontend") in named
    assert not any(obj == "Deployment/shop/worker" for _, obj in named)
    assert [obj for rule, obj in named if rule == "still-runs"] == ["Deployment/shop/frontend"]


def test_bad_policies_are_errors_at_their_lines_and_the_rest_still_runs() -> None:
    completed = run(
        "lint",
        "--no-config",
        "--format",
        "json",
        "--select",
        "policy",
        str(WORKLOADS),
        "--policy",
        str(DATA / "bad.yaml"),
    )
    assert completed.returncode == 2
    bad = (DATA / "bad.yaml").read_text(encoding="utf-8")
    errors = [line.split(": error: ")[0] for line in completed.stderr.splitlines() if ": error: " in line]
    assert errors == [
        f"{DATA / 'bad.yaml'}:{line}:{column}"
        for line, column in (
            position(bad, "name: Bad_Name"),  # not a rule name
            position(bad, "type: 12"),  # spec.schema is no JSON Schema
            position(bad, "name: unschedulable"),  # a built-in rule's name
            position(bad, "('demo')\""),  # does not compile: CEL names the call
        )
    ]
    report = json.loads(completed.stdout)
    assert [(f["rule"], f["line"]) for f in report["findings"]] == [
        ("still-runs", position(TEXT, "metadata:", 1)[0])
    ]


def test_a_missing_policy_file_is_a_usage_error(tmp_path: Path) -> None:
    completed = run("lint", "--no-config", str(WORKLOADS), "--policy", str(tmp_path / "nope.yaml"))
    assert completed.returncode == 2
    assert completed.stderr == f"kaffinity: error: {tmp_path / 'nope.yaml'}: policy file not found\n"
    assert completed.stdout == ""  # no report: nothing was linted (it said "No problems found")


def test_policies_in_the_config_are_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "scheduling.yaml").write_text((DATA / "scheduling.yaml").read_text())
    (tmp_path / ".kaffinity.yaml").write_text("policies: [policies]\nselect: [policy]\n")
    (tmp_path / "app.yaml").write_text(TEXT)
    completed = run("lint", "--format", "json", "app.yaml", cwd=tmp_path)
    assert completed.returncode == 1
    rules = [f["rule"] for f in json.loads(completed.stdout)["findings"]]
    assert rules == ["zone-spread-required", "hostname-only-anti-affinity", "hostname-only-anti-affinity"]


@pytest.mark.parametrize(
    "how", [("--ignore", "policy"), ("--ignore", "zone-spread-required,hostname-only-anti-affinity")]
)
def test_the_policy_category_is_selected_and_ignored_like_any(how: tuple[str, str]) -> None:
    code, found = _policy_keys(DATA / "scheduling.yaml", args=how)
    assert found == [] and code == 0


def test_a_policy_finding_is_suppressed_like_any() -> None:
    annotated = TEXT.replace(
        "  labels: {tier: prod}\n",
        "  labels: {tier: prod}\n  annotations:\n    kaffinity.io/ignore: zone-spread-required\n",
    )
    loaded = load_policies([str(DATA / "scheduling.yaml")])
    rules = [policy_rule(policy) for policy in loaded.policies]
    assert [key[0] for key in keys(lint_text(annotated, rules=rules))] == [
        "hostname-only-anti-affinity",
        "hostname-only-anti-affinity",
    ]


def test_a_lint_without_policies_does_not_import_the_policy_engine() -> None:
    completed = run(
        "lint",
        "--no-config",
        str(REPO / "examples" / "unschedulable" / "pass.yaml"),
        env={"PYTHONPROFILEIMPORTTIME": "1"},
    )
    assert completed.returncode == 0
    assert "kaffinity.policy" not in completed.stderr


def test_the_policy_schema_reports_every_mistake_with_its_path() -> None:
    text = (
        "apiVersion: kaffinity.io/v1alpha1\nkind: Policy\nmetadata: {name: p}\n"
        "spec:\n  message: m\n  schema: {}\n  target: pod\n  match: {kinds: []}\n"
    )
    (doc,) = parse("p.yaml", text).documents
    policy, errors = _policy(doc)
    assert policy is None
    assert errors == [
        "p.yaml:{}:{}: error: spec.match.kinds: expected at least 1 item, got []".format(
            *position(text, "kinds: []")
        ),
        "p.yaml:{}:{}: error: spec.target: expected one of object, podTemplate, podSpec, got 'pod'".format(
            *position(text, "target: pod")
        ),
    ]


def test_a_policy_is_named_in_the_config_like_a_rule(tmp_path: Path) -> None:
    """``severity:`` and ``ignore:`` in .kaffinity.yaml may name a policy; an unknown name is
    still an error."""
    (tmp_path / "scheduling.yaml").write_text((DATA / "scheduling.yaml").read_text())
    (tmp_path / "app.yaml").write_text(TEXT)
    (tmp_path / ".kaffinity.yaml").write_text(
        "policies: [scheduling.yaml]\nselect: [policy]\nignore: [hostname-only-anti-affinity]\n"
        "severity: {zone-spread-required: warning}\n"
    )
    completed = run("lint", "--format", "json", "app.yaml", cwd=tmp_path)
    assert completed.returncode == 0  # a warning does not fail the run (fail-on: error)
    found = json.loads(completed.stdout)["findings"]
    assert [(f["rule"], f["severity"]) for f in found] == [("zone-spread-required", "warning")]
    (tmp_path / ".kaffinity.yaml").write_text("policies: [scheduling.yaml]\nignore: [zone-spread]\n")
    completed = run("lint", "app.yaml", cwd=tmp_path)
    assert completed.returncode == 2 and "unknown rule or category 'zone-spread'" in completed.stderr


def test_the_json_report_with_policies_follows_its_schema() -> None:
    from jsonschema import Draft202012Validator

    from kaffinity.load.resources import schema

    code, report = run_json(str(WORKLOADS), "--policy", str(DATA / "scheduling.yaml"))
    assert code == 1
    Draft202012Validator(schema("output.schema.json")).validate(report)
    categories = {f["rule"]: f["category"] for f in report["findings"] if f["category"] == "policy"}
    assert categories == {"zone-spread-required": "policy", "hostname-only-anti-affinity": "policy"}


def test_the_policy_library_passes_its_own_fixtures() -> None:
    completed = run("policy", "test", str(REPO / "examples" / "policies"))
    assert completed.returncode == 0, completed.stdout
    assert completed.stdout.splitlines()[-1] == "5 fixture(s), 7 policy(ies): 0 failed."


def test_a_fixture_fails_on_a_missing_and_on_an_unexpected_finding(tmp_path: Path) -> None:
    library = REPO / "examples" / "policies"
    (tmp_path / "scheduling.yaml").write_text((library / "scheduling.yaml").read_text())
    fixture = (library / "fail.yaml").read_text()
    # The Job's marker moves one line down; the cache's marker is dropped.
    moved = fixture.replace(
        "    spec:  # expect: gpu-tolerations\n      restartPolicy: Never\n",
        "    spec:\n      restartPolicy: Never  # expect: gpu-tolerations\n",
    )
    moved = moved.replace("  # expect: hostname-only-anti-affinity", "")
    assert moved.count("# expect:") == fixture.count("# expect:") - 1
    (tmp_path / "fail.yaml").write_text(moved)
    completed = run("policy", "test", str(tmp_path))
    assert completed.returncode == 1
    name = str(tmp_path / "fail.yaml")
    gpu = position(moved, "restartPolicy: Never")[0]
    job_spec = position(moved, "spec:", 2, after="name: train")  # the pod spec, not the Job's
    cache_key = position(moved, "topologyKey: topology.kubernetes.io/zone")
    report = [line.strip() for line in completed.stdout.splitlines()]
    assert f"{name}:{gpu}: expected [gpu-tolerations], not reported" in report
    unexpected = [line.split(" [")[0] for line in report if "unexpected" in line]
    assert sorted(unexpected) == sorted(
        [
            f"{name}:{job_spec[0]}:{job_spec[1]}: unexpected",
            f"{name}:{cache_key[0]}:{cache_key[1]}: unexpected",
        ]
    )


def test_policy_test_without_a_policy_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "app.yaml").write_text(TEXT)
    completed = run("policy", "test", str(tmp_path))
    assert completed.returncode == 2
    assert "kaffinity: error: no policy found" in completed.stderr


def test_the_policies_are_read_once_per_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The settings (policy names in select, ignore, severity) and the rules share one reading."""
    import kaffinity.policy.load as policy_load

    read: list[tuple[str, ...]] = []
    real = policy_load.load_policies

    def counted(paths: Any, *args: Any, **kwargs: Any) -> Any:
        read.append(tuple(paths))
        return real(paths, *args, **kwargs)

    monkeypatch.setattr(policy_load, "load_policies", counted)
    # A config's paths stay in its repository (issue 31): the policy file is copied beside it.
    (tmp_path / "scheduling.yaml").write_text((DATA / "scheduling.yaml").read_text())
    (tmp_path / ".kaffinity.yaml").write_text("policies: [scheduling.yaml]\nignore: [zone-spread-required]\n")
    monkeypatch.chdir(tmp_path)
    result = run("lint", "--format", "json", "--select", "policy", str(WORKLOADS))
    assert result.returncode == 0  # warnings only: fail-on error
    assert [f["rule"] for f in json.loads(result.stdout)["findings"]] == ["hostname-only-anti-affinity"] * 2
    assert read == [(str(tmp_path / "scheduling.yaml"),)]


REFERENCES = """\
apiVersion: kaffinity.io/v1alpha1
kind: Policy
metadata: {name: remote-ref}
spec:
  message: remote
  schema:
    $ref: https://example.com/schema.json
---
apiVersion: kaffinity.io/v1alpha1
kind: Policy
metadata: {name: self-ref}
spec:
  message: endless
  schema: {$ref: "#"}
---
apiVersion: kaffinity.io/v1alpha1
kind: Policy
metadata: {name: loop-on-containers}
spec:
  message: loops only where a pod spec has containers
  schema:
    properties:
      containers: {$ref: "#/$defs/a"}
    $defs:
      a: {$ref: "#/$defs/b"}
      b: {$ref: "#/$defs/a"}
"""


def test_a_schema_that_refers_outside_or_without_end_is_bad_input_not_a_crash(tmp_path: Path) -> None:
    """Nothing is fetched: a remote $ref is an error at its line; `$ref: "#"` is caught when the
    policy is read; a loop only some manifests reach is a finding on them, not an internal error."""
    (tmp_path / "refs.yaml").write_text(REFERENCES)
    completed = run(
        "lint",
        "--no-config",
        "--format",
        "json",
        "--select",
        "policy",
        str(WORKLOADS),
        "--policy",
        str(tmp_path / "refs.yaml"),
    )
    assert completed.returncode == 2
    errors = [line.split(": error: ")[0] for line in completed.stderr.splitlines() if ": error: " in line]
    name = str(tmp_path / "refs.yaml")
    assert errors == [
        "{}:{}:{}".format(name, *position(REFERENCES, "$ref: https://example.com")),
        "{}:{}:{}".format(name, *position(REFERENCES, 'schema: {$ref: "#"}')),
    ]
    found = json.loads(completed.stdout)["findings"]
    assert {f["rule"] for f in found} == {"loop-on-containers"}
    assert all(f["path"].endswith(".spec") and "cannot be evaluated" in f["message"] for f in found)


def test_policy_test_reads_more_policies_and_says_where_a_fixture_cannot_be_parsed(tmp_path: Path) -> None:
    """--policy adds policies from elsewhere; a fixture that does not parse is bad input (2),
    named at its line, and the other fixtures are still checked."""
    library = REPO / "examples" / "policies"
    (tmp_path / "fail.yaml").write_text((library / "fail.yaml").read_text())
    (tmp_path / "broken.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x\n")
    flags = ("--policy", str(library / "scheduling.yaml"), "--policy", str(library / "admission.yaml"))
    completed = run("policy", "test", str(tmp_path), *flags)
    assert completed.returncode == 2
    report = [line.strip() for line in completed.stdout.splitlines()]
    assert f"ok    {tmp_path / 'fail.yaml'} (5 finding(s))" in report
    assert f"FAIL  {tmp_path / 'broken.yaml'}" in report
    assert any(line.startswith(f"{tmp_path / 'broken.yaml'}:4:1: error: ") for line in report)


def test_a_fixture_naming_a_cluster_that_is_not_there_fails_at_its_settings_line(tmp_path: Path) -> None:
    library = REPO / "examples" / "policies"
    (tmp_path / "facts.yaml").write_text((library / "facts.yaml").read_text())
    fixture = (library / "fail-facts.yaml").read_text().replace("../clusters/topology.yaml", "nowhere.yaml")
    (tmp_path / "fail-facts.yaml").write_text(fixture)
    completed = run("policy", "test", str(tmp_path))
    assert completed.returncode == 2
    assert (
        f"{tmp_path / 'fail-facts.yaml'}:1:1: error: cluster file {tmp_path / 'nowhere.yaml'} not found"
        in (completed.stdout)
    )


def _policy_repository(root: Path) -> None:
    """Policies with their fixtures in policies/ (as examples/policies keeps them, and as
    kyverno's and gatekeeper's libraries keep tests beside policies), a manifest in apps/."""
    (root / "policies").mkdir()
    (root / "apps").mkdir()
    for name in ("scheduling.yaml", "admission.yaml", "pass.yaml", "fail.yaml"):
        shutil.copyfile(POLICY_EXAMPLES / name, root / "policies" / name)
    shutil.copyfile(POLICY_EXAMPLES / "fail.yaml", root / "apps" / "web.yaml")
    (root / ".kaffinity.yaml").write_text("policies: [policies]\n")


def test_fixtures_beside_the_configured_policies_are_not_linted_as_manifests(tmp_path: Path) -> None:
    """issue 33: `lint .` reports the manifests only; the fixtures, bad on purpose, are what
    `kaffinity policy test policies` reads (and it still does)."""
    _policy_repository(tmp_path)
    done = run("lint", "--format", "json", ".", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert {finding["file"] for finding in report["findings"]} == {"apps/web.yaml"}
    assert report["summary"]["files"] == 1
    # The pre-commit hook names the changed files: a fixture named so is still a fixture.
    hook = run("lint", "--format", "json", "--changed", "policies/fail.yaml", "apps/web.yaml", cwd=tmp_path)
    assert {finding["file"] for finding in json.loads(hook.stdout)["findings"]} == {"apps/web.yaml"}
    tested = run("policy", "test", "policies", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    # The policies' folder linted itself is linted as asked.
    asked = run("lint", "--format", "json", "policies", cwd=tmp_path)
    assert "policies/fail.yaml" in {finding["file"] for finding in json.loads(asked.stdout)["findings"]}
