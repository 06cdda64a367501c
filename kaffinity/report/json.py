"""JSON report; its shape is documented in docs/output.md and schemas/output.schema.json."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from kaffinity import __version__
from kaffinity.engine import LintResult
from kaffinity.findings import Cause, Finding, Location, Severity
from kaffinity.load.display import json_name, json_pieces, json_text
from kaffinity.repo.rendering import RenderSummary
from kaffinity.report.fingerprint import fingerprints, unit_scoped_rules

#: Bumped only on a change that breaks consumers of the JSON report.
JSON_VERSION = 1


def render(result: LintResult) -> str:
    # Always valid UTF-8: undecodable bytes of a file name (lone surrogates) are escaped. Every
    # other string is exact (a consumer needs the true value: a message, a name); its control
    # characters, bidirectional controls and line separators as JSON \uXXXX escapes.
    return json_text(as_dict(result)) + "\n"


def pieces(result: LintResult) -> Iterator[str]:
    """:func:`render`'s text in pieces, written as they are made (``kaffinity.cli.output.emit``)."""
    yield from json_pieces(as_dict(result, written=True))
    yield "\n"


def render_dict(summary: RenderSummary) -> dict[str, Any]:
    """``summary.render`` (and the SARIF run's ``properties.render``): whether rendering was on,
    the engines used for charts (``helm``) and overlays (``kustomize``), the units rendered, and
    those read as written with why (docs/output.md)."""
    return {
        "enabled": summary.enabled,
        "engines": {"helm": summary.helm, "kustomize": summary.kustomize},
        "rendered": summary.rendered,
        "unrendered": len(summary.unrendered),
        "unrendered_units": [{"unit": unit, "reason": reason} for unit, reason in summary.unrendered],
    }


class _Written(list[Any]):
    """A JSON array whose items are made as :func:`json_pieces`' encoder (Python's, which asks an
    array only its length and its items in turn) writes them: a large report's findings are never
    all held as dicts at once. For that encoder only (the C one reads a list's own storage)."""

    def __init__(self, items: Sequence[Any], make: Callable[[Any], Any]) -> None:
        super().__init__()
        self._items, self._make = items, make

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Any]:
        return map(self._make, self._items)


def as_dict(result: LintResult, *, written: bool = False) -> dict[str, Any]:
    """The report as a JSON-like tree; ``written``: its findings made as :func:`pieces` writes
    them (:class:`_Written`)."""
    severities = Counter(finding.severity.value for finding in result.findings)
    rendering = {"render": render_dict(result.render)} if result.render is not None else {}
    new_only = result.new_only
    if new_only is not None:  # --new-from-rev / --baseline: what was there before, not shown
        rendering["new_only"] = {
            "against": new_only.against,
            "ref": json_name(new_only.ref),
            "known": new_only.known,
            "fixed": new_only.fixed,
        }
    prints = fingerprints(result.findings, unit_scoped_rules(result.rules))
    return {
        "version": JSON_VERSION,
        "tool": {"name": "kaffinity", "version": __version__},
        "findings": _Written(list(zip(result.findings, prints, strict=True)), _finding_pair)
        if written
        else [finding_dict(finding, mark) for finding, mark in zip(result.findings, prints, strict=True)],
        "summary": {
            "files": result.files,
            "skipped": result.skipped,
            "documents": result.documents,
            "findings": len(result.findings),
            **{severity.value: severities[severity.value] for severity in Severity},
            "suppressed": result.suppressed,
            "rules": dict(sorted(Counter(finding.rule for finding in result.findings).items())),
            "units": list(result.units),
            "notices": list(result.notices),
            **rendering,
        },
    }


def _finding_pair(pair: tuple[Finding, str | None]) -> dict[str, Any]:
    return finding_dict(*pair)


def finding_dict(finding: Finding, fingerprint: str | None = None) -> dict[str, Any]:
    """One finding; ``fingerprint``: its ``hash:occurrence`` (kaffinity.report.fingerprint)."""
    obj = finding.object
    mark = {} if fingerprint is None else {"fingerprint": fingerprint}
    return {
        "rule": finding.rule,
        "category": finding.category,
        "severity": finding.severity.value,
        "message": finding.message,
        "file": json_name(finding.file),
        "line": finding.line,
        "column": finding.column,
        "path": finding.path,
        "object": None
        if obj is None
        else {"apiVersion": obj.api_version, "kind": obj.kind, "namespace": obj.namespace, "name": obj.name},
        "related": [_location(related) for related in finding.related],
        "fix": finding.fix,
        "units": list(finding.units),
        **mark,
        **({"because": [cause_dict(cause) for cause in finding.because]} if finding.because else {}),
    }


def cause_dict(cause: Cause) -> dict[str, Any]:
    """One reason ``lint --changed`` shows a finding in a file that did not change (JSON
    ``because``, SARIF ``properties.because``)."""
    obj = cause.object
    return {
        "file": json_name(cause.file),
        "relation": cause.relation,
        "object": None
        if obj is None
        else {"apiVersion": obj.api_version, "kind": obj.kind, "namespace": obj.namespace, "name": obj.name},
        "unit": cause.unit or None,
    }


def _location(location: Location) -> dict[str, Any]:
    return {
        "file": json_name(location.file),
        "line": location.span.line if location.span else None,
        "column": location.span.column if location.span else None,
        "path": location.path,
        "message": location.message,
    }
