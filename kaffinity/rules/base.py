"""What a rule is: metadata kept apart from logic, and a check that yields violations."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kaffinity.findings import Severity, Violation

if TYPE_CHECKING:
    from kaffinity.config import Settings
    from kaffinity.context import Context
    from kaffinity.k8s.compact import Fields

Check = Callable[["Context"], Iterator[Violation]]


@dataclass(frozen=True, slots=True)
class Rule:
    """A rule's identity and documentation, and its check.

    ``check`` may read the whole context but reports on one object per violation. Rules whose
    findings come from the loader or the engine itself (``parse-error``, ``helm-template``,
    ``unused-suppression``) have no check. ``docs`` is Markdown with the sections every rule
    has: what it finds, why it matters, a failing example, the fix, and last the upstream sources
    it follows (References).
    """

    name: str
    category: str
    severity: Severity
    summary: str
    docs: str
    check: Check | None = None
    #: The rule needs every manifest of the repository (see ``context:``), not just some files.
    needs_all_manifests: bool = False
    #: The rule reads the declared cluster (``--cluster``): the engine skips it without one, so
    #: a lint without a cluster never imports the offline scheduler.
    needs_cluster: bool = False
    #: ``kaffinity fix`` can fix its findings (safe text edits: :mod:`kaffinity.expand.fixes`).
    fixable: bool = False
    #: A rule that reads one object at a time but also what other files say of it (the labels
    #: of its Namespace): it runs with the rules that read every manifest, not file by file in
    #: the single-object stage (:mod:`kaffinity.stream`).
    reads_other_files: bool = False
    #: What a rule that reads several objects (and so runs on compact files, when the input is
    #: streamed) reads of a pod template: compaction keeps exactly the union of these
    #: (:mod:`kaffinity.k8s.compact`; most rules read the typed model,
    #: :data:`~kaffinity.k8s.compact.MODEL_FIELDS`). None: a rule of the single-object stage, which
    #: reads whole files; or one that may read any field (a policy), whose runs read input whole.
    reads: Fields | None = None
    #: A policy whose facts read the built-in rules' findings (``kaffinity.findings``): the
    #: engine then runs every built-in rule, those the settings leave out too, for the facts only
    #: (:mod:`kaffinity.policy.facts`; their findings are not reported).
    reads_findings: bool = False
    #: A policy that reads one object alone (its namespace and params known before the stream:
    #: :mod:`kaffinity.policy.streamed`): it runs in the single-object stage, file by file.
    streams: bool = False
    #: Of a policy that streams: its findings count only on the unit's objects (a
    #: ValidatingAdmissionPolicy: an object defined again later is admitted as its last
    #: definition, which is the one the unit holds).
    unit_objects: bool = False


#: The category of every policy's rule (:mod:`kaffinity.policy`): they run after the built-in
#: rules and read their findings (the engine's run state, :class:`kaffinity.context.RunState`).
POLICY_CATEGORY = "policy"


def finding_fact(rule: Rule, violation: Violation, line: int) -> dict[str, object]:
    """A built-in finding as policies read it (``kaffinity.findings``: the engine records them,
    of the rules the settings leave out too, :mod:`kaffinity.policy.facts` reads them): its own
    severity, before suppressions."""
    return {
        "rule": rule.name,
        "severity": (violation.severity or rule.severity).value,
        "line": line,
        "message": violation.message,
    }


def validation_check(rule: str) -> Check:
    """The check of one validation rule: its share of :func:`validate_documents`."""

    def check(context: Context) -> Iterator[Violation]:
        yield from context.validation.get(rule, ())

    return check


_SPECIFICITY_ALL, _SPECIFICITY_CATEGORY, _SPECIFICITY_RULE = 0, 1, 2


def rule_enabled(rule: Rule, select: Iterable[str], ignore: Iterable[str]) -> bool:
    """The most specific mention wins (rule over category over ``all``); ties go to ignore."""
    return _specificity(rule, select) > _specificity(rule, ignore)


def _specificity(rule: Rule, names: Iterable[str]) -> int:
    best = -1
    for name in names:
        if name == rule.name:
            return _SPECIFICITY_RULE
        if name == rule.category:
            best = max(best, _SPECIFICITY_CATEGORY)
        elif name == "all":
            best = max(best, _SPECIFICITY_ALL)
    return best


def severity_of(rule: Rule, settings: Settings, default: Severity | None = None) -> Severity:
    """The configured severity (rule over category), else the finding's own, else the rule's."""
    configured = settings.severity
    return configured.get(rule.name) or configured.get(rule.category) or default or rule.severity
