"""``join`` for Kubernetes before 1.29, whose cel-go strings extension (version 0) has it.

Kubernetes 1.27 and 1.28 use ``ext.Strings(ext.StringsVersion(0))``
(``staging/src/k8s.io/apiserver/pkg/cel/environment/base.go``), and cel-go's version 0 already
declares ``<list<string>>.join([separator])`` (``ext/strings.go``, the ``else`` branch of
``lib.version >= 2``); cel-cpp's strings extension adds ``join`` only at version 2. This module
supplies it to the older environments; from 1.29 cel-cpp's own serves.
"""

from __future__ import annotations

from collections.abc import Sequence

from cel_expr_python import cel

from kaffinity.policy.cel.library import functions, overload

T = cel.Type


def _join(items: Sequence[object], separator: str = "") -> str:
    """``<list<string>>.join([separator])``."""
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"join: invalid input: {item}")
    return separator.join(items)  # type: ignore[arg-type]


def declarations() -> list[cel.FunctionDecl]:
    """cel-go strings version 0's ``join`` overloads."""
    strings = T.List(T.STRING)
    return functions(
        {
            "join": [
                overload("list_join", T.STRING, [strings], _join, member=True),
                overload("list_join_string", T.STRING, [strings, T.STRING], _join, member=True),
            ]
        }
    )
