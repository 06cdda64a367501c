"""Node and pod (anti-)affinity as kube-apiserver validates them (``pkg/apis/core/validation``:
``validateAffinity``, ``validateNodeSelectorTerm``, ``validatePodAffinityTerm``,
``validateMatchLabelKeysAndMismatchLabelKeys``), and what ``dropDisabledFields`` drops."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kaffinity.k8s import gates as fg
from kaffinity.k8s.labels import dns1123_label, dns1123_subdomain, label_value
from kaffinity.load.source import DataPath, format_path
from kaffinity.validate.apiserver.fields import FieldValidator, _items, _strings, _text


class AffinityValidator(FieldValidator):
    """``validateAffinity``: node affinity, pod affinity and anti-affinity."""

    def node_affinity(self, affinity: Any, path: DataPath) -> None:
        if not isinstance(affinity, Mapping):
            return
        for name in (
            "requiredDuringSchedulingIgnoredDuringExecution",
            "requiredDuringSchedulingRequiredDuringExecution",
        ):
            if name.endswith("RequiredDuringExecution") and not self.target.proposals:
                continue  # a proposal field: the schema rule reports it
            selector = affinity.get(name)
            if isinstance(selector, Mapping):
                terms = selector.get("nodeSelectorTerms")
                here = (*path, name, "nodeSelectorTerms")
                if not isinstance(terms, list) or not terms:
                    self.required(here, "must have at least one node selector term")
                for i, term in _items(terms):
                    self.node_selector_term(term, (*here, i), required=True)
        for i, preferred in _items(affinity.get("preferredDuringSchedulingIgnoredDuringExecution")):
            here = (*path, "preferredDuringSchedulingIgnoredDuringExecution", i)
            self.weight(preferred.get("weight"), (*here, "weight"))
            preference = preferred.get("preference")
            if isinstance(preference, Mapping):
                self.node_selector_term(preference, (*here, "preference"), required=False)

    def node_values(self, values: Any, here: DataPath, required: bool) -> None:
        """Values of required terms are label values from 1.33 (kubernetes#128212); preferred
        terms' values that are not get a warning instead (pkg/api/node/util.go
        ``GetWarningsForNodeSelectorTerm`` with ``checkLabelValue``; found by the oracle, issue 35)."""
        if self.target.minor < 33:
            return
        for k, value in _strings(values):
            for detail in label_value(value):
                if required:
                    self.invalid((*here, "values", k), value, detail)
                else:
                    self.warn((*here, "values", k), f"{value} is invalid, {detail}")

    def node_selector_term(self, term: Mapping[str, Any], path: DataPath, required: bool) -> None:
        if not self.once(term, required):
            return
        for j, requirement in _items(term.get("matchExpressions")):
            here = (*path, "matchExpressions", j)
            operator, values = requirement.get("operator"), requirement.get("values")
            self.operator_values(operator, values, here, numeric=True)
            key = _text(requirement.get("key"))
            if key is not None:
                self.label_name(key, (*here, "key"))
                self.deprecated_label(key, (*here, "key"))
            self.node_values(values, here, required)
        for j, requirement in _items(term.get("matchFields")):
            here = (*path, "matchFields", j)
            operator, values = requirement.get("operator"), requirement.get("values")
            count = len(values) if isinstance(values, list) else 0
            if operator in ("In", "NotIn"):
                if count != 1:
                    self.required(
                        (*here, "values"),
                        "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                    )
            elif operator is None or operator in ("Exists", "DoesNotExist", "Gt", "Lt"):
                self.invalid((*here, "operator"), operator or "", "not a valid selector operator")
            key = _text(requirement.get("key"))
            if key is not None and key != "metadata.name":
                self.invalid((*here, "key"), key, "not a valid field selector key")
                continue  # the values are node names only for metadata.name
            for k, value in _strings(values):
                for detail in dns1123_subdomain(value):
                    self.invalid((*here, "values", k), value, detail)

    # -- pod affinity -----------------------------------------------------------------------

    def pod_affinity(self, affinity: Any, path: DataPath) -> None:
        if not isinstance(affinity, Mapping):
            return
        for i, term in _items(affinity.get("requiredDuringSchedulingIgnoredDuringExecution")):
            self.pod_affinity_term(term, (*path, "requiredDuringSchedulingIgnoredDuringExecution", i))
        for i, weighted in _items(affinity.get("preferredDuringSchedulingIgnoredDuringExecution")):
            here = (*path, "preferredDuringSchedulingIgnoredDuringExecution", i)
            self.weight(weighted.get("weight"), (*here, "weight"))
            inner = weighted.get("podAffinityTerm")
            self.pod_affinity_term(inner if isinstance(inner, Mapping) else {}, (*here, "podAffinityTerm"))

    def pod_affinity_term(self, term: Mapping[str, Any], path: DataPath) -> None:
        selector = term.get("labelSelector")
        match_keys, mismatch_keys = self.affinity_label_keys(term, path)
        merged = self.merged(selector, match_keys, mismatch_keys)
        self.label_selector(merged, (*path, "labelSelector"), pod_selector=True)
        self.label_selector(term.get("namespaceSelector"), (*path, "namespaceSelector"))
        for i, name in _strings(term.get("namespaces")):
            for detail in dns1123_label(name):
                # Upstream names the child "namespace" (singular), not the list item.
                self.invalid((*path, "namespaces", i), name, detail, at=format_path((*path, "namespace")))
        topology_key = _text(term.get("topologyKey"))
        if topology_key is not None:
            if not topology_key:
                self.required((*path, "topologyKey"), "can not be empty")
            self.label_name(topology_key, (*path, "topologyKey"))
        if selector is None:
            self.warn((*path, "labelSelector"), "a null labelSelector results in matching no pod")
        if match_keys or mismatch_keys:
            self.match_label_keys(path, match_keys, mismatch_keys, merged)

    def affinity_label_keys(self, term: Mapping[str, Any], path: DataPath) -> tuple[list[str], list[str]]:
        """The keys that reach validation: none when the gate drops them (reported as dropped)."""
        match_keys = [key for _, key in _strings(term.get("matchLabelKeys"))]
        mismatch_keys = [key for _, key in _strings(term.get("mismatchLabelKeys"))]
        if not match_keys and not mismatch_keys:
            return [], []
        state = self.target.gate(fg.MATCH_LABEL_KEYS_IN_POD_AFFINITY)
        if state.enabled:
            return match_keys, mismatch_keys
        if state.stage is not None:  # the field exists but is off; unknown before 1.29 (schema)
            lost = (
                "the term is not narrowed to pods with the same values of those labels (for example, "
                "pods of the old revision still count during a rolling update)"
            )
            for name, keys in (("matchLabelKeys", match_keys), ("mismatchLabelKeys", mismatch_keys)):
                if keys:
                    self.dropped((*path, name), state, lost)
        return [], []

    def match_label_keys(
        self, path: DataPath, match_keys: list[str], mismatch_keys: list[str], selector: Any
    ) -> None:
        """``validateMatchLabelKeysAndMismatchLabelKeys`` (1.29+), in upstream's order."""
        for name, keys in (("matchLabelKeys", match_keys), ("mismatchLabelKeys", mismatch_keys)):
            if not keys:
                continue
            if not isinstance(selector, Mapping):
                self.forbidden((*path, name), "must not be specified when labelSelector is not set")
                continue
            for i, key in enumerate(keys):
                self.label_name(key, (*path, name, i))
        if isinstance(selector, Mapping):
            self.keys_in_selector(path, match_keys, selector)
        mismatch = set(mismatch_keys)
        for i, key in enumerate(match_keys):
            if key in mismatch:
                self.invalid(
                    (*path, "matchLabelKeys", i), key, "exists in both matchLabelKeys and mismatchLabelKeys"
                )
