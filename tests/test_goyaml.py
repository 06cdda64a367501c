"""YAML as Kubernetes reads it: go-yaml v2's decoder tables, sigs.k8s.io/yaml's, and go-yaml's
edge cases, read by kaffinity's loader (kaffinity.load.parse).

kubectl and kube-apiserver read a YAML document with sigs.k8s.io/yaml: go-yaml v2 decodes it
into Go values (``map[interface{}]interface{}``), which are converted to JSON. Each case is the
YAML and what that gives:

- ``VALUE``: the JSON of ``yaml.YAMLToJSON`` (the first document), which kaffinity's value must
  equal (booleans as booleans, numbers by value);
- ``DUPLICATE``: likewise, and a key given twice in one mapping, which kaffinity reports as a
  ``parse-error`` (``YAMLToJSONStrict`` refuses it; docs/rules.md#parse-error);
- ``REFUSED``: sigs.k8s.io/yaml fails (a syntax error, a null key, NaN or infinity, bad
  base64, an unknown anchor, ...): kubectl refuses the document, and kaffinity reports a
  ``parse-error``.

Sources, with the line of each case in its table:

- ``GO_YAML_V2``: the ``data`` of ``unmarshalTests``, ``decoderTests``, ``unmarshalErrorTests``,
  ``unmarshalStrictTests`` and ``mergeTests`` of decode_test.go in gopkg.in/yaml.v2 v2.4.0
  (go.sum ``h1:D8xgwECY7CYvx+Y2n4sBz93Jn9JRvxdiyyo8CTfuKaY=``; the tag v2.4.0 of
  github.com/go-yaml/yaml), whose documents are mappings (what kubectl reads: a scalar, a
  sequence or an empty document is no object), each input once (the table decodes some into
  several Go types). The Go values there are typed (structs, ``map[string]int``...); the
  expected JSON here is what sigs.k8s.io/yaml makes of the same input.
- ``SIGS_K8S_YAML``: ``TestYAMLToJSON`` and ``TestYAMLToJSONStrictFails`` of yaml_test.go in
  sigs.k8s.io/yaml v1.6.0 (go.sum ``h1:G8fkbMSAFqgEFgh4b1wmtzDnioxFCUgTZhlbj5P9QYs=``), which
  kubectl 1.34 vendors; it decodes with go.yaml.in/yaml/v2 v2.4.2, gopkg.in/yaml.v2 v2.4.0's
  code under a new import path.
- ``EDGES``: kaffinity's own cases of what libyaml (ruamel.yaml.clib, kaffinity's parser) and
  go-yaml read differently or what sigs.k8s.io/yaml's conversion decides: a `:` inside a plain
  scalar of a flow collection, anchors defined again, merge keys in document order, number
  ranges, float and null keys.

Every expected value was computed by sigs.k8s.io/yaml v1.6.0 itself (a Go program outside the
repository, ``YAMLToJSON`` and ``YAMLToJSONStrict`` on each input, Go 1.26), not by hand; the
cases of decode_test.go were extracted from its syntax tree (go/ast), so none was retyped.
Left out: the cases of custom unmarshalers and struct tags (their YAML is also in
``unmarshalTests`` when it is YAML kubectl could read).
"""

# ruff: noqa: E501 - the tables hold the upstream inputs and outputs as they are

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kaffinity.load.parse import decode, parse, parse_data
from kaffinity.load.parse.reader import documents_data
from kaffinity.load.source import locate
from tests.kit import check, keys, lint_text, position, run

VALUE, DUPLICATE, REFUSED = "value", "duplicate", "refused"

GO_YAML_V2 = [
    ("unmarshalTests:25", "{}", VALUE, "{}"),
    ("unmarshalTests:27", "v: hi", VALUE, '{"v":"hi"}'),
    ("unmarshalTests:32", "v: true", VALUE, '{"v":true}'),
    ("unmarshalTests:38", "v: 10", VALUE, '{"v":10}'),
    ("unmarshalTests:41", "v: 0b10", VALUE, '{"v":2}'),
    ("unmarshalTests:44", "v: 0xA", VALUE, '{"v":10}'),
    ("unmarshalTests:47", "v: 4294967296", VALUE, '{"v":4294967296}'),
    ("unmarshalTests:50", "v: 0.1", VALUE, '{"v":0.1}'),
    ("unmarshalTests:53", "v: .1", VALUE, '{"v":0.1}'),
    ("unmarshalTests:56", "v: .Inf", REFUSED, None),
    ("unmarshalTests:59", "v: -.Inf", REFUSED, None),
    ("unmarshalTests:62", "v: -10", VALUE, '{"v":-10}'),
    ("unmarshalTests:65", "v: -.1", VALUE, '{"v":-0.1}'),
    ("unmarshalTests:77", "canonical: 6.8523e+5", VALUE, '{"canonical":685230}'),
    ("unmarshalTests:80", "expo: 685.230_15e+03", VALUE, '{"expo":685230.15}'),
    ("unmarshalTests:83", "fixed: 685_230.15", VALUE, '{"fixed":685230.15}'),
    ("unmarshalTests:86", "neginf: -.inf", REFUSED, None),
    ("unmarshalTests:97", "canonical: y", VALUE, '{"canonical":true}'),
    ("unmarshalTests:100", "answer: NO", VALUE, '{"answer":false}'),
    ("unmarshalTests:103", "logical: True", VALUE, '{"logical":true}'),
    ("unmarshalTests:106", "option: on", VALUE, '{"option":true}'),
    ("unmarshalTests:114", "canonical: 685230", VALUE, '{"canonical":685230}'),
    ("unmarshalTests:117", "decimal: +685_230", VALUE, '{"decimal":685230}'),
    ("unmarshalTests:120", "octal: 02472256", VALUE, '{"octal":685230}'),
    ("unmarshalTests:123", "hexa: 0x_0A_74_AE", VALUE, '{"hexa":685230}'),
    ("unmarshalTests:126", "bin: 0b1010_0111_0100_1010_1110", VALUE, '{"bin":685230}'),
    ("unmarshalTests:129", "bin: -0b101010", VALUE, '{"bin":-42}'),
    (
        "unmarshalTests:132",
        "bin: -0b1000000000000000000000000000000000000000000000000000000000000000",
        VALUE,
        '{"bin":-9223372036854775808}',
    ),
    ("unmarshalTests:143", "empty:", VALUE, '{"empty":null}'),
    ("unmarshalTests:146", "canonical: ~", VALUE, '{"canonical":null}'),
    ("unmarshalTests:149", "english: null", VALUE, '{"english":null}'),
    ("unmarshalTests:152", "~: null key", REFUSED, None),
    ("unmarshalTests:161", "seq: [A,B]", VALUE, '{"seq":["A","B"]}'),
    ("unmarshalTests:164", "seq: [A,B,C,]", VALUE, '{"seq":["A","B","C"]}'),
    ("unmarshalTests:167", "seq: [A,1,C]", VALUE, '{"seq":["A",1,"C"]}'),
    ("unmarshalTests:178", "seq:\n - A\n - B", VALUE, '{"seq":["A","B"]}'),
    ("unmarshalTests:181", "seq:\n - A\n - B\n - C", VALUE, '{"seq":["A","B","C"]}'),
    ("unmarshalTests:184", "seq:\n - A\n - 1\n - C", VALUE, '{"seq":["A",1,"C"]}'),
    (
        "unmarshalTests:196",
        "scalar: | # Comment\n\n literal\n\n \ttext\n\n",
        VALUE,
        '{"scalar":"\\nliteral\\n\\n\\ttext\\n"}',
    ),
    (
        "unmarshalTests:202",
        "scalar: > # Comment\n\n folded\n line\n \n next\n line\n  * one\n  * two\n\n last\n line\n\n",
        VALUE,
        '{"scalar":"\\nfolded line\\nnext line\\n * one\\n * two\\n\\nlast line\\n"}',
    ),
    ("unmarshalTests:208", "a: {b: c}", VALUE, '{"a":{"b":"c"}}'),
    ("unmarshalTests:214", "hello: world", VALUE, '{"hello":"world"}'),
    ("unmarshalTests:229", "a:", VALUE, '{"a":null}'),
    ("unmarshalTests:232", "a: 1", VALUE, '{"a":1}'),
    ("unmarshalTests:238", "a: 1.0", VALUE, '{"a":1}'),
    ("unmarshalTests:244", "a: [1, 2]", VALUE, '{"a":[1,2]}'),
    ("unmarshalTests:258", "a: y", VALUE, '{"a":true}'),
    ("unmarshalTests:264", "v: 42", VALUE, '{"v":42}'),
    ("unmarshalTests:267", "v: -42", VALUE, '{"v":-42}'),
    ("unmarshalTests:273", "v: -4294967296", VALUE, '{"v":-4294967296}'),
    ("unmarshalTests:279", "int_max: 2147483647", VALUE, '{"int_max":2147483647}'),
    ("unmarshalTests:283", "int_min: -2147483648", VALUE, '{"int_min":-2147483648}'),
    (
        "unmarshalTests:287",
        "int_overflow: 9223372036854775808",
        VALUE,
        '{"int_overflow":9223372036854775808}',
    ),
    ("unmarshalTests:293", "int64_max: 9223372036854775807", VALUE, '{"int64_max":9223372036854775807}'),
    (
        "unmarshalTests:297",
        "int64_max_base2: 0b111111111111111111111111111111111111111111111111111111111111111",
        VALUE,
        '{"int64_max_base2":9223372036854775807}',
    ),
    ("unmarshalTests:301", "int64_min: -9223372036854775808", VALUE, '{"int64_min":-9223372036854775808}'),
    (
        "unmarshalTests:305",
        "int64_neg_base2: -0b111111111111111111111111111111111111111111111111111111111111111",
        VALUE,
        '{"int64_neg_base2":-9223372036854775807}',
    ),
    (
        "unmarshalTests:309",
        "int64_overflow: 9223372036854775808",
        VALUE,
        '{"int64_overflow":9223372036854775808}',
    ),
    ("unmarshalTests:315", "uint_min: 0", VALUE, '{"uint_min":0}'),
    ("unmarshalTests:319", "uint_max: 4294967295", VALUE, '{"uint_max":4294967295}'),
    ("unmarshalTests:323", "uint_underflow: -1", VALUE, '{"uint_underflow":-1}'),
    ("unmarshalTests:329", "uint64_min: 0", VALUE, '{"uint64_min":0}'),
    ("unmarshalTests:333", "uint64_max: 18446744073709551615", VALUE, '{"uint64_max":18446744073709551615}'),
    (
        "unmarshalTests:337",
        "uint64_max_base2: 0b1111111111111111111111111111111111111111111111111111111111111111",
        VALUE,
        '{"uint64_max_base2":18446744073709551615}',
    ),
    (
        "unmarshalTests:341",
        "uint64_maxint64: 9223372036854775807",
        VALUE,
        '{"uint64_maxint64":9223372036854775807}',
    ),
    ("unmarshalTests:345", "uint64_underflow: -1", VALUE, '{"uint64_underflow":-1}'),
    (
        "unmarshalTests:351",
        "float32_max: 3.40282346638528859811704183484516925440e+38",
        VALUE,
        '{"float32_max":3.4028234663852886e+38}',
    ),
    (
        "unmarshalTests:355",
        "float32_nonzero: 1.401298464324817070923729583289916131280e-45",
        VALUE,
        '{"float32_nonzero":1.401298464324817e-45}',
    ),
    (
        "unmarshalTests:359",
        "float32_maxuint64: 18446744073709551615",
        VALUE,
        '{"float32_maxuint64":18446744073709551615}',
    ),
    (
        "unmarshalTests:363",
        "float32_maxuint64+1: 18446744073709551616",
        VALUE,
        '{"float32_maxuint64+1":18446744073709552000}',
    ),
    (
        "unmarshalTests:369",
        "float64_max: 1.797693134862315708145274237317043567981e+308",
        VALUE,
        '{"float64_max":1.7976931348623157e+308}',
    ),
    (
        "unmarshalTests:373",
        "float64_nonzero: 4.940656458412465441765687928682213723651e-324",
        VALUE,
        '{"float64_nonzero":5e-324}',
    ),
    (
        "unmarshalTests:377",
        "float64_maxuint64: 18446744073709551615",
        VALUE,
        '{"float64_maxuint64":18446744073709551615}',
    ),
    (
        "unmarshalTests:381",
        "float64_maxuint64+1: 18446744073709551616",
        VALUE,
        '{"float64_maxuint64+1":18446744073709552000}',
    ),
    ("unmarshalTests:387", "v: 4294967297", VALUE, '{"v":4294967297}'),
    ("unmarshalTests:390", "v: 128", VALUE, '{"v":128}'),
    ("unmarshalTests:396", "'1': '\"2\"'", VALUE, '{"1":"\\"2\\""}'),
    ("unmarshalTests:399", "v:\n- A\n- 'B\n\n  C'\n", VALUE, '{"v":["A","B\\nC"]}'),
    ("unmarshalTests:405", "v: !!float '1.1'", VALUE, '{"v":1.1}'),
    ("unmarshalTests:408", "v: !!float 0", VALUE, '{"v":0}'),
    ("unmarshalTests:411", "v: !!float -1", VALUE, '{"v":-1}'),
    ("unmarshalTests:414", "v: !!null ''", VALUE, '{"v":null}'),
    # YAMLToJSON reads it as {"v":1}, but kubectl splits the stream first and the %TAG line
    # is a part of its own, which go-yaml refuses (the oracle's yamlstream op; issue 35).
    ("unmarshalTests:417", "%TAG !y! tag:yaml.org,2002:\n---\nv: !y!int '1'", REFUSED, None),
    ("unmarshalTests:423", "v: ! test", VALUE, '{"v":"test"}'),
    ("unmarshalTests:429", "a: &x 1\nb: &y 2\nc: *x\nd: *y\n", VALUE, '{"a":1,"b":2,"c":1,"d":2}'),
    ("unmarshalTests:432", "a: &a {c: 1}\nb: *a", VALUE, '{"a":{"c":1},"b":{"c":1}}'),
    ("unmarshalTests:439", "a: &a [1, 2]\nb: *a", VALUE, '{"a":[1,2],"b":[1,2]}'),
    ("unmarshalTests:445", "foo: ''", VALUE, '{"foo":""}'),
    ("unmarshalTests:448", "foo: null", VALUE, '{"foo":null}'),
    ("unmarshalTests:460", "foo: ~", VALUE, '{"foo":null}'),
    ("unmarshalTests:472", "a: 1\nb: 2\n", VALUE, '{"a":1,"b":2}'),
    ("unmarshalTests:496", "a: 1\nb: 2\nc: 3\n", VALUE, '{"a":1,"b":2,"c":3}'),
    ("unmarshalTests:514", "a: -b_c", VALUE, '{"a":"-b_c"}'),
    ("unmarshalTests:518", "a: +b_c", VALUE, '{"a":"+b_c"}'),
    ("unmarshalTests:522", "a: 50cent_of_dollar", VALUE, '{"a":"50cent_of_dollar"}'),
    (
        "unmarshalTests:528",
        "a: {b: https://github.com/go-yaml/yaml}",
        VALUE,
        '{"a":{"b":"https://github.com/go-yaml/yaml"}}',
    ),
    (
        "unmarshalTests:534",
        "a: [https://github.com/go-yaml/yaml]",
        VALUE,
        '{"a":["https://github.com/go-yaml/yaml"]}',
    ),
    ("unmarshalTests:540", "a: 3s", VALUE, '{"a":"3s"}'),
    ("unmarshalTests:546", "a: <foo>", VALUE, '{"a":"\\u003cfoo\\u003e"}'),
    ("unmarshalTests:552", "a: 1:1\n", VALUE, '{"a":"1:1"}'),
    ("unmarshalTests:558", "a: !!binary gIGC\n", VALUE, '{"a":"\\ufffd\\ufffd\\ufffd"}'),
    (
        "unmarshalTests:570",
        "{b: 2, a: 1, d: 4, c: 3, sub: {e: 5}}",
        VALUE,
        '{"a":1,"b":2,"c":3,"d":4,"sub":{"e":5}}',
    ),
    ("unmarshalTests:576", "a:\n b:\n  c: d\n", VALUE, '{"a":{"b":{"c":"d"}}}'),
    ("unmarshalTests:588", "a: 1.2.3.4\n", VALUE, '{"a":"1.2.3.4"}'),
    ("unmarshalTests:592", "a: 2015-02-24T18:19:39Z\n", VALUE, '{"a":"2015-02-24T18:19:39Z"}'),
    ("unmarshalTests:598", "a: 2015-01-01\n", VALUE, '{"a":"2015-01-01"}'),
    ("unmarshalTests:603", "a: 2015-02-24T18:19:39.12Z\n", VALUE, '{"a":"2015-02-24T18:19:39.12Z"}'),
    ("unmarshalTests:608", "a: 2015-2-3T3:4:5Z", VALUE, '{"a":"2015-2-3T3:4:5Z"}'),
    ("unmarshalTests:613", "a: 2015-02-24t18:19:39Z\n", VALUE, '{"a":"2015-02-24t18:19:39Z"}'),
    ("unmarshalTests:618", "a: 2015-02-24 18:19:39\n", VALUE, '{"a":"2015-02-24 18:19:39"}'),
    ("unmarshalTests:635", "a: !!str 2015-01-01", VALUE, '{"a":"2015-01-01"}'),
    ("unmarshalTests:640", 'a: !!timestamp "2015-01-01"', VALUE, '{"a":"2015-01-01"}'),
    ("unmarshalTests:645", "a: !!timestamp 2015-01-01", VALUE, '{"a":"2015-01-01"}'),
    ("unmarshalTests:650", 'a: "2015-01-01"', VALUE, '{"a":"2015-01-01"}'),
    ("unmarshalTests:660", "a: 2015-01-01", VALUE, '{"a":"2015-01-01"}'),
    ("unmarshalTests:667", "a: []", VALUE, '{"a":[]}'),
    (
        "unmarshalTests:673",
        b"\xff\xfe\xf1\x00o\x00\xf1\x00o\x00:\x00 \x00v\x00e\x00r\x00y\x00 \x00y\x00e\x00s\x00\n\x00",
        VALUE,
        '{"ñoño":"very yes"}',
    ),
    (
        "unmarshalTests:678",
        b"\xff\xfe\xf1\x00o\x00\xf1\x00o\x00:\x00 \x00v\x00e\x00r\x00y\x00 \x00y\x00e\x00s\x00 \x00=\xd8\xd4\xdf\n\x00",
        VALUE,
        '{"ñoño":"very yes 🟔"}',
    ),
    (
        "unmarshalTests:684",
        b"\xfe\xff\x00\xf1\x00o\x00\xf1\x00o\x00:\x00 \x00v\x00e\x00r\x00y\x00 \x00y\x00e\x00s\x00\n",
        VALUE,
        '{"ñoño":"very yes"}',
    ),
    (
        "unmarshalTests:689",
        b"\xfe\xff\x00\xf1\x00o\x00\xf1\x00o\x00:\x00 \x00v\x00e\x00r\x00y\x00 \x00y\x00e\x00s\x00 \xd8=\xdf\xd4\x00\n",
        VALUE,
        '{"ñoño":"very yes 🟔"}',
    ),
    ("unmarshalTests:695", "a: 123456e1\n", VALUE, '{"a":1234560}'),
    ("unmarshalTests:698", "a: 123456E1\n", VALUE, '{"a":1234560}'),
    (
        "unmarshalTests:703",
        "First occurrence: &anchor Foo\nSecond occurrence: *anchor\nOverride anchor: &anchor Bar\nReuse anchor: *anchor\n",
        VALUE,
        '{"First occurrence":"Foo","Override anchor":"Bar","Reuse anchor":"Bar","Second occurrence":"Foo"}',
    ),
    ("unmarshalTests:717", "a: 5\n", VALUE, '{"a":5}'),
    ("unmarshalTests:721", "a: 5.5\n", VALUE, '{"a":5.5}'),
    ("unmarshalTests:725", "\na:\n  b\nb:\n  ? a\n  : a", VALUE, '{"a":"b","b":{"a":"a"}}'),
    ("decoderTests:800", "a: b", VALUE, '{"a":"b"}'),
    ("decoderTests:805", "---\na: b\n...\n", VALUE, '{"a":"b"}'),
    ("unmarshalErrorTests:857", "v: !!float 'error'", REFUSED, None),
    ("unmarshalErrorTests:858", "v: [A,", REFUSED, None),
    ("unmarshalErrorTests:859", "v:\n- [A,", REFUSED, None),
    ("unmarshalErrorTests:860", "a:\n- b: *,", REFUSED, None),
    ("unmarshalErrorTests:861", "a: *b\n", REFUSED, None),
    ("unmarshalErrorTests:862", "a: &a\n  b: *a\n", REFUSED, None),
    ("unmarshalErrorTests:863", "a: &x null\n<<:\n- *x\nb: &x {}\n", REFUSED, None),
    ("unmarshalErrorTests:864", "value: -", REFUSED, None),
    ("unmarshalErrorTests:865", "a: !!binary ==", REFUSED, None),
    ("unmarshalErrorTests:866", "{[.]}", REFUSED, None),
    ("unmarshalErrorTests:867", "{{.}}", REFUSED, None),
    ("unmarshalErrorTests:868", "b: *a\na: &a {c: 1}", REFUSED, None),
    ("unmarshalErrorTests:869", "%TAG !%79! tag:yaml.org,2002:\n---\nv: !%79!int '1'", REFUSED, None),
    ("unmarshalErrorTests:870", "a:\n  1:\nb\n  2:", REFUSED, None),
    (
        "unmarshalErrorTests:871",
        "a: &a [00,00,00,00,00,00,00,00,00]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\ni: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n",
        REFUSED,
        None,
    ),
    (
        "mergeTests:1096",
        '\nanchors:\n  list:\n    - &CENTER { "x": 1, "y": 2 }\n    - &LEFT   { "x": 0, "y": 2 }\n    - &BIG    { "r": 10 }\n    - &SMALL  { "r": 1 }\n\n# All the following maps are equal:\n\nplain:\n  # Explicit keys\n  "x": 1\n  "y": 2\n  "r": 10\n  label: center/big\n\nmergeOne:\n  # Merge one map\n  << : *CENTER\n  "r": 10\n  label: center/big\n\nmergeMultiple:\n  # Merge multiple maps\n  << : [ *CENTER, *BIG ]\n  label: center/big\n\noverride:\n  # Override\n  << : [ *BIG, *LEFT, *SMALL ]\n  "x": 1\n  label: center/big\n\nshortTag:\n  # Explicit short merge tag\n  !!merge "<<" : [ *CENTER, *BIG ]\n  label: center/big\n\nlongTag:\n  # Explicit merge long tag\n  !<tag:yaml.org,2002:merge> "<<" : [ *CENTER, *BIG ]\n  label: center/big\n\ninlineMap:\n  # Inlined map \n  << : {"x": 1, "y": 2, "r": 10}\n  label: center/big\n\ninlineSequenceMap:\n  # Inlined map in sequence\n  << : [ *CENTER, {"r": 10} ]\n  label: center/big\n',
        VALUE,
        '{"anchors":{"list":[{"x":1,"y":2},{"x":0,"y":2},{"r":10},{"r":1}]},"inlineMap":{"label":"center/big","r":10,"x":1,"y":2},"inlineSequenceMap":{"label":"center/big","r":10,"x":1,"y":2},"longTag":{"label":"center/big","r":10,"x":1,"y":2},"mergeMultiple":{"label":"center/big","r":10,"x":1,"y":2},"mergeOne":{"label":"center/big","r":10,"x":1,"y":2},"override":{"label":"center/big","r":10,"x":1,"y":2},"plain":{"label":"center/big","r":10,"x":1,"y":2},"shortTag":{"label":"center/big","r":10,"x":1,"y":2}}',
    ),
    ("unmarshalStrictTests:1223", "a: 1\nc: 2\n", VALUE, '{"a":1,"c":2}'),
    ("unmarshalStrictTests:1227", "a: 1\nb: 2\na: 3\n", DUPLICATE, '{"a":3,"b":2}'),
    ("unmarshalStrictTests:1231", "c: 3\na: 1\nb: 2\nc: 4\n", DUPLICATE, '{"a":1,"b":2,"c":4}'),
    ("unmarshalStrictTests:1246", "c: 0\na: 1\nb: 2\nc: 1\n", DUPLICATE, '{"a":1,"b":2,"c":1}'),
    ("unmarshalStrictTests:1261", "c: 1\na: 1\nb: 2\nc: 3\n", DUPLICATE, '{"a":1,"b":2,"c":3}'),
    ("unmarshalStrictTests:1274", "a: 1\n9: 2\nnull: 3\n9: 4", REFUSED, None),
]

SIGS_K8S_YAML = [
    ("TestYAMLToJSON:627 string value", "t: a\n", VALUE, '{"t":"a"}'),
    ("TestYAMLToJSON:631 null value", "t: null\n", VALUE, '{"t":null}'),
    ("TestYAMLToJSON:635 boolean value", "t: True\n", VALUE, '{"t":true}'),
    ("TestYAMLToJSON:640 boolean value (no)", "t: no\n", VALUE, '{"t":false}'),
    ("TestYAMLToJSON:645 integer value (2^53 + 1)", "t: 9007199254740993\n", VALUE, '{"t":9007199254740993}'),
    (
        "TestYAMLToJSON:650 integer value (1000000000000000000000000000000000000)",
        "t: 1000000000000000000000000000000000000\n",
        VALUE,
        '{"t":1e+36}',
    ),
    (
        "TestYAMLToJSON:655 line-wrapped string value",
        "t: this is very long line with spaces and it must be longer than 80 so we will repeat\n  that it must be longer that 80\n",
        VALUE,
        '{"t":"this is very long line with spaces and it must be longer than 80 so we will repeat that it must be longer that 80"}',
    ),
    ("TestYAMLToJSON:659 empty yaml value", "t: ", VALUE, '{"t":null}'),
    ("TestYAMLToJSON:664 boolean key", "True: a", VALUE, '{"true":"a"}'),
    ("TestYAMLToJSON:669 boolean key (no)", "no: a", VALUE, '{"false":"a"}'),
    ("TestYAMLToJSON:674 integer key", "1: a", VALUE, '{"1":"a"}'),
    ("TestYAMLToJSON:679 float key", "1.2: a", VALUE, '{"1.2":"a"}'),
    (
        "TestYAMLToJSON:684 large integer key",
        "1000000000000000000000000000000000000: a",
        VALUE,
        '{"1e+36":"a"}',
    ),
    ("TestYAMLToJSON:689 large integer key (scientific notation)", "1e+36: a", VALUE, '{"1e+36":"a"}'),
    ("TestYAMLToJSON:694 string key (large integer as string)", '"1e+36": a\n', VALUE, '{"1e+36":"a"}'),
    ("TestYAMLToJSON:698 string key (float as string)", '"1.2": a\n', VALUE, '{"1.2":"a"}'),
    ("TestYAMLToJSON:724 binary data", "a: !!binary gIGC", VALUE, '{"a":"\\ufffd\\ufffd\\ufffd"}'),
    ("TestYAMLToJSON:731 ~ key", "~: a", REFUSED, None),
    ("TestYAMLToJSON:737 null key", "null: a", REFUSED, None),
    (
        "TestYAMLToJSONStrictFails:757 duplicate struct value",
        "foo: bar\nfoo: baz\n",
        DUPLICATE,
        '{"foo":"baz"}',
    ),
]

EDGES = [
    (
        "flow mapping, plain scalar with ':'",
        "containers: [{name: web, image: nginx:1.27}]\n",
        VALUE,
        '{"containers":[{"image":"nginx:1.27","name":"web"}]}',
    ),
    ("flow sequence, plain scalar with ':'", "ports: [frontend:80]\n", VALUE, '{"ports":["frontend:80"]}'),
    ("':' before ',' ends with the ':'", "a: [a:,b]\n", VALUE, '{"a":["a:","b"]}'),
    ("':' before '}' is the key's", "a: {a:}\n", VALUE, '{"a":{"a:":null}}'),
    ("':' after a blank inside the scalar", "a: [a :b]\n", VALUE, '{"a":["a :b"]}'),
    ("'?' ends a flow plain scalar", "a: [x?y]\n", REFUSED, None),
    ("':' at a flow token start is an indicator", "a: [a, :b]\n", REFUSED, None),
    (
        "URL with a port in a flow mapping",
        "a: {url: http://x.example:8080/p}\n",
        VALUE,
        '{"a":{"url":"http://x.example:8080/p"}}',
    ),
    ("URL with a query in a flow sequence", "a: [http://x.example/p?q=1]\n", REFUSED, None),
    ("multi-line flow sequence", "a: [\n  x:1,\n  y:2\n]\n", VALUE, '{"a":["x:1","y:2"]}'),
    ("block scalar before a flow sequence", "a: |\n  [x:1\nb: [y:2]\n", VALUE, '{"a":"[x:1\\n","b":["y:2"]}'),
    ("quoted scalars beside a plain one", "a: ['x:1', \"y:2\", z:3]\n", VALUE, '{"a":["x:1","y:2","z:3"]}'),
    ("comment after a flow sequence", "a: [x:1] # c:d\n", VALUE, '{"a":["x:1"]}'),
    ("JSON-like key, value with ':'", 'a: {"k":v:1}\n', VALUE, '{"a":{"k":"v:1"}}'),
    ("plain 'k:v' is one key", "a: {k:v}\n", VALUE, '{"a":{"k:v":null}}'),
    ("key 'k:v' in a flow sequence", "a: [k:v: w]\n", VALUE, '{"a":[{"k:v":"w"}]}'),
    ("'-x:1' in a flow sequence", "a: [-x:1]\n", VALUE, '{"a":["-x:1"]}'),
    ("',' on the next line", "a: [x:1\n  , y]\n", VALUE, '{"a":["x:1",true]}'),
    ("'#' after ':'", "a: [x:#]\n", VALUE, '{"a":["x:#"]}'),
    ("flow mapping value with ':'", "a: {x: y:z}\n", VALUE, '{"a":{"x":"y:z"}}'),
    ("nested flow collections", "a: {b: [c:d, {e: f:g}]}\n", VALUE, '{"a":{"b":["c:d",{"e":"f:g"}]}}'),
    ("':' then a tab ends the scalar", "a: [x:\ty]\n", VALUE, '{"a":[{"x":true}]}'),
    ("plain scalar with ':' in the block context", "a: b:c\n", VALUE, '{"a":"b:c"}'),
    ("multi-line plain scalar in a flow sequence", "a: [x\n  y:z]\n", VALUE, '{"a":["x y:z"]}'),
    (
        "flow sequence in a sequence",
        "a:\n- [x:1, y]\n- {k: v:w}\n",
        VALUE,
        '{"a":[["x:1",true],{"k":"v:w"}]}',
    ),
    (
        "single-quoted scalar with ':' then a plain one",
        "a: ['it''s:x', y:z]\n",
        VALUE,
        '{"a":["it\'s:x","y:z"]}',
    ),
    ("anchor defined twice: the later one", "a: &x 1\nb: &x 2\nc: *x\n", VALUE, '{"a":1,"b":2,"c":2}'),
    (
        "alias before and after the redefinition",
        "a: &x 1\nb: *x\nc: &x 2\nd: *x\n",
        VALUE,
        '{"a":1,"b":1,"c":2,"d":2}',
    ),
    (
        "merge of a redefined anchor",
        "a: &x {p: 1}\nb: &x {p: 2}\nc:\n  <<: *x\n",
        VALUE,
        '{"a":{"p":1},"b":{"p":2},"c":{"p":2}}',
    ),
    (
        "anchor redefined inside its own node",
        "a: &x {b: &x 1, c: *x}\nd: *x\n",
        VALUE,
        '{"a":{"b":1,"c":1},"d":1}',
    ),
    ("recursive alias", "a: &x [*x]\n", REFUSED, None),
    ("undefined alias", "a: *x\n", REFUSED, None),
    ("merge after a key: the merge's value", "a: 1\n<<: {a: 2}\n", VALUE, '{"a":2}'),
    ("key after a merge: the key's value", "<<: {a: 2}\na: 1\n", VALUE, '{"a":1}'),
    ("merge of a sequence: earlier mappings win", "<<: [{a: 1}, {a: 2, b: 3}]\n", VALUE, '{"a":1,"b":3}'),
    ("merge of a sequence after a key", "b: 0\n<<: [{a: 1}, {a: 2, b: 3}]\n", VALUE, '{"a":1,"b":3}'),
    ("merge of a scalar", "<<: 1\n", REFUSED, None),
    ("merge of a sequence of scalars", "<<: [1]\n", REFUSED, None),
    ("merge of null", "a: 1\n<<:\n", REFUSED, None),
    ("quoted '<<' is a key", '"<<": 1\n', VALUE, '{"\\u003c\\u003c":1}'),
    ("!!merge-tagged quoted '<<'", '!!merge "<<": {a: 1}\n', VALUE, '{"a":1}'),
    ("float past float64", "a: 1e400\n", VALUE, '{"a":"1e400"}'),
    ("negative float past float64", "a: -1e400\n", VALUE, '{"a":"-1e400"}'),
    ("float below float64", "a: 1e-400\n", VALUE, '{"a":0}'),
    ("'.'-float with '_'", "a: .1_0\n", VALUE, '{"a":0.1}'),
    ("float with '_'", "a: 1_0.5\n", VALUE, '{"a":10.5}'),
    ("hex with '_'", "a: 0x_1F\n", VALUE, '{"a":31}'),
    ("hex with a sign", "a: +0x1F\n", VALUE, '{"a":31}'),
    ("0o octal", "a: 0o17\n", VALUE, '{"a":15}'),
    ("0O octal", "a: 0O17\n", VALUE, '{"a":15}'),
    ("negative binary", "a: -0b101\n", VALUE, '{"a":-5}'),
    ("YAML 1.1 octal", "a: 0777\n", VALUE, '{"a":511}'),
    ("08 is a float", "a: 08\n", VALUE, '{"a":8}'),
    ("0b2 is a string", "a: 0b2\n", VALUE, '{"a":"0b2"}'),
    ("int64 max + 1 is a uint64", "a: 9223372036854775808\n", VALUE, '{"a":9223372036854775808}'),
    ("int64 min - 1 is a float", "a: -9223372036854775809\n", VALUE, '{"a":-9223372036854776000}'),
    ("signed uint64 is a float", "a: +9223372036854775808\n", VALUE, '{"a":9223372036854776000}'),
    ("uint64 max + 1 is a float", "a: 18446744073709551616\n", VALUE, '{"a":18446744073709552000}'),
    ("hex past uint64 is a string", "a: 0xFFFFFFFFFFFFFFFFF\n", VALUE, '{"a":"0xFFFFFFFFFFFFFFFFF"}'),
    ("trailing '_'", "a: 1_\n", VALUE, '{"a":1}'),
    ("base 60 is a string", "a: 1:30\n", VALUE, '{"a":"1:30"}'),
    ("version is a string", "a: 1.2.3\n", VALUE, '{"a":"1.2.3"}'),
    ("'0x' is a string", "a: 0x\n", VALUE, '{"a":"0x"}'),
    ("'+' is a string", "a: +\n", VALUE, '{"a":"+"}'),
    ("'.' is a string", "a: .\n", VALUE, '{"a":"."}'),
    ("'-.5'", "a: -.5\n", VALUE, '{"a":-0.5}'),
    ("'1.'", "a: 1.\n", VALUE, '{"a":1}'),
    ("'.5e3'", "a: .5e3\n", VALUE, '{"a":500}'),
    (".nan", "a: .nan\n", REFUSED, None),
    (".inf", "a: .inf\n", REFUSED, None),
    ("-.Inf in a sequence", "a: [-.Inf]\n", REFUSED, None),
    ("!!float .inf", "a: !!float .inf\n", REFUSED, None),
    ("null key", "null: 1\n", REFUSED, None),
    ("~ key", "~: 1\n", REFUSED, None),
    ("empty key", "? \n: 1\n", REFUSED, None),
    ("float key 1.5", "1.5: a\n", VALUE, '{"1.5":"a"}'),
    ("float key 1e3", "1e3: a\n", VALUE, '{"1000":"a"}'),
    ("float key 123456789.0", "123456789.0: a\n", VALUE, '{"1.2345679e+08":"a"}'),
    ("float key 0.0001", "0.0001: a\n", VALUE, '{"0.0001":"a"}'),
    ("float key 0.00001", "0.00001: a\n", VALUE, '{"1e-05":"a"}'),
    ("float key 1e6", "1e6: a\n", VALUE, '{"1e+06":"a"}'),
    ("float key 999999.0", "999999.0: a\n", VALUE, '{"999999":"a"}'),
    ("float key -0.0", "-0.0: a\n", VALUE, '{"-0":"a"}'),
    ("float key past float32", "1e40: a\n", VALUE, '{".inf":"a"}'),
    ("float key 0.1", "0.1: a\n", VALUE, '{"0.1":"a"}'),
    ("float key 3.14159265358979", "3.14159265358979: a\n", VALUE, '{"3.1415927":"a"}'),
    ("uint64 key", "18446744073709551615: a\n", REFUSED, None),
    ("int64 max key", "9223372036854775807: a\n", VALUE, '{"9223372036854775807":"a"}'),
    ("int64 min key", "-9223372036854775808: a\n", VALUE, '{"-9223372036854775808":"a"}'),
    ("hex key", "0x10: a\n", VALUE, '{"16":"a"}'),
    ("0o key", "0o10: a\n", VALUE, '{"8":"a"}'),
    ("octal key", "010: a\n", VALUE, '{"8":"a"}'),
    ("yes key", "yes: a\n", VALUE, '{"true":"a"}'),
    ("on key", "on: a\n", VALUE, '{"true":"a"}'),
    ("Off key", "Off: a\n", VALUE, '{"false":"a"}'),
    (".inf key", ".inf: a\n", VALUE, '{".inf":"a"}'),
    (".nan key", ".nan: a\n", VALUE, '{".nan":"a"}'),
    ("date key", "2001-12-14: a\n", VALUE, '{"2001-12-14":"a"}'),
    (
        "YAML 1.1 booleans and nulls",
        "a: [y, Y, yes, n, NO, on, OFF, true, False, ~, null, Null, NULL, '']\n",
        VALUE,
        '{"a":[true,true,true,false,false,true,false,true,false,null,null,null,null,""]}',
    ),
    ("!!binary", "a: !!binary YQ==\n", VALUE, '{"a":"a"}'),
    ("!!binary block", "a: !!binary |\n  YWJj\n  ZGVm\n", VALUE, '{"a":"abcdef"}'),
    ("!!binary without padding", "a: !!binary YQ\n", REFUSED, None),
    ("!!binary with a blank", 'a: !!binary "Y Q=="\n', REFUSED, None),
    (
        "timestamp is a string",
        "a: 2001-12-14t21:59:43.10-05:00\n",
        VALUE,
        '{"a":"2001-12-14t21:59:43.10-05:00"}',
    ),
    ("!!timestamp is a string", "a: !!timestamp 2001-12-14\n", VALUE, '{"a":"2001-12-14"}'),
    ("!!str 0777", "a: !!str 0777\n", VALUE, '{"a":"0777"}'),
    ("!!int quoted", 'a: !!int "3"\n', VALUE, '{"a":3}'),
    ("!!float 3", "a: !!float 3\n", VALUE, '{"a":3}'),
    ("!!bool yes", "a: !!bool yes\n", VALUE, '{"a":true}'),
    ("!!null ''", "a: !!null ''\n", VALUE, '{"a":null}'),
    ("unknown tag keeps the text", "a: !Ref x\n", VALUE, '{"a":"x"}'),
    ("duplicate key", "a: 1\na: 2\n", DUPLICATE, '{"a":2}'),
    ("duplicate key after YAML 1.1 resolution", "true: 1\nyes: 2\n", DUPLICATE, '{"true":2}'),
    ("merge of an alias of a sequence", "a: &s [{x: 1}]\nb:\n  <<: *s\n", REFUSED, None),
    ("!!python/name keeps the text", "a: !!python/name:foo.bar x\n", VALUE, '{"a":"x"}'),
    ("!!set", "a: !!set {x}\n", VALUE, '{"a":{"x":null}}'),
    ("!!omap", "a: !!omap [{x: 1}]\n", VALUE, '{"a":[{"x":1}]}'),
    ("!!str of a number", "a: !!str 1\n", VALUE, '{"a":"1"}'),
    ("!!int of hex", "a: !!int 0x1F\n", VALUE, '{"a":31}'),
    ("!!float of an int", "a: !!float 1\n", VALUE, '{"a":1}'),
]


def _same(found: Any, expected: Any) -> bool:
    """``found`` (kaffinity's value) is the JSON value ``expected``: booleans are not numbers,
    numbers compare by value (Go writes a float64 without its fraction: 1e+06 is 1000000)."""
    if isinstance(found, bool) or isinstance(expected, bool):
        return type(found) is type(expected) and found == expected
    if isinstance(found, (int, float)) and isinstance(expected, (int, float)):
        return (
            float(found) == float(expected) if float in (type(found), type(expected)) else found == expected
        )
    if isinstance(found, dict) and isinstance(expected, dict):
        return found.keys() == expected.keys() and all(_same(found[key], expected[key]) for key in found)
    if isinstance(found, list) and isinstance(expected, list):
        return len(found) == len(expected) and all(map(_same, found, expected))
    return type(found) is type(expected) and found == expected


def _reads_as(text: str | bytes, kind: str, expected: str | None) -> None:
    source = decode(text) if isinstance(text, bytes) else text
    value, problem = parse_data(source, strict=True)
    if kind == REFUSED:
        assert problem is not None, value
        assert problem.rule == "parse-error"
        return
    assert expected is not None
    assert _same(value, json.loads(expected)), (value, expected)
    if kind == DUPLICATE:
        assert problem is not None
        assert problem.rule == "parse-error"
    else:
        assert problem is None, problem


@pytest.mark.parametrize(
    ("where", "text", "kind", "expected"), GO_YAML_V2, ids=[row[0] for row in GO_YAML_V2]
)
def test_go_yaml_v2_decode_tests(where: str, text: str | bytes, kind: str, expected: str | None) -> None:
    _reads_as(text, kind, expected)


@pytest.mark.parametrize(
    ("where", "text", "kind", "expected"), SIGS_K8S_YAML, ids=[row[0] for row in SIGS_K8S_YAML]
)
def test_sigs_k8s_yaml_yaml_to_json(where: str, text: str | bytes, kind: str, expected: str | None) -> None:
    _reads_as(text, kind, expected)


@pytest.mark.parametrize(("where", "text", "kind", "expected"), EDGES, ids=[row[0] for row in EDGES])
def test_go_yaml_edges(where: str, text: str | bytes, kind: str, expected: str | None) -> None:
    _reads_as(text, kind, expected)


def test_tables_cover_what_they_say() -> None:
    """The transcription is whole: as many cases as the extraction found, of each kind."""
    kinds = [row[2] for row in (*GO_YAML_V2, *SIGS_K8S_YAML, *EDGES)]
    assert (len(GO_YAML_V2), len(SIGS_K8S_YAML), len(EDGES)) == (150, 20, 120)
    assert (kinds.count(VALUE), kinds.count(DUPLICATE), kinds.count(REFUSED)) == (241, 7, 42)


# -- positions: what is read again keeps every line and column -----------------------------------

# A Deployment as the issue's real repositories write them: containers and ports as flow
# collections whose plain scalars hold `:` (kubectl accepts them).
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.27, args: [--listen=frontend:80, --x=a:b]}]
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: topology.kubernetes.io/zone
        whenUnsatisfiable: Sometimes
        labelSelector: {matchLabels: {app: web}}
"""


def test_flow_colons_read_with_positions() -> None:
    source = parse("web.yaml", DEPLOYMENT)
    assert source.problems == ()
    (document,) = source.documents
    container = document.data["spec"]["template"]["spec"]["containers"][0]
    assert container == {"name": "web", "image": "nginx:1.27", "args": ["--listen=frontend:80", "--x=a:b"]}
    containers = ("spec", "template", "spec", "containers", 0)
    assert locate(document.root, (*containers, "image"), document.span) == position(
        DEPLOYMENT, "image: nginx"
    )
    assert locate(document.root, (*containers, "args", 1), document.span) == position(DEPLOYMENT, "--x=a:b")
    spread = ("spec", "template", "spec", "topologySpreadConstraints", 0, "whenUnsatisfiable")
    assert locate(document.root, spread, document.span) == position(DEPLOYMENT, "whenUnsatisfiable")


def test_finding_after_flow_colons_keeps_its_place() -> None:
    """A later finding's (rule, line, column) is where it would be without the `:` handling."""
    check(DEPLOYMENT, ("schema", *position(DEPLOYMENT, "whenUnsatisfiable")))


@pytest.mark.parametrize(
    "text",
    [
        "a: [x:1, y:2]\nb: {c: d:e}\nc: [\n",  # a syntax error after the `:` read again
        "a: &x 1\nb: &x [x:1]\nc: *x\nd: [\n",  # after an anchor defined again
        "a: [x:1]\nb: &y 1\nc: &y 2\nd: {e: f:g, h: *y}\ne: 'unterminated\n",
    ],
)
def test_parse_error_after_go_yaml_reading_keeps_its_position(text: str) -> None:
    """The parse-error is where libyaml reports it on the same text without the `:`s (replaced
    by `_`, as long) and anchors (renamed, as long): the second reading moves nothing."""
    plain = text.replace("x:1", "x_1").replace("y:2", "y_2").replace("d:e", "d_e").replace("f:g", "f_g")
    plain = plain.replace("&x [", "&z [").replace("c: &y", "c: &w").replace("*y", "*w")
    (problem,) = parse("t.yaml", text).problems
    (expected,) = parse("t.yaml", plain).problems
    assert problem.rule == "parse-error"
    assert problem.span == expected.span


def test_documents_before_and_after_the_second_reading() -> None:
    """Every document once, in order, when a later document needs go-yaml's reading."""
    text = textwrap.dedent(
        """\
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: a}
        data: {k: v}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: b}
        data: {url: http://b:80}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: &m {name: c}
        data: &m {k: w}
        binaryData: {}
        immutable: false
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: d}
        data: {ports: '[frontend:80]'}
        """
    )
    source = parse("cm.yaml", text)
    assert source.problems == ()
    names = [document.data["metadata"]["name"] for document in source.documents]
    assert names == ["a", "b", "c", "d"]
    assert [document.index for document in source.documents] == [0, 1, 2, 3]
    assert source.documents[1].data["data"] == {"url": "http://b:80"}
    assert source.documents[1].span == position(text, "apiVersion", 2)


def test_stand_in_already_in_the_text() -> None:
    """A character the text holds is never the stand-in for `:`."""
    text = "a: [x:1, \ue000, \ue001:2]\nb: '\ue002'\n"
    value, problem = parse_data(text)
    assert problem is None
    assert value == {"a": ["x:1", "\ue000", "\ue001:2"], "b": "\ue002"}


def test_many_flow_colons_are_read_in_one_more_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """All the `:`s are found by one scan, not one reading each (a file of 2,000 of them)."""
    from kaffinity.load.parse import goyaml as module

    readings = []
    real = module._Reading.loader

    def counted(self: Any, limits: Any) -> Any:
        readings.append(self.stand_in)
        return real(self, limits)

    monkeypatch.setattr(module._Reading, "loader", counted)
    text = "".join(
        f"k{index}: [{{image: 'r:1', url: http://h{index}:80/p}}, a:{index}]\n" for index in range(2000)
    )
    value, problem = parse_data(text)
    assert problem is None
    assert value["k1999"] == [{"image": "r:1", "url": "http://h1999:80/p"}, "a:1999"]
    assert len(readings) == 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # block scalars, quoted scalars and comments that hold flow-like text
        (
            "a: |\n  [x:1 {\nb: [y:2]\nc: >-\n    {z:3\n    d: e\nf: {g: h:i}\n",
            {"a": "[x:1 {\n", "b": ["y:2"], "c": "{z:3 d: e", "f": {"g": "h:i"}},
        ),
        (
            "a: \"[x:1\"\nb: ['{y:2', z:3]  # [w:4\nc: [v:5]\n",
            {"a": "[x:1", "b": ["{y:2", "z:3"], "c": ["v:5"]},
        ),
        ("- [a:1]\n- |\n  ]x:2[\n- {b: c:3}\n", [["a:1"], "]x:2[\n", {"b": "c:3"}]),
        ("a: [x\n  y:z, 'p:q'\n  , r:s]\n", {"a": ["x y:z", "p:q", "r:s"]}),
    ],
)
def test_flow_colons_beside_other_scalars(text: str, expected: Any) -> None:
    """Read as go-yaml reads them (the values are what sigs.k8s.io/yaml v1.6.0 gives)."""
    value, problem = parse_data(text)
    assert problem is None
    assert value == expected


def test_issue_cases_lint_clean() -> None:
    """The three shapes of issue 32 that kubectl accepts: no parse-error, and the values kubectl
    reads. The anchors defined twice are modelled on onedr0p/home-ops'
    `kubernetes/apps/network/certificates/export/pushsecret.yaml` (`secretKey: &key tls.crt`,
    `property: *key`, then `&key tls.key` again)."""
    text = textwrap.dedent(
        """\
        apiVersion: v1
        kind: Pod
        metadata: {name: p, labels: {app: p}}
        spec:
          containers: [{name: web, image: nginx:1.27}]
          volumes:
          - name: tls
            secret:
              secretName: turbo-ac-tls
              items:
              - key: &key tls.crt
                path: *key
              - key: &key tls.key
                path: *key
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: s}
        spec:
          selector: {app: p}
          ports: [{name: http, port: 80, targetPort: 8080}]
          externalIPs: [frontend:80]
        """
    )
    check(text)
    source = parse("t.yaml", text)
    assert source.problems == ()
    pod, service = (document.data for document in source.documents)
    assert pod["spec"]["containers"] == [{"name": "web", "image": "nginx:1.27"}]
    assert pod["spec"]["volumes"][0]["secret"]["items"] == [
        {"key": "tls.crt", "path": "tls.crt"},
        {"key": "tls.key", "path": "tls.key"},
    ]
    assert service["spec"]["externalIPs"] == ["frontend:80"]


def test_fix_edits_a_file_read_as_go_yaml_reads_it(tmp_path: Path) -> None:
    """`fix` writes into a file that needed the second reading, every other byte kept."""
    text = textwrap.dedent(
        """\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web}
        spec:
          replicas: 3
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec:
              containers: [{name: web, image: nginx:1.27}]
              affinity:
                podAntiAffinity:
                  requiredDuringSchedulingIgnoredDuringExecution:
                  - labelSelector: {matchLabels: {app: web}}
                    topologyKey: kubernetes.io/hostname
        """
    )
    path = tmp_path / "web.yaml"
    path.write_text(text)
    assert run("fix", path).returncode == 0
    fixed = path.read_text()
    assert fixed == text + "            matchLabelKeys: [pod-template-hash]\n"
    assert keys(lint_text(fixed)) == []


def test_readings_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A `:` the scan misses costs one more reading each, within a bound: past it, the
    parse-error libyaml gives (here the scan is made to find nothing)."""
    from kaffinity.load.parse import goyaml as module

    monkeypatch.setattr(module, "_flow_colons", lambda text: [])
    monkeypatch.setattr(module, "_RETRIES", 5)
    text = "".join(f"k{index}: [a:{index}]\n" for index in range(10))
    value, problem = parse_data(text)
    assert problem is not None
    assert problem.span is not None
    assert (problem.rule, problem.span.line) == ("parse-error", 6)
    text = "".join(f"k{index}: [a:{index}]\n" for index in range(4))
    value, problem = parse_data(text)
    assert problem is None
    assert value["k3"] == ["a:3"]


# -- what the oracle found (tests/differential/test_yaml.py, issue 35) ------------------------------
#
# Each case: a file, the values of its documents as kubectl sends them, and the parse-error
# kaffinity reports (line, column) where kubectl refuses the file (the oracle's yamlstream op:
# k8s.io/apimachinery YAMLReader splitting, sigs.k8s.io/yaml on each part).
ORACLE_CASES = [
    # YAMLReader.Read: only a comment may follow `---` ("invalid Yaml document separator: |")
    # (the part it ends is refused with it: YAMLReader returns the error, not the part)
    ("separator-content", "a: 1\n--- |\n  text\n", [], (2, 5)),
    ("separator-dashes", "a: 0\n---\na: 1\n----\nb: 2\n", [{"a": 0}], (4, 4)),
    ("separator-comment", "a: 1\n--- # next\nb: 2\n", [{"a": 1}, {"b": 2}], None),
    # go-yaml's parser: `...` with no document before it in the part ("did not find expected node content")
    ("document-end-alone", "a: 1\n---\n\n...\n", [{"a": 1}], (4, 1)),
    ("document-end-after-marker", "---\n...\n", [], None),
    # go-yaml decodes the first document of a part: what follows `...` up to `---` is not read
    ("after-document-end", "yes\n...\n- a\n- b\n", [True], None),
    ("after-document-end-then-part", "a: 1\n...\nb: 2\n---\nc: 3\n", [{"a": 1}, {"c": 3}], None),
    # a directive is a part of its own for kubectl ("did not find expected <document start>")
    ("directive", "%YAML 1.1\n---\na: 1\n", [], (1, 1)),
    # a block scalar at the end of input without a line break ends with one for go-yaml
    ("block-scalar-at-end", "a: |\n  one", [{"a": "one\n"}], None),
    ("block-scalar-keep-at-end", "a: >+\n  one\n\n  ", [{"a": "one\n\n\n"}], None),
    ("block-scalar-strip-at-end", "a: |-\n  one", [{"a": "one"}], None),
    # base64.StdEncoding refuses excess padding
    ("binary-excess-padding", "a: !!binary YWJj=\n", [], (1, 4)),
    # each invalid UTF-8 byte of a !!binary value is one U+FFFD in Go's JSON
    ("binary-invalid-utf8", "a: !!binary 0+2B\n", [{"a": "\ufffd\ufffd\ufffd"}], None),
    # an explicit tag resolves the text as a plain scalar and checks its type (resolve.go)
    ("null-tag-of-bool", "a: !!null yes\n", [], (1, 4)),
    ("bool-tag-quoted", "a: !!bool 'yes'\n", [{"a": True}], None),
    ("float-tag-of-int", "a: !!float 1\n", [{"a": 1.0}], None),
    ("int-tag-of-float", "a: !!int 1.5\n", [], (1, 4)),
]


@pytest.mark.parametrize(
    ("text", "values", "refused"), [case[1:] for case in ORACLE_CASES], ids=[case[0] for case in ORACLE_CASES]
)
def test_read_as_kubectl_splits_and_reads(
    text: str, values: list[Any], refused: tuple[int, int] | None
) -> None:
    source = parse("f.yaml", text)
    read, problem, _ = documents_data(text)
    assert [_plain(value) for value in read] == values
    assert all(_same(_plain(a), b) for a, b in zip(read, values, strict=True))
    if refused is None:
        assert problem is None and not source.problems, (problem, source.problems)
    else:
        assert problem is not None
        (found,) = source.problems
        assert found.rule == "parse-error"
        assert found.span is not None and (found.span.line, found.span.column) == refused


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value
