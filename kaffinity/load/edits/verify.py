"""Every edit checked before it is returned (:func:`verify`): the edited document must load,
with the project's loader, as exactly the original data plus the change; data compared with key
order and scalar types (:func:`same_data`), without recursion."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from kaffinity.load.edits.nodes import compose
from kaffinity.load.edits.text import Edit
from kaffinity.load.source import DataPath


def verify(text: str, new_text: str, doc_index: int, path: DataPath, update: Callable[[Any], Any]) -> bool:
    """Whether ``new_text`` loads as ``text`` with the value at ``path`` of document
    ``doc_index`` replaced by ``update(old value)`` and nothing else changed (key order and
    scalar types included). Both texts are loaded with :func:`kaffinity.load.parse.parse`."""
    old, new = _loaded(text), _loaded(new_text)
    if old is None or new is None or doc_index not in old or list(old) != list(new):
        return False
    for index, data in old.items():
        if index != doc_index and not _same(data, new[index]):
            return False
    try:
        expected = _replaced(_plain(old[doc_index]), path, update)
    except (KeyError, IndexError, TypeError):
        return False
    return _same(expected, new[doc_index])


@functools.lru_cache(maxsize=8)
def _loaded(text: str) -> dict[int, Any] | None:
    """The root data of each document of ``text`` that the loader keeps, by index."""
    from kaffinity.load.parse import parse

    source = parse("<edit>", text)
    if source.problems:
        return None
    found = {document.index: document.root for document in source.documents}
    if found:
        return found
    # A document that is no object (a JSON 6902 patch's list of operations, a chart's values
    # file): the loader's own builder reads it as it reads a manifest, with no object kept.
    from kaffinity.load.parse.reader import _documents, _parse_errors

    try:
        return dict(enumerate(data for data, _ in _documents(text)))
    except _parse_errors():
        return None


def _verified(
    text: str, edit: Edit, doc_index: int, path: DataPath, update: Callable[[Any], Any]
) -> Edit | None:
    """``edit`` if it passes :func:`verify`, run on the edited document alone: the edit lies
    inside it and the text around it is unchanged, so checking the whole file again for each
    edit (quadratic on a file of many workloads) would add nothing."""
    root = compose(text)[doc_index]  # only its marks are used
    start = max(text.rfind("\n", 0, root.start_mark.index), text.rfind("\r", 0, root.start_mark.index)) + 1
    end: int = root.end_mark.index
    if not start <= edit.start <= edit.end <= end:
        return None
    old = text[start:end]
    new = old[: edit.start - start] + edit.text + old[edit.end - start :]
    return edit if verify(old, new, 0, path, update) else None


def _with_entry(old: Any, key: str, value: Any) -> dict[str, Any]:
    if not isinstance(old, dict) or key in old:
        raise TypeError("not a mapping without the key")
    return {**old, key: value}


def _replaced(data: Any, path: DataPath, update: Callable[[Any], Any]) -> Any:
    if not path:
        return update(data)
    head, rest = path[0], path[1:]
    if isinstance(data, dict) and isinstance(head, str):
        return {**data, head: _replaced(data[head], rest, update)}
    if isinstance(data, list) and isinstance(head, int) and 0 <= head < len(data):
        return [*data[:head], _replaced(data[head], rest, update), *data[head + 1 :]]
    raise KeyError(head)


def _plain(data: Any) -> Any:
    """A copy as plain dicts and lists (key order kept), made without recursion: a document
    may nest as deep as the loader's ``limits.depth``."""
    if not isinstance(data, dict | list | tuple):
        return data
    root: Any = {} if isinstance(data, dict) else []
    stack: list[tuple[Any, Any]] = [(data, root)]
    while stack:
        source, target = stack.pop()
        pairs = source.items() if isinstance(source, dict) else enumerate(source)
        for key, value in pairs:
            copy: Any = value
            if isinstance(value, dict | list | tuple):
                copy = {} if isinstance(value, dict) else []
                stack.append((value, copy))
            if isinstance(target, dict):
                target[key] = copy
            else:
                target.append(copy)
    return root


def same_data(left: Any, right: Any) -> bool:
    """Equal, whatever the order of mapping keys, with the same scalar types (``1 != True !=
    1.0``): whether a value written in a file is the one a tool rendered (kustomize and Helm
    write keys in an order of their own)."""
    return _same(left, right, ordered=False)


def _same(left: Any, right: Any, *, ordered: bool = True) -> bool:
    """Equal, with the same key order and the same scalar types (``1 != True != 1.0``).
    Compared without recursion, and each pair of containers once (aliases share them)."""
    stack: list[tuple[Any, Any]] = [(left, right)]
    seen: set[tuple[int, int]] = set()
    while stack:
        left, right = stack.pop()
        if isinstance(left, dict | list):
            pair = (id(left), id(right))
            if pair in seen:
                continue
            seen.add(pair)
            if isinstance(left, dict):
                if not isinstance(right, dict) or len(left) != len(right):
                    return False
                if (list(left) != list(right)) if ordered else any(key not in right for key in left):
                    return False
                stack.extend((value, right[key]) for key, value in left.items())
            else:
                if not isinstance(right, list) or len(left) != len(right):
                    return False
                stack.extend(zip(left, right, strict=True))
        elif type(left) is not type(right) or not (
            left == right or (left != left and right != right)  # noqa: PLR0124 - NaN
        ):
            return False
    return True
