"""The documentation's relative links lead somewhere: the file exists and, for ``file.md#anchor``,
a heading of that file has that anchor as GitHub makes them (docs/security.md links every
mechanism it states to the page that explains it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .kit import REPO

PAGES = [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").glob("*.md"))]
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped but ``-`` and
    ``_``, spaces as ``-`` (github/cmark-gfm's toc filter; html-pipeline ``TableOfContentsFilter``)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    found: set[str] = set()
    for heading in _HEADING.findall(text):
        base = anchor(heading)
        name, number = base, 1
        while name in found:  # a repeated heading gets -1, -2...
            name, number = f"{base}-{number}", number + 1
        found.add(name)
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_relative_links_lead_to_a_file_and_a_heading(page: Path) -> None:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target == "#":
            continue
        path, _, fragment = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists() or (fragment and linked.suffix == ".md" and fragment not in anchors(linked)):
            broken.append(target)
    assert not broken, broken


def test_the_anchor_of_a_heading_is_githubs() -> None:
    assert (
        anchor("Trust: the cache is input, like the checkout") == "trust-the-cache-is-input-like-the-checkout"
    )
    assert anchor("`--jobs`") == "--jobs"
    assert anchor("Pull requests, forks and what the checkout decides") == (
        "pull-requests-forks-and-what-the-checkout-decides"
    )
