"""An object converted to another version of its API, as kube-apiserver converts it for an
admission policy that matches it by an equivalent version (``matchPolicy: Equivalent``).

Among the kinds served under several versions in Kubernetes 1.27 and later, the one that
matters for scheduling is the HorizontalPodAutoscaler: ``autoscaling/v1`` and
``autoscaling/v2`` (``pkg/apis/autoscaling/v1/conversion.go``, ``pkg/apis/autoscaling/v2/
defaults.go``):

- v1 → v2: ``targetCPUUtilizationPercentage`` becomes a ``Resource`` metric on ``cpu`` with an
  ``Utilization`` target; without it, v2's default, 80% CPU utilization;
- v2 → v1: a CPU utilization metric becomes ``targetCPUUtilizationPercentage``; other metrics
  (which v1 keeps in an annotation) are dropped.

Other fields are the same in both versions. The input is not changed.
"""

from __future__ import annotations

from typing import Any

#: Resources served under several versions of one group, the preferred version first (kube-apiserver's
#: equivalent resource registry, 1.27 and later).
EQUIVALENT_VERSIONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("autoscaling", "horizontalpodautoscalers"): ("v2", "v1"),
}
#: v2's default metric when none is given (``SetDefaults_HorizontalPodAutoscaler``).
DEFAULT_CPU_UTILIZATION = 80


def convert(obj: dict[str, Any], group: str, version: str) -> dict[str, Any]:
    """``obj`` (plain data) as ``group/version`` presents it."""
    out = dict(obj)
    out["apiVersion"] = f"{group}/{version}" if group else version
    spec = obj.get("spec")
    if obj.get("kind") == "HorizontalPodAutoscaler" and isinstance(spec, dict):
        out["spec"] = _hpa_v2(spec) if version == "v2" else _hpa_v1(spec)
    return out


def _hpa_v2(spec: dict[str, Any]) -> dict[str, Any]:
    out = {key: value for key, value in spec.items() if key != "targetCPUUtilizationPercentage"}
    if "metrics" not in out:
        target = spec.get("targetCPUUtilizationPercentage", DEFAULT_CPU_UTILIZATION)
        out["metrics"] = [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": target}},
            }
        ]
    return out


def _hpa_v1(spec: dict[str, Any]) -> dict[str, Any]:
    out = {key: value for key, value in spec.items() if key not in ("metrics", "behavior")}
    for metric in spec.get("metrics") or ():
        resource = metric.get("resource") if isinstance(metric, dict) else None
        if not isinstance(resource, dict) or resource.get("name") != "cpu":
            continue
        target = resource.get("target")
        if (
            isinstance(target, dict)
            and target.get("type") == "Utilization"
            and "averageUtilization" in target
        ):
            out["targetCPUUtilizationPercentage"] = target["averageUtilization"]
    return out
