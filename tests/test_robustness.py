"""Robustness: more malformed YAML, YAML tags, duplicate keys, a 50 MB file, symlink
loops, FIFOs, unreadable files, empty stdin, wrong types everywhere (hypothesis), determinism,
inputs never modified, nothing fetched from the network.

``tests/test_hostile.py`` covers the rest (binary, latin-1, deep nesting, alias bomb, tabs,
missing inputs); nothing here repeats it. Hypothesis runs derandomized with bounded examples
(https://hypothesis.readthedocs.io/en/latest/settings.html) so CI is deterministic.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kaffinity.config import Settings
from kaffinity.engine import LintResult, lint
from kaffinity.findings import Severity
from kaffinity.load.files import load
from kaffinity.load.parse import SourceFile, parse
from kaffinity.rules import RULES
from kaffinity.simulate.cluster import cluster_from

from .kit import (
    EXAMPLES,
    REPO,
    findings,
    keys,
    lines,
    lint_paths,
    no_internal_error,
    position,
    run,
    run_bytes,
)

GOOD = (
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ok\n"
    "  annotations:\n    kaffinity.io/ignore: nothing-here\n"
)
GOOD_FINDING = "zz-good.yaml:6:5: info [unused-suppression]"

POD = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {}\n"

# name: (content, the line the one-line error must name)
MALFORMED: dict[str, tuple[bytes, int]] = {
    "unclosed-double.yaml": (b'apiVersion: v1\nkind: Pod\nmetadata:\n  name: "x\n', 5),
    "unclosed-single.yaml": (b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: 'x\n  labels: {}\n", 6),
    "unclosed-flow.yaml": (b"apiVersion: v1\nkind: Pod\nmetadata: {name: x\n", 4),
    "bad-indent.yaml": (b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n   labels: {}\n", 5),
    "bom-mid-file.yaml": (b"apiVersion: v1\nkind: Pod\n\xef\xbb\xbfmetadata:\n  name: x\n", 3),
    "nul-in-flow.yaml": (b"apiVersion: v1\nkind: Pod\nmetadata: {name: a\x00b}\n", 3),
    "crlf-broken.yaml": (b"apiVersion: v1\r\nkind: Pod\r\nmetadata:\r\n  name: [x\r\n  labels: {}\r\n", 5),
    # Explicit core tags whose text is not of the type: ruamel raises ValueError/KeyError.
    "bad-int-tag.yaml": (POD.format("!!int x").encode(), 4),
    "bad-float-tag.yaml": (POD.format("!!float x").encode(), 4),
    "bad-bool-tag.yaml": (POD.format("!!bool x").encode(), 4),
    "bad-timestamp-tag.yaml": (POD.format("!!timestamp x").encode(), 4),
    "bad-merge.yaml": (b"apiVersion: v1\nkind: Pod\nmetadata:\n  <<: [1]\n  name: x\n", 4),
}

# Python object tags: never constructed. Each one would create this file if it were.
PYTHON_TAGS = (
    "!!python/object:os.system",
    "!!python/object/apply:os.system",
    "!!python/object/new:os.system",
    "!!python/name:os.system",
    "!!python/module:os",
    "!<tag:yaml.org,2002:python/object/apply:os.system>",
)


def _headline(out: str, path: Path) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(f"{path}:") and "[parse-error]" in line]


@pytest.fixture
def malformed_dir(tmp_path: Path) -> Path:
    for name, (content, _) in MALFORMED.items():
        (tmp_path / name).write_bytes(content)
    (tmp_path / "zz-good.yaml").write_text(GOOD)
    return tmp_path


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_file_gives_one_line_error_with_line(malformed_dir: Path, name: str) -> None:
    path = malformed_dir / name
    completed = run("lint", "--no-config", str(path), str(malformed_dir / "zz-good.yaml"))
    assert completed.returncode == 2, completed.stdout + completed.stderr
    assert completed.stderr == ""  # no internal error, no library warning
    (headline,) = _headline(completed.stdout, path)
    assert headline.startswith(f"{path}:{MALFORMED[name][1]}:"), headline
    assert GOOD_FINDING in completed.stdout  # the good file linted alongside keeps its finding
    result = lint_paths(path, malformed_dir / "zz-good.yaml")
    assert lines(findings(result, "parse-error")) == [("parse-error", MALFORMED[name][1])]
    assert keys(findings(result, "unused-suppression")) == [
        ("unused-suppression", *position(GOOD, "kaffinity.io/ignore"))
    ]


def test_all_malformed_files_together(malformed_dir: Path) -> None:
    completed = run("lint", "--no-config", "--format", "json", str(malformed_dir))
    assert completed.returncode == 2
    findings = json.loads(completed.stdout)["findings"]
    errors = [finding for finding in findings if finding["rule"] == "parse-error"]
    assert sorted(Path(finding["file"]).name for finding in errors) == sorted(MALFORMED)
    assert all(finding["line"] and "\n" not in finding["message"] for finding in errors)
    assert any(finding["rule"] == "unused-suppression" for finding in findings)


@pytest.mark.parametrize(
    ("content", "findings"),
    [
        (b"---\n", 0),  # a document of only `---`: nothing to lint, not an error
        (b"---\n...\n---\n", 0),
        (GOOD.replace("\n", "\r\n").encode(), 1),  # CRLF: same positions as LF
        (b"\xef\xbb\xbf" + GOOD.encode(), 1),  # a leading BOM is allowed
    ],
)
def test_odd_but_valid_yaml(tmp_path: Path, content: bytes, findings: int) -> None:
    path = tmp_path / "odd.yaml"
    path.write_bytes(content)
    completed = run("lint", "--no-config", "--format", "json", str(path))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    found = json.loads(completed.stdout)["findings"]
    assert [(f["rule"], f["line"], f["column"]) for f in found] == [("unused-suppression", 6, 5)] * findings


@pytest.mark.parametrize("tag", PYTHON_TAGS)
def test_python_tags_never_construct_objects(tmp_path: Path, tag: str) -> None:
    marker = tmp_path / "constructed"
    path = tmp_path / "tag.yaml"
    path.write_text(POD.format(f'{tag} ["touch {marker}"]'))
    completed = run("lint", "--no-config", "--format", "json", str(path))
    assert not marker.exists()
    assert completed.returncode in (0, 1, 2)
    assert completed.stderr == ""
    # Either reported on its line (an unknown core tag) or kept as plain data.
    for finding in json.loads(completed.stdout)["findings"]:
        if finding["rule"] == "parse-error":
            assert finding["line"] == 4
    (doc,) = parse("tag.yaml", path.read_text()).documents or (None,)
    if doc is not None:
        name = doc.data["metadata"]["name"]
        assert isinstance(name, (str, list)) and all(isinstance(item, str) for item in name)


def test_core_tags_give_plain_data() -> None:
    """`!!binary`, `!!set`, `!!omap` and merge keys: plain data, positions kept, no crash.
    `!!binary` is the decoded text, as go-yaml decodes it into a Go string (bytes
    used to make every rule that serialises the object fail)."""
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n"
        "  annotations: &base {app: web, tier: front}\n"
        "  labels:\n    <<: *base\n    tier: back\n"
        "  ownerReferences: !!omap [a: b, c: d]\n"
        "  finalizers: !!set {a, b}\n"
        "  uid: !!binary aGVsbG8=\n"
    )
    (doc,) = parse("tags.yaml", text).documents
    metadata = doc.data["metadata"]
    assert dict(metadata["labels"]) == {"app": "web", "tier": "back"}  # explicit key wins the merge
    assert list(metadata["finalizers"]) == ["a", "b"]
    assert metadata["uid"] == "hello"
    result = lint([parse("tags.yaml", text)], Settings())
    assert result.internal_errors == ()
    # A string where an object belongs is reported on its line, not a crash.
    binary = lint([parse("bin.yaml", POD.format("x") + "  labels: !!binary aGVsbG8=\n")], Settings())
    assert binary.internal_errors == ()
    assert [(f.rule, f.line) for f in binary.findings] == [("schema", 5)]


def test_duplicate_keys_are_a_parse_error_and_the_later_value_is_linted(tmp_path: Path) -> None:
    """kubectl refuses a file with a key given twice in one mapping (strict YAML decoding:
    `mapping key "name" already defined at line 4`; the API server's strict field validation,
    kubectl's default, too). kaffinity reports it as a parse-error at the second key, exit 2,
    and still lints the document with the later value (what `--validate=false` would apply)."""
    text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: first\n  labels: {}\n  name: second\n"
    source = parse("dup.yaml", text)
    (doc,) = source.documents
    assert doc.data["metadata"]["name"] == "second"
    assert list(doc.data["metadata"]) == ["name", "labels"]
    assert [(dup.key, dup.span.line, dup.first.line) for dup in doc.duplicate_keys] == [("name", 6, 4)]
    assert [(p.rule, p.span, p.message) for p in source.problems] == [
        ("parse-error", (6, 3), 'mapping key "name" already defined at line 4')
    ]
    path = tmp_path / "dup.yaml"
    path.write_text(text + "spec:\n  affinity:\n    podAfinity: {}\n")
    (tmp_path / "zz-good.yaml").write_text(GOOD)
    completed = run("lint", "--no-config", str(tmp_path))
    assert completed.returncode == 2 and completed.stderr == ""
    assert f'{path}:6:3: error [parse-error] mapping key "name" already defined at line 4' in completed.stdout
    assert f"{path}:9:5: error [schema] Pod default/second: unknown field" in completed.stdout  # still linted
    assert GOOD_FINDING in completed.stdout


# --- size ---------------------------------------------------------------------------------------

_50MB = 50_000_000
_DOC = "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{}\n  annotations:\n    note: {}\n"


#: Runs a command and writes the peak RSS of that command alone (its own process's children:
#: the command) to the file argv[1]; the test process's RUSAGE_CHILDREN would be the largest of
#: every child the test run started (the SARIF Multitool's .NET process, say).
_MEASURE = """\
import resource, subprocess, sys
done = subprocess.run(sys.argv[2:], capture_output=True, check=False)
sys.stdout.buffer.write(done.stdout)
sys.stderr.buffer.write(done.stderr)
with open(sys.argv[1], "w") as handle:
    handle.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(done.returncode)
"""


def _run_measured(*args: str) -> tuple[subprocess.CompletedProcess[bytes], float, int]:
    """Run the CLI; its wall time and its own peak RSS (bytes)."""
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        report = os.path.join(scratch, "rss")
        start = time.perf_counter()
        completed = subprocess.run(
            [sys.executable, "-c", _MEASURE, report, sys.executable, "-m", "kaffinity", *args],
            capture_output=True,
            timeout=300,
            check=False,
        )
        elapsed = time.perf_counter() - start
        with open(report) as handle:
            peak = int(handle.read()) * 1024
    no_internal_error(completed.returncode, completed.stderr)
    return completed, elapsed, peak


def test_file_over_the_size_limit_is_one_line_error_and_not_read(tmp_path: Path) -> None:
    """The default limit is 32 MiB per file (Limits.file_size): a 50 MB file is a parse-error
    naming its size and the limit, without being read; the other files are linted."""
    big = tmp_path / "big.yaml"
    with big.open("wb") as handle:
        handle.truncate(_50MB)  # sparse: what matters is the size the file system reports
    (tmp_path / "zz-good.yaml").write_text(GOOD)
    completed, elapsed, _ = _run_measured("lint", "--no-config", str(tmp_path))
    assert completed.returncode == 2 and completed.stderr == b""
    out = completed.stdout.decode()
    assert (
        f"{big}:1:1: error [parse-error] 47.7 MiB, more than the limit of 32 MiB per file "
        "(limits: file-size; --limit file-size=SIZE or --max-file-size raises it)" in out
    )
    assert GOOD_FINDING in out
    assert elapsed < 5.0


def test_stdin_over_the_size_limit(tmp_path: Path) -> None:
    completed = run_bytes(
        "lint",
        "--no-config",
        "--max-file-size",
        "1Ki",
        "-",
        stdin=POD.format("x") + "  annotations:\n    blob: " + "a" * 5000 + "\n",
    )
    assert completed.returncode == 2 and completed.stderr == b""
    assert b"<stdin>:1:1: error [parse-error] more than the limit of 1 KiB per file" in completed.stdout


def test_limits_from_the_config_file(tmp_path: Path) -> None:
    """`limits:` in .kaffinity.yaml: depth and alias-nodes change where input is refused."""
    (tmp_path / ".kaffinity.yaml").write_text("limits:\n  depth: 6\n  alias-nodes: 20\n  file-size: 1Mi\n")
    deep = POD.format("deep") + "  annotations: {a: [[[[[[1]]]]]]}\n"  # 9 levels
    (tmp_path / "deep.yaml").write_text(deep)
    laughs = "a: &a [1, 2, 3, 4, 5]\nb: &b [*a, *a, *a, *a, *a]\nc: [*b, *b]\n"
    (tmp_path / "laughs.yaml").write_text(POD.format("l") + "  annotations: {}\n---\n" + laughs)
    (tmp_path / "zz-good.yaml").write_text(GOOD)
    completed = run("lint", ".", cwd=tmp_path)
    assert completed.returncode == 2 and completed.stderr == ""
    assert (
        "deep.yaml:5:23: error [parse-error] nesting deeper than 6 levels (limits: depth)" in completed.stdout
    )
    assert "laughs.yaml:7:4: error [parse-error] aliases expand this file beyond 20 nodes" in completed.stdout
    assert GOOD_FINDING in completed.stdout
    # The same, as data: the first node past 6 levels (root, metadata, the annotations' mapping,
    # then one level per bracket: the fourth), the anchor whose aliases expand too far.
    report = json.loads(run("lint", "--format", "json", ".", cwd=tmp_path).stdout)
    line, brackets = position(deep, "[[[[[[1")
    laughs_text = (tmp_path / "laughs.yaml").read_text()
    assert keys(report) == [
        ("parse-error", line, brackets + 3),
        ("parse-error", *position(laughs_text, "&a")),
        ("unused-suppression", *position(GOOD, "kaffinity.io/ignore")),
    ]
    # The defaults accept both files.
    default = run("lint", "--no-config", str(tmp_path / "deep.yaml"), str(tmp_path / "laughs.yaml"))
    assert "parse-error" not in default.stdout, default.stdout


def test_bad_limits_in_the_config_file_are_errors_at_their_lines(tmp_path: Path) -> None:
    (tmp_path / ".kaffinity.yaml").write_text("jobs: 0\nlimits:\n  file-size: lots\n  depth: 20000\n")
    completed = run("lint", ".", cwd=tmp_path)
    assert completed.returncode == 2 and completed.stdout == ""
    assert sorted(completed.stderr.splitlines()) == [
        ".kaffinity.yaml:1:1: error: jobs: expected at least 1, got 0",
        ".kaffinity.yaml:3:3: error: limits.file-size: expected bytes or a quantity such as 16Mi or 10M, "
        "got 'lots'",
        ".kaffinity.yaml:4:3: error: limits.depth: 20000 is more than the default, 400: a configuration "
        "file may lower a limit, not raise it (raise it on the command line, --limit depth=20000, or in "
        "KAFFINITY_LIMITS)",
    ]


@pytest.mark.parametrize(
    ("value", "size"), [("64Mi", 64 << 20), ("100M", 100_000_000), ("1.5Ki", 1536), (4096, 4096)]
)
def test_sizes_are_kubernetes_quantities(value: str | int, size: int) -> None:
    from kaffinity.config import parse_size

    assert parse_size(value) == size


@pytest.mark.parametrize("value", ["lots", "0", "12Xi", "-5", "0.5"])
def test_bad_max_file_size_is_a_usage_error(value: str) -> None:
    completed = run("lint", "--no-config", "--max-file-size", value, str(EXAMPLES))
    assert completed.returncode == 2
    assert (
        completed.stderr.strip() == f"--max-file-size: '{value}' is not a size such as 64Mi, 512Ki or 1048576"
    )


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["many-documents", "one-scalar"])
def test_50mb_file_bounded_time_and_memory(tmp_path: Path, shape: str) -> None:
    """With the limit raised, a 50 MB file is linted. Measured here (2 cores, `/usr/bin/time -v
    kaffinity lint`): 46,000 documents of 1 kB: 2.2 s, 265 MB peak RSS; one 50 MB scalar: 0.8 s,
    250 MB. Bounds: time x5, memory 600 MB (the command's own peak, measured by a wrapper
    process: this process's RUSAGE_CHILDREN is the largest of all its children so far)."""
    path = tmp_path / "big.yaml"
    with path.open("w") as handle:
        if shape == "one-scalar":
            handle.write(POD.format("big") + "  annotations:\n    blob: " + "a" * _50MB + "\n")
        else:
            padding = "x" * 1_000
            for index in range(_50MB // (len(padding) + 80)):
                handle.write(_DOC.format(index, padding))
    (tmp_path / "zz-good.yaml").write_text(GOOD)
    completed, elapsed, peak = _run_measured("lint", "--no-config", "--max-file-size", "64Mi", str(tmp_path))
    assert completed.returncode == 0, completed.stdout[-2000:]
    assert GOOD_FINDING.encode() in completed.stdout
    assert elapsed < (11.0 if shape == "many-documents" else 4.0), elapsed
    assert peak < 600_000_000, peak


# --- the file system ----------------------------------------------------------------------------


def test_symlink_loops(tmp_path: Path) -> None:
    (tmp_path / "zz-good.yaml").write_text(GOOD)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "up").symlink_to("..")  # a folder linking to its parent
    (tmp_path / "loop-a.yaml").symlink_to("loop-b.yaml")  # a file link loop
    (tmp_path / "loop-b.yaml").symlink_to("loop-a.yaml")
    completed = run("lint", "--no-config", str(tmp_path))
    assert completed.returncode == 2
    out = completed.stdout
    assert out.count(GOOD_FINDING) == 1  # read once despite the folder loop
    for name in ("loop-a.yaml", "loop-b.yaml"):
        assert f"{tmp_path / name}: error [parse-error] cannot read: Too many levels of symbolic links" in out
    # A file that cannot be read has no line; the good file's finding is where it is, once.
    result = lint_paths(tmp_path)
    assert keys(result) == [
        ("parse-error", None, None),
        ("parse-error", None, None),
        ("unused-suppression", *position(GOOD, "kaffinity.io/ignore")),
    ]
    assert [Path(f.file).name for f in result.findings] == ["loop-a.yaml", "loop-b.yaml", "zz-good.yaml"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_does_not_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.yaml")  # no writer: reading it must not block
    (tmp_path / "zz-good.yaml").write_text(GOOD)
    in_folder = run("lint", "--no-config", str(tmp_path))  # kit.run times out at 120 s
    assert in_folder.returncode == 0 and "pipe.yaml" not in in_folder.stdout  # skipped in a walk
    assert GOOD_FINDING in in_folder.stdout
    named = run("lint", "--no-config", str(tmp_path / "pipe.yaml"), str(tmp_path / "zz-good.yaml"))
    assert named.returncode == 0  # named: read as empty
    assert GOOD_FINDING in named.stdout


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "secret.yaml"
    path.write_text(GOOD)
    path.chmod(0)
    (tmp_path / "zz-good.yaml").write_text(GOOD)
    try:
        if os.access(path, os.R_OK):
            pytest.skip("running as root: a chmod 000 file is still readable")
        completed = run("lint", "--no-config", str(tmp_path))
        result = lint_paths(tmp_path)
    finally:
        path.chmod(0o644)
    # A file that cannot be read has no line; the good file's finding is where it is.
    assert keys(result) == [
        ("parse-error", None, None),
        ("unused-suppression", *position(GOOD, "kaffinity.io/ignore")),
    ]
    assert completed.returncode == 2
    assert f"{path}: error [parse-error] cannot read: Permission denied" in completed.stdout
    assert GOOD_FINDING in completed.stdout


def test_directory_named_like_a_manifest_inside_a_folder(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").mkdir()
    (tmp_path / "zz-good.yaml").write_text(GOOD)
    completed = run("lint", "--no-config", str(tmp_path))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "x.yaml" not in completed.stdout and GOOD_FINDING in completed.stdout


@pytest.mark.parametrize("stdin", [b"", b"  \n\n   \n", b"# only a comment\n\n---\n# another\n"])
def test_empty_stdin(stdin: bytes) -> None:
    completed = run("lint", "--no-config", "--format", "json", "-", stdin=stdin)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert keys(json.loads(completed.stdout)) == []


# --- wrong types everywhere (hypothesis) --------------------------------------------------------


def _deep(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = {"a": [value]}
    return value


ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 2**64, 10**30]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(["", "web", "1", "50%", "abc%", "1e3", "-1", "true"]),
    st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=4)), max_size=3),
    st.dictionaries(
        st.text(max_size=4), st.one_of(st.none(), st.integers(), st.text(max_size=4)), max_size=3
    ),
    st.integers(1, 60).map(_deep),
)


def _maybe(value: Any) -> st.SearchStrategy[Any]:
    """The valid value, or a value of the wrong type."""
    return st.one_of(st.just(value), ODD)


def _pod_spec() -> st.SearchStrategy[dict[str, Any]]:
    selector = st.fixed_dictionaries(
        {},
        optional={
            "matchLabels": _maybe({"app": "web"}),
            "matchExpressions": _maybe([{"key": "app", "operator": "In", "values": ["web"]}]),
        },
    )
    pod_term = st.fixed_dictionaries(
        {"topologyKey": _maybe("kubernetes.io/hostname")},
        optional={
            "labelSelector": st.one_of(selector, ODD),
            "namespaces": _maybe(["default"]),
            "namespaceSelector": st.one_of(selector, ODD),
            "matchLabelKeys": _maybe(["pod-template-hash"]),
            "mismatchLabelKeys": _maybe(["tenant"]),
        },
    )
    weighted = st.fixed_dictionaries({"weight": _maybe(50), "podAffinityTerm": st.one_of(pod_term, ODD)})
    pod_affinity = st.fixed_dictionaries(
        {},
        optional={
            "requiredDuringSchedulingIgnoredDuringExecution": st.one_of(st.lists(pod_term, max_size=2), ODD),
            "preferredDuringSchedulingIgnoredDuringExecution": st.one_of(st.lists(weighted, max_size=2), ODD),
        },
    )
    node_term = st.fixed_dictionaries(
        {},
        optional={
            "matchExpressions": _maybe([{"key": "zone", "operator": "In", "values": ["a"]}]),
            "matchFields": _maybe([{"key": "metadata.name", "operator": "In", "values": ["n1"]}]),
        },
    )
    node_affinity = st.fixed_dictionaries(
        {},
        optional={
            "requiredDuringSchedulingIgnoredDuringExecution": st.one_of(
                st.fixed_dictionaries({"nodeSelectorTerms": st.one_of(st.lists(node_term, max_size=2), ODD)}),
                ODD,
            ),
            "preferredDuringSchedulingIgnoredDuringExecution": st.one_of(
                st.lists(st.fixed_dictionaries({"weight": _maybe(1), "preference": node_term}), max_size=2),
                ODD,
            ),
        },
    )
    affinity = st.fixed_dictionaries(
        {},
        optional={
            "podAffinity": st.one_of(pod_affinity, ODD),
            "podAntiAffinity": st.one_of(pod_affinity, ODD),
            "nodeAffinity": st.one_of(node_affinity, ODD),
        },
    )
    spread = st.fixed_dictionaries(
        {
            "maxSkew": _maybe(1),
            "topologyKey": _maybe("topology.kubernetes.io/zone"),
            "whenUnsatisfiable": _maybe("DoNotSchedule"),
        },
        optional={
            "labelSelector": st.one_of(selector, ODD),
            "minDomains": _maybe(2),
            "matchLabelKeys": _maybe(["pod-template-hash"]),
            "nodeAffinityPolicy": _maybe("Honor"),
            "nodeTaintsPolicy": _maybe("Ignore"),
        },
    )
    toleration = st.fixed_dictionaries(
        {},
        optional={
            "key": _maybe("dedicated"),
            "operator": _maybe("Equal"),
            "value": _maybe("x"),
            "effect": _maybe("NoSchedule"),
            "tolerationSeconds": _maybe(30),
        },
    )
    container = st.fixed_dictionaries(
        {"name": _maybe("c"), "image": _maybe("nginx")},
        optional={"resources": _maybe({"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": 1}})},
    )
    return st.fixed_dictionaries(
        {"containers": st.one_of(st.lists(container, min_size=1, max_size=2), ODD)},
        optional={
            "affinity": st.one_of(affinity, ODD),
            "topologySpreadConstraints": st.one_of(st.lists(spread, max_size=2), ODD),
            "tolerations": st.one_of(st.lists(toleration, max_size=2), ODD),
            "nodeSelector": _maybe({"zone": "a"}),
            "nodeName": _maybe("n1"),
            "priorityClassName": _maybe("high"),
        },
    )


def _metadata(name: str) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.fixed_dictionaries(
            {"name": _maybe(name)},
            optional={"namespace": _maybe("default"), "labels": _maybe({"app": "web"})},
        ),
        ODD,
    )


def _manifest() -> st.SearchStrategy[dict[str, Any]]:
    template = st.fixed_dictionaries(
        {"metadata": st.one_of(st.fixed_dictionaries({"labels": _maybe({"app": "web"})}), ODD)},
        optional={"spec": st.one_of(_pod_spec(), ODD)},
    )
    workload_spec = st.fixed_dictionaries(
        {"selector": _maybe({"matchLabels": {"app": "web"}}), "template": st.one_of(template, ODD)},
        optional={"replicas": _maybe(3), "strategy": _maybe({"type": "RollingUpdate"})},
    )

    def typed(api: str, kind: str, spec: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
        return st.fixed_dictionaries(
            {"apiVersion": st.just(api), "kind": st.just(kind), "metadata": _metadata(kind.lower())},
            optional={"spec": spec},
        )

    pdb_spec = st.fixed_dictionaries(
        {"selector": _maybe({"matchLabels": {"app": "web"}})},
        optional={"minAvailable": _maybe(1), "maxUnavailable": _maybe("50%")},
    )
    node = st.fixed_dictionaries(
        {
            "apiVersion": st.just("v1"),
            "kind": st.just("Node"),
            "metadata": _metadata("n1"),
        },
        optional={
            "spec": st.one_of(
                st.fixed_dictionaries(
                    {},
                    optional={"taints": _maybe([{"key": "k", "effect": "NoSchedule"}]), "unschedulable": ODD},
                ),
                ODD,
            ),
            "status": st.one_of(
                st.fixed_dictionaries(
                    {}, optional={"allocatable": _maybe({"cpu": "4", "memory": "8Gi", "pods": "110"})}
                ),
                ODD,
            ),
        },
    )
    return st.one_of(
        typed("apps/v1", "Deployment", st.one_of(workload_spec, ODD)),
        typed("apps/v1", "StatefulSet", st.one_of(workload_spec, ODD)),
        typed("apps/v1", "DaemonSet", st.one_of(workload_spec, ODD)),
        typed("v1", "Pod", st.one_of(_pod_spec(), ODD)),
        typed("policy/v1", "PodDisruptionBudget", st.one_of(pdb_spec, ODD)),
        st.fixed_dictionaries(
            {"apiVersion": st.just("v1"), "kind": st.just("Namespace"), "metadata": _metadata("default")}
        ),
        node,
    )


_CLUSTER = (
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: n{i}\n  labels:\n"
    "    kubernetes.io/hostname: n{i}\n    topology.kubernetes.io/zone: z{i}\n"
    "status:\n  allocatable: {{cpu: '4', memory: 8Gi, pods: '110'}}\n"
)
_RULE_NAMES = frozenset(rule.name for rule in RULES) | {"parse-error", "helm-template"}


def _check_well_formed(result: LintResult, names: set[str]) -> None:
    assert result.internal_errors == (), result.internal_errors
    for finding in result.findings:
        assert finding.file in names
        assert finding.rule in _RULE_NAMES, finding.rule
        assert isinstance(finding.severity, Severity)
        assert finding.message and "\n" not in finding.message
        assert finding.line is None or finding.line >= 1
        assert finding.column is None or finding.column >= 1


def _files(manifests: list[dict[str, Any]]) -> list[SourceFile]:
    return [parse(f"m{index}.yaml", json.dumps(item)) for index, item in enumerate(manifests)]


@settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None
)
@given(st.lists(_manifest(), min_size=1, max_size=4))
def test_wrong_types_in_every_field_never_crash(manifests: list[dict[str, Any]]) -> None:
    files = _files(manifests)
    names = {file.name for file in files}
    cluster = cluster_from([parse("cluster.yaml", "---\n".join(_CLUSTER.format(i=i) for i in range(3)))])
    for kube in ("1.30", "1.37"):
        _check_well_formed(lint(files, Settings(kube_version=kube)), names)
    _check_well_formed(lint(files, Settings(), cluster=cluster), names)


# --- determinism (hypothesis, valid manifests) --------------------------------------------------


def _valid_workload(index: int) -> st.SearchStrategy[dict[str, Any]]:
    app = st.sampled_from(["web", "db", "cache"])
    key = st.sampled_from(["kubernetes.io/hostname", "topology.kubernetes.io/zone", "rack"])
    term = st.builds(lambda a, k: {"labelSelector": {"matchLabels": {"app": a}}, "topologyKey": k}, app, key)
    return st.builds(
        lambda kind, label, replicas, anti, spread: {
            "apiVersion": "apps/v1",
            "kind": kind,
            "metadata": {"name": f"w{index}", "labels": {"app": label}},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": label}},
                "template": {
                    "metadata": {"labels": {"app": label}},
                    "spec": {
                        "containers": [{"name": "c", "image": "nginx"}],
                        "affinity": {
                            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": anti}
                        },
                        "topologySpreadConstraints": spread,
                    },
                },
            },
        },
        st.sampled_from(["Deployment", "StatefulSet"]),
        app,
        st.integers(1, 5),
        st.lists(term, max_size=2),
        st.lists(
            st.builds(
                lambda a, k: {
                    "maxSkew": 1,
                    "topologyKey": k,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": a}},
                },
                app,
                key,
            ),
            max_size=1,
        ),
    )


def _keys(result: LintResult) -> list[tuple[Any, ...]]:
    return [(f.file, f.line, f.column, f.rule, f.message, f.severity) for f in result.findings]


@settings(max_examples=12, deadline=None, derandomize=True, database=None)
@given(
    st.integers(2, 6).flatmap(lambda n: st.tuples(*(_valid_workload(i) for i in range(n)))),
    st.randoms(use_true_random=False),
)
def test_deterministic_whatever_the_file_order(
    workloads: tuple[dict[str, Any], ...], rng: random.Random
) -> None:
    """The same findings (messages, related locations, fixes) for any file order, without a
    cluster and with one whose three nodes the pods compete for: the simulation places them in
    the scheduler's queue order, and the graph lists workloads in a canonical order, never in
    the order of the files."""
    files = _files(list(workloads))
    shuffled = list(files)
    rng.shuffle(shuffled)
    cluster = cluster_from([parse("cluster.yaml", "---\n".join(_CLUSTER.format(i=i) for i in range(3)))])

    def keys(result: LintResult) -> list[tuple[Any, ...]]:
        return [
            (f.file, f.line, f.column, f.rule, f.message, f.related, f.fix, f.severity)
            for f in result.findings
        ]

    for declared in (None, cluster):
        first, second = (
            lint(files, Settings(), cluster=declared),
            lint(shuffled, Settings(), cluster=declared),
        )
        assert first.internal_errors == () == second.internal_errors
        assert keys(first) == keys(second)


@settings(max_examples=4, deadline=None, derandomize=True, database=None)
@given(st.integers(2, 6).flatmap(lambda n: st.tuples(*(_valid_workload(i) for i in range(n)))))
def test_deterministic_whatever_the_jobs(tmp_path_factory: pytest.TempPathFactory, workloads: Any) -> None:
    """The same files loaded with one process or with workers (enough files for a pool) give
    the same findings."""
    from kaffinity.load.parallel import MIN_FILES

    folder = tmp_path_factory.mktemp("jobs")
    for index in range(MIN_FILES + 10):
        item = workloads[index % len(workloads)]
        named = {**item, "metadata": {**item["metadata"], "name": f"{item['metadata']['name']}-{index}"}}
        (folder / f"m{index:03}.yaml").write_text(json.dumps(named))
    results = [lint(load([str(folder)], jobs=jobs), Settings()) for jobs in (1, 2, 3)]
    assert all(result.internal_errors == () and result.documents == MIN_FILES + 10 for result in results)
    assert _keys(results[0]) == _keys(results[1]) == _keys(results[2])


def test_json_output_identical_bytes_for_two_file_orders() -> None:
    paths = sorted(str(path) for path in EXAMPLES.rglob("*.yaml") if "clusters" not in path.parts)
    cluster = str(EXAMPLES / "clusters" / "topology.yaml")
    forward = run("lint", "--no-config", "--format", "json", "--cluster", cluster, *paths, cwd=REPO)
    backward = run("lint", "--no-config", "--format", "json", "--cluster", cluster, *paths[::-1], cwd=REPO)
    assert json.loads(forward.stdout)["findings"]
    # The parse-error example's finding where it marks it, whichever order the files came in.
    fail = EXAMPLES / "parse-error" / "fail.yaml"
    for report in (json.loads(forward.stdout), json.loads(backward.stdout)):
        here = [f for f in findings(report, "parse-error") if f["file"] == str(fail)]
        assert keys(here) == [("parse-error", *position(fail.read_text(encoding="utf-8"), ":  # expect"))]
    assert forward.returncode == backward.returncode
    assert forward.stdout == backward.stdout


# --- inputs never modified, nothing fetched -----------------------------------------------------


def _checksums(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_inputs_never_modified(tmp_path: Path) -> None:
    copy = tmp_path / "examples"
    shutil.copytree(EXAMPLES, copy)
    before = _checksums(copy)
    stamps = {path: path.stat().st_mtime_ns for path in copy.rglob("*") if path.is_file()}
    lint_run = run("lint", "--no-config", str(copy))
    fix_run = run("fix", "--no-config", "--diff", str(copy))
    assert lint_run.returncode in (1, 2) and fix_run.returncode in (0, 1, 2)
    assert fix_run.stdout.startswith("---") or "@@" in fix_run.stdout  # the diff was made
    assert _checksums(copy) == before
    assert {path: path.stat().st_mtime_ns for path in stamps} == stamps


def test_no_network_via_cli(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    proxies = {name: dead for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")}
    cluster = str(EXAMPLES / "clusters" / "topology.yaml")
    completed = run("lint", "--no-config", "--cluster", cluster, str(EXAMPLES), env=proxies)
    assert completed.returncode in (1, 2)
    assert "internal error" not in completed.stderr and "[schema]" in completed.stdout


def test_no_network_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"network access: {args[1:]}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    files = load([str(EXAMPLES)])
    cluster = cluster_from(load([str(EXAMPLES / "clusters" / "topology.yaml")]))
    fail = EXAMPLES / "parse-error" / "fail.yaml"
    for result in (lint(files, Settings()), lint(files, Settings(), cluster=cluster)):
        assert result.internal_errors == ()
        assert result.findings
        # The examples are linted as ever: the parse-error example's finding where it marks it.
        here = [f for f in findings(result, "parse-error") if f.file == str(fail)]
        assert keys(here) == [("parse-error", *position(fail.read_text(encoding="utf-8"), ":  # expect"))]


def test_objects_declared_twice_resolve_the_same_whatever_the_file_order() -> None:
    """A Namespace (labels) or an HPA target (minReplicas) declared twice: the first in canonical
    order counts, not the first file given."""
    from kaffinity.context import Context
    from kaffinity.rules.pdb_blocks_eviction import _hpas

    first = parse(
        "a.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n  labels: {tier: gold}\n---\n"
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: b, namespace: team}\n"
        "spec: {scaleTargetRef: {kind: Deployment, name: web}, minReplicas: 5, maxReplicas: 9}\n",
    )
    second = parse(
        "b.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n  labels: {tier: bronze}\n---\n"
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: a, namespace: team}\n"
        "spec: {scaleTargetRef: {kind: Deployment, name: web}, minReplicas: 2, maxReplicas: 9}\n",
    )
    seen = set()
    for files in ([first, second], [second, first]):
        context = Context(files, Settings())
        hpa = _hpas(context)[("team", "Deployment", "web")]
        seen.add((str(context.namespace_labels), hpa[0].file, hpa[1]))
    assert seen == {("{'team': {'tier': 'gold'}}", "b.yaml", 2)}
