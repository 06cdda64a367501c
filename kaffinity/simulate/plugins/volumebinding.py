"""VolumeBinding (``pkg/scheduler/framework/plugins/volumebinding``: volume_binding.go, binder.go).

A pod's claims are what its volumes name (``persistentVolumeClaim.claimName``; a generic
``ephemeral`` volume's claim is ``<pod>-<volume>``, ``ephemeral.VolumeClaimName``), a
StatefulSet's pod also its ``volumeClaimTemplates``' claims, ``<template>-<statefulset>-<ordinal>``
(the StatefulSet controller's ``getPersistentVolumeClaimName``, which also points the pod's volume
of the template's name at that claim).

PreFilter (``podHasPVCs``, ``GetPodVolumeClaims``), UnschedulableAndUnresolvable for the whole
pod: a claim that does not exist (``persistentvolumeclaim "data" not found``), is Lost or being
deleted; a claim not fully bound (``spec.volumeName`` and the ``pv.kubernetes.io/bind-completed``
annotation, ``isPVCFullyBound``) whose class is not WaitForFirstConsumer (no class, a class that
does not exist, ``Immediate``) or that names its volume already: ``pod has unbound immediate
PersistentVolumeClaims``.

Filter (``FindPodVolumes``), its reasons in this order: a bound claim's PV whose
``nodeAffinity`` the node's labels do not match (``CheckNodeAffinity``: the node's labels only,
so ``matchFields`` match nothing) ``node(s) didn't match PersistentVolume's node affinity``; an
unbound WaitForFirstConsumer claim selected for another node, or with neither an available PV
of its class that fits on the node (``FindMatchingVolume`` over the PVs of the claim's class:
Available, its claimRef free or this claim's, big enough, the claim's access modes, the claim's
selector, node affinity) nor a provisioner allowed there (none or
``kubernetes.io/no-provisioner``; ``allowedTopologies`` not matching the node,
``MatchTopologySelectorTerms``) ``node(s) didn't find available
persistent volumes to bind``; a bound claim's PV that does not exist ``node(s) unavailable due
to one or more pvc(s) bound to non-existent pv(s)``.

Where the cluster does not say: a linted workload's claim that neither the cluster nor the input
declares is taken to exist and fit anywhere (created by something else), unless the cluster file
declares claims (a capture of them: then a claim it lacks does not exist); a new claim (a
StatefulSet's, or one of the input) whose class is Immediate is taken to be provisioned where the
pod can run. Storage capacity (CSIDriver ``storageCapacity``, CSIStorageCapacity; ``node(s) did
not have enough free storage``) and volume modes are not modelled.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kaffinity.k8s.model.readers import as_map, as_str, mapping_items
from kaffinity.k8s.model.terms import label_selector
from kaffinity.k8s.selectors import node_term_matches, selector_matches
from kaffinity.simulate.storage import (
    NO_PROVISIONER,
    PersistentVolume,
    PersistentVolumeClaim,
    Storage,
    read_claim,
)

if TYPE_CHECKING:
    from kaffinity.k8s.model import NodeSelectorTerm, Workload


class SimNode(Protocol):
    """What the filter reads of a node (``framework.types.SimNode``, which holds this module's
    :class:`PodClaims` in its pods' constraints: not imported, no import circle)."""

    name: str
    labels: dict[str, str]


REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
#: Every VolumeBinding reason is UnschedulableAndUnresolvable: preemption never helps (and
#: VolumeZone's, which is here too: the reasons of a volume pinning a pod).
REASONS = frozenset(
    (
        REASON_NODE_CONFLICT,
        REASON_BIND_CONFLICT,
        REASON_PV_NOT_EXIST,
        REASON_NOT_ENOUGH_SPACE,
        "node(s) had no available volume zone",
    )
)
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"


@dataclass(frozen=True, slots=True)
class PodClaims:
    """A pod's claims as VolumeBinding and VolumeZone see them (made once per pod template and
    replica): the claims its volumes name, in order, with the claim objects found."""

    #: (claim name, the claim or None when missing, from a persistentVolumeClaim volume)
    claims: tuple[tuple[str, PersistentVolumeClaim | None, bool], ...]
    storage: Storage
    #: a claim missing is missing (a pod of the cluster file); else it is taken to exist
    strict: bool

    # -- PreFilter -----------------------------------------------------------------------

    def prefilter(self) -> str | None:
        """VolumeBinding's PreFilter rejection, or None (``podHasPVCs``, ``GetPodVolumeClaims``)."""
        for name, claim, _ in self.claims:
            if claim is None:
                if self.strict:
                    return f'persistentvolumeclaim "{name}" not found'
                continue
            if claim.phase == "Lost":
                lost = claim.volume_name
                return f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume "{lost}"'
            if claim.deleting:
                return f'persistentvolumeclaim "{name}" is being deleted'
        for _, claim, _ in self.claims:
            if claim is None or bound(claim):
                continue
            if claim.volume_name or not self.delayed(claim):
                if claim.doc is None or claim.doc.file not in self.storage.cluster_files:
                    continue  # a claim the input creates: its provisioner binds it (assumed)
                return UNBOUND_IMMEDIATE
        return None

    def delayed(self, claim: PersistentVolumeClaim) -> bool:
        """``IsDelayBindingMode``: its class exists and is WaitForFirstConsumer."""
        found = self.storage.classes.get(self.storage.class_of(claim))
        return found is not None and found.delayed

    # -- Filter --------------------------------------------------------------------------

    def filter_node(self, node: SimNode) -> list[str]:
        """``FindPodVolumes``'s reasons for ``node`` (empty: the pod's volumes fit there)."""
        node_ok, pv_found = True, True
        for _, claim, _ in self.claims:
            if claim is None or not bound(claim):
                continue
            volume = self.storage.volumes.get(claim.volume_name)
            if volume is None:
                pv_found = False
                break  # checkBoundClaims returns at the first missing PV
            if not volume_fits(volume.terms, node.labels):
                node_ok = False
                break
        unbound_ok = self._unbound_fit(node)
        reasons = []
        if not node_ok:
            reasons.append(REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(REASON_BIND_CONFLICT)
        if not pv_found:
            reasons.append(REASON_PV_NOT_EXIST)
        return reasons

    def _unbound_fit(self, node: SimNode) -> bool:
        pending = [
            claim
            for _, claim, _ in self.claims
            if claim is not None and not bound(claim) and not claim.volume_name and self.delayed(claim)
        ]
        if not pending:
            return True
        if any(c.selected_node is not None and c.selected_node != node.name for c in pending):
            return False
        chosen: set[str] = set()
        to_provision = [c for c in pending if c.selected_node is not None]
        # findMatchingVolumes: the smallest claims first, each the smallest PV that fits.
        for claim in sorted((c for c in pending if c.selected_node is None), key=_size):
            volume = self.matching_volume(claim, node, chosen)
            if volume is None:
                to_provision.append(claim)
            else:
                chosen.add(volume.name)
        for claim in to_provision:  # checkVolumeProvisions
            found = self.storage.classes.get(self.storage.class_of(claim))
            if found is None or found.provisioner in ("", NO_PROVISIONER):
                return False
            if found.topologies and not any(
                node_term_matches(term, node.labels, "") for term in found.topologies
            ):
                return False
        return True

    def matching_volume(
        self, claim: PersistentVolumeClaim, node: SimNode, chosen: set[str]
    ) -> PersistentVolume | None:
        """``FindMatchingVolume`` on the scheduler's path (a node given, delayed binding)."""
        best: PersistentVolume | None = None
        want = claim.request or 0
        selector = _claim_selector(claim)
        wanted_class = self.storage.class_of(claim)
        for volume in self.storage.volumes.values():
            # Only the PVs of the claim's class are candidates (``unboundVolumesDelayBinding``:
            # ``pvCache.ListPVs(storageClassName)``), even one whose claimRef names this claim.
            if volume.name in chosen or volume.class_name != wanted_class:
                continue
            own = volume.claim == (claim.namespace, claim.name)
            if volume.claim is not None and not own:
                continue
            if (volume.capacity or 0) < want or volume.deleting:
                continue
            fits = volume_fits(volume.terms, node.labels)
            if own:
                return volume if fits else None
            if volume.phase != "Available":
                continue
            if selector is not None and not selector_matches(selector, dict(volume.labels)):
                continue
            if not fits:
                continue
            if not set(claim.access_modes) <= set(volume.access_modes):
                continue
            if best is None or (best.capacity or 0) > (volume.capacity or 0):
                best = volume
        return best


def bound(claim: PersistentVolumeClaim) -> bool:
    """``isPVCFullyBound``: it names its volume and the PV controller finished binding."""
    return bool(claim.volume_name) and claim.bind_completed


def volume_fits(terms: tuple[NodeSelectorTerm, ...] | None, labels: Mapping[str, str]) -> bool:
    """``CheckNodeAffinity``: no required terms, or one that the node's labels match."""
    if terms is None:
        return True
    return any(node_term_matches(term, labels, "") for term in terms)


def _size(claim: PersistentVolumeClaim) -> Any:
    return claim.request or 0


def _claim_selector(claim: PersistentVolumeClaim) -> Any:
    if claim.doc is None:
        return None
    return label_selector(as_map(as_map(claim.doc.data.get("spec")).get("selector")), ())


# --- a pod's claims ---------------------------------------------------------------------------


def pod_claims(workload: Workload, labels: Mapping[str, str], storage: Storage | None) -> PodClaims | None:
    """The claims of ``workload``'s pod with run-time ``labels`` (a StatefulSet's pod-name label
    names its claims); None when it mounts none or nothing is known of the cluster's storage."""
    if storage is None:
        return None
    from kaffinity.k8s.model.readers import dig

    spec = as_map(dig(workload.doc.data, workload.pod.spec_path))
    namespace = workload.ref.namespace or "default"
    strict = storage.cluster_claims or workload.doc.file in storage.cluster_files
    pod_name = labels.get(POD_NAME_LABEL) or workload.ref.name
    templates = _claim_templates(workload)
    claims: list[tuple[str, PersistentVolumeClaim | None, bool]] = []
    seen: set[str] = set()
    for _, volume in mapping_items(spec.get("volumes")):
        name = as_str(volume.get("name")) or ""
        source = as_map(volume.get("persistentVolumeClaim"))
        ephemeral = as_map(volume.get("ephemeral"))
        if name in templates and workload.controller == "StatefulSet":
            continue  # the controller points it at the template's claim (below)
        if source:
            claim_name = as_str(source.get("claimName")) or ""
            claims.append((claim_name, storage.claims.get((namespace, claim_name)), True))
        elif ephemeral:
            claim_name = f"{pod_name}-{name}"
            template = as_map(ephemeral.get("volumeClaimTemplate"))
            found = storage.claims.get((namespace, claim_name))
            claims.append((claim_name, found or _new_claim(storage, namespace, claim_name, template), False))
        seen.add(name)
    if workload.controller == "StatefulSet":
        for template_name, template in templates.items():
            claim_name = f"{template_name}-{pod_name}"
            found = storage.claims.get((namespace, claim_name))
            claims.append((claim_name, found or _new_claim(storage, namespace, claim_name, template), True))
    if not claims:
        return None
    return PodClaims(tuple(claims), storage, strict)


def _claim_templates(workload: Workload) -> dict[str, Mapping[str, Any]]:
    """A StatefulSet's ``volumeClaimTemplates`` by name (a Pod's ``spec`` is its pod spec: not read)."""
    if workload.ref.kind != "StatefulSet" or not isinstance(workload.doc.data, Mapping):
        return {}
    spec = as_map(workload.doc.data.get("spec"))
    found: dict[str, Mapping[str, Any]] = {}
    for _, template in mapping_items(spec.get("volumeClaimTemplates")):
        name = as_str(as_map(template.get("metadata")).get("name"))
        if name:
            found[name] = template
    return found


def _new_claim(
    storage: Storage, namespace: str, name: str, template: Mapping[str, Any]
) -> PersistentVolumeClaim:
    """The claim a controller creates from ``template`` (not bound yet), with the default class
    when it names none (the DefaultStorageClass admission plugin)."""
    claim = read_claim(namespace, name, template, None)
    default = storage.default_class
    if claim.class_name is None and default is not None:
        from dataclasses import replace

        claim = replace(claim, class_name=default.name)
    return claim
