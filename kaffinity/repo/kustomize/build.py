"""An overlay built as ``kustomize build`` (else ``kubectl kustomize``) builds it, confined.

The overlay is built through a temporary kustomization that lists it as a resource and sets
``buildMetadata: [originAnnotations]`` (the user's files are never touched); kustomize then
annotates each object with ``config.kubernetes.io/origin`` (the resource file it came from, or the
kustomization that generated it), which :mod:`kaffinity.repo.kustomize.mapping` reads. Without
the network a build of local files only is made from a mirror of the tree
(:func:`render_kustomization` ``local_only``)."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from kaffinity.load.manifests import KUSTOMIZATION_NAMES, find_kustomization
from kaffinity.load.parse import DEFAULT_LIMITS, Limits, LoadProblem, SourceFile, parse
from kaffinity.load.read import read_text
from kaffinity.load.repository import within
from kaffinity.load.source import (
    PosDict,
    PosList,
    Span,
    unpack,
)
from kaffinity.repo import engines
from kaffinity.repo.engines import first_error, run_render_tool, text_of, yaml_string
from kaffinity.repo.kustomize.mapping import map_kustomize, overlay_patches
from kaffinity.repo.rendered import RENDER_PROBLEM, Rendered
from kaffinity.repo.sandbox import (
    DEFAULT_SANDBOX,
    Sandbox,
    confined_file,
    repository_root,
)

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
    engine = engines.kustomize_engine()  # looked up when called: a test may stand in for it
    kustomization = find_kustomization(directory) or os.path.join(directory, KUSTOMIZATION_NAMES[0])
    roots = sandbox.roots or (repository_root(directory),)
    seconds = sandbox.timeout if timeout is None else timeout

    def failed(message: str, where: str = kustomization, span: Span | None = None) -> Rendered:
        problem = SourceFile(
            where, text_of(where, limits, roots), (), (LoadProblem(RENDER_PROBLEM, message, span),)
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
                f"resources:\n  - {yaml_string(target)}\nbuildMetadata: [originAnnotations]\n"
            )
            for key, value in (wrapper_fields or {}).items():
                # JSON is YAML: each field on a line of its own.
                handle.write(f"{json.dumps(key)}: {json.dumps(value)}\n")
        outcome = run_render_tool([*command, wrapper], seconds, limits, sandbox)
        if isinstance(outcome, str):
            return failed(f"{engine}: {outcome}")
        if outcome.stopped is not None:
            return failed(f"{engine}: stopped: it {outcome.stopped}")
        output, errors, code = outcome.output, outcome.errors, outcome.code
        if code != 0:
            # The wrapper's error names paths relative to the temporary folder: build the
            # overlay itself for the message a user knows.
            again = run_render_tool([*command, directory], seconds, limits, sandbox)
            if not isinstance(again, str) and again.code != 0 and again.stopped is None:
                errors = again.errors
            return failed(
                f"{engine} failed: {first_error(errors)}",
                *_error_location(errors, directory, kustomization, roots),
            )
        if transform is not None:
            output = transform(output)
        built = parse(f"{kustomization} (rendered)", output, limits)
        files = map_kustomize(built, wrapper, directory, kustomization, limits, roots)
    patches = overlay_patches(kustomization, directory, files, limits, roots)
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
            text = text_of(name, limits, roots) if name != file.name else file.text
            documents = tuple(replace(doc, file=name) for doc in file.documents)
            files.append(SourceFile(name, text, documents, file.problems))
    patches = overlay_patches(kustomization, directory, files, limits, roots)
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


_YAML_ERROR = re.compile(r"yaml: line (\d+): .*? in File: ([^\s\"']+)")
_ACCUMULATING = re.compile(r"accumulating resources from '([^']+)'")


def _error_location(
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
