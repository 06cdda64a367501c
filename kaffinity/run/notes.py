"""What a run says besides its result, as data: the notes (``kaffinity: note: ...``), the loader's
problems and the other lines the command line prints on stderr in the order they were said, and
the error that ends a run (:class:`RunError`: its lines, its exit code)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

#: What a line is: ``note`` (``kaffinity: note: ...``, left out while ``--new-from-rev`` lints
#: REV's tree), ``problem`` (a loader's problem in lint's style, ``file:line:col: severity
#: [rule] ...``), ``message`` (any other line: ``kaffinity: no context: ...``).
Kind = Literal["note", "problem", "message"]


@dataclass(frozen=True)
class Note:
    """One line for stderr, as said (the command line escapes what came from the input)."""

    kind: Kind
    text: str


@dataclass
class Notes:
    """The lines a run says, in order. ``quiet``: the notes are dropped (REV's tree of
    ``--new-from-rev``: they would name the temporary folder and repeat the work tree's)."""

    said: list[Note] = field(default_factory=list)
    quiet: bool = False

    def note(self, message: str) -> None:
        """``kaffinity: note: MESSAGE``."""
        if not self.quiet:
            self.said.append(Note("note", f"kaffinity: note: {message}"))

    def problem(self, line: str) -> None:
        self.said.append(Note("problem", line))

    def message(self, line: str) -> None:
        self.said.append(Note("message", line))

    def lines(self) -> list[str]:
        return [note.text for note in self.said]


class RunError(Exception):
    """A run that cannot go on (bad input or usage): the lines to say, the exit code (2)."""

    def __init__(self, *lines: str, code: int = 2) -> None:
        super().__init__(lines[0] if lines else "")
        self.lines = lines
        self.code = code


def error_line(message: str) -> str:
    """An error in kaffinity's one style: ``file:line:col: error: ...`` when it has a place,
    else ``kaffinity: error: ...``."""
    if ": error: " in message or message.startswith("kaffinity:"):
        return message
    return f"kaffinity: error: {message}"


@dataclass(frozen=True)
class Outcome:
    """What a command's run gives the command line to print: its output (``text``, for stdout or
    ``--output``; None: nothing to write), the lines to say after it, and the exit code."""

    text: str | None
    after: tuple[str, ...] = ()
    exit_code: int = 0
