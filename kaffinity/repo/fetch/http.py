"""HTTP as the fetches use it: a bounded number of redirects, an answer read up to a size limit,
and every failure one :class:`~kaffinity.repo.fetch.cache.FetchFailed`."""

from __future__ import annotations

import contextlib
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kaffinity.repo.fetch.cache import FetchFailed

#: Redirects followed per request.
MAX_REDIRECTS = 5


# --- HTTP ------------------------------------------------------------------------------------


class _Redirects(urllib.request.HTTPRedirectHandler):
    max_redirections = MAX_REDIRECTS

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        if urllib.parse.urlsplit(newurl).scheme not in ("http", "https"):
            raise FetchFailed(f"{req.full_url} redirects to {newurl}, which is not http(s)")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


@dataclass(slots=True)
class Response:
    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes


class Http:
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
    ) -> Response:
        request = urllib.request.Request(url, headers=dict(headers or {}), method=method)
        request.add_header("User-Agent", "kaffinity")
        if auth:
            request.add_unredirected_header("Authorization", auth)  # never sent on after a redirect
        try:
            with self.opener.open(request, timeout=self.timeout) as answer:
                body = _read_bounded(answer, limit, url)
                return Response(answer.geturl(), answer.status, dict(answer.headers.items()), body)
        except urllib.error.HTTPError as error:
            body = b""
            with contextlib.suppress(OSError):
                body = error.read(65536)
            return Response(url, error.code, dict(error.headers.items()) if error.headers else {}, body)
        except FetchFailed:
            raise
        except (urllib.error.URLError, OSError, ValueError) as error:
            reason = getattr(error, "reason", error)
            raise FetchFailed(f"cannot reach {url}: {reason}") from None


def _read_bounded(answer: Any, limit: int, url: str) -> bytes:
    declared = answer.headers.get("Content-Length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise FetchFailed(f"{url} is larger than the limit of {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = answer.read(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise FetchFailed(f"{url} is larger than the limit of {limit} bytes")
        chunks.append(chunk)
