"""An offline kube-scheduler, built as kube-scheduler is: a framework (this package) that runs
the default profile's plugins (:mod:`kaffinity.simulate.plugins`, one module each) against a
declared cluster.

Pods are placed one at a time. For each pod every node runs the enabled filters in the default
profile's order (``pkg/scheduler/apis/config/v1/default_plugins.go``) and stops at the first
failure (``RunFilterPlugins``, ``pkg/scheduler/framework/runtime/framework.go``); a failing node
records the plugin's own reason string, and a pod that fits nowhere gets the scheduler's event
text (``FitError.Error``):
``0/6 nodes are available: 3 node(s) didn't match pod anti-affinity rules, ...``.

The modules, lowest first (each imports only the ones above it in this list):

* :mod:`.profile`: the plugin names in the default profile's order, and the PostFilter steps.
* :mod:`.types`: ``Constraints`` (PodInfo), ``Term`` (AffinityTerm), ``Spread``, ``SimPod``,
  ``SimNode`` (NodeInfo), ``NodeHeap``, ``Placement`` and ``FitError``'s text.
* :mod:`.snapshot`: the nodes and the pods bound on them, and the indexes the plugins read.
* the plugins (:mod:`kaffinity.simulate.plugins`): reasons, PreFilter state, Filter, Score.
* :mod:`.runtime`: the filter plugins run over the snapshot; the static ones once per pod
  signature, kept with heaps of the nodes that pass.
* :mod:`.cycle_state`: one pod's PreFilter states, dynamic filters, scores and choice of node.
* :mod:`.preemption`: the preemption framework (DryRunPreemption, pickOneNodeForPreemption).
* :mod:`.autoscaler`: the pools that may grow (cluster-autoscaler, Karpenter).
* :mod:`.podinfo`: a pod's constraints from its template.
* :mod:`.schedule_one`: ``Simulation``: schedule one pod, then PostFilter.

Nothing here is quadratic in pods x nodes where an index does: placed pods are indexed by label
(candidates for a selector come from the label index), existing pods' anti-affinity terms are
indexed by the labels they select, the static filters (the first four) are computed once per
distinct pod signature, and pods with no inter-pod or spread rule take the best node from a
heap instead of scanning every node.
"""
