"""api-validation: what kube-apiserver's hand-written validation rejects in scheduling fields."""

from kaffinity.findings import Severity
from kaffinity.rules.base import Rule, validation_check

RULE = Rule(
    name="api-validation",
    category="schema",
    severity=Severity.ERROR,
    summary="The API server would reject this scheduling field (its own validation, beyond the schema).",
    check=validation_check("api-validation"),
    docs="""\
## What it finds
The checks kube-apiserver runs on create, beyond types and fields
(`pkg/apis/core/validation`, k8s.io/apimachinery's label and selector validation), for the
target `--kube-version` and `--feature-gates`, reported at the field path and in the words the
API server uses (`Invalid value`, `Required value`, `Forbidden`, `Duplicate value`):

- label keys and values, `nodeSelector`, selector keys (qualified names, 63-character names);
- selector operators and values: `In`/`NotIn` need values, `Exists`/`DoesNotExist` take none,
  node affinity `Gt`/`Lt` exactly one; `matchFields` only `metadata.name`, `In`/`NotIn`, one node name;
- `nodeSelectorTerms` not empty; weights 1 to 100; pod affinity `topologyKey` non-empty and a
  qualified name; `namespaces` entries valid namespace names (reported at `...namespace`, as upstream);
- spread constraints: `maxSkew` > 0, `topologyKey` non-empty, `minDomains` > 0 and only with
  `DoNotSchedule`, no two constraints with the same `{topologyKey, whenUnsatisfiable}`;
- `matchLabelKeys` / `mismatchLabelKeys`: not without `labelSelector`, qualified names, not in
  both lists, not already in the selector — for spread constraints both regimes (up to 1.33 any
  key of the selector; from 1.34, with the selector merge, the post-merge duplicate check);
- tolerations: empty key needs `Exists`, `tolerationSeconds` needs `NoExecute`, `Exists` takes no
  value, `Equal` values are label values; `Lt`/`Gt` (1.35+) need the
  `TaintTolerationComparisonOperators` gate and a canonical integer;
- resource quantities (containers' `resources.requests` / `limits`, pod-level `resources`,
  `overhead`, `emptyDir.sizeLimit`) that k8s.io/apimachinery's `resource.ParseQuantity` refuses
  (`1EB`, `1 Gi`, a YAML `.nan` or `.inf`): the API server cannot decode the object, and says so
  in the parser's words (`quantities must match the regular expression ...`);
- PodDisruptionBudgets (`pkg/apis/policy/validation` `ValidatePodDisruptionBudgetSpec`): not
  both `minAvailable` and `maxUnavailable` (reported at `spec`), each an integer of at least 0 or
  a percentage (`[0-9]+%`: a string such as `"1"` is refused) of at most 100%, and a valid label
  selector. A refused budget is never created: the rules about what budgets protect
  (`pdb-blocks-eviction`, `pdb-no-match`, `pdb-overlap`) leave it out.

A bare Pod is validated after the create-time merge of `matchLabelKeys` into its selectors, as
the API server does; pod templates are validated as written.

## Why it matters
Schema validators (kubeconform, kubectl-validate) pass these manifests; the API server then
refuses them at deploy time — or, for a pod template, accepts the Deployment and refuses every
Pod its ReplicaSet creates.

## Example
```yaml
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 200                 # Invalid value: 200: must be in the range 1-100
        podAffinityTerm:
          topologyKey: ""           # Required value: can not be empty
          labelSelector:
            matchExpressions:
              - {key: app, operator: In}   # Required value: values must be specified
```

## Fix
Follow the message; the path names the field as `kubectl apply` would.

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/apis/core/validation/validation.go`: `ValidatePodSpec` (`validatePodAffinityTerm`,
  `validateTopologySpreadConstraints`, `ValidateNodeSelector`, `ValidateTolerations`)
- `pkg/apis/apps/validation/validation.go` and `pkg/apis/policy/validation/validation.go`
- kubernetes/apimachinery `pkg/apis/meta/v1/validation/validation.go` (`ValidateLabelSelector`) and
  `pkg/api/validate/content/kube.go` (`IsLabelKey`, `IsLabelValue`; formerly `pkg/util/validation`)
""",
)
