"""NodePorts (``pkg/scheduler/framework/plugins/nodeports``): a host port the node's pods
already hold (``HostPortInfo.CheckConflict``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from kaffinity.k8s.model.terms import ANY_HOST_IP
from kaffinity.simulate.framework.types import SimNode, SimPod, release_port

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
    """The ports ``node`` holds once the pods ``gone`` are gone (nothing changes), as the
    scheduler's NodeInfo keeps them: a set per host IP (``HostPortInfo``), so removing a pod
    frees its ports even where another pod of the node holds the same one
    (``HostPortInfo.Remove`` deletes the entry; pkg/scheduler/framework/types.go in
    k8s.io/kube-scheduler). Two pods on one node holding a port (pods bound by nodeName) is the
    only case where it shows: a preemption dry run then sees the port free."""
    held = {key: Counter(ips) for key, ips in node.ports.items()}
    for pod in gone:
        for protocol, ip, port in pod.constraints.ports:
            release_port(held, protocol, ip, port)
    return held
