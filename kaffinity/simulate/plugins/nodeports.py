"""NodePorts (``pkg/scheduler/framework/plugins/nodeports``): a host port the node's pods
already hold (``HostPortInfo.CheckConflict``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from kaffinity.k8s.model.terms import ANY_HOST_IP
from kaffinity.simulate.framework.types import SimNode, SimPod

#: pkg/scheduler/framework/plugins/nodeports ``ErrReason``
REASON_PORTS = "node(s) didn't have free ports for the requested pod ports"
PORTS = [REASON_PORTS]


def port_conflict(
    wanted: Iterable[tuple[str, str, int]], held: Mapping[tuple[str, int], Mapping[str, int]]
) -> bool:
    """Whether one of ``wanted`` (protocol, hostIP, hostPort) clashes with the ports a node's
    pods hold (``HostPortInfo.CheckConflict``, pkg/scheduler/framework/types.go): 0.0.0.0 clashes
    with the same protocol and port on any address, any address with 0.0.0.0 or itself."""
    for protocol, ip, port in wanted:
        ips = held.get((protocol, port))
        if not ips:
            continue
        if ip == ANY_HOST_IP or ips.get(ANY_HOST_IP) or ips.get(ip):
            return True
    return False


def held_without(node: SimNode, gone: Iterable[SimPod]) -> dict[tuple[str, int], Counter[str]]:
    """The ports ``node``'s pods hold once the pods ``gone`` are gone (nothing changes)."""
    left = set(gone)
    held: dict[tuple[str, int], Counter[str]] = {}
    for other in node.pods:
        if other not in left:
            for protocol, ip, port in other.constraints.ports:
                held.setdefault((protocol, port), Counter())[ip] += 1
    return held
