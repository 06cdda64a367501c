package main

// The admission op: what kube-apiserver's ValidatingAdmissionPolicy admission
// plugin answers to a CREATE of one object.
//
//	{"op":"admission","policies":[<VAP>...],"bindings":[<binding>...],"params":[<any object>...],
//	 "namespaces":[<v1 Namespace>...],"object":{...},"userInfo":{"username":"...","groups":[...]},
//	 "paramScopes":{"rules.example.com/v1, Kind=ReplicaLimit":"Namespaced"|"Cluster"},"trace":true}
//	  -> {"ok":true,"allowed":false,"message":"...","reason":"Invalid","code":422,
//	      "policy":"...","binding":"...","warnings":[...],"auditAnnotations":{...},
//	      "refused":[{"kind":"ValidatingAdmissionPolicyBinding","name":"b","errors":[{"field":...,"type":...,"detail":...}],"message":"..."}],
//	      "bindings":[{"policy":"p","binding":"b","outcome":"not-matched"|"passed"|"denied"|"configuration-error"|"ignored","messages":[...]}]}
//
// Upstream code, in the order the API server runs it:
//  1. the policies and bindings are created first: decoded by legacyscheme
//     (pkg/apis/admissionregistration/install: v1, v1beta1, v1alpha1),
//     defaulted (pkg/apis/admissionregistration/v1/defaults.go), converted to
//     the internal type and validated by
//     pkg/apis/admissionregistration/validation.ValidateValidatingAdmissionPolicy
//     / ValidateValidatingAdmissionPolicyBinding (what the registry's
//     strategy.Validate calls; its authorization check of paramKind/paramRef
//     is not run). A refused one never reaches the cluster: it is listed in
//     "refused" and left out.
//  2. the object is decoded and defaulted as the API server decodes a request
//     body (legacyscheme; a kind the scheme does not know stays unstructured,
//     as a custom resource), converted to the internal version; its namespace
//     is the request's (default "default"). A Namespace being created is
//     defaulted too (SetDefaults_Namespace puts kubernetes.io/metadata.name on it).
//  3. the plugin itself: k8s.io/apiserver/pkg/admission/plugin/policy/validating.NewPlugin,
//     initialised by admission/initializer.New over client-go's fake clientset
//     (policies, bindings, namespaces, built-in params) and a fake dynamic client
//     (every param, for kinds the informer factory does not serve), then
//     Plugin.Validate (generic.Plugin.Dispatch -> validating's dispatcher:
//     matching, generic.CollectParams, the Validator, failurePolicy,
//     validationActions, audit annotations). The namespaces an object refers to
//     and the input does not give exist with their defaults (kubectl create
//     namespace), as kaffinity assumes.
//  4. "trace" (per binding, for reports): the plugin's matcher
//     (generic.NewPolicyMatcher over matching.NewMatcher: DefinitionMatches,
//     BindingMatches) says what matched; what a matched binding does comes from
//     the real plugin run again with that policy and that binding alone, its
//     validationActions set to [Warn] (every failing validation becomes a
//     warning), and for a failurePolicy: Ignore policy once more with Fail (what
//     Ignore skipped).
//
// Not modelled: the registry's PrepareForCreate/BeforeCreate before validating
// admission (uid, creationTimestamp, generation, status cleared), mutating
// admission, other admission plugins, authorizer checks (allow-all), the
// equivalent resources of other groups (extensions/deployments): equivalents are
// the versions of the same group and resource in legacyscheme.

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"
	"unsafe"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	admissioninit "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/apiserver/pkg/warning"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	admissionvalidation "k8s.io/kubernetes/pkg/apis/admissionregistration/validation"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	_ "k8s.io/kubernetes/pkg/apis/node/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"
)

func init() { extraOps["admission"] = doAdmission }

type admissionRequest struct {
	Policies   []json.RawMessage `json:"policies"`
	Bindings   []json.RawMessage `json:"bindings"`
	Params     []json.RawMessage `json:"params"`
	Namespaces []json.RawMessage `json:"namespaces"`
	Object     json.RawMessage   `json:"object"`
	UserInfo   *struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"userInfo"`
	ParamScopes map[string]string `json:"paramScopes"`
	Trace       bool              `json:"trace"`
}

// clusterScoped: the built-in kinds whose registry strategy says
// NamespaceScoped() false (pkg/registry/*/*/strategy.go), for the REST mapper
// that resolves a policy's paramKind.
var clusterScoped = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "ComponentStatus": true,
	"PriorityClass": true, "StorageClass": true, "CSINode": true, "CSIDriver": true,
	"VolumeAttachment": true, "VolumeAttributesClass": true, "RuntimeClass": true,
	"ClusterRole": true, "ClusterRoleBinding": true, "IngressClass": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
	"MutatingAdmissionPolicy": true, "MutatingAdmissionPolicyBinding": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true,
	"CertificateSigningRequest": true, "ClusterTrustBundle": true, "FlowSchema": true,
	"PriorityLevelConfiguration": true, "DeviceClass": true, "ResourceSlice": true,
	"IPAddress": true, "ServiceCIDR": true, "CustomResourceDefinition": true, "APIService": true,
}

type warnings struct {
	sync.Mutex
	said []string
}

func (w *warnings) AddWarning(_, text string) {
	w.Lock()
	defer w.Unlock()
	w.said = append(w.said, text)
}

// world is what one plugin run sees: the cluster's objects and the request.
type world struct {
	policies   []*admissionregistrationv1.ValidatingAdmissionPolicy
	bindings   []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	namespaces []*corev1.Namespace
	typed      []runtime.Object // built-in params, for the informer factory
	dynamic    []runtime.Object // every param, unstructured
	listKinds  map[schema.GroupVersionResource]string
	mapper     *meta.DefaultRESTMapper
	attrs      func() admission.Attributes
	objects    admission.ObjectInterfaces
}

type verdict struct {
	err         error
	warnings    []string
	annotations map[string]string
}

// annotated records the audit annotations the dispatcher adds (its
// auditAnnotationCollector.publish: "<policy>/<key>", and the Audit action's
// validation_failure): admission.NewAttributesRecord keeps them where only the
// API server's audit handler (admission.WithAudit) reads them.
type annotated struct {
	admission.Attributes
	annotations map[string]string
}

func (a *annotated) AddAnnotation(key, value string) error {
	return a.AddAnnotationWithLevel(key, value, auditinternal.LevelMetadata)
}

func (a *annotated) AddAnnotationWithLevel(key, value string, level auditinternal.Level) error {
	if err := a.Attributes.AddAnnotationWithLevel(key, value, level); err != nil {
		return err
	}
	a.annotations[key] = value
	return nil
}

// run builds the plugin over fake clients holding the world and validates
// the request once (validating.NewPlugin + admission/initializer, as
// kube-apiserver's admission chain initialises it).
func (w *world) run() (verdict, admission.Attributes, *matching.Matcher, error) {
	objects := []runtime.Object{}
	for _, p := range w.policies {
		objects = append(objects, p.DeepCopy())
	}
	for _, b := range w.bindings {
		objects = append(objects, b.DeepCopy())
	}
	for _, n := range w.namespaces {
		objects = append(objects, n.DeepCopy())
	}
	for _, o := range w.typed {
		objects = append(objects, o.DeepCopyObject())
	}
	client := fake.NewSimpleClientset(objects...)
	dyn := []runtime.Object{}
	for _, o := range w.dynamic {
		dyn = append(dyn, o.DeepCopyObject())
	}
	dynamicClient := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), w.listKinds, dyn...)
	factory := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	plugin, err := validating.NewPlugin(nil)
	if err != nil {
		return verdict{}, nil, nil, err
	}
	admissioninit.New(client, dynamicClient, factory, authorizerfactory.NewAlwaysAllowAuthorizer(), featuregate.NewFeatureGate(),
		compatibility.DefaultBuildEffectiveVersion(), ctx.Done(), w.mapper).Initialize(plugin)
	plugin.SetRESTMapper(w.mapper)
	// The informers the plugin asks for, started and synced before it starts its
	// policy source (whose first sync check would otherwise wait 100 ms): only the
	// time a request takes changes, not the answer.
	namespaces := factory.Core().V1().Namespaces()
	synced := []func() bool{
		namespaces.Informer().HasSynced,
		factory.Admissionregistration().V1().ValidatingAdmissionPolicies().Informer().HasSynced,
		factory.Admissionregistration().V1().ValidatingAdmissionPolicyBindings().Informer().HasSynced,
	}
	for _, p := range w.policies {
		// a built-in param kind's informer, which the policy source takes from the
		// same factory (ensureParamsForPolicyLocked): synced now rather than polled
		if pk := p.Spec.ParamKind; pk != nil {
			gv, _ := schema.ParseGroupVersion(pk.APIVersion)
			if mapping, err := w.mapper.RESTMapping(gv.WithKind(pk.Kind).GroupKind(), gv.Version); err == nil {
				if informer, err := factory.ForResource(mapping.Resource); err == nil {
					synced = append(synced, informer.Informer().HasSynced)
				}
			}
		}
	}
	factory.Start(ctx.Done())
	for _, done := range synced {
		for !done() {
			time.Sleep(time.Millisecond)
		}
	}
	if err := plugin.ValidateInitialization(); err != nil {
		return verdict{}, nil, nil, err
	}
	// the source compiles the policies in its own goroutine at once; Validate's
	// WaitForReady would poll its ready function every 100 ms: poll it finer first
	if ready := readyFunc(plugin.Plugin.Handler); ready != nil {
		for start := time.Now(); !ready() && time.Since(start) < 5*time.Second; {
			time.Sleep(200 * time.Microsecond)
		}
	}

	recorder := &warnings{}
	attrs := &annotated{Attributes: w.attrs(), annotations: map[string]string{}}
	err = plugin.Validate(warning.WithWarningRecorder(ctx, recorder), attrs, w.objects)
	matcher := matching.NewMatcher(namespaces.Lister(), client)
	v := verdict{err: err, warnings: recorder.said, annotations: attrs.annotations}
	return v, attrs, matcher, nil
}

func doAdmission(req request) response {
	var in admissionRequest
	if err := json.Unmarshal(req.raw, &in); err != nil {
		return fail("request", err)
	}
	w := &world{listKinds: map[schema.GroupVersionResource]string{}}
	refused := []map[string]any{}

	// 1. the policies and bindings, as the API server would store them (or refuse them)
	for _, raw := range in.Policies {
		obj, errs, err := storedAdmission(raw, &admissionregistration.ValidatingAdmissionPolicy{})
		if err != nil {
			return fail("decode", err)
		}
		policy := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
		if len(errs) > 0 {
			refused = append(refused, refusal("ValidatingAdmissionPolicy", policy.Name, errs))
			continue
		}
		w.policies = append(w.policies, policy)
	}
	for _, raw := range in.Bindings {
		obj, errs, err := storedAdmission(raw, &admissionregistration.ValidatingAdmissionPolicyBinding{})
		if err != nil {
			return fail("decode", err)
		}
		binding := obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
		if len(errs) > 0 {
			refused = append(refused, refusal("ValidatingAdmissionPolicyBinding", binding.Name, errs))
			continue
		}
		w.bindings = append(w.bindings, binding)
	}

	// the REST mapper: client-go's built-in kinds, and the custom param kinds
	w.mapper = meta.NewDefaultRESTMapper(nil)
	for gvk := range clientscheme.Scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		scope := meta.RESTScopeNamespace
		if clusterScoped[gvk.Kind] {
			scope = meta.RESTScopeRoot
		}
		w.mapper.Add(gvk, scope)
	}

	// params: every one in the dynamic client; built-in ones in the typed client too
	scopes := map[schema.GroupVersionKind]string{}
	for key, scope := range in.ParamScopes {
		for _, p := range w.policies {
			if pk := p.Spec.ParamKind; pk != nil {
				gv, _ := schema.ParseGroupVersion(pk.APIVersion)
				if gvk := gv.WithKind(pk.Kind); gvk.String() == key {
					scopes[gvk] = scope
				}
			}
		}
	}
	for _, raw := range in.Params {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return fail("decode", err)
		}
		gvk := u.GroupVersionKind()
		gvr, _ := meta.UnsafeGuessKindToResource(gvk)
		w.listKinds[gvr] = gvk.Kind + "List"
		if clientscheme.Scheme.Recognizes(gvk) {
			typed, err := clientscheme.Scheme.New(gvk)
			if err != nil {
				return fail("decode", err)
			}
			if err := json.Unmarshal(raw, typed); err != nil {
				return fail("decode", err)
			}
			legacyscheme.Scheme.Default(typed) // stored as the API server stores it
			w.typed = append(w.typed, typed)
			content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
			if err != nil {
				return fail("decode", err)
			}
			u = &unstructured.Unstructured{Object: content}
			u.SetGroupVersionKind(gvk)
		} else if _, known := scopes[gvk]; !known {
			// a custom kind's scope is its CRD's: namespaced if a param of it has a namespace
			scopes[gvk] = "Cluster"
			if u.GetNamespace() != "" {
				scopes[gvk] = "Namespaced"
			}
		} else if u.GetNamespace() != "" {
			scopes[gvk] = "Namespaced"
		}
		w.dynamic = append(w.dynamic, u)
	}
	// a custom param kind whose params have no namespace: namespaced when a binding's paramRef
	// names a namespace (as kaffinity infers it: the CRD is not in the input); a custom kind
	// no param shows is not served (a configuration error upstream)
	for _, p := range w.policies {
		pk := p.Spec.ParamKind
		if pk == nil {
			continue
		}
		gv, _ := schema.ParseGroupVersion(pk.APIVersion)
		gvk := gv.WithKind(pk.Kind)
		if clientscheme.Scheme.Recognizes(gvk) {
			continue
		}
		if _, known := scopes[gvk]; !known {
			continue
		}
		for _, b := range w.bindings {
			if b.Spec.PolicyName == p.Name && b.Spec.ParamRef != nil && b.Spec.ParamRef.Namespace != "" {
				if _, given := in.ParamScopes[gvk.String()]; !given {
					scopes[gvk] = "Namespaced"
				}
			}
		}
	}
	for gvk, scope := range scopes {
		if clientscheme.Scheme.Recognizes(gvk) {
			continue
		}
		gvr, _ := meta.UnsafeGuessKindToResource(gvk)
		w.listKinds[gvr] = gvk.Kind + "List"
		if scope == "Cluster" {
			w.mapper.Add(gvk, meta.RESTScopeRoot)
		} else {
			w.mapper.Add(gvk, meta.RESTScopeNamespace)
		}
	}
	// a namespaced param written without a namespace is where `kubectl apply` creates it: in
	// the context's namespace, "default"
	for _, o := range append(append([]runtime.Object{}, w.typed...), w.dynamic...) {
		m, err := meta.Accessor(o)
		if err != nil || m.GetNamespace() != "" {
			continue
		}
		kind := o.GetObjectKind().GroupVersionKind()
		if typed, ok := o.(interface{ GetObjectKind() schema.ObjectKind }); ok && kind.Empty() {
			kinds, _, _ := clientscheme.Scheme.ObjectKinds(typed.(runtime.Object))
			if len(kinds) > 0 {
				kind = kinds[0]
			}
		}
		if mapping, err := w.mapper.RESTMapping(kind.GroupKind(), kind.Version); err == nil && mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			m.SetNamespace("default")
		}
	}

	// 2. the object, decoded and defaulted as a request body
	internal, external, gvk, err := requestObject(in.Object)
	if err != nil {
		return fail("decode", err)
	}
	accessor, err := meta.Accessor(external)
	if err != nil {
		return fail("decode", err)
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	namespace := accessor.GetNamespace()
	if clusterScoped[gvk.Kind] {
		namespace = ""
	} else if namespace == "" {
		namespace = "default"
	}
	if gvk.Kind == "Namespace" && gvk.Group == "" {
		// the request for a Namespace carries its own name as namespace (admission attributes
		// of a namespace create, pkg/endpoints/handlers/create.go: scope.Namer)
		namespace = accessor.GetName()
	}
	given := map[string]bool{}
	for _, raw := range in.Namespaces {
		ns := &corev1.Namespace{}
		if err := json.Unmarshal(raw, ns); err != nil {
			return fail("decode", err)
		}
		legacyscheme.Scheme.Default(ns)
		given[ns.Name] = true
		w.namespaces = append(w.namespaces, ns)
	}
	if namespace != "" && !given[namespace] && !(gvk.Kind == "Namespace" && gvk.Group == "") {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
		legacyscheme.Scheme.Default(ns)
		w.namespaces = append(w.namespaces, ns)
	}
	var who user.Info = &user.DefaultInfo{}
	if in.UserInfo != nil {
		who = &user.DefaultInfo{Name: in.UserInfo.Username, Groups: in.UserInfo.Groups}
	}
	name := accessor.GetName()
	w.attrs = func() admission.Attributes {
		return admission.NewAttributesRecord(internal.DeepCopyObject(), nil, gvk, namespace, name,
			gvr, "", admission.Create, &metav1.CreateOptions{}, false, who)
	}
	w.objects = objectInterfaces()

	// 3. the plugin
	v, attrs, matcher, err := w.run()
	if err != nil {
		return fail("plugin", err)
	}
	r := response{"ok": true, "allowed": v.err == nil, "refused": refused,
		"warnings": nonNil(v.warnings), "auditAnnotations": v.annotations}
	defaulted, _ := json.Marshal(external)
	r["object"] = json.RawMessage(defaulted)
	if v.err != nil {
		r["message"] = v.err.Error()
		if status, ok := v.err.(*apierrors.StatusError); ok {
			r["reason"] = string(status.ErrStatus.Reason)
			r["code"] = status.ErrStatus.Code
		}
		r["policy"], r["binding"] = denier(v.err.Error())
	}
	if in.Trace {
		r["bindings"] = w.trace(attrs, matcher)
	}
	return r
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// denier reads the policy and binding out of the dispatcher's message
// ("ValidatingAdmissionPolicy 'p' with binding 'b' denied request: ...").
func denier(message string) (string, string) {
	const head = "ValidatingAdmissionPolicy '"
	i := strings.Index(message, head)
	if i < 0 {
		return "", ""
	}
	rest := message[i+len(head):]
	policy, rest, _ := strings.Cut(rest, "'")
	if after, ok := strings.CutPrefix(rest, " with binding '"); ok {
		binding, _, _ := strings.Cut(after, "'")
		return policy, binding
	}
	return policy, ""
}

func refusal(kind, name string, errs field.ErrorList) map[string]any {
	out := []map[string]any{}
	for _, e := range errs {
		out = append(out, map[string]any{"type": string(e.Type), "field": e.Field, "detail": e.Detail})
	}
	return map[string]any{"kind": kind, "name": name, "errors": out, "message": errs.ToAggregate().Error()}
}

// storedAdmission decodes a policy or binding of any served version, defaults it,
// validates it as the registry does and gives it back as v1 (as the informer serves it).
func storedAdmission(raw json.RawMessage, internal runtime.Object) (runtime.Object, field.ErrorList, error) {
	decoded, _, err := legacyscheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	legacyscheme.Scheme.Default(decoded)
	if err := legacyscheme.Scheme.Convert(decoded, internal, nil); err != nil {
		return nil, nil, err
	}
	var errs field.ErrorList
	switch o := internal.(type) {
	case *admissionregistration.ValidatingAdmissionPolicy:
		errs = admissionvalidation.ValidateValidatingAdmissionPolicy(o)
	case *admissionregistration.ValidatingAdmissionPolicyBinding:
		errs = admissionvalidation.ValidateValidatingAdmissionPolicyBinding(o)
	}
	v1obj, err := legacyscheme.Scheme.ConvertToVersion(internal, admissionregistrationv1.SchemeGroupVersion)
	if err != nil {
		return nil, nil, err
	}
	return v1obj, errs, nil
}

// requestObject decodes the object as the API server decodes a CREATE's body:
// defaulted, then converted to the internal version (the admission attributes
// hold the internal object; the dispatcher converts it to the version matched).
func requestObject(raw json.RawMessage) (runtime.Object, runtime.Object, schema.GroupVersionKind, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, nil, schema.GroupVersionKind{}, err
	}
	gvk := u.GroupVersionKind()
	if !legacyscheme.Scheme.Recognizes(gvk) {
		return u, u, gvk, nil
	}
	external, _, err := legacyscheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	if err != nil {
		return nil, nil, gvk, err
	}
	legacyscheme.Scheme.Default(external)
	internal, err := legacyscheme.Scheme.ConvertToVersion(external, schema.GroupVersion{Group: gvk.Group, Version: runtime.APIVersionInternal})
	if err != nil {
		return nil, nil, gvk, err
	}
	return internal, external, gvk, nil
}

var (
	interfacesOnce sync.Once
	interfaces     admission.ObjectInterfaces
)

// objectInterfaces: legacyscheme, with an equivalent-resource registry holding
// every served version of each built-in resource (what the API server's REST
// storage installation registers), for matchPolicy: Equivalent.
func objectInterfaces() admission.ObjectInterfaces {
	interfacesOnce.Do(func() {
		registry := runtime.NewEquivalentResourceRegistry()
		known := legacyscheme.Scheme.AllKnownTypes()
		for gvk := range known {
			if gvk.Version == runtime.APIVersionInternal || strings.HasSuffix(gvk.Kind, "List") {
				continue
			}
			if _, listed := known[gvk.GroupVersion().WithKind(gvk.Kind+"List")]; !listed {
				continue
			}
			resource, _ := meta.UnsafeGuessKindToResource(gvk)
			registry.RegisterKindFor(resource, "", gvk)
		}
		s := legacyscheme.Scheme
		interfaces = &admission.RuntimeObjectInterfaces{ObjectCreater: s, ObjectTyper: s, ObjectDefaulter: s, ObjectConvertor: s, EquivalentResourceMapper: registry}
	})
	return interfaces
}

// readyFunc reads the ready function ValidateInitialization set on the plugin's
// admission.Handler (an unexported field): only to wait for it without
// WaitForReady's 100 ms steps.
func readyFunc(h *admission.Handler) admission.ReadyFunc {
	field := reflect.ValueOf(h).Elem().FieldByName("readyFunc")
	if !field.IsValid() {
		return nil
	}
	f, _ := reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem().Interface().(admission.ReadyFunc)
	return f
}

// trace says, per binding, what the plugin did with it.
func (w *world) trace(attrs admission.Attributes, m *matching.Matcher) []map[string]any {
	policyMatcher := generic.NewPolicyMatcher(m)
	type job struct {
		entry  map[string]any
		policy *admissionregistrationv1.ValidatingAdmissionPolicy
		bind   *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	}
	jobs := []job{}
	out := []map[string]any{}
	for _, p := range w.policies {
		matched, _, _, perr := policyMatcher.DefinitionMatches(attrs, w.objects, validating.NewValidatingAdmissionPolicyAccessor(p))
		for _, b := range w.bindings {
			if b.Spec.PolicyName != p.Name {
				continue
			}
			entry := map[string]any{"policy": p.Name, "binding": b.Name, "messages": []string{}}
			out = append(out, entry)
			if perr != nil {
				entry["outcome"], entry["messages"] = "configuration-error", []string{perr.Error()}
				continue
			}
			if !matched {
				entry["outcome"] = "not-matched"
				continue
			}
			bmatched, berr := policyMatcher.BindingMatches(attrs, w.objects, validating.NewValidatingAdmissionPolicyBindingAccessor(b))
			if berr != nil {
				entry["outcome"], entry["messages"] = "configuration-error", []string{berr.Error()}
				continue
			}
			if !bmatched {
				entry["outcome"] = "not-matched"
				continue
			}
			jobs = append(jobs, job{entry, p, b})
		}
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outcome, messages := w.alone(j.policy, j.bind, false)
			if outcome == "passed" && j.policy.Spec.FailurePolicy != nil && *j.policy.Spec.FailurePolicy == admissionregistrationv1.Ignore {
				if o, m := w.alone(j.policy, j.bind, true); o != "passed" {
					outcome, messages = "ignored", m
				}
			}
			j.entry["outcome"], j.entry["messages"] = outcome, messages
		}()
	}
	wg.Wait()
	return out
}

// alone runs the plugin with one policy and one binding (actions [Warn]).
func (w *world) alone(p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, fail bool) (string, []string) {
	policy := p.DeepCopy()
	if fail {
		f := admissionregistrationv1.Fail
		policy.Spec.FailurePolicy = &f
	}
	binding := b.DeepCopy()
	binding.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}
	one := *w
	one.policies = []*admissionregistrationv1.ValidatingAdmissionPolicy{policy}
	one.bindings = []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding}
	v, _, _, err := one.run()
	if err != nil {
		return "error", []string{err.Error()}
	}
	messages := []string{}
	prefix := fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': ", p.Name, b.Name)
	for _, said := range v.warnings {
		messages = append(messages, strings.TrimPrefix(said, prefix))
	}
	if v.err != nil {
		message := v.err.Error()
		if _, after, found := strings.Cut(message, "denied request: "); found {
			message = after
		}
		messages = append(messages, message)
		if strings.HasPrefix(message, "failed to configure") {
			return "configuration-error", messages
		}
		return "denied", messages
	}
	if len(messages) > 0 {
		return "denied", messages
	}
	return "passed", messages
}
