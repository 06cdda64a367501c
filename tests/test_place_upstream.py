"""``kaffinity place`` against upstream kube-scheduler filter tests, case by case.

Every ``data/upstream/*.yaml`` file restates the Filter test tables of one upstream scheduler plugin
(InterPodAffinity, PodTopologySpread, NodeAffinity, TaintToleration, NodeResourcesFit; NodeUnschedulable
and NodeName share ``misc.yaml``) as manifests: the incoming ``pod``, the ``cluster`` (Nodes, existing
Pods bound by ``spec.nodeName``, Namespaces) and the ``feasible`` nodes, those for which upstream expects
no error status. Each case runs ``kaffinity place`` with only that plugin enabled (``--filters``; a case's
own ``filters`` wins over the file's ``plugin``) and must find exactly the feasible nodes and, where the
case states upstream's reason for a rejected node, report that reason for it. Each file names the upstream
file and commit it was read from; cases that cannot be written as manifests are listed under ``skipped``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from .kit import run

DATA = Path(__file__).resolve().parent / "data" / "upstream"
FILES = sorted(DATA.glob("*.yaml"))
CASE_KEYS = frozenset({"name", "pod", "cluster", "feasible"})


def _load(path: Path) -> Any:
    return YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))


def _cases() -> list[Any]:
    """One pytest param per case of every fixture file that loads; a broken file fails its shape test."""
    params = []
    for path in FILES:
        try:
            data = _load(path)
            plugin, cases = data["plugin"], data["cases"]
        except Exception:  # noqa: BLE001 - reported by test_fixture_file_is_well_formed
            continue
        for case in cases if isinstance(cases, list) else []:
            if isinstance(case, dict) and case.keys() >= CASE_KEYS:
                case_id = f"{path.stem}: {case['name']}"
                params.append(pytest.param(case.get("filters", plugin), case, id=case_id))
    return params


def _node_names(case: dict[str, Any]) -> set[str]:
    return {
        doc["metadata"]["name"]
        for doc in case["cluster"]
        if isinstance(doc, dict) and doc.get("kind") == "Node" and isinstance(doc.get("metadata"), dict)
    }


def _place(tmp_path: Path, filters: str, case: dict[str, Any]) -> dict[str, Any]:
    yaml = YAML(typ="safe", pure=True)
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
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}\nexception: {result.exception!r}"
        )
    return output


def test_fixture_files_exist() -> None:
    assert FILES, f"no fixture files in {DATA}"


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_fixture_file_is_well_formed(path: Path) -> None:
    data = _load(path)
    assert isinstance(data, dict), "a fixture file is a mapping"
    assert isinstance(data.get("plugin"), str) and data["plugin"], "`plugin`: the --filters value"
    assert isinstance(data.get("source"), str) and data["source"], "`source`: upstream file and commit"
    cases = data.get("cases")
    assert isinstance(cases, list) and cases, "`cases`: at least one"
    names = [case.get("name") for case in cases if isinstance(case, dict)]
    assert len(names) == len(cases), "every case is a mapping"
    assert len(set(names)) == len(names), "case names are unique within a file"
    for case in cases:
        name = case.get("name")
        assert case.keys() >= CASE_KEYS, f"{name!r} lacks {sorted(CASE_KEYS - case.keys())}"
        assert isinstance(name, str) and name
        assert isinstance(case.get("filters", data["plugin"]), str), name
        assert isinstance(case["pod"], dict) and case["pod"].get("kind") == "Pod", name
        assert isinstance(case["cluster"], list), name
        assert all(isinstance(doc, dict) and doc.get("kind") for doc in case["cluster"]), name
        nodes = _node_names(case)
        feasible = case["feasible"]
        assert isinstance(feasible, list) and all(isinstance(node, str) for node in feasible), name
        assert set(feasible) <= nodes, f"{name!r}: feasible nodes missing from the cluster"
        reasons = case.get("reasons", {})
        assert isinstance(reasons, dict), name
        for node, texts in reasons.items():
            assert node in nodes and node not in feasible, f"{name!r}: reasons for {node!r}"
            assert isinstance(texts, list) and texts and all(isinstance(text, str) for text in texts), name
    for skipped in data.get("skipped") or []:
        assert isinstance(skipped, dict) and skipped.get("name") and skipped.get("reason"), skipped


@pytest.mark.parametrize(("filters", "case"), _cases())
def test_upstream_filter_case(tmp_path: Path, filters: str, case: dict[str, Any]) -> None:
    output = _place(tmp_path, filters, case)
    assert output["pods"], "place reports the incoming pod"
    placed = output["pods"][0]
    assert sorted(placed["feasible"]) == sorted(case["feasible"]), case.get("note", "")
    rejected = placed.get("rejected") or {}
    for node, texts in (case.get("reasons") or {}).items():
        given = rejected.get(node, [])
        for text in texts:
            assert any(text in reason for reason in given), f"{node}: want {text!r}, got {given!r}"
