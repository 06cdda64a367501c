"""Schema and API-server validation of every object, computed once per run for six rules.

``schema``, ``field-unavailable`` and ``proposal-field`` come from the extended schemas
(:mod:`kaffinity.schema`); ``api-validation``, ``api-warning`` and ``gated-field-dropped`` from
the port of kube-apiserver's checks (:mod:`kaffinity.apivalidation`). Each rule's check reads
its own list (:func:`validation_check`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from kaffinity.config import Settings
from kaffinity.findings import Violation
from kaffinity.source import Document

if TYPE_CHECKING:
    from kaffinity.engine import Context
    from kaffinity.rules.base import Check


def validate_documents(documents: Sequence[Document], settings: Settings) -> dict[str, list[Violation]]:
    # Imported here, not at the top: the rule registry imports this module, and jsonschema
    # (~0.1 s) is needed only when a validation rule actually runs.
    from kaffinity.apivalidation import Target, validate
    from kaffinity.schema import check_object

    target = Target(settings.kube_version, dict(settings.feature_gates), settings.proposals)
    found: dict[str, list[Violation]] = {}
    for doc in documents:
        data = doc.data
        if not isinstance(data, dict) or data.get("kind") is None:
            continue
        for problem in check_object(data, target.version, target.proposals):
            found.setdefault(problem.rule, []).append(
                Violation(doc, problem.path, problem.message, fix=problem.fix)
            )
        for found_problem in validate(data, target):
            violation = Violation(
                doc,
                found_problem.path,
                found_problem.message,
                fix=found_problem.fix,
                field=found_problem.field,
            )
            found.setdefault(found_problem.rule, []).append(violation)
    return found


def validation_check(rule: str) -> Check:
    """The check of one validation rule: its share of :func:`validate_documents`."""

    def check(context: Context) -> Iterator[Violation]:
        yield from context.validation.get(rule, ())

    return check
