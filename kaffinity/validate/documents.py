"""Schema and API-server validation of every object, computed once per run for six rules.

``schema``, ``field-unavailable`` and ``proposal-field`` come from the extended schemas
(:mod:`kaffinity.validate.schema`); ``api-validation``, ``api-warning`` and ``gated-field-dropped`` from
the port of kube-apiserver's checks (:mod:`kaffinity.validate.apiserver`). Each rule's check reads
its own list (:func:`kaffinity.rules.base.validation_check`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kaffinity.config import Settings
from kaffinity.findings import Violation
from kaffinity.load.source import DataPath, Document

if TYPE_CHECKING:
    from kaffinity.k8s.model import WorkloadKind
    from kaffinity.validate.schema import SchemaProblem


def validate_documents(documents: Sequence[Document], settings: Settings) -> dict[str, list[Violation]]:
    # Imported here, not at the top: the rule registry imports this module, and jsonschema
    # (~0.1 s) is needed only when a validation rule actually runs.
    from kaffinity.k8s.model.kinds import custom_workload_kind
    from kaffinity.validate.apiserver import Target, validate
    from kaffinity.validate.schema import check_object

    target = Target(settings.kube_version, dict(settings.feature_gates), settings.proposals)
    kinds = settings.workload_kinds
    found: dict[str, list[Violation]] = {}
    for doc in documents:
        data = doc.data
        if not isinstance(data, dict) or data.get("kind") is None:
            continue
        for problem in check_object(data, target.version, target.proposals):
            found.setdefault(problem.rule, []).append(
                Violation(doc, problem.path, problem.message, fix=problem.fix)
            )
        custom = custom_workload_kind(data, kinds)
        if custom is not None:
            for problem, path in _template_problems(data, custom, target.version, target.proposals):
                found.setdefault(problem.rule, []).append(
                    Violation(doc, path, problem.message, fix=problem.fix)
                )
        for found_problem in validate(data, target, kinds):
            violation = Violation(
                doc,
                found_problem.path,
                found_problem.message,
                fix=found_problem.fix,
                field=found_problem.field,
            )
            found.setdefault(found_problem.rule, []).append(violation)
    return found


def _template_problems(
    data: Mapping[str, Any], custom: WorkloadKind, version: str, proposals: bool
) -> Iterator[tuple[SchemaProblem, DataPath]]:
    """The schema problems of a custom workload's pod template (the rest of the object is the
    custom resource's own), each with its path in the object."""
    from kaffinity.k8s.model.readers import dig
    from kaffinity.validate.schema import check_template

    template = dig(data, custom.template)
    if not isinstance(template, Mapping):
        return
    spec = template.get("spec")
    if custom.spec_fields and isinstance(spec, Mapping):
        # The kind's own fields beside the PodSpec's (Knative's containerConcurrency...).
        trimmed = {key: value for key, value in spec.items() if key not in custom.spec_fields}
        template = {**template, "spec": trimmed}
    for problem in check_template(template, version, proposals):
        yield problem, (*custom.template, *problem.path)
