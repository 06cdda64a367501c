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

What each controller does (facts from kubernetes/kubernetes, paraphrased) is said, with its
upstream source, where it is replayed: :mod:`.deployment` (``rolling.go``, ``ResolveFenceposts``,
the ReplicaSet controller's ``getPodsToDelete``), :mod:`.statefulset`
(``stateful_set_control.go``, the ``MaxUnavailableStatefulSet`` gate) and :mod:`.daemonset`
(``pkg/controller/daemon/update.go``).

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
