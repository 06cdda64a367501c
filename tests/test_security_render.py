"""``--render`` on a hostile checkout (issue 31): each attack the security review found, replayed.

A pull request can turn rendering on by itself (``render: true`` in its own .kaffinity.yaml), so
rendering must be safe whoever turned it on: nothing outside the repository is read into a
report (a marker string in a file outside the repository must never reach stdout, stderr or the
JSON report), nothing is fetched (a loopback server proves no request arrives), and a template
or patch that asks for unbounded memory or time is stopped, the other units still linted.
Small limits come from the command line, so these tests stay fast.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from kaffinity.repo.engines import helm_engine, kustomize_engine
from kaffinity.repo.sandbox import REFUSING_PROXY, Sandbox, isolated, run_tool

from . import kit

needs_kustomize = pytest.mark.skipif(kustomize_engine() is None, reason="neither kustomize nor kubectl")
needs_helm = pytest.mark.skipif(helm_engine() is None, reason="neither helm nor helm-python-sdk")

MARKER = "MARKER-OUTSIDE-5d1e9c"
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx}]
"""
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository (``.git`` marks its root) beside a folder outside it holding the marker."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{MARKER}\n")
    (outside / "secret.yaml").write_text(DEPLOYMENT.replace("replicas: 3", f"replicas: 3 # {MARKER}"))
    (outside / "values.yaml").write_text(f"leak: {MARKER}\n")
    return root


def lint(root: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any], str]:
    """``lint --render`` in ``root``: exit code, JSON report, and stderr. Kept (on
    :func:`kit.lint_json`) for what every test of this file asserts: the marker (and its base64
    form) is never in anything printed."""
    done = kit.lint_json("--render", *args, ".", cwd=root, env=env)
    printed = done.stdout + done.stderr
    for secret in (MARKER, base64.b64encode(f"{MARKER}\n".encode()).decode()[:20]):
        assert secret not in printed
    return done.code, done.report, done.stderr


def problems(report: dict[str, Any]) -> list[tuple[str, int | None]]:
    """The render problems: parse-errors of kustomizations and charts (the loader's own of other
    files, such as a patch it also reads, left out)."""
    return [
        (os.path.normpath(f["file"]), f["line"])
        for f in report["findings"]
        if f["rule"] == "parse-error" and f["file"].endswith(("kustomization.yaml", "Chart.yaml"))
    ]


def placed(report: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f["rule"], os.path.normpath(f["file"])) for f in report["findings"]}


def chart(root: Path, name: str, template: str) -> Path:
    folder = root / name
    (folder / "templates").mkdir(parents=True)
    (folder / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 0.1.0\n")
    (folder / "values.yaml").write_text("replicaCount: 1\n")
    (folder / "templates" / "cm.yaml").write_text(template)
    return folder


#: A template that prints what .Files.Get reads, as ``fail`` puts it in the error kaffinity
#: reports (as it was before issue 31: "execution error at (web/templates/cm.yaml:6:10): ..."),
#: plainly and through b64enc.
FILES_GET = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: leak}
data:
  a: {{ $s := .Files.Get "files/secret" }}{{ if eq $s "shared\\n" }}ok{{ else }}
    {{- fail (printf "%s %s" $s ($s | b64enc)) }}{{ end }}
"""


# --- charts: symlinks ---------------------------------------------------------------------------


@needs_helm
@pytest.mark.parametrize("target", ["outside", "environ", "dangling"])
def test_a_chart_symlink_leading_outside_is_refused_before_rendering(repo: Path, target: str) -> None:
    """.Files.Get follows a symlink (Helm's loader does): one to a file outside the repository,
    to /proc/self/environ (read through b64enc, which log masking does not recognise), or to
    nothing refuses the chart; the outside content is never printed."""
    folder = chart(repo, "web", FILES_GET)
    (folder / "files").mkdir()
    link = {
        "outside": os.path.relpath(repo.parent / "outside" / "secret.txt", folder / "files"),
        "environ": "/proc/self/environ",
        "dangling": "../nowhere.txt",
    }[target]
    (folder / "files" / "secret").symlink_to(link)
    code, report, _ = lint(repo, env={"KAFFINITY_TEST_SECRET": MARKER})
    assert code == 2
    assert problems(report) == [("web/Chart.yaml", None)]
    (message,) = [f["message"] for f in report["findings"] if f["rule"] == "parse-error"]
    assert "web/files/secret" in message


@needs_helm
def test_a_symlink_inside_the_repository_still_renders(repo: Path) -> None:
    folder = chart(repo, "web", FILES_GET)
    (folder / "files").mkdir()
    (repo / "shared.txt").write_text("shared\n")
    (folder / "files" / "secret").symlink_to("../../shared.txt")
    code, report, _ = lint(repo)
    assert (code, problems(report)) == (0, [])
    assert not [f for f in report["findings"] if f["rule"] == "helm-template"]  # it was rendered


@needs_helm
def test_a_fifo_in_a_chart_is_refused(repo: Path) -> None:
    """A named pipe would block Helm's loader for ever."""
    folder = chart(repo, "web", CONFIGMAP)
    os.mkfifo(folder / "pipe")
    code, report, _ = lint(repo)
    assert (code, problems(report)) == (2, [("web/Chart.yaml", None)])


@needs_helm
def test_values_files_outside_the_repository_are_never_read(repo: Path) -> None:
    """``helm-values:`` from the checkout's own config, with ``..``: refused (by the config or by
    rendering), the values never rendered into what is printed."""
    chart(
        repo, "web", 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: "{{ .Values.leak }}"}\n'
    )
    (repo / ".kaffinity.yaml").write_text("render: true\nhelm-values:\n  web: [../outside/values.yaml]\n")
    done = kit.run("lint", "--format", "json", ".", cwd=repo)
    assert done.returncode == 2
    assert MARKER not in done.stdout + done.stderr


@needs_helm
def test_a_source_comment_leading_outside_is_never_read(repo: Path) -> None:
    """Rendered output on stdin names its templates (``# Source:``); one that leads outside the
    repository keeps its place in the stream, the outside file unread."""
    stream = "---\n# Source: web/../../outside/secret.yaml\n" + DEPLOYMENT
    done = kit.run("lint", "--no-config", "--format", "json", "-", cwd=repo, stdin=stream)
    assert MARKER not in done.stdout + done.stderr
    files = {f["file"] for f in json.loads(done.stdout)["findings"]}
    assert files == {"<stdin>"}
    assert kit.keys(json.loads(done.stdout)) == [
        ("replicas-not-spread", *kit.position(stream, "replicas: 3"))
    ]


@needs_helm
@pytest.mark.parametrize("ref", ["{url}/schema.json", "file://{secret}", "../../outside/secret.txt"])
def test_a_schema_reference_leading_out_of_the_chart_is_refused(
    repo: Path, server: tuple[str, list[str]], ref: str
) -> None:
    """Helm validates values against values.schema.json and loads what its ``$ref`` names (over
    HTTP, or from a file); an escaped key (``\\u0024ref``) hides nothing."""
    url, seen = server
    folder = chart(repo, "web", CONFIGMAP)
    target = ref.format(url=url, secret=repo.parent / "outside" / "secret.txt")
    (folder / "values.schema.json").write_text(
        '{"type": "object", "properties": {"replicaCount": {"\\u0024ref": "' + target + '"}}}'
    )
    code, report, _ = lint(repo)
    assert code == 2
    assert ("parse-error", "web/values.schema.json") in placed(report)
    # The chart is left unrendered (one finding at its name) and the schema refused as a whole,
    # at its first line.
    name = kit.position((folder / "Chart.yaml").read_text(), "name:")
    assert kit.keys(report) == [("helm-template", *name), ("parse-error", 1, 1)]
    assert seen == []


# --- kustomize: URLs ----------------------------------------------------------------------------


class _Recorder(BaseHTTPRequestHandler):
    requests: list[str]

    def do_GET(self) -> None:
        self.requests.append(self.path)
        body = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched}\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that records the paths asked for; stopped after the test."""
    seen: list[str] = []
    handler = type("Handler", (_Recorder,), {"requests": seen})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


#: A kustomization naming a URL, and the line of the entry that names it.
URL_FIELDS = {
    "configMapGenerator files": ("configMapGenerator:\n- name: gen\n  files:\n  - k={url}/secret\n", 5),
    "secretGenerator envs": ("secretGenerator:\n- name: gen\n  envs:\n  - {url}/env\n", 5),
    "patches path": ("patches:\n- path: {url}/patch.yaml\n", 3),
    "patchesStrategicMerge": ("patchesStrategicMerge:\n- {url}/patch.yaml\n", 3),
    "replacements path": ("replacements:\n- path: {url}/r.yaml\n", 3),
    "openapi path": ("openapi:\n  path: {url}/schema.json\n", 3),
    "inline generator": (
        "generators:\n- |\n  apiVersion: builtin\n  kind: ConfigMapGenerator\n  metadata: {{name: g}}\n"
        "  files:\n  - {url}/secret\n",
        3,
    ),
    # YAML 1.2 that go-yaml reads and libyaml does not: what cannot be checked is refused.
    "inline generator, flow": (
        "generators:\n- |\n  apiVersion: builtin\n  kind: ConfigMapGenerator\n  metadata: {{name: g}}\n"
        "  files: [{url}/secret]\n",
        3,
    ),
    "helmCharts": ("helmCharts:\n- name: x\n  repo: {url}/charts\n  version: 1.0.0\n", 2),
}


@needs_kustomize
@pytest.mark.parametrize("field", sorted(URL_FIELDS))
def test_a_url_in_any_field_of_a_kustomization_is_refused(
    repo: Path, server: tuple[str, list[str]], field: str
) -> None:
    url, seen = server
    text, line = URL_FIELDS[field]
    (repo / "o").mkdir()
    (repo / "o" / "cm.yaml").write_text(CONFIGMAP)
    (repo / "o" / "kustomization.yaml").write_text("resources: [cm.yaml]\n" + text.format(url=url))
    code, report, _ = lint(repo)
    assert (code, problems(report)) == (2, [("o/kustomization.yaml", line)])
    assert seen == []


@needs_kustomize
def test_a_url_in_a_base_or_a_generator_file_is_refused(repo: Path, server: tuple[str, list[str]]) -> None:
    """Every kustomization of the build tree is read, and the configuration files it names."""
    url, seen = server
    (repo / "base").mkdir()
    (repo / "base" / "cm.yaml").write_text(CONFIGMAP)
    (repo / "base" / "gen.yaml").write_text(
        f"apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {{name: g}}\nfiles:\n- {url}/secret\n"
    )
    (repo / "base" / "kustomization.yaml").write_text("resources: [cm.yaml]\ngenerators: [gen.yaml]\n")
    (repo / "o").mkdir()
    (repo / "o" / "kustomization.yaml").write_text("resources: [../base]\n")
    code, report, _ = lint(repo)
    assert (code, problems(report)) == (2, [("base/kustomization.yaml", 2)])
    assert seen == []


@pytest.mark.slow
@needs_kustomize
def test_a_deep_or_circular_build_tree_is_checked_without_recursion(repo: Path) -> None:
    """A chain of kustomizations deeper than Python's recursion limit, and a configuration that
    names itself: checked, then built (or refused by kustomize), never an internal error nor a
    refusal of kaffinity's own."""
    depth = 1200
    for level in range(depth):
        folder = repo / "chain" / f"k{level}"
        folder.mkdir(parents=True)
        following = f"../k{level + 1}" if level + 1 < depth else "cm.yaml"
        (folder / "kustomization.yaml").write_text(f"resources: [{following}]\n")
    (repo / "chain" / f"k{depth - 1}" / "cm.yaml").write_text(CONFIGMAP)
    (repo / "loop").mkdir()
    (repo / "loop" / "gen.yaml").write_text(
        "apiVersion: builtin\nkind: X\nmetadata: {name: g}\ngenerators: [gen.yaml]\n"
    )
    (repo / "loop" / "kustomization.yaml").write_text("generators: [gen.yaml]\n")
    code, report, _ = lint(repo)
    # The chain is checked and built; the loop is kustomize's to refuse (X is no generator).
    assert (code, problems(report)) == (2, [("loop/kustomization.yaml", None)])


@needs_kustomize
def test_allow_network_from_the_runner_lets_kustomize_fetch(
    repo: Path, server: tuple[str, list[str]]
) -> None:
    """The control: with --allow-network (the runner's, never the config's) the same URL is
    fetched, so the loopback server above would have seen a request that did happen."""
    url, seen = server
    (repo / "o").mkdir()
    (repo / "o" / "cm.yaml").write_text(CONFIGMAP)
    (repo / "o" / "kustomization.yaml").write_text(
        f"resources: [cm.yaml]\nconfigMapGenerator:\n- name: gen\n  files:\n  - k={url}/secret\n"
    )
    (repo / ".kaffinity.yaml").write_text("render: true\n")  # the checkout's own: no network
    done = kit.run("lint", "--format", "json", ".", cwd=repo)
    assert (done.returncode, seen) == (2, [])
    done = kit.run("lint", "--no-config", "--render", "--allow-network", "--format", "json", ".", cwd=repo)
    assert seen == ["/secret"]
    assert done.returncode == 0, done.stdout


@needs_kustomize
def test_a_path_leading_outside_the_repository_is_refused(repo: Path) -> None:
    """kustomize lets a folder resource lead anywhere (a new root); kaffinity keeps it in the
    repository, symlinks resolved."""
    (repo.parent / "outside" / "kustomization.yaml").write_text("resources: [secret.yaml]\n")
    (repo / "o").mkdir()
    (repo / "o" / "kustomization.yaml").write_text("resources:\n- ../../outside\n")
    (repo / "p").mkdir()
    (repo / "p" / "link").symlink_to(repo.parent / "outside")
    (repo / "p" / "kustomization.yaml").write_text("resources:\n- link\n")
    code, report, _ = lint(repo)
    assert (code, sorted(problems(report))) == (2, [("o/kustomization.yaml", 2), ("p/kustomization.yaml", 2)])


@needs_kustomize
def test_a_forged_origin_is_never_read(repo: Path) -> None:
    """A patch can set kustomize's own origin annotation to any path; kaffinity trusts it only
    inside the repository, and the object keeps a place there."""
    secret = repo.parent / "outside" / "secret.yaml"
    (repo / "o").mkdir()
    (repo / "o" / "dep.yaml").write_text(DEPLOYMENT)
    (repo / "o" / "kustomization.yaml").write_text(
        "resources: [dep.yaml]\npatches:\n- patch: |-\n    apiVersion: apps/v1\n    kind: Deployment\n"
        "    metadata:\n      name: web\n      annotations:\n        config.kubernetes.io/origin: |\n"
        f"          path: {secret}\n"
    )
    code, report, _ = lint(repo)
    assert code == 0
    files = {f["file"] for f in report["findings"]}
    assert files and all(file.startswith("o/") for file in files)
    # The origin refused, the Deployment is placed at the kustomization that built it (its start).
    assert kit.keys(report) == [("replicas-not-spread", 1, 1)]
    assert [(f["file"], f["path"]) for f in report["findings"]] == [("o/kustomization.yaml", "spec.replicas")]


# --- limits -------------------------------------------------------------------------------------


def alias_bomb() -> str:
    """454 bytes that expand to 9**9 nodes (a billion laughs)."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: cm}", "a0: &a0 [x,x,x,x,x,x,x,x,x]"]
    for level in range(1, 9):
        lines.append(f"a{level}: &a{level} [{','.join([f'*a{level - 1}'] * 9)}]")
    lines.append("data: {z: *a8}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("inline", [False, True])
def test_an_alias_bomb_in_a_patch_is_refused_before_the_tool_runs(
    repo: Path, tmp_path: Path, inline: bool
) -> None:
    """A stand-in kubectl that leaves a mark when run proves the tool never ran."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ran = tmp_path / "ran"
    fake = bin_dir / "kubectl"
    fake.write_text(f"#!/bin/sh\ntouch '{ran}'\n")
    fake.chmod(0o755)
    (repo / "o").mkdir()
    (repo / "o" / "cm.yaml").write_text(CONFIGMAP)
    bomb = alias_bomb()
    if inline:
        patch = "".join(f"    {line}\n" for line in bomb.splitlines())
        (repo / "o" / "kustomization.yaml").write_text(
            f"resources: [cm.yaml]\npatches:\n- patch: |-\n{patch}"
        )
    else:
        (repo / "o" / "patch.yaml").write_text(bomb)
        (repo / "o" / "kustomization.yaml").write_text("resources: [cm.yaml]\npatches:\n- path: patch.yaml\n")
    code, report, _ = lint(repo, env={"PATH": str(bin_dir)})
    assert (code, problems(report)) == (2, [("o/kustomization.yaml", 3)])
    assert not ran.exists()


@needs_helm
def test_an_alias_bomb_in_a_subcharts_values_is_refused_before_helm_runs(repo: Path) -> None:
    folder = chart(repo, "web", CONFIGMAP)
    sub = chart(folder / "charts", "sub", CONFIGMAP)
    (sub / "values.yaml").write_text(alias_bomb().replace("apiVersion: v1\nkind: ConfigMap\n", ""))
    started = time.monotonic()
    code, report, _ = lint(repo, "--render-memory", "256M")
    assert code == 2
    assert ("parse-error", "web/charts/sub/values.yaml") in placed(report)
    # The chart left unrendered (at its name); the values file refused as a whole, without a line.
    name = kit.position((folder / "Chart.yaml").read_text(), "name:")
    assert kit.keys(report) == [("helm-template", *name), ("parse-error", None, None)]
    assert time.monotonic() - started < 20


@needs_helm
def test_a_template_that_blows_memory_or_loops_is_stopped_and_the_rest_linted(repo: Path) -> None:
    chart(
        repo,
        "big",
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  x: "'
        '{{ range until 100000000 }}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx{{ end }}"\n',
    )
    chart(
        repo,
        "loop",
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: loop}\ndata:\n  x: "'
        '{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}"\n',
    )
    (repo / "ok").mkdir()
    (repo / "ok" / "deployment.yaml").write_text(DEPLOYMENT)
    started = time.monotonic()
    code, report, _ = lint(repo, "--render-memory", "256M", "--render-timeout", "4")
    elapsed = time.monotonic() - started
    assert code == 2
    assert sorted(problems(report)) == [("big/Chart.yaml", None), ("loop/Chart.yaml", None)]
    assert ("replicas-not-spread", "ok/deployment.yaml") in placed(report)
    assert elapsed < 30
    left = [
        pid
        for pid in os.listdir("/proc")
        if pid.isdigit() and str(repo).encode() in _cmdline(pid) and b"helm_worker" in _cmdline(pid)
    ]
    assert left == []  # killed, never abandoned


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@needs_helm
def test_past_the_render_budget_the_units_left_are_read_as_written(repo: Path) -> None:
    template = CONFIGMAP.replace("{a: b}", "\n  a: {{ .Values.replicaCount | quote }}")
    chart(repo, "one", template)
    chart(repo, "two", template)
    code, report, stderr = lint(repo)
    assert not [f for f in report["findings"] if f["rule"] == "helm-template"]
    code, report, stderr = lint(repo, "--render-budget", "0.000001")
    assert code == 0
    assert {file for rule, file in placed(report) if rule == "helm-template"} == {
        "one/Chart.yaml",  # one finding per chart not rendered
        "two/Chart.yaml",
    }
    name = kit.position((repo / "one" / "Chart.yaml").read_text(), "name:")  # two's is the same line
    assert kit.keys(report) == [("helm-template", *name), ("helm-template", *name)]
    assert "one" in stderr and "--render-budget" in stderr


@pytest.mark.parametrize("flag", ["--render-timeout=0", "--render-budget=-1", "--render-memory=lots"])
def test_a_bad_render_limit_is_a_usage_error(tmp_path: Path, flag: str) -> None:
    done = kit.run("lint", "--no-config", "--render", flag, ".", cwd=tmp_path)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1


# --- the sandbox itself -------------------------------------------------------------------------


def test_a_tool_sees_none_of_the_runners_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFFINITY_TEST_TOKEN", MARKER)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    outcome = run_tool(["env"], Sandbox(), timeout=10, output_limit=1 << 20)
    assert not isinstance(outcome, str)
    variables = dict(line.split("=", 1) for line in outcome.output.splitlines() if "=" in line)
    assert MARKER not in outcome.output
    assert variables["HTTPS_PROXY"] == variables["HTTP_PROXY"] == REFUSING_PROXY
    assert variables["GIT_ALLOW_PROTOCOL"] == "file"


@pytest.mark.skipif(not isolated(), reason="no network namespace on this system (unshare)")
def test_a_tool_cannot_reach_even_loopback(server: tuple[str, list[str]]) -> None:
    """In its own network namespace, a tool reaches nothing: Go never proxies loopback, so the
    namespace is what stops a request to 127.0.0.1."""
    import sys

    url, seen = server
    probe = f"import urllib.request; urllib.request.urlopen({url + '/probe'!r}, timeout=5)"
    no_proxy = {"HTTP_PROXY": "", "http_proxy": "", "NO_PROXY": "*", "no_proxy": "*"}  # the namespace alone
    outcome = run_tool(
        [sys.executable, "-c", probe], Sandbox(), timeout=20, output_limit=1 << 20, env=no_proxy
    )
    assert not isinstance(outcome, str)
    assert outcome.code != 0
    assert seen == []


def test_output_past_the_limit_stops_the_tool() -> None:
    started = time.monotonic()
    outcome = run_tool(["yes"], Sandbox(), timeout=30, output_limit=1 << 20)
    assert not isinstance(outcome, str)
    assert outcome.stopped is not None and len(outcome.output) <= 1 << 20
    assert time.monotonic() - started < 10


def test_a_tool_past_its_time_is_killed_with_its_children() -> None:
    started = time.monotonic()
    outcome = run_tool(["sh", "-c", "sleep 61.37 & sleep 61.38"], Sandbox(), timeout=1, output_limit=1 << 20)
    assert not isinstance(outcome, str)
    assert outcome.stopped is not None and outcome.code < 0
    assert time.monotonic() - started < 10
    time.sleep(0.2)  # the kernel reaps the killed group
    left = [pid for pid in os.listdir("/proc") if pid.isdigit() and b"61.37" in _cmdline(pid)]
    assert left == []
