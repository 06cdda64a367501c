"""The rules: :mod:`kaffinity.rules.base` (what a rule is, which rules a run selects, at which
severity), one module per rule, and this registry, an explicit list: add a rule by adding a line.

A rule module is a leaf: it imports what it shares with other rules from :mod:`kaffinity.explain`
and the stages below (:mod:`kaffinity.context`, the graph, the simulator, the model...), never
another rule module; nothing but this registry imports a rule module.
"""

from __future__ import annotations

from kaffinity.rules import (
    affinity_conflict,
    affinity_deadlock,
    affinity_no_match,
    all_namespaces_anti_affinity,
    anti_affinity_blocks_daemonset,
    anti_affinity_exceeds_domains,
    anti_affinity_no_match,
    api_validation,
    api_warning,
    chart_dependency,
    controller_label_unavailable,
    field_unavailable,
    gated_field_dropped,
    helm_template,
    match_label_key_missing,
    merged_selector_rejected,
    needs_preemption,
    needs_scale_up,
    no_eligible_node,
    parse_error,
    pdb_blocks_eviction,
    pdb_no_match,
    pdb_overlap,
    preferred_no_match,
    proposal_field,
    replicas_not_spread,
    revision_unscoped,
    rollout_deadlock,
    schema,
    spread_unsatisfiable,
    topology_key_absent,
    unschedulable,
    unused_suppression,
)
from kaffinity.rules.base import Rule

RULES: tuple[Rule, ...] = (
    parse_error.RULE,
    helm_template.RULE,
    chart_dependency.RULE,
    unused_suppression.RULE,
    schema.RULE,
    field_unavailable.RULE,
    proposal_field.RULE,
    api_validation.RULE,
    api_warning.RULE,
    gated_field_dropped.RULE,
    match_label_key_missing.RULE,
    controller_label_unavailable.RULE,
    merged_selector_rejected.RULE,
    revision_unscoped.RULE,
    affinity_no_match.RULE,
    affinity_deadlock.RULE,
    affinity_conflict.RULE,
    all_namespaces_anti_affinity.RULE,
    anti_affinity_blocks_daemonset.RULE,
    anti_affinity_no_match.RULE,
    pdb_no_match.RULE,
    pdb_overlap.RULE,
    replicas_not_spread.RULE,
    preferred_no_match.RULE,
    topology_key_absent.RULE,
    no_eligible_node.RULE,
    anti_affinity_exceeds_domains.RULE,
    spread_unsatisfiable.RULE,
    unschedulable.RULE,
    needs_preemption.RULE,
    needs_scale_up.RULE,
    rollout_deadlock.RULE,
    pdb_blocks_eviction.RULE,
)

BY_NAME: dict[str, Rule] = {rule.name: rule for rule in RULES}
CATEGORIES: frozenset[str] = frozenset(rule.category for rule in RULES)
