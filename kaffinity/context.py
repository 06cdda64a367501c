"""What a rule reads: the :class:`Context` of a lint run, and which rules the settings switch on.

Below the rules and everything they share (the graph, the placement, the explanations): they
import it, it imports none of them at module level. The engine (:mod:`kaffinity.engine`), which
runs the rules, sits above. Derived views are built on first use, by imports inside the
properties, so that a rule that needs none of them costs nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cached_property
from typing import TYPE_CHECKING

from kaffinity.config import Settings
from kaffinity.findings import Severity, Violation
from kaffinity.loader import SourceFile
from kaffinity.model import Inventory, Object, build_inventory, canonical_key, namespace_labels
from kaffinity.source import Document

if TYPE_CHECKING:
    from kaffinity.expand import Expansions
    from kaffinity.graph import AffinityGraph
    from kaffinity.place import PlacementRun
    from kaffinity.rules.base import Rule
    from kaffinity.topology import Cluster

_SPECIFICITY_ALL, _SPECIFICITY_CATEGORY, _SPECIFICITY_RULE = 0, 1, 2


class Context:
    """What a rule's check may read: every loaded file and object, and the settings.

    Derived views (the typed inventory, and in later stages the graph) are built on first use
    and shared by all rules.
    """

    def __init__(
        self,
        files: Sequence[SourceFile],
        settings: Settings,
        cluster: Cluster | None = None,
        documents: Sequence[Document] | None = None,
        objects: dict[int, Object | None] | None = None,
    ) -> None:
        self.files = tuple(files)
        self.settings = settings
        #: The declared cluster (``--cluster``): nodes, namespaces and existing pods; None if none.
        self.cluster = cluster
        if documents is not None:
            # One deployment unit's objects (kaffinity.units), not every document of the files.
            self.__dict__["documents"] = tuple(documents)
        #: The typed view of each document, shared by the contexts of one run's units.
        self.objects = objects
        #: Work not done because it passed a limit (``limits:``), one line each, for the run.
        self.notices: list[str] = []

    @cached_property
    def documents(self) -> tuple[Document, ...]:
        return tuple(doc for file in self.files for doc in file.documents)

    @cached_property
    def texts(self) -> dict[str, str]:
        """Each file's text by name (for fixes, which edit the text)."""
        return {file.name: file.text for file in self.files}

    @cached_property
    def inventory(self) -> Inventory:
        return build_inventory(
            self.documents, self.settings.namespace, self.settings.workload_kinds, self.objects
        )

    @cached_property
    def namespace_labels(self) -> dict[str, dict[str, str]]:
        """The labels of each Namespace object in the input, by name; of one declared twice, the
        first in canonical order (as the placement reads them), whatever the order of the files."""
        return namespace_labels(sorted(self.inventory.namespaces, key=canonical_key))

    @cached_property
    def expansions(self) -> Expansions:
        """The merged selectors of every workload (matchLabelKeys / mismatchLabelKeys)."""
        from kaffinity.expand import Expansions

        return Expansions(self.settings.kube_version, self.settings.feature_gates)

    @cached_property
    def graph(self) -> AffinityGraph:
        """The affinity graph of every workload, existing pod group and disruption budget."""
        from kaffinity.graph import AffinityGraph

        return AffinityGraph(self)

    @cached_property
    def placement(self) -> PlacementRun | None:
        """Every linted pod placed on the declared cluster by the offline scheduler
        (``kaffinity.simulate``); None without a cluster or with ``--no-simulate``."""
        if self.cluster is None or not self.settings.simulate:
            return None
        from kaffinity.place import TooManyPods, place_all

        try:
            return place_all(
                self.inventory.workloads,
                self.cluster,
                version=self.settings.kube_version,
                gates=self.settings.feature_gates,
                namespaces=self.inventory.namespaces,
                classes=self.inventory.priority_classes,
                max_pods=self.settings.limits.pods,
                pdbs=self.inventory.pdbs,
                max_nodes=self.settings.limits.nodes,
            )
        except TooManyPods as error:  # the rules that place pods say nothing; the others run
            self.notices.append(
                f"{error}; no pod was placed, and the rules that read the placement did not run"
            )
            return None

    @property
    def complete(self) -> bool:
        """Whether the input is declared complete: ``--closed``, or a cluster file lists its pods."""
        return self.settings.closed or (self.cluster is not None and self.cluster.has_pods)

    @cached_property
    def validation(self) -> dict[str, list[Violation]]:
        """What the schemas and the API server's validation say of every object, by rule name."""
        from kaffinity.validation import validate_documents

        return validate_documents(self.documents, self.settings)


def rule_enabled(rule: Rule, select: Iterable[str], ignore: Iterable[str]) -> bool:
    """The most specific mention wins (rule over category over ``all``); ties go to ignore."""
    return _specificity(rule, select) > _specificity(rule, ignore)


def _specificity(rule: Rule, names: Iterable[str]) -> int:
    best = -1
    for name in names:
        if name == rule.name:
            return _SPECIFICITY_RULE
        if name == rule.category:
            best = max(best, _SPECIFICITY_CATEGORY)
        elif name == "all":
            best = max(best, _SPECIFICITY_ALL)
    return best


def severity_of(rule: Rule, settings: Settings, default: Severity | None = None) -> Severity:
    """The configured severity (rule over category), else the finding's own, else the rule's."""
    configured = settings.severity
    return configured.get(rule.name) or configured.get(rule.category) or default or rule.severity
