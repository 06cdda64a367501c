"""Baselines and ``--new-from-rev``: the findings that were there before, left out of a report.

A baseline file (``kaffinity baseline write``, read by ``lint --baseline FILE`` or ``baseline:``
in .kaffinity.yaml) lists the fingerprints of the findings a repository accepts for now
(:mod:`kaffinity.report.fingerprint`), each with how many findings carry it, and the rule, file,
object and message of the first for the people reading the file in a review. Its shape is
``schemas/baseline.schema.json`` (docs/adopting.md). JSON, written sorted by file, rule and
object, one entry per fingerprint: a rewrite after fixing one finding is a one-entry diff.

``--new-from-rev REV`` compares with the findings of the same lint of REV's tree instead
(kaffinity.run.lint); both come down to :func:`left_out`: known fingerprints with their counts.

What a load error says (``parse-error``: a file that could not be read or parsed) is never left
out: the run exits 2 because of it and must say why.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kaffinity.config import error_at
from kaffinity.engine import LintResult, NewOnly
from kaffinity.findings import Finding
from kaffinity.load.display import json_name, json_text
from kaffinity.load.parse import DEFAULT_LIMITS, Limits
from kaffinity.load.source import Document, Span
from kaffinity.report.fingerprint import (
    FINGERPRINT_VERSION,
    fingerprint_of,
    fingerprints,
    repository_name,
    unit_scoped_rules,
)

#: Bumped only on a change of the file's shape (the fingerprints have their own version).
BASELINE_VERSION = 1
#: Where ``kaffinity baseline write`` writes without ``-o`` or ``baseline:`` (a hidden file:
#: folder discovery leaves it out, so it is never linted as a manifest).
DEFAULT_BASELINE = ".kaffinity-baseline.json"
#: The rule whose findings are never left out (kaffinity.engine.LOAD_ERROR).
_LOAD_ERROR = "parse-error"
_HASH = re.compile(r"[0-9a-f]{32}")
_ENTRY_KEYS = ("fingerprint", "count", "rule", "file", "object", "message")


@dataclass(frozen=True)
class Baseline:
    """A baseline file read: the count of each fingerprint, and the rule and file of its entry
    (for :meth:`in_scope`)."""

    counts: Counter[str]
    entries: dict[str, tuple[str, str]] = field(default_factory=dict)

    def in_scope(self, paths: Sequence[str], rules: Collection[str]) -> Callable[[str], bool]:
        """Whether a run of ``rules`` over ``paths`` (files or folders) would find an entry
        again: only such an entry is fixed when nothing matches it (``lint k8s/a.yaml``,
        ``--changed`` or ``--select`` cover a part of what the baseline was written for)."""
        prefixes = [repository_name(path) for path in paths or ["."]]

        def covered(digest: str) -> bool:
            rule, file = self.entries.get(digest, ("", ""))
            if rule and rule not in rules:
                return False
            return not file or any(
                prefix in (".", file) or file.startswith(prefix.rstrip("/") + "/") for prefix in prefixes
            )

        return covered


class BaselineError(Exception):
    """A baseline that cannot be used: ``file[:line:column]: error: ...``, one line."""


def write_text(result: LintResult) -> str:
    """The baseline of ``result``: every finding but load errors, one entry per fingerprint."""
    scoped = unit_scoped_rules(result.rules)
    entries: dict[str, dict[str, Any]] = {}
    for finding in result.findings:
        if finding.rule == _LOAD_ERROR:
            continue
        digest = fingerprint_of(finding, finding.rule in scoped)
        entry = entries.get(digest)
        if entry is not None:
            entry["count"] += 1
            continue
        entries[digest] = {
            "fingerprint": digest,
            "count": 1,
            "rule": finding.rule,
            "file": json_name(repository_name(finding.file)),
            "object": finding.object_label,
            "message": finding.message,
        }
    listed = sorted(
        entries.values(),
        key=lambda entry: (entry["file"], entry["rule"], entry["object"], entry["fingerprint"]),
    )
    data = {"version": BASELINE_VERSION, "fingerprints": FINGERPRINT_VERSION, "findings": listed}
    return json_text(data, indent=2) + "\n"


def read(path: str, display: str, limits: Limits = DEFAULT_LIMITS) -> Baseline:
    """The fingerprints of the baseline at ``path`` with their counts; :class:`BaselineError`
    (naming ``display`` and the line) when it is missing or not a baseline. ``limits``: the
    run's (``--limit file-size``, ``--max-file-size`` raise them, as the error says)."""
    import os

    from kaffinity.load.parse import parse_data
    from kaffinity.load.read import read_text

    if not os.path.exists(path):
        raise BaselineError(error_at(display, None, "baseline file not found"))
    if os.path.isdir(path):
        raise BaselineError(error_at(display, None, "baseline file is a folder"))
    _, text, problem = read_text(path, limits)
    data: Any = None
    if problem is None:
        data, problem = parse_data(text, strict=True)
    if problem is not None:
        raise BaselineError(error_at(display, problem.span, f"not a baseline: {problem.message}"))
    doc = Document(display, 0, data, data, Span(1, 1))
    return _counts(doc)


def _counts(doc: Document) -> Baseline:
    """A baseline's entries, checked as ``schemas/baseline.schema.json`` says, in words of ours."""
    data = doc.data

    def fail(path: tuple[str | int, ...], message: str) -> BaselineError:
        return BaselineError(error_at(doc.file, doc.locate(path), message))

    if not isinstance(data, dict):
        raise fail((), "not a baseline: a JSON object with version, fingerprints and findings is expected")
    for key in data:
        if key not in ("version", "fingerprints", "findings"):
            raise fail((key,), f"unknown key '{key}' (version, fingerprints and findings are known)")
    version = data.get("version")
    if version != BASELINE_VERSION or isinstance(version, bool):
        raise fail(("version",), f"version: {version!r} is not a baseline version this kaffinity reads (1)")
    kind = data.get("fingerprints")
    if kind != FINGERPRINT_VERSION:
        raise fail(
            ("fingerprints",),
            f"fingerprints: {kind!r} is not {FINGERPRINT_VERSION}: write the baseline again "
            "with this kaffinity (kaffinity baseline write)",
        )
    findings = data.get("findings")
    if not isinstance(findings, list):
        raise fail(("findings",) if "findings" in data else (), "findings: a list of entries is expected")
    counts: Counter[str] = Counter()
    entries: dict[str, tuple[str, str]] = {}
    for index, entry in enumerate(findings):
        digest, count = _entry(doc, index, entry)
        counts[digest] += count
        entries.setdefault(digest, (entry.get("rule", ""), entry.get("file", "")))
    return Baseline(counts, entries)


def _entry(doc: Document, index: int, entry: Any) -> tuple[str, int]:
    """One entry of ``findings``: its fingerprint and count."""
    where: tuple[str | int, ...] = ("findings", index)

    def fail(path: tuple[str | int, ...], message: str) -> BaselineError:
        return BaselineError(error_at(doc.file, doc.locate(path), f"findings[{index}]{message}"))

    if not isinstance(entry, dict):
        raise fail(where, ": an object with fingerprint and count is expected")
    for key in entry:
        if key not in _ENTRY_KEYS:
            raise fail((*where, key), f": unknown key '{key}'")
    digest = entry.get("fingerprint")
    if not isinstance(digest, str) or not _HASH.fullmatch(digest):
        raise fail((*where, "fingerprint"), ".fingerprint: 32 hexadecimal digits expected")
    count = entry.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise fail((*where, "count"), ".count: a whole number from 1 expected")
    for key in ("rule", "file", "object", "message"):
        if key in entry and not isinstance(entry[key], str):
            raise fail((*where, key), f".{key}: a string expected")
    return digest, count


def rev_counts(result: LintResult) -> Counter[str]:
    """The fingerprints of a revision's findings with their counts (``--new-from-rev``)."""
    counts: Counter[str] = Counter()
    for mark in fingerprints(result.findings, unit_scoped_rules(result.rules)):
        counts[mark.rpartition(":")[0]] += 1
    return counts


def left_out(
    result: LintResult,
    known: Counter[str],
    against: str,
    ref: str,
    in_scope: Callable[[str], bool] | None = None,
) -> LintResult:
    """``result`` without the findings ``known`` counts (per fingerprint, the first ones in report
    order: two copies known, a third is new), and how many were left out; for a baseline, the
    entries no finding matched any more (``fixed``) among those the run covers (``in_scope``).
    Load errors always stay."""
    scoped = unit_scoped_rules(result.rules)
    seen: Counter[str] = Counter()
    kept: list[Finding] = []
    for finding in result.findings:
        digest = fingerprint_of(finding, finding.rule in scoped)
        seen[digest] += 1
        if finding.rule == _LOAD_ERROR or seen[digest] > known[digest]:
            kept.append(finding)
    dropped = len(result.findings) - len(kept)
    fixed = (
        sum(
            max(0, count - seen[digest])
            for digest, count in known.items()
            if in_scope is None or in_scope(digest)
        )
        if against == "baseline"
        else 0
    )
    earlier = result.new_only
    if earlier is not None:  # --baseline, then --new-from-rev: one count of what was left out
        dropped += earlier.known
        fixed += earlier.fixed
        against = f"{earlier.against}+{against}"
    return replace(result, findings=tuple(kept), new_only=NewOnly(against, ref, dropped, fixed))


def fixed_note(new_only: NewOnly, file: str) -> str | None:
    """The note when baseline entries no longer occur: the baseline may be written again."""
    if not new_only.fixed:
        return None
    entries = f"{new_only.fixed} baseline entr{'ies are' if new_only.fixed != 1 else 'y is'}"
    return f"{entries} fixed: rewrite the baseline (kaffinity baseline write -o {file})"
