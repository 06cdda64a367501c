"""Both sides of the admission differential: kaffinity's ValidatingAdmissionPolicy evaluation and
the oracle's (kube-apiserver's plugin, ``oracle/admission.go``), put in one comparable form.

A scenario is a dict: ``policies``, ``bindings``, ``params`` (objects), ``namespaces`` (v1
Namespaces), ``object`` (the object created), optional ``paramScopes`` (a custom param kind's
scope, as its CRD would say). kaffinity reads the policies, bindings and params as a policy file
(``--policy``), the namespaces as a cluster file and the object as the manifest linted.

The comparable answer: ``refused`` (whether some policy or binding is refused by the API server's
validation: kaffinity reports it as a policy-file error) and ``findings``, a sorted list of
(severity, binding, message) — what each binding does to the object: a failing validation (its
severity from the binding's ``validationActions``), a configuration error (an error whatever the
actions), nothing when it does not match, passes, or its error is ignored (``failurePolicy:
Ignore``), and ``annotations``: the audit annotations the policies publish on the request
(``<policy>/<key>``: value; kaffinity's info findings ``audit annotation <policy>/<key>: value``).
An audit annotation's error under ``failurePolicy: Fail`` is an error whatever the binding's
actions (the dispatcher denies it as it is).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kaffinity.config import Settings
from kaffinity.engine import lint
from kaffinity.load.parse import parse
from kaffinity.simulate.cluster import cluster_from

Answer = dict[str, Any]

#: The binding of a kaffinity finding: its message ends `` (binding NAME)``.
_BOUND = " (binding "

_SEVERITY = {"Deny": "error", "Warn": "warning", "Audit": "info"}


def _yaml(objects: list[dict[str, Any]]) -> str:
    # JSON is YAML: each document on its own, exactly as the oracle receives it.
    return "".join(f"---\n{json.dumps(obj)}\n" for obj in objects)


def kaffinity_says(scenario: dict[str, Any], folder: Path) -> Answer:
    """kaffinity's answer: ``policy check``'s loading, then ``lint --policy`` on the object."""
    from kaffinity.policy.check import policy_rules, reserved_names
    from kaffinity.policy.load import load_policies

    path = folder / "policy.yaml"
    documents = [*scenario.get("policies", []), *scenario.get("bindings", []), *scenario.get("params", [])]
    path.write_text(_yaml(documents), encoding="utf-8")
    loaded = load_policies([str(path)], reserved_names())
    rules, compile_errors = policy_rules(loaded, Settings())
    namespaces = scenario.get("namespaces") or []
    declared = cluster_from([parse("cluster.yaml", _yaml(namespaces))]) if namespaces else None
    result = lint([parse("object.yaml", _yaml([scenario["object"]]))], Settings(), rules, cluster=declared)
    assert not result.internal_errors, result.internal_errors
    from kaffinity.policy.vap import PUBLISHED

    findings = []
    annotations = {}
    not_evaluated = False
    for finding in result.findings:
        if finding.category != "policy" or finding.file != "object.yaml":
            continue
        if finding.message.startswith("not evaluated: "):
            not_evaluated = True  # kaffinity says the API server refuses the object itself
            continue
        if finding.message.startswith(PUBLISHED) and finding.severity.value == "info":
            key, _, value = finding.message.removeprefix(PUBLISHED).partition(": ")
            annotations[key] = value
            continue
        message, binding = finding.message, ""
        if message.endswith(")") and _BOUND in message:
            message, _, binding = message.rpartition(_BOUND)
            binding = binding[:-1]
        findings.append((str(finding.severity.value), binding, comparable(message)))
    return {
        # a policy whose expressions the API server's compiler refuses is refused with it
        "refused": bool(loaded.errors or compile_errors),
        "compile_errors": compile_errors,
        "findings": sorted(set(findings)),
        "annotations": annotations,
        "not_evaluated": not_evaluated,
    }


def oracle_says(oracle: Any, scenario: dict[str, Any]) -> Answer:
    """The oracle's answer in the same form, from its per-binding trace."""
    from kaffinity.policy.matching import USER_INFO

    request = {"op": "admission", "trace": True, "userInfo": USER_INFO, **scenario}
    answer = oracle.ask(request)
    assert answer.get("ok"), answer
    actions = {b["metadata"]["name"]: b["spec"].get("validationActions") or [] for b in scenario["bindings"]}
    denying = _annotation_errors(scenario)
    findings = []
    for entry in answer["bindings"]:
        outcome, binding = entry["outcome"], entry["binding"]
        if outcome == "denied":
            severity = _most_severe(actions.get(binding, []))
            findings += [
                ("error" if message.startswith(denying) else severity, binding, comparable(message))
                for message in entry["messages"]
            ]
        elif outcome == "configuration-error":
            findings += [("error", binding, comparable(message)) for message in entry["messages"]]
    # distinct: a binding that finds several params says the same thing once per param upstream;
    # kaffinity reports one finding per place and message
    annotations = {
        key: value
        for key, value in (answer.get("auditAnnotations") or {}).items()
        if key != VALIDATION_FAILURE
    }
    return {
        "refused": bool(answer["refused"]),
        "findings": sorted(set(findings)),
        "annotations": annotations,
        "raw": answer,
    }


#: The audit annotation the Audit action adds (``validating/dispatcher.go``); kaffinity says it
#: as the validation's info finding instead.
VALIDATION_FAILURE = "validation.policy.admission.k8s.io/validation_failure"


def _annotation_errors(scenario: dict[str, Any]) -> tuple[str, ...]:
    """How an audit annotation's error begins (``expression '<valueExpression>' resulted in
    error``, activation.go): the trace gives it among the binding's messages, but it denies
    whatever the binding's actions. (A valueExpression is a string, a validation a bool: no
    text is both.)"""
    heads = []
    for policy in scenario.get("policies", []):
        for annotation in (policy.get("spec") or {}).get("auditAnnotations") or []:
            text = annotation.get("valueExpression", "")
            heads += [f"expression '{text}' resulted in error", f"valueExpression '{text}' "]
    return tuple(heads)


#: The cel-go error texts that cel-expr-python words otherwise (differences.yaml:
#: admission/cel-error-wording): an evaluation error is compared up to its CEL error.
_ERROR = " resulted in error: "
_FAILED = "failed to configure binding: "


def comparable(message: str) -> str:
    """A message as compared: an expression's evaluation error without the CEL library's text,
    a configuration error without what kaffinity adds of what was looked for."""
    if _ERROR in message:
        head, _, rest = message.partition(_ERROR)
        inner = "composited variable "
        if rest.startswith(inner):  # keep the variable's name
            return head + _ERROR + rest.partition(" fails to evaluate: ")[0]
        return head + _ERROR + "..."
    if message.startswith(_FAILED) and message.endswith(")"):
        return message.rpartition(" (")[0]
    return message


def _most_severe(actions: list[str]) -> str:
    for action in ("Deny", "Warn", "Audit"):
        if action in actions:
            return _SEVERITY[action]
    return "error"
