"""Container resource requirements as kube-apiserver validates them
(``pkg/apis/core/validation``: ``validateResourceRequirements`` through
``ValidateContainerResourceRequirements``; ``ValidateResourceQuantityValue``), after the v1
defaulting of a Pod (``SetDefaults_Pod``: a request defaults to its limit; a pod template is
not defaulted so, "for historical reasons"):

- a quantity is not negative ("must be greater than or equal to 0");
- an integer resource (an extended resource such as ``nvidia.com/gpu``, ``pods``, ...) is whole
  ("must be an integer");
- a request is at most its limit (``cpu``, ``memory``, ``ephemeral-storage``: "must be less than or
  equal to cpu limit of 1") and equals it where the resource cannot be overcommitted (extended
  resources, hugepages), at ``...resources.requests`` (the map, not the key);
- a request of a resource that cannot be overcommitted needs a limit ("Limit must be set for
  non overcommitable resources", at ``...resources.limits``).

Found by the oracle (tests/differential/test_validate.py, issue 35)."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_CEILING, Decimal
from typing import Any

from kaffinity.k8s.labels import qualified_name
from kaffinity.load.source import DataPath, format_path
from kaffinity.validate.apiserver.fields import FieldValidator, _items, _map

#: ``helper.integerResources`` (pkg/apis/core/helper/helpers.go).
_INTEGER_RESOURCES = frozenset(
    (
        "pods",
        "quota",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    )
)
_REQUESTS_PREFIX = "requests."
_DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"


def _native(name: str) -> bool:
    """``helper.IsNativeResource``: no domain, or a kubernetes.io one."""
    return "/" not in name or _DEFAULT_NAMESPACE_PREFIX in name


def _overcommit(name: str) -> bool:
    """``helper.IsOvercommitAllowed``: native and not hugepages."""
    return _native(name) and not name.startswith("hugepages-")


def _integer(name: str) -> bool:
    """``helper.IsIntegerResourceName``: the integer resources, and extended resources."""
    if name in _INTEGER_RESOURCES:
        return True
    return (
        not _native(name)
        and not name.startswith(_REQUESTS_PREFIX)
        and not qualified_name(_REQUESTS_PREFIX + name)
    )


def _divisible(name: str, amount: Decimal) -> bool:
    """``helper.IsHugePageResourceValueDivisible``: the amount, rounded up to a whole number
    (``Quantity.Value``), is a multiple of the page size the name gives (``hugepages-2Mi``)."""
    from kaffinity.k8s.quantity import parse_quantity_string

    page = parse_quantity_string(name.removeprefix("hugepages-"))
    if page is None or page <= 0 or page != page.to_integral_value():
        return False
    return int(amount.to_integral_value(rounding=ROUND_CEILING)) % int(page) == 0


def _shown(value: Any) -> str:
    """The quantity as the message shows it (upstream prints ``Quantity.String()``, its
    canonical form; the text as written is shown here)."""
    return str(value).strip()


class ResourceValidator(FieldValidator):
    """``validateResourceRequirements`` of each container."""

    def container_resources(self, spec: Mapping[str, Any], path: DataPath, pod: bool) -> None:
        """Every container's and init container's requirements; ``pod``: the object is a Pod
        (its requests default to its limits first)."""
        from kaffinity.k8s.quantity import parse_quantity

        for group in ("initContainers", "containers"):
            for i, container in _items(spec.get(group)):
                resources = _map(container.get("resources"))
                here = (*path, group, i, "resources")
                limits = _quantities(resources.get("limits"), parse_quantity)
                requests = _quantities(resources.get("requests"), parse_quantity)
                if pod:
                    requests = {**limits, **requests}
                for kind, values in (("limits", limits), ("requests", requests)):
                    for name, (written, amount) in values.items():
                        key = (*here, kind, name)
                        at = f"{format_path((*here, kind))}[{name}]"  # field.Path.Key
                        if amount < 0:
                            self.invalid(key, _shown(written), "must be greater than or equal to 0", at=at)
                        if _integer(name) and (amount * 1000) % 1000 != 0:
                            self.invalid(key, _shown(written), "must be an integer", at=at)
                        if name.startswith("hugepages-") and not _divisible(name, amount):
                            detail = f"{_shown(written)} is not positive integer multiple of {name}"
                            self.invalid(key, _shown(written), detail, at=at)
                self._requests_within_limits(requests, limits, here)
                names = {*requests, *limits}
                if not names & {"cpu", "memory"} and any(name.startswith("hugepages-") for name in names):
                    self.forbidden(here, "HugePages require cpu or memory")

    def _requests_within_limits(
        self,
        requests: dict[str, tuple[Any, Decimal]],
        limits: dict[str, tuple[Any, Decimal]],
        here: DataPath,
    ) -> None:
        at = format_path((*here, "requests"))
        for name, (written, amount) in requests.items():
            if name in limits:
                limit_written, limit = limits[name]
                if amount != limit and not _overcommit(name):
                    detail = f"must be equal to {name} limit of {_shown(limit_written)}"
                    self.invalid((*here, "requests", name), _shown(written), detail, at=at)
                elif amount > limit:
                    detail = f"must be less than or equal to {name} limit of {_shown(limit_written)}"
                    self.invalid((*here, "requests", name), _shown(written), detail, at=at)
            elif not _overcommit(name):
                self.required((*here, "limits"), "Limit must be set for non overcommitable resources")


def _quantities(values: Any, parse: Any) -> dict[str, tuple[Any, Decimal]]:
    """The quantities of a resource list that parse (the others are reported already)."""
    found: dict[str, tuple[Any, Decimal]] = {}
    if isinstance(values, Mapping):
        for name, value in values.items():
            amount = parse(value) if value is not None else None
            if isinstance(name, str) and amount is not None:
                found[name] = (value, amount)
    return found
