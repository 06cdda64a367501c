"""Semantic versions and constraints as Helm reads them: github.com/Masterminds/semver/v3.

Helm picks a chart version with ``semver.NewConstraint`` and ``Constraints.Check`` (helm.sh/helm/v3
pkg/repo/index.go ``IndexFile.Get``, pkg/downloader and pkg/resolver), newest first; Flux's
``GitRepository.spec.ref.semver`` and ``HelmChart`` versions do the same. Transcribed from
Masterminds/semver v3 (version.go ``NewVersion``, constraints.go): versions are read loosely
(``v1``, ``1.2``, a prerelease, build metadata ignored in comparisons); a constraint is groups
joined by ``||``, each a list of comparisons joined by ``,`` or spaces (``=``, ``!=``, ``>``,
``<``, ``>=``, ``<=``/``=<``, ``~``/``~>``, ``^``, a hyphen range ``1.2 - 1.4.5``, wildcards
``x``, ``X``, ``*``); **a prerelease version matches a comparison only when that comparison
names a prerelease itself** (constraints.go: "If there is a pre-release on the version but the
constraint isn't looking for them assume that pre-releases are not compatible"), so ``*`` and
``""`` mean the newest stable release, as ``helm install`` without ``--devel``
(``--devel`` is ``>0.0.0-0``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import total_ordering

# version.go semVerRegex (loose: the "v" prefix and missing minor/patch are allowed).
_VERSION = re.compile(
    r"^v?([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?"
    r"(?:-([0-9A-Za-z\-]+(?:\.[0-9A-Za-z\-]+)*))?"
    r"(?:\+([0-9A-Za-z\-]+(?:\.[0-9A-Za-z\-]+)*))?$"
)


@total_ordering
@dataclass(frozen=True, slots=True)
class Version:
    major: int
    minor: int
    patch: int
    prerelease: str = ""
    original: str = ""

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return _compare(self, other) < 0

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return _compare(self, other) == 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.prerelease))


def parse_version(text: str) -> Version | None:
    """``text`` as Masterminds' ``NewVersion`` reads it, or None (Helm skips such versions)."""
    match = _VERSION.match(text.strip())
    if match is None:
        return None
    major, minor, patch, pre, _ = match.groups()
    if pre and any(part.isdigit() and len(part) > 1 and part.startswith("0") for part in pre.split(".")):
        return None  # version.go validatePrerelease: no leading zeros in numeric identifiers
    return Version(int(major), int(minor or 0), int(patch or 0), pre or "", text)


def _compare(a: Version, b: Version) -> int:
    for m, n in ((a.major, b.major), (a.minor, b.minor), (a.patch, b.patch)):
        if m != n:
            return -1 if m < n else 1
    if a.prerelease == b.prerelease:
        return 0
    if not a.prerelease:
        return 1
    if not b.prerelease:
        return -1
    left, right = a.prerelease.split("."), b.prerelease.split(".")
    for x, y in zip(left, right, strict=False):
        if x == y:
            continue
        if x.isdigit() and y.isdigit():
            return -1 if int(x) < int(y) else 1
        if x.isdigit():
            return -1
        if y.isdigit():
            return 1
        return -1 if x < y else 1
    return (len(left) > len(right)) - (len(left) < len(right))


@dataclass(frozen=True, slots=True)
class _Comparison:
    op: str
    version: Version
    minor_dirty: bool  # "1", "1.x", "*": the minor is a wildcard
    patch_dirty: bool
    dirty: bool


_OPERATOR = r"(?:=|!=|>=|=>|<=|=<|>|<|~>|~|\^)?"
_LOOSE = r"v?(?:[0-9xX*]+)(?:\.(?:[0-9xX*]+))?(?:\.(?:[0-9xX*]+))?(?:-[0-9A-Za-z\-.]+)?(?:\+[0-9A-Za-z\-.]+)?"
_COMPARISON = re.compile(rf"^\s*({_OPERATOR})\s*({_LOOSE})\s*$")
_HYPHEN = re.compile(rf"^\s*({_LOOSE})\s+-\s+({_LOOSE})\s*$")


class ConstraintError(ValueError):
    """A constraint Masterminds' ``NewConstraint`` refuses."""


def _comparison(op: str, text: str) -> _Comparison:
    core, _, rest = text.lstrip("v").partition("-")
    core = core.split("+", 1)[0]
    pre = rest.split("+", 1)[0] if rest else ""
    parts = core.split(".")
    wild = [part in ("x", "X", "*") for part in parts]
    minor_dirty = len(parts) < 2 or wild[0] or wild[1]
    patch_dirty = minor_dirty or len(parts) < 3 or wild[2]
    numbers = [0 if part in ("x", "X", "*") else int(part) for part in parts] + [0, 0]
    dirty = minor_dirty or patch_dirty
    if wild[0]:
        dirty = True
        op = op if op else "*"
    version = Version(numbers[0], numbers[1], numbers[2], pre, text)
    return _Comparison(op or "=", version, minor_dirty, patch_dirty, dirty)


class Constraint:
    """A parsed constraint: :meth:`check` a version (``Constraints.Check``)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.groups: list[list[_Comparison]] = []
        source = text.strip() or "*"
        for group in source.split("||"):
            comparisons: list[_Comparison] = []
            hyphen = _HYPHEN.match(group)
            if hyphen is not None:
                comparisons.append(_comparison(">=", hyphen.group(1)))
                comparisons.append(_comparison("<=", hyphen.group(2)))
            else:
                # "a, b" or "a b"; an operator may be followed by spaces (">= 1.2").
                tokens = re.findall(rf"{_OPERATOR}\s*{_LOOSE}", group.replace(",", " "))
                leftover = re.sub(rf"{_OPERATOR}\s*{_LOOSE}", "", group.replace(",", " ")).strip()
                if not tokens or leftover:
                    raise ConstraintError(f"improper constraint: {text}")
                for token in tokens:
                    match = _COMPARISON.match(token)
                    if match is None:
                        raise ConstraintError(f"improper constraint: {text}")
                    comparisons.append(_comparison(match.group(1), match.group(2)))
            self.groups.append(comparisons)

    def check(self, version: Version) -> bool:
        return any(all(_CHECKS[c.op](version, c) for c in group) for group in self.groups)


def _pre_ok(v: Version, c: _Comparison) -> bool:
    return not v.prerelease or bool(c.version.prerelease)


def _equal(v: Version, c: _Comparison) -> bool:  # constraintTildeOrEqual
    if not _pre_ok(v, c):
        return False
    if c.dirty:
        return _tilde(v, c)
    return v == c.version


def _not_equal(v: Version, c: _Comparison) -> bool:
    if not _pre_ok(v, c):
        return False
    if c.dirty:
        if v.major != c.version.major:
            return True
        if v.minor != c.version.minor and not c.minor_dirty:
            return True
        if c.minor_dirty:
            return False
        return bool(v.patch != c.version.patch and not c.patch_dirty)
    return v != c.version


def _greater(v: Version, c: _Comparison) -> bool:
    if not _pre_ok(v, c):
        return False
    if not c.dirty:
        return v > c.version
    if v.major != c.version.major:
        return v.major > c.version.major
    if c.minor_dirty:
        return False
    if c.patch_dirty:
        return v.minor > c.version.minor
    return v > c.version


def _less(v: Version, c: _Comparison) -> bool:
    return _pre_ok(v, c) and v < c.version


def _greater_equal(v: Version, c: _Comparison) -> bool:
    return _pre_ok(v, c) and v >= c.version


def _less_equal(v: Version, c: _Comparison) -> bool:
    if not _pre_ok(v, c):
        return False
    if not c.dirty:
        return v <= c.version
    if v.major > c.version.major:
        return False
    return not (v.major == c.version.major and v.minor > c.version.minor and not c.minor_dirty)


def _tilde(v: Version, c: _Comparison) -> bool:
    if not _pre_ok(v, c) or v < c.version:
        return False
    con = c.version
    if con.major == con.minor == con.patch == 0 and not c.minor_dirty and not c.patch_dirty:
        return True
    if v.major != con.major:
        return False
    return not (v.minor != con.minor and not c.minor_dirty)


def _caret(v: Version, c: _Comparison) -> bool:
    if not _pre_ok(v, c) or v < c.version:
        return False
    con = c.version
    if con.major > 0 or c.minor_dirty:
        return v.major == con.major
    if v.major > 0:
        return False
    if con.minor > 0 or c.patch_dirty:
        return v.minor == con.minor
    if v.minor > 0:
        return False
    return v.patch == con.patch


def _any(v: Version, c: _Comparison) -> bool:
    return _pre_ok(v, c)


_CHECKS: dict[str, Callable[[Version, _Comparison], bool]] = {
    "=": _equal,
    "*": _any,
    "!=": _not_equal,
    ">": _greater,
    "<": _less,
    ">=": _greater_equal,
    "=>": _greater_equal,
    "<=": _less_equal,
    "=<": _less_equal,
    "~": _tilde,
    "~>": _tilde,
    "^": _caret,
}


def is_exact(text: str | None) -> bool:
    """Whether ``text`` names one version (no operator, range or wildcard): what may be taken
    from the cache without asking a repository which versions exist."""
    return text is not None and _EXACT.match(text.strip()) is not None


_EXACT = re.compile(r"^v?[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")


def newest(candidates: Iterable[str], constraint: str | None) -> str | None:
    """The newest of ``candidates`` that ``constraint`` allows (None, ``""``: ``*``), as Helm's
    ``IndexFile.Get`` chooses: an exact string match first, then the highest version checked;
    candidates that are not versions are skipped. Raises ConstraintError."""
    names = list(candidates)
    if constraint and constraint.strip() in names:
        return constraint.strip()
    parsed = Constraint(constraint or "*")
    versions = [(version, name) for name in names if (version := parse_version(name)) is not None]
    versions.sort(key=lambda pair: pair[0], reverse=True)
    for version, name in versions:
        if parsed.check(version):
            return name
    return None
