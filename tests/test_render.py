"""Rendering kustomize overlays and Helm charts, and mapping findings back to the files a person edits.

Fixtures (tests/data/repos/render/): a kustomize base and two overlays (prod: namePrefix,
namespace, a strategic-merge patch adding a zone spread and a sidecar, a configMapGenerator;
staging: nameSuffix and a JSON 6902 patch), a small chart (values.yaml with the anti-affinity,
_helpers.tpl, a template with two documents, a suppression comment in a template), and helm
template's output for that chart as it arrives on stdin (plus a subchart whose template is not
on disk). Kustomize runs for real (`kubectl kustomize`, or `kustomize build`); the chart is
rendered by Helm's own engine (helm-python-sdk, the `test` extra).
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from kaffinity.config import Settings
from kaffinity.engine import lint
from kaffinity.load.parse import Limits, parse
from kaffinity.load.source import Document, Span
from kaffinity.repo.engines import helm_engine, kustomize_engine
from kaffinity.repo.helm.chart import render_chart
from kaffinity.repo.helm.sources import map_helm_sources
from kaffinity.repo.kustomize.build import render_kustomization
from kaffinity.repo.origins import template_documents, template_positions
from kaffinity.repo.rendered import Rendered
from kaffinity.repo.sandbox import Sandbox

from . import kit

DATA = Path(__file__).parent / "data" / "repos" / "render"
KUSTOMIZE = DATA / "kustomize"
CHART = DATA / "chart" / "web"
STDIN = DATA / "stdin" / "helm-template.yaml"

needs_kustomize = pytest.mark.skipif(
    kustomize_engine() is None, reason="neither kustomize nor kubectl is on the PATH"
)
try:
    import helm_python  # noqa: F401 - only whether it is there

    HAS_SDK = True
except ImportError:
    HAS_SDK = False
needs_sdk = pytest.mark.skipif(not HAS_SDK, reason="helm-python-sdk is not installed (the test extra has it)")

TEMPLATE_SPEC = ("spec", "template", "spec")
ANTI_AFFINITY = (
    *TEMPLATE_SPEC,
    "affinity",
    "podAntiAffinity",
    "requiredDuringSchedulingIgnoredDuringExecution",
)


@pytest.fixture
def in_render_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """Relative paths, as a user runs kaffinity at a repository's root."""
    monkeypatch.chdir(DATA)


def only(rendered: Rendered, kind: str) -> Document:
    (doc,) = [doc for doc in rendered.documents if doc.data["kind"] == kind]
    return doc


def by_file(rendered: Rendered) -> dict[str, list[str]]:
    return {file.name: [doc.data["kind"] for doc in file.documents] for file in rendered.files}


def findings(rendered: Rendered) -> list[tuple[str, str, int | None, int | None]]:
    result = lint(rendered.files, Settings())
    return [(finding.rule, finding.file, finding.line, finding.column) for finding in kit.findings(result)]


def snapshot(top: Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(path): (path.stat().st_mtime_ns, path.read_bytes())
        for path in sorted(top.rglob("*"))
        if path.is_file()
    }


# --- kustomize -----------------------------------------------------------------------------


@needs_kustomize
@pytest.mark.usefixtures("in_render_data")
def test_overlay_objects_point_at_the_base_files_that_define_them() -> None:
    rendered = render_kustomization("kustomize/overlays/prod", Limits())
    assert rendered.ok, rendered.problems
    assert by_file(rendered) == {
        "kustomize/overlays/prod/kustomization.yaml": ["ConfigMap"],
        "kustomize/base/web.yaml": ["Service", "Deployment"],
        "kustomize/base/pdb.yaml": ["PodDisruptionBudget"],
    }
    web = only(rendered, "Deployment")
    # The rules read the rendered object: prefix, namespace and the patch applied...
    assert web.data["metadata"] == {"name": "prod-web", "namespace": "shop", "labels": {"app": "web"}}
    assert web.data["spec"]["replicas"] == 4
    assert [c["name"] for c in web.data["spec"]["template"]["spec"]["containers"]] == ["log-shipper", "web"]
    # ...and positions come from base/web.yaml (its second document).
    assert web.index == 1
    assert web.span == Span(12, 1)
    assert web.locate(("spec", "replicas")) == Span(19, 3)
    assert web.locate((*ANTI_AFFINITY, 0, "topologyKey")) == Span(34, 15)
    # The patch put its sidecar first: items are paired by name, not by index.
    assert web.locate((*TEMPLATE_SPEC, "containers", 1, "image")) == Span(37, 11)
    # What the patch added has no place in the base: its nearest ancestor there.
    assert web.locate((*TEMPLATE_SPEC, "containers", 0, "image")) == Span(35, 7)
    assert web.locate((*TEMPLATE_SPEC, "topologySpreadConstraints", 0)) == Span(27, 5)


@needs_kustomize
@pytest.mark.usefixtures("in_render_data")
def test_generated_objects_point_at_their_generator_and_origins_are_stripped() -> None:
    rendered = render_kustomization("kustomize/overlays/prod", Limits())
    config = only(rendered, "ConfigMap")
    assert config.file == "kustomize/overlays/prod/kustomization.yaml"
    assert config.data["metadata"]["name"].startswith("prod-web-config-")
    assert config.locate(("data", "MODE")) == Span(10, 5)  # `- name: web-config`
    for doc in rendered.documents:
        assert "annotations" not in doc.data["metadata"]


@needs_kustomize
@pytest.mark.usefixtures("in_render_data")
def test_json6902_overlay_and_findings_of_the_rendered_unit() -> None:
    rendered = render_kustomization("kustomize/overlays/staging", Limits())
    web = only(rendered, "Deployment")
    assert web.data["metadata"]["name"] == "web-staging"
    assert web.data["spec"]["replicas"] == 1
    assert web.locate((*TEMPLATE_SPEC, "tolerations", 0, "key")) == Span(27, 5)
    # One replica under a minAvailable: 1 budget: only the staging overlay has this problem,
    # reported where the budget is written.
    assert ("pdb-blocks-eviction", "kustomize/base/pdb.yaml", 6, 3) in findings(rendered)
    assert ("pdb-blocks-eviction", "kustomize/base/pdb.yaml", 6, 3) not in findings(
        render_kustomization("kustomize/overlays/prod", Limits())
    )


@needs_kustomize
@pytest.mark.usefixtures("in_render_data")
def test_a_field_an_overlay_patch_sets_can_be_placed_in_the_patch() -> None:
    prod = render_kustomization("kustomize/overlays/prod", Limits())
    web = only(prod, "Deployment")
    spread = "kustomize/overlays/prod/web-spread.yaml"
    assert prod.patch_location(web, (*TEMPLATE_SPEC, "topologySpreadConstraints", 0, "topologyKey")) == (
        spread,
        Span(12, 11),
    )
    assert prod.patch_location(web, (*TEMPLATE_SPEC, "containers", 0, "image")) == (spread, Span(19, 11))
    assert prod.patch_location(web, ("spec", "replicas")) == (spread, Span(7, 3))  # its value is rendered
    # What the base spells better stays there: the base's container, the name.
    assert prod.patch_location(web, (*TEMPLATE_SPEC, "containers", 1, "image")) is None
    assert prod.patch_location(web, ("metadata", "name")) is None
    assert prod.patch_location(web, (*ANTI_AFFINITY, 0)) is None
    assert prod.patch_location(only(prod, "Service"), ("spec", "ports")) is None
    staging = render_kustomization("kustomize/overlays/staging", Limits())
    web = only(staging, "Deployment")
    json_patch = "kustomize/overlays/staging/web-json-patch.yaml"
    assert staging.patch_location(web, (*TEMPLATE_SPEC, "tolerations", 0, "key")) == (json_patch, Span(8, 7))
    assert staging.patch_location(web, ("spec", "replicas")) == (json_patch, Span(4, 3))
    assert staging.patch_location(web, TEMPLATE_SPEC) is None  # the operation spells no parent


@needs_kustomize
def test_an_absolute_directory_gives_absolute_names() -> None:
    rendered = render_kustomization(str(KUSTOMIZE / "overlays" / "staging"), Limits())
    assert sorted(by_file(rendered)) == [
        str(KUSTOMIZE / "base" / "pdb.yaml"),
        str(KUSTOMIZE / "base" / "web.yaml"),
    ]


@needs_kustomize
def test_the_users_files_are_never_touched() -> None:
    before = snapshot(KUSTOMIZE)
    assert render_kustomization(str(KUSTOMIZE / "overlays" / "prod"), Limits()).ok
    assert snapshot(KUSTOMIZE) == before


@needs_kustomize
def test_a_failed_build_is_one_line_naming_the_kustomization(tmp_path: Path) -> None:
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text("resources:\n  - missing.yaml\n")
    rendered = render_kustomization(str(overlay), Limits())
    ((name, problem),) = rendered.problems
    assert name == str(overlay / "kustomization.yaml")
    assert problem.rule == "parse-error"
    assert "missing.yaml" in problem.message and "\n" not in problem.message
    assert "kaffinity-render" not in problem.message  # the temporary wrapper is not shown
    assert rendered.documents == ()


@needs_kustomize
@pytest.mark.parametrize("overlay", ["base", "overlay"])
def test_a_resource_that_does_not_parse_is_reported_at_its_line(tmp_path: Path, overlay: str) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (base / "kustomization.yaml").write_text("resources:\n  - cm.yaml\n")
    (base / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  bad: [\n")
    (tmp_path / "overlay").mkdir()
    (tmp_path / "overlay" / "kustomization.yaml").write_text("resources:\n  - ../base\n")
    # The repository is tmp_path (it has no .git to say so): ../base is inside it.
    sandbox = Sandbox(roots=(str(tmp_path),))
    ((name, problem),) = render_kustomization(str(tmp_path / overlay), Limits(), sandbox=sandbox).problems
    assert (name, problem.span) == (str(base / "cm.yaml"), Span(5, 1))
    assert problem.message.endswith(
        "MalformedYAMLError: yaml: line 5: did not find expected node content in File: cm.yaml"
    )


@needs_kustomize
def test_a_build_past_its_timeout_is_a_problem(tmp_path: Path) -> None:
    ((name, problem),) = render_kustomization(
        str(KUSTOMIZE / "overlays" / "prod"), Limits(), timeout=0.001
    ).problems
    assert name.endswith("kustomization.yaml")
    assert "did not finish within" in problem.message


def test_without_a_kustomize_tool_rendering_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert kustomize_engine() is None
    ((_, problem),) = render_kustomization(str(KUSTOMIZE / "overlays" / "prod"), Limits()).problems
    assert "neither kustomize nor kubectl" in problem.message


def test_a_standalone_kustomize_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for tool in ("kustomize", "kubectl", "helm"):
        executable(tmp_path / tool, "#!/bin/sh\nexit 0\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert kustomize_engine() == "kustomize"
    assert helm_engine() == "helm binary"
    (tmp_path / "kustomize").unlink()
    assert kustomize_engine() == "kubectl kustomize"


# --- Helm ----------------------------------------------------------------------------------


def sdk_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No helm binary on the PATH, so the SDK renders (whatever this machine has)."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


@needs_sdk
@pytest.mark.usefixtures("in_render_data")
def test_a_chart_rendered_by_helms_engine_points_at_its_templates(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sdk_only(monkeypatch, tmp_path)
    rendered = render_chart("chart/web", (), "demo", "shop", Limits())
    assert rendered.engine == "helm-python-sdk"
    assert rendered.ok, rendered.problems
    assert by_file(rendered) == {
        "chart/web/templates/deployment.yaml": ["Deployment"],
        "chart/web/templates/pdb.yaml": ["PodDisruptionBudget", "Service"],
    }
    web = only(rendered, "Deployment")
    assert web.data["metadata"]["name"] == "demo-web"
    assert web.data["spec"]["replicas"] == 3  # values.yaml
    assert web.span == Span(1, 1)
    # The anti-affinity comes from values (`toYaml .Values.affinity`): the line that includes it.
    assert web.locate((*ANTI_AFFINITY, 0, "topologyKey")) == Span(18, 7)
    assert web.locate((*TEMPLATE_SPEC, "topologySpreadConstraints", 0, "topologyKey")) == Span(25, 11)
    assert web.locate((*TEMPLATE_SPEC, "containers", 0, "image")) == Span(33, 11)
    # Labels from an include: the key that holds them.
    assert web.locate(("spec", "selector", "matchLabels", "app.kubernetes.io/name")) == Span(10, 5)
    # Two documents of one template: each at its own part.
    assert only(rendered, "PodDisruptionBudget").locate(("spec", "maxUnavailable")) == Span(7, 3)
    service = only(rendered, "Service")
    assert (service.span, service.locate(("spec", "ports", 0, "port"))) == (Span(13, 1), Span(21, 7))


@needs_sdk
@pytest.mark.usefixtures("in_render_data")
def test_findings_land_on_template_lines_and_template_comments_suppress(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sdk_only(monkeypatch, tmp_path)
    rendered = render_chart("chart/web", (), "demo", "shop", Limits())
    result = lint(rendered.files, Settings())
    found = [(f.rule, f.file, f.line, f.column) for f in kit.findings(result)]
    # The spread constraint's finding (line 24) is suppressed by the comment on line 23.
    assert found == [("revision-unscoped", "chart/web/templates/deployment.yaml", 18, 7)]
    assert result.suppressed == 1


@needs_sdk
@pytest.mark.usefixtures("in_render_data")
def test_values_files_are_merged_in_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    sdk_only(monkeypatch, tmp_path)
    first = tmp_path / "one.yaml"
    first.write_text("replicaCount: 1\nzoneSpread: false\n")
    second = tmp_path / "two.yaml"
    second.write_text("affinity:\n  podAntiAffinity: null\n")
    # Values files from outside the repository, as the person running kaffinity may name them.
    sandbox = Sandbox(roots=(str(DATA), str(tmp_path)))
    rendered = render_chart("chart/web", (str(first), str(second)), "demo", None, Limits(), sandbox=sandbox)
    assert by_file(rendered) == {
        "chart/web/templates/deployment.yaml": ["Deployment"],
        # No budget for one replica: the Service is the template's only document, still at its part.
        "chart/web/templates/pdb.yaml": ["Service"],
    }
    web = only(rendered, "Deployment")
    assert web.data["spec"]["replicas"] == 1
    assert "topologySpreadConstraints" not in web.data["spec"]["template"]["spec"]
    assert only(rendered, "Service").span == Span(13, 1)


def broken_chart(tmp_path: Path, template: str) -> Path:
    chart = tmp_path / "web"
    shutil.copytree(CHART, chart)
    (chart / "templates" / "broken.yaml").write_text(template)
    return chart


@needs_sdk
@pytest.mark.parametrize(
    ("template", "span"),
    [
        ("a: {{ .Values.missing.deeper }}\n", Span(1, 13)),  # executing: line and column
        ("a: b\nc: {{ .Values.x \n", Span(3, 1)),  # parse error: a line
        ('a: {{ fail "no" }}\n', Span(1, 6)),
    ],
)
def test_a_template_that_fails_is_one_problem_at_its_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, template: str, span: Span
) -> None:
    sdk_only(monkeypatch, tmp_path)
    chart = broken_chart(tmp_path, template)
    ((name, problem),) = render_chart(str(chart), (), "demo", None, Limits()).problems
    assert (name, problem.span) == (str(chart / "templates" / "broken.yaml"), span)
    assert "\n" not in problem.message


@needs_sdk
def test_a_missing_values_file_or_chart_is_a_problem(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    sdk_only(monkeypatch, tmp_path)
    ((name, problem),) = render_chart(str(CHART), (str(tmp_path / "nope.yaml"),), "demo", None).problems
    assert name == str(CHART / "Chart.yaml") and "nope.yaml" in problem.message
    bad_values = tmp_path / "bad.yaml"
    bad_values.write_text("a: [\n")
    sandbox = Sandbox(roots=(str(DATA), str(tmp_path)))  # the values file is named by the runner
    ((name, problem),) = render_chart(str(CHART), (str(bad_values),), "demo", None, sandbox=sandbox).problems
    assert name == str(bad_values)
    ((name, problem),) = render_chart(str(tmp_path), (), "demo", None).problems
    assert name == str(tmp_path) and "no Chart.yaml" in problem.message


def executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.mark.usefixtures("in_render_data")
def test_a_helm_binary_wins_and_is_called_as_helm_template(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A scripted `helm` (none on this machine) checks the command line kaffinity builds; the
    # output it prints is helm template's own for the fixture chart.
    calls = tmp_path / "calls"
    executable(tmp_path / "helm", f'#!/bin/sh\necho "$@" > {calls}\ncat {STDIN}\n')
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    rendered = render_chart("chart/web", ("chart/web/values.yaml",), "demo", "shop", Limits())
    assert rendered.engine == "helm binary"
    assert calls.read_text().split() == [
        "template", "demo", "chart/web", "--namespace", "shop", "--values", "chart/web/values.yaml"
    ]  # fmt: skip
    assert only(rendered, "Deployment").locate((*ANTI_AFFINITY, 0)) == Span(18, 7)
    statefulset = only(rendered, "StatefulSet")  # a subchart packed as .tgz: not on disk
    assert statefulset.file == "helm template chart/web"
    assert (
        rendered.origin(statefulset.file, statefulset.span.line)
        == "web/charts/cache/templates/statefulset.yaml"
    )


@pytest.mark.usefixtures("in_render_data")
def test_a_failing_helm_binary_names_the_template_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    message = (
        "Error: template: web/templates/deployment.yaml:8:23: executing "
        '"web/templates/deployment.yaml" at <.Values.replicaCount>: nil pointer'
    )
    executable(tmp_path / "helm", f"#!/bin/sh\necho '{message}' >&2\nexit 1\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    ((name, problem),) = render_chart("chart/web", (), "demo", None).problems
    assert (name, problem.span) == ("chart/web/templates/deployment.yaml", Span(8, 23))
    assert problem.message.startswith("helm template failed: template: web/templates/deployment.yaml:8:23")
    # A YAML error counts lines of the rendered output: the template is named, no line.
    executable(
        tmp_path / "helm",
        "#!/bin/sh\necho 'Error: YAML parse error on web/templates/pdb.yaml: error converting YAML to JSON: "
        "yaml: line 12: did not find expected key' >&2\nexit 1\n",
    )
    ((name, problem),) = render_chart("chart/web", (), "demo", None).problems
    assert (name, problem.span) == ("chart/web/templates/pdb.yaml", None)


# --- `# Source:` mapping of rendered output on stdin -----------------------------------------


def stdin_stream() -> Any:
    return parse("<stdin>", STDIN.read_text())


@pytest.mark.usefixtures("in_render_data")
def test_stdin_documents_point_at_their_templates() -> None:
    rendered = map_helm_sources(stdin_stream(), "chart/web")
    assert by_file(rendered) == {
        "<stdin>": ["StatefulSet"],  # its template is not on disk (a packed subchart)
        "chart/web/templates/pdb.yaml": ["PodDisruptionBudget", "Service"],
        "chart/web/templates/deployment.yaml": ["Deployment"],
    }
    assert only(rendered, "Deployment").locate((*ANTI_AFFINITY, 0)) == Span(18, 7)
    statefulset = only(rendered, "StatefulSet")
    assert statefulset.locate((*ANTI_AFFINITY, 0, "topologyKey")) == Span(48, 13)  # as rendered
    assert rendered.origin("<stdin>", 48) == "web/charts/cache/templates/statefulset.yaml"
    assert rendered.origin("<stdin>", 60) is None  # mapped: the finding is at the template
    assert findings(rendered) == [
        ("api-validation", "<stdin>", 48, 13),
        ("api-validation", "<stdin>", 48, 13),
        ("api-validation", "<stdin>", 48, 13),
        # The comment copied into the stream is not read twice (no unused suppression there).
        ("revision-unscoped", "chart/web/templates/deployment.yaml", 18, 7),
    ]


def test_templates_are_found_from_the_working_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CHART.parent)  # `helm template demo ./web | kaffinity lint -`
    assert "web/templates/deployment.yaml" in by_file(map_helm_sources(stdin_stream()))
    monkeypatch.chdir(CHART)  # `helm template demo . | kaffinity lint -`
    assert "templates/deployment.yaml" in by_file(map_helm_sources(stdin_stream()))


def test_without_the_templates_positions_stay_in_the_stream(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    stream = stdin_stream()
    rendered = map_helm_sources(stream)
    assert by_file(rendered) == {"<stdin>": ["PodDisruptionBudget", "Service", "StatefulSet", "Deployment"]}
    assert rendered.documents == stream.documents
    assert rendered.origin("<stdin>", 76) == "web/templates/deployment.yaml"
    # The comment in the stream still suppresses the finding below it.
    assert ("revision-unscoped", "<stdin>", 76, 13) in findings(rendered)
    assert ("revision-unscoped", "<stdin>", 82, 11) not in findings(rendered)


def test_a_stream_without_source_comments_is_returned_as_it_is() -> None:
    stream = parse("<stdin>", "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n")
    assert map_helm_sources(stream).files == (stream,)


# --- the template locator ------------------------------------------------------------------


def positions(template: str, rendered: str) -> Document:
    data = parse("r.yaml", f"apiVersion: v1\nkind: Test\n{rendered}").documents[0].data
    root = template_positions(data, template_documents(template.splitlines())[0])
    return Document("t.yaml", 0, data, root, root.span)


def test_locator_reads_compact_lists_quoted_keys_and_skips_block_scalars() -> None:
    template = (
        "apiVersion: v1\n"  # 1
        "kind: ConfigMap\n"  # 2
        "metadata:\n"  # 3
        '  "name": {{ .Release.Name }}\n'  # 4
        "  annotations:\n"  # 5
        "    note: |\n"  # 6
        "      spec:\n"  # 7
        "        replicas: 1\n"  # 8
        "spec:\n"  # 9
        "  items:\n"  # 10
        "  - name: a\n"  # 11
        "    value: x\n"  # 12
        "  replicas: 2\n"  # 13
    )
    rendered = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: r\n  annotations:\n    note: |\n"
        "      spec:\n        replicas: 1\nspec:\n  items:\n  - name: a\n    value: x\n  replicas: 2\n"
    )
    doc = positions(template, rendered)
    assert doc.locate(("metadata", "name")) == Span(4, 3)
    assert doc.locate(("spec", "items", 0, "value")) == Span(12, 5)
    assert doc.locate(("spec", "replicas")) == Span(13, 3)  # not line 8, inside the block scalar


def test_locator_pairs_items_by_literal_name_and_a_range_by_its_one_dash() -> None:
    template = (
        "spec:\n"  # 1
        "  containers:\n"  # 2
        "    - name: web\n"  # 3
        "      image: nginx\n"  # 4
        "    {{- with .Values.sidecars }}\n"  # 5
        "    {{- toYaml . | nindent 4 }}\n"  # 6
        "    {{- end }}\n"  # 7
        "  volumes:\n"  # 8
        "  {{- range .Values.volumes }}\n"  # 9
        "    - name: {{ . }}\n"  # 10
        "      emptyDir: {}\n"  # 11
        "  {{- end }}\n"  # 12
    )
    rendered = (
        "spec:\n  containers:\n    - name: shipper\n      image: fluent\n"
        "    - name: web\n      image: nginx\n"
        "  volumes:\n    - name: a\n      emptyDir: {}\n    - name: b\n      emptyDir: {}\n"
    )
    doc = positions(template, rendered)
    assert doc.locate(("spec", "containers", 1, "image")) == Span(4, 7)
    assert doc.locate(("spec", "containers", 0, "image")) == Span(2, 3)  # from values: the list
    assert doc.locate(("spec", "volumes", 1, "emptyDir")) == Span(11, 7)


@needs_sdk
@pytest.mark.usefixtures("in_render_data")
def test_every_mapped_position_is_a_written_key_or_item(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Never a made-up place: whatever path a rule asks for, the line and column found hold
    text in the template (a key or a dash), never blank space."""
    sdk_only(monkeypatch, tmp_path)
    rendered = render_chart("chart/web", (), "demo", "shop", Limits())
    for doc in rendered.documents:
        lines = Path(doc.file).read_text().splitlines()
        for path in walk(doc.data):
            span = doc.locate(path)
            assert lines[span.line - 1][span.column - 1] not in " \t", (doc.file, path, span)


def walk(data: Any, prefix: tuple[Any, ...] = ()) -> Any:
    yield prefix
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        yield from walk(value, (*prefix, key))


def stream_of(chart: Path, manifests: list[tuple[str, str]]) -> Any:
    text = "".join(f"---\n# Source: {source}\n{body}" for source, body in manifests)
    return map_helm_sources(parse("<stdin>", text), str(chart))


def test_parts_of_one_template_told_apart_by_name_kind_or_order(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    # Shaped as pulsar's broker-service-account.yaml and argo-events' rbac.yaml.
    (templates / "accounts.yaml").write_text(
        "{{- if .Values.broker }}\n"  # 1
        "apiVersion: v1\n"  # 2
        "kind: ServiceAccount\n"  # 3
        "metadata:\n"  # 4
        '  name: "{{ .Release.Name }}-broker-acct"\n'  # 5
        "---\n"  # 6
        "{{- end }}\n"  # 7
        "apiVersion: v1\n"  # 8
        "kind: ServiceAccount\n"  # 9
        "metadata:\n"  # 10
        "  name: {{ .Release.Name }}-{{ .Values.component }}\n"  # 11
    )
    (templates / "rbac.yaml").write_text(
        'kind: {{ ternary "Role" "ClusterRole" .Values.namespaced }}\n'  # 1
        "metadata:\n"  # 2
        "  name: x\n"  # 3
        "---\n"  # 4
        'kind: {{ ternary "RoleBinding" "ClusterRoleBinding" .Values.namespaced }}\n'  # 5
        "metadata:\n"  # 6
        "  name: x\n"  # 7
    )
    (templates / "monitor.yaml").write_text('{{/* the whole object */}}\n{{- include "chart.monitor" . }}\n')
    account = "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {}\n"
    rendered = stream_of(
        tmp_path,
        [
            ("web/templates/accounts.yaml", account.format("demo-functions")),
            ("web/templates/accounts.yaml", account.format("demo-broker-acct")),
            ("web/templates/rbac.yaml", "apiVersion: v1\nkind: ClusterRole\nmetadata:\n  name: x\n"),
            ("web/templates/rbac.yaml", "apiVersion: v1\nkind: ClusterRoleBinding\nmetadata:\n  name: x\n"),
            ("web/templates/monitor.yaml", "apiVersion: v1\nkind: PodMonitor\nmetadata:\n  name: m\n"),
        ],
    )
    assert [
        (doc.data["metadata"]["name"], doc.locate(("metadata", "name"))) for doc in rendered.documents
    ] == [
        ("demo-functions", Span(11, 3)),  # `-acct` does not fit it: the other part
        ("demo-broker-acct", Span(5, 3)),
        ("x", Span(3, 3)),
        ("x", Span(7, 3)),
        ("m", Span(2, 1)),  # the include that writes the whole object
    ]


def test_kubectls_multi_line_error_is_one_line() -> None:
    from kaffinity.repo.engines import first_error

    errors = (
        'E1125 16:12:03.217387   17098 run.go:72] "command failed" err=<\n'
        "\taccumulating resources: accumulating resources from 'https://example.com/x.yaml': Get\n"
        "\t: exit status 128\n"
        " >\n"
    )
    assert first_error(errors) == (
        "accumulating resources: accumulating resources from 'https://example.com/x.yaml': "
        "Get : exit status 128"
    )
