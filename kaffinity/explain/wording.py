"""Words the rules and their shared explanations use: lists of names, topology domains, terms.

One place for the phrasing several rules share, so that a rule module never imports another
(rule modules are leaves: see tests/test_layout.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from kaffinity.k8s.labels import HOSTNAME

if TYPE_CHECKING:
    from kaffinity.expand.merge import KeyUse, TermExpansion
    from kaffinity.simulate.cluster import Pool

#: How many names a message lists before "and N more".
SHOWN = 3


def name_list(names: Iterable[str], shown: int = SHOWN, total: int | None = None) -> str:
    """``a, b, c and 12 more`` (or ``a and b``): the first few distinct names and a count of the rest.

    ``total``: how many distinct names there are, when ``names`` holds only the first ones."""
    items = list(dict.fromkeys(names))
    count = max(len(items), total or 0)
    if not items:
        return "none"
    if count <= shown:
        return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
    return ", ".join(items[:shown]) + f" and {count - shown} more"


def counted_list(names: Sequence[str], count: int, shown: int = SHOWN) -> str:
    """:func:`name_list` from the first ``shown`` distinct names and the count of all of them."""
    return (
        name_list(names, shown) if count <= shown else ", ".join(names[:shown]) + f" and {count - shown} more"
    )


def domain_word(key: str) -> str:
    """``node``, ``zone``, ``region`` for the well-known keys, else ``<key> domain``."""
    if key == HOSTNAME:
        return "node"
    for word in ("zone", "region"):
        if key in (f"topology.kubernetes.io/{word}", f"failure-domain.beta.kubernetes.io/{word}"):
            return word
    return f"{key} domain"


def term_words(term: TermExpansion) -> str:
    """``pod affinity term``, ``pod anti-affinity term`` or ``spread constraint``."""
    kind = {"podAffinity": "pod affinity term", "podAntiAffinity": "pod anti-affinity term"}
    return kind.get(term.kind, "spread constraint")


def lost(term: TermExpansion, use: KeyUse) -> str:
    """What a matchLabelKeys / mismatchLabelKeys term does without the key it names."""
    from kaffinity.expand.merge import TOPOLOGY_SPREAD_CONSTRAINTS

    if use.field == "mismatchLabelKeys":
        return f"the {term_words(term)} does not exclude pods with the same {use.key}"
    what = "counts" if term.kind == TOPOLOGY_SPREAD_CONSTRAINTS else "matches"
    return f"the {term_words(term)} {what} every pod its labelSelector selects, whatever their {use.key}"


def pool_nodes(pools: Iterable[Pool], more: bool = False) -> str:
    """``2 (more) nodes of pool general in zone a and 1 node of NodePool spot``: one pool per
    node added, counted by pool in the order they first come."""
    counts: dict[str, int] = {}
    for pool in pools:
        counts[pool.word] = counts.get(pool.word, 0) + 1
    extra = "more " if more else ""
    return name_list(
        (f"{count} {extra}node{'s' if count != 1 else ''} of {word}" for word, count in counts.items()),
        shown=len(counts),
    )
