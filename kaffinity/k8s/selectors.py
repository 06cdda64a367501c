"""Label selector matching, as k8s.io/apimachinery ``labels.Selector`` and the scheduler's
``nodeaffinity`` helpers match.

* a nil selector (None) matches nothing; an empty one (``{}``) matches everything
  (``LabelSelectorAsSelector``);
* ``In``: the label is present with one of the values; ``NotIn``: absent, or none of the values;
  ``Exists`` / ``DoesNotExist``: present / absent;
* ``Gt`` / ``Lt`` (node selectors; in pod selectors only under the 2019 proposal, with
  ``proposals=True``): the label is present and, read as an integer, greater / less than the
  single value; a label or a value that is not an integer makes the requirement false
  (``labels/selector.go``, the scheduler swallows the parse error);
* any other operator (including ``Gt``/``Lt`` in a pod selector without the proposal) matches
  nothing: the API server rejects such a selector, and kaffinity's analyses must not guess.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kaffinity.k8s.model import LabelSelector, NodeSelectorTerm, PodAffinityTerm, Requirement

_GO_INT = re.compile(r"[+-]?[0-9]+")


def requirement_matches(requirement: Requirement, labels: Mapping[str, str], numeric: bool = True) -> bool:
    key, operator, values = requirement.key, requirement.operator, requirement.values
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator in ("Gt", "Lt") and numeric and len(values) == 1 and key in labels:
        have, want = _integer(labels[key]), _integer(values[0])
        if have is None or want is None:
            return False
        return have > want if operator == "Gt" else have < want
    return False


def selector_matches(
    selector: LabelSelector | None, labels: Mapping[str, str], proposals: bool = False
) -> bool:
    """A pod label selector; ``proposals``: honour Gt/Lt (the withdrawn 2019 proposal)."""
    if selector is None:
        return False
    if any(labels.get(key) != value for key, value in selector.match_labels):
        return False
    return all(requirement_matches(r, labels, numeric=proposals) for r in selector.match_expressions)


def node_term_matches(term: NodeSelectorTerm, labels: Mapping[str, str], node_name: str) -> bool:
    """One node selector term: an empty term matches no node, and neither does a term that does
    not parse (component-helpers ``nodeaffinity``: ``if t.parseErrs != nil { return false }``)."""
    if not term.match_expressions and not term.match_fields:
        return False
    parsed = _PARSED.get(id(term))
    if parsed is None or parsed[0] is not term:
        parsed = _PARSED[id(term)] = (term, _parses(term))
    if not parsed[1]:
        return False
    fields = {"metadata.name": node_name}
    return all(requirement_matches(r, labels) for r in term.match_expressions) and all(
        requirement_matches(r, fields, numeric=False) for r in term.match_fields
    )


#: id(term) -> (term, whether it parses): checked once per term (the term is kept so its id stays).
_PARSED: dict[int, tuple[NodeSelectorTerm, bool]] = {}


def _parses(term: NodeSelectorTerm) -> bool:
    """Whether ``nodeSelectorRequirementsAsSelector`` / ``...AsFieldSelector`` accept the term
    (``labels.NewRequirement``: a qualified key; In/NotIn with values, Exists/DoesNotExist
    without, Gt/Lt one integer; every value a label value. Fields: In/NotIn, one value)."""
    from kaffinity.k8s.labels import label_value, qualified_name

    for requirement in term.match_expressions:
        operator, values = requirement.operator, requirement.values
        if qualified_name(requirement.key):
            return False
        if operator in ("In", "NotIn"):
            if not values or any(label_value(value) for value in values):
                return False
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                return False
        elif operator in ("Gt", "Lt"):
            if len(values) != 1 or _integer(values[0]) is None:
                return False
        else:
            return False
    return all(r.operator in ("In", "NotIn") and len(r.values) == 1 for r in term.match_fields)


def _integer(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: an optional sign and decimal digits, nothing else."""
    if not _GO_INT.fullmatch(text):
        return None
    value = int(text, 10)
    return value if -(2**63) <= value < 2**63 else None


#: Set on every Namespace by kube-apiserver (NamespaceDefaultLabelName, GA in 1.22).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def namespace_in_scope(
    term: PodAffinityTerm, owner: str, namespace: str, namespace_labels: Mapping[str, str] | None
) -> bool | None:
    """Whether a pod (anti-)affinity term of a pod in ``owner`` reaches pods in ``namespace``.

    Upstream (``PodAffinityTerm`` API doc; the scheduler's ``GetNamespacesFromPodAffinityTerm``
    and ``namespaceSelector`` handling): the union of ``namespaces`` and the namespaces that
    ``namespaceSelector`` matches; the pod's own namespace only when both are empty / nil;
    ``namespaceSelector: {}`` is every namespace. ``namespace_labels`` are the labels of the
    Namespace object when known (None: unknown, and then only its automatic name label is);
    the answer is None when it depends on labels that are not known.
    """
    if not term.namespaces and term.namespace_selector is None:
        return namespace == owner
    if namespace in term.namespaces:
        return True
    if term.namespace_selector is None:
        return False
    selector = term.namespace_selector
    labels = {**(namespace_labels or {}), NAMESPACE_NAME_LABEL: namespace}
    if selector_matches(selector, labels):
        return True
    if namespace_labels is not None:
        return False
    # Unknown labels, but the name label is known: a requirement on it that fails rules it out.
    known = {NAMESPACE_NAME_LABEL: namespace}
    if any(key == NAMESPACE_NAME_LABEL and value != namespace for key, value in selector.match_labels):
        return False
    if any(
        r.key == NAMESPACE_NAME_LABEL and not requirement_matches(r, known)
        for r in selector.match_expressions
    ):
        return False
    return None
