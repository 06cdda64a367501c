"""``kaffinity explain`` against kube-scheduler (the oracle's ``schedule`` op) on generated captures.

Each capture (tests/differential/captures.py: a realistic cluster with Pending pods for every
reason the scheduler gives) is explained by kaffinity; each Pending pod, in kaffinity's queue
order, is then scheduled by the oracle on the capture's nodes and bound pods, with its budgets
and PriorityClasses. They must agree on whether the pod stays Pending, on the FailedScheduling
message, on the plugin that refuses each node, and, when preemption makes room, on the node
nominated and the victims.

The oracle schedules one pod a request (oracle/README.md; a ``pending`` queue of several pods is
being added). Until it is, each pod is asked on its own with the earlier Pending pods left out,
which is what kaffinity's queue did only while every earlier pod stayed Pending without evicting
anything: from the first earlier pod kaffinity placed or preempted for, the rest of that
capture is not compared (that pod itself is).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings

from kaffinity.config import Settings
from kaffinity.explain.why import Explained, plugin_of
from kaffinity.run.explain import explain_file
from tests.differential.captures import captures
from tests.differential.conftest import compared
from tests.differential.differences import known
from tests.differential.oracle import Oracle, examples

#: Each case asks the oracle once per Pending pod (about 0.1 s each: a scheduler is built per
#: request), so the default count is lower than the other areas'; the long mode raises it.
EXPLAIN_EXAMPLES = 30


def explained(capture: dict[str, Any]) -> list[Explained]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "capture.yaml"
        path.write_text(json.dumps(capture), encoding="utf-8")
        return explain_file(str(path), Settings()).explained


def request(capture: dict[str, Any], name: str) -> dict[str, Any]:
    items = capture["items"]
    pods = [item for item in items if item["kind"] == "Pod"]
    return {
        "op": "schedule",
        "nodes": [item for item in items if item["kind"] == "Node"],
        "pods": [item for item in pods if item["spec"].get("nodeName")],
        "pod": next(item for item in pods if item["metadata"]["name"] == name),
        "pdbs": [item for item in items if item["kind"] == "PodDisruptionBudget"],
        "priorityClasses": [item for item in items if item["kind"] == "PriorityClass"],
    }


def agree(each: Explained, answer: dict[str, Any]) -> None:
    """kaffinity's explanation of one Pending pod is what kube-scheduler says of it.

    Where upstream draws lots, only what does not depend on the draw is compared: the node a
    placed pod gets among equally scored ones (``known("explain", "random-host")``), and the
    node preemption nominates among equally good candidates (``known("explain",
    "random-preemption-start")``): there the message is compared with the node's name as
    kaffinity chose it, and the number of victims."""
    assert answer["ok"], answer
    nominated = answer.get("nominatedNode")
    if answer["node"] is not None:
        known("explain", "random-host")
        assert each.node is not None and not each.victims
        return
    message = answer["message"]
    if nominated is not None:
        known("explain", "random-preemption-start")
        assert each.node is not None and len(each.victims) == len(answer.get("victims", []))
        message = message.replace(f"on node {nominated},", f"on node {each.node},")
    else:
        assert each.node is None
    assert each.message == message
    mine = {node: plugin_of(reasons[0]) for node, reasons in each.rejected.items()}
    assert mine == answer["rejectedBy"]


@settings(max_examples=examples(EXPLAIN_EXAMPLES), deadline=None, database=None, derandomize=True)
@given(capture=captures())
def test_explain_agrees_with_kube_scheduler(oracle: Oracle, capture: dict[str, Any]) -> None:
    for each in explained(capture):
        agree(each, oracle.ask(request(capture, each.workload.ref.name)))
        compared("explain")
        if each.node is not None:
            break  # the oracle does not hold the queue yet: the next pods would see this one placed
