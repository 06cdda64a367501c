"""kaffinity at the end of the pipelines the README shows, through the real command line.

- ``kubectl kustomize DIR | kaffinity lint - --stdin-filename DIR``: the real kubectl (skipped
  only where it is not installed) renders tests/data/pipelines/kustomize; findings are at the
  rendered stream's lines and carry the name given with ``--stdin-filename``.
- ``helm template ... | kaffinity lint -``: a stream as helm prints it (``---`` and
  ``# Source: chart/templates/x.yaml`` before each document), tests/data/pipelines/helm-template.yaml.
- ``kubectl get nodes -o yaml > nodes.yaml && kaffinity lint --cluster nodes.yaml``: the List
  kubectl prints (tests/data/pipelines/nodes.yaml, an EKS cluster) as the declared cluster.
- ``--format auto`` at the end of a pipeline on GitHub Actions (tests/test_reports.py has the
  basic switch).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .kit import REPO, line_of, position, run, run_json

DATA = REPO / "tests" / "data" / "pipelines"
KUSTOMIZE = DATA / "kustomize"
HELM = DATA / "helm-template.yaml"
NODES = DATA / "nodes.yaml"

needs_kubectl = pytest.mark.skipif(
    shutil.which("kubectl") is None, reason="kubectl is not installed (kubectl kustomize renders the fixture)"
)


def kustomize(overlay: str) -> str:
    """``kubectl kustomize`` of a folder of the fixture, as the user's shell would pipe it."""
    kubectl = shutil.which("kubectl")
    assert kubectl is not None
    completed = subprocess.run(
        [kubectl, "kustomize", str(KUSTOMIZE / overlay)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def by_rule(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for finding in report["findings"]:
        found.setdefault(finding["rule"], []).append(finding)
    return found


# --- kubectl kustomize DIR | kaffinity lint - --stdin-filename DIR ------------------------------


@needs_kubectl
def test_kustomize_base_reports_at_the_rendered_line() -> None:
    rendered = kustomize("base")
    code, report = run_json("-", "--stdin-filename", "base", stdin=rendered)
    assert code == 0  # a warning; --fail-on error
    (finding,) = report["findings"]
    assert finding["rule"] == "revision-unscoped"
    assert finding["object"]["name"] == "web"
    # kubectl sorts keys and un-indents sequences: the term is not where base/web.yaml has it.
    term = line_of(rendered, "- labelSelector:", 1, after="podAntiAffinity:")
    assert finding["line"] == term
    assert term != line_of((KUSTOMIZE / "base" / "web.yaml").read_text(), "- labelSelector:", 1)
    assert report["summary"]["documents"] == 3


@needs_kubectl
def test_kustomize_overlay_fixes_one_rule_and_breaks_another() -> None:
    rendered = kustomize("overlays/prod")
    code, report = run_json("-", "--stdin-filename", "overlays/prod", "--fail-on", "warning", stdin=rendered)
    assert code == 1
    found = by_rule(report)
    assert set(found) == {"affinity-no-match"}  # the JSON patch scoped the anti-affinity
    (finding,) = found["affinity-no-match"]
    assert (finding["object"]["kind"], finding["object"]["name"]) == ("Deployment", "prod-web")  # namePrefix
    term = position(rendered, "labelSelector:", 1, after="podAffinity:")
    assert (finding["rule"], finding["line"], finding["column"]) == ("affinity-no-match", *term)
    # The overlay's labels reached the selector: kustomize rewrote it, kaffinity read the result.
    assert "app=cache,env=prod" in finding["message"]


@needs_kubectl
def test_kustomize_stream_is_reported_under_the_stdin_filename() -> None:
    """Every finding of the stream (and its related locations) names the --stdin-filename."""
    rendered = kustomize("overlays/prod")
    _, report = run_json("-", "--stdin-filename", "overlays/prod", stdin=rendered)
    (finding,) = report["findings"]
    assert finding["file"] == "overlays/prod"
    assert {related["file"] for related in finding["related"]} == {"overlays/prod"}
    text = run("lint", "--no-config", "-", "--stdin-filename", "overlays/prod", stdin=rendered).stdout
    line = line_of(rendered, "- labelSelector:", 1, after="podAffinity:")
    assert text.startswith(f"overlays/prod:{line}:13: warning [affinity-no-match]")
    assert "<stdin>" not in text


@needs_kubectl
def test_kustomize_stream_on_github_actions_annotates_the_overlay() -> None:
    """``--format auto`` on Actions: annotations whose file is the --stdin-filename."""
    rendered = kustomize("overlays/prod")
    completed = run(
        "lint",
        "--no-config",
        "-",
        "--stdin-filename",
        "overlays/prod",
        stdin=rendered,
        env={"GITHUB_ACTIONS": "true"},
    )
    line = line_of(rendered, "- labelSelector:", 1, after="podAffinity:")
    prefix = f"::warning file=overlays/prod,line={line},col=13,title=kaffinity [affinity-no-match]::"
    assert completed.stdout.startswith(prefix), completed.stdout


# --- helm template ... | kaffinity lint - --------------------------------------------------------


def test_helm_template_stream_positions_are_the_streams() -> None:
    rendered = HELM.read_text(encoding="utf-8")
    code, report = run_json("-", stdin=rendered)
    assert code == 1
    (finding,) = report["findings"]  # not helm-template: `{{` in a ConfigMap's data is data
    assert (finding["file"], finding["rule"]) == ("<stdin>", "api-validation")
    assert finding["object"]["kind"] == "Deployment" and finding["object"]["name"] == "shop"
    assert finding["line"] == line_of(
        rendered, "operator: Exists", 1, after="# Source: shop/templates/deployment"
    )
    assert finding["column"] == 11
    assert report["summary"]["documents"] == 5  # every document of the stream, the test hook too
    # The same stream read from a file: the same positions.
    _, from_file = run_json(str(HELM))
    assert [(f["line"], f["column"], f["rule"]) for f in from_file["findings"]] == [
        (finding["line"], finding["column"], finding["rule"])
    ]


# --- kubectl get nodes -o yaml > nodes.yaml && kaffinity lint --cluster nodes.yaml -------------------


WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: nginx:1.27
          resources: {requests: {cpu: 500m, memory: 256Mi}}
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: web}}
              matchLabelKeys: [pod-template-hash]
              topologyKey: kubernetes.io/hostname
"""
TOLERATE_BATCH = "      tolerations: [{key: dedicated, operator: Equal, value: batch, effect: NoSchedule}]\n"


@pytest.mark.parametrize(
    ("replicas", "tolerations", "expected"),
    [
        (3, "", []),  # one per untainted node
        (4, "", ["anti-affinity-exceeds-domains"]),  # the batch node is tainted: 3 nodes, 4 pods
        (4, TOLERATE_BATCH, []),  # tolerating the taint makes 4 nodes
        (5, TOLERATE_BATCH, ["anti-affinity-exceeds-domains"]),
    ],
)
def test_kubectl_get_nodes_output_is_the_cluster(
    tmp_path: Path, replicas: int, tolerations: str, expected: list[str]
) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(WEB.replace("REPLICAS", str(replicas)) + tolerations)
    code, report = run_json("--cluster", str(NODES), str(manifest))
    assert [finding["rule"] for finding in report["findings"]] == expected
    assert code == (1 if expected else 0)
    if expected:
        (finding,) = report["findings"]
        assert finding["line"] == 19  # the topologyKey of the term
        assert f"only {replicas - 1} nodes may run it" in finding["message"]


BIG = """\
apiVersion: v1
kind: Pod
metadata: {name: big, namespace: shop}
spec:
  containers: [{name: c, image: i, resources: {requests: {cpu: 1950m}}}]
"""
GENERAL = [f"ip-10-0-{n}.eu-west-1.compute.internal" for n in ("1-23", "2-57", "3-91")]
BATCH = "ip-10-0-3-140.eu-west-1.compute.internal"


def place(manifest: str) -> dict[str, Any]:
    completed = run("place", "--format", "json", "--cluster", str(NODES), "-", stdin=manifest)
    placed: dict[str, Any] = json.loads(completed.stdout)
    return placed


def test_kubectl_get_nodes_output_labels_taints_and_allocatable_are_read() -> None:
    assert place(WEB.replace("REPLICAS", "1"))["nodes"] == [*GENERAL, BATCH]
    pods = place(WEB.replace("REPLICAS", "3"))["pods"]
    assert sorted(pod["node"] for pod in pods) == GENERAL  # one per hostname
    assert all(pod["rejected"][BATCH] == ["node(s) had untolerated taint(s)"] for pod in pods)
    # 1950m fits a general node's capacity (2) but not its allocatable (1930m).
    (pod,) = place(BIG)["pods"]
    assert pod["node"] is None
    assert {pod["rejected"][node][0] for node in GENERAL} == {"Insufficient cpu"}
    (pod,) = place(
        BIG.replace("  containers:", "  tolerations: [{key: dedicated, operator: Exists}]\n  containers:")
    )["pods"]
    assert pod["node"] == BATCH


# --- --format auto ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "env", "github"),
    [
        ((), {"GITHUB_ACTIONS": "false"}, False),  # set, but not to "true" (as the runner sets it)
        (("--format", "text"), {"GITHUB_ACTIONS": "true"}, False),  # an explicit format wins
        (("--format", "github"), {}, True),
    ],
)
def test_format_auto_and_explicit_formats(args: tuple[str, ...], env: dict[str, str], github: bool) -> None:
    completed = run("lint", "--no-config", *args, "-", stdin=HELM.read_text(encoding="utf-8"), env=env)
    assert completed.returncode == 1
    assert completed.stdout.startswith("::error file=<stdin>,line=") is github
    assert completed.stdout.startswith("<stdin>:") is not github
