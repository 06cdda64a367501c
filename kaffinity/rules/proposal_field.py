"""proposal-field: a field or operator that exists only in a Kubernetes proposal."""

from kaffinity.findings import Severity
from kaffinity.rules.base import Rule, validation_check

RULE = Rule(
    name="proposal-field",
    category="schema",
    severity=Severity.ERROR,
    summary="The field or operator exists only in a proposal; no Kubernetes release accepts it.",
    check=validation_check("proposal-field"),
    docs="""\
## What it finds
Fields of proposals that never shipped, which kaffinity's extended schemas know (marked
`x-kaffinity-proposal`):

- `nodeAffinity.requiredDuringSchedulingRequiredDuringExecution` — KEP-4328, affinity-based
  eviction; proposed for alpha in 1.33, never merged, still commented out in k8s.io/api;
- `Gt` / `Lt` operators in a pod (anti-)affinity `labelSelector` — the 2019 proposal "Pod
  affinity/anti-affinity supports Gt and Lt operators", withdrawn as stale in 2021. (Node
  affinity has always had `Gt`/`Lt`; pod selectors never did.)

With `--proposals` (or `proposals: true` in `.kaffinity.yaml`) kaffinity instead validates these
fields as the proposals specify (RequiredDuringExecution like the required node selector; Gt/Lt
with exactly one value, as node affinity's) and honours them in its other analyses.

## Why it matters
The API server rejects the unknown field (strict field validation) or the operator ("not a
valid selector operator"), or, with validation off, drops the field: the eviction or the numeric
rule the author expects never happens.

## Example
```yaml
nodeAffinity:
  requiredDuringSchedulingRequiredDuringExecution:   # KEP-4328 only
    nodeSelectorTerms:
      - matchExpressions: [{key: pool, operator: In, values: [gpu]}]
```

## Fix
Use what releases accept: `requiredDuringSchedulingIgnoredDuringExecution` (plus a taint with
`NoExecute` where eviction is wanted); `In` with the allowed values instead of `Gt`/`Lt`.

## References
- KEP-4328, affinity-based eviction: kubernetes/enhancements PR #4329, closed without merging; the
  field stays commented out in kubernetes/api `core/v1/types.go` (`NodeAffinity`)
- kubernetes/enhancements
  `keps/sig-scheduling/20190312-pod-affinity-and-anti-affinity-support-gt-and-lt-operators.md`,
  provisional, removed as stale in 2021
""",
)
