"""Kubernetes resource quantities (``500m``, ``1Gi``, ``2e3``), as ``resource.Quantity`` parses them.

Source: k8s.io/apimachinery ``pkg/api/resource/quantity.go`` (``parseQuantityString``,
``ParseQuantity``, ``UnmarshalJSON``) and ``suffix.go`` (``interpret``), restated step by step so
that every string upstream accepts gives upstream's value and every string it rejects gives None:

* a sign, digits, an optional ``.`` and digits, then a suffix: binary-SI (Ki Mi Gi Ti Pi Ei),
  decimal-SI (n u m "" k M G T P E) or a decimal exponent (``e``/``E`` and a signed int64, kept as
  Go's ``int32(parsed)`` keeps it);
* a value finer than nano is rounded away from zero to the next nano (``0.1n`` is ``1n``);
* a binary-SI value is capped, silently, at 2^63-1 in magnitude (``9Ei``); a decimal one is not;
* JSON text is trimmed of white space (``UnmarshalJSON``); a YAML number is its JSON text, and a
  YAML float that is not finite (``.nan``, ``.inf``, ``1e400``) has none (Go's ``json.Marshal``
  refuses it), so it is no quantity.

Values are exact :class:`~decimal.Decimal` s, whatever their size (``1e2147483647`` included); do
arithmetic on them in :data:`CONTEXT` (the default context overflows past 10^999999) and turn them
into scheduler counts with :func:`scheduler_count`, never through ``float``.
"""

from __future__ import annotations

import math
import re
from decimal import MAX_EMAX, MIN_EMIN, ROUND_CEILING, ROUND_UP, Context, Decimal, InvalidOperation
from functools import lru_cache

#: Arithmetic on quantities: no exponent overflow; 60 significant digits, exact for every value
#: kube-scheduler can count (int64) and then some.
CONTEXT = Context(prec=60, Emax=MAX_EMAX, Emin=MIN_EMIN, rounding=ROUND_CEILING, traps=[InvalidOperation])
#: Exact arithmetic while parsing (the operands are bounded by the input's length).
_EXACT = Context(prec=999_999_999, Emax=MAX_EMAX, Emin=MIN_EMIN, traps=[InvalidOperation])

#: quantity.go's ``splitREString``, which its ``ErrFormatWrong`` message quotes.
SPLIT_RE = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
#: ParseQuantity's errors, as kube-apiserver reports them when it cannot decode an object.
FORMAT_ERROR = f"quantities must match the regular expression '{SPLIT_RE}'"  # ErrFormatWrong
NUMERIC_ERROR = "unable to parse numeric part of quantity"  # ErrNumeric
SUFFIX_ERROR = "unable to parse quantity's suffix"  # ErrSuffix

_DIGITS = frozenset("0123456789")
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DECIMAL_SI = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SI = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_INT64 = re.compile(r"[+-]?[0-9]+\Z")
_MAX_INT64 = 2**63 - 1
#: ``maxInt64Factors``: a decimal with at most this many digits fits the int64 fast path.
_MAX_INT64_FACTORS = 18
_NANO = -9
#: Go's ``unicode.IsSpace``, which ``strings.TrimSpace`` trims (Python's ``str.strip`` also trims
#: U+001C..U+001F, which Go keeps).
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000" + "".join(
    map(chr, range(0x2000, 0x200B))
)

#: Beyond int64 kube-scheduler's counts overflow (``framework.Resource`` holds int64s); kaffinity
#: counts any larger quantity as this much, which is still more than any real node offers.
SCHEDULER_CEILING = 10**30


def parse_quantity(value: object) -> Decimal | None:
    """The quantity's value in base units, or None when kube-apiserver would not take it as one."""
    parsed = _parse_value(value)
    return parsed if isinstance(parsed, Decimal) else None


def quantity_error(value: object) -> str | None:
    """Why kube-apiserver cannot decode ``value`` (a manifest's YAML value) as a quantity, in its
    words; None when it can (``null`` included: an unset quantity)."""
    if value is None:
        return None
    parsed = _parse_value(value)
    return parsed if isinstance(parsed, str) else None


def _parse_value(value: object) -> Decimal | str:
    if isinstance(value, bool):
        return FORMAT_ERROR  # UnmarshalJSON gets the text true/false
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        # json.Marshal writes a float64 as shortest round-trip digits, as repr does; it refuses
        # NaN and the infinities (sigs.k8s.io/yaml's YAMLToJSON fails on them).
        if not math.isfinite(value):
            return f"json: unsupported value: {'NaN' if math.isnan(value) else f'{value:+}'.title()}"
        return _parse_text(repr(value))
    if isinstance(value, str):
        return _parse_text(value.strip(_GO_SPACE))
    return FORMAT_ERROR


def parse_quantity_string(text: str) -> Decimal | None:
    """``ParseQuantity(text)``: no white space trimmed."""
    parsed = _parse_text(text)
    return parsed if isinstance(parsed, Decimal) else None


def parse_quantity_text(text: str) -> Decimal | str:
    """``ParseQuantity(text)`` as CEL's ``quantity()`` calls it: the value, or upstream's error text
    (no white space trimmed)."""
    return _parse_text(text)


def _wrap32(value: int) -> int:
    """``int32(value)``: Go's two's-complement truncation."""
    return (value + 2**31) % 2**32 - 2**31


def _skip(text: str, pos: int, chars: str | frozenset[str]) -> int:
    """The position after the run of ``chars`` at ``pos``."""
    end = len(text)
    while pos < end and text[pos] in chars:
        pos += 1
    return pos


def _split(text: str) -> tuple[bool, str, str, str, str] | None:
    """``parseQuantityString``: (positive, value, num, denom, suffix), or None for ErrFormatWrong."""
    positive = True
    pos, end = 0, len(text)
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos += 1
    pos = _skip(text, pos, "0")  # leading zeros
    if pos >= end:
        return positive, "0", "0", "", ""
    start, pos = pos, _skip(text, pos, _DIGITS)
    if pos >= end:
        return positive, text, text[start:], "", ""
    num = text[start:pos] or "0"
    denom = ""
    if text[pos] == ".":
        start, pos = pos + 1, _skip(text, pos + 1, _DIGITS)
        if pos >= end:
            return positive, text, num, text[start:], ""
        denom = text[start:pos]
    value = text[:pos]
    start, pos = pos, _skip(text, pos, _SUFFIX_CHARS)
    if pos < end and text[pos] in "+-":
        pos += 1
    if _skip(text, pos, _DIGITS) < end:
        return None
    return positive, value, num, denom, text[start:]


def _interpret(suffix: str) -> tuple[int, int, str] | None:
    """``suffixHandler.interpret``: (base, exponent, format), or None for ErrSuffix."""
    if suffix in _DECIMAL_SI:
        return 10, _DECIMAL_SI[suffix], "DecimalSI"
    if suffix in _BINARY_SI:
        return 2, _BINARY_SI[suffix], "BinarySI"
    if len(suffix) > 1 and suffix[0] in "eE" and _INT64.match(suffix[1:]):
        parsed = int(suffix[1:])  # strconv.ParseInt(s, 10, 64), then int32(parsed)
        if -(2**63) <= parsed <= _MAX_INT64:
            return 10, _wrap32(parsed), "DecimalExponent"
    return None


def _decimal(negative: bool, digits: str, exponent: int) -> Decimal:
    """The exact value ``±digits * 10^exponent``."""
    if not digits.strip("0"):
        return Decimal(0)
    return Decimal(f"{'-' if negative else ''}{digits}E{exponent}")


@lru_cache(maxsize=4096)  # a manifest set repeats a few quantities ("100m", "256Mi") by the thousand
def _parse_text(text: str) -> Decimal | str:
    """``ParseQuantity``: the value, or the error's text."""
    if not text:
        return FORMAT_ERROR
    if text == "0":
        return Decimal(0)
    parts = _split(text)
    if parts is None:
        return FORMAT_ERROR
    positive, value, num, denom, suffix = parts
    interpreted = _interpret(suffix)
    if interpreted is None:
        return SUFFIX_ERROR
    base, exponent, form = interpreted
    fast = _int64_value(positive, num, denom, exponent, form)
    if fast is not None:
        return fast
    return _inf_value(value, base, exponent, form)


def _int64_value(positive: bool, num: str, denom: str, exponent: int, form: str) -> Decimal | None:
    """The int64 fast path: exact, and it never rounds or caps; None when it does not apply."""
    mantissa, scale = 1, 0
    if form != "BinarySI":
        scale = exponent
        precision = _MAX_INT64_FACTORS - len(num) - len(denom)
    elif len(denom) == 0:
        mantissa = 1 << exponent
        precision = 15 - len(num) - exponent * 3 // 10 - 1
    else:
        precision = -1
    if precision < 0:
        return None
    scale = _wrap32(scale - len(denom))
    if scale < _NANO:
        return None
    shifted = int(num + denom)  # at most 18 digits here
    if shifted * mantissa > _MAX_INT64:
        return None
    return _decimal(not positive, str(shifted * mantissa), scale)


def _inf_value(value: str, base: int, exponent: int, form: str) -> Decimal | str:
    """The general path: ``inf.Dec.SetString(value)`` (a sign, digits, at most one point; at
    least one digit), scaled, rounded up to nano units, and capped for BinarySI."""
    unsigned = value.lstrip("+-")
    integer, _, fraction = unsigned.partition(".")
    if not (integer + fraction):
        return NUMERIC_ERROR
    inf_scale = len(fraction)
    if base == 10:
        inf_scale = _wrap32(inf_scale + _wrap32(-exponent))
    amount = _decimal(False, integer + fraction, -inf_scale)
    if base == 2:
        amount = _EXACT.multiply(amount, Decimal(1 << exponent))
    if amount and -inf_scale < _NANO:  # amount.Round(amount, Nano, inf.RoundUp)
        if amount.adjusted() < _NANO:
            amount = Decimal("1E-9")
        else:
            amount = amount.quantize(Decimal("1E-9"), rounding=ROUND_UP, context=_EXACT)
    if form == "BinarySI" and amount > _MAX_INT64:
        amount = Decimal(_MAX_INT64)
    return _EXACT.minus(amount) if value.startswith("-") and amount else amount


def scheduler_count(value: Decimal, milli: bool = False) -> int:
    """``Quantity.Value`` (or ``MilliValue``): the value rounded up to a whole unit (milli-unit),
    saturated at ±:data:`SCHEDULER_CEILING`."""
    if value.adjusted() > 40:
        return SCHEDULER_CEILING if value > 0 else -SCHEDULER_CEILING
    scaled = CONTEXT.multiply(value, 1000) if milli else value
    count = int(scaled.to_integral_value(rounding=ROUND_CEILING, context=CONTEXT))
    return max(-SCHEDULER_CEILING, min(SCHEDULER_CEILING, count))
