"""``kaffinity explain`` against kube-scheduler (the oracle's ``schedule`` op) on generated captures.

Each capture (tests/differential/captures.py: a realistic cluster with Pending pods for every
reason the scheduler gives) is explained by kaffinity; each Pending pod, in kaffinity's queue
order, is then scheduled by the oracle on the capture's nodes and bound pods, with its budgets
and PriorityClasses. They must agree on whether the pod stays Pending, on the FailedScheduling
message, on the plugin that refuses each node, and, when preemption makes room, on the node
nominated and the victims.

The oracle schedules the Pending pods as one queue when it has the ``pending`` list
(oracle/README.md): all of them in one request, in kaffinity's queue order (the oracle keeps the
order of equal priorities), with ``prefer`` naming the node kaffinity chose for each pod it
places (upstream binds it there when that node is feasible: its own pick among equally scored
nodes is random) and ``retryNominated`` (a pod preemption nominated is scheduled again once its
victims are gone, before the next pod, as kaffinity binds it at once). Every pod is then
compared, up to the first preemption whose nominated node differs from kaffinity's (a random
tie upstream, after which the clusters differ). An oracle without the queue is asked pod by pod
with the earlier Pending pods left out, which is what kaffinity's queue did only while every
earlier pod stayed Pending: from the first pod kaffinity placed or preempted for, the rest of
that capture is not compared (that pod itself is).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import example, given, settings

from kaffinity.config import Settings
from kaffinity.explain.why import Explained, plugin_of
from kaffinity.run.explain import explain_file
from kaffinity.simulate.plugins.nodeaffinity import REASON_PINNED
from tests.differential.captures import captures, node, pod, seeded
from tests.differential.differences import known
from tests.differential.oracle import Oracle, compared, examples

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
    # Nodes absent from NodeAffinity's PreFilter result have a status but no rejecting plugin
    # upstream (SetAbsentNodesStatus): the message counts them, rejectedBy does not list them.
    mine = {
        node: plugin_of(reasons[0]) for node, reasons in each.rejected.items() if reasons[0] != REASON_PINNED
    }
    assert mine == answer["rejectedBy"]


_DROPS: dict[int, bool] = {}


def drops_nominations(oracle: Oracle) -> bool:
    """Whether the oracle loses a pending pod's status.nominatedNodeName (asked once): a pod
    nominated to a node where a victim still terminates is "not eligible" to preempt again
    when the nomination is kept."""
    if id(oracle) not in _DROPS:
        victim = pod("victim", "x", labels={"app": "v"}, cpu="900m", node_name="n1")
        victim["metadata"]["deletionTimestamp"] = "2026-11-29T09:00:00Z"
        victim["status"]["conditions"] = [
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        ]
        waiting = pod("waiting", "x", labels={"app": "w"}, cpu="500m", priority=10, nominated="n1")
        answer = oracle.ask(
            {"op": "schedule", "nodes": [node("n1", "z", 1)], "pods": [victim], "pod": waiting}
        )
        _DROPS[id(oracle)] = "terminating pod on the nominated node" not in str(answer.get("message"))
    return _DROPS[id(oracle)]


def queue_request(capture: dict[str, Any], pods: list[Explained]) -> dict[str, Any]:
    """The whole queue in one request (the oracle's ``pending`` list)."""
    single = request(capture, pods[0].workload.ref.name)
    by_name = {item["metadata"]["name"]: item for item in capture["items"] if item["kind"] == "Pod"}
    del single["pod"]
    return {
        **single,
        "pending": [by_name[each.workload.ref.name] for each in pods],
        "prefer": {
            f"{each.workload.ref.namespace}/{each.workload.ref.name}": each.node
            for each in pods
            if each.node is not None and not each.victims
        },
        "retryNominated": True,
    }


def agree_queued(each: Explained, answer: dict[str, Any]) -> bool:
    """One pod of the queue; False when the clusters part from here (a preemption upstream
    nominated another node for, among equally good ones)."""
    if answer["node"] is not None:
        # placed: upstream bound it where kaffinity did (``prefer``), or that node was not feasible
        assert (each.node, each.victims) == (answer["node"], ())
        return True
    agree(each, {**answer, "ok": True})
    nominated = answer.get("nominatedNode")
    return nominated is None or nominated == each.node


@settings(max_examples=examples(EXPLAIN_EXAMPLES), deadline=None, database=None, derandomize=True)
@given(capture=captures())
# Disagreements found and fixed: the message of a preemption that made room ("preemption: found
# a potential placement ...", the example capture); a pod nominated to a node its node selector
# refuses may preempt again (its nominated node UnschedulableAndUnresolvable).
@example(capture=seeded(7, 4, 2, ["anti-affinity", "taint", "resources", "preemption", "ports"]))
@example(capture=seeded(3, 3, 2, ["nominated+taint"]))
def test_explain_agrees_with_kube_scheduler(oracle: Oracle, capture: dict[str, Any]) -> None:
    pods = explained(capture)
    if not pods:
        return
    if any(each.nominated for each in pods):
        # An oracle that creates the pods it schedules (PrepareForCreate) drops a captured
        # status.nominatedNodeName: then such captures are not compared. Otherwise they are
        # asked pod by pod, each pod only while no other nominated pod of at least its priority
        # holds room for it (absent from a single pod's request).
        if drops_nominations(oracle):
            known("explain", "queue-drops-nominations")
            return
        for each in pods:
            if any(o.nominated and o is not each and o.priority >= each.priority for o in pods):
                known("explain", "queue-drops-nominations")
                break
            agree(each, oracle.ask(request(capture, each.workload.ref.name)))
            compared("explain")
            if each.node is not None:
                break
        return
    answer = oracle.ask(queue_request(capture, pods))
    if "results" in answer:
        assert [result["pod"] for result in answer["results"]] == [
            f"{each.workload.ref.namespace}/{each.workload.ref.name}" for each in pods
        ]
        for each, result in zip(pods, answer["results"], strict=True):
            compared("explain")
            if not agree_queued(each, result):
                break
        return
    for each in pods:  # an oracle without the queue: pod by pod
        agree(each, oracle.ask(request(capture, each.workload.ref.name)))
        compared("explain")
        if each.node is not None:
            break  # the next pods would see this one placed


def test_the_example_capture_agrees_with_kube_scheduler(oracle: Oracle) -> None:
    """docs/explain.md's capture (examples/captures/shop.yaml), the whole queue: every Pending
    pod's message and rejecting plugins are kube-scheduler's (the DaemonSet pod carries the
    controller's matchFields affinity to its node, as a real capture does)."""
    from ruamel.yaml import YAML

    shop = Path(__file__).resolve().parents[2] / "examples" / "captures" / "shop.yaml"
    capture = YAML(typ="safe").load(shop.read_text(encoding="utf-8"))
    pods = explained(capture)
    assert len(pods) == 5
    answer = oracle.ask(queue_request(capture, pods))
    assert len(answer["results"]) == len(pods)
    for each, result in zip(pods, answer["results"], strict=True):
        compared("explain")
        assert agree_queued(each, result)
