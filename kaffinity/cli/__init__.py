"""The command line: options parsed into a run's inputs, the run called once (:mod:`kaffinity.run`),
its outcome printed, the exit code set. Nothing below a command prints or exits
(tests/test_layout.py). One module per group of commands: :mod:`kaffinity.cli.lint` (``lint``,
``baseline write``), :mod:`kaffinity.cli.commands` (``expand``, ``graph``, ``place``, ``explain``, ``fix``),
:mod:`kaffinity.cli.policy`, :mod:`kaffinity.cli.catalogue` (``rules``, ``schema``); the options
they share in :mod:`kaffinity.cli.options`, ``--help`` in :mod:`kaffinity.cli.help`."""

from __future__ import annotations

import os
import sys
from typing import Any

import typer

from kaffinity.cli import catalogue, commands, lint, policy
from kaffinity.cli.options import app

__all__ = ["app", "main", "usage_error"]
from kaffinity.load.display import escape

# The commands, in the order --help lists them.
app.command()(lint.lint)
app.command()(commands.expand)
app.command()(commands.graph)
app.command()(commands.place)
app.command()(commands.explain)
app.command()(commands.fix)
app.add_typer(lint.baseline_app, name="baseline")
app.add_typer(policy.policy_app, name="policy")
app.command()(catalogue.rules)
app.command()(catalogue.schema)


def _click_exceptions() -> Any:
    """click's exceptions module: typer's own copy of click where it ships one, else click."""
    try:
        from typer._click import exceptions  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        from click import exceptions  # type: ignore[no-redef,import-not-found,unused-ignore]
    return exceptions


#: How close an unknown option or command must be to a known one for "did you mean" (click
#: suggests --jobs for --bogus).
_CLOSE = 0.75


def usage_error(error: Any) -> str:
    """A usage error in kaffinity's one style: ``kaffinity: error: ...`` and the line naming the
    help to read; "did you mean" only for a close match."""
    import difflib

    exceptions = _click_exceptions()
    context = getattr(error, "ctx", None)
    command = context.command_path if context is not None else "kaffinity"
    if isinstance(error, exceptions.NoSuchOption):
        known = list(error.possibilities or ())
        if context is not None:
            known = [name for param in context.command.params for name in getattr(param, "opts", ())]
        close = difflib.get_close_matches(error.option_name, known, n=1, cutoff=_CLOSE)
        message = f"no such option: {error.option_name}"
        if close:
            message += f" (did you mean {close[0]}?)"
    else:
        message = str(error.format_message()).replace("Value error, ", "")
        message = message[:1].lower() + message[1:] if message[:2] != message[:2].upper() else message
    message = message.rstrip(".") if message.endswith(".") and message.count(".") == 1 else message
    return f"kaffinity: error: {message}\nTry '{command} --help' for help."


def main() -> None:
    """Entry point. Usage errors are one line in kaffinity's style (and the help to read), exit
    code 2; an unexpected error is one line on stderr and exit code 3 (bad input gets 2), not a
    traceback; ``KAFFINITY_DEBUG=1`` shows the traceback for a bug report."""
    exceptions = _click_exceptions()
    try:
        code = app(prog_name="kaffinity", standalone_mode=False)
    except exceptions.UsageError as error:
        if type(error).__name__ == "NoArgsIsHelpError":  # click >= 8.2: no arguments, the help
            print(error.format_message(), file=sys.stderr)
            sys.exit(2)
        print(usage_error(error), file=sys.stderr)
        sys.exit(2)
    except exceptions.ClickException as error:  # a file click could not open, and the like
        print(escape(f"kaffinity: error: {error.format_message()}"), file=sys.stderr)
        sys.exit(error.exit_code)
    except typer.Abort:
        print("kaffinity: aborted", file=sys.stderr)
        sys.exit(1)
    except Exception as error:  # last line of defence for the user's terminal (re-raised above)
        if os.environ.get("KAFFINITY_DEBUG"):
            raise
        print(  # one line: what the error quotes from the input escaped (kaffinity.load.display)
            escape(
                f"kaffinity: internal error: {type(error).__name__}: {error} "
                "(run with KAFFINITY_DEBUG=1 for details and please report it)"
            ),
            file=sys.stderr,
        )
        sys.exit(3)  # kaffinity.engine.INTERNAL_ERROR, not imported: this line must not fail
    sys.exit(code if isinstance(code, int) else 0)
