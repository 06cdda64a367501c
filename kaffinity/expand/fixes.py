"""Safe fixes: planned as minimal text edits, applied so that no other byte of a file changes.

A fix is a text edit (:class:`kaffinity.load.edits.Edit`) computed from the exact node positions
ruamel's C composer reports, not a re-dump of the file: ruamel's round-trip dumper rewrites the
indentation or quoting of most real-world manifests (95 of the 127 corpus files with scheduling
fields, measured), while an insertion at a known position keeps every other byte — comments,
quoting, key order, indentation, line endings. Each fixed file is parsed again and must hold
the same objects with only the intended change, or nothing is written.

Fixes so far: ``revision-unscoped`` → add ``matchLabelKeys: [pod-template-hash]`` to the term (or
``pod-template-hash`` to its existing ``matchLabelKeys``, or to an empty ``[]``, or in place of a
null value: ``matchLabelKeys:``, ``null``, ``~``, an explicit ``? matchLabelKeys``), only where the
target version keeps the field: every term shape the rule's hint promises the fix for.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kaffinity.k8s.labels import POD_TEMPLATE_HASH
from kaffinity.k8s.model import PodAffinityTerm, TopologySpreadConstraint, Workload
from kaffinity.load.edits import (
    Edit,
    add_entry,
    append_items,
    apply,
    fill_null,
    find_node,
    line_of,
    same_data,
)
from kaffinity.load.repository import within, work_tree
from kaffinity.load.source import DataPath, Document, PosDict, PosList, Span, locate_depth, unpack

if TYPE_CHECKING:
    from kaffinity.findings import Finding
    from kaffinity.load.parse import SourceFile


@dataclass(frozen=True, slots=True)
class Fix:
    """An edit of one file that resolves one finding."""

    file: str
    edit: Edit
    #: The text the edit was planned on (the file's, as read).
    text: str = field(default="", compare=False, repr=False)

    def describe(self, text: str) -> str:
        """Where the edit writes, in the file's own line numbers (for a finding's hint, which
        already says what is added): ``after line 21``, ``on line 7, column 3``."""
        edit = self.edit
        line = line_of(text, edit.start)
        added = edit.text.lstrip("\r\n")
        if edit.end == edit.start and len(added) < len(edit.text):
            return f"after line {line}"
        column = edit.start - (text.rfind("\n", 0, edit.start) + 1) + 1
        return f"on line {line}, column {column}"


def revision_fix(
    texts: Mapping[str, str], workload: Workload, term: PodAffinityTerm | TopologySpreadConstraint
) -> Fix | None:
    """``matchLabelKeys: [pod-template-hash]`` for one term of an object as written, or None if
    it cannot be done safely."""
    doc = workload.doc
    text = texts.get(doc.file)
    if text is None:
        return None
    return _revision_edit(doc.file, text, doc.index, (*doc.prefix, *term.path), bool(term.match_label_keys))


#: Where a rendered object's path is spelled in a file: (file, span) or None (:attr:`Layout.places`).
Place = Callable[[Document, DataPath], "tuple[str, Span] | None"]


def plan_revision_fix(
    texts: Mapping[str, str],
    workload: Workload,
    term: PodAffinityTerm | TopologySpreadConstraint,
    *,
    rendered: bool = False,
    place: Place | None = None,
) -> Fix | None:
    """The one decision whether ``kaffinity fix`` fixes a ``revision-unscoped`` term: the rule's
    hint names ``kaffinity fix`` exactly when this returns an edit, and ``fix`` applies that edit.

    An object as written: the term in its own file (:func:`revision_fix`). A rendered object
    (``rendered``: a kustomize or Helm build, kaffinity.repo.units): the file that spells the
    term, the overlay's patch that set it (``place``: :meth:`repo.rendered.Rendered.patch_location`),
    else the file the object comes from, and only when the term written there is the term
    rendered, value for value (:func:`written_term`): then adding the key to it adds it to the
    rendered term. A term a template prints from an expression, or one that patches merge from
    several places, is not a literal of one file: None, and the hint says where to change it.
    """
    if not rendered:
        return revision_fix(texts, workload, term)
    found = written_term(workload.doc, term.path, place)
    if found is None:
        return None
    file, text, index, path = found
    return _revision_edit(file, text, index, path, bool(term.match_label_keys))


def _revision_edit(file: str, text: str, index: int, path: DataPath, has_keys: bool) -> Fix | None:
    keys = (*path, "matchLabelKeys")
    # Every shape the term can have: keys to extend, an empty list (``[]``), a null value
    # (``matchLabelKeys:``, ``null``, ``~``, ``? matchLabelKeys``), or no such key.
    if has_keys:
        edit = append_items(text, index, keys, [POD_TEMPLATE_HASH])
    else:
        edit = add_entry(text, index, path, "matchLabelKeys", [POD_TEMPLATE_HASH])
        if edit is None and (node := find_node(text, index, keys)) is not None:
            if node.id == "sequence":
                edit = append_items(text, index, keys, [POD_TEMPLATE_HASH])
            else:
                edit = fill_null(text, index, keys, [POD_TEMPLATE_HASH])
    if edit is None:
        return None
    return Fix(file, edit, text)


def written_term(doc: Document, path: DataPath, place: Place | None) -> tuple[str, str, int, DataPath] | None:
    """Where the value at ``path`` of the rendered ``doc`` is written, as it was rendered: (the
    file, its text, the document's index in it, the data path there), or None.

    The file is the one the report points at: a patch of the overlay that spells the whole value
    (``place``), else the object's origin file when it spells the whole path. The value written
    at that position must equal the rendered one (keys in any order): a value a patch merged
    into, a template filled in, or a later layer changed is not edited in one file."""
    from kaffinity.k8s.model.readers import dig

    rendered = dig(doc.data, path)
    spelled = place(doc, path) if place is not None else None
    if spelled is not None:
        file, span = spelled
    else:
        full = (*doc.prefix, *path)
        depth, span = locate_depth(doc.root, full, doc.span)
        if 0 < depth < len(full):
            return values_term(doc, full, depth, span)
        if depth != len(full) or not full:
            return None
        file = doc.file
    # The file as it is on disk, whatever was loaded under its name: a rendered object's
    # positions may be those of the tool's output (a stream kaffinity could not map to files),
    # which is no file of the user's to edit.
    text = _read(os.path.normpath(file))
    if text is None:
        return None
    found = item_at(text, span)
    if found is None or not same_data(found[2], rendered):
        return None
    return file, text, found[0], found[1]


def values_term(
    doc: Document, full: DataPath, depth: int, span: Span
) -> tuple[str, str, int, DataPath] | None:
    """Where a chart's values file writes a term that a template prints verbatim: the template
    spells the path down to ``full[:depth]`` (``affinity:``, at ``span``) and prints the rest
    with ``toYaml`` of one value (``{{- toYaml .Values.affinity | nindent 8 }}``, or ``toYaml .``
    inside ``{{- with .Values.affinity }}``); Helm's ``toYaml`` writes the value as it is, so a
    key added under it in ``values.yaml`` is added to the rendered term (helm/helm
    pkg/engine/funcs.go ``toYAML``). Only a chart's own ``values.yaml`` and only when no other
    values file of the chart (``values-*.yaml``, ``ci/*.yaml``: variants kaffinity renders, or
    a user's ``-f``) sets that value, and the value written is the rendered one: otherwise None,
    and the hint says where to change it. A subchart (its parent's values set it) is left alone."""
    from kaffinity.k8s.model.readers import dig

    template = os.path.normpath(doc.file)
    chart = _chart_folder(template)
    text = _read(template)
    if chart is None or text is None:
        return None
    lines = text.splitlines()
    numbers = (span.line - 1, span.line, span.line + 1)
    window = [lines[number - 1] for number in numbers if 0 < number <= len(lines)]
    values = printed_values(text, span.line)
    if len(values) != 1 or not any("toYaml" in line for line in window):
        return None
    steps: DataPath = tuple(values[0].split("."))
    default = os.path.join(chart, "values.yaml")
    for other in _values_files(chart):
        if other != default and (data := _yaml_root(other)) is not None and dig(data, steps) is not None:
            return None
    values_text = _read(default)
    data = _yaml_root(default)
    if values_text is None or data is None:
        return None
    if depth <= len(doc.prefix):
        return None
    if not same_data(dig(data, steps), dig(doc.data, full[len(doc.prefix) : depth])):
        return None
    return default, values_text, 0, (*steps, *full[depth:])


_VALUES = re.compile(r"\.Values\.([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")


def printed_values(text: str, line: int) -> list[str]:
    """The chart values (``.Values.a.b`` as ``a.b``) that template expressions read on the line
    before ``line``, on it and on the line after it (``{{- with .Values.affinity }}`` /
    ``affinity:`` / ``{{- toYaml . | nindent 8 }}``), each once."""
    lines = text.splitlines()
    found: list[str] = []
    for number in (line - 1, line, line + 1):
        if 0 < number <= len(lines) and "{{" in lines[number - 1]:
            found += (value for value in _VALUES.findall(lines[number - 1]) if value not in found)
    return found


def _chart_folder(template: str) -> str | None:
    """The chart folder of a template (``<chart>/templates/...``) with ``Chart.yaml``; None for
    a subchart's (a chart folder inside another chart's ``charts/``), whose values its parent sets."""
    parts = template.split(os.sep)
    if "templates" not in parts:
        return None
    chart = os.sep.join(parts[: len(parts) - 1 - parts[::-1].index("templates")]) or "."
    if not os.path.isfile(os.path.join(chart, "Chart.yaml")):
        return None
    above = os.path.dirname(os.path.abspath(chart))
    parent = os.path.join(os.path.dirname(above), "Chart.yaml")
    if os.path.basename(above) == "charts" and os.path.isfile(parent):
        return None
    return chart


def _values_files(chart: str) -> list[str]:
    """The chart's values files: ``values*.yaml`` beside ``Chart.yaml`` and ``ci/*.yaml``."""
    import glob

    found = [
        *glob.glob(os.path.join(glob.escape(chart), "values*.y*ml")),
        *glob.glob(os.path.join(glob.escape(chart), "ci", "*.y*ml")),
    ]
    return sorted(os.path.normpath(path) for path in found)


def _yaml_root(path: str) -> Any:
    """The first document of a YAML file, with positions, or None."""
    from kaffinity.load.parse import parse_data

    text = _read(path)
    return None if text is None else parse_data(text)[0]


def file_text(texts: Mapping[str, str], name: str) -> str | None:
    """The text of a file a rendered object points at: as loaded (under its name, or the same
    path spelled otherwise: ``./a.yaml``), else read from disk (a JSON 6902 patch or a values
    file is not loaded as a manifest). None if it cannot be read."""
    if name in texts:
        return texts[name]
    normal = os.path.normpath(name)
    for loaded, text in texts.items():
        if os.path.normpath(loaded) == normal:
            return text
    return _read(normal)


def _read(path: str) -> str | None:
    from kaffinity.load.read import read_text

    try:
        info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    # The same file, unchanged (a run plans several terms of one patch or values file; fix
    # applies the edits to the text they were planned on).
    key = (os.path.realpath(path), info.st_ino, info.st_size, info.st_mtime_ns)
    if key not in _READ:
        _, text, problem = read_text(path)
        if len(_READ) >= 16:
            del _READ[next(iter(_READ))]
        _READ[key] = None if problem is not None else text
    return _READ[key]


_READ: dict[tuple[str, int, int, int], str | None] = {}


def item_at(text: str, span: Span) -> tuple[int, DataPath, Any] | None:
    """The sequence item that starts at ``span`` in ``text`` (a term is an item of a list): the
    index of its document, its data path there and its value; None if no item, or more than one
    (an alias repeats a node), starts there."""
    from kaffinity.load.parse.reader import _documents, _parse_errors

    try:
        documents = [data for data, _ in _documents(text)]
    except _parse_errors():
        return None
    hits: list[tuple[int, DataPath, Any]] = []
    for index, root in enumerate(documents):
        walk: list[tuple[Any, DataPath]] = [(root, ())]
        seen: set[int] = set()
        while walk:
            node, at = walk.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, PosList):
                for position, (item, packed) in enumerate(zip(node, node.pos, strict=False)):
                    if packed is not None and unpack(packed) == span:
                        hits.append((index, (*at, position), item))
                    walk.append((item, (*at, position)))
            elif isinstance(node, PosDict):
                walk.extend((value, (*at, key)) for key, value in node.items())
    return hits[0] if len(hits) == 1 else None


@dataclass(frozen=True, slots=True)
class FileFix:
    """The fixed text of one file and the findings it resolves."""

    file: str
    text: str
    fixed: str
    findings: tuple[Finding, ...]


def fix_files(files: Sequence[SourceFile], findings: Sequence[Finding]) -> tuple[list[FileFix], list[str]]:
    """Apply the fixes carried by ``findings`` to the files of the input ``files`` (as read from
    the user's paths, never a rendered file); a rendered object's fix applies to the overlay's
    patch or the file that wrote its term (``Finding.edit_file``), read again from disk when the
    loader did not keep it as a manifest (a JSON 6902 patch). Each fixed file is verified by
    parsing it again (it must hold as many objects as before).

    Returns the files that change and the problems (files left alone, and why).
    """
    from kaffinity.load.parse import parse

    by_file: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.edit is not None:
            by_file.setdefault(finding.edit_file or finding.file, []).append(finding)
    fixed: list[FileFix] = []
    problems: list[str] = []
    # The manifests as read (stdin's text is only there); a file the loader skipped (a JSON
    # 6902 patch, a values file) holds no text here and is read again from disk.
    loaded = {file.name: file.text for file in files if file.documents and not file.compact}
    for name, found in by_file.items():
        text = file_text(loaded, name)
        if text is None:
            problems.append(f"{name}: error: cannot read it again, nothing written")
            continue
        try:
            new = apply(text, _unique(finding.edit for finding in found))
        except ValueError as error:
            problems.append(f"kaffinity: error: {name}: fixes overlap, nothing written ({error})")
            continue
        before, after = parse(name, text), parse(name, new)
        if after.problems or len(after.documents) != len(before.documents):
            problems.append(
                f"kaffinity: error: {name}: the fixed file would not parse the same, nothing written"
            )
            continue
        fixed.append(FileFix(name, text, new, tuple(found)))
    return fixed, problems


def _unique(edits: Iterable[Edit | None]) -> list[Edit]:
    seen: list[Edit] = []
    for edit in edits:
        if edit is not None and edit not in seen:
            seen.append(edit)
    return seen


# --- writing ------------------------------------------------------------------------------------

_BOM = b"\xef\xbb\xbf"


class WriteRefused(Exception):
    """A fixed file that is not written: the reason, in words for a one-line error."""


def allowed_roots(paths: Sequence[str]) -> tuple[str, ...]:
    """Where ``fix`` may write: below the real path of each path given on the command line (a
    path named there is the user's choice, a symlink too), and in the git work tree that holds
    it. The work tree is found without running git: the nearest folder up from the path that
    holds ``.git`` (a folder, or a file in a linked worktree or a submodule)."""
    roots: list[str] = []
    for path in paths:
        if path == "-":
            continue
        real = os.path.realpath(path)
        roots.append(real)
        if (top := work_tree(real)) is not None:
            roots.append(top)
    return tuple(dict.fromkeys(roots))


def write_fixed(path: str, text: str, fixed: str, roots: Sequence[str]) -> None:
    """Write the fixed text of the file at ``path`` (loaded as ``text``) back, or raise
    :class:`WriteRefused` and leave it alone.

    - The file is written where it really is (a symlink stays a symlink, its target is
      written), and only when that is inside one of ``roots`` (:func:`allowed_roots`): a
      checkout's symlink to a file elsewhere (``~/.bashrc.yaml``, another repository) is refused.
    - Atomically: the new bytes go to a temporary file beside it (created exclusively, never
      through a symlink), with the file's mode (and owner, where allowed), synced to disk, then
      renamed over it (``os.replace``): a reader sees the old file or the new one, never half.
    - Only if the file still holds ``text``: an edit saved while kaffinity ran is not lost.
    - In its own encoding: UTF-8, with its byte order mark if it had one (UTF-16/32 refused).
    """
    real = os.path.realpath(path)
    if not any(within(real, root) for root in roots):
        from kaffinity.load.display import quote_name

        raise WriteRefused(f"not written: a symlink leads to {quote_name(real)}, outside the paths given")
    try:
        descriptor = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        raise WriteRefused(f"cannot write: {error.strerror or error}") from None
    with open(descriptor, "rb") as handle:
        before = os.fstat(descriptor)
        if not stat.S_ISREG(before.st_mode):
            raise WriteRefused("not written: not a regular file")
        current = handle.read()
    if current.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")):
        raise WriteRefused("fix writes UTF-8 files only; this one is UTF-16/32")
    if not _holds(current, text):
        raise WriteRefused("not written: the file changed since it was read")
    bom = _BOM if current.startswith(_BOM) else b""
    _replace(real, bom + fixed.encode("utf-8"), before)


def _holds(raw: bytes, text: str) -> bool:
    """Whether ``raw`` is the bytes the loader read as ``text``."""
    try:
        return raw.decode("utf-8-sig") == text
    except UnicodeDecodeError:
        return False


def _replace(real: str, data: bytes, info: os.stat_result) -> None:
    """Replace the file ``real`` (as :func:`os.fstat` saw it: ``info``) with ``data``."""
    folder, name = os.path.split(real)
    temporary = os.path.join(folder, f".{name}.kaffinity-{os.urandom(4).hex()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(temporary, flags, 0o600)
    except OSError as error:
        raise WriteRefused(f"cannot write: {error.strerror or error}") from None
    try:
        with open(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            if hasattr(os, "fchmod"):  # not on Windows before Python 3.13
                os.fchmod(descriptor, stat.S_IMODE(info.st_mode))
            if hasattr(os, "fchown"):
                # Another owner's file, written by its group: the new one is the writer's.
                with contextlib.suppress(OSError):
                    os.fchown(descriptor, info.st_uid, info.st_gid)
            os.fsync(descriptor)
        # The last look before the rename: the same file (inode), neither written (size, time)
        # nor swapped for a symlink since it was read.
        now = os.stat(real, follow_symlinks=False)
        if (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) != (
            info.st_dev,
            info.st_ino,
            info.st_size,
            info.st_mtime_ns,
        ):
            raise WriteRefused("not written: the file changed since it was read")
        os.replace(temporary, real)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise WriteRefused(f"cannot write: {error.strerror or error}") from None
        raise
    _sync_folder(folder)


def _sync_folder(folder: str) -> None:
    """The rename made durable (a folder's entries are synced through the folder itself)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(descriptor)
    finally:
        os.close(descriptor)
