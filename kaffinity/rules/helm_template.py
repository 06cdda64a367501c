"""helm-template: a Helm chart that is not rendered, or an unrendered template among the manifests."""

from kaffinity.findings import Severity
from kaffinity.rules.base import Rule

RULE = Rule(
    name="helm-template",
    category="input",
    severity=Severity.INFO,
    summary="A Helm chart is not rendered: its templates are not linted.",
    docs="""\
## What it finds
A Helm chart whose templates were not linted because the chart was not rendered: no renderer
(neither the `helm` binary nor helm-python-sdk), `--no-render`, or rendering failed (that
failure is reported on its own). Reported **once per chart**, at its `Chart.yaml` (the `name:`
line), with the number of templates left unlinted — never once per template.

Every file under a chart's `templates/` is a template, as Helm reads a chart: it is never
parsed as YAML, never a `parse-error` and never linted as a manifest (`_helpers.tpl`,
`NOTES.txt` and `templates/tests/` included; what the chart's `.helmignore` leaves out is not
part of the chart). The chart's `crds/` are plain YAML that Helm installs as they are: they are
linted as manifests.

A file outside any chart that holds Helm template actions (`{{ .Values.x }}`, `{{- if ... }}`,
`{{ include ... }}`) where YAML structure or plain values should be is reported the same way,
at its first action. Go templates that are *content* — inside quoted or block strings, such as
Prometheus alert texts (`{{ $labels.pod }}`), or in the values of a Flux `HelmRelease`, an Argo
CD `Application` or `ApplicationSet` — do not count.

The severity is `info`: the pre-commit hook (`--fail-on warning`) does not fail a commit that
touches a chart template. `severity: {helm-template: warning}` in `.kaffinity.yaml` makes it
count again.

## Why it matters
A template is not a manifest: its scheduling rules only exist once the chart is rendered with
its values. Linting the raw text would check something that is never deployed.

## Example
```yaml
# chart/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "web.fullname" . }}
spec:
  replicas: {{ .Values.replicaCount }}
```

## Fix
Let kaffinity render it (the default, with `helm` on the PATH or helm-python-sdk installed:
kaffinity's `helm` extra, docs/install.md); where rendering failed, fix what that finding says (a
`chart-dependency` is vendored with `helm dependency build`). Or lint Helm's output:

    helm template my-release ./chart | kaffinity lint -

## References
- Helm, `helm template`: https://helm.sh/docs/helm/helm_template/
- Helm, chart file structure: https://helm.sh/docs/topics/charts/#the-chart-file-structure
""",
)
