"""gated-field-dropped: a field the API server drops silently because its feature gate is off."""

from kaffinity.findings import Severity
from kaffinity.rules.base import Rule, validation_check

RULE = Rule(
    name="gated-field-dropped",
    category="schema",
    severity=Severity.WARNING,
    summary="The field's feature gate is off at the target version, so the API server drops it silently.",
    check=validation_check("gated-field-dropped"),
    docs="""\
## What it finds
A field the target version knows but whose feature gate is off there (by default, or by
`--feature-gates`): on create the API server removes it without an error
(`dropDisabledFields` in `pkg/api/pod/util.go`). The message says which gate and what
protection is lost. Fields and gates:

| field | gate | off by default in |
|---|---|---|
| pod (anti-)affinity `matchLabelKeys`, `mismatchLabelKeys` | `MatchLabelKeysInPodAffinity` | 1.29, 1.30 |
| spread `matchLabelKeys` | `MatchLabelKeysInPodTopologySpread` | never (beta, on since 1.27) |
| spread `nodeAffinityPolicy`, `nodeTaintsPolicy` | `NodeInclusionPolicyInPodTopologySpread` | never |
| spread `minDomains` | `MinDomainsInPodTopologySpread` | never (gate removed in 1.32) |

(KEP-3633, KEP-3243, KEP-3094 and KEP-3022; versions from `pkg/features/kube_features.go`.)

Gates that are GA and locked cannot be turned off (kaffinity refuses, as kube-apiserver does).

## Why it matters
The manifest is accepted, the field is gone from the stored object, and the rule you wrote does
nothing: `matchLabelKeys: [pod-template-hash]` no longer keeps the old revision's pods out of
the new pods' anti-affinity or skew, so a rolling update can deadlock or skew.

## Example
```yaml
# kaffinity lint --kube-version 1.30
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - labelSelector: {matchLabels: {app: web}}
      topologyKey: kubernetes.io/hostname
      matchLabelKeys: [pod-template-hash]   # dropped: MatchLabelKeysInPodAffinity is alpha, off
```

## Fix
Enable the gate on the cluster (and tell kaffinity with `--feature-gates`), upgrade, or write
the rule without the field.

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/api/pod/util.go` (`dropDisabledFields`): a disabled gate's field is dropped unless the old
  object already uses it
- `pkg/features/kube_features.go`: each gate's stage and default per release
- KEP-3633, kubernetes/enhancements `keps/sig-scheduling/3633-matchlabelkeys-to-podaffinity`,
  "Upgrade / Downgrade Strategy"
- KEP-3243, kubernetes/enhancements
  `keps/sig-scheduling/3243-respect-pod-topology-spread-after-rolling-upgrades`, "Upgrade /
  Downgrade Strategy"
""",
)
