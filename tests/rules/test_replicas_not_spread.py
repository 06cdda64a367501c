"""The rule ``replicas-not-spread`` (kaffinity/rules/replicas_not_spread.py): replicas nothing spreads
beyond the scheduler's default (``systemDefaultConstraints`` in
``pkg/scheduler/framework/plugins/podtopologyspread``), advice at ``spec.replicas``; an autoscaler
decides the replica count.

The autoscaler is asserted by the related location; the advice (how many replicas, the maxSkew
to use, why an anti-affinity does not count) exists only as the message's wording, the subject
where a test reads it.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from kaffinity.findings import Severity

from ..kit import EXAMPLES, check, keys, lines, lint_paths, lint_text, position
from .graph_policy_inputs import (
    SPREAD,
    doc_at,
    doc_line,
    graph_workload,
    lint_objects,
    lint_rule,
    related_lines,
    term,
)


def hpa(
    target: str, namespace: str, minimum: int | None, kind: str = "Deployment", api: str = "autoscaling/v2"
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": kind, "name": target},
        "maxReplicas": 10,
    }
    if minimum is not None:
        spec["minReplicas"] = minimum
    return {
        "apiVersion": api,
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": target, "namespace": namespace},
        "spec": spec,
    }


# -- replicas-not-spread --------------------------------------------------------------------------


def test_replicas_without_spreading_are_advice_at_spec_replicas() -> None:
    web = graph_workload("web", "shop", {"app": "web"}, kind="Deployment", replicas=3)
    found = lint_objects(web, rule=SPREAD)
    assert keys(found) == [(SPREAD, *doc_at((web,), 0, '"replicas"'))]
    (finding,) = found
    assert finding.severity is Severity.INFO and finding.path == "spec.replicas"
    assert "3 replicas" in finding.message and "maxSkew 3" in finding.message
    assert finding.fix and "pod-template-hash" in finding.fix


@pytest.mark.parametrize(
    "spreading",
    [
        {"anti": [term({"matchLabels": {"app": "web"}})]},
        {"preferred": [term({"matchLabels": {"app": "web"}}, "topology.kubernetes.io/zone")]},
        # any constraint counts, even one that does not select the workload's own pods
        {
            "spread": [
                {
                    "maxSkew": 1,
                    "topologyKey": "kubernetes.io/hostname",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": "other"}},
                }
            ]
        },
        {"affinity": [term({"matchLabels": {"app": "web"}})]},
        {"pod": {"nodeSelector": {"kubernetes.io/hostname": "n1"}}},
        {"pod": {"nodeName": "n1"}},
        {
            "pod": {
                "containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 80, "hostPort": 80}]}]
            }
        },
    ],
)
def test_anything_that_spreads_or_places_the_replicas_is_quiet(spreading: dict[str, Any]) -> None:
    assert (
        keys(
            lint_objects(graph_workload("web", "shop", {"app": "web"}, replicas=3, **spreading), rule=SPREAD)
        )
        == []
    )


def test_anti_affinity_on_other_pods_does_not_spread_and_the_message_says_so() -> None:
    web = graph_workload(
        "web", "shop", {"app": "web"}, replicas=2, anti=[term({"matchLabels": {"app": "batch"}})]
    )
    found = lint_objects(web, rule=SPREAD)
    assert keys(found) == [(SPREAD, *doc_at((web,), 0, '"replicas"'))]
    (finding,) = found
    # The wording is the subject: it says why the anti-affinity it has does not count.
    assert "does not select its own pods (labels app=web)" in finding.message


@pytest.mark.parametrize("kind", ["DaemonSet", "Job", "CronJob", "Pod"])
def test_other_kinds_are_skipped(kind: str) -> None:
    obj: dict[str, Any]
    if kind in ("DaemonSet",):
        obj = graph_workload("x", "shop", {"app": "x"}, kind=kind)
    elif kind == "Pod":
        obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "x", "namespace": "shop", "labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        }
    else:
        job = {
            "parallelism": 3,
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]},
            },
        }
        spec = job if kind == "Job" else {"schedule": "* * * * *", "jobTemplate": {"spec": job}}
        obj = {
            "apiVersion": "batch/v1",
            "kind": kind,
            "metadata": {"name": "x", "namespace": "shop"},
            "spec": spec,
        }
    assert keys(lint_objects(obj, rule=SPREAD)) == []


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "ReplicaSet"])
def test_replicated_kinds_fire_and_single_or_default_replicas_do_not(kind: str) -> None:
    two = graph_workload("x", "shop", {"app": "x"}, kind=kind, replicas=2)
    assert keys(lint_objects(two, rule=SPREAD)) == [(SPREAD, *doc_at((two,), 0, '"replicas"'))]
    assert (
        keys(lint_objects(graph_workload("x", "shop", {"app": "x"}, kind=kind, replicas=1), rule=SPREAD))
        == []
    )
    assert (
        keys(lint_objects(graph_workload("x", "shop", {"app": "x"}, kind=kind, replicas=None), rule=SPREAD))
        == []
    )


def test_replication_controllers_fire() -> None:
    text = """\
    apiVersion: v1
    kind: ReplicationController
    metadata: {name: rc, namespace: shop}
    spec:
      replicas: 3
      template:
        metadata: {labels: {app: rc}}
        spec: {containers: [{name: c, image: x}]}
    """
    assert lines(lint_rule(text, SPREAD)) == [(SPREAD, 5)]


def test_a_template_without_labels_is_a_fragment_and_quiet() -> None:
    text = """\
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: patch}
    spec:
      replicas: 2
      template:
        spec:
          affinity:
            podAntiAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                - labelSelector: {matchLabels: {app: patch}}
                  topologyKey: kubernetes.io/hostname
    """
    assert lines(lint_rule(text, SPREAD)) == []


def test_an_autoscaler_decides_the_replica_count() -> None:
    web = graph_workload("web", "shop", {"app": "web"}, kind="Deployment", replicas=5)
    # minReplicas defaults to 1: the autoscaler may run one replica; quiet
    assert keys(lint_objects(web, hpa("web", "shop", None, api="autoscaling/v1"), rule=SPREAD)) == []
    assert keys(lint_objects(web, hpa("web", "shop", 1), rule=SPREAD)) == []
    # minReplicas 3 with a replicas field: reported at spec.replicas, the autoscaler related
    objects = (web, hpa("web", "shop", 3))
    (finding,) = lint_objects(*objects, rule=SPREAD)
    assert (finding.line, finding.column) == doc_at(
        objects, 0, '"replicas"'
    ) and finding.path == "spec.replicas"
    assert "at least 3 replicas" in finding.message
    assert "HorizontalPodAutoscaler web" in finding.message and related_lines(finding) == [doc_line(1)]
    # another namespace, kind or name: not this workload's autoscaler
    at_replicas = [(SPREAD, *doc_at((web,), 0, '"replicas"'))]
    assert keys(lint_objects(web, hpa("web", "other", 1), rule=SPREAD)) == at_replicas
    assert keys(lint_objects(web, hpa("web", "shop", 1, kind="StatefulSet"), rule=SPREAD)) == at_replicas


def test_an_autoscaler_counts_when_the_replicas_field_is_absent() -> None:
    text = """\
    apiVersion: apps/v1
    kind: StatefulSet
    metadata: {name: db, namespace: shop}
    spec:
      serviceName: db
      selector: {matchLabels: {app: db}}
      template:
        metadata: {labels: {app: db}}
        spec: {containers: [{name: c, image: x}]}
    ---
    apiVersion: autoscaling/v2
    kind: HorizontalPodAutoscaler
    metadata: {name: db-hpa, namespace: shop}
    spec:
      scaleTargetRef: {apiVersion: apps/v1, kind: StatefulSet, name: db}
      minReplicas: 2
      maxReplicas: 4
    """
    result = lint_rule(text, SPREAD)
    assert keys(result) == [(SPREAD, *position(textwrap.dedent(text), "minReplicas"))]
    assert "db-hpa" in result.findings[0].message


# -- replicas-not-spread: hostNetwork gives every container port a hostPort ---------------------


def test_host_network_replicas_are_spread_by_their_host_ports() -> None:
    """istio's hello-host-network (7 replicas, hostNetwork, containerPort 80): quiet."""
    path = EXAMPLES / "replicas-not-spread" / "pass-host-network.yaml"
    assert keys(lint_paths(path, select=("replicas-not-spread",))) == []


def test_host_network_without_ports_is_still_not_spread() -> None:
    """No container port, no defaulted hostPort: the scheduler may put the replicas together."""
    path = EXAMPLES / "replicas-not-spread" / "pass-host-network.yaml"
    text = path.read_text(encoding="utf-8").replace(
        "          ports:\n            - name: http\n              containerPort: 80\n", ""
    )
    result = check(
        text, ("replicas-not-spread", *position(text, "replicas: 7")), select=("replicas-not-spread",)
    )
    assert result.findings[0].path == "spec.replicas"


# An object the API server refuses is never created, so it has no replicas to spread:
# api-validation's error is the finding, once (kaffinity.explain.precedence.refused).

#: bridgecrewio/checkov tests/kubernetes/graph/checks/resources/IsNotEmpty/Failing/deployment.yaml:
#: an empty selector, which ValidateDeploymentSpec refuses ("empty selector is invalid for deployment").
_EMPTY_SELECTOR = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: failing-selector-deployment
spec:
  replicas: 2
  # Intentionally leaving matchLabels empty
  selector:
    matchLabels: {}
  template:
    metadata:
      labels:
        app: my-failing-selector-app
    spec:
      containers:
        - name: my-container
          image: nginx:latest
          ports:
            - containerPort: 80
"""

#: kyverno/kyverno test/cli/test/autogen/resources.yaml: a selector the template's labels do not
#: match, which ValidateStatefulSetSpec refuses ("`selector` does not match template `labels`").
_MISMATCH = """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: StatefulSet-with-labels
spec:
  serviceName: "nginx"
  replicas: 2
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: my-pod
        owner: me
"""


@pytest.mark.parametrize("text", [_EMPTY_SELECTOR, _MISMATCH])
def test_an_object_the_api_server_refuses_is_not_advised(text: str) -> None:
    found = lint_text(text, select=(SPREAD, "api-validation"))
    assert {finding.rule for finding in found.findings} == {"api-validation"}
    # Without api-validation running, nothing gives way to it: the advice stays.
    alone = lint_text(text, select=(SPREAD,))
    assert keys(alone) == [(SPREAD, *position(text, "replicas:"))]
