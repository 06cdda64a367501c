"""``kaffinity lint --pre-commit``: the command line as pre-commit builds it, files never options.

pre-commit runs a hook as ``entry + args + filenames`` (``pre_commit/lang_base.py``:
``hook_cmd`` is ``(*shlex.split(entry), *args)`` and ``run_xargs`` appends the file names), so
the file names of a commit follow the user's ``args:`` with no ``--`` between them: a committed
file named ``--config=quiet.yaml`` would be read as an option. A ``--`` in ``entry`` would make
the user's ``args:`` file names instead, and a ``--`` at the end of ``args:`` is lost as soon as
a user writes ``args:`` of their own.

So the hooks' ``entry`` ends with ``--pre-commit``, and what follows it (``args:``, then the
file names) is read as POSIX ``getopt`` reads a command line (options end at the first operand,
XBD 12.2 guideline 9), with one more rule: an argument that names an existing path is an operand
even if it starts with ``-`` (every name pre-commit passes is a file of the work tree). The
arguments are rewritten to ``... --pre-commit OPTIONS -- PATHS`` before click parses them. What
comes before ``--pre-commit`` (the hook's own ``entry``) is left as it is.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from typing import Any

MARKER = "--pre-commit"
COMMAND = "lint"


def rewritten(command: Any, args: Sequence[str]) -> list[str] | None:
    """``args`` (without the program name) with the file names after ``--``, when they run
    ``lint ... --pre-commit``; None otherwise (nothing to change). ``command``: the click group,
    whose ``lint`` says which options take a value."""
    if not args or args[0] != COMMAND:
        return None
    try:
        end = args.index("--")
    except ValueError:
        end = len(args)
    if MARKER not in args[:end]:
        return None
    marker = args.index(MARKER)
    lint = getattr(command, "commands", {}).get(COMMAND)
    options, paths = split(args[marker + 1 :], valued_options(lint))
    return [*args[: marker + 1], *options, "--", *paths]


def split(tokens: Sequence[str], valued: Collection[str]) -> tuple[list[str], list[str]]:
    """The options and the operands of ``tokens``: options up to the first operand (or ``--``),
    an option in ``valued`` taking the next token as its value; a token that names an existing
    path, or does not start with ``-`` (or is ``-``, stdin), is the first operand."""
    options: list[str] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token == "--":
            return options, list(tokens[index + 1 :])
        if token == "-" or not token.startswith("-") or os.path.lexists(token):
            return options, list(tokens[index:])
        options.append(token)
        index += 1
        if _takes_value(token, valued) and index < len(tokens):
            options.append(tokens[index])
            index += 1
    return options, []


def _takes_value(token: str, valued: Collection[str]) -> bool:
    """``--name`` or ``-n`` alone (not ``--name=value``, ``-nvalue``) of an option with a value."""
    if token.startswith("--"):
        return "=" not in token and token in valued
    return len(token) == 2 and token in valued


def valued_options(command: Any) -> frozenset[str]:
    """The names of ``command``'s options that take a value (click: not a flag, not a count)."""
    names: set[str] = set()
    for param in getattr(command, "params", ()):
        if getattr(param, "param_type_name", "") != "option":
            continue
        if getattr(param, "is_flag", False) or getattr(param, "count", False):
            continue
        names.update(getattr(param, "opts", ()))
        names.update(getattr(param, "secondary_opts", ()))
    return frozenset(names)
