"""Deterministic synthetic Kubernetes manifests for the kaffinity benchmarks.

``python benchmarks/generate.py OUT --workloads N [--per-file K] [--seed S] [--nodes M --zones Z]``
writes ``OUT/manifests/<namespace>/NNNN.yaml``: multi-document YAML files of K documents each
(default 5). Most workloads are Deployments; StatefulSets, DaemonSets, Jobs, CronJobs and bare
Pods follow, with Services, PodDisruptionBudgets, a few Namespace objects and now and then a
``kind: List`` document that bundles a workload with its Service. About 40% of the pod templates
carry scheduling rules: nodeSelector, tolerations, node affinity, required pod anti-affinity on the
workload's own app, preferred pod affinity to another workload's label, preferred anti-affinity
to the data tier of every namespace (``namespaceSelector: {}``) and topology spread constraints.
With ``--nodes M`` it also writes ``OUT/cluster.yaml``, a ``kind: List`` of Nodes.

The same arguments always give byte-identical output (one ``random.Random(seed)`` drives every
choice). The YAML is written by a small emitter here, not by a YAML library, so that generating
100,000 workloads takes seconds; it quotes every string that YAML 1.1 would read as something else.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

Data = dict[str, Any]

KINDS: tuple[tuple[str, int], ...] = (
    ("Deployment", 60),
    ("StatefulSet", 12),
    ("DaemonSet", 6),
    ("Job", 7),
    ("CronJob", 7),
    ("Pod", 8),
)
SCHEDULED_SHARE = 0.40
WORKLOADS_PER_NAMESPACE = 50
MAX_NAMESPACES = 200
LIST_SHARE = 0.03
REGION = "eu-west-1"

_TEAMS = (
    "payments",
    "checkout",
    "catalog",
    "search",
    "identity",
    "billing",
    "ledger",
    "orders",
    "shipping",
    "inventory",
    "pricing",
    "reviews",
    "media",
    "notify",
    "analytics",
    "platform",
    "observability",
    "ingest",
    "ml",
    "risk",
)
_NOUNS = (
    "api",
    "web",
    "worker",
    "gateway",
    "cache",
    "queue",
    "indexer",
    "scheduler",
    "exporter",
    "renderer",
    "sync",
    "backend",
    "frontend",
    "proxy",
    "store",
    "stream",
    "batch",
    "router",
    "auth",
    "mailer",
    "resizer",
    "collector",
    "planner",
    "tracker",
)
_ADJECTIVES = (
    "blue",
    "fast",
    "core",
    "edge",
    "main",
    "live",
    "bulk",
    "quiet",
    "north",
    "south",
    "prime",
    "lite",
    "deep",
    "shared",
    "central",
    "local",
)
_INSTANCE_TYPES = ("m6i.large", "m6i.xlarge", "m6i.2xlarge", "c6i.2xlarge", "r6i.xlarge")
_GPU_INSTANCE = "g5.2xlarge"
_INSTANCE_SIZE: dict[str, tuple[int, int]] = {  # vCPU, GiB
    "m6i.large": (2, 8),
    "m6i.xlarge": (4, 16),
    "m6i.2xlarge": (8, 32),
    "c6i.2xlarge": (8, 16),
    "r6i.xlarge": (4, 32),
    _GPU_INSTANCE: (8, 32),
}
_POOLS = ("general", "compute", "memory")
_CPU_REQUESTS = ("50m", "100m", "250m", "500m", "1", "2")
_MEMORY_REQUESTS = ("64Mi", "128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi")
_LOG_LEVELS = ("debug", "info", "warn")

# --- a small YAML emitter --------------------------------------------------------------------

_PLAIN_WORD = re.compile(r"[A-Za-z/][A-Za-z0-9_./-]*(?::[A-Za-z0-9_./-]+)*")
_PLAIN_QUANTITY = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:m|k|M|G|Ki|Mi|Gi|Ti)")
# Short lists of scalars that manifests usually write in flow style.
_FLOW_KEYS = frozenset(("command", "args", "matchLabelKeys", "accessModes", "drop"))
_YAML11_WORDS = frozenset(
    word
    for base in ("y", "n", "yes", "no", "on", "off", "true", "false", "null")
    for word in (base, base.capitalize(), base.upper())
)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    text = str(value)
    if text in _YAML11_WORDS:
        return f'"{text}"'
    if _PLAIN_WORD.fullmatch(text) or _PLAIN_QUANTITY.fullmatch(text):
        return text
    return json.dumps(text)  # a JSON string is a valid YAML double-quoted scalar


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, dict | list) or not value


def _leaf(value: Any) -> str:
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _scalar(value)


def _emit(value: Any, indent: int, out: list[str]) -> None:
    """Block style, sequences indented under their key, as people write manifests."""
    pad = " " * indent
    if isinstance(value, dict):
        for key, item in value.items():
            if _is_scalar(item):
                out.append(f"{pad}{_scalar(key)}: {_leaf(item)}\n")
            elif key in _FLOW_KEYS and isinstance(item, list) and all(map(_is_scalar, item)):
                out.append(f"{pad}{_scalar(key)}: [{', '.join(_scalar(v) for v in item)}]\n")
            else:
                out.append(f"{pad}{_scalar(key)}:\n")
                _emit(item, indent + 2, out)
        return
    for item in value:
        if _is_scalar(item):
            out.append(f"{pad}- {_leaf(item)}\n")
            continue
        inner: list[str] = []
        _emit(item, indent + 2, inner)
        inner[0] = f"{pad}- {inner[0][indent + 2 :]}"
        out.extend(inner)


def to_yaml(document: Data) -> str:
    out: list[str] = []
    _emit(document, 0, out)
    return "".join(out)


# --- objects ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GenerateResult:
    """What :func:`generate` wrote. ``objects`` counts List items one by one (as kaffinity does)."""

    workloads: int
    documents: int
    objects: int
    files: int
    namespaces: int
    scheduled: int
    nodes: int
    bytes: int


@dataclass(slots=True)
class _App:
    name: str
    namespace: str
    team: str
    kind: str
    labels: Data
    selector: Data


@dataclass(slots=True)
class _Namespace:
    name: str
    team: str
    apps: list[_App] = field(default_factory=list)


def _zones(count: int) -> list[str]:
    if count <= 26:
        return [f"{REGION}{chr(ord('a') + index)}" for index in range(count)]
    return [f"{REGION}-zone-{index}" for index in range(count)]


class _Generator:
    def __init__(self, seed: int, zones: int, scheduled_share: float = SCHEDULED_SHARE) -> None:
        self.rng = random.Random(seed)
        self.scheduled_share = scheduled_share
        self.zones = _zones(max(zones, 1))
        self.kinds = [kind for kind, _ in KINDS]
        self.weights = [weight for _, weight in KINDS]
        self.used_names: set[str] = set()
        self.scheduled = 0

    # names and labels

    def app_name(self, team: str) -> str:
        rng = self.rng
        for _ in range(8):
            name = f"{team}-{rng.choice(_ADJECTIVES)}-{rng.choice(_NOUNS)}"
            if name not in self.used_names:
                break
        else:
            name = f"{team}-{rng.choice(_NOUNS)}-{len(self.used_names)}"
        self.used_names.add(name)
        return name

    def new_app(self, namespace: _Namespace) -> _App:
        rng = self.rng
        kind = rng.choices(self.kinds, self.weights)[0]
        name = self.app_name(namespace.team)
        component = name.rsplit("-", 1)[1]
        selector = {"app.kubernetes.io/name": name, "app.kubernetes.io/instance": name}
        labels = {
            **selector,
            "app.kubernetes.io/component": component,
            "app.kubernetes.io/part-of": namespace.team,
            "app.kubernetes.io/managed-by": rng.choice(("Helm", "kustomize", "argocd")),
        }
        if rng.random() < 0.5:
            labels["app.kubernetes.io/version"] = self.version()
        if rng.random() < 0.3:
            labels["tier"] = rng.choice(("frontend", "backend", "data"))
        return _App(name, namespace.name, namespace.team, kind, labels, selector)

    def version(self) -> str:
        rng = self.rng
        return f"{rng.randint(0, 4)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"

    # pod template

    def container(self, app: _App, name: str, main: bool) -> Data:
        rng = self.rng
        cpu = rng.choice(_CPU_REQUESTS if main else _CPU_REQUESTS[:3])
        memory = rng.choice(_MEMORY_REQUESTS if main else _MEMORY_REQUESTS[:3])
        limits: Data = {"memory": memory}
        if rng.random() < 0.4:
            limits["cpu"] = cpu
        image = (
            f"registry.example.com/{app.team}/{app.name}:{self.version()}"
            if main
            else f"docker.io/library/{name}:1.{rng.randint(20, 27)}"
        )
        container: Data = {"name": name, "image": image, "imagePullPolicy": "IfNotPresent"}
        if main and rng.random() < 0.25:
            container["args"] = [f"--log-level={rng.choice(_LOG_LEVELS)}", "--metrics"]
        port = rng.choice((8080, 8443, 9090, 3000, 5000)) if main else 15090
        port_name = "http" if main else "metrics"
        container["ports"] = [{"name": port_name, "containerPort": port, "protocol": "TCP"}]
        env = [
            {"name": "LOG_LEVEL", "value": rng.choice(_LOG_LEVELS)},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ]
        if main:
            env.append({"name": "FEATURE_FLAGS_ENABLED", "value": rng.choice(("true", "false"))})
            env.append({"name": "WORKERS", "value": str(rng.randint(1, 16))})
        container["env"] = env
        container["resources"] = {"requests": {"cpu": cpu, "memory": memory}, "limits": limits}
        if main:
            probe = {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 10}
            container["readinessProbe"] = {**probe, "initialDelaySeconds": 5}
            container["livenessProbe"] = {**probe, "failureThreshold": 3}
            container["volumeMounts"] = [{"name": "config", "mountPath": "/etc/app", "readOnly": True}]
        container["securityContext"] = {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        }
        return container

    def pod_spec(self, app: _App, namespace: _Namespace) -> Data:
        rng = self.rng
        containers = [self.container(app, app.name.rsplit("-", 1)[1], True)]
        if rng.random() < 0.3:
            containers.append(self.container(app, rng.choice(("envoy", "fluent-bit", "oauth2-proxy")), False))
        spec: Data = {"serviceAccountName": app.name}
        if rng.random() < 0.15:
            spec["initContainers"] = [
                {
                    "name": "migrate",
                    "image": f"registry.example.com/{app.team}/{app.name}-migrate:1.0.{rng.randint(0, 9)}",
                    "command": ["/bin/migrate", "up"],
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "64Mi"},
                        "limits": {"memory": "64Mi"},
                    },
                }
            ]
        spec["containers"] = containers
        spec["securityContext"] = {"runAsNonRoot": True, "runAsUser": 10001, "fsGroup": 10001}
        spec["terminationGracePeriodSeconds"] = rng.choice((30, 30, 60, 120))
        if rng.random() < 0.2:
            spec["priorityClassName"] = rng.choice(("high-priority", "batch-low"))
        spec["volumes"] = [{"name": "config", "configMap": {"name": f"{app.name}-config"}}]
        if rng.random() < self.scheduled_share:
            self.scheduled += 1
            self.add_scheduling(spec, app, namespace)
        return spec

    def add_scheduling(self, spec: Data, app: _App, namespace: _Namespace) -> None:
        rng = self.rng
        if rng.random() < 0.5:
            pool = rng.choice(_POOLS)
            spec["nodeSelector"] = {"kubernetes.io/os": "linux", "node.kubernetes.io/pool": pool}
        if rng.random() < 0.4 or app.kind == "DaemonSet":
            spec["tolerations"] = self.tolerations(app)
        affinity: Data = {}
        if rng.random() < 0.5:
            affinity["nodeAffinity"] = self.node_affinity()
        if app.kind != "DaemonSet" and rng.random() < 0.6:
            affinity["podAntiAffinity"] = {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": dict(app.selector)},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        peers = [peer for peer in namespace.apps if peer.name != app.name]
        if peers and rng.random() < 0.5:
            affinity["podAffinity"] = self.pod_affinity(rng.choice(peers))
        if app.kind != "DaemonSet" and rng.random() < 0.1:
            # Keep away from the data tier of every namespace: one selector shared by many
            # workloads, matching many (the affinity graph's shared selector node).
            anti = affinity.setdefault("podAntiAffinity", {})
            anti["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {
                    "weight": 50,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"tier": "data"}},
                        "namespaceSelector": {},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        if affinity:
            spec["affinity"] = affinity
        if app.kind in ("Deployment", "StatefulSet") and (not affinity or rng.random() < 0.5):
            spec["topologySpreadConstraints"] = self.spread(app)

    def tolerations(self, app: _App) -> list[Data]:
        rng = self.rng
        if app.kind == "DaemonSet":
            return [{"operator": "Exists"}]
        choices: list[Data] = [
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
            {"key": "spot", "operator": "Equal", "value": "true", "effect": "PreferNoSchedule"},
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
        ]
        return rng.sample(choices, rng.randint(1, 2))

    def node_affinity(self) -> Data:
        rng = self.rng
        expressions: list[Data] = [
            {
                "key": "topology.kubernetes.io/zone",
                "operator": "In",
                "values": sorted(rng.sample(self.zones, rng.randint(1, len(self.zones)))),
            }
        ]
        if rng.random() < 0.4:
            expressions.append(
                {
                    "key": "node.kubernetes.io/instance-type",
                    "operator": "NotIn",
                    "values": [_GPU_INSTANCE],
                }
            )
        affinity: Data = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": expressions}]
            }
        }
        if rng.random() < 0.3:
            affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {
                    "weight": rng.choice((10, 50, 100)),
                    "preference": {
                        "matchExpressions": [
                            {
                                "key": "node.kubernetes.io/pool",
                                "operator": "In",
                                "values": [rng.choice(_POOLS)],
                            }
                        ]
                    },
                }
            ]
        return affinity

    def pod_affinity(self, peer: _App) -> Data:
        """Preferred co-location with another workload: a selector that crosses workloads."""
        rng = self.rng
        term: Data = {
            "labelSelector": {"matchLabels": {"app.kubernetes.io/name": peer.name}},
            "topologyKey": rng.choice(("topology.kubernetes.io/zone", "kubernetes.io/hostname")),
        }
        if rng.random() < 0.2:
            term["labelSelector"] = {
                "matchExpressions": [
                    {"key": "app.kubernetes.io/name", "operator": "In", "values": [peer.name]},
                    {"key": "app.kubernetes.io/part-of", "operator": "Exists"},
                ]
            }
        return {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": rng.choice((20, 50, 80, 100)), "podAffinityTerm": term}
            ]
        }

    def spread(self, app: _App) -> list[Data]:
        rng = self.rng
        constraint: Data = {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
            "labelSelector": {"matchLabels": dict(app.selector)},
        }
        if app.kind == "Deployment":
            constraint["matchLabelKeys"] = ["pod-template-hash"]
        constraints = [constraint]
        if rng.random() < 0.3:
            constraints.append(
                {
                    "maxSkew": 2,
                    "topologyKey": "kubernetes.io/hostname",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": dict(app.selector)},
                }
            )
        return constraints

    # objects

    def metadata(self, app: _App, labels: Data) -> Data:
        return {"name": app.name, "namespace": app.namespace, "labels": dict(labels)}

    def template(self, app: _App, namespace: _Namespace, restart: str | None = None) -> Data:
        rng = self.rng
        metadata: Data = {"labels": dict(app.labels)}
        if rng.random() < 0.3:
            metadata["annotations"] = {
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090",
                "checksum/config": f"{rng.getrandbits(256):064x}",
            }
        spec = self.pod_spec(app, namespace)
        if restart is not None:
            spec = {"restartPolicy": restart, **spec}
        return {"metadata": metadata, "spec": spec}

    def workload(self, app: _App, namespace: _Namespace) -> Data:
        build = {
            "Deployment": self.deployment,
            "StatefulSet": self.statefulset,
            "DaemonSet": self.daemonset,
            "Job": self.job,
            "CronJob": self.cronjob,
        }.get(app.kind)
        if build is None:  # a bare Pod
            template = self.template(app, namespace)
            metadata = {**self.metadata(app, app.labels), **template["metadata"]}
            return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]}
        api_version = "batch/v1" if app.kind in ("Job", "CronJob") else "apps/v1"
        metadata = self.metadata(app, app.labels)
        return {
            "apiVersion": api_version,
            "kind": app.kind,
            "metadata": metadata,
            "spec": build(app, namespace),
        }

    def deployment(self, app: _App, namespace: _Namespace) -> Data:
        rng = self.rng
        return {
            "replicas": rng.choice((1, 2, 2, 3, 3, 3, 4, 6, 10)),
            "revisionHistoryLimit": 5,
            "selector": {"matchLabels": dict(app.selector)},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": rng.choice((0, 1, "25%"))},
            },
            "template": self.template(app, namespace),
        }

    def statefulset(self, app: _App, namespace: _Namespace) -> Data:
        rng = self.rng
        claim = {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "gp3",
            "resources": {"requests": {"storage": rng.choice(("10Gi", "50Gi", "200Gi"))}},
        }
        return {
            "serviceName": f"{app.name}-headless",
            "replicas": rng.choice((1, 3, 3, 5)),
            "podManagementPolicy": rng.choice(("OrderedReady", "Parallel")),
            "selector": {"matchLabels": dict(app.selector)},
            "template": self.template(app, namespace),
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": claim}],
        }

    def daemonset(self, app: _App, namespace: _Namespace) -> Data:
        return {
            "selector": {"matchLabels": dict(app.selector)},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": self.template(app, namespace),
        }

    def job(self, app: _App, namespace: _Namespace) -> Data:
        rng = self.rng
        job: Data = {
            "backoffLimit": rng.choice((0, 3, 6)),
            "ttlSecondsAfterFinished": 3600,
            "template": self.template(app, namespace, restart=rng.choice(("OnFailure", "Never"))),
        }
        if rng.random() < 0.3:
            job = {"completions": 5, "parallelism": 2, **job}
        return job

    def cronjob(self, app: _App, namespace: _Namespace) -> Data:
        rng = self.rng
        return {
            "schedule": rng.choice(("*/15 * * * *", "0 * * * *", "30 2 * * *", "0 6 * * 1")),
            "concurrencyPolicy": rng.choice(("Forbid", "Replace", "Allow")),
            "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 1,
            "jobTemplate": {"spec": self.job(app, namespace)},
        }

    def service(self, app: _App) -> Data:
        headless = app.kind == "StatefulSet"
        spec: Data = {"selector": dict(app.selector)}
        if headless:
            spec = {"clusterIP": "None", **spec}
        spec["ports"] = [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]
        name = f"{app.name}-headless" if headless else app.name
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": app.namespace, "labels": dict(app.labels)},
            "spec": spec,
        }

    def pdb(self, app: _App) -> Data:
        rng = self.rng
        budget: Data = (
            {"minAvailable": 1} if rng.random() < 0.5 else {"maxUnavailable": rng.choice((1, "25%"))}
        )
        return {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": app.name, "namespace": app.namespace, "labels": dict(app.selector)},
            "spec": {**budget, "selector": {"matchLabels": dict(app.selector)}},
        }

    def namespace_object(self, namespace: _Namespace) -> Data:
        return {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": namespace.name,
                "labels": {
                    "kubernetes.io/metadata.name": namespace.name,
                    "team": namespace.team,
                    "pod-security.kubernetes.io/enforce": "restricted",
                },
            },
        }

    def documents(self, namespace: _Namespace, workloads: int) -> Iterator[tuple[Data, int]]:
        """The YAML documents of one namespace, each with the number of objects it holds."""
        rng = self.rng
        if rng.random() < 0.25:
            yield self.namespace_object(namespace), 1
        for _ in range(workloads):
            app = self.new_app(namespace)
            workload = self.workload(app, namespace)
            namespace.apps.append(app)
            serves = app.kind == "StatefulSet" or (app.kind == "Deployment" and rng.random() < 0.6)
            service = self.service(app) if serves else None
            if service is not None and rng.random() < LIST_SHARE:
                yield {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": [workload, service]}, 2
            else:
                yield workload, 1
                if service is not None:
                    yield service, 1
            replicas = workload["spec"].get("replicas", 0)
            if app.kind in ("Deployment", "StatefulSet") and replicas > 1 and rng.random() < 0.4:
                yield self.pdb(app), 1


def _namespace_sizes(rng: random.Random, workloads: int) -> list[int]:
    """Split ``workloads`` over namespaces of uneven size (largest-remainder rounding)."""
    count = max(1, min(MAX_NAMESPACES, math.ceil(workloads / WORKLOADS_PER_NAMESPACE)))
    weights = [rng.uniform(0.3, 1.7) for _ in range(count)]
    total = sum(weights)
    shares = [workloads * weight / total for weight in weights]
    sizes = [int(share) for share in shares]
    by_remainder = sorted(range(count), key=lambda index: shares[index] - sizes[index], reverse=True)
    for index in by_remainder[: workloads - sum(sizes)]:
        sizes[index] += 1
    return sizes


def _namespace_names(count: int) -> list[tuple[str, str]]:
    names = []
    for index in range(count):
        team = _TEAMS[index % len(_TEAMS)]
        names.append((team if index < len(_TEAMS) else f"{team}-{index // len(_TEAMS)}", team))
    return names


def _write(path: str, header: str, documents: Sequence[Data]) -> int:
    text = header + "".join(f"---\n{to_yaml(document)}" for document in documents)
    data = text.encode("utf-8")
    with open(path, "wb") as handle:
        handle.write(data)
    return len(data)


def _nodes(rng: random.Random, count: int, zones: list[str]) -> list[Data]:
    nodes = []
    width = max(4, len(str(count)))
    for index in range(count):
        name = f"node-{index:0{width}d}"
        control_plane = index < min(3, count // 10)
        gpu = not control_plane and rng.random() < 0.1
        instance = _GPU_INSTANCE if gpu else rng.choice(_INSTANCE_TYPES)
        cpus, memory = _INSTANCE_SIZE[instance]
        labels: Data = {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "topology.kubernetes.io/region": REGION,
            "topology.kubernetes.io/zone": zones[index % len(zones)],
            "node.kubernetes.io/instance-type": instance,
            "node.kubernetes.io/pool": "gpu" if gpu else rng.choice(_POOLS),
        }
        taints: list[Data] = []
        if control_plane:
            labels["node-role.kubernetes.io/control-plane"] = ""
            taints.append({"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"})
        if gpu:
            taints.append({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"})
        elif not control_plane and rng.random() < 0.05:
            taints.append({"key": "spot", "value": "true", "effect": "PreferNoSchedule"})
        node: Data = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}
        node["spec"] = {"taints": taints} if taints else {}
        node["status"] = {
            "capacity": {"cpu": str(cpus), "memory": f"{memory}Gi", "pods": "110"},
            "allocatable": {
                "cpu": f"{cpus * 1000 - 90 - cpus * 10}m",
                "memory": f"{memory * 1024 - 1024 - memory * 20}Mi",
                "pods": "110",
            },
        }
        nodes.append(node)
    return nodes


def generate(
    out_dir: str,
    workloads: int,
    per_file: int = 5,
    seed: int = 1,
    nodes: int = 0,
    zones: int = 3,
    scheduled_share: float = SCHEDULED_SHARE,
) -> GenerateResult:
    """Write the corpus under ``out_dir`` (see the module docstring) and say what was written.

    ``out_dir/manifests`` must not already hold files, so that no stale file joins a corpus.
    """
    if workloads < 0 or per_file < 1 or nodes < 0 or zones < 1:
        raise ValueError("workloads and nodes must be >= 0, per-file and zones >= 1")
    manifests = os.path.join(out_dir, "manifests")
    if os.path.isdir(manifests) and os.listdir(manifests):
        raise FileExistsError(f"{manifests} is not empty; write the corpus to a new folder")
    generator = _Generator(seed, zones, scheduled_share)
    sizes = _namespace_sizes(generator.rng, workloads) if workloads else []
    bound = 3 * workloads + len(sizes) + 1  # more than the files there can be
    width = max(4, len(str(bound)))
    header = f"# generated by benchmarks/generate.py --workloads {workloads} --seed {seed}\n"
    files = documents = objects = written = 0
    for (name, team), size in zip(_namespace_names(len(sizes)), sizes, strict=True):
        namespace = _Namespace(name, team)
        folder = os.path.join(manifests, name)
        os.makedirs(folder, exist_ok=True)
        batch: list[Data] = []
        for document, count in generator.documents(namespace, size):
            batch.append(document)
            objects += count
            if len(batch) == per_file:
                written += _write(os.path.join(folder, f"{files:0{width}d}.yaml"), header, batch)
                files += 1
                documents += len(batch)
                batch = []
        if batch:
            written += _write(os.path.join(folder, f"{files:0{width}d}.yaml"), header, batch)
            files += 1
            documents += len(batch)
    if nodes:
        os.makedirs(out_dir, exist_ok=True)
        cluster = {"apiVersion": "v1", "kind": "List", "items": _nodes(generator.rng, nodes, generator.zones)}
        written += _write(os.path.join(out_dir, "cluster.yaml"), header, [cluster])
    return GenerateResult(
        workloads=workloads,
        documents=documents,
        objects=objects,
        files=files,
        namespaces=len(sizes),
        scheduled=generator.scheduled,
        nodes=nodes,
        bytes=written,
    )


#: The namespaces of :func:`repository` that become a kustomize base with overlays.
REPOSITORY_BASES = 3
#: The overlays of each base, and the replicas each one's patch sets.
REPOSITORY_OVERLAYS = (("staging", 1), ("prod", 3))

_CHART_YAML = """apiVersion: v2
name: web
description: A chart of the generated repository (benchmarks/generate.py repository).
type: application
version: 0.1.0
appVersion: "1.0.0"
"""
_CHART_VALUES = """replicaCount: 2
image:
  repository: registry.example.com/web
  tag: "1.0.0"
zone: topology.kubernetes.io/zone
resources:
  requests:
    cpu: 100m
    memory: 128Mi
"""
_CHART_DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
  labels:
    app: web
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: {{ .Values.zone }}
          whenUnsatisfiable: DoNotSchedule
          labelSelector:
            matchLabels:
              app: web
      containers:
        - name: web
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
"""
_CHART_SERVICE = """apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-web
spec:
  selector:
    app: web
  ports:
    - port: 80
"""


@dataclass(frozen=True, slots=True)
class RepositoryResult:
    """What :func:`repository` wrote: the corpus, the overlays and the chart, and the files a
    one-file commit changes (a plain manifest, an overlay's patch, the chart's values)."""

    corpus: GenerateResult
    overlays: tuple[str, ...]
    chart: str
    manifest: str
    patch: str
    values: str


def repository(out_dir: str, workloads: int, seed: int = 1) -> RepositoryResult:
    """A repository of deployment units around the corpus (:func:`generate`).

    The first :data:`REPOSITORY_BASES` namespaces (all but one, if fewer) move to
    ``apps/<namespace>/base`` (a kustomization of their files), each with the overlays of
    :data:`REPOSITORY_OVERLAYS` (a patch of the base's first Deployment: replicas, and required
    pod anti-affinity in ``prod``); a chart ``charts/web`` (a Deployment and a Service); the
    other namespaces stay plain manifests under ``manifests/``. Paths in the result are
    relative to ``out_dir``. Deterministic."""
    corpus = generate(out_dir, workloads, seed=seed)
    manifests = os.path.join(out_dir, "manifests")
    namespaces = sorted(os.listdir(manifests))
    overlays: list[str] = []
    patch = ""
    # One namespace at least stays plain manifests (the hook's changed manifest is there).
    for namespace in namespaces[: min(REPOSITORY_BASES, len(namespaces) - 1)]:
        app = os.path.join(out_dir, "apps", namespace)
        base = os.path.join(app, "base")
        os.makedirs(os.path.dirname(base), exist_ok=True)
        os.rename(os.path.join(manifests, namespace), base)
        names = sorted(os.listdir(base))
        with open(os.path.join(base, "kustomization.yaml"), "w", encoding="utf-8") as handle:
            handle.write("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
            handle.writelines(f"  - {name}\n" for name in names)
        target = _first_deployment(base, names)
        for overlay, replicas in REPOSITORY_OVERLAYS:
            folder = os.path.join(app, "overlays", overlay)
            os.makedirs(folder)
            with open(os.path.join(folder, "kustomization.yaml"), "w", encoding="utf-8") as handle:
                handle.write(
                    "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                    "resources:\n  - ../../base\n"
                    + ("patches:\n  - path: deployment-patch.yaml\n" if target else "")
                )
            if target is None:
                continue
            name, labels = target
            lines = [
                "apiVersion: apps/v1",
                "kind: Deployment",
                "metadata:",
                f"  name: {name}",
                f"  namespace: {namespace}",
                "spec:",
                f"  replicas: {replicas}",
            ]
            if overlay == "prod":
                lines += [
                    "  template:",
                    "    spec:",
                    "      affinity:",
                    "        podAntiAffinity:",
                    "          requiredDuringSchedulingIgnoredDuringExecution:",
                    "            - topologyKey: kubernetes.io/hostname",
                    "              labelSelector:",
                    "                matchLabels:",
                    *(f"                  {key}: {json.dumps(value)}" for key, value in labels.items()),
                ]
            with open(os.path.join(folder, "deployment-patch.yaml"), "w", encoding="utf-8") as handle:
                handle.write("\n".join(lines) + "\n")
            overlays.append(os.path.relpath(folder, out_dir))
            patch = patch or os.path.relpath(os.path.join(folder, "deployment-patch.yaml"), out_dir)
    chart = os.path.join(out_dir, "charts", "web")
    os.makedirs(os.path.join(chart, "templates"))
    for name, text in (
        ("Chart.yaml", _CHART_YAML),
        ("values.yaml", _CHART_VALUES),
        ("templates/deployment.yaml", _CHART_DEPLOYMENT),
        ("templates/service.yaml", _CHART_SERVICE),
    ):
        with open(os.path.join(chart, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    rest = sorted(
        os.path.join(folder, name)
        for folder, _, names in os.walk(manifests)
        for name in names
        if name.endswith(".yaml")
    )
    manifest = next(
        (path for path in rest if _first_deployment(os.path.dirname(path), [os.path.basename(path)])), rest[0]
    )
    return RepositoryResult(
        corpus,
        tuple(overlays),
        os.path.relpath(chart, out_dir),
        os.path.relpath(manifest, out_dir),
        patch,
        os.path.relpath(os.path.join(chart, "values.yaml"), out_dir),
    )


def _first_deployment(folder: str, names: Sequence[str]) -> tuple[str, dict[str, str]] | None:
    """The name and pod labels of the first Deployment (top level, not in a List) in the files
    ``names`` of ``folder``, read from the emitter's own layout."""
    for name in names:
        with open(os.path.join(folder, name), encoding="utf-8") as handle:
            text = handle.read()
        for document in text.split("\n---\n"):
            if not re.search(r"^kind: Deployment$", document, re.M):
                continue
            found = re.search(r"^metadata:\n  name: (\S+)", document, re.M)
            labels = re.search(r"^      labels:\n((?:        \S.*\n)+)", document, re.M)
            if found is None or labels is None:
                continue
            pairs = dict(line.strip().split(": ", 1) for line in labels.group(1).splitlines())
            app = {key: value.strip('"') for key, value in pairs.items() if key.endswith("name")}
            return found.group(1), app or {key: value.strip('"') for key, value in list(pairs.items())[:1]}
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("out", help="output folder (manifests/ and cluster.yaml go below it)")
    parser.add_argument("--workloads", type=int, required=True, help="number of workloads")
    parser.add_argument("--per-file", type=int, default=5, help="YAML documents per file (default 5)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--nodes", type=int, default=0, help="also write cluster.yaml with this many Nodes")
    parser.add_argument("--zones", type=int, default=3, help="zones the nodes and affinities use (default 3)")
    parser.add_argument(
        "--scheduled-share",
        type=float,
        default=SCHEDULED_SHARE,
        help=f"share of pod templates with scheduling rules (default {SCHEDULED_SHARE})",
    )
    args = parser.parse_args(argv)
    try:
        result = generate(
            args.out, args.workloads, args.per_file, args.seed, args.nodes, args.zones, args.scheduled_share
        )
    except (ValueError, FileExistsError) as error:
        print(f"generate.py: error: {error}", file=sys.stderr)
        return 2
    print(
        f"{result.workloads} workloads ({result.scheduled} with scheduling rules), "
        f"{result.documents} YAML documents / {result.objects} objects in {result.files} files, "
        f"{result.namespaces} namespaces, {result.nodes} nodes, {result.bytes / 1e6:.1f} MB -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
