"""``isLessThan``, ``isGreaterThan`` and ``compareTo``, which quantities and semvers share.

Upstream declares them twice, once per type (``quantity.go``'s ``quantity_is_less_than`` and
``semverlib.go``'s ``semver_is_less_than``, both in ``staging/src/k8s.io/apiserver/pkg/cel/library/``).
cel-expr-python keeps one implementation per name and argument kinds, and both kinds are
:data:`~kaffinity.policy.cel.values.OPAQUE` maps here, so one implementation serves both: it
compares by the receiver's kind. They arrive with the quantity library (1.28); semver values
exist from 1.33 only, when ``semver()`` is declared.
"""

from __future__ import annotations

from collections.abc import Callable

from cel_expr_python import cel

from kaffinity.policy.cel import quantity, semver, values
from kaffinity.policy.cel.library import functions, overload
from kaffinity.policy.cel.values import OPAQUE, QUANTITY, SEMVER

T = cel.Type


def _compare(left: object, right: object, function: str) -> int:
    """-1, 0 or 1, by the receiver's kind (quantity or semver)."""
    kind = values.kind_of(left)
    if kind == QUANTITY:
        return quantity.compare(left, right, function)
    if kind == SEMVER:
        return semver.compare(left, right, function)
    raise values.NoSuchOverload(function, left)


def _test(function: str, expected: int) -> Callable[[object, object], bool]:
    """``isLessThan`` (``expected`` -1) or ``isGreaterThan`` (1)."""

    def test(left: object, right: object) -> bool:
        return _compare(left, right, function) == expected

    return test


def _compare_to(left: object, right: object) -> int:
    """``<Quantity|Semver>.compareTo(other)``."""
    return _compare(left, right, "compareTo")


def declarations() -> list[cel.FunctionDecl]:
    """The three comparisons, on quantities and semvers."""
    return functions(
        {
            "isGreaterThan": [
                overload(
                    "opaque_is_greater_than", T.BOOL, [OPAQUE, OPAQUE], _test("isGreaterThan", 1), member=True
                )
            ],
            "isLessThan": [
                overload(
                    "opaque_is_less_than", T.BOOL, [OPAQUE, OPAQUE], _test("isLessThan", -1), member=True
                )
            ],
            "compareTo": [overload("opaque_compare_to", T.INT, [OPAQUE, OPAQUE], _compare_to, member=True)],
        }
    )
