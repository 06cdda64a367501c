"""What a repository names remotely -- Helm charts and git sources -- fetched into the user's cache.

Chart dependencies (``Chart.yaml``/``Chart.lock``), Flux sources (``HelmRepository``,
``OCIRepository``, ``GitRepository``) and Argo CD sources name charts and trees that are not in
the checkout. They are fetched only when the person running kaffinity allows the network
(``Sandbox.network``: ``--allow-network``, ``KAFFINITY_ALLOW_NETWORK``, the Action's input; never
the repository's config), into a cache in the user's cache folder, never inside the repository.

- :func:`fetch_chart` -- a chart from an HTTP(S) Helm repository (its ``index.yaml``) or an OCI
  registry (``oci://host/path``, the chart at ``oci://host/path/name:version``).
- :func:`fetch_git` -- a tree of a git repository at a branch, tag, semver range or commit.

Both return :class:`Fetched` (a folder in the cache the caller reads and never writes) or
:class:`NotFetched` (one line why; ``offline`` when only the network being off stopped it).

**Offline** (the network not allowed): what is exact and immutable and already in the cache is
used -- a chart at an exact version (``1.2.3``, fetched before from the same repository URL; its
archive was checked against the index's digest or the registry's content digest then), a git
tree at a full commit -- and nothing else: a range, a branch or a tag needs a lookup, so it is
``NotFetched(offline=True)``. With the network, an exact chart version or a commit in the cache
is used without a request too (Helm's own repository cache keeps ``name-version.tgz`` the same
way); a range asks the index (or the registry's tag list) each time.

**Cache**: ``$KAFFINITY_REMOTE_CACHE`` (tests), else ``remote/`` in the user's cache folder
(``$XDG_CACHE_HOME/kaffinity``, ``~/.cache/kaffinity``: where kaffinity.cache keeps its key,
held to the same rule: not a symlink, the user's own, not writable by others). It is never
inside a repository being linted (``sandbox.roots``). An entry is a folder named by a digest of
what it holds (kind, URL, name, version or commit), made under a temporary name and renamed into
place (a concurrent run sees it whole or not at all), with ``entry.json`` saying what it is.
Archives are extracted as Helm's loader reads them (pkg/chart/loader/archive.go
``LoadArchiveFiles``: the first path component dropped; absolute paths, ``..`` refused; at most
:data:`MAX_CHART_SIZE` bytes in all, a file at most ``limits.file_size``) and further: links,
devices and more than :data:`~kaffinity.repo.sandbox.WALK_ENTRIES` entries refuse the archive.

**Bounded**: only ``http``/``https``/``oci`` for charts (``file://`` never: a checkout's URL must
not read the disk), at most :data:`MAX_REDIRECTS` redirects (to http/https only), a timeout per
request (``sandbox.timeout``), at most ``limits.file_size`` bytes per download (an index:
:data:`MAX_INDEX_SIZE`). OCI over plain HTTP only for ``localhost``/``127.0.0.1``/``::1`` (or
``plain_http=True``, as ``helm --plain-http``); an anonymous Bearer token is asked for when the
registry challenges (the distribution token flow helm's pkg/registry and oras-go follow), and the
``Authorization`` header never follows a redirect. No credentials of the user's are read (no
``~/.config/helm``, no docker config): a private repository is not fetched.

**git** runs as a subprocess through :func:`kaffinity.repo.sandbox.run_tool` (cleared
environment, limits, timeout, ``GIT_ALLOW_PROTOCOL=https:http:ssh:git`` -- ``file`` only when
the caller says the URL is the runner's own, ``local=True``), in a repository kaffinity made
with no template (so no hooks), ``core.hooksPath=/dev/null``, no submodules, symlinks checked
out as plain files (``core.symlinks=false``): nothing from the fetched repository runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import posixpath
import re
import shutil
import stat
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kaffinity.load.parse import DEFAULT_LIMITS, Limits
from kaffinity.repo.sandbox import WALK_ENTRIES, Sandbox

#: The remote cache's folder, for tests and runners that keep it elsewhere.
CACHE_ENV = "KAFFINITY_REMOTE_CACHE"
#: Bytes of a chart once extracted (Helm's loader.MaxDecompressedChartSize).
MAX_CHART_SIZE = 100 * 1024 * 1024
#: Bytes of an ``index.yaml`` (large public repositories publish indexes of tens of MB).
MAX_INDEX_SIZE = 64 * 1024 * 1024
#: Redirects followed per request.
MAX_REDIRECTS = 5
#: Pages of an OCI tag list read.
MAX_TAG_PAGES = 20

HELM_CONFIG_MEDIA_TYPE = "application/vnd.cncf.helm.config.v1+json"
HELM_CHART_MEDIA_TYPES = (
    "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
    "application/tar+gzip",  # charts pushed by Helm 3.0-3.6 (pkg/registry LegacyChartLayerMediaType)
)
_MANIFEST_TYPES = (
    "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json"
)
_LOOPBACK = frozenset(("localhost", "127.0.0.1", "::1", "[::1]"))
_GIT_PROTOCOLS = "https:http:ssh:git"
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class Fetched:
    """A fetched chart's folder (holding ``Chart.yaml``) or a git tree's root, in the cache."""

    path: str
    #: What was fetched, as pinned: the chart version chosen, or the commit.
    version: str


@dataclass(frozen=True, slots=True)
class NotFetched:
    """Why something remote could not be had: one line for a note or a finding."""

    reason: str
    #: Only because the network is off (``--allow-network`` would fetch it).
    offline: bool = False


@dataclass(frozen=True, slots=True)
class GitRef:
    """Which tree of a git repository (Flux ``GitRepository.spec.ref``, Argo ``targetRevision``):
    the first that is set wins, in Flux's order: commit, name, semver, tag, branch."""

    branch: str | None = None
    tag: str | None = None
    semver: str | None = None
    commit: str | None = None
    name: str | None = None


class _Failed(Exception):
    """Fetching stopped: the message is the NotFetched reason."""


_NETWORK_OFF = "the network is off (--allow-network allows it)"


# --- the cache -------------------------------------------------------------------------------


def cache_folder(sandbox: Sandbox | None = None, *, create: bool = True) -> str | None:
    """The remote cache's folder, made if missing (``create``; else None when there is none);
    raises _Failed when it may not be used: a symlink, someone else's or writable by others
    (kaffinity.cache's rule for its key folder), or inside a repository being linted."""
    from kaffinity.load.userfiles import private_problem, user_cache_folder

    override = os.environ.get(CACHE_ENV)
    if override:
        folder = os.path.abspath(override)
        parent = os.path.dirname(folder)
    else:
        parent = user_cache_folder()  # type: ignore[assignment]
        if parent is None:
            raise _Failed(f"no home folder for the remote cache (set {CACHE_ENV} or XDG_CACHE_HOME)")
        folder = os.path.join(parent, "remote")
    if sandbox is not None:
        from kaffinity.repo.sandbox import inside

        if sandbox.roots and inside(folder, sandbox.roots):
            raise _Failed(
                f"the remote cache {folder} is inside the repository being linted "
                f"(set {CACHE_ENV} to a folder outside it)"
            )
    if not create and not os.path.lexists(folder):
        return None
    try:
        os.makedirs(os.path.dirname(parent), exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(parent, 0o700)
        if not override:
            problem = private_problem(os.lstat(parent), parent, 0o022, "the cache")
            if problem is not None:
                raise _Failed(problem)
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
        problem = private_problem(os.lstat(folder), folder, 0o022, "the remote cache")
    except OSError as error:
        raise _Failed(f"cannot use the remote cache {folder}: {error.strerror or error}") from None
    if problem is not None:
        raise _Failed(problem)
    return folder


def _entry_name(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:40]


def _cached(folder: str, name: str) -> dict[str, Any] | None:
    """The ``entry.json`` of a complete entry (a real folder, not a symlink), or None."""
    path = os.path.join(folder, name)
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return None
        with open(os.path.join(path, "entry.json"), encoding="utf-8") as handle:
            meta = json.load(handle)
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def _store(folder: str, name: str, meta: Mapping[str, Any], fill: Callable[[str], None]) -> str:
    """Make the entry ``name``: ``fill`` writes its content in a temporary folder, which is then
    renamed into place (atomic; a concurrent run's entry of the same name wins, it holds the
    same)."""
    temporary = tempfile.mkdtemp(prefix=".tmp-", dir=folder)
    try:
        fill(temporary)
        with open(os.path.join(temporary, "entry.json"), "w", encoding="utf-8") as handle:
            json.dump(dict(meta), handle)
        target = os.path.join(folder, name)
        try:
            os.rename(temporary, target)
        except OSError:
            if _cached(folder, name) is None:
                raise
            shutil.rmtree(temporary, ignore_errors=True)
        return target
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


# --- archives --------------------------------------------------------------------------------


def extract_chart(data: bytes, destination: str, limits: Limits = DEFAULT_LIMITS) -> None:
    """A chart archive's files into ``destination`` as Helm's loader reads them (the first path
    component dropped). Raises _Failed for an archive Helm refuses (absolute paths, ``..``,
    past the sizes) and for links, devices and too many entries, which kaffinity refuses."""
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            for count, member in enumerate(archive, start=1):
                if count > WALK_ENTRIES:
                    raise _Failed(f"the archive holds more than {WALK_ENTRIES:,} entries")
                relative = _member_path(member)
                if relative is None:
                    continue
                if member.size > limits.file_size:
                    raise _Failed(f"{member.name} is larger than the limit of {limits.file_size} bytes")
                total += member.size
                if total > MAX_CHART_SIZE:
                    raise _Failed(f"the chart is larger than {MAX_CHART_SIZE} bytes once extracted")
                source = archive.extractfile(member)
                if source is None:
                    continue
                target = os.path.join(destination, *relative.split("/"))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "xb") as handle:
                    shutil.copyfileobj(source, handle, 65536)
    except FileExistsError as error:
        raise _Failed(f"the archive holds {error.filename} twice") from None
    except (tarfile.TarError, OSError, EOFError, ValueError) as error:
        raise _Failed(f"not a readable chart archive (gzip tar): {error}") from None
    if not os.path.isfile(os.path.join(destination, "Chart.yaml")):
        raise _Failed("the archive holds no Chart.yaml at its top")


def _member_path(member: tarfile.TarInfo) -> str | None:
    """The path of ``member`` inside the chart (pkg/chart/loader/archive.go: the first component
    dropped, cleaned), None for what is skipped (folders, pax headers); raises _Failed for what
    is refused."""
    name = member.name.replace("\\", "/")
    if member.isdir() or member.type in (tarfile.XHDTYPE, tarfile.XGLTYPE):
        return None
    if member.issym() or member.islnk():
        raise _Failed(f"the archive holds a link ({member.name} -> {member.linkname})")
    if not member.isfile():
        raise _Failed(f"the archive holds {member.name}, which is not a regular file")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise _Failed(f"the archive holds an absolute path ({member.name})")
    relative = posixpath.normpath("/".join(name.split("/")[1:]) or ".")
    if relative == "." or relative.startswith("/"):
        raise _Failed(f"the archive holds content outside the chart folder ({member.name})")
    if relative == ".." or relative.startswith("../"):
        raise _Failed(f"the archive holds a path leading out of the chart ({member.name})")
    return relative


# --- HTTP ------------------------------------------------------------------------------------


class _Redirects(urllib.request.HTTPRedirectHandler):
    max_redirections = MAX_REDIRECTS

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        if urllib.parse.urlsplit(newurl).scheme not in ("http", "https"):
            raise _Failed(f"{req.full_url} redirects to {newurl}, which is not http(s)")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


@dataclass(slots=True)
class _Response:
    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes


class _Http:
    """Bounded requests: a timeout, a size limit, few redirects; counts nothing, keeps nothing."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.opener = urllib.request.build_opener(_Redirects())

    def get(
        self,
        url: str,
        limit: int,
        headers: Mapping[str, str] | None = None,
        auth: str | None = None,
        method: str = "GET",
    ) -> _Response:
        request = urllib.request.Request(url, headers=dict(headers or {}), method=method)
        request.add_header("User-Agent", "kaffinity")
        if auth:
            request.add_unredirected_header("Authorization", auth)  # never sent on after a redirect
        try:
            with self.opener.open(request, timeout=self.timeout) as answer:
                body = _read_bounded(answer, limit, url)
                return _Response(answer.geturl(), answer.status, dict(answer.headers.items()), body)
        except urllib.error.HTTPError as error:
            body = b""
            with contextlib.suppress(OSError):
                body = error.read(65536)
            return _Response(url, error.code, dict(error.headers.items()) if error.headers else {}, body)
        except _Failed:
            raise
        except (urllib.error.URLError, OSError, ValueError) as error:
            reason = getattr(error, "reason", error)
            raise _Failed(f"cannot reach {url}: {reason}") from None


def _read_bounded(answer: Any, limit: int, url: str) -> bytes:
    declared = answer.headers.get("Content-Length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise _Failed(f"{url} is larger than the limit of {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = answer.read(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise _Failed(f"{url} is larger than the limit of {limit} bytes")
        chunks.append(chunk)


# --- charts ----------------------------------------------------------------------------------


def fetch_chart(
    repository: str,
    name: str,
    version: str | None,
    sandbox: Sandbox,
    *,
    limits: Limits = DEFAULT_LIMITS,
    plain_http: bool = False,
) -> Fetched | NotFetched:
    """The chart ``name`` at the newest version matching ``version`` (a semver constraint as
    Helm reads it; None, ``""`` or ``*``: the newest stable) from ``repository`` (``https://``,
    ``http://`` or ``oci://``). ``plain_http``: an OCI registry over HTTP (helm --plain-http);
    loopback registries always are."""
    from kaffinity.repo.semver import ConstraintError, is_exact

    what = f"chart {name} {version or '*'} from {repository}"
    scheme = urllib.parse.urlsplit(repository).scheme.lower()
    if scheme not in ("http", "https", "oci"):
        return NotFetched(
            f"{what}: only http, https and oci repositories are fetched, not {scheme or repository!r}"
        )
    if not name or "/" in name or name in (".", ".."):
        return NotFetched(f"{what}: not a chart name")
    exact = is_exact(version)
    try:
        folder = cache_folder(sandbox, create=sandbox.network)
        if folder is not None and exact:
            assert version is not None
            hit = _chart_entry(folder, repository, name, version.strip())
            if hit is not None:
                return hit
        if not sandbox.network or folder is None:
            return NotFetched(f"{what} is remote and {_NETWORK_OFF}", offline=True)
        http = _Http(sandbox.timeout)
        if scheme == "oci":
            return _fetch_oci(http, folder, repository, name, version, limits, plain_http)
        return _fetch_http(http, folder, repository, name, version, limits)
    except _Failed as failed:
        return NotFetched(f"{what}: {failed}")
    except ConstraintError as error:
        return NotFetched(f"{what}: {error}")


def _chart_entry(folder: str, repository: str, name: str, version: str) -> Fetched | None:
    entry = _entry_name("chart", repository.rstrip("/"), name, version)
    meta = _cached(folder, entry)
    if meta is None or meta.get("name") != name or meta.get("version") != version:
        return None
    return Fetched(os.path.join(folder, entry, "chart"), version)


def _fetch_http(
    http: _Http, folder: str, repository: str, name: str, version: str | None, limits: Limits
) -> Fetched | NotFetched:
    """helm's pkg/repo: ``<repository>/index.yaml``, the entry chosen as ``IndexFile.Get`` does,
    its first URL resolved against the index's (pkg/repo ``ResolveReferenceURL``), the archive's
    sha256 checked against the entry's ``digest`` when it has one."""
    from kaffinity.repo.semver import newest

    base = repository.rstrip("/") + "/"
    index_url = urllib.parse.urljoin(base, "index.yaml")
    entries = _INDEXES.get(index_url)
    if entries is None:
        answer = http.get(index_url, MAX_INDEX_SIZE)
        if answer.status != 200:
            raise _Failed(f"{index_url} answered {answer.status}")
        entries = _index_entries(answer.body, index_url, limits)
        # One run asks an index once: an umbrella chart names several charts of one repository,
        # and a public index of 10 MB takes seconds to read.
        if len(_INDEXES) >= 8:
            _INDEXES.pop(next(iter(_INDEXES)))
        _INDEXES[index_url] = entries
    versions = entries.get(name)
    if not isinstance(versions, list) or not versions:
        raise _Failed(f"no chart {name} in {index_url}")
    by_version = {str(v.get("version")): v for v in versions if isinstance(v, dict) and v.get("version")}
    chosen = newest(by_version, version)
    if chosen is None:
        raise _Failed(f"no version of {name} in {index_url} matches {version or '*'}")
    hit = _chart_entry(folder, repository, name, chosen)
    if hit is not None:
        return hit
    item = by_version[chosen]
    urls = item.get("urls")
    if not isinstance(urls, list) or not urls or not isinstance(urls[0], str):
        raise _Failed(f"{index_url}: {name} {chosen} has no urls")
    url = urllib.parse.urljoin(base, urls[0])
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise _Failed(f"{index_url}: {name} {chosen} is at {url}, which is not http(s)")
    archive = http.get(url, limits.file_size)
    if archive.status != 200:
        raise _Failed(f"{url} answered {archive.status}")
    digest = item.get("digest")
    actual = hashlib.sha256(archive.body).hexdigest()
    if isinstance(digest, str) and digest and digest.removeprefix("sha256:").lower() != actual:
        raise _Failed(f"{url}: its sha256 {actual} is not the digest {digest} the index gives")
    return _keep_chart(folder, repository, name, chosen, archive.body, limits, {"url": url, "sha256": actual})


#: The indexes read by this process, by URL (a run's; a new run asks again).
_INDEXES: dict[str, dict[str, Any]] = {}


def _index_entries(body: bytes, url: str, limits: Limits) -> dict[str, Any]:
    from kaffinity.load.parse import LoadError
    from kaffinity.load.parse.reader import _documents, _parse_errors

    try:
        text = body.decode("utf-8")
        documents = [data for data, _ in _documents(text, _replace_limits(limits, len(body)))]
    except UnicodeDecodeError:
        raise _Failed(f"{url} is not UTF-8 text") from None
    except LoadError as error:
        raise _Failed(f"{url}: {error.message}") from None
    except _parse_errors() as error:
        raise _Failed(f"{url} is not YAML: {getattr(error, 'problem', None) or error}") from None
    index = documents[0] if documents else None
    entries = index.get("entries") if isinstance(index, dict) else None
    if not isinstance(entries, dict):
        raise _Failed(f"{url} is not a Helm repository index (no entries)")
    return dict(entries)


def _replace_limits(limits: Limits, size: int) -> Limits:
    from dataclasses import replace

    return replace(limits, file_size=max(limits.file_size, size))


def _keep_chart(
    folder: str,
    repository: str,
    name: str,
    version: str,
    archive: bytes,
    limits: Limits,
    extra: Mapping[str, str],
) -> Fetched:
    def fill(temporary: str) -> None:
        chart = os.path.join(temporary, "chart")
        os.mkdir(chart)
        extract_chart(archive, chart, limits)
        _check_chart_name(chart, name)

    entry = _entry_name("chart", repository.rstrip("/"), name, version)
    meta = {"kind": "chart", "repository": repository, "name": name, "version": version, **extra}
    path = _store(folder, entry, meta, fill)
    return Fetched(os.path.join(path, "chart"), version)


def _check_chart_name(chart: str, name: str) -> None:
    from kaffinity.load.parse.reader import _documents

    try:
        with open(os.path.join(chart, "Chart.yaml"), encoding="utf-8") as handle:
            text = handle.read(1024 * 1024)
        meta = next((data for data, _ in _documents(text, DEFAULT_LIMITS)), None)
    except Exception:  # noqa: BLE001 - any unreadable Chart.yaml is the archive's fault
        raise _Failed("the archive's Chart.yaml cannot be read") from None
    if not isinstance(meta, dict) or meta.get("name") != name:
        found = meta.get("name") if isinstance(meta, dict) else None
        raise _Failed(f"the archive holds chart {found!r}, not {name}")


# --- OCI -------------------------------------------------------------------------------------


def _fetch_oci(
    http: _Http,
    folder: str,
    repository: str,
    name: str,
    version: str | None,
    limits: Limits,
    plain_http: bool,
) -> Fetched | NotFetched:
    """helm's pkg/registry (oras-go): ``oci://host/path`` + name is the repository
    ``path/name`` of ``host``; a constraint is matched against the tag list (``_`` read as
    ``+``, as helm pushes ``+``), the manifest read, its chart layer fetched and its sha256
    checked against the layer's digest."""
    from kaffinity.repo.semver import is_exact, newest

    parts = urllib.parse.urlsplit(repository.rstrip("/") + "/" + name)
    host = parts.netloc
    if not host or "@" in host:
        raise _Failed(f"{repository}: not a registry address")
    path = parts.path.strip("/")
    scheme = "http" if plain_http or parts.hostname in _LOOPBACK else "https"
    registry = _Registry(http, f"{scheme}://{host}", path)
    if is_exact(version):
        assert version is not None
        chosen = version.strip()
    else:
        tags = registry.tags()
        chosen_tag = newest([tag.replace("_", "+") for tag in tags], version)
        if chosen_tag is None:
            raise _Failed(f"no tag of {host}/{path} matches {version or '*'}")
        chosen = chosen_tag
        hit = _chart_entry(folder, repository, name, chosen)
        if hit is not None:
            return hit
    manifest_body = registry.get(f"manifests/{chosen.replace('+', '_')}", 4 * 1024 * 1024, _MANIFEST_TYPES)
    try:
        manifest = json.loads(manifest_body)
        layers = manifest["layers"]
        config_type = manifest.get("config", {}).get("mediaType")
    except (ValueError, KeyError, TypeError, AttributeError):
        raise _Failed(f"{host}/{path}:{chosen}: not an OCI manifest") from None
    if config_type != HELM_CONFIG_MEDIA_TYPE:
        raise _Failed(f"{host}/{path}:{chosen} is not a Helm chart (config media type {config_type})")
    layer = next(
        (
            item
            for item in layers
            if isinstance(item, dict) and item.get("mediaType") in HELM_CHART_MEDIA_TYPES
        ),
        None,
    )
    digest = layer.get("digest") if layer else None
    if not isinstance(digest, str) or not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        raise _Failed(f"{host}/{path}:{chosen}: no chart layer with a sha256 digest")
    body = registry.get(f"blobs/{digest}", limits.file_size, None)
    actual = "sha256:" + hashlib.sha256(body).hexdigest()
    if actual != digest:
        raise _Failed(f"{host}/{path}:{chosen}: the chart layer's sha256 is {actual}, not {digest}")
    return _keep_chart(folder, repository, name, chosen, body, limits, {"digest": digest})


class _Registry:
    """The distribution API v2 of one repository, with the anonymous token flow."""

    def __init__(self, http: _Http, base: str, path: str) -> None:
        self.http = http
        self.base = base
        self.path = path
        self.token: str | None = None

    def get(self, suffix: str, limit: int, accept: str | None) -> bytes:
        url = f"{self.base}/v2/{self.path}/{suffix}"
        return self._get(url, limit, accept).body

    def _get(self, url: str, limit: int, accept: str | None) -> _Response:
        headers = {"Accept": accept} if accept else {}
        answer = self.http.get(url, limit, headers, f"Bearer {self.token}" if self.token else None)
        if answer.status == 401 and self.token is None:
            self.token = self._anonymous_token(answer.headers)
            answer = self.http.get(url, limit, headers, f"Bearer {self.token}")
        if answer.status != 200:
            raise _Failed(
                f"{url} answered {answer.status}"
                + (" (a private registry?)" if answer.status in (401, 403) else "")
            )
        return answer

    def _anonymous_token(self, headers: Mapping[str, str]) -> str:
        challenge = next((value for key, value in headers.items() if key.lower() == "www-authenticate"), "")
        if not challenge.lower().startswith("bearer "):
            raise _Failed(f"{self.base} asks for credentials (a private registry?)")
        fields = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
        realm = fields.get("realm", "")
        if urllib.parse.urlsplit(realm).scheme not in ("http", "https"):
            raise _Failed(f"{self.base}: a token realm that is not http(s): {realm!r}")
        query = {key: fields[key] for key in ("service", "scope") if key in fields}
        query.setdefault("scope", f"repository:{self.path}:pull")
        url = realm + ("&" if "?" in realm else "?") + urllib.parse.urlencode(query)
        answer = self.http.get(url, 1024 * 1024)
        try:
            data = json.loads(answer.body) if answer.status == 200 else {}
        except ValueError:
            data = {}
        token = data.get("token") or data.get("access_token") if isinstance(data, dict) else None
        if not isinstance(token, str) or not token:
            raise _Failed(f"{self.base} gave no anonymous token (a private registry?)")
        return token

    def tags(self) -> list[str]:
        tags: list[str] = []
        url: str | None = f"{self.base}/v2/{self.path}/tags/list"
        for _ in range(MAX_TAG_PAGES):
            if url is None:
                break
            answer = self._get(url, 4 * 1024 * 1024, None)
            try:
                found = json.loads(answer.body).get("tags") or []
            except (ValueError, AttributeError):
                raise _Failed(f"{url}: not a tag list") from None
            tags.extend(tag for tag in found if isinstance(tag, str))
            link = answer.headers.get("Link") or answer.headers.get("link")
            match = re.match(r"\s*<([^>]+)>", link or "")
            url = urllib.parse.urljoin(self.base, match.group(1)) if match else None
        return tags


# --- git -------------------------------------------------------------------------------------


def fetch_git(
    url: str,
    ref: GitRef,
    sandbox: Sandbox,
    *,
    limits: Limits = DEFAULT_LIMITS,
    local: bool = False,
) -> Fetched | NotFetched:
    """The tree of the git repository at ``url`` at ``ref`` (Flux's order: commit, name,
    semver, tag, branch; none: the remote's HEAD). ``local``: the URL is the runner's own
    (a test's ``file://`` remote), so git may read the disk; never for a checkout's URL."""
    what = f"git repository {url}"
    problem = _git_url_problem(url, local)
    if problem is not None:
        return NotFetched(f"{what}: {problem}")
    try:
        folder = cache_folder(sandbox, create=sandbox.network)
        commit = ref.commit.strip().lower() if ref.commit else None
        if commit is not None and not _COMMIT.fullmatch(commit):
            return NotFetched(f"{what}: commit {ref.commit!r} is not a full commit id")
        if commit is not None and folder is not None:
            hit = _git_entry(folder, url, commit)
            if hit is not None:
                return hit
        if not sandbox.network or folder is None:
            return NotFetched(f"{what} is remote and {_NETWORK_OFF}", offline=True)
        git = shutil.which("git")
        if git is None:
            return NotFetched(f"{what}: git is not on the PATH")
        wanted: str | None = None
        if commit is None:
            commit, wanted = _resolve(git, url, ref, sandbox, local)
            hit = _git_entry(folder, url, commit)
            if hit is not None:
                return hit
        return _clone(git, folder, url, commit, wanted, sandbox, limits, local)
    except _Failed as failed:
        return NotFetched(f"{what}: {failed}")


def _git_url_problem(url: str, local: bool) -> str | None:
    if url.startswith("-"):
        return "not a URL"
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme in ("https", "http", "ssh", "git"):
        return None
    if scheme == "file":
        return None if local else "file:// URLs are not fetched (a checkout's URL must not read the disk)"
    if not scheme and re.match(r"^[\w.-]+@[\w.-]+:", url):
        return None  # scp-like ssh
    return f"only https, http, ssh and git URLs are fetched, not {url!r}"


def _git_entry(folder: str, url: str, commit: str) -> Fetched | None:
    entry = _entry_name("git", url, commit)
    meta = _cached(folder, entry)
    if meta is None or meta.get("commit") != commit:
        return None
    return Fetched(os.path.join(folder, entry, "tree"), commit)


def _git(
    git: str,
    args: Sequence[str],
    sandbox: Sandbox,
    local: bool,
    cwd: str | None = None,
    limit: int = 16 * 1024**2,
) -> str:
    from kaffinity.repo.sandbox import run_tool

    protocols = _GIT_PROTOCOLS + (":file" if local else "")
    command = [
        git,
        "-c", "core.hooksPath=/dev/null",
        "-c", "core.symlinks=false",
        "-c", "core.fsmonitor=false",
        "-c", "protocol.file.allow=" + ("always" if local else "never"),
        "-c", "submodule.recurse=false",
        "-c", "credential.helper=",
        *args,
    ]  # fmt: skip
    outcome = run_tool(
        command,
        sandbox,
        timeout=sandbox.timeout,
        output_limit=limit,
        cwd=cwd,
        env={
            "GIT_ALLOW_PROTOCOL": protocols,
            "GIT_LFS_SKIP_SMUDGE": "1",
            "GIT_ASKPASS": "",
            "SSH_ASKPASS": "",
        },
    )
    if isinstance(outcome, str):
        raise _Failed(outcome)
    if outcome.stopped is not None:
        raise _Failed(f"git {args[0]} {outcome.stopped}")
    if outcome.code != 0:
        lines = [line for line in outcome.errors.splitlines() if line.strip()]
        first = next(
            (line for line in lines if line.startswith(("fatal:", "error:"))), lines[-1] if lines else ""
        )
        raise _Failed(f"git {args[0]} failed: {first.strip()}")
    return outcome.output


def _resolve(git: str, url: str, ref: GitRef, sandbox: Sandbox, local: bool) -> tuple[str, str]:
    """The commit ``ref`` names at ``url`` (``git ls-remote``), and the ref to fetch."""
    from kaffinity.repo.semver import newest

    listing = _git(git, ["ls-remote", "--", url], sandbox, local)
    refs: dict[str, str] = {}
    for line in listing.splitlines():
        sha, _, name = line.partition("\t")
        if _COMMIT.fullmatch(sha.strip()):
            refs[name.strip()] = sha.strip()

    def peeled(name: str) -> str | None:
        return refs.get(name + "^{}") or refs.get(name)

    if ref.name:
        name = ref.name
        found = peeled(name) or peeled(f"refs/heads/{name}") or peeled(f"refs/tags/{name}")
        target = (
            name
            if name in refs
            else f"refs/heads/{name}"
            if f"refs/heads/{name}" in refs
            else f"refs/tags/{name}"
        )
    elif ref.semver:
        tags = {
            name.removeprefix("refs/tags/"): name
            for name in refs
            if name.startswith("refs/tags/") and not name.endswith("^{}")
        }
        chosen = newest(tags, ref.semver)
        if chosen is None:
            raise _Failed(f"no tag matches {ref.semver}")
        target = tags[chosen]
        found = peeled(target)
    elif ref.tag:
        target = f"refs/tags/{ref.tag}"
        found = peeled(target)
    elif ref.branch:
        target = f"refs/heads/{ref.branch}"
        found = peeled(target)
    else:
        target = "HEAD"
        found = refs.get("HEAD")
    if found is None:
        raise _Failed(f"{target} not found")
    return found, target


def _clone(
    git: str,
    folder: str,
    url: str,
    commit: str,
    wanted: str | None,
    sandbox: Sandbox,
    limits: Limits,
    local: bool,
) -> Fetched:
    """A shallow fetch of ``wanted`` (or the commit itself) into a repository made here with no
    template, the commit's tree checked out into the entry; .git left out."""

    def fill(temporary: str) -> None:
        tree = os.path.join(temporary, "tree")
        store = os.path.join(temporary, "git")
        os.mkdir(tree)
        _git(git, ["init", "-q", "--bare", "--template=", store], sandbox, local)
        base = ["--git-dir", store]
        try:
            _git(
                git,
                [*base, "fetch", "-q", "--depth", "1", "--no-tags", "--", url, wanted or commit],
                sandbox,
                local,
            )
        except _Failed:
            # A server that does not serve a commit by id (git daemon's default): the whole history.
            _git(
                git, [*base, "fetch", "-q", "--no-tags", "--", url, "+refs/*:refs/fetched/*"], sandbox, local
            )
        _git(git, [*base, "--work-tree", tree, "checkout", "-q", "-f", commit, "--", "."], sandbox, local)
        shutil.rmtree(store)
        _check_tree(tree, limits)

    entry = _entry_name("git", url, commit)
    path = _store(folder, entry, {"kind": "git", "url": url, "commit": commit}, fill)
    return Fetched(os.path.join(path, "tree"), commit)


def _check_tree(tree: str, limits: Limits) -> None:
    count = 0
    total = 0
    for current, folders, files in os.walk(tree):
        count += len(folders) + len(files)
        if count > WALK_ENTRIES:
            raise _Failed(f"the tree holds more than {WALK_ENTRIES:,} files")
        for name in files:
            info = os.lstat(os.path.join(current, name))
            if not stat.S_ISREG(info.st_mode):
                raise _Failed(f"the tree holds {name}, which is not a regular file")
            total += info.st_size
    if total > 16 * MAX_CHART_SIZE:
        raise _Failed(f"the tree is larger than {16 * MAX_CHART_SIZE} bytes")
