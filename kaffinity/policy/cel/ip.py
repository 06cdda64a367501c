"""Kubernetes' IP and CIDR libraries (Kubernetes 1.30): ``cidr('10.0.0.0/8').containsIP(ip('10.1.2.3'))``.

Upstream: ``staging/src/k8s.io/apiserver/pkg/cel/library/ip.go`` and ``cidr.go`` (functions,
``parseIPAddr``, ``parseCIDR``), ``staging/src/k8s.io/apiserver/pkg/cel/ip.go`` and ``cidr.go``
(values compared by address / prefix), over Go's ``net/netip``. Python's :mod:`ipaddress`
parses the same text as ``netip.ParseAddr`` for what upstream accepts (no leading zeros in
IPv4 octets; zones and IPv4-mapped IPv6 refused here as upstream refuses them), and its
``compressed`` form is ``Addr.String()`` (RFC 5952). The predicates restate ``netip``'s:
``isGlobalUnicast`` is true for private addresses, unlike Python's ``is_global``.

Payloads: an IP is its canonical text; a CIDR is ``<canonical address>/<bits>``, the address
kept unmasked (``cidr('192.168.0.1/24') != cidr('192.168.0.0/24')``, as upstream).
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

from cel_expr_python import cel

from kaffinity.policy.cel import values
from kaffinity.policy.cel.library import functions, overload
from kaffinity.policy.cel.values import CIDR, IP, OPAQUE

T = cel.Type
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_V4_LINK_LOCAL_MULTICAST = ipaddress.ip_network("224.0.0.0/24")
_V4_LINK_LOCAL = ipaddress.ip_network("169.254.0.0/16")
_V6_LINK_LOCAL = ipaddress.ip_network("fe80::/10")
_BROADCAST = ipaddress.IPv4Address("255.255.255.255")


@lru_cache(maxsize=4096)
def parse_address(text: str) -> Address:
    """ip.go's ``parseIPAddr``: an IPv4 or IPv6 address, without a zone, not IPv4-mapped."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError as error:
        raise ValueError(f"IP Address {text!r} parse error during conversion from string: {error}") from None
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id is not None:
            raise ValueError(f"IP address {text!r} with zone value is not allowed")
        if address.ipv4_mapped is not None:
            raise ValueError(f"IPv4-mapped IPv6 address {text!r} is not allowed")
    return address


@lru_cache(maxsize=4096)
def parse_prefix(text: str) -> tuple[Address, int]:
    """cidr.go's ``parseCIDR`` over ``netip.ParsePrefix``: (address, bits), host bits kept."""
    head, slash, bits = text.rpartition("/")
    if not slash:
        raise ValueError(f"netip.ParsePrefix(\"{text}\"): no '/'")
    if "%" in head:
        raise ValueError(f'netip.ParsePrefix("{text}"): IPv6 zones cannot be present in a prefix')
    try:
        address = ipaddress.ip_address(head)
    except ValueError as error:
        raise ValueError(f'netip.ParsePrefix("{text}"): {error}') from None
    if not bits.isdigit() or not bits.isascii() or (len(bits) > 1 and bits[0] == "0"):
        raise ValueError(f'netip.ParsePrefix("{text}"): bad bits after slash: "{bits}"')
    if int(bits) > address.max_prefixlen:
        raise ValueError(f'netip.ParsePrefix("{text}"): prefix length out of range')
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        raise ValueError(f"IPv4-mapped IPv6 address {text!r} is not allowed")
    return address, int(bits)


def _address(value: object, function: str) -> Address:
    """The address an IP value holds."""
    return parse_address(values.text(value, IP, function))


def _prefix(value: object, function: str) -> tuple[Address, int]:
    """The (address, bits) a CIDR value holds."""
    return parse_prefix(values.text(value, CIDR, function))


def _network(address: Address, bits: int) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    """The network of ``address/bits`` (host bits dropped)."""
    return ipaddress.ip_network((address, bits), strict=False)


def _ip(text: str) -> dict[str, object]:
    """``ip(text)``."""
    return values.make(IP, parse_address(text).compressed)


def _cidr(text: str) -> dict[str, object]:
    """``cidr(text)``."""
    try:
        address, bits = parse_prefix(text)
    except ValueError as error:
        raise ValueError(f"network address parse error during conversion from string: {error}") from None
    return values.make(CIDR, f"{address.compressed}/{bits}")


def _succeeds(parse: object, text: str) -> bool:
    """``isIP``/``isCIDR``: whether parsing succeeds."""
    try:
        parse(text)  # type: ignore[operator]
    except ValueError:
        return False
    return True


def _is_canonical(text: str) -> bool:
    """``ip.isCanonical(text)``: the text is ``Addr.String()``'s."""
    return parse_address(text).compressed == text


def _family(value: object) -> int:
    """``<IP>.family()``: 4 or 6."""
    return _address(value, "family").version


def _is_link_local_multicast(value: object) -> bool:
    """``netip``'s: 224.0.0.0/24, or ff02::/16 (any flags)."""
    address = _address(value, "isLinkLocalMulticast")
    if isinstance(address, ipaddress.IPv4Address):
        return address in _V4_LINK_LOCAL_MULTICAST
    return address.packed[0] == 0xFF and address.packed[1] & 0x0F == 0x02


def _is_link_local_unicast(value: object) -> bool:
    """``netip``'s: 169.254.0.0/16 or fe80::/10."""
    address = _address(value, "isLinkLocalUnicast")
    return address in (_V4_LINK_LOCAL if address.version == 4 else _V6_LINK_LOCAL)


def _is_global_unicast(value: object) -> bool:
    """``netip.Addr.IsGlobalUnicast``: not unspecified, loopback, multicast, link-local, broadcast."""
    address = _address(value, "isGlobalUnicast")
    if address == _BROADCAST:
        return False
    link_local = address in (_V4_LINK_LOCAL if address.version == 4 else _V6_LINK_LOCAL)
    return not (address.is_unspecified or address.is_loopback or address.is_multicast or link_local)


def _to_string(value: object) -> str:
    """``string(ip)``/``string(cidr)``: the canonical text."""
    kind = values.kind_of(value)
    if kind in (IP, CIDR):
        return values.text(value, kind, "string")
    raise values.NoSuchOverload("string", value)


def _contains_ip(value: object, other: object) -> bool:
    """``<CIDR>.containsIP(ip or text)``: same family and inside."""
    address, bits = _prefix(value, "containsIP")
    candidate = parse_address(other) if isinstance(other, str) else _address(other, "containsIP")
    return candidate.version == address.version and candidate in _network(address, bits)


def _contains_cidr(value: object, other: object) -> bool:
    """``<CIDR>.containsCIDR(cidr or text)``: a sub-network of the same family."""
    address, bits = _prefix(value, "containsCIDR")
    if isinstance(other, str):
        other = _cidr(other)
    inner, inner_bits = _prefix(other, "containsCIDR")
    if inner.version != address.version or inner_bits < bits:
        return False
    return _network(inner, bits) == _network(address, bits)


def _cidr_ip(value: object) -> dict[str, object]:
    """``<CIDR>.ip()``: its address, host bits kept."""
    return values.make(IP, _prefix(value, "ip")[0].compressed)


def _masked(value: object) -> dict[str, object]:
    """``<CIDR>.masked()``: host bits cleared."""
    address, bits = _prefix(value, "masked")
    return values.make(CIDR, f"{_network(address, bits).network_address.compressed}/{bits}")


def _prefix_length(value: object) -> int:
    """``<CIDR>.prefixLength()``."""
    return _prefix(value, "prefixLength")[1]


def _predicate(name: str, attribute: str) -> cel.Overload:
    """A member predicate read from Python's address attribute of the same meaning."""

    def test(value: object) -> bool:
        return bool(getattr(_address(value, name), attribute))

    return overload(f"ip_{attribute}", T.BOOL, [OPAQUE], test, member=True)


def declarations() -> list[cel.FunctionDecl]:
    """ip.go's and cidr.go's functions, one library as both arrive in 1.30 (``ip`` is both
    ip.go's ``ip(string)`` and cidr.go's ``<CIDR>.ip()``; ``string`` serves both kinds)."""
    table = _ip_functions()
    for name, overloads in _cidr_functions().items():
        table[name] = table.get(name, []) + overloads
    return functions(table)


def _ip_functions() -> dict[str, list[cel.Overload]]:
    """ip.go's functions, by name."""
    return {
        "ip": [overload("string_to_ip", OPAQUE, [T.STRING], _ip)],
        "isIP": [overload("is_ip", T.BOOL, [T.STRING], lambda text: _succeeds(parse_address, text))],
        "ip.isCanonical": [overload("ip_is_canonical", T.BOOL, [T.STRING], _is_canonical)],
        "family": [overload("ip_family", T.INT, [OPAQUE], _family, member=True)],
        "isUnspecified": [_predicate("isUnspecified", "is_unspecified")],
        "isLoopback": [_predicate("isLoopback", "is_loopback")],
        "isLinkLocalMulticast": [
            overload("ip_is_link_local_multicast", T.BOOL, [OPAQUE], _is_link_local_multicast, member=True)
        ],
        "isLinkLocalUnicast": [
            overload("ip_is_link_local_unicast", T.BOOL, [OPAQUE], _is_link_local_unicast, member=True)
        ],
        "isGlobalUnicast": [
            overload("ip_is_global_unicast", T.BOOL, [OPAQUE], _is_global_unicast, member=True)
        ],
        # string(ip) and string(cidr) share one implementation (one per argument kind).
        "string": [overload("opaque_to_string", T.STRING, [OPAQUE], _to_string)],
    }


def _cidr_functions() -> dict[str, list[cel.Overload]]:
    """cidr.go's functions, by name."""
    return {
        "cidr": [overload("string_to_cidr", OPAQUE, [T.STRING], _cidr)],
        "isCIDR": [overload("is_cidr", T.BOOL, [T.STRING], lambda text: _succeeds(_cidr, text))],
        "containsIP": [
            overload("cidr_contains_ip_string", T.BOOL, [OPAQUE, T.STRING], _contains_ip, member=True),
            overload("cidr_contains_ip_ip", T.BOOL, [OPAQUE, OPAQUE], _contains_ip, member=True),
        ],
        "containsCIDR": [
            overload("cidr_contains_cidr_string", T.BOOL, [OPAQUE, T.STRING], _contains_cidr, member=True),
            overload("cidr_contains_cidr", T.BOOL, [OPAQUE, OPAQUE], _contains_cidr, member=True),
        ],
        "ip": [overload("cidr_ip", OPAQUE, [OPAQUE], _cidr_ip, member=True)],
        "masked": [overload("cidr_masked", OPAQUE, [OPAQUE], _masked, member=True)],
        "prefixLength": [overload("cidr_prefix_length", T.INT, [OPAQUE], _prefix_length, member=True)],
    }
