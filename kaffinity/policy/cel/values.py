"""Kubernetes' opaque CEL values (Quantity, IP, CIDR, URL, Semver, Format) as cel-expr-python can hold them.

Upstream (``staging/src/k8s.io/apiserver/pkg/cel/types.go``, ``quantity.go``, ``ip.go``,
``cidr.go``, ``url.go``, ``semver.go``, ``format.go`` beside it) each is a Go type of its own
that CEL sees as an opaque object. cel-expr-python cannot return an opaque value from a Python
function (``cel.Type.AbstractType`` results fail with "Unimplemented type: 13"), and its
runtime registers one implementation per function name and argument *kinds*, so two member
functions ``isLessThan(map, map)`` cannot coexist even when their declared map types differ.

kaffinity therefore gives every such value the same CEL type, :data:`OPAQUE` (``map(string,
dyn)``), holding one reserved key that names the kind, e.g. ``{"@kaffinity.quantity": "1.5"}``;
a function's Python implementation dispatches on that key. The payload is canonical, so CEL's
``==`` is upstream's ``Equal``: ``quantity('1') == quantity('1000m')`` (``Quantity.Equal``
compares values), ``ip('::0') == ip('::')``, ``semver('1.0.0+a') == semver('1.0.0')``.

Limits, all documented to users by :mod:`kaffinity.policy.cel`:

* ``type(quantity('1'))`` is ``map``, not ``kubernetes.Quantity``; the type names ``net.IP``
  and ``net.CIDR`` are not declared;
* type checking sees one opaque type, so ``quantity('1').isLessThan(semver('1.0.0'))`` compiles
  and fails when evaluated (upstream refuses it when compiling);
* a map literal with a reserved key is taken for such a value (nobody writes one).
"""

from __future__ import annotations

from collections.abc import Mapping

from cel_expr_python import cel

#: The declared CEL type of every opaque value.
OPAQUE = cel.Type.Map(cel.Type.STRING, cel.Type.DYN)

QUANTITY = "@kaffinity.quantity"
IP = "@kaffinity.ip"
CIDR = "@kaffinity.cidr"
URL = "@kaffinity.url"
SEMVER = "@kaffinity.semver"
FORMAT = "@kaffinity.format"

#: How upstream names each kind in its type (``apiservercel.QuantityType`` and so on).
KIND_NAMES = {
    QUANTITY: "kubernetes.Quantity",
    IP: "net.IP",
    CIDR: "net.CIDR",
    URL: "kubernetes.URL",
    SEMVER: "kubernetes.Semver",
    FORMAT: "kubernetes.NamedFormat",
}


class NoSuchOverload(Exception):
    """A function got a value of a kind it has no overload for (cel-go's ``no such overload``)."""

    def __init__(self, function: str, value: object) -> None:
        super().__init__(f"no such overload: {function}({type_name(value)})")


def make(kind: str, payload: object) -> dict[str, object]:
    """The CEL value of ``kind`` holding ``payload``."""
    return {kind: payload}


def kind_of(value: object) -> str | None:
    """The reserved key of an opaque value, or None for any other value."""
    if isinstance(value, Mapping) and len(value) == 1:
        key = next(iter(value))
        if key in KIND_NAMES:
            return str(key)
    return None


def payload(value: object, kind: str, function: str) -> object:
    """The payload of ``value`` when it is of ``kind``; else :class:`NoSuchOverload`."""
    if kind_of(value) != kind:
        raise NoSuchOverload(function, value)
    assert isinstance(value, Mapping)
    return value[kind]


def text(value: object, kind: str, function: str) -> str:
    """The string payload of ``value`` when it is of ``kind``."""
    found = payload(value, kind, function)
    assert isinstance(found, str)
    return found


def type_name(value: object) -> str:
    """The CEL type name of a Python value as upstream would print it in an error."""
    kind = kind_of(value)
    if kind is not None:
        return KIND_NAMES[kind]
    names = {
        bool: "bool",
        int: "int",
        float: "double",
        str: "string",
        bytes: "bytes",
        type(None): "null_type",
    }
    for python_type, name in names.items():
        if isinstance(value, python_type):
            return name
    if isinstance(value, Mapping):
        return "map"
    return "list" if isinstance(value, list) else type(value).__name__
