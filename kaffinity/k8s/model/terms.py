"""A pod spec's scheduling fields read as typed terms -- node selector and node affinity, pod
(anti-)affinity, tolerations, topology spread constraints, label selectors -- each with its data
path; and what the scheduler counts of a pod: its host ports and its resource requests."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from kaffinity.k8s.model.objects import (
    Affinity,
    LabelSelector,
    NodeAffinity,
    NodeSelectorTerm,
    PodAffinity,
    PodAffinityTerm,
    PreferredSchedulingTerm,
    Requirement,
    Toleration,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from kaffinity.k8s.model.readers import as_int, as_labels, as_map, as_str, as_strings, mapping_items
from kaffinity.k8s.quantity import CONTEXT as QUANTITY_CONTEXT
from kaffinity.k8s.quantity import parse_quantity
from kaffinity.load.source import DataPath

#: HostPortInfo's wildcard address (pkg/scheduler/framework/types.go ``DefaultBindAllHostIP``).
ANY_HOST_IP = "0.0.0.0"


def host_ports(spec: Mapping[str, Any]) -> tuple[tuple[str, str, int], ...]:
    """The host ports a pod takes, as the NodePorts plugin reads them (``util.GetHostPorts``,
    pkg/scheduler/util: ``spec.containers`` and sidecar init containers), with the API defaults: protocol TCP,
    and with ``hostNetwork: true`` a container port without ``hostPort`` takes its
    ``containerPort`` on the host (core/v1 ``SetDefaults_Pod``). ``hostIP`` empty is
    ``0.0.0.0`` (``HostPortInfo.sanitize``)."""
    host_network = spec.get("hostNetwork") is True
    found: list[tuple[str, str, int]] = []
    for group in ("containers", "initContainers"):
        for _, container in mapping_items(spec.get(group)):
            if group == "initContainers" and container.get("restartPolicy") != "Always":
                continue  # GetHostPorts counts sidecars only: other init containers have exited
            for _, port in mapping_items(container.get("ports")):
                number = as_int(port.get("hostPort"))
                if not number and host_network:
                    number = as_int(port.get("containerPort"))
                if not number or number <= 0:
                    continue
                protocol = as_str(port.get("protocol")) or "TCP"
                found.append((protocol, as_str(port.get("hostIP")) or ANY_HOST_IP, number))
    return tuple(found)


def pod_requests(spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """A pod's effective requests, as the scheduler computes them.

    Source: k8s.io/component-helpers ``resource.PodRequests``: app containers plus restartable
    init containers (sidecars) add up; each other init container needs its own request plus the
    sidecars started before it; the pod needs the larger of the two, plus ``overhead``.
    Pod-level ``resources.requests`` win where set. A container's missing request defaults to
    its limit (core/v1 defaults).
    """
    pod_level = read_quantities(as_map(as_map(spec.get("resources")).get("requests")))
    total: dict[str, Decimal] = {}
    for _, container in mapping_items(spec.get("containers")):
        _add(total, _container_requests(container))
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for _, container in mapping_items(spec.get("initContainers")):
        requests = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add(sidecars, requests)
        else:
            for name, value in requests.items():
                need = QUANTITY_CONTEXT.add(value, sidecars.get(name, Decimal(0)))
                init_peak[name] = max(init_peak.get(name, Decimal(0)), need)
    _add(total, sidecars)
    for name, value in init_peak.items():
        total[name] = max(total.get(name, Decimal(0)), value)
    _add(total, read_quantities(as_map(spec.get("overhead"))))
    total.update(pod_level)
    return total


def _container_requests(container: Mapping[str, Any]) -> dict[str, Decimal]:
    resources = as_map(container.get("resources"))
    requests = read_quantities(as_map(resources.get("limits")))
    requests.update(read_quantities(as_map(resources.get("requests"))))
    return requests


def read_quantities(raw: Mapping[str, Any]) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    for name, value in raw.items():
        quantity = parse_quantity(value)
        if quantity is not None:
            out[name] = quantity
    return out


def _add(total: dict[str, Decimal], more: Mapping[str, Decimal]) -> None:
    for name, value in more.items():
        total[name] = QUANTITY_CONTEXT.add(total.get(name, Decimal(0)), value)


def read_affinity(raw: Mapping[str, Any], path: DataPath) -> Affinity:
    node = raw.get("nodeAffinity")
    pod = raw.get("podAffinity")
    anti = raw.get("podAntiAffinity")
    return Affinity(
        node_affinity=_node_affinity(node, (*path, "nodeAffinity")) if isinstance(node, Mapping) else None,
        pod_affinity=_pod_affinity(pod, (*path, "podAffinity")) if isinstance(pod, Mapping) else None,
        pod_anti_affinity=(
            _pod_affinity(anti, (*path, "podAntiAffinity")) if isinstance(anti, Mapping) else None
        ),
        path=path,
    )


def _node_selector(raw: Mapping[str, Any], name: str, path: DataPath) -> tuple[NodeSelectorTerm, ...] | None:
    selector = raw.get(name)
    if not isinstance(selector, Mapping):
        return None
    terms_path = (*path, name, "nodeSelectorTerms")
    return tuple(
        _node_selector_term(term, (*terms_path, i))
        for i, term in mapping_items(selector.get("nodeSelectorTerms"))
    )


def _node_affinity(raw: Mapping[str, Any], path: DataPath) -> NodeAffinity:
    required = _node_selector(raw, "requiredDuringSchedulingIgnoredDuringExecution", path)
    during_execution = _node_selector(raw, "requiredDuringSchedulingRequiredDuringExecution", path)
    preferred_path = (*path, "preferredDuringSchedulingIgnoredDuringExecution")
    preferred = tuple(
        PreferredSchedulingTerm(
            as_int(item.get("weight")),
            _node_selector_term(as_map(item.get("preference")), (*preferred_path, i, "preference")),
            (*preferred_path, i),
        )
        for i, item in mapping_items(raw.get("preferredDuringSchedulingIgnoredDuringExecution"))
    )
    return NodeAffinity(required, preferred, path, during_execution)


def _node_selector_term(raw: Mapping[str, Any], path: DataPath) -> NodeSelectorTerm:
    return NodeSelectorTerm(
        _requirements(raw.get("matchExpressions"), (*path, "matchExpressions")),
        _requirements(raw.get("matchFields"), (*path, "matchFields")),
        path,
    )


def _pod_affinity(raw: Mapping[str, Any], path: DataPath) -> PodAffinity:
    required_path = (*path, "requiredDuringSchedulingIgnoredDuringExecution")
    preferred_path = (*path, "preferredDuringSchedulingIgnoredDuringExecution")
    return PodAffinity(
        required=tuple(
            _pod_affinity_term(term, (*required_path, i))
            for i, term in mapping_items(raw.get("requiredDuringSchedulingIgnoredDuringExecution"))
        ),
        preferred=tuple(
            WeightedPodAffinityTerm(
                as_int(item.get("weight")),
                _pod_affinity_term(
                    as_map(item.get("podAffinityTerm")), (*preferred_path, i, "podAffinityTerm")
                ),
                (*preferred_path, i),
            )
            for i, item in mapping_items(raw.get("preferredDuringSchedulingIgnoredDuringExecution"))
        ),
        path=path,
    )


def _pod_affinity_term(raw: Mapping[str, Any], path: DataPath) -> PodAffinityTerm:
    return PodAffinityTerm(
        label_selector=label_selector(raw.get("labelSelector"), (*path, "labelSelector")),
        namespaces=as_strings(raw.get("namespaces")),
        namespace_selector=label_selector(raw.get("namespaceSelector"), (*path, "namespaceSelector")),
        topology_key=as_str(raw.get("topologyKey")) or "",
        match_label_keys=as_strings(raw.get("matchLabelKeys")),
        mismatch_label_keys=as_strings(raw.get("mismatchLabelKeys")),
        path=path,
    )


def read_toleration(raw: Mapping[str, Any], path: DataPath) -> Toleration:
    return Toleration(
        key=as_str(raw.get("key")) or "",
        operator=as_str(raw.get("operator")) or "Equal",
        value=as_str(raw.get("value")) or "",
        effect=as_str(raw.get("effect")) or "",
        path=path,
    )


def read_spread(raw: Mapping[str, Any], path: DataPath) -> TopologySpreadConstraint:
    return TopologySpreadConstraint(
        max_skew=as_int(raw.get("maxSkew")),
        topology_key=as_str(raw.get("topologyKey")) or "",
        when_unsatisfiable=as_str(raw.get("whenUnsatisfiable")) or "",
        label_selector=label_selector(raw.get("labelSelector"), (*path, "labelSelector")),
        min_domains=as_int(raw.get("minDomains")),
        node_affinity_policy=as_str(raw.get("nodeAffinityPolicy")),
        node_taints_policy=as_str(raw.get("nodeTaintsPolicy")),
        match_label_keys=as_strings(raw.get("matchLabelKeys")),
        path=path,
    )


def label_selector(raw: Any, path: DataPath) -> LabelSelector | None:
    """A metav1 LabelSelector read from ``raw`` (None when it is not a mapping: nil)."""
    if not isinstance(raw, Mapping):
        return None
    return LabelSelector(
        as_labels(raw.get("matchLabels")),
        _requirements(raw.get("matchExpressions"), (*path, "matchExpressions")),
        path,
    )


def _requirements(raw: Any, path: DataPath) -> tuple[Requirement, ...]:
    return tuple(
        Requirement(
            as_str(item.get("key")) or "",
            as_str(item.get("operator")) or "",
            as_strings(item.get("values")),
            (*path, i),
        )
        for i, item in mapping_items(raw)
    )
