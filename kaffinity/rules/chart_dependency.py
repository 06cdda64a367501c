"""chart-dependency: a dependency a chart's Chart.yaml names that is not in its charts/ folder."""

from kaffinity.findings import Severity
from kaffinity.rules.base import Rule

RULE = Rule(
    name="chart-dependency",
    category="input",
    severity=Severity.WARNING,
    summary="A chart dependency is not in charts/ and could not be fetched; the chart renders without it.",
    docs="""\
## What it finds
With `--render`, a dependency listed in a chart's `Chart.yaml` (`requirements.yaml` for an
`apiVersion: v1` chart) that is not in the chart's `charts/` folder (as a folder or a `.tgz`
archive), and that kaffinity could not take elsewhere: the network is off (`--allow-network`
allows it), the repository is an alias of your own `helm repo add` configuration (`@name`,
`alias:name`), there is no repository, or fetching it failed (the message says why).
Reported at the dependency's item in `Chart.yaml`, once per dependency.

## Why it matters
`helm template` refuses such a chart ("found in Chart.yaml, but missing in charts/
directory"); the dependency's workloads are deployed (your CD system runs
`helm dependency build` first) but kaffinity cannot see them. The rest of the chart -- its own
templates, the dependencies that are there -- is still rendered and checked.

## Example
```yaml
# Chart.yaml of an umbrella chart; charts/ is not committed
apiVersion: v2
name: shop
version: 1.0.0
dependencies:
  - name: redis
    version: 19.x
    repository: https://charts.bitnami.com/bitnami
```

## Fix
Vendor the dependencies (`helm dependency build <chart>`, then commit `charts/` or run it in
CI before kaffinity), or let kaffinity fetch them into your cache: `kaffinity lint --render
--allow-network .` (`KAFFINITY_ALLOW_NETWORK=1`). An exact version fetched once is used from
the cache afterwards, even offline.

## References
- Helm, chart dependencies: https://helm.sh/docs/helm/helm_dependency/
- Helm, `helm dependency build`: https://helm.sh/docs/helm/helm_dependency_build/
""",
)
