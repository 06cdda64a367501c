"""The single-object stage, file by file as files are read: read, check, compact.

``kaffinity lint`` used to parse every file, keep every parsed tree until the report, and run all
the rules at the end. The rules that read one object at a time
(:func:`kaffinity.engine.single.single_object_rules`) now run on each file as soon as it is
parsed, in the worker that parsed it (``--jobs``): :func:`kaffinity.engine.single.file_result`,
which then compacts the file (:mod:`kaffinity.k8s.compact`: the fields the rules that read every
manifest declare, positions included) and drops its parsed tree and text. What comes back is a
:class:`FileResult`: the compact file, the findings placed (positions
and related places resolved while the tree was there), and the file's suppression comments. The
engine (:func:`kaffinity.engine.lint` with ``results``) runs the remaining rules on the compact
files and applies suppressions, the reported files and the units to every finding alike, so the
result is the one a run without streaming gives (``tests/test_stream.py`` compares them).

A file's :class:`FileResult` depends only on its name, its bytes,
kaffinity's version and the settings (:func:`fingerprint`): it is what the cache keeps
(:mod:`kaffinity.cache`).

Rendered units (overlays, charts, GitOps releases: :mod:`kaffinity.repo.units`) go through the
same stage: :func:`stage_rendered` runs :func:`file_result` on each file a render gives and
compacts it, and the render cache keeps the unit's results (:mod:`kaffinity.cache.rendered`).

Policies run here too, file by file, with the namespaces and params they read found before the
stream (:mod:`kaffinity.policy.streamed`, which says when a run with policies is read whole).

Not streamed (the CLI reads such input whole, as before): stdin; runs with policies that read
the input whole (:mod:`kaffinity.policy.streamed`), and runs with policies over a repository
that renders (rendered units are staged without the policies).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from kaffinity.engine.single import FileResult, file_result, single_object_rules
from kaffinity.load.parse import STDIN

if TYPE_CHECKING:
    from kaffinity.cache import Cache
    from kaffinity.config import Settings
    from kaffinity.load.files import ExcludeFn
    from kaffinity.policy.known import PolicyStream
    from kaffinity.repo.rendered import Rendered
    from kaffinity.rules.base import Rule


#: Settings that change nothing in a file's :class:`FileResult`: which files are read, how the
#: result is shown or decided, the cross-object stages.
_NOT_LOCAL = frozenset(
    {
        "cluster",
        "closed",
        "simulate",
        "jobs",
        "fail_on",
        "min_severity",
        "context",
        "exclude",
        "gitignore",
        "cache",
        "cache_dir",
        "units",
        "render",
        "helm_values",
        "sandbox",
    }
)


def fingerprint(settings: Settings, policies: PolicyStream | None = None) -> str:
    """What a file's :class:`FileResult` depends on besides its name, its bytes and whether its
    rules ran: kaffinity's version, the format, the settings that reach the single-object stage,
    and the policies run there: their files' bytes, and the namespaces and params they read
    (:attr:`kaffinity.policy.streamed.PolicyStream.digest`)."""
    import kaffinity
    from kaffinity.cache import FORMAT

    parts = [kaffinity.__version__, str(FORMAT)]
    if policies is not None:
        parts.append(f"policies={policies.digest}")
    parts.extend(
        f"{item.name}={getattr(settings, item.name)!r}"
        for item in fields(settings)
        if item.name not in _NOT_LOCAL
    )
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=16).hexdigest()


#: What a --jobs worker sends for a file starts with one of these: ``ENTRY``, a cache entry's
#: payload (JSON, authenticated by the worker, decoded here by :func:`kaffinity.cache.decode`:
#: never unpickled), or ``PICKLED``, the :class:`FileResult` the worker computed itself, pickled.
ENTRY = b"J"
PICKLED = b"P"


def payload(
    path: str,
    settings: Settings,
    rules: Sequence[Rule],
    local: bool,
    cache: Cache | None,
    *,
    fresh: bool = False,
    send: bool = False,
) -> tuple[bytes | None, FileResult | None]:
    """The :class:`FileResult` of the file at ``path``: from the cache (its payload tagged
    ``ENTRY``, and None: :func:`received` decodes it), or computed (the object, and with
    ``send``, what the parent process gets: :func:`received`). What is computed goes to the
    cache (:func:`kaffinity.cache.encode`). A file that must not be sent (nested deeper than
    pickle goes: :func:`kaffinity.load.parallel.must_read_here`) is neither cached nor sent.
    ``fresh``: do not read the cache (its entry was corrupt)."""
    from kaffinity.load.parallel import must_read_here
    from kaffinity.load.read import from_bytes, read_bytes, skipped_by_name

    skipped = skipped_by_name(path)
    if skipped is not None:
        return None, FileResult(skipped, (), ())
    name, raw, problem = read_bytes(path, settings.limits)
    key = None
    if cache is not None and problem is None and path != STDIN:
        key = cache.key(name, raw, local=local)
        if not fresh:
            # A context file (only compacted) may take the entry of one whose rules ran: what it holds more,
            # the findings, is not reported (the file is not).
            for candidate in (key,) if local else (cache.key(name, raw, local=True), key):
                cached = cache.get(candidate)
                if cached is not None:
                    return ENTRY + cached, None
    result = file_result(from_bytes(path, name, raw, problem, settings.limits), settings, rules, local=local)
    if (key is None and not send) or must_read_here(result.file, settings.limits):
        return None, result
    if key is not None and cache is not None:
        if not send:
            # This process's own: encoded and written after the stage (Cache.write_later).
            cache.later(key, result)
            return None, result
        from kaffinity.cache import encode

        encoded = encode(result)
        if encoded is not None:
            cache.put(key, encoded)
    if not send:
        return None, result
    import pickle

    try:
        return PICKLED + pickle.dumps(result, pickle.HIGHEST_PROTOCOL), result
    except RecursionError:
        return None, result


def received(data: bytes) -> FileResult | None:
    """What :func:`payload` gave to send, as a :class:`FileResult`, or None (a corrupt entry: the
    file goes through the stage again). A cache entry is decoded by :func:`kaffinity.cache.decode` (JSON),
    wherever it was read; only what a worker of this run computed itself is unpickled."""
    tag, body = data[:1], data[1:]
    if tag == ENTRY:
        from kaffinity.cache import decode

        return decode(body)
    if tag == PICKLED:
        import pickle

        value = pickle.loads(body)
        return value if isinstance(value, FileResult) else None
    return None


def _here(
    path: str, settings: Settings, rules: Sequence[Rule], local: bool, cache: Cache | None
) -> FileResult:
    data, result = payload(path, settings, rules, local, cache)
    if result is None and data is not None:
        result = received(data)
    if result is None:  # a corrupt entry: through the stage again, and written again
        result = payload(path, settings, rules, local, cache, fresh=True)[1]
    assert result is not None
    return result


def _there(
    paths: Sequence[str],
    settings: Settings,
    names: Sequence[str],
    local: bool,
    cache: Cache | None,
    policies: PolicyStream | None = None,
) -> list[bytes | None]:
    """A worker's task: each file's :class:`FileResult` as :func:`payload` sends it, or None for the
    parent to do."""
    from kaffinity.load.parse import make_room
    from kaffinity.rules import BY_NAME

    make_room(settings.limits.depth)  # a spawned worker (macOS, Windows) starts with the defaults
    known = {rule.name: rule for rule in _policy_rules(settings, policies)}
    rules = [known[name] if name in known else BY_NAME[name] for name in names]
    sent = [payload(path, settings, rules, local, cache, send=True)[0] for path in paths]
    if cache is not None:
        cache.flush()  # this chunk's entries are written before the parent hears of them
    return sent


def file_results(
    paths: Sequence[str],
    settings: Settings,
    jobs: int,
    *,
    local: bool = True,
    cache: Cache | None = None,
    tick: Callable[[str], None] | None = None,
    policies: PolicyStream | None = None,
) -> list[FileResult]:
    """The single-object stage of every path, in order, in ``jobs`` processes
    (:func:`kaffinity.load.parallel.map_all`), through ``cache`` when given. ``local``: run the
    rules (False: only compact the files, the context of ``--changed``)."""
    from functools import partial

    from kaffinity.load.parallel import map_all
    from kaffinity.rules import RULES

    rules = single_object_rules([*RULES, *_policy_rules(settings, policies)], settings) if local else []
    names = [rule.name for rule in rules]
    here = partial(_here, settings=settings, rules=rules, local=local, cache=cache)
    there = partial(_there, settings=settings, names=names, local=local, cache=cache, policies=policies)
    loads = partial(_typed, settings=settings) if _reads_objects(settings) else received
    if tick is None:
        done = map_all(paths, jobs, here, there, loads=loads)
    else:
        done = map_all(paths, jobs, here, there, tick, loads=loads)
    if cache is not None:
        cache.write_later()  # this process's entries, off its path (flushed when it prunes)
    return done


def _reads_objects(settings: Settings) -> bool:
    """Whether a rule the engine runs reads the typed objects (one outside the single-object
    stage: one that reads other files or every manifest)."""
    from kaffinity.rules import RULES
    from kaffinity.rules.base import rule_enabled

    return any(
        rule.check is not None
        and (rule.needs_all_manifests or rule.reads_other_files)
        and rule_enabled(rule, settings.select, settings.ignore)
        for rule in RULES
    )


def _typed(data: bytes, settings: Settings) -> FileResult | None:
    """:func:`received`, with the typed objects of the file built here, as it arrives from a
    ``--jobs`` worker (they are never sent: :class:`FileResult`): this process builds them while
    the workers still read, instead of after the last file (the engine builds the same objects
    from the same compact documents: :func:`kaffinity.k8s.model.build_inventory`)."""
    from dataclasses import replace

    from kaffinity.k8s.model.build import build_object

    result = received(data)
    if result is None or result.typed is not None:
        return result
    namespace, kinds = settings.namespace, settings.workload_kinds
    return replace(result, typed=tuple(build_object(doc, namespace, kinds) for doc in result.file.documents))


def _policy_rules(settings: Settings, policies: PolicyStream | None) -> list[Rule]:
    """The policies' rules that run here (:mod:`kaffinity.policy.streamed`), made once per process."""
    if policies is None:
        return []
    from kaffinity.policy.streamed import per_object_rules

    return per_object_rules(policies, settings)


def load_results(
    paths: Sequence[str],
    settings: Settings,
    excluded: ExcludeFn | None = None,
    seen: set[tuple[int, int]] | None = None,
    *,
    jobs: int = 1,
    local: bool = True,
    cache: Cache | None = None,
    policies: PolicyStream | None = None,
) -> list[FileResult]:
    """:func:`kaffinity.load.files.load` through the single-object stage: discover the files
    under ``paths``, and :func:`file_results` of them, with the command's progress indicator. What
    comes back lives as long as the run: it is frozen out of the collector's reach (see
    :func:`kaffinity.load.files.load`)."""
    import gc

    from kaffinity.load.files import discover
    from kaffinity.load.parse import gc_paused
    from kaffinity.load.progress import current

    progress = current()
    with gc_paused():
        with progress.stage("finding files"):
            found = list(discover(paths, excluded, seen, gitignore=settings.gitignore))
        with progress.stage("reading files", len(found)):
            results = file_results(
                found, settings, jobs, local=local, cache=cache, tick=progress.tick, policies=policies
            )
        gc.freeze()
    return results


#: Objects a rendered unit keeps whole (not compacted): what a GitOps release reads of the objects
#: an overlay generates (Flux helm-controller's ``valuesFrom`` and kustomize-controller's
#: ``postBuild.substituteFrom`` read a ConfigMap's or Secret's ``data``: kaffinity.repo.gitops.flux).
#: The release kinds and Flux's sources are custom resources, which compaction keeps whole.
KEPT_WHOLE = frozenset({("v1", "ConfigMap"), ("v1", "Secret")})


def stage_rendered(rendered: Rendered, settings: Settings, rules: Sequence[Rule]) -> Rendered:
    """``rendered`` through the single-object stage: :func:`file_result` of each of its files
    (placed as the engine places a rendered object's findings: in the overlay patch that set the
    field), compacted, :data:`KEPT_WHOLE` objects excepted; the results in ``Rendered.results``,
    the patches keyed by the compact documents. A rendered object's positions are those of the
    file that defines it (its ``root``, aligned with it: kaffinity.repo.origins.repoint), not of
    the tool's output: its compact document keeps them, for the fields it keeps."""
    from dataclasses import replace

    from kaffinity.load.source import Document
    from kaffinity.repo.units import Layout

    patched = {id(doc): rendered.patch_location for doc in rendered.documents if id(doc) in rendered.patches}
    layout = Layout((), (), places=patched) if patched else None
    results = []
    compact: dict[int, Document] = {}  # id(whole document) -> its compact document
    for file in rendered.files:
        result = file_result(file, settings, rules, layout=layout)
        kept = list(result.file.documents)
        typed = list(result.typed) if result.typed is not None else None
        for number, whole in enumerate(file.documents):
            data = whole.data
            if isinstance(data, dict) and (data.get("apiVersion"), data.get("kind")) in KEPT_WHOLE:
                kept[number] = whole
            elif whole.root is not data and not whole.prefix:
                small = kept[number]
                kept[number] = Document(
                    small.file,
                    small.index,
                    small.data,
                    _pruned(whole.root, small.data),
                    whole.span,
                    (),
                    small.duplicate_keys,
                )
            else:
                continue
            if typed is not None and (obj := typed[number]) is not None:
                typed[number] = replace(obj, doc=kept[number])
        for whole, small in zip(file.documents, kept, strict=True):
            compact[id(whole)] = small
        if any(a is not b for a, b in zip(kept, result.file.documents, strict=True)):
            result = replace(
                result,
                file=replace(result.file, documents=tuple(kept)),
                typed=tuple(typed) if typed is not None else None,
            )
        results.append(result)
    patches = {id(compact[key]): value for key, value in rendered.patches.items() if key in compact}
    return replace(
        rendered,
        files=tuple(result.file for result in results),
        patches=patches,
        results=tuple(results),
    )


def _pruned(positions: Any, data: Any) -> Any:
    """The tree of ``positions`` (a rendered object's, shaped like its whole data) cut to the
    shape of its compact ``data``."""
    from kaffinity.load.source import PosDict, PosList

    if isinstance(positions, PosDict) and isinstance(data, dict):
        out = PosDict(positions.span)
        for number, (key, value) in enumerate(positions.items()):
            if key in data:
                out[key] = _pruned(value, data[key])
                out.pos.append(positions.pos[number] if number < len(positions.pos) else None)  # type: ignore[arg-type]
        return out
    if isinstance(positions, PosList) and isinstance(data, list) and len(positions) == len(data):
        items = PosList(positions.span)
        items.extend(_pruned(value, item) for value, item in zip(positions, data, strict=True))
        items.pos = positions.pos
        return items
    return positions
