"""Topology spread constraints as kube-apiserver validates them (``pkg/apis/core/validation``:
``validateTopologySpreadConstraints``, ``ValidateMatchLabelKeysInTopologySpread``), and the
gated fields ``dropDisabledFields`` drops (``minDomains``, the node inclusion policies,
``matchLabelKeys``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kaffinity.k8s import gates as fg
from kaffinity.load.source import DataPath, format_path
from kaffinity.validate.apiserver.fields import (
    FieldValidator,
    _integer,
    _items,
    _match_labels_keys,
    _quote,
    _strings,
    _text,
)


class SpreadValidator(FieldValidator):
    """``validateTopologySpreadConstraints``."""

    def spread_constraints(self, constraints: Any, path: DataPath) -> None:
        if not isinstance(constraints, list):
            return
        items = list(_items(constraints))
        for i, constraint in items:
            here = (*path, i)
            max_skew = _integer(constraint.get("maxSkew")) if constraint.get("maxSkew") is not None else 0
            if max_skew is not None and max_skew <= 0:
                self.invalid((*here, "maxSkew"), max_skew, "must be greater than zero")
            topology_key = _text(constraint.get("topologyKey"))
            if topology_key == "":
                self.required((*here, "topologyKey"), "can not be empty")
            elif topology_key is not None:
                self.deprecated_label(topology_key, (*here, "topologyKey"))
            action = _text(constraint.get("whenUnsatisfiable"))
            if action == "":  # absent or null (other values: the schema's enumeration)
                self._add(
                    (*here, "whenUnsatisfiable"),
                    'Unsupported value: "": supported values: "DoNotSchedule", "ScheduleAnyway"',
                )
            for _, later in items[i + 1 :]:
                if (
                    topology_key is not None
                    and action is not None
                    and (
                        _text(later.get("topologyKey")),
                        _text(later.get("whenUnsatisfiable")),
                    )
                    == (topology_key, action)
                ):
                    pair = "{" + f"{topology_key}, {action}" + "}"
                    self._add(
                        (*here, "topologyKey"),
                        f"Duplicate value: {_quote(pair)}",
                        at=format_path(here) + ".{topologyKey, whenUnsatisfiable}",
                    )
                    break
            self.min_domains(constraint, here, action)
            self.spread_gated_fields(constraint, here)
            selector = constraint.get("labelSelector")
            match_keys = self.spread_label_keys(constraint, here)
            self.label_selector(self.spread_merged(selector, match_keys), (*here, "labelSelector"))
            if selector is None:
                self.warn((*here, "labelSelector"), "a null labelSelector results in matching no pod")

    def min_domains(self, constraint: Mapping[str, Any], here: DataPath, action: str | None) -> None:
        raw = constraint.get("minDomains")
        min_domains = _integer(raw)
        if min_domains is None:
            return
        state = self.target.gate(fg.MIN_DOMAINS)
        if not state.enabled:
            self.dropped(
                (*here, "minDomains"),
                state,
                "the constraint spreads over the domains that exist, however few (pods are not held Pending "
                "to wait for more domains)",
            )
            return
        if min_domains <= 0:
            self.invalid((*here, "minDomains"), min_domains, "must be greater than zero")
        if action is not None and action != "DoNotSchedule":
            self.invalid(
                (*here, "minDomains"),
                min_domains,
                f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}",
            )

    def spread_gated_fields(self, constraint: Mapping[str, Any], here: DataPath) -> None:
        state = self.target.gate(fg.NODE_INCLUSION_POLICY)
        if state.enabled:
            return
        lost = {
            "nodeAffinityPolicy": (
                "skew is computed over all nodes, including those the pod's node affinity excludes"
            ),
            "nodeTaintsPolicy": "skew is computed as if taints did not exist",
        }
        for name, what in lost.items():
            if constraint.get(name) is not None:
                self.dropped((*here, name), state, what)

    def spread_label_keys(self, constraint: Mapping[str, Any], here: DataPath) -> list[str]:
        keys = [key for _, key in _strings(constraint.get("matchLabelKeys"))]
        if not keys:
            return []
        state = self.target.gate(fg.MATCH_LABEL_KEYS_IN_SPREAD)
        if not state.enabled:
            self.dropped(
                (*here, "matchLabelKeys"),
                state,
                "skew is counted over every pod the selector matches (for example, pods of the old revision "
                "during a rolling update)",
            )
            return []
        selector = constraint.get("labelSelector")
        if not isinstance(selector, Mapping):
            self.forbidden((*here, "matchLabelKeys"), "must not be specified when labelSelector is not set")
            if not self.merge_regime():  # the legacy check goes on to the keys' syntax
                for i, key in enumerate(keys):
                    self.label_name(key, (*here, "matchLabelKeys", i))
            return keys
        if self.merge_regime():
            for i, key in enumerate(keys):
                self.label_name(key, (*here, "matchLabelKeys", i))
            self.keys_in_selector(here, keys, self.spread_merged(selector, keys))
            return keys
        # The legacy regime (ValidateMatchLabelKeysInTopologySpread): any key of the selector.
        selector_keys = _match_labels_keys(selector)
        selector_keys |= {
            named
            for _, e in _items(selector.get("matchExpressions"))
            if isinstance(named := e.get("key"), str)
        }
        for i, key in enumerate(keys):
            self.label_name(key, (*here, "matchLabelKeys", i))
            if key in selector_keys:
                self.invalid(
                    (*here, "matchLabelKeys", i), key, "exists in both matchLabelKeys and labelSelector"
                )
        return keys

    def merge_regime(self) -> bool:
        return self.target.gate(fg.SPREAD_SELECTOR_MERGE).enabled

    def spread_merged(self, selector: Any, keys: list[str]) -> Any:
        if not keys or not self.merge_regime():
            return selector
        return self.merged(selector, keys, [])
