"""Loopback servers for the tests of what a repository names remotely (issue 32, item 7).

Everything binds 127.0.0.1, is bounded (timeouts on every wait) and is stopped when its
``with`` block ends. A test that needs a tool that is missing skips with the reason
(:func:`pytest.skip` from inside the context manager).

The API (context managers; a test file wraps them in fixtures of its own when it wants to)::

    from tests.remote import chart_repository, git_remote, oci_registry, push_chart, write_chart

    chart = write_chart(tmp_path / "src", "redis", "1.2.3", templates={"pod.yaml": POD})
    with chart_repository(tmp_path / "repo", [chart]) as repository:
        repository.url          # "http://127.0.0.1:PORT" (the folder holding index.yaml)
        repository.requests     # ["/index.yaml", "/redis-1.2.3.tgz", ...]: every request, in order
        repository.index        # the index written (a dict), to alter and rewrite_index()

    with oci_registry(tmp_path / "registry") as registry:
        registry.url            # "oci://127.0.0.1:PORT/charts"
        push_chart(registry, package_chart(chart, tmp_path / "out"))   # the manifest's digest
        registry.requests()     # request URIs the registry logged so far
        with bearer_proxy(registry) as proxy:   # the same, behind an anonymous token challenge
            proxy.url, proxy.requests           # [(path, Authorization header), ...]

    remote = git_remote(tmp_path / "git", {"app/pod.yaml": POD}, tags=("v1.0.0",))
    remote.url                  # "file:///.../remote.git"; remote.commits: {ref: sha}
    with git_daemon(remote) as url:  # "git://127.0.0.1:PORT/remote.git"
        ...

Charts are packaged with Helm's own engine: the ``helm`` binary (``helm package``) when it is on
the PATH, else helm-python-sdk's ``package`` (Helm's pkg/action Package, in a child process),
else a tarfile laid out as Helm's pkg/chartutil ``Save`` writes one (``<name>/Chart.yaml``
first, then ``values.yaml`` and the rest, gzip): :data:`PACKAGER` says which is used.

The OCI registry is Debian's ``docker-registry`` (CNCF distribution 2.8) with a config written
here (storage in the test's folder, ``http.addr: 127.0.0.1:<free port>``, no auth). Charts are
pushed as ``helm push`` does: the ``helm`` binary with ``--plain-http`` when present, else
the same uploads from Python (helm's pkg/registry ``Client.Push``: a config blob of media type
``application/vnd.cncf.helm.config.v1+json`` holding Chart.yaml as JSON, a layer
``application/vnd.cncf.helm.chart.content.v1.tar+gzip``, an OCI image manifest tagged with the
version, ``+`` written ``_``).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

#: Seconds any wait here may take (a server starting, a tool running).
WAIT = 60.0

HELM_CONFIG_MEDIA_TYPE = "application/vnd.cncf.helm.config.v1+json"
HELM_CHART_MEDIA_TYPE = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
OCI_MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
REGISTRY = "/usr/bin/docker-registry"


def _helm() -> str | None:
    return shutil.which("helm")


def _sdk_packages() -> bool:
    import importlib.util

    return importlib.util.find_spec("helm_python") is not None


#: Which engine packages the charts: ``"helm"``, ``"helm-python-sdk"`` or ``"tarfile"``.
PACKAGER = "helm" if _helm() else "helm-python-sdk" if _sdk_packages() else "tarfile"


def _tool_env(home: Path) -> dict[str, str]:
    """A clean environment for the helm binary: its config, cache and registry logins in
    ``home``, never the user's."""
    home.mkdir(parents=True, exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
        "HELM_REGISTRY_CONFIG": str(home / "registry.json"),
        "NO_PROXY": "127.0.0.1,localhost",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    }


def _run(command: list[str], home: Path, cwd: Path | None = None) -> str:
    done = subprocess.run(
        command,
        cwd=cwd,
        env=_tool_env(home),
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


# -- charts -------------------------------------------------------------------------------------


def write_chart(
    folder: Path,
    name: str,
    version: str,
    *,
    templates: Mapping[str, str] | None = None,
    values: str = "",
    dependencies: Iterable[Mapping[str, Any]] = (),
    app_version: str | None = None,
    extra: Mapping[str, str | bytes] | None = None,
) -> Path:
    """A chart folder ``folder/name`` (apiVersion v2) with ``templates/`` and ``values.yaml``;
    ``extra`` adds files by path (``charts/x.tgz`` as bytes). Returns the chart's folder."""
    chart = folder / name
    (chart / "templates").mkdir(parents=True, exist_ok=True)
    lines = ["apiVersion: v2", f"name: {name}", f"version: {version}", "type: application"]
    if app_version is not None:
        lines.append(f'appVersion: "{app_version}"')
    deps = list(dependencies)
    if deps:
        lines.append("dependencies:")
        for dep in deps:
            first = True
            for key, value in dep.items():
                text = json.dumps(value)
                lines.append(f"  {'- ' if first else '  '}{key}: {text}")
                first = False
    (chart / "Chart.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (chart / "values.yaml").write_text(values, encoding="utf-8")
    for path, text in (templates or {}).items():
        target = chart / "templates" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    for path, content in (extra or {}).items():
        target = chart / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return chart


def _chart_meta(chart: Path) -> dict[str, Any]:
    from ruamel.yaml import YAML

    loaded = YAML(typ="safe").load((chart / "Chart.yaml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def package_chart(chart: Path, destination: Path) -> Path:
    """``chart`` packaged into ``destination/<name>-<version>.tgz`` by :data:`PACKAGER`."""
    destination.mkdir(parents=True, exist_ok=True)
    meta = _chart_meta(chart)
    target = destination / f"{meta['name']}-{meta['version']}.tgz"
    helm = _helm()
    if helm is not None:
        _run([helm, "package", str(chart), "--destination", str(destination)], destination / ".helm")
    elif _sdk_packages():
        # Helm's Go engine in a child process, as kaffinity runs it (a cgo library loaded once).
        code = "import sys, helm_python as h; print(h.package(sys.argv[1], destination=sys.argv[2]))"
        done = subprocess.run(
            [sys.executable, "-c", code, str(chart), str(destination)],
            capture_output=True,
            text=True,
            timeout=WAIT,
            check=False,
        )
        if done.returncode != 0:
            raise AssertionError(f"helm-python-sdk package failed: {done.stderr.strip()}")
    else:
        tar_chart(chart, target)
    assert target.is_file(), target
    return target


def tar_chart(chart: Path, target: Path, prefix: str | None = None) -> Path:
    """A chart archive as Helm's pkg/chartutil ``Save`` lays it out: every file under
    ``<name>/``, Chart.yaml first, regular files mode 0644, gzip."""
    name = prefix or _chart_meta(chart)["name"]
    files = sorted(p for p in chart.rglob("*") if p.is_file())
    files.sort(
        key=lambda p: (p.relative_to(chart).as_posix() != "Chart.yaml", p.relative_to(chart).as_posix())
    )
    with tarfile.open(target, "w:gz") as archive:
        for path in files:
            data = path.read_bytes()
            info = tarfile.TarInfo(f"{name}/{path.relative_to(chart).as_posix()}")
            info.size, info.mode, info.mtime = len(data), 0o644, 1_700_000_000
            archive.addfile(info, io.BytesIO(data))
    return target


def raw_archive(target: Path, members: Iterable[tuple[str, bytes | None, str | None]]) -> Path:
    """A tar.gz of hand-made members ``(name, data, link)``: ``data`` for a file; ``link`` (with
    data None) for a symlink to it; names kept as given (``../x``, ``/etc/x``): hostile archives."""
    with tarfile.open(target, "w:gz") as archive:
        for name, data, link in members:
            info = tarfile.TarInfo(name)
            info.mtime = 1_700_000_000
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
                archive.addfile(info)
            else:
                payload = data or b""
                info.size, info.mode = len(payload), 0o644
                archive.addfile(info, io.BytesIO(payload))
    return target


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- an HTTP server of a folder -----------------------------------------------------------------


@dataclass
class Served:
    """A folder served over HTTP on 127.0.0.1."""

    url: str
    folder: Path
    #: Request paths in the order they came (``/index.yaml``), every method.
    requests: list[str] = field(default_factory=list)
    #: Paths answered otherwise: ``path -> (status, headers, body)`` (redirects, errors).
    routes: dict[str, tuple[int, dict[str, str], bytes]] = field(default_factory=dict)


@contextlib.contextmanager
def serve_folder(folder: Path) -> Iterator[Served]:
    """``folder`` served read-only by a thread on 127.0.0.1 (a free port) until the block ends."""
    served = Served("", folder)
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            with lock:
                served.requests.append(path)
            if path in served.routes:
                status, headers, body = served.routes[path]
                self._send(status, headers, body)
                return
            target = (folder / path.lstrip("/")).resolve()
            if not target.is_relative_to(folder.resolve()) or not target.is_file():
                self._send(404, {}, b"not found\n")
                return
            self._send(200, {"Content-Type": "application/octet-stream"}, target.read_bytes())

        do_HEAD = do_GET

        def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    served.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
        thread.join(WAIT)


# -- an HTTP Helm chart repository --------------------------------------------------------------


@dataclass
class ChartRepository(Served):
    #: The index written (``apiVersion``, ``entries``): alter it, then :meth:`rewrite_index`.
    index: dict[str, Any] = field(default_factory=dict)

    def rewrite_index(self) -> None:
        (self.folder / "index.yaml").write_text(json.dumps(self.index, indent=1), encoding="utf-8")


def index_of(folder: Path, archives: Iterable[Path], base_url: str | None = None) -> dict[str, Any]:
    """An ``index.yaml`` as Helm's pkg/repo ``IndexDirectory`` writes it: ``entries`` by chart
    name, each version with ``urls`` (relative to the index, or under ``base_url``), ``digest``
    (sha256 of the archive), ``created`` and Chart.yaml's fields; newest first (``SortEntries``)."""
    entries: dict[str, list[dict[str, Any]]] = {}
    for archive in archives:
        with tarfile.open(archive, "r:gz") as tar:
            member = next(
                m for m in tar.getmembers() if m.name.count("/") == 1 and m.name.endswith("/Chart.yaml")
            )
            handle = tar.extractfile(member)
            assert handle is not None
            from ruamel.yaml import YAML

            meta = dict(YAML(typ="safe").load(handle.read().decode("utf-8")))
        relative = archive.relative_to(folder).as_posix()
        url = f"{base_url.rstrip('/')}/{relative}" if base_url else relative
        meta.update(urls=[url], digest=sha256_file(archive), created="2026-01-01T00:00:00Z")
        entries.setdefault(meta["name"], []).append(meta)
    for versions in entries.values():
        versions.sort(key=lambda v: _version_key(str(v["version"])), reverse=True)
    return {"apiVersion": "v1", "entries": entries, "generated": "2026-01-01T00:00:00Z"}


def _version_key(version: str) -> tuple[Any, ...]:
    core, _, pre = version.lstrip("v").partition("-")
    numbers = tuple(int(part) if part.isdigit() else 0 for part in core.split("+")[0].split("."))
    return (numbers, pre == "", pre)


@contextlib.contextmanager
def chart_repository(
    folder: Path, charts: Iterable[Path], *, absolute_urls: bool = False
) -> Iterator[ChartRepository]:
    """An HTTP Helm repository on 127.0.0.1 serving ``folder``: each chart folder of ``charts``
    packaged there (:func:`package_chart`) and an ``index.yaml`` of them (JSON, which is YAML);
    ``absolute_urls``: the index names archives by full URL, as repositories behind a CDN do."""
    folder.mkdir(parents=True, exist_ok=True)
    archives = [package_chart(chart, folder) for chart in charts]
    with serve_folder(folder) as served:
        repository = ChartRepository(served.url, folder, served.requests, served.routes)
        repository.index = index_of(folder, archives, served.url if absolute_urls else None)
        repository.rewrite_index()
        yield repository


# -- an OCI registry ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Registry:
    #: ``oci://127.0.0.1:PORT/charts``: the repository root charts are pushed under.
    url: str
    #: ``127.0.0.1:PORT``
    host: str
    log: Path

    def requests(self) -> list[str]:
        """The request URIs the registry has logged (its access log), in order."""
        found: list[str] = []
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return found
        for line in text.splitlines():
            # distribution's access log: combined log format, '"GET /v2/... HTTP/1.1" 200 ...'
            start = line.find('"')
            if start < 0 or " /v2/" not in line:
                continue
            request = line[start + 1 :].split('"', 1)[0].split()
            if len(request) >= 2 and request[1].startswith("/v2/"):
                found.append(f"{request[0]} {request[1]}")
        return found


@contextlib.contextmanager
def oci_registry(folder: Path) -> Iterator[Registry]:
    """Debian's CNCF distribution registry on 127.0.0.1 (storage in ``folder``, no auth), until
    the block ends; skips the test when the registry is not installed or does not start."""
    if not os.access(REGISTRY, os.X_OK):
        pytest.skip(f"{REGISTRY} is not installed (Debian package docker-registry)")
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = folder / "config.yml"
    config.write_text(
        "\n".join(
            [
                "version: 0.1",
                "log: {level: warn, accesslog: {disabled: false}}",
                f"storage: {{filesystem: {{rootdirectory: {json.dumps(str(folder / 'storage'))}}},"
                " delete: {enabled: true}}",
                f"http: {{addr: '127.0.0.1:{port}'}}",
                "",
            ]
        ),
        encoding="utf-8",
    )
    log = folder / "registry.log"
    with open(log, "wb") as sink:
        process = subprocess.Popen(
            [REGISTRY, "serve", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={"PATH": os.defpath, "HOME": str(folder)},
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + WAIT
        while True:
            if process.poll() is not None:
                pytest.skip(f"{REGISTRY} did not start: {log.read_text(errors='replace').strip()[-300:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except (OSError, urllib.error.URLError):
                pass
            if time.monotonic() > deadline:
                pytest.skip(f"{REGISTRY} did not answer within {WAIT:g} s")
            time.sleep(0.1)
        yield Registry(f"oci://127.0.0.1:{port}/charts", f"127.0.0.1:{port}", log)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def push_chart(registry: Registry, archive: Path, *, use_helm: bool | None = None) -> str:
    """``archive`` pushed to ``registry.url`` as ``helm push`` pushes it (the helm binary with
    ``--plain-http`` when on the PATH, else the same uploads from Python); the manifest's
    digest (``sha256:...``)."""
    helm = _helm() if use_helm is not False else None
    with tarfile.open(archive, "r:gz") as tar:
        member = next(
            m for m in tar.getmembers() if m.name.count("/") == 1 and m.name.endswith("/Chart.yaml")
        )
        handle = tar.extractfile(member)
        assert handle is not None
        from ruamel.yaml import YAML

        meta = dict(YAML(typ="safe").load(handle.read().decode("utf-8")))
    repository = f"{registry.url.removeprefix('oci://').split('/', 1)[1]}/{meta['name']}"
    tag = str(meta["version"]).replace("+", "_")
    if helm is not None:
        _run([helm, "push", str(archive), registry.url, "--plain-http"], archive.parent / ".helm")
        return _manifest_digest(registry, repository, tag)
    base = f"http://{registry.host}/v2/{repository}"
    config = json.dumps(meta, separators=(",", ":")).encode()
    layer = archive.read_bytes()
    blobs = []
    for media_type, data in ((HELM_CONFIG_MEDIA_TYPE, config), (HELM_CHART_MEDIA_TYPE, layer)):
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        answer = _request("POST", f"{base}/blobs/uploads/", b"", {})
        location = answer.headers["Location"]
        if location.startswith("/"):
            location = f"http://{registry.host}{location}"
        separator = "&" if "?" in location else "?"
        _request(
            "PUT", f"{location}{separator}digest={digest}", data, {"Content-Type": "application/octet-stream"}
        )
        blobs.append({"mediaType": media_type, "digest": digest, "size": len(data)})
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST_MEDIA_TYPE,
            "config": blobs[0],
            "layers": [blobs[1]],
            "annotations": {
                "org.opencontainers.image.title": str(meta["name"]),
                "org.opencontainers.image.version": str(meta["version"]),
            },
        },
        separators=(",", ":"),
    ).encode()
    _request("PUT", f"{base}/manifests/{tag}", manifest, {"Content-Type": OCI_MANIFEST_MEDIA_TYPE})
    return "sha256:" + hashlib.sha256(manifest).hexdigest()


def _manifest_digest(registry: Registry, repository: str, tag: str) -> str:
    answer = _request(
        "HEAD",
        f"http://{registry.host}/v2/{repository}/manifests/{tag}",
        None,
        {"Accept": OCI_MANIFEST_MEDIA_TYPE},
    )
    return str(answer.headers["Docker-Content-Digest"])


@dataclass
class _Answer:
    status: int
    headers: Mapping[str, str]
    body: bytes


def _request(method: str, url: str, data: bytes | None, headers: dict[str, str]) -> _Answer:
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=WAIT) as answer:
        return _Answer(answer.status, dict(answer.headers.items()), answer.read())


# -- a git remote -------------------------------------------------------------------------------


@dataclass
class GitRemote:
    #: ``file:///.../remote.git``
    url: str
    #: The bare repository.
    path: Path
    #: Commit of each branch and tag (``main``, ``v1.0.0``) and of each commit made (``commit1``...).
    commits: dict[str, str] = field(default_factory=dict)


def git_remote(
    folder: Path,
    files: Mapping[str, str],
    *,
    tags: Iterable[str] = (),
    later: Iterable[tuple[Mapping[str, str], Iterable[str]]] = (),
    branch: str = "main",
) -> GitRemote:
    """A bare git repository ``folder/remote.git`` served over ``file://``: one commit of
    ``files`` on ``branch`` tagged ``tags``, then one commit per ``(files, tags)`` of ``later``
    (files updated, tags added). Skips when git is not installed."""
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    work = folder / "work"
    work.mkdir(parents=True, exist_ok=True)
    home = folder / ".home"
    _run([git, "init", "-q", "-b", branch, str(work)], home)
    remote = GitRemote("", folder / "remote.git")
    for number, (content, names) in enumerate([(files, tags), *later], start=1):
        for path, text in content.items():
            target = work / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        _run([git, "add", "-A"], home, work)
        _run([git, "commit", "-q", "--allow-empty", "-m", f"commit {number}"], home, work)
        sha = _run([git, "rev-parse", "HEAD"], home, work).strip()
        remote.commits[f"commit{number}"] = sha
        for tag in names:
            _run([git, "tag", tag], home, work)
            remote.commits[tag] = sha
    remote.commits[branch] = _run([git, "rev-parse", "HEAD"], home, work).strip()
    _run([git, "clone", "-q", "--bare", str(work), str(remote.path)], home)
    remote.url = remote.path.resolve().as_uri()
    return remote


@contextlib.contextmanager
def git_daemon(remote: GitRemote) -> Iterator[str]:
    """``git daemon`` on 127.0.0.1 serving ``remote`` read-only until the block ends: its
    ``git://127.0.0.1:PORT/remote.git`` URL. Skips when the daemon does not start."""
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    port = free_port()
    base = remote.path.parent
    process = subprocess.Popen(
        [
            git,
            "daemon",
            "--reuseaddr",
            "--listen=127.0.0.1",
            f"--port={port}",
            f"--base-path={base}",
            "--export-all",
            "--informative-errors",
            str(base),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_tool_env(base / ".daemon-home"),
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + WAIT
        while True:
            if process.poll() is not None:
                pytest.skip("git daemon did not start")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if time.monotonic() > deadline:
                pytest.skip(f"git daemon did not listen within {WAIT:g} s")
            time.sleep(0.05)
        yield f"git://127.0.0.1:{port}/{remote.path.name}"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


@dataclass
class TokenProxy:
    """A registry behind the distribution token flow (tests/remote.py :func:`bearer_proxy`)."""

    #: ``oci://127.0.0.1:PORT/charts``
    url: str
    #: Every request: (path, the Authorization header or "").
    requests: list[tuple[str, str]] = field(default_factory=list)


@contextlib.contextmanager
def bearer_proxy(registry: Registry, *, redirect_blobs: bool = False) -> Iterator[TokenProxy]:
    """``registry`` behind a proxy on 127.0.0.1 that answers ``401`` with a ``WWW-Authenticate:
    Bearer realm=...`` challenge (as Docker Hub, GHCR and Quay do for anonymous pulls) until a
    request carries the token its ``/token`` endpoint hands out; ``redirect_blobs``: blobs are
    answered with a ``307`` to ``/storage/...`` of the same proxy (as registries redirect to
    their storage), which records whether the Authorization header followed."""
    token = "anonymous-pull-token"
    proxy = TokenProxy("")
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            auth = self.headers.get("Authorization", "")
            with lock:
                proxy.requests.append((self.path, auth))
            if self.path.startswith("/token"):
                self._send(200, {"Content-Type": "application/json"}, json.dumps({"token": token}).encode())
                return
            if self.path.startswith("/storage/"):
                self._forward("/v2/" + self.path.removeprefix("/storage/"))
                return
            if auth != f"Bearer {token}":
                realm = proxy.url.removeprefix("oci://").split("/", 1)[0]
                challenge = f'Bearer realm="http://{realm}/token",service="registry.test"'
                self._send(401, {"WWW-Authenticate": challenge}, b'{"errors":[{"code":"UNAUTHORIZED"}]}')
                return
            if redirect_blobs and "/blobs/" in self.path:
                self._send(307, {"Location": "/storage/" + self.path.removeprefix("/v2/")}, b"")
                return
            self._forward(self.path)

        def _forward(self, path: str) -> None:
            request = urllib.request.Request(f"http://{registry.host}{path}")
            accept = self.headers.get("Accept")
            if accept:
                request.add_header("Accept", accept)
            try:
                with urllib.request.urlopen(request, timeout=WAIT) as answer:
                    headers = {
                        k: v
                        for k, v in answer.headers.items()
                        if k.lower() in ("content-type", "docker-content-digest", "link")
                    }
                    self._send(answer.status, headers, answer.read())
            except urllib.error.HTTPError as error:
                self._send(error.code, {}, error.read())

        def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    proxy.url = f"oci://127.0.0.1:{server.server_address[1]}/charts"
    try:
        yield proxy
    finally:
        server.shutdown()
        server.server_close()
        thread.join(WAIT)
