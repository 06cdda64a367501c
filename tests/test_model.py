"""The typed model: one view of each workload's pods, with the API's defaults."""

from __future__ import annotations

from decimal import Decimal

import pytest

from kaffinity.k8s.model import Inventory, Node, PodDisruptionBudget, build_inventory
from kaffinity.k8s.quantity import parse_quantity
from kaffinity.load.parse import parse

from . import kit


def _inventory(text: str) -> Inventory:
    return build_inventory(parse("m.yaml", text).documents)


@pytest.mark.parametrize(
    ("kind", "spec", "replicas"),
    [
        ("apps/v1/Deployment", "{}", 1),
        ("apps/v1/Deployment", "{replicas: 4}", 4),
        ("apps/v1/StatefulSet", "{}", 1),
        ("apps/v1/ReplicaSet", "{replicas: 0}", 0),
        ("v1/ReplicationController", "{}", 1),
        ("apps/v1/DaemonSet", "{}", None),
        ("batch/v1/Job", "{}", 1),
        ("batch/v1/Job", "{parallelism: 5, completions: 3}", 3),
        ("batch/v1/CronJob", "{jobTemplate: {spec: {parallelism: 2}}}", 2),
        ("v1/Pod", "{}", 1),
    ],
)
def test_replicas_with_api_defaults(kind: str, spec: str, replicas: int | None) -> None:
    api_version, name = kind.rsplit("/", 1)
    text = f"apiVersion: {api_version}\nkind: {name}\nmetadata: {{name: w}}\nspec: {spec}\n"
    assert kit.workload_of(text).replicas == replicas


def test_update_strategy_defaults() -> None:
    deployment = kit.workload_of("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n")
    assert deployment.strategy is not None
    assert (deployment.strategy.type, deployment.strategy.max_surge, deployment.strategy.max_unavailable) == (
        "RollingUpdate",
        "25%",
        "25%",
    )
    text = (
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: d}\n"
        "spec: {updateStrategy: {rollingUpdate: {maxSurge: 1}}}\n"
    )
    daemon = kit.workload_of(text)
    assert daemon.strategy is not None and (daemon.strategy.max_surge, daemon.strategy.max_unavailable) == (
        1,
        1,
    )
    sts = kit.workload_of("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\n")
    assert sts.strategy is not None and (sts.strategy.partition, sts.strategy.max_unavailable) == (0, 1)
    assert sts.pod_management_policy == "OrderedReady"


def test_unknown_groups_are_not_workloads() -> None:
    text = "apiVersion: apps.kruise.io/v1alpha1\nkind: DaemonSet\nmetadata: {name: k}\n"
    assert _inventory(text).workloads == ()


def test_pod_view_and_typed_terms_keep_their_paths() -> None:
    text = """\
apiVersion: batch/v1
kind: CronJob
metadata: {name: backup, namespace: ops}
spec:
  jobTemplate:
    spec:
      template:
        metadata:
          labels: {app: backup, version: 1.0}
        spec:
          nodeSelector: {disk: ssd}
          tolerations: [{key: dedicated, operator: Equal, value: ops, effect: NoSchedule}]
          affinity:
            podAffinity:
              preferredDuringSchedulingIgnoredDuringExecution:
                - weight: 50
                  podAffinityTerm:
                    labelSelector:
                      matchExpressions: [{key: app, operator: In, values: [db]}]
                    topologyKey: kubernetes.io/hostname
                    matchLabelKeys: [pod-template-hash]
          topologySpreadConstraints:
            - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {}}
          containers: [{name: c, resources: {requests: {cpu: 250m, memory: 64Mi}}}]
"""
    workload = kit.workload_of(text)
    pod = workload.pod
    assert workload.ref.namespace == "ops"
    assert pod.labels == (("app", "backup"),)  # a number is no label value
    assert pod.node_selector == (("disk", "ssd"),)
    assert pod.tolerations[0].effect == "NoSchedule"
    assert pod.affinity is not None and pod.affinity.pod_affinity is not None
    (weighted,) = pod.affinity.pod_affinity.preferred
    assert weighted.weight == 50
    assert weighted.term.match_label_keys == ("pod-template-hash",)
    assert weighted.term.label_selector is not None
    (requirement,) = weighted.term.label_selector.match_expressions
    assert (requirement.key, requirement.operator, requirement.values) == ("app", "In", ("db",))
    base = ("spec", "jobTemplate", "spec", "template", "spec", "affinity", "podAffinity")
    assert requirement.path == (
        *base,
        "preferredDuringSchedulingIgnoredDuringExecution",
        0,
        "podAffinityTerm",
        "labelSelector",
        "matchExpressions",
        0,
    )
    (spread,) = pod.topology_spread_constraints
    assert spread.label_selector is not None and spread.label_selector.is_empty
    assert dict(pod.requests) == {"cpu": Decimal("0.25"), "memory": Decimal(64 * 2**20)}


def test_requests_follow_the_scheduler_formula() -> None:
    text = """\
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  overhead: {cpu: 100m}
  initContainers:
    - {name: setup, resources: {requests: {cpu: "2"}}}
    - {name: proxy, restartPolicy: Always, resources: {requests: {cpu: 500m}}}
    - {name: late, resources: {requests: {cpu: "1"}}}
  containers:
    - {name: a, resources: {limits: {cpu: "1", memory: 1Gi}}}
    - {name: b, resources: {requests: {cpu: 250m}}}
"""
    requests = dict(kit.workload_of(text).pod.requests)
    # app 1.25 + sidecar 0.5 = 1.75; init peak max(2, 1 + 0.5) = 2; max = 2; + overhead 0.1
    assert requests["cpu"] == Decimal("2.1")
    assert requests["memory"] == Decimal(2**30)


def test_rc_selector_defaults_to_template_labels() -> None:
    text = (
        "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: r}\n"
        "spec:\n  template:\n    metadata: {labels: {app: r}}\n"
    )
    selector = kit.workload_of(text).selector
    assert selector is not None and selector.match_labels == (("app", "r"),)


def test_nodes_namespaces_and_pdbs() -> None:
    text = """\
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {topology.kubernetes.io/zone: a}}
spec: {taints: [{key: gpu, effect: NoSchedule}], unschedulable: true}
status: {allocatable: {cpu: "4", pods: "110"}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pdb}
spec: {minAvailable: 50%, selector: {matchLabels: {app: web}}}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {team: a}}
"""
    inventory = _inventory(text)
    (node,) = inventory.nodes
    assert isinstance(node, Node) and node.unschedulable and node.taints[0].key == "gpu"
    assert dict(node.allocatable) == {"cpu": Decimal(4), "pods": Decimal(110)}
    (pdb,) = inventory.pdbs
    assert (
        isinstance(pdb, PodDisruptionBudget) and pdb.min_available == "50%" and pdb.ref.namespace == "default"
    )
    assert inventory.namespaces[0].ref.namespace is None and inventory.namespaces[0].labels == (
        ("team", "a"),
    )


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", "0.5"),
        ("1Gi", str(2**30)),
        ("2e3", "2000"),
        ("1.5k", "1500"),
        ("7", "7"),
        ("1Gb", None),
        ("", None),
    ],
)
def test_quantities(text: str, value: str | None) -> None:
    parsed = parse_quantity(text)
    assert parsed == (None if value is None else Decimal(value))


def test_wrong_types_read_as_absent() -> None:
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n"
        "spec: {replicas: three, template: [1, 2]}\n"
    )
    workload = kit.workload_of(text)
    assert workload.replicas == 1 and workload.pod.labels == () and workload.pod.affinity is None


def test_labels_read_the_same_and_are_kept_once() -> None:
    from kaffinity.k8s.model.readers import as_labels

    first = as_labels({"app": "web", "tier": "front", "replicas": 3})
    again = as_labels({"app": "web", "tier": "front"})
    assert first == (("app", "web"), ("tier", "front"))
    assert again is first  # the same labels, one tuple
    other = as_labels({"tier": "front", "app": "web"})
    assert other == (("tier", "front"), ("app", "web"))  # the order is the mapping's
    assert other[0] is first[1]  # the same pair, one tuple
    assert as_labels(["app"]) == () and as_labels({"app": None}) == ()
