"""The compiled validity check (kaffinity.validate.fastschema) answers exactly as jsonschema does."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kaffinity.config import KUBE_VERSIONS
from kaffinity.load.files import load
from kaffinity.validate.schema import _entry_points, _valid_for, check_object, validator_for

from .kit import EXAMPLES, SHARED

VERSIONS = (KUBE_VERSIONS[0], "1.33", KUBE_VERSIONS[-1])


def _objects(*folders: str) -> list[dict[str, Any]]:
    return [doc.data for file in load(list(folders)) for doc in file.documents if isinstance(doc.data, dict)]


EXAMPLE_OBJECTS = _objects(str(EXAMPLES))


def _agree(data: Any, version: str, proposals: bool) -> None:
    api_version, kind = data.get("apiVersion"), data.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return
    validator = validator_for(version, proposals, api_version, kind)
    if validator is None:
        return
    valid = _valid_for(version, proposals, api_version, kind)
    assert valid is not None
    errors = list(validator.iter_errors(data))
    assert valid(data) == (not errors), (kind, [error.message for error in errors])


@pytest.mark.parametrize("version", KUBE_VERSIONS)
@pytest.mark.parametrize("proposals", [False, True])
def test_every_kind_of_every_version_compiles(version: str, proposals: bool) -> None:
    """No schema falls back to jsonschema alone (a new keyword in the schemas would show here)."""
    for api_version, kind in _entry_points(version):
        assert _valid_for(version, proposals, api_version, kind) is not None, (api_version, kind)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("proposals", [False, True])
def test_agrees_on_every_example(version: str, proposals: bool) -> None:
    checked = 0
    for data in EXAMPLE_OBJECTS:
        _agree(data, version, proposals)
        checked += 1
    assert checked > 100


@pytest.mark.skipif(
    not (SHARED / "corpus" / "real").is_dir(), reason="the shared real-world corpus is absent"
)
def test_agrees_on_the_real_world_corpus() -> None:
    objects = _objects(str(SHARED / "corpus" / "real"))
    assert len(objects) > 1000
    for data in objects:
        _agree(data, KUBE_VERSIONS[-1], False)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, (*prefix, index))


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 300),
    st.sampled_from([0.0, 1.0, 1.5, -2.0, float("inf")]),
    st.sampled_from(
        [
            "",
            "x",
            "1",
            "true",
            "In",
            "Gt",
            "Lt",
            "Exists",
            "DoNotSchedule",
            "ScheduleAnyway",
            "Honor",
            "kubernetes.io/hostname",
            "NoSchedule",
            "Equal",
        ]
    ),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["key", "operator", "values", "weight", "x", "topologyKey"]), inner, max_size=3
        ),
    ),
    max_leaves=6,
)
_SCHEDULING = {"affinity", "topologySpreadConstraints", "tolerations", "nodeSelector"}
# Objects with scheduling rules of every kind among the examples, to mutate.
_SEEDS = [data for data in EXAMPLE_OBJECTS if "affinity" in str(data) or "topologySpread" in str(data)]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.sampled_from(_SEEDS),
    picks=st.lists(st.tuples(st.integers(0, 10_000), _VALUES, st.booleans()), min_size=1, max_size=4),
    version=st.sampled_from(VERSIONS),
    proposals=st.booleans(),
)
def test_agrees_on_mutated_objects(
    seed: dict[str, Any], picks: list[tuple[int, Any, bool]], version: str, proposals: bool
) -> None:
    """Values replaced by values of other types, other enum members, new keys anywhere."""
    data = copy.deepcopy(seed)
    for index, value, add_key in picks:
        paths = [path for path in _paths(data) if path]
        # Mostly where the schemas look closely (the scheduling fields), sometimes anywhere.
        ruled = [path for path in paths if _SCHEDULING.intersection(map(str, path))]
        path = (ruled if ruled and index % 4 else paths)[index % len(ruled if ruled and index % 4 else paths)]
        parent = data
        for item in path[:-1]:
            parent = parent[item]
        if add_key and isinstance(parent[path[-1]], dict):
            parent[path[-1]]["unknownField"] = value
        else:
            parent[path[-1]] = value
    _agree(data, version, proposals)


@pytest.mark.parametrize("replacement", [True, 1, 1.0, 1.5, "1", "In", None, [], {}])
def test_agrees_on_every_scheduling_value_replaced(replacement: Any) -> None:
    """Each value under a scheduling field of each example replaced by one of another type."""
    compared = 0
    for seed in _SEEDS:
        for path in _paths(seed):
            if not path or not _SCHEDULING.intersection(map(str, path)):
                continue
            data = copy.deepcopy(seed)
            parent = data
            for item in path[:-1]:
                parent = parent[item]
            parent[path[-1]] = copy.deepcopy(replacement)
            _agree(data, KUBE_VERSIONS[-1], False)
            compared += 1
    assert compared > 1000


def test_check_object_still_reports_through_jsonschema() -> None:
    """An invalid object skips the shortcut: the problems come from jsonschema, as before."""
    data = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"affinity": {"podAntiAfinity": {}}, "topologySpreadConstraints": [{"maxSkew": "1"}]},
    }
    problems = check_object(data, KUBE_VERSIONS[-1])
    assert [(problem.path, problem.message) for problem in problems][:2] == [
        (
            ("spec", "affinity", "podAntiAfinity"),
            'unknown field "podAntiAfinity" (did you mean "podAntiAffinity"?)',
        ),
        (("spec", "topologySpreadConstraints", 0, "maxSkew"), 'maxSkew must be an integer, not string "1"'),
    ]


POLICY_SCHEMAS = [
    {"contains": {"required": ["topologyKey"], "properties": {"topologyKey": {"const": "zone"}}}},
    {"minProperties": 1},
    {"maxProperties": 1},
    {"minItems": 2},
    {"maxItems": 0},
    {"properties": {"a": {"minProperties": 1}}, "required": ["a"]},
]
POLICY_VALUES = [
    None,
    0,
    "x",
    [],
    [{}],
    [{"topologyKey": "zone"}],
    [{"topologyKey": "host"}, 1],
    {},
    {"a": {}},
    {"a": {"b": 1}},
]


@pytest.mark.parametrize("schema", POLICY_SCHEMAS)
def test_the_keywords_of_policy_schemas_agree(schema: dict[str, Any]) -> None:
    """contains and the counts, which policies' schemas use (kaffinity.policy.check)."""
    from jsonschema import Draft202012Validator

    from kaffinity.validate.fastschema import compile_schema

    check = compile_schema(schema, {})
    validator = Draft202012Validator(schema)
    assert [check(value) for value in POLICY_VALUES] == [validator.is_valid(value) for value in POLICY_VALUES]
