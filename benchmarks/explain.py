"""Benchmark of ``kaffinity explain`` on a large generated capture (issue 35).

    python benchmarks/explain.py                      # 5,000 nodes, 50,000 pods, 200 Pending; prints
    python benchmarks/explain.py --nodes 1000 --pods 10000 --pending 50
    python benchmarks/explain.py -o benchmarks/EXPLAIN.md   # appends the result line

The capture is what ``kubectl get nodes,pods,... -A -o yaml`` prints for a cluster of that size,
written as YAML: nodes in three zones (one in fifty cordoned, a tainted GPU pool), and per node
about ``pods / nodes`` bound pods of Deployments (through their ReplicaSets) with requests, a
tenth of them with hostname anti-affinity, a tenth with a zone spread constraint, a DaemonSet on
host port 9100; PodDisruptionBudgets; then the Pending pods: replicas of a few Deployments each
refused for one reason (anti-affinity, resources, taint, node affinity, host port, spread).

It times ``kaffinity explain CAPTURE --format json`` in a fresh process (wall and CPU seconds,
peak memory of the child), and the stages in process: reading the capture, then scheduling and
explaining the Pending pods. Only the standard library and kaffinity are used.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ZONES = ("us-east1-b", "us-east1-c", "us-east1-d")


def _node(index: int) -> str:
    name = f"node-{index:05d}"
    zone = ZONES[index % 3]
    gpu = index % 100 == 99
    taints = ""
    if gpu:
        taints = "    taints:\n    - effect: NoSchedule\n      key: nvidia.com/gpu\n      value: present\n"
    if index % 50 == 7:
        taints = (
            "    taints:\n    - effect: NoSchedule\n      key: node.kubernetes.io/unschedulable\n"
            "    unschedulable: true\n"
        )
    return (
        "- apiVersion: v1\n  kind: Node\n  metadata:\n"
        f"    labels:\n      kubernetes.io/arch: amd64\n      kubernetes.io/hostname: {name}\n"
        f"      kubernetes.io/os: linux\n      node.kubernetes.io/instance-type: n2-standard-8\n"
        f"      pool: {'gpu' if gpu else 'general'}\n"
        f"      topology.kubernetes.io/region: us-east1\n      topology.kubernetes.io/zone: {zone}\n"
        f"    name: {name}\n  spec:\n    podCIDR: 10.{index // 250}.{index % 250}.0/24\n{taints}"
        "  status:\n    allocatable:\n      cpu: 7910m\n      ephemeral-storage: 95Gi\n"
        '      memory: 29Gi\n      pods: "110"\n'
        '    conditions:\n    - status: "True"\n      type: Ready\n'
    )


def _pod(
    name: str,
    namespace: str,
    app: str,
    cpu: str,
    node: str | None,
    *,
    anti: bool = False,
    spread: bool = False,
    port: bool = False,
    owner: str | None = None,
    select: str | None = None,
    priority: int = 0,
) -> str:
    owner_kind, owner_name = ("DaemonSet", owner) if port and owner else ("ReplicaSet", f"{app}-7d9f8c6b5")
    labels = f"      app: {app}\n" + ("" if port else "      pod-template-hash: 7d9f8c6b5\n")
    affinity = ""
    if anti:
        affinity = (
            "    affinity:\n      podAntiAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n"
            f"        - labelSelector:\n            matchLabels:\n              app: {app}\n"
            "          topologyKey: kubernetes.io/hostname\n"
        )
    spreading = ""
    if spread:
        spreading = (
            "    topologySpreadConstraints:\n    - labelSelector:\n        matchLabels:\n"
            f"          app: {app}\n      maxSkew: 1\n      topologyKey: topology.kubernetes.io/zone\n"
            "      whenUnsatisfiable: DoNotSchedule\n"
        )
    ports = (
        "      ports:\n      - containerPort: 9100\n        hostPort: 9100\n        protocol: TCP\n"
        if port
        else ""
    )
    selector = f"    nodeSelector:\n      {select}\n" if select else ""
    bound = f"    nodeName: {node}\n" if node else ""
    phase = "Running" if node else "Pending"
    return (
        '- apiVersion: v1\n  kind: Pod\n  metadata:\n    creationTimestamp: "2026-11-20T10:00:00Z"\n'
        f"    labels:\n{labels}    name: {name}\n    namespace: {namespace}\n"
        f"    ownerReferences:\n    - apiVersion: apps/v1\n      controller: true\n      kind: {owner_kind}\n"
        f"      name: {owner_name}\n      uid: {owner_name}\n"
        f"  spec:\n{affinity}    containers:\n    - image: registry.example.com/{app}:1.0\n      name: main\n"
        f"{ports}      resources:\n        requests:\n          cpu: {cpu}\n          memory: 256Mi\n"
        f"{bound}{selector}    priority: {priority}\n    schedulerName: default-scheduler\n{spreading}"
        f"  status:\n    phase: {phase}\n"
    )


def write_capture(path: Path, nodes: int, pods: int, pending: int) -> None:
    """The capture (see the module's docstring), streamed to ``path``."""
    per_node = max(pods // nodes - 1, 0)
    with path.open("w", encoding="utf-8") as out:
        out.write("apiVersion: v1\nkind: List\nitems:\n")
        for index in range(nodes):
            out.write(_node(index))
        count = 0
        for index in range(nodes):
            node = f"node-{index:05d}"
            out.write(
                _pod(f"exporter-{index}", "monitoring", "exporter", "50m", node, port=True, owner="exporter")
            )
            count += 1
            for slot in range(per_node):
                app = f"app-{(index * per_node + slot) % 997}"
                kind = (index + slot) % 10
                name = f"{app}-7d9f8c6b5-{index}x{slot}"
                out.write(
                    _pod(name, f"team-{slot % 20}", app, "300m", node, anti=kind == 0, spread=kind == 1)
                )
                count += 1
        for index in range(nodes):
            if index % 5 == 0:
                out.write(
                    "- apiVersion: policy/v1\n  kind: PodDisruptionBudget\n  metadata:\n"
                    f"    name: app-{index % 997}\n    namespace: team-{index % 20}\n"
                    "  spec:\n    minAvailable: 1\n    selector:\n      matchLabels:\n"
                    f"        app: app-{index % 997}\n"
                    "  status:\n    disruptionsAllowed: 0\n"
                )
        reasons = ("big", "taint", "zone", "port", "anti", "spread")
        for index in range(pending):
            reason = reasons[index % len(reasons)]
            name = f"pending-{reason}-7d9f8c6b5-{index}"
            if reason == "big":
                out.write(_pod(name, "jobs", "big", "64", None))
            elif reason == "taint":
                out.write(_pod(name, "ml", "train", "1", None, select="pool: gpu"))
            elif reason == "zone":
                out.write(
                    _pod(name, "eu", "ingest", "1", None, select="topology.kubernetes.io/zone: eu-west1-b")
                )
            elif reason == "port":
                out.write(_pod(name, "monitoring", "exporter2", "50m", None, port=True, owner="exporter2"))
            elif reason == "anti":
                out.write(_pod(name, "team-0", "app-0", "8", None, anti=True, priority=1000))
            else:
                out.write(_pod(name, "team-1", "app-1", "8", None, spread=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--pending", type=int, default=200)
    parser.add_argument("--output", "-o", help="append the result line to this Markdown file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        capture = Path(folder) / "capture.yaml"
        started = time.perf_counter()
        write_capture(capture, args.nodes, args.pods, args.pending)
        size = capture.stat().st_size
        print(
            f"capture: {size / 2**20:.0f} MiB written in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        command = [
            sys.executable,
            "-m",
            "kaffinity",
            "explain",
            str(capture),
            "--no-config",
            "--format",
            "json",
            "--limit",
            f"file-size={size + 1}",
            "--output",
            str(Path(folder) / "out.json"),
        ]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 1):
            sys.exit(f"kaffinity explain failed ({done.returncode}): {done.stderr}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        peak = after.ru_maxrss / 1024  # KiB on Linux
    line = (
        f"| {args.nodes:,} | {args.pods:,} | {args.pending:,} | {size / 2**20:.0f} MiB | "
        f"{wall:.1f} s | {cpu:.1f} s | {peak:,.0f} MiB |"
    )
    print(
        "| nodes | pods | Pending | capture | wall | CPU | peak memory |\n"
        "| --- | --- | --- | --- | --- | --- | --- |"
    )
    print(line)
    if args.output:
        with open(args.output, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


if __name__ == "__main__":
    main()
