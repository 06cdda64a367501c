"""The engine: select rules, run their checks, record findings, apply suppressions, sort.

One loading path: the single-object stage (:mod:`kaffinity.engine.single`) gives a
:class:`FileResult` per file, in the worker that read it (:mod:`kaffinity.stream`) or here for
input read whole; :func:`lint` takes their findings, builds the run state once
(:class:`kaffinity.context.RunState`, which every unit's :class:`~kaffinity.context.Context`
reads), runs the rules that read every manifest unit by unit, built-in rules before policies, and
records every finding (:mod:`kaffinity.engine.record`) into a :class:`LintResult`.
"""

from kaffinity.engine.result import INTERNAL_ERROR, LOAD_ERROR, LintResult, NewOnly
from kaffinity.engine.run import lint
from kaffinity.engine.single import FileResult, single_object_rules

__all__ = [
    "INTERNAL_ERROR",
    "LOAD_ERROR",
    "FileResult",
    "LintResult",
    "NewOnly",
    "lint",
    "single_object_rules",
]
