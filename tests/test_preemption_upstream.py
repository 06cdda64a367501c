"""``kaffinity place`` against upstream's DefaultPreemption tests, case by case.

``data/upstream_preemption.yaml`` restates cases of kube-scheduler's
``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go`` (header: commit,
how upstream's helpers map to manifests) whose outcome is one node and one set of victims: the
incoming ``pod`` goes through the default filters, finds no node, and preemption either evicts
exactly ``victims`` from ``node`` and binds the pod there, or (``node: null``) evicts nothing and
the pod stays Pending. Autoscaling is off (``--filters`` lists every other step), as upstream's
scheduler tests know no autoscaler.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from kaffinity.simulate.scheduler import AUTOSCALING, STEPS

from .kit import run

DATA = Path(__file__).resolve().parent / "data" / "upstream_preemption.yaml"


def _data() -> Any:
    return YAML(typ="safe", pure=True).load(DATA.read_text(encoding="utf-8"))


CASES = _data()["cases"]


def test_fixture_is_well_formed() -> None:
    data = _data()
    assert data["plugin"] == "DefaultPreemption" and "commit" in data["source"]
    names = [case["name"] for case in CASES]
    assert len(names) == len(set(names)) and len(names) >= 20
    for case in CASES:
        assert case["pod"]["kind"] == "Pod", case["name"]
        assert case["node"] is None or isinstance(case["node"], str), case["name"]
        assert isinstance(case["victims"], list), case["name"]
        assert case["node"] is not None or not case["victims"], case["name"]
    for skipped in data.get("skipped") or []:
        assert skipped.get("name") and skipped.get("reason"), skipped


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_upstream_preemption_case(tmp_path: Path, case: dict[str, Any]) -> None:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False  # libyaml refuses "pause:3.10" plain in flow style
    pod, cluster = tmp_path / "pod.yaml", tmp_path / "cluster.yaml"
    yaml.dump(case["pod"], pod)
    yaml.dump_all(case["cluster"], cluster)
    steps = ",".join(step for step in STEPS if step != AUTOSCALING)
    args = ["place", str(pod), "--cluster", str(cluster), "--filters", steps, "--format", "json"]
    result = run(*args)
    assert result.returncode in (0, 1), result.stderr
    placed = json.loads(result.stdout)["pods"][0]
    assert placed["node"] == case["node"], case.get("note", "")
    assert sorted(victim["name"] for victim in placed["victims"]) == sorted(case["victims"]), case.get(
        "note", ""
    )
