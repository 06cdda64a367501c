"""A staged entry of the render cache (:mod:`kaffinity.cache.rendered`, a run that streams): a
rendered unit as the single-object stage left it (:func:`kaffinity.stream.stage_rendered`), so
that a warm run neither renders, nor parses, nor checks it: :func:`staged_entry`,
:func:`staged_rendered`. Every file is a file cache entry (:mod:`kaffinity.cache.entries`), every
field rebuilt by the cache's own decoders with its type checked; an entry naming a file the
unit's key did not cover is a miss."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from kaffinity.cache.trees import _index, _is, _node, _strings, _tree, _Unfit

if TYPE_CHECKING:
    from kaffinity.repo.rendered import Rendered

# --- the format of a staged entry (a run that streams) ---------------------------------------
#
# Lines of ASCII JSON: the first [unit, engine, seconds, built, left_out, sections, patches,
# roots, trees], a patch naming its document by its number among the unit's documents and its
# tree by its index in ``trees``, a root (a rendered object's positions in the file that defines
# it: kaffinity.stream.stage_rendered) its document and its tree; then one line per file, the
# single-object stage's result of the file as the file cache encodes it (kaffinity.cache.entries:
# its compact documents, findings, comments), each document's root its data.


def staged_entry(rendered: Rendered) -> bytes | None:
    """A staged ``rendered`` (its ``results``: kaffinity.stream.stage_rendered) as an entry's
    payload, or None if it holds what the format does not."""
    from kaffinity.cache.entries import encode as encode_result

    if len(rendered.results) != len(rendered.files):
        return None
    from dataclasses import replace

    from kaffinity.load.source import Document

    trees: list[Any] = []
    numbers = {id(doc): number for number, doc in enumerate(rendered.documents)}
    roots = []
    results = []
    try:
        for result in rendered.results:
            documents = []
            for doc in result.file.documents:
                if doc.root is doc.data or doc.prefix:
                    documents.append(doc)
                    continue
                roots.append([numbers[id(doc)], len(trees)])
                trees.append(_tree(doc.root))
                documents.append(
                    Document(doc.file, doc.index, doc.data, doc.data, doc.span, (), doc.duplicate_keys)
                )
            results.append(replace(result, file=replace(result.file, documents=tuple(documents))))
        patches = []
        for key, items in rendered.patches.items():
            pairs = []
            for name, value in items:
                pairs.append([name, len(trees)])
                trees.append(_tree(value))
            patches.append([numbers[key], pairs])
        head: list[Any] = [
            rendered.unit,
            rendered.engine,
            rendered.seconds,
            rendered.built,
            list(rendered.left_out),
            [[s.file, s.first, s.last, s.origin] for s in rendered.sections],
            patches,
            roots,
            trees,
        ]
        lines = [json.dumps(head, ensure_ascii=True, check_circular=False, separators=(",", ":")).encode()]
    except (_Unfit, ValueError, TypeError, RecursionError, KeyError):
        return None
    for result in results:
        encoded = encode_result(result)
        if encoded is None:
            return None
        lines.append(encoded)
    return b"\n".join(lines)


def staged_rendered(payload: bytes, allowed: set[str]) -> Rendered | None:
    """The staged :class:`Rendered` an entry holds (its files the results' compact files), or
    None when anything has the wrong shape or names a file outside the unit's inputs (a miss)."""
    from dataclasses import replace

    from kaffinity.cache.entries import decode as decode_result
    from kaffinity.load.source import Document
    from kaffinity.repo.rendered import Rendered, Section

    head_line, *lines = payload.split(b"\n")
    results = []
    for line in lines:
        result = decode_result(line)
        if result is None:
            return None
        results.append(result)
    try:
        head = json.loads(head_line, object_hook=_node)
        unit, engine, seconds, built, left_out, sections, patches, roots, trees = _is(head, list)
        _is(trees, list)
        rooted: dict[int, Any] = {}
        for number, index in (_is(item, list) for item in _is(roots, list)):
            rooted[_is(number, int)] = trees[_index(index, len(trees))]
        documents: list[Document] = []
        for at, result in enumerate(results):
            _named(result.file.name, allowed)
            kept: list[Document] = []
            for doc in result.file.documents:
                _named(doc.file, allowed)
                root = rooted.get(len(documents) + len(kept))
                kept.append(doc if root is None else replace(doc, root=root))
            documents.extend(kept)
            if rooted:
                results[at] = replace(result, file=replace(result.file, documents=tuple(kept)))
        found: dict[int, tuple[tuple[str, Any], ...]] = {}
        for number, items in (_is(item, list) for item in _is(patches, list)):
            doc = documents[_index(number, len(documents))]
            pairs = []
            for path, index in (_is(item, list) for item in _is(items, list)):
                _named(_is(path, str), allowed)
                pairs.append((path, trees[_index(index, len(trees))]))
            found[id(doc)] = tuple(pairs)
        return Rendered(
            _is(unit, str),
            _is(engine, str, type(None)),
            tuple(result.file for result in results),
            float(_is(seconds, float, int)),
            sections=tuple(
                Section(_is(file, str), _is(first, int), _is(last, int), _is(origin, str))
                for file, first, last, origin in (_is(item, list) for item in _is(sections, list))
            ),
            patches=found,
            left_out=_strings(left_out),
            built=_is(built, bool),
            results=tuple(results),
        )
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, RecursionError, AttributeError):
        return None


def _named(name: str, allowed: set[str]) -> None:
    """A file an entry names must be one the key hashed, or the tool's output (``... (rendered)``,
    ``helm template ...``, which names no file on disk)."""
    if name.endswith(" (rendered)") or name.startswith("helm template "):
        return
    if os.path.realpath(name) not in allowed:
        raise ValueError("a file outside the unit's inputs")
