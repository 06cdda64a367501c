// Command oracle answers kaffinity's differential tests with upstream
// Kubernetes code, over JSON lines: one request object per stdin line, one
// response object per stdout line, in order.
//
// Ops (see README.md):
//
//	{"op":"yaml","yaml":"..."}                       -> {"ok":true,"json":<value>} | {"ok":false,"error":"..."}
//	{"op":"cel","expr":"...","object":{...},"version":"1.37","env":"stored"|"new"}
//	                                                 -> {"ok":true,"result":<value>,"type":"...","cost":N} | {"ok":false,"stage":"compile"|"eval","error":"..."}
//	{"op":"validate", ...}                           -> see validate.go
//
// Upstream packages used:
//   - sigs.k8s.io/yaml (YAMLToJSON: what kubectl does to a manifest before sending it)
//   - k8s.io/apiserver/pkg/cel/environment (MustBaseEnvSet: the base CEL
//     environment, libraries and cost limits of kube-apiserver at a version)
//   - github.com/google/cel-go/cel (compile, program, eval, cost tracking)
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"
)

type request struct {
	Op      string          `json:"op"`
	YAML    string          `json:"yaml,omitempty"`
	Expr    string          `json:"expr,omitempty"`
	Object  json.RawMessage `json:"object,omitempty"`
	Version string          `json:"version,omitempty"` // "1.37" (default)
	Env     string          `json:"env,omitempty"`     // "stored" (default) or "new"
	raw     []byte          // the whole request line, for ops with their own fields (schedule)
}

type response map[string]any

func fail(stage string, err error) response {
	r := response{"ok": false, "error": err.Error()}
	if stage != "" {
		r["stage"] = stage
	}
	return r
}

func doYAML(req request) response {
	j, err := yaml.YAMLToJSON([]byte(req.YAML))
	if err != nil {
		return fail("", err)
	}
	return response{"ok": true, "json": json.RawMessage(j)}
}

// celEnv builds the base environment at the version asked, extended with
// `object` bound as dyn (how a ValidatingAdmissionPolicy without type
// checking sees it). environment.StoredExpressions has every library of
// every known version (what the API server runs stored expressions with);
// environment.NewExpressions has only those introduced at or before the
// version (what it admits in a new or changed object).
func celEnv(req request) (*cel.Env, error) {
	v := req.Version
	if v == "" {
		v = "1.37"
	}
	ver, err := version.ParseMajorMinor(v)
	if err != nil {
		return nil, err
	}
	set, err := environment.MustBaseEnvSet(ver).Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions:        []cel.EnvOption{cel.Variable("object", cel.DynType)},
	})
	if err != nil {
		return nil, err
	}
	typ := environment.StoredExpressions
	if req.Env == "new" {
		typ = environment.NewExpressions
	}
	return set.Env(typ)
}

func doCEL(req request) response {
	env, err := celEnv(req)
	if err != nil {
		return fail("env", err)
	}
	ast, iss := env.Compile(req.Expr)
	if iss.Err() != nil {
		return fail("compile", iss.Err())
	}
	prg, err := env.Program(ast, cel.EvalOptions(cel.OptTrackCost))
	if err != nil {
		return fail("program", err)
	}
	var obj any
	if len(req.Object) > 0 {
		// as the API server decodes an object (k8s.io/apimachinery/pkg/util/json):
		// integers become int64 (CEL int), other numbers float64 (CEL double)
		if err := utiljson.Unmarshal(req.Object, &obj); err != nil {
			return fail("input", err)
		}
	}
	out, det, err := prg.Eval(map[string]any{"object": obj})
	r := response{}
	if det != nil && det.ActualCost() != nil {
		r["cost"] = *det.ActualCost()
	}
	if err != nil {
		r["ok"], r["stage"], r["error"] = false, "eval", err.Error()
		return r
	}
	r["ok"], r["type"] = true, out.Type().(ref.Type).TypeName()
	if opt, isOpt := out.(*types.Optional); isOpt {
		// optional.none() -> "hasValue": false; optional.of(x) -> the result is x
		r["hasValue"] = opt.HasValue()
		if !opt.HasValue() {
			return r
		}
		out = opt.GetValue()
	}
	if j, err := celToJSON(out); err == nil {
		r["result"] = j
	} else {
		r["result_text"] = fmt.Sprint(out.Value()) // durations, timestamps, optionals, ...
	}
	return r
}

func celToJSON(v ref.Val) (json.RawMessage, error) {
	nv, err := v.ConvertToNative(reflect.TypeOf(&structpb.Value{}))
	if err != nil {
		return nil, err
	}
	b, err := protojson.Marshal(nv.(*structpb.Value))
	return json.RawMessage(b), err
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req request
		var resp response
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			resp = fail("request", err)
		} else {
			req.raw = append([]byte(nil), in.Bytes()...)
			resp = handle(req)
		}
		if err := out.Encode(resp); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func handle(req request) (resp response) {
	defer func() {
		if p := recover(); p != nil {
			if os.Getenv("ORACLE_DEBUG") != "" {
				panic(p)
			}
			resp = fail("panic", fmt.Errorf("%v", p))
		}
	}()
	switch req.Op {
	case "yaml":
		return doYAML(req)
	case "cel":
		return doCEL(req)
	default:
		if h, ok := extraOps[req.Op]; ok {
			return h(req)
		}
		return fail("request", fmt.Errorf("unknown op %q", req.Op))
	}
}

// extraOps is filled by optional files (validate.go).
var extraOps = map[string]func(request) response{}
