"""The matchLabelKeys / mismatchLabelKeys merge: the label selectors that pods really carry.

This module is the one place that computes merged selectors; the preview (``kaffinity expand``),
the expansion rules and every later analysis read them from here.

Upstream semantics (``pkg/registry/core/pod/strategy.go``; KEP-3633, KEP-3243, "Design Details"):

* kube-apiserver merges when a **Pod is created** (``podStrategy.PrepareForCreate`` in
  ``pkg/registry/core/pod/strategy.go``: ``mutatePodAffinity``, ``mutateTopologySpreadConstraints``),
  never on update and never in a pod template: a Deployment's template is stored as written, and
  each Pod its ReplicaSet creates is merged with that Pod's own labels. An object that already
  exists (``kubectl get pods -o yaml``) carries its merged selectors and is not merged again.
* For each key of ``matchLabelKeys`` that is a label of the pod, ``{key In [value]}`` is appended
  at the end of ``labelSelector.matchExpressions``, in list order; then ``{key NotIn [value]}``
  for each key of ``mismatchLabelKeys``. Keys the pod lacks are ignored silently. A term with a
  nil ``labelSelector`` is skipped (validation rejects it anyway). Nothing is deduplicated.
* Pod (anti-)affinity needs gate ``MatchLabelKeysInPodAffinity`` (1.29 alpha, 1.31 beta, 1.33 GA).
  Spread ``matchLabelKeys`` needs ``MatchLabelKeysInPodTopologySpread`` (beta since 1.27); with
  ``MatchLabelKeysInPodTopologySpreadSelectorMerge`` (beta, 1.34) kube-apiserver merges and
  stores; before, kube-scheduler's PodTopologySpread plugin applies the same requirements
  internally at every scheduling attempt (``filterTopologySpreadConstraints``) and the stored
  selector stays as written. The effective selector is the same; who merges differs.

Labels that controllers add at run time (``pod-template-hash`` and friends, :data:`CONTROLLER_LABELS`)
have values nobody can know before deploy (a hash of the template). kaffinity never invents one:
it uses a placeholder such as ``<pod-template-hash of this revision>``, which stands for "the value
of this revision" and compares equal only to itself. Analyses that need pods of different
workloads or revisions apart ask for qualified placeholders (:func:`pod_labels`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kaffinity.k8s import gates as fg
from kaffinity.k8s.labels import qualified_name
from kaffinity.k8s.model import (
    LabelSelector,
    PodAffinity,
    PodAffinityTerm,
    Requirement,
    TopologySpreadConstraint,
    Workload,
)
from kaffinity.k8s.model.readers import dig
from kaffinity.load.source import DataPath

POD_AFFINITY = "podAffinity"
POD_ANTI_AFFINITY = "podAntiAffinity"
TOPOLOGY_SPREAD_CONSTRAINTS = "topologySpreadConstraints"
APISERVER = "kube-apiserver"
SCHEDULER = "kube-scheduler"

# Why a key of matchLabelKeys / mismatchLabelKeys is not merged.
MISSING = "missing"  # not a label of the pod, and no controller adds it
UNAVAILABLE = "controller-label-unavailable"  # a controller label this workload's controller never sets
GATE_OFF = "gate-off"  # the field is dropped: its feature gate is off at the target version
NIL_SELECTOR = "nil-selector"  # labelSelector not set: the API server rejects the term
EXISTING = "existing-object"  # the object already exists: its selectors were merged when created
INVALID = "invalid"  # kube-apiserver rejects the key itself (api-validation reports it)


@dataclass(frozen=True, slots=True)
class ControllerLabel:
    """A label that a controller (or the API server on the controller's behalf) puts on pods."""

    key: str
    kinds: tuple[str, ...]  # workload kinds whose pods carry it
    varies: str  # "revision": one value per revision; "pod": one per pod; "object": one per Job
    setter: str  # who sets it (for messages and docs)
    since: str | None = None  # first minor version that sets it
    note: str = ""

    def placeholder(self, owner: str | None = None, revision: str = "this revision") -> str:
        """The stand-in for a value nobody knows before deploy; ``owner`` qualifies it so that
        the placeholders of two workloads never compare equal."""
        scope = {"revision": revision, "pod": "each pod", "object": "each Job"}[self.varies]
        if owner is not None:
            scope = f"{owner}, {scope}"
        return f"<{self.key} of {scope}>"


_JOB_KINDS = ("Job", "CronJob")
#: Labels set at run time; sources: ``pkg/controller/deployment/sync.go`` (pod-template-hash),
#: ``pkg/controller/history`` and the StatefulSet/DaemonSet controllers (controller-revision-hash,
#: pod-template-generation), ``pkg/controller/statefulset/stateful_set_utils.go`` (pod-name,
#: pod-index with gate PodIndexLabel, beta 1.28), ``pkg/registry/batch/job/strategy.go``
#: ``generateSelector`` (job-name, controller-uid; the ``batch.kubernetes.io/`` forms since 1.27;
#: not with ``manualSelector: true``), the Job controller (job-completion-index, Indexed Jobs).
CONTROLLER_LABELS: dict[str, ControllerLabel] = {
    label.key: label
    for label in (
        ControllerLabel("pod-template-hash", ("Deployment",), "revision", "the Deployment controller"),
        ControllerLabel(
            "controller-revision-hash", ("StatefulSet", "DaemonSet"), "revision", "the workload's controller"
        ),
        ControllerLabel(
            "pod-template-generation",
            ("DaemonSet",),
            "revision",
            "the DaemonSet controller",
            note="deprecated; prefer controller-revision-hash",
        ),
        ControllerLabel(
            "statefulset.kubernetes.io/pod-name", ("StatefulSet",), "pod", "the StatefulSet controller"
        ),
        ControllerLabel(
            "apps.kubernetes.io/pod-index",
            ("StatefulSet",),
            "pod",
            "the StatefulSet controller",
            since="1.28",
        ),
        ControllerLabel(
            "batch.kubernetes.io/job-name",
            _JOB_KINDS,
            "object",
            "kube-apiserver when the Job is created",
            "1.27",
        ),
        ControllerLabel("job-name", _JOB_KINDS, "object", "kube-apiserver when the Job is created"),
        ControllerLabel(
            "batch.kubernetes.io/controller-uid",
            _JOB_KINDS,
            "object",
            "kube-apiserver when the Job is created",
            "1.27",
        ),
        ControllerLabel("controller-uid", _JOB_KINDS, "object", "kube-apiserver when the Job is created"),
        ControllerLabel(
            "batch.kubernetes.io/job-completion-index",
            _JOB_KINDS,
            "pod",
            "the Job controller, for Indexed Jobs",
            since="1.28",
        ),
        # Custom workload kinds (kaffinity.k8s.model.CUSTOM_WORKLOADS lists who sets what, with
        # sources): argo-rollouts DefaultRolloutUniqueLabelKey; kruise CloneSetInstanceID.
        ControllerLabel(
            "rollouts-pod-template-hash", ("Rollout",), "revision", "the Argo Rollouts controller"
        ),
        ControllerLabel(
            "apps.kruise.io/cloneset-instance-id", ("CloneSet",), "pod", "the OpenKruise CloneSet controller"
        ),
    )
}
# What to use instead of a controller label that the workload's controller does not set.
_INSTEAD: dict[str, dict[str, str]] = {
    "pod-template-hash": {
        "StatefulSet": "controller-revision-hash",
        "DaemonSet": "controller-revision-hash",
        "Rollout": "rollouts-pod-template-hash",
    },
    "controller-revision-hash": {"Deployment": "pod-template-hash", "Rollout": "rollouts-pod-template-hash"},
    "rollouts-pod-template-hash": {"Deployment": "pod-template-hash"},
    "pod-template-generation": {
        "Deployment": "pod-template-hash",
        "StatefulSet": "controller-revision-hash",
    },
}


def is_existing(data: Mapping[str, Any]) -> bool:
    """An object read back from a cluster (it has a uid, resourceVersion or creationTimestamp)."""
    metadata = data.get("metadata")
    if not isinstance(metadata, Mapping):
        return False
    return any(metadata.get(key) for key in ("uid", "resourceVersion", "creationTimestamp"))


def _job_spec(workload: Workload) -> Mapping[str, Any]:
    if workload.custom is not None:
        path = workload.custom.template[:-1]  # the JobSpec that holds the template
    else:
        path = ("spec",) if workload.ref.kind == "Job" else ("spec", "jobTemplate", "spec")
    spec = dig(workload.doc.data, path)
    return spec if isinstance(spec, Mapping) else {}


def unavailable(label: ControllerLabel, workload: Workload, version: str) -> str | None:
    """Why ``workload``'s pods never carry ``label``; None when they do."""
    custom = workload.custom
    if custom is not None:
        # A custom kind's controller sets what its definition lists, whatever its kind's name.
        if label.key not in custom.controller_labels:
            return f"{label.key} is not set on the pods of a {custom.kind} ({custom.group})"
    elif workload.ref.kind not in label.kinds:
        owners = " and ".join(f"{k}s" for k in label.kinds)
        return f"{label.key} is set by {label.setter} on the pods of {owners} only"
    if label.since is not None and fg.minor(version) < fg.minor(label.since):
        return f"{label.key} is set from Kubernetes {label.since} on, not in {version}"
    if workload.controller in _JOB_KINDS:
        job = _job_spec(workload)
        if label.varies != "pod" and job.get("manualSelector") is True:
            return f"{label.key} is not added to a Job with manualSelector: true"
        if label.varies == "pod" and job.get("completionMode") != "Indexed":
            return f"{label.key} is set on the pods of Indexed Jobs only (completionMode: Indexed)"
    return None


def instead(key: str, kind: str) -> str | None:
    """The controller label that does for ``kind`` what ``key`` does for another kind."""
    return _INSTEAD.get(key, {}).get(kind)


def controller_labels(workload: Workload, version: str) -> tuple[ControllerLabel, ...]:
    """The run-time labels this workload's pods carry at ``version``."""
    return tuple(
        label for label in CONTROLLER_LABELS.values() if unavailable(label, workload, version) is None
    )


def pod_labels(
    workload: Workload,
    version: str,
    *,
    replica: int | None = None,
    revision: str = "this revision",
    qualified: bool = False,
    unknown: str | None = None,
) -> dict[str, str]:
    """The labels of the pods ``workload`` creates: the template's plus the controller's.

    Values nobody knows before deploy are placeholders; ``qualified`` makes them unique to this
    workload (for analyses comparing workloads); ``unknown`` replaces them by a valid label
    value (to validate a created pod). With ``replica``, per-pod labels that are known get their
    value (a StatefulSet's pod ``web-2``, index ``2``).
    """
    labels = dict(workload.pod.labels)
    kind = workload.controller
    owner = str(workload.ref) if qualified else None
    for label in controller_labels(workload, version):
        if kind in _JOB_KINDS and label.key in labels:
            continue  # generateSelector keeps a value the user wrote (validation then compares)
        labels[label.key] = _value(label, workload, replica, revision, owner, unknown)
    return labels


def _value(
    label: ControllerLabel,
    workload: Workload,
    replica: int | None,
    revision: str,
    owner: str | None,
    unknown: str | None,
) -> str:
    name = workload.ref.name
    if label.varies == "pod" and replica is not None:
        return f"{name}-{replica}" if label.key.endswith("pod-name") else str(replica)
    if label.varies == "object" and workload.ref.kind == "Job" and label.key.endswith("job-name") and name:
        return name
    return unknown if unknown is not None else label.placeholder(owner, revision)


def merge_keys(
    labels: Mapping[str, str], match_keys: Sequence[str], mismatch_keys: Sequence[str]
) -> list[tuple[str, str, str]]:
    """The ``(key, operator, value)`` requirements kube-apiserver appends, in its order."""
    appended = [(key, "In", labels[key]) for key in match_keys if key in labels]
    appended += [(key, "NotIn", labels[key]) for key in mismatch_keys if key in labels]
    return appended


@dataclass(frozen=True, slots=True)
class KeyUse:
    """One key of matchLabelKeys / mismatchLabelKeys and what the merge made of it."""

    key: str
    field: str  # matchLabelKeys | mismatchLabelKeys
    index: int
    operator: str  # In | NotIn
    value: str | None  # the merged value; None when the key is ignored
    ignored: str | None = (
        None  # why not merged: MISSING, UNAVAILABLE, GATE_OFF, NIL_SELECTOR, EXISTING, INVALID
    )
    reason: str = ""  # the why, in words
    controller: ControllerLabel | None = None  # a run-time label (set, or known but unavailable)

    @property
    def applied(self) -> bool:
        return self.value is not None


@dataclass(frozen=True, slots=True)
class TermExpansion:
    """A pod (anti-)affinity term or spread constraint with matchLabelKeys / mismatchLabelKeys."""

    kind: str  # podAffinity | podAntiAffinity | topologySpreadConstraints
    required: bool  # a required term, or a DoNotSchedule constraint
    path: DataPath
    selector: LabelSelector | None  # as written
    merged: LabelSelector | None  # what the scheduler evaluates
    keys: tuple[KeyUse, ...]
    merger: str | None  # APISERVER, SCHEDULER, or None when nothing is merged
    stored: bool  # the created pod stores the merged selector (kube-apiserver merged it)
    topology_key: str
    note: str = ""  # why the term is not merged at all, when it is not

    @property
    def applied(self) -> tuple[KeyUse, ...]:
        return tuple(use for use in self.keys if use.applied)

    @property
    def ignored(self) -> tuple[KeyUse, ...]:
        return tuple(use for use in self.keys if not use.applied)


@dataclass(frozen=True, slots=True)
class WorkloadExpansion:
    """Each of a workload's terms that names label keys, and the pod labels the merge read
    (empty when no term names any)."""

    workload: Workload
    labels: Mapping[str, str]
    terms: tuple[TermExpansion, ...]

    def selector(self, term: PodAffinityTerm | TopologySpreadConstraint) -> LabelSelector | None:
        """The selector the scheduler evaluates for ``term``: merged where a merge applies."""
        for expansion in self.terms:  # a handful at most
            if expansion.path == term.path:
                return expansion.merged
        return term.label_selector

    @property
    def applied(self) -> bool:
        return any(term.applied for term in self.terms)


def affinity_terms(workload: Workload) -> Iterator[tuple[str, bool, PodAffinityTerm]]:
    """Pod (anti-)affinity terms in kube-apiserver's visiting order (``mutatePodAffinity``)."""
    affinity = workload.pod.affinity
    if affinity is None:
        return
    groups: tuple[tuple[str, PodAffinity | None], ...] = (
        (POD_AFFINITY, affinity.pod_affinity),
        (POD_ANTI_AFFINITY, affinity.pod_anti_affinity),
    )
    for kind, group in groups:
        if group is None:
            continue
        for weighted in group.preferred:
            yield kind, False, weighted.term
        for term in group.required:
            yield kind, True, term


def expand(
    workload: Workload,
    version: str,
    gates: Mapping[str, bool] | None = None,
    *,
    qualified: bool = False,
    labels: Mapping[str, str] | None = None,
) -> WorkloadExpansion:
    """What kube-apiserver (or kube-scheduler) makes of ``workload``'s label keys at ``version``.

    ``labels`` overrides the pod's labels (default: :func:`pod_labels`).
    """
    gates = gates or {}
    if not any(_names_keys(workload)):
        return WorkloadExpansion(workload, {}, ())
    if labels is None:
        labels = pod_labels(workload, version, qualified=qualified)
    existing = workload.ref.kind == "Pod" and is_existing(workload.doc.data)
    affinity_gate = fg.gate_state(fg.MATCH_LABEL_KEYS_IN_POD_AFFINITY, version, gates)
    spread_gate = fg.gate_state(fg.MATCH_LABEL_KEYS_IN_SPREAD, version, gates)
    merge_gate = fg.gate_state(fg.SPREAD_SELECTOR_MERGE, version, gates)
    terms: list[TermExpansion] = []
    for kind, required, term in affinity_terms(workload):
        if not term.match_label_keys and not term.mismatch_label_keys:
            continue
        off = None if affinity_gate.enabled else affinity_gate.why(version)
        terms.append(
            _term(
                workload,
                version,
                labels,
                (kind, required, term.path, term.topology_key),
                term.label_selector,
                (term.match_label_keys, term.mismatch_label_keys),
                merger=APISERVER,
                stored=True,
                off=off,
                existing=existing,
            )
        )
    for constraint in workload.pod.topology_spread_constraints:
        if not constraint.match_label_keys:
            continue
        off = None if spread_gate.enabled else spread_gate.why(version)
        by_apiserver = merge_gate.enabled
        required = constraint.when_unsatisfiable == "DoNotSchedule"
        terms.append(
            _term(
                workload,
                version,
                labels,
                (TOPOLOGY_SPREAD_CONSTRAINTS, required, constraint.path, constraint.topology_key),
                constraint.label_selector,
                (constraint.match_label_keys, ()),
                merger=APISERVER if by_apiserver else SCHEDULER,
                stored=by_apiserver,
                off=off,
                existing=existing and by_apiserver,
            )
        )
    return WorkloadExpansion(workload, dict(labels), tuple(terms))


def _term(
    workload: Workload,
    version: str,
    labels: Mapping[str, str],
    where: tuple[str, bool, DataPath, str],
    selector: LabelSelector | None,
    keys: tuple[Sequence[str], Sequence[str]],
    *,
    merger: str,
    stored: bool,
    off: str | None,
    existing: bool,
) -> TermExpansion:
    kind, required, path, topology_key = where
    match_keys, mismatch_keys = keys
    if off is not None:
        skip: tuple[str, str] | None = (GATE_OFF, f"the field is dropped: {off}")
    elif existing:
        skip = (EXISTING, "the object exists already: its selectors were merged when it was created")
    elif selector is None:
        skip = (NIL_SELECTOR, "labelSelector is not set: kube-apiserver rejects the keys")
    else:
        skip = None
    # Keys validation rejects (validateMatchLabelKeysAndMismatchLabelKeys): the pod is refused.
    rejected = {
        key: "kube-apiserver rejects the key: " + "; ".join(qualified_name(key))
        for key in {*match_keys, *mismatch_keys}
        if qualified_name(key)
    }
    for key in set(match_keys) & set(mismatch_keys):
        rejected.setdefault(
            key, "kube-apiserver rejects the key: it is in both matchLabelKeys and mismatchLabelKeys"
        )
    uses = list(_key_uses(workload, version, labels, "matchLabelKeys", "In", match_keys, skip, rejected))
    uses += _key_uses(workload, version, labels, "mismatchLabelKeys", "NotIn", mismatch_keys, skip, rejected)
    applied = [use for use in uses if use.applied]
    merged = selector
    if selector is not None and applied:
        first = len(selector.match_expressions)
        base = (*selector.path, "matchExpressions")
        extra = tuple(
            Requirement(use.key, use.operator, (use.value or "",), (*base, first + i))
            for i, use in enumerate(applied)
        )
        merged = LabelSelector(selector.match_labels, selector.match_expressions + extra, selector.path)
    return TermExpansion(
        kind=kind,
        required=required,
        path=path,
        selector=selector,
        merged=merged,
        keys=tuple(uses),
        merger=merger if applied else None,
        stored=stored and bool(applied),
        topology_key=topology_key,
        note=skip[1] if skip is not None else "",
    )


def _key_uses(
    workload: Workload,
    version: str,
    labels: Mapping[str, str],
    field_name: str,
    operator: str,
    keys: Iterable[str],
    skip: tuple[str, str] | None,
    rejected: Mapping[str, str],
) -> Iterator[KeyUse]:
    for index, key in enumerate(keys):
        controller = CONTROLLER_LABELS.get(key)
        if skip is not None:
            yield KeyUse(key, field_name, index, operator, None, skip[0], skip[1], controller)
        elif key in rejected:
            yield KeyUse(key, field_name, index, operator, None, INVALID, rejected[key], controller)
        elif key in labels:
            written = any(k == key for k, _ in workload.pod.labels)
            yield KeyUse(
                key, field_name, index, operator, labels[key], controller=None if written else controller
            )
        elif controller is not None and (why := unavailable(controller, workload, version)) is not None:
            yield KeyUse(key, field_name, index, operator, None, UNAVAILABLE, why, controller)
        else:
            yield KeyUse(
                key, field_name, index, operator, None, MISSING, f"the pods have no label {key}", controller
            )


def _names_keys(workload: Workload) -> Iterator[bool]:
    for _, _, term in affinity_terms(workload):
        yield bool(term.match_label_keys or term.mismatch_label_keys)
    for constraint in workload.pod.topology_spread_constraints:
        yield bool(constraint.match_label_keys)


class Expansions:
    """Every workload's expansion at one target, computed on first use (one per lint run).

    Placeholders are qualified by workload, so that analyses comparing workloads never take
    two workloads' run-time labels for the same value.
    """

    def __init__(self, version: str, gates: Mapping[str, bool]) -> None:
        self.version = version
        self.gates = dict(gates)
        self._cache: dict[int, WorkloadExpansion] = {}

    def of(self, workload: Workload) -> WorkloadExpansion:
        found = self._cache.get(id(workload))
        if found is None:
            found = expand(workload, self.version, self.gates, qualified=True)
            self._cache[id(workload)] = found
        return found

    def selector(
        self, workload: Workload, term: PodAffinityTerm | TopologySpreadConstraint
    ) -> LabelSelector | None:
        """The selector the scheduler evaluates for one of ``workload``'s terms."""
        return self.of(workload).selector(term)
