"""Temporary: the CEL engine until kaffinity.policy.cel lands."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Any

_WHERE = re.compile(r"ERROR: <input>:(\d+):(\d+): ([^\n]*)")


@cache
def _env(kube_version: str, names: tuple[str, ...]) -> Any:
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_optional, ext_strings

    return cel.NewEnv(
        variables=dict.fromkeys(names, cel.Type.DYN),
        extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional()],
    )


def compile_expression(text: str, kube_version: str, names: tuple[str, ...], error: Any) -> Any:
    try:
        return _env(kube_version, names).compile(text)
    except RuntimeError as problem:
        found = _WHERE.search(str(problem))
        if found is None:
            raise error(str(problem).splitlines()[0]) from None
        raise error(found.group(3), int(found.group(1)), int(found.group(2))) from None


def activation(kube_version: str, names: tuple[str, ...], data: Mapping[str, Any]) -> Any:
    return _env(kube_version, names).Activation(dict(data))


def evaluate(compiled: Any, bound: Any, error: Any) -> Any:
    from cel_expr_python import cel

    result = compiled.eval(bound)
    if result.type() == cel.Type.ERROR:
        raise error(str(result.value()))
    return result.plain_value()
