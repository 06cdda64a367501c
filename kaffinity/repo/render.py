"""Render kustomize overlays and Helm charts, and map what they produce back to the files that define it.

Rules read the *rendered* objects (an overlay's patches applied, a chart's values filled in), but a
finding must name the file a person edits. Each rendered :class:`~kaffinity.load.source.Document` keeps
its rendered ``data`` and has ``file``/``root``/``prefix``/``span`` pointed at its origin, so
``doc.locate(path)`` gives the nearest position recorded in the origin file:

- **kustomize** (``kustomize build``, else ``kubectl kustomize``): the overlay is built through a
  temporary kustomization that lists it as a resource and sets ``buildMetadata: [originAnnotations]``
  (the user's files are never touched); kustomize then annotates each object with
  ``config.kubernetes.io/origin`` (the resource file it came from, or the kustomization that
  generated it). The annotation is removed before rules see the object.
- **Helm** (a ``helm`` binary, else the ``helm-python-sdk`` package, ``kaffinity[helm]``): rendered
  manifests carry ``# Source: <chart>/templates/x.yaml`` (helm template prints it; we add it to the
  SDK's output), and positions are found in the template text by indentation, since a template
  with ``{{ }}`` actions is seldom YAML. The same mapping serves rendered output piped on stdin.

Positions come from the origin file only; where the origin cannot be read or its object not found,
the document keeps its rendered position (never a made-up line) and :meth:`Rendered.origin` names
the template or file it came from.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import os
import re
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kaffinity.load.manifests import KUSTOMIZATION_NAMES, find_kustomization
from kaffinity.load.parse import DEFAULT_LIMITS, Limits, LoadProblem, SourceFile, parse
from kaffinity.load.read import read, read_text
from kaffinity.load.repository import within
from kaffinity.load.source import (
    COLUMN_BITS,
    DataPath,
    Document,
    PosDict,
    PosList,
    Span,
    locate_depth,
    unpack,
)
from kaffinity.repo.helm_worker import SEPARATOR as _SEPARATOR
from kaffinity.repo.helm_worker import one_line as _one_line
from kaffinity.repo.sandbox import (
    DEFAULT_SANDBOX,
    Outcome,
    Sandbox,
    confined_file,
    repository_root,
    run_tool,
)

if TYPE_CHECKING:
    from kaffinity.repo.dependencies import Plan

#: The rule of a render failure: bad input, as a manifest that does not parse.
RENDER_PROBLEM = "parse-error"

ORIGIN_ANNOTATION = "config.kubernetes.io/origin"
_SOURCE_COMMENT = re.compile(r"^# Source: (\S.*?)\s*$", re.M)
_SUPPRESSION_COMMENT = re.compile(r"(?:^|(?<=\s))#\s*kaffinity:\s*ignore\[[^\]]*\].*$")


@dataclass(frozen=True, slots=True)
class Section:
    """Lines ``first..last`` of a rendered file (stdin, or a render whose origin is not on disk)
    that came from ``origin`` (a chart template, as ``# Source:`` names it)."""

    file: str
    first: int
    last: int
    origin: str


@dataclass(frozen=True, slots=True)
class Rendered:
    """What rendering one unit (an overlay, a chart, a rendered stream) gave.

    ``files``: one :class:`SourceFile` per file the rendered documents point at, with that file's
    text (comment suppressions are read from it) and the documents in rendered order; a file
    whose documents could not be mapped keeps the rendered text and positions. A failed render
    is a file with one problem (rule ``parse-error``) naming the kustomization, the chart, or the
    template and line the tool gave.
    """

    unit: str
    engine: str | None
    files: tuple[SourceFile, ...]
    seconds: float = 0.0
    sections: tuple[Section, ...] = field(default=())
    #: By ``id`` of a rendered document: the overlay's patches that touch it, as (patch file,
    #: tree of positions shaped like the document), in the order kustomize applies them.
    patches: dict[int, tuple[tuple[str, Any], ...]] = field(default_factory=dict, compare=False)
    #: Remote resources left out of a build without the network (``local_only``).
    left_out: tuple[str, ...] = ()

    @property
    def documents(self) -> tuple[Document, ...]:
        return tuple(doc for file in self.files for doc in file.documents)

    @property
    def problems(self) -> tuple[tuple[str, LoadProblem], ...]:
        return tuple((file.name, problem) for file in self.files for problem in file.problems)

    #: False: nothing was rendered (the problems say why), though none is a ``parse-error``.
    built: bool = True

    @property
    def ok(self) -> bool:
        """Rendered: no problem but ``chart-dependency`` findings (a chart rendered without the
        dependencies it lacks, kaffinity.repo.dependencies)."""
        return self.built and all(problem.rule == "chart-dependency" for _, problem in self.problems)

    def patch_place(self, doc: Document, path: DataPath) -> tuple[str, Span] | None:
        """Where one of the overlay's patches spells ``path`` (a field it added or set), when
        that is more precise than the origin file: a patch that spells the path deeper than
        the origin does, or the whole of it (the patch's value is the one rendered). None: the
        finding belongs at ``doc.file``, ``doc.locate(path)``."""
        patches = self.patches.get(id(doc))
        if not patches:
            return None
        best, _ = locate_depth(doc.root, tuple(path), doc.span)
        place: tuple[str, Span] | None = None
        for file, tree in patches:
            depth, span = locate_depth(tree, tuple(path), doc.span)
            if depth > best or (depth == best == len(path) and depth > 0):
                best, place = depth, (file, span)
        return place

    def origin(self, file: str, line: int) -> str | None:
        """The template that produced ``line`` of the rendered ``file``, when the documents there
        could not be mapped to it (the template is not on disk): for a report to show
        ``<stdin>:1209 (from web/templates/deployment.yaml)``."""
        for section in self.sections:
            if section.file == file and section.first <= line <= section.last:
                return section.origin
        return None


# --- engines -------------------------------------------------------------------------------


def kustomize_engine() -> str | None:
    """``"kustomize"`` (a standalone binary on the PATH), ``"kubectl kustomize"``, or None."""
    if shutil.which("kustomize"):
        return "kustomize"
    if shutil.which("kubectl"):
        return "kubectl kustomize"
    return None


def helm_engine() -> str | None:
    """``"helm binary"`` (``helm`` on the PATH wins), ``"helm-python-sdk"`` (``kaffinity[helm]``), or None."""
    if shutil.which("helm"):
        return "helm binary"
    import importlib.util

    if importlib.util.find_spec("helm_python") is not None:
        return "helm-python-sdk"
    return None


# --- kustomize -----------------------------------------------------------------------------


def render_kustomization(
    directory: str,
    limits: Limits = DEFAULT_LIMITS,
    *,
    timeout: float | None = None,
    sandbox: Sandbox = DEFAULT_SANDBOX,
    wrapper_fields: Mapping[str, Any] | None = None,
    transform: Callable[[str], str] | None = None,
    local_only: bool = False,
) -> Rendered:
    """Build the kustomization in ``directory`` and point each object at the file defining it.

    ``local_only`` (the network is off and the build names remote resources): the build runs
    on a scratch copy of the kustomizations it uses with their remote ``resources``,
    ``bases`` and ``components`` left out (:func:`_local_mirror`), so the local objects are
    built with every local patch; the objects point at the repository's files as usual.

    ``wrapper_fields``: kustomization fields added to the temporary wrapper around the overlay
    (``namespace``, ``patches``, ``components``, ``images``, ``namePrefix``...), as a GitOps
    controller adds its own (Flux's kustomize-controller generates such a kustomization for a
    ``Kustomization``'s ``targetNamespace``/``patches``/``components``; Argo CD's repo-server runs
    ``kustomize edit`` for an Application's ``kustomize:`` options). ``transform``: applied to the
    built output before it is read (Flux's ``postBuild`` substitution).

    Resources point at their document in the resource file (found by kind and name, with the
    overlay's namePrefix/nameSuffix around it); generated objects (configMapGenerator, ...) at
    the kustomization that generated them. Fields that a patch added have no position in the
    resource file and resolve to their nearest ancestor there.

    Confined (kaffinity.repo.sandbox): the build tree is checked first
    (:func:`kaffinity.repo.preflight.check_kustomization`: no URL unless ``sandbox.network``,
    no path outside the repository, kaffinity's own limits on every file), the tool runs with
    no network, a cleared environment, memory and time limits, and an origin is trusted only
    inside the repository.
    """
    from kaffinity.repo.preflight import check_kustomization

    started = time.perf_counter()
    engine = kustomize_engine()
    kustomization = find_kustomization(directory) or os.path.join(directory, KUSTOMIZATION_NAMES[0])
    roots = sandbox.roots or (repository_root(directory),)
    seconds = sandbox.timeout if timeout is None else timeout

    def failed(message: str, where: str = kustomization, span: Span | None = None) -> Rendered:
        problem = SourceFile(
            where, _text_of(where, limits, roots), (), (LoadProblem(RENDER_PROBLEM, message, span),)
        )
        return Rendered(directory, engine, (problem,), time.perf_counter() - started)

    if not os.path.isfile(kustomization):
        return failed(f"cannot render: no kustomization file in {directory}", directory)
    if engine is None:
        return failed("cannot render: neither kustomize nor kubectl is on the PATH")
    if local_only and not sandbox.network:
        return _render_local(
            directory,
            kustomization,
            limits,
            seconds,
            sandbox,
            roots,
            failed,
            wrapper_fields=wrapper_fields,
            transform=transform,
        )
    refusal = check_kustomization(directory, roots, limits, network=sandbox.network)
    if refusal is not None:
        message = refusal.message
        if refusal.remote:
            message = f"cannot render: {message}; the network is off (--allow-network allows it)"
        return failed(message, refusal.file or kustomization, refusal.span)
    command = ["kustomize", "build"] if engine == "kustomize" else ["kubectl", "kustomize"]
    with tempfile.TemporaryDirectory(prefix="kaffinity-render-") as scratch:
        # Real paths on both sides: kustomize resolves the relative path from the real folder
        # (the temporary folder may sit behind a symlink, as /tmp does on macOS).
        wrapper = os.path.realpath(scratch)
        target = os.path.relpath(os.path.realpath(directory), wrapper)
        with open(os.path.join(wrapper, "kustomization.yaml"), "w", encoding="utf-8") as handle:
            handle.write(
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                f"resources:\n  - {_yaml_string(target)}\nbuildMetadata: [originAnnotations]\n"
            )
            for key, value in (wrapper_fields or {}).items():
                # JSON is YAML: each field on a line of its own.
                handle.write(f"{json.dumps(key)}: {json.dumps(value)}\n")
        outcome = _run([*command, wrapper], seconds, limits, sandbox)
        if isinstance(outcome, str):
            return failed(f"{engine}: {outcome}")
        if outcome.stopped is not None:
            return failed(f"{engine}: stopped: it {outcome.stopped}")
        output, errors, code = outcome.output, outcome.errors, outcome.code
        if code != 0:
            # The wrapper's error names paths relative to the temporary folder: build the
            # overlay itself for the message a user knows.
            again = _run([*command, directory], seconds, limits, sandbox)
            if not isinstance(again, str) and again.code != 0 and again.stopped is None:
                errors = again.errors
            return failed(
                f"{engine} failed: {_first_error(errors)}",
                *_error_place(errors, directory, kustomization, roots),
            )
        if transform is not None:
            output = transform(output)
        built = parse(f"{kustomization} (rendered)", output, limits)
        files = _map_kustomize(built, wrapper, directory, kustomization, limits, roots)
    patches = _overlay_patches(kustomization, directory, files, limits, roots)
    return Rendered(directory, engine, files, time.perf_counter() - started, patches=patches)


def _render_local(
    directory: str,
    kustomization: str,
    limits: Limits,
    seconds: float,
    sandbox: Sandbox,
    roots: Sequence[str],
    failed: Callable[..., Rendered],
    *,
    wrapper_fields: Mapping[str, Any] | None,
    transform: Callable[[str], str] | None,
) -> Rendered:
    """:func:`render_kustomization` of a scratch mirror without the remote entries, its files
    named back to the repository's."""
    root = next((r for r in roots if within(os.path.realpath(directory), os.path.realpath(r))), None)
    if root is None:
        return failed(f"cannot render: {directory} is outside the repository")
    with tempfile.TemporaryDirectory(prefix="kaffinity-local-") as scratch:
        mirror_root = os.path.join(os.path.realpath(scratch), "tree")
        left_out: list[str] = []
        mirrored, why = _local_mirror(directory, os.path.realpath(root), mirror_root, limits, left_out)
        if mirrored is None:
            return failed(f"cannot render without the network: {why}")
        inner = render_kustomization(
            mirrored,
            limits,
            timeout=seconds,
            sandbox=replace(sandbox, roots=(mirror_root,)),
            wrapper_fields=wrapper_fields,
            transform=transform,
        )

        def back(name: str) -> str:
            if not os.path.isabs(name) or not within(name, mirror_root):
                return name
            return os.path.normpath(os.path.join(directory, os.path.relpath(name, mirrored)))

        files = []
        for file in inner.files:
            name = back(file.name)
            text = _text_of(name, limits, roots) if name != file.name else file.text
            documents = tuple(replace(doc, file=name) for doc in file.documents)
            files.append(SourceFile(name, text, documents, file.problems))
    patches = _overlay_patches(kustomization, directory, files, limits, roots)
    return Rendered(
        directory, inner.engine, tuple(files), inner.seconds, patches=patches, left_out=tuple(left_out)
    )


#: What a scratch mirror of a build tree may copy (files, bytes): past it, the overlay is read
#: as written.
_MIRROR_FILES, _MIRROR_BYTES = 20_000, 256 << 20


def _local_mirror(
    directory: str, root: str, mirror_root: str, limits: Limits, left_out: list[str]
) -> tuple[str, None] | tuple[None, str]:
    """Copy the folders of the kustomizations ``directory`` uses (itself, its local bases and
    components, recursively) from the repository ``root`` into ``mirror_root``, at the same
    relative places, with the remote entries of ``resources``, ``bases`` and ``components``
    blanked out of each kustomization (their lines emptied, so every other line keeps its
    number). Symlinks are copied as links (the preflight of the mirror refuses those leading
    out of it). Returns the mirrored ``directory``, or why it could not be made; the remote
    entries left out are added to ``left_out``."""
    folders, blanks = _build_tree(directory, root, limits, left_out)
    why = _copy_folders(folders, root, mirror_root)
    if why is None:
        why = _blank_lines(blanks, root, mirror_root)
    if why is not None:
        return None, why
    return os.path.join(mirror_root, os.path.relpath(os.path.realpath(directory), root)), None


def _build_tree(
    directory: str, root: str, limits: Limits, left_out: list[str]
) -> tuple[list[str], dict[str, list[tuple[int, str | None]]]]:
    """The real folders of the kustomizations a build uses (inside ``root``), and the lines of
    the remote entries of each kustomization file (with None), and of the fields all of whose
    entries are remote (with the field's name: ``resources: []`` then, as kustomize refuses a
    kustomization left empty)."""
    from kaffinity.load.parse import parse_data
    from kaffinity.repo.preflight import is_remote

    folders: list[str] = []
    stack = [os.path.realpath(directory)]
    blanks: dict[str, list[tuple[int, str | None]]] = {}
    while stack:
        folder = stack.pop()
        if folder in folders or not within(folder, root):
            continue
        folders.append(folder)
        path = find_kustomization(folder)
        if path is None:
            continue
        _, text, problem = read_text(path, limits)
        data, problem = (None, problem) if problem is not None else parse_data(text)
        if problem is not None or not isinstance(data, PosDict):
            continue
        for key in ("resources", "bases", "components"):
            entries = data.get(key)
            if not isinstance(entries, PosList):
                continue
            lines = blanks.setdefault(os.path.realpath(path), [])
            remote = 0
            for index, entry in enumerate(entries):
                if not isinstance(entry, str):
                    continue
                if is_remote(entry, folder):
                    left_out.append(entry)
                    remote += 1
                    if index < len(entries.pos):
                        lines.append((unpack(entries.pos[index]).line, None))
                    continue
                target = os.path.realpath(os.path.join(folder, entry))
                if os.path.isdir(target):
                    stack.append(target)
            position = data.key_position(key)
            if remote and remote == len(entries) and position is not None:
                lines.append((unpack(position).line, key))
    return folders, {path: lines for path, lines in blanks.items() if lines}


def _copy_folders(folders: Sequence[str], root: str, mirror_root: str) -> str | None:
    """Copy the trees of ``folders`` (hidden folders left out) to the same places under
    ``mirror_root``; why not, past the mirror's bounds."""
    count = size = 0
    for folder in folders:
        for current, dirs, names in os.walk(folder):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            into = os.path.join(mirror_root, os.path.relpath(current, root))
            os.makedirs(into, exist_ok=True)
            for name in names:
                source, target = os.path.join(current, name), os.path.join(into, name)
                if os.path.lexists(target):
                    continue
                count += 1
                if os.path.islink(source):
                    os.symlink(os.readlink(source), target)
                elif os.path.isfile(source):
                    size += os.path.getsize(source)
                    if count > _MIRROR_FILES or size > _MIRROR_BYTES:
                        return f"its tree has over {_MIRROR_FILES:,} files or {_MIRROR_BYTES >> 20} MiB"
                    shutil.copyfile(source, target)
    return None


def _blank_lines(
    blanks: Mapping[str, Sequence[tuple[int, str | None]]], root: str, mirror_root: str
) -> str | None:
    """Empty the lines of the remote entries in the mirrored kustomization files (a field left
    with none: ``key: []``)."""
    for path, lines in blanks.items():
        target = os.path.join(mirror_root, os.path.relpath(path, root))
        with open(target, encoding="utf-8") as handle:
            text_lines = handle.read().split("\n")
        for line, key in lines:
            if not 0 < line <= len(text_lines):
                continue
            text = text_lines[line - 1]
            if key is not None:
                indent = text[: len(text) - len(text.lstrip())]
                if text.strip().split("#")[0].strip() not in (f"{key}:", f'"{key}":', f"'{key}':"):
                    return f"{path}:{line}: remote entries in a flow sequence"
                text_lines[line - 1] = f"{indent}{key}: []"
            elif not text.lstrip().startswith("-"):
                return f"{path}:{line}: a remote entry in a flow sequence"
            else:
                text_lines[line - 1] = ""
        with open(target, "w", encoding="utf-8") as handle:
            handle.write("\n".join(text_lines))
    return None


def _map_kustomize(
    built: SourceFile, wrapper: str, directory: str, kustomization: str, limits: Limits, roots: Sequence[str]
) -> tuple[SourceFile, ...]:
    origins: dict[str, SourceFile] = {}
    mapped: dict[str, list[Document]] = {}
    for doc in built.documents:
        origin = _pop_origin(doc.data)
        target = _origin_file(origin, wrapper, directory, roots) if origin is not None else None
        source = None
        if target is not None and origin is not None and "path" in origin:
            if target not in origins:
                origins[target] = read(target, limits, manifests_only=False)
            source = _find_source(doc, origins[target])
        if source is None:
            # Generated (configMapGenerator, ...): the generator's entry in the kustomization
            # that configured it; no origin (a remote resource) or its object not found: the
            # overlay's `resources`.
            generated = target is not None and origin is not None and "path" not in origin
            target = target if generated and target is not None else kustomization
            if target not in origins:
                origins[target] = read(target, limits, manifests_only=False)
            source = _kustomization_place(doc, origins[target], generated=generated)
            mapped.setdefault(target, []).append(source)
            continue
        assert target is not None  # a source was found in it
        mapped.setdefault(target, []).append(_repoint(doc, source))
    files = [SourceFile(name, origins[name].text, tuple(docs), ()) for name, docs in mapped.items()]
    if built.problems:
        files.append(SourceFile(built.name, built.text, (), built.problems))
    return tuple(files)


def _overlay_patches(
    kustomization: str, directory: str, files: Sequence[SourceFile], limits: Limits, roots: Sequence[str]
) -> dict[int, tuple[tuple[str, Any], ...]]:
    """The patch files of the overlay's kustomization and of the local kustomizations it builds
    on (``patches``, ``patchesStrategicMerge``, ``patchesJson6902`` entries with a ``path``), in
    the order kustomize applies them, aligned with each rendered object they touch. A
    strategic-merge patch touches the object of its kind and name; a JSON 6902 one the object
    its ``target`` names, and only its ``add``/``replace`` values count."""
    entries: list[tuple[str, dict[str, Any] | None]] = []
    for config, folder in _closure(kustomization, directory, limits, roots):
        for key in ("patches", "patchesStrategicMerge", "patchesJson6902"):
            listed = config.get(key)
            for entry in listed if isinstance(listed, list) else ():
                relative = entry.get("path") if isinstance(entry, dict) else entry
                target = entry.get("target") if isinstance(entry, dict) else None
                if isinstance(relative, str):
                    path = os.path.normpath(os.path.join(folder, relative))
                    entries.append((path, target if isinstance(target, dict) else None))
    found: dict[int, list[tuple[str, Any]]] = {}
    documents = [doc for file in files for doc in file.documents]
    for path, target in entries:
        if not confined_file(path, roots):
            continue
        raw = _raw_documents(_text_of(path, limits, roots), limits)
        for doc in documents:
            for tree in _patch_trees(doc, raw, target):
                found.setdefault(id(doc), []).append((path, tree))
    return {key: tuple(value) for key, value in found.items()}


#: Kustomizations of one build whose patches are read (a bound on a deep or wide tree).
_MOST_LAYERS = 64


def _closure(
    kustomization: str, directory: str, limits: Limits, roots: Sequence[str]
) -> list[tuple[dict[str, Any], str]]:
    """The overlay's kustomization and the local ones it builds on, each with its folder, in
    the order kustomize applies their patches: a kustomization's ``resources`` (and ``bases``)
    are built first, each with its own patches, then its ``components``, then its own patches
    (kubernetes-sigs/kustomize api/internal/target/kusttarget.go, ``AccumulateTarget``:
    ``accumulateResources``, ``accumulateComponents``, then the transformers). Only folders
    inside the repository; a kustomization read once."""
    ordered: list[tuple[dict[str, Any], str]] = []
    seen: set[str] = set()

    def visit(path: str, folder: str) -> None:
        real = os.path.realpath(path)
        if real in seen or len(seen) >= _MOST_LAYERS:
            return
        seen.add(real)
        config = _raw_documents(_text_of(path, limits, roots), limits)
        if not config or not isinstance(config[0], dict):
            return
        for key in ("resources", "bases", "components"):
            listed = config[0].get(key)
            for entry in listed if isinstance(listed, list) else ():
                if not isinstance(entry, str) or "://" in entry or entry.startswith("git@"):
                    continue
                inner = os.path.normpath(os.path.join(folder, entry))
                if os.path.isdir(inner) and (found := find_kustomization(inner)) is not None:
                    visit(found, inner)
        ordered.append((config[0], folder))

    visit(kustomization, directory)
    return ordered


def _patch_trees(doc: Document, raw: list[Any], target: dict[str, Any] | None) -> list[Any]:
    trees: list[Any] = []
    name = _name(doc.data)
    for patch in raw:
        if isinstance(patch, PosDict) and patch.get("kind") == doc.data.get("kind"):
            own = _name(patch)
            if own and own in name and (target is None or _targets(target, doc)):
                trees.append(_without_identity(_align(doc.data, patch)))  # strategic merge
        elif isinstance(patch, PosList) and target is not None and _targets(target, doc):
            trees.extend(_json_patch_trees(doc.data, patch))
    return trees


def _without_identity(tree: Any) -> Any:
    """A strategic-merge patch's apiVersion, kind and name only say which object it patches:
    they keep the place they have in the origin file."""
    if isinstance(tree, PosDict):
        for key in ("apiVersion", "kind"):
            if key in tree:
                _remove_key(tree, key)
        metadata = tree.get("metadata")
        if isinstance(metadata, PosDict) and "name" in metadata:
            _remove_key(metadata, "name")
    return tree


def _targets(target: dict[str, Any], doc: Document) -> bool:
    kind, name = target.get("kind"), target.get("name")
    return (kind is None or kind == doc.data.get("kind")) and (
        not isinstance(name, str) or name in _name(doc.data)
    )


def _json_patch_trees(data: Any, operations: PosList) -> list[Any]:
    """A tree per ``add``/``replace`` operation: no positions down to its ``path`` (the patch
    spells none of those fields), then its ``value`` aligned with the rendered value there."""
    trees = []
    for operation in operations:
        if not isinstance(operation, PosDict) or operation.get("op") not in ("add", "replace"):
            continue
        pointer = operation.get("path")
        position = operation.key_position("value")
        if not isinstance(pointer, str) or not pointer.startswith("/") or position is None:
            continue
        found = _pointed(data, pointer)
        if found is not None:
            steps, node = found
            trees.append(_patch_tree(_align(node, operation["value"]), steps, operation, position))
    return trees


def _pointed(data: Any, pointer: str) -> tuple[list[Any], Any] | None:
    """The steps of a JSON pointer into ``data`` (``-``: the last item) and the value there;
    None when it leads nowhere."""
    steps: list[Any] = []
    node = data
    for raw_step in pointer[1:].split("/"):
        step: Any = raw_step.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            step = len(node) - 1 if step == "-" else int(step) if step.isdigit() else None
            if step is None or not 0 <= step < len(node):
                return None
        elif not isinstance(node, dict) or step not in node:
            return None
        steps.append(step)
        node = node[step]
    return steps, node


def _patch_tree(leaf: Any, steps: list[Any], operation: PosDict, position: int) -> Any:
    """``leaf`` under mappings and lists down ``steps``, placed nowhere but the operation's own
    path end: its ``value:`` key."""
    tree: Any = leaf
    for index, step in enumerate(reversed(steps)):
        holder: Any = PosDict(operation.span) if isinstance(step, str) else PosList(operation.span)
        if isinstance(step, int):
            holder.extend([None] * step)
            holder.pos.extend([None] * step)
        if isinstance(holder, PosDict):
            holder[step] = tree
        else:
            holder.append(tree)
        holder.pos.append(position if index == 0 else None)
        tree = holder
    return tree


def _raw_documents(text: str, limits: Limits) -> list[Any]:
    """The documents of a YAML text with positions, whatever they hold (a kustomization without
    apiVersion/kind, a JSON 6902 patch is a list); none when it does not parse."""
    from kaffinity.load.parse.reader import _documents, _parse_errors  # the loader's own builder

    try:
        return [data for data, _ in _documents(text, limits)]
    except _parse_errors():
        return []


def _pop_origin(data: Any) -> dict[str, str] | None:
    """Remove kustomize's origin annotation (and an annotations mapping it leaves empty) and
    return its top-level fields (``path``, ``repo``, ``configuredIn``)."""
    metadata = data.get("metadata") if isinstance(data, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if not isinstance(annotations, dict) or ORIGIN_ANNOTATION not in annotations:
        return None
    value = _remove_key(annotations, ORIGIN_ANNOTATION)
    if not annotations and isinstance(metadata, dict):
        _remove_key(metadata, "annotations")
    if not isinstance(value, str):
        return None
    fields: dict[str, str] = {}
    for line in value.splitlines():
        key, colon, rest = line.partition(": ")
        if colon and key in ("path", "repo", "ref", "configuredIn"):
            fields[key] = rest.strip().strip("'\"")
    return fields


def _remove_key(mapping: dict[str, Any], key: str) -> Any:
    """Remove ``key``, keeping a PosDict's positions aligned with its keys."""
    if isinstance(mapping, PosDict):
        index = list(mapping).index(key)
        if index < len(mapping.pos):
            del mapping.pos[index]
    return mapping.pop(key)


def _origin_file(origin: dict[str, Any], wrapper: str, directory: str, roots: Sequence[str]) -> str | None:
    """The file an origin names (paths are relative to the temporary kustomization), named as
    the input names its files: relative to the working directory if ``directory`` was.

    Trusted only as a regular file inside the repository (symlinks resolved): a manifest can
    carry a forged ``config.kubernetes.io/origin`` annotation of its own (kustomize keeps an
    annotation that is already there), naming any file; its lines would be printed as the
    object's source. Otherwise the object keeps its rendered place."""
    if origin.get("repo"):
        return None  # a remote base: nothing on disk to point at
    relative = origin.get("path") or origin.get("configuredIn")
    if not isinstance(relative, str):
        return None
    path = os.path.normpath(os.path.join(wrapper, relative))
    if not confined_file(path, roots):
        return None
    return path if os.path.isabs(directory) else os.path.relpath(path)


def _find_source(doc: Document, source: SourceFile) -> Document | None:
    """The document of ``source`` that ``doc`` was rendered from: same kind, and a name that
    the rendered name holds (namePrefix/nameSuffix around it); the longest such name."""
    kind = doc.data.get("kind")
    name = _name(doc.data)
    candidates = [other for other in source.documents if other.data.get("kind") == kind]
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    named = [other for other in candidates if (own := _name(other.data)) and own in name]
    return max(named, key=lambda other: len(_name(other.data)), default=None)


def _kustomization_place(doc: Document, kustomization: SourceFile, *, generated: bool) -> Document:
    """``doc`` pointed at a kustomization: at the generator entry whose ``name`` the rendered
    name holds (``- name: web-config``), else at the generators' (or ``resources``) key; every
    path inside it resolves there. The kustomization need not parse as a manifest (it often
    has no apiVersion/kind), so its keys are found by indentation."""
    entries = _template_documents(kustomization.text.splitlines())[0]
    name = _name(doc.data)
    wanted = "Generator" if generated else "resources"
    section: str | None = None
    best: _Entry | None = None
    fallback: _Entry | None = None
    for entry in entries:
        if entry.column == 1 and entry.key is not None:
            section = entry.key
            if section.endswith(wanted) and fallback is None:
                fallback = entry
        elif (
            generated
            and section is not None
            and section.endswith(wanted)
            and entry.key == "name"
            and entry.value
            and entry.value in name
            and (best is None or len(entry.value) > len(best.value))
        ):
            best = entry
    place = best or fallback or (entries[0] if entries else None)
    span = Span(place.line, place.column) if place is not None else Span(1, 1)
    return replace(doc, file=kustomization.name, index=0, root=PosDict(span), prefix=(), span=span)


def _name(data: Any) -> str:
    metadata = data.get("metadata") if isinstance(data, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""


def _repoint(doc: Document, source: Document) -> Document:
    """``doc``'s rendered data, with positions taken from ``source`` (aligned item by item)."""
    root = _align(doc.data, _at(source.root, source.prefix))
    return replace(doc, file=source.file, index=source.index, root=root, prefix=(), span=source.span)


def _at(root: Any, prefix: Sequence[Any]) -> Any:
    node = root
    for step in prefix:
        node = node[step]
    return node


#: Strategic-merge keys of the pod spec's lists (k8s.io/api/core/v1 types.go, `patchMergeKey`),
#: by which a rendered list item is paired with the source item it came from: a strategic-merge
#: patch adds items (kustomize puts a new container first) and so shifts indices.
_MERGE_KEYS = ("name", "containerPort", "mountPath", "devicePath", "topologyKey", "ip", "key", "port")


def _align(rendered: Any, source: Any) -> Any:
    """A tree shaped like ``rendered`` holding the positions of the matching nodes of ``source``;
    what the source lacks is left out (its position is then its nearest ancestor's)."""
    if isinstance(rendered, dict) and isinstance(source, PosDict):
        out = PosDict(source.span)
        for (key, value), position in zip(source.items(), source.pos, strict=False):
            if key in rendered:
                out[key] = _align(rendered[key], value)
                out.pos.append(position)
        return out
    if isinstance(rendered, list) and isinstance(source, PosList):
        items = PosList(source.span)
        for index, item in enumerate(rendered):
            match = _pair(item, index, rendered, source)
            items.append(_align(item, source[match]) if match is not None else None)
            # No position: locate() stops at the list and reports its key.
            items.pos.append(source.pos[match] if match is not None else None)  # type: ignore[arg-type]
        return items
    return None


def _pair(item: Any, index: int, rendered: list[Any], source: PosList) -> int | None:
    if isinstance(item, dict):
        for key in _MERGE_KEYS:
            if key in item:
                for position, candidate in enumerate(source):
                    if isinstance(candidate, dict) and candidate.get(key) == item[key]:
                        return position
                break
    for position, candidate in enumerate(source):
        if candidate == item:
            return position
    return index if len(rendered) == len(source) else None


# --- Helm ----------------------------------------------------------------------------------


def render_chart(
    chart_dir: str,
    values_files: Sequence[str] = (),
    release: str = "release-name",
    namespace: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    *,
    timeout: float | None = None,
    sandbox: Sandbox = DEFAULT_SANDBOX,
    values_objects: Sequence[Any] = (),
    kube_version: str | None = None,
) -> Rendered:
    """Render a chart as ``helm template RELEASE CHART [--namespace NS] [-f VALUES]...`` would,
    and point each object at its template (see :func:`map_helm_sources`).

    ``release`` defaults to helm template's own default name. The ``helm`` binary wins when it
    is on the PATH; else helm-python-sdk renders, in a child process
    (:mod:`kaffinity.repo.helm_worker`). Confined (kaffinity.repo.sandbox): the chart is walked
    first (:func:`kaffinity.repo.preflight.check_chart`: a symlink leading outside the
    repository, a values file outside it or past kaffinity's limits refuse it), and either
    engine runs with no network, a cleared environment, memory and time limits.

    ``kube_version``: the Kubernetes version the chart is rendered for (``Capabilities.KubeVersion``,
    a chart's ``kubeVersion`` constraint): kaffinity's ``--kube-version``. A helm built without
    Helm's release ldflags (``go install``) says v1.20.0 otherwise, and refuses charts that
    require newer (helm.sh/helm/v3 pkg/chartutil/capabilities.go); helm-python-sdk renders for
    the version it was built with.

    ``values_objects``: values given inline (a HelmRelease's ``spec.values``, an Application's
    ``valuesObject``), applied after the files in order, as further ``--values`` files are.
    """
    from kaffinity.repo.preflight import check_chart

    started = time.perf_counter()
    engine = helm_engine()
    chart_file = os.path.join(chart_dir, "Chart.yaml")
    roots = sandbox.roots or (repository_root(chart_dir),)
    seconds = sandbox.timeout if timeout is None else timeout

    def failed(message: str, where: str = chart_file, span: Span | None = None) -> Rendered:
        problem = SourceFile(
            where, _text_of(where, limits, roots), (), (LoadProblem(RENDER_PROBLEM, message, span),)
        )
        return Rendered(chart_dir, engine, (problem,), time.perf_counter() - started)

    if not os.path.isfile(chart_file):
        return failed(f"cannot render: no Chart.yaml in {chart_dir}", chart_dir)
    if engine is None:
        return failed(
            "cannot render: no helm on the PATH and helm-python-sdk is not installed (kaffinity[helm])"
        )
    for values in values_files:
        if not os.path.isfile(values):
            return failed(f"cannot render: values file {values} not found")
    refusal = check_chart(chart_dir, values_files, roots, limits, network=sandbox.network)
    if refusal is not None:
        return failed(refusal.message, refusal.file, refusal.span)
    from kaffinity.repo.dependencies import plan, scratch_chart

    # Chart.yaml's dependencies (kaffinity.repo.dependencies): those missing from charts/ are
    # taken from the repository (file://) or the remote cache into a scratch copy of the chart;
    # those that cannot be are findings at their Chart.yaml item, and the rest still renders.
    needs = plan(chart_dir, roots, limits, sandbox)
    with tempfile.TemporaryDirectory(prefix="kaffinity-values-") as scratch:
        # Inline values as files of their own (JSON is YAML), after the user's files.
        inline = []
        for index, values in enumerate(values_objects):
            path = os.path.join(scratch, f"values-{index}.json")
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(values, handle)
            inline.append(path)
        render_dir = chart_dir
        if needs is not None and not needs.complete:
            copy = os.path.join(scratch, "chart")
            os.mkdir(copy)
            render_dir = scratch_chart(needs, copy)
            # What was fetched is held to the rules the checkout is (a schema's $ref, links).
            refusal = check_chart(render_dir, (), (copy,), limits, network=sandbox.network)
            if refusal is not None:
                return failed(refusal.message.replace(copy, "<dependencies>"))
        rendered = _render_chart(
            chart_dir,
            [*values_files, *inline],
            release,
            namespace,
            kube_version,
            limits,
            seconds,
            sandbox,
            roots,
            engine,
            started,
            failed,
            render_dir=render_dir,
        )
    if needs is not None and needs.missing:
        return _missing_dependencies(rendered, needs, limits, roots)
    return rendered


def _missing_dependencies(rendered: Rendered, needs: Plan, limits: Limits, roots: Sequence[str]) -> Rendered:
    """``rendered`` (the chart without the dependencies it lacks) with one ``chart-dependency``
    problem per missing dependency, at its item of Chart.yaml. When the chart did not render,
    the missing dependencies are the cause as far as anyone can tell: ``helm template`` refuses
    such a chart outright (pkg/action/dependency.go CheckDependencies), and the parent's
    templates often read the dependency's values or helpers (argo-cd's HA values enable
    redis-ha; the error then names a template of the parent, not the dependency). So: the
    dependency problems alone, the first carrying Helm's error, the chart not rendered."""
    from kaffinity.repo.dependencies import DEPENDENCY_RULE, vendor_command

    failure = next((problem for _, problem in rendered.problems if problem.rule == RENDER_PROBLEM), None)
    problems = []
    for number, (dependency, why) in enumerate(needs.missing):
        message = (
            f"dependency {dependency.name} {dependency.version or '*'} "
            f"({dependency.repository or 'no repository'}) is not in charts/: {why}; "
            f"the chart is rendered without it (`{vendor_command(needs.chart_dir)}` vendors it)"
        )
        if failure is not None and number == 0:
            message = message.replace(
                "the chart is rendered without it",
                f"the chart does not render without it ({failure.message})",
            )
        problems.append(LoadProblem(DEPENDENCY_RULE, message, dependency.span))
    listing = SourceFile(needs.file, _text_of(needs.file, limits, roots), (), tuple(problems))
    if failure is not None:
        return Rendered(rendered.unit, rendered.engine, (listing,), rendered.seconds, built=False)
    return replace(rendered, files=(*rendered.files, listing))


def _render_chart(
    chart_dir: str,
    values_files: Sequence[str],
    release: str,
    namespace: str | None,
    kube_version: str | None,
    limits: Limits,
    seconds: float,
    sandbox: Sandbox,
    roots: Sequence[str],
    engine: str,
    started: float,
    failed: Callable[..., Rendered],
    *,
    render_dir: str | None = None,
) -> Rendered:
    """Render ``render_dir`` (a scratch copy of ``chart_dir`` with its dependencies, or the chart
    itself), mapped back to ``chart_dir``'s templates."""
    chart_file = os.path.join(chart_dir, "Chart.yaml")
    source = render_dir or chart_dir
    if engine == "helm binary":
        command = ["helm", "template", release, source]
        if namespace:
            command += ["--namespace", namespace]
        if kube_version:
            command += ["--kube-version", kube_version]
        for values in values_files:
            command += ["--values", values]
        outcome = _run(command, seconds, limits, sandbox)
        if isinstance(outcome, str):
            return failed(f"helm template: {outcome}")
        if outcome.stopped is not None:
            return failed(f"helm template: stopped: it {outcome.stopped}")
        if outcome.code != 0:
            return failed(
                f"helm template failed: {_first_error(outcome.errors)}",
                *_template_place(outcome.errors, chart_dir, chart_file, roots),
            )
        output = outcome.output
    else:
        rendered = _sdk_render(source, values_files, release, namespace, seconds, limits, sandbox)
        if isinstance(rendered, _Failure):
            where = (
                (rendered.file, rendered.span)
                if rendered.file and confined_file(rendered.file, roots)
                else _template_place(rendered.message, chart_dir, chart_file, roots)
            )
            return failed(f"helm-python-sdk: {rendered.message}", *where)
        output = rendered
    stream = parse(f"helm template {chart_dir}", output, limits)
    mapped = map_helm_sources(stream, chart_dir, limits, roots)
    return Rendered(chart_dir, engine, mapped.files, time.perf_counter() - started, mapped.sections)


@dataclass(frozen=True, slots=True)
class _Failure:
    message: str
    file: str | None = None
    span: Span | None = None


def _sdk_render(
    chart_dir: str,
    values_files: Sequence[str],
    release: str,
    namespace: str | None,
    timeout: float,
    limits: Limits,
    sandbox: Sandbox,
) -> str | _Failure:
    """Render with helm-python-sdk (Helm's Go engine) into ``helm template``'s output shape:
    ``---``, ``# Source: <template>``, one manifest each; partials and NOTES.txt left out as
    helm template does. In a child process (:mod:`kaffinity.repo.helm_worker`) under the
    sandbox's limits: a call into the library cannot be interrupted, and a template can ask
    for any amount of memory; the child is killed on timeout, never left running."""
    from kaffinity.repo.sandbox import WORKER_FAILED, worker_command

    request = {
        "chart": os.path.abspath(chart_dir),
        "values": [os.path.abspath(path) for path in values_files],
        "release": release,
        "namespace": namespace,
    }
    outcome = _counted(
        run_tool(
            [*worker_command(), json.dumps(request)],
            sandbox,
            timeout=timeout,
            output_limit=limits.file_size,
        )
    )
    if isinstance(outcome, str):
        return _Failure(outcome)
    if outcome.stopped is not None:
        return _Failure(f"stopped: rendering {outcome.stopped}")
    if outcome.code == WORKER_FAILED:
        try:
            failure = json.loads(outcome.errors.strip().splitlines()[-1])
            file = failure.get("file")
            return _Failure(str(failure["message"]), file if isinstance(file, str) else None)
        except (ValueError, IndexError, KeyError, AttributeError):
            pass
    if outcome.code != 0:
        return _Failure(_crash(outcome, sandbox))
    return outcome.output


def _crash(outcome: Outcome, sandbox: Sandbox) -> str:
    """Why a tool ended without its own error report: its memory limit, a signal, else its
    first error line."""
    errors = outcome.errors
    if (
        any(text in errors for text in ("out of memory", "cannot allocate memory", "MemoryError"))
        or outcome.code == -9
    ):
        return (
            f"stopped: rendering needed more than the memory limit of {sandbox.memory // 1024**2} MiB "
            "(--render-memory)"
        )
    if outcome.code < 0:
        return f"stopped by signal {-outcome.code}"
    return _first_error(errors)


# --- `# Source:` mapping -------------------------------------------------------------------


def map_helm_sources(
    file: SourceFile,
    chart_root: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    roots: Sequence[str] | None = None,
) -> Rendered:
    """Point the documents of rendered Helm output at the templates its ``# Source:`` comments name.

    A template is looked for under ``chart_root`` (``<chart>/templates/x.yaml`` is
    ``chart_root/templates/x.yaml``; a subchart's ``<chart>/charts/sub/...`` likewise), else
    relative to the working directory (as ``<chart>/templates/x.yaml``, or as
    ``templates/x.yaml`` when the working directory is the chart). A mapped document's
    positions are found in the template text by indentation (:func:`template_positions`); the
    template's text comes with it, so ``# kaffinity: ignore[...]`` comments there apply.
    Documents with no ``# Source:``, whose template is not on disk, or whose part of the template
    cannot be told, stay in ``file`` at their rendered position; :meth:`Rendered.origin` then
    names their template. Templates are read only inside ``roots`` (default: the repository
    around the working folder, :func:`kaffinity.repo.sandbox.repository_root`).
    """
    started = time.perf_counter()
    parts = _sources_by_line(file.text)
    if not parts:
        return Rendered(file.name, None, (file,), time.perf_counter() - started)
    starts = [part[0] for part in parts]
    origins = [_source_of(parts, starts, doc) for doc in file.documents]
    confined = tuple(roots) if roots else (repository_root(chart_root or "."),)
    templates = _Templates(file, origins, chart_root, limits, confined)
    texts = templates.texts
    mapped: dict[str, list[Document]] = {}
    kept: list[Document] = []
    sections: list[Section] = []
    moved: list[tuple[int, int]] = []  # the lines of the documents pointed at their template
    # A key given twice in the output: every object kept (the later value read, as go-yaml v2
    # decodes for sigs.k8s.io/yaml), and the duplicate reported at its template line.
    duplicates: dict[str, list[LoadProblem]] = {}
    placed: set[Span] = set()
    for doc, origin in zip(file.documents, origins, strict=True):
        if origin is None:
            kept.append(doc)
            continue
        template, first, last = origin
        path, repointed = templates.repoint(doc, template)
        if path is None or repointed is None:
            kept.append(doc)
            sections.append(Section(file.name, first, last, path or template))
        else:
            mapped.setdefault(path, []).append(repointed)
            moved.append((first, last))
            for duplicate in doc.duplicate_keys:
                where = _key_path(doc.data, duplicate.key, duplicate.span)
                if where is not None:
                    placed.add(duplicate.span)
                    span = _later_key(texts[path] or "", duplicate.key, repointed.locate(where))
                    problem = _rendered_duplicate(duplicate.key, span)
                    duplicates.setdefault(path, []).append(problem)
    problems = tuple(
        problem
        for problem in file.problems
        if not (problem.span in placed and problem.message.startswith("mapping key "))
    )
    files = [
        SourceFile(path, texts[path] or "", tuple(docs), tuple(duplicates.get(path, ())))
        for path, docs in mapped.items()
    ]
    if kept or problems:
        text = _without_suppressions(file.text, moved)
        files.insert(0, SourceFile(file.name, text, tuple(kept), problems))
    return Rendered(file.name, None, tuple(files), time.perf_counter() - started, tuple(sections))


def _key_path(data: Any, key: str, span: Span) -> DataPath | None:
    """The data path of ``key`` in ``data`` where the parser recorded it at ``span`` (the later
    of a key given twice: kaffinity.load.parse keeps that position). Without recursion."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, PosDict):
            if key in node and (position := node.key_position(key)) is not None and unpack(position) == span:
                return (*path, key)
            stack.extend((value, (*path, name)) for name, value in node.items())
        elif isinstance(node, PosList):
            stack.extend((value, (*path, index)) for index, value in enumerate(node))
    return None


def _later_key(text: str, key: str, span: Span) -> Span:
    """The template line of the later of a key given twice: the positions of a rendered object
    are found in its template by key (the first such key), so the same key again below it, at
    the same indentation and in the same block, is the one Helm's output repeats. ``span``
    itself when there is none (the key repeated through an include or a value)."""
    lines = text.splitlines()
    indent = span.column - 1
    if not 0 < span.line <= len(lines) or not lines[span.line - 1][indent:].startswith(f"{key}:"):
        return span
    for number in range(span.line, len(lines)):
        line = lines[number]
        stripped = line.lstrip()
        if not stripped or stripped.startswith(("#", "{{")):
            continue
        depth = len(line) - len(stripped)
        if depth < indent:
            break
        if depth == indent and stripped.startswith(f"{key}:"):
            return Span(number + 1, span.column)
    return span


def _rendered_duplicate(key: str, span: Span) -> LoadProblem:
    """A key given twice in an object a template rendered. Helm reads the manifest leniently
    (sigs.k8s.io/yaml over go-yaml v2, non-strict: the later value wins), but ``helm install``
    and ``helm upgrade`` validate it strictly by default (helm/helm pkg/kube/client.go, Build:
    ``metav1.FieldValidationStrict`` unless --disable-openapi-validation; kubectl's
    cmdutil Factory.Validator adds ``validation.NoDoubleKeySchema``), so they refuse the release;
    ``kubectl apply`` does too (``--validate=strict``). Reported at the template line, every
    object of the chart still linted with the later value."""
    message = (
        f'mapping key "{key}" given twice in the rendered object: helm install refuses it '
        "(strict validation); the later value is read"
    )
    return LoadProblem(RENDER_PROBLEM, message, span)


class _Templates:
    """The templates the documents of rendered output came from: their text (read once), and
    which object of each template and kind a document is."""

    def __init__(
        self,
        file: SourceFile,
        origins: Sequence[tuple[str, int, int] | None],
        chart_root: str | None,
        limits: Limits,
        roots: Sequence[str],
    ) -> None:
        self.chart_root = chart_root
        self.limits = limits
        self.roots = roots
        self.counts = Counter(
            (origin[0], doc.data.get("kind"))
            for doc, origin in zip(file.documents, origins, strict=True)
            if origin
        )
        self.totals = Counter(origin[0] for origin in origins if origin)
        self.seen: Counter[tuple[str, Any]] = Counter()
        self.places: Counter[str] = Counter()
        self.texts: dict[str, str | None] = {}

    def repoint(self, doc: Document, template: str) -> tuple[str | None, Document | None]:
        """The template's path on disk (None: not found), and ``doc`` pointed at its place there
        (None: the template could not be read, or its part cannot be told)."""
        kind = doc.data.get("kind")
        ordinal = self.seen[(template, kind)]
        self.seen[(template, kind)] += 1
        order = (self.places[template], self.totals[template])
        self.places[template] += 1
        path = _template_path(template, self.chart_root, self.roots)
        if path is None:
            return None, None
        if path not in self.texts:
            _, read_back, problem = read_text(path, self.limits)
            self.texts[path] = read_back if problem is None else None
        text = self.texts[path]
        if text is None:
            return path, None
        return path, _repoint_template(doc, path, text, ordinal, self.counts[(template, kind)], order)


def _without_suppressions(text: str, ranges: Sequence[tuple[int, int]]) -> str:
    """``text`` with the ``# kaffinity: ignore[...]`` comments of the lines in ``ranges`` removed:
    helm copies a template's comments into its output, and a comment whose document now points at
    the template (where the same comment applies) must not also stand, unused, in the stream."""
    if "kaffinity:" not in text or not ranges:
        return text
    lines = text.split("\n")
    for first, last in ranges:
        for number in range(first, min(last, len(lines)) + 1):
            line = lines[number - 1]
            if "kaffinity:" in line:
                lines[number - 1] = _SUPPRESSION_COMMENT.sub("", line).rstrip()
    return "\n".join(lines)


def _sources_by_line(text: str) -> list[tuple[int, int, str | None]]:
    """The rendered stream's documents as (first line, last line, template or None), in order;
    empty when no ``# Source:`` comment is in it."""
    if "# Source: " not in text:
        return []
    separators = [text.count("\n", 0, match.start()) + 1 for match in _SEPARATOR.finditer(text)]
    bounds = [1, *(line for line in separators if line > 1), text.count("\n") + 2]
    parts: list[tuple[int, int, str | None]] = [
        (start, end - 1, None) for start, end in itertools.pairwise(bounds)
    ]
    starts = [part[0] for part in parts]
    for match in _SOURCE_COMMENT.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        index = bisect.bisect_right(starts, line) - 1
        first, last, template = parts[index]
        if template is None:  # the first `# Source:` of a document names it
            parts[index] = (first, last, match.group(1))
    return parts


def _source_of(
    parts: list[tuple[int, int, str | None]], starts: list[int], doc: Document
) -> tuple[str, int, int] | None:
    line = getattr(doc.root, "span", doc.span).line
    index = bisect.bisect_right(starts, line) - 1
    if index < 0:
        return None
    first, last, template = parts[index]
    return (template, first, last) if template is not None else None


def _template_path(template: str, chart_root: str | None, roots: Sequence[str]) -> str | None:
    """The file on disk that a ``# Source:`` path names, or None. Only a regular file inside
    the repository: rendered output (a chart's own, or piped on stdin) can carry any
    ``# Source:`` comment, ``../../etc/passwd`` too, and the file's lines would be printed."""
    parts = template.split("/")
    candidates = []
    if chart_root is not None and len(parts) > 1:
        candidates.append(os.path.join(chart_root, *parts[1:]))
    candidates.append(os.path.join(*parts))
    if len(parts) > 1 and os.path.isfile("Chart.yaml"):
        candidates.append(os.path.join(*parts[1:]))
    for candidate in candidates:
        if confined_file(candidate, roots):
            return os.path.normpath(candidate)
    return None


def _repoint_template(
    doc: Document, path: str, text: str, ordinal: int, count: int, order: tuple[int, int]
) -> Document | None:
    blocks = _template_blocks(text)
    block = _choose_block(blocks, doc.data.get("kind"), _name(doc.data), ordinal, count, order)
    if block is None:
        if any(blocks):
            return None
        # The whole object comes from a named template (`{{ include "x.podMonitor" . }}`): every
        # path is at the line that includes it.
        match = _INCLUDE_LINE.search(text)
        if match is None:
            return None
        line = text.count("\n", 0, match.start()) + 1
        span = Span(line, match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1)
        return replace(doc, file=path, index=0, root=PosDict(span), prefix=(), span=span)
    index, entries = block
    root = template_positions(doc.data, entries)
    if not isinstance(root, PosDict):
        return None
    span = root.span
    for key in ("apiVersion", "kind"):
        position = root.key_position(key)
        if position is not None:
            span = unpack(position)
            break
    return replace(doc, file=path, index=index, root=root, prefix=(), span=span)


@functools.lru_cache(maxsize=64)
def _template_blocks(text: str) -> list[list[_Entry]]:
    """:func:`_template_documents` of a template's text, once per template (a ``range`` renders
    many objects from one)."""
    return _template_documents(text.splitlines())


_INCLUDE_LINE = re.compile(r"\{\{-?\s*(?:include|template)\s")


def _choose_block(
    blocks: list[list[_Entry]], kind: Any, name: str, ordinal: int, count: int, order: tuple[int, int]
) -> tuple[int, list[_Entry]] | None:
    """The part of a template (between ``---`` lines) that rendered the ``ordinal``-th object of
    this kind from it (of ``count``; ``order``: its place among all the objects the template
    rendered, and their number): among the parts whose literal ``kind:`` is that kind, the
    one whose ``metadata.name`` pattern fits the rendered name best (most literal characters),
    else by order when every such part rendered; with no such part, the only part whose kind is
    not spelled out."""
    usable = [(index, entries) for index, entries in enumerate(blocks) if entries]
    kinds = [_top_value(entries, "kind") for _, entries in usable]
    of_kind = [part for part, literal in zip(usable, kinds, strict=True) if literal == kind]
    if len(of_kind) == 1:
        return of_kind[0]  # also a `range` that renders several objects from one part
    if len(of_kind) > 1:
        return _by_name(of_kind, name, ordinal, count)
    return _unknown_kind(usable, kinds, order)


def _by_name(
    of_kind: list[tuple[int, list[_Entry]]], name: str, ordinal: int, count: int
) -> tuple[int, list[_Entry]] | None:
    """Of the parts of the kind, the one whose ``metadata.name`` fits best, else by order when
    every such part rendered."""
    fits = [(_name_fit(entries, name), (index, entries)) for index, entries in of_kind]
    best = max(fit for fit, _ in fits)
    chosen = [part for fit, part in fits if fit == best]
    if best >= 0 and len(chosen) == 1:
        return chosen[0]
    return of_kind[ordinal] if len(of_kind) == count and ordinal < len(of_kind) else None


def _unknown_kind(
    usable: list[tuple[int, list[_Entry]]], kinds: list[str | None], order: tuple[int, int]
) -> tuple[int, list[_Entry]] | None:
    """No part spells the kind: the only part whose kind is not spelled out; for kinds the
    template computes (`kind: {{ ternary "Role" "ClusterRole" ... }}`), by order, when every
    part rendered one object."""
    unknown = [
        part for part, literal in zip(usable, kinds, strict=True) if literal is None or "{{" in literal
    ]
    if len(unknown) == 1:
        return unknown[0]
    place, total = order
    return usable[place] if unknown and len(usable) == total and place < total else None


def _top_value(entries: Sequence[_Entry], key: str) -> str | None:
    return next((entry.value for entry in entries if entry.key == key and entry.column == 1), None)


_ACTION = re.compile(r"\{\{.*?\}\}")


def _name_fit(entries: Sequence[_Entry], name: str) -> int:
    """How well a part's ``metadata.name`` fits the rendered name: the number of its literal
    characters when its pattern (actions as wildcards) matches, -1 when it does not or is absent."""
    in_metadata = False
    for entry in entries:
        if entry.column == 1:
            in_metadata = entry.key == "metadata"
        elif in_metadata and entry.key == "name":
            literal = _ACTION.split(entry.value)
            pattern = ".*".join(re.escape(piece) for piece in literal)
            return sum(map(len, literal)) if re.fullmatch(pattern, name, re.S) else -1
    return -1


@dataclass(frozen=True, slots=True)
class _Entry:
    """A key (``key`` set) or a list item's dash (``key`` None) on a template line."""

    line: int
    column: int
    key: str | None
    value: str = ""


#: A mapping key at the start of a line's rest: "quoted", 'quoted' or plain, then `:` and a space
#: or the end of the line (so `image: nginx:1.27` is the key `image`, and `- http://x` no key).
_KEY = re.compile(
    r"""(?:"((?:[^"\\]|\\.)*)"|'((?:[^']|'')*)'"""
    r"""|([^\s#'"{\[\]&*!|>%@`-][^#]*?|-[^\s#][^#]*?))[ \t]*:(?:[ \t]+|$)"""
)
_ACTION_ONLY = re.compile(r"^\s*\{\{.*\}\}\s*$")
_BLOCK_SCALAR = re.compile(r"^[|>][-+0-9]*\s*(?:#.*)?$")


def _template_documents(lines: list[str]) -> list[list[_Entry]]:
    """The keys and dashes of each ``---``-separated part of a template, with their positions."""
    blocks: list[list[_Entry]] = [[]]
    scalar_indent: int | None = None  # inside a block scalar (`key: |`) deeper than this
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if scalar_indent is not None:
            if not stripped or indent > scalar_indent:
                continue
            scalar_indent = None
        if _SEPARATOR.match(line):
            blocks.append([])
            continue
        if not stripped or stripped.startswith("#") or _ACTION_ONLY.match(line):
            continue
        column = indent + 1
        rest = line[indent:]
        while rest.startswith("- ") or rest == "-":
            blocks[-1].append(_Entry(number, column, None))
            skipped = len(rest) - len(rest[1:].lstrip(" "))
            column += skipped
            rest = rest[skipped:]
        match = _KEY.match(rest)
        if match is None:
            continue
        key = match.group(1) if match.group(1) is not None else match.group(2)
        if key is None:
            key = match.group(3)
        elif match.group(2) is not None:
            key = key.replace("''", "'")
        value = rest[match.end() :].split(" #", 1)[0].strip()
        blocks[-1].append(_Entry(number, column, key, value.strip("'\"")))
        if _BLOCK_SCALAR.match(value):
            scalar_indent = column - 1
    return blocks


def template_positions(rendered: Any, entries: Sequence[_Entry]) -> Any:
    """A tree shaped like ``rendered`` with the positions its keys and items have in a template
    (``entries`` from one part of it): each key is looked for among the direct children of its
    parent's block (the shallowest keys below it), list items by their dash; what the template
    does not spell out (a block from ``toYaml .Values.x``, an ``include``) is left out, and
    resolves to its nearest ancestor: the line that includes it."""
    if not entries:
        return None
    first = entries[0]
    top = PosDict(Span(first.line, first.column))
    return _Layout(entries).fill(rendered, 0, len(entries), top)


class _Layout:
    """The entries of a template part, with where each one's block ends (computed once: a CRD
    template has tens of thousands of keys)."""

    def __init__(self, entries: Sequence[_Entry]) -> None:
        self.entries = entries
        count = len(entries)
        #: The next entry as shallow as entry i (its block ends there).
        self.ends = [count] * count
        #: The same for a key whose value is a list, whose `- ` items may stand at its column.
        self.list_ends = [count] * count
        open_plain: list[int] = []
        open_list: list[int] = []
        for j, entry in enumerate(entries):
            while open_plain and entries[open_plain[-1]].column >= entry.column:
                self.ends[open_plain.pop()] = j
            open_plain.append(j)
            while open_list and (
                entry.column < entries[open_list[-1]].column
                or (entry.column == entries[open_list[-1]].column and entry.key is not None)
            ):
                self.list_ends[open_list.pop()] = j
            open_list.append(j)

    def children(self, lo: int, hi: int, *, dashes: bool) -> list[int]:
        """The shallowest keys (or dashes) in ``lo..hi``, skipping over the blocks below them."""
        found = []
        index = lo
        while index < hi:
            found.append(index)
            index = min(self.ends[index], hi)
        wanted = [i for i in found if (self.entries[i].key is None) == dashes]
        if not wanted:
            return []
        column = min(self.entries[i].column for i in wanted)
        return [i for i in wanted if self.entries[i].column == column]

    def fill(self, rendered: Any, lo: int, hi: int, out: PosDict | None = None) -> Any:
        entries = self.entries
        if isinstance(rendered, dict):
            keys = self.children(lo, hi, dashes=False)
            if not keys:
                return None
            result = out if out is not None else PosDict(Span(entries[keys[0]].line, entries[keys[0]].column))
            for i in keys:
                entry = entries[i]
                key = entry.key
                if key is None or key not in rendered or key in result:
                    continue
                end = min(self.list_ends[i] if isinstance(rendered[key], list) else self.ends[i], hi)
                result[key] = self.fill(rendered[key], i + 1, end)
                result.pos.append(entry.line << COLUMN_BITS | entry.column)
            return result
        if isinstance(rendered, list):
            dashes = self.children(lo, hi, dashes=True)
            if not dashes:
                return None
            items = PosList(Span(entries[dashes[0]].line, entries[dashes[0]].column))
            pairs = self.pair(rendered, dashes, hi)
            for index, item in enumerate(rendered):
                dash = pairs.get(index)
                if dash is None:
                    items.append(None)
                    items.pos.append(None)  # type: ignore[arg-type] # no position: the list's
                    continue
                items.append(self.fill(item, dash + 1, min(self.ends[dash], hi)))
                items.pos.append(entries[dash].line << COLUMN_BITS | entries[dash].column)
            return items
        return None

    def pair(self, rendered: list[Any], dashes: list[int], hi: int) -> dict[int, int]:
        """Rendered items to template dashes: by a merge key spelled out literally (``- name:
        web``), then by order when as many items as dashes are left, else a lone dash (a
        ``range``) takes the rest."""
        entries = self.entries
        literals: list[dict[str, str]] = []
        for dash in dashes:
            literal = {}
            for i in self.children(dash + 1, min(self.ends[dash], hi), dashes=False):
                key = entries[i].key
                if key in _MERGE_KEYS and "{{" not in entries[i].value:
                    literal[key] = entries[i].value
            literals.append(literal)
        return _pair_literals(rendered, dashes, literals)


def _pair_literals(rendered: list[Any], dashes: list[int], literals: list[dict[str, str]]) -> dict[int, int]:
    pairs: dict[int, int] = {}
    used: set[int] = set()
    for index, item in enumerate(rendered):
        if not isinstance(item, dict):
            continue
        for position, literal in enumerate(literals):
            if position in used:
                continue
            key = next((key for key in _MERGE_KEYS if key in item and key in literal), None)
            if key is not None and literal[key] == str(item[key]):
                pairs[index] = dashes[position]
                used.add(position)
                break
    rest = [index for index in range(len(rendered)) if index not in pairs]
    free = [dashes[position] for position in range(len(dashes)) if position not in used]
    if len(rest) == len(free):
        pairs.update(zip(rest, free, strict=True))
    elif len(dashes) == 1 and not used:
        pairs.update(dict.fromkeys(rest, dashes[0]))
    return pairs


# --- helpers -------------------------------------------------------------------------------


def _run(command: list[str], timeout: float, limits: Limits, sandbox: Sandbox) -> Outcome | str:
    """What a tool printed and how it ended (kaffinity.repo.sandbox.run_tool: confined, its
    output bounded by ``file-size``), or why it could not run. Run from the working folder, so
    the paths in its messages are those the user gave."""
    return _counted(
        run_tool(command, sandbox, timeout=timeout, output_limit=limits.file_size, cwd=os.getcwd())
    )


#: How many tool runs of this process a limit stopped or that could not start (see interruptions).
_INTERRUPTED = [0]
_OUT_OF_MEMORY = ("out of memory", "cannot allocate memory", "MemoryError")


def interruptions() -> int:
    """How many tool runs of this process were stopped by a limit (time, the run's budget,
    memory, output size), ended by a signal, or could not start: the render cache
    (kaffinity.cache.rendered) keeps no render during which this count grew, as the next run
    may well render the unit."""
    return _INTERRUPTED[0]


def _counted(outcome: Outcome | str) -> Outcome | str:
    if (
        isinstance(outcome, str)
        or outcome.stopped is not None
        or outcome.code < 0
        or (outcome.code != 0 and any(text in outcome.errors for text in _OUT_OF_MEMORY))
    ):
        _INTERRUPTED[0] += 1
    return outcome


_KLOG = re.compile(r'^[EWIF]\d{4} [\d:.]+\s+\d+ \S+\] "command failed" err=(?:"(.*)"|<)$')


def _first_error(errors: str) -> str:
    """The error in a tool's error output: kustomize's ``Error: ...`` line, kubectl's klog
    ``"command failed" err=...`` line (unwrapped, also its multi-line ``err=<`` form), helm's
    ``Error: ...``; the ``Error:`` prefix removed. Warnings before it are not the error: both
    kustomize and kubectl kustomize print ``# Warning: 'commonLabels' is deprecated...`` first
    (kustomize warns of deprecated fields before it builds),
    helm ``walk.go:...`` and ``WARNING:`` lines. Without such a line, the first line that is
    no warning."""
    lines = errors.splitlines()
    chosen: str | None = None
    fallback: str | None = None
    for number, raw in enumerate(lines):
        line = raw.strip()
        if not line or line.startswith(("WARNING", "Warning:", "walk.go", "#")):
            continue
        klog = _KLOG.match(line)
        if klog is not None and klog.group(1) is not None:
            chosen = klog.group(1).encode("utf-8").decode("unicode_escape", "replace")
            break
        if klog is not None:
            rest = itertools.takewhile(lambda text: text.strip() != ">", lines[number + 1 :])
            chosen = " ".join(text.strip() for text in rest)
            break
        if line.startswith(("Error: ", "error: ")):
            chosen = line[len("Error: ") :]
            break
        if fallback is None:
            fallback = line
    found = chosen if chosen is not None else fallback
    if found is None:
        return "no error message"
    if "MalformedYAMLError: " in found:  # past the chain of "accumulating resources from ..."
        found = found[found.index("MalformedYAMLError: ") :]
    return _one_line(found)


_YAML_ERROR = re.compile(r"yaml: line (\d+): .*? in File: ([^\s\"']+)")
_ACCUMULATING = re.compile(r"accumulating resources from '([^']+)'")


def _error_place(
    errors: str, directory: str, kustomization: str, roots: Sequence[str]
) -> tuple[str, Span | None]:
    """Where a kustomize error points: a resource's YAML error names its file (relative to the
    kustomization that lists it, which the chain of "accumulating resources from" names) and line."""
    match = _YAML_ERROR.search(errors)
    if match is not None:
        folders = [directory]
        for step in _ACCUMULATING.findall(errors):
            deeper = os.path.join(folders[-1], step)
            if os.path.isdir(deeper):
                folders.append(deeper)
        for folder in reversed(folders):
            path = os.path.join(folder, match.group(2))
            if confined_file(path, roots):  # an error message can name any path
                return os.path.normpath(path), Span(int(match.group(1)), 1)
    match = re.search(r"invalid Kustomization: yaml: line (\d+)", errors)
    if match is not None:
        return kustomization, Span(int(match.group(1)), 1)
    return kustomization, None


_TEMPLATE_ERROR = re.compile(
    r"(?P<path>[^\s():\"]+\.(?:yaml|yml|tpl|json|txt)):(?P<line>\d+)(?::(?P<column>\d+))?"
)


def _template_place(
    errors: str, chart_dir: str, chart_file: str, roots: Sequence[str]
) -> tuple[str, Span | None]:
    """Where a template error points (``template: web/templates/x.yaml:12:3: ...``, ``parse
    error at (web/templates/x.yaml:12)``): lines of the template source, as Go's text/template
    counts them. "YAML parse error on x.yaml: ... line N" counts lines of the *rendered*
    output, so only the template is named then."""
    match = _TEMPLATE_ERROR.search(errors)
    if match is not None:
        path = _template_path(match.group("path"), chart_dir, roots)
        if path is not None:
            return path, Span(int(match.group("line")), int(match.group("column") or 1))
    match = re.search(r"YAML parse error on (\S+?):", errors)
    if match is not None:
        path = _template_path(match.group(1), chart_dir, roots)
        if path is not None:
            return path, None
    return chart_file, None


def _text_of(path: str, limits: Limits, roots: Sequence[str]) -> str:
    """The text of a file kaffinity reports on, when it is a regular file inside the repository."""
    if not confined_file(path, roots):
        return ""
    _, text, problem = read_text(path, limits)
    return text if problem is None else ""


def _yaml_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
