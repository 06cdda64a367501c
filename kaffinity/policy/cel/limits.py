"""The bounds kube-apiserver puts on CEL, and the part of its cost accounting kaffinity can keep.

Upstream (``staging/src/k8s.io/apiserver/pkg/apis/cel/config.go``): every expression runs with
cel-go's cost tracking and ``PerCallLimit`` (1,000,000): past it the evaluation stops with
"operation cancelled: actual cost limit exceeded"; the expressions of one policy evaluation (one
binding, one object) share ``RuntimeCELCostBudget`` (10,000,000): past it the policy's decision
is an error, "validation failed due to running out of cost budget, no further validation rules
will be run" (``admission/plugin/cel/activation.go``), which ``failurePolicy`` decides. A
``messageExpression``'s message longer than ``MaxEvaluatedMessageExpressionSizeBytes`` (5 KiB)
is dropped (``policy/validating/validator.go``).

cel-cpp, as cel-expr-python packages it, tracks no cost: it stops a comprehension after 10,000
iterations of one evaluation (its own ``comprehension_max_iterations``; upstream bounds them by
cost instead, so an expression over a longer list fails here, not there). What kaffinity counts
is the cost upstream's ``library/cost.go`` (``CallCost``) gives each call of the Kubernetes
functions kaffinity implements in Python (``find``, ``findAll``, ``url``, ``quantity``, ``ip``,
``cidr``, the list functions, ``join``...), computed from the arguments *before* the call runs:
a lower bound of upstream's actual cost (which also counts every operator, field access and
iteration), so an expression this refuses is one upstream refuses too. The rest, cel-cpp's own
functions on a pull request's data (``replace``, ``contains``, string ``+`` in a loop,
``lists.range``), is bounded by :mod:`kaffinity.policy.guard` (time and memory).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Mapping, Sequence
from functools import cache

#: ``PerCallLimit``: the cost one expression's evaluation may reach.
PER_CALL_LIMIT = 1_000_000
#: ``RuntimeCELCostBudget``: the cost one policy evaluation (a binding, an object) may reach.
RUNTIME_COST_BUDGET = 10_000_000
#: ``MaxEvaluatedMessageExpressionSizeBytes``.
MAX_MESSAGE_BYTES = 5 * 1024
#: cel-go ``common.StringTraversalCostFactor`` and ``RegexStringLengthCostFactor``.
STRING_TRAVERSAL = 0.1
REGEX_LENGTH = 0.25

#: cel-go's error when an evaluation passes its cost limit (``interpreter/runtimecost.go``).
COST_EXCEEDED = "operation cancelled: actual cost limit exceeded"
#: activation.go's error when a policy evaluation passes ``RuntimeCELCostBudget``.
OUT_OF_BUDGET = "validation failed due to running out of cost budget, no further validation rules will be run"


#: The environment variable that sets :func:`time_limit` (seconds; the person running kaffinity's
#: choice, never a repository's).
TIME_LIMIT_ENV = "KAFFINITY_CEL_TIME_LIMIT"
#: Upstream's budget is "roughly 1 second" of evaluation (config.go); cel-cpp is slower than
#: cel-go at some of it (a ``map`` copies its list at each step), hence the margin.
DEFAULT_TIME_LIMIT = 5.0


@cache
def time_limit() -> float:
    """How long one expression's evaluation may run (seconds of CPU time in the guarded process,
    in kaffinity's Python functions too): :data:`DEFAULT_TIME_LIMIT`, or what
    :data:`TIME_LIMIT_ENV` says (0: no limit, and no guarded process)."""
    said = os.environ.get(TIME_LIMIT_ENV, "")
    try:
        value = float(said) if said.strip() else DEFAULT_TIME_LIMIT
    except ValueError:
        value = DEFAULT_TIME_LIMIT
    return value if math.isfinite(value) and value >= 0 else DEFAULT_TIME_LIMIT


class _Tracker(threading.local):
    """The cost counted so far in the evaluation running on this thread."""

    def __init__(self) -> None:
        self.cost = 0
        self.exceeded = False
        #: ``time.process_time()`` (CPU time, as the guard counts) past which a Python library
        #: call stops the evaluation (0: none).
        self.deadline = 0.0


_TRACKER = _Tracker()


def start(deadline: float = 0.0) -> None:
    """A new evaluation: nothing counted yet."""
    tracker = _TRACKER
    tracker.cost, tracker.exceeded, tracker.deadline = 0, False, deadline


def finish() -> tuple[int, bool]:
    """The cost counted for the evaluation that ran, and whether it passed the limit."""
    tracker = _TRACKER
    return tracker.cost, tracker.exceeded


def charge(cost: int) -> None:
    """Count ``cost``; ValueError (a CEL error) once the evaluation is past ``PerCallLimit`` or
    its deadline. Every later call fails too, and the evaluation's result is then this error
    whatever the expression made of it (``||`` cannot absorb it: cel-go cancels)."""
    tracker = _TRACKER
    tracker.cost += cost
    if tracker.exceeded or tracker.cost > PER_CALL_LIMIT:
        tracker.exceeded = True
        raise ValueError(COST_EXCEEDED)
    if tracker.deadline and time.process_time() > tracker.deadline:
        tracker.exceeded = True
        raise ValueError(COST_EXCEEDED)


def check_time() -> None:
    """Within a long call (``findAll``'s matches): stop once the evaluation is past its deadline."""
    charge(0)


def string_cost(text: object, factor: float = STRING_TRAVERSAL) -> int:
    """cost.go's ``ceil(actualSize(text) * factor)`` (a string's size: its code points)."""
    return math.ceil(_size(text) * factor)


def _size(value: object) -> int:
    """cel-go's ``actualSize``: the size of a string, bytes, list or map; 1 otherwise."""
    if isinstance(value, str | bytes | Sequence | Mapping):
        return len(value)
    return 1


def traversal_cost(value: object) -> int:
    """cost.go's ``traversalCost``: strings by their length, lists and maps by their items."""
    if isinstance(value, str | bytes):
        return int(len(value) * STRING_TRAVERSAL)
    if isinstance(value, Mapping):
        return sum(traversal_cost(key) + traversal_cost(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return sum(traversal_cost(item) for item in value)
    return 1


def call_cost(function: str, args: Sequence[object]) -> int:
    """What cost.go's ``CallCost`` charges a call of ``function`` (known before it runs; ``join``
    by the size its result will have)."""
    if not args:
        return 1
    first = args[0]
    function = function.partition("_kaffinity_")[0]  # lists.py's typed sum/min/max
    if function in _TRAVERSED:
        return traversal_cost(first)
    if function in ("find", "findAll") and len(args) >= 2:
        return math.ceil((1 + _size(first)) * STRING_TRAVERSAL) * string_cost(args[1], REGEX_LENGTH)
    if function == "join":
        items = first if isinstance(first, list | tuple) else ()
        separator = args[1] if len(args) > 1 else ""
        size = sum(_size(item) for item in items) + _size(separator) * max(0, len(items) - 1)
        return math.ceil(size * 2 * STRING_TRAVERSAL)
    if function in ("ip.isCanonical",):
        return string_cost(first, 2 * STRING_TRAVERSAL)
    if function in _PARSED and isinstance(first, str):
        return string_cost(first)
    return 1


#: Functions charged one traversal of their receiver (``isSorted``, ``sum``...).
_TRAVERSED = frozenset({"isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"})
#: Functions charged one traversal of a string argument (parsing it).
_PARSED = frozenset(
    {"url", "isURL", "cidr", "isIP", "isCIDR", "ip", "quantity", "isQuantity", "semver", "isSemver"}
)
