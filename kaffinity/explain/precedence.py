"""Which of two findings about the same pods is kept: the one at the higher severity.

Some rules describe the same pods from two sides: ``affinity-no-match`` finds a required pod
affinity that nothing satisfies, ``unschedulable`` finds the pods it leaves Pending; a
``DoNotSchedule`` spread constraint that lists ``matchLabelKeys: [pod-template-hash]`` where the
gate drops the field is ``gated-field-dropped``'s finding and ``revision-unscoped``'s. Reporting
both says the same thing twice, so one rule gives way to the other -- but only to a finding that
is at least as severe, so that a warning never hides the error it overlaps with. What counts is
the severity each finding is reported at (the configured one, else the finding's own, else the
rule's: :func:`kaffinity.rules.base.severity_of`), and whether the other rule runs at all: with
``--select`` or ``--ignore`` leaving it out, nothing gives way to it.

The pairs (each rule's module says which side it is on):

- ``unschedulable`` / ``affinity-no-match``: Pending pods whose required pod affinity matches no
  pod; a tie goes to ``affinity-no-match`` (it names the namespaces and near misses).
- ``unschedulable`` / ``no-eligible-node``, ``topology-key-absent``,
  ``anti-affinity-exceeds-domains``, ``spread-unsatisfiable`` (:mod:`kaffinity.explain.pending`: one
  reason, one rule); a tie goes to the specific rule.
- ``affinity-no-match``, ``anti-affinity-no-match``, ``preferred-no-match`` / ``api-warning``: a
  term without ``labelSelector``; a tie goes to ``api-warning``, the API server's own words.
- ``revision-unscoped`` / ``gated-field-dropped`` and ``field-unavailable``: a
  ``matchLabelKeys: [pod-template-hash]`` the target version drops; a tie goes to the field's rule.
- ``api-validation`` / every rule that reads an object's terms or places its pods: an object the
  API server refuses is never created (:func:`refused`), whatever the severities. They are
  ``affinity-no-match``, ``anti-affinity-no-match``, ``preferred-no-match``, the rules that read
  the placement, ``revision-unscoped``, ``replicas-not-spread``, ``affinity-conflict``,
  ``all-namespaces-anti-affinity`` and ``anti-affinity-blocks-daemonset``. The rules that judge an
  object's fields as the API server does (``schema``, ``api-warning``, ``gated-field-dropped``,
  ``field-unavailable``...) report beside it, as the API server lists every error and warning.

Rule modules never import each other: they ask this module, which reads the rules that run from
the context (the engine, which knows the registry, lists them there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kaffinity.findings import Severity

if TYPE_CHECKING:
    from kaffinity.context import Context


def reported_at(context: Context, rule: str, own: Severity | None = None) -> Severity | None:
    """The severity a finding of ``rule`` whose own severity is ``own`` is reported at: the
    configured one (rule over category), else ``own``, else the rule's; None when the rule does
    not run (not selected, or it needs a cluster and there is none). The engine lists the rules
    that run in :attr:`kaffinity.context.RunState.running`."""
    running = context.run.running.get(rule)
    if running is None:
        return None
    configured, default = running
    return configured or own or default


def gives_way(
    context: Context,
    mine: tuple[str, Severity | None],
    other: tuple[str, Severity | None],
    *,
    tie_to_other: bool,
) -> bool:
    """Whether my finding (rule, own severity) gives way to the other rule's on the same pods:
    only when the other rule runs and reports at a higher severity, or at the same one when
    ``tie_to_other``. My rule not running decides nothing here (the engine drops its findings)."""
    theirs = reported_at(context, *other)
    if theirs is None:
        return False
    ours = reported_at(context, *mine)
    if ours is None:
        return True
    return theirs.rank > ours.rank or (tie_to_other and theirs.rank == ours.rank)


def refused(context: Context) -> frozenset[int]:
    """The documents (``id``) the API server refuses outright, by ``api-validation``'s errors
    (the object is never created, so it has no pods to place and its terms select nothing),
    when that rule runs; empty otherwise (nothing gives way to a rule that does not run).
    What it refuses is then reported once, as such, and not again by the rules that read the
    object's terms or place its pods (``affinity-no-match``, ``anti-affinity-no-match``,
    ``preferred-no-match``, and the placement's rules)."""
    return context.refused
