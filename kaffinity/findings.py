"""Findings: what a rule found, where, on which object. Immutable and sortable."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from kaffinity.k8s.model import ObjectRef
from kaffinity.load.source import DataPath, Document, Span

if TYPE_CHECKING:
    from collections.abc import Callable

    from kaffinity.load.edits import Edit


class Severity(str, Enum):
    """How bad a finding is; ordered error > warning > info."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return _RANK[self]

    def reaches(self, threshold: Severity) -> bool:
        return self.rank >= threshold.rank


_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}


@dataclass(frozen=True, slots=True)
class Location:
    """A place in a file: ``span`` is None when the whole file is meant (it could not be read)."""

    file: str
    span: Span | None
    path: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class Related:
    """Another place involved in a violation, named like the violation itself: a data path."""

    doc: Document
    path: DataPath
    message: str = ""


#: Related places one finding shows at most; its message names and counts the rest ("b1, b2, b3
#: and 997 more"). A thousand budgets selecting the same pods made each of a thousand findings
#: list the other 999: a 183 MB report.
MAX_RELATED = 10


@dataclass(frozen=True, slots=True)
class Violation:
    """What a rule's check yields: a data path on one object, the message, and optional extras.

    ``doc`` is the document the path is relative to; the engine turns the path into a line and
    column. ``related`` are other places worth showing (the other side of a conflict), also as
    data paths. ``fix`` is a hint for the user. ``field`` is the path to report when it is not
    the data path rendered (the API server names some errors by a path of its own).
    """

    doc: Document
    path: DataPath
    message: str
    related: tuple[Related, ...] = ()
    fix: str | None = None
    field: str | None = None
    edit: Edit | None = None
    #: This finding's severity when it differs from the rule's default (the configured one wins).
    severity: Severity | None = None
    #: The file ``edit`` applies to, when it is not the document's (a rendered object's term is
    #: written in an overlay's patch: kaffinity.expand.fixes.plan_revision_fix).
    edit_file: str | None = None
    #: Computes (``fix``, ``edit``, ``edit_file``) when the finding is reported, not before: a
    #: rule whose hint needs its fix planned (the file composed again) pays only for the
    #: findings a report shows (a pre-commit run reports the changed files only).
    plan: Callable[[], tuple[str, Edit | None, str | None]] | None = None


#: Why ``lint --changed`` reports a finding in a file the change did not touch (:class:`Cause`):
#: the finding's object has a term that selects the changed object's pods, before or after the
#: change (``selects``); a term of the changed object selects the finding's object
#: (``selected-by``); a PodDisruptionBudget is one and covers the other's pods (``budget``); a
#: HorizontalPodAutoscaler is one and scales the other (``autoscaler``); the changed object
#: changes where the pods of the finding's unit are placed on the declared cluster
#: (``placement``); the finding's unit is rendered from the changed file (``rendered-from``: a
#: patch, a values file, a kustomization, a chart's file, a release's valuesFrom); the finding
#: names a place in the changed file (``names``).
CAUSE_SELECTS, CAUSE_SELECTED_BY, CAUSE_BUDGET, CAUSE_AUTOSCALER = (
    "selects",
    "selected-by",
    "budget",
    "autoscaler",
)
CAUSE_PLACEMENT, CAUSE_RENDERED_FROM, CAUSE_NAMES = "placement", "rendered-from", "names"
CAUSES = (
    CAUSE_SELECTS,
    CAUSE_SELECTED_BY,
    CAUSE_BUDGET,
    CAUSE_AUTOSCALER,
    CAUSE_PLACEMENT,
    CAUSE_RENDERED_FROM,
    CAUSE_NAMES,
)
#: Causes one finding keeps at most (a label many objects select, changed once).
MAX_CAUSES = 5


@dataclass(frozen=True, slots=True)
class Cause:
    """Why a finding in a file that did not change is reported by ``lint --changed``: the
    changed ``file``, how the finding relates to it (``relation``, one of :data:`CAUSES`), the
    changed object when one is meant (before or after the change), and the unit rendered from
    the file (``rendered-from``)."""

    file: str
    relation: str
    object: ObjectRef | None = None
    unit: str = ""


@dataclass(frozen=True, slots=True)
class Finding:
    """One reported problem; reports list them in :meth:`sort_key` order."""

    file: str
    line: int | None
    column: int | None
    rule: str
    message: str
    severity: Severity = field(compare=False)
    category: str = field(compare=False)
    path: str = field(default="", compare=False)
    object: ObjectRef | None = field(default=None, compare=False)
    related: tuple[Location, ...] = field(default=(), compare=False)
    fix: str | None = field(default=None, compare=False)
    edit: Edit | None = field(default=None, compare=False, repr=False)
    #: The deployment units the finding was found in, when the input holds several
    #: (kaffinity.repo.units); empty for the rules that read one object at a time.
    units: tuple[str, ...] = field(default=(), compare=False)
    #: ``lint --changed``: why a finding in a file that did not change is reported (empty for a
    #: finding in a changed file, and without ``--changed``).
    because: tuple[Cause, ...] = field(default=(), compare=False)
    #: Where the finding is, as a fingerprint takes it (kaffinity.report.fingerprint): the data
    #: path with each list index that depends on the order of the list replaced by the item's
    #: identity, and the value there (:func:`anchor_of`). Empty for a finding on no document
    #: (a file that does not parse).
    anchor: str = field(default="", compare=False)
    #: The file ``edit`` applies to: the finding's own file when None (a rendered object's term
    #: written in an overlay's patch or a chart's values file). Last, so that the positional
    #: form of the cache (kaffinity.cache) stays as it is: rendered objects are never cached.
    edit_file: str | None = field(default=None, compare=False, repr=False)

    @property
    def object_label(self) -> str:
        """The object it is on, as people say it: ``Deployment shop/web``, ``Namespace prod``
        ("" when it is on no object: a file that does not parse)."""
        obj = self.object
        if obj is None or not obj.kind or obj.kind == "None":
            return ""
        scope = f"{obj.namespace}/" if obj.namespace else ""
        return f"{obj.kind} {scope}{obj.name}" if obj.name else obj.kind

    @property
    def unit_label(self) -> str:
        """Where the finding came from when the input holds several deployment units:
        ``unit overlays/prod``, ``units a, b and 3 more``; empty otherwise."""
        if not self.units:
            return ""
        if len(self.units) == 1:
            return f"unit {self.units[0]}"
        shown = ", ".join(self.units[:2])
        more = len(self.units) - 2
        return f"units {shown} and {more} more" if more > 0 else f"units {shown.replace(', ', ' and ')}"

    @property
    def span(self) -> Span | None:
        return None if self.line is None or self.column is None else Span(self.line, self.column)

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.file, self.line or 0, self.column or 0, self.rule, self.message)


#: One step of a path as :func:`kaffinity.load.source.format_path` writes it: ``[3]``, ``[a.b/c]``
#: (a map key that is not a plain name, as Go's field.Path writes it) or ``name`` / ``.name``.
_STEP = re.compile(r"\[([^\]]*)\]|\.?([^.\[]+)")

#: The keys that name an item of a list, by the list's field: the list-map keys of the Kubernetes
#: API (``+listType=map`` / ``+listMapKey``, ``patchMergeKey`` in k8s.io/api core/v1 types.go:
#: PodSpec.TopologySpreadConstraints by topologyKey and whenUnsatisfiable, Container.Ports by
#: containerPort and protocol, Container.VolumeMounts by mountPath, PodSpec.HostAliases by ip,
#: PodSpec.ReadinessGates by conditionType). Any other list whose items have a string ``name``
#: (containers, initContainers, volumes, env, imagePullSecrets, schedulingGates,
#: resourceClaims...: ``+listMapKey=name``) is keyed by it. The items of the other lists
#: (tolerations, affinity terms, nodeSelectorTerms, matchExpressions: ``+listType=atomic``) have
#: no identity but their place: their index is kept.
LIST_KEYS: dict[str, tuple[str, ...]] = {
    "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
    "ports": ("containerPort", "protocol"),
    "volumeMounts": ("mountPath",),
    "hostAliases": ("ip",),
    "readinessGates": ("conditionType",),
}


def parse_path(text: str) -> tuple[str | int, ...]:
    """A path as :func:`kaffinity.load.source.format_path` writes it, as data-path steps (an
    index in brackets is an int; a bracketed key a string)."""
    steps: list[str | int] = []
    for match in _STEP.finditer(text):
        bracket, name = match.group(1), match.group(2)
        if bracket is not None:
            steps.append(int(bracket) if bracket.isdigit() else bracket)
        elif name:
            steps.append(name)
    return tuple(steps)


def _item_key(field_name: str, items: list[Any], index: int) -> str | None:
    """``name=web`` for the item of a keyed list (:data:`LIST_KEYS`), None when it has no
    identity (its index is then kept). When two items share the key (an invalid list), the
    occurrence is added: ``name=web#2``."""
    item = items[index]
    if not isinstance(item, dict):
        return None
    keys = LIST_KEYS.get(field_name, ("name",))

    def key_of(entry: Any) -> tuple[str, ...] | None:
        if not isinstance(entry, dict):
            return None
        values = tuple(entry.get(key) for key in keys)
        if keys == ("name",) and not isinstance(values[0], str):
            return None
        if all(value is None for value in values):
            return None
        return tuple("" if value is None else str(value) for value in values)

    mine = key_of(item)
    if mine is None:
        return None
    text = ",".join(f"{key}={value}" for key, value in zip(keys, mine, strict=True))
    before = sum(1 for entry in items[:index] if key_of(entry) == mine)
    return f"{text}#{before + 1}" if before else text


#: The largest value (as canonical JSON) a fingerprint takes as the value that decides a finding:
#: a term, a selector, a field; past it (a whole pod spec) the finding's message is taken.
MAX_DECIDING = 1024


#: Fields whose value is a whole part of an object (a pod spec, a template, metadata): never
#: the value a finding is about, and what the single-object stage's compaction trims
#: (kaffinity.k8s.compact: pod spec fields, container fields, managedFields and the
#: last-applied annotation), so the same finding would see two values, read whole or streamed.
_WHOLE_PARTS = frozenset({"spec", "template", "jobTemplate", "metadata", "annotations"})
_CONTAINER_LISTS = frozenset({"containers", "initContainers", "ephemeralContainers"})


def _decides(path: DataPath) -> bool:
    """Whether the value at ``path`` can be what a finding is about (not a part trimmed)."""
    last = path[-1]
    if isinstance(last, str) and last in _WHOLE_PARTS:
        return False
    tail = path[-2:] if isinstance(last, int) else path[-1:]
    return not (isinstance(tail[0], str) and tail[0] in _CONTAINER_LISTS)


def anchor_of(data: Any, path: DataPath) -> str:
    """What a fingerprint takes of the place of a finding (:attr:`Finding.anchor`): its
    :func:`stable_path`, and, when the path holds a value no larger than :data:`MAX_DECIDING`
    (a field, a term, a selector: the value the finding is about), a tab and the value as
    canonical JSON (keys sorted: the same for block or flow style, any key order or
    indentation). The whole object (an empty path), a whole part of it (:data:`_WHOLE_PARTS`,
    a container) and larger values give the path alone: the fingerprint takes the message."""
    import json

    anchor = stable_path(data, path)
    if not path or not _decides(path):
        return anchor
    node: Any = data
    for step in path:
        found = (isinstance(step, int) and isinstance(node, list) and 0 <= step < len(node)) or (
            isinstance(step, str) and isinstance(node, dict) and step in node
        )
        if not found:
            return anchor
        node = node[step]
    try:
        value = json.dumps(node, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):  # keys that do not sort together (an int and a string)
        return anchor
    return anchor if len(value) > MAX_DECIDING else f"{anchor}\t{value}"


def stable_path(data: Any, path: str | DataPath) -> str:
    """``path`` (relative to ``data``, a document's object) with the index of each item of a
    keyed list replaced by the item's identity: ``spec.template.spec.containers[name=web]
    .resources``, so that reordering the containers or inserting one above leaves it alone
    (:data:`LIST_KEYS`). Where the path leaves ``data`` (a field the object does not have),
    the rest is kept as written."""
    out: list[str] = []
    node: Any = data
    parent = ""
    for step in parse_path(path) if isinstance(path, str) else path:
        if isinstance(step, int):
            key = _item_key(parent, node, step) if isinstance(node, list) and 0 <= step < len(node) else None
            out.append(f"[{key if key is not None else step}]")
            node = node[step] if isinstance(node, list) and 0 <= step < len(node) else None
        else:
            plain = step != "" and all(c.isalnum() or c in "_-" for c in step)
            out.append((f".{step}" if out else step) if plain else f"[{step}]")
            node = node.get(step) if isinstance(node, dict) else None
            parent = step
    return "".join(out)
