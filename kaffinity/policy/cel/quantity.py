"""Kubernetes' quantity library (Kubernetes 1.28): ``quantity('1.5G').isGreaterThan(quantity('1G'))``.

Upstream: ``staging/src/k8s.io/apiserver/pkg/cel/library/quantity.go`` (functions) and
``staging/src/k8s.io/apiserver/pkg/cel/quantity.go`` (the value, whose ``Equal`` compares
amounts). Strings are parsed by :func:`kaffinity.k8s.quantity.parse_quantity_text`, a
step-by-step restatement of ``resource.ParseQuantity`` that returns upstream's error text.

One difference: upstream's ``isInteger``/``asInteger`` use ``Quantity.AsInt64``, which also
answers false for a whole amount that its parser keeps with a negative scale (``1000m``, ``1.0``)
or as an ``inf.Dec``; kaffinity keeps only the amount (so that ``==`` compares amounts as
upstream's does) and answers for the amount: a whole number within int64.
"""

from __future__ import annotations

import math
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal
from functools import lru_cache

from cel_expr_python import cel

from kaffinity.k8s.quantity import parse_quantity_text
from kaffinity.policy.cel import values
from kaffinity.policy.cel.library import functions, overload
from kaffinity.policy.cel.values import OPAQUE, QUANTITY

T = cel.Type
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
#: ``inf.Dec`` adds exactly; 200 significant digits cover any sum of two parsed quantities that
#: is not absurd (a 200-digit quantity).
_ARITHMETIC = Context(prec=200, Emax=MAX_EMAX, Emin=MIN_EMIN)


def canonical(amount: Decimal) -> str:
    """The payload of a quantity: its amount, normalised so equal amounts have equal text."""
    return "0" if not amount else str(amount.normalize(_ARITHMETIC))


@lru_cache(maxsize=4096)
def amount(payload: str) -> Decimal:
    """The amount a payload holds."""
    return Decimal(payload)


def _amount_of(value: object, function: str) -> Decimal:
    """The amount a quantity value holds."""
    return amount(values.text(value, QUANTITY, function))


def _quantity(text: str) -> dict[str, object]:
    """``quantity(text)``: ParseQuantity's error text when it fails."""
    parsed = parse_quantity_text(text)
    if isinstance(parsed, str):
        raise ValueError(parsed)
    return values.make(QUANTITY, canonical(parsed))


def _is_quantity(text: str) -> bool:
    """``isQuantity(text)``."""
    return not isinstance(parse_quantity_text(text), str)


def _whole(value: object, function: str) -> int | None:
    """The amount as an int64, or None when it is not whole or does not fit."""
    found = _amount_of(value, function)
    # Compared first: int() of a quantity such as 9e999999999 would build a billion digits.
    if not _INT64_MIN <= found <= _INT64_MAX or found != found.to_integral_value():
        return None
    return int(found)


def _is_integer(value: object) -> bool:
    """``<Quantity>.isInteger()``."""
    return _whole(value, "isInteger") is not None


def _as_integer(value: object) -> int:
    """``<Quantity>.asInteger()``: an error when not :func:`_whole`."""
    number = _whole(value, "asInteger")
    if number is None:
        raise ValueError("cannot convert value to integer")
    return number


def _approximate_float(value: object) -> float:
    """``<Quantity>.asApproximateFloat()``: as ``Quantity.AsApproximateFloat64`` (apimachinery
    ``resource/quantity.go``), the digits as a float times Go's ``math.Pow10(exponent)``, over the
    normalised amount (upstream's digits are those its parser stored: ``300m`` is 300 * 1e-3;
    differences.yaml ``cel/quantity-approximate-float``)."""
    found = _amount_of(value, "asApproximateFloat")
    if not found:
        return 0.0
    sign, digits, exponent = found.normalize(_ARITHMETIC).as_tuple()
    assert isinstance(exponent, int)
    base = float(int("".join(map(str, digits)))) * (-1 if sign else 1)
    if exponent == 0:
        return base
    return base * _pow10(exponent)


def _pow10(exponent: int) -> float:
    """Go's ``math.Pow10``: ``10**n`` from its tables (a negative ``n`` by a division)."""
    if 0 <= exponent <= 308:
        return float(10 ** (exponent - exponent % 32)) * float(10 ** (exponent % 32))
    if -323 <= exponent < 0:
        return float(Decimal(10) ** (exponent + (-exponent) % 32)) / float(10 ** ((-exponent) % 32))
    return math.inf if exponent > 0 else 0.0


def _sign(value: object) -> int:
    """``<Quantity>.sign()``: -1, 0 or 1."""
    found = _amount_of(value, "sign")
    return 0 if not found else (1 if found > 0 else -1)


def _compare(left: object, right: object, function: str) -> int:
    """``Quantity.Cmp``."""
    first, second = _amount_of(left, function), _amount_of(right, function)
    return 0 if first == second else (1 if first > second else -1)


def _operand(other: object, function: str) -> Decimal:
    """The amount of an ``add``/``sub`` operand: an int or a quantity."""
    if isinstance(other, int) and not isinstance(other, bool):
        return Decimal(other)
    return _amount_of(other, function)


def _add(value: object, other: object) -> dict[str, object]:
    """``<Quantity>.add(quantity or int)``, exact."""
    total = _ARITHMETIC.add(_amount_of(value, "add"), _operand(other, "add"))
    return values.make(QUANTITY, canonical(total))


def _sub(value: object, other: object) -> dict[str, object]:
    """``<Quantity>.sub(quantity or int)``, exact."""
    total = _ARITHMETIC.subtract(_amount_of(value, "sub"), _operand(other, "sub"))
    return values.make(QUANTITY, canonical(total))


def declarations() -> list[cel.FunctionDecl]:
    """quantity.go's functions, over :data:`~kaffinity.policy.cel.values.OPAQUE` values.

    The comparisons ``isLessThan``/``isGreaterThan``/``compareTo`` are declared by
    :mod:`kaffinity.policy.cel.comparisons`: cel-expr-python's runtime keeps one implementation
    per name and argument kinds, which the semver library's comparisons share."""
    return functions(
        {
            "quantity": [overload("string_to_quantity", OPAQUE, [T.STRING], _quantity)],
            "isQuantity": [overload("is_quantity_string", T.BOOL, [T.STRING], _is_quantity)],
            # quantity.go declares sign as a global overload only (cel.Overload, not MemberOverload):
            # its documentation's `quantity('1').sign()` does not compile upstream (the oracle agrees).
            "sign": [overload("quantity_sign", T.INT, [OPAQUE], _sign)],
            "asApproximateFloat": [
                overload("quantity_get_float", T.DOUBLE, [OPAQUE], _approximate_float, member=True)
            ],
            "asInteger": [overload("quantity_get_int", T.INT, [OPAQUE], _as_integer, member=True)],
            "isInteger": [overload("quantity_is_integer", T.BOOL, [OPAQUE], _is_integer, member=True)],
            "add": [
                overload("quantity_add", OPAQUE, [OPAQUE, OPAQUE], _add, member=True),
                overload("quantity_add_int", OPAQUE, [OPAQUE, T.INT], _add, member=True),
            ],
            "sub": [
                overload("quantity_sub", OPAQUE, [OPAQUE, OPAQUE], _sub, member=True),
                overload("quantity_sub_int", OPAQUE, [OPAQUE, T.INT], _sub, member=True),
            ],
        }
    )


def compare(left: object, right: object, function: str) -> int:
    """``Quantity.Cmp``: -1, 0 or 1."""
    return _compare(left, right, function)
