"""What a rule reads: the :class:`Context` of one deployment unit, a view over the
:class:`RunState` that every unit of a lint run shares (built once by the engine).

Below the rules and everything they share (the graph, the placement, the explanations): they
import it, it imports none of them at module level. The engine (:mod:`kaffinity.engine`), which
runs the rules, sits above. Derived views are built on first use, by imports inside the
properties, so that a rule that needs none of them costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING

from kaffinity.config import Settings
from kaffinity.findings import Severity, Violation
from kaffinity.k8s.compact import Sources
from kaffinity.k8s.model import Inventory, Object, build_inventory
from kaffinity.k8s.model.objects import canonical_key, namespace_labels
from kaffinity.load.parse import SourceFile
from kaffinity.load.source import DataPath, Document, Span
from kaffinity.memo import Memo

if TYPE_CHECKING:
    from kaffinity.expand.merge import Expansions
    from kaffinity.graph.affinity import AffinityGraph
    from kaffinity.simulate.cluster import Cluster
    from kaffinity.simulate.place import PlacementRun


class RunState:
    """What the rules of one lint run share, built once by the engine and read by every
    :class:`Context` of the run (one per deployment unit: each a view of its unit's objects over
    this one state). A context made without one (a test, a library caller) has its own."""

    def __init__(
        self,
        running: Mapping[str, tuple[Severity | None, Severity]] | None = None,
        rendered: Mapping[int, tuple[str, ...]] | None = None,
        places: Mapping[int, Callable[[Document, DataPath], tuple[str, Span] | None]] | None = None,
    ) -> None:
        #: Every rule this run runs, by name: (the severity configured for it, rule over
        #: category, or None; its own), read by :mod:`kaffinity.explain.precedence`. Empty: no
        #: rule gives way to another.
        self.running: Mapping[str, tuple[Severity | None, Severity]] = running or {}
        #: The built-in rules' findings so far ({rule, severity, line, message}, before
        #: suppressions), by id() of their document, and the rules that have run: filled by the
        #: engine, read by the policies' facts (:mod:`kaffinity.policy.facts`).
        self.found: dict[int, list[dict[str, object]]] = {}
        self.found_rules: set[str] = set()
        #: The rendered objects (kustomize and Helm builds, kaffinity.repo.units), by id(), and
        #: where an overlay's patch spells a path of one (Layout.places): a fix edits the file
        #: that wrote the field (kaffinity.expand.fixes.plan_revision_fix).
        self.rendered: Mapping[int, tuple[str, ...]] = rendered or {}
        self.places: Mapping[int, Callable[[Document, DataPath], tuple[str, Span] | None]] = places or {}
        #: Values the stages above the rules derive once for the whole run, whichever unit's
        #: context asks first (the policies' defaulted objects): :mod:`kaffinity.memo`.
        self.memo = Memo()
        #: The documents (``id``) ``api-validation`` reported, and those it checked, as the engine
        #: records its findings (:meth:`kaffinity.engine.record.Recorder.take`): what
        #: :attr:`Context.refused` reads, so that no unit validates its objects a second time.
        self.refused: set[int] = set()
        self.validated: set[int] = set()


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
        *,
        run: RunState | None = None,
        expansions: Expansions | None = None,
    ) -> None:
        self.files = tuple(files)
        self.settings = settings
        #: The declared cluster (``--cluster``): nodes, namespaces and existing pods; None if none.
        self.cluster = cluster
        if documents is not None:
            # One deployment unit's objects (kaffinity.repo.units), not every document of the files.
            self.__dict__["documents"] = tuple(documents)
        #: The typed view of each document, shared by the contexts of one run's units.
        self.objects = objects
        if expansions is not None:
            # Another context's merged selectors, over the same typed objects (keyed by them).
            self.__dict__["expansions"] = expansions
        #: Work not done because it passed a limit (``limits:``), one line each, for the run.
        self.notices: list[str] = []
        #: What the rules share for the whole run, whichever unit's context reads it.
        self.run = run if run is not None else RunState()
        #: Values derived from this context (one unit's objects), built once: :mod:`kaffinity.memo`.
        self.memo = Memo()

    @cached_property
    def documents(self) -> tuple[Document, ...]:
        return tuple(doc for file in self.files for doc in file.documents)

    @cached_property
    def texts(self) -> Mapping[str, str]:
        """Each file's text by name (for fixes, which edit the text); a compact file's is read
        again from the file when asked for (:class:`kaffinity.k8s.compact.Sources`)."""
        return Sources(self.files)

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
        from kaffinity.expand.merge import Expansions

        return Expansions(self.settings.kube_version, self.settings.feature_gates)

    @cached_property
    def graph(self) -> AffinityGraph:
        """The affinity graph of every workload, existing pod group and disruption budget."""
        from kaffinity.graph.affinity import AffinityGraph

        return AffinityGraph(
            self.inventory, self.settings, self.expansions, self.namespace_labels, self.cluster
        )

    @cached_property
    def placement(self) -> PlacementRun | None:
        """Every linted pod placed on the declared cluster by the offline scheduler
        (``kaffinity.simulate.framework``); None without a cluster or with ``--no-simulate``."""
        if self.cluster is None or not self.settings.simulate:
            return None
        from kaffinity.simulate.place import TooManyPods, place_all

        gone = self.refused  # objects the API server refuses create no pods
        try:
            return place_all(
                [workload for workload in self.inventory.workloads if id(workload.doc) not in gone],
                self.cluster,
                version=self.settings.kube_version,
                gates=self.settings.feature_gates,
                namespaces=self.inventory.namespaces,
                classes=self.inventory.priority_classes,
                max_pods=self.settings.limits.pods,
                pdbs=self.inventory.pdbs,
                max_nodes=self.settings.limits.nodes,
                documents=self.inventory.documents,
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
    def refused(self) -> frozenset[int]:
        """The documents (``id``) the API server refuses outright, by ``api-validation``'s
        errors, when that rule runs (nothing gives way to a rule that does not run): never
        created, so without pods to place or terms that select
        (:func:`kaffinity.explain.precedence.refused`)."""
        run = self.run
        if "api-validation" not in run.running:
            return frozenset()
        if "validation" in self.__dict__:  # computed here already (a context of its own)
            return frozenset(id(violation.doc) for violation in self.validation.get("api-validation", ()))
        # What the rule found when the engine ran it (its stage comes before every rule that
        # asks), and only the objects it did not check validated here.
        found = {id(doc) for doc in self.documents if id(doc) in run.refused}
        rest = [doc for doc in self.documents if id(doc) not in run.validated]
        if rest:
            from kaffinity.validate.documents import validate_documents

            errors = validate_documents(rest, self.settings).get("api-validation", ())
            found.update(id(violation.doc) for violation in errors)
        return frozenset(found)

    @cached_property
    def validation(self) -> dict[str, list[Violation]]:
        """What the schemas and the API server's validation say of every object, by rule name."""
        from kaffinity.validate.documents import validate_documents

        return validate_documents(self.documents, self.settings)
