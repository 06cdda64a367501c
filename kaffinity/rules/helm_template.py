"""helm-template: an unrendered Helm chart template among the manifests."""

from kaffinity.findings import Severity
from kaffinity.rules.base import Rule

RULE = Rule(
    name="helm-template",
    category="input",
    severity=Severity.WARNING,
    summary="A file is an unrendered Helm template; lint the output of `helm template` instead.",
    docs="""\
## What it finds
A file holding Helm template actions (`{{ .Values.x }}`, `{{- if ... }}`, `{{ include ... }}`)
where YAML structure or plain values should be. Go templates that are *content* — inside quoted
or block strings, such as Prometheus alert texts (`{{ $labels.pod }}`) — do not count.
Reported once per file, at the first template action; the file is not linted further.

## Why it matters
A template is not a manifest: its scheduling rules only exist once the chart is rendered with
its values. Linting the raw text would check something that is never deployed.

## Example
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "web.fullname" . }}
spec:
  replicas: {{ .Values.replicaCount }}
```

## Fix
Render the chart and lint the result:

    helm template my-release ./chart | kaffinity lint -

or exclude chart folders in `.kaffinity.yaml` (`exclude: ["charts/**/templates"]`).

## References
- Helm, `helm template`: https://helm.sh/docs/helm/helm_template/
""",
)
