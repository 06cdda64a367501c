"""Why ``lint --changed`` shows a finding in a file the change did not touch, in words: one
sentence per :class:`~kaffinity.findings.Cause` ("because web/deploy.yaml changed the labels it
selects"), for the text, GitHub and Markdown reports (JSON and SARIF carry the data)."""

from __future__ import annotations

from collections.abc import Sequence

from kaffinity.findings import (
    CAUSE_AUTOSCALER,
    CAUSE_BUDGET,
    CAUSE_NAMES,
    CAUSE_PLACEMENT,
    CAUSE_RENDERED_FROM,
    CAUSE_SELECTED_BY,
    CAUSE_SELECTS,
    Cause,
)


def sentence(cause: Cause) -> str:
    """One cause as a clause: ``because a.yaml changed the labels it selects (Deployment
    default/cache)``. File and object names are as given: the caller escapes for its format."""
    obj = f" ({_label(cause)})" if cause.object is not None else ""
    file = cause.file
    if cause.relation == CAUSE_SELECTS:
        return f"because {file} changed the labels it selects{obj}"
    if cause.relation == CAUSE_SELECTED_BY:
        return f"because {file} changed a term that selects it{obj}"
    kind = cause.object.kind if cause.object is not None else ""
    if cause.relation == CAUSE_BUDGET:
        if kind == "PodDisruptionBudget":
            return f"because {file} changed a disruption budget over its pods{obj}"
        return f"because {file} changed the pods it covers{obj}"
    if cause.relation == CAUSE_AUTOSCALER:
        if kind == "HorizontalPodAutoscaler":
            return f"because {file} changed the autoscaler that scales it{obj}"
        return f"because {file} changed the workload it scales{obj}"
    if cause.relation == CAUSE_PLACEMENT:
        return f"because {file} changed pods placed on the same cluster{obj}"
    if cause.relation == CAUSE_RENDERED_FROM:
        unit = f"unit {cause.unit}" if cause.unit else "the unit"
        return f"because {file} changed, which {unit} is rendered from"
    if cause.relation == CAUSE_NAMES:
        return f"because {file} changed, a place this finding names"
    return f"because {file} changed{obj}"


def sentences(causes: Sequence[Cause]) -> str:
    """Every cause of one finding, joined: ``because a.yaml ...; because b.yaml ...``."""
    return "; ".join(sentence(cause) for cause in causes)


def _label(cause: Cause) -> str:
    obj = cause.object
    assert obj is not None
    scope = f"{obj.namespace}/" if obj.namespace else ""
    return f"{obj.kind} {scope}{obj.name}"
