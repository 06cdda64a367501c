"""Kubernetes' URL library (every version): ``url('https://example.com:80/').getHost()``, ``isURL``.

Upstream: ``staging/src/k8s.io/apiserver/pkg/cel/library/urls.go``: ``url()`` and ``isURL``
accept what Go's ``url.ParseRequestURI`` accepts (an absolute URI or an absolute path), and the
accessors read the result of ``url.Parse`` (which, unlike ParseRequestURI, splits off a
``#fragment``). Those two Go parsers (``net/url/url.go``: ``parse``, ``getScheme``,
``parseAuthority``, ``parseHost``, ``unescape``, ``shouldEscape``, ``EscapedPath``,
``ParseQuery``) are restated here for what the library reads: scheme, host, port, path, query.
Python's :mod:`urllib.parse` is more lenient (it accepts ``https://a:b:c/``) so it is not used.

The payload is the URL's text; it is parsed again (cached) by each accessor.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from cel_expr_python import cel

from kaffinity.policy.cel import values
from kaffinity.policy.cel.library import functions, overload
from kaffinity.policy.cel.values import OPAQUE, URL

T = cel.Type
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_HEX = frozenset("0123456789abcdefABCDEF")
#: Characters a host may hold unescaped besides letters, digits and ``-_.~`` (``shouldEscape``).
_HOST_EXTRA = frozenset("!$&'()*+,;=:[]<>\"-_.~")
#: Characters a path may hold unescaped (``shouldEscape`` in path mode).
_PATH_SAFE = _ALNUM | frozenset("-_.~$&+,/:;=@")
#: What ``validEncoded`` lets a raw path keep besides :data:`_PATH_SAFE` and ``%``.
_PATH_ENCODED_EXTRA = frozenset("!$&'()*+,;=:@[]")
_USERINFO = _ALNUM | frozenset("-._:~!$&'()*+,;=%@")


@dataclass(frozen=True)
class Parts:
    """What urls.go reads of a parsed URL."""

    scheme: str
    host: str
    path: str
    raw_path: str
    raw_query: str


def _unescape(text: str, *, host: bool = False, query: bool = False) -> str:
    """``unescape``: %XX decoded (``+`` is a space in a query); bad escapes are errors, and a
    host may hold only the characters ``shouldEscape`` leaves alone."""
    out = bytearray()
    index = 0
    while index < len(text):
        char = text[index]
        if char == "%":
            escape = text[index : index + 3]
            if len(escape) < 3 or not set(escape[1:]) <= _HEX:
                raise ValueError(f"invalid URL escape {escape!r}")
            out.append(int(escape[1:], 16))
            index += 3
            continue
        if host and char.isascii() and char not in _ALNUM and char not in _HOST_EXTRA:
            raise ValueError(f"invalid character {char!r} in host name")
        out += b" " if query and char == "+" else char.encode()
        index += 1
    return out.decode("utf-8", errors="replace")


def _escape_path(path: str) -> str:
    """``escape(path, encodePath)``: every byte but the path-safe ones as %XX."""
    return "".join(chr(byte) if chr(byte) in _PATH_SAFE else f"%{byte:02X}" for byte in path.encode())


def _valid_encoded(raw: str) -> bool:
    """``validEncoded(raw, encodePath)``."""
    return all(char in _PATH_SAFE or char in _PATH_ENCODED_EXTRA or char == "%" for char in raw)


def _scheme(raw: str) -> tuple[str, str]:
    """``getScheme``: (scheme, rest); no scheme when a character other than a scheme's comes first."""
    for index, char in enumerate(raw):
        if char.isascii() and char.isalpha():
            continue
        if char.isascii() and (char.isdigit() or char in "+-."):
            if index == 0:
                return "", raw
            continue
        if char == ":":
            if index == 0:
                raise ValueError("missing protocol scheme")
            return raw[:index].lower(), raw[index + 1 :]
        return "", raw
    return "", raw


def _valid_port(port: str) -> bool:
    """``validOptionalPort``: empty, or a colon and digits."""
    return port == "" or (port[0] == ":" and all(char in "0123456789" for char in port[1:]))


def _parse_host(host: str) -> str:
    """``parseHost``: the port must be digits; the rest unescaped as a host."""
    if host.startswith("["):
        close = host.rfind("]")
        if close < 0:
            raise ValueError("missing ']' in host")
        if not _valid_port(host[close + 1 :]):
            raise ValueError(f"invalid port {host[close + 1 :]!r} after host")
    else:
        colon = host.rfind(":")
        if colon >= 0 and not _valid_port(host[colon:]):
            raise ValueError(f"invalid port {host[colon:]!r} after host")
    return _unescape(host, host=True)


def _parse_authority(authority: str) -> str:
    """``parseAuthority``: the host (user information checked and left out)."""
    userinfo, at, host = authority.rpartition("@")
    if at:
        if not set(userinfo) <= _USERINFO:
            raise ValueError("net/url: invalid userinfo")
        _unescape(userinfo)
    return _parse_host(host if at else authority)


@lru_cache(maxsize=2048)
def parse(raw: str, *, request: bool) -> Parts:
    """Go's ``parse(raw, viaRequest=request)``; ``url.Parse`` also cuts a ``#fragment`` first."""
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in raw):
        raise ValueError("net/url: invalid control character in URL")
    if not request:
        raw = raw.partition("#")[0]
    elif raw == "":
        raise ValueError("empty url")
    if raw == "*":
        return Parts("", "", "*", "*", "")
    scheme, rest = _scheme(raw)
    if rest.endswith("?") and rest.count("?") == 1:
        rest, query = rest[:-1], ""
    else:
        rest, _, query = rest.partition("?")
    if not rest.startswith("/"):
        if scheme:
            return Parts(scheme, "", "", "", query)  # opaque, e.g. mailto:someone
        if request:
            raise ValueError("invalid URI for request")
    host = ""
    if (scheme or (not request and not rest.startswith("///"))) and rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        host, rest = _parse_authority(authority), slash + path
    return Parts(scheme, host, _unescape(rest), rest, query)


def _parse_request(raw: str) -> Parts:
    """``url.ParseRequestURI`` with urls.go's error wording."""
    try:
        return parse(raw, request=True)
    except ValueError as error:
        raise ValueError(f'URL parse error during conversion from string: parse "{raw}": {error}') from None


def _url(raw: str) -> dict[str, object]:
    """``url(text)``."""
    _parse_request(raw)
    return values.make(URL, raw)


def _is_url(raw: str) -> bool:
    """``isURL(text)``."""
    try:
        parse(raw, request=True)
    except ValueError:
        return False
    return True


def _parts(value: object, function: str) -> Parts:
    """What ``url.Parse`` reads of a URL value."""
    return parse(values.text(value, URL, function), request=False)


def _split_host_port(host: str) -> tuple[str, str]:
    """``splitHostPort``: (hostname without brackets, port)."""
    port = ""
    colon = host.rfind(":")
    if colon >= 0 and _valid_port(host[colon:]):
        host, port = host[:colon], host[colon + 1 :]
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, port


def _escaped_path(value: object) -> str:
    """``URL.EscapedPath``: the raw path when it is a valid encoding, else the path escaped."""
    parts = _parts(value, "getEscapedPath")
    if parts.raw_path and _valid_encoded(parts.raw_path):
        return parts.raw_path
    return "*" if parts.path == "*" else _escape_path(parts.path)


def query(raw_query: str) -> dict[str, list[str]]:
    """``url.ParseQuery``, its errors skipped as ``URL.Query`` skips them."""
    found: dict[str, list[str]] = {}
    for pair in raw_query.split("&"):
        if not pair or ";" in pair:
            continue
        key, _, value = pair.partition("=")
        try:
            key, value = _unescape(key, query=True), _unescape(value, query=True)
        except ValueError:
            continue
        found.setdefault(key, []).append(value)
    return found


def declarations() -> list[cel.FunctionDecl]:
    """urls.go's functions."""

    def accessor(name: str, read: object) -> list[cel.Overload]:
        """A string accessor's overload."""
        overload_id = "url_" + "".join("_" + c.lower() if c.isupper() else c for c in name).removeprefix("_")
        return [overload(overload_id, T.STRING, [OPAQUE], read, member=True)]  # type: ignore[arg-type]

    return functions(
        {
            "url": [overload("string_to_url", OPAQUE, [T.STRING], _url)],
            "isURL": [overload("is_url_string", T.BOOL, [T.STRING], _is_url)],
            "getScheme": accessor("getScheme", lambda value: _parts(value, "getScheme").scheme),
            "getHost": accessor("getHost", lambda value: _parts(value, "getHost").host),
            "getHostname": accessor(
                "getHostname", lambda value: _split_host_port(_parts(value, "getHostname").host)[0]
            ),
            "getPort": accessor("getPort", lambda value: _split_host_port(_parts(value, "getPort").host)[1]),
            "getEscapedPath": accessor("getEscapedPath", _escaped_path),
            "getQuery": [
                overload(
                    "url_get_query",
                    T.Map(T.STRING, T.List(T.STRING)),
                    [OPAQUE],
                    lambda value: query(_parts(value, "getQuery").raw_query),
                    member=True,
                )
            ],
        }
    )
