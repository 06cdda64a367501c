"""A Policy as a rule: which workloads it matches, what its schema checks, where a finding points.

Each policy becomes a :class:`~kaffinity.rules.base.Rule` of category ``policy``. The rule's
name is the policy's name and its severity the policy's. Its check:

- takes every workload of the input that ``spec.match`` selects;
- finds the target in it: the object, the pod template (``metadata`` and ``spec``) or the pod
  spec, wherever the kind keeps it (a Deployment's ``spec.template``, a CronJob's
  ``spec.jobTemplate.spec.template``, a bare Pod itself, a configured custom kind's). A
  policy therefore never checks the wrong level, as a check on a Deployment's ``spec.affinity``
  would;
- validates the target against the policy's JSON Schema. The validator is built once per run.

A workload that breaks the schema gets one finding. It points at the field the schema's most
relevant error names (``jsonschema.exceptions.best_match``), under the target. So a missing
``topologySpreadConstraints`` is reported at the pod spec of that very workload, in a file of
many documents too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kaffinity.findings import Violation
from kaffinity.k8s.model import Workload, dig
from kaffinity.k8s.selectors import selector_matches
from kaffinity.load.source import DataPath
from kaffinity.policy.load import Policy
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

    from kaffinity.context import Context

CATEGORY = "policy"


def reserved_names() -> frozenset[str]:
    """What a policy may not be named: a built-in rule, a category, ``policy`` or ``all``."""
    from kaffinity.rules import CATEGORIES, RULES

    return frozenset({rule.name for rule in RULES} | set(CATEGORIES) | {CATEGORY, "all"})


def policy_rule(policy: Policy) -> Rule:
    """The rule that checks ``policy``."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(policy.schema)

    def check(context: Context) -> Iterator[Violation]:
        from jsonschema.exceptions import best_match
        from referencing.exceptions import Unresolvable

        for workload in context.inventory.workloads:
            if not matches(policy, workload):
                continue
            path, target = _target(policy, workload)
            if target is None:
                continue
            try:
                error = best_match(validator.iter_errors(target))
            except (RecursionError, Unresolvable) as problem:  # a schema the load-time probe let by
                yield Violation(
                    workload.doc,
                    path,
                    f"{policy.message}: the policy's schema cannot be evaluated ({problem!r:.80})",
                )
                continue
            if error is None:
                continue
            at: DataPath = (*path, *error.absolute_path)
            yield Violation(workload.doc, at, f"{policy.message}: {_said(error)}")

    where = f"Defined in `{policy.doc.file}` (a `{policy.target}` policy)."
    docs = f"{policy.description or policy.message}\n\n{where}"
    return Rule(
        name=policy.name,
        category=CATEGORY,
        severity=policy.severity,
        summary=policy.message,
        docs=docs,
        check=check,
    )


def matches(policy: Policy, workload: Workload) -> bool:
    """Whether ``spec.match`` selects ``workload``: every condition given holds."""
    ref = workload.ref
    if policy.kinds is not None and ref.kind not in policy.kinds:
        return False
    if policy.namespaces is not None and ref.namespace not in policy.namespaces:
        return False
    if policy.min_replicas is not None and (
        workload.replicas is None or workload.replicas < policy.min_replicas
    ):
        return False
    if policy.selector is not None:
        labels = dig(workload.doc.data, ("metadata", "labels"))
        own = {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}
        return selector_matches(policy.selector, own)
    return True


def _target(policy: Policy, workload: Workload) -> tuple[DataPath, Any]:
    """The path of the policy's target in the workload's document, and the value there (None
    when the workload has none: a template without a spec)."""
    if policy.target == "object":
        path: DataPath = ()
    elif policy.target == "podTemplate":
        path = workload.template_path
    else:
        path = workload.pod.spec_path
    value = dig(workload.doc.data, path) if path else workload.doc.data
    return path, value if isinstance(value, dict) else None


#: The longest account of a schema error in a message; jsonschema quotes the whole value.
_MAX_SAID = 160


def _said(error: ValidationError) -> str:
    """What the schema found, in a line: jsonschema's own words, except where they repeat the
    whole value (``contains``: the list; long values: cut)."""
    if error.validator == "contains" and isinstance(error.instance, list):
        return f"none of its {len(error.instance)} items matches the policy's schema"
    said = error.message
    return said if len(said) <= _MAX_SAID else said[: _MAX_SAID - 3] + "..."
