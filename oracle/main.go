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
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
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
	r["result"] = celJSON(out)
	if tagged, ok := r["result"].(map[string]any); ok && len(tagged) == 1 {
		if _, isMap := out.(traits.Mapper); !isMap {
			r["result_text"] = valueText(out) // durations, timestamps, types, opaque values
		}
	}
	return r
}

// celJSON is a CEL value as exact JSON: bool, string, null, lists and maps as
// themselves (map keys as their text), int and uint as integers, doubles as
// numbers with a fraction or exponent (or "NaN", "Infinity", "-Infinity");
// values JSON has no form for as one-key objects: {"@bytes": base64},
// {"@duration": "3600s"}, {"@timestamp": RFC 3339}, {"@type": name},
// {"@optional": []} or {"@optional": [value]}, and any other type (Kubernetes'
// opaque ones) {"@<type name>": its text, e.g. "@kubernetes.Quantity": "1k"}.
func celJSON(v ref.Val) any {
	switch t := v.(type) {
	case types.Bool:
		return bool(t)
	case types.Int:
		return json.Number(strconv.FormatInt(int64(t), 10))
	case types.Uint:
		return json.Number(strconv.FormatUint(uint64(t), 10))
	case types.Double:
		f := float64(t)
		switch {
		case math.IsNaN(f):
			return "NaN"
		case math.IsInf(f, 1):
			return "Infinity"
		case math.IsInf(f, -1):
			return "-Infinity"
		}
		text := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(text, ".eEn") {
			text += ".0"
		}
		return json.Number(text)
	case types.String:
		return string(t)
	case types.Bytes:
		return map[string]any{"@bytes": base64.StdEncoding.EncodeToString([]byte(t))}
	case types.Null:
		return nil
	case types.Duration, types.Timestamp:
		name := "@duration"
		if _, ok := t.(types.Timestamp); ok {
			name = "@timestamp"
		}
		return map[string]any{name: string(t.ConvertToType(types.StringType).(types.String))}
	case *types.Optional:
		if !t.HasValue() {
			return map[string]any{"@optional": []any{}}
		}
		return map[string]any{"@optional": []any{celJSON(t.GetValue())}}
	case ref.Type:
		return map[string]any{"@type": t.TypeName()}
	}
	if list, ok := v.(traits.Lister); ok {
		items := []any{}
		for it := list.Iterator(); it.HasNext() == types.True; {
			items = append(items, celJSON(it.Next()))
		}
		return items
	}
	if m, ok := v.(traits.Mapper); ok {
		items := map[string]any{}
		for it := m.Iterator(); it.HasNext() == types.True; {
			key := it.Next()
			items[fmt.Sprint(key.Value())] = celJSON(m.Get(key))
		}
		return items
	}
	return map[string]any{"@" + v.Type().(ref.Type).TypeName(): valueText(v)}
}

// valueText is a value's text (fmt.Sprint of its Go value; a type's name).
func valueText(v ref.Val) string {
	if t, ok := v.(ref.Type); ok {
		return t.TypeName()
	}
	if s, ok := v.Value().(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprint(v.Value())
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
