"""Locating the node an edit changes: every document of a text composed with ruamel's C
composer (:func:`compose`, marks with exact character offsets), its aliased nodes and its
indentation habits (:class:`_Layout`), and the node at a data path (:func:`find_node`), never
one shared through an alias."""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass
from typing import Any, TypeAlias

from kaffinity.load.source import DataPath

#: A node of ruamel's composer (``ruamel.yaml.nodes.Node``); ruamel is imported only when used.
YamlNode: TypeAlias = Any


@functools.lru_cache(maxsize=4)  # a large file's nodes take far more memory than its text
def compose(text: str) -> tuple[YamlNode, ...]:
    """The root node of every YAML document of ``text`` (empty if the text does not parse)."""
    from kaffinity.load.parse import compose_nodes
    from kaffinity.load.parse.reader import _parse_errors

    try:
        return compose_nodes(text)
    except _parse_errors():
        return ()


@dataclass(frozen=True, slots=True)
class _Layout:
    """One document's root node, its aliased nodes and its indentation habits. The root is kept
    here so that the node ids below stay valid whatever ``compose`` has cached."""

    root: YamlNode
    shared: frozenset[int]  # id() of nodes reached more than once (through aliases)
    # (id(node), id(parent), position in parent) of each shared node where it stands in the text
    # (its anchor); elsewhere (an alias) its marks point back at the anchor.
    anchors: frozenset[tuple[int, int, int]]
    step: int  # indentation of a block mapping under a key, relative to the key
    dash: int  # column of a block sequence's dashes under a key, relative to the key
    json: bool  # the document is a flow collection (a JSON file)


def _children(node: YamlNode) -> list[YamlNode]:
    """A collection's nodes in text order (a mapping's keys and values alternating)."""
    if _is_mapping(node):
        return [child for pair in node.value for child in pair]
    if _is_sequence(node):
        return list(node.value)
    return []


def _sites(root: YamlNode) -> tuple[dict[int, tuple[int, int, int]], set[int]]:
    """Where each node first stands, (id(node), id(parent), position in parent), and the id() of
    the nodes reached more than once (through aliases). Walked in text order, so the first visit
    of a shared node is where its anchor stands."""
    sites: dict[int, tuple[int, int, int]] = {}
    shared: set[int] = set()
    walk: list[tuple[YamlNode, int, int]] = [(root, 0, 0)]
    while walk:
        node, parent, position = walk.pop()
        if id(node) in sites:
            shared.add(id(node))
            continue
        sites[id(node)] = (id(node), parent, position)
        children = _children(node)
        walk.extend((child, id(node), index) for index, child in reversed(list(enumerate(children))))
    return sites, shared


def _indentation(root: YamlNode, shared: set[int]) -> tuple[int, int]:
    """The document's habits, by majority of the block collections under a key: how far a
    mapping is indented (2 when none says), and where a sequence's dashes stand (0)."""
    steps: Counter[int] = Counter()
    dashes: Counter[int] = Counter()
    stack = [root]
    visited: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in visited or id(node) in shared:
            continue
        visited.add(id(node))
        if _is_mapping(node):
            for key, value in node.value:
                stack += (key, value)
                if not node.flow_style:
                    _count_offset(key, value, shared, steps, dashes)
        elif _is_sequence(node):
            stack.extend(node.value)
    step = steps.most_common(1)[0][0] if steps else 2
    dash = dashes.most_common(1)[0][0] if dashes else 0
    return step, dash


def _count_offset(
    key: YamlNode, value: YamlNode, shared: set[int], steps: Counter[int], dashes: Counter[int]
) -> None:
    """Count the offset of a block collection on the lines below its key (not a shared one)."""
    if id(value) in shared or value.start_mark.line <= key.start_mark.line:
        return
    offset = value.start_mark.column - key.start_mark.column
    if _is_mapping(value) and not value.flow_style and offset > 0:
        steps[offset] += 1
    elif _is_sequence(value) and not value.flow_style and offset >= 0:
        dashes[offset] += 1


@functools.lru_cache(maxsize=64)
def _layout(text: str, doc_index: int) -> _Layout | None:
    roots = compose(text)
    if not 0 <= doc_index < len(roots):
        return None
    root = roots[doc_index]
    sites, shared = _sites(root)
    step, dash = _indentation(root, shared)
    json = (_is_mapping(root) or _is_sequence(root)) and bool(root.flow_style)
    anchors = frozenset(sites[node_id] for node_id in shared)
    return _Layout(root, frozenset(shared), anchors, step, dash, json)


def _is_mapping(node: YamlNode) -> bool:
    return bool(node.id == "mapping")


def _is_sequence(node: YamlNode) -> bool:
    return bool(node.id == "sequence")


def _is_scalar(node: YamlNode) -> bool:
    return bool(node.id == "scalar")


def _key(node: YamlNode) -> str | None:
    """A key as the loader reads it (None for a merge key ``<<`` or a non-scalar key)."""
    from kaffinity.load.parse import resolve_plain
    from kaffinity.load.parse.scalars import _key_string

    if not _is_scalar(node):
        return None
    value: str = node.value
    if node.style:
        return value
    if value == "<<":
        return None
    return _key_string(resolve_plain(value))


@dataclass(frozen=True, slots=True)
class _Found:
    node: YamlNode
    parent: YamlNode | None  # the mapping holding ``node`` as a value, if any
    key: YamlNode | None  # the key node of ``node`` in ``parent``
    layout: _Layout


def _find(text: str, doc_index: int, path: DataPath) -> _Found | None:
    layout = _layout(text, doc_index)
    if layout is None:
        return None
    node = layout.root
    parent = key_node = None
    for item in path:
        if isinstance(item, str) and _is_mapping(node):
            match = None
            for key, value in node.value:
                if _key(key) == item:
                    match = key, value  # a repeated key: the later one wins, as in the loader
            if match is None:
                return None
            parent, (key_node, node) = node, match
        elif isinstance(item, int) and not isinstance(item, bool) and _is_sequence(node):
            if not 0 <= item < len(node.value):
                return None
            parent = key_node = None
            node = node.value[item]
        else:
            return None
        if id(node) in layout.shared or (key_node is not None and id(key_node) in layout.shared):
            return None
    return _Found(node, parent, key_node, layout)


def find_node(text: str, doc_index: int, path: DataPath) -> YamlNode | None:
    """The node at ``path`` (keys and indices from the root of document ``doc_index``).

    None if the path breaks, or if the node or one on the way is shared through an alias.
    """
    found = _find(text, doc_index, path)
    return None if found is None else found.node
