"""api-warning: what kube-apiserver accepts but answers with a warning."""

from kaffinity.findings import Severity
from kaffinity.rules.base import Rule, validation_check

RULE = Rule(
    name="api-warning",
    category="schema",
    severity=Severity.WARNING,
    summary="The API server accepts this but warns: a null labelSelector, a deprecated node label.",
    check=validation_check("api-warning"),
    docs="""\
## What it finds
The warnings `pkg/api/pod/warnings.go` returns for scheduling fields, with the same text:

- a pod (anti-)affinity term or a spread constraint without `labelSelector`: "a null
  labelSelector results in matching no pod";
- a deprecated node label (`failure-domain.beta.kubernetes.io/zone`, `beta.kubernetes.io/os`,
  `node-role.kubernetes.io/master`, ...) as a `nodeSelector` key, a node affinity key or a spread
  `topologyKey`. (The API server does not warn about pod affinity topology keys.)

## Why it matters
A term without a selector matches no pod, not even its own: required affinity can then never be
satisfied (the self-match exception needs the pod to match its own terms, and it matches no nil
selector either), anti-affinity and spread do nothing. Deprecated labels are no
longer set on new nodes by many providers, so rules keyed on them stop matching.

## Example
```yaml
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: failure-domain.beta.kubernetes.io/zone   # deprecated since v1.17
    whenUnsatisfiable: DoNotSchedule
                                                          # no labelSelector: matches no pod
```

## Fix
Add the `labelSelector` that names the pods meant; use the GA label the message names.

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/api/pod/warnings.go` (`GetWarningsForPodTemplate`): the null labelSelector and the deprecated
  node labels
""",
)
