"""What several rules share: their wording (names, domains, terms), which of two findings about
the same pods is kept, why pods stay Pending (one reason, one rule), required affinity that
nothing satisfies, and "did you mean" suggestions. Also ``kaffinity explain``'s facts about a
live cluster's capture (:mod:`.capture`, :mod:`.why`, :mod:`.blockers`, :mod:`.remedy`): why
each Pending pod stays Pending, the pods behind it, what would let it run.

Everything the rules use reads a :class:`kaffinity.context.Context`; rule modules import it,
and never each other. May import: :mod:`kaffinity.context` and every stage below it.
"""
