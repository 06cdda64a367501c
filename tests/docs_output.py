"""The docs' printed outputs, regenerated from the real command (issue 33: they had drifted).

A block of README.md or docs/*.md that shows kaffinity's output is marked by an HTML comment on
the line before its fence::

    <!-- output: kaffinity lint --no-cache examples/revision-unscoped/fail.yaml -->
    ```
    ...
    ```

The command runs from the repository root (or ``cwd=FOLDER`` of it), through ``python -m
kaffinity`` of this checkout, with stable settings: no terminal (no colour, no progress line),
``NO_COLOR=1``, ``COLUMNS=80``, no ``GITHUB_ACTIONS``, ``KAFFINITY_CACHE_DIR`` in a fresh
temporary folder (give ``--no-cache`` where the command takes it). Options before the colon:

- ``stderr``: the block shows stderr (an error message), not stdout;
- ``match=WORD``: only the lines that contain WORD;
- ``head=N``: the first N lines; with ``tail=M`` also the last M, and a line ``...`` between
  them when lines were left out;
- ``cwd=FOLDER``: run there (a folder of the repository), so the paths read as the prose says.

tests/test_docs_output.py regenerates every marked block and compares. To refresh them all
after a change of output (one command, from the repository root)::

    python -m tests.docs_output --update

(``--check`` or no option: print the blocks that differ and exit 1.)
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.kit import run_raw

REPO = Path(__file__).resolve().parent.parent

MARKER = re.compile(
    r"^<!-- output(?P<options>(?: [a-z]+(?:=[^\s:]+)?)*): (?P<command>.+?) -->\n"
    r"(?P<fence>```[^\n]*)\n(?P<body>.*?)^```[ \t]*$",
    re.DOTALL | re.MULTILINE,
)


@dataclass(frozen=True)
class Block:
    document: Path
    line: int
    command: str
    options: dict[str, str]
    shown: str  # the block's text as the document has it
    start: int  # offsets of the body in the document
    end: int


def documents(root: Path = REPO) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def blocks(document: Path) -> list[Block]:
    text = document.read_text(encoding="utf-8")
    found = []
    for match in MARKER.finditer(text):
        options = {}
        for option in match.group("options").split():
            name, _, value = option.partition("=")
            options[name] = value
        found.append(
            Block(
                document,
                text.count("\n", 0, match.start()) + 1,
                match.group("command"),
                options,
                match.group("body"),
                match.start("body"),
                match.end("body"),
            )
        )
    return found


def _environment(cache: str) -> dict[str, str | None]:
    """The variables a reader's shell would not have left out (None), the cache of this block."""
    left_out = ("KAFFINITY_", "GITHUB_", "FORCE_COLOR", "PY_COLORS", "TERMINAL_WIDTH")
    environment: dict[str, str | None] = {key: None for key in os.environ if key.startswith(left_out)}
    return environment | {"NO_COLOR": "1", "COLUMNS": "80", "KAFFINITY_CACHE_DIR": cache}


def run(block: Block) -> str:
    """The text the block should show: the command's output, cut as its options say."""
    words = shlex.split(block.command)
    if words[:1] != ["kaffinity"]:
        raise ValueError(f"{block.document}:{block.line}: an output block runs kaffinity, not {words[0]}")
    folder = REPO / block.options.get("cwd", ".")
    with tempfile.TemporaryDirectory() as cache:
        completed = run_raw(*words[1:], cwd=folder, env=_environment(cache))  # in process
    if completed.returncode == 3 or "Traceback" in completed.stderr:
        raise RuntimeError(f"{block.document}:{block.line}: {block.command}: {completed.stderr}")
    output = completed.stderr if "stderr" in block.options else completed.stdout
    lines = output.rstrip("\n").splitlines()
    if "match" in block.options:
        lines = [line for line in lines if block.options["match"] in line]
    last = int(block.options.get("tail", 0))
    first = int(block.options.get("head", 0 if last else len(lines)))
    if first + last < len(lines):
        lines = [*lines[:first], *(["...", *lines[-last:]] if last else [])]
    if not lines or (lines[0].startswith("kaffinity: error:") and "stderr" not in block.options):
        # A usage error or a selection of nothing is never what a block shows.
        raise RuntimeError(f"{block.document}:{block.line}: {block.command}: {completed.stderr}")
    return "\n".join(lines) + "\n"


def differences(root: Path = REPO) -> list[tuple[Block, str]]:
    """Every marked block whose text is not what its command prints now, with that text."""
    return [
        (block, fresh)
        for document in documents(root)
        for block in blocks(document)
        if (fresh := run(block)) != block.shown
    ]


def update(root: Path = REPO) -> list[Block]:
    """Rewrite every marked block that differs; the blocks rewritten."""
    changed = []
    for document in documents(root):
        text = document.read_text(encoding="utf-8")
        for block in reversed(blocks(document)):  # from the end: the offsets stay valid
            fresh = run(block)
            if fresh != block.shown:
                text = text[: block.start] + fresh + text[block.end :]
                changed.append(block)
        document.write_text(text, encoding="utf-8")
    return changed


def main(argv: list[str]) -> int:
    if "--update" in argv:
        for block in update():
            print(f"updated {block.document.relative_to(REPO)}:{block.line}: {block.command}")
        return 0
    stale = differences()
    for block, _ in stale:
        print(f"{block.document.relative_to(REPO)}:{block.line}: differs: {block.command}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
