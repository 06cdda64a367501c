"""kaffinity's two error styles (issue 33, item 5; docs/output.md): ``FILE:LINE:COL: error: ...``
where the error has a place, ``kaffinity: error: ...`` otherwise; one line each, exit code 2; a
schema's refusal said in kaffinity's words (what was expected, what was written), never
jsonschema's, at the offending key. Each error source is tried: the configuration file, the
cluster file, kaffinity policies and ValidatingAdmissionPolicies, the paths named on the command
line, the schema command.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kaffinity.load.schema_words import said

from .kit import run

PLACED = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<column>\d+): error: (?P<message>.+)$")
UNPLACED = re.compile(r"^kaffinity: error: (?P<message>.+)$")
#: jsonschema's own phrasing (jsonschema/_keywords.py), which no error line may carry.
JSONSCHEMA = re.compile(
    r"is not of type|is not one of \[|is a required property|is less than the minimum|"
    r"is not valid under any of the given schemas|Additional properties are not allowed"
)

DEPLOYMENT = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 1}\n"
POLICY = "apiVersion: kaffinity.io/v1alpha1\nkind: Policy\nmetadata: {name: p}\nspec:\n"
VAP = (
    "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: p}\n"
    "spec:\n"
)
CLUSTER = "apiVersion: kaffinity.io/v1alpha1\nkind: ClusterTopology\nmetadata: {name: lab}\nspec:\n"

# (files written, the command, the place (file, line, column) or None for kaffinity: error:)
CASES = {
    "config enum": (
        {".kaffinity.yaml": "render: true\nfail-on: foo\n"},
        ["lint", "w.yaml"],
        (".kaffinity.yaml", 2, 1),
    ),
    "config type": (
        {".kaffinity.yaml": "limits:\n  pods: many\n"},
        ["lint", "w.yaml"],
        (".kaffinity.yaml", 2, 3),
    ),
    "config minimum": ({".kaffinity.yaml": "jobs: 0\n"}, ["lint", "w.yaml"], (".kaffinity.yaml", 1, 1)),
    "config unknown key": (
        {".kaffinity.yaml": "fail_on: error\n"},
        ["lint", "w.yaml"],
        (".kaffinity.yaml", 1, 1),
    ),
    "config missing": ({}, ["lint", "--config", "nope.yaml", "w.yaml"], None),
    "cluster missing": ({}, ["lint", "--cluster", "nope.yaml", "w.yaml"], None),
    "policy missing": ({}, ["lint", "--policy", "nope.yaml", "w.yaml"], None),
    "policy required": (
        {"p.yaml": POLICY + "  match: {kinds: [Deployment]}\n  schema: {}\n"},
        ["lint", "--policy", "p.yaml", "w.yaml"],
        ("p.yaml", 4, 1),
    ),
    "policy type": (
        {"p.yaml": POLICY + "  message: m\n  match: 3\n  schema: {}\n"},
        ["lint", "--policy", "p.yaml", "w.yaml"],
        ("p.yaml", 6, 3),
    ),
    "policy enum": (
        {"p.yaml": POLICY + "  message: m\n  severity: fatal\n  schema: {}\n"},
        ["lint", "--policy", "p.yaml", "w.yaml"],
        ("p.yaml", 6, 3),
    ),
    "admission enum": (
        {"v.yaml": VAP + "  failurePolicy: Sometimes\n  validations: [{expression: 'true'}]\n"},
        ["lint", "--policy", "v.yaml", "w.yaml"],
        ("v.yaml", 5, 3),
    ),
    "unknown option": ({}, ["lint", "--no-such-option", "w.yaml"], None),
    "unknown schema": ({}, ["schema", "nosuch"], None),
    "unknown rule": ({}, ["lint", "--select", "nosuch", "w.yaml"], None),
}


@pytest.mark.parametrize("case", CASES)
def test_each_error_is_one_line_in_one_of_two_styles(tmp_path: Path, case: str) -> None:
    files, args, place = CASES[case]
    (tmp_path / "w.yaml").write_text(DEPLOYMENT)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    no_config = (
        [] if ".kaffinity.yaml" in files or args[0] != "lint" or "--config" in args else ["--no-config"]
    )
    done = run(*args[:1], *no_config, *args[1:], cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if PLACED.match(line) or UNPLACED.match(line)]
    assert len(errors) == 1, done.stderr
    (line,) = errors
    # Only a usage error adds click's hint line (Try '... --help'), as git and click do.
    others = [
        text for text in done.stderr.splitlines() if text != line and not text.startswith("kaffinity: note:")
    ]
    assert others == ([others[0]] if case == "unknown option" else []) and all(
        o.startswith("Try ") for o in others
    )
    assert JSONSCHEMA.search(line) is None, line
    if place is None:
        assert UNPLACED.match(line), line
    else:
        match = PLACED.match(line)
        assert match is not None, line
        assert (match["file"], int(match["line"]), int(match["column"])) == place


def test_a_config_value_is_said_as_expected_and_got(tmp_path: Path) -> None:
    (tmp_path / ".kaffinity.yaml").write_text("render: true\nfail-on: foo\n")
    (tmp_path / "w.yaml").write_text(DEPLOYMENT)
    done = run("lint", "w.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        ".kaffinity.yaml:2:1: error: fail-on: expected one of error, warning, info, none, got 'foo'"
    ]


def test_a_cluster_schema_error_is_a_parse_error_at_its_key(tmp_path: Path) -> None:
    """A cluster file is input: its schema errors are parse-error findings, at the key."""
    (tmp_path / "cluster.yaml").write_text(CLUSTER + "  nodes: many\n")
    (tmp_path / "w.yaml").write_text(DEPLOYMENT)
    done = run("lint", "--no-config", "--format", "json", "--cluster", "cluster.yaml", "w.yaml", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    (finding,) = [f for f in json.loads(done.stdout)["findings"] if f["rule"] == "parse-error"]
    assert (finding["file"], finding["line"], finding["column"]) == ("cluster.yaml", 5, 3)
    assert JSONSCHEMA.search(finding["message"]) is None, finding["message"]


def test_schema_words() -> None:
    """Each keyword said as expected / got, from real jsonschema errors."""
    from jsonschema import Draft202012Validator

    def one(schema: dict[str, object], value: object) -> str:
        (error,) = Draft202012Validator(schema).iter_errors(value)
        return said(error)

    assert one({"enum": ["a", "b"]}, "c") == "expected one of a, b, got 'c'"
    assert one({"type": "object"}, "foo") == "expected a mapping, got 'foo'"
    assert one({"type": ["string", "integer"]}, [1]) == "expected a string or an integer, got [1]"
    assert one({"minimum": 1}, 0) == "expected at least 1, got 0"
    assert one({"required": ["x"]}, {}) == "missing required key 'x'"
    assert one({"properties": {"a": {}}, "additionalProperties": False}, {"b": 1}) == "unknown key 'b'"
    assert (
        one({"oneOf": [{"type": "integer"}, {"type": "string"}]}, [1])
        == "expected an integer or a string, got [1]"
    )
    assert one({"minItems": 2}, [1]) == "expected at least 2 items, got [1]"
    assert one({"anyOf": [{"required": ["schema"]}, {"required": ["expression"]}]}, {}) == (
        "missing key 'schema' or 'expression'"
    )
