package main

// The validate op: what kube-apiserver's handwritten validation says about a
// CREATE of an apps/v1 Deployment, StatefulSet or DaemonSet.
//
//	{"op":"validate","object":{<apps/v1 object>}}
//	  -> {"ok":true,"errors":[{"type":"FieldValueRequired","reason":"Required value","field":"spec.selector","detail":"...","badValue":...}],
//	      "warnings":["..."],"message":"...","defaulted":{<the apps/v1 object after defaulting>}}
//
// The path through upstream code mirrors the API server's for a CREATE:
//   - k8s.io/kubernetes/pkg/api/legacyscheme: the scheme with apps/v1 and
//     core/v1 registered (k8s.io/kubernetes/pkg/apis/{apps,core}/install),
//     their defaulting functions and the conversion to the internal types;
//   - k8s.io/kubernetes/pkg/registry/apps/{deployment,statefulset,daemonset}
//     strategy.go (PrepareForCreate, Validate, WarningsOnCreate), transcribed
//     here rather than imported: the registry packages pull in the storage
//     layer;
//   - k8s.io/kubernetes/pkg/apis/apps/validation and
//     k8s.io/kubernetes/pkg/api/pod (validation options, warnings,
//     DropDisabledTemplateFields), k8s.io/kubernetes/pkg/api/persistentvolumeclaim
//     (warnings on claim templates).
// Not done yet: declarative validation (rest.DeclarativeValidation in the
// strategies), admission plugins, other kinds.

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	pvcutil "k8s.io/kubernetes/pkg/api/persistentvolumeclaim"
	"k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/apps"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	appsvalidation "k8s.io/kubernetes/pkg/apis/apps/validation"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	"k8s.io/kubernetes/pkg/features"
)

func init() { extraOps["validate"] = doValidate }

type kind struct {
	external, internal func() runtime.Object
	// create runs the strategy's PrepareForCreate, Validate, WarningsOnCreate
	create func(internal runtime.Object) (field.ErrorList, []string)
}

var template = field.NewPath("spec", "template")

var kinds = map[string]kind{
	"Deployment": {
		func() runtime.Object { return &appsv1.Deployment{} },
		func() runtime.Object { return &apps.Deployment{} },
		func(o runtime.Object) (field.ErrorList, []string) {
			d := o.(*apps.Deployment)
			d.Status = apps.DeploymentStatus{}
			d.Generation = 1
			pod.DropDisabledTemplateFields(&d.Spec.Template, nil)
			errs := appsvalidation.ValidateDeployment(d, pod.GetValidationOptionsFromPodTemplate(&d.Spec.Template, nil))
			warnings := []string{}
			if msgs := utilvalidation.IsDNS1123Label(d.Name); len(msgs) != 0 {
				warnings = append(warnings, fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs))
			}
			warnings = append(warnings, pod.GetWarningsForPodTemplate(context.Background(), template, &d.Spec.Template, nil)...)
			return errs, warnings
		},
	},
	"StatefulSet": {
		func() runtime.Object { return &appsv1.StatefulSet{} },
		func() runtime.Object { return &apps.StatefulSet{} },
		func(o runtime.Object) (field.ErrorList, []string) {
			s := o.(*apps.StatefulSet)
			s.Status = apps.StatefulSetStatus{}
			s.Generation = 1
			// dropStatefulSetDisabledFields
			if !utilfeature.DefaultFeatureGate.Enabled(features.MaxUnavailableStatefulSet) && s.Spec.UpdateStrategy.RollingUpdate != nil {
				s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = nil
			}
			pod.DropDisabledTemplateFields(&s.Spec.Template, nil)
			opts := pod.GetValidationOptionsFromPodTemplate(&s.Spec.Template, nil)
			setOpts := appsvalidation.StatefulSetValidationOptions{
				AllowInvalidServiceName:          false,
				AllowStatefulSetRecreateStrategy: utilfeature.DefaultFeatureGate.Enabled(features.StatefulSetRecreateStrategy),
			}
			errs := appsvalidation.ValidateStatefulSet(s, setOpts, opts)
			warnings := pod.GetWarningsForPodTemplate(context.Background(), template, &s.Spec.Template, nil)
			for i, pvc := range s.Spec.VolumeClaimTemplates {
				warnings = append(warnings, pvcutil.GetWarningsForPersistentVolumeClaimSpec(field.NewPath("spec", "volumeClaimTemplates").Index(i), pvc.Spec)...)
			}
			if s.Spec.RevisionHistoryLimit != nil && *s.Spec.RevisionHistoryLimit < 0 {
				warnings = append(warnings, "spec.revisionHistoryLimit: a negative value retains all historical revisions; a value >= 0 is recommended")
			}
			return errs, warnings
		},
	},
	"DaemonSet": {
		func() runtime.Object { return &appsv1.DaemonSet{} },
		func() runtime.Object { return &apps.DaemonSet{} },
		func(o runtime.Object) (field.ErrorList, []string) {
			d := o.(*apps.DaemonSet)
			d.Status = apps.DaemonSetStatus{}
			d.Generation = 1
			if d.Spec.TemplateGeneration < 1 {
				d.Spec.TemplateGeneration = 1
			}
			pod.DropDisabledTemplateFields(&d.Spec.Template, nil)
			errs := appsvalidation.ValidateDaemonSet(d, pod.GetValidationOptionsFromPodTemplate(&d.Spec.Template, nil))
			return errs, pod.GetWarningsForPodTemplate(context.Background(), template, &d.Spec.Template, nil)
		},
	},
}

func doValidate(req request) response {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(req.Object, &head); err != nil {
		return fail("decode", err)
	}
	k, known := kinds[head.Kind]
	if !known || head.APIVersion != "apps/v1" {
		return fail("decode", fmt.Errorf("%s %s: only apps/v1 Deployment, StatefulSet, DaemonSet for now", head.APIVersion, head.Kind))
	}
	external := k.external()
	if err := json.Unmarshal(req.Object, external); err != nil {
		return fail("decode", err)
	}
	meta := external.(interface {
		GetNamespace() string
		SetNamespace(string)
	})
	if meta.GetNamespace() == "" {
		// the API server takes it from the request's path; kubectl sends the
		// context's namespace, "default" unless set
		meta.SetNamespace("default")
	}
	legacyscheme.Scheme.Default(external)
	defaulted, _ := json.Marshal(external)

	internal := k.internal()
	if err := legacyscheme.Scheme.Convert(external, internal, nil); err != nil {
		return fail("convert", err)
	}
	errs, warnings := k.create(internal)
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
