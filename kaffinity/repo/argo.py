"""Argo CD releases: ``Application`` and ``ApplicationSet`` (argoproj.io) as units."""

from __future__ import annotations

from collections.abc import Iterator

from kaffinity.repo.releases import Release, ReleaseContext


def releases(context: ReleaseContext) -> Iterator[Release]:
    """The releases of this kind among ``context.documents``."""
    yield from ()
