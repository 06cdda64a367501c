"""Compaction keeps exactly what the rules that read several objects declare (``Rule.reads``).

Each such rule runs on the compact files of every example of the examples folder, whose pod
specs and containers raise when a field the rule did not declare is read: a rule that reads a
field compaction drops (or one it keeps only because another rule declares it) fails here. A
made-up rule that reads an undeclared field shows that the check sees it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kaffinity.config import Settings
from kaffinity.engine import lint
from kaffinity.engine.single import kept_fields, registry_fields
from kaffinity.findings import Severity, Violation
from kaffinity.k8s.compact import MODEL_FIELDS, Fields, compact_file
from kaffinity.k8s.model.kinds import pod_template_path
from kaffinity.load.files import load
from kaffinity.load.parse import SourceFile
from kaffinity.load.source import Document, PosDict, PosList
from kaffinity.rules import RULES
from kaffinity.rules.base import Rule
from kaffinity.simulate.cluster import cluster_from

from .kit import EXAMPLES, REPO, example_settings

#: The rules that run on compact files: every rule outside the single-object stage but policies.
DECLARING = [rule for rule in RULES if rule.reads is not None]
CROSS_OBJECT = [
    rule
    for rule in RULES
    if rule.check is not None and (rule.needs_all_manifests or rule.needs_cluster or rule.reads_other_files)
]


class Undeclared(AssertionError):
    """A rule read a field of a pod template it did not declare."""


class _Tripwire(PosDict):
    """A compact pod spec or container that raises when an undeclared field is read."""

    __slots__ = ("allowed",)

    def __init__(self, source: PosDict, allowed: frozenset[str]) -> None:
        super().__init__(source.span)
        self.update(source)
        self.pos = source.pos
        self.allowed = allowed

    def _read(self, key: object) -> None:
        if key not in self.allowed:
            raise Undeclared(f"reads {key!r}, which it does not declare")

    def __getitem__(self, key: str) -> Any:
        self._read(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self._read(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self._read(key)
        return super().__contains__(key)


def _wired(files: list[SourceFile], fields: Fields) -> list[SourceFile]:
    """``files`` compacted as the single-object stage compacts them, each pod template's spec and
    containers made to raise when a field not in ``fields`` is read."""
    out = []
    for file in files:
        small = compact_file(file, (), registry_fields())
        for doc in small.documents:
            _wire(doc, fields)
        out.append(small)
    return out


def _wire(doc: Document, fields: Fields) -> None:
    data = doc.data
    if not isinstance(data, PosDict):
        return
    kind, api_version = data.get("kind"), data.get("apiVersion")
    if not isinstance(kind, str) or not isinstance(api_version, str):
        return
    path = pod_template_path(kind, api_version)
    if path is None:
        return
    template: Any = data
    for step in path:
        template = template.get(step) if isinstance(template, PosDict) else None
    spec = template.get("spec") if isinstance(template, PosDict) else None
    if not isinstance(spec, PosDict):
        return
    for name in ("containers", "initContainers", "ephemeralContainers"):
        items = spec.get(name)
        if isinstance(items, PosList):
            for index, item in enumerate(items):
                if isinstance(item, PosDict):
                    items[index] = _Tripwire(item, fields.container)
    template["spec"] = _Tripwire(spec, fields.pod)


def _examples() -> Iterator[Path]:
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        if "policies" in path.parts or "clusters" in path.parts:
            continue
        yield path


def _lint_wired(path: Path, rule: Rule) -> list[str]:
    """The internal errors of ``rule`` on the wired compact files of the example ``path``."""
    settings = example_settings(path)
    cluster = None
    if settings.get("cluster"):
        settings["cluster"] = str(REPO / settings["cluster"])
        cluster = cluster_from(load([settings["cluster"]]))
    assert rule.reads is not None
    files = _wired(load([str(path)]), rule.reads)
    result = lint(files, Settings(**{**settings, "select": (rule.name,)}), (*RULES, rule), cluster=cluster)
    return list(result.internal_errors)


def test_every_rule_that_reads_several_objects_declares_what_it_reads() -> None:
    assert DECLARING == CROSS_OBJECT
    assert kept_fields(RULES) == registry_fields()
    assert MODEL_FIELDS.pod <= registry_fields().pod


@pytest.mark.parametrize("rule", DECLARING, ids=lambda rule: rule.name)
def test_a_rule_reads_only_the_fields_it_declares(rule: Rule) -> None:
    errors = {str(path.relative_to(EXAMPLES)): _lint_wired(path, rule) for path in _examples()}
    assert {name: found for name, found in errors.items() if found} == {}


def _security(context: Any) -> Iterator[Violation]:
    for workload in context.inventory.workloads:
        spec = workload.doc.data["spec"]["template"]["spec"]
        if spec.get("securityContext"):
            yield Violation(workload.doc, ("spec",), "has a securityContext")


def test_a_rule_that_reads_an_undeclared_field_fails() -> None:
    """The check would fail: a made-up rule that reads ``securityContext`` (compaction drops it)."""
    made_up = Rule(
        "test-reads-security-context",
        "graph",
        Severity.WARNING,
        "Reads securityContext.",
        "docs",
        check=_security,
        needs_all_manifests=True,
        reads=MODEL_FIELDS,
    )
    errors = _lint_wired(EXAMPLES / "pdb-overlap" / "fail.yaml", made_up)
    assert len(errors) == 1 and "Undeclared" in errors[0] and "'securityContext'" in errors[0]
