"""``kaffinity schema``, and what editors' YAML language server relies on in the shipped schemas.

The language server (redhat-developer/yaml-language-server, in VS Code's YAML extension, Neovim,
Helix, ...) runs on node, which a CI machine does not have; docs/editors.md records what it did
with these schemas. Here, in Python, the properties it depends on:

- each schema is valid for the draft it declares (``$schema``), one the server supports
  (draft-04, draft-07, 2019-09, 2020-12: its README);
- the schema is self-contained: every ``$ref`` is a local JSON pointer that resolves, so the file
  written by ``kaffinity schema -o`` works offline;
- no keyword that only 2019-09 / 2020-12 define: servers before 1.20.0 ignore them silently
  (measured: ``unevaluatedProperties: false`` reported by 1.20.0 and 2.0.0, not by 1.19.2);
- each YAML document of a file is validated on its own against the whole schema, the top-level
  ``allOf`` choosing the kind's entry point by ``apiVersion`` and ``kind``: a good multi-kind
  stream passes, a bad one fails at the fields the editor underlines, and other kinds pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import ValidationError
from jsonschema.validators import validator_for

from kaffinity.config import DEFAULT_KUBE_VERSION, KUBE_VERSIONS
from kaffinity.load.parse import parse
from kaffinity.load.resources import schema
from kaffinity.load.source import DataPath, format_path

from .kit import REPO, findings, lint_text, run

SCHEMAS = REPO / "schemas"
NAMES = {
    "config": "config.schema.json",
    "cluster": "cluster.schema.json",
    "output": "output.schema.json",
    "baseline": "baseline.schema.json",
    "policy": "policy.schema.json",
    "facts": "facts.schema.json",
    "admission": "admission.schema.json",
    "kubernetes": f"kubernetes-{DEFAULT_KUBE_VERSION}.schema.json",
}
SHIPPED = sorted(path.name for path in SCHEMAS.glob("*.json"))


def stdout_bytes(*args: str) -> bytes:
    completed = run("schema", *args)
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    return completed.stdout.encode("utf-8")


# --- the command -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(NAMES))
def test_each_name_prints_its_file_byte_for_byte(name: str) -> None:
    assert stdout_bytes(name) == (SCHEMAS / NAMES[name]).read_bytes()


def test_the_default_is_the_newest_kubernetes_schema() -> None:
    assert KUBE_VERSIONS[-1] == DEFAULT_KUBE_VERSION
    assert stdout_bytes() == (SCHEMAS / f"kubernetes-{KUBE_VERSIONS[-1]}.schema.json").read_bytes()


@pytest.mark.parametrize("version", KUBE_VERSIONS)
def test_each_version_written_with_output(tmp_path: Path, version: str) -> None:
    target = tmp_path / "k8s.json"
    completed = run("schema", "kubernetes", "--kube-version", version, "-o", str(target))
    assert (completed.returncode, completed.stdout, completed.stderr) == (0, "", "")
    assert target.read_bytes() == (SCHEMAS / f"kubernetes-{version}.schema.json").read_bytes()


def test_list_names_every_shipped_schema() -> None:
    completed = run("schema", "--list")
    assert completed.returncode == 0
    rows = [line.split(maxsplit=2) for line in completed.stdout.splitlines()]
    assert sorted(file for _, file, _ in rows) == SHIPPED
    assert {name: file for name, file, _ in rows if name != "kubernetes"} == {
        name: file for name, file in NAMES.items() if name != "kubernetes"
    }
    versions = [file for name, file, _ in rows if name == "kubernetes"]
    assert versions == [f"kubernetes-{version}.schema.json" for version in KUBE_VERSIONS]
    (default,) = [file for _, file, what in rows if "the default" in what]
    assert default == NAMES["kubernetes"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("openapi",),
            "kaffinity: error: unknown schema 'openapi' "
            "(one of kubernetes, config, cluster, output, baseline, policy, facts, admission)",
        ),
        (
            ("--kube-version", "1.26"),
            "--kube-version: kube-version '1.26' is not one kaffinity knows (1.27 to 1.37)",
        ),
        (
            ("kubernetes", "--kube-version", "2.0"),
            "--kube-version: kube-version '2.0' is not one kaffinity knows",
        ),
        (
            ("config", "--kube-version", "1.33"),
            "--kube-version applies to the kubernetes schema, not to 'config'",
        ),
        (
            ("output", "-o", "/dev/null/folder/out.json"),  # a folder that cannot be made
            "kaffinity: error: /dev/null/folder/out.json: cannot write",
        ),
    ],
)
def test_errors_are_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    completed = run("schema", *args)
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert completed.stderr.count("\n") == 1 and message in completed.stderr, completed.stderr


# --- what the language server relies on ------------------------------------------------------

# Keywords that 2019-09 and 2020-12 define and draft-07 does not: yaml-language-server before
# 1.20.0 validates as draft-07 and skips them without a word.
_NEWER_KEYWORDS = {
    "$anchor",
    "$dynamicAnchor",
    "$dynamicRef",
    "$recursiveAnchor",
    "$recursiveRef",
    "$vocabulary",
    "dependentRequired",
    "dependentSchemas",
    "maxContains",
    "minContains",
    "prefixItems",
    "unevaluatedItems",
    "unevaluatedProperties",
}
_SUPPORTED_DRAFTS = {
    "http://json-schema.org/draft-04/schema#",
    "http://json-schema.org/draft-07/schema#",
    "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2020-12/schema",
}
_NAME_MAPS = {"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"}
_DATA = {"enum", "const", "default", "examples"}


def _keywords(node: Any, where: str = "#") -> Iterator[tuple[str, str, Any]]:
    """(keyword, JSON pointer of its schema, value) for every keyword of every subschema."""
    if isinstance(node, list):
        for index, item in enumerate(node):
            yield from _keywords(item, f"{where}/{index}")
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        yield key, where, value
        if key in _NAME_MAPS and isinstance(value, dict):
            for name, sub in value.items():
                yield from _keywords(sub, f"{where}/{key}/{name}")
        elif key not in _DATA and not key.startswith("x-"):
            yield from _keywords(value, f"{where}/{key}")


def _resolve(document: Any, pointer: str) -> Any:
    node = document
    for part in pointer.removeprefix("#/").split("/") if pointer != "#" else ():
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


@pytest.mark.parametrize("name", SHIPPED)
def test_schema_is_valid_for_its_declared_draft(name: str) -> None:
    loaded = schema(name)
    assert loaded["$schema"] in _SUPPORTED_DRAFTS
    validator_for(loaded).check_schema(loaded)


@pytest.mark.parametrize("name", SHIPPED)
def test_schema_is_self_contained(name: str) -> None:
    loaded = schema(name)
    refs = [value for keyword, _, value in _keywords(loaded) if keyword == "$ref"]
    assert all(ref.startswith("#/") for ref in refs), [ref for ref in refs if not ref.startswith("#/")]
    for ref in refs:
        assert isinstance(_resolve(loaded, ref), dict), ref


@pytest.mark.parametrize("name", SHIPPED)
def test_schema_uses_no_keyword_older_servers_ignore(name: str) -> None:
    used = {(keyword, where) for keyword, where, _ in _keywords(schema(name)) if keyword in _NEWER_KEYWORDS}
    assert used == set()


def test_the_keyword_walk_sees_nested_keywords() -> None:
    """The walk above must not miss a keyword in a nested subschema (or it proves nothing)."""
    nested = {"$defs": {"a": {"properties": {"b": {"items": {"unevaluatedProperties": False}}}}}}
    assert [where for keyword, where, _ in _keywords(nested) if keyword in _NEWER_KEYWORDS] == [
        "#/$defs/a/properties/b/items"
    ]
    data_only = {"enum": [{"prefixItems": 1}], "properties": {"unevaluatedItems": {"type": "string"}}}
    assert [keyword for keyword, _, _ in _keywords(data_only) if keyword in _NEWER_KEYWORDS] == []


GOOD = """\
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: i}]
  nodeSelector: {kubernetes.io/os: linux}
  tolerations: [{key: dedicated, operator: Equal, value: web, effect: NoSchedule}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s}
spec:
  selector: {matchLabels: {app: s}}
  template:
    metadata: {labels: {app: s}}
    spec:
      containers: [{name: c, image: i}]
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - {labelSelector: {matchLabels: {app: s}}, topologyKey: kubernetes.io/hostname}
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [a, b]}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: c}
spec:
  schedule: "@hourly"
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{name: c, image: i}]
          topologySpreadConstraints:
            - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: b}
spec: {minAvailable: 50%, selector: {matchLabels: {app: s}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: m}
data: {affinity: "5"}
---
apiVersion: example.com/v1
kind: Deployment
metadata: {name: custom}
spec: {template: {spec: {affinity: 5}}}
"""
# One problem per document of each workload kind; the last two documents stay unchecked.
BAD = (
    GOOD.replace("operator: Equal, value: web", "operator: Equals, value: web")
    .replace("topologyKey: kubernetes.io/hostname}", "topologyKey: 5}\n        podAntiAfinity: {}")
    .replace("maxSkew: 1", 'maxSkew: "1"')
    .replace("minAvailable: 50%", "minAvailable: [1]")
)


def _editor_errors(text: str, version: str) -> list[tuple[int, str, str]]:
    """(document, field path, keyword) as the editor gets them: each document on its own."""
    validator = validator_for(schema(f"kubernetes-{version}.schema.json"))(
        schema(f"kubernetes-{version}.schema.json")
    )
    (file,) = [parse("manifests.yaml", text)]
    errors: list[tuple[int, str, str]] = []
    for index, doc in enumerate(file.documents):
        for error in validator.iter_errors(doc.data):
            errors.extend((index, format_path(path), str(error.validator)) for path in _fields(error))
    return sorted(errors)


def _fields(error: ValidationError) -> list[DataPath]:
    """The field a problem is at; for an unknown field, the field itself (the editor's squiggle)."""
    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties":
        known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        return [(*path, key) for key in error.instance if key not in known]
    return [path]


@pytest.mark.parametrize("version", KUBE_VERSIONS)
def test_a_good_multi_kind_stream_passes(version: str) -> None:
    assert _editor_errors(GOOD, version) == []


@pytest.mark.parametrize("version", KUBE_VERSIONS)
def test_a_bad_multi_kind_stream_fails_at_each_field(version: str) -> None:
    assert _editor_errors(BAD, version) == [
        (0, "spec.tolerations[0].operator", "enum"),
        (
            1,
            "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
            ".topologyKey",
            "type",
        ),
        (1, "spec.template.spec.affinity.podAntiAfinity", "additionalProperties"),
        (2, "spec.jobTemplate.spec.template.spec.topologySpreadConstraints[0].maxSkew", "type"),
        (3, "spec.minAvailable", "type"),
    ]


def test_the_editor_and_lint_agree_on_schema_problems() -> None:
    """What the editor underlines from the schema is what ``kaffinity lint`` reports as ``schema``."""
    result = lint_text(BAD, "manifests.yaml", kube_version=DEFAULT_KUBE_VERSION)
    from_lint = sorted(finding.path for finding in findings(result, "schema"))
    assert from_lint == sorted(path for _, path, _ in _editor_errors(BAD, DEFAULT_KUBE_VERSION))
