"""Kubernetes' semver library (Kubernetes 1.33, its version 1): ``semver('1.2.3').major()``.

Upstream: ``staging/src/k8s.io/apiserver/pkg/cel/library/semverlib.go`` (functions, and
``normalizeAndParse`` behind ``semver(s, true)``), ``staging/src/k8s.io/apiserver/pkg/cel/semver.go``
(the value; ``Equal`` is ``Version.Equals``, which ignores build metadata) and
github.com/blang/semver/v4 ``semver.go`` (``Parse``, ``Compare``), restated here.

The payload is ``major.minor.patch[-prerelease]``: build metadata is dropped, as no function
reads it and equality ignores it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from cel_expr_python import cel

from kaffinity.policy.cel import values
from kaffinity.policy.cel.library import functions, overload
from kaffinity.policy.cel.values import OPAQUE, SEMVER

T = cel.Type
_DIGITS = frozenset("0123456789")
_ALPHANUMERIC = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")
_UINT64_MAX = 2**64 - 1


@dataclass(frozen=True)
class Version:
    """A parsed semantic version (build metadata left out)."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...]

    def text(self) -> str:
        """The canonical payload."""
        core = f"{self.major}.{self.minor}.{self.patch}"
        return f"{core}-{'.'.join(self.prerelease)}" if self.prerelease else core


def _number(text: str, what: str) -> int:
    """A major, minor or patch number: digits, no leading zero, within uint64."""
    if not text or not set(text) <= _DIGITS:
        raise ValueError(f"Invalid character(s) found in {what} number {text!r}")
    if len(text) > 1 and text[0] == "0":
        raise ValueError(f"{what.capitalize()} number must not contain leading zeroes {text!r}")
    number = int(text)
    if number > _UINT64_MAX:
        raise ValueError(f'strconv.ParseUint: parsing "{text}": value out of range')
    return number


def _prerelease_part(part: str) -> str:
    """blang's ``NewPRVersion``: a number without leading zeros, or alphanumerics."""
    if not part:
        raise ValueError("Prerelease is empty")
    if set(part) <= _DIGITS:
        if len(part) > 1 and part[0] == "0":
            raise ValueError(f"Numeric PreRelease version must not contain leading zeroes {part!r}")
        return part
    if not set(part) <= _ALPHANUMERIC:
        raise ValueError(f"Invalid character(s) found in prerelease {part!r}")
    return part


def _check_build(build: str) -> None:
    """Build metadata: non-empty alphanumeric parts."""
    for part in build.split("."):
        if not part:
            raise ValueError("Build meta data is empty")
        if not set(part) <= _ALPHANUMERIC:
            raise ValueError(f"Invalid character(s) found in build meta data {part!r}")


def parse(text: str) -> Version:
    """blang/semver's ``Parse``: strict ``major.minor.patch[-pre][+build]``."""
    if not text:
        raise ValueError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise ValueError("No Major.Minor.Patch elements found")
    rest, plus, build = parts[2].partition("+")
    if plus:
        _check_build(build)
    patch, minus, prerelease = rest.partition("-")
    pre = tuple(_prerelease_part(part) for part in prerelease.split(".")) if minus else ()
    return Version(_number(parts[0], "major"), _number(parts[1], "minor"), _number(patch, "patch"), pre)


def normalize_and_parse(text: str) -> Version:
    """semverlib.go's ``normalizeAndParse``: no ``v`` prefix, no leading zeros, ``1.2`` is ``1.2.0``."""
    parts = text.removeprefix("v").split(".", 2)
    for index, part in enumerate(parts):
        if len(part) > 1:
            trimmed = part.lstrip("0")
            parts[index] = trimmed if trimmed and trimmed[0] in _DIGITS else "0" + trimmed
    if len(parts) < 3:
        if any(mark in parts[-1] for mark in "+-"):
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return parse(".".join(parts))


@lru_cache(maxsize=4096)
def version(payload: str) -> Version:
    """The version a payload holds."""
    return parse(payload)


def _sign(difference: int) -> int:
    """-1, 0 or 1 for a difference."""
    return (difference > 0) - (difference < 0)


def _compare_part(left: str, right: str) -> int:
    """blang's ``PRVersion.Compare``: numbers before words, each in its order."""
    left_number, right_number = set(left) <= _DIGITS, set(right) <= _DIGITS
    if left_number and right_number:
        return _sign(int(left) - int(right))
    if left_number != right_number:
        return -1 if left_number else 1
    return _sign((left > right) - (left < right))


def compare_versions(left: Version, right: Version) -> int:
    """blang/semver's ``Version.Compare``: -1, 0 or 1 (a prerelease sorts before its release)."""
    for first, second in ((left.major, right.major), (left.minor, right.minor), (left.patch, right.patch)):
        if first != second:
            return _sign(first - second)
    if not left.prerelease or not right.prerelease:
        return (
            _sign(len(right.prerelease) - len(left.prerelease)) if left.prerelease or right.prerelease else 0
        )
    for first_part, second_part in zip(left.prerelease, right.prerelease, strict=False):
        found = _compare_part(first_part, second_part)
        if found:
            return found
    return _sign(len(left.prerelease) - len(right.prerelease))


def compare(left: object, right: object, function: str) -> int:
    """``Semver.Compare`` of two semver values."""
    first = version(values.text(left, SEMVER, function))
    return compare_versions(first, version(values.text(right, SEMVER, function)))


def _semver(text: str, normalize: bool = False) -> dict[str, object]:
    """``semver(text[, normalize])``."""
    parsed = normalize_and_parse(text) if normalize else parse(text)
    return values.make(SEMVER, parsed.text())


def _is_semver(text: str, normalize: bool = False) -> bool:
    """``isSemver(text[, normalize])``."""
    try:
        _semver(text, normalize)
    except ValueError:
        return False
    return True


def _field(name: str) -> Callable[[object], int]:
    """``<Semver>.major()``, ``minor()`` or ``patch()``."""

    def read(value: object) -> int:
        found: int = getattr(version(values.text(value, SEMVER, name)), name)
        return found

    return read


def declarations() -> list[cel.FunctionDecl]:
    """semverlib.go's functions at its version 1 (the normalising overloads included); the
    comparisons are in :mod:`kaffinity.policy.cel.comparisons`."""
    return functions(
        {
            "semver": [
                overload("string_to_semver", OPAQUE, [T.STRING], _semver),
                overload("string_bool_to_semver", OPAQUE, [T.STRING, T.BOOL], _semver),
            ],
            "isSemver": [
                overload("is_semver_string", T.BOOL, [T.STRING], _is_semver),
                overload("is_semver_string_bool", T.BOOL, [T.STRING, T.BOOL], _is_semver),
            ],
            "major": [overload("semver_major", T.INT, [OPAQUE], _field("major"), member=True)],
            "minor": [overload("semver_minor", T.INT, [OPAQUE], _field("minor"), member=True)],
            "patch": [overload("semver_patch", T.INT, [OPAQUE], _field("patch"), member=True)],
        }
    )
