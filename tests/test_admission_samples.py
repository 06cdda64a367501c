"""Kyverno's and Gatekeeper's scheduling sample policies, as ValidatingAdmissionPolicies.

The policies are in ``tests/data/admission/samples`` (each file's header names the upstream
policy it renders and what changed to make it a VAP); they are read as ``--policy`` reads that
folder. Each sample has a manifest it denies (or audits) and one it lets through; the findings
are compared by (rule, line, column), and by severity where the binding's actions set it. The
fixtures are small manifests shaped like those of the real-world corpus, written here.
"""

from __future__ import annotations

import textwrap
from functools import cache
from typing import Any

import pytest

from kaffinity.config import Settings
from kaffinity.k8s.defaults import defaulted
from kaffinity.policy.check import policy_rules, reserved_names
from kaffinity.policy.load import load_policies
from kaffinity.rules.base import Rule

from .kit import REPO, findings, keys, lint_text, position, run

SAMPLES = REPO / "tests" / "data" / "admission" / "samples"


@cache
def sample_rules() -> tuple[Rule, ...]:
    """Every sample policy, read as ``--policy tests/data/admission/samples`` reads them."""
    loaded = load_policies([str(SAMPLES)], reserved_names())
    made, errors = policy_rules(loaded, Settings())
    assert not loaded.errors and not errors, [*loaded.errors, *errors]
    return tuple(made)


def found(text: str, *names: str) -> list[tuple[str, int | None, int | None]]:
    """The (rule, line, column) of the findings of the policies ``names`` on ``text``."""
    return [key for key in keys(lint_text(text, rules=sample_rules())) if key[0] in names]


def severities(text: str, name: str) -> set[str]:
    return {f.severity.value for f in findings(lint_text(text, rules=sample_rules()), name)}


def deployment(
    name: str = "web",
    replicas: int | None = 3,
    pod: str = "",
    namespace: str | None = None,
    labels: str = "{app: web}",
) -> str:
    """A Deployment as the corpus writes them; ``pod``: more lines of the pod spec (indented)."""
    head = ["apiVersion: apps/v1", "kind: Deployment", "metadata:", f"  name: {name}"]
    if namespace:
        head.append(f"  namespace: {namespace}")
    head.append("spec:")
    if replicas is not None:
        head.append(f"  replicas: {replicas}")
    head += [
        "  selector:",
        f"    matchLabels: {labels}",
        "  template:",
        "    metadata:",
        f"      labels: {labels}",
        "    spec:",
        "      containers:",
        "      - name: main",
        "        image: nginx:1.27",
    ]
    body = "\n".join(head) + "\n"
    return body + textwrap.indent(textwrap.dedent(pod), "      ") if pod else body


SPREAD_BOTH = """\
topologySpreadConstraints:
- maxSkew: 1
  topologyKey: kubernetes.io/hostname
  whenUnsatisfiable: DoNotSchedule
  labelSelector: {matchLabels: {app: web}}
- maxSkew: 1
  topologyKey: topology.kubernetes.io/zone
  whenUnsatisfiable: ScheduleAnyway
  labelSelector: {matchLabels: {app: web}}
"""


# -- Kyverno: topologyspreadconstraints-policy --------------------------------------------------


def test_topology_spread_is_required_from_three_replicas() -> None:
    one = SPREAD_BOTH.partition("- maxSkew: 1\n  topologyKey: topology")[0]
    text = deployment(replicas=3, pod=one)
    rule = "topologyspreadconstraints-policy"
    assert found(text, rule) == [(rule, *position(text, "topologySpreadConstraints:"))]
    assert severities(text, rule) == {"info"}  # Kyverno Audit -> validationActions [Audit]


def test_topology_spread_passes_with_both_keys_or_fewer_replicas() -> None:
    rule = "topologyspreadconstraints-policy"
    assert found(deployment(replicas=5, pod=SPREAD_BOTH), rule) == []
    assert found(deployment(replicas=2), rule) == []  # the match condition skips it
    assert found(deployment(replicas=None), rule) == []  # defaulted to 1 replica


def test_topology_spread_without_any_constraint_points_at_the_pod_spec() -> None:
    text = deployment(replicas=4)
    rule = "topologyspreadconstraints-policy"
    assert found(text, rule) == [(rule, *position(text, "spec:", 2))]


# -- Kyverno: pdb-maxunavailable ----------------------------------------------------------------


def pdb(name: str, budget: str, namespace: str | None = None, selector: str = "{app: web}") -> str:
    lines = ["apiVersion: policy/v1", "kind: PodDisruptionBudget", "metadata:", f"  name: {name}"]
    if namespace:
        lines.append(f"  namespace: {namespace}")
    lines += ["spec:", f"  {budget}", "  selector:", f"    matchLabels: {selector}"]
    return "\n".join(lines) + "\n"


def test_pdb_max_unavailable_zero_is_reported() -> None:
    text = pdb("web", "maxUnavailable: 0")
    assert found(text, "pdb-maxunavailable") == [("pdb-maxunavailable", *position(text, "maxUnavailable"))]
    assert found(pdb("web", "maxUnavailable: 1"), "pdb-maxunavailable") == []
    assert found(pdb("web", "minAvailable: 1"), "pdb-maxunavailable") == []


def test_pdb_max_unavailable_percentage_is_an_error_of_the_upstream_expression() -> None:
    """``int('50%')`` is a CEL error: upstream's expression fails on any percentage, and with
    failurePolicy Fail the API server reports it (here as the Audit action's info)."""
    text = pdb("web", "maxUnavailable: 50%")
    (finding,) = findings(lint_text(text, rules=sample_rules()), "pdb-maxunavailable")
    assert (finding.line, finding.column) == position(text, "maxUnavailable")
    assert "resulted in error" in finding.message and "cannot convert string to int" in finding.message


# -- Kyverno: Pod policies and their auto-generated rules ---------------------------------------

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  containers:
  - name: main
    image: busybox:1.36
"""

CRONJOB = """\
apiVersion: batch/v1
kind: CronJob
metadata:
  name: report
spec:
  schedule: "0 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: main
            image: busybox:1.36
"""


def test_priority_class_name_is_required_of_pods_and_of_pod_templates() -> None:
    names = (
        "require-pod-priorityclassname",
        "autogen-require-pod-priorityclassname",
        "autogen-cronjob-require-pod-priorityclassname",
    )
    # Not written: the finding is at the deepest field that exists, the pod spec.
    assert found(POD, *names) == [(names[0], *position(POD, "spec:"))]
    text = deployment()
    assert found(text, *names) == [(names[1], *position(text, "spec:", 2))]
    assert found(CRONJOB, *names) == [(names[2], *position(CRONJOB, "spec:", 3))]
    assert found(POD + "  priorityClassName: high\n", *names) == []
    assert found(deployment(pod="priorityClassName: high\n"), *names) == []


def test_node_affinity_is_refused_in_pods_and_templates() -> None:
    affinity = """\
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: kubernetes.io/arch, operator: In, values: [amd64]}
    """
    names = ("restrict-node-affinity", "autogen-restrict-node-affinity")
    pod = POD + textwrap.indent(textwrap.dedent(affinity), "  ")
    assert found(pod, *names) == [(names[0], *position(pod, "nodeAffinity:"))]
    text = deployment(pod=affinity)
    assert found(text, *names) == [(names[1], *position(text, "nodeAffinity:"))]
    anti = """\
    affinity:
      podAntiAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 100
          podAffinityTerm:
            topologyKey: kubernetes.io/hostname
            labelSelector: {matchLabels: {app: web}}
    nodeSelector: {kubernetes.io/os: linux}
    """
    assert found(deployment(pod=anti), *names) == []


DAEMONSET = """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  namespace: kube-system
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      tolerations:
      - key: {key}
        operator: Exists
        effect: NoSchedule
      containers:
      - name: main
        image: agent:1.0
"""


@pytest.mark.parametrize(
    ("key", "refused"),
    [
        ("node-role.kubernetes.io/control-plane", True),
        ("node-role.kubernetes.io/master", True),
        ("nvidia.com/gpu", False),
    ],
)
def test_control_plane_tolerations_are_refused(key: str, refused: bool) -> None:
    text = DAEMONSET.replace("{key}", key)
    name = "autogen-restrict-controlplane-scheduling"
    assert found(text, name) == ([(name, *position(text, "tolerations:"))] if refused else [])


# -- Gatekeeper: k8sreplicalimits ----------------------------------------------------------------


def test_replica_limits_from_the_configmap_params_deny() -> None:
    text = deployment(replicas=100)
    assert found(text, "k8sreplicalimits") == [("k8sreplicalimits", *position(text, "replicas: 100"))]
    assert severities(text, "k8sreplicalimits") == {"error"}  # enforcementAction deny
    (finding,) = findings(lint_text(text, rules=sample_rules()), "k8sreplicalimits")
    assert finding.message.startswith(
        "The provided number of replicas is not allowed for Deployment: web. Allowed ranges: 3-50"
    )
    for replicas in (3, 50):
        assert found(deployment(replicas=replicas), "k8sreplicalimits") == []


def test_replica_limits_read_the_defaulted_replicas() -> None:
    text = deployment(replicas=None)  # the API server stores 1
    assert found(text, "k8sreplicalimits") == [("k8sreplicalimits", *position(text, "spec:", 1))]


# -- Gatekeeper: k8shorizontalpodautoscaler ------------------------------------------------------


def hpa(spec: str, api_version: str = "autoscaling/v2") -> str:
    head = f"apiVersion: {api_version}\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: web\nspec:\n"
    target = "  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n"
    return head + target + textwrap.indent(textwrap.dedent(spec), "  ")


def test_hpa_replicas_outside_the_ranges_and_too_small_a_spread() -> None:
    name = "k8shorizontalpodautoscaler"
    text = hpa("minReplicas: 1\nmaxReplicas: 10\n")
    assert found(text, name) == [(name, *position(text, "minReplicas"))]
    text = hpa("minReplicas: 4\nmaxReplicas: 4\n")
    assert found(text, name) == [(name, *position(text, "maxReplicas"))]
    assert found(hpa("minReplicas: 3\nmaxReplicas: 6\n"), name) == []


def test_hpa_min_replicas_is_defaulted_to_one() -> None:
    """kube-apiserver stores ``minReplicas: 1`` when none is written: out of the 3-6 range,
    not an expression error (kaffinity.k8s.defaults had no HorizontalPodAutoscaler)."""
    name = "k8shorizontalpodautoscaler"
    text = hpa("maxReplicas: 5\n")
    result = lint_text(text, rules=sample_rules())
    assert [key for key in keys(result) if key[0] == name] == [(name, *position(text, "spec:"))]
    assert findings(result, name)[0].message.startswith(
        "The HorizontalPodAutoscaler <web> minReplicas 1 or maxReplicas 5 is not allowed"
    )


def test_defaults_of_hpa_replication_controller_and_a_missing_spec() -> None:
    assert (
        defaulted(
            {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "spec": {}}, "1.33", "default"
        )["spec"]["minReplicas"]
        == 1
    )
    rc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "spec": {"template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": []}}},
    }
    spec = defaulted(rc, "1.33", "default")["spec"]
    assert (spec["selector"], spec["replicas"]) == ({"app": "db"}, 1)
    budget = defaulted({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget"}, "1.33", "default")
    assert budget["spec"] == {}


# -- Gatekeeper: k8spoddisruptionbudget ----------------------------------------------------------


def test_gatekeeper_pdb_max_unavailable_zero_is_denied() -> None:
    name = "k8spoddisruptionbudget"
    text = pdb("web", "maxUnavailable: 0")
    assert found(text, name) == [(name, *position(text, "maxUnavailable"))]
    assert found(pdb("web", "maxUnavailable: 10%"), name) == []  # a percentage passes, as in Rego


def test_workload_selected_by_a_pdb_with_min_available_not_below_replicas() -> None:
    name = "k8spoddisruptionbudget-workloads"
    text = deployment(replicas=2) + "---\n" + pdb("web", "minAvailable: 2")
    assert found(text, name) == [(name, *position(text, "replicas: 2"))]
    (finding,) = findings(lint_text(text, rules=sample_rules()), name)
    assert finding.message.startswith(
        "Deployment <web> has 2 replica(s) but PodDisruptionBudget <web> has minAvailable of 2"
    )
    assert found(deployment(replicas=3) + "---\n" + pdb("web", "minAvailable: 2"), name) == []
    other = pdb("other", "minAvailable: 5", selector="{app: other}")
    assert found(deployment(replicas=2) + "---\n" + other, name) == []


def test_workload_selected_by_a_pdb_with_max_unavailable_zero() -> None:
    name = "k8spoddisruptionbudget-workloads"
    text = deployment(replicas=3) + "---\n" + pdb("web", "maxUnavailable: 0")
    # Only variables and params are read: the finding is on the object (VAP has no fieldPath).
    assert found(text, name) == [(name, *position(text, "apiVersion: apps/v1"))]


def test_pdb_params_are_looked_up_in_the_workloads_namespace() -> None:
    """A PDB that writes no namespace is created in the default namespace: it does not select a
    Deployment of another namespace (matching.param_candidates took it as in every namespace)."""
    name = "k8spoddisruptionbudget-workloads"
    budget = pdb("web", "minAvailable: 2")
    assert found(deployment(replicas=2, namespace="shop") + "---\n" + budget, name) == []
    text = deployment(replicas=2, namespace="default") + "---\n" + budget
    assert found(text, name) == [(name, *position(text, "replicas: 2"))]
    text = deployment(replicas=2, namespace="shop") + "---\n" + pdb("web", "minAvailable: 2", "shop")
    assert found(text, name) == [(name, *position(text, "replicas: 2"))]


def test_a_pdb_param_without_spec_is_read_as_stored() -> None:
    """A PodDisruptionBudget written without ``spec`` is stored with ``spec: {}`` (a struct):
    params.spec exists, selects every workload and sets no budget (vap.py gave the undefaulted
    manifest, and every Deployment of the namespace had a "no such key: spec" error)."""
    name = "k8spoddisruptionbudget-workloads"
    bare = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: bare\n"
    assert found(deployment(replicas=1) + "---\n" + bare, name) == []


def test_a_replication_controller_is_selected_through_its_defaulted_selector() -> None:
    name = "k8spoddisruptionbudget-workloads"
    controller = textwrap.dedent(
        """\
        apiVersion: v1
        kind: ReplicationController
        metadata:
          name: db
        spec:
          template:
            metadata:
              labels: {app: db}
            spec:
              containers:
              - name: main
                image: postgres:16
        """
    )
    # Gatekeeper compares spec.selector.matchLabels, which a ReplicationController does not
    # have: only a PDB without matchLabels selects it; one replica (defaulted) vs minAvailable 1.
    budget = (
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: all\nspec:\n  minAvailable: 1\n"
    )
    text = controller + "---\n" + budget
    assert found(text, name) == [(name, *position(text, "spec:", 1))]
    assert found(controller + "---\n" + pdb("db", "minAvailable: 1", selector="{app: db}"), name) == []


# -- the command line ---------------------------------------------------------------------------


def test_the_samples_run_from_the_command_line(tmp_path: Any) -> None:
    app = tmp_path / "app.yaml"
    app.write_text(deployment(replicas=100) + "---\n" + pdb("web", "maxUnavailable: 0"))
    completed = run(
        "lint", "--no-config", "--select", "policy", "--format", "json", str(app), "--policy", str(SAMPLES)
    )
    assert completed.returncode == 1  # k8sreplicalimits and k8spoddisruptionbudget deny
    assert '"rule": "k8sreplicalimits"' in completed.stdout


def test_a_field_written_as_null_is_unset_as_in_the_typed_object() -> None:
    """``affinity: null`` or ``tolerations: null`` (Helm and golden outputs write them) decode to
    an unset field: no CEL error (``object`` kept the nulls: "no matching overloads"), and a null
    ``priorityClassName`` is a missing one."""
    pod = """\
    affinity: null
    tolerations: null
    topologySpreadConstraints: null
    priorityClassName: null
    """
    text = deployment(replicas=3, pod=pod)
    names = (
        "autogen-restrict-node-affinity",
        "autogen-restrict-controlplane-scheduling",
        "topologyspreadconstraints-policy",
        "autogen-require-pod-priorityclassname",
    )
    assert found(text, *names) == [
        ("topologyspreadconstraints-policy", *position(text, "topologySpreadConstraints: null")),
        ("autogen-require-pod-priorityclassname", *position(text, "priorityClassName: null")),
    ]
    assert not [
        f for f in findings(lint_text(text, rules=sample_rules())) if "resulted in error" in f.message
    ]


def test_an_autoscaling_v1_hpa_is_evaluated_as_v2() -> None:
    """kube-apiserver converts an autoscaling/v1 HorizontalPodAutoscaler to the v2 the policy
    matches (matchPolicy: Equivalent, the default) and denies 1-10 (four such HPAs in the
    corpus, zegl/kube-score)."""
    text = hpa("minReplicas: 1\nmaxReplicas: 10\n", api_version="autoscaling/v1")
    name = "k8shorizontalpodautoscaler"
    assert found(text, name) == [(name, *position(text, "minReplicas"))]
