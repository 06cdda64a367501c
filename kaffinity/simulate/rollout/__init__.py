"""Rolling updates, simulated on the placed state (the ``rollout-deadlock`` rule).

The modules: :mod:`.session` (what a deadlock is; a rollout's changes, undone after),
:mod:`.simulation` (one workload's update, :func:`~.simulation.simulate`; a changed template),
the controllers (:mod:`.deployment` with the ReplicaSet controller's deletion order,
:mod:`.statefulset`, :mod:`.daemonset`) and :mod:`.blockers` (why the new pod stays Pending).

Each workload with a ``RollingUpdate`` strategy is rolled out alone, from the state the offline
scheduler left (``Context.placement``: every linted pod placed, the cluster file's pods where
they run), to a new revision whose pods carry a new ``pod-template-hash`` /
``controller-revision-hash`` (``Simulation.pod(..., revision=NEW_REVISION)``), so that
``matchLabelKeys`` scoping works as in the cluster. The controllers' steps are replayed until
the rollout is complete or no step can make progress; then the simulation is restored (new pods
unbound, old pods bound again where they ran), so every workload starts from the same state.

What each controller does (facts from kubernetes/kubernetes, paraphrased):

* **Deployment** (``pkg/controller/deployment/rolling.go``, ``util/deployment_util.go``):
  ``maxSurge`` and ``maxUnavailable`` resolve as ``ResolveFenceposts``: a percentage of
  ``replicas``, surge rounded up, unavailable rounded down, and unavailable 1 when both come to
  0. A sync either scales the new ReplicaSet up (``NewRSNewReplicas``: up to ``replicas +
  maxSurge`` pods of all revisions, at most ``replicas`` new ones) or, when it cannot, scales old
  ReplicaSets down (``reconcileOldReplicaSets``): at most ``all pods - (replicas -
  maxUnavailable) - new pods not available`` (a Pending new pod is unavailable), while the
  available pods of all revisions exceed ``replicas - maxUnavailable``. Which old pod goes is
  the ReplicaSet controller's choice (``getPodsToDelete`` / ``ActivePodsWithRanks``):
  unassigned before assigned, lower ``controller.kubernetes.io/pod-deletion-cost`` first, then
  the pod sharing its node with more pods of the Deployment (any revision), then the newer one.
  A placed pod is taken to become available at once (no readiness probe, ``minReadySeconds``
  ignored).
* **StatefulSet** (``pkg/controller/statefulset/stateful_set_control.go``): pods from the
  highest ordinal down to ``partition`` are deleted and recreated at the new revision. The
  controller waits for each one to be Running and Ready before the next, unless the
  ``MaxUnavailableStatefulSet`` gate is on at the target version (alpha 1.24, beta and on by
  default from 1.35) and ``podManagementPolicy`` is ``Parallel``: then up to ``maxUnavailable``
  (percentages rounded up, at least 1) pods are replaced at once. A StatefulSet whose pods
  cannot all be placed before the update is left alone: the controller never reaches its
  update step (``unschedulable`` reports those pods).
* **DaemonSet** (``pkg/controller/daemon/update.go``): ``maxSurge`` and ``maxUnavailable`` are
  percentages of the nodes that should run the pod, both rounded up, unavailable 1 when both are
  0. With a surge the new pod is created on the node beside the old one (at most ``maxSurge``
  at a time) and the old one is deleted when the new one is available; without, old pods are
  deleted while fewer than ``maxUnavailable`` nodes lack an available pod, and the new pod is
  created on the emptied node.

``Recreate`` and ``OnDelete`` never wait on a new pod before removing old ones, so they cannot
deadlock this way; paused Deployments do not roll out. A Pending pod is retried whenever the
cluster changes (the scheduler's queue moves it back on pod deletions); a workload's new pods are
alike, so after one fails the others are not tried again until something changes, which keeps a
rollout at O(replicas x nodes).

Only workloads whose pods all run before the update are rolled out: when some stay Pending
already, the first problem is that one (``unschedulable``, ``anti-affinity-exceeds-domains``),
and a rollout stalled by it is its consequence. A rollout is complete when no old pod is left and
every new pod runs. A new pod that no node could ever take (every node fails a static filter:
taints, node affinity, a cordon) is the template's problem (``no-eligible-node``), not a
deadlock of the rollout.
"""
