"""CEL in kaffinity's own Policy (``spec.expression``) and the ``kaffinity`` facts variable."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from kaffinity.config import Settings
from kaffinity.context import Context
from kaffinity.load.parse import parse
from kaffinity.load.resources import schema
from kaffinity.policy.check import policy_rules, reserved_names
from kaffinity.policy.facts import PARTS, facts
from kaffinity.policy.load import load_policies
from kaffinity.simulate.cluster import cluster_from

from .kit import REPO, findings, keys, lint_text, policy_rules_of, position

WORKLOADS = textwrap.dedent(
    """\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: web
      namespace: shop
      labels: {app: web}
    spec:
      replicas: 4
      selector:
        matchLabels: {app: web}
      template:
        metadata:
          labels: {app: web}
        spec:
          topologySpreadConstraints:
            - maxSkew: 1
              topologyKey: topology.kubernetes.io/zone
              whenUnsatisfiable: DoNotSchedule
              labelSelector:
                matchLabels: {app: web}
              matchLabelKeys: [pod-template-hash]
          affinity:
            podAffinity:
              preferredDuringSchedulingIgnoredDuringExecution:
                - weight: 10
                  podAffinityTerm:
                    topologyKey: kubernetes.io/hostname
                    labelSelector:
                      matchLabels: {app: cache}
          containers:
            - name: web
              image: web:1
              resources:
                requests: {cpu: 100m, memory: 64Mi}
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: cache
      namespace: shop
    spec:
      replicas: 1
      selector:
        matchLabels: {app: cache}
      template:
        metadata:
          labels: {app: cache}
        spec:
          containers:
            - name: cache
              image: cache:1
    ---
    apiVersion: policy/v1
    kind: PodDisruptionBudget
    metadata: {name: web, namespace: shop}
    spec:
      minAvailable: 3
      selector:
        matchLabels: {app: web}
    ---
    apiVersion: autoscaling/v2
    kind: HorizontalPodAutoscaler
    metadata: {name: web, namespace: shop}
    spec:
      scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
      minReplicas: 4
      maxReplicas: 8
    """
)


def rules(tmp_path: Path, text: str, **settings: Any) -> list[Any]:
    return policy_rules_of(tmp_path, text, **settings)


def policy(name: str, expression: str, target: str = "podSpec", extra: str = "") -> str:
    return (
        textwrap.dedent(
            f"""\
        apiVersion: kaffinity.io/v1alpha1
        kind: Policy
        metadata:
          name: {name}
        spec:
          target: {target}
          message: {name} is broken
          expression: {expression!r}
        """
        )
        + extra
    )


def test_an_expression_reads_the_target_defaulted_and_points_at_the_field_it_reads(tmp_path: Path) -> None:
    made = rules(
        tmp_path,
        policy(
            "defaulted", "object.schedulerName == 'default-scheduler' && object.dnsPolicy == 'ClusterFirst'"
        )
        + "---\n"
        + policy("one-container", "size(object.containers) == 1 && object.containers[0].image != 'web:1'"),
    )
    result = lint_text(WORKLOADS, rules=made)
    # defaulted holds everywhere; one-container fails on web, at its pod spec's containers.
    assert keys(result) == [("one-container", *position(WORKLOADS, "containers:", 1))]


def test_an_expression_that_errors_is_a_finding_saying_so(tmp_path: Path) -> None:
    made = rules(tmp_path, policy("needs-affinity", "object.affinity.podAffinity != null"))
    result = lint_text(WORKLOADS, rules=made)
    (finding,) = findings(result)
    assert finding.object is not None and finding.object.name == "cache"
    assert "resulted in error" in finding.message


def _context(text: str, cluster: str | None = None) -> Context:
    declared = None
    if cluster is not None:
        declared = cluster_from([parse("cluster.yaml", (REPO / cluster).read_text())])
    return Context([parse("test.yaml", text)], Settings(), declared)


def test_the_facts_follow_their_schema_and_say_what_kaffinity_knows() -> None:
    context = _context(WORKLOADS, "examples/clusters/topology.yaml")
    web = context.inventory.workloads[0]
    found = facts(context, web.doc, PARTS)
    Draft202012Validator(schema("facts.schema.json")).validate(found)
    assert (found["workload"], found["kind"], found["namespace"], found["replicas"]) == (
        True,
        "Deployment",
        "shop",
        4,
    )
    # 25% of 4: maxSurge 1 (up), maxUnavailable 1 (down).
    assert found["rollout"] == {"type": "RollingUpdate", "maxSurge": 1, "maxUnavailable": 1}
    assert found["neighbours"] == {
        "pdbs": ["PodDisruptionBudget/shop/web"],
        "hpas": ["HorizontalPodAutoscaler/shop/web"],
        "matches": ["Deployment/shop/cache"],
        "matchedBy": [],
    }
    placement = found["placement"]
    assert placement["pending"] == 0 and len(placement["replicas"]) == 4
    assert placement["zones"] == ["eu-west-1a", "eu-west-1b", "eu-west-1c"]
    spread = found["podTemplate"]["spec"]["topologySpreadConstraints"][0]
    assert [e["key"] for e in spread["labelSelector"]["matchExpressions"]] == ["pod-template-hash"]
    assert found["podTemplate"]["spec"]["schedulerName"] == "default-scheduler"
    assert found["findings"] == []  # nothing wrong with web on this cluster (see the next tests)


def test_only_the_parts_read_are_computed() -> None:
    context = _context(WORKLOADS, "examples/clusters/topology.yaml")
    found = facts(context, context.inventory.workloads[0].doc, {"rollout"})
    assert found["rollout"] is not None
    assert found["placement"] is None and found["findings"] is None and found["neighbours"] is None


def test_a_policy_on_the_facts_finds_the_built_in_findings(tmp_path: Path) -> None:
    made = rules(
        tmp_path,
        policy(
            "no-unscoped",
            "!kaffinity.findings.exists(f, f.rule == 'revision-unscoped')",
            target="object",
            extra="  fieldPath: spec.template.spec.affinity\n",
        ),
    )
    text = textwrap.dedent(
        """\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web, namespace: shop}
        spec:
          replicas: 3
          selector:
            matchLabels: {app: web}
          template:
            metadata:
              labels: {app: web}
            spec:
              affinity:
                podAntiAffinity:
                  requiredDuringSchedulingIgnoredDuringExecution:
                    - topologyKey: kubernetes.io/hostname
                      labelSelector:
                        matchLabels: {app: web}
              containers:
                - name: web
                  image: web:1
        """
    )
    result = lint_text(text, rules=made)
    assert keys(result) == [("no-unscoped", *position(text, "affinity:", 1))]


@pytest.mark.parametrize("annotated", [True, False])
def test_a_vap_reads_the_facts_only_when_marked_kaffinity_only(tmp_path: Path, annotated: bool) -> None:
    annotation = '  annotations: {policy.kaffinity.io/kaffinity-only: "true"}\n' if annotated else ""
    text = (
        "apiVersion: admissionregistration.k8s.io/v1\n"
        "kind: ValidatingAdmissionPolicy\n"
        f"metadata:\n  name: budgeted\n{annotation}"
        "spec:\n"
        "  matchConstraints:\n"
        "    resourceRules:\n"
        "    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}\n"
        "  validations:\n"
        "  - expression: size(kaffinity.neighbours.pdbs) > 0\n"
    )
    path = tmp_path / "vap.yaml"
    path.write_text(text)
    loaded = load_policies([str(path)], reserved_names())
    made, errors = policy_rules(loaded, Settings())
    if not annotated:
        assert len(errors) == 1
        assert "undeclared reference to 'kaffinity" in errors[0] and "kaffinity-only" in errors[0]
        return
    assert not errors
    result = lint_text(WORKLOADS, rules=made)
    assert [f.object.name for f in findings(result) if f.object is not None] == ["cache"]
