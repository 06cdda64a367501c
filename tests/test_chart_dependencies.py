"""Chart dependencies as ``helm template`` renders them (issue 32, item 3): vendored in charts/
(folders and archives, with Helm's own condition, alias), taken from ``file://`` in the
repository, fetched from the loopback HTTP repository and OCI registry with the network, and a
``chart-dependency`` finding at the dependency's Chart.yaml item otherwise -- never a chart
rendered to nothing in silence.

The layouts model an Argo CD repository of umbrella charts (a ``Chart.yaml`` naming its
dependencies, ``charts/`` not committed, a ``values.yaml`` setting the subcharts' values), as
in argoproj/argocd-example-apps ``helm-dependency/``."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kaffinity.repo.engines import helm_engine
from kaffinity.repo.fetch import charts
from kaffinity.repo.fetch.cache import CACHE_ENV
from kaffinity.repo.helm.chart import render_chart
from kaffinity.repo.rendered import Rendered
from kaffinity.repo.sandbox import Sandbox

from .kit import line_of, run_json
from .remote import chart_repository, oci_registry, package_chart, push_chart, tar_chart, write_chart

pytestmark = pytest.mark.skipif(
    helm_engine() is None, reason="no helm binary and no helm-python-sdk to render"
)

NETWORK = Sandbox(network=True, timeout=60)
OFFLINE = Sandbox(network=False, timeout=60)
#: A subchart's pod, named after the chart as Helm sees it (an alias renames it).
SUB_POD = (
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Chart.Name }}\n"
    "spec:\n  containers:\n    - name: c\n      image: nginx\n"
)
OWN_POD = SUB_POD.replace("{{ .Chart.Name }}", "own")


@pytest.fixture(autouse=True)
def remote_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "remote-cache"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    charts._INDEXES.clear()  # each test a run of its own
    return folder


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A repository (its own ``.git``) the charts live in."""
    folder = tmp_path / "checkout"
    (folder / ".git").mkdir(parents=True)
    return folder


def umbrella(checkout: Path, dependencies: list[dict[str, Any]], values: str = "", **extra: Any) -> Path:
    return write_chart(
        checkout / "apps",
        "shop",
        "1.0.0",
        templates={"pod.yaml": OWN_POD},
        dependencies=dependencies,
        values=values,
        **extra,
    )


def pods(rendered: Rendered) -> list[str]:
    return sorted(doc.data["metadata"]["name"] for doc in rendered.documents if doc.data.get("kind") == "Pod")


def problems(rendered: Rendered) -> list[tuple[str, str, int | None, int | None]]:
    return sorted(
        (
            os.path.basename(file),
            problem.rule,
            problem.span.line if problem.span else None,
            problem.span.column if problem.span else None,
        )
        for file, problem in rendered.problems
    )


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


# -- vendored -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("enabled", "expected"), [("true", ["db", "kv", "own"]), ("false", ["kv", "own"])])
def test_vendored_dependencies_render_as_helm_renders_them(
    tmp_path: Path, checkout: Path, enabled: str, expected: list[str]
) -> None:
    """A folder and an archive in charts/; the condition and the alias are Helm's own."""
    db = write_chart(tmp_path / "src", "db", "1.0.0", templates={"pod.yaml": SUB_POD})
    cache = write_chart(tmp_path / "src", "cache", "2.0.0", templates={"pod.yaml": SUB_POD})
    chart = umbrella(
        checkout,
        [
            {
                "name": "db",
                "version": "1.0.0",
                "repository": "https://charts.example.com",
                "condition": "db.enabled",
            },
            {
                "name": "cache",
                "version": "^2",
                "repository": "oci://registry.example.com/charts",
                "alias": "kv",
            },
        ],
        values=f"db:\n  enabled: {enabled}\n",
    )
    (chart / "charts").mkdir()
    os.rename(db, chart / "charts" / "db")
    tar_chart(cache, chart / "charts" / "cache-2.0.0.tgz")
    before = snapshot(checkout)
    rendered = render_chart(str(chart), sandbox=OFFLINE)
    assert rendered.ok, rendered.problems
    assert pods(rendered) == expected
    assert problems(rendered) == []
    # The vendored folder's templates are in the repository: its objects point at them.
    files = {os.path.relpath(doc.file, chart) for doc in rendered.documents}
    assert "templates/pod.yaml" in files
    assert ("charts/db/templates/pod.yaml" in files) == (enabled == "true")
    assert snapshot(checkout) == before


# -- missing --------------------------------------------------------------------------------------


def test_a_missing_dependency_is_a_finding_at_its_item_and_the_rest_renders(checkout: Path) -> None:
    chart = umbrella(
        checkout,
        [
            {"name": "redis", "version": "19.x", "repository": "https://charts.example.com/bitnami"},
            {"name": "local", "version": "1.0.0", "repository": "@stable"},
        ],
    )
    rendered = render_chart(str(chart), sandbox=OFFLINE)
    assert rendered.ok
    assert pods(rendered) == ["own"]
    text = (chart / "Chart.yaml").read_text(encoding="utf-8")
    redis, local = line_of(text, 'name: "redis"'), line_of(text, 'name: "local"')
    assert problems(rendered) == [
        ("Chart.yaml", "chart-dependency", redis, 5),
        ("Chart.yaml", "chart-dependency", local, 5),
    ]
    assert not (chart / "charts").exists()


def test_the_command_line_reports_the_dependency_and_the_chart_s_pods(checkout: Path) -> None:
    chart = umbrella(
        checkout, [{"name": "redis", "version": "19.x", "repository": "https://charts.example.com/bitnami"}]
    )
    code, report = run_json("--render", str(chart), cwd=checkout)
    found = [(f["rule"], os.path.basename(f["file"]), f["line"], f["column"]) for f in report["findings"]]
    line = line_of((chart / "Chart.yaml").read_text(encoding="utf-8"), 'name: "redis"')
    assert found == [("chart-dependency", "Chart.yaml", line, 5)]
    assert code in (0, 1)  # a warning, never a load error (exit 2)


def test_a_parent_that_does_not_render_without_its_dependency(checkout: Path) -> None:
    """A parent template that includes a helper of the missing subchart: the finding says so,
    and the chart is not counted as rendered (no parse-error for what the dependency causes)."""
    chart = umbrella(
        checkout, [{"name": "common", "version": "2.x", "repository": "https://charts.example.com"}]
    )
    (chart / "templates" / "svc.yaml").write_text(
        '{{ include "common.names.fullname" . }}\n', encoding="utf-8"
    )
    rendered = render_chart(str(chart), sandbox=OFFLINE)
    assert not rendered.ok
    line = line_of((chart / "Chart.yaml").read_text(encoding="utf-8"), 'name: "common"')
    assert problems(rendered) == [("Chart.yaml", "chart-dependency", line, 5)]
    assert rendered.documents == ()


def test_a_file_dependency_in_the_repository_is_used(checkout: Path) -> None:
    write_chart(checkout / "lib", "base", "0.1.0", templates={"pod.yaml": SUB_POD})
    chart = umbrella(checkout, [{"name": "base", "version": "0.1.0", "repository": "file://../../lib/base"}])
    before = snapshot(checkout)
    rendered = render_chart(str(chart), sandbox=OFFLINE)
    assert rendered.ok, rendered.problems
    assert pods(rendered) == ["base", "own"]
    assert snapshot(checkout) == before


def test_a_file_dependency_outside_the_repository_is_not(tmp_path: Path, checkout: Path) -> None:
    write_chart(tmp_path / "outside", "base", "0.1.0", templates={"pod.yaml": SUB_POD})
    chart = umbrella(
        checkout, [{"name": "base", "version": "0.1.0", "repository": "file://../../../outside/base"}]
    )
    rendered = render_chart(str(chart), sandbox=OFFLINE)
    assert pods(rendered) == ["own"]
    assert [rule for _, rule, _, _ in problems(rendered)] == ["chart-dependency"]


# -- fetched with the network ---------------------------------------------------------------


def test_with_the_network_a_dependency_is_fetched_from_an_http_repository(
    tmp_path: Path, checkout: Path
) -> None:
    sources = [
        write_chart(tmp_path / "src" / v, "redis", v, templates={"pod.yaml": SUB_POD})
        for v in ("19.0.1", "19.2.0", "20.0.0")
    ]
    with chart_repository(tmp_path / "repo", sources) as repo:
        chart = umbrella(
            checkout, [{"name": "redis", "version": "19.x", "repository": repo.url, "alias": "cache"}]
        )
        before = snapshot(checkout)
        rendered = render_chart(str(chart), sandbox=replace(NETWORK, roots=(str(checkout),)))
        assert rendered.ok, rendered.problems
        assert pods(rendered) == ["cache", "own"]
        assert repo.requests == ["/index.yaml", "/redis-19.2.0.tgz"]
        # The dependency's objects have no file in the repository: they stay in the rendered
        # stream, which names the dependency's template.
        fetched_doc = next(doc for doc in rendered.documents if doc.data["metadata"]["name"] == "cache")
        assert not fetched_doc.file.startswith(str(checkout))
        origin = rendered.origin(fetched_doc.file, fetched_doc.span.line)
        assert origin == "shop/charts/cache/templates/pod.yaml"  # the alias, as Helm names it
        own = next(doc for doc in rendered.documents if doc.data["metadata"]["name"] == "own")
        assert own.file == str(chart / "templates" / "pod.yaml")
        assert snapshot(checkout) == before
        # Offline, a range needs the index: the dependency is a finding again.
        offline = render_chart(str(chart), sandbox=OFFLINE)
        assert [rule for _, rule, _, _ in problems(offline)] == ["chart-dependency"]
    # Chart.lock pins an exact version, which the cache has: used offline, the server gone.
    (chart / "Chart.lock").write_text(
        f"dependencies:\n- name: redis\n  repository: {repo.url}\n  version: 19.2.0\n"
        "digest: sha256:0\ngenerated: '2026-01-01T00:00:00Z'\n",
        encoding="utf-8",
    )
    pinned = render_chart(str(chart), sandbox=OFFLINE)
    assert pinned.ok, pinned.problems
    assert pods(pinned) == ["cache", "own"]


def test_with_the_network_a_dependency_is_fetched_from_an_oci_registry(
    tmp_path: Path, checkout: Path
) -> None:
    with oci_registry(tmp_path / "registry") as registry:
        for version in ("1.0.0", "1.1.0"):
            source = write_chart(
                tmp_path / "src" / version, "queue", version, templates={"pod.yaml": SUB_POD}
            )
            push_chart(registry, package_chart(source, tmp_path / "out"))
        chart = umbrella(checkout, [{"name": "queue", "version": "~1.0", "repository": registry.url}])
        rendered = render_chart(str(chart), sandbox=NETWORK)
        assert rendered.ok, rendered.problems
        assert pods(rendered) == ["own", "queue"]


def test_a_fetched_dependency_is_held_to_the_checkout_s_rules(tmp_path: Path, checkout: Path) -> None:
    """A remote chart whose values.schema.json makes Helm read the disk is refused."""
    hostile = write_chart(
        tmp_path / "src",
        "evil",
        "1.0.0",
        templates={"pod.yaml": SUB_POD},
        extra={"values.schema.json": '{"$ref": "file:///etc/passwd"}'},
    )
    with chart_repository(tmp_path / "repo", [hostile]) as repo:
        chart = umbrella(checkout, [{"name": "evil", "version": "1.0.0", "repository": repo.url}])
        rendered = render_chart(str(chart), sandbox=NETWORK)
    assert not rendered.ok
    assert rendered.documents == ()
    assert [rule for _, rule, _, _ in problems(rendered)] == ["parse-error"]


def test_tags_and_import_values_reach_helm(tmp_path: Path, checkout: Path) -> None:
    """``tags`` disable a dependency, ``import-values`` lift a subchart's ``exports`` into the
    parent's values: Helm's own (pkg/chartutil dependencies.go), with a fetched dependency too."""
    db = write_chart(
        tmp_path / "src",
        "db",
        "1.0.0",
        templates={"pod.yaml": SUB_POD},
        values="exports:\n  data:\n    port: 5432\n",
    )
    worker = write_chart(tmp_path / "src", "worker", "1.0.0", templates={"pod.yaml": SUB_POD})
    with chart_repository(tmp_path / "repo", [db, worker]) as repo:
        chart = umbrella(
            checkout,
            [
                {"name": "db", "version": "1.0.0", "repository": repo.url, "import-values": ["data"]},
                {"name": "worker", "version": "1.0.0", "repository": repo.url, "tags": ["batch"]},
            ],
            values="tags:\n  batch: false\n",
        )
        (chart / "templates" / "config.yaml").write_text(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\n"
            "data:\n  port: {{ .Values.port | quote }}\n",
            encoding="utf-8",
        )
        rendered = render_chart(str(chart), sandbox=NETWORK)
    assert rendered.ok, rendered.problems
    assert pods(rendered) == ["db", "own"]
    config = next(doc for doc in rendered.documents if doc.data.get("kind") == "ConfigMap")
    assert config.data["data"] == {"port": "5432"}


def test_requirements_yaml_of_an_apiversion_v1_chart(checkout: Path) -> None:
    chart = checkout / "legacy"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v1\nname: legacy\nversion: 1.0.0\n", encoding="utf-8")
    (chart / "requirements.yaml").write_text(
        "dependencies:\n  - name: mysql\n    version: 1.x\n    repository: https://charts.example.com\n",
        encoding="utf-8",
    )
    (chart / "templates" / "pod.yaml").write_text(OWN_POD, encoding="utf-8")
    rendered = render_chart(str(chart), sandbox=OFFLINE)
    assert rendered.ok, rendered.problems
    assert pods(rendered) == ["own"]
    assert problems(rendered) == [("requirements.yaml", "chart-dependency", 2, 5)]


def test_an_unquoted_version_is_read_as_helm_reads_it(tmp_path: Path, checkout: Path) -> None:
    """``version: 1.10`` is the string "1.10" to Helm (a string field), not the float 1.1."""
    versioned = SUB_POD.replace(
        "{{ .Chart.Name }}", '{{ .Chart.Name }}-{{ .Chart.Version | replace "." "-" }}'
    )
    sources = [
        write_chart(tmp_path / "src" / v, "redis", v, templates={"pod.yaml": versioned})
        for v in ("1.1.0", "1.10.2")
    ]
    with chart_repository(tmp_path / "repo", sources) as repo:
        chart = checkout / "apps" / "shop"
        (chart / "templates").mkdir(parents=True)
        (chart / "Chart.yaml").write_text(
            f"apiVersion: v2\nname: shop\nversion: 1.0.0\ndependencies:\n"
            f"  - name: redis\n    version: 1.10\n    repository: {repo.url}\n",
            encoding="utf-8",
        )
        rendered = render_chart(str(chart), sandbox=NETWORK)
    assert rendered.ok, rendered.problems
    assert pods(rendered) == ["redis-1-10-2"]
