"""Policies checked under a time and memory bound: a pull request's policy or manifest cannot hang
a run or exhaust its memory (issue 31).

kube-apiserver bounds CEL by cost (:mod:`kaffinity.policy.cel.limits`). cel-cpp, as
cel-expr-python packages it, tracks no cost, cannot be interrupted (it holds the GIL) and some
of its functions are slower than cel-go's on hostile data (``contains`` of two long strings,
``replace('', s)``, ``lists.range(n)``, a ``map`` over a long list). So, as the last resort, on
Linux a policy rule's check runs in a process forked from kaffinity's:

- its address space is limited to what kaffinity used when it was forked plus
  :data:`MEMORY_HEADROOM_ENV` MiB (default 2048): past it cel-cpp's allocation fails, and the
  evaluation is the cost-limit error;
- kaffinity watches its CPU time: one expression's evaluation (or a policy schema's check) that
  takes over :func:`~kaffinity.policy.cel.limits.time_limit` seconds (default 5) is stopped with
  the process, and the object is reported as upstream reports a policy evaluation that ran out
  of budget, as its ``failurePolicy`` says; a new process checks the rule again without that
  object (a check's findings come back at its end, in one message: a message per finding
  costs a process switch each). k such objects cost k times the limit.

One process serves every policy rule of a context (one fork per context, ~10 ms); the objects,
policies and compiled expressions are its copies of kaffinity's, so nothing is sent to it but
which rule to check, and only findings come back. The clock runs only while an expression is
evaluated: the rest of a check (defaulting an object, what kaffinity knows of it) is not timed.

Elsewhere (macOS, Windows, where kaffinity does not fork), or with ``KAFFINITY_CEL_TIME_LIMIT=0``,
the checks run in kaffinity's own process: RE2, the cost accounting and cel-cpp's iteration
limit still hold; the time and memory bounds do not.
"""

from __future__ import annotations

import atexit
import itertools
import os
import struct
import sys
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kaffinity.findings import Severity, Violation

if TYPE_CHECKING:
    import mmap
    from multiprocessing.connection import Connection

    from kaffinity.config import Settings
    from kaffinity.context import Context
    from kaffinity.load.source import Document

#: MiB a guarded process may use beyond what kaffinity used when it was forked.
MEMORY_HEADROOM_ENV = "KAFFINITY_CEL_MEMORY_LIMIT"
DEFAULT_HEADROOM_MIB = 2048
#: How often kaffinity looks at the guarded process's clock (seconds).
_POLL = 0.05
#: Clock ticks per second of /proc's CPU times.
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
#: The shared progress: evaluations begun, evaluating (1) or not (0), objects begun, the
#: object's index in the context's documents (-1: none of them).
_PROGRESS = struct.Struct("<qqqq")


_SERIALS = itertools.count(1)


@dataclass(eq=False)
class Guarded:
    """A policy rule's check, and what a stopped evaluation of one object is reported as."""

    check: Callable[[Context], Iterator[Violation]]
    #: The findings of an object whose evaluation was stopped (None: not one of the context's
    #: documents), given the time limit.
    stopped: Callable[[Document | None, float], Iterator[Violation]]
    #: Documents the check's findings may point at besides the context's (the policy's own).
    own: tuple[Document, ...] = ()
    #: What the check reads of a context that kaffinity's own rules read too (the validation,
    #: the graph): computed by kaffinity before it forks, so that neither computes it twice.
    prepare: Callable[[Context], object] | None = None
    #: A check of the single-object stage (:mod:`kaffinity.policy.streamed`), a context per file:
    #: one guarded process serves every file (:class:`_Server`) rather than a fork per file.
    served: bool = False
    #: A served check's: what it reads that the stage's process computed (``carry``, sent with
    #: each file), and how the guarded process puts it back in its context (``restore``).
    carry: Callable[[Context], object] | None = None
    restore: Callable[[Context, Any], None] | None = None
    serial: int = field(default_factory=lambda: next(_SERIALS))

    def __post_init__(self) -> None:
        serial = self.serial  # not self: the callback must not keep it alive
        _REGISTRY[serial] = weakref.ref(self, lambda _: _REGISTRY.pop(serial, None))


_REGISTRY: dict[int, weakref.ref[Guarded]] = {}


def guarded(rule: Guarded) -> Callable[[Context], Iterator[Violation]]:
    """The check to give the rule: ``rule.check`` in a guarded process where there is one."""

    def check(context: Context) -> Iterator[Violation]:
        if not _forking():
            yield from rule.check(context)
            return
        yield from _run(rule, context)

    return check


def begin(doc: Document) -> bool:
    """Called by a guarded check before it evaluates an object: False when a guarded process was
    stopped on it before (skip it: what it is reported as is said already)."""
    worker = NOW.worker
    return True if worker is None else worker.begin(doc)


@contextmanager
def timed() -> Iterator[None]:
    """Around work a pull request can make slow that is no CEL evaluation (a policy schema's
    ``pattern``, run by Python's ``re``): the time limit's clock runs meanwhile."""
    worker = NOW.worker
    if worker is None:
        yield
        return
    worker.evaluating(True)
    try:
        yield
    finally:
        worker.evaluating(False)


def _forking() -> bool:
    """Whether checks run in a guarded process: on Linux (kaffinity forks its workers there),
    unless the time limit is off."""
    from kaffinity.policy.cel.limits import time_limit

    return sys.platform.startswith("linux") and time_limit() > 0


class Worker:
    """The guarded process's side: its progress, written where kaffinity reads it."""

    def __init__(self, shared: mmap.mmap, documents: tuple[Document, ...], skip: frozenset[int]) -> None:
        self.shared = shared
        self.documents = documents
        self.skip = skip
        self.evaluations = 0
        self.begun = 0
        self.index = -1
        self._indexes: dict[int, int] | None = None

    def index_of(self, doc: Document) -> int:
        """``doc``'s index in the context's documents (-1: not one of them)."""
        if self._indexes is None:
            self._indexes = {id(each): number for number, each in enumerate(self.documents)}
        return self._indexes.get(id(doc), -1)

    def begin(self, doc: Document) -> bool:
        self.begun += 1
        self.index = self.index_of(doc)
        self._write(0)
        return self.begun not in self.skip

    def evaluating(self, busy: bool) -> None:
        """An evaluation starts (True) or ends (False): the clock runs in between."""
        if busy:
            self.evaluations += 1
        self._write(1 if busy else 0)

    def _write(self, busy: int) -> None:
        _PROGRESS.pack_into(self.shared, 0, self.evaluations, busy, self.begun, self.index)


class _Now:
    """What this process is doing: ``worker`` is set in a guarded process while it runs a check
    (read by :func:`begin`, :func:`timed` and :meth:`kaffinity.policy.expressions.Program.run`)."""

    worker: Worker | None = None


NOW = _Now()


@dataclass
class _Stopped:
    """The guarded process was stopped (or died) during object number ``begun``."""

    begun: int
    index: int


class _Child:
    """A guarded process serving the checks of one context."""

    #: What a batch's request found, packed, by serial (:func:`_run_batch`).
    batch: dict[int, list[Any]] | None = None

    def __init__(self, context: Context) -> None:
        import mmap
        from multiprocessing import Pipe

        for reference in list(_REGISTRY.values()):
            rule = reference()
            # Not a served rule's (file by file): this context is not one it checks.
            if rule is not None and not rule.served and rule.prepare is not None:
                rule.prepare(context)
        self.context = weakref.ref(context)
        self.found_rules = len(context.run.found_rules)
        self.shared = mmap.mmap(-1, _PROGRESS.size)
        mine, theirs = Pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the guarded process
            try:
                mine.close()
                _serve(context, theirs, self.shared, parent)
            finally:
                os._exit(0)
        theirs.close()
        self.pid, self.conn = pid, mine

    def progress(self) -> tuple[int, int, int, int]:
        evaluations, busy, begun, index = _PROGRESS.unpack_from(self.shared, 0)
        return evaluations, busy, begun, index

    def collect(self, rule: Guarded, context: Context, limit: float, found: list[Violation]) -> Any:
        """The process's answer to one request (its findings into ``found``): "done", ("error",
        text), "missing" (it does not know the rule) or :class:`_Stopped`."""
        watched, since = -1, self.clock()
        while True:
            if self.conn.poll(_POLL):
                try:
                    message = self.conn.recv()
                except (EOFError, OSError):  # it died (memory: an abort past the limit)
                    return self._stopped()
                if message[0] == "done" and isinstance(message[1], dict):  # a batch's
                    self.batch = message[1]
                    return "done"
                if message[0] == "done":
                    found.extend(_unpack(packed, rule, context) for packed in message[1])
                    return "done"
                return message[0] if len(message) == 1 else message
            evaluations, busy, _, _ = self.progress()
            now = self.clock()
            if not busy or evaluations != watched:
                watched, since = evaluations, now
            elif now - since > limit:
                return self._stopped()

    def clock(self) -> float:
        """The guarded process's CPU time (seconds; its wall time where /proc cannot say): on a
        loaded machine a quick evaluation may take long on the wall, not on the CPU."""
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as stat:
                # After the command's parenthesis: state is field 3, utime and stime 14 and 15.
                fields = stat.read().rsplit(b")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / _TICKS
        except (OSError, IndexError, ValueError):
            return time.monotonic()

    def _stopped(self) -> _Stopped:
        _, _, begun, index = self.progress()
        self.stop()
        return _Stopped(begun, index)

    def stop(self) -> None:
        import signal

        with suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        self.conn.close()
        self.shared.close()


_CURRENT: list[_Child] = []  # the live guarded process, if any


class _Server(_Child):
    """A guarded process forked once and kept: each file's context is sent to it
    (:meth:`load`: its documents, and what the checks read that the built-in rules computed),
    so that a stream of many small files costs one fork, not one per file."""

    def __init__(self, context: Context) -> None:
        import mmap
        from multiprocessing import Pipe

        self.shared = mmap.mmap(-1, _PROGRESS.size)
        mine, theirs = Pipe()
        parent = os.getpid()
        settings = context.settings
        #: The rules the process knows (made before it was forked).
        self.serials = frozenset(_REGISTRY)
        pid = os.fork()
        if pid == 0:  # the guarded process
            try:
                mine.close()
                _serve(None, theirs, self.shared, parent, settings)
            finally:
                os._exit(0)
        theirs.close()
        self.pid, self.conn = pid, mine
        self.load(context)

    def load(self, context: Context) -> None:
        """Send ``context``'s documents to the process: it checks them from now on."""
        import pickle

        from kaffinity.load.parse import SourceFile

        carried: dict[int, object] = {}
        for reference in list(_REGISTRY.values()):
            rule = reference()
            if rule is not None and rule.served and rule.prepare is not None:
                rule.prepare(context)
            if rule is not None and rule.served and rule.carry is not None:
                carried[rule.serial] = rule.carry(context)
        self.context = weakref.ref(context)
        self.found_rules = len(context.run.found_rules)
        documents = tuple(context.documents)
        name = documents[0].file if documents else ""
        # Pickled here (C pickle): the stage runs with the collector paused (kaffinity.load.
        # parse.gc_paused), and what Connection.send's pickler leaves in cycles would stay.
        message = ("load", SourceFile(name, "", documents, ()), carried)
        self.conn.send_bytes(pickle.dumps(message, pickle.HIGHEST_PROTOCOL))


def _child(context: Context, served: bool = False, serial: int = 0) -> _Child | None:
    """The guarded process of ``context`` (one at a time: another context's is stopped). A new one
    when the engine has run more built-in rules since: the policies' facts read their findings,
    and a process forked before would not see them. None: the system refuses
    a process (the check then runs in kaffinity's)."""
    if (
        _CURRENT
        and _CURRENT[0].context() is context
        and _CURRENT[0].found_rules == len(context.run.found_rules)
        and (not isinstance(_CURRENT[0], _Server) or serial in _CURRENT[0].serials)
    ):
        return _CURRENT[0]
    if served and _CURRENT and isinstance(_CURRENT[0], _Server) and serial in _CURRENT[0].serials:
        try:
            _CURRENT[0].load(context)
            return _CURRENT[0]
        except OSError:  # it died while idle
            pass
    _stop_current()
    try:
        _CURRENT.append(_Server(context) if served else _Child(context))
    except OSError:  # fork refused (EAGAIN, ENOMEM)
        return None
    return _CURRENT[0]


def _stop_current() -> None:
    while _CURRENT:
        _CURRENT.pop().stop()


atexit.register(_stop_current)


def reset() -> None:
    """A new stream of files (:mod:`kaffinity.policy.streamed`): no process or batch of an
    earlier run of this process serves it (``--new-from-rev`` lints twice in one process)."""
    _stop_current()
    _BATCH.rules.clear()
    _BATCH.context, _BATCH.found = None, None


def _run(rule: Guarded, context: Context) -> Iterator[Violation]:
    """``rule.check(context)`` in the context's guarded process: its findings, and for an object
    whose evaluation was stopped, ``rule.stopped``'s; then the check again without it."""
    from kaffinity.policy.cel.limits import time_limit

    limit = time_limit()
    if rule.served:
        batched = _batched(rule, context, limit)
        if batched is not None:
            yield from batched
            return
    found: list[Violation] = []
    skip: frozenset[int] = frozenset()
    renewed = 0  # new processes for another reason than a stop: a few at most
    while True:
        child = _child(context, rule.served, rule.serial)
        if child is None:
            yield from rule.check(context)
            return
        try:
            child.conn.send((rule.serial, skip))
            outcome = child.collect(rule, context, limit, found)
        except OSError:  # it died while idle (killed from outside)
            outcome = "missing"
        if outcome == "done":
            break
        if isinstance(outcome, _Stopped) and outcome.begun > 0 and outcome.begun not in skip:
            _CURRENT.clear()  # stopped already
            documents = context.documents
            doc = documents[outcome.index] if 0 <= outcome.index < len(documents) else None
            found.extend(rule.stopped(doc, limit))
            skip |= {outcome.begun}  # the check again, without it: what the process found is lost
            continue
        if outcome == "missing" and renewed < 2:  # a rule made after the process, or it died
            renewed += 1
            _stop_current()
            continue
        if isinstance(outcome, tuple):  # the check raised: what it found, then its error
            yield from found
            raise RuntimeError(str(outcome[1]))
        _stop_current()
        raise RuntimeError(
            "the guarded process ended before it checked an object"
            if isinstance(outcome, _Stopped)
            else f"the guarded process answered {outcome!r}"
        )
    yield from found


@dataclass
class _Batch:
    """The served checks of one file at once (:class:`_Server`): one request for every rule that
    checked the files before, rather than one each. The rules asked learn which to batch."""

    rules: dict[int, None] = field(default_factory=dict)  # serials, in the order asked
    context: Any = None  # weakref.ref of the context whose findings ``found`` holds
    found: dict[int, list[Violation]] | None = None


_BATCH = _Batch()


def _batched(rule: Guarded, context: Context, limit: float) -> list[Violation] | None:
    """``rule``'s findings on ``context`` from the batch of its file (None: not in it, or the
    batch did not finish: a check stopped on an object, which the rule's own request handles)."""
    batch = _BATCH
    if batch.context is None or batch.context() is not context:
        batch.context, batch.found = weakref.ref(context), None
        serials = [serial for serial in batch.rules if serial in _REGISTRY]  # of live rules
        if serials:
            batch.found = _run_batch(serials, context, limit)
    if batch.found is not None and rule.serial in batch.found:
        return batch.found.pop(rule.serial)
    batch.rules[rule.serial] = None
    return None


def _run_batch(serials: list[int], context: Context, limit: float) -> dict[int, list[Violation]] | None:
    child = _child(context, True, max(serials))
    if child is None:
        return None
    try:
        child.conn.send(("batch", serials))
        outcome = child.collect(Guarded(lambda _: iter(()), lambda *_: iter(())), context, limit, [])
    except OSError:
        return None
    packed: dict[int, list[Any]] | None = getattr(child, "batch", None)
    child.batch = None
    if outcome != "done" or packed is None:
        if isinstance(outcome, _Stopped):
            _CURRENT.clear()  # stopped already
        return None
    found: dict[int, list[Violation]] = {}
    for serial, items in packed.items():
        reference = _REGISTRY.get(serial)
        rule = reference() if reference is not None else None
        if rule is not None:
            found[serial] = [_unpack(item, rule, context) for item in items]
    return found


def _serve_batch(context: Context, conn: Connection, shared: mmap.mmap, serials: list[int]) -> None:
    """A batch's checks, one rule after the other, their findings sent at once by serial."""
    worker = NOW.worker = Worker(shared, context.documents, frozenset())
    found: dict[int, list[Any]] = {}
    try:
        for serial in serials:
            reference = _REGISTRY.get(serial)
            rule = reference() if reference is not None else None
            if rule is not None:
                found[serial] = [_pack(violation, rule, worker) for violation in rule.check(context)]
    except Exception as error:  # noqa: BLE001 - each rule's own request reports it
        conn.send(("error", f"{type(error).__name__}: {error}"))
        return
    finally:
        NOW.worker = None
    conn.send(("done", found))


def _serve(
    context: Context | None,
    conn: Connection,
    shared: mmap.mmap,
    parent: int,
    settings: Settings | None = None,
) -> None:
    """The guarded process: check the rules asked for, send back what they find; a
    :class:`_Server`'s (no ``context``) takes each file's context as it is sent."""
    _limit_memory()
    _tie_to_parent(parent)
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request[0] == "load" and settings is not None:
            from kaffinity.context import Context

            context = Context([request[1]], settings)
            for serial, value in request[2].items():
                reference = _REGISTRY.get(serial)
                rule = reference() if reference is not None else None
                if rule is not None and rule.restore is not None:
                    rule.restore(context, value)
            continue
        if context is None:
            conn.send(("missing",))
            continue
        if request[0] == "batch":
            _serve_batch(context, conn, shared, request[1])
            continue
        reference = _REGISTRY.get(request[0])
        rule = reference() if reference is not None else None
        if rule is None:
            conn.send(("missing",))
            continue
        worker = NOW.worker = Worker(shared, context.documents, request[1])
        try:
            # Sent at the end, at once: a message per finding costs a process switch each.
            found = [_pack(violation, rule, worker) for violation in rule.check(context)]
        except Exception as error:  # noqa: BLE001 - the engine reports it as the rule's internal error
            conn.send(("error", f"{type(error).__name__}: {error}"))
            continue
        finally:
            NOW.worker = None
        conn.send(("done", found))


def _tie_to_parent(parent: int) -> None:
    """Ctrl-C is kaffinity's to handle (it stops this process), and this process dies with
    kaffinity (Linux's ``PR_SET_PDEATHSIG``): an evaluation stuck in cel-cpp never outlives it."""
    import ctypes
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1
    if os.getppid() != parent:  # kaffinity died before the tie was made
        os._exit(0)


def _limit_memory() -> None:
    """The guarded process's address space: what it has now, plus the headroom."""
    import resource

    said = os.environ.get(MEMORY_HEADROOM_ENV, "")
    mib = int(said) if said.strip().isdigit() and int(said) > 0 else DEFAULT_HEADROOM_MIB
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            used = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        wanted = used + mib * 1024 * 1024
        if hard != resource.RLIM_INFINITY:
            wanted = min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))
    except (OSError, ValueError):  # no /proc, or a limit already lower: keep it
        pass


def _pack(violation: Violation, rule: Guarded, worker: Worker) -> tuple[Any, ...]:
    """A finding as the guarded process sends it: its document by index."""
    doc = violation.doc
    number = worker.index_of(doc)
    where: tuple[str, int] = ("doc", number)
    if number < 0:
        own = next((number for number, each in enumerate(rule.own) if each is doc), None)
        if own is None:
            raise ValueError("a finding on a document the guarded process cannot name")
        where = ("own", own)
    severity = violation.severity.value if violation.severity is not None else None
    return where, violation.path, violation.message, violation.fix, violation.field, severity


def _unpack(packed: tuple[Any, ...], rule: Guarded, context: Context) -> Violation:
    (kind, number), path, message, fix, field_, severity = packed
    doc = context.documents[number] if kind == "doc" else rule.own[number]
    return Violation(
        doc,
        path,
        message,
        fix=fix,
        field=field_,
        severity=Severity(severity) if severity is not None else None,
    )
