"""The single-object stage, file by file: read, check what one object says alone, compact.

``kaffinity lint`` used to parse every file, keep every parsed tree until the report, and run all
the rules at the end. Most rules read one object at a time (the schemas, the API server's
validation, the matchLabelKeys expansion: :func:`streamed_rules`), so they now run on each file
as soon as it is parsed, in the worker that parsed it (``--jobs``); the file is then compacted
(:mod:`kaffinity.k8s.compact`: the fields the rules that read every manifest need, positions
included) and its parsed tree and text are dropped. What comes back is a :class:`Checked`: the
compact file, the findings placed (positions and related places resolved while the tree was
there), and the file's suppression comments. The engine (:func:`kaffinity.engine.lint` with
``checked``) runs the remaining rules on the compact files and applies suppressions, the
reported files and the units to every finding alike, so the result is the one a run without
streaming gives (``tests/test_stream.py`` compares them).

A file's :class:`Checked` depends only on its name, its bytes, kaffinity's version and the
settings (:func:`fingerprint`): it is what the cache keeps (:mod:`kaffinity.cache`).

Not streamed (the CLI reads such input whole, as before): stdin; runs with policies (a
ValidatingAdmissionPolicy reads any field); repositories with kustomizations or rendered charts,
whose objects are built from several files (:mod:`kaffinity.repo.units`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import fields, replace
from typing import TYPE_CHECKING

from kaffinity.engine import Checked, streamed_rules
from kaffinity.load.parse import STDIN, STDIN_NAME, SourceFile

if TYPE_CHECKING:
    from kaffinity.cache import Cache
    from kaffinity.config import Settings
    from kaffinity.findings import Finding
    from kaffinity.k8s.model import Object
    from kaffinity.load.files import ExcludeFn
    from kaffinity.rules.base import Rule


#: Settings that change nothing in a file's :class:`Checked`: which files are read, how the
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


def fingerprint(settings: Settings) -> str:
    """What a file's :class:`Checked` depends on besides its name, its bytes and whether its
    rules ran: kaffinity's version, the format, the settings that reach the single-object stage."""
    import kaffinity
    from kaffinity.cache import FORMAT

    parts = [kaffinity.__version__, str(FORMAT)]
    parts.extend(
        f"{item.name}={getattr(settings, item.name)!r}"
        for item in fields(settings)
        if item.name not in _NOT_LOCAL
    )
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=16).hexdigest()


def check_file(file: SourceFile, settings: Settings, rules: Sequence[Rule], *, local: bool = True) -> Checked:
    """The single-object stage of one parsed file: ``rules`` (:func:`streamed_rules`) if
    ``local``, its suppression comments, and the file compacted (stdin is kept whole: it cannot
    be read again for the report)."""
    from kaffinity.k8s.compact import compact_file
    from kaffinity.suppress import comment_suppressions

    findings: tuple[tuple[str, int | None, Finding], ...] = ()
    errors: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    objects: dict[int, Object | None] = {}
    if local and file.documents and rules:
        findings, errors, notices = _run_rules(file, settings, rules, objects)
    comments = tuple(comment_suppressions(file.name, file.text))
    if file.name == STDIN_NAME:
        return Checked(file, findings, comments, errors, notices)
    kept = compact_file(file, settings.workload_kinds)
    typed = None
    if objects and all(id(doc) in objects for doc in file.documents):
        # The rules built the typed objects (all of them): the compact documents take them over.
        typed = tuple(
            replace(obj, doc=compact) if (obj := objects[id(whole)]) is not None else None
            for whole, compact in zip(file.documents, kept.documents, strict=True)
        )
    return Checked(kept, findings, comments, errors, notices, typed)


def _run_rules(
    file: SourceFile, settings: Settings, rules: Sequence[Rule], objects: dict[int, Object | None]
) -> tuple[tuple[tuple[str, int | None, Finding], ...], tuple[str, ...], tuple[str, ...]]:
    """The rules on one file; ``objects`` gets the typed objects they built, by id() of document."""
    from kaffinity.context import Context
    from kaffinity.engine import Collector

    context = Context([file], settings, objects=objects)
    collector = Collector([file], settings, rules)
    for rule in rules:
        collector.check(rule, context)
    if "inventory" not in context.__dict__:
        objects.clear()  # not built: the engine builds them, once
    index = {id(doc): number for number, doc in enumerate(file.documents)}
    found = tuple(
        (name, index.get(id(doc)) if doc is not None else None, finding)
        for name, doc, finding in collector.collected
    )
    return found, tuple(collector.internal_errors), tuple(context.notices)


#: What a --jobs worker sends for a file starts with one of these: ``ENTRY``, a cache entry's
#: payload (JSON, authenticated by the worker, decoded here by :func:`kaffinity.cache.decode`:
#: never unpickled), or ``PICKLED``, the :class:`Checked` the worker computed itself, pickled.
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
) -> tuple[bytes | None, Checked | None]:
    """The :class:`Checked` of the file at ``path``: from the cache (its payload tagged
    ``ENTRY``, and None: :func:`received` decodes it), or computed (the object, and with
    ``send``, what the parent process gets: :func:`received`). What is computed goes to the
    cache (:func:`kaffinity.cache.encode`). A file that must not be sent (nested deeper than
    pickle goes: :func:`kaffinity.load.parallel.must_read_here`) is neither cached nor sent.
    ``fresh``: do not read the cache (its entry was corrupt)."""
    from kaffinity.load.parallel import must_read_here
    from kaffinity.load.read import from_bytes, read_bytes, skipped_by_name

    skipped = skipped_by_name(path)
    if skipped is not None:
        return None, Checked(skipped, (), ())
    name, raw, problem = read_bytes(path, settings.limits)
    key = None
    if cache is not None and problem is None and path != STDIN:
        key = cache.key(name, raw, local=local)
        if not fresh:
            # A context file (only compacted) may take a checked one's entry: what it holds more,
            # the findings, is not reported (the file is not).
            for candidate in (key,) if local else (cache.key(name, raw, local=True), key):
                cached = cache.get(candidate)
                if cached is not None:
                    return ENTRY + cached, None
    checked = check_file(from_bytes(path, name, raw, problem, settings.limits), settings, rules, local=local)
    if (key is None and not send) or must_read_here(checked.file, settings.limits):
        return None, checked
    encoded = None
    if key is not None and cache is not None:
        from kaffinity.cache import encode

        encoded = encode(checked)
        if encoded is not None:
            cache.put(key, encoded)
    if not send:
        return None, checked
    import pickle

    try:
        return PICKLED + pickle.dumps(checked, pickle.HIGHEST_PROTOCOL), checked
    except RecursionError:
        return None, checked


def received(data: bytes) -> Checked | None:
    """What :func:`payload` gave to send, as a :class:`Checked`, or None (a corrupt entry: the
    file is checked again). A cache entry is decoded by :func:`kaffinity.cache.decode` (JSON),
    wherever it was read; only what a worker of this run computed itself is unpickled."""
    tag, body = data[:1], data[1:]
    if tag == ENTRY:
        from kaffinity.cache import decode

        return decode(body)
    if tag == PICKLED:
        import pickle

        value = pickle.loads(body)
        return value if isinstance(value, Checked) else None
    return None


def _here(path: str, settings: Settings, rules: Sequence[Rule], local: bool, cache: Cache | None) -> Checked:
    data, checked = payload(path, settings, rules, local, cache)
    if checked is None and data is not None:
        checked = received(data)
    if checked is None:  # a corrupt entry: checked again, and written again
        checked = payload(path, settings, rules, local, cache, fresh=True)[1]
    assert checked is not None
    return checked


def _there(
    paths: Sequence[str], settings: Settings, names: Sequence[str], local: bool, cache: Cache | None
) -> list[bytes | None]:
    """A worker's task: each file's :class:`Checked` as :func:`payload` sends it, or None for the
    parent to do."""
    from kaffinity.load.parse import make_room
    from kaffinity.rules import BY_NAME

    make_room(settings.limits.depth)  # a spawned worker (macOS, Windows) starts with the defaults
    rules = [BY_NAME[name] for name in names]
    sent = [payload(path, settings, rules, local, cache, send=True)[0] for path in paths]
    if cache is not None:
        cache.flush()  # this chunk's entries are written before the parent hears of them
    return sent


def check_all(
    paths: Sequence[str],
    settings: Settings,
    jobs: int,
    *,
    local: bool = True,
    cache: Cache | None = None,
    tick: Callable[[str], None] | None = None,
) -> list[Checked]:
    """The single-object stage of every path, in order, in ``jobs`` processes
    (:func:`kaffinity.load.parallel.map_all`), through ``cache`` when given. ``local``: run the
    rules (False: only compact the files, the context of ``--changed``)."""
    from functools import partial

    from kaffinity.load.parallel import map_all
    from kaffinity.rules import RULES

    rules = streamed_rules(RULES, settings) if local else []
    names = [rule.name for rule in rules]
    here = partial(_here, settings=settings, rules=rules, local=local, cache=cache)
    there = partial(_there, settings=settings, names=names, local=local, cache=cache)
    if tick is None:
        return map_all(paths, jobs, here, there, loads=received)
    return map_all(paths, jobs, here, there, tick, loads=received)


def load_checked(
    paths: Sequence[str],
    settings: Settings,
    excluded: ExcludeFn | None = None,
    seen: set[tuple[int, int]] | None = None,
    *,
    jobs: int = 1,
    local: bool = True,
    cache: Cache | None = None,
) -> list[Checked]:
    """:func:`kaffinity.load.files.load` through the single-object stage: discover the files
    under ``paths``, and :func:`check_all` of them, with the command's progress indicator. What
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
            checked = check_all(found, settings, jobs, local=local, cache=cache, tick=progress.tick)
        gc.freeze()
    return checked
