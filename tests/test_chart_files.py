"""Chart files are what Helm says they are (issue 32, item 2), and other tools' templates are
never parse-errors (item 5): kaffinity.load.charts.

The chart repository fixture is modelled on chart repositories such as
prometheus-community/helm-charts (``charts/<chart>/`` with ``Chart.yaml``, ``values.yaml``,
``.helmignore``, ``templates/`` with ``_helpers.tpl``, ``NOTES.txt`` and ``tests/``, ``crds/``)
and on the templates that made false parse-errors there and in other popular charts: a
``{{/* licence */}}`` block at the top of every template, a ``{{- /* ... */}}`` comment in the
body, and ``- {{ toYaml $c | nindent 8 | trim }}`` followed by more keys of the same item (the
spread constraints of a widely used CD chart). The Ansible tree follows the role layout of
docs.ansible.com ("Roles": ``roles/<role>/{tasks,defaults,templates}``).
"""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kaffinity.load.charts import (
    ANSIBLE_TEMPLATE,
    HELM_TEMPLATE,
    _helmignored,
    chart_templates,
    template_reason,
    top_chart,
    unit_templates,
)

from .kit import keys, line_of, position, run, run_json

try:
    import helm_python  # noqa: F401 - only whether it is there

    RENDERER = True
except ImportError:
    RENDERER = bool(shutil.which("helm"))

needs_renderer = pytest.mark.skipif(
    not RENDERER, reason="no helm binary and helm-python-sdk (kaffinity[helm]) not installed"
)

LICENCE = """\
{{/*
Copyright The Web Authors.
SPDX-License-Identifier: Apache-2.0
*/}}
"""

DEPLOYMENT = (
    LICENCE
    + """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "web.fullname" . }}
  labels:
    {{- include "web.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      {{- /* spread the replicas over the nodes */}}
      topologySpreadConstraints:
      {{- range $c := .Values.topologySpreadConstraints }}
      - {{ toYaml $c | nindent 8 | trim }}
        labelSelector:
          matchLabels:
            app: web
      {{- end }}
      containers:
        - name: web
          image: "nginx:{{ .Chart.AppVersion }}"
"""
)

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names:
    kind: Widget
    listKind: WidgetList
    plural: widgets
    singular: widget
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
"""

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: scratch
data:
  note: left out of the chart by .helmignore
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text) if text.startswith("\n") else text)


def _chart_repository(tmp_path: Path) -> Path:
    """charts/web (licence headers, helpers, NOTES.txt, a test hook, a CRD, a .helmignore'd
    file, an in-tree subchart)."""
    repo = tmp_path / "repo"
    web = "charts/web"
    _write(
        repo,
        {
            f"{web}/Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\nappVersion: '1.27'\n",
            f"{web}/values.yaml": (
                "replicaCount: 3\n"
                "topologySpreadConstraints:\n"
                "  - maxSkew: 1\n"
                "    topologyKey: kubernetes.io/hostname\n"
                "    whenUnsatisfiable: DoNotSchedule\n"
                "    matchLabelKeys: [pod-template-hash]\n"
            ),
            f"{web}/.helmignore": "# Patterns to ignore when building packages.\n*.md\ntemplates/scratch/\n",
            f"{web}/README.md": "# web\n",
            f"{web}/templates/_helpers.tpl": LICENCE
            + '{{- define "web.fullname" -}}{{ .Release.Name }}-web{{- end }}\n'
            + '{{- define "web.labels" -}}\napp.kubernetes.io/name: web\n{{- end }}\n',
            f"{web}/templates/NOTES.txt": "Thank you for installing {{ .Chart.Name }}.\n",
            f"{web}/templates/deployment.yaml": DEPLOYMENT,
            f"{web}/templates/tests/test-connection.yaml": LICENCE
            + "apiVersion: v1\nkind: Pod\nmetadata:\n"
            + '  name: "{{ include "web.fullname" . }}-test"\n'
            + '  annotations:\n    "helm.sh/hook": test\n'
            + "spec:\n  restartPolicy: Never\n  containers:\n    - name: wget\n      image: busybox\n",
            f"{web}/templates/scratch/configmap.yaml": CONFIGMAP,
            f"{web}/crds/widgets.yaml": CRD,
            f"{web}/charts/sub/Chart.yaml": "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
            f"{web}/charts/sub/templates/service.yaml": LICENCE
            + "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}-sub\n"
            + "spec:\n  ports:\n    - port: 80\n",
        },
    )
    return repo


def _placed(report: dict[str, Any]) -> list[tuple[str, str, int | None, int | None]]:
    return sorted(
        (f["rule"], Path(f["file"]).as_posix(), f.get("line"), f.get("column")) for f in report["findings"]
    )


def test_an_unrendered_chart_is_one_info_finding_at_its_chart_yaml(tmp_path: Path) -> None:
    """Without rendering: one helm-template finding per chart (its in-tree subchart, rendered
    only with it, counted with it), at the `name:` line of its Chart.yaml, severity info; no
    parse-error although every template starts with a licence comment; the CRD and the
    .helmignore'd file are linted as manifests."""
    repo = _chart_repository(tmp_path)
    code, report = run_json("--no-render", "--no-cache", ".", cwd=repo)
    assert code == 0
    assert _placed(report) == [("helm-template", "charts/web/Chart.yaml", 2, 1)]
    chart = (repo / "charts" / "web" / "Chart.yaml").read_text()
    assert keys(report) == [("helm-template", *position(chart, "name:"))]
    assert {f["severity"] for f in report["findings"]} == {"info"}
    assert report["summary"]["documents"] == 2  # the CRD and the ConfigMap Helm leaves out


def test_the_pre_commit_hook_passes_a_commit_that_touches_templates(tmp_path: Path) -> None:
    """The hook names the files changed and fails on warnings: templates named explicitly are
    one finding for their chart, which does not fail it."""
    repo = _chart_repository(tmp_path)
    named = [
        "charts/web/templates/deployment.yaml",
        "charts/web/templates/_helpers.tpl",
        "charts/web/templates/tests/test-connection.yaml",
    ]
    code, report = run_json("--no-render", "--no-cache", "--fail-on", "warning", *named, cwd=repo)
    assert code == 0
    assert _placed(report) == [("helm-template", "charts/web/Chart.yaml", 2, 1)]
    chart = (repo / "charts" / "web" / "Chart.yaml").read_text()
    assert keys(report) == [("helm-template", *position(chart, "name:"))]
    assert report["findings"][0]["severity"] == "info"  # below --fail-on warning


def test_the_changed_hook_reports_the_chart_of_a_changed_template(tmp_path: Path) -> None:
    """The published hooks run `lint --changed --fail-on warning --pre-commit FILES`: the chart's
    finding is at its Chart.yaml, not among the files named, and is still reported."""
    repo = _chart_repository(tmp_path)
    for command in (["git", "init", "-q"], ["git", "add", "."]):
        subprocess.run(command, cwd=repo, check=True, capture_output=True)
    code, report = run_json(
        "--no-render",
        "--no-cache",
        "--changed",
        "--fail-on",
        "warning",
        "--pre-commit",
        "charts/web/templates/deployment.yaml",
        cwd=repo,
    )
    assert code == 0
    assert _placed(report) == [("helm-template", "charts/web/Chart.yaml", 2, 1)]
    chart = (repo / "charts" / "web" / "Chart.yaml").read_text()
    assert keys(report) == [("helm-template", *position(chart, "name:"))]


def test_a_template_on_stdin_named_by_stdin_filename_is_its_chart(tmp_path: Path) -> None:
    repo = _chart_repository(tmp_path)
    completed = run(
        "lint",
        "--format",
        "json",
        "--no-config",
        "--no-render",
        "--stdin-filename",
        "charts/web/templates/deployment.yaml",
        "-",
        stdin=DEPLOYMENT,
        cwd=repo,
    )
    assert completed.returncode == 0
    import json

    assert _placed(json.loads(completed.stdout)) == [("helm-template", "charts/web/Chart.yaml", 2, 1)]
    chart = (repo / "charts" / "web" / "Chart.yaml").read_text()
    assert keys(json.loads(completed.stdout)) == [("helm-template", *position(chart, "name:"))]


@pytest.mark.parametrize(
    "text", [DEPLOYMENT, LICENCE + "apiVersion: v1\nkind: ConfigMap\n" + "data: {{ .Values.x }}\n"]
)
def test_a_template_piped_without_a_name_is_a_template_not_a_parse_error(text: str) -> None:
    """Outside any chart only the text can tell: a licence comment block, a comment in the body
    and a list item made by toYaml followed by keys are template actions, not broken YAML."""
    code, report = run_json("--no-render", "-", stdin=text)
    assert code == 0
    assert [f["rule"] for f in report["findings"]] == ["helm-template"]
    # At the first action that is not a comment (the licence block is one).
    assert keys(report) == [("helm-template", *position(text, "{{ ", 1))]


@needs_renderer
def test_a_rendered_chart_leaves_no_template_finding(tmp_path: Path) -> None:
    """Rendered, the templates produce nothing themselves; from the repository root and from
    inside the chart folder (`lint --render .` there kept every warning before)."""
    repo = _chart_repository(tmp_path)
    code, report = run_json("--render", "--no-cache", ".", cwd=repo)
    assert code == 0, report["findings"]
    assert _placed(report) == []
    assert keys(report) == []
    code, report = run_json("--render", "--no-cache", ".", cwd=repo / "charts" / "web")
    assert code == 0, report["findings"]
    assert _placed(report) == []
    assert keys(report) == []
    # The rendered Deployment is what is linted: without its spread constraints it is a finding.
    values = repo / "charts" / "web" / "values.yaml"
    values.write_text("replicaCount: 3\ntopologySpreadConstraints: []\n")
    code, report = run_json("--render", "--no-cache", ".", cwd=repo)
    assert [(rule, Path(file).name) for rule, file, _, _ in _placed(report)] == [
        ("replicas-not-spread", "deployment.yaml")
    ]
    # Where the template writes the replicas: the rendered line is mapped back to it.
    assert keys(report) == [("replicas-not-spread", *position(DEPLOYMENT, "replicas:"))]
    assert report["findings"][0]["path"] == "spec.replicas"
    assert report["findings"][0]["units"] == ["charts/web"]


def test_helm_reads_the_chart_as_kaffinity_classifies_it(tmp_path: Path) -> None:
    """Every file under templates/ is a template (any name, any depth) unless .helmignore leaves
    it out; what makes manifests excludes partials and NOTES.txt; crds/ are no templates."""
    repo = _chart_repository(tmp_path)
    web = repo / "charts" / "web"
    assert template_reason(str(web / "templates" / "_helpers.tpl")) == HELM_TEMPLATE
    assert template_reason(str(web / "templates" / "tests" / "test-connection.yaml")) == HELM_TEMPLATE
    assert template_reason(str(web / "templates" / "scratch" / "configmap.yaml")) is None
    assert template_reason(str(web / "crds" / "widgets.yaml")) is None
    assert template_reason(str(web / "charts" / "sub" / "templates" / "service.yaml")) == HELM_TEMPLATE
    assert sorted(Path(path).relative_to(web).as_posix() for path in chart_templates(str(web))) == [
        "templates/deployment.yaml",
        "templates/tests/test-connection.yaml",
    ]
    assert sorted(Path(path).relative_to(web).as_posix() for path in unit_templates(str(web))) == [
        "charts/sub/templates/service.yaml",
        "templates/deployment.yaml",
        "templates/tests/test-connection.yaml",
    ]
    assert top_chart(str(web / "charts" / "sub")) == str(web)


@pytest.mark.parametrize(
    ("rules", "path", "ignored"),
    [
        # helm.sh/helm/v3 internal/ignore rules_test.go, as Rules.Ignore evaluates them.
        ("*.md\n", "templates/README.md", True),
        ("/templates/a.yaml\n", "templates/a.yaml", True),
        ("templates/*.yaml\n", "templates/sub/a.yaml", False),
        ("templates/\n", "templates/a.yaml", True),  # the folder, and all below it
        ("a.yaml/\n", "templates/a.yaml", False),  # a folder rule never matches a file
        ("", "templates/.hidden.yaml", True),  # AddDefaults: templates/.?*
        ("[ab].yaml\n", "templates/b.yaml", True),
        ("[^ab].yaml\n", "templates/b.yaml", False),
        ("#templates\n\n", "templates/a.yaml", False),
    ],
)
def test_helmignore_as_helm_reads_it(tmp_path: Path, rules: str, path: str, ignored: bool) -> None:
    (tmp_path / ".helmignore").write_text(rules)
    assert _helmignored(str(tmp_path), path.split("/")) is ignored


def _other_tools(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    jinja = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ app_name }}
spec:
  {% if replicas is defined %}
  replicas: {{ replicas }}
  {% endif %}
  selector: {matchLabels: {app: "{{ app_name }}"}}
"""
    _write(
        repo,
        {
            "roles/web/tasks/main.yml": "- name: apply\n  kubernetes.core.k8s:\n    template: web.yaml\n",
            "roles/web/defaults/main.yml": "replicas: 2\n",
            "roles/web/templates/deployment.yaml": jinja,
            # a role folder elsewhere: templates/ beside tasks/
            "ansible/site/tasks/main.yml": "- debug: {msg: hi}\n",
            "ansible/site/templates/k8s/service.yml": "apiVersion: v1\nkind: Service\n{{ spec | to_yaml }}\n",
            "deploy/web.yaml.j2": jinja,
            "deploy/jinja.yaml": jinja,
            "deploy/gomplate.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Env.APP }}\n",
            "{{cookiecutter.project}}/deploy.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: x}\n",
            "flux/apps/web.yaml": (
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
                "  namespace: ${NAMESPACE}\nspec:\n  ${EXTRA_SPEC}\n  replicas: 2\n"
            ),
            # ${VAR} inside a string value: a manifest, linted (no spread: a finding)
            "flux/apps/api.yaml": (
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api-${CLUSTER}\nspec:\n"
                "  replicas: 3\n  selector: {matchLabels: {app: api}}\n  template:\n"
                "    metadata: {labels: {app: api}}\n"
                '    spec: {containers: [{name: api, image: "api:${VERSION}"}]}\n'
            ),
        },
    )
    return repo


def test_other_tools_templates_are_skipped_never_parse_errors(tmp_path: Path) -> None:
    repo = _other_tools(tmp_path)
    code, report = run_json("--no-cache", ".", "deploy/web.yaml.j2", cwd=repo)
    assert code == 0
    api = (repo / "flux" / "apps" / "api.yaml").read_text()
    assert [(rule, file, line) for rule, file, line, _ in _placed(report)] == [
        ("replicas-not-spread", "flux/apps/api.yaml", line_of(api, "replicas: 3"))
    ]
    assert keys(report) == [("replicas-not-spread", *position(api, "replicas: 3"))]
    # roles/web (2 yml + template), ansible/site (tasks + template), the .j2, jinja.yaml,
    # gomplate.yaml, cookiecutter, the envsubst file
    assert report["summary"]["skipped"] == 10
    assert report["summary"]["documents"] == 1
    assert template_reason(str(repo / "roles/web/templates/deployment.yaml")) == ANSIBLE_TEMPLATE
    assert template_reason(str(repo / "ansible/site/templates/k8s/service.yml")) == ANSIBLE_TEMPLATE


def test_the_cache_keeps_the_classification(tmp_path: Path) -> None:
    """The streamed, cached path classifies by path before the cache: a second run is the same."""
    repo = _chart_repository(tmp_path)
    cache = str(tmp_path / "cache")
    first = run_json("--no-render", "--cache-dir", cache, ".", cwd=repo)
    second = run_json("--no-render", "--cache-dir", cache, ".", cwd=repo)
    assert first[0] == second[0] == 0
    assert _placed(first[1]) == _placed(second[1]) == [("helm-template", "charts/web/Chart.yaml", 2, 1)]
    chart = (repo / "charts" / "web" / "Chart.yaml").read_text()
    assert keys(first[1]) == keys(second[1]) == [("helm-template", *position(chart, "name:"))]


HELMRELEASE = """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: konflate
spec:
  interval: 1h
  chartRef: {kind: OCIRepository, name: app-template}
  values:
    config:
      publicUrl: https://{{ .Release.Name }}.example.com
      prometheus: http://prometheus.{{ .Release.Namespace }}.svc:9090
"""


def test_values_that_hold_templates_as_content_are_a_manifest() -> None:
    """A Flux HelmRelease's values (modelled on a Flux home lab: the app-template chart passes
    them to `tpl`) hold Helm actions as content: the file is a manifest, not a template. The
    same actions as a ConfigMap's name outside any chart still make it a template."""
    code, report = run_json("--no-render", "-", stdin=HELMRELEASE)
    assert code == 0
    assert report["findings"] == []
    assert report["summary"]["documents"] == 1
    configmap = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-web\n"
    code, report = run_json("--no-render", "-", stdin=configmap)
    assert code == 0
    assert [(f["rule"], f["line"]) for f in report["findings"]] == [("helm-template", 4)]
