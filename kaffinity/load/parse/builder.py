"""Composed nodes built into :class:`~kaffinity.load.source.PosDict` /
:class:`~kaffinity.load.source.PosList` with the position of every key and item (:class:`_Builder`):
explicit tags, duplicate keys, merge keys and aliases as go-yaml v2 reads them, within the
limits (nesting, alias nodes, go-yaml's "excessive aliasing")."""

from __future__ import annotations

import binascii
import codecs
import re
import warnings
from collections.abc import Iterable, Sequence
from sys import intern
from typing import Any, cast

from kaffinity.load.parse.limits import Limits
from kaffinity.load.parse.results import LoadError, _recursive, _span, _too_deep
from kaffinity.load.parse.scalars import (
    _BINARY,
    _IMPLICIT,
    _MERGE,
    _MERGE_NEEDS_MAPS,
    _PLAIN_KEYS,
    _PLAIN_KEYS_SIZE,
    _RESOLVE,
    _RESOLVED_TAGS,
    _key_string,
    _not_json,
    _unsupported_key,
    resolve_plain,
)
from kaffinity.load.source import COLUMN_BITS, DuplicateKey, PosDict, PosList, Span, packed, unpack
from kaffinity.load.source import positions as source_positions

#: Scalar strings up to this long are interned (a DNS label's limit and more: names, label
#: values, quantities, image names; not free text).
_INTERNED = 253
_SCALAR_SIZE = (None, 1)
# Inside a value that parses, only what Helm alone writes: Go's own actions (if, with, range,
# end, template) are also Prometheus and Alertmanager templating, rendered into the rules of
# kube-prometheus ("{{ with $labels.cluster -}} on Cluster {{ . }} {{- end }}").
_HELM_IN_VALUE = re.compile(
    r"\{\{-?\s*(?:\.Values\b|\.Release\b|\.Chart\b|\.Capabilities\b|\.Files\b|\$\.Values\b"
    r"|include\s|tpl\s|toYaml\s)"
)


def _replace_one_byte(error: UnicodeError) -> tuple[str, int]:
    """Invalid UTF-8 as Go's encoding/json writes it: each invalid byte is one U+FFFD
    (``utf8.DecodeRuneInString`` gives RuneError of width 1), where Python's ``replace``
    replaces a truncated sequence as a whole."""
    assert isinstance(error, UnicodeDecodeError)
    return "\ufffd", error.start + 1


_GO_REPLACE = "kaffinity-go-replace"
codecs.register_error(_GO_REPLACE, _replace_one_byte)

#: The explicit tags whose scalars go-yaml resolves as plain scalars, then checks the type of.
_TYPED = frozenset("tag:yaml.org,2002:" + name for name in ("null", "bool", "int", "float"))
_TYPE_TAGS = {type(None): "null", bool: "bool", int: "int", float: "float"}
_new_dict = dict.__new__
_new_list = list.__new__


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
                # Go's decoder refuses excess padding (`YWJj=`), which Python's strict mode
                # accepts; a whole number of 4-character quanta is what it reads.
                encoded = value.replace("\r", "").replace("\n", "")
                try:
                    if len(encoded) % 4:
                        raise ValueError(encoded)
                    data = binascii.a2b_base64(encoded, strict_mode=True)
                except (binascii.Error, ValueError):
                    raise LoadError(
                        "!!binary value contains invalid base64 data", _span(node.start_mark)
                    ) from None
                return data.decode("utf-8", _GO_REPLACE)
            if tag in _TYPED:
                return self._typed(node, tag, value)
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
                return constructed.decode("utf-8", _GO_REPLACE)
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

    def _typed(self, node: Any, tag: str, value: str) -> Any:
        """A scalar with an explicit ``!!null``, ``!!bool``, ``!!int`` or ``!!float`` tag, quoted
        or not: go-yaml v2 (resolve.go, ``resolve``) resolves its text as a plain scalar and
        refuses a value of another type ("cannot decode !!bool `yes` as a !!null"), except an
        integer tagged ``!!float``, which becomes a float."""
        resolved = resolve_plain(value)
        found = _TYPE_TAGS.get(resolved.__class__, "str")
        wanted = tag.rsplit(":", 1)[-1]
        if found == "int" and wanted == "float":
            resolved = float(resolved)
        elif found != wanted:
            raise LoadError(f"cannot decode !!{found} `{value}` as a !!{wanted}", _span(node.start_mark))
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
        result = _new_list(PosList)
        # The span first, then each item's position: packed in one bytes (load.source.pack).
        positions: list[int] = [(mark.line + 1) << COLUMN_BITS | (mark.column + 1)]
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
        result._pos, result._span = packed(positions), None
        return result

    def _mapping(self, node: Any, depth: int) -> PosDict:
        mark = node.start_mark
        result = _new_dict(PosDict)
        # The span first, then each key's position: packed in one bytes (load.source.pack).
        positions: list[int] = [(mark.line + 1) << COLUMN_BITS | (mark.column + 1)]
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
                        merged = self._merge(result, positions, key_node, value_node, depth, merged)
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
                merged = self._merge(result, positions, key_node, value_node, depth, merged)
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
                    self.duplicates.append(DuplicateKey(key, unpack(position), unpack(positions[first + 1])))
                positions[first + 1] = position
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
        result._pos, result._span = packed(positions), None
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
        self,
        target: PosDict,
        positions: list[int],
        key_node: Any,
        node: Any,
        depth: int,
        merged: set[str] | None,
    ) -> set[str]:
        """A YAML merge key (``<<: *base``) as go-yaml v2 applies it (v2.4.0 decode.go,
        ``mapping`` and ``merge``): where it stands among the keys, so that its keys replace
        those given before it and keys after it replace its own; of a sequence of mappings,
        the earlier ones win. Returns the keys it set (``merged``, added to). ``positions`` are
        the target's as :meth:`_mapping` builds them: its span first."""
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
            held = cast("Sequence[int]", source_positions(value))  # the parser's: every one known
            for (key, item), position in zip(value.items(), held, strict=True):
                if key in target:
                    order = list(target) if order is None else order
                    positions[order.index(key) + 1] = position
                else:
                    positions.append(position)
                    if order is not None:
                        order.append(key)
                target[key] = item
                merged.add(key)
        return merged


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
