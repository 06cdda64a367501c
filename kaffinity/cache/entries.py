"""An entry of the file cache: what the single-object stage made of a file
(:class:`kaffinity.engine.FileResult`) as JSON (:func:`encode`), and back (:func:`decode`), every
field rebuilt by this module's own constructors with its type checked (see :mod:`kaffinity.cache`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kaffinity.cache.trees import (
    _child,
    _data_path,
    _duplicate_keys,
    _index,
    _is,
    _load_problems,
    _node,
    _optional_span,
    _span_of,
    _strings,
    _tree,
    _Unfit,
)

if TYPE_CHECKING:
    from kaffinity.engine import FileResult


def encode(checked: FileResult) -> bytes | None:
    """``checked`` as an entry's payload, or None if it holds what the format does not (the
    typed objects are not kept: they are built again where needed)."""
    import json

    try:
        return json.dumps(
            _result_data(checked), ensure_ascii=True, check_circular=False, separators=(",", ":")
        ).encode("ascii")
    except (_Unfit, ValueError, TypeError, RecursionError):
        return None


def _result_data(checked: FileResult) -> list[Any]:
    file = checked.file
    roots: dict[int, int] = {}
    trees: list[Any] = []
    documents = []
    numbers: dict[int, int] = {}
    for number, doc in enumerate(file.documents):
        numbers[id(doc)] = number
        index = roots.get(id(doc.root))
        if index is None:
            index = roots[id(doc.root)] = len(trees)
            trees.append(_tree(doc.root))
        if _follow(doc.root, doc.prefix) is not doc.data:
            raise _Unfit("a document that is not its root's")
        documents.append(
            [
                doc.file,
                doc.index,
                index,
                list(doc.span),
                list(doc.prefix),
                [[item.key, *item.span, *item.first] for item in doc.duplicate_keys],
            ]
        )
    return [
        file.name,
        file.text,
        file.skipped,
        file.compact,
        trees,
        documents,
        [[problem.rule, problem.message, _span(problem.span)] for problem in file.problems],
        [[rule, number, *_finding(finding)] for rule, number, finding in checked.findings],
        [_comment(comment, numbers) for comment in checked.comments],
        list(checked.internal_errors),
        list(checked.notices),
    ]


def _span(span: Any) -> list[int] | None:
    return None if span is None else [span[0], span[1]]


def _finding(finding: Any) -> list[Any]:
    obj = finding.object
    edit = finding.edit
    return [
        finding.file,
        finding.line,
        finding.column,
        finding.rule,
        finding.message,
        finding.severity.value,
        finding.category,
        finding.path,
        None if obj is None else [obj.api_version, obj.kind, obj.namespace, obj.name],
        [[related.file, _span(related.span), related.path, related.message] for related in finding.related],
        finding.fix,
        None if edit is None else [edit.start, edit.end, edit.text],
        list(finding.units),
        finding.anchor,
    ]


def _comment(comment: Any, numbers: dict[int, int]) -> list[Any]:
    number = None
    if comment.doc is not None:
        number = numbers.get(id(comment.doc))
        if number is None:
            raise _Unfit("a suppression on another file's document")
    return [
        comment.file,
        list(comment.span),
        list(comment.names),
        number,
        list(comment.path),
        sorted(comment.used),
    ]


def decode(payload: bytes) -> FileResult | None:
    """The :class:`~kaffinity.engine.FileResult` an entry's payload holds, or None when anything in it
    has the wrong shape (a miss). Runs no code of the payload's choosing: JSON, then this
    module's own constructors, each field's type checked."""
    import json

    try:
        data = json.loads(payload, object_hook=_node)
        return _result(data)
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, RecursionError, AttributeError):
        return None


def _result(data: Any) -> FileResult:
    from kaffinity.engine import FileResult
    from kaffinity.load.parse import SourceFile
    from kaffinity.load.source import Document

    name, text, skipped, compact, trees, docs, problems, findings, comments, errors, notices = _is(data, list)
    _is(trees, list)
    documents = []
    for file, index, root, span, prefix, duplicates in (_is(item, list) for item in _is(docs, list)):
        tree = trees[_index(root, len(trees))]
        path = _data_path(prefix)
        node = tree
        for step in path:
            node = _child(node, step)
        documents.append(
            Document(
                _is(file, str),
                _is(index, int),
                node,
                tree,
                _span_of(span),
                path,
                _duplicate_keys(duplicates),
            )
        )
    source = SourceFile(
        _is(name, str),
        _is(text, str),
        tuple(documents),
        _load_problems(problems),
        _is(skipped, str, type(None)),
        _is(compact, bool),
    )
    found = []
    for rule, number, *finding in (_is(item, list) for item in _is(findings, list)):
        if number is not None:
            _index(number, len(documents))
        found.append((_is(rule, str), number, _finding_of(finding)))
    return FileResult(
        source,
        tuple(found),
        tuple(_comment_of(item, documents) for item in _is(comments, list)),
        _strings(errors),
        _strings(notices),
    )


def _finding_of(data: list[Any]) -> Any:
    from kaffinity.findings import Finding, Location, Severity
    from kaffinity.k8s.model import ObjectRef
    from kaffinity.load.edits import Edit

    file, line, column, rule, message, severity, category, path, obj, related, fix, edit, units, anchor = data
    optional = (int, type(None))
    ref = None
    if obj is not None:
        api_version, kind, namespace, name = _is(obj, list)
        ref = ObjectRef(
            _is(api_version, str), _is(kind, str), _is(namespace, str, type(None)), _is(name, str)
        )
    change = None
    if edit is not None:
        start, end, replacement = _is(edit, list)
        change = Edit(_is(start, int), _is(end, int), _is(replacement, str))
    return Finding(
        _is(file, str),
        _is(line, *optional),
        _is(column, *optional),
        _is(rule, str),
        _is(message, str),
        Severity(_is(severity, str)),
        _is(category, str),
        _is(path, str),
        ref,
        tuple(
            Location(_is(where, str), _optional_span(span), _is(data_path, str), _is(words, str))
            for where, span, data_path, words in (_is(item, list) for item in _is(related, list))
        ),
        _is(fix, str, type(None)),
        change,
        _strings(units),
        anchor=_is(anchor, str),
    )


def _comment_of(data: Any, documents: list[Any]) -> Any:
    from kaffinity.suppress import Suppression

    file, span, names, number, path, used = _is(data, list)
    doc = None if number is None else documents[_index(number, len(documents))]
    return Suppression(
        _is(file, str), _span_of(span), _strings(names), doc, _data_path(path), set(_strings(used))
    )


def _follow(data: Any, path: tuple[str | int, ...]) -> Any:
    for item in path:
        data = data[item]
    return data
