"""A progress indicator on stderr for long runs on a terminal.

What a user sees when ``kaffinity lint`` runs for more than a couple of seconds with stderr on a
terminal: one transient line naming the stage (finding and reading files, checking rules,
placing pods), the count so far out of the total (with a bar), the current file, rule or
workload, and the elapsed time; a stage inside another (the scheduler, run by a rule) follows
its parent::

    ⠹ reading files ━━━━━━╸━━━━━ 1,240/2,400 manifests/shop/0042.yaml                 0:00:03
    ⠼ checking rules 14/27 > placing pods 260/800 workloads Deployment/shop/web       0:00:07

How it stays out of the way:

* **Only on a terminal, only for long runs.** Nothing is shown unless stderr is a TTY, ``TERM``
  is not ``dumb``, ``--no-progress`` is not given and ``KAFFINITY_PROGRESS`` is not ``0``; and
  even then nothing is drawn, and rich is not imported, before the run has taken
  :data:`DELAY` seconds (a daemon timer wakes up then, so a long step is not waited for).
  Short runs (pre-commit on a few files) pay for starting that timer, nothing else. stdout is
  never written: reports are unaffected, byte for byte.
* **Transient.** The line is drawn by rich's ``Live`` display (``transient=True``: erased when
  it stops; https://rich.readthedocs.io/en/stable/live.html). Anything else written to
  ``sys.stderr`` meanwhile (``typer.echo(err=True)``, warnings) goes out above the line through
  rich's ``FileProxy``, as ``Live(redirect_stderr=True)`` would do it (see
  :func:`_stderr_proxy` for why it is installed here), so messages are never garbled. The
  command closes the indicator before it writes its report, and closing happens on every way
  out (``with``): errors, ``typer.Exit``, Ctrl-C.
* **Cheap hooks.** The loader, the engine and the offline scheduler report through
  :func:`current`, which is :data:`NULL` (every method a no-op) unless a command made an
  indicator current with :func:`active`: library callers pay a ``ContextVar`` lookup per call
  and an empty method call per file, rule or workload. A tick of the real indicator only stores
  the count and the item (no clock, no formatting, no I/O); rich's refresh thread reads them
  five times a second and formats them then.
* Colour follows ``NO_COLOR`` (https://no-color.org/: present and not empty disables colour).

For tests: ``KAFFINITY_PROGRESS_DELAY=SECONDS`` replaces the 2-second delay (``0``: draw at
once), so that a quick run through a pseudo-terminal shows the indicator.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

from kaffinity.load.display import escape

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.file_proxy import FileProxy
    from rich.live import Live

#: Seconds a run must have taken before anything is drawn.
DELAY = 2.0
#: ``0`` turns the indicator off (as ``--no-progress`` does).
SWITCH_VARIABLE = "KAFFINITY_PROGRESS"
#: Replaces :data:`DELAY` (seconds); meant for tests.
DELAY_VARIABLE = "KAFFINITY_PROGRESS_DELAY"
#: Redraws per second once drawing (rich's refresh thread).
REFRESH_PER_SECOND = 5.0

_NO_STAGE: AbstractContextManager[None] = nullcontext()


class Progress:
    """The null indicator: every hook does nothing. The default for library callers, and what
    a command gets when stderr is not a terminal."""

    __slots__ = ()

    def stage(self, label: str, total: int | None = None, unit: str = "") -> AbstractContextManager[None]:
        """A stage of the run, for the ``with`` block: ``label`` as a user reads it ("reading
        files"), ``total`` items if known (shown as ``n/total``, with a bar), ``unit`` after the
        count when the label does not say what is counted. Stages nest (placing pods inside a
        rule); the enclosing one is restored at the end of the block."""
        return _NO_STAGE

    def tick(self, item: object = None) -> None:
        """The next item of the current stage begins; ``item`` (a file name, a rule name, an
        object reference) is turned into text only when drawn."""

    def close(self) -> None:
        """Erase what was drawn and stop; idempotent."""


#: The shared null indicator.
NULL = Progress()

_CURRENT: ContextVar[Progress] = ContextVar("kaffinity_progress", default=NULL)


def current() -> Progress:
    """The indicator of the running command, or :data:`NULL`."""
    return _CURRENT.get()


@contextmanager
def active(progress: Progress) -> Iterator[Progress]:
    """Make ``progress`` the :func:`current` indicator for the block, and close it at the end
    (whatever way the block is left)."""
    token = _CURRENT.set(progress)
    try:
        yield progress
    finally:
        _CURRENT.reset(token)
        progress.close()


def terminal(
    stream: TextIO | None = None,
    *,
    enabled: bool = True,
    environ: Mapping[str, str] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Progress:
    """The indicator for ``stream`` (default ``sys.stderr``): a :class:`TerminalProgress` when
    it is a terminal and nothing turns the indicator off, otherwise :data:`NULL`."""
    stream = sys.stderr if stream is None else stream
    environ = os.environ if environ is None else environ
    if not enabled or environ.get(SWITCH_VARIABLE) == "0" or environ.get("TERM") == "dumb":
        return NULL
    try:
        if not stream.isatty():
            return NULL
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return NULL
    try:
        delay = float(environ.get(DELAY_VARIABLE, DELAY))
    except ValueError:
        delay = DELAY
    return TerminalProgress(stream, delay=delay, clock=clock, color=not environ.get("NO_COLOR"))


class _Stage:
    """One level of the stage stack; the counters a tick updates and the refresh thread reads."""

    __slots__ = ("done", "item", "label", "owner", "total", "unit")

    def __init__(self, owner: TerminalProgress, label: str, total: int | None, unit: str) -> None:
        self.owner = owner
        self.label = label
        self.total = total
        self.unit = unit
        self.done = 0
        self.item: object = None

    def __enter__(self) -> None:
        self.owner._stack.append(self)
        self.owner._changed()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        stack = self.owner._stack
        if self in stack:
            stack.remove(self)
        self.owner._changed()


class TerminalProgress(Progress):
    """The indicator drawn on a terminal once the run has taken ``delay`` seconds (by the clock
    ``clock``). A daemon timer wakes up at ``delay`` to start drawing even in the middle of a
    long step; stage changes look at the clock too."""

    __slots__ = (
        "_clock",
        "_closed",
        "_color",
        "_delay",
        "_live",
        "_lock",
        "_proxy",
        "_spinner",
        "_stack",
        "_start",
        "_stream",
        "_timer",
    )

    def __init__(
        self,
        stream: TextIO,
        *,
        delay: float = DELAY,
        clock: Callable[[], float] = time.monotonic,
        color: bool = True,
    ) -> None:
        self._stream = stream
        self._clock = clock
        self._delay = delay
        self._color = color
        self._start = clock()
        self._stack: list[_Stage] = []
        self._lock = threading.Lock()
        self._live: Live | None = None
        self._proxy: FileProxy | None = None
        self._spinner: RenderableType = ""
        self._closed = False
        self._timer: threading.Timer | None = None
        if delay <= 0:
            self._poll()
        else:
            self._timer = threading.Timer(delay, self._poll)
            self._timer.daemon = True
            self._timer.start()

    @property
    def drawing(self) -> bool:
        """Whether the line is on the screen."""
        return self._live is not None

    def stage(self, label: str, total: int | None = None, unit: str = "") -> AbstractContextManager[None]:
        return _Stage(self, label, total, unit)

    def tick(self, item: object = None) -> None:
        if self._stack:
            stage = self._stack[-1]
            stage.done += 1
            stage.item = item

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            live, self._live = self._live, None
            proxy, self._proxy = self._proxy, None
        if live is None:
            return
        try:
            if proxy is not None:
                if sys.stderr is proxy:
                    sys.stderr = proxy.rich_proxied_file
                proxy.flush()  # a partial line written meanwhile goes out above ours
            live.stop()
        except OSError:  # stderr went away (a closed pipe, a hung-up terminal): nothing to erase
            pass

    def _changed(self) -> None:
        """A stage began or ended: start drawing if it is time, show the new stage at once."""
        self._poll()
        live = self._live
        if live is not None:
            live.refresh()

    def _poll(self) -> None:
        if self._live is not None or self._clock() - self._start < self._delay:
            return
        with self._lock:
            if self._closed or self._live is not None:
                return
            self._live = self._open()

    def _open(self) -> Live:
        from rich.console import Console
        from rich.live import Live
        from rich.spinner import Spinner

        self._spinner = Spinner("dots", style="green")
        console = Console(
            file=self._stream,
            force_terminal=True,
            force_interactive=True,
            no_color=not self._color,
            # Other stderr text passes through this console: as written, not as rich markup,
            # and not wrapped at the terminal's width.
            markup=False,
            emoji=False,
            highlight=False,
            soft_wrap=True,
        )
        live = Live(
            console=console,
            get_renderable=self._render,
            transient=True,
            refresh_per_second=REFRESH_PER_SECOND,
            redirect_stdout=False,  # stdout carries the report: never touched
            redirect_stderr=False,  # below, with a proxy that click writes through
        )
        live.start(refresh=True)
        if self._stream is sys.stderr:
            # What else is written to stderr meanwhile (typer.echo(err=True), warnings) goes
            # out above the line.
            self._proxy = _stderr_proxy(console, sys.stderr)
            sys.stderr = self._proxy
        return live

    def _render(self) -> RenderableType:
        """The line, from the counters as they are now (called by rich, on its refresh thread)."""
        from datetime import timedelta

        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        stages = tuple(self._stack)
        seconds = int(self._clock() - self._start)
        # Cells: (renderable, whether it is cut first on a narrow terminal); the item's cell takes
        # the width left over. The spinner, counts and elapsed time keep their width.
        cells: list[tuple[RenderableType, bool]] = [(self._spinner, False)]
        item = "working"
        if stages:
            *outer, inner = stages
            label = Text("".join(f"{stage.label} {_count(stage)} > " for stage in outer))
            label.append(inner.label, style="bold")
            cells.append((label, True))
            if inner.total and not outer:
                cells.append((ProgressBar(total=inner.total, completed=inner.done, width=12), False))
            cells.append((Text(_count(inner)), False))
            # A file name or an object's name from the input: its controls escaped (no ESC-sequence,
            # bidi control or line break reaches the terminal; rich strips only a few C0 controls).
            item = "" if inner.item is None else escape(str(inner.item))
        cells.append((Text(item, style="dim" if stages else ""), True))
        cells.append((Text(str(timedelta(seconds=seconds)), style="yellow"), False))
        line = Table.grid(padding=(0, 1), expand=True)
        for cell, cut in cells:
            if isinstance(cell, Text):
                cell.no_wrap, cell.overflow = True, "ellipsis"
            # rich narrows only the columns that may wrap; their text is cut, never wrapped.
            line.add_column(no_wrap=not cut)
        line.columns[-2].ratio = 1
        line.add_row(*(cell for cell, _ in cells))
        return line


def _stderr_proxy(console: Console, stream: TextIO) -> FileProxy:
    """rich's ``FileProxy`` (what ``Live(redirect_stderr=True)`` installs), telling the
    stream's encoding: click, under ``typer.echo(err=True)``, takes a stream without one (rich's
    proxy says None) for a misconfigured one and writes to its binary buffer, which is the
    terminal's, past the proxy (https://github.com/neuro-inc/apolo-cli/issues/1887)."""
    from rich.file_proxy import FileProxy

    class StderrProxy(FileProxy):
        # Read-only, as on sys.stderr itself (typeshed declares TextIOBase's as plain attributes).
        @property
        def encoding(self) -> str:  # type: ignore[override]
            return stream.encoding

        @property
        def errors(self) -> str | None:  # type: ignore[override]
            return stream.errors

    return StderrProxy(console, stream)


def _count(stage: _Stage) -> str:
    count = f"{stage.done:,}/{stage.total:,}" if stage.total is not None else f"{stage.done:,}"
    return f"{count} {stage.unit}" if stage.unit else count
