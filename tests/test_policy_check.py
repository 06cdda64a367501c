"""``kaffinity policy check``: the policies linted, each problem at its line and column."""

from __future__ import annotations

from pathlib import Path

from .kit import REPO, position, run

DATA = REPO / "tests" / "data" / "admission"
CHECK_ME = DATA / "check-me.yaml"
TEXT = CHECK_ME.read_text(encoding="utf-8")


def _problems(*paths: Path, args: tuple[str, ...] = ()) -> tuple[int, list[tuple[int, int, str]]]:
    completed = run("policy", "check", *(str(path) for path in paths), *args)
    found = []
    for line in completed.stdout.splitlines()[:-1]:
        where, severity, _ = line.split(": ", 2)
        _, row, column = where.rsplit(":", 2)
        found.append((int(row), int(column), severity))
    return completed.returncode, found


def test_each_kind_of_problem_at_its_place() -> None:
    code, found = _problems(CHECK_ME)
    assert code == 1
    assert found == [
        (*position(TEXT, "object.metadata.labels &&"), "warning"),  # labels may be absent
        (*position(TEXT, "object.spec.replica <="), "warning"),  # no such field
        (*position(TEXT, "object.spec.template.spec.affinity.podAntiAffinity"), "warning"),
        (*position(TEXT, "object.spec.template.spec.affinity.nodeAffinity"), "warning"),
        (*position(TEXT, "auditAnnotations:"), "info"),
        (*position(TEXT, "name: limits"), "warning"),  # the param is in no policy file
    ]


def test_what_is_defaulted_depends_on_the_version(tmp_path: Path) -> None:
    """``podReplacementPolicy`` is defaulted on Jobs from 1.29: reading it unguarded is fine
    there, and a warning for 1.28."""
    policy = tmp_path / "job.yaml"
    policy.write_text(
        "apiVersion: admissionregistration.k8s.io/v1\n"
        "kind: ValidatingAdmissionPolicy\n"
        "metadata: {name: jobs}\n"
        "spec:\n"
        "  matchConstraints:\n"
        "    resourceRules:\n"
        "    - {apiGroups: [batch], apiVersions: [v1], operations: [CREATE], resources: [jobs]}\n"
        "  validations:\n"
        "  - expression: \"object.spec.podReplacementPolicy == 'Failed'\"\n"
    )
    assert _problems(policy, args=("--kube-version", "1.29")) == (0, [])
    code, found = _problems(policy, args=("--kube-version", "1.28"))
    assert (code, [severity for *_, severity in found]) == (1, ["warning"])


def test_the_library_is_clean_and_bad_policies_are_errors() -> None:
    assert _problems(REPO / "examples" / "policies") == (0, [])
    code, found = _problems(REPO / "tests" / "data" / "policies" / "bad.yaml")
    assert code == 1
    assert {severity for *_, severity in found} == {"error"}
    assert len(found) == 4


def test_a_validation_that_is_no_bool_is_an_error(tmp_path: Path) -> None:
    """The checker types `'x'` as string: the API server refuses such a validation, and a
    messageExpression that is no string."""
    policy = tmp_path / "types.yaml"
    text = (
        "apiVersion: admissionregistration.k8s.io/v1\n"
        "kind: ValidatingAdmissionPolicy\n"
        "metadata: {name: types}\n"
        "spec:\n"
        "  matchConstraints:\n"
        "    resourceRules:\n"
        "    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}\n"
        "  validations:\n"
        "  - expression: \"'x'\"\n"
        "    messageExpression: '1 + 2'\n"
        "  - expression: object.spec.replicas > 1\n"
    )
    policy.write_text(text)
    code, found = _problems(policy)
    assert code == 1
    # the compiler's own check (the policy is refused): at the expression's text
    assert found == [
        (*position(text, "'x'"), "error"),
        (*position(text, "1 + 2"), "error"),
    ]
