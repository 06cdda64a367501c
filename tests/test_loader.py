"""Loading: positions in every document, Lists, JSON, stdin, YAML 1.1 scalars, discovery."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kaffinity.load.files import ExcludeFn, discover
from kaffinity.load.parse import parse, resolve_plain
from kaffinity.load.read import read
from kaffinity.load.source import Span, format_path

from .kit import run_json

THREE_DOCS = """\
# a comment before the first document
apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
not: a manifest
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  template:
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector:
                matchLabels: {app: web}
              topologyKey: kubernetes.io/hostname
            -   topologyKey: topology.kubernetes.io/zone
"""

ANTI_TERMS = (
    "spec",
    "template",
    "spec",
    "affinity",
    "podAntiAffinity",
    "requiredDuringSchedulingIgnoredDuringExecution",
)


def test_positions_are_counted_from_the_start_of_the_file_in_the_third_document() -> None:
    source = parse("three.yaml", THREE_DOCS)
    assert [doc.index for doc in source.documents] == [0, 2]  # the middle one has no kind
    deployment = source.documents[1]
    terms = ANTI_TERMS
    assert deployment.span == Span(9, 1)
    assert deployment.locate(("metadata", "name")) == Span(12, 3)
    assert deployment.locate((*terms, 0)) == Span(20, 15)
    assert deployment.locate((*terms, 0, "topologyKey")) == Span(22, 15)
    assert deployment.locate((*terms, 0, "labelSelector", "matchLabels", "app")) == Span(21, 31)
    assert deployment.locate((*terms, 1)) == Span(23, 17)
    assert deployment.locate((*terms, 1, "topologyKey")) == Span(23, 17)


def test_missing_path_falls_back_to_nearest_recorded_ancestor() -> None:
    deployment = parse("three.yaml", THREE_DOCS).documents[1]
    terms = ANTI_TERMS
    assert deployment.locate((*terms, 1, "labelSelector", "matchLabels")) == Span(23, 17)
    assert deployment.locate((*terms, 7)) == Span(19, 11)
    assert deployment.locate(("nothing", "here")) == deployment.span


def test_kubectl_list_items_become_objects_with_file_positions() -> None:
    text = """\
apiVersion: v1
kind: List
metadata: {resourceVersion: ""}
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: n1
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: web
"""
    docs = parse("list.yaml", text).documents
    assert [doc.data["kind"] for doc in docs] == ["Node", "Deployment"]
    assert [doc.prefix for doc in docs] == [("items", 0), ("items", 1)]
    assert docs[1].span == Span(9, 3)
    assert docs[1].locate(("metadata", "name")) == Span(12, 5)


def test_typed_list_items_inherit_kind_and_api_version() -> None:
    text = '{"apiVersion": "apps/v1", "kind": "DeploymentList", "items": [{"metadata": {"name": "a"}}]}'
    (doc,) = parse("list.json", text).documents
    assert (doc.data["apiVersion"], doc.data["kind"]) == ("apps/v1", "Deployment")
    assert doc.locate(("metadata", "name")) == Span(1, text.index('"name"') + 1)


def test_json_manifest_positions() -> None:
    text = (
        '{\n  "apiVersion": "v1",\n  "kind": "Pod",\n  "metadata": {"name": "p"},\n'
        '  "spec": {"nodeSelector": {"disk": "ssd"}}\n}\n'
    )
    (doc,) = parse("pod.json", text).documents
    assert doc.data["spec"]["nodeSelector"] == {"disk": "ssd"}
    assert doc.locate(("spec", "nodeSelector", "disk")) == Span(5, 29)


@pytest.mark.parametrize(
    ("plain", "value"),
    [
        ("yes", True),
        ("on", True),
        ("Off", False),
        ("n", False),
        ("true", True),
        ("~", None),
        ("null", None),
        ("", None),
        ("017", 15),
        ("08", 8.0),  # not octal: go-yaml v2 falls back to a float
        ("0_9", 9.0),
        ("0x1F", 31),
        ("1_000", 1000),
        ("-3", -3),
        ("1.5", 1.5),
        ("1e3", 1000.0),
        ("nginx", "nginx"),
        ("1.27.0", "1.27.0"),
        ("-", "-"),
        ("500m", "500m"),
        ("0.5.1", "0.5.1"),
    ],
)
def test_plain_scalars_resolve_as_kubernetes_reads_yaml(plain: str, value: object) -> None:
    assert resolve_plain(plain) == value
    assert type(resolve_plain(plain)) is type(value)


def test_explicit_tags_win_over_resolution() -> None:
    text = 'apiVersion: v1\nkind: X\na: !!str 0777\nb: !!str true\nc: !Ref foo\nd: !!int "3"\ne: 0777\n'
    (doc,) = parse("tags.yaml", text).documents
    assert {k: doc.data[k] for k in "abcde"} == {"a": "0777", "b": "true", "c": "foo", "d": 3, "e": 511}


def test_quoted_scalars_stay_strings_and_keys_become_strings() -> None:
    (doc,) = parse(
        "x.yaml", 'apiVersion: v1\nkind: ConfigMap\ndata:\n  a: "yes"\n  on: 1\n  2: b\n'
    ).documents
    assert doc.data["data"] == {"a": "yes", "true": 1, "2": "b"}


def test_merge_keys_and_aliases() -> None:
    text = "apiVersion: v1\nkind: Pod\nbase: &b {a: 1, b: 2}\nmetadata:\n  <<: *b\n  b: 3\n  name: p\n"
    (doc,) = parse("m.yaml", text).documents
    assert doc.data["metadata"] == {"b": 3, "name": "p", "a": 1}


def test_yaml11_boolean_keys_become_true_as_in_go_yaml_v2() -> None:
    # go-yaml v2 resolves a plain `y` to true; sigs.k8s.io/yaml then makes the key "true".
    (doc,) = parse("y.yaml", "apiVersion: v1\nkind: ConfigMap\ndata:\n  y: a\n  'n': b\n").documents
    assert doc.data["data"] == {"true": "a", "n": "b"}


def test_duplicate_keys_are_recorded_and_the_last_wins() -> None:
    (doc,) = parse("d.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: b\n").documents
    assert doc.data["metadata"]["name"] == "b"
    assert [(d.key, d.span) for d in doc.duplicate_keys] == [("name", Span(5, 3))]


def test_documents_before_a_parse_error_are_kept() -> None:
    source = parse("e.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\nkey: [unclosed\n")
    assert len(source.documents) == 1
    (problem,) = source.problems
    assert problem.rule == "parse-error"
    assert problem.span is not None and problem.span.line == 6


@pytest.mark.parametrize(
    "text",
    [
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Values.name }}\n",
        "{{- if .Values.enabled }}\napiVersion: v1\nkind: Pod\n{{- end }}\n",
        "apiVersion: v1\nkind: Pod\nspec:\n  image: repo/app:{{ .Chart.AppVersion }}\n",
    ],
)
def test_unrendered_helm_templates_are_reported_once(text: str) -> None:
    source = parse("t.yaml", text)
    assert [p.rule for p in source.problems] == ["helm-template"]
    assert source.documents == ()


def test_go_templates_inside_strings_are_content_not_helm() -> None:
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n"
        "  a: Pod {{ $labels.pod }} is down\n  b: '{{ .Values.x }}'\n  c: |\n    {{- if .Values.y }}\n"
    )
    source = parse("c.yaml", text)
    assert source.problems == ()
    assert len(source.documents) == 1


def test_prometheus_rule_templates_in_plain_values_are_content_not_helm() -> None:
    """Go's own actions (with, if, range, end, template) in a plain value that parses are
    Prometheus templating, not Helm: prometheus-operator/kube-prometheus,
    manifests/kubernetesControlPlane-prometheusRule.yaml (KubePersistentVolumeFillingUp)."""
    text = (
        "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\n"
        "metadata: {name: kubernetes-monitoring-rules, namespace: monitoring}\nspec:\n  groups:\n"
        "  - name: kubernetes-storage\n    rules:\n    - alert: KubePersistentVolumeFillingUp\n"
        "      annotations:\n"
        "        description: The PersistentVolume claimed by {{ $labels.persistentvolumeclaim }} in "
        "Namespace {{ $labels.namespace }} {{ with $labels.cluster -}} on Cluster {{ . }} {{- end }} "
        "is only {{ $value | humanizePercentage }} free.\n"
    )
    source = parse("rule.yaml", text)
    assert source.problems == ()
    assert len(source.documents) == 1
    # Helm's own names in a plain value still make a template.
    helm = parse("t.yaml", text.replace("{{ $labels.namespace }}", '{{ include "ns" . }}'))
    assert [problem.rule for problem in helm.problems] == ["helm-template"]


def test_format_path() -> None:
    assert format_path(("spec", "template", "spec", "affinity", "x", 0, "topologyKey")) == (
        "spec.template.spec.affinity.x[0].topologyKey"
    )
    assert format_path(("metadata", "annotations", "kaffinity.io/ignore")) == (
        "metadata.annotations[kaffinity.io/ignore]"
    )


def test_discovery_recursive_sorted_skips_hidden_and_survives_symlink_loops(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "a").mkdir()
    (tmp_path / ".git").mkdir()
    for name in ("b/x.yaml", "a/y.yml", "a/z.json", "a/notes.txt", ".git/hidden.yaml", "a/.hidden.yaml"):
        (tmp_path / name).write_text("a: 1\n")
    os.symlink(tmp_path, tmp_path / "a" / "loop")
    os.symlink(tmp_path / "b" / "x.yaml", tmp_path / "a" / "same.yaml")
    found = [os.path.relpath(p, tmp_path) for p in discover([str(tmp_path)])]
    # a/ is walked first, so b/x.yaml is the second sight of a/same.yaml and is read once only.
    assert found == ["a/same.yaml", "a/y.yml", "a/z.json"]


def test_exclude_globs(tmp_path: Path) -> None:
    for name in ("apps/web.yaml", "apps/vendor/x.yaml", "charts/c/templates/t.yaml", "apps/web.test.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("a: 1\n")
    excluded = ExcludeFn(["vendor", "charts/**/templates", "*.test.yaml"], str(tmp_path))
    found = [os.path.relpath(p, tmp_path) for p in discover([str(tmp_path)], excluded)]
    assert found == ["apps/web.yaml"]


def test_stdin_is_read_with_positions() -> None:
    code, report = run_json("-", "--select", "parse-error", stdin="apiVersion: v1\nkind: Pod\n---\nbad: [\n")
    assert code == 2
    (finding,) = report["findings"]
    assert (finding["file"], finding["line"], finding["rule"]) == ("<stdin>", 5, "parse-error")
    assert report["summary"]["documents"] == 1


def test_stdin_filename_names_the_input() -> None:
    code, report = run_json("-", "--stdin-filename", "rendered.yaml", stdin="bad: [\n")
    assert code == 2
    assert report["findings"][0]["file"] == "rendered.yaml"


def test_missing_file_is_an_error_without_a_position(tmp_path: Path) -> None:
    source = read(str(tmp_path / "absent.yaml"))
    (problem,) = source.problems
    assert problem.rule == "parse-error" and problem.span is None


def test_broken_rendered_file_with_templates_in_strings_is_a_parse_error() -> None:
    # Helm actions inside a block string, and a real syntax error elsewhere: not a template.
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  t: |\n    {{- if .Values.x }}\n"
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  labels: {app: web\n"
    )
    source = parse("broken.yaml", text)
    assert [p.rule for p in source.problems] == ["parse-error"]
    assert len(source.documents) == 1


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: p", Span(3, 19)),  # no final newline: line 3
        ("apiVersion: v1\rkind: Pod\rmetadata: {name: p", Span(3, 19)),  # old Mac line breaks
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: p\n", Span(4, 1)),  # the line after the last
        ("apiVersion: v1\r\nkind: Pod\r\nmetadata: {name: p\r\nspec: x\r\n", Span(4, 5)),
    ],
)
def test_parse_error_at_the_end_names_a_line_the_file_has(text: str, span: Span) -> None:
    """The reader ends a file without a final newline with one of its own, and its end-of-input
    mark used to be on a line the file does not have."""
    (problem,) = parse("f.yaml", text).problems
    assert (problem.rule, problem.span) == ("parse-error", span)


@pytest.mark.parametrize(
    ("items", "spans"),
    [
        ("items: 5", [Span(3, 1)]),
        ("items: {a: 1}", [Span(3, 1)]),
        (
            'items: [5, "x", [1], {apiVersion: v1, kind: Pod, metadata: {name: p}}]',
            [Span(3, 9), Span(3, 12), Span(3, 17)],
        ),
        ("items: []", []),
        ("items:", []),
        ("items: [null, {apiVersion: v1, kind: Pod, metadata: {name: p}}]", []),  # null: skipped
    ],
)
def test_a_list_whose_items_kubectl_cannot_decode_is_a_parse_error(items: str, spans: list[Span]) -> None:
    """`kind: List` with non-list or scalar items used to pass silently; kubectl fails the file."""
    source = parse("f.yaml", f"apiVersion: v1\nkind: List\n{items}\n")
    assert [(problem.rule, problem.span) for problem in source.problems] == [
        ("parse-error", s) for s in spans
    ]
    if "kind: Pod" in items:
        assert [document.data["kind"] for document in source.documents] == ["Pod"]  # the good item stays
