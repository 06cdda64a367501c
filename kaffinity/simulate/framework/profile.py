"""The default profile: the filter plugins kaffinity models, in upstream's order
(``pkg/scheduler/apis/config/v1/default_plugins.go``), and the PostFilter steps.

The order decides which reason a node gets: ``RunFilterPlugins``
(``pkg/scheduler/framework/runtime/framework.go``) stops at the first plugin that fails.
"""

from __future__ import annotations

# The default profile's filters, in upstream order (pkg/scheduler/apis/config/v1/default_plugins.go).
NODE_UNSCHEDULABLE = "NodeUnschedulable"
NODE_NAME = "NodeName"
TAINT_TOLERATION = "TaintToleration"
NODE_AFFINITY = "NodeAffinity"
NODE_PORTS = "NodePorts"
NODE_RESOURCES_FIT = "NodeResourcesFit"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
INTER_POD_AFFINITY = "InterPodAffinity"
VOLUME_BINDING = "VolumeBinding"
VOLUME_ZONE = "VolumeZone"
FILTER_PLUGINS = (
    NODE_UNSCHEDULABLE,
    NODE_NAME,
    TAINT_TOLERATION,
    NODE_AFFINITY,
    NODE_PORTS,
    NODE_RESOURCES_FIT,
    VOLUME_BINDING,
    VOLUME_ZONE,
    POD_TOPOLOGY_SPREAD,
    INTER_POD_AFFINITY,
)

#: Not a filter plugin: the PostFilter steps ``--filters`` may name (both on by default).
PREEMPTION = "DefaultPreemption"
AUTOSCALING = "Autoscaling"
#: What ``--filters`` may name: the filter plugins and the PostFilter steps, all on by default.
FILTERS = (*FILTER_PLUGINS, PREEMPTION, AUTOSCALING)
