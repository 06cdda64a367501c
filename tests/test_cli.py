"""Exit codes, selection, --fail-on, rules listing, version, and the installed command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kaffinity import __version__
from kaffinity.report.docs import rule_catalogue
from kaffinity.rules import RULES

from .kit import EXAMPLES, REPO, keys, no_internal_error, position, run, run_json, run_raw

FAIL = str(EXAMPLES / "parse-error" / "fail.yaml")
HELM = str(EXAMPLES / "helm-template" / "fail.yaml")
UNUSED = str(EXAMPLES / "unused-suppression" / "fail.yaml")
CLEAN = str(EXAMPLES / "parse-error" / "pass.yaml")


def test_exit_0_when_clean() -> None:
    assert run_json(CLEAN)[0] == 0


def test_exit_1_when_a_finding_reaches_fail_on() -> None:
    assert run_json(HELM)[0] == 0  # info; default --fail-on error
    assert run_json(HELM, "--fail-on", "warning")[0] == 0  # the pre-commit hook's: not failed
    assert run_json(HELM, "--fail-on", "info")[0] == 1
    assert run_json(UNUSED, "--fail-on", "warning")[0] == 0
    assert run_json(UNUSED, "--fail-on", "info")[0] == 1


def test_exit_2_for_unparsable_input_even_with_fail_on_none() -> None:
    code, report = run_json(FAIL, HELM, "--fail-on", "none")
    assert code == 2
    assert {f["rule"] for f in report["findings"]} == {"parse-error", "helm-template"}
    assert keys(report) == [  # in file order: helm-template/ before parse-error/
        ("helm-template", *position(Path(HELM).read_text(encoding="utf-8"), "{{ include")),
        ("parse-error", *position(Path(FAIL).read_text(encoding="utf-8"), ":  # expect")),
    ]
    assert [f["severity"] for f in report["findings"]] == ["info", "error"]


@pytest.mark.parametrize(
    "args",
    [
        ("lint", "--format", "xml", CLEAN),
        ("lint", "--fail-on", "sometimes", CLEAN),
        ("lint", "--select", "no-such-rule", CLEAN),
        ("lint", "--feature-gates", "Foo", CLEAN),
        ("lint", "--kube-version", "2.0", CLEAN),
        ("lint", "--config", "/nonexistent/.kaffinity.yaml", CLEAN),
        ("rules", "no-such-rule"),
        ("frobnicate",),
    ],
)
def test_exit_2_for_usage_errors(args: tuple[str, ...]) -> None:
    completed = run(*args)
    assert completed.returncode == 2, completed


#: Runs the command line with one rule's check replaced by one that raises (a rule with a bug),
#: or (rule "-") with the whole command raising: argv[1] is the rule, the rest the command line.
_CRASH = """\
import sys
from kaffinity import cli
from kaffinity.rules import BY_NAME
def broken(*args, **kwargs):
    raise KeyError("boom")
if sys.argv[1] == "-":
    cli.app = broken
else:
    object.__setattr__(BY_NAME[sys.argv[1]], "check", broken)
sys.argv = ["kaffinity", *sys.argv[2:]]
cli.main()
"""


def _crash(rule: str, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key != "KAFFINITY_DEBUG"}
    return subprocess.run(
        [sys.executable, "-c", _CRASH, rule, *args],
        capture_output=True,
        text=True,
        env={**environment, "NO_COLOR": "1"},
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [
        ("lint", "--no-config", CLEAN),
        ("lint", "--no-config", "--fail-on", "none", CLEAN),
        ("lint", "--no-config", FAIL),  # bad input too: the bug wins over exit code 2
        ("graph", "--no-config", CLEAN),
        ("fix", "--no-config", "--diff", CLEAN),
    ],
)
def test_exit_3_when_a_rule_crashes(args: tuple[str, ...]) -> None:
    completed = _crash("pdb-overlap", *args)
    assert completed.returncode == 3, completed
    lines = [line for line in completed.stderr.splitlines() if "internal error" in line]
    assert lines == [
        "kaffinity: internal error in rule pdb-overlap: KeyError: 'boom' (<string>:5); please report it"
    ]
    assert "Traceback" not in completed.stderr


def test_exit_3_on_an_unexpected_exception() -> None:
    completed = _crash("-", "lint", "--no-config", CLEAN)
    assert (completed.returncode, completed.stdout) == (3, "")
    assert completed.stderr == (
        "kaffinity: internal error: KeyError: 'boom' "
        "(run with KAFFINITY_DEBUG=1 for details and please report it)\n"
    )


def test_the_kit_fails_a_test_on_an_internal_error() -> None:
    completed = _crash("pdb-overlap", "lint", "--no-config", CLEAN)
    with pytest.raises(AssertionError, match="internal error"):
        no_internal_error(completed.returncode, completed.stderr)
    with pytest.raises(AssertionError, match="internal error"):
        no_internal_error(2, completed.stderr)  # the line alone, whatever the exit code


def test_unknown_rule_suggests_the_right_name() -> None:
    completed = run("lint", "--select", "helm-templates", CLEAN)
    assert "did you mean 'helm-template'" in completed.stderr


def test_select_and_ignore_by_rule_and_category() -> None:
    both = [HELM, UNUSED]
    template = [("helm-template", *position(Path(HELM).read_text(encoding="utf-8"), "{{ include"))]
    unused_text = Path(UNUSED).read_text(encoding="utf-8")
    unused = [  # the annotation's key, and the comment
        ("unused-suppression", *position(unused_text, "kaffinity.io/ignore")),
        ("unused-suppression", *position(unused_text, "# kaffinity: ignore[parse-error]")),
    ]
    assert {f["rule"] for f in run_json(*both, "--ignore", "input")[1]["findings"]} == {"unused-suppression"}
    # (with the input category ignored, the suppression of parse-error is not judged)
    assert keys(run_json(*both, "--ignore", "input")[1]) == unused[:1]
    assert {f["rule"] for f in run_json(*both, "--select", "helm-template")[1]["findings"]} == {
        "helm-template"
    }
    assert keys(run_json(*both, "--select", "helm-template")[1]) == template
    # The most specific wins: a rule selected by name within an ignored category runs.
    report = run_json(*both, "--select", "helm-template", "--ignore", "input")[1]
    assert {f["rule"] for f in report["findings"]} == {"helm-template"}
    assert keys(report) == template
    report = run_json(*both, "--select", "input,suppression", "--ignore", "helm-template")[1]
    assert {f["rule"] for f in report["findings"]} == {"unused-suppression"}
    assert keys(report) == unused


def test_version() -> None:
    completed = run("--version")
    assert completed.stdout.strip() == f"kaffinity {__version__}"
    assert completed.returncode == 0


def test_rules_listing_and_explanation() -> None:
    listing = run("rules").stdout
    for rule in RULES:
        assert rule.name in listing and rule.summary in listing
    explained = run("rules", "helm-template").stdout
    for section in ("## What it finds", "## Why it matters", "## Example", "## Fix"):
        assert section in explained
    as_json = json.loads(run("rules", "--format", "json").stdout)
    assert [rule["name"] for rule in as_json] == [rule.name for rule in RULES]


def test_every_rule_has_the_documented_sections() -> None:
    for rule in RULES:
        for section in ("## What it finds", "## Why it matters", "## Example", "## Fix", "## References"):
            assert section in rule.docs, (rule.name, section)
        # The upstream sources come last, each a bullet, as in ruff's rule pages.
        references = rule.docs.split("\n## References\n", 1)[1]
        assert "\n## " not in references, rule.name
        assert references.count("\n- ") + references.startswith("- ") >= 1, rule.name


def test_rule_catalogue_is_up_to_date() -> None:
    current = (REPO / "docs" / "rules.md").read_text(encoding="utf-8")
    assert current == rule_catalogue(RULES), "regenerate: kaffinity rules --format markdown > docs/rules.md"


def test_installed_command_runs_from_any_folder(tmp_path: Path) -> None:
    """The console script, outside the checkout: schemas ship inside the package."""
    command = shutil.which("kaffinity", path=str(Path(sys.executable).parent))
    assert command is not None, "pip install . provides the kaffinity command"
    (tmp_path / ".kaffinity.yaml").write_text("kube-version: '1.33'\nfail-on: info\n")
    (tmp_path / "t.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Values.x }}\n")
    import subprocess

    completed = subprocess.run(
        [command, "lint", "t.yaml"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert completed.returncode == 1, completed.stderr
    assert completed.stdout.startswith("t.yaml:4:9: info [helm-template]")


def test_exclude_and_namespace_flags(tmp_path: Path) -> None:
    (tmp_path / "vendor").mkdir()
    (tmp_path / "vendor" / "broken.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: [\n")
    app = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: {kaffinity.io/ignore: all}\n"
    (tmp_path / "app.yaml").write_text(app)
    code, report = run_json(str(tmp_path), "--exclude", "vendor", "--namespace", "team-a")
    assert code == 0
    assert keys(report) == [("unused-suppression", *position(app, "kaffinity.io/ignore"))]
    (finding,) = report["findings"]
    assert finding["rule"] == "unused-suppression" and finding["object"]["namespace"] == "team-a"
    assert run_json(str(tmp_path))[0] == 2


def test_force_color_and_no_color() -> None:
    assert "\x1b[" in run("lint", "--no-config", FAIL, env={"FORCE_COLOR": "1", "NO_COLOR": ""}).stdout
    assert "\x1b[" not in run("lint", "--no-config", "--color", "auto", FAIL).stdout


def test_extra_reports_match_the_formats_they_name(tmp_path: Path) -> None:
    """``--report FORMAT=FILE`` writes what ``--format FORMAT`` prints, from the same run."""
    sarif, report = tmp_path / "out.sarif", tmp_path / "out.json"
    both = run(
        "lint", "--no-config", "--format", "text", "--report", f"sarif={sarif}", "--report", f"json={report}",
        UNUSED,
    )  # fmt: skip
    assert both.returncode == run("lint", "--no-config", UNUSED).returncode
    assert both.stdout == run("lint", "--no-config", "--format", "text", UNUSED).stdout
    for fmt, path in (("sarif", sarif), ("json", report)):
        alone = run("lint", "--no-config", "--format", fmt, UNUSED)
        assert path.read_text(encoding="utf-8") == alone.stdout, fmt


@pytest.mark.parametrize("value", ["sarif", "yaml=out.yaml", "json=", "=out.json"])
def test_a_bad_report_option_is_a_usage_error(value: str, tmp_path: Path) -> None:
    completed = run("lint", "--no-config", "--report", value, CLEAN, cwd=tmp_path)
    assert completed.returncode == 2
    assert completed.stderr.startswith(f"kaffinity: error: --report '{value}' is not FORMAT=FILE")
    assert len(completed.stderr.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_report_is_exit_2_without_traceback(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    target = tmp_path / "a-file" / "out.sarif"  # a folder that cannot be made
    completed = run("lint", "--no-config", "--report", f"sarif={target}", CLEAN)
    assert completed.returncode == 2
    assert completed.stderr.strip().startswith(f"kaffinity: error: {target}: cannot write")


def test_a_report_in_a_missing_folder_makes_the_folder(tmp_path: Path) -> None:
    """Issue 33: the README's `schema -o .schemas/kubernetes.json` failed in a fresh repository."""
    target = tmp_path / "reports" / "ci" / "out.sarif"
    completed = run(
        "lint", "--no-config", "--report", f"sarif={target}", "-o", str(tmp_path / "out" / "x.txt"), CLEAN
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(target.read_text())["version"] == "2.1.0"
    assert (tmp_path / "out" / "x.txt").is_file()


@pytest.mark.parametrize(
    ("args", "first"),
    [
        (("lint", "--bogus"), "kaffinity: error: no such option: --bogus"),
        (("lint", "--jbos", "2"), "kaffinity: error: no such option: --jbos (did you mean --jobs?)"),
        (
            ("lint", "--format", "nope", "x.yaml"),
            "kaffinity: error: invalid value for '--format' / '-f': 'nope' is not one of "
            "'auto', 'text', 'json', 'sarif', 'github', 'markdown', 'concise'",
        ),
        (("nosuchcmd",), "kaffinity: error: no such command 'nosuchcmd'"),
    ],
)
def test_usage_errors_are_one_line_and_the_help_to_read(args: tuple[str, ...], first: str) -> None:
    """One error style (issue 22): no box, no "Value error", "did you mean" only when close."""
    completed = run_raw(*args)
    assert completed.returncode == 2
    command = "kaffinity" if args[0] == "nosuchcmd" else f"kaffinity {args[0]}"
    assert completed.stderr.splitlines() == [first, f"Try '{command} --help' for help."]


@pytest.mark.parametrize("written", ["1.30", "v1.30", "1.30.2", "v1.30.2"])
def test_kube_version_as_written(written: str) -> None:
    """kubectl's and kubeconform's spellings name the minor: at 1.30 the MatchLabelKeysInPodAffinity
    gate is off, so the example's matchLabelKeys is dropped (at 1.37 it is on)."""
    example = str(EXAMPLES / "rollout-deadlock" / "pass.yaml")
    completed = run_raw("lint", "--no-config", "--kube-version", written, "--format", "json", example)
    assert completed.returncode == 0, completed.stderr
    assert [f["rule"] for f in json.loads(completed.stdout)["findings"]] == ["gated-field-dropped"]
    # At the term's matchLabelKeys (the first mention is in the example's comment).
    text = Path(example).read_text(encoding="utf-8")
    where = position(text, "matchLabelKeys: [pod-template-hash]", 2)
    assert keys(json.loads(completed.stdout)) == [("gated-field-dropped", *where)]
    assert json.loads(completed.stdout)["findings"][0]["severity"] == "warning"
