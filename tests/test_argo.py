"""Argo CD releases (kaffinity.repo.gitops.argo): Applications and ApplicationSets rendered as the
repo-server renders them, each a unit named after its Application.

The repositories are written by the tests, modelled on real layouts: argoproj/argocd-example-apps
(``apps/`` an app-of-apps chart whose templates are Applications, ``helm-guestbook/`` a chart with
``values-production.yaml``, ``kustomize-guestbook/`` with a ``namePrefix``, ``guestbook/`` plain
manifests), a home lab of umbrella charts (``apps/<name>/`` a chart whose dependency is not
vendored, one Application each), a multi-source Application whose values come from a ``ref``
source (``$values/...``), and ApplicationSets over ``apps/*`` folders (git directories generator).
"""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kaffinity.load.parse import DEFAULT_LIMITS
from kaffinity.repo.engines import helm_engine, kustomize_engine
from kaffinity.repo.gitops import argo
from kaffinity.repo.gitops.argo.strvals import strvals_set
from kaffinity.repo.gitops.argo.template import TemplateError, fast_render, go_render, sanitize_name
from kaffinity.repo.gitops.releases import NotRendered, checkout_remotes, repository_key, this_repository

from . import kit
from .remote import (
    chart_repository,
    git_daemon,
    git_remote,
    oci_registry,
    package_chart,
    push_chart,
    write_chart,
)

needs_helm = pytest.mark.skipif(helm_engine() is None, reason="no helm on the PATH and no helm-python-sdk")
needs_kustomize = pytest.mark.skipif(
    kustomize_engine() is None, reason="neither kustomize nor kubectl on the PATH"
)

URL = "https://github.com/argoproj/argocd-example-apps.git"

CLUSTER = """\
apiVersion: kaffinity.io/v1alpha1
kind: ClusterTopology
metadata: {name: lab}
spec:
  zones:
    - name: a
      pools: [{name: general, count: 3, allocatable: {cpu: "8", memory: 32Gi, pods: 110}}]
"""


@pytest.fixture(autouse=True)
def remote_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh remote cache per test, outside the repositories (kaffinity.repo.fetch)."""
    from kaffinity.repo.fetch.cache import CACHE_ENV

    folder = tmp_path / "remote-cache"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    return folder


def write(top: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = top / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return top


def checkout(top: Path, url: str = URL) -> Path:
    """A work tree whose ``origin`` is ``url`` (only ``.git/config``: kaffinity reads no more)."""
    write(top, {".git/config": f'[core]\n\tbare = false\n[remote "origin"]\n\turl = {url}\n'})
    return top


GUESTBOOK_CHART = {
    # argocd-example-apps/helm-guestbook
    "helm-guestbook/Chart.yaml": "apiVersion: v2\nname: helm-guestbook\nversion: 0.1.0\n",
    "helm-guestbook/values.yaml": """\
        replicaCount: 1
        image: {repository: gcr.io/heptio-images/ks-guestbook-demo, tag: '0.1'}
        """,
    "helm-guestbook/values-production.yaml": "replicaCount: 3\n",
    "helm-guestbook/templates/_helpers.tpl": """\
        {{- define "helm-guestbook.fullname" -}}
        {{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
        {{- end -}}
        """,
    "helm-guestbook/templates/deployment.yaml": """\
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: {{ template "helm-guestbook.fullname" . }}
        spec:
          replicas: {{ .Values.replicaCount }}
          selector:
            matchLabels: {app: guestbook, release: {{ .Release.Name }}}
          template:
            metadata:
              labels: {app: guestbook, release: {{ .Release.Name }}}
            spec:
              containers:
                - name: guestbook
                  image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
                  resources: {requests: {cpu: 100m, memory: 64Mi}}
        """,
}

KUSTOMIZE_GUESTBOOK = {
    # argocd-example-apps/kustomize-guestbook
    "kustomize-guestbook/kustomization.yaml": """\
        namePrefix: kustomize-
        resources: [guestbook-ui-deployment.yaml]
        """,
    "kustomize-guestbook/guestbook-ui-deployment.yaml": """\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: guestbook-ui}
        spec:
          replicas: 1
          selector: {matchLabels: {app: guestbook-ui}}
          template:
            metadata: {labels: {app: guestbook-ui}}
            spec:
              containers:
                - name: ui
                  image: "gcr.io/heptio-images/ks-guestbook-demo:0.2"
                  resources: {requests: {cpu: 100m}}
        """,
}


def application(name: str, source: dict[str, Any], namespace: str = "guestbook", **spec: Any) -> str:
    body = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "namespace": "argocd"},
        "spec": {
            "project": "default",
            "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace},
            **({"source": source} if source else {}),
            **spec,
        },
    }
    return json.dumps(body, indent=2) + "\n"


def placed(top: Path, *extra: str) -> dict[str, list[tuple[str, str | None]]]:
    """``kaffinity place -f json``: by unit, each pod's workload name and node."""
    (top.parent / "cluster.yaml").write_text(CLUSTER)
    cluster = str(top.parent / "cluster.yaml")
    command = ("place", "--no-config", "--render", "--cluster", cluster, "-f", "json", *extra, str(top))
    completed = kit.run(*command, cwd=top)
    assert completed.returncode in (0, 1), completed.stderr
    pods: dict[str, list[tuple[str, str | None]]] = {}
    for pod in json.loads(completed.stdout)["pods"]:
        pods.setdefault(pod["unit"], []).append((pod["object"]["name"], pod["node"]))
    return pods


def units(report: dict[str, Any]) -> list[str]:
    return [unit for unit in report["summary"]["units"] if unit.startswith("Application")]


# --- argocd-example-apps ---------------------------------------------------------------------


def example_apps(top: Path) -> Path:
    checkout(top)
    return write(
        top,
        {
            **GUESTBOOK_CHART,
            **KUSTOMIZE_GUESTBOOK,
            "guestbook/guestbook-ui-deployment.yaml": KUSTOMIZE_GUESTBOOK[
                "kustomize-guestbook/guestbook-ui-deployment.yaml"
            ],
            # argocd-example-apps/apps: the app of apps, a chart of Applications.
            "apps/Chart.yaml": "apiVersion: v2\nname: applications\nversion: 0.1.0\n",
            "apps/values.yaml": f"""\
                repoURL: {URL}
                applications:
                  - name: helm-guestbook
                    helm: {{valueFiles: [values-production.yaml]}}
                  - name: kustomize-guestbook
                  - name: guestbook
                """,
            "apps/templates/applications.yaml": """\
                {{- range .Values.applications }}
                apiVersion: argoproj.io/v1alpha1
                kind: Application
                metadata:
                  name: {{ .name }}
                  namespace: argocd
                spec:
                  destination:
                    namespace: {{ .name }}
                    server: https://kubernetes.default.svc
                  project: default
                  source:
                    path: {{ .name }}
                    repoURL: {{ $.Values.repoURL }}
                    targetRevision: HEAD
                    {{- with .helm }}
                    helm: {{ toJson . }}
                    {{- end }}
                ---
                {{ end -}}
                """,
        },
    )


@needs_helm
@needs_kustomize
def test_example_apps_each_application_is_a_unit_with_its_pods(tmp_path: Path) -> None:
    top = example_apps(tmp_path / "argocd-example-apps")
    _, report = kit.run_json("--render", str(top), cwd=top)
    assert sorted(units(report)) == [
        "Application argocd/guestbook",
        "Application argocd/helm-guestbook",
        "Application argocd/kustomize-guestbook",
    ]
    # The remote matched: no guess, nothing read as written.
    assert not [notice for notice in report["summary"]["notices"] if "release(s)" in notice]
    pods = placed(top)
    # helm-guestbook with values-production.yaml: 3 replicas, release named after the Application.
    names = [name for name, _ in pods["Application argocd/helm-guestbook"]]
    assert names == ["helm-guestbook-helm-guestbook"] * 3
    assert len(pods["Application argocd/helm-guestbook"]) == 3
    assert all(node for _, node in pods["Application argocd/helm-guestbook"])
    assert [name for name, _ in pods["Application argocd/kustomize-guestbook"]] == ["kustomize-guestbook-ui"]
    assert [name for name, _ in pods["Application argocd/guestbook"]] == ["guestbook-ui"]


@needs_helm
def test_a_finding_of_an_application_lands_on_the_chart_template(tmp_path: Path) -> None:
    top = example_apps(tmp_path / "argocd-example-apps")
    code, report = kit.run_json("--render", str(top), cwd=top)
    template = (top / "helm-guestbook/templates/deployment.yaml").read_text()
    line, column = kit.position(template, "replicas:")
    found = {
        (f["rule"], f["line"], f["column"])
        for f in report["findings"]
        if f["file"].endswith("helm-guestbook/templates/deployment.yaml")
    }
    # 3 replicas (values-production.yaml) and nothing spreading them: only the Application's
    # render has them (the chart's defaults run 1).
    assert ("replicas-not-spread", line, column) in found
    assert code == 0  # advice (info) only


@needs_helm
def test_offline_remote_chart_is_a_note_in_the_json_report(tmp_path: Path) -> None:
    top = checkout(tmp_path / "lab")
    write(
        top,
        {
            "apps/ingress.yaml": application(
                "ingress-nginx",
                {
                    "repoURL": "https://kubernetes.github.io/ingress-nginx",
                    "chart": "ingress-nginx",
                    "targetRevision": "4.11.3",
                },
            ),
            "apps/registry.yaml": application(
                "podinfo",
                {"repoURL": "ghcr.io/stefanprodan/charts", "chart": "podinfo", "targetRevision": "6.*"},
            ),
        },
    )
    completed = kit.run("lint", "--format", "json", "--no-config", "--render", str(top), cwd=top)
    report = json.loads(completed.stdout)
    assert completed.returncode == 0
    assert units(report) == ["Application argocd/ingress-nginx", "Application argocd/podinfo"]
    # One note for both (the run's notes: stderr; the JSON summary's notices once the summary
    # counts them).
    notes = [line for line in completed.stderr.splitlines() if "release(s) read as written" in line]
    notes += [notice for notice in report["summary"]["notices"] if "release(s) read as written" in notice]
    assert len({note.removeprefix("kaffinity: note: ") for note in notes}) == 1
    assert "2 release(s) read as written" in notes[0]


def test_a_bare_registry_host_is_an_oci_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kaffinity.repo.fetch import charts
    from kaffinity.repo.fetch.cache import NotFetched

    asked: list[tuple[str, str, str | None]] = []

    def fake_chart(repository: str, name: str, version: str | None, sandbox: Any) -> NotFetched:
        asked.append((repository, name, version))
        return NotFetched("offline", offline=True)

    monkeypatch.setattr(charts, "fetch_chart", fake_chart)
    top = checkout(tmp_path / "lab")
    write(
        top,
        {
            "a.yaml": application(
                "a", {"repoURL": "ghcr.io/stefanprodan/charts", "chart": "podinfo", "targetRevision": "6.*"}
            ),
            "b.yaml": application("b", {"repoURL": "oci://ghcr.io/x/charts", "chart": "c"}),
            "c.yaml": application(
                "c", {"repoURL": "https://charts.example/", "chart": "d", "targetRevision": "1.2.3"}
            ),
        },
    )
    outcomes = [release.render(5.0) for release in argo.releases(context_of(top))]
    assert all(isinstance(outcome, NotRendered) and outcome.remote for outcome in outcomes)
    assert asked == [
        ("oci://ghcr.io/stefanprodan/charts", "podinfo", "6.*"),
        ("oci://ghcr.io/x/charts", "c", None),
        ("https://charts.example/", "d", "1.2.3"),
    ]


def context_of(top: Path) -> Any:
    from kaffinity.load.files import load
    from kaffinity.repo.gitops.releases import ReleaseInputs

    files = load([str(top)], limits=DEFAULT_LIMITS)
    return ReleaseInputs(tuple(doc for file in files for doc in file.documents))


# --- home lab of umbrella charts, multi-source -----------------------------------------------


@needs_helm
def test_multi_source_values_come_from_the_ref_source(tmp_path: Path) -> None:
    top = checkout(tmp_path / "homelab", "git@github.com:someone/homelab.git")
    write(top, {k.replace("helm-guestbook/", "charts/guestbook/"): v for k, v in GUESTBOOK_CHART.items()})
    write(
        top,
        {
            "envs/prod/guestbook.yaml": "replicaCount: 2\n",
            "apps/guestbook.yaml": application(
                "guestbook",
                {},
                sources=[
                    {
                        "repoURL": "https://github.com/someone/homelab",
                        "path": "charts/guestbook",
                        "targetRevision": "main",
                        "helm": {
                            "releaseName": "gb",
                            "valueFiles": ["$values/envs/prod/guestbook.yaml", "missing.yaml"],
                            "ignoreMissingValueFiles": True,
                            "parameters": [{"name": "image.tag", "value": "0.3", "forceString": True}],
                        },
                    },
                    {
                        "repoURL": "https://github.com/someone/homelab.git/",
                        "targetRevision": "main",
                        "ref": "values",
                    },
                ],
            ),
        },
    )
    pods = placed(top)
    assert [name for name, _ in pods["Application argocd/guestbook"]] == ["gb-helm-guestbook"] * 2


@needs_helm
def test_parameters_and_values_object_as_helm_applies_them(tmp_path: Path) -> None:
    top = checkout(tmp_path / "homelab", "https://github.com/someone/homelab")
    write(top, {k.replace("helm-guestbook/", "charts/guestbook/"): v for k, v in GUESTBOOK_CHART.items()})
    write(
        top,
        {
            "apps/guestbook.yaml": application(
                "guestbook",
                {
                    "repoURL": "https://github.com/someone/homelab",
                    "path": "charts/guestbook",
                    "helm": {
                        "valueFiles": ["values-production.yaml"],
                        "valuesObject": {"replicaCount": 5},
                        "parameters": [{"name": "replicaCount", "value": "4"}],
                    },
                },
            ),
        },
    )
    pods = placed(top)
    assert len(pods["Application argocd/guestbook"]) == 4


def test_a_values_file_outside_the_repository_is_never_read(tmp_path: Path) -> None:
    top = checkout(tmp_path / "homelab", "https://github.com/someone/homelab")
    write(top, {k.replace("helm-guestbook/", "charts/guestbook/"): v for k, v in GUESTBOOK_CHART.items()})
    (tmp_path / "secret.yaml").write_text("replicaCount: 9\n")
    write(
        top,
        {
            "app.yaml": application(
                "guestbook",
                {
                    "repoURL": "https://github.com/someone/homelab",
                    "path": "charts/guestbook",
                    "helm": {"valueFiles": ["../../../secret.yaml"]},
                },
            )
        },
    )
    (outcome,) = [release.render(5.0) for release in argo.releases(context_of(top))]
    assert isinstance(outcome, NotRendered)
    assert not outcome.remote


@needs_helm
def test_umbrella_chart_with_an_unvendored_dependency_is_never_silent(tmp_path: Path) -> None:
    # A home lab: apps/<name>/Chart.yaml depends on an upstream chart that is not vendored.
    top = checkout(tmp_path / "homelab", "https://github.com/someone/homelab")
    write(
        top,
        {
            "apps/grafana/Chart.yaml": """\
                apiVersion: v2
                name: grafana
                version: 1.0.0
                dependencies:
                  - name: grafana
                    version: 8.5.0
                    repository: https://grafana.github.io/helm-charts
                """,
            "apps/grafana/values.yaml": "grafana: {replicas: 2}\n",
            "argocd/grafana.yaml": application(
                "grafana", {"repoURL": "https://github.com/someone/homelab", "path": "apps/grafana"}
            ),
        },
    )
    code, report = kit.run_json("--render", str(top), cwd=top)
    assert "Application argocd/grafana" in units(report)
    # Never zero objects and exit 0 without a word: the dependency not vendored is one finding
    # at its Chart.yaml item (kaffinity.repo.dependencies), whether the chart is rendered as a
    # chart unit or as the Application's source.
    chart = (top / "apps/grafana/Chart.yaml").read_text()
    line, column = kit.position(chart, "name: grafana", after="dependencies:")
    found = [
        (f["rule"], f["line"], f["column"]) for f in report["findings"] if f["file"].endswith("Chart.yaml")
    ]
    assert found == [("chart-dependency", line, column)]
    assert code == 0  # a warning


# --- kustomize and directory sources ---------------------------------------------------------


@needs_kustomize
def test_kustomize_options_are_applied(tmp_path: Path) -> None:
    top = example_apps(tmp_path / "argocd-example-apps")
    (top / "apps").rename(tmp_path / "unused")
    write(
        top,
        {
            "argocd/kg.yaml": application(
                "kg",
                {
                    "repoURL": "git@github.com:argoproj/argocd-example-apps",
                    "path": "kustomize-guestbook",
                    "kustomize": {
                        "namePrefix": "prod-",
                        "nameSuffix": "-v2",
                        "images": ["gcr.io/heptio-images/ks-guestbook-demo:0.3"],
                        "replicas": [{"name": "guestbook-ui", "count": 2}],
                        "commonLabels": {"team": "web"},
                    },
                },
            )
        },
    )
    pods = placed(top)
    assert [name for name, _ in pods["Application argocd/kg"]] == ["prod-kustomize-guestbook-ui-v2"] * 2


def test_directory_recurse_include_exclude(tmp_path: Path) -> None:
    top = checkout(tmp_path / "repo", "https://github.com/someone/repo")
    deployment = KUSTOMIZE_GUESTBOOK["kustomize-guestbook/guestbook-ui-deployment.yaml"]
    write(
        top,
        {
            "manifests/a.yaml": deployment,
            "manifests/sub/b.yaml": deployment.replace("guestbook-ui}", "b}"),
            "manifests/sub/skip.yaml": deployment.replace("guestbook-ui}", "skip}"),
            "manifests/lib.jsonnet": "{}",
            "app.yaml": application(
                "dir",
                {
                    "repoURL": "https://github.com/someone/repo",
                    "path": "manifests",
                    "directory": {
                        "recurse": True,
                        "include": "{*.yaml,sub/*.yaml}",
                        "exclude": "sub/skip.yaml",
                    },
                },
            ),
            "jsonnet.yaml": application(
                "jsonnet", {"repoURL": "https://github.com/someone/repo", "path": "manifests"}
            ),
        },
    )
    found = {release.name: release for release in argo.releases(context_of(top))}
    directory = found["Application argocd/dir"]
    assert [os.path.relpath(path, top) for path in directory.files] == [
        "manifests/a.yaml",
        "manifests/sub/b.yaml",
    ]
    outcome = directory.render(5.0)
    assert not isinstance(outcome, NotRendered)
    assert [doc.data["metadata"]["name"] for doc in outcome.documents] == ["guestbook-ui", "b"]
    # Objects naming no namespace are applied in spec.destination.namespace.
    assert {doc.data["metadata"]["namespace"] for doc in outcome.documents} == {"guestbook"}
    jsonnet = found["Application argocd/jsonnet"].render(5.0)
    assert isinstance(jsonnet, NotRendered)
    assert not jsonnet.remote


def test_a_guessed_repository_says_so(tmp_path: Path) -> None:
    # No remote (a copy without .git): the folder's name is the repository's name.
    top = tmp_path / "homelab"
    write(
        top,
        {
            "manifests/a.yaml": KUSTOMIZE_GUESTBOOK["kustomize-guestbook/guestbook-ui-deployment.yaml"],
            "app.yaml": application(
                "a", {"repoURL": "https://gitlab.com/me/homelab.git", "path": "manifests"}
            ),
            "other.yaml": application(
                "b", {"repoURL": "https://gitlab.com/me/other.git", "path": "manifests"}
            ),
        },
    )
    found = {release.name: release for release in argo.releases(context_of(top))}
    assert found["Application argocd/a"].note
    assert not found["Application argocd/b"].note
    assert isinstance(found["Application argocd/b"].render(5.0), NotRendered)


# --- app of apps -----------------------------------------------------------------------------


def test_app_of_apps_each_application_once(tmp_path: Path) -> None:
    top = checkout(tmp_path / "repo", "https://github.com/someone/repo")
    child = application("child", {"repoURL": "https://github.com/someone/repo", "path": "manifests"})
    write(
        top,
        {
            "manifests/a.yaml": KUSTOMIZE_GUESTBOOK["kustomize-guestbook/guestbook-ui-deployment.yaml"],
            "apps/child.yaml": child,
            "apps/child-again.yaml": child,
            "root.yaml": application("root", {"repoURL": "https://github.com/someone/repo", "path": "apps"}),
        },
    )
    names = [release.name for release in argo.releases(context_of(top))]
    assert sorted(names) == ["Application argocd/child", "Application argocd/root"]


@needs_kustomize
def test_app_of_apps_only_a_parents_render_produces(tmp_path: Path) -> None:
    # The children exist only once the parent's kustomization is built (a namePrefix).
    top = checkout(tmp_path / "repo", "https://github.com/someone/repo")
    write(
        top,
        {
            "manifests/a.yaml": KUSTOMIZE_GUESTBOOK["kustomize-guestbook/guestbook-ui-deployment.yaml"],
            "apps/base/child.yaml": application(
                "child", {"repoURL": "https://github.com/someone/repo", "path": "manifests"}
            ),
            "apps/base/set.yaml": appset(
                [{"list": {"elements": [{"name": "gen"}]}}],
                {
                    "metadata": {"name": "{{name}}"},
                    "spec": {"source": {"repoURL": "https://github.com/someone/repo"}},
                },
            ),
            "apps/base/kustomization.yaml": "resources: [child.yaml, set.yaml]\n",
            "root.yaml": application(
                "root",
                {
                    "repoURL": "https://github.com/someone/repo",
                    "path": "apps/base",
                    "kustomize": {"namePrefix": "prod-", "namespace": "team"},
                },
            ),
        },
    )
    names = [release.name for release in argo.releases(context_of(top))]
    # The child Application and the ApplicationSet the parent's build puts in its namespace.
    assert {"Application team/prod-child", "Application team/gen"} <= set(names)


# --- ApplicationSets -------------------------------------------------------------------------


def appset(generators: list[Any], template: dict[str, Any], go: bool = False) -> str:
    body = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "apps", "namespace": "argocd"},
        "spec": {**({"goTemplate": True, "goTemplateOptions": ["missingkey=error"]} if go else {}),
                 "generators": generators, "template": template},
    }  # fmt: skip
    return json.dumps(body, indent=2) + "\n"


def homelab_apps(top: Path) -> Path:
    checkout(top, "https://github.com/someone/homelab")
    deployment = KUSTOMIZE_GUESTBOOK["kustomize-guestbook/guestbook-ui-deployment.yaml"]
    return write(
        top,
        {
            "apps/web/deployment.yaml": deployment.replace("guestbook-ui}", "web}"),
            "apps/api/deployment.yaml": deployment.replace("guestbook-ui}", "api}"),
            "apps/legacy/deployment.yaml": deployment.replace("guestbook-ui}", "legacy}"),
        },
    )


@pytest.mark.parametrize("go", [False, True])
def test_applicationset_git_directories(tmp_path: Path, go: bool) -> None:
    top = homelab_apps(tmp_path / "homelab")
    name, path = ("{{.path.basename}}", "{{.path.path}}") if go else ("{{path.basename}}", "{{path}}")
    write(
        top,
        {
            "argocd/apps.yaml": appset(
                [
                    {
                        "git": {
                            "repoURL": "https://github.com/someone/homelab.git",
                            "revision": "HEAD",
                            "directories": [{"path": "apps/*"}, {"path": "apps/legacy", "exclude": True}],
                        }
                    }
                ],
                {
                    "metadata": {"name": name},
                    "spec": {
                        "project": "default",
                        "source": {"repoURL": "https://github.com/someone/homelab.git", "path": path},
                        "destination": {"namespace": name},
                    },
                },
                go,
            )
        },
    )
    found = {release.name: release for release in argo.releases(context_of(top))}
    assert sorted(found) == ["Application argocd/api", "Application argocd/web"]
    outcome = found["Application argocd/web"].render(5.0)
    assert not isinstance(outcome, NotRendered)
    assert [doc.data["metadata"]["name"] for doc in outcome.documents] == ["web"]


def test_applicationset_list_matrix_and_unevaluated_generators(tmp_path: Path) -> None:
    top = homelab_apps(tmp_path / "homelab")
    template = {
        "metadata": {"name": "{{path.basename}}-{{cluster}}"},
        "spec": {"source": {"repoURL": "https://github.com/someone/homelab", "path": "{{path}}"}},
    }
    matrix = {
        "matrix": {
            "generators": [
                {"list": {"elements": [{"cluster": "dev"}, {"cluster": "prod"}]}},
                {
                    "git": {
                        "repoURL": "https://github.com/someone/homelab",
                        "directories": [{"path": "apps/w*"}],
                    }
                },
            ]
        }
    }
    write(
        top,
        {
            "matrix.yaml": appset([matrix], template),
            "clusters.yaml": appset([{"clusters": {}}], template).replace(
                '"name": "apps"', '"name": "fleet"'
            ),
        },
    )
    found = {release.name: release for release in argo.releases(context_of(top))}
    assert sorted(found) == [
        "Application argocd/web-dev",
        "Application argocd/web-prod",
        "ApplicationSet argocd/fleet",
    ]
    fleet = found["ApplicationSet argocd/fleet"].render(5.0)
    assert isinstance(fleet, NotRendered)
    assert not fleet.remote


def test_applicationset_git_files_generator(tmp_path: Path) -> None:
    top = homelab_apps(tmp_path / "homelab")
    write(
        top,
        {
            "clusters/dev/config.json": '{"cluster": {"name": "dev", "app": "web"}}',
            "clusters/prod/config.json": '{"cluster": {"name": "prod", "app": "api"}}',
            "set.yaml": appset(
                [
                    {
                        "git": {
                            "repoURL": "https://github.com/someone/homelab",
                            "files": [{"path": "clusters/**/config.json"}],
                        }
                    }
                ],
                {
                    "metadata": {"name": "{{cluster.app}}-{{path.basename}}"},
                    "spec": {
                        "source": {
                            "repoURL": "https://github.com/someone/homelab",
                            "path": "apps/{{cluster.app}}",
                        }
                    },
                },
            ),
        },
    )
    names = sorted(release.name for release in argo.releases(context_of(top)))
    assert names == ["Application argocd/api-prod", "Application argocd/web-dev"]


# --- pieces ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/argoproj/argocd-example-apps.git",
        "https://github.com/argoproj/argocd-example-apps",
        "https://github.com/argoproj/argocd-example-apps/",
        "git@github.com:argoproj/argocd-example-apps.git",
        "ssh://git@github.com/argoproj/argocd-example-apps",
        "https://user@GitHub.com/argoproj/argocd-example-apps.git",
    ],
)
def test_repository_urls_compare_by_host_and_path(url: str) -> None:
    assert repository_key(url) == ("github.com", "argoproj/argocd-example-apps")


def test_a_local_path_is_no_repository_key() -> None:
    assert repository_key("/work/mirror/repo") is None


def test_remotes_of_a_linked_worktree(tmp_path: Path) -> None:
    common = tmp_path / "main" / ".git"
    write(common.parent, {".git/config": '[remote "origin"]\n\turl = git@github.com:me/lab.git\n'})
    write(common, {"worktrees/wt/commondir": "../..\n"})
    top = tmp_path / "wt"
    write(top, {".git": f"gitdir: {common / 'worktrees' / 'wt'}\n"})
    assert checkout_remotes(str(top)) == ("git@github.com:me/lab.git",)
    assert this_repository("https://github.com/me/lab", str(top)) == "remote"
    assert this_repository("https://github.com/me/other", str(top)) is None


def test_fasttemplate_keeps_unknown_tags() -> None:
    params = {"path": "apps/web", "path.basename": "web", "path[0]": "apps"}
    assert fast_render("{{path[0]}}/{{ path.basename }}-{{nope}}", params) == "apps/web-{{nope}}"


def test_go_templates_of_real_applicationsets() -> None:
    params = {
        "path": {"path": "apps/My_App", "basename": "My_App", "segments": ["apps", "My_App"]},
        "name": "",
    }
    assert go_render("{{.path.basename | normalize}}", params) == "my-app"
    assert go_render("{{index .path.segments 1}}", params) == "My_App"
    assert go_render('{{ .name | default "web" }}', params) == "web"
    assert go_render('{{- if eq .path.basename "My_App" }}yes{{ else }}no{{ end -}}', params) == "yes"
    assert go_render("{{.missing}}", params) == "<no value>"
    with pytest.raises(TemplateError):
        go_render("{{.missing}}", params, missing_error=True)
    with pytest.raises(TemplateError):
        go_render("{{ range .path.segments }}{{.}}{{ end }}", params)
    assert sanitize_name("Foo_Bar.") == "foo-bar"


def test_helm_set_semantics() -> None:
    base: dict[str, Any] = {"list": [{"a": 1}, {"a": 2}]}
    strvals_set(base, "list[1].a", "3", force_string=False)
    strvals_set(base, r"annotations.example\.com/x", "true", force_string=False)
    strvals_set(base, "tag", "0123", force_string=False)
    strvals_set(base, "n", "10", force_string=True)
    strvals_set(base, "items", "{a,b}", force_string=False)
    strvals_set(base, "grow[2]", "x", force_string=False)
    assert base == {
        "list": [{"a": 1}, {"a": 3}],
        "annotations": {"example.com/x": True},
        "tag": "0123",
        "n": "10",
        "items": ["a", "b"],
        "grow": [None, None, "x"],
    }


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_nothing_in_the_checkout_is_written(tmp_path: Path) -> None:
    top = example_apps(tmp_path / "argocd-example-apps")
    before = sorted(str(path.relative_to(top)) for path in top.rglob("*"))
    for release in argo.releases(context_of(top)):
        release.render(30.0)
    assert sorted(str(path.relative_to(top)) for path in top.rglob("*")) == before


# --- remote sources, served on loopback ------------------------------------------------------


def guestbook_chart(folder: Path, version: str = "1.0.0") -> Path:
    templates = {
        name.removeprefix("helm-guestbook/templates/"): text
        for name, text in GUESTBOOK_CHART.items()
        if "/templates/" in name
    }
    return write_chart(
        folder,
        "helm-guestbook",
        version,
        templates={name: textwrap.dedent(text) for name, text in templates.items()},
        values=textwrap.dedent(GUESTBOOK_CHART["helm-guestbook/values.yaml"]),
    )


@needs_helm
def test_a_remote_chart_from_a_helm_repository_with_the_network_allowed(tmp_path: Path) -> None:
    chart = guestbook_chart(tmp_path / "src")
    with chart_repository(tmp_path / "served", [chart]) as repository:
        top = checkout(tmp_path / "lab", "https://github.com/someone/lab")
        source = {
            "repoURL": repository.url,
            "chart": "helm-guestbook",
            "targetRevision": "1.x",
            "helm": {"valuesObject": {"replicaCount": 2}},
        }
        write(top, {"apps/guestbook.yaml": application("guestbook", source)})
        offline = placed(top)
        pods = placed(top, "--allow-network")
        assert "/helm-guestbook-1.0.0.tgz" in repository.requests
    assert "Application argocd/guestbook" not in offline
    assert pods["Application argocd/guestbook"] == [("guestbook-helm-guestbook", node) for _, node in pods[
        "Application argocd/guestbook"]]  # fmt: skip
    assert len(pods["Application argocd/guestbook"]) == 2


@needs_helm
def test_a_remote_chart_from_an_oci_registry_named_without_a_scheme(tmp_path: Path) -> None:
    chart = guestbook_chart(tmp_path / "src", "2.1.0")
    with oci_registry(tmp_path / "registry") as registry:
        push_chart(registry, package_chart(chart, tmp_path / "out"))
        top = checkout(tmp_path / "lab", "https://github.com/someone/lab")
        bare = registry.url.removeprefix("oci://")  # Argo CD's form: host/path, no scheme
        source = {"repoURL": bare, "chart": "helm-guestbook", "targetRevision": "2.1.0"}
        write(top, {"apps/guestbook.yaml": application("guestbook", source)})
        pods = placed(top, "--allow-network")
    assert [name for name, _ in pods["Application argocd/guestbook"]] == ["guestbook-helm-guestbook"]


@needs_kustomize
def test_a_remote_git_source_over_git_daemon(tmp_path: Path) -> None:
    remote_files = {name: textwrap.dedent(text) for name, text in KUSTOMIZE_GUESTBOOK.items()}
    remote = git_remote(tmp_path / "git", remote_files, tags=("v1.0.0",))
    with git_daemon(remote) as url:
        top = checkout(tmp_path / "lab", "https://github.com/someone/lab")
        source = {"repoURL": url, "path": "kustomize-guestbook", "targetRevision": "v1.0.0"}
        write(top, {"apps/guestbook.yaml": application("guestbook", source)})
        pods = placed(top, "--allow-network")
    assert [name for name, _ in pods["Application argocd/guestbook"]] == ["kustomize-guestbook-ui"]


def test_symlinks_and_fifos_in_a_source_are_never_read(tmp_path: Path) -> None:
    top = checkout(tmp_path / "repo", "https://github.com/someone/repo")
    deployment = KUSTOMIZE_GUESTBOOK["kustomize-guestbook/guestbook-ui-deployment.yaml"]
    write(tmp_path, {"outside.yaml": deployment.replace("guestbook-ui}", "outside}")})
    write(
        top,
        {
            "manifests/a.yaml": deployment,
            "app.yaml": application(
                "dir", {"repoURL": "https://github.com/someone/repo", "path": "manifests"}
            ),
        },
    )
    (top / "manifests/link.yaml").symlink_to(tmp_path / "outside.yaml")
    os.mkfifo(top / "manifests/pipe.yaml")
    (release,) = argo.releases(context_of(top))
    assert [os.path.basename(path) for path in release.files] == ["a.yaml"]
    outcome = release.render(5.0)
    assert not isinstance(outcome, NotRendered)
    assert [doc.data["metadata"]["name"] for doc in outcome.documents] == ["guestbook-ui"]


def test_a_fifo_as_git_config_does_not_block(tmp_path: Path) -> None:
    top = tmp_path / "repo"
    (top / ".git").mkdir(parents=True)
    os.mkfifo(top / ".git" / "config")
    assert checkout_remotes(str(top)) == ()


def test_a_kustomize_source_claims_the_files_of_its_build(tmp_path: Path) -> None:
    # An overlay over a base (argocd-example-apps' kustomize-guestbook, with a prod overlay).
    top = checkout(tmp_path / "repo", "https://github.com/someone/repo")
    write(
        top,
        {name.replace("kustomize-guestbook/", "base/"): text for name, text in KUSTOMIZE_GUESTBOOK.items()},
    )
    write(
        top,
        {
            "overlays/prod/kustomization.yaml": "resources: [../../base]\n",
            "app.yaml": application(
                "kg", {"repoURL": "https://github.com/someone/repo", "path": "/overlays/prod"}
            ),
        },
    )
    (release,) = argo.releases(context_of(top))
    assert [os.path.relpath(path, top) for path in release.files] == ["base/guestbook-ui-deployment.yaml"]


MALFORMED = [
    {"spec": "nope"},
    {"spec": {"source": "nope"}},
    {"spec": {"sources": [1, "x", {"repoURL": 5, "path": ["a"]}]}},
    {
        "spec": {
            "source": {"repoURL": "https://github.com/someone/repo", "path": "m", "helm": {"parameters": 5}}
        }
    },
    {
        "spec": {
            "source": {
                "repoURL": "https://github.com/someone/repo",
                "path": "m",
                "kustomize": {"replicas": 5},
            }
        }
    },
    {"spec": {"source": {"repoURL": "https://github.com/someone/repo", "path": "../.."}}},
    {
        "spec": {
            "source": {
                "repoURL": "https://github.com/someone/repo",
                "path": "m",
                "directory": {"include": "{" * 40},
            }
        }
    },
    {
        "spec": {
            "source": {"repoURL": "https://github.com/someone/repo", "path": "m", "helm": {"valueFiles": "x"}}
        }
    },
    {
        "spec": {
            "source": {
                "repoURL": "https://github.com/someone/repo",
                "path": "m",
                "helm": {"values": "[1, 2]"},
            }
        }
    },
]
MALFORMED_SETS = [
    {"spec": {"generators": 5, "template": {}}},
    {"spec": {"generators": [{"list": {"elements": 5}}], "template": {"metadata": {"name": "{{x}}"}}}},
    {
        "spec": {
            "generators": [{"list": {"elements": [{"a": 1}]}, "selector": {"matchLabels": 3}}],
            "template": {},
        }
    },
    {
        "spec": {
            "goTemplate": True,
            "generators": [{"list": {"elements": [{"a": 1}]}}],
            "template": {"metadata": {"name": '{{ printf "%d %d" 1 }}{{ .a.b.c }}{{ (index .a 3) }}'}},
        }
    },
    {"spec": {"generators": [{"matrix": {"generators": [{"list": {"elements": [{"a": "1"}] * 600}}] * 2}}]}},
    {"spec": {"generators": [{"merge": {"mergeKeys": "a", "generators": 3}}], "template": {}}},
    {"spec": {"generators": [{"git": {"repoURL": "https://github.com/someone/repo", "directories": "x"}}]}},
]


def test_malformed_applications_never_raise(tmp_path: Path) -> None:
    top = checkout(tmp_path / "repo", "https://github.com/someone/repo")
    write(top, {"m/a.yaml": KUSTOMIZE_GUESTBOOK["kustomize-guestbook/guestbook-ui-deployment.yaml"]})
    documents = []
    for index, body in enumerate(MALFORMED):
        meta = {"name": f"app{index}"}
        documents.append(
            {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": meta, **body}
        )
    for index, body in enumerate(MALFORMED_SETS):
        meta = {"name": f"set{index}"}
        documents.append(
            {"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet", "metadata": meta, **body}
        )
    (top / "all.yaml").write_text("---\n".join(json.dumps(doc) + "\n" for doc in documents))
    found = list(argo.releases(context_of(top)))
    assert len(found) >= len(MALFORMED) - 1
    for release in found:
        release.render(5.0)
    with pytest.raises(ValueError):
        strvals_set({}, "a[99999999]", "x", force_string=False)


@needs_helm
def test_a_remote_chart_with_values_from_this_repository(tmp_path: Path) -> None:
    # The most common multi-source layout: an upstream chart, the values in the GitOps repository.
    chart = guestbook_chart(tmp_path / "src", "1.2.0")
    with chart_repository(tmp_path / "served", [chart]) as repository:
        top = checkout(tmp_path / "lab", "https://github.com/someone/lab")
        sources = [
            {
                "repoURL": repository.url,
                "chart": "helm-guestbook",
                "targetRevision": "1.2.0",
                "helm": {
                    "valueFiles": ["$values/values/guestbook.yaml"],
                    "values": "image: {tag: '0.4'}\n",
                    "fileParameters": [{"name": "motd", "path": "$values/values/motd.txt"}],
                },
            },
            {"repoURL": "https://github.com/someone/lab.git", "targetRevision": "main", "ref": "values"},
        ]
        write(
            top,
            {
                "values/guestbook.yaml": "replicaCount: 3\n",
                "values/motd.txt": "hello\n",
                "apps/guestbook.yaml": application("guestbook", {}, sources=sources),
            },
        )
        pods = placed(top, "--allow-network")
    assert [name for name, _ in pods["Application argocd/guestbook"]] == ["guestbook-helm-guestbook"] * 3


@needs_kustomize
def test_a_folder_a_plugin_builds_is_not_a_failed_kustomization(tmp_path: Path) -> None:
    """argocd-example-apps' ``plugins/kustomized-helm``: its kustomization names the ``all.yaml``
    the config management plugin generates (``helm template . > all.yaml && kustomize build``),
    so plain kustomize cannot build it; the Application says a plugin builds it. No parse-error:
    the folder is read as written, and the summary says a plugin builds it."""
    top = checkout(tmp_path / "apps")
    write(
        top,
        {
            "plugins/kustomized-helm/kustomization.yaml": (
                "namePrefix: kustomize-\nresources:\n- ./all.yaml\n"
            ),
            "apps/plugin.yaml": application(
                "plugin-kustomized-helm",
                {
                    "repoURL": URL,
                    "path": "plugins/kustomized-helm",
                    "targetRevision": "HEAD",
                    "plugin": {"name": "kustomized-helm"},
                },
            ),
        },
    )
    code, report = kit.run_json("--render", str(top), cwd=top)
    assert [f["rule"] for f in report["findings"]] == []
    assert code == 0
    reasons = {item["unit"]: item["reason"] for item in report["summary"]["render"]["unrendered_units"]}
    assert reasons[str(top / "plugins/kustomized-helm")] == "built by an Argo CD plugin"
    assert (
        "its source uses a config management plugin" in reasons["Application argocd/plugin-kustomized-helm"]
    )

    # Without the Application, the same folder is a kustomization that does not build.
    (top / "apps/plugin.yaml").unlink()
    code, report = kit.run_json("--render", str(top), cwd=top)
    assert [f["rule"] for f in report["findings"]] == ["parse-error"]
    assert code == 2
