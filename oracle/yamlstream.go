package main

// The yamlstream op: the documents kubectl reads from a file and sends, one
// JSON object each.
//
//	{"op":"yamlstream","yaml":"a: 1\n---\nb: 2\n"}
//	  -> {"ok":true,"documents":[{"a":1},{"b":2}]}
//	  -> {"ok":false,"documents":[<those before the error>],"error":"..."}
//
// k8s.io/cli-runtime/pkg/resource (StreamVisitor.Visit) reads a file with
// k8s.io/apimachinery/pkg/util/yaml.NewYAMLOrJSONDecoder(r, 4096): a stream
// that looks like JSON is read as JSON objects, otherwise YAMLReader splits
// it at lines starting with "---" (anything but a comment after it is an
// error) and each part goes through sigs.k8s.io/yaml (YAMLToJSON of its
// first document) into a runtime.RawExtension; empty and null documents are
// skipped. The same calls here (cli-runtime itself is not imported: its
// visitor then validates and maps kinds through a discovery client).

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

func init() { extraOps["yamlstream"] = doYAMLStream }

func doYAMLStream(req request) response {
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(req.YAML), 4096)
	docs := []json.RawMessage{}
	for {
		ext := runtime.RawExtension{}
		if err := d.Decode(&ext); err != nil {
			if errors.Is(err, io.EOF) {
				return response{"ok": true, "documents": docs}
			}
			return response{"ok": false, "documents": docs, "error": err.Error()}
		}
		raw := bytes.TrimSpace(ext.Raw)
		if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
			continue
		}
		docs = append(docs, json.RawMessage(raw))
	}
}
