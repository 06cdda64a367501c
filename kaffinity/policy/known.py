"""What a policy run file by file knows of the input before the stream
(:mod:`kaffinity.policy.streamed` finds it; the rules of :mod:`kaffinity.policy.check` and
:mod:`kaffinity.policy.vap` read it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kaffinity.load.source import Document


@dataclass(frozen=True)
class Known:
    """What the per-object checks read besides the object, found before the stream: each
    namespace's labels and object (as :func:`kaffinity.policy.vap._namespaces` makes them, the
    cluster file's then the manifests'), and the manifests' param candidates, in order."""

    namespaces: dict[str, tuple[dict[str, str], dict[str, Any]]] | None = None
    params: tuple[Document, ...] = ()


@dataclass(frozen=True)
class PolicyStream:
    """A run's policies as the single-object stage runs them: the policy paths, the names of the
    rules that run there (``per_object``), what they read (``known``), and the digest of all of
    it (the policy files' bytes, the known objects) that the cache's key takes."""

    paths: tuple[str, ...]
    per_object: frozenset[str]
    known: Known = field(default_factory=Known)
    digest: str = ""
