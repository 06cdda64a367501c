"""What the command line writes: the output (stdout or ``--output``), the lines on stderr (one
each, what came from the input escaped), a run's notes, and the error that ends a command."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, NoReturn, Optional

import typer

from kaffinity.load.display import escape, quote_name, utf8
from kaffinity.run.notes import RunError

if TYPE_CHECKING:
    from kaffinity.run.notes import Notes, Outcome


def say(message: str) -> None:
    """One message on stderr, on one line: the control characters (line breaks included),
    bidirectional controls and undecodable bytes that come from the input (a file name, a
    ``--stdin-filename``, a name or a policy's message quoted in a notice) escaped
    (``kaffinity.load.display``), so that no message shows as two lines, or a forged one."""
    typer.echo(escape(message), err=True)


def say_notes(notes: Notes) -> None:
    """What the run said so far, in order; said once (the list is emptied)."""
    for line in notes.lines():
        say(line)
    notes.said.clear()


def fail(notes: Notes, error: RunError) -> NoReturn:
    """A run that could not go on: what it said before, its error, its exit code (:func:`notes_said`
    calls it on a ``RunError``, and says the notes again as it ends: none are left)."""
    say_notes(notes)
    for line in error.lines:
        say(line)
    raise typer.Exit(error.code)


def emit(text: str | Iterable[str], output: Optional[str]) -> None:
    """Write ``text`` (or its pieces, each written as it comes: a report never held whole) to
    ``output`` (a file), or to stdout; exit 2 when the file cannot be written. Undecodable bytes
    still in it (lone surrogates) are escaped: the output is UTF-8."""
    pieces = (text,) if isinstance(text, str) else text
    if not output:
        for piece in pieces:
            sys.stdout.write(utf8(piece))
        return
    try:
        # The folders it names are made, as `mkdir -p` would (the README's
        # `schema -o .schemas/kubernetes.json` in a fresh repository): -o is the command line's.
        folder = os.path.dirname(output)
        if folder:
            os.makedirs(folder, exist_ok=True)
        with open(output, "w", encoding="utf-8") as handle:
            for piece in pieces:
                handle.write(utf8(piece))
    except OSError as error:
        say(f"kaffinity: error: {quote_name(output)}: cannot write: {error.strerror or error}")
        raise typer.Exit(2) from None


def finish(outcome: Outcome, output: Optional[str], *, always: bool = True) -> NoReturn:
    """A command's outcome printed: its output (when it has one, or ``always`` to ``--output``),
    the lines after it; exit with its code."""
    if outcome.text is not None or always:
        emit(outcome.text or "", output)
    for line in outcome.after:
        say(line)
    raise typer.Exit(outcome.exit_code)


@contextmanager
def notes_said(notes: Notes) -> Iterator[Notes]:
    """Around a command's run: its notes said as it ends, in order, before its outcome (or an
    unexpected error's line); a :class:`RunError` said after them, and the command exits with its
    code. Every command wraps its run in it."""
    try:
        yield notes
    except RunError as error:
        fail(notes, error)
    finally:
        say_notes(notes)
