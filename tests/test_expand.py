"""The matchLabelKeys / mismatchLabelKeys merge (kaffinity/expand/merge.py) and the rules built on it.

The KEP examples are asserted as the KEPs print them: KEP-3633 stories 1 and 2 and the
kube-apiserver diff of its design section, and the KEP-3243 example."""

from __future__ import annotations

import json
import pathlib
import textwrap
from typing import Any

import pytest

from kaffinity.expand.merge import (
    APISERVER,
    EXISTING,
    GATE_OFF,
    INVALID,
    MISSING,
    NIL_SELECTOR,
    SCHEDULER,
    Expansions,
    TermExpansion,
    WorkloadExpansion,
    expand,
    pod_labels,
)
from kaffinity.k8s.model import Workload, build_inventory
from kaffinity.load.parse import parse

from .kit import EXAMPLES, added_lines, check, keys, line_of, lint_text, position, run
from .rules.expand_inputs import KEP_3633_STORY_1, SELF_ANTI, rules_of
from .rules.validation_inputs import deployment, pod

HASH = "<pod-template-hash of this revision>"


def workloads(text: str) -> tuple[Workload, ...]:
    return build_inventory(parse("test.yaml", text).documents).workloads


def expanded(text: str, version: str = "1.37", **gates: bool) -> WorkloadExpansion:
    (workload,) = workloads(text)
    return expand(workload, version, gates)


def expressions(term: TermExpansion) -> list[tuple[str, str, tuple[str, ...]]]:
    assert term.merged is not None
    return [(r.key, r.operator, r.values) for r in term.merged.match_expressions]


# Story 2 as a webhook would leave a tenant's Pod (the KEP gives the affinity only).
KEP_3633_STORY_2 = """\
apiVersion: v1
kind: Pod
metadata:
  name: sample
  namespace: sample-namespace
  labels:
    tenant: tenant-a
spec:
  containers: [{name: c, image: i}]
  affinity:
    podAffinity:      # ensures the pods of this tenant land on the same node pool
      requiredDuringSchedulingIgnoredDuringExecution:
      - matchLabelKeys:
          - tenant
        topologyKey: node-pool
    podAntiAffinity:  # ensures only Pods from this tenant lands on the same node pool
      requiredDuringSchedulingIgnoredDuringExecution:
      - mismatchLabelKeys:
          - tenant
        labelSelector:
          matchExpressions:
          - key: tenant
            operator: Exists
        topologyKey: node-pool
"""

KEP_3243 = """\
apiVersion: v1
kind: Pod
metadata:
  name: sample
  labels:
    app: sample
spec:
  containers: [{name: c, image: i}]
  topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: DoNotSchedule
    labelSelector: {}
    matchLabelKeys: # ADDED
    - app
"""


def test_kep_3633_story_1_scopes_the_term_to_the_revision() -> None:
    (term,) = expanded(KEP_3633_STORY_1).terms
    assert expressions(term) == [("app", "In", ("database",)), ("pod-template-hash", "In", (HASH,))]
    assert (term.merger, term.stored, term.kind, term.required) == (APISERVER, True, "podAffinity", True)
    (use,) = term.applied
    assert use.controller is not None and use.controller.key == "pod-template-hash"


def test_kep_3633_story_2_merges_the_anti_affinity_and_skips_the_term_without_a_selector() -> None:
    affinity, anti = expanded(KEP_3633_STORY_2).terms
    # The podAffinity term has no labelSelector: kube-apiserver skips it (and its validation
    # rejects the keys: "must not be specified when labelSelector is not set").
    assert affinity.merged is None and affinity.merger is None
    assert [(use.key, use.ignored) for use in affinity.keys] == [("tenant", NIL_SELECTOR)]
    assert expressions(anti) == [("tenant", "Exists", ()), ("tenant", "NotIn", ("tenant-a",))]
    rejected = lint_text(KEP_3633_STORY_2, select=("api-validation",))
    assert keys(rejected) == [("api-validation", *position(KEP_3633_STORY_2, "matchLabelKeys", 1))]
    assert [f.path for f in rejected.findings] == [
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys"
    ]


def test_kep_3633_design_diff(tmp_path: Any) -> None:
    """The kube-apiserver diff of KEP-3633's design section: four `+` lines after the Exists."""
    path = tmp_path / "sample.yaml"
    path.write_text(KEP_3633_STORY_2)
    completed = run("expand", "--no-config", str(path))
    assert completed.returncode == 0, completed.stderr
    assert added_lines(completed.stdout) == [
        "+          - key: tenant",
        "+            operator: NotIn",
        "+            values:",
        "+            - tenant-a",
    ]
    assert f"@@ -{line_of(KEP_3633_STORY_2, 'operator: Exists') - 2}," in completed.stdout
    # The podAffinity term is reported, not silently dropped.
    assert "matchLabelKeys 'tenant' not merged: labelSelector is not set" in completed.stdout


def test_kep_3243_example_merges_into_an_empty_selector() -> None:
    (term,) = expanded(KEP_3243).terms
    assert expressions(term) == [("app", "In", ("sample",))]
    assert term.selector is not None and term.selector.is_empty
    assert (term.merger, term.stored) == (APISERVER, True)


def test_kep_3243_example_in_place_matches_the_kep() -> None:
    completed = run("expand", "--no-config", "--format", "yaml", "-", stdin=KEP_3243)
    assert completed.returncode == 0, completed.stderr
    (doc,) = parse("out.yaml", completed.stdout).documents
    constraint = doc.data["spec"]["topologySpreadConstraints"][0]
    assert constraint["labelSelector"] == {
        "matchExpressions": [{"key": "app", "operator": "In", "values": ["sample"]}]
    }
    # Everything but the selector as written, byte for byte.
    before, after = KEP_3243.split("    labelSelector: {}\n")
    assert completed.stdout.startswith(before) and completed.stdout.endswith(after)


# -- upstream semantics (pkg/registry/core/pod/strategy.go) ------------------------------------


def test_match_keys_then_mismatch_keys_appended_in_list_order() -> None:
    text = pod(
        """\
        affinity:
          podAntiAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector:
                matchLabels: {app: web}
                matchExpressions: [{key: zone, operator: Exists}]
              topologyKey: kubernetes.io/hostname
              mismatchLabelKeys: [team]
              matchLabelKeys: [tier, absent, app2]
        """,
        labels="{app: web, tier: front, team: blue, app2: x}",
    )
    (term,) = expanded(text).terms
    assert expressions(term) == [
        ("zone", "Exists", ()),
        ("tier", "In", ("front",)),
        ("app2", "In", ("x",)),
        ("team", "NotIn", ("blue",)),
    ]
    assert term.merged is not None and term.merged.match_labels == (("app", "web"),)
    assert [(use.key, use.ignored) for use in term.ignored] == [("absent", MISSING)]


def test_preferred_terms_are_merged_too() -> None:
    text = deployment(
        """\
        affinity:
          podAffinity:
            preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 10
              podAffinityTerm:
                labelSelector: {matchLabels: {app: cache}}
                topologyKey: kubernetes.io/hostname
                matchLabelKeys: [pod-template-hash]
        """
    )
    (term,) = expanded(text).terms
    assert not term.required and expressions(term) == [("pod-template-hash", "In", (HASH,))]


@pytest.mark.parametrize(("version", "merged"), [("1.29", False), ("1.30", False), ("1.31", True)])
def test_pod_affinity_merge_follows_the_gate(version: str, merged: bool) -> None:
    (term,) = expanded(KEP_3633_STORY_1, version).terms
    assert (term.merger == APISERVER) is merged
    if not merged:
        assert [use.ignored for use in term.keys] == [GATE_OFF]
        assert "MatchLabelKeysInPodAffinity" in term.note


def test_pod_affinity_gate_turned_on_in_1_30() -> None:
    (term,) = expanded(KEP_3633_STORY_1, "1.30", MatchLabelKeysInPodAffinity=True).terms
    assert term.merger == APISERVER


@pytest.mark.parametrize(
    ("version", "gates", "merger", "stored"),
    [
        ("1.27", {}, SCHEDULER, False),
        ("1.33", {}, SCHEDULER, False),
        ("1.34", {}, APISERVER, True),
        ("1.37", {}, APISERVER, True),
        ("1.37", {"MatchLabelKeysInPodTopologySpreadSelectorMerge": False}, SCHEDULER, False),
    ],
)
def test_spread_keys_are_merged_by_the_scheduler_before_1_34(
    version: str, gates: dict[str, bool], merger: str, stored: bool
) -> None:
    (term,) = expanded(KEP_3243, version, **gates).terms
    assert (term.merger, term.stored) == (merger, stored)
    assert expressions(term) == [("app", "In", ("sample",))]  # the same effective selector


def test_spread_keys_dropped_when_the_gate_is_off() -> None:
    (term,) = expanded(KEP_3243, "1.33", MatchLabelKeysInPodTopologySpread=False).terms
    assert term.merger is None and term.merged == term.selector
    assert [use.ignored for use in term.keys] == [GATE_OFF]


def test_an_existing_pod_is_not_merged_again() -> None:
    """`kubectl get pods -o yaml`: the stored selector already holds the merged expression."""
    text = pod(
        """\
        affinity:
          podAntiAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector:
                matchLabels: {app: web}
                matchExpressions:
                - {key: pod-template-hash, operator: In, values: [5d4f8c]}
              topologyKey: kubernetes.io/hostname
              matchLabelKeys: [pod-template-hash]
        """,
        labels="{app: web, pod-template-hash: 5d4f8c}",
    ).replace("  name: web\n", "  name: web\n  uid: 0b6c3f0e-1\n  resourceVersion: '42'\n")
    (term,) = expanded(text).terms
    assert term.merged == term.selector and [use.ignored for use in term.keys] == [EXISTING]
    # Merging again would name pod-template-hash twice: no false "exists in both" error.
    check(text, select=("api-validation",))
    # The same pod being created is merged, and rejected.
    created = text.replace("  uid: 0b6c3f0e-1\n  resourceVersion: '42'\n", "")
    assert [f.rule for f in lint_text(created, select=("api-validation",)).findings] == ["api-validation"]


def test_keys_validation_rejects_are_not_merged() -> None:
    text = pod(
        """\
        affinity:
          podAntiAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: web}}
              topologyKey: kubernetes.io/hostname
              matchLabelKeys: [tier, "bad key!"]
              mismatchLabelKeys: [tier]
        """,
        labels="{app: web, tier: a}",
    )
    (term,) = expanded(text).terms
    assert [(use.key, use.ignored) for use in term.keys] == [
        ("tier", INVALID),
        ("bad key!", INVALID),
        ("tier", INVALID),
    ]
    assert rules_of(text) == []  # api-validation reports them; nothing is "ignored silently"


# -- controller labels ----------------------------------------------------------------------------


def _kind(kind: str, extra: str = "", api: str = "apps/v1") -> Workload:
    spec = "template:" if kind != "CronJob" else "jobTemplate:\n    spec:\n      template:"
    text = textwrap.dedent(
        f"""\
        apiVersion: {api}
        kind: {kind}
        metadata: {{name: web}}
        spec:
          {extra}
          {spec}
        """
    )
    indent = "    " if kind != "CronJob" else "        "
    text += f"{indent}metadata: {{labels: {{app: web}}}}\n"
    text += f"{indent}spec: {{containers: [{{name: c, image: i}}]}}\n"
    (workload,) = workloads(text)
    return workload


JOB_LABELS = {
    "batch.kubernetes.io/job-name",
    "job-name",
    "batch.kubernetes.io/controller-uid",
    "controller-uid",
}
STS_LABELS = {
    "controller-revision-hash",
    "statefulset.kubernetes.io/pod-name",
    "apps.kubernetes.io/pod-index",
}


@pytest.mark.parametrize(
    ("kind", "api", "extra", "expected"),
    [
        ("Deployment", "apps/v1", "", {"pod-template-hash"}),
        ("StatefulSet", "apps/v1", "", STS_LABELS),
        ("DaemonSet", "apps/v1", "", {"controller-revision-hash", "pod-template-generation"}),
        ("ReplicaSet", "apps/v1", "", set()),
        ("Job", "batch/v1", "", JOB_LABELS),
        ("Job", "batch/v1", "manualSelector: true", set()),
        (
            "Job",
            "batch/v1",
            "completionMode: Indexed",
            {*JOB_LABELS, "batch.kubernetes.io/job-completion-index"},
        ),
        ("CronJob", "batch/v1", "", JOB_LABELS),
    ],
)
def test_controller_labels_per_kind(kind: str, api: str, extra: str, expected: set[str]) -> None:
    labels = pod_labels(_kind(kind, extra, api), "1.37")
    assert set(labels) - {"app"} == expected


def test_placeholders_never_invent_a_value() -> None:
    labels = pod_labels(_kind("Deployment"), "1.37")
    assert labels["pod-template-hash"] == HASH
    job = pod_labels(_kind("Job", api="batch/v1"), "1.37")
    assert job["batch.kubernetes.io/job-name"] == "web"  # known: the Job's name
    assert job["controller-uid"] == "<controller-uid of each Job>"
    cron = pod_labels(_kind("CronJob", api="batch/v1"), "1.37")
    assert cron["job-name"] == "<job-name of each Job>"  # the CronJob names each Job


def test_per_pod_labels_take_the_replica_and_qualified_placeholders_differ() -> None:
    sts = _kind("StatefulSet")
    assert pod_labels(sts, "1.37", replica=2)["statefulset.kubernetes.io/pod-name"] == "web-2"
    assert pod_labels(sts, "1.37", replica=2)["apps.kubernetes.io/pod-index"] == "2"
    one = pod_labels(_kind("Deployment"), "1.37", qualified=True)["pod-template-hash"]
    old = pod_labels(_kind("Deployment"), "1.37", qualified=True, revision="old revision")
    assert one == "<pod-template-hash of Deployment/default/web, this revision>"
    assert old["pod-template-hash"] != one


def test_pod_index_label_from_1_28() -> None:
    assert "apps.kubernetes.io/pod-index" not in pod_labels(_kind("StatefulSet"), "1.27")
    assert "apps.kubernetes.io/pod-index" in pod_labels(_kind("StatefulSet"), "1.28")


def test_expansions_give_the_merged_selector_to_later_analyses() -> None:
    """The graph and the simulation read selectors from here: merged where a merge applies."""
    text = deployment(
        """\
        affinity:
          podAntiAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: web}}
              topologyKey: kubernetes.io/hostname
              matchLabelKeys: [pod-template-hash]
            - labelSelector: {matchLabels: {app: db}}
              topologyKey: kubernetes.io/hostname
        """
    )
    (workload,) = workloads(text)
    assert workload.pod.affinity is not None and workload.pod.affinity.pod_anti_affinity is not None
    scoped, other = workload.pod.affinity.pod_anti_affinity.required
    expansions = Expansions("1.37", {})
    merged = expansions.selector(workload, scoped)
    assert merged is not None
    assert [(r.key, r.values) for r in merged.match_expressions] == [
        ("pod-template-hash", ("<pod-template-hash of Deployment/default/web, this revision>",))
    ]
    assert expansions.selector(workload, other) is other.label_selector
    assert expansions.of(workload) is expansions.of(workload)  # computed once


# -- the command --------------------------------------------------------------------------------


def test_expand_json_shape() -> None:
    completed = run(
        "expand", "--no-config", "--format", "json", "--kube-version", "1.33", "-", stdin=KEP_3243
    )
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    (workload,) = report["workloads"]
    assert workload["object"] == {"apiVersion": "v1", "kind": "Pod", "namespace": "default", "name": "sample"}
    (term,) = workload["terms"]
    assert term["mergedBy"] == "kube-scheduler" and term["stored"] is False
    assert term["original"] == {} and term["merged"] == {
        "matchExpressions": [{"key": "app", "operator": "In", "values": ["sample"]}]
    }
    assert term["applied"] == [
        {"key": "app", "field": "matchLabelKeys", "index": 0, "operator": "In", "value": "sample",
         "controllerLabel": False}
    ]  # fmt: skip
    assert term["line"] == line_of(KEP_3243, "maxSkew")


def test_expand_reports_ignored_keys_and_bad_input() -> None:
    text = KEP_3633_STORY_1.replace("- pod-template-hash", "- tenant")
    broken = text + "---\nkey: [unclosed\n"
    completed = run("expand", "--no-config", "--format", "json", "-", stdin=broken)
    assert completed.returncode == 2
    assert "<stdin>:" in completed.stderr
    (term,) = json.loads(completed.stdout)["workloads"][0]["terms"]
    assert term["ignored"] == [
        {
            "key": "tenant",
            "field": "matchLabelKeys",
            "index": 0,
            "code": "missing",  # as the JSON report spells it, not "controller-label-unavailable"
            "reason": "the pods have no label tenant",
        }
    ]


def test_expand_without_label_keys_says_so() -> None:
    completed = run("expand", "--no-config", "-", stdin=SELF_ANTI)
    assert completed.returncode == 0 and completed.stdout == ""
    assert "no workload uses matchLabelKeys" in completed.stderr


def test_expand_yaml_of_several_files_names_each(tmp_path: Any) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(KEP_3243)
    second.write_text(SELF_ANTI)
    completed = run("expand", "--no-config", "--format", "yaml", str(first), str(second))
    assert completed.returncode == 0, completed.stderr
    merged, unchanged = completed.stdout.split("---\n")
    assert merged.startswith(f"# Source: {first}\n") and "- key: app" in merged
    assert unchanged == f"# Source: {second}\n{SELF_ANTI}"


def test_expand_writes_to_output_as_lint_does(tmp_path: pathlib.Path) -> None:
    """``-o FILE``: the report in the file, nothing on stdout (issue 22)."""
    target = tmp_path / "expand.json"
    example = str(EXAMPLES / "rollout-deadlock" / "pass.yaml")
    completed = run("expand", "--no-config", "--format", "json", "-o", str(target), example)
    assert (completed.returncode, completed.stdout) == (0, "")
    assert [item["object"]["name"] for item in json.loads(target.read_text())["workloads"]] == [
        "nginx-deployment"
    ]


def test_a_run_plans_the_edits_of_its_first_findings_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planning an edit loads the term's document again (about a millisecond): a file of a
    thousand workloads made lint ten times slower. Past engine.record.PLANS_PER_RUN the hint
    promises no edit and carries none; kaffinity fix still plans every finding itself."""
    from kaffinity.engine import record
    from kaffinity.rules.revision_unscoped import FIX_PROMISE

    monkeypatch.setattr(record, "PLANS_PER_RUN", 2)
    docs = [SELF_ANTI.replace("name: web", f"name: web{index}") for index in range(4)]
    text = "---\n".join(docs)
    result = lint_text(text, select=("revision-unscoped",))
    assert keys(result) == [("revision-unscoped", *position(text, "labelSelector:", n)) for n in range(1, 5)]
    findings = result.findings
    planned = [finding.edit is not None for finding in findings]
    promised = [FIX_PROMISE in (finding.fix or "") for finding in findings]
    assert planned == promised == [True, True, False, False]
    assert not any("kaffinity fix" in (finding.fix or "") for finding in findings[2:])
