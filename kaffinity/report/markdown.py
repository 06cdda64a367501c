"""A Markdown summary of a lint run (the GitHub Actions job summary). Work in progress."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kaffinity.engine import Context, LintResult


def render(result: LintResult, *, context: Context | None = None) -> str:
    raise NotImplementedError("the markdown summary is being written")
