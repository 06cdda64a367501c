"""A term meant for the workload's own pods: the typo that makes a selector miss them
(:func:`own_typo`), and the terms of a workload that select nothing (:func:`silent_terms`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from kaffinity.explain.precedence import gives_way
from kaffinity.explain.suggest import GENERIC_VALUES, hint, in_scope, requirement_text, written_selector
from kaffinity.explain.unknown import nobody, unknown_pods
from kaffinity.findings import Related, Violation
from kaffinity.graph.members import Member, Relation, selector_text
from kaffinity.k8s.model.build import object_ref
from kaffinity.k8s.selectors import (
    requirement_matches,
)

if TYPE_CHECKING:
    from kaffinity.context import Context


_TOKEN = re.compile(r"[-_./]+")


def _tokens(value: str) -> frozenset[str]:
    return frozenset(token for token in _TOKEN.split(value.lower()) if token)


def _services(context: Context, member: Member) -> list[str]:
    """The names of the Services in the input that select the member's pods (same namespace)."""
    found = []
    for doc in context.inventory.documents:
        data = doc.data
        if data.get("kind") != "Service" or data.get("apiVersion") != "v1":
            continue
        spec = data.get("spec")
        selector = spec.get("selector") if isinstance(spec, Mapping) else None
        if not isinstance(selector, Mapping) or not selector:
            continue
        ref = object_ref(doc, context.graph.default_namespace)
        namespace = ref.namespace or context.graph.default_namespace
        if namespace == member.namespace and all(
            member.labels.get(str(key)) == str(value) for key, value in selector.items()
        ):
            found.append(ref.name)
    return found


def _names_the_workload(value: str, own: str, names: Mapping[str, str]) -> str | None:
    """Why ``value`` (written where the pods carry ``own``) names the workload itself, or None:
    the name of the workload or of a Service that selects its pods (``zk-hs``, the ZooKeeper
    tutorial's headless Service), or the pods' own value with words added or dropped
    (``pulsar-zookeeper`` for ``pulsar``: the chart's release-component name). ``names``: each
    name and what it names."""
    if value.lower() in GENERIC_VALUES or len(value) < 2:
        return None
    if value in names:
        return f"{value} is the name of {names[value]}"
    written, carried = _tokens(value), _tokens(own)
    if written and carried and (carried <= written or written <= carried):
        return f"{value} is {own} with words {'added' if carried <= written else 'dropped'}"
    return None


def own_typo(context: Context, member: Member, relation: Relation) -> str:
    """The hint for a required anti-affinity term meant for the workload's own pods, with a wrong
    value; "" when the term does not look like one.

    The term matches no pod anywhere (the caller checks), its namespaces include the workload's
    own, every written requirement the own pods fail is an equality (``matchLabels``, ``In``) on a
    key they carry with another value, and each such value names the workload itself
    (:func:`_names_the_workload`). A term meant to repel another application deployed elsewhere
    (``app In [database]`` in ``app: web``) names something else, and stays quiet.
    """
    workload = member.workload
    written = written_selector(relation)
    if workload is None or written is None or written.is_empty:
        return ""
    graph = context.graph
    if in_scope(graph, relation, member) is not True:
        return ""
    labels = member.labels
    failing: list[tuple[str, tuple[str, ...], str]] = []
    for key, value in written.match_labels:
        if labels.get(key) != value:
            if key not in labels:
                return ""
            failing.append((f"{key}={value}", (value,), key))
    for requirement in written.match_expressions:
        if requirement_matches(requirement, labels):
            continue
        if requirement.operator != "In" or requirement.key not in labels:
            return ""
        failing.append((requirement_text(requirement), requirement.values, requirement.key))
    if not failing:
        return ""
    names = {name: f"Service {name}, which selects these pods" for name in _services(context, member)}
    names[workload.ref.name] = f"this {workload.ref.kind}"
    edits, reasons = [], []
    for text, values, key in failing:
        why = next((w for v in values if (w := _names_the_workload(v, labels[key], names))), None)
        if why is None:
            return ""
        edits.append(f"{key}={labels[key]} instead of {text}")
        reasons.append(why)
    return (
        f"did you mean {', '.join(edits)}? This workload's own pods carry "
        f"{', '.join(f'{key}={labels[key]}' for _, _, key in failing)} ({'; '.join(reasons)}), and no "
        "pod carries what the term selects, so it keeps nothing apart."
    )


def silent_terms(
    context: Context,
    *,
    required: bool,
    kinds: tuple[str, ...],
    describe: Callable[[Relation], tuple[str, str]],
    rule: str,
    own_values: bool = False,
) -> Iterator[Violation]:
    """Findings on terms of ``kinds`` that match no pod, not even their own, and look like a mistake.

    ``describe`` names the term ("preferred pod affinity (weight 5)") and what its silence means.
    ``own_values``: a term meant for the workload's own pods with a wrong value is such a mistake
    too (:func:`own_typo`). ``rule``: whose findings these are (a term without labelSelector is
    api-warning's, unless this rule is the more severe: :mod:`kaffinity.explain.precedence`). Shared by
    preferred-no-match and anti-affinity-no-match.
    """
    from kaffinity.explain.precedence import refused

    graph = context.graph
    gone = refused(context)  # objects the API server refuses: api-validation's finding, once
    for member in graph.workloads():
        workload = member.workload
        assert workload is not None
        if id(workload.doc) in gone:
            continue
        for relation in graph.terms(member.id, required=required):
            if relation.kind not in kinds or relation.reach:
                continue
            # A term without labelSelector matches no pod either: api-warning says so in the API
            # server's words ("a null labelSelector results in matching no pod",
            # pkg/api/pod/warnings.go); this finding gives way unless it is the more severe.
            if written_selector(relation) is None:
                if not gives_way(context, (rule, None), ("api-warning", None), tie_to_other=True):
                    what, consequence = describe(relation)
                    yield Violation(
                        relation.doc,
                        relation.path,
                        f"{what} has no labelSelector, and a null selector matches no pod; {consequence}",
                        fix="add a labelSelector naming the pods it means, or remove the term",
                    )
                continue
            if unknown_pods(context, relation) is not None:
                continue  # pods the input does not show (a fragment's, an operator's) might match
            suggestion, where = hint(graph, relation)
            if not suggestion and own_values:
                suggestion = own_typo(context, member, relation)
            if not suggestion and not context.complete:
                # Without a sign of a mistake, the pods it means may come from another repository
                # (a cache, a metrics agent): a finding about a correct manifest is still noise.
                continue
            what, consequence = describe(relation)
            message = (
                f"{what} matches no pod: {nobody(context)} in {relation.scope} has "
                f"{selector_text(relation.selector)}, not even this one; {consequence}"
            )
            fix = "point the selector at the labels the pods it means really carry, or remove the term"
            if suggestion:
                fix = f"{suggestion} Otherwise {fix}"
            related = (
                Related(workload.doc, (*workload.pod.metadata_path, "labels"), "this pod's labels"),
                *where,
            )
            yield Violation(
                relation.doc, (*relation.path, "labelSelector"), message, related=related, fix=fix
            )
