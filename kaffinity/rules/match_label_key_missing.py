"""match-label-key-missing: a matchLabelKeys / mismatchLabelKeys key that no pod will carry."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from kaffinity.expand.merge import MISSING
from kaffinity.explain.wording import lost
from kaffinity.findings import Severity, Violation
from kaffinity.rules.base import Rule

if TYPE_CHECKING:
    from kaffinity.context import Context


def _check(context: Context) -> Iterator[Violation]:
    for workload in context.inventory.every_workload:
        expansion = context.expansions.of(workload)
        for term in expansion.terms:
            for use in term.ignored:
                if use.ignored != MISSING:
                    continue
                written = [key for key, _ in workload.pod.labels]
                close = difflib.get_close_matches(use.key, written, n=1, cutoff=0.6)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                where = "metadata.labels" if workload.ref.kind == "Pod" else "the pod template's labels"
                yield Violation(
                    workload.doc,
                    (*term.path, use.field, use.index),
                    f"{use.field} key '{use.key}' is not a label of the pods{hint}, and no controller adds "
                    f"it: kube-apiserver ignores the key silently, so {lost(term, use)}",
                    fix=f"add the label '{use.key}' to {where}, or remove the key; if a webhook adds the "
                    "label at admission, suppress this finding and say so in the reason",
                )


RULE = Rule(
    name="match-label-key-missing",
    category="expansion",
    severity=Severity.WARNING,
    summary="A matchLabelKeys / mismatchLabelKeys key that the pods do not carry: silently ignored.",
    check=_check,
    docs="""\
## What it finds
A key in `matchLabelKeys` or `mismatchLabelKeys` (pod affinity, pod anti-affinity, topology
spread) that is neither a label of the pod template nor one the workload's controller adds at
run time (`pod-template-hash`, `controller-revision-hash`, ...; see `kaffinity expand`). Keys
that a controller sets only for other kinds are reported by `controller-label-unavailable`.

## Why it matters
kube-apiserver merges only the keys the created pod carries and ignores the others without a
word (`podStrategy.PrepareForCreate`, KEP-3633; KEP-3243 for spread). The term then applies to
every pod its `labelSelector` matches: an anti-affinity meant per tenant or per revision keeps
all of them apart, a spread constraint counts all of them.

## Example
```yaml
metadata:
  labels: {app: web}
...
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
    labelSelector: {matchLabels: {app: web}}
    matchLabelKeys: [tenant]        # no pod has a label "tenant"
```

## Fix
Add the label to the pod template, correct the key (a "did you mean" is given when a label is
close), or remove it. If a mutating webhook adds the label at admission, kaffinity cannot see
it: suppress the finding with that reason (`# kaffinity: ignore[match-label-key-missing] reason`).

## References
Paths without a repository name are in kubernetes/kubernetes.

- `pkg/registry/core/pod/strategy.go` (`mutatePodAffinity`, `mutateTopologySpreadConstraints`): a
  key the pod's labels lack is skipped
- KEP-3633, kubernetes/enhancements `keps/sig-scheduling/3633-matchlabelkeys-to-podaffinity`,
  "Design Details"
- KEP-3243, kubernetes/enhancements
  `keps/sig-scheduling/3243-respect-pod-topology-spread-after-rolling-upgrades`, "Design Details"
""",
)
