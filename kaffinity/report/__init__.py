"""Reports: a lint result as text, JSON, SARIF 2.1.0, GitHub workflow commands or a Markdown
summary (the GitHub job summary); ``kaffinity place`` listings (:mod:`.placements`); and the rule
catalogue from the registry (:mod:`.docs`, docs/rules.md).

Above the engine: may import every stage, the rules and :mod:`kaffinity.engine`; only the
command line imports it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kaffinity.context import Context
    from kaffinity.engine import LintResult

FORMATS = ("text", "json", "sarif", "github", "markdown")


def render(
    result: LintResult,
    fmt: str,
    *,
    color: bool = False,
    sources: Mapping[str, str] | None = None,
    context: Context | None = None,
) -> str:
    """The report in format ``fmt``; ``sources`` (file name → text) feeds the code frames;
    ``context`` (the run's) gives the markdown summary its affinity graph."""
    renderer: Callable[..., str]
    if fmt == "markdown":
        from kaffinity.report.markdown import render as summary

        return summary(result, context=context)
    if fmt == "json":
        from kaffinity.report.json import render as renderer
    elif fmt == "sarif":
        from kaffinity.report.sarif import render as renderer
    elif fmt == "github":
        from kaffinity.report.github import render as renderer
    elif fmt == "concise":
        from kaffinity.report.text import render_concise

        return render_concise(result, color=color)
    else:
        from kaffinity.report.text import render as renderer

        return renderer(result, color=color, sources=sources or {})
    return renderer(result)


def render_pieces(
    result: LintResult,
    fmt: str,
    *,
    color: bool = False,
    sources: Mapping[str, str] | None = None,
    context: Context | None = None,
) -> Iterable[str]:
    """:func:`render`'s text, in pieces when the format is JSON or SARIF (a large report, written
    as it is made, is never held whole: ``kaffinity.cli.output.emit``); the same text."""
    if fmt == "json":
        from kaffinity.report.json import pieces

        return pieces(result)
    if fmt == "sarif":
        from kaffinity.report.sarif import pieces as sarif_pieces

        return sarif_pieces(result)
    return (render(result, fmt, color=color, sources=sources, context=context),)
