"""SARIF 2.1.0, as GitHub code scanning and other viewers read it.

Files under the working directory are given relative to ``%SRCROOT%`` (the working directory);
others as absolute ``file://`` URIs. Every run lists the enabled rules with their help text.

Text from the input (messages, fix hints, a policy's message and description):

- the data is exact: JSON escapes control characters, and :func:`kaffinity.load.display.json_text`
  writes DEL, C1, bidirectional controls and line separators as ``\\uXXXX`` too (no raw one in
  the file; the decoded value unchanged);
- every plain-text message (``message.text``, a rule's ``text`` descriptions) has its ``\\``,
  ``[`` and ``]`` backslash-escaped (:func:`plain_text`), so that ``[text](https://...)`` in a
  name or a policy's message is not read as an embedded link (SARIF 2.1.0 section 3.11.6, "Messages
  with embedded links"; escaping outside link text too is what CodeQL writes, and what the
  SARIF TC adopted for 2.2, oasis-tcs/sarif-spec#768): a viewer that unescapes them shows the
  true text (vscode-codeql ``unescapeSarifText``);
- Markdown (``help.markdown``) is given for the built-in rules only, whose docs ship with
  kaffinity: a policy's description comes from the repository, and SARIF producers "SHALL NOT
  emit messages that contain HTML" (section 3.11.4, "Security implications"); its help is text.

The ``{`` and ``}`` of a message are not doubled (section 3.11.5 reserves ``{0}`` for
placeholders): kaffinity gives no ``arguments``, and GitHub code scanning shows the text as it is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from kaffinity import __version__
from kaffinity.engine import LintResult
from kaffinity.findings import Finding, Severity
from kaffinity.load.display import json_pieces, json_text
from kaffinity.load.parse import STDIN_NAME
from kaffinity.load.source import Span
from kaffinity.report.fingerprint import FINGERPRINT_VERSION, fingerprints, unit_scoped_rules
from kaffinity.report.json import render_dict
from kaffinity.rules.base import POLICY_CATEGORY, Rule

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def render(result: LintResult) -> str:
    # Always valid UTF-8: undecodable bytes in a message (lone surrogates) are escaped; in a URI
    # they are percent-encoded (RFC 3986 over the name's own bytes).
    return json_text(as_dict(result)) + "\n"


def pieces(result: LintResult) -> Iterator[str]:
    """:func:`render`'s text in pieces, written as they are made (``kaffinity.cli.output.emit``)."""
    yield from json_pieces(as_dict(result))
    yield "\n"


_LINK_CHARACTERS = re.compile(r"([\\\[\]])")


def plain_text(text: str) -> str:
    """A SARIF plain-text message: ``\\``, ``[`` and ``]`` backslash-escaped (section 3.11.6), so
    that nothing in it is an embedded link."""
    return _LINK_CHARACTERS.sub(r"\\\1", text)


def _help(rule: Rule) -> dict[str, str]:
    """A rule's help: text and Markdown for a built-in rule; text only for a policy's rule."""
    if rule.category == POLICY_CATEGORY:
        return {"text": plain_text(rule.docs)}
    return {"text": rule.docs, "markdown": rule.docs}


#: Where the rules are documented (docs/rules.md, one section per rule; policies: docs/policies.md).
DOCS = "https://github.com/kaffinity/kaffinity/blob/main/docs"


def rule_name(rule: Rule) -> str:
    """A rule's SARIF ``name``: its id in PascalCase, and ``Check`` after a one-word id, whose
    PascalCase alone would equal the id but for case (SARIF1001: a name is not its id)."""
    name = "".join(part[:1].upper() + part[1:] for part in re.split(r"[-.]", rule.name) if part)
    return f"{name}Check" if name.lower() == rule.name.lower() else name


def help_uri(rule: Rule) -> str:
    """The rule's documentation: its section of docs/rules.md, or docs/policies.md for a policy."""
    if rule.category == POLICY_CATEGORY:
        return f"{DOCS}/policies.md"
    return f"{DOCS}/rules.md#{rule.name}"


def as_dict(result: LintResult) -> dict[str, Any]:
    root = Path.cwd()
    rules = sorted(result.rules, key=lambda rule: rule.name)
    index = {rule.name: position for position, rule in enumerate(rules)}
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "kaffinity",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": "https://github.com/kaffinity/kaffinity",
                        "rules": [
                            {
                                "id": rule.name,
                                "name": rule_name(rule),
                                "shortDescription": {"text": plain_text(rule.summary)},
                                "helpUri": help_uri(rule),
                                "fullDescription": {"text": plain_text(rule.summary)},
                                "help": _help(rule),
                                "defaultConfiguration": {"level": _LEVELS[result.severities[rule.name]]},
                                "properties": {"category": rule.category, "tags": [rule.category]},
                            }
                            for rule in rules
                        ],
                    }
                },
                # What a limit left undone (a unit not placed, findings dropped) and any rule that
                # failed: SARIF's tool execution notifications, as on stderr (docs/output.md).
                "invocations": [
                    {
                        "executionSuccessful": not result.internal_errors,
                        "toolExecutionNotifications": [
                            *(
                                {"level": "note", "message": {"text": plain_text(text)}}
                                for text in result.notices
                            ),
                            *(
                                {"level": "error", "message": {"text": plain_text(text)}}
                                for text in result.internal_errors
                            ),
                        ],
                    }
                ],
                "originalUriBaseIds": {"%SRCROOT%": {"uri": root.as_uri() + "/"}},
                "results": [
                    _result(finding, index, root, mark)
                    for finding, mark in zip(
                        result.findings,
                        fingerprints(result.findings, unit_scoped_rules(result.rules)),
                        strict=True,
                    )
                ],
                "columnKind": "unicodeCodePoints",
                # What was rendered, and the units read as written (as summary.render in JSON).
                **(
                    {"properties": {"render": render_dict(result.render)}}
                    if result.render is not None
                    else {}
                ),
            }
        ],
    }


def _result(finding: Finding, index: dict[str, int], root: Path, fingerprint: str) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": finding.rule,
        "level": _LEVELS[finding.severity],
        "message": {"text": plain_text(finding.message)},
        "locations": [_location(finding.file, finding.span, root, finding)],
        # The finding's identity across line moves and reformatting (kaffinity.report.fingerprint;
        # SARIF 2.1.0 section 3.27.17). GitHub's own primaryLocationLineHash is left to upload-sarif.
        "partialFingerprints": {FINGERPRINT_VERSION: fingerprint},
    }
    if finding.rule in index:
        result["ruleIndex"] = index[finding.rule]
    if finding.related:
        result["relatedLocations"] = [
            {
                "id": number,
                **_location(related.file, related.span, root),
                "message": {"text": plain_text(related.message or related.path)},
            }
            for number, related in enumerate(finding.related, start=1)
        ]
    properties: dict[str, Any] = {"category": finding.category}
    if finding.path:
        properties["path"] = finding.path
    if finding.fix:
        properties["fix"] = finding.fix
    if finding.units:
        properties["units"] = list(finding.units)
    if finding.because:  # lint --changed: why a finding in a file that did not change
        from kaffinity.report.because import sentences
        from kaffinity.report.json import cause_dict

        properties["because"] = [cause_dict(cause) for cause in finding.because]
        properties["becauseText"] = plain_text(sentences(finding.because))
    result["properties"] = properties
    return result


def _location(file: str, span: Span | None, root: Path, finding: Finding | None = None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": _artifact(file, root)}
    if span is not None:
        physical["region"] = {"startLine": span.line, "startColumn": span.column}
    elif finding is not None:
        # A finding of the whole file (a render that failed, a file that cannot be read): its
        # first line, as GitHub code scanning needs a region to show and match an alert
        # ("region.startLine" in its SARIF support docs); related locations stay file-level.
        physical["region"] = {"startLine": 1}
    location: dict[str, Any] = {"physicalLocation": physical}
    if finding is not None and finding.object is not None:
        location["logicalLocations"] = [{"fullyQualifiedName": str(finding.object), "kind": "resource"}]
    return location


def _artifact(file: str, root: Path) -> dict[str, Any]:
    if file == STDIN_NAME:
        return {"uri": "stdin"}
    path = Path(os.path.abspath(file))
    try:
        relative = path.relative_to(root)
    except ValueError:
        return {"uri": path.as_uri()}
    return {"uri": quote(os.fsencode(relative.as_posix())), "uriBaseId": "%SRCROOT%"}
