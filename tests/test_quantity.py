"""kaffinity.k8s.quantity against upstream's resource.Quantity parsing tests (data/upstream_quantity.yaml)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from kaffinity.k8s.quantity import (
    FORMAT_ERROR,
    NUMERIC_ERROR,
    SCHEDULER_CEILING,
    SUFFIX_ERROR,
    parse_quantity,
    parse_quantity_string,
    quantity_error,
    scheduler_count,
)

#: Strings shaped like quantities, suffixes and exponents included.
QUANTITY_LIKE = r"[+-]?[0-9]{0,25}(\.[0-9]{0,25})?([eEinumkKMGTP]{0,3}[+-]?[0-9]{0,12})?"
DATA = Path(__file__).resolve().parent / "data" / "upstream_quantity.yaml"
TABLES: dict[str, Any] = YAML(typ="safe", pure=True).load(DATA.read_text(encoding="utf-8"))


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [repr(case["input"]) for case in cases]


@pytest.mark.parametrize("case", TABLES["parse"], ids=_ids(TABLES["parse"]))
def test_upstream_valid(case: dict[str, Any]) -> None:
    value = Decimal(case["value"])
    assert parse_quantity_string(case["input"]) == value
    # TestQuantityParse also tries every input negated, and with an explicit +.
    assert parse_quantity_string("-" + case["input"]) == -value
    assert parse_quantity_string("+" + case["input"]) == value


@pytest.mark.parametrize("text", TABLES["invalid"])
def test_upstream_invalid(text: str) -> None:
    assert parse_quantity_string(text) is None


@pytest.mark.parametrize("case", TABLES["boundaries"], ids=_ids(TABLES["boundaries"]))
def test_upstream_boundaries(case: dict[str, Any]) -> None:
    assert parse_quantity_string(case["input"]) == Decimal(case["value"])


@pytest.mark.parametrize("case", TABLES["json"], ids=_ids(TABLES["json"]))
def test_upstream_json_whitespace(case: dict[str, Any]) -> None:
    """UnmarshalJSON trims white space: a manifest's ``" 1"`` is 1."""
    assert parse_quantity(json.loads(case["input"])) == Decimal(case["value"])


@pytest.mark.parametrize("case", TABLES["rules"], ids=_ids(TABLES["rules"]))
def test_rules_without_upstream_test(case: dict[str, Any]) -> None:
    expected = None if case["value"] is None else Decimal(case["value"])
    assert parse_quantity_string(case["input"]) == expected


@pytest.mark.parametrize(
    "value", [float("nan"), float("inf"), float("-inf"), True, None, [], {}, b"1"], ids=repr
)
def test_not_quantities(value: object) -> None:
    """A YAML float that is not finite has no JSON text (json.Marshal refuses it)."""
    assert parse_quantity(value) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, 1),
        (-2, -2),
        (1.5, Decimal("1.5")),
        (1e21, Decimal("1e21")),
        (1e-10, Decimal("1e-9")),
        (10**40, 10**40),
    ],
    ids=repr,
)
def test_yaml_numbers(value: object, expected: object) -> None:
    assert parse_quantity(value) == expected


def test_yaml_loaded_values() -> None:
    """What the YAML loader makes of the issue's inputs."""
    loaded = YAML(typ="safe").load("[.nan, .inf, -.inf, 1.0e+400, '1e1000000', 1Ei, 1EB]")
    assert [parse_quantity(value) for value in loaded] == [
        None,
        None,
        None,
        None,
        Decimal("1e1000000"),
        Decimal(2**60),
        None,
    ]


def test_go_white_space_only() -> None:
    """strings.TrimSpace trims what Go's unicode.IsSpace calls space; U+001C is not."""
    assert parse_quantity("\u00a01Ki\u3000") == 1024
    assert parse_quantity("\x1c1") is None


def test_scheduler_count() -> None:
    assert scheduler_count(Decimal("0.1"), milli=True) == 100
    assert scheduler_count(Decimal("1e-9"), milli=True) == 1
    assert scheduler_count(Decimal("1e-9")) == 1
    assert scheduler_count(Decimal(2**60)) == 2**60
    assert scheduler_count(Decimal("1e1000000")) == SCHEDULER_CEILING
    assert scheduler_count(Decimal("1e2147483647"), milli=True) == SCHEDULER_CEILING
    assert scheduler_count(Decimal("-1e1000000")) == -SCHEDULER_CEILING


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("1EB", FORMAT_ERROR),
        ("", FORMAT_ERROR),
        (True, FORMAT_ERROR),
        ("1Ke3", SUFFIX_ERROR),
        ("Ei", NUMERIC_ERROR),
        (float("nan"), "json: unsupported value: NaN"),
        (float("inf"), "json: unsupported value: +Inf"),
        (float("-inf"), "json: unsupported value: -Inf"),
        ("1Ei", None),
        (None, None),
        (" 1 ", None),
    ],
    ids=repr,
)
def test_quantity_error(value: object, error: str | None) -> None:
    """ParseQuantity's error (quantity.go ErrFormatWrong, ErrSuffix, ErrNumeric)."""
    assert quantity_error(value) == error


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(),
        st.from_regex(QUANTITY_LIKE, fullmatch=True),
        st.floats(),
        st.integers(),
    )
)
def test_never_raises(value: object) -> None:
    """Any YAML scalar: a finite Decimal or None, never an exception."""
    parsed = parse_quantity(value)
    assert parsed is None or parsed.is_finite()
    if parsed is not None:
        scheduler_count(parsed)
        scheduler_count(parsed, milli=True)
