"""Load manifests from files, directories and stdin, keeping the position of every key and item.

Parsing uses ruamel's C composer (``ruamel.yaml.cyaml.CSafeLoader`` from ``ruamel.yaml.clib``):
libyaml builds the node tree in C and every node's ``start_mark`` carries line and column. We
then turn nodes into :class:`~kaffinity.load.source.PosDict` / :class:`~kaffinity.load.source.PosList`
ourselves, resolving plain scalars the way Kubernetes reads YAML (sigs.k8s.io/yaml on top of
go-yaml v2, i.e. YAML 1.1: ``yes``/``on`` are booleans, ``017`` is octal, non-string keys become
strings as in the YAML-to-JSON conversion). The round-trip loader is kept for writing files back.

Bad input never raises: a file that cannot be read, decoded or parsed yields a
:class:`LoadProblem` with the parser's line, and the documents before the error are kept.
"""

from __future__ import annotations

import base64
import binascii
import gc
import math
import re
import sys
import warnings
from array import array
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from sys import intern
from typing import Any

from kaffinity.load.source import (
    COLUMN_BITS,
    DataPath,
    Document,
    DuplicateKey,
    PosDict,
    PosList,
    Span,
    locate,
    unpack,
)

STDIN = "-"
STDIN_NAME = "<stdin>"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

# libyaml's composer crashes the interpreter somewhere past 20,000 levels; never hand it that
# (whatever Limits.depth says: its schema caps it here).
_MAX_SCAN_DEPTH = 10_000


@dataclass(frozen=True, slots=True)
class Limits:
    """What one input may cost (``limits:`` in ``.kaffinity.yaml``, ``--max-file-size``).

    Past a limit, the input is a ``parse-error`` naming the limit; the other files are linted.
    """

    #: Bytes per file (or stdin). Parsing costs about 5x a file's size in memory, and the largest
    #: real manifests (CRD bundles) are a few MB; a `kubectl get -o yaml` dump may need more.
    file_size: int = 32 * 1024 * 1024
    #: Levels of nesting: no manifest comes close, and libyaml's composer recurses in C.
    depth: int = 400
    #: Nodes that aliases may add to one file, its documents together: an alias bomb ("billion
    #: laughs") is refused, as go-yaml refuses "excessive aliasing". Per file, not per document
    #: (go-yaml's count): every node an alias adds is walked by the schema and the rules, so
    #: many documents each under a per-document limit made a 224 KB file cost 80 s.
    alias_nodes: int = 1_000_000
    #: Pods one placement may create (replicas, Job parallelism, one DaemonSet pod per eligible
    #: node, summed over the workloads of a deployment unit): past it the unit is not placed.
    #: Kubernetes supports "no more than 150,000 total pods" ("Considerations for large clusters").
    pods: int = 150_000
    #: Nodes a cluster file may declare (Node objects and ClusterTopology pools, in total): 5,000
    #: is Kubernetes' documented largest cluster ("Considerations for large clusters"); the
    #: default leaves a margin for the few clusters run past it.
    nodes: int = 15_000
    #: Findings one run may report; past it, the rest are dropped and a notice says so.
    findings: int = 100_000


DEFAULT_LIMITS = Limits()
#: Scalar strings up to this long are interned (a DNS label's limit and more: names, label
#: values, quantities, image names; not free text).
_INTERNED = 253
_SCALAR_SIZE = (None, 1)

_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_BINARY = "tag:yaml.org,2002:binary"
_MERGE = "tag:yaml.org,2002:merge"
_MERGE_NEEDS_MAPS = (
    "a merge key (<<) needs a mapping or a sequence of mappings (map merge requires map or sequence of maps)"
)
# The tags go-yaml resolves (resolve.go, ``resolvableTag``, and ``!!binary``); another
# `tag:yaml.org,2002:` tag (`!!python/name:x`) keeps the text, as a tag of another tool does.
_RESOLVED_TAGS = frozenset(
    "tag:yaml.org,2002:" + name for name in ("bool", "int", "float", "null", "timestamp", "binary")
)
# The tag our composer gives every scalar without an explicit one (we resolve those ourselves).
_IMPLICIT = "?"
_YAML11_BOOL = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE"), False),
}
_YAML11_NULL = frozenset(("", "~", "null", "Null", "NULL"))
_YAML11_SPECIAL_FLOAT = {
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), float("inf")),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), float("-inf")),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), float("nan")),
}
# First characters of every plain scalar that resolve_plain may turn into something other than
# the string itself (nulls, YAML 1.1 booleans, numbers); "" too: the empty scalar is null.
_RESOLVE = frozenset("~nNyYoOtTfF+-.0123456789") | {""}
# Plain keys as resolved and interned (bounded: the keys of a manifest set are few).
_PLAIN_KEYS: dict[str, str] = {}
_PLAIN_KEYS_SIZE = 100_000
_OCTAL = re.compile(r"[-+]?0[0-7]+\Z")
_INT = re.compile(r"[-+]?(?:0[bB][01]+|0[xX][0-9a-fA-F]+|0[oO][0-7]+|[1-9][0-9]*|0)\Z")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z")
# Actions that only a Helm chart's templates contain; Go templates also live, rendered, inside
# string values (Prometheus and Alertmanager rules: `{{ $labels.pod }}`), which must not count.
_HELM_ACTION = re.compile(
    r"\{\{-?\s*(?:\.Values\b|\.Release\b|\.Chart\b|\.Capabilities\b|\.Files\b|\$\.Values\b"
    r"|include\s|template\s|tpl\s|toYaml\s|if\s|else\b|end\b|range\s|with\s|define\s)"
)
# Inside a value that parses, only what Helm alone writes: Go's own actions (if, with, range,
# end, template) are also Prometheus and Alertmanager templating, rendered into the rules of
# kube-prometheus ("{{ with $labels.cluster -}} on Cluster {{ . }} {{- end }}").
_HELM_IN_VALUE = re.compile(
    r"\{\{-?\s*(?:\.Values\b|\.Release\b|\.Chart\b|\.Capabilities\b|\.Files\b|\$\.Values\b"
    r"|include\s|tpl\s|toYaml\s)"
)
_ACTION = re.compile(r"\{\{.*?\}\}", re.S)
_ACTION_LINE = re.compile(r"^[ \t]*\{\{[^\n]*?\}\}[ \t]*$", re.M)
_COMPACT_NESTING = re.compile(r"^[ \t]*((?:[-?][ \t]+){50,})", re.M)
_COMPACT_PAIRS = ("- -", "- ?", "? -", "? ?", "\t")


@dataclass(frozen=True, slots=True)
class LoadProblem:
    """Input that could not be used: rule ``parse-error`` or ``helm-template``."""

    rule: str
    message: str
    span: Span | None


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file (or stdin) as loaded: its text, its objects and what went wrong.

    ``skipped``: why the file is not a Kubernetes manifest (:mod:`kaffinity.load.manifests`), or None
    for a manifest. A skipped file has no text, documents or problems: nothing in it is linted
    or reported, and reports count it apart (``summary.skipped``).
    """

    name: str
    text: str
    documents: tuple[Document, ...]
    problems: tuple[LoadProblem, ...]
    skipped: str | None = None
    #: Compacted after the single-object stage (:mod:`kaffinity.k8s.compact`): ``text`` is gone
    #: (read again from the file where a report shows it) and the documents hold only what the
    #: rules that read every manifest read.
    compact: bool = False


class LoadError(Exception):
    def __init__(self, message: str, span: Span | None) -> None:
        super().__init__(message)
        self.message = message
        self.span = span


def resolve_plain(text: str) -> Any:
    """Resolve a plain (unquoted) scalar as go-yaml v2 does for Kubernetes manifests.

    gopkg.in/yaml.v2 v2.4.0 resolve.go, ``resolve``: the YAML 1.1 map of nulls, booleans and
    special floats; a text that starts with `.` is a float if ``strconv.ParseFloat`` reads it
    (Go's float literal: `_` only between digits); one that starts with a sign or a digit
    (underscores taken out) is an int64 (``ParseInt``, base from the prefix: `0x`, `0o`,
    `0b`, a leading `0` for octal), else a uint64 (``ParseUint``: no sign), else a float of
    ``yamlStyleFloat``'s form; a number that overflows what ``ParseFloat`` reads stays the
    text (`1e400`), as does a timestamp (a string in an ``interface{}``: decode.go, ``scalar``).
    """
    if text in _YAML11_NULL:
        return None
    boolean = _YAML11_BOOL.get(text)
    if boolean is not None:
        return boolean
    first = text[0]
    if first not in "+-.0123456789":
        return text
    special = _YAML11_SPECIAL_FLOAT.get(text)
    if special is not None:
        return special
    if first == ".":
        return _finite(float(text.replace("_", "")), text) if _DOT_FLOAT.match(text) else text
    plain = text.replace("_", "")
    number: int | None = None
    if _OCTAL.match(plain):
        number = int(plain, 8)
    elif _INT.match(plain):
        number = int(plain, 0)
    if number is not None and (
        _INT64_MIN <= number <= _INT64_MAX or (number <= _UINT64_MAX and plain[0] not in "+-")
    ):
        return number
    if _FLOAT.match(plain):  # also `08`, `09` (not octal) and integers past 64 bits
        return _finite(float(plain), text)
    return text


def _finite(value: float, text: str) -> Any:
    """``value``, or ``text`` where ``strconv.ParseFloat`` fails with a range error."""
    return value if value - value == 0.0 else text


_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1
# strconv.ParseFloat of a text that starts with `.`: Go's float literal, `_` between digits.
_DOT_FLOAT = re.compile(r"\.[0-9](?:_?[0-9])*(?:[eE][-+]?[0-9](?:_?[0-9])*)?\Z")


def _key_string(value: Any) -> str:
    """Map keys become strings, as in sigs.k8s.io/yaml's conversion to JSON (v1.6.0 yaml.go,
    ``convertToJSONableObject``: ``strconv.Itoa`` of an int, ``FormatFloat(key, 'g', -1, 32)``
    of a float). A null key is "null" here; the loader refuses it (:func:`_unsupported_key`)."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _float_key(value)
    return str(value)


def _float_key(value: float) -> str:
    """Go's ``strconv.FormatFloat(value, 'g', -1, 32)``, then `.inf`, `-.inf`, `.nan` for its
    `+Inf`, `-Inf`, `NaN` (sigs.k8s.io/yaml): the shortest digits that read back as the same
    float32, in exponent form below 1e-4 and from 1e6 on."""
    import struct

    if math.isnan(value):
        return ".nan"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        single = value * float("inf")
    if single - single != 0.0:
        return ".inf" if single > 0 else "-.inf"
    shown = ""
    for precision in range(9):
        shown = f"{single:.{precision}e}"
        if struct.unpack("f", struct.pack("f", float(shown)))[0] == single:
            break
    mantissa, exponent_text = shown.split("e")
    digits = mantissa.replace("-", "").replace(".", "").rstrip("0") or "0"
    exponent = int(exponent_text)
    if exponent < -4 or exponent >= 6:
        sign = "-" if mantissa.startswith("-") else ""
        head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{head}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    return f"{float(shown):.{max(len(digits) - exponent - 1, 0)}f}"


def _unsupported_key(value: Any) -> str | None:
    """Why sigs.k8s.io/yaml cannot make ``value`` a JSON key (kubectl refuses the document:
    "unsupported map key of type"), or None."""
    if value is None:
        return 'a null key: kubectl cannot convert it to JSON ("unsupported map key of type: <nil>")'
    if value.__class__ is int and value > _INT64_MAX:
        return (
            f"the key {value} is a uint64: kubectl cannot convert it to JSON "
            '("unsupported map key of type: uint64")'
        )
    return None


def _not_json(value: float, text: str, span: Span) -> LoadError:
    """A NaN or infinity: JSON cannot hold it, and kubectl refuses the document (sigs.k8s.io/yaml's
    ``json.Marshal``: "json: unsupported value: NaN")."""
    shown = "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
    return LoadError(
        f"{text!r} is not a number JSON can hold: kubectl refuses it (json: unsupported value: {shown})", span
    )


class _Builder:
    """Turns a composed node tree into PosDict/PosList/scalars, with positions.

    This walk is the loader's hot path (the C composer is the other half), so scalars are
    handled inline rather than through a call per node.
    """

    __slots__ = (
        "aliases",
        "building",
        "cache",
        "constructor",
        "duplicates",
        "expanded",
        "limits",
        "template",
    )

    def __init__(self, constructor: Any, aliases: bool, limits: Limits) -> None:
        self.constructor = constructor
        self.aliases = aliases
        self.limits = limits
        self.cache: dict[int, tuple[Any, int]] = {}
        self.expanded = 0
        self.building: set[int] = set()  # the collections being built, where aliases may occur
        self.duplicates: list[DuplicateKey] = []
        self.template: Span | None = None

    def scalar(self, node: Any) -> Any:
        value: str = node.value
        if node.ctag.suffix is not _IMPLICIT:
            # An explicit tag (`!!str 0777`, `!!int "3"`); unknown ones (`!Ref x`) keep the text.
            tag = node.tag
            if tag not in _RESOLVED_TAGS:
                return value
            if tag == _BINARY:
                # go-yaml decodes with base64.StdEncoding.DecodeString (v2.4.0 decode.go,
                # ``scalar``): padding required, line breaks skipped, nothing else; the bytes
                # become a Go string, then a JSON string (invalid UTF-8 replaced).
                try:
                    data = base64.b64decode(value.replace("\r", "").replace("\n", ""), validate=True)
                except (binascii.Error, ValueError):
                    raise LoadError(
                        "!!binary value contains invalid base64 data", _span(node.start_mark)
                    ) from None
                return data.decode("utf-8", "replace")
            # ruamel's constructors raise plain ValueError/KeyError on `!!int x`, `!!bool x`
            # (not a YAMLError) and warn on stderr for `!!float 1e3`: both are bad input, so
            # they become this file's one-line parse error, and the warning is silenced.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    constructed = self.constructor.construct_object(node)
                except (ValueError, KeyError, TypeError, OverflowError, binascii.Error):
                    raise LoadError(
                        f"{value!r} is not a valid {tag.rsplit(':', 1)[-1]}", _span(node.start_mark)
                    ) from None
            if isinstance(constructed, bytes):
                # `!!binary`: go-yaml decodes the base64 into a Go string, which becomes a JSON
                # string (invalid UTF-8 replaced) on its way to the API server.
                return constructed.decode("utf-8", "replace")
            if not isinstance(constructed, (str, int, float, type(None))):
                return value  # `!!timestamp` (a date): JSON has no such type, the text stays
            if constructed.__class__ is float and constructed - constructed != 0.0:
                raise _not_json(constructed, value, _span(node.start_mark))
            return constructed
        if node.style:
            return intern(value) if len(value) <= _INTERNED else value
        if "{{" in value and self.template is None and _HELM_IN_VALUE.search(value):
            self.template = _span(node.start_mark)
        resolved = resolve_plain(value)
        if resolved.__class__ is float and resolved - resolved != 0.0:
            raise _not_json(resolved, value, _span(node.start_mark))
        return resolved

    def build(self, node: Any, depth: int) -> Any:
        if self.aliases:
            return self._build_shared(node, depth)
        if isinstance(node.value, str):
            return self.scalar(node)
        if depth >= self.limits.depth:
            raise _too_deep(self.limits, _span(node.start_mark))
        return self._mapping(node, depth) if node.id == "mapping" else self._sequence(node, depth)

    def _sequence(self, node: Any, depth: int) -> PosList:
        mark = node.start_mark
        result = PosList(Span(mark.line + 1, mark.column + 1))
        positions: list[int] = []
        append = result.append
        for item in node.value:
            item_mark = item.start_mark
            positions.append((item_mark.line + 1) << COLUMN_BITS | (item_mark.column + 1))
            value = item.value
            if value.__class__ is not str:
                append(self.build(item, depth + 1))
            elif (
                not item.style
                and item.ctag.suffix is _IMPLICIT
                and value[:1] not in _RESOLVE
                and "{{" not in value
            ):
                append(intern(value) if len(value) <= _INTERNED else value)  # inline (see _mapping)
            else:
                append(self.scalar(item))
        result.pos = array("Q", positions)  # exactly as long: 8 bytes a position
        return result

    def _mapping(self, node: Any, depth: int) -> PosDict:
        mark = node.start_mark
        result = PosDict(Span(mark.line + 1, mark.column + 1))
        positions = result.pos
        merged: set[str] | None = None  # the keys a merge key (<<) set last
        scalar = self.scalar
        keys = _PLAIN_KEYS
        for key_node, value_node in node.value:
            key = key_node.value
            if key.__class__ is not str:
                # Also what an unquoted `{{ .Values.x }}` is: a flow mapping used as a key.
                raise LoadError("a mapping key must be a scalar", _span(key_node.start_mark))
            if not key_node.style:
                resolved = keys.get(key)
                if resolved is None:
                    if key == "<<":
                        merged = self._merge(result, key_node, value_node, depth, merged)
                        continue
                    # Keys repeat in every object: one (interned) string each saves memory, and
                    # the cache saves resolving the same plain key again.
                    plain = resolve_plain(key)
                    unsupported = _unsupported_key(plain)
                    if unsupported is not None:
                        raise LoadError(unsupported, _span(key_node.start_mark))
                    resolved = intern(_key_string(plain))
                    if len(keys) < _PLAIN_KEYS_SIZE:
                        keys[key] = resolved
                key = resolved
            elif key == "<<" and key_node.tag == _MERGE:
                # `!!merge "<<"`: go-yaml's isMerge takes a plain `<<` or one tagged !!merge
                merged = self._merge(result, key_node, value_node, depth, merged)
                continue
            else:
                key = intern(key)
            key_mark = key_node.start_mark
            position = (key_mark.line + 1) << COLUMN_BITS | (key_mark.column + 1)
            if key in result:
                # The later value wins and keeps the first key's place in the order.
                first = list(result).index(key)
                if merged is not None and key in merged:
                    merged.discard(key)  # what a merge key set, a key after it replaces
                else:
                    self.duplicates.append(DuplicateKey(key, unpack(position), unpack(positions[first])))
                positions[first] = position
            else:
                positions.append(position)
            value = value_node.value
            if value.__class__ is not str:
                result[key] = self.build(value_node, depth + 1)
            elif (
                not value_node.style
                and value_node.ctag.suffix is _IMPLICIT
                and value[:1] not in _RESOLVE
                and "{{" not in value
            ):
                # The common case inline: a plain scalar that can only be a string (no YAML 1.1
                # null, boolean or number starts with its first character) and no template.
                # Interned: names, labels and quantities repeat across a repository's objects,
                # and what is kept of them lives until the report (kaffinity.k8s.compact).
                result[key] = intern(value) if len(value) <= _INTERNED else value
            else:
                result[key] = scalar(value_node)
        result.pos = array("Q", result.pos)  # exactly as long: 8 bytes a position
        return result

    def _build_shared(self, node: Any, depth: int) -> Any:
        """Build where aliases may occur: an aliased node is built once and its object shared,
        and the size that aliases expand the document to is capped."""
        hit = self.cache.get(id(node))
        if hit is not None:
            self.expanded += hit[1]
            if self.expanded > self.limits.alias_nodes:
                raise LoadError(
                    f"aliases expand this file beyond {self.limits.alias_nodes:,} nodes (an alias bomb?; "
                    "limits: alias-nodes)",
                    _span(node.start_mark),
                )
            return hit[0]
        if isinstance(node.value, str):
            result: Any = self.scalar(node)
            size = 1
        else:
            if depth >= self.limits.depth:
                raise _too_deep(self.limits, _span(node.start_mark))
            if id(node) in self.building:
                raise _recursive(node)
            self.building.add(id(node))
            if node.id == "mapping":
                result = self._mapping(node, depth)
                children: Iterable[Any] = (value for _, value in node.value)
            else:
                result = self._sequence(node, depth)
                children = node.value
            self.building.discard(id(node))
            size = 1 + sum(self.cache.get(id(child), _SCALAR_SIZE)[1] for child in children)
        self.cache[id(node)] = (result, size)
        return result

    def _merge(
        self, target: PosDict, key_node: Any, node: Any, depth: int, merged: set[str] | None
    ) -> set[str]:
        """A YAML merge key (``<<: *base``) as go-yaml v2 applies it (v2.4.0 decode.go,
        ``mapping`` and ``merge``): where it stands among the keys, so that its keys replace
        those given before it and keys after it replace its own; of a sequence of mappings,
        the earlier ones win. Returns the keys it set (``merged``, added to)."""
        merged = set() if merged is None else merged
        # An alias of a sequence is no sequence of mappings for go-yaml (``merge``: an alias
        # must name a mapping); the composed tree shares the aliased node, which then starts
        # before its key.
        if node.id == "sequence" and node.start_mark.index < key_node.start_mark.index:
            raise LoadError(_MERGE_NEEDS_MAPS, _span(key_node.start_mark))
        sources = node.value if node.id == "sequence" else [node]
        built = []
        for source in sources:
            value = self.build(source, depth + 1)
            if not isinstance(value, PosDict):
                raise LoadError(_MERGE_NEEDS_MAPS, _span(source.start_mark))
            built.append(value)
        order: list[str] | None = None
        for value in reversed(built):  # go-yaml steps backwards: earlier mappings take precedence
            for (key, item), position in zip(value.items(), value.pos, strict=True):
                if key in target:
                    order = list(target) if order is None else order
                    target.pos[order.index(key)] = position
                else:
                    target.pos.append(position)
                    if order is not None:
                        order.append(key)
                target[key] = item
                merged.add(key)
        return merged


def _recursive(node: Any) -> LoadError:
    """go-yaml refuses an alias inside the node it names ("anchor 'x' value contains itself")."""
    return LoadError("an alias refers to the node that holds it (a recursive anchor)", _span(node.start_mark))


def _too_deep(limits: Limits, span: Span | None) -> LoadError:
    return LoadError(f"nesting deeper than {limits.depth} levels (limits: depth)", span)


def _span(mark: Any) -> Span:
    return Span(mark.line + 1, mark.column + 1)


def _in_text(text: str, span: Span) -> Span:
    """``span`` kept inside ``text``: the C reader ends a file without a final newline with one
    of its own, and marks the end of input on the line after it, which the file does not have;
    that is the end of the last line."""
    breaks = list(re.finditer("\r\n|[\r\n\x85\u2028\u2029]", text))  # YAML 1.1's, as the reader
    if span.line <= len(breaks) + 1:
        return span
    return Span(len(breaks) + 1, len(text) - (breaks[-1].end() if breaks else 0) + 1)


def _offset_span(text: str, offset: int) -> Span:
    line_start = text.rfind("\n", 0, offset) + 1
    return Span(text.count("\n", 0, offset) + 1, offset - line_start + 1)


def decode(raw: bytes) -> str:
    """Decode file bytes as YAML allows (UTF-8, or UTF-16/32 with a byte order mark)."""
    if raw.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return raw.decode("utf-32")
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16")
    if b"\x00" in raw:
        offset = raw.index(b"\x00")
        raise LoadError("binary file (NUL byte), not YAML or JSON", _byte_span(raw, offset))
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise LoadError(
            f"not valid UTF-8 (byte 0x{raw[error.start]:02x})", _byte_span(raw, error.start)
        ) from None


def _byte_span(raw: bytes, offset: int) -> Span:
    line_start = raw.rfind(b"\n", 0, offset) + 1
    column = len(raw[line_start:offset].decode("utf-8", "replace")) + 1
    return Span(raw.count(b"\n", 0, offset) + 1, column)


def _check_nesting(text: str, limits: Limits = DEFAULT_LIMITS) -> None:
    """Refuse input nested so deep that libyaml's recursive composer would crash.

    A cheap upper bound first (counts in C); a bracket scan only for files with many brackets.
    """
    if text.count("[") + text.count("{") > limits.depth:
        depth = 0
        for match in re.finditer(r"[\[\]{}]", text):
            depth = depth + 1 if match.group() in "[{" else max(depth - 1, 0)
            if depth > _MAX_SCAN_DEPTH:
                raise _too_deep(limits, _offset_span(text, match.start()))
    if not any(pair in text for pair in _COMPACT_PAIRS):
        return  # no two block indicators in a row: no compact nesting (a regex scan costs more)
    for match in _COMPACT_NESTING.finditer(text):
        if match.group(1).count(" ") + match.group(1).count("\t") > _MAX_SCAN_DEPTH // 2:
            raise _too_deep(limits, _offset_span(text, match.start(1)))


# --- go-yaml's plain scalars in flow collections -------------------------------------------------
#
# go-yaml v2 ends a plain scalar at `:` only when a blank follows it, in flow collections too
# (gopkg.in/yaml.v2 v2.4.0 scannerc.go, yaml_parser_scan_plain_scalar: "Check for indicators
# that may end a plain scalar": `:` followed by is_blankz, or in the flow context `,?[]{}`), so
# `[frontend:80]` is one string and `{image: nginx:1.27}` a one-key mapping. The libyaml inside
# ruamel.yaml.clib refuses a `:` followed by anything else there ("found unexpected ':'", a
# check of libyaml 0.1 that go-yaml does not have). Such a file is read again with each of
# those `:` replaced by a stand-in character (one character for one, so every line and column
# stays) that :class:`_EventComposer` turns back into `:` in the scalars.

#: Private-use characters, one of which the text does not hold, stand in for `:`.
_STAND_INS = tuple(chr(code) for code in range(0xE000, 0xE010))
#: How often a file is read again: once for all the `:` that :func:`_flow_colons` finds and
#: once for anchors defined again, then once for each `:` it missed (found at the reader's own
#: error), as long as the readings past those two stay within ``_REREAD_CHARACTERS`` in all:
#: no input costs more than a few readings of the largest file allowed.
_RETRIES = 32
_REREAD_CHARACTERS = 8 << 20
_BLANKZ = frozenset(" \t\r\n\x85\u2028\u2029")
_BREAKS = frozenset("\r\n\x85\u2028\u2029")
_FLOW_INDICATORS = frozenset(",?[]{}")
_SPACES = re.compile(r"[ \t]*")
_INDENT = re.compile(r" *")
_ANCHOR_CHARS = re.compile(r"[0-9A-Za-z_-]*")
_TAG_END = re.compile(r"[ \t\r\n\x85\u2028\u2029,\[\]{}]|\Z")
_LINE_END = re.compile(r"[\r\n\x85\u2028\u2029]|\Z")
_SINGLE_QUOTED = re.compile(r"'[^']*(?:''[^']*)*(?:'|\Z)")
_DOUBLE_QUOTED = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)', re.S)
# Where a plain scalar of the block context may end: `:` before a blank, a comment, a line end.
_BLOCK_PLAIN_END = re.compile(r":(?=[ \t\r\n\x85\u2028\u2029]|\Z)|[ \t]#|[\r\n\x85\u2028\u2029]|\Z")
# The next character of a plain scalar in a flow collection that may end it or be a `:`.
_FLOW_PLAIN_STOP = re.compile(r"[:,?\[\]{}\s\x85\u2028\u2029]|\Z")
_BLANKS_AFTER = re.compile(r"[ \t\r\n\x85\u2028\u2029]*")
_BLOCK_SCALAR_INDENT = re.compile(r"[|>][+-]?([1-9]?)")


def _end(pattern: re.Pattern[str], text: str, position: int) -> int:
    """Where ``pattern`` (which matches the empty string or the end) stops matching at ``position``."""
    match = pattern.match(text, position)
    return match.end() if match else position


def _next(pattern: re.Pattern[str], text: str, position: int) -> int:
    """Where ``pattern`` (which matches at the end, ``\\Z``) first matches from ``position``."""
    match = pattern.search(text, position)
    return match.start() if match else len(text)


def _after_line(text: str, end: int) -> int:
    """The start of the line after the line break at ``end``."""
    return end + (2 if text.startswith("\r\n", end) else 1)


def _flow_colons(text: str) -> list[int]:
    """The offsets of the `:` characters that go-yaml reads inside a plain scalar of a flow
    collection and that are followed by a non-blank: the ones libyaml refuses.

    One pass over the tokens as go-yaml's scanner sees them (comments, quoted and block
    scalars, flow levels). Only a file that libyaml refused is scanned, and a `:` taken here
    that is in fact inside a scalar of another kind (a block scalar this scan misjudged) gets
    its character back all the same; a `:` missed is found at the reader's next error.
    """
    scan = _FlowScan(text)
    while scan.position < scan.size:
        scan.step()
    return scan.colons


class _FlowScan:
    """The state of :func:`_flow_colons`."""

    __slots__ = ("colons", "flow", "line_start", "parent", "position", "size", "text", "token_column")

    def __init__(self, text: str) -> None:
        self.text = text
        self.size = len(text)
        self.colons: list[int] = []
        self.position = 0
        self.line_start = 0
        self.flow = 0  # the flow collections open
        self.parent = -1  # the indentation of the block node that holds what comes next
        self.token_column = 0  # where the last node of the line started

    def step(self) -> None:
        """Go past the blanks, comment, line break or token at ``position``."""
        text, position = self.text, self.position
        char = text[position]
        if char in " \t":
            self.position = _end(_SPACES, text, position)
        elif char in _BREAKS:
            self.new_line(_after_line(text, position))
        elif char == "#":
            self.position = _next(_LINE_END, text, position)
        elif self.flow == 0 and position == self.line_start and self.line_marker(char):
            return
        else:
            self.token(char)

    def new_line(self, start: int) -> None:
        self.position = self.line_start = start
        if self.flow == 0:
            self.parent = _end(_INDENT, self.text, start) - start - 1

    def line_marker(self, char: str) -> bool:
        """Go past a document marker or a directive at the start of a line, if there is one."""
        text, position = self.text, self.position
        if text.startswith(("---", "..."), position) and (
            position + 3 >= self.size or text[position + 3] in _BLANKZ
        ):
            self.position, self.parent = position + 3, -1
            return True
        if char == "%":
            self.position = _next(_LINE_END, text, position)
            return True
        return False

    def token(self, char: str) -> None:
        text, position = self.text, self.position
        column = position - self.line_start
        following = text[position + 1] if position + 1 < self.size else "\n"
        if char in "[{":
            self.token_column = column if self.flow == 0 else self.token_column
            self.flow += 1
            self.position += 1
        elif char in "]}":
            self.flow = max(self.flow - 1, 0)
            self.position += 1
        elif self.flow and char in ",?:":
            self.position += 1  # go-yaml: in a flow collection, `?` and `:` start no plain scalar
        elif char in "-?:" and following in _BLANKZ:
            self.parent = self.token_column if char == ":" else column
            self.position += 1
        elif char in "&*":
            self.position = _end(_ANCHOR_CHARS, text, position + 1)
        elif char == "!":
            end = text.find(">", position) + 1 if following == "<" else _next(_TAG_END, text, position + 1)
            self.position = end if end > position else self.size
        elif char in "'\"":
            self.token_column = column
            self.position = _end(_SINGLE_QUOTED if char == "'" else _DOUBLE_QUOTED, text, position)
        elif self.flow:
            self.position = self.flow_plain(position)
        elif char in "|>":
            self.new_line(self.block_scalar_end(position))
        else:
            self.token_column = column
            self.position = _next(_BLOCK_PLAIN_END, text, position + 1)

    def flow_plain(self, position: int) -> int:
        """The end of the plain scalar at ``position`` in a flow collection, as go-yaml's
        yaml_parser_scan_plain_scalar ends it; its `:` not followed by a blank are kept."""
        text, size = self.text, self.size
        position += 1  # its first character is its own, whatever it is (`-x`)
        while True:
            stop = _next(_FLOW_PLAIN_STOP, text, position)
            if stop >= size:
                return size
            char = text[stop]
            if char in _FLOW_INDICATORS:
                return stop
            if char == ":":
                if stop + 1 >= size or text[stop + 1] in _BLANKZ:
                    return stop
                self.colons.append(stop)
                position = stop + 1
                continue
            # Blanks: the scalar goes on unless a comment, a document marker or an indicator
            # that ends it comes next.
            after = _end(_BLANKS_AFTER, text, stop)
            if after >= size or text[after] == "#" or text[after] in _FLOW_INDICATORS:
                return stop
            if text[after] == ":" and (after + 1 >= size or text[after + 1] in _BLANKZ):
                return stop
            if text.startswith(("---", "..."), after) and text[after - 1] in _BREAKS:
                return stop
            position = after

    def block_scalar_end(self, position: int) -> int:
        """The start of the first line after the block scalar (``|``, ``>``) whose header is at
        ``position``: libyaml's yaml_parser_scan_block_scalar and its indentation rules."""
        text, size, parent = self.text, self.size, self.parent
        header = _BLOCK_SCALAR_INDENT.match(text, position)
        digit = header.group(1) if header else ""
        line_end = _next(_LINE_END, text, position)
        if line_end >= size:
            return size
        position = _after_line(text, line_end)
        if digit:
            indent = parent + int(digit) if parent >= 0 else int(digit)
        else:
            indent, scan = 0, position
            while scan < size:  # leading empty lines may set the indentation
                spaces = _end(_INDENT, text, scan)
                end = _next(_LINE_END, text, spaces)
                indent = max(indent, spaces - scan)
                if spaces != end or end >= size:
                    break
                scan = _after_line(text, end)
            indent = max(indent, parent + 1, 1)
        while position < size:
            spaces = _end(_INDENT, text, position)
            end = _next(_LINE_END, text, spaces)
            if spaces != end and spaces - position < indent:
                return position
            if end >= size:
                return size
            position = _after_line(text, end)
        return size


def _composer(text: str) -> Any:
    """ruamel's C composer, minus its implicit tag resolution: we resolve plain scalars
    ourselves (YAML 1.1, as Kubernetes does), so every implicit tag is left generic.

    The composer calls three Python hooks per node; they are made as cheap as they can be
    (measured on the benchmark corpus: composing takes 0.64x the time of the stock
    ``CSafeLoader``). ``resolve`` hands out one shared ``Tag`` per kind, so no node builds its
    own; the YAML-path resolver hooks, unused here, are C builtins that do nothing with their
    arguments instead of Python methods.
    """
    return _composers()[0](text)


def _composers() -> tuple[Any, Any]:
    """The C composer (:func:`_composer`) and :class:`_EventComposer`'s class, built once."""
    global _COMPOSERS  # noqa: PLW0603 - built once, on first use, to keep start-up light
    if _COMPOSERS is None:
        from ruamel.yaml.cyaml import CSafeLoader
        from ruamel.yaml.nodes import MappingNode, ScalarNode
        from ruamel.yaml.tag import Tag

        scalar_tag, map_tag, seq_tag = Tag(suffix=_IMPLICIT), Tag(suffix=_MAP), Tag(suffix=_SEQ)

        class Composer(CSafeLoader):
            descend_resolver = staticmethod(slice)  # type: ignore[assignment]  # slice(parent, index): a C no-op
            ascend_resolver = staticmethod(tuple)  # type: ignore[assignment]  # tuple(): likewise

            def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
                if kind is ScalarNode:
                    return scalar_tag
                return map_tag if kind is MappingNode else seq_tag

        _COMPOSERS = (Composer, _event_composer_class(Composer, scalar_tag, map_tag, seq_tag))
    return _COMPOSERS


_COMPOSERS: tuple[Any, Any] | None = None


def _event_composer_class(base: Any, scalar_tag: Any, map_tag: Any, seq_tag: Any) -> Any:
    """:class:`_EventComposer` on top of the C composer ``base`` (its events, its constructor)."""
    from ruamel.yaml.composer import ComposerError
    from ruamel.yaml.events import (
        AliasEvent,
        MappingEndEvent,
        MappingStartEvent,
        ScalarEvent,
        SequenceEndEvent,
        StreamEndEvent,
        StreamStartEvent,
    )
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

    class _EventComposer(base):  # type: ignore[misc]
        """Composes nodes from libyaml's events in Python, as go-yaml's parser does
        (gopkg.in/yaml.v2 v2.4.0 decode.go, ``parser.anchor`` and ``parser.alias``): an anchor
        defined again replaces the earlier one for the aliases after it, where the C composer
        refuses the file ("found duplicate anchor"); and ``stand_in`` (see
        :func:`_flow_colons`) is read back as the `:` it stands for. Slower than the C
        composer: only a file that the C composer refused is read with it."""

        stand_in: str | None = None
        depth_limit: int = DEFAULT_LIMITS.depth

        def check_node(self) -> bool:
            if self.check_event(StreamStartEvent):
                self.get_event()
            return not self.check_event(StreamEndEvent)

        def get_node(self) -> Any:
            self.get_event()  # the document's start
            anchors: dict[str, Any] = {}
            node = self._node(anchors, 0)
            self.get_event()  # its end
            return node

        def _node(self, anchors: dict[str, Any], depth: int) -> Any:
            event = self.get_event()
            kind = event.__class__
            if kind is AliasEvent:
                node = anchors.get(event.anchor)
                if node is None:
                    raise ComposerError(
                        None, None, f"found undefined alias {event.anchor!r}", event.start_mark
                    )
                return node
            if depth > self.depth_limit:
                raise _too_deep(Limits(depth=self.depth_limit), _span(event.start_mark))
            if kind is ScalarEvent:
                value = event.value
                if self.stand_in is not None and self.stand_in in value:
                    value = value.replace(self.stand_in, ":")
                tag = event.tag
                node = ScalarNode(
                    scalar_tag if tag is None or tag == "!" else tag,
                    value,
                    event.start_mark,
                    event.end_mark,
                    style=event.style,
                )
                if event.anchor is not None:
                    anchors[event.anchor] = node
                return node
            mapping = kind is MappingStartEvent
            node = (MappingNode if mapping else SequenceNode)(
                map_tag if mapping else seq_tag, [], event.start_mark, None, flow_style=event.flow_style
            )
            if event.anchor is not None:  # before its content, as go-yaml: an alias inside
                anchors[event.anchor] = node  # is the recursion the builder refuses
            end = MappingEndEvent if mapping else SequenceEndEvent
            items = node.value
            while not self.check_event(end):
                if mapping:
                    key = self._node(anchors, depth + 1)
                    items.append((key, self._node(anchors, depth + 1)))
                else:
                    items.append(self._node(anchors, depth + 1))
            node.end_mark = self.get_event().end_mark
            return node

    return _EventComposer


class _Reading:
    """How a file's text is read: by the C composer, then again as go-yaml reads what libyaml
    refused (a `:` inside a plain scalar of a flow collection, an anchor defined twice)."""

    __slots__ = ("events", "retries", "stand_in", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.events = False
        self.stand_in: str | None = None
        self.retries = 0

    def loader(self, limits: Limits) -> Any:
        if not self.events:
            return _composer(self.text)
        loader = _composers()[1](self.text)
        loader.stand_in = self.stand_in
        loader.depth_limit = limits.depth
        return loader

    def again(self, error: Exception) -> bool:
        """Whether to read again after ``error``, changed to read what go-yaml reads there."""
        from ruamel.yaml.composer import ComposerError
        from ruamel.yaml.scanner import ScannerError

        if self.retries >= _RETRIES or (
            self.retries >= 2 and (self.retries - 1) * len(self.text) > _REREAD_CHARACTERS
        ):
            return False
        if isinstance(error, ComposerError) and (error.context or "").startswith("found duplicate anchor"):
            self.events = True
        elif (
            isinstance(error, ScannerError) and error.problem == "found unexpected ':'" and error.problem_mark
        ):
            index = error.problem_mark.index
            if not 0 <= index < len(self.text) or self.text[index] != ":":
                return False
            if self.stand_in is None:
                self.stand_in = next((char for char in _STAND_INS if char not in self.text), None)
                if self.stand_in is None:
                    return False
                offsets = [*_flow_colons(self.text), index]
            else:
                offsets = [index]
            chars = list(self.text) if len(offsets) > 1 else None
            if chars is None:
                self.text = self.text[:index] + self.stand_in + self.text[index + 1 :]
            else:
                for offset in offsets:
                    if chars[offset] == ":":
                        chars[offset] = self.stand_in
                self.text = "".join(chars)
            self.events = True
        else:
            return False
        self.retries += 1
        return True


def _documents(text: str, limits: Limits = DEFAULT_LIMITS) -> Iterator[tuple[Any, _Builder]]:
    """Compose and build each document of ``text``; raises on bad input (see :func:`parse`).

    Where libyaml refuses what go-yaml reads (:class:`_Reading`), the text is read again, and
    the documents already given are not given again."""
    _check_nesting(text, limits)
    reading = _Reading(text)
    given = 0
    while True:
        try:
            for index, document in enumerate(_read(reading, limits)):
                if index >= given:
                    given += 1
                    yield document
            return
        except _yaml_errors() as error:
            if not reading.again(error):
                raise


def compose_nodes(text: str, limits: Limits = DEFAULT_LIMITS) -> tuple[Any, ...]:
    """The root node of every document of ``text``, composed as :func:`_documents` reads it
    (read again as go-yaml reads what libyaml refuses); raises on bad input. For writing
    files back (:mod:`kaffinity.load.edits`): the nodes' marks are the text's own."""
    _check_nesting(text, limits)
    reading = _Reading(text)
    while True:
        loader = reading.loader(limits)
        try:
            roots: list[Any] = []
            with _frames_for(limits.depth):
                while loader.check_node():
                    roots.append(loader.get_node())
            return tuple(roots)
        except _yaml_errors() as error:
            if not reading.again(error):
                raise
        finally:
            loader.dispose()
            vars(loader).clear()  # the loader refers to itself: free it now (see _read)


def _yaml_errors() -> tuple[type[Exception], ...]:
    from ruamel.yaml.error import YAMLError

    return (YAMLError,)


def _read(reading: _Reading, limits: Limits) -> Iterator[tuple[Any, _Builder]]:
    """The documents of ``reading``'s text, each composed and built."""
    loader = reading.loader(limits)
    aliases = "&" in reading.text and "*" in reading.text
    expanded = 0
    try:
        while loader.check_node():
            builder = _Builder(loader, aliases, limits)
            builder.expanded = expanded  # alias-nodes counts the whole file
            with _frames_for(limits.depth):
                node = loader.get_node()
                data = builder.build(node, 0)
            if builder.expanded > expanded:  # aliases were followed (each built once, shared)
                _check_aliasing(node)
            expanded = builder.expanded
            yield data, builder
    finally:
        loader.dispose()
        # ruamel's loader refers to itself (as its own parser, composer and constructor); break
        # the cycle so the loader is freed at once rather than by the cyclic garbage collector.
        vars(loader).clear()


# go-yaml's decoder (gopkg.in/yaml.v2 v2.4.0 decode.go, which sigs.k8s.io/yaml and so kubectl
# and kube-apiserver use; yaml.v3 has the same) refuses "excessive aliasing": past 100 nodes
# decoded through aliases and 1,000 in all, the share decoded through aliases may not exceed
# allowedAliasRatio(decodes): 99% up to 400,000 decodes, then down to 10% at 4,000,000.
_ALIAS_RATIO_LOW = 400_000
_ALIAS_RATIO_HIGH = 4_000_000


def _allowed_alias_ratio(decodes: int) -> float:
    """go-yaml's ``allowedAliasRatio``."""
    if decodes <= _ALIAS_RATIO_LOW:
        return 0.99
    if decodes >= _ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * ((decodes - _ALIAS_RATIO_LOW) / (_ALIAS_RATIO_HIGH - _ALIAS_RATIO_LOW))


def _check_aliasing(root: Any) -> None:
    """Refuse a document that Kubernetes' YAML decoder refuses for excessive aliasing.

    go-yaml counts one decode per node it unmarshals, in document order: every key and value,
    an alias node, and again every node of the anchored value each time an alias repeats it
    (``aliasCount``: the decodes made inside an alias). The composed tree shares an anchored node
    wherever it is aliased, so this walk visits each node of the file once (never the
    expansion: an alias adds the size its anchored node had), without recursion. The
    decodes of a merge key's ``<<`` are not counted (go-yaml merges without unmarshalling the
    key). A document is decoded on its own (kubectl splits the stream into documents first).
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    decodes = 1  # the document node
    aliased = 0
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if node.__class__ is tuple:  # a collection's end: what decoding it again costs
            collection, start = node
            sizes[id(collection)] = decodes - start
            open_nodes.discard(id(collection))
            continue
        size = sizes.get(id(node))
        if size is not None:  # an alias: go-yaml decodes the anchored node again
            decodes += 1 + size
            aliased += size
        elif id(node) in open_nodes:
            raise _recursive(node)
        else:
            decodes += 1
            value = node.value
            if value.__class__ is str:
                sizes[id(node)] = 1
            else:
                open_nodes.add(id(node))
                stack.append((node, decodes - 1))
                if node.id == "mapping":
                    for key, item in reversed(value):
                        stack.append(item)
                        if key.value != "<<" or key.style:
                            stack.append(key)
                else:
                    stack.extend(reversed(value))
        if aliased > 100 and decodes > 1000 and aliased / decodes > _allowed_alias_ratio(decodes):
            raise LoadError(
                f"aliases of the node anchored here make {aliased:,} of the {decodes:,} nodes of this "
                'document; Kubernetes\' YAML decoder refuses it ("document contains excessive aliasing")',
                _span(node.start_mark if node.__class__ is not tuple else node[0].start_mark),
            )


@contextmanager
def _frames_for(levels: int) -> Iterator[None]:
    """Room on the interpreter's stack for :class:`_Builder` to recurse ``levels`` deep (two
    frames a level): a file under ``limits.depth`` is never refused as too deep because of the
    interpreter's default recursion limit (1,000 frames: about 480 levels). The limit is put
    back afterwards; ``limits.depth`` itself is capped (10,000) well inside the C stack."""
    needed = 2 * levels + _FRAMES_IN_USE
    before = sys.getrecursionlimit()
    if needed <= before:
        yield
        return
    sys.setrecursionlimit(needed)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


#: Frames below the builder: the command, the engine, a worker or a test runner.
_FRAMES_IN_USE = 400
#: Frames that one level of nesting may take in code kaffinity does not own that walks parsed
#: data recursively: jsonschema validates through three to five generator frames a level (more
#: through a ``$ref``), ``repr`` (jsonschema's messages) one, cel-expr-python's conversion and
#: the JSON encoder count their C levels against the same limit. kaffinity's own walks over
#: parsed data are loops.
_FRAMES_PER_LEVEL = 8


def make_room(depth: int = DEFAULT_LIMITS.depth) -> None:
    """Raise the interpreter's recursion limit (never lower it) so that data nested as deep as
    the loader accepts (``limits.depth``) cannot exhaust it in any stage: without this, a
    manifest 350 levels deep made a policy's validation fail with RecursionError (the default
    limit is 1,000 frames). On Python 3.11 and later a call between Python functions takes no C
    stack, and ``limits.depth`` is capped at 10,000; what C code needs is made room for too
    (:func:`_c_stack_for`)."""
    needed = _FRAMES_PER_LEVEL * depth + _FRAMES_IN_USE
    if needed > sys.getrecursionlimit():
        sys.setrecursionlimit(needed)
    _c_stack_for(depth)


#: C stack a level of nesting may take in C and C++ code that recurses over the data:
#: cel-expr-python converts an object to CEL values recursively (measured: about 1.6 KiB a
#: level, so the usual 8 MiB stack ended the process with SIGSEGV near 5,000 levels), as do
#: ``repr`` and generators resumed in C (jsonschema).
_STACK_PER_LEVEL = 4 << 10
_STACK_BASE = 8 << 20


def _c_stack_for(depth: int) -> None:
    """Let the main thread's C stack grow as deep as ``depth`` levels need. Linux checks a
    growing stack against the soft ``RLIMIT_STACK`` when it grows, so raising the limit (up
    to the hard one) takes effect at once; elsewhere, or when it cannot be raised, it stays."""
    try:
        import resource
    except ImportError:  # Windows: the stack size is fixed in the executable
        return
    needed = _STACK_BASE + _STACK_PER_LEVEL * depth
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
        if soft != resource.RLIM_INFINITY and soft < needed:
            wanted = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
            resource.setrlimit(resource.RLIMIT_STACK, (wanted, hard))
    except (ValueError, OSError):
        return


def _problem(text: str, error: Exception, limits: Limits = DEFAULT_LIMITS) -> LoadProblem:
    """The one-line parse-error for an exception raised while parsing ``text``."""
    from ruamel.yaml.error import MarkedYAMLError

    if isinstance(error, LoadError):
        return LoadProblem("parse-error", error.message, error.span)
    if isinstance(error, MarkedYAMLError):
        mark = error.problem_mark or error.context_mark
        message = error.problem or "invalid YAML"
        if error.context:
            started = error.context_mark
            where = f" (started at line {started.line + 1}, column {started.column + 1})" if started else ""
            message = f"{error.context}{where}: {message}"
        return LoadProblem("parse-error", message, _in_text(text, _span(mark)) if mark else None)
    if isinstance(error, RecursionError):
        return LoadProblem("parse-error", _too_deep(limits, None).message, None)
    position = getattr(error, "position", None)
    span = _offset_span(text, position) if isinstance(position, int) else None
    return LoadProblem("parse-error", _reader_message(error), span)


def _parse_errors() -> tuple[type[Exception], ...]:
    from ruamel.yaml.error import YAMLError

    return (LoadError, YAMLError, RecursionError)


def parse_data(text: str, *, strict: bool = False) -> tuple[Any, LoadProblem | None]:
    """The data of the first document of ``text`` (a config file), or the problem; ``strict``:
    a key given twice in a mapping is the problem, as in a manifest."""
    try:
        for data, builder in _documents(text):
            if strict and builder.duplicates:
                return data, _duplicate_problem(builder.duplicates[0])
            return data, None
    except _parse_errors() as error:
        return None, _problem(text, error)
    return None, None


def _parses_without_actions(text: str) -> bool:
    """Whether ``text`` is valid YAML once its template actions are taken out.

    A chart template fails to parse because of its actions; rendered output that merely holds
    templates inside strings (and is broken elsewhere) still fails without them, and is then a
    plain parse error. Lines holding only an action are emptied; other actions become a word.
    """
    if _HELM_ACTION.search(text) is None:
        return False
    stripped = _ACTION_LINE.sub("", text)
    stripped = _ACTION.sub(lambda match: "helm" + "\n" * match.group().count("\n"), stripped)
    try:
        for _ in _documents(stripped):
            pass
    except _parse_errors():
        return False
    return True


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while loading.

    Loading allocates millions of long-lived objects and no cycles; the collector's repeated
    scans of them cost more than parsing (measured on the real-world corpus: 4.2 s with it,
    1.6 s without). Nested pauses are free.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def parse(name: str, text: str, limits: Limits = DEFAULT_LIMITS) -> SourceFile:
    """Parse the text of one file into documents (List kinds flattened) and problems."""
    with gc_paused():
        return _parse(name, text, limits)


def _parse(name: str, text: str, limits: Limits) -> SourceFile:
    documents: list[Document] = []
    problems: list[LoadProblem] = []
    template: Span | None = None
    try:
        for index, (data, builder) in enumerate(_documents(text, limits)):
            template = template or builder.template
            duplicates = tuple(builder.duplicates)
            documents.extend(_objects(name, index, data, duplicates, problems))
            problems.extend(map(_duplicate_problem, duplicates))
    except _parse_errors() as error:
        problems.append(_problem(text, error, limits))
    if "{{" in text and template is None and problems and _parses_without_actions(text):
        match = _HELM_ACTION.search(text)
        template = _offset_span(text, match.start()) if match is not None else None
    if template is not None:
        message = (
            "unrendered Helm template: lint the rendered output instead, "
            "e.g. `helm template RELEASE CHART | kaffinity lint -`"
        )
        return SourceFile(name, text, (), (LoadProblem("helm-template", message, template),))
    return SourceFile(name, text, tuple(documents), tuple(problems))


def _duplicate_problem(duplicate: DuplicateKey) -> LoadProblem:
    """A key given twice in one mapping. kubectl refuses the file: its YAML decoding is strict
    ("yaml: unmarshal errors: mapping key "x" already defined at line N"), and so is the API
    server's field validation, kubectl's default (``--validate=strict``; ``warn``/``ignore``
    would apply the later value, which is what kaffinity lints the document with)."""
    message = f'mapping key "{duplicate.key}" already defined at line {duplicate.first.line}'
    return LoadProblem("parse-error", message, duplicate.span)


def _reader_message(error: Exception) -> str:
    reason = getattr(error, "reason", None)
    return f"cannot read input: {reason}" if reason else str(error).splitlines()[0]


def _objects(
    name: str, index: int, data: Any, duplicates: tuple[DuplicateKey, ...], problems: list[LoadProblem]
) -> Iterator[Document]:
    """The Kubernetes objects of one document: itself, or the items of a List (a List whose
    items kubectl cannot decode adds to ``problems``)."""
    if not isinstance(data, PosDict):
        return
    yield from _flatten(name, index, data, data, (), duplicates, None, problems)


def _flatten(
    name: str,
    index: int,
    root: PosDict,
    data: PosDict,
    prefix: DataPath,
    duplicates: tuple[DuplicateKey, ...],
    list_kind: tuple[str, str] | None,
    problems: list[LoadProblem],
) -> Iterator[Document]:
    kind = data.get("kind")
    api_version = data.get("apiVersion")
    if list_kind is not None and (not kind or not api_version):
        # Typed lists from the API (`DeploymentList`) leave apiVersion/kind off their items.
        data = _with_type(data, api_version or list_kind[0], kind or list_kind[1])
        kind, api_version = data["kind"], data["apiVersion"]
    if not isinstance(kind, str) or not isinstance(api_version, str) or not kind or not api_version:
        return
    items = data.get("items")
    if kind == "List" and items is not None and not isinstance(items, PosList):
        # kubectl decodes a List's items as a list of objects (apimachinery's
        # UnstructuredJSONScheme, decodeToList: `Items []json.RawMessage`): anything else
        # fails the whole file ("cannot unmarshal ... into ... items").
        span = locate(root, (*prefix, "items"), root.span)
        problems.append(
            LoadProblem("parse-error", f"List items must be a list of objects, not {_shown(items)}", span)
        )
        return
    if kind.endswith("List") and isinstance(items, PosList):
        yield from _list_items(name, index, root, prefix, kind, api_version, items, problems)
        return
    span = locate(root, prefix or ("apiVersion",), root.span)
    yield Document(name, index, data, root, span, prefix, duplicates)


def _list_items(
    name: str,
    index: int,
    root: PosDict,
    prefix: DataPath,
    kind: str,
    api_version: str,
    items: PosList,
    problems: list[LoadProblem],
) -> Iterator[Document]:
    """The objects of a List's (or a typed list's) items; a ``List`` item that is no object adds
    to ``problems``."""
    item_kind = (api_version, kind[: -len("List")]) if kind != "List" else None
    for position, item in enumerate(items):
        path = (*prefix, "items", position)
        if isinstance(item, PosDict):
            yield from _flatten(name, index, root, item, path, (), item_kind, problems)
        elif kind == "List" and item is not None:
            # Each item is decoded into an object (a JSON object): a scalar or a list fails
            # (json.Unmarshal of null leaves the object empty: a null item is only skipped,
            # as linkerd's `inject` golden files hold them; real corpus).
            span = locate(root, path, root.span)
            message = f"List item must be an object, not {_shown(item)}"
            problems.append(LoadProblem("parse-error", message, span))


def _shown(value: Any) -> str:
    """A value's kind in words, for a message."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "a scalar"


def _with_type(data: PosDict, api_version: str, kind: str) -> PosDict:
    """A copy of a typed List's item with the apiVersion and kind of the List (placed at the item)."""
    copy = PosDict(data.span)
    copy.update(data)
    copy.pos.extend(data.pos)
    at_item = data.span.line << COLUMN_BITS | data.span.column
    for key, value in (("apiVersion", api_version), ("kind", kind)):
        if key not in copy:
            copy[key] = value
            copy.pos.append(at_item)
    return copy
