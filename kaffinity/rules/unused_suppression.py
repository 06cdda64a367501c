"""unused-suppression: a suppression that suppresses nothing."""

from kaffinity.findings import Severity
from kaffinity.rules.base import Rule

RULE = Rule(
    name="unused-suppression",
    category="suppression",
    severity=Severity.INFO,
    summary="A `kaffinity.io/ignore` annotation or `# kaffinity: ignore[...]` comment suppresses nothing.",
    docs="""\
## What it finds
A suppression naming a rule that reported nothing there: the annotation
`kaffinity.io/ignore: "rule-a,rule-b"` on an object or its pod template, or the comment
`# kaffinity: ignore[rule-a,rule-b]` on a finding's line or the line above. A name that is no
rule or category at all is reported too. Suppressions of rules that did not run (not selected)
are left alone.

## Why it matters
Stale suppressions hide the next real problem: once the original issue is fixed, the comment
silently swallows whatever the rule finds later. Typos in rule names never suppress anything.

## Example
```yaml
apiVersion: v1
kind: Pod
metadata:
  name: web
  annotations:
    kaffinity.io/ignore: "helm-templte -- typo, suppresses nothing"
```

## Fix
Remove the suppression, or correct the rule name.

## References
- ruff's `unused-noqa` (RUF100), the same check for `# noqa` comments:
  https://docs.astral.sh/ruff/rules/unused-noqa/
""",
)
