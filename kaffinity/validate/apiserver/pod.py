"""An object's scheduling fields validated (:func:`validate`): a PodDisruptionBudget's spec, or
the pod template of a workload (a bare Pod with ``matchLabelKeys`` merged first, as
``podStrategy.PrepareForCreate``): labels, node selector, affinity, tolerations, topology spread
and resource quantities."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kaffinity.expand.merge import is_existing
from kaffinity.k8s.model.kinds import pod_template_path
from kaffinity.k8s.model.readers import dig
from kaffinity.load.source import DataPath, format_path
from kaffinity.validate.apiserver.affinity import AffinityValidator
from kaffinity.validate.apiserver.apps import AppsValidator
from kaffinity.validate.apiserver.fields import (
    API_WARNING,
    DEPRECATED_NODE_LABELS,
    Problem,
    Target,
    _items,
    _map,
)
from kaffinity.validate.apiserver.policy import BudgetValidator
from kaffinity.validate.apiserver.resources import ResourceValidator
from kaffinity.validate.apiserver.spread import SpreadValidator
from kaffinity.validate.apiserver.tolerations import TolerationValidator

if TYPE_CHECKING:
    from kaffinity.k8s.model import WorkloadKind


def validate(
    data: Mapping[str, Any], target: Target, workload_kinds: Sequence[WorkloadKind] = ()
) -> list[Problem]:
    """Everything the API server would reject, warn about or drop in this object's scheduling
    fields; ``workload_kinds``: the configured custom workload kinds, whose pod templates are
    validated as the API server validates a pod template (the pods their controllers create
    go through it)."""
    kind = data.get("kind")
    if not isinstance(kind, str):
        return []
    # Only a Pod being created is merged; one read back from a cluster was merged at its creation.
    validator = PodValidator(
        target, is_pod=kind == "Pod" and data.get("apiVersion") == "v1" and not is_existing(data)
    )
    if kind == "PodDisruptionBudget":
        spec = data.get("spec")
        if isinstance(spec, Mapping):
            validator.budget_spec(spec, ("spec",))
        return validator.problems
    api_version = data.get("apiVersion")
    base = pod_template_path(kind, api_version if isinstance(api_version, str) else None, workload_kinds)
    if base is None:
        return []
    template = dig(data, base)
    if not isinstance(template, Mapping):
        return []  # a fragment (a patch, an assertion): nothing to create
    if not validator.apps(data):
        # The template is not validated, but a quantity that does not decode refuses the object
        # before validation runs.
        spec = template.get("spec")
        if isinstance(spec, Mapping):
            validator.quantities(spec, (*base, "spec"))
        return validator.problems
    metadata = template.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    validator.pod_labels = (
        {k: v for k, v in labels.items() if isinstance(v, str)} if isinstance(labels, Mapping) else {}
    )
    # ValidatePodTemplateSpec names a template's labels `<template>.labels` (no `metadata`);
    # a Pod's are its ObjectMeta's, `metadata.labels`
    validator.labels(
        labels, (*base, "metadata", "labels"), at=format_path((*base, "labels")) if base else None
    )
    spec = template.get("spec")
    if isinstance(spec, Mapping):
        validator.pod_spec(spec, (*base, "spec"))
    return validator.problems


class PodValidator(
    AffinityValidator, TolerationValidator, SpreadValidator, BudgetValidator, AppsValidator, ResourceValidator
):
    """Everything kube-apiserver validates of an object's scheduling fields."""

    def pod_spec(self, spec: Mapping[str, Any], path: DataPath) -> None:
        self.labels(spec.get("nodeSelector"), (*path, "nodeSelector"))
        self.node_selector_warnings(spec.get("nodeSelector"), (*path, "nodeSelector"))
        affinity = spec.get("affinity")
        if isinstance(affinity, Mapping):
            self.node_affinity(affinity.get("nodeAffinity"), (*path, "affinity", "nodeAffinity"))
            for group in ("podAffinity", "podAntiAffinity"):
                self.pod_affinity(affinity.get(group), (*path, "affinity", group))
        self.tolerations(spec.get("tolerations"), (*path, "tolerations"))
        self.spread_constraints(spec.get("topologySpreadConstraints"), (*path, "topologySpreadConstraints"))
        self.quantities(spec, path)
        # a Pod's spec is at `spec`; a template's deeper (only a Pod's requests default to limits)
        self.container_resources(spec, path, pod=path == ("spec",))

    def quantities(self, spec: Mapping[str, Any], path: DataPath) -> None:
        """Resource quantities kube-apiserver cannot decode: ``resource.Quantity.UnmarshalJSON``
        fails with ParseQuantity's error and the whole object is refused (``1EB``, ``.nan``)."""
        from kaffinity.k8s.quantity import quantity_error

        maps: list[tuple[Any, DataPath]] = [
            (spec.get("overhead"), (*path, "overhead")),
            *(
                (_map(spec.get("resources")).get(kind), (*path, "resources", kind))
                for kind in ("requests", "limits")
            ),
        ]
        for group in ("initContainers", "containers", "ephemeralContainers"):
            for i, container in _items(spec.get(group)):
                resources = _map(container.get("resources"))
                for kind in ("requests", "limits"):
                    maps.append((resources.get(kind), (*path, group, i, "resources", kind)))
        for i, volume in _items(spec.get("volumes")):
            empty_dir = _map(volume.get("emptyDir"))
            if "sizeLimit" in empty_dir:
                maps.append(({"sizeLimit": empty_dir["sizeLimit"]}, (*path, "volumes", i, "emptyDir")))
        for values, here in maps:
            if isinstance(values, Mapping):
                for name, value in values.items():
                    error = quantity_error(value)
                    if error is not None:
                        self.invalid((*here, name), value, error)

    def node_selector_warnings(self, selector: Any, path: DataPath) -> None:
        if isinstance(selector, Mapping):
            for key in selector:
                if key in DEPRECATED_NODE_LABELS:
                    where = f"{format_path(path)}[{key}]"
                    self._add((*path, key), f"{where}: {DEPRECATED_NODE_LABELS[key]}", rule=API_WARNING)
