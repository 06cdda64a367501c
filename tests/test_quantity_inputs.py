"""Quantities that used to crash (``1Ei`` read as an exponent, ``1EB``, ``.nan``, ``.inf``,
``1.0e+400``, ``"1e1000000"``) in a Deployment's requests, a Node's and a ClusterTopology pool's
allocatable, and ``--max-file-size``: every command answers, and what kube-apiserver would refuse is
reported where it stands.

YAML is read as kubectl reads it (sigs.k8s.io/yaml over go-yaml v2, tests/test_goyaml.py):
``1.0e+400`` overflows a float, so go-yaml keeps it a string, which ``resource.ParseQuantity``
reads as a huge quantity; ``.nan`` and ``.inf`` are floats JSON cannot hold, so kubectl refuses
the whole file (``json: unsupported value``): a ``parse-error`` at the value, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .kit import EXAMPLES, keys, run

#: The memory values of the issue, as a manifest writes them, and whether kube-apiserver decodes them.
VALID = ["1Ei", '"1e1000000"', "1.0e+400"]
INVALID = ["1EB"]
#: Values kubectl cannot read at all (the file is refused).
UNREADABLE = [".nan", ".inf"]

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: 1
  strategy: {{type: Recreate}}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
        - name: c
          image: nginx
          resources:
            requests:
              memory: {memory}
"""
#: Line and column of the ``memory`` key above (where kaffinity reports a field).
MEMORY_AT = (16, 15)
#: Line and column of its value (where a value kubectl cannot read is reported).
VALUE_AT = (16, 23)

NODE = """\
apiVersion: v1
kind: Node
metadata: {{name: n1}}
status:
  allocatable: {{cpu: "4", pods: "110", memory: {memory}}}
"""

TOPOLOGY = """\
apiVersion: kaffinity.io/v1alpha1
kind: ClusterTopology
spec:
  zones:
    - name: a
      pools:
        - name: big
          count: 1
          allocatable:
            cpu: "4"
            memory: {memory}
"""


def _found(stdout: str) -> tuple[list[dict[str, object]], list[tuple[str, int | None, int | None]]]:
    """The JSON report's findings and their (rule, line, column)."""
    report = json.loads(stdout)
    return report["findings"], keys(report)


def _write(tmp_path: Path, name: str, template: str, memory: str) -> str:
    path = tmp_path / name
    path.write_text(template.format(memory=memory), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("memory", VALID + INVALID + UNREADABLE)
def test_requests_lint(tmp_path: Path, memory: str) -> None:
    manifest = _write(tmp_path, "web.yaml", DEPLOYMENT, memory)
    completed = run("lint", "--no-config", "--format", "json", manifest)
    findings = json.loads(completed.stdout)["findings"]
    if memory in VALID:
        assert completed.returncode == 0
        assert findings == []
    elif memory in UNREADABLE:
        assert completed.returncode == 2
        assert [(f["rule"], f["line"], f["column"]) for f in findings] == [("parse-error", *VALUE_AT)]
    else:
        assert completed.returncode == 1
        assert [(f["rule"], f["line"], f["column"]) for f in findings] == [("api-validation", *MEMORY_AT)]
        assert findings[0]["path"] == "spec.template.spec.containers[0].resources.requests.memory"


@pytest.mark.parametrize("memory", VALID + INVALID + UNREADABLE)
@pytest.mark.parametrize("command", ["expand", "graph"])
def test_requests_expand_graph(tmp_path: Path, memory: str, command: str) -> None:
    completed = run(command, "--no-config", _write(tmp_path, "web.yaml", DEPLOYMENT, memory))
    assert completed.returncode == (2 if memory in UNREADABLE else 0)


@pytest.mark.parametrize(
    ("memory", "placed"),
    [
        ("1Ei", True),  # 2^60 bytes on a node with 2^60
        ('"1e1000000"', False),  # more than the node has
        ("1EB", True),  # no quantity: no request (and lint says the API server refuses it)
        ("1.0e+400", False),  # a string to go-yaml: a quantity past any node
    ],
)
def test_requests_on_a_cluster(tmp_path: Path, memory: str, placed: bool) -> None:
    manifest = _write(tmp_path, "web.yaml", DEPLOYMENT, memory)
    node = _write(tmp_path, "node.yaml", NODE, "1Ei")
    place = run("place", "--no-config", "--cluster", node, manifest)
    assert place.returncode == (0 if placed else 1)
    assert ("-> n1" in place.stdout) is placed
    if not placed:
        assert "Insufficient memory" in place.stdout
    lint = run("lint", "--no-config", "--format", "json", "--cluster", node, manifest)
    pending = [key for key in keys(json.loads(lint.stdout)) if key[0] == "unschedulable"]
    assert pending == ([] if placed else [("unschedulable", *MEMORY_AT)])


@pytest.mark.parametrize("memory", VALID + INVALID + UNREADABLE)
def test_node_allocatable(tmp_path: Path, memory: str) -> None:
    """A Node's allocatable that is no quantity counts as not declared (kube-apiserver never
    stores one); a huge one is more than any request; a cluster file kubectl cannot read is a
    parse-error at its value."""
    manifest = _write(tmp_path, "web.yaml", DEPLOYMENT, "1Gi")
    node = _write(tmp_path, "node.yaml", NODE, memory)
    place = run("place", "--no-config", "--cluster", node, manifest)
    assert place.returncode == (0 if memory in VALID else 2 if memory in UNREADABLE else 1)
    if memory in UNREADABLE:
        assert place.stderr.strip().splitlines()[-1].startswith(f"{node}:5:48: error [parse-error] ")
    lint = run("lint", "--no-config", "--format", "json", "--cluster", node, manifest)
    assert lint.returncode in ((2,) if memory in UNREADABLE else (0, 1))
    refused = [
        (f["file"], *key) for f, key in zip(*_found(lint.stdout), strict=True) if key[0] == "parse-error"
    ]
    assert refused == ([(node, "parse-error", 5, 48)] if memory in UNREADABLE else [])


@pytest.mark.parametrize("memory", VALID + INVALID + UNREADABLE)
def test_topology_allocatable(tmp_path: Path, memory: str) -> None:
    manifest = _write(tmp_path, "web.yaml", DEPLOYMENT, "1Gi")
    topology = _write(tmp_path, "cluster.yaml", TOPOLOGY, memory)
    completed = run("place", "--no-config", "--cluster", topology, manifest)
    if memory in VALID:
        assert completed.returncode == 0
        assert "-> big-a-0" in completed.stdout
    elif memory in UNREADABLE:
        assert completed.returncode == 2
        error = completed.stderr.strip().splitlines()[-1]
        assert error.startswith(f"{topology}:11:21: error [parse-error] ")
    else:
        assert completed.returncode == 2
        error = completed.stderr.strip().splitlines()[-1]
        assert error.startswith(f"{topology}:11:13: error [parse-error] invalid ClusterTopology at ")
        assert "spec.zones.0.pools.0.allocatable.memory" in error


@pytest.mark.parametrize("size", ["1Ei", "1e1000000", "9Ei"])
def test_huge_max_file_size(size: str) -> None:
    completed = run("lint", "--no-config", "--max-file-size", size, str(EXAMPLES / "README.md"))
    assert completed.returncode != 2 or "--max-file-size" not in completed.stderr


def test_max_file_size_not_a_quantity() -> None:
    completed = run("lint", "--no-config", "--max-file-size", "1EB", str(EXAMPLES))
    assert completed.returncode == 2
    assert completed.stderr.strip() == "--max-file-size: '1EB' is not a size such as 64Mi, 512Ki or 1048576"


@pytest.mark.parametrize(("size", "expected"), [("1Ei", 2**60), ("1e1000000", 2**63 - 1), ("9Ei", 2**63 - 1)])
def test_parse_size_huge(size: str, expected: int) -> None:
    from kaffinity.config import parse_size

    assert parse_size(size) == expected


def test_huge_request_is_reported_as_huge(tmp_path: Path) -> None:
    """A request past the scheduler's counting range is named as such, not as a wrapped number."""
    manifest = _write(tmp_path, "web.yaml", DEPLOYMENT, '"1e1000000"')
    node = _write(tmp_path, "node.yaml", NODE, "1Ei")
    completed = run("lint", "--no-config", "--format", "json", "--cluster", node, manifest)
    [finding] = json.loads(completed.stdout)["findings"]
    assert (finding["rule"], finding["line"], finding["column"]) == ("unschedulable", *MEMORY_AT)
    assert "it requests at least 1e30 memory" in finding["message"]
