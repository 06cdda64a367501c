"""The CEL environment per Kubernetes version: what each version has, compile errors, data.

Version gating follows ``staging/src/k8s.io/apiserver/pkg/cel/environment/base.go``: an
expression using a library newer than the target version does not compile, and the error names
the version it needs. Compile errors carry a 1-based line and column inside the expression.
"""

from __future__ import annotations

import pytest

cel_environment = pytest.importorskip("kaffinity.policy.cel.environment")
from cel_expr_python import cel  # noqa: E402

from kaffinity.config import KUBE_VERSIONS  # noqa: E402
from kaffinity.load.parse import parse  # noqa: E402
from kaffinity.policy.cel.convert import activation_data, plain  # noqa: E402

compile_expression = cel_environment.compile_expression
CelCompileError = cel_environment.CelCompileError
CelEvaluationError = cel_environment.CelEvaluationError
OBJECT = {"object": cel.Type.DYN}


def compile_error(expression: str, kube_version: str) -> CelCompileError:
    with pytest.raises(CelCompileError) as raised:
        compile_expression(expression, kube_version, OBJECT)
    return raised.value


def test_the_minors_are_the_versions_kaffinity_knows() -> None:
    assert tuple(range(27, 38)) == cel_environment.KUBE_MINORS
    assert [f"1.{minor}" for minor in cel_environment.KUBE_MINORS] == list(KUBE_VERSIONS)


# (expression, the first minor that has what it uses)
GATED = [
    ("quantity('1').isInteger()", 28),
    ("optional.of(1).hasValue()", 28),
    ("object.?spec.orValue(1) == 1", 28),
    ("1 < 2.5", 28),
    ("'%d'.format([1]) == '1'", 29),
    ("strings.quote('a') == '\"a\"'", 29),
    ("sets.contains([1, 2], [1])", 29),
    ("ip('10.0.0.1').family() == 4", 30),
    ("cidr('10.0.0.0/8').containsIP('10.1.2.3')", 30),
    ("isCIDR('10.0.0.0/8')", 30),
    ("format.dns1123Label().validate('a').hasValue()", 31),
    ("[1].all(i, v, v > i)", 32),
    ("[1].transformList(i, v, v)", 32),
    ("semver('1.0.0').major() == 1", 33),
    ("isSemver('1.0', true)", 33),
    ("[2, 1].sort() == [1, 2]", 34),
    ("lists.range(2) == [0, 1]", 34),
    ("[1].first().hasValue()", 28),  # the oracle: the optional library is unversioned (base.go)
    ("format.dns1123Label().validate('a') == optional.none()", 31),
    ("[1, 2].exists_one(i, v, v == 2)", 32),
    ("[1, 2].includes(2)", 37),  # lists.go version 1 (base.go: library.ListsVersion(1) at 1.37)
]


@pytest.mark.parametrize(("expression", "introduced"), GATED)
def test_each_library_arrives_with_its_kubernetes_version(expression: str, introduced: int) -> None:
    for minor in cel_environment.KUBE_MINORS:
        version = f"1.{minor}"
        if minor < introduced:
            error = compile_error(expression, version)
            assert f"needs Kubernetes 1.{introduced} or later (kube-version is {version})" in error.message
        else:
            compile_expression(expression, version, OBJECT)


def test_the_version_gate_names_what_needs_the_newer_version() -> None:
    error = compile_error("object.spec.size() > 0 && quantity(object.q).isInteger()", "1.27")
    assert error.message == "`quantity` needs Kubernetes 1.28 or later (kube-version is 1.27)"
    assert (error.line, error.column) == (1, 35)  # the call's parenthesis, as cel-go
    assert compile_error("[1].all(i, v, v > 0)", "1.31").message.startswith("`all` with two variables needs")
    assert compile_error("1 < 2.5", "1.27").message.startswith("comparing numbers of different types")
    assert compile_error("ip('::1')", "1.29").message.startswith("`ip` needs Kubernetes 1.30")


def test_compile_errors_have_a_line_a_column_and_one_line() -> None:
    error = compile_error("object.spec\n  .containers.all(c,\n    c.nope(1))", "1.37")
    assert (error.line, error.column) == (3, 11)
    assert error.message == "undeclared reference to 'nope'"
    syntax = compile_error("object.a +", "1.37")
    assert (syntax.line, syntax.column) == (1, 11)
    assert syntax.message.startswith("Syntax error: ")
    assert "\n" not in syntax.message and "^" not in syntax.message
    typed = compile_error("'ééé' + 1", "1.37")  # columns count characters
    assert typed.column == 7


def test_an_error_no_newer_version_fixes_is_not_a_version_gate() -> None:
    assert compile_error("nosuch(1)", "1.27").message == "undeclared reference to 'nosuch'"


def test_typed_variables_are_checked() -> None:
    variables = {"params": cel.Type.Map(cel.Type.STRING, cel.Type.STRING)}
    with pytest.raises(CelCompileError) as raised:
        compile_expression("params.x + 1", "1.37", variables)
    assert "found no matching overload for '_+_'" in raised.value.message
    assert compile_expression("params.x + '1'", "1.37", variables).evaluate({"params": {"x": "a"}}) == "a1"


def test_cross_type_numeric_comparisons_compile_unchecked_from_1_28() -> None:
    compiled = compile_expression("object.a > 1 && 1 < 2.5", "1.28", OBJECT)
    assert not compiled.checked
    assert compiled.evaluate({"object": {"a": 2}}) is True
    assert compile_expression("object.a > 1", "1.28", OBJECT).checked


def test_transform_map_and_entry_evaluate_as_upstream() -> None:
    """cel-go's transformMap/transformMapEntry (ext/comprehensions.go), respelled over
    transformList (kaffinity/policy/cel/respell.py): the values and errors the oracle gave."""
    cases = {
        "[1, 2].transformMap(i, v, v * 2)": {0: 2, 1: 4},
        "{'a': 1}.transformMap(k, v, v > 0, v + 1)": {"a": 2},
        "{'a': 'b'}.transformMapEntry(k, v, {v: k})": {"b": "a"},
        "[1, 2, 3].transformMap(i, v, i % 2 == 0, v * 10)": {0: 10, 2: 30},
    }
    for expression, expected in cases.items():
        assert compile_expression(expression, "1.37", OBJECT).evaluate({"object": {}}) == expected, expression
    with pytest.raises(CelEvaluationError) as raised:
        compile_expression("[1, 1].transformMapEntry(i, v, {v: i})", "1.37", OBJECT).evaluate({"object": {}})
    assert raised.value.message == "insert failed: key 1 already exists"
    compile_error("{'a': 1}.transformMapEntry(k, v, [])", "1.37")  # not a map: refused when compiling
    error = compile_error("{'a': 1}.transformMap(k, v, v) && nope", "1.37")
    assert (error.message, error.column) == ("undeclared reference to 'nope'", 35)
    assert compile_error("[1].transformMap(i, v, v)", "1.31").message == (
        "`transformMap` with two variables needs Kubernetes 1.32 or later (kube-version is 1.31)"
    )


def test_a_two_variable_exists_one_names_itself_in_the_version_gate() -> None:
    error = compile_error("[1].exists_one(i, v, v == 1)", "1.31")
    assert (error.message, error.column) == (
        "`exists_one` with two variables needs Kubernetes 1.32 or later (kube-version is 1.31)",
        5,
    )


def test_the_format_library_returns_optionals() -> None:
    """format.go's validate and format.named return optionals (issue 35: the oracle compiles
    ``orValue``/``== optional.none()`` on them); a compile error after the wrapped call keeps its
    column in the expression's own text."""
    compiled = compile_expression("format.labelValue().validate('x').orValue([]) == []", "1.37", OBJECT)
    assert compiled.evaluate({"object": {}}) is True
    error = compile_error("format.named('x').hasValue() && nope", "1.37")
    assert (error.message, error.line, error.column) == ("undeclared reference to 'nope'", 1, 33)


def test_or_value_on_a_value_that_is_not_an_optional_is_an_evaluation_error() -> None:
    """The issue said cel-go returns a non-optional ``object`` unchanged from ``orValue``; the oracle
    (kube-apiserver's environment, ``object`` bound as dyn) answers "no such overload", as kaffinity
    does."""
    for expression in ("object.orValue(1)", "object.or(optional.of(1))", "object.spec.orValue(1)"):
        compiled = compile_expression(expression, "1.37", OBJECT)
        with pytest.raises(CelEvaluationError):
            compiled.evaluate({"object": {"spec": 5}} if "spec" in expression else {"object": 5})


def test_a_negative_range_is_an_evaluation_error() -> None:
    """``lists.range(-1)``: the oracle's evaluation error; cel-cpp raised a ValueError (a crash)."""
    with pytest.raises(CelEvaluationError):
        compile_expression("lists.range(-1)", "1.37", OBJECT).evaluate({"object": {}})


def test_format_calls_with_literal_arguments_are_checked_when_compiling() -> None:
    """cel-go's stringFormatValidator (ext/formatting.go), as the oracle reports: the clause against
    the item's type, too many items, a missing one; a dyn list is checked when evaluating."""
    cases = {
        "'%d'.format([1.5])": (
            "error during formatting: decimal clause can only be used on integers, was given double",
            14,
        ),
        "'%s'.format(['a', 'b'])": ("too many arguments supplied to string.format (expected 1, got 2)", 12),
        "'%s %s'.format(['a'])": ("index 1 out of range", 15),
        "'%x'.format([true])": (
            "error during formatting: only integers, byte buffers, and strings can be formatted as hex, "
            "was given bool",
            14,
        ),
    }
    for expression, (message, column) in cases.items():
        error = compile_error(expression, "1.37")
        assert (error.message, error.column) == (message, column), expression
    compiled = compile_expression("'%d'.format(dyn([1.5]))", "1.37", OBJECT)
    with pytest.raises(CelEvaluationError) as raised:
        compiled.evaluate({"object": {}})
    assert (
        raised.value.message
        == "error during formatting: decimal clause can only be used on integers, was given double"
    )


def test_runtime_errors_are_evaluation_errors() -> None:
    for expression in ("quantity('bad')", "1 / 0", "object.missing", "optional.of(1)"):
        compiled = compile_expression(expression, "1.37", OBJECT)
        with pytest.raises(CelEvaluationError):
            compiled.evaluate({"object": {}})


def test_environments_are_built_once_per_version_and_variables() -> None:
    first = cel_environment.environment("1.30", OBJECT)
    assert cel_environment.environment("1.30", {"object": cel.Type.DYN}) is first
    assert cel_environment.environment("1.31", OBJECT) is not first
    assert cel_environment.environment("1.30", {"object": cel.Type.STRING}) is not first
    with pytest.raises(ValueError, match=r"1\.99"):
        cel_environment.environment("1.99", OBJECT)


MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, tier: "1"}
  creationTimestamp: 2024-01-02T03:04:05Z
spec:
  replicas: 3
  big: 99999999999999999999
  template:
    spec:
      containers:
        - name: app
          resources: {limits: {cpu: 500m, memory: 1Gi}}
        - name: sidecar
          resources: {limits: {cpu: "2"}}
"""


def test_loaded_manifests_become_activation_data() -> None:
    (document,) = [doc for doc in parse("web.yaml", MANIFEST).documents if doc.data]
    data = activation_data({"object": document.data})
    assert (
        type(data["object"]) is dict
        and type(data["object"]["spec"]["template"]["spec"]["containers"]) is list
    )
    assert data["object"]["spec"]["big"] == float(99999999999999999999)
    activation = cel_environment.activation("1.37", OBJECT, {"object": document.data})
    expressions = {
        "object.spec.replicas": 3,
        "object.metadata.labels.tier": "1",
        "object.spec.template.spec.containers.map(c, quantity(c.resources.limits.cpu))"
        ".all(q, q.isLessThan(quantity('3')))": True,
        "object.spec.template.spec.containers.map(c, quantity(c.resources.limits.cpu).asApproximateFloat())"
        ".sum()": 2.5,
        "object.spec.template.spec.containers.exists(c, has(c.resources.limits.memory))": True,
    }
    for expression, expected in expressions.items():
        assert compile_expression(expression, "1.37", OBJECT).evaluate(activation) == expected, expression


def test_plain_gives_each_yaml_value_its_json_type() -> None:
    import datetime

    from ruamel.yaml import YAML

    loaded = YAML().load("a: 2024-01-02T03:04:05Z\nb: 2024-01-02\nc: !!binary aGk=\n1: x\nd: [1, {e: f}]\n")
    assert plain(loaded) == {
        "a": "2024-01-02T03:04:05Z",
        "b": "2024-01-02",
        "c": "hi",
        "1": "x",
        "d": [1, {"e": "f"}],
    }
    anchored = plain(YAML().load("a: &x true\nb: *x\nc: 0x10\nd: 1.5\n"))
    assert anchored == {"a": True, "b": True, "c": 16, "d": 1.5}
    assert [type(value) for value in anchored.values()] == [bool, bool, int, float]
    assert plain(datetime.datetime(2024, 1, 2, tzinfo=datetime.UTC)) == "2024-01-02T00:00:00Z"
    assert plain({True: (1, 2)}) == {"true": [1, 2]}


def test_a_loader_mapping_is_refused_unconverted() -> None:
    (document,) = [doc for doc in parse("web.yaml", MANIFEST).documents if doc.data]
    with pytest.raises(CelEvaluationError, match="PosDict"):
        compile_expression("object.kind", "1.37", OBJECT).evaluate({"object": document.data})


@pytest.mark.parametrize(
    ("expression", "message", "column"),
    [
        ("duration('1x') > duration('1s')", "invalid duration argument", 10),
        ("object.t == timestamp('2024-13-01T00:00:00Z')", "invalid timestamp argument", 23),
        ("object.name.matches('[')", "invalid matches argument", 21),
    ],
)
def test_bad_literals_are_compile_errors_from_1_29(expression: str, message: str, column: int) -> None:
    error = compile_error(expression, "1.29")
    assert (error.message, error.line, error.column) == (message, 1, column)
    # before 1.29 too: cel-go's OptOptimize fails building the program (the oracle: stage
    # "program"), which the API server reports with the compile errors
    compile_error(expression, "1.28")
    compile_expression("duration('1h30m') > duration('1s') && 'a1'.matches(r'\\d')", "1.29", OBJECT)


def test_a_returned_opaque_value_can_be_passed_back_as_data() -> None:
    """A VAP's ``variables`` are evaluated first and read by later expressions."""
    variables = {"object": cel.Type.DYN, "variables": cel.Type.DYN}
    cpu = compile_expression("quantity(object.cpu)", "1.37", variables).evaluate({"object": {"cpu": "500m"}})
    later = compile_expression("variables.cpu.isLessThan(quantity('1'))", "1.37", variables)
    assert later.evaluate({"object": {}, "variables": {"cpu": cpu}}) is True
    assert later.return_type() == cel.Type.BOOL


#: Mixed literals and list functions off their element types: the oracle's (kube-apiserver 1.37's)
#: message, line and column (base.go ``cel.HomogeneousAggregateLiterals()``; library/lists.go).
_REFUSED_LITERALS = [
    ("[1, 'a']", "expected type 'int' but found 'string'", 5),
    ("[1, dyn('a')]", "expected type 'int' but found 'dyn'", 8),
    ("[dyn(1), 'a', 2]", "expected type 'dyn' but found 'string'", 10),
    ("[null, duration('1s')]", "expected type 'null' but found 'duration'", 16),
    ("[[1], [2.0]]", "expected type 'list(int)' but found 'list(double)'", 7),
    ("{1: 'a', 2: 2}", "expected type 'string' but found 'int'", 13),
    ("[?optional.of(1), 'a']", "expected type 'int' but found 'string'", 19),
    (
        "[optional.of(1), optional.of('a')]",
        "expected type 'optional_type(int)' but found 'optional_type(string)'",
        29,
    ),
    ("[object.a, object['b'], object.c.d, 1]", "expected type 'dyn' but found 'int'", 37),
    ("[1, 2].map(x, [x, 'a'])", "expected type 'int' but found 'string'", 19),
    ("[0, 0u].transformMapEntry(i, v, {v: i})", "expected type 'int' but found 'uint'", 5),
    ("{'a': 1}.transformMap(k, v, [1, 'a'])", "expected type 'int' but found 'string'", 33),
    ("['a', 'b'].sum()", "found no matching overload for 'sum' applied to 'list(string).()'", 15),
    (
        "[[1], [2]].isSorted()",
        "found no matching overload for 'isSorted' applied to 'list(list(int)).()'",
        20,
    ),
    ("[1].map(x, 'a').sum()", "found no matching overload for 'sum' applied to 'list(string).()'", 20),
    ("['a'].indexOf(1)", "found no matching overload for 'indexOf' applied to 'list(string).(int)'", 14),
]


@pytest.mark.parametrize(("expression", "message", "column"), _REFUSED_LITERALS)
def test_mixed_literals_and_list_functions_off_their_types_are_compile_errors(
    expression: str, message: str, column: int
) -> None:
    error = compile_error(expression, "1.37")
    assert (error.message, error.line, error.column) == (message, 1, column)


@pytest.mark.parametrize(
    "expression",
    [
        "[object.a, object.b]",  # both dyn
        "[dyn(1), dyn('a')]",
        "[{}, {'a': 1}]",  # the empty map takes the other's type
        "[type(1), int]",
        "['a'.split(','), ['b']]",
        "'%s %d'.format(['a', 1])",  # format's list is exempt (ext/formatting_v2.go)
        "'%s'.format([[1, 'a']])",
        "{'a': 1}.transformMap(k, v, 'x')",  # kaffinity's respelling inserts [k, value]
        "[?optional.of(1), 2]",
        "[null].max() == null",  # null is assignable to the list functions' types
        "[1].indexOf(dyn('a')) == -1",
        "[dyn('a')].sum() == 0",  # an evaluation error upstream too
    ],
)
def test_literals_upstream_admits_compile(expression: str) -> None:
    compile_expression(expression, "1.37", OBJECT)


@pytest.mark.parametrize(
    ("expression", "column"),
    [
        ("[duration('1s')].sum() + 1", 24),  # the oracle: no '_+_' for (duration, int)
        ("[[duration('1s')].sum(), 1]", 26),  # the oracle: expected type 'duration' but found 'int'
        ("[1u].min() == 1", 12),  # a uint, as upstream: no '_==_' for (uint, int)
    ],
)
def test_typed_list_functions_answer_in_the_element_type_when_compiling(expression: str, column: int) -> None:
    error = compile_error(expression, "1.37")
    assert (error.line, error.column) == (1, column)
    compile_expression("[duration('1s')].sum() == duration('1s') && [1u].min() == 1u", "1.37", OBJECT)


@pytest.mark.parametrize(
    ("expression", "column"),
    [
        ("int('x')", 4),  # the oracle: a program error (cel-go's OptOptimize folds conversions)
        ("uint(-1)", 5),
        ("int(string('x')) == 1", 4),
        ("true || int('x') == 1", 12),
        ("object.a.findAll('[')", 17),  # regex.go's FindAllRegexOptimization: the pattern
        ("'abc'.find('(')", 11),
    ],
)
def test_constant_conversions_and_patterns_that_fail_are_compile_errors(expression: str, column: int) -> None:
    error = compile_error(expression, "1.37")
    assert (error.line, error.column) == (1, column)


@pytest.mark.parametrize(
    "expression", ["int('1') + 1 == 2", "int(object.a) == 1", "'a'.find('a' + '(') == ''", "int(dyn(1)) == 1"]
)
def test_conversions_of_values_not_constant_compile(expression: str) -> None:
    compile_expression(expression, "1.37", OBJECT)


def test_optional_unwrap_compiles_from_1_28_and_keeps_the_values() -> None:
    """cel-go's optional.unwrap/unwrapOpt (the oracle's answers); refused on a list of
    non-optionals, as upstream's checker refuses it."""
    unwrap = "optional.unwrap([optional.of(1), optional.none(), optional.of(3)])"
    assert compile_expression(unwrap, "1.28", OBJECT).evaluate({}) == [1, 3]
    method = "[optional.of('a'), optional.none()].unwrapOpt()"
    assert compile_expression(method, "1.37", OBJECT).evaluate({}) == ["a"]
    assert compile_expression("optional.unwrap([]).size()", "1.37", OBJECT).evaluate({}) == 0
    compile_error(unwrap, "1.27")
    error = compile_error("[1].unwrapOpt()", "1.37")
    assert (error.line, error.column) == (1, 14)
    error = compile_error("optional.unwrap([1])", "1.37")
    assert (error.line, error.column) == (1, 16)
