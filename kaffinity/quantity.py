"""Kubernetes resource quantities (``500m``, ``1Gi``, ``2e3``), as ``resource.Quantity`` parses them.

Source: k8s.io/apimachinery ``pkg/api/resource/quantity.go`` — a signed decimal number followed by
a binary-SI suffix (Ki..Ei), a decimal-SI suffix (n, u, m, "", k, M, G, T, P, E) or a decimal
exponent (``e3``/``E3``).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([a-zA-Z]*|[eE][+-]?[0-9]+)\Z")
_SUFFIXES = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}


def parse_quantity(value: object) -> Decimal | None:
    """The quantity's value in base units, or None when it is not a valid quantity."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    match = _QUANTITY.match(value.strip())
    if match is None:
        return None
    number, suffix = match.groups()
    try:
        if suffix[:1] in ("e", "E") and suffix[1:]:
            return Decimal(number) * Decimal(10) ** int(suffix[1:])
        factor = _SUFFIXES.get(suffix)
        return None if factor is None else Decimal(number) * factor
    except InvalidOperation:
        return None
