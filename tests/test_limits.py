"""limits: the work one run may do is bounded before it starts (fuzzing found
`replicas: 2147483647`, a ClusterTopology of 2,000,000 nodes and a term aliased 141 times each
running for minutes into gigabytes). Each limit gives one line naming it; ``kit.run`` times out
(a regression fails instead of hanging)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .kit import findings, run

CLUSTER = """\
apiVersion: kaffinity.io/v1alpha1
kind: ClusterTopology
spec:
  zones:
    - name: a
      pools:
        - {name: p, count: 3, allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2147483647
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx}]
"""
JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  parallelism: 2147483647
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
"""
DAEMONSET = """\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: c, image: agent}]
"""


def _write(tmp_path: Path, **files: str) -> dict[str, str]:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return {name: str(tmp_path / name) for name in files}


@pytest.mark.slow
def test_huge_replicas_are_not_placed_and_the_notice_names_the_limit(tmp_path: Path) -> None:
    paths = _write(tmp_path, **{"cluster.yaml": CLUSTER, "web.yaml": DEPLOYMENT, "job.yaml": JOB})
    for workload in (paths["web.yaml"], paths["job.yaml"]):
        lint = run("lint", "--no-config", "--cluster", paths["cluster.yaml"], workload, "--format", "json")
        assert lint.returncode in (0, 1), lint.stderr
        assert lint.stderr.count("limits: pods") == 1
        assert "2,147,483,647 pods" in lint.stderr
        # The other rules still run (replicas-not-spread reads no placement).
        rules = {finding["rule"] for finding in json.loads(lint.stdout)["findings"]}
        assert "unschedulable" not in rules
        place = run("place", "--no-config", "--cluster", paths["cluster.yaml"], workload)
        assert place.returncode == 2
        assert "limits: pods" in place.stderr
        assert place.stdout == ""
    lint = run(
        "lint", "--no-config", "--cluster", paths["cluster.yaml"], paths["web.yaml"], "--format", "json"
    )
    assert {f["rule"] for f in json.loads(lint.stdout)["findings"]} == {"replicas-not-spread"}


def test_daemonset_pods_count_one_per_eligible_node(tmp_path: Path) -> None:
    paths = _write(
        tmp_path,
        **{
            "cluster.yaml": CLUSTER,
            "ds.yaml": DAEMONSET,
            "two.yaml": "limits: {pods: 2}\n",
            "three.yaml": "limits: {pods: 3}\n",
        },
    )
    refused = run(
        "place", "--config", paths["two.yaml"], "--cluster", paths["cluster.yaml"], paths["ds.yaml"]
    )
    assert refused.returncode == 2
    assert "3 pods, more than the 2" in refused.stderr
    placed = run(
        "place", "--config", paths["three.yaml"], "--cluster", paths["cluster.yaml"], paths["ds.yaml"]
    )
    assert placed.returncode == 0, placed.stderr
    assert "limits" not in placed.stderr


def test_cluster_topology_past_the_node_limit_is_one_error_at_its_line(tmp_path: Path) -> None:
    zones = "".join(f"    - name: z{i}\n      pools: [{{name: p, count: 5000}}]\n" for i in range(400))
    big = f"apiVersion: kaffinity.io/v1alpha1\nkind: ClusterTopology\nspec:\n  zones:\n{zones}"
    paths = _write(tmp_path, **{"big.yaml": big, "web.yaml": DEPLOYMENT.replace("2147483647", "2")})
    result = run("lint", "--no-config", "--cluster", paths["big.yaml"], paths["web.yaml"])
    assert result.returncode == 2
    errors = [
        line for line in result.stdout.splitlines() + result.stderr.splitlines() if "limits: nodes" in line
    ]
    assert len(errors) == 1
    assert errors[0].startswith(f"{paths['big.yaml']}:4:3: ")
    assert "2,000,000 nodes" in errors[0]
    place = run("place", "--no-config", "--cluster", paths["big.yaml"], paths["web.yaml"])
    assert place.returncode == 2
    assert f"{paths['big.yaml']}:4:3:" in place.stderr


def test_node_objects_count_too(tmp_path: Path) -> None:
    nodes = "".join(f"---\napiVersion: v1\nkind: Node\nmetadata: {{name: n{i}}}\n" for i in range(3))
    paths = _write(tmp_path, **{"nodes.yaml": nodes, "web.yaml": DEPLOYMENT.replace("2147483647", "2")})
    (tmp_path / "two.yaml").write_text("limits: {nodes: 2}\n")
    result = run(
        "place", "--config", str(tmp_path / "two.yaml"), "--cluster", paths["nodes.yaml"], paths["web.yaml"]
    )
    assert result.returncode == 2
    # The third Node (line 10) is the one past the limit.
    assert (
        f"{paths['nodes.yaml']}:10:1: error [parse-error] this cluster declares 3 nodes, more than the 2"
        in result.stderr
    )


def test_a_node_repeated_by_aliases_is_reported_once(tmp_path: Path) -> None:
    expressions = ", ".join(f"{{key: k{i}, operator: In, values: []}}" for i in range(3))
    aliases = "".join("              - *t\n" for _ in range(50))
    text = f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: w}}
spec:
  selector: {{matchLabels: {{app: w}}}}
  template:
    metadata: {{labels: {{app: w}}}}
    spec:
      containers: [{{name: c, image: nginx}}]
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - &t {{matchExpressions: [{expressions}]}}
{aliases}"""
    paths = _write(tmp_path, **{"alias.yaml": text})
    result = run("lint", "--no-config", paths["alias.yaml"], "--format", "json")
    found = findings(json.loads(result.stdout), "api-validation")
    assert [
        (f["line"], f["path"].endswith(f"nodeSelectorTerms[0].matchExpressions[{i}].values"))
        for i, f in enumerate(sorted(found, key=lambda f: f["column"]))
    ] == [(14, True)] * 3


def test_findings_past_the_limit_are_dropped_with_one_notice(tmp_path: Path) -> None:
    pods = "".join(
        f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}}}\n"
        "spec:\n  containers: [{name: c, image: x}]\n"
        "  nodeSelector: {a: b}\n  tolerations: [{operator: Bogus}]\n"
        for i in range(5)
    )
    paths = _write(tmp_path, **{"pods.yaml": pods, "cfg.yaml": "limits: {findings: 2}\n"})
    full = run("lint", "--no-config", paths["pods.yaml"], "--format", "json")
    assert len(json.loads(full.stdout)["findings"]) > 2
    assert "limits" not in full.stderr
    capped = run("lint", "--config", paths["cfg.yaml"], paths["pods.yaml"], "--format", "json")
    assert len(json.loads(capped.stdout)["findings"]) == 2
    notices = [line for line in capped.stderr.splitlines() if "limits: findings" in line]
    assert len(notices) == 1
    assert notices[0].startswith("kaffinity: note: ")
    # The same note in the reports a machine reads: JSON's summary, SARIF's invocation.
    assert json.loads(capped.stdout)["summary"]["notices"] == [notices[0].removeprefix("kaffinity: note: ")]
    assert json.loads(full.stdout)["summary"]["notices"] == []
    sarif = run("lint", "--config", paths["cfg.yaml"], paths["pods.yaml"], "--format", "sarif")
    (invocation,) = json.loads(sarif.stdout)["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is True
    assert [
        (item["level"], item["message"]["text"]) for item in invocation["toolExecutionNotifications"]
    ] == [("note", notices[0].removeprefix("kaffinity: note: "))]


def test_nodes_of_a_list_count_too(tmp_path: Path) -> None:
    """``kubectl get nodes -o yaml`` prints a List: its items are the Node objects."""
    items = "".join(f"  - {{apiVersion: v1, kind: Node, metadata: {{name: n{i}}}}}\n" for i in range(3))
    paths = _write(
        tmp_path,
        **{
            "nodes.yaml": f"apiVersion: v1\nkind: List\nitems:\n{items}",
            "web.yaml": DEPLOYMENT.replace("2147483647", "2"),
            "two.yaml": "limits: {nodes: 2}\n",
        },
    )
    cluster = paths["nodes.yaml"]
    result = run("place", "--config", paths["two.yaml"], "--cluster", cluster, paths["web.yaml"])
    assert result.returncode == 2
    where = f"{paths['nodes.yaml']}:6:5: error [parse-error]"
    assert f"{where} this cluster declares 3 nodes" in result.stderr


def test_the_pod_limit_is_per_deployment_unit(tmp_path: Path) -> None:
    """Each unit is placed by itself: the limit bounds one placement, not their sum."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "b" / "web.yaml").write_text(DEPLOYMENT.replace("2147483647", "2"))
    (tmp_path / ".kaffinity.yaml").write_text(
        "units: [{name: a, paths: [a]}, {name: b, paths: [b]}]\nlimits: {pods: 3}\ncluster: cluster.yaml\n"
    )
    (tmp_path / "a" / "web.yaml").write_text(DEPLOYMENT.replace("2147483647", "2"))
    within = run("lint", "a", "b", cwd=tmp_path)
    assert within.returncode in (0, 1), within.stderr
    assert "limits: pods" not in within.stderr
    (tmp_path / "a" / "web.yaml").write_text(DEPLOYMENT.replace("2147483647", "4"))
    past = run("lint", "a", "b", cwd=tmp_path)
    notices = [line for line in past.stderr.splitlines() if "limits: pods" in line]
    assert len(notices) == 1
    assert notices[0].startswith("kaffinity: note: a: the workloads ask for 4 pods")


def test_alias_nodes_counts_the_whole_file(tmp_path: Path) -> None:
    """Five documents each under a per-document alias budget used to make a 224 KB file cost
    80 s; ``alias-nodes`` counts what aliases add in the whole file. Three documents adding 9
    nodes each under a limit of 20 (each alone is under it): the third is refused, at the
    node its aliases repeat."""
    document = """\
apiVersion: v1
kind: ConfigMap
metadata: {{name: c{n}}}
data:
  a: &a [x, y]
  b: [*a, *a, *a]
"""
    text = "---\n".join(document.format(n=n) for n in range(3))
    paths = _write(tmp_path, **{"aliases.yaml": text, "cfg.yaml": "limits: {alias-nodes: 20}\n"})
    result = run("lint", "--config", paths["cfg.yaml"], paths["aliases.yaml"], "--format", "json")
    errors = [(f["rule"], f["line"], f["column"]) for f in json.loads(result.stdout)["findings"]]
    # document 3 starts at line 15; its first alias of `&a [x, y]` (line 19) makes 21 nodes
    assert errors == [("parse-error", 19, 6)]
    assert result.returncode == 2
