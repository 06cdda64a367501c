"""The upstream test tables (``tests/data/upstream/<plugin>.yaml``), read and run through
``kaffinity place``: shared by the per-plugin test modules of this folder.

A filter table restates the Filter test table of one upstream scheduler plugin as manifests: the
incoming ``pod``, the ``cluster`` (Nodes, existing Pods bound by ``spec.nodeName``, Namespaces)
and the ``feasible`` nodes, those for which upstream expects no error status. Each case runs
``kaffinity place`` with only that plugin enabled (``--filters``; a case's own ``filters`` wins
over the file's ``plugin``) and must find exactly the feasible nodes and, where the case states
upstream's reason for a rejected node, report that reason for it. Each file names the upstream
file and commit it was read from; cases that cannot be written as manifests are listed under
``skipped``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from ..kit import run

DATA = Path(__file__).resolve().parent.parent / "data" / "upstream"
CASE_KEYS = frozenset({"name", "pod", "cluster", "feasible"})


def table_path(plugin: str) -> Path:
    """The table of the plugin module ``plugin`` (``kaffinity/simulate/plugins/<plugin>.py``)."""
    return DATA / f"{plugin}.yaml"


def load(path: Path) -> Any:
    return YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))


def filter_cases(plugin: str) -> list[Any]:
    """One pytest param per case of a filter table that loads; a broken file fails its shape test."""
    try:
        data = load(table_path(plugin))
        name, cases = data["plugin"], data["cases"]
    except Exception:  # noqa: BLE001 - reported by check_filter_table
        return []
    return [
        pytest.param(case.get("filters", name), case, id=case["name"])
        for case in (cases if isinstance(cases, list) else [])
        if isinstance(case, dict) and case.keys() >= CASE_KEYS
    ]


def _node_names(case: dict[str, Any]) -> set[str]:
    return {
        doc["metadata"]["name"]
        for doc in case["cluster"]
        if isinstance(doc, dict) and doc.get("kind") == "Node" and isinstance(doc.get("metadata"), dict)
    }


def check_filter_table(plugin: str, name: str) -> None:
    """The table of ``plugin`` is well formed and names the upstream plugin ``name``."""
    data = load(table_path(plugin))
    assert isinstance(data, dict), "a fixture file is a mapping"
    assert data.get("plugin") == name, "`plugin`: the --filters value, the upstream plugin's name"
    assert isinstance(data.get("source"), str) and data["source"], "`source`: upstream file and commit"
    cases = data.get("cases")
    assert isinstance(cases, list) and cases, "`cases`: at least one"
    names = [case.get("name") for case in cases if isinstance(case, dict)]
    assert len(names) == len(cases), "every case is a mapping"
    assert len(set(names)) == len(names), "case names are unique within a file"
    for case in cases:
        case_name = case.get("name")
        assert case.keys() >= CASE_KEYS, f"{case_name!r} lacks {sorted(CASE_KEYS - case.keys())}"
        assert isinstance(case_name, str) and case_name
        assert isinstance(case.get("filters", data["plugin"]), str), case_name
        assert isinstance(case["pod"], dict) and case["pod"].get("kind") == "Pod", case_name
        assert isinstance(case["cluster"], list), case_name
        assert all(isinstance(doc, dict) and doc.get("kind") for doc in case["cluster"]), case_name
        nodes = _node_names(case)
        feasible = case["feasible"]
        assert isinstance(feasible, list) and all(isinstance(node, str) for node in feasible), case_name
        assert set(feasible) <= nodes, f"{case_name!r}: feasible nodes missing from the cluster"
        reasons = case.get("reasons", {})
        assert isinstance(reasons, dict), case_name
        for node, texts in reasons.items():
            assert node in nodes and node not in feasible, f"{case_name!r}: reasons for {node!r}"
            assert isinstance(texts, list) and texts, case_name
            assert all(isinstance(text, str) for text in texts), case_name
    for skipped in data.get("skipped") or []:
        assert isinstance(skipped, dict) and skipped.get("name") and skipped.get("reason"), skipped


def place(tmp_path: Path, filters: str, case: dict[str, Any]) -> dict[str, Any]:
    """``kaffinity place --format json`` of the case's pod on its cluster, with ``filters``."""
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False  # libyaml refuses "pause:3.10" plain in flow style
    pod, cluster = tmp_path / "pod.yaml", tmp_path / "cluster.yaml"
    yaml.dump(case["pod"], pod)
    yaml.dump_all(case["cluster"], cluster)
    args = ["place", str(pod), "--cluster", str(cluster), "--filters", filters, "--format", "json"]
    result = run(*args)
    try:
        output: dict[str, Any] = json.loads(result.stdout)
    except ValueError:
        pytest.fail(
            f"`kaffinity {' '.join(args)}` exited {result.returncode} without JSON on stdout\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        )
    return output


def check_filter_case(tmp_path: Path, filters: str, case: dict[str, Any]) -> None:
    """The case's feasible nodes, exactly, and upstream's reason for each rejected node it names."""
    output = place(tmp_path, filters, case)
    assert output["pods"], "place reports the incoming pod"
    placed = output["pods"][0]
    assert sorted(placed["feasible"]) == sorted(case["feasible"]), case.get("note", "")
    rejected = placed.get("rejected") or {}
    for node, texts in (case.get("reasons") or {}).items():
        given = rejected.get(node, [])
        for text in texts:
            assert any(text in reason for reason in given), f"{node}: want {text!r}, got {given!r}"
