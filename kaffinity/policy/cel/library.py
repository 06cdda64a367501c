"""What a kaffinity CEL library is: a name, the Kubernetes minor that introduced it, its functions.

Upstream's libraries are cel-go ``cel.Library`` values listed by version in
``staging/src/k8s.io/apiserver/pkg/cel/environment/base.go``; here each is a :class:`Library`
whose declarations are cel-expr-python ``FunctionDecl`` s with Python implementations. A Python
implementation that raises becomes a CEL error value carrying the exception's text (cel-cpp
prefixes a status such as ``OUT_OF_RANGE:``, which :mod:`kaffinity.policy.cel.environment`
strips).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cel_expr_python import cel

from kaffinity.policy.cel import limits


@dataclass(frozen=True)
class Library:
    """A set of CEL functions Kubernetes added at ``introduced`` (a minor version, 1.x)."""

    name: str
    introduced: int
    #: Builds the declarations (each environment gets its own, as cel-cpp owns them).
    declarations: Callable[[], list[cel.FunctionDecl]]

    def extension(self) -> cel.CelExtension:
        """The cel-expr-python extension that adds this library to an environment."""
        return cel.CelExtension(f"kaffinity.{self.name}", self.declarations())


#: The function name of each overload made, by id(): set by :func:`functions`, which knows it.
_NAMES: dict[int, list[str]] = {}


def overload(
    overload_id: str,
    result: cel.Type,
    params: Sequence[cel.Type],
    impl: Callable[..., object],
    *,
    member: bool = False,
) -> cel.Overload:
    """One overload (``member``: called as ``receiver.name(args)``). Each call is charged what
    upstream's cost model charges it (:mod:`kaffinity.policy.cel.limits`) before it runs: past
    the expression's limit or deadline, it is the cost-limit error instead."""
    name = [""]  # filled in by functions()

    def charged(*args: object) -> object:
        limits.charge(limits.call_cost(name[0], args))
        return impl(*args)

    made = cel.Overload(overload_id, result, list(params), is_member=member, impl=charged)
    _NAMES[id(made)] = name
    return made


def functions(table: dict[str, list[cel.Overload]]) -> list[cel.FunctionDecl]:
    """The declarations of a library's functions, by name."""
    for name, overloads in table.items():
        for made in overloads:
            named = _NAMES.pop(id(made), None)
            if named is not None:
                named[0] = name
    return [cel.FunctionDecl(name, overloads) for name, overloads in table.items()]
