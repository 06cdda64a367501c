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
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
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
	Objects        []json.RawMessage `json:"objects"`
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
			// It would enter the scheduling queue and compete with the pod asked about.
			return fail("input", fmt.Errorf("pods: %s/%s has no spec.nodeName (only bound pods go in \"pods\")", p.Namespace, p.Name))
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
	pod := &v1.Pod{}
	if len(sr.Pod) == 0 {
		return fail("input", errors.New("no pod"))
	}
	if err := decodeInto(sr.Pod, pod); err != nil {
		return fail("input", fmt.Errorf("pod: %w", err))
	}
	podDefaults(pod, nil) // its priority comes from the Priority admission plugin below
	if pod.Spec.SchedulerName != v1.DefaultSchedulerName {
		return fail("input", fmt.Errorf("pod: schedulerName %q: only the default profile (%s) is run", pod.Spec.SchedulerName, v1.DefaultSchedulerName))
	}
	pod.Spec.NodeName = ""

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
	if err := admitPriority(ctx, client, pod); err != nil {
		return fail("admission", err)
	}
	if err := admitRuntimeClass(ctx, client, pod); err != nil {
		return fail("admission", err)
	}
	if err := client.Tracker().Add(pod); err != nil {
		return fail("input", fmt.Errorf("pod: %w", err))
	}
	informerFactory := scheduler.NewInformerFactory(client, 0, nil)
	recorder := events.NewFakeRecorder(100)
	sched, err := scheduler.New(ctx, client, informerFactory, nil,
		func(string) events.EventRecorderLogger { return recorder })
	if err != nil {
		return fail("scheduler", err)
	}

	var mu sync.Mutex
	var fitErr *framework.FitError
	var otherErr error
	var nominated string
	orig := sched.FailureHandler
	sched.FailureHandler = func(ctx context.Context, f framework.Framework, podInfo *framework.QueuedPodInfo, status *fwk.Status, ni *fwk.NominatingInfo, start time.Time) {
		mu.Lock()
		if err := status.AsError(); err != nil && !errors.As(err, &fitErr) {
			otherErr = err
		}
		if ni != nil {
			nominated = ni.NominatedNodeName
		}
		mu.Unlock()
		orig(ctx, f, podInfo, status, ni, start)
	}

	informerFactory.Start(ctx.Done())
	informerFactory.WaitForCacheSync(ctx.Done())
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		return fail("scheduler", fmt.Errorf("handlers sync: %w", err))
	}
	sched.SchedulingQueue.Run(klog.FromContext(ctx))
	defer sched.SchedulingQueue.Close()
	// ScheduleOne blocks in the queue's Pop until the pod is there; run it
	// aside so that the timeout (and the deferred Close) still answer.
	go sched.ScheduleOne(ctx)

	for {
		select {
		case <-ctx.Done():
			return fail("timeout", fmt.Errorf("no Scheduled or FailedScheduling event within %v", timeout))
		case e := <-recorder.Events:
			switch {
			case strings.HasPrefix(e, "Normal Scheduled "):
				i := strings.LastIndex(e, " to ")
				return response{"ok": true, "node": e[i+4:], "event": strings.TrimPrefix(e, "Normal Scheduled ")}
			case strings.HasPrefix(e, "Warning FailedScheduling "):
				mu.Lock()
				defer mu.Unlock()
				resp := response{"ok": true, "node": nil, "message": strings.TrimPrefix(e, "Warning FailedScheduling ")}
				if nominated != "" {
					resp["nominatedNode"] = nominated
					// Preemption may delete its victims in a goroutine (async
					// preemption): wait for the first deletion, then for quiet.
					deadline := time.Now().Add(3 * time.Second)
					last := -1
					for time.Now().Before(deadline) {
						victimsMu.Lock()
						n := len(victims)
						victimsMu.Unlock()
						if n > 0 && n == last {
							break
						}
						last = n
						time.Sleep(100 * time.Millisecond)
					}
					victimsMu.Lock()
					resp["victims"] = append([]string{}, victims...)
					victimsMu.Unlock()
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
				return resp
			}
		}
	}
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
