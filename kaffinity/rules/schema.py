"""schema: a scheduling field of the wrong type, an unknown field, or a value outside its enumeration."""

from kaffinity.findings import Severity
from kaffinity.rules.base import Rule, validation_check

RULE = Rule(
    name="schema",
    category="schema",
    severity=Severity.ERROR,
    summary="A scheduling field has the wrong type, is unknown, or holds a value outside its enumeration.",
    check=validation_check("schema"),
    docs="""\
## What it finds
Checks every workload (Pod, Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob,
ReplicationController, PodTemplate) and PodDisruptionBudget against kaffinity's extended schema
for the target `--kube-version` (`schemas/kubernetes-1.NN.schema.json`, generated from upstream
OpenAPI). Only the scheduling subtree is checked: `affinity`, `tolerations`, `nodeSelector`,
`topologySpreadConstraints`, and the workload fields kaffinity reads (replicas, selector,
strategy / updateStrategy, podManagementPolicy, template labels, the PDB spec). Each problem is
its own finding, at its own line:

- a value of the wrong type (`weight: "10"`, `operator: yes` — YAML 1.1 reads `yes` as a boolean);
- an unknown field, at any level of an object kaffinity checks (`affinty:`, `replica:`), with a
  "did you mean";
- a value outside the enumeration the API documents (`whenUnsatisfiable: DoNotSchedul`).

## Why it matters
kubectl sends manifests with strict field validation (the default since 1.27): an unknown field
or a wrong type makes the API server reject the whole object. With `--validate=false` or older
clients the unknown field is dropped instead, and the rule you wrote silently does nothing.

## Example
```yaml
spec:
  template:
    spec:
      affinty:                      # unknown field "affinty" (did you mean "affinity"?)
        podAntiAffinity: {}
      topologySpreadConstraints:
        - maxSkew: "1"              # maxSkew must be an integer, not string "1"
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: DoNotSchedul   # Unsupported value
```

## Fix
Correct the field name, type or value. `kaffinity rules schema` and the schemas in `schemas/`
(usable by the YAML language server in your editor) list what each field accepts.

## References
Paths without a repository name are in kubernetes/kubernetes.

- `api/openapi-spec/v3/`: the published OpenAPI documents the schemas are derived from
- Unknown fields and strict field validation:
  https://kubernetes.io/docs/reference/using-api/api-concepts/#field-validation
""",
)
