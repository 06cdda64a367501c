"""Minimal text edits (kaffinity.load.edits): expected output byte for byte, and the data it loads as."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kaffinity.load.edits import Edit, add_entry, append_items, apply, compose, find_node, verify
from kaffinity.load.parse import decode, parse
from kaffinity.load.source import DataPath

from .kit import SHARED

CORPUS = SHARED / "corpus" / "real"
HEAD = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
POD = ("spec", "template", "spec")
ANTI = (*POD, "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
SPREAD = (*POD, "topologySpreadConstraints")
HASH = ["pod-template-hash"]
NOTE = "merged by kube-scheduler, not stored"


def _roots(text: str) -> dict[int, Any]:
    """Each document's data, as JSON (keeps key order and tells 1, 1.0, true and "1" apart)."""
    source = parse("test.yaml", text)
    assert not source.problems, source.problems
    return {doc.index: json.loads(json.dumps(doc.root)) for doc in source.documents}


def _changed(data: Any, path: DataPath, key: str | None, value: Any) -> Any:
    """``data`` with ``key: value`` added to the mapping at ``path`` (or ``value`` items appended
    to the sequence there when ``key`` is None)."""
    target = data
    for item in path:
        target = target[item]
    if key is None:
        target.extend(value)
    else:
        assert key not in target
        target[key] = value
    return data


def applies_as(
    text: str,
    edit: Edit | None,
    expected: str,
    path: DataPath,
    key: str | None,
    value: Any,
    doc_index: int = 0,
) -> str:
    """The edit gives ``expected`` exactly, which loads as the old data plus the change."""
    assert edit is not None
    new = apply(text, [edit])
    assert new == expected
    old, loaded = _roots(text), _roots(new)
    assert list(old) == list(loaded)
    want = _changed(old[doc_index], path, key, json.loads(json.dumps(value)))
    assert json.dumps(loaded[doc_index]) == json.dumps(want)
    for index in old:
        if index != doc_index:
            assert loaded[index] == old[index]
    # The module's own check agrees (it also tells key order and scalar types apart).
    plain = json.loads(json.dumps(value))
    assert verify(
        text, new, doc_index, path, lambda old: [*old, *plain] if key is None else {**old, key: plain}
    )
    assert not verify(text, new, doc_index, path, lambda old: old)
    return new


def add(text: str, path: DataPath, key: str, value: Any, expected: str, **kwargs: Any) -> str:
    return applies_as(text, add_entry(text, 0, path, key, value, **kwargs), expected, path, key, value)


def append(text: str, path: DataPath, items: list[Any], expected: str, **kwargs: Any) -> str:
    return applies_as(text, append_items(text, 0, path, items, **kwargs), expected, path, None, items)


ANTI_BLOCK = (
    HEAD
    + """\
spec:
  template:
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector:
              matchLabels:
                app: web
            topologyKey: kubernetes.io/hostname
      containers:
      - name: web
"""
)


def test_block_term_gets_the_key_after_its_last_entry() -> None:
    add(
        ANTI_BLOCK,
        (*ANTI, 0),
        "matchLabelKeys",
        HASH,
        ANTI_BLOCK.replace(
            "kubernetes.io/hostname\n",
            "kubernetes.io/hostname\n            matchLabelKeys: [pod-template-hash]\n",
        ),
    )


def test_comment_goes_on_the_first_inserted_line() -> None:
    add(
        ANTI_BLOCK,
        (*ANTI, 0),
        "matchLabelKeys",
        HASH,
        ANTI_BLOCK.replace(
            "kubernetes.io/hostname\n",
            f"kubernetes.io/hostname\n            matchLabelKeys: [pod-template-hash] # {NOTE}\n",
        ),
        comment=NOTE,
    )


def test_trailing_comment_and_comment_lines_stay_where_they_are() -> None:
    text = (
        HEAD
        + """\
spec:
  template:
    spec:
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: zone   # one per zone
        whenUnsatisfiable: DoNotSchedule   \t
        # labelSelector: to do

        # more to come
      containers: []
"""
    )
    add(
        text,
        (*SPREAD, 0),
        "matchLabelKeys",
        HASH,
        text.replace(
            "DoNotSchedule   \t\n",
            "DoNotSchedule   \t\n        matchLabelKeys: [pod-template-hash]\n",
        ),
    )


def test_last_value_a_nested_mapping() -> None:
    text = (
        HEAD
        + """\
spec:
  template:
    spec:
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: zone
          labelSelector:
            matchLabels:
              app: web # the pods
          # end of constraint
"""
    )
    add(
        text,
        (*SPREAD, 0),
        "matchLabelKeys",
        HASH,
        text.replace("# the pods\n", "# the pods\n          matchLabelKeys: [pod-template-hash]\n"),
    )


def test_last_value_a_block_scalar() -> None:
    text = HEAD + "data:\n  script: |\n    echo hi\n\n    exit 0\n\n# trailer\n"
    text = text.replace("kind: Deployment", "kind: ConfigMap").replace("apps/v1", "v1")
    add(text, ("data",), "other", "x", text.replace("# trailer", "  other: x\n# trailer"))
    keep = text.replace("script: |", "script: |+")
    add(keep, ("data",), "other", "x", keep.replace("# trailer", "  other: x\n# trailer"))
    eof = text.removesuffix("\n# trailer\n")
    add(eof, (), "immutable", True, eof + "immutable: true\n")
    # Without a line break at the end of the file the block scalar still ends with one, as
    # go-yaml reads it (kubectl sends "exit 0\n": the oracle's yamlstream op, issue 35), so a new
    # line after it keeps the value and the edit is made.
    no_newline = text.removesuffix("\n\n# trailer\n")
    add(no_newline, ("data",), "other", "x", no_newline + "\n  other: x")
    folded = no_newline.replace("script: |", "script: >-") + "\n"
    add(folded, ("data",), "other", "x", folded + "  other: x\n")


def test_mapping_that_starts_a_sequence_item() -> None:
    text = (
        HEAD + "terms:\n- labelSelector: {matchLabels: {app: web}}\n  topologyKey: zone\n- topologyKey: x\n"
    )
    add(
        text,
        ("terms", 0),
        "matchLabelKeys",
        HASH,
        text.replace("zone\n", "zone\n  matchLabelKeys: [pod-template-hash]\n"),
    )
    one_line = HEAD + "terms:\n  -   topologyKey: zone\n"
    add(
        one_line,
        ("terms", 0),
        "matchLabelKeys",
        HASH,
        one_line + "      matchLabelKeys: [pod-template-hash]\n",
    )


def test_flow_mapping_gets_the_entry_after_its_last_value() -> None:
    text = HEAD + "spec:\n  selector: {matchLabels: {app: web} }  # flow\n  replicas: 2\n"
    add(
        text,
        ("spec", "selector"),
        "matchExpressions",
        [{"key": "tier", "operator": "In", "values": ["<x y>"]}],
        text.replace(
            "{app: web} }",
            '{app: web}, matchExpressions: [{key: tier, operator: In, values: ["<x y>"]}] }',
        ),
        comment=NOTE,  # a flow insertion has no line of its own: dropped
    )
    term = HEAD + "terms: [{topologyKey: zone}]\n"
    add(
        term,
        ("terms", 0),
        "matchLabelKeys",
        HASH,
        term.replace("zone}", "zone, matchLabelKeys: [pod-template-hash]}"),
    )


EXPRESSION = {"key": "app", "operator": "In", "values": ["web"]}


def test_empty_flow_mapping_as_a_block_value_becomes_a_block_mapping() -> None:
    text = HEAD + "spec:\n  template:\n    spec:\n      terms:\n"
    text += "      - labelSelector: {}\n        topologyKey: zone\n"
    add(
        text,
        ("spec", "template", "spec", "terms", 0, "labelSelector"),
        "matchExpressions",
        [EXPRESSION],
        text.replace(
            "labelSelector: {}\n",
            "labelSelector:\n          matchExpressions:\n          - key: app\n"
            "            operator: In\n            values:\n            - web\n",
        ),
    )
    commented = HEAD + "selector: {}  # everything\nnext: 1\n"
    add(
        commented,
        ("selector",),
        "matchExpressions",
        [EXPRESSION],
        HEAD + "selector:  # everything\n  matchExpressions: # expanded\n  - key: app\n"
        "    operator: In\n    values:\n    - web\nnext: 1\n",
        comment="expanded",
    )


def test_empty_flow_mapping_elsewhere_is_filled_in() -> None:
    text = HEAD + "selectors: [{}, { }]\n"
    add(text, ("selectors", 1), "a", "b", text.replace("{ }", "{a: b }"))
    own_line = HEAD + "selector:\n  {}\n"
    add(own_line, ("selector",), "a", ["b"], own_line.replace("{}", "{a: [b]}"))


def test_add_match_expressions_to_a_block_selector_with_match_labels_only() -> None:
    text = (
        HEAD
        + """\
spec:
  selector:
    matchLabels:
      app: web
  template:
    spec:
      containers:
        - name: web
          ports:
            - containerPort: 80
"""
    )
    add(
        text,
        ("spec", "selector"),
        "matchExpressions",
        [{"key": "tenant", "operator": "NotIn", "values": ["tenant-a", "yes"]}],
        text.replace(
            "app: web\n",
            "app: web\n    matchExpressions:\n      - key: tenant\n        operator: NotIn\n"
            '        values:\n          - tenant-a\n          - "yes"\n',
        ),
    )


def test_append_expressions_kubectl_style() -> None:
    text = (
        HEAD
        + """\
spec:
  selector:
    matchExpressions:
    - key: tenant
      operator: Exists
    matchLabels:
      app: web
"""
    )
    append(
        text,
        ("spec", "selector", "matchExpressions"),
        [{"key": "tenant", "operator": "NotIn", "values": ["tenant-a"]}],
        text.replace(
            "Exists\n",
            "Exists\n    - key: tenant\n      operator: NotIn\n      values:\n      - tenant-a\n",
        ),
    )


def test_append_to_block_sequences() -> None:
    indented = HEAD + "keys:\n  - app\n  -   tier # the tier\nafter: 1\n"
    append(
        indented,
        ("keys",),
        ["pod-template-hash", "a: b"],
        indented.replace("tier\n", 'tier\n  - pod-template-hash\n  - "a: b"\n'),
    )
    kubectl = HEAD + "keys:\n- app\n"
    append(kubectl, ("keys",), HASH, kubectl + "- pod-template-hash # new\n", comment="new")
    nested = HEAD + "spec:\n  matchLabelKeys:\n  - app\n  topologyKey: zone\n"
    append(
        nested,
        ("spec", "matchLabelKeys"),
        HASH,
        nested.replace("- app\n", "- app\n  - pod-template-hash\n"),
    )


def test_append_to_flow_sequences() -> None:
    text = HEAD + "keys: [app, tier ]\nnone: []\nspaced: [ ]\n"
    append(text, ("keys",), HASH, text.replace("tier ]", "tier, pod-template-hash ]"))
    append(text, ("none",), HASH, text.replace("none: []", "none: [pod-template-hash]"))
    append(text, ("spaced",), [1, "1"], text.replace("[ ]", '[1, "1" ]'))


def test_crlf_file() -> None:
    text = ANTI_BLOCK.replace("\n", "\r\n")
    add(
        text,
        (*ANTI, 0),
        "matchLabelKeys",
        HASH,
        text.replace(
            "kubernetes.io/hostname\r\n",
            "kubernetes.io/hostname\r\n            matchLabelKeys: [pod-template-hash]\r\n",
        ),
    )
    append(text, (*POD, "containers"), [{"name": "b"}], text + "      - name: b\r\n")


def test_file_without_trailing_newline() -> None:
    text = ANTI_BLOCK.removesuffix("\n      containers:\n      - name: web\n")
    assert not text.endswith("\n")
    add(text, (*ANTI, 0), "matchLabelKeys", HASH, text + "\n            matchLabelKeys: [pod-template-hash]")


def test_multi_document_file() -> None:
    first = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n"
    third = "# trailing\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
    text = f"{first}---\n{ANTI_BLOCK}---\n{third}"
    edit = add_entry(text, 1, (*ANTI, 0), "matchLabelKeys", HASH)
    expected = (
        f"{first}---\n"
        + ANTI_BLOCK.replace("hostname\n", "hostname\n            matchLabelKeys: [pod-template-hash]\n")
        + f"---\n{third}"
    )
    new = applies_as(text, edit, expected, (*ANTI, 0), "matchLabelKeys", HASH, doc_index=1)
    assert new.startswith(first + "---\n")
    assert new.endswith("---\n" + third)
    assert add_entry(text, 3, ("metadata",), "a", "b") is None


def test_kind_list_items() -> None:
    text = (
        "apiVersion: v1\nkind: List\nitems:\n"
        "- apiVersion: v1\n  kind: Service\n  metadata: {name: web}\n"
        "- apiVersion: apps/v1\n  kind: Deployment\n  spec:\n    template:\n      spec:\n"
        "        topologySpreadConstraints:\n        - topologyKey: zone\n          maxSkew: 1\n"
    )
    path = ("items", 1, *SPREAD, 0)
    add(
        text,
        path,
        "matchLabelKeys",
        HASH,
        text + "          matchLabelKeys: [pod-template-hash]\n",
    )


def test_non_ascii_before_the_insertion_point() -> None:
    text = HEAD + "labels: {app: café, team: 日本}\nnote: ключ — значение\n"
    add(text, ("labels",), "tier", "ü", text.replace("日本}", "日本, tier: ü}"))
    add(text, (), "extra", "x", text + "extra: x\n")
    emoji = HEAD + "selector: {matchLabels: {app: 😀😀}, x: []}\n"
    append(emoji, ("selector", "x"), ["y", "z"], emoji.replace("x: []", 'x: ["y", z]'))  # y: a YAML 1.1 bool


def test_json_document_stays_json() -> None:
    text = '{"apiVersion": "v1", "kind": "Pod", "spec": {"terms": [{"topologyKey": "zone"}]}}'
    new = add(
        text,
        ("spec", "terms", 0),
        "matchLabelKeys",
        HASH,
        text.replace('"zone"}', '"zone", "matchLabelKeys": ["pod-template-hash"]}'),
    )
    assert json.loads(new)["spec"]["terms"][0]["matchLabelKeys"] == HASH


def test_aliases_are_refused() -> None:
    text = HEAD + "shared: &s\n  app: web\nselector:\n  matchLabels: *s\nlist: &l [a]\nuse: *l\n"
    assert add_entry(text, 0, ("selector", "matchLabels"), "a", "b") is None  # *s
    assert add_entry(text, 0, ("shared",), "a", "b") is None  # &s, used by *s
    assert append_items(text, 0, ("list",), ["b"]) is None
    assert add_entry(text, 0, ("selector",), "a", "b") is None  # ends with an alias: marks are elsewhere
    assert find_node(text, 0, ("selector", "matchLabels", "app")) is None
    assert find_node(text, 0, ("selector",)) is not None
    # An anchor nobody refers to changes nothing; one at the end of a mapping is where it stands.
    lone = HEAD + "spec: &s\n  keys: &k [a]\n"
    append(lone, ("spec", "keys"), ["b"], lone.replace("[a]", "[a, b]"))
    add(lone, ("spec",), "c", 1, lone + "  c: 1\n")
    anchored_last = HEAD + "spec:\n  labels: &l\n    app: web\nother: *l\n"
    add(anchored_last, ("spec",), "c", 1, anchored_last.replace("app: web\n", "app: web\n  c: 1\n"))


def test_merge_keys_and_existing_keys_are_refused() -> None:
    text = HEAD + "base: &b {a: 1}\nspec:\n  <<: *b\n  c: 2\n"
    assert add_entry(text, 0, ("spec",), "d", 3) is None
    assert add_entry(ANTI_BLOCK, 0, (*ANTI, 0), "topologyKey", "x") is None


@pytest.mark.parametrize(
    ("path", "call"),
    [
        (("spec", "nothing"), "add"),
        ((*ANTI, 5), "add"),
        ((*ANTI, "0"), "add"),
        ((*ANTI, 0, "topologyKey"), "add"),  # a scalar
        (ANTI, "add"),  # a sequence
        ((*ANTI, 0), "append"),  # a mapping
        ((*ANTI, 0, "topologyKey"), "append"),
        (("metadata", "labels"), "add"),
    ],
)
def test_missing_paths_and_wrong_kinds(path: DataPath, call: str) -> None:
    if call == "add":
        assert add_entry(ANTI_BLOCK, 0, path, "matchLabelKeys", HASH) is None
    else:
        assert append_items(ANTI_BLOCK, 0, path, HASH) is None


def test_null_values_and_odd_input_give_none() -> None:
    text = HEAD + "spec:\n  selector:\n  labels: null\n  keys: ~\n"
    assert add_entry(text, 0, ("spec", "selector"), "a", "b") is None
    assert add_entry(text, 0, ("spec", "labels"), "a", "b") is None
    assert append_items(text, 0, ("spec", "keys"), ["a"]) is None
    assert add_entry("a: [b\n", 0, (), "c", "d") is None  # does not parse
    assert add_entry("", 0, (), "c", "d") is None
    assert compose("a: [b\n") == ()
    # Not an object (a chart's values file, a JSON 6902 patch): checked by the loader's builder.
    assert add_entry("not: a manifest\n", 0, (), "c", "d") == Edit(15, 15, "\nc: d")
    assert add_entry("not: a manifest\nc: 1\n", 0, (), "c", "d") is None  # the key is there
    assert add_entry(text, 0, ("spec",), "a", object()) is None  # cannot write that
    assert add_entry(text, 0, ("spec",), "a", float("nan")) is None
    assert append_items(text, 0, ("spec", "keys"), []) is None


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("web", "web"),
        ("yes", '"yes"'),
        ("No", '"No"'),
        ("null", '"null"'),
        ("~", '"~"'),
        ("", '""'),
        ("1", '"1"'),
        ("0777", '"0777"'),
        ("1e3", '"1e3"'),
        (".inf", '".inf"'),
        ("2024-01-02", '"2024-01-02"'),
        ("<x y>", '"<x y>"'),
        ("<pod-template-hash of this revision>", '"<pod-template-hash of this revision>"'),
        ("a: b", '"a: b"'),
        ("a #b", '"a #b"'),
        ("-x", '"-x"'),
        ("---", '"---"'),
        ("*x", '"*x"'),
        (" x", '" x"'),
        ('say "hi"\\', '"say \\"hi\\"\\\\"'),
        ("tab\there\n", '"tab\\there\\n"'),
        ("app.kubernetes.io/name", "app.kubernetes.io/name"),
        ("日本", "日本"),
        ("nbsp\u00a0", '"nbsp\\u00a0"'),
        ("line\u2028sep", '"line\\u2028sep"'),
        (3, "3"),
        (True, "true"),
        (None, "null"),
        (1.5, "1.5"),
    ],
)
def test_scalars_are_plain_only_when_they_read_back_the_same(value: Any, written: str) -> None:
    text = HEAD + "spec:\n  a: 1\n"
    add(text, ("spec",), "v", value, text + f"  v: {written}\n")
    add(text, ("spec",), "k", [value], text + f"  k: [{written}]\n")


def test_keys_that_need_quotes() -> None:
    text = HEAD + "labels:\n  a: 1\n"
    add(text, ("labels",), "on", "x", text + '  "on": x\n')


def test_apply_refuses_overlapping_or_ambiguous_edits() -> None:
    assert apply("abcdef", [Edit(4, 5, "E"), Edit(0, 0, ">"), Edit(2, 2, "|")]) == ">ab|cdEf"
    with pytest.raises(ValueError, match="overlap"):
        apply("abcdef", [Edit(1, 3, "x"), Edit(2, 4, "y")])
    with pytest.raises(ValueError, match="overlap"):
        apply("abcdef", [Edit(2, 2, "x"), Edit(2, 2, "y")])
    with pytest.raises(ValueError, match="outside"):
        apply("abc", [Edit(2, 9, "x")])


def test_several_edits_in_one_file() -> None:
    text = ANTI_BLOCK.replace(
        "      containers:", "      topologySpreadConstraints:\n      - topologyKey: zone\n      containers:"
    )
    edits = [
        add_entry(text, 0, (*ANTI, 0), "matchLabelKeys", HASH),
        add_entry(text, 0, (*SPREAD, 0), "matchLabelKeys", HASH),
    ]
    assert None not in edits
    new = apply(text, [edit for edit in edits if edit is not None])
    assert new.count("matchLabelKeys: [pod-template-hash]\n") == 2
    assert "topologyKey: zone\n        matchLabelKeys" in new


def test_detected_indentation_step() -> None:
    text = HEAD + "spec:\n    selector:\n        matchLabels:\n            app: web\n"
    add(
        text,
        ("spec",),
        "extra",
        {"a": {"b": ["c", "d"]}},
        text + "    extra:\n        a:\n            b:\n            - c\n            - d\n",
    )


# --- the real-world corpus -------------------------------------------------------------------------


def _terms(document: Any) -> list[tuple[DataPath, Any]]:
    """(path from the document root, term) of each required anti-affinity term and spread constraint."""
    pod: Any = document.data
    for key in POD:
        pod = pod.get(key) if isinstance(pod, dict) else None
    if not isinstance(pod, dict):
        return []
    found: list[tuple[DataPath, Any]] = []
    anti = pod.get("affinity")
    for key in ANTI[4:]:
        anti = anti.get(key) if isinstance(anti, dict) else None
    for relative, terms in ((ANTI, anti), (SPREAD, pod.get("topologySpreadConstraints"))):
        if isinstance(terms, list):
            found += [((*document.prefix, *relative, index), term) for index, term in enumerate(terms)]
    return found


def _corpus_files() -> list[Path]:
    return sorted(path for path in CORPUS.rglob("*") if path.suffix in (".yaml", ".yml", ".json"))


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the real-world corpus is not here")
def test_corpus_fix_edits_only_insert_the_key() -> None:
    """``kaffinity fix`` on every workload of the corpus: each edit inserts one line (or flow
    item) and nothing else, and the file with all its edits loads as before plus the keys."""
    counts: Counter[str] = Counter()
    for file in _corpus_files():
        text = decode(file.read_bytes())
        if "podAntiAffinity" not in text and "topologySpreadConstraints" not in text:
            continue
        edits: list[Edit] = []
        want: dict[int, Any] = {}
        for document in parse(os.fspath(file), text).documents:
            if document.data.get("kind") not in ("Deployment", "StatefulSet", "DaemonSet"):
                continue
            for path, term in _terms(document):
                counts["terms"] += 1
                keys = term.get("matchLabelKeys") if isinstance(term, dict) else None
                if isinstance(keys, list) and "pod-template-hash" in keys:
                    counts["already there"] += 1
                    continue
                if isinstance(keys, list):
                    edit = append_items(text, document.index, (*path, "matchLabelKeys"), HASH)
                else:
                    edit = add_entry(text, document.index, path, "matchLabelKeys", HASH, comment=NOTE)
                assert edit is not None, (file, path)
                counts["edited"] += 1
                assert edit.start == edit.end
                assert edit.text.lstrip(", \r\n") in (
                    f"matchLabelKeys: [pod-template-hash] # {NOTE}",
                    "matchLabelKeys: [pod-template-hash]",  # in a flow mapping
                    "- pod-template-hash",
                    "pod-template-hash",
                )
                new = apply(text, [edit])
                assert new[: edit.start] + new[edit.start + len(edit.text) :] == text
                assert all(line.strip() for line in edit.text.splitlines()[1:])
                if not want:
                    want = {index: json.loads(json.dumps(data)) for index, data in _roots(text).items()}
                if isinstance(keys, list):
                    _changed(want[document.index], (*path, "matchLabelKeys"), None, HASH)
                else:
                    _changed(want[document.index], path, "matchLabelKeys", HASH)
                edits.append(edit)
        if edits:
            new = apply(text, edits)  # all of the file's edits together
            assert len(new) == len(text) + sum(len(edit.text) for edit in edits)
            assert json.dumps(_roots(new)) == json.dumps(want), file
    assert counts["edited"] >= 60, counts
