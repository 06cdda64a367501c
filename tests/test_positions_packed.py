"""The packed position store (``kaffinity.load.source.pack``): every mapping and sequence the
parser, compaction and the cache build keeps its span and the position of each key and item in
one ``bytes``. It must answer what the node tree says, for every key and item of real files, and
stay exact through compaction, pickling (``--jobs``) and the cache's JSON."""

from __future__ import annotations

import pickle
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kaffinity.cache.trees import _node, _tree
from kaffinity.k8s.compact import compact_file
from kaffinity.load.parse import compose_nodes, parse
from kaffinity.load.parse.reader import _documents
from kaffinity.load.source import (
    COLUMN_BITS,
    DataPath,
    PosDict,
    PosList,
    Span,
    locate,
    pack,
    packed,
    positions,
    set_positions,
    unpack,
)

ROOT = Path(__file__).resolve().parent.parent


def _plain_files() -> list[Path]:
    """YAML files of the repository's examples and test data that parse whole, without aliases
    or merge keys (where a node's marks are the anchor's, not the alias's) nor Helm templates;
    manifests or not (every document is parsed with its positions)."""
    found = []
    for folder in ("examples", "tests/data"):
        for path in sorted((ROOT / folder).rglob("*.yaml")):
            text = path.read_text(encoding="utf-8", errors="replace")
            if "&" in text or "<<" in text or "{{" in text:
                continue
            try:
                compose_nodes(text)
            except Exception:  # noqa: BLE001 - a file the reference walk cannot take
                continue
            found.append(path)
    return found


FILES = _plain_files()


def _reference(node: Any, path: DataPath = ()) -> Iterator[tuple[DataPath, Span, Span | None]]:
    """Every key and item below a composed node, walked straight from ruamel's marks: (its data
    path, where its key or item starts, where its value's collection starts or None)."""
    if node.id == "mapping":
        last = {str(key.value): number for number, (key, _) in enumerate(node.value)}
        for number, (key, value) in enumerate(node.value):
            if key.value == "<<" or last[str(key.value)] != number:
                continue  # a duplicate key: the later one is kept, where it stands
            here = (*path, str(key.value))
            yield here, _mark(key), _mark(value) if value.id != "scalar" else None
            yield from _reference(value, here)
    elif node.id == "sequence":
        for number, item in enumerate(node.value):
            here = (*path, number)
            yield here, _mark(item), _mark(item) if item.id != "scalar" else None
            yield from _reference(item, here)


def _mark(node: Any) -> Span:
    return Span(node.start_mark.line + 1, node.start_mark.column + 1)


def _follow(data: Any, path: DataPath) -> Any:
    for step in path:
        data = data[step]
    return data


def test_the_examples_are_many() -> None:
    assert len(FILES) > 50


@pytest.mark.parametrize("path", FILES, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_key_and_item_where_the_node_tree_says(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    roots = [data for data, _ in _documents(text) if isinstance(data, (PosDict, PosList))]
    nodes = [node for node in compose_nodes(text) if node.id != "scalar"]
    assert len(roots) == len(nodes)
    checked = 0
    for root, node in zip(roots, nodes, strict=True):
        assert isinstance(root, (PosDict, PosList))
        assert root.span == _mark(node)
        assert isinstance(root._pos, bytes)  # packed
        for data_path, where, collection in _reference(node):
            assert locate(root, data_path, Span(0, 0)) == where, data_path
            parent = _follow(root, data_path[:-1])
            step = data_path[-1]
            index = list(parent).index(step) if isinstance(parent, PosDict) else step
            assert isinstance(index, int)
            assert unpack(positions(parent)[index]) == where
            if isinstance(parent, PosDict):
                assert isinstance(step, str)
                held = parent.key_position(step)
                assert held is not None and unpack(held) == where
            if collection is not None:
                assert _follow(root, data_path).span == collection
            checked += 1
    assert checked or not roots


TEXT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, tier: front}
spec:
  template:
    spec:
      containers:
        - name: web
          image: nginx
          resources: {requests: {cpu: 100m}}
      volumes: [{name: data, emptyDir: {}}]
"""


def _positions_of(node: Any) -> list[tuple[Span, list[int | None]]]:
    """Every container's span and positions, depth first."""
    found = [(node.span, list(positions(node)))]
    for item in node.values() if isinstance(node, PosDict) else node:
        if isinstance(item, (PosDict, PosList)):
            found.extend(_positions_of(item))
    return found


def test_reading_pos_opens_a_packed_node_and_it_may_then_be_written() -> None:
    root = parse("a.yaml", TEXT).documents[0].data
    metadata = root["metadata"]
    assert isinstance(metadata._pos, bytes)
    before = list(positions(metadata))
    span = metadata.span
    opened = metadata.pos
    assert isinstance(opened, array) and list(opened) == before
    assert metadata.span == span
    opened.append(7 << COLUMN_BITS | 3)
    assert unpack(metadata.pos[-1]) == Span(7, 3)
    metadata.span = Span(9, 9)
    assert metadata.span == Span(9, 9) and list(metadata.pos) == [*before, 7 << COLUMN_BITS | 3]


def test_setting_the_span_of_a_packed_node_keeps_its_positions() -> None:
    labels = parse("a.yaml", TEXT).documents[0].data["metadata"]["labels"]
    before = list(positions(labels))
    labels.span = Span(1, 2)
    assert labels.span == Span(1, 2) and list(positions(labels)) == before


def test_pack_leaves_what_it_cannot_hold_to_a_list() -> None:
    assert pack(Span(1, 1), [1 << COLUMN_BITS | 1, None]) is None
    assert pack(Span(1, 1 << COLUMN_BITS), []) is None
    assert pack(Span(-1, 1), []) is None
    node = PosList(Span(3, 4))
    node.append("x")
    set_positions(node, Span(3, 4), [None])
    assert node.span == Span(3, 4) and list(node.pos) == [None]
    set_positions(node, Span(3, 4), [5 << COLUMN_BITS | 6])
    assert isinstance(node._pos, bytes) and node.span == Span(3, 4)
    assert unpack(positions(node)[0]) == Span(5, 6)


def test_positions_survive_pickling_compaction_and_the_cache() -> None:
    file = parse("a.yaml", TEXT)
    root = file.documents[0].data
    expected = _positions_of(root)
    sent = pickle.loads(pickle.dumps(root, pickle.HIGHEST_PROTOCOL))
    assert sent == root and _positions_of(sent) == expected
    assert isinstance(sent._pos, bytes)
    opened = pickle.loads(pickle.dumps(root["spec"], pickle.HIGHEST_PROTOCOL))
    opened.pos  # noqa: B018 - opens it
    assert _positions_of(pickle.loads(pickle.dumps(opened))) == _positions_of(root["spec"])
    compact = compact_file(file).documents[0].data
    kept = ("metadata", "labels", "tier"), ("spec", "template", "spec", "containers", 0, "resources")
    for path in kept:
        assert locate(compact, path, Span(0, 0)) == locate(root, path, Span(0, 0))
    cached = _read_back(_tree(root))
    assert cached == root and _positions_of(cached) == expected


def _read_back(tree: Any) -> Any:
    import json

    return json.loads(json.dumps(tree), object_hook=_node)


def test_the_cache_keeps_a_missing_position_and_refuses_a_wrong_one() -> None:
    rendered = PosDict(Span(2, 1))
    rendered["a"] = "x"
    rendered["b"] = "y"
    rendered.pos = [3 << COLUMN_BITS | 1, None]  # type: ignore[list-item]
    back = _read_back(_tree(rendered))
    assert back.span == Span(2, 1) and list(back.pos) == [3 << COLUMN_BITS | 1, None]
    for wrong in ([-1], [1 << 64], ["3"]):
        with pytest.raises(ValueError):
            _node({"a": "x", "": [1, 1, wrong]})


WIDE_AT = (1 << 16, 1), (1, 1 << 16), (70000, 70000), (1, (1 << 32) - 1)


@pytest.mark.parametrize("far", WIDE_AT)
def test_narrow_positions_where_every_line_and_column_is_under_65536_else_wide(
    far: tuple[int, int],
) -> None:
    near = [1 << COLUMN_BITS | 1, 65535 << COLUMN_BITS | 65535, 12 << COLUMN_BITS | 3]
    narrow = packed(near)
    assert len(narrow) == 4 * len(near) + 1  # 4 bytes each, one flag byte (odd)
    line, column = far
    wide = packed([*near, line << COLUMN_BITS | column])
    assert len(wide) == 8 * (len(near) + 1)  # 8 bytes each (even): one far position is enough
    for held, items in ((narrow, near), (wide, [*near, line << COLUMN_BITS | column])):
        keys = [str(index) for index in range(len(items) - 1)]
        mapping = PosDict(Span(0, 0))
        mapping.update(dict.fromkeys(keys, "x"))
        sequence = PosList(Span(0, 0))
        sequence.extend(keys)
        assert mapping.key_position("7") is None
        for node in (mapping, sequence):
            node._pos, node._span = held, None
            assert node.span == unpack(items[0])
            assert list(positions(node)) == items[1:]
        assert [mapping.key_position(key) for key in keys] == items[1:]
        for node in (mapping, sequence):
            sent = pickle.loads(pickle.dumps(node, pickle.HIGHEST_PROTOCOL))
            assert sent._pos == held and list(positions(sent)) == items[1:]
            opened = node.pos  # opened: the wide ints, to write
            assert isinstance(opened, array) and list(opened) == items[1:]
            assert node.span == unpack(items[0])


def test_a_parsed_file_keeps_narrow_positions_and_a_far_line_wide() -> None:
    far = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n" + "#\n" * 70000 + "data:\n  c: x\n"
    root = parse("a.yaml", far).documents[0].data
    assert len(root._pos) % 2 == 0  # its key data is on line 70005
    assert len(root["metadata"]._pos) % 2 == 1
    assert locate(root, ("data", "c"), Span(0, 0)) == Span(70006, 3)
    assert locate(root, ("metadata", "name"), Span(0, 0)) == Span(4, 3)
    assert len(root["data"]._pos) % 2 == 0
    near = parse("a.yaml", TEXT).documents[0].data
    assert len(near._pos) % 2 == 1
    assert _positions_of(near) == _positions_of(_read_back(_tree(near)))
