package main

// The validate op: what kube-apiserver's handwritten validation says about a
// CREATE of an apps/v1 Deployment.
//
//	{"op":"validate","object":{<apps/v1 Deployment>}}
//	  -> {"ok":true,"errors":[{"type":"FieldValueRequired","reason":"Required value","field":"spec.selector","detail":"...","badValue":...}],
//	      "warnings":["..."],"defaulted":{<apps/v1 Deployment after defaulting>}}
//
// The path through upstream code mirrors the API server's for a CREATE:
//   - k8s.io/kubernetes/pkg/api/legacyscheme: the scheme with apps/v1 and
//     core/v1 registered (k8s.io/kubernetes/pkg/apis/{apps,core}/install),
//     their defaulting functions and the conversion to the internal types;
//   - k8s.io/kubernetes/pkg/registry/apps/deployment strategy.go
//     (PrepareForCreate, Validate, WarningsOnCreate), transcribed here
//     rather than imported: the registry packages pull in the storage layer;
//   - k8s.io/kubernetes/pkg/apis/apps/validation.ValidateDeployment and
//     k8s.io/kubernetes/pkg/api/pod (validation options, warnings,
//     DropDisabledTemplateFields).
// Not done yet: declarative validation (rest.DeclarativeValidation in the
// strategy), admission plugins, other kinds.

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/apps"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	appsvalidation "k8s.io/kubernetes/pkg/apis/apps/validation"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
)

func init() { extraOps["validate"] = doValidate }

func doValidate(req request) response {
	external := &appsv1.Deployment{}
	if err := json.Unmarshal(req.Object, external); err != nil {
		return fail("decode", err)
	}
	if external.Kind != "" && external.Kind != "Deployment" {
		return fail("decode", fmt.Errorf("kind %q: only Deployment for now", external.Kind))
	}
	if external.Namespace == "" {
		// the API server takes it from the request's path; kubectl sends the
		// context's namespace, "default" unless set
		external.Namespace = "default"
	}
	legacyscheme.Scheme.Default(external)
	defaulted, _ := json.Marshal(external)

	d := &apps.Deployment{}
	if err := legacyscheme.Scheme.Convert(external, d, nil); err != nil {
		return fail("convert", err)
	}
	// deploymentStrategy.PrepareForCreate
	d.Status = apps.DeploymentStatus{}
	d.Generation = 1
	pod.DropDisabledTemplateFields(&d.Spec.Template, nil)
	// deploymentStrategy.Validate
	opts := pod.GetValidationOptionsFromPodTemplate(&d.Spec.Template, nil)
	errs := appsvalidation.ValidateDeployment(d, opts)
	// deploymentStrategy.WarningsOnCreate
	warnings := []string{}
	if msgs := utilvalidation.IsDNS1123Label(d.Name); len(msgs) != 0 {
		warnings = append(warnings, fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs))
	}
	warnings = append(warnings, pod.GetWarningsForPodTemplate(context.Background(), field.NewPath("spec", "template"), &d.Spec.Template, nil)...)

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
