"""A chart fetched as ``helm pull`` fetches it: from an HTTP repository through its ``index.yaml``
(the newest version matching a constraint, as Helm reads it), or from an OCI registry
(:mod:`kaffinity.repo.fetch.oci`); an exact version already in the cache is not fetched again."""

from __future__ import annotations

import hashlib
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from kaffinity.load.parse import DEFAULT_LIMITS, Limits
from kaffinity.repo.fetch.cache import (
    NETWORK_OFF,
    Fetched,
    FetchFailed,
    NotFetched,
    cache_folder,
    cached_chart,
    keep_chart,
    with_file_size,
)
from kaffinity.repo.fetch.http import Http
from kaffinity.repo.fetch.oci import fetch_oci
from kaffinity.repo.sandbox import Sandbox

#: Bytes of an ``index.yaml`` (large public repositories publish indexes of tens of MB).
MAX_INDEX_SIZE = 64 * 1024 * 1024


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
            hit = cached_chart(folder, repository, name, version.strip())
            if hit is not None:
                return hit
        if not sandbox.network or folder is None:
            return NotFetched(f"{what} is remote and {NETWORK_OFF}", offline=True)
        http = Http(sandbox.timeout)
        if scheme == "oci":
            return fetch_oci(http, folder, repository, name, version, limits, plain_http)
        return _fetch_http(http, folder, repository, name, version, limits)
    except FetchFailed as failed:
        return NotFetched(f"{what}: {failed}")
    except ConstraintError as error:
        return NotFetched(f"{what}: {error}")


def _fetch_http(
    http: Http, folder: str, repository: str, name: str, version: str | None, limits: Limits
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
            raise FetchFailed(f"{index_url} answered {answer.status}")
        entries = _index_entries(answer.body, index_url, limits)
        # One run asks an index once: an umbrella chart names several charts of one repository,
        # and a public index of 10 MB takes seconds to read.
        if len(_INDEXES) >= 8:
            _INDEXES.pop(next(iter(_INDEXES)))
        _INDEXES[index_url] = entries
    versions = entries.get(name)
    if not isinstance(versions, list) or not versions:
        raise FetchFailed(f"no chart {name} in {index_url}")
    by_version = {str(v.get("version")): v for v in versions if isinstance(v, dict) and v.get("version")}
    chosen = newest(by_version, version)
    if chosen is None:
        raise FetchFailed(f"no version of {name} in {index_url} matches {version or '*'}")
    hit = cached_chart(folder, repository, name, chosen)
    if hit is not None:
        return hit
    item = by_version[chosen]
    urls = item.get("urls")
    if not isinstance(urls, list) or not urls or not isinstance(urls[0], str):
        raise FetchFailed(f"{index_url}: {name} {chosen} has no urls")
    url = urllib.parse.urljoin(base, urls[0])
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise FetchFailed(f"{index_url}: {name} {chosen} is at {url}, which is not http(s)")
    archive = http.get(url, limits.file_size)
    if archive.status != 200:
        raise FetchFailed(f"{url} answered {archive.status}")
    digest = item.get("digest")
    actual = hashlib.sha256(archive.body).hexdigest()
    if isinstance(digest, str) and digest and digest.removeprefix("sha256:").lower() != actual:
        raise FetchFailed(f"{url}: its sha256 {actual} is not the digest {digest} the index gives")
    return keep_chart(folder, repository, name, chosen, archive.body, limits, {"url": url, "sha256": actual})


#: The indexes read by this process, by URL (a run's; a new run asks again).
_INDEXES: dict[str, dict[str, Any]] = {}


def _index_entries(body: bytes, url: str, limits: Limits) -> dict[str, Any]:
    from kaffinity.load.parse import LoadError
    from kaffinity.load.parse.reader import _documents, _parse_errors

    try:
        text = body.decode("utf-8")
        documents = [data for data, _ in _documents(text, with_file_size(limits, len(body)))]
    except UnicodeDecodeError:
        raise FetchFailed(f"{url} is not UTF-8 text") from None
    except LoadError as error:
        raise FetchFailed(f"{url}: {error.message}") from None
    except _parse_errors() as error:
        raise FetchFailed(f"{url} is not YAML: {getattr(error, 'problem', None) or error}") from None
    index = documents[0] if documents else None
    entries = index.get("entries") if isinstance(index, dict) else None
    if not isinstance(entries, dict):
        raise FetchFailed(f"{url} is not a Helm repository index (no entries)")
    return dict(entries)
