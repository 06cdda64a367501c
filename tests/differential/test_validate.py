"""API validation judged by kube-apiserver's own code: kaffinity's ``api-validation`` and
``api-warning`` findings against the oracle's ``validate`` op (oracle/validate.go: each kind's
registry strategy, PrepareForCreate, rest.ValidateCreate with declarative validation,
WarningsOnCreate).

kaffinity validates the scheduling fields of workloads and PodDisruptionBudgets
(kaffinity/validate/apiserver/): the pod template's labels, node selector, affinity,
tolerations, topology spread constraints and resource quantities, a PDB's spec, a DaemonSet's
and a Deployment's rolling update. The oracle validates the whole object; its errors outside
those fields are not compared (:func:`in_scope`). Compared: the set of (field path, error type)
— kaffinity's ``schema`` findings stand for the API server's "Unsupported value" and "Invalid
value" of a value outside an enumeration — and the set of warnings about those fields.

Generated: valid objects of every kind kaffinity validates, mutated (bad label selectors,
maxSkew 0, bad topology keys, empty affinity terms, bad operators and values, matchLabelKeys
that the selector holds, DaemonSet maxSurge with maxUnavailable, PDB minAvailable with
maxUnavailable, bad quantities, bad labels, ...); and the workloads of the real corpus
(/work/shared/corpus/real), sent to the oracle in batches.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kaffinity.load.parse import LoadError, decode, parse
from kaffinity.validate.apiserver import API_VALIDATION, API_WARNING, Target, validate
from kaffinity.validate.schema import check_object
from tests.differential.differences import known
from tests.differential.oracle import Oracle, compared, examples

SETTINGS = settings(
    max_examples=examples(),
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
TARGET = Target("1.37")
REAL = Path("/work/shared/corpus/real")

#: field.ErrorType's words (k8s.io/apimachinery/pkg/util/validation/field/errors.go, String)
TYPES = {
    "Invalid value": "FieldValueInvalid",
    "Required value": "FieldValueRequired",
    "Forbidden": "FieldValueForbidden",
    "Unsupported value": "FieldValueNotSupported",
    "Duplicate value": "FieldValueDuplicate",
    "Too many": "FieldValueTooMany",
    "Too long": "FieldValueTooLong",
}

#: Where each kind keeps its pod template (the oracle's paths).
TEMPLATES = {
    "Pod": "",
    "PodTemplate": "template.",
    "CronJob": "spec.jobTemplate.spec.template.",
}
APPS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet")
SCHEDULING = ("spec.affinity", "spec.tolerations", "spec.nodeSelector", "spec.topologySpreadConstraints")
#: Quantities: parse errors anywhere kaffinity reads them; container resource requirements.
QUANTITY = re.compile(
    r"spec\.overhead\[|[cC]ontainers\[\d+\]\.resources(?:\.(?:requests|limits))?(?:\[|$)|emptyDir\.sizeLimit$"
)


def in_scope(kind: str, field: str) -> bool:
    """Whether kaffinity validates this field of an object of ``kind`` (the API server's path)."""
    if kind == "PodDisruptionBudget":
        return field == "spec" or field.startswith("spec.")
    if kind in ("DaemonSet", "Deployment") and field.startswith(("spec.updateStrategy", "spec.strategy")):
        return True
    if kind in APPS and (field == "spec.selector" or field.startswith(("spec.selector.", "spec.selector["))):
        return True
    base = TEMPLATES.get(kind, "spec.template.")
    if field in (f"{base}metadata.labels", f"{base}labels") or field.startswith(
        (f"{base}metadata.labels[", f"{base}labels[")
    ):
        return True
    if not field.startswith(base):
        return False
    rest = field[len(base) :]
    return rest.startswith(SCHEDULING) or bool(QUANTITY.search(rest))


def _type(message: str) -> str:
    return TYPES.get(message.split(":", 1)[0], message.split(":", 1)[0])


def kaffinity_answer(data: dict[str, Any]) -> tuple[set[tuple[str, str]], set[str], set[str]]:
    """kaffinity's errors (field, type), the fields its schema refuses, and its warnings."""
    errors: set[tuple[str, str]] = set()
    warnings: set[str] = set()
    for problem in validate(data, TARGET):
        if problem.rule == API_VALIDATION:
            errors.add((problem.field, _type(problem.message)))
        elif problem.rule == API_WARNING:
            warnings.add(problem.message)
    schema = {_dotted(problem.path) for problem in check_object(data, TARGET.version, False)}
    return errors, schema, warnings


def _dotted(path: tuple[Any, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out


def oracle_answer(kind: str, answer: dict[str, Any]) -> tuple[set[tuple[str, str]], set[str]]:
    errors = {(e["field"], e["type"]) for e in answer["errors"] if in_scope(kind, e["field"])}
    warnings = {w for w in answer["warnings"] if in_scope(kind, w.split(":", 1)[0].split("[")[0] + "[")}
    return errors, warnings


def compare(data: dict[str, Any], answer: dict[str, Any]) -> None:
    """kaffinity and kube-apiserver find the same errors and warnings in the fields kaffinity
    validates."""
    compared("validate")
    kind = data["kind"]
    found, schema, warned = kaffinity_answer(data)
    if not answer["ok"] and answer.get("stage") == "decode" and answer["error"].startswith("quantities must"):
        # resource.Quantity.UnmarshalJSON refuses the object before validation: kaffinity
        # reports the quantity (PodValidator.quantities)
        assert any("resources" in field or "overhead" in field for field, _ in found), (found, answer)
        return
    assert answer["ok"], answer
    expected, warnings = oracle_answer(kind, answer)
    # kaffinity's schema rule reports a value outside an enumeration (or of the wrong type),
    # which the API server reports as an error at the same field
    unexplained = {(field, kind_) for field, kind_ in expected - found if not _under(field, schema)}
    spec = data.get("spec") or {}
    fragment = not isinstance(spec.get("selector"), dict) or not isinstance(spec.get("template"), dict)
    if kind in APPS and fragment and unexplained & FRAGMENT:
        # no selector or no template: a fragment (differences.yaml)
        known("validate", "fragment")
        unexplained -= FRAGMENT
    name = (data.get("metadata") or {}).get("name")
    from_name = {
        (e["field"], e["type"])
        for e in answer["errors"]
        if e["field"].endswith("template.labels") and e.get("badValue") == name
    }
    if kind in ("Job", "CronJob") and unexplained & from_name:
        # the job-name labels the Job strategy adds from an invalid name (differences.yaml)
        known("validate", "job-name-labels")
        unexplained -= from_name
    extra = found - expected
    assert not unexplained and not extra, {"missing": unexplained, "extra": extra, "errors": answer["errors"]}
    _same_words(data, answer)
    if answer["errors"]:
        return  # the API server sends warnings only with an object it accepts (rest.BeforeCreate)
    kept = {w for w in warned if in_scope(kind, w.split(":", 1)[0].split("[")[0] + "[")}
    assert kept == warnings, {"kaffinity": kept, "oracle": warnings}


#: The fields whose messages kaffinity words as kube-apiserver 1.37 does (field.Error's ErrorBody,
#: values as JSON: kubernetes#132314). Elsewhere 1.37's declarative validation rewords label
#: errors ("a valid label key ...", "no more than 63 bytes") and quantities print canonically
#: ("1k" for 1e3): only (field, type) is compared there (docs/validation.md).
WORDED = re.compile(
    r"^spec\.selector$|[sS]trategy\.|template\.metadata\.labels$|^spec(?:\.minAvailable|\.maxUnavailable)?$"
)


def _same_words(data: dict[str, Any], answer: dict[str, Any]) -> None:
    """Where kaffinity claims kube-apiserver's words, the same words."""
    kind = data["kind"]
    ours = {
        (p.field, p.message)
        for p in validate(data, TARGET)
        if p.rule == API_VALIDATION and WORDED.search(p.field)
    }
    theirs = {
        (e["field"], e["body"])
        for e in answer["errors"]
        if in_scope(kind, e["field"]) and WORDED.search(e["field"])
    }
    fields = {field for field, _ in theirs}
    assert {m for m in ours if m[0] in fields} == {m for m in theirs if m[0] in {f for f, _ in ours}}, (
        ours,
        theirs,
    )


#: What the API server says of an apps/v1 workload without a selector.
FRAGMENT = {("spec.selector", "FieldValueRequired"), ("spec.template.metadata.labels", "FieldValueInvalid")}


def _under(field: str, schema: set[str]) -> bool:
    """Whether the schema rule reports a problem at ``field``, above it, or inside it (a
    strategy's type outside the enumeration: the API server names the strategy, the schema
    rule its ``type``)."""
    return any(_within(field, s) or _within(s, field) for s in schema)


def _within(inner: str, outer: str) -> bool:
    return inner == outer or inner.startswith((outer + ".", outer + "["))


# -- generated objects ------------------------------------------------------------------------------

LABEL_KEYS = ["app", "tier", "example.com/team", "a/b/c", "-bad", "x" * 64, "", "kubernetes.io/hostname"]
LABEL_VALUES = ["web", "", "a b", "-x", "x" * 64, "v1.0", "yes"]
TOPOLOGY_KEYS = [
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "",
    "bad key",
    "failure-domain.beta.kubernetes.io/zone",
]
OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist"]
NODE_OPERATORS = [*OPERATORS, "Gt", "Lt"]
QUANTITIES = ["100m", "1", "2", "1Gi", "-1", "1.5.5", "0", "1e3", "500m"]
RESOURCE_NAMES = ["cpu", "memory", "nvidia.com/gpu", "hugepages-2Mi", "ephemeral-storage"]

label_maps = st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=2)
label_requirements = st.fixed_dictionaries(
    {"key": st.sampled_from(LABEL_KEYS), "operator": st.sampled_from(OPERATORS)},
    optional={"values": st.lists(st.sampled_from(LABEL_VALUES), max_size=2)},
)
selectors = st.fixed_dictionaries(
    {},
    optional={"matchLabels": label_maps, "matchExpressions": st.lists(label_requirements, max_size=2)},
)
node_requirements = st.fixed_dictionaries(
    {
        "key": st.sampled_from([*LABEL_KEYS[:5], "beta.kubernetes.io/arch"]),
        "operator": st.sampled_from(NODE_OPERATORS),
    },
    optional={"values": st.lists(st.sampled_from(["a", "1", "x y", "-1", ""]), max_size=2)},
)
node_terms = st.fixed_dictionaries(
    {}, optional={"matchExpressions": st.lists(node_requirements, max_size=2), "matchFields": st.just([])}
)
pod_terms = st.fixed_dictionaries(
    {"topologyKey": st.sampled_from(TOPOLOGY_KEYS)},
    optional={
        "labelSelector": selectors,
        "namespaces": st.lists(st.sampled_from(["default", "Bad_NS", ""]), max_size=2),
        "namespaceSelector": selectors,
        "matchLabelKeys": st.lists(st.sampled_from(["app", "tier", "pod-template-hash", "-x"]), max_size=2),
        "mismatchLabelKeys": st.lists(st.sampled_from(["app", "tier"]), max_size=2),
    },
)
weights = st.sampled_from([1, 50, 100, 0, 101, -1])
affinities = st.fixed_dictionaries(
    {},
    optional={
        "nodeAffinity": st.fixed_dictionaries(
            {},
            optional={
                "requiredDuringSchedulingIgnoredDuringExecution": st.fixed_dictionaries(
                    {"nodeSelectorTerms": st.lists(node_terms, max_size=2)}
                ),
                "preferredDuringSchedulingIgnoredDuringExecution": st.lists(
                    st.fixed_dictionaries({"weight": weights, "preference": node_terms}), max_size=1
                ),
            },
        ),
        "podAntiAffinity": st.fixed_dictionaries(
            {},
            optional={
                "requiredDuringSchedulingIgnoredDuringExecution": st.lists(pod_terms, max_size=2),
                "preferredDuringSchedulingIgnoredDuringExecution": st.lists(
                    st.fixed_dictionaries({"weight": weights, "podAffinityTerm": pod_terms}), max_size=1
                ),
            },
        ),
    },
)
tolerations = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "key": st.sampled_from(["", "dedicated", "bad key", "node.kubernetes.io/not-ready"]),
            "operator": st.sampled_from(["Equal", "Exists"]),
            "value": st.sampled_from(["", "gpu", "a b"]),
            "effect": st.sampled_from(["", "NoSchedule", "NoExecute"]),
            "tolerationSeconds": st.sampled_from([0, 30, -1]),
        },
    ),
    max_size=2,
)
spreads = st.lists(
    st.fixed_dictionaries(
        {
            "maxSkew": st.sampled_from([1, 2, 0, -1]),
            "topologyKey": st.sampled_from(TOPOLOGY_KEYS),
            "whenUnsatisfiable": st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]),
        },
        optional={
            "labelSelector": selectors,
            "minDomains": st.sampled_from([1, 3, 0, -1]),
            "matchLabelKeys": st.lists(st.sampled_from(["app", "tier", "pod-template-hash"]), max_size=2),
            "nodeAffinityPolicy": st.sampled_from(["Honor", "Ignore"]),
        },
    ),
    max_size=2,
)
resources = st.fixed_dictionaries(
    {},
    optional={
        "requests": st.dictionaries(st.sampled_from(RESOURCE_NAMES), st.sampled_from(QUANTITIES), max_size=2),
        "limits": st.dictionaries(st.sampled_from(RESOURCE_NAMES), st.sampled_from(QUANTITIES), max_size=2),
    },
)
pod_specs = st.fixed_dictionaries(
    {},
    optional={
        "nodeSelector": label_maps,
        "affinity": affinities,
        "tolerations": tolerations,
        "topologySpreadConstraints": spreads,
    },
)
int_or_percent = st.sampled_from([0, 1, -1, "25%", "0%", "150%", "1", "x", "100%"])


def _template(
    labels: dict[str, str], spec: dict[str, Any], needs: dict[str, Any] | None = None
) -> dict[str, Any]:
    container = {"name": "c", "image": "nginx", **({"resources": needs} if needs else {})}
    return {"metadata": {"labels": labels}, "spec": {"containers": [container], **spec}}


@st.composite
def workloads(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(
            ["Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob",
             "ReplicationController", "PodTemplate", "PodDisruptionBudget"]
        )
    )  # fmt: skip
    labels = {"app": "web", **draw(label_maps)} if draw(st.booleans()) else {"app": "web"}
    spec = draw(pod_specs)
    template = _template(labels, spec, draw(resources))
    metadata = {"name": "web"}
    selector = {"matchLabels": {"app": "web"}}
    if kind == "Pod":
        return {
            "apiVersion": "v1",
            "kind": kind,
            "metadata": {**metadata, "labels": labels},
            "spec": template["spec"],
        }
    if kind == "PodTemplate":
        return {"apiVersion": "v1", "kind": kind, "metadata": metadata, "template": template}
    if kind == "ReplicationController":
        return {
            "apiVersion": "v1",
            "kind": kind,
            "metadata": metadata,
            "spec": {"selector": {"app": "web"}, "template": template},
        }
    if kind == "PodDisruptionBudget":
        budget: dict[str, Any] = {"selector": draw(selectors) if draw(st.booleans()) else selector}
        for name in draw(
            st.lists(st.sampled_from(["minAvailable", "maxUnavailable"]), min_size=1, max_size=2, unique=True)
        ):
            budget[name] = draw(int_or_percent)
        return {"apiVersion": "policy/v1", "kind": kind, "metadata": metadata, "spec": budget}
    if kind in ("Job", "CronJob"):
        template["spec"]["restartPolicy"] = "Never"
        job = {"template": template}
        if kind == "Job":
            return {"apiVersion": "batch/v1", "kind": kind, "metadata": metadata, "spec": job}
        return {
            "apiVersion": "batch/v1",
            "kind": kind,
            "metadata": metadata,
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": job}},
        }
    body: dict[str, Any] = {"template": template}
    chosen = draw(st.sampled_from(["same", "same", "same", "drawn", "none"]))
    if chosen != "none":
        body["selector"] = selector if chosen == "same" else draw(selectors)
    if kind == "StatefulSet":
        body["serviceName"] = "web"
    if kind in ("DaemonSet", "Deployment") and draw(st.booleans()):
        rolling = {
            name: draw(int_or_percent)
            for name in draw(
                st.lists(st.sampled_from(["maxSurge", "maxUnavailable"]), max_size=2, unique=True)
            )
        }
        key = "updateStrategy" if kind == "DaemonSet" else "strategy"
        body[key] = {"type": "RollingUpdate", "rollingUpdate": rolling}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": metadata, "spec": body}


DAEMONSET_SURGE = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "web"},
    "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": _template({"app": "web"}, {}),
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}},
    },
}


def _pod(spec: dict[str, Any], needs: dict[str, Any] | None = None) -> dict[str, Any]:
    template = _template({"app": "web"}, spec, needs)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": template["spec"],
    }


def _apps(
    kind: str, selector: dict[str, Any], labels: dict[str, str], spec: dict[str, Any] | None = None
) -> dict[str, Any]:
    body = {"selector": selector, "template": _template(labels, spec or {})}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "web"}, "spec": body}


# The disagreements found, each fixed (tests/rules/test_api_validation.py has them without the oracle):
SURGE_ALONE = copy.deepcopy(DAEMONSET_SURGE)
SURGE_ALONE["spec"]["updateStrategy"]["rollingUpdate"] = {"maxSurge": 1}  # maxUnavailable defaults to 1
MISMATCH = _apps("StatefulSet", {"matchLabels": {"app": "web"}}, {"app": "a b"})  # and template labels' path
BAD_SELECTOR = _apps(
    "Deployment", {"matchLabels": {"a/b/c": "web"}}, {"app": "web"}, {"tolerations": [{"key": "-x"}]}
)
RC = {
    "apiVersion": "v1",
    "kind": "ReplicationController",
    "metadata": {"name": "web"},
    "spec": {"selector": {"app": "web"}, "template": _template({"app": ""}, {})},
}
OVER_LIMIT = _pod({}, {"requests": {"memory": "300Mi"}, "limits": {"memory": "250Mi"}})
GPU_WITHOUT_LIMIT = _apps("Deployment", {"matchLabels": {"app": "web"}}, {"app": "web"})
GPU_WITHOUT_LIMIT["spec"]["template"]["spec"]["containers"][0]["resources"] = {
    "requests": {"nvidia.com/gpu": "100m"}
}
HUGEPAGES = _pod({}, {"requests": {"hugepages-2Mi": "100m"}})
PREFERRED_VALUE = _pod(
    {
        "affinity": {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "preference": {
                            "matchExpressions": [{"key": "app", "operator": "In", "values": ["x y"]}]
                        },
                    }
                ]
            }
        }
    }
)


@SETTINGS
@given(data=workloads())
@example(data=DAEMONSET_SURGE)
@example(data=SURGE_ALONE)
@example(data=MISMATCH)
@example(data=BAD_SELECTOR)
@example(data=RC)
@example(data=OVER_LIMIT)
@example(data=GPU_WITHOUT_LIMIT)
@example(data=HUGEPAGES)
@example(data=PREFERRED_VALUE)
def test_generated_objects_validated_as_kube_apiserver_does(oracle: Oracle, data: dict[str, Any]) -> None:
    answer = oracle.ask({"op": "validate", "object": copy.deepcopy(data)})
    compare(data, answer)


# -- the real corpus ----------------------------------------------------------------------------------

KINDS = {
    ("v1", "Pod"), ("v1", "PodTemplate"), ("v1", "ReplicationController"), ("apps/v1", "Deployment"),
    ("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet"), ("apps/v1", "DaemonSet"), ("batch/v1", "Job"),
    ("batch/v1", "CronJob"), ("policy/v1", "PodDisruptionBudget"),
}  # fmt: skip


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


#: A document that may hold one of KINDS: only those are parsed (the corpus's large files are
#: mostly CustomResourceDefinitions, which took most of the time).
MAY_HOLD = re.compile(
    r"""kind["']?\s*:\s*["']?(?:Pod|PodTemplate|ReplicationController|Deployment|ReplicaSet|StatefulSet"""
    r"""|DaemonSet|Job|CronJob|PodDisruptionBudget|List)\b"""
)
#: Where kubectl splits a file (YAMLReader: a line starting with ---).
SEPARATOR = re.compile(r"^---.*$", re.M)


def real_objects() -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted(REAL.rglob("*")):
        if path.suffix not in (".yaml", ".yml", ".json") or not path.is_file():
            continue
        try:
            text = decode(path.read_bytes())
        except LoadError:
            continue
        for index, part in enumerate(SEPARATOR.split(text)):
            if not MAY_HOLD.search(part):
                continue
            for document in parse(str(path), part).documents:
                data = document.data
                if (data.get("apiVersion"), data.get("kind")) in KINDS:
                    yield f"{path.relative_to(REAL)}#{index}", _plain(data)


def test_real_corpus_validated_as_kube_apiserver_does(oracle: Oracle) -> None:
    if not REAL.is_dir():
        pytest.skip(f"{REAL} is not here")
    objects = list(real_objects())
    failures = []
    for start in range(0, len(objects), 200):  # one request per 200 objects
        batch = objects[start : start + 200]
        answer = oracle.ask({"op": "validate", "objects": [data for _, data in batch]})
        for (where, data), one in zip(batch, answer["answers"], strict=True):
            if not one.get("ok"):
                continue  # the oracle cannot decode it (a field of the wrong type): the schema rule's
            try:
                compare(data, one)
            except AssertionError as error:
                failures.append(f"{where}: {error}")
    assert objects
    assert not failures, "\n".join(failures[:20]) + f"\n({len(failures)} objects disagree)"
