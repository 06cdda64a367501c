"""Reading and parsing files in several processes (``--jobs N``).

Parsing is most of a large run's time and each file parses on its own, so this process and
``N-1`` forked workers parse the files in chunks; the workers send back what
:func:`kaffinity.load.read.read` returns, and the files come out in the same order, as the same
:class:`~kaffinity.load.parse.SourceFile` objects, so the output is identical whatever ``N`` is.
After loading, the rules that read across files run in this process; what can go beside them
goes to a child forked then (:func:`forked`: the fixes planned for the findings, made while the
graph's rules run), which inherits the run's state and sends back only its values.

Sending a parsed file back costs about half of parsing it (pickling in the worker, unpickling
here, though ``PosDict`` and ``PosList`` pickle as plain containers: see :mod:`kaffinity.load.source`),
so the gain is modest on two cores (1.2x at 10,000 workloads, ``benchmarks/RESULTS.md``) and
grows with the cores. A pool costs a few milliseconds to start where processes can be forked
(Linux) and about 0.1 s where they are spawned (macOS, Windows); below :data:`MIN_FILES` files
it is not worth it, and the files are read in this process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from functools import partial
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import multiprocessing.context
    from concurrent.futures import Future

    from kaffinity.load.parse import Limits, SourceFile

T = TypeVar("T")

#: Fewer files than this are read in this process: a pool does not pay for itself.
MIN_FILES = 64
#: Files per task: small enough to keep every worker busy to the end, large enough that the
#: round trips do not matter.
CHUNK_FILES = 32
#: The smallest chunk, near the end (see :func:`map_all`).
MIN_CHUNK_FILES = 4
#: ProcessPoolExecutor's limit on Windows.
_MAX_WORKERS = 61


def default_jobs() -> int:
    """The number of cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _read_chunk(paths: Sequence[str], limits: Limits, manifests_only: bool = True) -> list[bytes | None]:
    """A worker's task: read and parse some files (never raises for bad input), each file
    pickled on its own, or None for a file to read again in the parent (see :func:`_sendable`)."""
    from kaffinity.load.read import read

    return [_sendable(read(path, limits, manifests_only=manifests_only), limits) for path in paths]


def _sendable(file: SourceFile, limits: Limits | None = None) -> bytes | None:
    """``file`` pickled, or None when the parent must read it itself: where the answer could
    depend on the process that reads it.

    Pickling recurses (in C) once or more per level of nesting, so a file nested a few hundred
    levels deep (under the default ``limits.depth`` of 400) overflows the recursion limit in
    pickle where parsing did not; so does parsing, past about 480 levels (a larger ``depth:``),
    at a depth that depends on how deep the reading process's stack already is. Such files are
    rare, and reading them in the parent gives exactly what ``--jobs 1`` gives, whatever the
    platform's C stack or recursion limit; pickling each file on its own keeps one deep file
    from taking its chunk (or, as it once did, the whole run) with it. Under a ``depth:`` above
    the default, a file nested deeper than the default is read in the parent too, whether or not
    pickle refuses it (its C recursion limit is not the interpreter's on Python 3.12 and later).
    """
    import pickle

    if must_read_here(file, limits):
        return None
    try:
        return pickle.dumps(file, pickle.HIGHEST_PROTOCOL)
    except RecursionError:
        return None


def must_read_here(file: SourceFile, limits: Limits | None = None) -> bool:
    """Whether ``file`` must be read in the parent, not sent by a worker (see :func:`_sendable`)."""
    from kaffinity.load.parse import DEFAULT_LIMITS

    if any(problem.message.startswith(_TOO_DEEP) for problem in file.problems):
        return True
    if limits is not None and limits.depth > DEFAULT_LIMITS.depth:
        roots = {id(doc.root): doc.root for doc in file.documents}  # a List's items share one
        if any(_deeper_than(root, DEFAULT_LIMITS.depth) for root in roots.values()):
            return True
    return False


def _deeper_than(value: object, levels: int) -> bool:
    """Whether mappings and sequences nest more than ``levels`` deep in ``value`` (no recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[object] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > levels:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


#: How :func:`kaffinity.load.read.read` words a file nested too deep (or a RecursionError).
_TOO_DEEP = "nesting deeper than "


def _received(
    chunk: Sequence[str],
    sent: Sequence[bytes | None],
    read_here: Callable[[str], T],
    loads: Callable[[bytes], T | None] | None = None,
) -> list[T]:
    """A worker's answer for ``chunk``, unpickled (iteratively, in C: no recursion limit), with
    the files it could not send read here."""
    import pickle

    out: list[T] = []
    for path, data in zip(chunk, sent, strict=True):
        item = None if data is None else pickle.loads(data) if loads is None else loads(data)
        out.append(read_here(path) if item is None else item)
    return out


def _ignore(path: str) -> None:
    pass


def _ticked(tick: Callable[[str], None], chunk: Sequence[str], future: Future[list[bytes | None]]) -> None:
    for path in chunk:
        tick(path)


def _context() -> multiprocessing.context.BaseContext:
    import multiprocessing

    # Forking is cheap and needs no re-import; it is the default only on Linux for good reason
    # (macOS system libraries are not fork-safe), so elsewhere the platform's default is kept.
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def read_all(
    paths: Sequence[str],
    jobs: int,
    limits: Limits,
    tick: Callable[[str], None] = _ignore,
    *,
    manifests_only: bool = True,
) -> list[SourceFile]:
    """:func:`kaffinity.load.read.read` of every path, in order, in ``jobs`` processes: this one
    and ``jobs - 1`` workers (:func:`map_all`)."""
    from kaffinity.load.read import read

    return map_all(
        paths,
        jobs,
        partial(read, limits=limits, manifests_only=manifests_only),
        partial(_read_chunk, limits=limits, manifests_only=manifests_only),
        tick,
    )


def map_all(
    paths: Sequence[str],
    jobs: int,
    here: Callable[[str], T],
    there: Callable[[Sequence[str]], list[bytes | None]],
    tick: Callable[[str], None] = _ignore,
    *,
    loads: Callable[[bytes], T | None] | None = None,
) -> list[T]:
    """``here(path)`` of every path, in order, in ``jobs`` processes: this one and ``jobs - 1``
    workers, which run ``there(chunk)`` (a module-level function, or a partial of one): for each
    path, ``here(path)`` pickled, or None for a path this process must do itself. ``loads``:
    unpickles what a worker sent (default :func:`pickle.loads`); None from it: done here.

    The workers take chunks of files from the front of the list, a few at a time, and this
    process takes chunks from the back and does them itself, until the two meet (the chunks
    shrink as the files left do: neither side waits long for the other's last one); it unpickles
    what the workers sent as they finish, between its own chunks. On two cores one worker plus
    this process beat two workers. ``-`` (stdin) is done here. If the pool breaks (a worker
    killed, say by the out-of-memory killer), the files it had not returned are done here
    instead. ``tick(path)`` is called as each file is done (from the pool's thread for the
    workers' files).
    """
    from kaffinity.load.parse import STDIN

    def here_ticked(chunk: Sequence[str]) -> list[T]:
        done = []
        for path in chunk:
            tick(path)
            done.append(here(path))
        return done

    if jobs <= 1 or len(paths) < MIN_FILES:
        return here_ticked(paths)
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    ends: dict[int, int] = {}  # each chunk's end by its start
    results: dict[int, list[T]] = {}
    futures: dict[int, Future[list[bytes | None]]] = {}
    running: list[Future[list[bytes | None]]] = []  # submitted and not done (at most 2 per worker)
    # No more workers than chunks (a fork pool starts them all at once), nor than Windows allows.
    workers = min(jobs - 1, -(-len(paths) // CHUNK_FILES), _MAX_WORKERS)
    front, back = 0, len(paths)  # the files not handed out yet: paths[front:back]

    def size() -> int:
        # Chunks shrink as the files left do, so that neither side waits long for the other's
        # last chunk (guided scheduling).
        return max(MIN_CHUNK_FILES, min(CHUNK_FILES, (back - front) // (4 * jobs)))

    def receive(start: int) -> None:
        with suppress(BrokenProcessPool):  # done below, here
            results[start] = _received(paths[start : ends[start]], futures.pop(start).result(), here, loads)

    with ProcessPoolExecutor(workers, mp_context=_context()) as pool:

        def top_up() -> None:
            # Tasks are handed out a few at a time (never cancelled: a cancelled task in a pool
            # that then breaks makes Python 3.11's pool thread fail on its own).
            nonlocal front
            running[:] = [future for future in running if not future.done()]
            while front < back and len(running) < 2 * workers:
                end = min(back, front + size())
                chunk = paths[front:end]
                if STDIN not in chunk:
                    try:
                        future = pool.submit(there, chunk)
                    except (BrokenProcessPool, OSError):  # e.g. fork refused: done here
                        return
                    future.add_done_callback(partial(_ticked, tick, chunk))
                    futures[front] = future
                    running.append(future)
                ends[front] = end
                front = end

        top_up()
        while front < back:
            start = max(front, back - size())
            ends[start] = back
            results[start] = here_ticked(paths[start:back])
            back = start
            for sent in [sent for sent, future in futures.items() if future.done()]:
                receive(sent)
            top_up()
        for sent in list(futures):
            receive(sent)
    out: list[T] = []
    for start in sorted(ends):
        done = results.get(start)
        out.extend(done if done is not None else here_ticked(paths[start : ends[start]]))
    return out


def forked(task: Callable[[], T], jobs: int) -> Callable[[], T]:
    """``task`` started now in a forked child, and what to call for its value: the child's,
    unpickled, once it has finished. With ``jobs`` 1, where processes cannot be forked (only
    Linux forks here: see :func:`_context`), or when the child could not start, died or raised,
    the call runs ``task`` here instead, so the value (or the exception) is the one ``--jobs 1``
    gives. A forked child inherits this process's state as it is (the run's objects, closures and
    all), so ``task`` need not be picklable; only its value is. ``task`` must not write anything
    (the child ends with :func:`os._exit`: nothing of this process's buffers is flushed twice,
    no ``atexit`` handler runs). The child is waited for when the value is asked, once.
    """
    if jobs <= 1 or not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return task
    import pickle

    try:
        reader, writer = os.pipe()
    except OSError:
        return task
    try:
        pid = os.fork()
    except OSError:  # no memory or process left for a child: done here
        os.close(reader)
        os.close(writer)
        return task
    if pid == 0:  # pragma: no cover - the child (coverage does not follow it)
        code = 1
        try:
            os.close(reader)
            data = pickle.dumps(task(), pickle.HIGHEST_PROTOCOL)
            with os.fdopen(writer, "wb") as out:
                out.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(writer)
    asked: list[T] = []

    def value() -> T:
        if asked:
            return asked[0]
        chunks = []
        try:
            with os.fdopen(reader, "rb") as source:
                while chunk := source.read(1 << 20):
                    chunks.append(chunk)
        finally:
            _, status = os.waitpid(pid, 0)
        found: T = task() if status != 0 else pickle.loads(b"".join(chunks))
        asked.append(found)
        return found

    return value
