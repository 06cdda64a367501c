"""A chart fetched from an OCI registry as Helm's pkg/registry pulls it: tags listed (paged), the
manifest read, the chart layer (Helm's media types) downloaded; anonymous bearer tokens asked for
when the registry wants them; loopback registries over plain HTTP."""

from __future__ import annotations

import hashlib
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping

from kaffinity.load.parse import Limits
from kaffinity.repo.fetch.cache import Fetched, FetchFailed, NotFetched, cached_chart, keep_chart
from kaffinity.repo.fetch.http import Http, Response

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


# --- OCI -------------------------------------------------------------------------------------


def fetch_oci(
    http: Http,
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
        raise FetchFailed(f"{repository}: not a registry address")
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
            raise FetchFailed(f"no tag of {host}/{path} matches {version or '*'}")
        chosen = chosen_tag
        hit = cached_chart(folder, repository, name, chosen)
        if hit is not None:
            return hit
    manifest_body = registry.get(f"manifests/{chosen.replace('+', '_')}", 4 * 1024 * 1024, _MANIFEST_TYPES)
    try:
        manifest = json.loads(manifest_body)
        layers = manifest["layers"]
        config_type = manifest.get("config", {}).get("mediaType")
    except (ValueError, KeyError, TypeError, AttributeError):
        raise FetchFailed(f"{host}/{path}:{chosen}: not an OCI manifest") from None
    if config_type != HELM_CONFIG_MEDIA_TYPE:
        raise FetchFailed(f"{host}/{path}:{chosen} is not a Helm chart (config media type {config_type})")
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
        raise FetchFailed(f"{host}/{path}:{chosen}: no chart layer with a sha256 digest")
    body = registry.get(f"blobs/{digest}", limits.file_size, None)
    actual = "sha256:" + hashlib.sha256(body).hexdigest()
    if actual != digest:
        raise FetchFailed(f"{host}/{path}:{chosen}: the chart layer's sha256 is {actual}, not {digest}")
    return keep_chart(folder, repository, name, chosen, body, limits, {"digest": digest})


class _Registry:
    """The distribution API v2 of one repository, with the anonymous token flow."""

    def __init__(self, http: Http, base: str, path: str) -> None:
        self.http = http
        self.base = base
        self.path = path
        self.token: str | None = None

    def get(self, suffix: str, limit: int, accept: str | None) -> bytes:
        url = f"{self.base}/v2/{self.path}/{suffix}"
        return self._get(url, limit, accept).body

    def _get(self, url: str, limit: int, accept: str | None) -> Response:
        headers = {"Accept": accept} if accept else {}
        answer = self.http.get(url, limit, headers, f"Bearer {self.token}" if self.token else None)
        if answer.status == 401 and self.token is None:
            self.token = self._anonymous_token(answer.headers)
            answer = self.http.get(url, limit, headers, f"Bearer {self.token}")
        if answer.status != 200:
            raise FetchFailed(
                f"{url} answered {answer.status}"
                + (" (a private registry?)" if answer.status in (401, 403) else "")
            )
        return answer

    def _anonymous_token(self, headers: Mapping[str, str]) -> str:
        challenge = next((value for key, value in headers.items() if key.lower() == "www-authenticate"), "")
        if not challenge.lower().startswith("bearer "):
            raise FetchFailed(f"{self.base} asks for credentials (a private registry?)")
        fields = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
        realm = fields.get("realm", "")
        if urllib.parse.urlsplit(realm).scheme not in ("http", "https"):
            raise FetchFailed(f"{self.base}: a token realm that is not http(s): {realm!r}")
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
            raise FetchFailed(f"{self.base} gave no anonymous token (a private registry?)")
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
                raise FetchFailed(f"{url}: not a tag list") from None
            tags.extend(tag for tag in found if isinstance(tag, str))
            link = answer.headers.get("Link") or answer.headers.get("link")
            match = re.match(r"\s*<([^>]+)>", link or "")
            url = urllib.parse.urljoin(self.base, match.group(1)) if match else None
        return tags
