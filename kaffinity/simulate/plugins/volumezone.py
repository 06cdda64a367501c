"""VolumeZone (``pkg/scheduler/framework/plugins/volumezone/volume_zone.go``): the zone and region
labels of the PersistentVolumes a pod's claims are bound to.

PreFilter (``getPVbyPod``, over ``persistentVolumeClaim`` volumes only): a claim without a
``volumeName`` is skipped when its class is WaitForFirstConsumer, else refused (no class:
``PersistentVolumeClaim had no pv name and storageClass name``; a class that does not exist:
``storageclass.storage.k8s.io "x" not found``; else ``PersistentVolume had no name``); a
claim or PV that does not exist: ``persistentvolumeclaim "x" not found`` /
``persistentvolume "x" not found`` (all UnschedulableAndUnresolvable). VolumeBinding's PreFilter
runs first and refuses most of these itself; a claim bound to a PV that does not exist is the
one VolumeZone refuses first. A claim the input or a StatefulSet creates is not judged here (it
is bound where the pod goes, :mod:`~kaffinity.simulate.plugins.volumebinding`): only the
cluster file's claims are.

Filter: a node without any of the four zone and region labels (GA and beta) passes; else, for
each label of ``topology.kubernetes.io/zone``, ``/region`` and their ``failure-domain.beta``
forms a bound PV carries (its value a ``__``-separated set, ``LabelZonesToSet``), the node's
label of that key (or its GA form) must be one of the values: ``node(s) had no available volume
zone``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kaffinity.simulate.plugins.volumebinding import PodClaims

if TYPE_CHECKING:
    from kaffinity.simulate.framework.types import SimNode

REASON_CONFLICT = "node(s) had no available volume zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
#: ``topologyLabels``, in upstream's order
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
_GA = {BETA_ZONE: ZONE, BETA_REGION: REGION}


def topologies(claims: PodClaims) -> tuple[tuple[str, frozenset[str]], ...] | str:
    """The (label, zones) the pod's bound PVs demand, or PreFilter's refusal."""
    found: list[tuple[str, frozenset[str]]] = []
    storage = claims.storage
    for name, claim, is_pvc in claims.claims:
        if not is_pvc:
            continue  # generic ephemeral volumes: VolumeZone reads persistentVolumeClaim ones only
        if claim is None:
            if claims.strict:
                return f'persistentvolumeclaim "{name}" not found'
            continue
        if not claim.volume_name:
            if claim.doc is None or claim.doc.file not in storage.cluster_files:
                continue  # a claim the input or a controller creates: bound where the pod goes
            class_name = storage.class_of(claim)
            if not class_name:
                return "PersistentVolumeClaim had no pv name and storageClass name"
            found_class = storage.classes.get(class_name)
            if found_class is None:
                return f'storageclass.storage.k8s.io "{class_name}" not found'
            if found_class.delayed:
                continue  # to be bound where the pod goes
            return "PersistentVolume had no name"
        volume = storage.volumes.get(claim.volume_name)
        if volume is None:
            return f'persistentvolume "{claim.volume_name}" not found'
        labels = dict(volume.labels)
        for key in TOPOLOGY_LABELS:
            if key in labels:
                values = frozenset(v.strip() for v in labels[key].split("__") if v.strip())
                if values:
                    found.append((key, values))
    return tuple(found)


def filter_node(wanted: tuple[tuple[str, frozenset[str]], ...], node: SimNode) -> str | None:
    """Filter: the reason when ``node`` is outside a bound PV's zone or region."""
    if not wanted or not any(key in node.labels for key in TOPOLOGY_LABELS):
        return None
    for key, values in wanted:
        value = node.labels.get(key)
        if value is None:
            value = node.labels.get(_GA.get(key, key))
        if value is None or value not in values:
            return REASON_CONFLICT
    return None
