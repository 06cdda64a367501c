"""A pull request cannot make a policy's CEL hang a run or exhaust its memory (issue 31).

kube-apiserver bounds CEL by cost (``PerCallLimit``, ``RuntimeCELCostBudget``), matches regular
expressions with RE2 in linear time, and refuses policy and binding names that are not DNS
subdomains. kaffinity does the same where it can (:mod:`kaffinity.policy.cel.limits`) and, on
Linux, bounds the rest by time and memory (:mod:`kaffinity.policy.guard`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kaffinity.policy.cel.environment import CelCompileError, CelEvaluationError, compile_expression
from kaffinity.policy.cel.limits import COST_EXCEEDED, OUT_OF_BUDGET

from .kit import REPO, line_of, lint_json, no_internal_error, run

LINUX = sys.platform.startswith("linux")

POLICY = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: {name}
spec:
  failurePolicy: {failure}
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  validations:
    - expression: {expression}
      message: {message}
"""


def policy(
    expression: str, name: str = "dns-names", failure: str = "Fail", message: str = "bad", extra: str = ""
) -> str:
    return (
        POLICY.format(
            name=name, failure=failure, expression=json.dumps(expression), message=json.dumps(message)
        )
        + extra
    )


def deployment(name: str, annotations: dict[str, str] | None = None, replicas: int = 1) -> str:
    """A Deployment the API server accepts (so admission sees it), with these annotations (any
    text: annotations are not validated beyond their total size)."""
    shown = json.dumps(annotations or {})
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: default
  annotations: {shown}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: app, image: "app:1"}}]
"""


def lint(
    tmp_path: Path, policy_text: str, manifests: str, env: dict[str, str] | None = None
) -> tuple[int, list[dict[str, object]], str, float]:
    """``kaffinity lint --select policy`` of ``manifests`` with ``policy_text``: the exit code,
    the JSON findings, stderr, and the wall time. Kept (on :func:`kit.lint_json`): it writes both
    files and measures the run's wall time, which the tests of hostile expressions bound."""
    (tmp_path / "policy.yaml").write_text(policy_text)
    (tmp_path / "app.yaml").write_text(manifests)
    started = time.monotonic()
    done = lint_json(
        "--select", "policy", str(tmp_path / "app.yaml"), "--policy", str(tmp_path / "policy.yaml"), env=env
    )
    elapsed = time.monotonic() - started
    found: list[dict[str, object]] = done.report["findings"] if done.stdout.strip() else []
    return done.code, found, done.stderr, elapsed


# -- regular expressions: RE2, linear time ------------------------------------------------------

#: Catastrophic for a backtracking engine: 2**40 ways to split 40 letters, none matching "!".
BACKTRACKING = "^([a-z0-9]+-?)+$"
HOSTILE = "a" * 40 + "!"


@pytest.mark.parametrize(
    "expression",
    [
        f"object.metadata.annotations['owner'].find('{BACKTRACKING}') != ''",
        f"object.metadata.annotations['owner'].findAll('{BACKTRACKING}').size() > 0",
        f"object.metadata.annotations['owner'].matches('{BACKTRACKING}')",
    ],
)
def test_a_dns_name_policy_on_a_hostile_name_finishes(tmp_path: Path, expression: str) -> None:
    """A trusted policy checks an owner's DNS name with a pattern a backtracking engine takes
    2**40 steps on; the pull request's 41-character name is denied at once (RE2, as Go's)."""
    manifests = deployment("web", {"owner": HOSTILE}) + "---\n" + deployment("ok", {"owner": "team-a"})
    code, found, _, elapsed = lint(tmp_path, policy(expression), manifests)
    assert code == 1
    # At the field the expression reads, of the first object only.
    assert [(f["rule"], f["line"]) for f in found] == [("dns-names", line_of(manifests, "annotations:", 1))]
    assert elapsed < 10


def test_find_follows_go_regexp_semantics() -> None:
    """RE2 is Go's syntax: ``$`` is the end of the text (Python's also matches before a final
    newline), ``\\pL`` is a Unicode class (Python has none), ``\\w`` is ASCII."""
    cases = {
        r"'ab\n'.find('b$')": "",
        r"'ab'.find('b$')": "b",
        r"'été x'.find('\\pL+')": "été",
        r"'été'.findAll('\\w+')": ["t"],
    }
    for text, wanted in cases.items():
        assert compile_expression(text, "1.34", {}).evaluate({}) == wanted, text


def test_a_pattern_re2_refuses_is_an_error_never_pythons_re() -> None:
    """Back-references are not RE2: never Python's re. A constant pattern is refused when the
    expression is compiled (kube-apiserver's base environment folds constants, cel.OptOptimize:
    the oracle answers stage "program"); one read from the object, when it is evaluated."""
    with pytest.raises(CelCompileError):
        compile_expression(r"'aa'.find('(a)\\1')", "1.34", {})
    compiled = compile_expression("'aa'.find(object.p)", "1.34", {"object": _dyn()})
    with pytest.raises(CelEvaluationError):
        compiled.evaluate({"object": {"p": "(a)\\1"}})


# -- cost: upstream's PerCallLimit ---------------------------------------------------------------

#: cost.go charges find ceil((1 + len(text)) * 0.1) * ceil(len(pattern) * 0.25): a 400-character
#: pattern costs 100 per 10 characters of text, so 100,000 characters pass PerCallLimit (1e6).
LONG_PATTERN = "x" * 400


@pytest.mark.parametrize(("size", "over"), [(100_000, True), (90_000, False)])
def test_a_call_past_the_per_call_limit_is_upstreams_cost_error(size: int, over: bool) -> None:
    """Over the limit, the evaluation is cel-go's "operation cancelled: actual cost limit
    exceeded", whatever the expression does with the call's result (``|| true`` cannot absorb
    a cancelled evaluation); under it, the call runs."""
    text = f"object.s.find('{LONG_PATTERN}') == '' || true"
    compiled = compile_expression(text, "1.34", {"object": _dyn()})
    if over:
        with pytest.raises(CelEvaluationError) as raised:
            compiled.evaluate({"object": {"s": "a" * size}})
        assert raised.value.message == COST_EXCEEDED
    else:
        assert compiled.evaluate({"object": {"s": "a" * size}}) is True


@pytest.mark.parametrize(("failure", "code"), [("Fail", 1), ("Ignore", 0)])
def test_the_cost_error_follows_the_failure_policy(tmp_path: Path, failure: str, code: int) -> None:
    """As the API server: the validation's error denies under Fail, admits under Ignore."""
    expression = f"object.metadata.annotations['s'].find('{LONG_PATTERN}') == ''"
    manifests = deployment("web", {"s": "a" * 100_000})
    status, found, _, _ = lint(tmp_path, policy(expression, failure=failure), manifests)
    assert status == code
    assert [str(f["message"]).endswith(COST_EXCEEDED) for f in found] == ([True] if code else [])


def _dyn() -> object:
    from cel_expr_python import cel

    return cel.Type.DYN


# -- messageExpression: 5 KiB, and memory ---------------------------------------------------------


def test_a_message_expression_over_5_kib_gives_way_to_the_message(tmp_path: Path) -> None:
    """validator.go drops a messageExpression's message longer than 5 KiB: ``message`` is said.
    (``string(...)``: a messageExpression typed dyn is refused by the API server's compiler.)"""
    extra = "      messageExpression: string(object.metadata.annotations['long'])\n"
    manifests = deployment("web", {"long": "x" * (5 * 1024 + 1)}, replicas=6) + "---\n"
    manifests += deployment("fits", {"long": "y" * (5 * 1024)}, replicas=6)
    made = policy("object.spec.replicas <= 5", message="static") + extra
    code, found, _, _ = lint(tmp_path, made, manifests)
    assert code == 1
    assert [f["message"] for f in found] == ["static", "y" * (5 * 1024)]


@pytest.mark.skipif(not LINUX, reason="the memory limit of the guarded process is Linux's RLIMIT_AS")
def test_a_message_expression_building_gigabytes_is_bounded(tmp_path: Path) -> None:
    """``replace('', s)`` of a 100,000-character annotation is 10 GB in cel-cpp: kaffinity, itself
    run under a 3 GiB address-space limit, stops it (the evaluation is the cost error), says the
    static message and exits 1."""
    grown = "object.metadata.annotations['s'].replace('', object.metadata.annotations['s'])"
    extra = f"      messageExpression: {json.dumps(grown)}\n"
    (tmp_path / "policy.yaml").write_text(policy("object.spec.replicas <= 5", message="static") + extra)
    manifests = deployment("web", {"s": "a" * 100_000}, replicas=6)
    (tmp_path / "app.yaml").write_text(manifests)
    limit = 3 << 30
    script = (
        "import resource, runpy, sys\n"
        f"resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))\n"
        "sys.argv = ['kaffinity', *sys.argv[1:]]\n"
        "runpy.run_module('kaffinity', run_name='__main__')\n"
    )
    args = ["lint", "--no-config", "--format", "json", "--select", "policy", str(tmp_path / "app.yaml")]
    completed = subprocess.run(
        [sys.executable, "-c", script, *args, "--policy", str(tmp_path / "policy.yaml")],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
        env={"PYTHONPATH": str(REPO), "KAFFINITY_CEL_MEMORY_LIMIT": "512", "NO_COLOR": "1"},
    )
    no_internal_error(completed.returncode, completed.stderr)
    assert completed.returncode == 1
    assert [f["message"] for f in json.loads(completed.stdout)["findings"]] == ["static"]


# -- time: the last resort ------------------------------------------------------------------------

#: A ``map`` over 9,999 items: cel-cpp copies the list at each step (seconds, no Python call).
SLOW = "object.metadata.annotations['s'].split(' ').map(x, x).size() == 0"
SLOW_TEXT = " ".join(["a"] * 9_999)


@pytest.mark.skipif(not LINUX, reason="the time limit needs the guarded process kaffinity forks on Linux")
@pytest.mark.parametrize(("failure", "stopped"), [("Fail", True), ("Ignore", False)])
def test_an_evaluation_past_the_time_limit_is_stopped_and_the_next_object_checked(
    tmp_path: Path, failure: str, stopped: bool
) -> None:
    """With a 0.5 s limit, the slow object's evaluation is stopped: an out-of-budget error
    under Fail (nothing under Ignore), and the object after it is still evaluated (its
    finding: the expression is false for it)."""
    manifests = deployment("slow", {"s": SLOW_TEXT}) + "---\n" + deployment("quick", {"s": "a b"})
    status, found, _, elapsed = lint(
        tmp_path, policy(SLOW, failure=failure), manifests, env={"KAFFINITY_CEL_TIME_LIMIT": "0.5"}
    )
    assert status == 1
    # The stopped object is reported at its start, the other at the field its expression reads.
    wanted = [(line_of(manifests, "apiVersion", 1), True)] if stopped else []
    wanted.append((line_of(manifests, "annotations:", 2), False))
    assert [(f["line"], str(f["message"]).startswith(OUT_OF_BUDGET)) for f in found] == wanted
    assert elapsed < 20


# -- names: DNS subdomains, as kube-apiserver requires ----------------------------------------------


@pytest.mark.parametrize(
    "name",
    ['"Upper"', '"a_b"', '"' + "a" * 254 + '"', '"line\\nbreak"', '"esc\\eape"', '"trailing-"'],
)
@pytest.mark.parametrize("kind", ["policy", "binding", "policyName"])
def test_a_name_the_api_server_refuses_is_a_load_error(tmp_path: Path, name: str, kind: str) -> None:
    """``metadata.name`` of a policy or a binding, and a binding's ``spec.policyName``, must be
    DNS subdomains (``NameIsDNSSubdomain``): otherwise an error at the file's line, exit 2, and
    the name escaped (no raw control character reaches the terminal)."""
    binding = (
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\n"
        "metadata:\n  name: {name}\nspec:\n  policyName: {target}\n  validationActions: [Deny]\n"
    )
    if kind == "policy":
        text, marker = policy("true", name=name), f"  name: {name}"
    elif kind == "binding":
        text = policy("true") + "---\n" + binding.format(name=name, target="dns-names")
        marker = f"  name: {name}"
    else:
        text = policy("true") + "---\n" + binding.format(name="dns-binding", target=name)
        marker = f"  policyName: {name}"
    (tmp_path / "policy.yaml").write_text(text)
    (tmp_path / "app.yaml").write_text(deployment("web"))
    paths = (str(tmp_path / "app.yaml"), "--policy", str(tmp_path / "policy.yaml"))
    completed = run("lint", "--no-config", *paths)
    assert completed.returncode == 2
    field = "spec.policyName" if kind == "policyName" else "metadata.name"
    errors = [error for error in completed.stderr.splitlines() if f"{field}: Invalid value" in error]
    assert len(errors) == 1
    assert errors[0].startswith(f"{tmp_path / 'policy.yaml'}:{line_of(text, marker)}:")
    assert "\x1b" not in completed.stderr


# -- Kubernetes' libraries in Python: linear in what a pull request writes ------------------------


@pytest.mark.parametrize(
    ("expression", "wanted"),
    [
        ("quantity('9e999999999').isInteger()", "false"),
        ("quantity('-9e999999999').isInteger()", "false"),
        ("quantity('9E18').asInteger() == 9000000000000000000", "true"),
    ],
)
def test_a_huge_quantity_is_no_integer_at_once(expression: str, wanted: str) -> None:
    """``isInteger``/``asInteger`` of 9e999999999 (nine exa-...-units, a billion digits) answer
    at once: the amount is compared with int64's bounds before any conversion. In a child
    process with a timeout: the bug this guards against never returns."""
    script = (
        "from kaffinity.policy.cel.environment import compile_expression\n"
        f"print(str(compile_expression({expression!r}, '1.34', {{}}).evaluate({{}})).lower())\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
        env={"PYTHONPATH": str(REPO)},
    )
    assert (completed.returncode, completed.stdout.strip()) == (0, wanted), completed.stderr


@pytest.mark.skipif(not LINUX, reason="the guarded process is Linux's")
def test_the_guarded_process_finds_what_kaffinitys_own_finds() -> None:
    """The library's policies (schema, CEL, ValidatingAdmissionPolicies, the ``kaffinity``
    facts) on their fixtures: the same findings in a guarded process as in kaffinity's own
    (``KAFFINITY_CEL_TIME_LIMIT=0``)."""
    policies = REPO / "examples" / "policies"
    fixtures = [str(policies / name) for name in ("fail.yaml", "fail-facts.yaml", "fail-rollout.yaml")]
    flags = [
        flag
        for name in ("admission.yaml", "facts.yaml", "scheduling.yaml")
        for flag in ("--policy", str(policies / name))
    ]
    reports = []
    for limit in ("5", "0"):
        completed = run(
            "lint",
            "--no-config",
            "--format",
            "json",
            *fixtures,
            *flags,
            env={"KAFFINITY_CEL_TIME_LIMIT": limit},
        )
        reports.append((completed.returncode, json.loads(completed.stdout)["findings"]))
    assert reports[0][0] == 1
    assert any(f["category"] == "policy" for f in reports[0][1])
    assert reports[0] == reports[1]


def test_find_all_stops_at_the_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each RE2 match is linear, but this pattern makes each one scan to the end of the text
    (200,000 matches of 200,000 characters: 80 s, under the per-call cost limit, as in Go):
    past the time limit (1 s here) the evaluation stops with the cost error."""
    from kaffinity.policy.cel.limits import time_limit

    monkeypatch.setenv("KAFFINITY_CEL_TIME_LIMIT", "1")
    time_limit.cache_clear()
    try:
        compiled = compile_expression("object.s.findAll('(a|aa)*?b|a').size()", "1.34", {"object": _dyn()})
        started = time.process_time()
        with pytest.raises(CelEvaluationError) as raised:
            compiled.evaluate({"object": {"s": "a" * 200_000}})
        assert raised.value.message == COST_EXCEEDED
        assert time.process_time() - started < 10
    finally:
        monkeypatch.delenv("KAFFINITY_CEL_TIME_LIMIT")
        time_limit.cache_clear()


@pytest.mark.skipif(not LINUX, reason="the time limit needs the guarded process kaffinity forks on Linux")
def test_a_schema_pattern_that_backtracks_is_stopped(tmp_path: Path) -> None:
    """A kaffinity Policy's JSON Schema ``pattern`` runs Python's re (jsonschema's): on a
    hostile container name it would backtrack for ages; the guard stops it at the time limit
    and says so at the workload, and the next workload is still checked."""
    text = """\
apiVersion: kaffinity.io/v1alpha1
kind: Policy
metadata: {name: container-names}
spec:
  target: podSpec
  message: container names must be DNS labels
  schema:
    properties:
      containers:
        items:
          properties:
            name: {pattern: "^([a-z0-9]+-?)+$"}
"""
    (tmp_path / "policy.yaml").write_text(text)
    slow = deployment("slow").replace("{name: app,", '{name: "' + "a" * 40 + '!",')
    quick = deployment("quick").replace("{name: app,", '{name: "Bad",')
    manifests = slow + "---\n" + quick
    (tmp_path / "app.yaml").write_text(manifests)
    started = time.monotonic()
    completed = run(
        "lint",
        "--no-config",
        "--format",
        "json",
        "--select",
        "policy",
        str(tmp_path / "app.yaml"),
        "--policy",
        str(tmp_path / "policy.yaml"),
        env={"KAFFINITY_CEL_TIME_LIMIT": "1"},
    )
    assert completed.returncode == 1
    found = json.loads(completed.stdout)["findings"]
    assert [(f["rule"], COST_EXCEEDED in str(f["message"])) for f in found] == [
        ("container-names", True),
        ("container-names", False),
    ]
    assert time.monotonic() - started < 30
