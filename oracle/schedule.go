package main

// The schedule op: kube-scheduler's default profile, run as kube-scheduler
// runs it, on a snapshot of nodes and bound pods, for one pending pod.
//
// Upstream path (k8s.io/kubernetes v1.37.2, pkg/scheduler):
//   - scheduler.New (scheduler.go) with no WithProfiles option applies the
//     default profile: configv1.KubeSchedulerConfiguration defaulted by
//     pkg/scheduler/apis/config/scheme, plugins from
//     framework/plugins.NewInTreeRegistry();
//   - its informers (over a fake clientset holding the objects) fill the
//     scheduler cache and the scheduling queue (eventhandlers.go
//     addAllEventHandlers), WaitForHandlersSync waits for them;
//   - Scheduler.ScheduleOne (schedule_one.go) runs one scheduling cycle:
//     PreFilter/Filter/PostFilter (DefaultPreemption)/Score, then the
//     binding cycle in a goroutine;
//   - the answer is read from the events the profile's recorder gets:
//     "Scheduled" ("Successfully assigned ns/name to node", bindingCycle) or
//     "FailedScheduling" (handleSchedulingFailure: the FitError's Error(),
//     framework/types.go FitError.Error, "0/3 nodes are available: ...").
//     Per-node reasons come from the same FitError's Diagnosis.NodeToStatus,
//     read by wrapping Scheduler.FailureHandler.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	daemonutil "k8s.io/kubernetes/pkg/controller/daemon/util"
	podregistry "k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/plugin/pkg/admission/priority"
	"k8s.io/kubernetes/plugin/pkg/admission/runtimeclass"
)

func init() { extraOps["schedule"] = doSchedule }

type scheduleRequest struct {
	Nodes           []json.RawMessage `json:"nodes"`
	Pods            []json.RawMessage `json:"pods"`
	Pod             json.RawMessage   `json:"pod"`
	PDBs            []json.RawMessage `json:"pdbs"`
	PriorityClasses []json.RawMessage `json:"priorityClasses"`
	Namespaces      []json.RawMessage `json:"namespaces"`
	// Any other built-in object with apiVersion and kind (PersistentVolume,
	// PersistentVolumeClaim, StorageClass, CSINode, ...), for the volume plugins.
	Objects []json.RawMessage `json:"objects"`
	// Several pods to schedule, in queue order (instead of "pod").
	Pending []json.RawMessage `json:"pending"`
	// "namespace/name" -> a node: when it is among the feasible nodes, the
	// pod is bound there instead of upstream's own pick (kept in
	// "upstreamPick"), so that a caller whose tie-break differs keeps the
	// same cluster for the pods after.
	Prefer map[string]string `json:"prefer"`
	// After a pod nominated by preemption, schedule it again (its victims
	// gone) before the next pod: the answer's "retry".
	RetryNominated bool `json:"retryNominated"`
	// "namespace/name" of a pending pod -> the node the DaemonSet controller
	// creates it for: its tolerations and node affinity become what the
	// controller gives it.
	DaemonSetNodes map[string]string `json:"daemonSetNodes"`
	TimeoutSeconds float64           `json:"timeoutSeconds"`
}

// decodeInto decodes a v1 object and applies the API server's defaulting
// (legacyscheme, pkg/apis/core/install registers the v1 defaulters), as an
// object read back from a cluster would be.
func decodeInto(raw json.RawMessage, obj runtime.Object) error {
	if err := json.Unmarshal(raw, obj); err != nil {
		return err
	}
	legacyscheme.Scheme.Default(obj)
	return nil
}

func podDefaults(p *v1.Pod, classes []*schedulingv1.PriorityClass) {
	if p.Namespace == "" {
		p.Namespace = "default"
	}
	if p.UID == "" {
		p.UID = types.UID("oracle-" + p.Namespace + "-" + p.Name)
	}
	if p.Spec.SchedulerName == "" {
		p.Spec.SchedulerName = v1.DefaultSchedulerName
	}
	// The Priority admission plugin (plugin/pkg/admission/priority) sets
	// priority and preemptionPolicy from the PriorityClass (or the
	// globalDefault one) when the pod is created. Transcribed here for the
	// bound pods (a capture's pods have it already); the pod being
	// scheduled goes through the plugin itself (admitPriority).
	if p.Spec.Priority == nil {
		var pc *schedulingv1.PriorityClass
		for _, c := range classes {
			if (p.Spec.PriorityClassName != "" && c.Name == p.Spec.PriorityClassName) ||
				(p.Spec.PriorityClassName == "" && c.GlobalDefault) {
				pc = c
			}
		}
		if pc != nil {
			v := pc.Value
			p.Spec.Priority = &v
			if p.Spec.PreemptionPolicy == nil && pc.PreemptionPolicy != nil {
				pp := *pc.PreemptionPolicy
				p.Spec.PreemptionPolicy = &pp
			}
		}
	}
}

func doSchedule(req request) response {
	var sr scheduleRequest
	if err := json.Unmarshal(req.raw, &sr); err != nil {
		return fail("input", err)
	}
	var objs []runtime.Object
	var classes []*schedulingv1.PriorityClass
	for _, raw := range sr.PriorityClasses {
		c := &schedulingv1.PriorityClass{}
		if err := decodeInto(raw, c); err != nil {
			return fail("input", fmt.Errorf("priorityClasses: %w", err))
		}
		classes = append(classes, c)
		objs = append(objs, c)
	}
	for _, raw := range sr.Nodes {
		n := &v1.Node{}
		if err := decodeInto(raw, n); err != nil {
			return fail("input", fmt.Errorf("nodes: %w", err))
		}
		objs = append(objs, n)
	}
	for _, raw := range sr.Pods {
		p := &v1.Pod{}
		if err := decodeInto(raw, p); err != nil {
			return fail("input", fmt.Errorf("pods: %w", err))
		}
		podDefaults(p, classes)
		if p.Spec.NodeName == "" {
			// It would enter the scheduling queue and compete with the pods asked about.
			return fail("input", fmt.Errorf("pods: %s/%s has no spec.nodeName (only bound pods go in \"pods\"; pending ones in \"pending\")", p.Namespace, p.Name))
		}
		objs = append(objs, p)
	}
	for _, raw := range sr.PDBs {
		d := &policyv1.PodDisruptionBudget{}
		if err := decodeInto(raw, d); err != nil {
			return fail("input", fmt.Errorf("pdbs: %w", err))
		}
		if d.Namespace == "" {
			d.Namespace = "default"
		}
		objs = append(objs, d)
	}
	for _, raw := range sr.Namespaces {
		ns := &v1.Namespace{}
		if err := decodeInto(raw, ns); err != nil {
			return fail("input", fmt.Errorf("namespaces: %w", err))
		}
		objs = append(objs, ns)
	}
	for _, raw := range sr.Objects {
		obj, _, err := clientscheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
		if err != nil {
			return fail("input", fmt.Errorf("objects: %w", err))
		}
		legacyscheme.Scheme.Default(obj)
		if p, ok := obj.(*v1.Pod); ok {
			podDefaults(p, classes)
		}
		if m, ok := obj.(metav1.Object); ok && m.GetNamespace() == "" {
			if _, namespaced := obj.(*v1.PersistentVolumeClaim); namespaced {
				m.SetNamespace("default")
			}
		}
		objs = append(objs, obj)
	}
	single := len(sr.Pending) == 0
	raws := sr.Pending
	if single {
		if len(sr.Pod) == 0 {
			return fail("input", errors.New("no pod (\"pod\") and no \"pending\" list"))
		}
		raws = []json.RawMessage{sr.Pod}
	} else if len(sr.Pod) != 0 {
		return fail("input", errors.New("\"pod\" and \"pending\" both given"))
	}
	var pending []*v1.Pod
	for i, raw := range raws {
		pod := &v1.Pod{}
		if err := decodeInto(raw, pod); err != nil {
			return fail("input", fmt.Errorf("pending[%d]: %w", i, err))
		}
		podDefaults(pod, nil) // its priority comes from the Priority admission plugin below
		if node, ok := sr.DaemonSetNodes[pod.Namespace+"/"+pod.Name]; ok {
			// The DaemonSet controller's pod (pkg/controller/daemon: syncNodes,
			// util.CreatePodTemplate adds the daemon tolerations, then the
			// required node affinity is replaced by the node's name).
			daemonutil.AddOrUpdateDaemonPodTolerations(&pod.Spec)
			pod.Spec.Affinity = daemonutil.ReplaceDaemonSetPodNodeNameNodeAffinity(pod.Spec.Affinity, node)
		}
		if pod.Spec.SchedulerName != v1.DefaultSchedulerName {
			return fail("input", fmt.Errorf("pod %s: schedulerName %q: only the default profile (%s) is run", pod.Name, pod.Spec.SchedulerName, v1.DefaultSchedulerName))
		}
		pod.Spec.NodeName = ""
		pending = append(pending, pod)
	}

	timeout := 20 * time.Second
	if sr.TimeoutSeconds > 0 {
		timeout = time.Duration(sr.TimeoutSeconds * float64(time.Second))
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	client := fake.NewClientset(objs...)
	// Preemption's victims: DefaultPreemption (framework/preemption, the
	// Evaluator's prepareCandidate) deletes them through the client.
	var victimsMu sync.Mutex
	var victims []string
	client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		victimsMu.Lock()
		victims = append(victims, d.GetNamespace()+"/"+d.GetName())
		victimsMu.Unlock()
		return false, nil, nil
	})
	for _, pod := range pending {
		if err := prepareForCreate(ctx, pod); err != nil {
			return fail("input", fmt.Errorf("pod %s: %w", pod.Name, err))
		}
		if err := admitPriority(ctx, client, pod); err != nil {
			return fail("admission", err)
		}
		if err := admitRuntimeClass(ctx, client, pod); err != nil {
			return fail("admission", err)
		}
	}
	// The queue's order (PrioritySort, pkg/scheduler/framework/plugins/queuesort:
	// the higher priority first, then the earlier timestamp): the pods enter
	// the queue one at a time in the order given (their creation order), so a
	// stable sort by priority is the order activeQ pops them in.
	sort.SliceStable(pending, func(i, j int) bool {
		return corev1helpers.PodPriority(pending[i]) > corev1helpers.PodPriority(pending[j])
	})

	informerFactory := scheduler.NewInformerFactory(client, 0, nil)
	rec := &podRecorder{events: make(chan podEvent, 1000)}
	// A pod that failed waits in backoffQ/unschedulablePods; with an
	// hour's backoff it is not tried again before the pods behind it (the
	// question is each pod's first scheduling attempt, in queue order).
	sched, err := scheduler.New(ctx, client, informerFactory, nil,
		func(string) events.EventRecorderLogger { return rec },
		scheduler.WithPodInitialBackoffSeconds(3600), scheduler.WithPodMaxBackoffSeconds(3600))
	if err != nil {
		return fail("scheduler", err)
	}

	var mu sync.Mutex
	fitErrs := map[string]*framework.FitError{}
	otherErrs := map[string]error{}
	nominatedOf := map[string]string{}
	orig := sched.FailureHandler
	sched.FailureHandler = func(ctx context.Context, f framework.Framework, podInfo *framework.QueuedPodInfo, status *fwk.Status, ni *fwk.NominatingInfo, start time.Time) {
		key := podInfo.Pod.Namespace + "/" + podInfo.Pod.Name
		mu.Lock()
		var fe *framework.FitError
		if err := status.AsError(); err != nil {
			if errors.As(err, &fe) {
				fitErrs[key] = fe
			} else {
				otherErrs[key] = err
			}
		}
		if ni != nil && ni.NominatedNodeName != "" {
			nominatedOf[key] = ni.NominatedNodeName
		}
		mu.Unlock()
		orig(ctx, f, podInfo, status, ni, start)
	}
	// The scores behind the choice: the nodes upstream would pick among (its
	// ties are broken at random: framework.NewSortedScoredNodes' Randomizer),
	// and "prefer" naming one of the feasible nodes binds the pod there.
	scoresOf := map[string]map[string]int64{}
	upstreamPick := map[string]string{}
	origSchedulePod := sched.SchedulePod
	sched.SchedulePod = func(ctx context.Context, f framework.Framework, state fwk.CycleState, podInfo *framework.QueuedPodInfo) (scheduler.ScheduleResult, error) {
		result, err := origSchedulePod(ctx, f, state, podInfo)
		if err != nil || result.SuggestedHost == "" {
			return result, err
		}
		if result.FeasibleNodes <= 1 {
			return result, nil // the only feasible node, not scored
		}
		pod := podInfo.Pod
		key := pod.Namespace + "/" + pod.Name
		scores := feasibleScores(ctx, f, state, pod)
		mu.Lock()
		scoresOf[key] = scores
		upstreamPick[key] = result.SuggestedHost
		mu.Unlock()
		if want, ok := sr.Prefer[key]; ok {
			if _, feasible := scores[want]; feasible {
				result.SuggestedHost = want
			}
		}
		return result, nil
	}

	informerFactory.Start(ctx.Done())
	informerFactory.WaitForCacheSync(ctx.Done())
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		return fail("scheduler", fmt.Errorf("handlers sync: %w", err))
	}
	sched.SchedulingQueue.Run(klog.FromContext(ctx))
	defer sched.SchedulingQueue.Close()

	// once runs one ScheduleOne for the pod (in the queue already) and reads
	// its answer from the events.
	once := func(pod *v1.Pod) (response, error) {
		key := pod.Namespace + "/" + pod.Name
		victimsMu.Lock()
		before := len(victims)
		victimsMu.Unlock()
		mu.Lock()
		delete(nominatedOf, key)
		delete(fitErrs, key)
		delete(otherErrs, key)
		delete(scoresOf, key)
		mu.Unlock()
		done := make(chan struct{})
		go func() { sched.ScheduleOne(ctx); close(done) }()
		defer func() { <-done }()
		for {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("%s: no Scheduled or FailedScheduling event within %v", key, timeout)
			case e := <-rec.events:
				if e.key != key {
					continue
				}
				switch {
				case e.eventType == v1.EventTypeNormal && e.reason == "Scheduled":
					i := strings.LastIndex(e.note, " to ")
					resp := response{"node": e.note[i+4:], "event": e.note}
					mu.Lock()
					if scores, ok := scoresOf[key]; ok {
						resp["scores"] = scores
						resp["best"] = bestOf(scores)
						resp["upstreamPick"] = upstreamPick[key]
					}
					mu.Unlock()
					return resp, nil
				case e.eventType == v1.EventTypeWarning && e.reason == "FailedScheduling":
					resp := response{"node": nil, "message": e.note}
					<-done // the failure handler has run: its records are in
					mu.Lock()
					nominated := nominatedOf[key]
					fitErr, otherErr := fitErrs[key], otherErrs[key]
					mu.Unlock()
					if nominated != "" {
						resp["nominatedNode"] = nominated
						resp["victims"] = waitVictims(&victimsMu, &victims, before, preempting(e.note))
					}
					if fitErr != nil {
						plugins := map[string][]string{}
						statusPlugins := map[string]string{}
						fitErr.Diagnosis.NodeToStatus.ForEachExplicitNode(func(node string, st *fwk.Status) {
							plugins[node] = st.Reasons()
							statusPlugins[node] = st.Plugin()
						})
						resp["plugins"] = plugins
						resp["rejectedBy"] = statusPlugins
						resp["numAllNodes"] = fitErr.NumAllNodes
					} else if otherErr != nil {
						resp["error"] = otherErr.Error()
					}
					return resp, nil
				}
			}
		}
	}

	var results []response
	for _, pod := range pending {
		key := pod.Namespace + "/" + pod.Name
		if err := client.Tracker().Add(pod); err != nil {
			return fail("input", fmt.Errorf("pod %s: %w", key, err))
		}
		if err := waitQueued(ctx, sched, pod); err != nil {
			return fail("timeout", err)
		}
		resp, err := once(pod)
		if err != nil {
			return fail("timeout", err)
		}
		if nominated, ok := resp["nominatedNode"]; ok && sr.RetryNominated {
			// The victims are gone (the fake client deletes at once, with no
			// grace period): the pod is taken again before the next one, from
			// backoff (Activate), as if its retry came first.
			retry, err := retryNominated(ctx, sched, informerFactory, pod, resp, once)
			if err != nil {
				return fail("timeout", err)
			}
			retry["nominatedNode"] = nominated
			resp["retry"] = retry
		}
		resp["pod"] = key
		results = append(results, resp)
	}
	if single {
		resp := results[0]
		delete(resp, "pod")
		resp["ok"] = true
		return resp
	}
	return response{"ok": true, "results": results}
}

// retryNominated schedules a pod that preemption nominated again, once its
// victims have left the informer's cache (a few tries: the scheduler's cache
// follows the same informer).
func retryNominated(ctx context.Context, sched *scheduler.Scheduler, factory informers.SharedInformerFactory, pod *v1.Pod, first response, once func(*v1.Pod) (response, error)) (response, error) {
	lister := factory.Core().V1().Pods().Lister()
	victims, _ := first["victims"].([]string)
	for _, v := range victims {
		ns, name, _ := strings.Cut(v, "/")
		for {
			if _, err := lister.Pods(ns).Get(name); err != nil {
				break
			}
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("victim %s never left the cache", v)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	var resp response
	for try := 0; try < 5; try++ {
		time.Sleep(20 * time.Millisecond)
		sched.SchedulingQueue.Activate(klog.FromContext(ctx), map[string]*v1.Pod{pod.Namespace + "/" + pod.Name: pod})
		var err error
		if resp, err = once(pod); err != nil {
			return nil, err
		}
		if resp["node"] != nil {
			break
		}
	}
	return resp, nil
}

// podEvent is one event the scheduler records, with the pod it regards.
type podEvent struct{ key, eventType, reason, note string }

// podRecorder is an events.EventRecorderLogger keeping each event with the
// namespace/name of the object it regards (events.FakeRecorder drops it), so
// that answers of several pods are told apart.
type podRecorder struct{ events chan podEvent }

func (r *podRecorder) Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	key := ""
	if m, ok := regarding.(metav1.Object); ok {
		key = m.GetNamespace() + "/" + m.GetName()
	}
	r.events <- podEvent{key, eventtype, reason, fmt.Sprintf(note, args...)}
}

func (r *podRecorder) AnnotatedEventf(regarding runtime.Object, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...interface{}) {
	r.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

func (r *podRecorder) WithLogger(klog.Logger) events.EventRecorderLogger { return r }

// waitQueued waits until the pod is in the scheduling queue (added by the
// informer's event handler), so that ScheduleOne pops it and not an older
// pod waiting in backoff.
func waitQueued(ctx context.Context, sched *scheduler.Scheduler, pod *v1.Pod) error {
	for {
		pods, _ := sched.SchedulingQueue.PendingPods()
		for _, p := range pods {
			if p.UID == pod.UID {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s/%s never reached the scheduling queue", pod.Namespace, pod.Name)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// preemptingRe reads how many victims preemption evicts from the
// FailedScheduling message (Evaluator.Preempt in
// pkg/scheduler/framework/preemption/preemption.go: "found a potential
// placement for pod on node X, preempting N victims").
var preemptingRe = regexp.MustCompile(`preempting (\d+) victims`)

// preempting: the number of victims the message announces (0: not said).
func preempting(message string) int {
	m := preemptingRe.FindStringSubmatch(message)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// waitVictims: preemption may delete its victims in a goroutine (async
// preemption): wait for the deletions the message announces (else for the
// first one, then for quiet), at most 3 s.
func waitVictims(mu *sync.Mutex, victims *[]string, before, want int) []string {
	deadline := time.Now().Add(3 * time.Second)
	last := -1
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(*victims)
		mu.Unlock()
		if want > 0 && n-before >= want {
			break
		}
		if want == 0 && n > before && n == last {
			break
		}
		last = n
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	found := append([]string{}, (*victims)[before:]...)
	sort.Strings(found)
	return found
}

// feasibleScores: the total score of each feasible node, as prioritizeNodes
// (schedule_one.go) computes it: the Filter plugins (with the nominated pods,
// RunFilterPluginsWithNominatedPods, as findNodesThatPassFilters runs them)
// on every node of the snapshot, then PreScore and Score on those passing.
// The cycle state is the one SchedulePod filled (PreFilter ran); running
// PreScore again writes the same state.
func feasibleScores(ctx context.Context, f framework.Framework, state fwk.CycleState, pod *v1.Pod) map[string]int64 {
	all, err := f.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil
	}
	var feasible []fwk.NodeInfo
	for _, ni := range all {
		if f.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni).IsSuccess() {
			feasible = append(feasible, ni)
		}
	}
	if !f.RunPreScorePlugins(ctx, state, pod, feasible).IsSuccess() {
		return nil
	}
	scored, status := f.RunScorePlugins(ctx, state, pod, feasible)
	if !status.IsSuccess() {
		return nil
	}
	scores := map[string]int64{}
	for _, s := range scored {
		scores[s.Name] = s.TotalScore
	}
	return scores
}

// bestOf: the nodes with the highest total score, sorted by name.
func bestOf(scores map[string]int64) []string {
	var best []string
	top := int64(-1 << 62)
	for node, score := range scores {
		switch {
		case score > top:
			top, best = score, []string{node}
		case score == top:
			best = append(best, node)
		}
	}
	sort.Strings(best)
	return best
}

// prepareForCreate is the pod registry's PrepareForCreate
// (pkg/registry/core/pod/strategy.go), what the API server does to every
// pod it creates before admission: matchLabelKeys / mismatchLabelKeys merged
// into the pod (anti-)affinity terms' selectors (mutatePodAffinity,
// MatchLabelKeysInPodAffinity) and into the topology spread constraints'
// (mutateTopologySpreadConstraints, with
// MatchLabelKeysInPodTopologySpreadSelectorMerge), disabled fields dropped,
// pod-level resources defaulted.
func prepareForCreate(ctx context.Context, pod *v1.Pod) error {
	internal := &api.Pod{}
	if err := legacyscheme.Scheme.Convert(pod, internal, nil); err != nil {
		return err
	}
	podregistry.Strategy.PrepareForCreate(ctx, internal)
	return legacyscheme.Scheme.Convert(internal, pod, nil)
}

// admitRuntimeClass runs the RuntimeClass admission plugin
// (plugin/pkg/admission/runtimeclass: Admit's setOverhead and setScheduling,
// then Validate's validateOverhead) on the pod being created, as the API
// server does before the scheduler ever sees it: the class's
// overhead.podFixed becomes spec.overhead, its scheduling.nodeSelector and
// tolerations are merged into the pod's (a conflicting selector is refused).
// The class is looked up through the client (the plugin's live lookup when
// its lister has not got it), so RuntimeClasses come in "objects".
func admitRuntimeClass(ctx context.Context, client *fake.Clientset, pod *v1.Pod) error {
	if pod.Spec.RuntimeClassName == nil {
		return nil
	}
	plugin := runtimeclass.NewRuntimeClass()
	plugin.SetExternalKubeClientSet(client)
	plugin.SetExternalKubeInformerFactory(informers.NewSharedInformerFactory(client, 0))
	return admitInternalPod(ctx, plugin, pod)
}

// admitPriority runs the Priority admission plugin
// (plugin/pkg/admission/priority, Admit then Validate) on the pod being
// created: spec.priority and spec.preemptionPolicy from its
// priorityClassName or the globalDefault class (else 0), a missing class
// refused. Only for a pod without spec.priority: a pod read from a cluster
// was admitted already (the plugin would refuse its priority if the class
// were not given).
func admitPriority(ctx context.Context, client *fake.Clientset, pod *v1.Pod) error {
	if pod.Spec.Priority != nil {
		return nil
	}
	plugin := priority.NewPlugin()
	plugin.SetExternalKubeClientSet(client)
	factory := informers.NewSharedInformerFactory(client, 0)
	plugin.SetExternalKubeInformerFactory(factory)
	stop, cancel := context.WithCancel(ctx)
	factory.Start(stop.Done())
	factory.WaitForCacheSync(stop.Done())
	defer factory.Shutdown() // after cancel (defers run last-first): Shutdown waits for the informers to stop
	defer cancel()
	return admitInternalPod(ctx, plugin, pod)
}

type admitValidator interface {
	admission.MutationInterface
	admission.ValidationInterface
}

// admitInternalPod converts the pod to the internal type, runs the plugin's
// Admit and Validate for a CREATE, and converts it back.
func admitInternalPod(ctx context.Context, plugin admitValidator, pod *v1.Pod) error {
	internal := &api.Pod{}
	if err := legacyscheme.Scheme.Convert(pod, internal, nil); err != nil {
		return err
	}
	attrs := admission.NewAttributesRecord(internal, nil, api.Kind("Pod").WithVersion("version"),
		pod.Namespace, pod.Name, api.Resource("pods").WithVersion("version"), "",
		admission.Create, &metav1.CreateOptions{}, false, nil)
	if err := plugin.Admit(ctx, attrs, nil); err != nil {
		return err
	}
	if err := plugin.Validate(ctx, attrs, nil); err != nil {
		return err
	}
	return legacyscheme.Scheme.Convert(internal, pod, nil)
}
