"""The cache of rendered units: what building an overlay or rendering a chart gave
(:class:`~kaffinity.repo.rendered.Rendered`), kept in kaffinity's cache folder
(:mod:`kaffinity.cache`) and keyed by the hash of everything the render reads.

A warm run renders only the units whose inputs changed: a pre-commit hook on a one-file commit
runs no kustomize and no Helm unless the commit touched what they read (issue 33).

**The key** of an entry (BLAKE2b, :meth:`RenderCache.key`) covers:

- the unit: its kind, its folder and values files as named (a rendered file is named as the
  unit is: relative to the working folder when the unit is), the release name, the namespace;
- every file the render reads, by name, real path and bytes:

  - an overlay (:func:`kustomize_inputs`): each kustomization of its closure (``resources``,
    ``bases``, ``components``, ``crds``) and every file any of them names, as kustomize's
    ``types.Kustomization`` has them (:mod:`kaffinity.repo.preflight` lists the same fields):
    resources, patches, generators' ``files``/``envs``/``env``, replacements, configurations,
    generator and transformer configurations (and the files those name), ``openapi.path``; the
    kustomization file names present in each folder (kustomize refuses two);
  - a chart (:func:`chart_inputs`): every file below the chart folder (``.helmignore`` only
    takes files away: a superset is safe), its ``charts/`` archives, the values files given,
    and what a dependency missing from ``charts/`` is taken from: a ``file://`` folder, or
    (the network off) the chart fetched before into the remote cache, or that there is none;

- the engine that renders it: the tool's path, size and modification time
  (``kustomize``/``kubectl``/``helm`` as found on the PATH), or helm-python-sdk's version: a new
  tool is a new key, without running ``helm version`` on every run;
- a chart's Kubernetes version (``--kube-version``: ``Capabilities.KubeVersion``);
- in the fingerprint folder (:func:`render_fingerprint`): kaffinity's limits, whether the
  network is allowed (and ``--offline``), the repository roots, the working folder, and
  :data:`FORMAT` (kaffinity's own version and :data:`kaffinity.cache.FORMAT` name the folder
  above).

A GitOps release (:meth:`RenderCache.release`) is keyed by what its kind says its render reads
(:class:`kaffinity.repo.gitops.releases.ReleaseKey`): its chart folder as a chart's, its values
files and its own file by bytes, the release object and the values merged as data.

**Not cached**: a release whose kind gives no key (a Flux Kustomization, a chart version range,
a git source fetched, an Argo CD Application of several sources...); with the network on, a unit
with a remote input (a remote resource or base, a ``helmCharts`` entry, a remote chart
dependency missing from ``charts/``): only content that was hashed is trusted to be the same;
a chart with a symlinked folder; an overlay built without its remote resources; a render that
a limit stopped (its time, the run's budget, its memory, its output size) or a tool that could
not start (:func:`kaffinity.repo.engines.interruptions`): the next run tries again.

**Safety** (issue 31: the cache folder may come with the checkout): entries are written and
read by :class:`kaffinity.cache.Cache` (authenticated with an HMAC whose key is not in the
checkout, never through a symlink, bounded in size, pruned only by kaffinity's own names); an
entry is JSON rebuilt by this module's decoder, every field's type checked: a wrong shape is a
miss and the unit is rendered. A rendered document's file must be one the key covered, or the
tool's own output name: an entry never names a file outside the unit's inputs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kaffinity.cache.render_inputs import Inputs, chart_inputs, kustomize_inputs
from kaffinity.cache.staged import _named, staged_entry, staged_rendered
from kaffinity.cache.trees import (
    _child,
    _data_path,
    _duplicate_keys,
    _index,
    _is,
    _load_problems,
    _node,
    _span_of,
    _strings,
    _tree,
    _Unfit,
)
from kaffinity.load.parse import Limits

if TYPE_CHECKING:
    from kaffinity.cache.store import Cache
    from kaffinity.repo.gitops.releases import NotRendered, ReleaseKey
    from kaffinity.repo.rendered import Rendered
    from kaffinity.repo.sandbox import Sandbox

#: Bumped when what an entry holds, or how, changes.
FORMAT = 1

# --- the engines -----------------------------------------------------------------------------


#: Engine identities by (kind, engine, the binary's path): a tool's stat or the SDK's version,
#: read once per process.
_ENGINES: dict[tuple[str, str | None, str | None], str] = {}


def engine_identity(kind: str) -> str:
    """The engine that renders ``kind`` (``kustomize``, ``helm``) as a key part: which engine
    (found as rendering finds it, every time: a test or a PATH may change it), the tool's path,
    size and modification time, or helm-python-sdk's version (read once per process)."""
    from kaffinity.repo.engines import helm_engine, kustomize_engine

    if kind == "kustomize":
        engine = kustomize_engine()
        binary = {"kustomize": "kustomize", "kubectl kustomize": "kubectl"}.get(engine or "")
    else:
        engine = helm_engine()
        binary = "helm" if engine == "helm binary" else None
    path = shutil.which(binary) if binary is not None else None
    memo = (kind, engine, path)
    found = _ENGINES.get(memo)
    if found is not None:
        return found
    parts = [str(engine), str(path)]
    if path is not None:
        try:
            info = os.stat(path)
            parts.append(f"{info.st_size}:{info.st_mtime_ns}")
        except OSError:
            parts.append("unreadable")
    elif engine == "helm-python-sdk":
        parts.append(_sdk_version())
    _ENGINES[memo] = found = "\0".join(parts)
    return found


def _sdk_version() -> str:
    from importlib import metadata

    for name in ("helm-python-sdk", "helm_python_sdk", "helm-python"):
        try:
            return f"{name}=={metadata.version(name)}"
        except metadata.PackageNotFoundError:
            continue
    import importlib.util

    spec = importlib.util.find_spec("helm_python")
    origin = spec.origin if spec is not None else None
    if origin is None:
        return "unknown"
    try:
        info = os.stat(origin)
    except OSError:
        return origin
    return f"{origin}:{info.st_size}:{info.st_mtime_ns}"


# --- the cache -------------------------------------------------------------------------------


def render_fingerprint(limits: Limits, sandbox: Sandbox, stage: str | None = None) -> str:
    """The folder of the render entries of runs with these settings (see the module's
    docstring): 32 hex digits. The Kubernetes version is a chart's argument (its key): an
    overlay does not depend on it. ``stage``: the entries hold the single-object stage's results
    too, of the settings this fingerprint names (:func:`kaffinity.stream.fingerprint`)."""
    parts = [
        "render",
        str(FORMAT),
        repr(limits),
        f"network={sandbox.network} offline={sandbox.offline}",
        "roots=" + "\0".join(os.path.realpath(root) for root in sandbox.roots),
        f"cwd={os.getcwd()}",
    ]
    if stage is not None:
        parts.append(f"stage={stage}")
    return hashlib.blake2b("\n".join(parts).encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()


class RenderCache:
    """Rendered units by the hash of their inputs, in one :class:`kaffinity.cache.Cache`
    (its fingerprint: :func:`render_fingerprint`). ``rendered``/``hits``: how many units were
    rendered and how many came from the cache this run.

    ``stage`` (a run that streams: :func:`kaffinity.stream.stage_rendered`): what a render gives
    goes through the single-object stage, and an entry holds the unit's results (its compact
    files, their findings: :func:`encode_staged`), so that a warm run neither renders, nor
    parses, nor checks an unchanged unit. Without a ``store`` (``--no-cache``) units are only
    staged. Renders run from several threads (:func:`kaffinity.repo.units.render_units`): what
    is shared here is taken under a lock."""

    def __init__(
        self,
        store: Cache | None,
        limits: Limits,
        sandbox: Sandbox,
        stage: Callable[[Rendered], Rendered] | None = None,
    ) -> None:
        import threading

        self.store = store
        self.limits = limits
        self.sandbox = sandbox
        self.stage = stage
        self.hits = 0
        self.rendered = 0
        #: The entries this run read or wrote (touched again when it closes: see close).
        self.used: set[str] = set()
        self._lock = threading.Lock()
        self._staging = threading.Lock()

    def staged(self, rendered: Rendered) -> Rendered:
        """What the run takes of a render that is not cached (a GitOps release, an overlay built
        without its remote resources): through the single-object stage when the run streams."""
        if self.stage is None:
            return rendered
        with self._staging:  # the rules run one file at a time, whichever thread rendered it
            return self.stage(rendered)

    def key(self, kind: str, arguments: Mapping[str, Any], inputs: Inputs) -> str:
        digest = hashlib.blake2b(digest_size=20)
        digest.update(f"{kind}\0{engine_identity(kind)}\0".encode("utf-8", "surrogateescape"))
        digest.update(json.dumps(arguments, sort_keys=True, default=str).encode("utf-8", "surrogateescape"))
        for line in inputs.lines:
            digest.update(b"\n" + line.encode("utf-8", "surrogateescape"))
        return digest.hexdigest()

    def kustomization(self, directory: str, render: Callable[[], Rendered]) -> Rendered:
        """``render()`` (building the overlay in ``directory``), or what it gave before."""
        inputs = kustomize_inputs(directory, self.limits, network=self.sandbox.network)
        return self._through("kustomize", {"directory": directory}, inputs, render)

    def chart(
        self,
        chart_dir: str,
        values_files: Sequence[str],
        arguments: Mapping[str, Any],
        render: Callable[[], Rendered],
    ) -> Rendered:
        """``render()`` (rendering the chart with ``values_files`` and ``arguments``: release,
        namespace, kube version), or what it gave before."""
        inputs = chart_inputs(chart_dir, values_files, self.limits, self.sandbox)
        return self._through(
            "helm", {"chart": chart_dir, "values": list(values_files), **arguments}, inputs, render
        )

    def release(
        self, key_of: Callable[[], ReleaseKey | None] | None, render: Callable[[], Rendered | NotRendered]
    ) -> Rendered | NotRendered:
        """``render()`` (a GitOps release's, staged), or what it gave before: keyed by what
        ``key_of()`` (:class:`~kaffinity.repo.gitops.releases.ReleaseKey`) lists -- the chart
        folder's files and its dependencies (as a chart unit's), the values files and the
        release's own file by bytes, the rest as data -- and both engines (a Flux post-renderer
        runs kustomize). No key (None, or no store: ``--no-cache``, where none is computed):
        rendered. A release that does not render (NotRendered) is not kept."""
        from kaffinity.repo.gitops.releases import NotRendered

        key = key_of() if key_of is not None and self.store is not None else None
        if key is None:
            outcome = render()
            return outcome if isinstance(outcome, NotRendered) else self.staged(outcome)
        inputs = chart_inputs(key.chart, key.values_files, self.limits, self.sandbox)
        if inputs is not None:
            for path in key.files:
                if not inputs.add(path, self.limits):
                    inputs = None
                    break
        arguments = {**key.arguments, "kustomize": engine_identity("kustomize")}
        unrendered: list[NotRendered] = []

        def draw() -> Rendered:
            outcome = render()
            if isinstance(outcome, NotRendered):
                unrendered.append(outcome)
                raise _Unrendered
            return outcome

        try:
            return self._through("helm", arguments, inputs, draw)
        except _Unrendered:
            return unrendered[0]

    def _through(
        self, kind: str, arguments: Mapping[str, Any], inputs: Inputs | None, render: Callable[[], Rendered]
    ) -> Rendered:
        from kaffinity.repo.engines import interruptions

        store = self.store
        if store is None or inputs is None:
            with self._lock:
                self.rendered += 1
            return self.staged(render())
        key = self.key(kind, arguments, inputs)
        staging = self.stage is not None
        payload = store.get(key)
        if payload is not None:
            found = staged_rendered(payload, inputs.files) if staging else decode(payload, inputs.files)
            if found is not None:
                with self._lock:
                    self.hits += 1
                    self.used.add(key)
                return found
        before = interruptions(thread=True)
        rendered = self.staged(render())
        with self._lock:
            self.rendered += 1
            # Stopped by a limit, or not started: tried again next run.
            if interruptions(thread=True) == before:
                encoded = staged_entry(rendered) if staging else encode(rendered)
                if encoded is not None:
                    store.put(key, encoded)
                    self.used.add(key)
        return rendered

    def close(self, *, complete: bool = True) -> str | None:
        """Write what is pending; prune (:meth:`kaffinity.cache.Cache.prune`) after a run that
        went through every unit (``complete``): a pre-commit run (``--changed``) builds only the
        units holding a changed file, and the others' entries, unread, are not stale. Why the cache could not
        be used, if it could not."""
        if self.store is None:
            return None
        self.store.flush()
        if complete:
            # Pruning keeps what was used since the run started, by the entries' times; a hit
            # comes milliseconds after the cache is opened, which a file system's coarse clock
            # may date before it: the entries used are touched again now.
            for key in self.used:
                with contextlib.suppress(OSError, NotImplementedError):
                    os.utime(os.path.join(self.store.folder, key[:2], key), follow_symlinks=False)
            self.store.prune()
        return self.store.error


class _Unrendered(Exception):
    """A release's render gave a NotRendered: nothing to keep."""


def open_render_cache(
    settings_dir: str | None,
    base_dir: str,
    flag: str | None,
    limits: Limits,
    sandbox: Sandbox,
    stage: tuple[Callable[[Rendered], Rendered], str] | None = None,
) -> tuple[RenderCache | None, str | None]:
    """The render cache of this run in the cache folder (:func:`kaffinity.cache.open_cache`:
    the same folder, secret and checks as the file cache), and a note, or None and why not.
    ``stage``: the single-object stage of rendered units and the fingerprint of its settings
    (see :class:`RenderCache`)."""
    from kaffinity.cache.opening import open_cache

    fingerprint = render_fingerprint(limits, sandbox, stage[1] if stage is not None else None)
    store, note = open_cache(settings_dir, base_dir, flag, fingerprint, limits)
    staging = stage[0] if stage is not None else None
    return (RenderCache(store, limits, sandbox, staging) if store is not None else None), note


# --- the format of an entry ------------------------------------------------------------------
#
# JSON, as kaffinity.cache's entries: [unit, engine, seconds, built, left_out, sections, files,
# trees, patches]. Trees (the rendered data, the position trees pointing into origin files,
# the patches' trees) are stored once each in ``trees`` with kaffinity.cache's tree format, and
# named by their index; a document's data that is its root's (or a part of it, a List item) is
# named by its root and prefix.


def encode(rendered: Rendered) -> bytes | None:
    """``rendered`` as an entry's payload, or None if it holds what the format does not."""
    trees: list[Any] = []
    indices: dict[int, int] = {}

    def tree(value: Any) -> int:
        index = indices.get(id(value))
        if index is None:
            index = indices[id(value)] = len(trees)
            trees.append(_tree(value))
        return index

    try:
        files = []
        numbers: dict[int, int] = {}
        for file in rendered.files:
            documents = []
            for doc in file.documents:
                numbers[id(doc)] = len(numbers)
                root = tree(doc.root)
                data = None if _follow(doc.root, doc.prefix) is doc.data else tree(doc.data)
                documents.append(
                    [
                        doc.file,
                        doc.index,
                        root,
                        data,
                        [doc.span[0], doc.span[1]],
                        list(doc.prefix),
                        [[item.key, *item.span, *item.first] for item in doc.duplicate_keys],
                    ]
                )
            files.append(
                [
                    file.name,
                    file.text,
                    documents,
                    [
                        [problem.rule, problem.message, None if problem.span is None else list(problem.span)]
                        for problem in file.problems
                    ],
                    file.skipped,
                    file.compact,
                ]
            )
        patches = [
            [numbers[key], [[name, tree(value)] for name, value in items]]
            for key, items in rendered.patches.items()
            if key in numbers
        ]
        if len(patches) != len(rendered.patches):
            return None  # a patch of a document not among the files: not this format
        entry: list[Any] = [
            rendered.unit,
            rendered.engine,
            rendered.seconds,
            rendered.built,
            list(rendered.left_out),
            [[s.file, s.first, s.last, s.origin] for s in rendered.sections],
            files,
            trees,
            patches,
        ]
        text = json.dumps(entry, ensure_ascii=True, check_circular=False, separators=(",", ":"))
        return text.encode("ascii")
    except (_Unfit, ValueError, TypeError, RecursionError, KeyError, IndexError):
        return None


def _follow(data: Any, path: Sequence[Any]) -> Any:
    try:
        for item in path:
            data = data[item]
    except (KeyError, IndexError, TypeError):
        return None
    return data


def decode(payload: bytes, allowed: set[str]) -> Rendered | None:
    """The :class:`Rendered` an entry holds, or None when anything in it has the wrong shape or
    names a file the unit's key did not cover (``allowed``: real paths) other than the tool's
    own output (a miss). Runs no code of the payload's choosing."""
    try:
        data = json.loads(payload, object_hook=_node)
        return _rendered(data, allowed)
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, RecursionError, AttributeError):
        return None


def _rendered(data: Any, allowed: set[str]) -> Rendered:
    from kaffinity.load.parse import SourceFile
    from kaffinity.load.source import Document, PosDict
    from kaffinity.repo.rendered import Rendered, Section

    unit, engine, seconds, built, left_out, sections, files, trees, patches = _is(data, list)
    _is(trees, list)

    def tree_at(index: Any) -> Any:
        return trees[_index(index, len(trees))]

    documents: list[Any] = []
    out_files = []
    for name, text, docs, problems, skipped, compact in (_is(item, list) for item in _is(files, list)):
        _named(_is(name, str), allowed)
        kept = []
        for file, index, root_index, data_index, span, prefix, duplicates in (
            _is(item, list) for item in _is(docs, list)
        ):
            _named(_is(file, str), allowed)
            root = tree_at(root_index)
            path = _data_path(prefix)
            if data_index is None:
                value = root
                for step in path:
                    value = _child(value, step)
            else:
                value = tree_at(data_index)
            if type(value) is not PosDict:
                raise ValueError("an object that is not a mapping")
            doc = Document(
                file,
                _is(index, int),
                value,
                root,
                _span_of(span),
                path,
                _duplicate_keys(duplicates),
            )
            kept.append(doc)
            documents.append(doc)
        out_files.append(
            SourceFile(
                name,
                _is(text, str),
                tuple(kept),
                _load_problems(problems),
                _is(skipped, str, type(None)),
                _is(compact, bool),
            )
        )
    found: dict[int, tuple[tuple[str, Any], ...]] = {}
    for number, items in (_is(item, list) for item in _is(patches, list)):
        if type(number) is not int or not 0 <= number < len(documents):
            raise ValueError("not a document")
        pairs = []
        for path, index in (_is(item, list) for item in _is(items, list)):
            _named(_is(path, str), allowed)
            pairs.append((path, tree_at(index)))
        found[id(documents[number])] = tuple(pairs)
    return Rendered(
        _is(unit, str),
        _is(engine, str, type(None)),
        tuple(out_files),
        float(_is(seconds, float, int)),
        sections=tuple(
            Section(_is(file, str), _is(first, int), _is(last, int), _is(origin, str))
            for file, first, last, origin in (_is(item, list) for item in _is(sections, list))
        ),
        patches=found,
        left_out=_strings(left_out),
        built=_is(built, bool),
    )
