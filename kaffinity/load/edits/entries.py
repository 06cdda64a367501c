"""The edits ``kaffinity fix`` and ``kaffinity expand`` make: a new mapping entry
(:func:`add_entry`), new sequence items (:func:`append_items`), a value for a null
(:func:`fill_null`), each found, rendered and checked, or None."""

from __future__ import annotations

from typing import Any

from kaffinity.load.edits.nodes import _find, _is_mapping, _is_scalar, _is_sequence, _key
from kaffinity.load.edits.text import Edit
from kaffinity.load.edits.verify import _plain, _verified, _with_entry
from kaffinity.load.edits.writer import _Unsupported, _Writer
from kaffinity.load.source import DataPath


def add_entry(
    text: str, doc_index: int, mapping_path: DataPath, key: str, value: Any, comment: str | None = None
) -> Edit | None:
    """Add ``key: value`` as the last entry of the mapping at ``mapping_path``, or None."""
    found = _find(text, doc_index, mapping_path)
    if found is None or not _is_mapping(found.node) or not isinstance(key, str):
        return None
    mapping = found.node
    if any(_key(existing) in (key, None) for existing, _ in mapping.value):
        return None  # the key is there already, or a merge key (or complex key) is in play
    try:
        edit = _Writer(text, found.layout, comment).add_entry(found, key, value)
        expected = _plain(value)
    except _Unsupported:
        return None
    return _verified(text, edit, doc_index, mapping_path, lambda old: _with_entry(old, key, expected))


def append_items(
    text: str, doc_index: int, sequence_path: DataPath, items: list[Any], comment: str | None = None
) -> Edit | None:
    """Append ``items`` at the end of the sequence at ``sequence_path``, or None."""
    found = _find(text, doc_index, sequence_path)
    if found is None or not _is_sequence(found.node) or not isinstance(items, list | tuple) or not items:
        return None
    try:
        edit = _Writer(text, found.layout, comment).append_items(found.node, list(items))
        expected = _plain(list(items))
    except _Unsupported:
        return None
    return _verified(text, edit, doc_index, sequence_path, lambda old: [*old, *expected])


def fill_null(text: str, doc_index: int, path: DataPath, value: Any) -> Edit | None:
    """Give the mapping entry at ``path`` whose value is null (``key:``, ``key: null``,
    ``key: ~``, or an explicit ``? key`` without a value) the value ``value``, in flow style;
    or None. The null scalar is replaced; an empty one gets the value after its colon (or a
    new ``: value`` line under the ``?``)."""
    from kaffinity.load.parse import resolve_plain

    found = _find(text, doc_index, path)
    if found is None or found.key is None or not _is_scalar(found.node):
        return None
    node = found.node
    if node.style or resolve_plain(node.value) is not None:
        return None  # (a tag such as ``!!str`` on the null is caught by the check below)
    try:
        writer = _Writer(text, found.layout, None)
        written = writer.flow(value)
        expected = _plain(value)
    except _Unsupported:
        return None
    start, end = node.start_mark.index, node.end_mark.index
    if node.value:  # null, Null, NULL, ~
        edit = Edit(start, end, written)
    else:
        key_end = found.key.end_mark.index
        colon = text.find(":", key_end, max(start, key_end))
        if colon >= 0 and text.startswith(" ", colon + 1):  # "key: " -> "key: value"
            edit = Edit(colon + 2, colon + 2, written)
        elif colon >= 0:
            edit = Edit(colon + 1, colon + 1, " " + written)
        else:  # "? key" alone: the value on a line of its own, its ":" under the "?"
            line_start = max(text.rfind("\n", 0, key_end), text.rfind("\r", 0, key_end)) + 1
            question = text.rfind("?", line_start, key_end)
            if question < 0 or found.parent is None or found.parent.flow_style:
                return None
            try:
                newline = writer.newline(writer.line_end(key_end))
            except _Unsupported:
                return None
            edit = Edit(key_end, key_end, f"{newline}{' ' * (question - line_start)}: {written}")
    return _verified(text, edit, doc_index, path, lambda old: expected if old is None else _fail())


def _fail() -> Any:
    raise TypeError("the value is not null")
