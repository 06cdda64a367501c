"""``kaffinity expand``: the label selectors kube-apiserver stores in the pods a workload creates.

Three renderings of :mod:`kaffinity.expand.merge`:

* ``diff`` — a unified diff per file, from the manifest as written to the pods as created (the
  appended ``matchExpressions`` as ``+`` lines, as in KEP-3633's design section);
* ``yaml`` — the input with the merged selectors in place and every other byte as written
  (:mod:`kaffinity.load.edits` splices the new expressions in; nothing is re-dumped);
* ``json`` — per term, the selector as written and as merged, the keys applied and ignored (and
  why), and which component merges (see :data:`EXPAND_JSON_SHAPE`).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kaffinity.expand.merge import SCHEDULER, TermExpansion, WorkloadExpansion, expand
from kaffinity.k8s.model import LabelSelector, Workload, WorkloadKind, build_object
from kaffinity.k8s.model.readers import dig
from kaffinity.load.display import escape, json_name, patch_lines, quote_name, utf8_tree
from kaffinity.load.edits import Edit, add_entry, append_items, apply
from kaffinity.load.parse import SourceFile
from kaffinity.load.source import format_path

#: The documented shape of ``kaffinity expand --format json`` (docs/expansion.md).
EXPAND_JSON_SHAPE = """\
{"kubeVersion": "1.34", "featureGates": {...},
 "workloads": [{"file": str, "line": int,
   "object": {"apiVersion", "kind", "namespace", "name"},
   "labels": {pod labels, with <placeholders> for run-time labels},
   "terms": [{"kind": "podAffinity" | "podAntiAffinity" | "topologySpreadConstraints",
     "required": bool, "path": str, "line": int, "topologyKey": str,
     "mergedBy": "kube-apiserver" | "kube-scheduler" | null, "stored": bool,
     "original": selector | null, "merged": selector | null,
     "applied": [{"key", "field", "index", "operator", "value", "controllerLabel": bool}],
     "ignored": [{"key", "field", "index", "code", "reason"}],
     "note": str}]}]}"""


@dataclass(frozen=True, slots=True)
class Previewed:
    """One workload of one file with what its terms become."""

    file: SourceFile
    workload: Workload
    expansion: WorkloadExpansion


def previews(
    files: Sequence[SourceFile],
    version: str,
    gates: Mapping[str, bool],
    namespace: str,
    workload_kinds: Sequence[WorkloadKind] = (),
) -> Iterator[Previewed]:
    """Every workload with a term that names label keys, in input order."""
    for file in files:
        for doc in file.documents:
            workload = build_object(doc, namespace, workload_kinds)
            if isinstance(workload, Workload):
                expansion = expand(workload, version, gates)
                if expansion.terms:
                    yield Previewed(file, workload, expansion)


def merge_edit(text: str, workload: Workload, term: TermExpansion, version: str) -> Edit | None:
    """The text edit that appends a term's merged requirements to its selector as written."""
    selector = term.selector
    if selector is None or not term.applied:
        return None
    doc = workload.doc
    path = (*doc.prefix, *selector.path)
    items = [{"key": use.key, "operator": use.operator, "values": [use.value]} for use in term.applied]
    comment = (
        f"merged by kube-scheduler when scheduling, not stored (Kubernetes {version})"
        if term.merger == SCHEDULER
        else None
    )
    raw = dig(doc.data, selector.path)
    if isinstance(raw, Mapping) and "matchExpressions" in raw:
        return append_items(text, doc.index, (*path, "matchExpressions"), items, comment)
    return add_entry(text, doc.index, path, "matchExpressions", items, comment)


def _edited(items: Sequence[Previewed], version: str) -> dict[str, tuple[str, str, list[str]]]:
    """Per file: its text, the text with merged selectors, and the terms that could not be edited."""
    out: dict[str, tuple[str, str, list[str]]] = {}
    by_file: dict[str, list[Previewed]] = {}
    for item in items:
        by_file.setdefault(item.file.name, []).append(item)
    for name, group in by_file.items():
        text = group[0].file.text
        edits: list[Edit] = []
        failed: list[str] = []
        for item in group:
            for term in item.expansion.terms:
                if not term.applied:
                    continue
                edit = merge_edit(text, item.workload, term, version)
                if edit is None:
                    span = item.workload.doc.locate(term.path)
                    where = f"{quote_name(name)}:{span.line}"
                    failed.append(f"{where}: cannot show the merge of {format_path(term.path)} in place")
                else:
                    edits.append(edit)
        out[name] = (text, apply(text, edits), failed)
    return out


def render_diff(items: Sequence[Previewed], version: str) -> str:
    lines: list[str] = []
    edited = _edited(items, version)
    notes = _notes(items)
    for name, (text, new, failed) in edited.items():
        diff = difflib.unified_diff(
            patch_lines(text),
            patch_lines(new),
            f"{quote_name(name)} (as written)",
            f"{quote_name(name)} (pods as created, Kubernetes {version})",
        )
        chunk = "".join(line if line.endswith("\n") else line + "\n" for line in diff)
        lines.append(chunk)
        lines += [f"# {escape(note)}\n" for note in (*failed, *notes.get(name, ()))]
    return "".join(lines)


def render_yaml(files: Sequence[SourceFile], items: Sequence[Previewed], version: str) -> str:
    edited = _edited(items, version)
    out: list[str] = []
    shown = [file for file in files if file.documents]
    for number, file in enumerate(shown):
        text = edited[file.name][1] if file.name in edited else file.text
        if len(shown) > 1:
            separator = "" if number == 0 else "---\n"
            out.append(f"{separator}# Source: {quote_name(file.name)}\n")
        out.append(text if text.endswith("\n") else text + "\n")
    return "".join(out)


def _notes(items: Sequence[Previewed]) -> dict[str, list[str]]:
    notes: dict[str, list[str]] = {}
    for item in items:
        for term in item.expansion.terms:
            line = item.workload.doc.locate(term.path).line
            where = f"{quote_name(item.file.name)}:{line}: {item.workload.ref}"
            for use in term.ignored:
                notes.setdefault(item.file.name, []).append(
                    f"{where}: {use.field} '{use.key}' not merged: {use.reason}"
                )
            if term.merger == SCHEDULER:
                notes.setdefault(item.file.name, []).append(
                    f"{where}: spread matchLabelKeys are merged by kube-scheduler when scheduling; "
                    "the stored selector stays as written"
                )
    return notes


def selector_json(selector: LabelSelector | None) -> dict[str, Any] | None:
    if selector is None:
        return None
    out: dict[str, Any] = {}
    if selector.match_labels:
        out["matchLabels"] = dict(selector.match_labels)
    if selector.match_expressions:
        out["matchExpressions"] = [
            {"key": r.key, "operator": r.operator, **({"values": list(r.values)} if r.values else {})}
            for r in selector.match_expressions
        ]
    return out


def render_json(items: Sequence[Previewed], version: str, gates: Mapping[str, bool]) -> str:
    workloads = []
    for item in items:
        ref, doc = item.workload.ref, item.workload.doc
        workloads.append(
            {
                "file": json_name(item.file.name),
                "line": doc.span.line,
                "object": {
                    "apiVersion": ref.api_version,
                    "kind": ref.kind,
                    "namespace": ref.namespace,
                    "name": ref.name,
                },
                "labels": dict(item.expansion.labels),
                "terms": [_term_json(item, term) for term in item.expansion.terms],
            }
        )
    return (
        json.dumps(
            utf8_tree({"kubeVersion": version, "featureGates": dict(gates), "workloads": workloads}), indent=2
        )
        + "\n"
    )


def _term_json(item: Previewed, term: TermExpansion) -> dict[str, Any]:
    return {
        "kind": term.kind,
        "required": term.required,
        "path": format_path(term.path),
        "line": item.workload.doc.locate(term.path).line,
        "topologyKey": term.topology_key,
        "mergedBy": term.merger,
        "stored": term.stored,
        "original": selector_json(term.selector),
        "merged": selector_json(term.merged),
        "applied": [
            {
                "key": use.key,
                "field": use.field,
                "index": use.index,
                "operator": use.operator,
                "value": use.value,
                "controllerLabel": use.controller is not None,
            }
            for use in term.applied
        ],
        "ignored": [
            {
                "key": use.key,
                "field": use.field,
                "index": use.index,
                "code": use.ignored,
                "reason": use.reason,
            }
            for use in term.ignored
        ],
        "note": term.note,
    }
