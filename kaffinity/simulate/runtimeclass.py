"""The RuntimeClass admission plugin (``plugin/pkg/admission/runtimeclass/admission.go``), on a pod
being created: what it adds to the pod the scheduler then sees, or why it refuses it.

``Admit``: the class's ``overhead.podFixed`` becomes ``spec.overhead`` (a pod that states another
one is refused), its ``scheduling.nodeSelector`` is merged into the pod's ``nodeSelector`` (a key
the pod sets to another value is refused: ``conflict: runtimeClass.scheduling.nodeSelector[k] =
a; pod.spec.nodeSelector[k] = b``), its ``scheduling.tolerations`` are added to the pod's
(``tolerations.MergeTolerations``: what one already tolerates is kept once; for the filters a
union). ``Validate``: a pod with ``spec.overhead`` and no class overhead is refused. A class that
does not exist: ``pod rejected: RuntimeClass "x" not found``.

NodeResourcesFit then counts the overhead with the requests (``resource.PodRequests``: the
overhead is added after pod-level requests).

The plugin is modelled only when the cluster or the input declares RuntimeClasses (a capture of
them): a compact cluster says nothing of them, and a pod's class is then taken to exist, without
overhead or scheduling, and a pod's own ``spec.overhead`` is counted as it stands.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kaffinity.k8s.model.readers import as_map, as_str, dig
from kaffinity.k8s.model.terms import read_quantities

if TYPE_CHECKING:
    from decimal import Decimal

    from kaffinity.k8s.model import Toleration, Workload
    from kaffinity.simulate.storage import Storage

NOT_FOUND = 'pod rejected: RuntimeClass "{}" not found'
OVERHEAD_MISMATCH = "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
OVERHEAD_WITHOUT_CLASS = "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"


@dataclass(frozen=True, slots=True)
class Admitted:
    """What the plugin leaves of a pod's scheduling fields, or why it refuses it."""

    node_selector: tuple[tuple[str, str], ...]
    tolerations: tuple[Toleration, ...]
    #: the overhead to add to the requests (not yet in the template)
    overhead: tuple[tuple[str, Decimal], ...] = ()
    refused: str | None = None


def admit(
    workload: Workload,
    node_selector: tuple[tuple[str, str], ...],
    tolerations: tuple[Toleration, ...],
    storage: Storage | None,
    existing: bool = False,
) -> Admitted:
    """The pod of ``workload`` after the plugin (an ``existing`` pod was admitted already)."""
    same = Admitted(node_selector, tolerations)
    spec = dig(workload.doc.data, workload.pod.spec_path)
    if existing or storage is None or not storage.runtime_classes or not isinstance(spec, Mapping):
        return same  # admitted already, or nothing is known of the cluster's classes
    name = as_str(spec.get("runtimeClassName"))
    own = read_quantities(as_map(spec.get("overhead")))
    if not name:
        return Admitted(node_selector, tolerations, refused=OVERHEAD_WITHOUT_CLASS) if own else same
    found = storage.runtime_classes.get(name)
    if found is None:
        return Admitted(node_selector, tolerations, refused=NOT_FOUND.format(name))
    if found.overhead:
        if own and own != dict(found.overhead):
            return Admitted(node_selector, tolerations, refused=OVERHEAD_MISMATCH)
    elif own:
        return Admitted(node_selector, tolerations, refused=OVERHEAD_WITHOUT_CLASS)
    merged = dict(node_selector)
    for key, value in found.node_selector:
        if key in merged and merged[key] != value:
            message = (
                f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                f"pod.spec.nodeSelector[{key}] = {merged[key]}"
            )
            return Admitted(node_selector, tolerations, refused=message)
        merged[key] = value
    kept = tuple((t.key, t.operator, t.value, t.effect) for t in tolerations)
    added = tuple(t for t in found.tolerations if (t.key, t.operator, t.value, t.effect) not in kept)
    return Admitted(
        tuple(merged.items()),
        tolerations + added,
        () if own else found.overhead,
    )
