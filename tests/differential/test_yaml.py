"""YAML read as kubectl reads it: kaffinity's loader against the oracle's ``yamlstream`` op.

kubectl splits a file into documents (k8s.io/apimachinery/pkg/util/yaml ``YAMLReader``: lines
starting with ``---``), converts each with sigs.k8s.io/yaml (go-yaml v2, YAML 1.1) and leaves
out the empty and null ones (k8s.io/cli-runtime ``StreamVisitor``); the oracle does exactly that
(oracle/yamlstream.go). kaffinity reads the same text with its loader
(:func:`kaffinity.load.parse.reader.documents_data`). Both must give the same JSON value for
every document, and both must refuse the same files.

Generated: YAML 1.1 scalars (booleans ``yes``/``no``/``on``/``off``, octal, hex, binary and
sexagesimal numbers, ``~`` and null, timestamps, big integers, ``.inf``/``.nan``, numbers with
underscores, strings that look like numbers, quoted or not), tags (``!!str``, ``!!int``,
``!!binary``, a custom tag), block scalars with every chomping and indentation indicator,
anchors, aliases and merge keys, duplicate keys, flow collections, comments in odd places,
document markers, a byte order mark, tabs and CRLF line ends; and whole manifests built of them.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kaffinity.load.parse import decode
from kaffinity.load.parse.reader import documents_data
from tests.differential.differences import known
from tests.differential.oracle import Oracle, compared, examples
from tests.test_goyaml import _same

SETTINGS = settings(
    max_examples=examples(),
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

#: Plain scalars whose reading YAML 1.1 and go-yaml decide (the YAML 1.2 reading often differs).
PLAIN = [
    "yes", "No", "ON", "off", "y", "n", "Y", "true", "False", "TRUE", "~", "null", "Null", "NULL",
    "0", "-0", "+1", "017", "0o17", "09", "0x1F", "0X1f", "0b101", "-0b11", "0x", "1_000", "1__0",
    "_1", "190:20:30", "-1:30", "1:2.5", "1.5", "1.", ".5", "-.5", "1e3", "1E+3", "1.0e-3", "1e",
    "6.8523015e+5", "685.230_15e+03", "+12e03", "9223372036854775807", "9223372036854775808",
    "18446744073709551615", "18446744073709551616", "-9223372036854775808",
    "-9223372036854775809", "123456789012345678901234567890", "1e400", "0.1e-400",
    ".inf", "-.Inf", "+.INF", ".nan", ".NaN", "2001-12-14", "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10 -5", "2002-12-14", "12:30", "1.2.3", "v1", "1Gi", "500m", "0.5",
    "1e-3", "=", "<<", "a b", "a:b", "a#b", "-", "--", "?x", "%x", "@x"[1:], "nginx:1.27",
]  # fmt: skip
#: Characters of random plain scalars near numbers.
NUMBERISH = "0123456789+-._:eExXoObB "

CUSTOM_TAGS = ["!!str", "!!int", "!!float", "!!bool", "!!null", "!!binary", "!custom", "!", "!!map", "!!seq"]


def _quoted(text: str, double: bool) -> str:
    if double:
        escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t")
        return f'"{escaped}"'
    return "'" + text.replace("'", "''") + "'"


words = st.sampled_from(["app", "web", "a", "b", "x", "zone", "key", "1", "true", "yes", "on", "~"])
numberish = st.text(alphabet=NUMBERISH, min_size=1, max_size=8).map(str.strip).filter(bool)
plain = st.sampled_from(PLAIN) | numberish
scalar_text = plain | words


@st.composite
def scalars(draw: st.DrawFn) -> str:
    """One scalar as written on a line: plain, quoted, tagged."""
    text = draw(scalar_text)
    form = draw(st.sampled_from(["plain", "plain", "plain", "single", "double", "tag", "binary"]))
    if form == "single":
        return _quoted(text, double=False)
    if form == "double":
        return _quoted(text, double=True)
    if form == "tag":
        tag = draw(st.sampled_from(CUSTOM_TAGS[:-2]))
        return f"{tag} {text}"
    if form == "binary":
        payload = base64.b64encode(draw(st.sampled_from([b"abc", b"\x00\xff", b"hello world", b""]))).decode()
        return f"!!binary {draw(st.sampled_from([payload, payload + '=', 'ab$c', payload[:-1] or 'a']))}"
    if text.startswith(("%", "@", "`", "!", "&", "*", "|", ">", "'", '"', "#", "[", "{", ",")):
        return _quoted(text, double=True)
    return text


@st.composite
def block_scalars(draw: st.DrawFn, indent: int) -> list[str]:
    """A literal or folded block scalar: the header, then its lines."""
    style = draw(st.sampled_from("|>"))
    chomp = draw(st.sampled_from(["", "-", "+"]))
    explicit = draw(st.sampled_from(["", "", "2"]))
    header = style + (explicit + chomp if draw(st.booleans()) else chomp + explicit)
    comment = draw(st.sampled_from(["", " # note"]))
    pad = " " * (indent + (int(explicit) if explicit else 2))
    lines = draw(
        st.lists(
            st.sampled_from(
                ["one", "two words", "", "  more indented", "\ttab", "x: y", "# no comment", " "]
            ),
            min_size=0,
            max_size=4,
        )
    )
    body = [pad + line if line.strip() else line for line in lines]
    trailing = draw(st.sampled_from([[], [""], ["", ""]]))
    return [header + comment, *body, *trailing]


@st.composite
def mappings(draw: st.DrawFn, indent: int = 0, depth: int = 0, anchors: list[str] | None = None) -> list[str]:
    """The lines of a block mapping at ``indent``: scalars, block scalars, flow collections,
    nested mappings and sequences, anchors, aliases and merge keys, comments."""
    anchors = anchors if anchors is not None else []
    pad = " " * indent
    lines: list[str] = []
    count = draw(st.integers(1, 4))
    keys = draw(
        st.lists(
            st.sampled_from(["a", "b", "c", "yes", "1", "~", "on", "0x1", "k k"]),
            min_size=count,
            max_size=count,
        )
    )
    for key in keys:
        form = draw(
            st.sampled_from(
                ["scalar", "scalar", "scalar", "block", "flow", "map", "seq", "alias", "merge", "empty"]
            )
        )
        comment = draw(st.sampled_from(["", "", " # c", "  #c:x"]))
        anchor = ""
        if draw(st.integers(0, 5)) == 0:
            name = f"a{len(anchors)}"
            anchors.append(name)
            anchor = f"&{name} "
        if form == "scalar":
            lines.append(f"{pad}{key}: {anchor}{draw(scalars())}{comment}")
        elif form == "empty":
            lines.append(f"{pad}{key}:{comment}")
        elif form == "block":
            head, *rest = draw(block_scalars(indent))
            lines.append(f"{pad}{key}: {anchor}{head}")
            lines.extend(rest)
        elif form == "flow":
            items = draw(st.lists(scalars(), max_size=3))
            if draw(st.booleans()):
                lines.append(f"{pad}{key}: {anchor}[{', '.join(items)}]{comment}")
            else:
                pairs = ", ".join(f"k{i}: {item}" for i, item in enumerate(items))
                lines.append(f"{pad}{key}: {anchor}{{{pairs}}}{comment}")
        elif form == "map" and depth < 2:
            lines.append(f"{pad}{key}: {anchor}".rstrip() + comment)
            lines.extend(draw(mappings(indent + 2, depth + 1, anchors)))
        elif form == "seq" and depth < 2:
            lines.append(f"{pad}{key}: {anchor}".rstrip() + comment)
            inner = " " * (indent + draw(st.sampled_from([0, 2])))
            for item in draw(st.lists(scalars(), min_size=1, max_size=3)):
                lines.append(f"{inner}- {item}")
        elif form == "alias" and anchors:
            lines.append(f"{pad}{key}: *{draw(st.sampled_from(anchors))}{comment}")
        elif form == "merge" and anchors:
            chosen = draw(st.lists(st.sampled_from(anchors), min_size=1, max_size=2))
            target = f"*{chosen[0]}" if len(chosen) == 1 else "[" + ", ".join(f"*{a}" for a in chosen) + "]"
            lines.append(f"{pad}<<: {target}{comment}")
        else:
            lines.append(f"{pad}{key}: {anchor}{draw(scalars())}")
        if draw(st.integers(0, 7)) == 0:
            lines.append(draw(st.sampled_from(["", "# a comment", f"{pad}# indented comment", "  "])))
    return lines


MARKERS = [
    "---", "---", "--- # doc", "---  ", "...\n---", "--- |\n  text", "--- !!map\na: 1", "---x", "...",
    "---\n...", "%YAML 1.1\n---", "---\n%YAML 1.1\n---", "---\n# c\n...\n---",
]  # fmt: skip


@st.composite
def streams(draw: st.DrawFn) -> str:
    """A file: documents (mappings, or now and then empty, a comment, a scalar, a list) joined
    by document markers, with a byte order mark, a leading marker, CRLF or tabs sometimes."""
    documents = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(
            st.sampled_from(["map", "map", "map", "map", "empty", "comment", "scalar", "list", "null"])
        )
        if kind == "map":
            documents.append("\n".join(draw(mappings())))
        elif kind == "empty":
            documents.append("")
        elif kind == "comment":
            documents.append("# only a comment")
        elif kind == "scalar":
            documents.append(draw(scalars()))
        elif kind == "list":
            documents.append("- a\n- b")
        else:
            documents.append("~")
    text = ""
    for index, document in enumerate(documents):
        if index:
            text += "\n" + draw(st.sampled_from(MARKERS)) + "\n"
        text += document
    if draw(st.booleans()):
        text = "---\n" + text
    text += draw(st.sampled_from(["\n", "\n", "", "\n\n", "\n...\n", "\n---\n"]))
    if draw(st.integers(0, 9)) == 0:
        text = "\ufeff" + text
    if draw(st.integers(0, 9)) == 0:
        text = text.replace("\n", "\r\n")
    if draw(st.integers(0, 14)) == 0:
        text = text.replace(": ", ":\t", 1)
    return text


def _plain(value: Any) -> Any:
    """kaffinity's value (PosDict/PosList) as plain JSON values."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def compare_stream(oracle: Oracle, text: str) -> None:
    """kaffinity reads ``text`` as kubectl does: the same documents, the same values, refused alike."""
    answer = oracle.ask({"op": "yamlstream", "yaml": text})
    # a file's bytes are decoded first (kaffinity.load.parse.decode drops a byte order mark)
    values, problem, duplicates = documents_data(decode(text.encode()))
    compared("yaml")
    refused = problem is not None
    if answer["ok"] != (not refused):
        if refused and _known_refusal(text, answer):
            return
        raise AssertionError(
            f"kubectl {'reads' if answer['ok'] else 'refuses'} it "
            f"({answer.get('error') or answer['documents']}); kaffinity "
            f"{'refuses' if refused else 'reads'} it ({problem or _plain(values)})"
        )
    if not answer["ok"]:
        return  # both refuse
    assert len(values) == len(answer["documents"]), (_plain(values), answer["documents"])
    for found, expected in zip(values, answer["documents"], strict=True):
        if not _same(_plain(found), expected) and _NON_SPECIFIC.search(text):
            known("yaml", "non-specific-tag")
            continue
        assert _same(_plain(found), expected), (_plain(found), expected)
    if duplicates:
        known("yaml", "duplicate-keys")


#: kaffinity's refusals of what JSON cannot hold (a null key, NaN, an infinity).
_NOT_JSON = ("a null key", "is not a number JSON can hold")


def _known_refusal(text: str, answer: dict[str, Any]) -> bool:
    """kaffinity refuses a value JSON cannot hold that a later duplicate key replaces (kubectl,
    converting only what is left, reads it)."""
    _, problem, _ = documents_data(decode(text.encode()))
    if problem is not None and answer["ok"] and any(words in problem.message for words in _NOT_JSON):
        known("yaml", "refused-value-replaced")
        return True
    return False


#: A scalar tagged with the non-specific tag `!` (see differences.yaml, yaml/non-specific-tag).
_NON_SPECIFIC = re.compile(r"(?:^|[\s\[{,:\-\ufeff])!\s", re.M)


@SETTINGS
@given(text=streams())
@example(text="a: 1\n--- |\n  text\n")  # a separator with content: kubectl refuses it
@example(text="a: 1\n---\n\n...\n")  # a document end with no document: go-yaml refuses it
@example(text="%YAML 1.1\n---\na: 1\n")  # a directive, then ---: a part of its own for kubectl
@example(text="yes\n...\n- a\n- b\n")  # after `...`, go-yaml reads nothing more of the part
@example(text="a: |\r\n  one")  # a block scalar ending the input: a line break for go-yaml
@example(text="a: !!binary YWJj=\n")  # excess base64 padding: Go refuses it
@example(text="a: !!binary 0+2B\n")  # invalid UTF-8: one U+FFFD per byte, as Go's JSON
@example(text="a: !!null yes\n")  # an explicit tag checks the type of the plain reading
@example(text="a:\n  ~: x\na: y\n")  # documented: refused-value-replaced
@example(text="a: .inf\na: yes\n")  # documented: refused-value-replaced
@example(text="\ufeff! yes\r\n")  # documented: non-specific-tag
def test_streams_read_as_kubectl_reads_them(oracle: Oracle, text: str) -> None:
    compare_stream(oracle, text)


MANIFEST_VALUES = st.sampled_from(
    ["1", "'1'", "yes", '"yes"', "0x10", "017", "1e3", "1_0", "~", "", "!!str 1", "1:30", "on", "2001-12-14"]
)


@st.composite
def manifests(draw: st.DrawFn) -> str:
    """Whole Deployments, their scheduling fields written with YAML 1.1 edge cases."""
    replicas, skew, weight, label = (draw(MANIFEST_VALUES) for _ in range(4))
    anchor = draw(st.sampled_from(["&labels ", ""]))
    labels_ref = "*labels" if anchor else "{app: web}"
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {anchor}{{app: web, tier: {label}}}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {labels_ref}
  template:
    metadata:
      labels:
        <<: {labels_ref}
        version: {label}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        args: [--port=8080, {label}]
      topologySpreadConstraints:
      - maxSkew: {skew}
        topologyKey: topology.kubernetes.io/zone
        whenUnsatisfiable: DoNotSchedule
        labelSelector: {{matchLabels: {labels_ref}}}
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: {weight}
            podAffinityTerm:
              topologyKey: kubernetes.io/hostname
              labelSelector:
                matchExpressions:
                - {{key: app, operator: In, values: [{label}, web]}}
"""


@SETTINGS
@given(text=manifests())
def test_manifests_read_as_kubectl_reads_them(oracle: Oracle, text: str) -> None:
    compare_stream(oracle, text)
