package main

// The validate op: what kube-apiserver says about a CREATE of one object of a
// kind kaffinity validates (kaffinity/validate/apiserver: every built-in
// workload and the PodDisruptionBudget).
//
//	{"op":"validate","object":{<object>}}
//	  -> {"ok":true,"errors":[{"type":"FieldValueRequired","reason":"Required value","field":"spec.selector","detail":"...","badValue":...,"origin":"..."}],
//	      "warnings":["..."],"message":"...","defaulted":{<the versioned object after defaulting>}}
//	{"op":"validate","objects":[{...},{...}]}
//	  -> {"ok":true,"answers":[<one answer as above per object, in order>]}
//
// The path through upstream code is the API server's for a CREATE
// (k8s.io/apiserver/pkg/registry/rest/create.go, BeforeCreate):
//   - the object is decoded case-sensitively as the API server decodes JSON
//     (k8s.io/apimachinery/pkg/util/json), defaulted by
//     k8s.io/kubernetes/pkg/api/legacyscheme (pkg/apis/*/install) and
//     converted to the internal type;
//   - the kind's registry strategy itself (k8s.io/kubernetes/pkg/registry/...:
//     Strategy.PrepareForCreate, then rest.ValidateCreate, which runs the
//     strategy's Validate, the ObjectMeta checks and, through the strategy's
//     embedded rest.DeclarativeValidation, the declarative validation of the
//     versioned object (ValidateDeclarativelyWithMigrationChecks with 1.37's
//     default gates), then Strategy.WarningsOnCreate.
//
// Feature gates: 1.37's defaults (utilfeature.DefaultFeatureGate).

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/apps"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	"k8s.io/kubernetes/pkg/apis/batch"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	api "k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	"k8s.io/kubernetes/pkg/apis/policy"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	"k8s.io/kubernetes/pkg/registry/apps/daemonset"
	"k8s.io/kubernetes/pkg/registry/apps/deployment"
	"k8s.io/kubernetes/pkg/registry/apps/replicaset"
	"k8s.io/kubernetes/pkg/registry/apps/statefulset"
	"k8s.io/kubernetes/pkg/registry/batch/cronjob"
	"k8s.io/kubernetes/pkg/registry/batch/job"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/core/podtemplate"
	"k8s.io/kubernetes/pkg/registry/core/replicationcontroller"
	"k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget"
)

func init() { extraOps["validate"] = doValidate }

// kind: how the API server serves one kind: its versioned and internal types,
// its resource (for the request info declarative validation reads) and its
// registry strategy.
type kind struct {
	group, version, resource string
	external, internal       func() runtime.Object
	strategy                 rest.RESTCreateStrategy
}

var kinds = map[string]kind{
	"v1/Pod": {"", "v1", "pods",
		func() runtime.Object { return &corev1.Pod{} }, func() runtime.Object { return &api.Pod{} }, pod.Strategy},
	"v1/PodTemplate": {"", "v1", "podtemplates",
		func() runtime.Object { return &corev1.PodTemplate{} }, func() runtime.Object { return &api.PodTemplate{} }, podtemplate.Strategy},
	"v1/ReplicationController": {"", "v1", "replicationcontrollers",
		func() runtime.Object { return &corev1.ReplicationController{} }, func() runtime.Object { return &api.ReplicationController{} }, replicationcontroller.Strategy},
	"apps/v1/Deployment": {"apps", "v1", "deployments",
		func() runtime.Object { return &appsv1.Deployment{} }, func() runtime.Object { return &apps.Deployment{} }, deployment.Strategy},
	"apps/v1/ReplicaSet": {"apps", "v1", "replicasets",
		func() runtime.Object { return &appsv1.ReplicaSet{} }, func() runtime.Object { return &apps.ReplicaSet{} }, replicaset.Strategy},
	"apps/v1/StatefulSet": {"apps", "v1", "statefulsets",
		func() runtime.Object { return &appsv1.StatefulSet{} }, func() runtime.Object { return &apps.StatefulSet{} }, statefulset.Strategy},
	"apps/v1/DaemonSet": {"apps", "v1", "daemonsets",
		func() runtime.Object { return &appsv1.DaemonSet{} }, func() runtime.Object { return &apps.DaemonSet{} }, daemonset.Strategy},
	"batch/v1/Job": {"batch", "v1", "jobs",
		func() runtime.Object { return &batchv1.Job{} }, func() runtime.Object { return &batch.Job{} }, job.Strategy},
	"batch/v1/CronJob": {"batch", "v1", "cronjobs",
		func() runtime.Object { return &batchv1.CronJob{} }, func() runtime.Object { return &batch.CronJob{} }, cronjob.Strategy},
	"policy/v1/PodDisruptionBudget": {"policy", "v1", "poddisruptionbudgets",
		func() runtime.Object { return &policyv1.PodDisruptionBudget{} }, func() runtime.Object { return &policy.PodDisruptionBudget{} }, poddisruptionbudget.Strategy},
}

func doValidate(req request) response {
	var many struct {
		Objects []json.RawMessage `json:"objects"`
	}
	if err := json.Unmarshal(req.raw, &many); err == nil && many.Objects != nil {
		// a batch: one answer per object (the tests send the real corpus this way)
		answers := make([]response, 0, len(many.Objects))
		for _, object := range many.Objects {
			answers = append(answers, validateOne(object))
		}
		return response{"ok": true, "answers": answers}
	}
	return validateOne(req.Object)
}

func validateOne(object json.RawMessage) (resp response) {
	defer func() {
		if p := recover(); p != nil {
			resp = fail("panic", fmt.Errorf("%v", p))
		}
	}()
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(object, &head); err != nil {
		return fail("decode", err)
	}
	k, known := kinds[head.APIVersion+"/"+head.Kind]
	if !known {
		return fail("decode", fmt.Errorf("%s %s: not a kind the oracle validates", head.APIVersion, head.Kind))
	}
	external := k.external()
	// as the API server decodes a request body: case-sensitive, integers kept
	if err := utiljson.Unmarshal(object, external); err != nil {
		return fail("decode", err)
	}
	accessor, err := meta.Accessor(external)
	if err != nil {
		return fail("decode", err)
	}
	namespace := ""
	if k.strategy.NamespaceScoped() {
		namespace = accessor.GetNamespace()
		if namespace == "" {
			// the API server takes it from the request's path; kubectl sends the
			// context's namespace, "default" unless set
			namespace = "default"
			accessor.SetNamespace(namespace)
		}
	}
	legacyscheme.Scheme.Default(external)
	defaulted, _ := json.Marshal(external)

	internal := k.internal()
	if err := legacyscheme.Scheme.Convert(external, internal, nil); err != nil {
		return fail("convert", err)
	}
	ctx := genericrequest.WithNamespace(genericrequest.WithRequestInfo(context.Background(), &genericrequest.RequestInfo{
		IsResourceRequest: true, Verb: "create", APIGroup: k.group, APIVersion: k.version,
		Resource: k.resource, Namespace: namespace,
	}), namespace)

	// rest.BeforeCreate, its steps that concern validation
	objectMeta, _ := meta.Accessor(internal)
	if objectMeta.GetGenerateName() != "" && objectMeta.GetName() == "" {
		objectMeta.SetName(k.strategy.GenerateName(objectMeta.GetGenerateName()))
	}
	k.strategy.PrepareForCreate(ctx, internal)
	errs := rest.ValidateCreate(ctx, internal, k.strategy)
	warnings := k.strategy.WarningsOnCreate(ctx, internal)
	if warnings == nil {
		warnings = []string{}
	}

	out := make([]map[string]any, 0, len(errs))
	for _, e := range errs {
		item := map[string]any{
			"type":   string(e.Type),
			"reason": e.Type.String(),
			"field":  e.Field,
			"detail": e.Detail,
			"body":   e.ErrorBody(), // the message after "<field>: "
		}
		if e.Origin != "" {
			item["origin"] = e.Origin
		}
		if e.BadValue != nil {
			if b, err := json.Marshal(e.BadValue); err == nil {
				item["badValue"] = json.RawMessage(b)
			} else {
				item["badValue"] = fmt.Sprint(e.BadValue)
			}
		}
		out = append(out, item)
	}
	r := response{"ok": true, "errors": out, "warnings": warnings, "defaulted": json.RawMessage(defaulted)}
	if agg := errs.ToAggregate(); agg != nil {
		r["message"] = agg.Error() // the text after `is invalid: ` in kubectl's error
	}
	return r
}
