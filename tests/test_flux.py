"""Flux releases as units (kaffinity.repo.gitops.flux, issue 32 item 4): Kustomizations built as
kustomize-controller builds them, HelmReleases rendered as helm-controller renders them.

Fixtures are written by the tests, modelled on two real layouts:

- fluxcd/flux2-kustomize-helm-example: ``clusters/<env>/{flux-system,apps.yaml}``,
  ``apps/base/podinfo/{namespace,repository,release,kustomization}.yaml`` and ``apps/<env>``
  overlays patching the HelmRelease's values;
- a home lab as onedr0p/cluster-template lays it out: ``kubernetes/flux/cluster/ks.yaml``
  (a Kustomization of ``kubernetes/apps`` substituting from a cluster-settings ConfigMap),
  ``kubernetes/apps/<namespace>/<app>/ks.yaml`` (a Kustomization per app, ``postBuild``
  ``APP``, ``targetNamespace``) and ``app/`` (a HelmRelease, its OCIRepository or a chart of
  the repository, values from a generated ConfigMap).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from kaffinity.load.source import Document, Span
from kaffinity.repo.gitops import flux
from kaffinity.repo.gitops.flux.envsubst import SubstitutionError, envsubst
from kaffinity.repo.gitops.flux.helmrelease import release_name
from kaffinity.repo.gitops.flux.index import Index, object_name
from kaffinity.repo.gitops.flux.kustomization import local_folder
from kaffinity.repo.gitops.flux.values import release_values
from kaffinity.repo.gitops.releases import NotRendered, ReleaseInputs

from .kit import run

KUSTOMIZE = shutil.which("kustomize") or shutil.which("kubectl")
try:
    import helm_python  # noqa: F401

    HELM = True
except ImportError:  # pragma: no cover - depends on the environment
    HELM = bool(shutil.which("helm"))
needs_tools = [
    pytest.mark.skipif(not KUSTOMIZE, reason="neither kubectl nor kustomize is on the PATH"),
    pytest.mark.skipif(not HELM, reason="no helm binary and helm-python-sdk (kaffinity[helm]) not installed"),
]

THREE_NODES = """\
apiVersion: kaffinity.io/v1alpha1
kind: ClusterTopology
metadata: {name: three}
spec:
  zones:
    - {name: a, pools: [{name: general, count: 1, allocatable: {cpu: "4", memory: 16Gi, pods: 110}}]}
    - {name: b, pools: [{name: general, count: 1, allocatable: {cpu: "4", memory: 16Gi, pods: 110}}]}
    - {name: c, pools: [{name: general, count: 1, allocatable: {cpu: "4", memory: 16Gi, pods: 110}}]}
"""

# A chart shaped like stefanprodan/podinfo's charts/podinfo (a Deployment and a budget).
CHART = {
    "Chart.yaml": "apiVersion: v2\nname: podinfo\nversion: 6.7.0\n",
    "values.yaml": "replicaCount: 1\npdb:\n  minAvailable: 1\n",
    "templates/deployment.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ .Release.Name }}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{ .Release.Name }}
    spec:
      containers:
        - name: podinfo
          image: ghcr.io/stefanprodan/podinfo:6.7.0
          resources:
            requests: {cpu: 100m, memory: 64Mi}
""",
    # As podinfo's templates/tests/*.yaml: a test hook helm-controller never installs.
    "templates/tests/test-connection.yaml": """\
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test
  annotations:
    helm.sh/hook: test-success
spec:
  containers:
    - name: curl
      image: curlimages/curl:8.7.1
""",
    "templates/pdb.yaml": """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .Release.Name }}
spec:
  minAvailable: {{ .Values.pdb.minAvailable }}
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ .Release.Name }}
""",
}


def _write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _git(root: Path, remote: str = "ssh://git@github.com/example/fleet-infra") -> Path:
    """A checkout: ``.git`` with the remote the GitRepository names (no commit needed)."""
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin", remote], check=True, timeout=60)
    return root


def _example(root: Path, chart_source: str) -> Path:
    """fluxcd/flux2-kustomize-helm-example's layout; ``chart_source``: the HelmRelease's
    ``chart.spec`` source lines (a HelmRepository, or this repository's chart)."""
    sync = """\
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1m0s
  ref:
    branch: main
  url: ssh://git@github.com/example/fleet-infra
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 10m0s
  path: ./clusters/{env}
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
"""
    apps = """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m0s
  sourceRef:
    kind: GitRepository
    name: flux-system
  path: ./apps/{env}
  prune: true
"""
    files = {
        "apps/base/podinfo/namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: podinfo\n",
        "apps/base/podinfo/release.yaml": f"""\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: podinfo
spec:
  interval: 50m
  releaseName: podinfo
  chart:
    spec:
{chart_source}
  values:
    replicaCount: 1
""",
        "apps/base/podinfo/kustomization.yaml": (
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: podinfo\n"
            "resources:\n  - namespace.yaml\n  - repository.yaml\n  - release.yaml\n"
        ),
        "apps/base/podinfo/repository.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: unused\n",
    }
    for env, replicas in (("staging", 1), ("production", 3)):
        files[f"clusters/{env}/flux-system/gotk-sync.yaml"] = sync.replace("{env}", env)
        files[f"clusters/{env}/flux-system/kustomization.yaml"] = "resources:\n  - gotk-sync.yaml\n"
        files[f"clusters/{env}/apps.yaml"] = apps.replace("{env}", env)
        files[f"apps/{env}/kustomization.yaml"] = (
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
            "  - ../base/podinfo\npatches:\n  - path: podinfo-values.yaml\n"
            "    target:\n      kind: HelmRelease\n"
        )
        files[f"apps/{env}/podinfo-values.yaml"] = f"""\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: podinfo
spec:
  values:
    replicaCount: {replicas}
"""
    _write(root, files)
    return _git(root)


LOCAL_CHART = """\
      chart: ./charts/podinfo
      sourceRef:
        kind: GitRepository
        name: flux-system
        namespace: flux-system"""


def _remote_chart(url: str) -> str:
    return """\
      chart: podinfo
      version: ">=6.0.0"
      sourceRef:
        kind: HelmRepository
        name: podinfo"""


def _helm_repository(url: str, oci: bool = False) -> str:
    kind = "\n  type: oci" if oci else ""
    return (
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: podinfo\n"
        f"  namespace: podinfo\nspec:\n  interval: 5m{kind}\n  url: {url}\n"
    )


def _units(root: Path, *, network: bool = False) -> dict[str, tuple[str, list[tuple[str, str]]]]:
    """The units of ``root`` rendered (the Python API, from ``root`` as the working folder):
    name -> (source, [(kind, name)] of its objects)."""
    from dataclasses import replace

    from kaffinity.load.files import load
    from kaffinity.repo.sandbox import DEFAULT_SANDBOX, roots_for
    from kaffinity.repo.units import read_layout, render_units

    here = os.getcwd()
    os.chdir(root)
    try:
        files = load(["."])
        layout = read_layout(files, ["."])
        sandbox = replace(DEFAULT_SANDBOX, network=network, roots=roots_for(["."]))
        built = render_units(layout, sandbox=sandbox).layout
    finally:
        os.chdir(here)
    return {
        unit.name: (
            unit.source,
            sorted((str(d.data.get("kind")), object_name(d.data)) for d in unit.documents),
        )
        for unit in built.units
    }


def _place(root: Path, *args: str, env: Mapping[str, str] | None = None) -> Counter[str]:
    (root.parent / "cluster.yaml").write_text(THREE_NODES)
    done = run(
        "place",
        "--no-config",
        "--render",
        "--cluster",
        str(root.parent / "cluster.yaml"),
        "--format",
        "json",
        *args,
        ".",
        cwd=root,
        env=dict(env or {}),
    )
    assert done.returncode in (0, 1), done.stderr
    pods = json.loads(done.stdout)["pods"]
    return Counter(f"{pod['object']['namespace']}/{pod['object']['name']}" for pod in pods if pod.get("node"))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The remote cache in the test's folder (never the user's)."""
    folder = tmp_path / "remote-cache"
    monkeypatch.setenv("KAFFINITY_REMOTE_CACHE", str(folder))
    yield {"KAFFINITY_REMOTE_CACHE": str(folder)}


# --- postBuild substitution (fluxcd/pkg kustomize_varsub.go, drone/envsubst) ---------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("replicas: ${N}", "replicas: 3"),
        ("a: ${MISSING}", "a: "),
        ("a: ${MISSING:=7}", "a: 7"),
        ("a: ${MISSING:-7}", "a: 7"),
        ("a: ${MISSING=7}", "a: 7"),
        ("a: ${EMPTY:=7}", "a: 7"),
        ("a: ${N:=7}", "a: 3"),
        ("a: $N and $$N", "a: $N and $N"),
        ("a: $${N}", "a: ${N}"),
        ("a: ${N-7}", "a: "),  # drone/envsubst reads `-` as part of the name (acceptIdent)
        ("a: ${#NAME}", "a: 7"),
        ("a: ${NAME^^}", "a: PODINFO"),
        ("a: ${NAME:0:3}", "a: pod"),
        ("a: ${NAME#pod}", "a: info"),
        ("a: ${NAME%%i*}", "a: pod"),
        ("a: ${NAME/info/cast}", "a: podcast"),
        ("a: ${MISSING:=${NAME}-x}", "a: podinfo-x"),
        ("a: b\\/c", "a: b/c"),
    ],
)
def test_envsubst_as_drone_envsubst(text: str, expected: str) -> None:
    variables = {"N": "3", "EMPTY": "", "NAME": "podinfo"}
    assert envsubst(text, variables) == expected


def test_envsubst_errors_and_sealed_values() -> None:
    with pytest.raises(SubstitutionError):
        envsubst("a: ${bad.name}", {"N": "1"})
    with pytest.raises(SubstitutionError):
        envsubst("a: ${N", {"N": "1"})
    with pytest.raises(SubstitutionError):
        envsubst("a: ${MISSING}", {"N": "1"}, strict=True)
    assert envsubst("a: ${MISSING:=2}", {"N": "1"}, strict=True) == "a: 2"
    # An encrypted Secret's key: its value is unknown, the expression stays as written.
    assert envsubst("host: ${SECRET_DOMAIN}", {"N": "1"}, sealed=frozenset({"SECRET_DOMAIN"})) == (
        "host: ${SECRET_DOMAIN}"
    )


# --- HelmRelease: release name and values --------------------------------------------------------


def _doc(data: dict[str, Any], file: str = "release.yaml") -> Document:
    return Document(file, 0, data, data, Span(1, 1))


def test_release_name_as_helm_controller_gives_it() -> None:
    def release(name: str, **spec: Any) -> str:
        return release_name({"metadata": {"name": name, "namespace": "apps"}, "spec": spec})

    assert release("podinfo") == "podinfo"
    assert release("podinfo", targetNamespace="web") == "web-podinfo"
    assert release("podinfo", releaseName="info", targetNamespace="web") == "info"
    long = "a-very-long-target-namespace-for-this-release-" + "x" * 20
    name = release("podinfo", targetNamespace=long)
    full = f"{long}-podinfo"
    assert len(name) == 53
    assert name == full[:40] + "-" + hashlib.sha256(full.encode()).hexdigest()[:12]


def test_values_from_in_order_then_values() -> None:
    """valuesFrom in order (a later one wins), targetPath set as --set types it, optional ones
    may be missing, spec.values last (helm-controller ChartValuesFromReferences)."""
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "common", "namespace": "apps"},
        "data": {
            "values.yaml": "replicaCount: 2\nimage: {tag: a, repository: r}\n",
            "count": "4",
            "tag": '"7"',
        },
    }
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "extra", "namespace": "apps"},
        "data": {"override.yaml": "aW1hZ2U6IHt0YWc6IGJ9Cg=="},  # image: {tag: b}
    }
    release = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "web", "namespace": "apps"},
        "spec": {
            "valuesFrom": [
                {"kind": "ConfigMap", "name": "common"},
                {"kind": "Secret", "name": "extra", "valuesKey": "override.yaml"},
                {
                    "kind": "ConfigMap",
                    "name": "common",
                    "valuesKey": "count",
                    "targetPath": "pdb.minAvailable",
                },
                {"kind": "ConfigMap", "name": "common", "valuesKey": "tag", "targetPath": "image.tag"},
                {"kind": "ConfigMap", "name": "absent", "optional": True},
            ],
            "values": {"replicaCount": 3},
        },
    }
    index = Index(ReleaseInputs([_doc(config), _doc(secret), _doc(release)]))
    assert release_values(_doc(release), index) == {
        "replicaCount": 3,
        "image": {"tag": "7", "repository": "r"},  # quoted: a string
        "pdb": {"minAvailable": 4},
    }
    release["spec"]["valuesFrom"].append({"kind": "Secret", "name": "absent"})  # type: ignore[index]
    missing = release_values(_doc(release), index)
    assert isinstance(missing, NotRendered)
    assert not missing.remote


# --- the flux2-kustomize-helm-example layout -----------------------------------------------------


@needs_tools[0]
@needs_tools[1]
def test_example_layout_with_a_chart_of_the_repository(tmp_path: Path) -> None:
    """Each cluster's Kustomizations and each overlay's HelmRelease are units named after them;
    the HelmRelease renders with the overlay's values (staging 1 replica, production 3)."""
    root = _example(tmp_path / "fleet", LOCAL_CHART)
    _write(root / "charts" / "podinfo", CHART)
    units = _units(root)
    assert units["HelmRelease podinfo/podinfo (apps/staging)"] == (
        "flux (rendered)",
        [("Deployment", "podinfo"), ("PodDisruptionBudget", "podinfo")],
    )
    assert units["HelmRelease podinfo/podinfo (apps/production)"][0] == "flux (rendered)"
    # The cluster's own Kustomization: a folder without kustomization.yaml, generated as
    # kustomize-controller does (apps.yaml, and flux-system/ as one resource).
    source, objects = units["Kustomization flux-system/flux-system (clusters/staging/flux-system)"]
    assert source == "flux (rendered)"
    assert objects == [
        ("GitRepository", "flux-system"),
        ("Kustomization", "apps"),
        ("Kustomization", "flux-system"),
    ]
    assert units["Kustomization flux-system/apps (clusters/production)"][0] == "flux (rendered)"
    placed = _place(root)
    assert placed["podinfo/podinfo"] == 1 + 3
    assert placed["podinfo/podinfo-test"] == 0  # the test hook is not deployed


@needs_tools[0]
@needs_tools[1]
def test_a_finding_lands_on_the_chart_template(tmp_path: Path) -> None:
    """Staging runs one replica with a budget of minAvailable 1: the budget blocks eviction,
    reported at the chart's template line, naming the release's unit; production (3) is fine."""
    root = _example(tmp_path / "fleet", LOCAL_CHART)
    _write(root / "charts" / "podinfo", CHART)
    done = run("lint", "--no-config", "--render", "--format", "json", ".", cwd=root)
    report = json.loads(done.stdout)
    found = [
        (f["rule"], Path(f["file"]).as_posix(), f["line"], f["column"], f["units"])
        for f in report["findings"]
        if f["rule"] == "pdb-blocks-eviction"
    ]
    assert (
        "pdb-blocks-eviction",
        "charts/podinfo/templates/pdb.yaml",
        6,
        3,
        ["HelmRelease podinfo/podinfo (apps/staging)"],
    ) in found
    assert all("apps/production" not in unit for *_, units in found for unit in units)
    assert done.returncode == 0  # a warning: the run does not fail on it by default


@needs_tools[0]
@needs_tools[1]
def test_a_finding_lands_on_the_values_line_that_set_it(tmp_path: Path) -> None:
    """When the HelmRelease's spec.values set what the template line reads
    (``minAvailable: {{ .Values.pdb.minAvailable }}``), the finding is reported at that value
    in the HelmRelease's file (the base's: the staging overlay does not change it)."""
    root = _example(tmp_path / "fleet", LOCAL_CHART)
    _write(root / "charts" / "podinfo", CHART)
    release = root / "apps/base/podinfo/release.yaml"
    release.write_text(release.read_text() + "    pdb:\n      minAvailable: 1\n")
    report = json.loads(run("lint", "--no-config", "--render", "--format", "json", ".", cwd=root).stdout)
    found = [
        (f["rule"], Path(f["file"]).as_posix(), f["line"], f["column"], f["units"])
        for f in report["findings"]
        if f["rule"] == "pdb-blocks-eviction" and f["units"] != ["charts/podinfo"]
    ]
    assert found == [
        (
            "pdb-blocks-eviction",
            "apps/base/podinfo/release.yaml",
            19,
            7,
            ["HelmRelease podinfo/podinfo (apps/staging)"],
        )
    ]


@needs_tools[0]
def test_remote_chart_offline_is_named_in_one_note(tmp_path: Path, cache: dict[str, str]) -> None:
    root = _example(tmp_path / "fleet", _remote_chart("https://stefanprodan.github.io/podinfo"))
    (root / "apps/base/podinfo/repository.yaml").write_text(
        _helm_repository("https://stefanprodan.github.io/podinfo")
    )
    units = _units(root)
    assert units["HelmRelease podinfo/podinfo (apps/staging)"] == ("flux", [("HelmRelease", "podinfo")])
    assert units["HelmRelease podinfo/podinfo (apps/production)"][0] == "flux"
    done = run("lint", "--no-config", "--render", "--format", "json", ".", cwd=root, env=cache)
    assert done.returncode == 0, done.stderr
    notes = [
        line
        for line in done.stderr.splitlines()
        if line.startswith("kaffinity: note:") and "release(s)" in line
    ]
    assert len(notes) == 1


@needs_tools[0]
@needs_tools[1]
def test_remote_chart_from_the_loopback_http_repository(tmp_path: Path, cache: dict[str, str]) -> None:
    from .remote import chart_repository, write_chart

    chart = write_chart(
        tmp_path / "src",
        "podinfo",
        "6.7.0",
        templates={
            name.removeprefix("templates/"): text
            for name, text in CHART.items()
            if name.startswith("templates/")
        },
        values=CHART["values.yaml"],
    )
    with chart_repository(tmp_path / "served", [chart]) as repository:
        root = _example(tmp_path / "fleet", _remote_chart(repository.url))
        (root / "apps/base/podinfo/repository.yaml").write_text(_helm_repository(repository.url))
        offline = _place(root, env=cache)
        assert offline["podinfo/podinfo"] == 0
        placed = _place(root, "--allow-network", env=cache)
        assert placed["podinfo/podinfo"] == 1 + 3
        assert any(request.endswith(".tgz") for request in repository.requests)


# --- a home lab (onedr0p/cluster-template) -----------------------------------------------------


def _home_lab(root: Path, chart_ref: str) -> Path:
    files = {
        "kubernetes/flux/cluster/ks.yaml": """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: cluster-apps
  namespace: flux-system
spec:
  interval: 1h
  path: ./kubernetes/apps
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
  postBuild:
    substituteFrom:
      - kind: ConfigMap
        name: cluster-settings
      - kind: Secret
        name: cluster-secrets
        optional: true
""",
        "kubernetes/flux/vars/cluster-settings.yaml": """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: cluster-settings
  namespace: flux-system
data:
  TIMEZONE: Etc/UTC
  ECHO_REPLICAS: "2"
""",
        "kubernetes/apps/default/kustomization.yaml": (
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
            "resources:\n  - ./echo/ks.yaml\n  - ./plain/ks.yaml\n"
        ),
        "kubernetes/apps/default/echo/ks.yaml": """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: &app echo
  namespace: flux-system
spec:
  targetNamespace: default
  path: ./kubernetes/apps/default/echo/app
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
  postBuild:
    substitute:
      APP: *app
    substituteFrom:
      - kind: ConfigMap
        name: cluster-settings
""",
        "kubernetes/apps/default/echo/app/kustomization.yaml": """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ./helmrelease.yaml
configMapGenerator:
  - name: echo-values
    files:
      - values.yaml=./values.yaml
generatorOptions:
  disableNameSuffixHash: true
""",
        "kubernetes/apps/default/echo/app/values.yaml": "pdb:\n  minAvailable: 0\n",
        "kubernetes/apps/default/echo/app/helmrelease.yaml": f"""\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: echo
spec:
  interval: 1h
{chart_ref}
  valuesFrom:
    - kind: ConfigMap
      name: echo-values
  values:
    replicaCount: ${{ECHO_REPLICAS}}
  postRenderers:
    - kustomize:
        patches:
          - target:
              kind: Deployment
            patch: |
              - op: add
                path: /spec/template/spec/affinity
                value:
                  podAntiAffinity:
                    requiredDuringSchedulingIgnoredDuringExecution:
                      - topologyKey: kubernetes.io/hostname
                        labelSelector:
                          matchLabels:
                            app.kubernetes.io/name: echo
""",
        # A folder without kustomization.yaml: kustomize-controller generates one.
        "kubernetes/apps/default/plain/ks.yaml": """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: plain
  namespace: flux-system
spec:
  targetNamespace: default
  path: ./kubernetes/apps/default/plain/app
  sourceRef:
    kind: GitRepository
    name: flux-system
  postBuild:
    substitute:
      REPLICAS: "4"
""",
        "kubernetes/apps/default/plain/app/deployment.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: plain
spec:
  replicas: ${REPLICAS:=1}
  selector:
    matchLabels: {app: plain}
  template:
    metadata:
      labels: {app: plain}
    spec:
      containers:
        - name: plain
          image: nginx:1.27
""",
        "kubernetes/apps/default/plain/app/config/settings.yaml": """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: plain-script
  annotations:
    kustomize.toolkit.fluxcd.io/substitute: disabled
data:
  run.sh: echo ${REPLICAS}
""",
    }
    _write(root, files)
    return _git(root, "https://github.com/example/home-ops.git")


REPOSITORY_CHART_REF = """\
  chart:
    spec:
      chart: ./charts/podinfo
      sourceRef:
        kind: GitRepository
        name: flux-system
        namespace: flux-system"""


@needs_tools[0]
@needs_tools[1]
def test_home_lab_substitution_values_from_and_post_renderers(tmp_path: Path) -> None:
    """The app's HelmRelease gets the cluster's variables (replicaCount 2), its valuesFrom
    ConfigMap from the app's configMapGenerator (minAvailable 0), and the post-renderer's
    anti-affinity: 2 pods on 2 nodes. The plain folder is built as a generated kustomization
    with REPLICAS substituted (4 pods), except the object that disables substitution."""
    root = _home_lab(tmp_path / "home-ops", REPOSITORY_CHART_REF)
    _write(root / "charts" / "podinfo", CHART)
    units = _units(root)
    source, objects = units["HelmRelease default/echo"]
    assert source == "flux (rendered)"
    assert objects == [("Deployment", "echo"), ("PodDisruptionBudget", "echo")]
    assert units["Kustomization flux-system/plain"] == (
        "flux (rendered)",
        [("ConfigMap", "plain-script"), ("Deployment", "plain")],
    )
    placed = _place(root)
    assert placed["default/echo"] == 2
    assert placed["default/plain"] == 4
    report = json.loads(run("lint", "--no-config", "--render", "--format", "json", ".", cwd=root).stdout)
    rules = {(f["rule"], f["units"][0] if f["units"] else "") for f in report["findings"]}
    assert not any(
        unit == "HelmRelease default/echo" and rule == "pdb-blocks-eviction" for rule, unit in rules
    )


@needs_tools[0]
@needs_tools[1]
def test_plain_folder_keeps_a_disabled_object_as_written(tmp_path: Path) -> None:

    from kaffinity.load.files import load
    from kaffinity.repo.units import read_layout, render_units

    root = _home_lab(tmp_path / "home-ops", REPOSITORY_CHART_REF)
    _write(root / "charts" / "podinfo", CHART)
    here = os.getcwd()
    os.chdir(root)
    try:
        layout = read_layout(load(["."]), ["."])
        built = render_units(layout).layout
    finally:
        os.chdir(here)
    unit = next(unit for unit in built.units if unit.name == "Kustomization flux-system/plain")
    data = {d.data["kind"]: d for d in unit.documents}
    assert data["ConfigMap"].data["data"]["run.sh"] == "echo ${REPLICAS}"
    assert data["Deployment"].data["spec"]["replicas"] == 4
    assert data["Deployment"].data["metadata"]["namespace"] == "default"
    # Pointed at the repository's file (copied to build it, never written in the checkout).
    assert Path(data["Deployment"].file).as_posix() == "kubernetes/apps/default/plain/app/deployment.yaml"
    assert data["Deployment"].locate(("spec", "replicas")).line == 6
    assert not (root / "kubernetes/apps/default/plain/app/kustomization.yaml").exists()


@needs_tools[0]
def test_missing_values_from_is_not_rendered(tmp_path: Path) -> None:
    root = _home_lab(tmp_path / "home-ops", REPOSITORY_CHART_REF)
    _write(root / "charts" / "podinfo", CHART)
    (root / "kubernetes/apps/default/echo/app/kustomization.yaml").write_text(
        "resources:\n  - ./helmrelease.yaml\n"
    )
    units = _units(root)
    assert units["HelmRelease default/echo"] == ("flux", [("HelmRelease", "echo")])


OCI_CHART_REF = """\
  chartRef:
    kind: OCIRepository
    name: echo"""


@needs_tools[0]
@needs_tools[1]
def test_oci_chart_from_the_loopback_registry(tmp_path: Path, cache: dict[str, str]) -> None:
    from .remote import oci_registry, package_chart, push_chart, write_chart

    chart = write_chart(
        tmp_path / "src",
        "podinfo",
        "6.7.0",
        templates={
            name.removeprefix("templates/"): text
            for name, text in CHART.items()
            if name.startswith("templates/")
        },
        values=CHART["values.yaml"],
    )
    archive = package_chart(chart, tmp_path / "packages")
    with oci_registry(tmp_path / "registry") as registry:
        push_chart(registry, archive)
        root = _home_lab(tmp_path / "home-ops", OCI_CHART_REF)
        (root / "kubernetes/apps/default/echo/app/ocirepository.yaml").write_text(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: echo\nspec:\n"
            f"  interval: 15m\n  ref:\n    tag: 6.7.0\n  url: {registry.url}/podinfo\n"
        )
        kustomization = root / "kubernetes/apps/default/echo/app/kustomization.yaml"
        kustomization.write_text(
            kustomization.read_text().replace(
                "  - ./helmrelease.yaml\n", "  - ./helmrelease.yaml\n  - ./ocirepository.yaml\n"
            )
        )
        assert _place(root, env=cache)["default/echo"] == 0
        assert _place(root, "--allow-network", env=cache)["default/echo"] == 2


# --- sources: an ExternalArtifact, a remote GitRepository -------------------------------------


ARTIFACTS = """\
apiVersion: source.extensions.fluxcd.io/v1beta1
kind: ArtifactGenerator
metadata:
  name: flux-system
  namespace: flux-system
spec:
  sources:
    - alias: monorepo
      kind: GitRepository
      name: flux-system
  artifacts:
    - name: apps
      originRevision: "@monorepo"
      copy:
        - from: "@monorepo/apps/base/**"
          to: "@artifact/base/"
        - from: "@monorepo/apps/staging/**"
          to: "@artifact/staging/"
"""


@needs_tools[0]
@needs_tools[1]
def test_external_artifact_of_this_repository(tmp_path: Path) -> None:
    """flux2-kustomize-helm-example today: the apps Kustomization builds ``./staging`` of an
    ExternalArtifact an ArtifactGenerator copies from ``apps/base`` and ``apps/staging``."""
    root = _example(tmp_path / "fleet", LOCAL_CHART)
    _write(root / "charts" / "podinfo", CHART)
    (root / "clusters/staging/artifacts.yaml").write_text(ARTIFACTS)
    apps = root / "clusters/staging/apps.yaml"
    apps.write_text(
        apps.read_text()
        .replace(
            "    kind: GitRepository\n    name: flux-system\n", "    kind: ExternalArtifact\n    name: apps\n"
        )
        .replace("path: ./apps/staging", "path: ./staging")
    )
    units = _units(root)
    source, objects = units["Kustomization flux-system/apps (clusters/staging)"]
    assert source == "flux (rendered)"
    assert ("HelmRelease", "podinfo") in objects


@needs_tools[0]
def test_remote_git_repository(tmp_path: Path, cache: dict[str, str]) -> None:
    """A Kustomization of another repository: not rendered offline (one remote note), built
    from the fetched tree when the network is allowed (git daemon on 127.0.0.1)."""
    from .remote import git_daemon, git_remote

    deployment = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: shared\nspec:\n  replicas: ${COUNT:=1}\n"
        "  selector:\n    matchLabels: {app: shared}\n"
        "  template:\n    metadata:\n      labels: {app: shared}\n"
        "    spec:\n      containers:\n        - name: shared\n          image: nginx:1.27\n"
    )
    remote = git_remote(tmp_path / "git", {"deploy/deployment.yaml": deployment}, tags=("v1.0.0",))
    with git_daemon(remote) as url:
        root = tmp_path / "fleet"
        _write(
            root,
            {
                "clusters/dev/shared.yaml": f"""\
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: shared
  namespace: flux-system
spec:
  interval: 1h
  url: {url}
  ref:
    tag: v1.0.0
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: shared
  namespace: flux-system
spec:
  interval: 1h
  path: ./deploy
  targetNamespace: shared
  sourceRef:
    kind: GitRepository
    name: shared
  postBuild:
    substitute:
      COUNT: "3"
""",
            },
        )
        _git(root)
        assert _units(root)["Kustomization flux-system/shared"] == ("flux", [("Kustomization", "shared")])
        assert _place(root, env=cache)["shared/shared"] == 0
        assert _place(root, "--allow-network", env=cache)["shared/shared"] == 3


@needs_tools[0]
def test_a_substitution_flux_refuses_is_a_parse_error_at_the_kustomization(tmp_path: Path) -> None:
    root = _home_lab(tmp_path / "home-ops", REPOSITORY_CHART_REF)
    deployment = root / "kubernetes/apps/default/plain/app/deployment.yaml"
    deployment.write_text(deployment.read_text().replace("${REPLICAS:=1}", "${REPLICAS.count}"))
    done = run("lint", "--no-config", "--render", "--format", "json", ".", cwd=root)
    report = json.loads(done.stdout)
    found = [
        (f["rule"], Path(f["file"]).as_posix(), f["line"])
        for f in report["findings"]
        if f["rule"] == "parse-error"
    ]
    assert ("parse-error", "kubernetes/apps/default/plain/ks.yaml", 1) in found
    assert done.returncode == 2


def test_this_repository_by_its_remote(tmp_path: Path, cache: dict[str, str]) -> None:
    """A GitRepository whose url is a remote of the checkout (in any of git's URL forms) is
    read from the checkout; one of another url is remote; flux-system/flux-system is the
    repository flux bootstrap syncs, even when bootstrap left it out of the repository."""
    root = _git(tmp_path / "home-ops", "https://github.com/Example/home-ops.git")
    (root / "deploy").mkdir()

    def source(name: str, url: str) -> Document:
        data = {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": {"name": name, "namespace": "flux-system"},
            "spec": {"url": url},
        }
        return _doc(data, str(root / "sources.yaml"))

    def kustomization(name: str) -> Document:
        data = {
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": name, "namespace": "flux-system"},
            "spec": {"path": "./deploy", "sourceRef": {"kind": "GitRepository", "name": name}},
        }
        return _doc(data, str(root / "ks.yaml"))

    documents = [
        source("mine", "git@github.com:example/home-ops"),
        source("theirs", "https://github.com/example/other.git"),
        kustomization("mine"),
        kustomization("theirs"),
        kustomization("flux-system"),
    ]
    index = Index(ReleaseInputs(documents))
    folders = {doc.data["metadata"]["name"]: local_folder(doc, index) for doc in documents[2:]}
    assert folders == {"mine": str(root / "deploy"), "theirs": None, "flux-system": str(root / "deploy")}
    found = {r.name: r for r in flux.releases(ReleaseInputs(documents))}
    # Taken for this repository by flux bootstrap's convention, not by a remote: a guess, noted.
    assert [name for name, r in found.items() if r.note] == ["Kustomization flux-system/flux-system"]
    theirs = found["Kustomization flux-system/theirs"]
    outcome = theirs.render(30)
    assert isinstance(outcome, NotRendered)
    assert outcome.remote


@needs_tools[0]
def test_kustomization_fields_the_controller_adds(tmp_path: Path) -> None:
    """targetNamespace, namePrefix, images, commonMetadata, patches and components, as
    kustomize-controller adds them to the folder's kustomization."""
    deployment = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: nginx:1.27
"""
    root = tmp_path / "fleet"
    _write(
        root,
        {
            "apps/web/deployment.yaml": deployment,
            "apps/web/kustomization.yaml": "resources:\n  - deployment.yaml\n",
            "components/ha/kustomization.yaml": (
                "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n"
                "  - target: {kind: Deployment}\n    patch: |\n      - op: replace\n"
                "        path: /spec/replicas\n        value: 3\n"
            ),
            "clusters/dev/web.yaml": """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: web
  namespace: flux-system
spec:
  path: ./apps/web
  sourceRef:
    kind: GitRepository
    name: flux-system
  targetNamespace: shop
  namePrefix: dev-
  images:
    - name: nginx
      newTag: "1.29"
  commonMetadata:
    labels:
      team: shop
  components:
    - ../../components/ha
  patches:
    - target:
        kind: Deployment
      patch: |
        - op: add
          path: /spec/template/spec/priorityClassName
          value: high
""",
        },
    )
    _git(root)
    here = os.getcwd()
    os.chdir(root)
    try:
        from kaffinity.load.files import load

        docs = [doc for file in load(["."]) for doc in file.documents]
        release = next(
            r for r in flux.releases(ReleaseInputs(docs)) if r.name == "Kustomization flux-system/web"
        )
        rendered = release.render(60)
    finally:
        os.chdir(here)
    assert not isinstance(rendered, NotRendered)
    assert rendered.ok
    (built,) = rendered.documents
    assert built.data["metadata"]["name"] == "dev-web"
    assert built.data["metadata"]["namespace"] == "shop"
    assert built.data["metadata"]["labels"] == {"team": "shop"}
    assert built.data["spec"]["selector"] == {"matchLabels": {"app": "web"}}  # commonMetadata: not selectors
    assert built.data["spec"]["replicas"] == 3
    assert built.data["spec"]["template"]["spec"]["priorityClassName"] == "high"
    assert built.data["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.29"
    assert Path(built.file).as_posix() == "apps/web/deployment.yaml"
