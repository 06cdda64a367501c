"""field-unavailable: a field the target Kubernetes version does not know at all."""

from kaffinity.findings import Severity
from kaffinity.rules.base import Rule, validation_check

RULE = Rule(
    name="field-unavailable",
    category="schema",
    severity=Severity.ERROR,
    summary="The target Kubernetes version does not have this field; a later one does.",
    check=validation_check("field-unavailable"),
    docs="""\
## What it finds
A field that a later Kubernetes version added, used with an older `--kube-version`: for example
pod affinity `matchLabelKeys` (added in 1.29) on 1.27 or 1.28. The message names the version
that added it. The extended schemas carry every later field as an `x-kaffinity-since` marker.

## Why it matters
The API server of that version does not know the field: with strict field validation (kubectl's
default) the object is rejected; otherwise the field is dropped and the rule does nothing.

## Example
```yaml
# kaffinity lint --kube-version 1.28
podAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - labelSelector: {matchLabels: {app: cache}}
      topologyKey: kubernetes.io/hostname
      matchLabelKeys: [tenant]      # not a field of Kubernetes 1.28: added in 1.29
```

## Fix
Target the version the cluster runs; upgrade the cluster, or remove the field.

## References
- kubernetes/api `core/v1/types.go`: each field's documentation and the release that added it
- Feature gates and the releases they arrived in:
  https://kubernetes.io/docs/reference/command-line-tools-reference/feature-gates/
""",
)
