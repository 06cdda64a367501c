"""Generate kaffinity's extended Kubernetes schemas, one per minor version, from upstream.

Source: the per-version OpenAPI-derived JSON Schemas bundled in the ``kubernetes-validate``
package (``kubernetes-json-schema/v1.NN.0-local-strict/_definitions.json``; they are converted
from the API server's published OpenAPI documents). Run it after upgrading that package:

    python scripts/generate_schemas.py            # rewrite schemas/kubernetes-1.NN.schema.json
    python scripts/generate_schemas.py --check    # exit 1 if a checked-in file differs

What a generated file holds, per Kubernetes minor version:

* the full upstream definitions (with their descriptions) of the scheduling parts of a pod spec
  (``affinity``, ``tolerations``, ``nodeSelector``, ``topologySpreadConstraints``) and of the
  workload fields kaffinity reads (replicas, selector, strategy / updateStrategy,
  podManagementPolicy, template labels, the PodDisruptionBudget spec);
* one entry point per workload kind (``#/$defs/kaffinity.Deployment`` ...) in which every other
  field is listed but left unchecked, so that an unknown field is still reported (strict field
  validation, kubectl's default since 1.27) while only the scheduling subtree is validated;
* a top-level ``allOf`` choosing the entry point by ``apiVersion`` and ``kind``, for editors.

Changes from upstream, each for a reason:

* ``required`` is dropped and every type accepts ``null``: the API server enforces neither
  (encoding/json leaves a null or missing field at its zero value); the hand-written
  validation reports what is missing, with the API server's own message and path.
* ``enum`` lists from the API field documentation are added where upstream OpenAPI has none.
* A field that a later version adds is kept as a marker, ``x-kaffinity-since``: kaffinity then
  says "not known before 1.NN" instead of a bare unknown field.
* Fields of proposals no release accepts are added, marked ``x-kaffinity-proposal``:
  ``nodeAffinity.requiredDuringSchedulingRequiredDuringExecution`` (KEP-4328, never shipped) and
  the ``Gt``/``Lt`` operators in pod affinity label selectors (2019 proposal, withdrawn), listed
  in ``x-kaffinity-proposal-values``.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

VERSIONS = tuple(f"1.{minor}" for minor in range(27, 38))
OUT = Path(__file__).resolve().parent.parent / "schemas"
SCHEMA_ID = "https://kaffinity.io/schemas/kubernetes-{version}.schema.json"

CORE, APPS, BATCH, POLICY, META = (
    "io.k8s.api.core.v1.",
    "io.k8s.api.apps.v1.",
    "io.k8s.api.batch.v1.",
    "io.k8s.api.policy.v1.",
    "io.k8s.apimachinery.pkg.apis.meta.v1.",
)

# What is validated in full, as a tree of property names below each kind. ``True`` marks a
# subtree validated with its upstream definition; a dict descends into a pruned copy.
POD_SPEC = {"affinity": True, "tolerations": True, "nodeSelector": True, "topologySpreadConstraints": True}
META_LABELS = {"labels": True}
TEMPLATE = {"metadata": META_LABELS, "spec": POD_SPEC}
JOB_SPEC = {"parallelism": True, "selector": True, "template": TEMPLATE}
KINDS: dict[str, tuple[str, str, dict[str, Any]]] = {
    # kind: (apiVersion, upstream definition, validated tree)
    "Pod": ("v1", CORE + "Pod", {"metadata": META_LABELS, "spec": POD_SPEC}),
    "PodTemplate": ("v1", CORE + "PodTemplate", {"metadata": META_LABELS, "template": TEMPLATE}),
    "ReplicationController": (
        "v1",
        CORE + "ReplicationController",
        {"metadata": META_LABELS, "spec": {"replicas": True, "selector": True, "template": TEMPLATE}},
    ),
    "Deployment": (
        "apps/v1",
        APPS + "Deployment",
        {
            "metadata": META_LABELS,
            "spec": {"replicas": True, "selector": True, "strategy": True, "template": TEMPLATE},
        },
    ),
    "ReplicaSet": (
        "apps/v1",
        APPS + "ReplicaSet",
        {"metadata": META_LABELS, "spec": {"replicas": True, "selector": True, "template": TEMPLATE}},
    ),
    "StatefulSet": (
        "apps/v1",
        APPS + "StatefulSet",
        {
            "metadata": META_LABELS,
            "spec": {
                "replicas": True,
                "selector": True,
                "updateStrategy": True,
                "podManagementPolicy": True,
                "template": TEMPLATE,
            },
        },
    ),
    "DaemonSet": (
        "apps/v1",
        APPS + "DaemonSet",
        {"metadata": META_LABELS, "spec": {"selector": True, "updateStrategy": True, "template": TEMPLATE}},
    ),
    "Job": (
        "batch/v1",
        BATCH + "Job",
        {"metadata": META_LABELS, "spec": JOB_SPEC},
    ),
    "CronJob": (
        "batch/v1",
        BATCH + "CronJob",
        {
            "metadata": META_LABELS,
            "spec": {"jobTemplate": {"spec": JOB_SPEC}},
        },
    ),
    "PodDisruptionBudget": (
        "policy/v1",
        POLICY + "PodDisruptionBudget",
        {"metadata": META_LABELS, "spec": True},
    ),
}

# Enumerations from the API field documentation (k8s.io/api types.go constants). JSON null is
# allowed throughout: the API server reads it as the zero value, and where "" is not allowed the
# hand-written validation reports the missing value (as it does for an absent field). An empty
# string is listed only where the API accepts it (a toleration's "" operator means Equal, its ""
# effect means all effects).
ENUMS: dict[tuple[str, str], tuple[str | None, ...]] = {
    (CORE + "TopologySpreadConstraint", "whenUnsatisfiable"): ("DoNotSchedule", "ScheduleAnyway", None),
    (CORE + "TopologySpreadConstraint", "nodeAffinityPolicy"): ("Honor", "Ignore", None),
    (CORE + "TopologySpreadConstraint", "nodeTaintsPolicy"): ("Honor", "Ignore", None),
    (CORE + "Toleration", "operator"): ("Exists", "Equal", "", None),
    (CORE + "Toleration", "effect"): ("NoSchedule", "PreferNoSchedule", "NoExecute", "", None),
    (CORE + "NodeSelectorRequirement", "operator"): (
        "In",
        "NotIn",
        "Exists",
        "DoesNotExist",
        "Gt",
        "Lt",
        None,
    ),
    (META + "LabelSelectorRequirement", "operator"): ("In", "NotIn", "Exists", "DoesNotExist", None),
    (APPS + "DeploymentStrategy", "type"): ("Recreate", "RollingUpdate", "", None),
    (APPS + "StatefulSetUpdateStrategy", "type"): ("RollingUpdate", "OnDelete", "", None),
    (APPS + "DaemonSetUpdateStrategy", "type"): ("RollingUpdate", "OnDelete", "", None),
    (APPS + "StatefulSetSpec", "podManagementPolicy"): ("OrderedReady", "Parallel", "", None),
    (POLICY + "PodDisruptionBudgetSpec", "unhealthyPodEvictionPolicy"): (
        "IfHealthyBudget",
        "AlwaysAllow",
        None,
    ),
}
# Tolerations with Lt/Gt (KEP-5471): known to the API from 1.35, behind an alpha gate that the
# hand-written validation checks.
TOLERATION_COMPARISON_SINCE = "1.35"

KEP_4328 = (
    "KEP-4328 (affinity-based eviction): proposed for alpha in 1.33, never merged; "
    "the field is still commented out in k8s.io/api"
)
GT_LT_PROPOSAL = (
    "the 2019 proposal 'Pod affinity/anti-affinity supports Gt and Lt operators', "
    "removed from kubernetes/enhancements as stale in 2021"
)
POD_SELECTOR = "kaffinity.PodAffinityLabelSelector"
POD_SELECTOR_REQUIREMENT = "kaffinity.PodAffinityLabelSelectorRequirement"


def source_dir() -> Path:
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or spec.origin is None:
        raise SystemExit("the kubernetes-validate package is needed: pip install kubernetes-validate")
    return Path(spec.origin).parent / "kubernetes-json-schema"


def upstream(version: str) -> dict[str, Any]:
    path = source_dir() / f"v{version}.0-local-strict" / "_definitions.json"
    defs: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["$defs"]
    return defs


def ref(name: str) -> str:
    return f"#/$defs/{name}"


def ref_name(schema: dict[str, Any]) -> str | None:
    target = schema.get("$ref")
    return target.removeprefix("#/$defs/") if isinstance(target, str) else None


def walk_refs(schema: Any) -> list[str]:
    found: list[str] = []
    if isinstance(schema, dict):
        if (name := ref_name(schema)) is not None:
            found.append(name)
        for value in schema.values():
            found += walk_refs(value)
    elif isinstance(schema, list):
        for value in schema:
            found += walk_refs(value)
    return found


def closure(defs: dict[str, Any], roots: list[str]) -> list[str]:
    seen: list[str] = []
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.append(name)
        todo += walk_refs(defs[name])
    return sorted(seen)


def loosen(schema: Any) -> Any:
    """Drop ``required`` and let every typed value be null, recursively."""
    if isinstance(schema, list):
        return [loosen(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    choices = schema.get("oneOf")
    if isinstance(choices, list) and all(set(choice) == {"type"} for choice in choices):
        # int-or-string: one type list, else a null would match every choice of the oneOf.
        types = [t for choice in choices for t in _types(choice["type"]) if t != "null"]
        schema = {**{k: v for k, v in schema.items() if k != "oneOf"}, "type": types}
    for key, value in schema.items():
        if key == "required" and isinstance(value, list):
            continue
        if key == "type":
            types = _types(value)
            out[key] = types if "null" in types else [*types, "null"]
        elif key in ("properties", "$defs", "patternProperties"):
            out[key] = {name: loosen(sub) for name, sub in value.items()}
        else:
            out[key] = loosen(value)
    return out


def _types(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def first_versions(all_defs: dict[str, dict[str, Any]]) -> dict[tuple[str, str], str]:
    """The first version in which each (definition, property) exists."""
    first: dict[tuple[str, str], str] = {}
    for version in VERSIONS:
        for name, schema in all_defs[version].items():
            for prop in schema.get("properties", {}):
                first.setdefault((name, prop), version)
    return first


def prune(
    defs: dict[str, Any], name: str, tree: dict[str, Any], out: dict[str, Any], roots: list[str]
) -> str:
    """A copy of ``defs[name]`` in which only ``tree``'s properties are checked; returns its name."""
    alias = "kaffinity." + name.rsplit(".", 1)[-1]
    source = defs[name]
    properties: dict[str, Any] = {}
    for prop, schema in source.get("properties", {}).items():
        keep = tree.get(prop)
        if keep is True:
            properties[prop] = schema
            roots += walk_refs(schema)
        elif isinstance(keep, dict):
            target = ref_name(schema)
            assert target is not None, f"{name}.{prop} is not a reference"
            properties[prop] = {**schema, "$ref": ref(prune(defs, target, keep, out, roots))}
        else:
            properties[prop] = {}  # listed, so not unknown; not checked by kaffinity
    pruned = {
        key: value
        for key, value in source.items()
        if key not in ("properties", "x-kubernetes-group-version-kind")
    }
    pruned["properties"] = properties
    pruned["additionalProperties"] = False
    pruned["x-kaffinity-upstream"] = name
    assert out.get(alias, pruned) == pruned, f"{alias} is pruned in two ways"
    out[alias] = pruned
    return alias


def extend(defs: dict[str, Any], version: str) -> None:
    """Enumerations and proposal fields (see the module docstring)."""
    for (name, prop), values in ENUMS.items():
        if name in defs and prop in defs[name].get("properties", {}):
            allowed = list(values)
            if name == CORE + "Toleration" and prop == "operator" and version >= TOLERATION_COMPARISON_SINCE:
                allowed[2:2] = ["Lt", "Gt"]
            defs[name]["properties"][prop]["enum"] = allowed
    node_affinity = defs[CORE + "NodeAffinity"]["properties"]
    node_affinity["requiredDuringSchedulingRequiredDuringExecution"] = {
        "$ref": ref(CORE + "NodeSelector"),
        "description": (
            "PROPOSAL ONLY, accepted by no Kubernetes release: like requiredDuringSchedulingIgnored"
            "DuringExecution, and a controller would evict the pod when its node stops matching."
        ),
        "x-kaffinity-proposal": KEP_4328,
    }
    # Pod affinity terms get their own selector definitions so that Gt/Lt can be offered there only.
    selector = copy.deepcopy(defs[META + "LabelSelector"])
    selector["properties"]["matchExpressions"]["items"] = {"$ref": ref(POD_SELECTOR_REQUIREMENT)}
    requirement = copy.deepcopy(defs[META + "LabelSelectorRequirement"])
    operator = requirement["properties"]["operator"]
    operator["enum"] = [*operator["enum"][:-1], "Gt", "Lt", None]
    operator["x-kaffinity-proposal-values"] = {"Gt": GT_LT_PROPOSAL, "Lt": GT_LT_PROPOSAL}
    defs[POD_SELECTOR], defs[POD_SELECTOR_REQUIREMENT] = selector, requirement
    defs[CORE + "PodAffinityTerm"]["properties"]["labelSelector"]["$ref"] = ref(POD_SELECTOR)


def mark_unavailable(
    defs: dict[str, Any],
    newest: dict[str, Any],
    first: dict[tuple[str, str], str],
) -> None:
    """Fields a later version adds become ``x-kaffinity-since`` markers (with their description)."""
    for name, schema in defs.items():
        upstream_name = schema.get("x-kaffinity-upstream", name)
        later = newest.get(upstream_name, {}).get("properties", {})
        properties = schema.get("properties")
        if properties is None:
            continue
        for prop, later_schema in later.items():
            if prop not in properties:
                since = first[(upstream_name, prop)]
                description = later_schema.get("description", "")
                properties[prop] = {
                    "description": f"Not available before Kubernetes {since}. {description}".strip(),
                    "x-kaffinity-since": since,
                }


def build(
    version: str, all_defs: dict[str, dict[str, Any]], first: dict[tuple[str, str], str]
) -> dict[str, Any]:
    defs = copy.deepcopy(all_defs[version])
    newest = all_defs[VERSIONS[-1]]
    entry: dict[str, Any] = {}
    roots: list[str] = []
    choices: list[dict[str, Any]] = []
    for kind, (api_version, name, tree) in KINDS.items():
        alias = prune(defs, name, tree, entry, roots)
        choices.append(
            {
                "if": {
                    "properties": {"apiVersion": {"const": api_version}, "kind": {"const": kind}},
                    "required": ["apiVersion", "kind"],
                },
                "then": {"$ref": ref(alias)},
            }
        )
    kept = {name: defs[name] for name in closure(defs, roots)}
    mark_unavailable(kept, newest, first)
    mark_unavailable(entry, newest, first)
    kept.update(entry)
    kept = loosen(kept)
    extend(kept, version)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID.format(version=version),
        "title": f"Kubernetes {version} scheduling fields, as kaffinity validates them",
        "description": (
            "Generated by scripts/generate_schemas.py from upstream OpenAPI definitions; do not edit. "
            "Only scheduling fields are checked: affinity, tolerations, nodeSelector, "
            "topologySpreadConstraints, and the workload fields kaffinity reads."
        ),
        "x-kaffinity-kube-version": version,
        "allOf": choices,
        "$defs": dict(sorted(kept.items())),
    }


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the checked-in files")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    all_defs = {version: upstream(version) for version in VERSIONS}
    first = first_versions(all_defs)
    stale = []
    for version in VERSIONS:
        path = args.out / f"kubernetes-{version}.schema.json"
        text = render(build(version, all_defs, first))
        if args.check:
            current = path.read_text(encoding="utf-8") if path.exists() else ""
            if current != text:
                diff = difflib.unified_diff(
                    current.splitlines(), text.splitlines(), str(path), "generated", n=1
                )
                stale.append("\n".join(list(diff)[:20]))
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print("schemas differ from the generator; run python scripts/generate_schemas.py", file=sys.stderr)
        print("\n".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
