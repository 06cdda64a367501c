"""CEL as kube-apiserver evaluates it: kaffinity's evaluator against the oracle's ``cel`` op (issue 35).

The oracle (oracle/main.go ``doCEL``) compiles and evaluates with
``k8s.io/apiserver/pkg/cel/environment`` (``MustBaseEnvSet``, ``object`` declared ``dyn`` as a
ValidatingAdmissionPolicy without a paramKind sees it); kaffinity with
:func:`kaffinity.policy.cel.environment.compile_expression` (``tests/differential/cel_answers.py``
puts its answer in the oracle's form). Compared: compile error or not, evaluation error or not, the
result's type and value (exact JSON), whether an optional has a value. Not compared: the error
texts, and the cost (differences.yaml ``cel/cost``).

* :func:`test_the_table_agrees`: every expression of ``cel_cases.yaml`` (inputs from upstream's own
  test files and per library; the answers are the oracle's), stored expressions at 1.37;
* :func:`test_the_version_gates_agree`: ``cel_gates.yaml`` at each of 1.27-1.37, a new expression
  (``env: new``, environment.NewExpressions) against kaffinity's ``--kube-version``;
* hypothesis properties: random expressions over strings, lists, maps, ints, doubles, optionals,
  quantities and an ``object`` binding.

A disagreement is accepted only when :func:`documented` names its entry in differences.yaml.
"""

from __future__ import annotations

import math
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

pytest.importorskip("cel_expr_python")

from tests.differential.cel_answers import answer, disagreement
from tests.differential.differences import known
from tests.differential.oracle import Oracle, compared, examples

HERE = Path(__file__).parent
#: The oracle's cost is not compared (cel_answers.disagreement ignores it): kaffinity does not compute it.
NOT_COMPARED = known("cel", "cost")
VERSIONS = [f"1.{minor}" for minor in range(27, 38)]
SETTINGS = settings(
    max_examples=examples(),
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@cache
def _load(name: str) -> list[Any]:
    found: list[Any] = YAML(typ="safe").load((HERE / name).read_text(encoding="utf-8"))
    return found


def ask(
    oracle: Oracle, expr: str, obj: object = None, *, version: str = "1.37", env: str = "stored"
) -> dict[str, Any]:
    request: dict[str, Any] = {"op": "cel", "expr": expr, "version": version, "env": env}
    if obj is not None:
        request["object"] = obj
    return oracle.ask(request)


_MIXED = re.compile(r"expected type '[^']+' but found '[^']+'")
_LIST_FUNCTIONS = re.compile(
    r"found no matching overload for '(sum|min|max|isSorted|indexOf|lastIndexOf)' applied to 'list\("
)
#: Element types kaffinity knows less precisely than cel-go (differences.yaml mixed-literals):
#: its opaque values, its list functions' dyn results, empty literals, transformMap's pairs.
_APPROXIMATE = re.compile(
    r"\b(quantity|ip|cidr|url|semver|format\.\w+)\(|\.(sum|min|max)\(\)|\[\s*\]|\{\s*\}|transformMap"
)
#: A list the checker types dyn (lists.py's typed sum/min/max do not apply).
_UNTYPED = re.compile(r"\bdyn\(|\bobject\b")
_SCALAR_SELECT = (
    "No matching overloads found : _?._(",
    "No matching overloads found : _[?_]",
    "Applying SELECT to non-message type",
)


def _rule(id: str, test: Any) -> tuple[str, Any]:
    return id, test


def _error(answer: dict[str, Any]) -> str:
    return str(answer.get("error", ""))


#: (differences.yaml id, whether it explains a disagreement: expr, oracle's answer, kaffinity's).
#: Each is narrow: the kind of expression and both answers.
_RULES = (
    _rule(
        "mixed-literals",
        lambda e, o, m: (
            o.get("stage") == "compile"
            and _MIXED.search(_error(o))
            and m.get("stage") != "compile"
            and _APPROXIMATE.search(e)
        ),
    ),
    _rule(
        "list-library-types",
        lambda e, o, m: (
            o.get("stage") == "compile"
            and _LIST_FUNCTIONS.search(_error(o))
            and m.get("stage") != "compile"
            and (_APPROXIMATE.search(e) or "null" in e)
        ),
    ),
    _rule(
        "duration-list-functions",
        lambda e, o, m: "of durations or timestamps is not supported" in _error(m) and _UNTYPED.search(e),
    ),
    _rule(
        "uint-results",
        lambda e, o, m: (
            o.get("type") == "uint"
            and m.get("type") == "int"
            and re.search(r"\.(sum|min|max)\(\)", e)
            and _UNTYPED.search(e)
        ),
    ),
    _rule(
        "opaque-type-names",
        lambda e, o, m: re.search(r"\bnet\.(IP|CIDR)\b", e) and m.get("stage") == "compile",
    ),
    _rule(
        "quantity-as-int64", lambda e, o, m: "quantity(" in e and re.search(r"\.(isInteger|asInteger)\(\)", e)
    ),
    _rule(
        "quantity-approximate-float",
        lambda e, o, m: "asApproximateFloat" in e and _within_an_ulp(o.get("result"), m.get("result")),
    ),
    _rule("nanoseconds", lambda e, o, m: re.search(r"\d{7,9}Z'|\d+ns", e)),
    _rule("bool-int-keys", lambda e, o, m: re.search(r"\{[^}]*\b1:[^}]*\btrue:|\{[^}]*\btrue:[^}]*\b1:", e)),
    _rule("format-precision-overflow", lambda e, o, m: re.search(r"%\.\d{4,}f", e)),
    _rule("nul-in-strings", lambda e, o, m: "\\x00" in e or "\\0" in e),
    _rule(
        "select-on-scalar",
        lambda e, o, m: (
            o.get("ok") and m.get("stage") == "eval" and any(t in _error(m) for t in _SCALAR_SELECT)
        ),
    ),
    _rule(
        "empty-sum",
        lambda e, o, m: (
            ".sum()" in e
            and m.get("result") == 0
            and o.get("type") in ("double", "uint", "google.protobuf.Duration")
            and _UNTYPED.search(e)
        ),
    ),
    _rule(
        "int-of-bool",
        lambda e, o, m: "no such overload: int(bool)" in _error(o) and m.get("stage") != "compile",
    ),
    _rule(
        "string-of-infinity",
        lambda e, o, m: (
            "string(" in e
            and re.search(r"Inf|NaN", str(o.get("result")))
            and re.search(r"inf|nan", str(m.get("result")))
        ),
    ),
    _rule("duration-milliseconds", lambda e, o, m: "getMilliseconds" in e),
    _rule("timestamp-text", lambda e, o, m: re.search(r"string\(timestamp", e)),
)


def _within_an_ulp(theirs: object, mine: object) -> bool:
    if not isinstance(theirs, float) or not isinstance(mine, float):
        return False
    return math.isclose(theirs, mine, rel_tol=4 * sys.float_info.epsilon)


def documented(expr: str, oracle: dict[str, Any], mine: dict[str, Any]) -> str | None:
    """The differences.yaml ``cel`` entry that explains this disagreement, if one does."""
    return next((_named(id) for id, test in _RULES if test(expr, oracle, mine)), None)


def _named(id: str) -> str:
    known("cel", id)  # KeyError for an id the list does not have
    return id


def compare(oracle: Oracle, expr: str, obj: object = None, version: str = "1.37") -> str | None:
    """The undocumented disagreement on one expression (None when they agree or the difference is
    documented)."""
    theirs = ask(oracle, expr, obj, version=version)
    mine = answer(expr, version, obj)
    compared("cel")
    why = disagreement(theirs, mine)
    if why is None or documented(expr, theirs, mine):
        return None
    return f"{expr!r} object={obj!r}: {why}\n  oracle:    {theirs}\n  kaffinity: {mine}"


def test_the_table_agrees(oracle: Oracle) -> None:
    cases = _load("cel_cases.yaml")
    found = [compare(oracle, case["expr"], case.get("object")) for case in cases]
    wrong = [why for why in found if why]
    assert len(cases) >= 1000
    assert not wrong, f"{len(wrong)} of {len(cases)} disagree:\n" + "\n".join(wrong[:20])


def _compiles_new(oracle: Oracle, expr: str, version: str) -> bool:
    # a program error (cel-go's OptOptimize folding duration('1x')) is reported as a compile error
    return ask(oracle, expr, version=version, env="new").get("stage") not in ("compile", "env", "program")


def test_the_version_gates_agree(oracle: Oracle) -> None:
    """A new expression at each version compiles in kaffinity exactly when kube-apiserver admits
    it (environment.NewExpressions): 1.37's ``includes``, ``first()``/``last()`` from 1.28 (the
    optional library is unversioned), ``optFlatMap`` from 1.28, the format library's optionals."""
    wrong = []
    for expr in _load("cel_gates.yaml"):
        for version in VERSIONS:
            theirs = _compiles_new(oracle, expr, version)
            mine = answer(expr, version).get("stage") != "compile"
            compared("cel")
            if theirs != mine:
                wrong.append(f"{version} {expr!r}: oracle compiles={theirs}, kaffinity compiles={mine}")
    assert not wrong, "\n".join(wrong)


# --- random expressions -----------------------------------------------------------------------

_WORDS = st.sampled_from(
    ["", "a", "app", "side", "Ab-c", "x.y", "é", " pad ", "a,b,,c", "%", "50%", "tacocat"]
)
_INTS = st.sampled_from([0, 1, -1, 2, 3, 7, 30, -5, 9223372036854775807, -9223372036854775808])
_DOUBLES = st.sampled_from(
    ["0.0", "0.5", "-1.5", "2.25", "1e10", "1e-7", "1234567.891", "-0.0", "1.0/0.0", "0.0/0.0"]
)
_QUANTITIES = st.sampled_from(["1", "1.5", "100m", "1Ki", "1k", "2Gi", "-3", "0.1", "500Mi", "1e3"])


def _string(word: str) -> str:
    return "'" + word.replace("\\", "\\\\").replace("'", "\\'") + "'"


@st.composite
def strings(draw: st.DrawFn, depth: int = 2) -> str:
    base = _string(draw(_WORDS))
    if depth <= 0 or draw(st.booleans()):
        return base
    inner = draw(strings(depth - 1))
    word, number = _string(draw(_WORDS)), draw(st.integers(-2, 12))
    return draw(
        st.sampled_from(
            [
                f"{inner} + {base}",
                f"{inner}.lowerAscii()",
                f"{inner}.upperAscii()",
                f"{inner}.trim()",
                f"{inner}.replace({word}, {base})",
                f"{inner}.replace({word}, {base}, {number})",
                f"{inner}.substring({number})",
                f"{inner}.charAt({number})",
                f"strings.quote({inner})",
                f"{inner}.split({word}).join('|')",
                f"string({inner}.indexOf({word}, {number}))",
                f"string({inner}.lastIndexOf({word}, {number}))",
                f"{draw(lists(1))}.map(x, string(x)).join({word})",
                f"{_string(draw(_FORMATS))}.format([{draw(values(1))}])",
                f"{_string(draw(_FORMATS) + ' %s')}.format([{draw(values(1))}, {inner}])",
            ]
        )
    )


_FORMATS = st.sampled_from(["%s", "%d", "%f", "%.2f", "%e", "%x", "%X", "%o", "%b", "x=%s!", "%%%s"])


@st.composite
def ints(draw: st.DrawFn, depth: int = 2) -> str:
    base = str(draw(_INTS))
    if depth <= 0 or draw(st.booleans()):
        return base
    inner, other = draw(ints(depth - 1)), draw(ints(depth - 1))
    return draw(
        st.sampled_from(
            [
                f"({inner} + {other})",
                f"({inner} * {other})",
                f"({inner} / {other})",
                f"({inner} % {other})",
                f"{draw(strings(1))}.size()",
                f"{draw(lists(1))}.size()",
                f"{draw(int_lists())}.sum()",
                f"{draw(int_lists())}.max()",
                f"{draw(int_lists())}.indexOf({base})",
                f"{draw(int_lists())}.lastIndexOf({base})",
                f"{draw(strings(1))}.indexOf({_string(draw(_WORDS))})",
                f"quantity('{draw(_QUANTITIES)}').compareTo(quantity('{draw(_QUANTITIES)}'))",
                f"int({draw(_DOUBLES)})",
                f"{draw(optionals())}.orValue({base})",
            ]
        )
    )


@st.composite
def int_lists(draw: st.DrawFn) -> str:
    return "[" + ", ".join(str(draw(_INTS)) for _ in range(draw(st.integers(0, 4)))) + "]"


@st.composite
def lists(draw: st.DrawFn, depth: int = 1) -> str:
    kind = draw(st.sampled_from(["int", "string", "double", "nested"]))
    if kind == "int":
        base = draw(int_lists())
    elif kind == "string":
        base = "[" + ", ".join(_string(draw(_WORDS)) for _ in range(draw(st.integers(0, 3)))) + "]"
    elif kind == "double":
        base = "[" + ", ".join(draw(_DOUBLES) for _ in range(draw(st.integers(0, 3)))) + "]"
    else:
        base = "[" + ", ".join(draw(int_lists()) for _ in range(draw(st.integers(0, 2)))) + "]"
    if depth <= 0 or draw(st.booleans()):
        return base
    return draw(
        st.sampled_from(
            [
                f"{base}.filter(x, x == x)",
                f"{base}.map(x, x)",
                f"{base}.reverse()",
                f"{base}.slice(0, {base}.size() / 2)",
                f"{base}.distinct()",
                f"{base}.transformList(i, v, i)",
                f"({base} + {base})",
                f"lists.range({draw(st.integers(0, 4))})",
            ]
        )
    )


@st.composite
def optionals(draw: st.DrawFn) -> str:
    word = _string(draw(_WORDS))
    return draw(
        st.sampled_from(
            [
                "optional.none()",
                f"optional.of({draw(_INTS)})",
                f"{{'k': {draw(_INTS)}}}.?k",
                f"{{'k': {draw(_INTS)}}}.?{draw(st.sampled_from(['k', 'j']))}",
                f"{draw(int_lists())}[?{draw(st.integers(-1, 3))}]",
                f"{draw(int_lists())}.first()",
                f"{draw(int_lists())}.last()",
                f"optional.ofNonZeroValue({draw(_INTS)})",
                f"optional.of({draw(_INTS)}).optMap(x, x * 2)",
                f"format.dns1123Label().validate({word}).optMap(e, e.size())",
                "object.?spec.?replicas.optMap(r, int(r))",
            ]
        )
    )


@st.composite
def values(draw: st.DrawFn, depth: int = 2) -> str:
    """Any value: the strategies above, maps, doubles, booleans, quantities, ``object``."""
    choice = draw(st.integers(0, 11))
    if choice == 0:
        return draw(strings(depth))
    if choice == 1:
        return draw(ints(depth))
    if choice == 2:
        return draw(lists(depth))
    if choice == 3:
        return draw(_DOUBLES)
    if choice == 4:
        return f"{{{_string(draw(_WORDS))}: {draw(ints(0))}, 'z': {draw(ints(0))}}}"
    if choice == 5:
        inner = draw(optionals())
        return draw(
            st.sampled_from(
                [f"{inner}.hasValue()", f"{inner}.orValue(-1)", f"{inner}.or(optional.of(9)).value()"]
            )
        )
    if choice == 6:
        first, second = draw(_QUANTITIES), draw(_QUANTITIES)
        return draw(
            st.sampled_from(
                [
                    f"quantity('{first}').add(quantity('{second}')).asApproximateFloat()",
                    f"quantity('{first}').isLessThan(quantity('{second}'))",
                    f"quantity('{first}').sub(1).asApproximateFloat()",
                    f"quantity('{first}') == quantity('{second}')",
                ]
            )
        )
    if choice == 7:
        return draw(
            st.sampled_from(
                ["object", "object.spec", "object.?spec.replicas.orValue(0)", "object.metadata.name"]
            )
        )
    if choice == 8:
        return draw(
            st.sampled_from(
                ["true", "false", "null", "duration('1h2m')", "timestamp('2020-02-29T12:00:00Z')"]
            )
        )
    if choice == 9:
        return f"{draw(lists(1))}.exists_one(i, v, i == 0)"
    if choice == 10:
        return draw(
            st.sampled_from(
                [
                    f"{draw(int_lists())}.includes({draw(_INTS)})",
                    f"{draw(lists(1))}.transformMap(i, v, i % 2 == 0, [v])",
                    f"{draw(int_lists())}.transformMapEntry(i, v, {{v: i}})",
                    f"{{'a': {draw(_INTS)}, 'b': {draw(_INTS)}}}.transformMap(k, v, v > 0, v * 2)",
                ]
            )
        )
    return f"'{draw(st.sampled_from(['%s', '%d', '%f', '%e']))}'.format({draw(lists(1))})"


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from([0.5, -1.5, 2.0]) | _WORDS,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "replicas"]), children, max_size=3)
    ),
    max_leaves=6,
)
_OBJECTS = st.fixed_dictionaries(
    {
        "metadata": st.fixed_dictionaries({"name": _WORDS}),
        "spec": st.one_of(_JSON, st.fixed_dictionaries({"replicas": _JSON})),
    }
)


@SETTINGS
@given(expr=values(), obj=_OBJECTS)
@example(expr="'%s'.format([['app', 'side']])", obj={"metadata": {"name": "a"}, "spec": None})
@example(expr="'%e'.format([1234567.891])", obj={"metadata": {"name": "a"}, "spec": None})
@example(expr="'tacocat'.indexOf('', 30)", obj={"metadata": {"name": "a"}, "spec": None})
@example(expr="[1, 2, 3].exists_one(i, v, v > 2)", obj={"metadata": {"name": "a"}, "spec": None})
@example(
    expr="format.dns1123Label().validate('a') == optional.none()",
    obj={"metadata": {"name": "a"}, "spec": None},
)
@example(expr="[1, 2].includes(2)", obj={"metadata": {"name": "a"}, "spec": None})
@example(expr="object.spec.orValue(1)", obj={"metadata": {"name": "a"}, "spec": 5})
@example(expr="[1, 1].transformMapEntry(i, v, {v: i})", obj={"metadata": {"name": "a"}, "spec": None})
@example(expr="[0, 0u].transformMapEntry(i, v, {v: i})", obj={"metadata": {"name": "a"}, "spec": None})
@example(expr="[object.metadata.name, 1]", obj={"metadata": {"name": "a"}, "spec": None})
@example(expr="['a', 'b'].sum()", obj={"metadata": {"name": "a"}, "spec": None})
@example(expr="[duration('1s')].filter(d, false).sum()", obj={"metadata": {"name": "a"}, "spec": None})
@example(expr="[1u, 2u].max()", obj={"metadata": {"name": "a"}, "spec": None})
@example(expr="int('x')", obj={"metadata": {"name": "a"}, "spec": None})
@example(expr="[optional.of(1), optional.none()].unwrapOpt()", obj={"metadata": {"name": "a"}, "spec": None})
@example(
    expr="{'a': 1, 'b': 2}.transformMap(k, v, v > 1, v * 2)", obj={"metadata": {"name": "a"}, "spec": None}
)
@example(expr="[-5, -9223372036854775808, 7].sum()", obj={"metadata": {"name": "a"}, "spec": None})
@example(
    expr="quantity('1Ki').add(quantity('0.1')).asApproximateFloat()",
    obj={"metadata": {"name": "a"}, "spec": None},
)
def test_random_expressions_agree(oracle: Oracle, expr: str, obj: dict[str, Any]) -> None:
    why = compare(oracle, expr, obj)
    assert why is None, why


@SETTINGS
@given(
    fmt=st.text(alphabet="%sdfexXob.0123 a", max_size=6),
    items=st.lists(values(0), max_size=3),
    dynamic=st.booleans(),
)
@example(fmt="%d", items=["1.5"], dynamic=False)
@example(fmt="%s", items=["'a'", "'b'"], dynamic=False)
@example(fmt="%s", items=["[1.5, 'x']"], dynamic=True)
@example(fmt="%.3e", items=["-0.5"], dynamic=False)
def test_random_format_calls_agree(oracle: Oracle, fmt: str, items: list[str], dynamic: bool) -> None:
    """``string.format``: literal calls (cel-go's compile-time check) and ``dyn`` ones (runtime)."""
    listed = "[" + ", ".join(items) + "]"
    expr = f"{_string(fmt)}.format({'dyn(' + listed + ')' if dynamic else listed})"
    why = compare(oracle, expr)
    assert why is None, why
