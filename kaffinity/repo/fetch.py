"""What a repository names remotely -- Helm charts and git sources -- fetched into the user's cache.

Chart dependencies (``Chart.yaml``/``Chart.lock``), Flux sources (``HelmRepository``,
``OCIRepository``, ``GitRepository``) and Argo CD sources name charts and trees that are not in
the checkout. They are fetched only when the person running kaffinity allows the network
(``Sandbox.network``: ``--allow-network``, ``KAFFINITY_ALLOW_NETWORK``, the Action's input; never
the repository's config), into a cache in the user's cache folder, never inside the repository.

Interface (the fetching itself is issue 32's; callers code against these names):

- :func:`fetch_chart` -- a chart from an HTTP(S) Helm repository (its ``index.yaml``) or an OCI
  registry (``oci://host/path``, the chart at ``oci://host/path/name:version``).
- :func:`fetch_git` -- a tree of a git repository at a branch, tag, semver range or commit.

Both return :class:`Fetched` (a folder in the cache the caller reads and never writes) or
:class:`NotFetched` (one line why; ``offline`` when only the network being off stopped it).
"""

from __future__ import annotations

from dataclasses import dataclass

from kaffinity.repo.sandbox import Sandbox


@dataclass(frozen=True, slots=True)
class Fetched:
    """A fetched chart's folder (holding ``Chart.yaml``) or a git tree's root, in the cache."""

    path: str
    #: What was fetched, as pinned: the chart version chosen, or the commit.
    version: str


@dataclass(frozen=True, slots=True)
class NotFetched:
    """Why something remote could not be had: one line for a note or a finding."""

    reason: str
    #: Only because the network is off (``--allow-network`` would fetch it).
    offline: bool = False


@dataclass(frozen=True, slots=True)
class GitRef:
    """Which tree of a git repository (Flux ``GitRepository.spec.ref``, Argo ``targetRevision``):
    the first that is set wins, in Flux's order: commit, name, semver, tag, branch."""

    branch: str | None = None
    tag: str | None = None
    semver: str | None = None
    commit: str | None = None
    name: str | None = None


def fetch_chart(repository: str, name: str, version: str | None, sandbox: Sandbox) -> Fetched | NotFetched:
    """The chart ``name`` at the newest version matching ``version`` (a semver constraint as
    Helm reads it; None, ``""`` or ``*``: the newest stable) from ``repository``."""
    return NotFetched(
        f"chart {name} from {repository} is remote and the network is off (--allow-network allows it)",
        offline=True,
    )


def fetch_git(url: str, ref: GitRef, sandbox: Sandbox) -> Fetched | NotFetched:
    """The tree of the git repository at ``url`` at ``ref``."""
    return NotFetched(
        f"git repository {url} is remote and the network is off (--allow-network allows it)", offline=True
    )
