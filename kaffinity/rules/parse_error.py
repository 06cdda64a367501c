"""parse-error: a file that could not be read, decoded or parsed."""

from kaffinity.findings import Severity
from kaffinity.rules.base import Rule

RULE = Rule(
    name="parse-error",
    category="input",
    severity=Severity.ERROR,
    summary="A file could not be read, decoded or parsed as YAML or JSON.",
    docs="""\
## What it finds
Input kaffinity could not read: a missing or unreadable file, bytes that are not UTF-8 (or
UTF-16/32 with a byte order mark), binary content, YAML or JSON that does not parse, or input
past one of the limits (`--limit NAME=VALUE` sets them; `limits:` in `.kaffinity.yaml` may only
lower them): a file larger than `file-size` (32Mi; also `--max-file-size`), nesting deeper than
`depth` (400 levels), aliases that expand a file beyond `alias-nodes` (a million nodes: an
alias bomb), or a cluster file (`--cluster`) that declares more than `nodes` nodes (15,000;
Node objects and `ClusterTopology` pools together: docs/simulation.md).

It also finds a key given twice in one mapping (`mapping key "selector" already defined at line
6`), the message kubectl gives: its YAML decoding is strict, as is the API server's field
validation, kubectl's default (`--validate=strict`).

YAML is read as kubectl reads it (go-yaml v2 through `sigs.k8s.io/yaml`: docs/input-files.md,
"YAML as Kubernetes reads it"): `ports: [frontend:80]` and an anchor defined twice parse, and
what kubectl cannot convert to JSON is a parse error: a value `.nan` or `.inf`, a null key,
a `!!binary` that is not base64.

Only files meant as Kubernetes manifests are reported: YAML for other tools (mkdocs, Docker
Compose, GitHub workflows, Ansible, Helm values) that does not parse is skipped quietly, as is
any file without a document that has `apiVersion` and `kind` (docs/input-files.md). A file
that cannot be read, or is past the size limit, is always reported.

## Why it matters
kubectl and the API server would reject the file too, and nothing in it can be checked. The
finding carries the parser's own line and column; documents before the error are still linted,
as are all other files (a document with a key given twice is linted with the later value, what
`--validate=false` would apply). The run exits with code 2, and the finding is reported
whatever `--select`, `--ignore`, `severity:` and suppressions say: exit code 2 always comes
with its reason.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web
```

## Fix
Repair the file at the reported position (here: close the flow mapping with `}`).

## References
- kubernetes/apimachinery `pkg/util/yaml/decoder.go` (`NewYAMLOrJSONDecoder`), what kubectl reads
  manifests with; `sigs.k8s.io/yaml` underneath resolves scalars as YAML 1.1
- go-yaml v2 (`gopkg.in/yaml.v2` v2.4.0) `scannerc.go`, `resolve.go`, `decode.go`; `sigs.k8s.io/yaml`
  v1.6.0 `yaml.go` (`convertToJSONableObject`)
- Server-side field validation, strict by default in kubectl since 1.27:
  https://kubernetes.io/docs/reference/using-api/api-concepts/#field-validation
""",
)
