"""``kaffinity fix``: safe fixes written back without changing any other byte."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kaffinity.config import Settings
from kaffinity.engine import lint
from kaffinity.expand.fixes import fix_files
from kaffinity.load.files import load
from kaffinity.load.parse import parse
from kaffinity.repo.engines import helm_engine, kustomize_engine
from kaffinity.rules.revision_unscoped import FIX_PROMISE

from .kit import (
    EXAMPLES,
    SHARED,
    added_lines,
    check,
    keys,
    lint_text,
    position,
    run,
    run_bytes,
    run_json,
)

ODD_BUT_VALID = """\
# A hand-written manifest: comments, quoting, 4-space indents, a flow selector.
apiVersion: "apps/v1"
kind: Deployment
metadata:
    name: 'web'   # the name
spec:
    replicas: 3
    selector: {matchLabels: {app: web}}
    template:
        metadata:
            labels:
                app: web
        spec:
            containers: [{name: web, image: "nginx:1.27"}]
            affinity:
                podAntiAffinity:
                    requiredDuringSchedulingIgnoredDuringExecution:
                        -   labelSelector: {matchLabels: {app: web}}
                            topologyKey: kubernetes.io/hostname   # one per node

                            # trailing comment block stays below
            topologySpreadConstraints:
            - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule,
               labelSelector: {matchLabels: {app: web}}}
            - maxSkew: 2
              topologyKey: kubernetes.io/hostname
              whenUnsatisfiable: DoNotSchedule
              labelSelector:
                matchLabels:
                  app: web
              matchLabelKeys:
                - tenant
"""

ODD_BUT_VALID_FIXED = """\
# A hand-written manifest: comments, quoting, 4-space indents, a flow selector.
apiVersion: "apps/v1"
kind: Deployment
metadata:
    name: 'web'   # the name
spec:
    replicas: 3
    selector: {matchLabels: {app: web}}
    template:
        metadata:
            labels:
                app: web
        spec:
            containers: [{name: web, image: "nginx:1.27"}]
            affinity:
                podAntiAffinity:
                    requiredDuringSchedulingIgnoredDuringExecution:
                        -   labelSelector: {matchLabels: {app: web}}
                            topologyKey: kubernetes.io/hostname   # one per node
                            matchLabelKeys: [pod-template-hash]

                            # trailing comment block stays below
            topologySpreadConstraints:
            - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule,
               labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [pod-template-hash]}
            - maxSkew: 2
              topologyKey: kubernetes.io/hostname
              whenUnsatisfiable: DoNotSchedule
              labelSelector:
                matchLabels:
                  app: web
              matchLabelKeys:
                - tenant
                - pod-template-hash
"""


def _write(tmp_path: Path, text: str, name: str = "web.yaml") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode())
    return path


def test_fix_changes_nothing_but_the_added_keys(tmp_path: Path) -> None:
    tenant = ("                app: web\n", "                app: web\n                tenant: a\n")
    path = _write(tmp_path, ODD_BUT_VALID.replace(*tenant))
    completed = run("fix", "--no-config", str(path))
    assert completed.returncode == 0, completed.stderr
    expected = ODD_BUT_VALID_FIXED.replace(*tenant)
    assert path.read_bytes() == expected.encode()
    assert f"{path}: fixed 3 (revision-unscoped)" in completed.stderr
    again = run("fix", "--no-config", str(path))
    assert again.returncode == 0 and "nothing to fix" in again.stderr
    assert path.read_bytes() == expected.encode()
    check(expected, select=("expansion",))


def test_fix_diff_writes_nothing(tmp_path: Path) -> None:
    path = _write(tmp_path, ODD_BUT_VALID)
    completed = run("fix", "--no-config", "--diff", str(path))
    assert completed.returncode == 1
    assert path.read_bytes() == ODD_BUT_VALID.encode()
    assert added_lines(completed.stdout) == [
        "+                            matchLabelKeys: [pod-template-hash]",
        "+               labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [pod-template-hash]}",
        "+                - pod-template-hash",
    ]


def test_fix_keeps_crlf_and_a_byte_order_mark(tmp_path: Path) -> None:
    text = ODD_BUT_VALID.replace("\n", "\r\n")
    path = tmp_path / "crlf.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    completed = run("fix", "--no-config", str(path))
    assert completed.returncode == 0, completed.stderr
    assert path.read_bytes() == b"\xef\xbb\xbf" + ODD_BUT_VALID_FIXED.replace("\n", "\r\n").encode()


def test_fix_reads_stdin_and_writes_stdout() -> None:
    completed = run("fix", "--no-config", "-", stdin=ODD_BUT_VALID)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == ODD_BUT_VALID_FIXED
    unchanged = run("fix", "--no-config", "-", stdin=ODD_BUT_VALID_FIXED)
    assert unchanged.returncode == 0 and unchanged.stdout == ODD_BUT_VALID_FIXED


def test_fix_respects_suppressions_and_the_target_version(tmp_path: Path) -> None:
    suppressed = ODD_BUT_VALID.replace(
        "                        -   labelSelector",
        "                        # kaffinity: ignore[revision-unscoped] one per node, rolled by hand\n"
        "                        -   labelSelector",
    )
    out = run("fix", "--no-config", "--diff", "-", stdin=suppressed).stdout
    assert "[pod-template-hash]" in out and "+                            matchLabelKeys" not in out
    # 1.30: pod affinity matchLabelKeys is dropped by the API server, spread keeps it (1.27+).
    old = run("fix", "--no-config", "--diff", "--kube-version", "1.30", "-", stdin=ODD_BUT_VALID).stdout
    assert (
        "+                            matchLabelKeys" not in old
        and "+                - pod-template-hash" in old
    )


def test_fix_refuses_what_it_cannot_do_safely() -> None:
    aliased = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    metadata: {labels: {app: web}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - &term
            labelSelector: {matchLabels: {app: web}}
            topologyKey: kubernetes.io/hostname
          - *term
"""
    # The anchor and its alias are one place in the file: one finding (an alias is no copy).
    result = lint_text(aliased, select=("revision-unscoped",), plan_fixes=True)
    assert keys(result) == [("revision-unscoped", *position(aliased, "&term"))]  # the anchored term
    (finding,) = result.findings
    assert finding.edit is None  # editing the anchor would change the alias too
    assert finding.fix is not None and "kaffinity fix" not in finding.fix  # no promise, no mention
    completed = run("fix", "--no-config", "-", stdin=aliased)
    assert completed.returncode == 0 and completed.stdout == aliased
    assert "nothing to fix" in completed.stderr


CORPUS = SHARED / "corpus" / "real"


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared real-world corpus is not on this machine")
def test_fix_round_trips_the_real_world_corpus() -> None:
    """Every corpus file the fix touches: only the inserted text differs, the fixed file parses
    to the same objects plus the key, and the findings it fixed are gone."""
    paths = [
        str(path)
        for path in sorted(CORPUS.rglob("*.y*ml"))
        if b"podAntiAffinity" in (raw := path.read_bytes()) or b"topologySpreadConstraints" in raw
    ]
    settings = Settings(select=("revision-unscoped",), plan_fixes=True)
    files = load(paths)
    result = lint(files, settings)
    assert not result.internal_errors, result.internal_errors
    fixed, problems = fix_files(files, result.findings)
    assert problems == []
    assert sum(len(item.findings) for item in fixed) == len(result.findings) >= 30
    for item in fixed:
        edits = sorted({f.edit for f in item.findings if f.edit is not None}, key=lambda edit: edit.start)
        assert all(edit.start == edit.end for edit in edits)  # pure insertions
        rebuilt = item.fixed
        for number, edit in reversed(list(enumerate(edits))):
            start = edit.start + sum(len(earlier.text) for earlier in edits[:number])
            assert rebuilt[start : start + len(edit.text)] == edit.text
            rebuilt = rebuilt[:start] + rebuilt[start + len(edit.text) :]
        assert rebuilt == item.text  # every other byte as it was
        after = lint([parse(item.file, item.fixed)], settings)
        assert keys(after) == []
        # Each finding fixed had a place in its file, and its edit comes after that line's start.
        starts = [0, *(i + 1 for i, char in enumerate(item.text) if char == "\n")]
        for finding in item.findings:
            assert finding.line is not None and finding.column is not None
            assert finding.edit is None or finding.edit.start > starts[finding.line - 1]
        before_docs = parse(item.file, item.text).documents
        after_docs = parse(item.file, item.fixed).documents
        assert [d.data.get("kind") for d in before_docs] == [d.data.get("kind") for d in after_docs]


def test_fix_leaves_a_utf16_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "utf16.yaml"
    raw = ODD_BUT_VALID.encode("utf-16")
    path.write_bytes(raw)
    completed = run("fix", "--no-config", str(path))
    assert completed.returncode == 2
    assert f"kaffinity: error: {path}: fix writes UTF-8 files only" in completed.stderr
    assert path.read_bytes() == raw


# --- every term shape lint calls fixable, fix can edit ---------------------------------------

SPREAD_KEYS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: zone
        whenUnsatisfiable: DoNotSchedule
        labelSelector:
          matchLabels: {app: web}
        KEYS
      containers: [{name: c, image: nginx}]
"""


@pytest.mark.parametrize(
    ("keys", "fixed"),
    [
        ("matchLabelKeys: []", "matchLabelKeys: [pod-template-hash]"),
        ("matchLabelKeys: null", "matchLabelKeys: [pod-template-hash]"),
        ("matchLabelKeys: ~  # none", "matchLabelKeys: [pod-template-hash]  # none"),
        ("matchLabelKeys:", "matchLabelKeys: [pod-template-hash]"),
        ("? matchLabelKeys", "? matchLabelKeys\n        : [pod-template-hash]"),
        ("? matchLabelKeys\n        : []", "? matchLabelKeys\n        : [pod-template-hash]"),
        ("? matchLabelKeys\n        :", "? matchLabelKeys\n        : [pod-template-hash]"),
        ("? matchLabelKeys\n        : [a]", "? matchLabelKeys\n        : [a, pod-template-hash]"),
    ],
)
def test_fix_keeps_the_promise_of_lint_for_every_term_shape(keys: str, fixed: str) -> None:
    text = SPREAD_KEYS.replace("KEYS", keys)
    found = lint_text(text, select=("revision-unscoped",)).findings
    assert [(f.rule, f.line, f.column) for f in found] == [("revision-unscoped", 12, 9)]
    assert found[0].edit is not None and found[0].fix is not None and FIX_PROMISE in found[0].fix
    completed = run("fix", "--no-config", "-", stdin=text)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == SPREAD_KEYS.replace("KEYS", fixed)
    check(completed.stdout, select=("revision-unscoped",))


def test_fix_fills_a_null_in_a_flow_term() -> None:
    term = (
        "      - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, matchLabelKeys: ,\n"
        "         labelSelector: {matchLabels: {app: web}}}\n"
    )
    text = (
        SPREAD_KEYS[: SPREAD_KEYS.index("      - maxSkew")]
        + term
        + "      containers: [{name: c, image: nginx}]\n"
    )
    completed = run("fix", "--no-config", "-", stdin=text)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == text.replace("matchLabelKeys: ,", "matchLabelKeys: [pod-template-hash],")


# --- fix -: every byte kept that a fix does not change ------------------------------------------


def _fix_stdin(raw: bytes) -> subprocess.CompletedProcess[bytes]:
    return run_bytes("fix", "--no-config", "-", stdin=raw)


def test_fix_stdin_keeps_a_byte_order_mark() -> None:
    completed = _fix_stdin(b"\xef\xbb\xbf" + ODD_BUT_VALID.replace("\n", "\r\n").encode())
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == b"\xef\xbb\xbf" + ODD_BUT_VALID_FIXED.replace("\n", "\r\n").encode()
    unchanged = b"\xef\xbb\xbf" + ODD_BUT_VALID_FIXED.encode()
    assert _fix_stdin(unchanged).stdout == unchanged


def test_fix_stdin_refuses_utf16_as_in_place(tmp_path: Path) -> None:
    raw = ODD_BUT_VALID.encode("utf-16")
    completed = _fix_stdin(raw)
    assert completed.returncode == 2
    assert b"kaffinity: error: <stdin>: fix writes UTF-8 files only" in completed.stderr
    assert completed.stdout == raw  # the stream as it came


def test_fix_stdin_with_a_nul_byte_as_in_place(tmp_path: Path) -> None:
    raw = ODD_BUT_VALID.encode() + b"# \x00\n"
    completed = _fix_stdin(raw)
    path = tmp_path / "nul.yaml"
    path.write_bytes(raw)
    in_place = run("fix", "--no-config", str(path))
    assert completed.returncode == in_place.returncode == 2
    assert b"[parse-error]" in completed.stderr and "[parse-error]" in in_place.stderr
    assert completed.stdout == raw and path.read_bytes() == raw  # nothing lost, nothing changed


def test_lint_does_not_promise_a_fix_through_an_alias() -> None:
    """A term shared through a YAML alias cannot be edited safely: lint says so (it planned the
    fix) instead of "kaffinity fix adds it", and fix changes nothing."""
    term = "      - &spread\n        maxSkew: 1\n"
    text = SPREAD_KEYS.replace("      - maxSkew: 1\n", term).replace("        KEYS\n", "      - *spread\n")
    found = lint_text(text, select=("revision-unscoped",)).findings
    # The term and its alias are one place in the file: one finding (aliases could multiply them).
    assert [(f.rule, f.line) for f in found] == [("revision-unscoped", 12)]
    assert all(f.edit is None and f.fix is not None and "kaffinity fix" not in f.fix for f in found)
    completed = run("fix", "--no-config", "-", stdin=text)
    assert completed.stdout == text and "nothing to fix" in completed.stderr


# --- hints that keep their word (issue 33): rendered units, explicit keys ----------------------

needs_kustomize = pytest.mark.skipif(kustomize_engine() is None, reason="neither kustomize nor kubectl")
needs_helm = pytest.mark.skipif(helm_engine() is None, reason="no helm binary and no helm-python-sdk")

_BASE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: web
          image: nginx
"""

_TERM = """\
            - labelSelector:
                matchLabels:
                  app: web
              topologyKey: kubernetes.io/hostname
"""

_SMP = (
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n"
    "      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n"
    + _TERM
)

_JSON6902 = """\
- op: add
  path: /spec/template/spec/affinity
  value:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - labelSelector:
            matchLabels:
              app: web
          topologyKey: kubernetes.io/hostname
"""

_INLINE = """\
resources:
  - ../../base
patches:
  - target:
      kind: Deployment
      name: web
    patch: |-
      - op: add
        path: /spec/template/spec/affinity
        value:
          podAntiAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              - labelSelector:
                  matchLabels:
                    app: web
                topologyKey: kubernetes.io/hostname
"""

_TEMPLATE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      {{- with .Values.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: web
          image: nginx
"""

_VALUES = """\
replicaCount: 3
# one pod per node
affinity:
  podAntiAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector:
          matchLabels:
            app: web
        topologyKey: kubernetes.io/hostname
"""

_LITERAL_TEMPLATE = _TEMPLATE.replace(
    "      {{- with .Values.affinity }}\n      affinity:\n"
    "        {{- toYaml . | nindent 8 }}\n      {{- end }}\n",
    "      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n"
    + _TERM,
)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _overlay(patch_entry: str, patch_file: str | None, text: str | None) -> dict[str, str]:
    """A base and one overlay, the layout of kubernetes-sigs/kustomize examples/helloWorld
    (base/ and overlays/<env>/ with the overlay's patches beside its kustomization)."""
    files = {
        "base/deploy.yaml": _BASE,
        "base/kustomization.yaml": "resources:\n  - deploy.yaml\n",
        "overlays/prod/kustomization.yaml": f"resources:\n  - ../../base\npatches:\n{patch_entry}",
    }
    if patch_file is not None and text is not None:
        files[f"overlays/prod/{patch_file}"] = text
    return files


def _chart(template: str, values: str) -> dict[str, str]:
    """A chart as `helm create` lays it out (Chart.yaml, values.yaml, templates/)."""
    return {
        "charts/web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n",
        "charts/web/values.yaml": values,
        "charts/web/templates/deployment.yaml": template,
    }


_RENDERED = {
    "smp": _overlay("  - path: anti.yaml\n", "anti.yaml", _SMP),
    "json6902": _overlay(
        "  - path: anti.yaml\n    target:\n      kind: Deployment\n      name: web\n", "anti.yaml", _JSON6902
    ),
    "inline": {**_overlay("", None, None), "overlays/prod/kustomization.yaml": _INLINE},
    "values": _chart(_TEMPLATE, _VALUES),
    "template-literal": _chart(_LITERAL_TEMPLATE, "replicaCount: 3\n"),
}


def _keyed(report: dict[str, Any]) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    """The findings by what they are about (rule, object, field, units), not by line: a fix
    moves lines."""
    return {
        (f["rule"], json.dumps(f.get("object"), sort_keys=True), f["path"], ",".join(f.get("units", ()))): f
        for f in report["findings"]
    }


def _promises_kept(folder: Path) -> tuple[set[tuple[str, str, str, str]], set[tuple[str, str, str, str]]]:
    """Lint ``folder``, fix it, lint again: the findings whose hint promises ``kaffinity fix``,
    and those that fix made go away."""
    before = _keyed(json.loads(run("lint", "--format", "json", "--no-config", ".", cwd=folder).stdout))
    promised = {key for key, f in before.items() if f.get("fix") and FIX_PROMISE in f["fix"]}
    # A hint that names kaffinity fix promises it: no other hint names it.
    assert promised == {key for key, f in before.items() if "kaffinity fix" in (f.get("fix") or "")}
    completed = run("fix", "--no-config", ".", cwd=folder)
    assert completed.returncode in (0, 2), completed.stderr
    after = _keyed(json.loads(run("lint", "--format", "json", "--no-config", ".", cwd=folder).stdout))
    return promised, set(before) - set(after)


@pytest.mark.slow
@needs_kustomize
@needs_helm
def test_every_hint_that_names_fix_is_kept_on_examples_and_rendered_fixtures(tmp_path: Path) -> None:
    """Every finding whose hint says ``kaffinity fix`` does it is gone after ``kaffinity fix``,
    and every finding ``fix`` makes go away said so: on every example and on rendered units
    (an overlay's strategic-merge and JSON 6902 patches, an inline patch, a chart's values file
    printed by toYaml, a term literal in a template)."""
    folders = [path for path in sorted(EXAMPLES.iterdir()) if path.is_dir()]
    checked = 0
    promised_total = 0
    for folder in folders:
        copy = tmp_path / "examples" / folder.name
        shutil.copytree(folder, copy)
        promised, gone = _promises_kept(copy)
        assert promised == gone, folder.name
        promised_total += len(promised)
        checked += 1
    for name, files in _RENDERED.items():
        folder = _tree(tmp_path / "rendered" / name, files)
        promised, gone = _promises_kept(folder)
        assert promised == gone, name
        promised_total += len(promised)
    assert checked == len(folders) and promised_total >= 4


@needs_kustomize
def test_fix_edits_the_overlay_patch_that_set_the_term(tmp_path: Path) -> None:
    folder = _tree(tmp_path, _RENDERED["smp"])
    base = (folder / "base/deploy.yaml").read_bytes()
    _, report = run_json(".", cwd=folder)
    assert [(f["rule"], f["file"], f["line"], f["column"]) for f in report["findings"]] == [
        ("revision-unscoped", "overlays/prod/anti.yaml", 11, 15)
    ]
    assert FIX_PROMISE in report["findings"][0]["fix"]
    diff = run("fix", "--no-config", "--diff", ".", cwd=folder)
    assert diff.returncode == 1 and added_lines(diff.stdout) == [
        "+              matchLabelKeys: [pod-template-hash]"
    ]
    assert (folder / "overlays/prod/anti.yaml").read_text() == _SMP  # --diff writes nothing
    completed = run("fix", "--no-config", ".", cwd=folder)
    assert completed.returncode == 0, completed.stderr
    assert (
        folder / "overlays/prod/anti.yaml"
    ).read_text() == _SMP + "              matchLabelKeys: [pod-template-hash]\n"
    assert (folder / "base/deploy.yaml").read_bytes() == base
    assert sorted(p.name for p in (folder / "overlays/prod").iterdir()) == ["anti.yaml", "kustomization.yaml"]
    code, after = run_json(".", cwd=folder)
    assert code == 0 and after["findings"] == []


@needs_kustomize
def test_fix_edits_a_json6902_patch_value(tmp_path: Path) -> None:
    folder = _tree(tmp_path, _RENDERED["json6902"])
    _, report = run_json(".", cwd=folder)
    assert [(f["rule"], f["file"], f["line"], f["column"]) for f in report["findings"]] == [
        ("revision-unscoped", "overlays/prod/anti.yaml", 6, 11)
    ]
    completed = run("fix", "--no-config", ".", cwd=folder)
    assert completed.returncode == 0, completed.stderr
    assert (
        folder / "overlays/prod/anti.yaml"
    ).read_text() == _JSON6902 + "          matchLabelKeys: [pod-template-hash]\n"
    code, after = run_json(".", cwd=folder)
    assert code == 0 and after["findings"] == []


@needs_kustomize
def test_an_inline_patch_is_not_promised_and_not_touched(tmp_path: Path) -> None:
    folder = _tree(tmp_path, _RENDERED["inline"])
    before = {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}
    _, report = run_json(".", cwd=folder)
    assert [f["rule"] for f in report["findings"]] == ["revision-unscoped"]
    # The inline patch has no file of its own: the term is placed at the base's pod spec it joins.
    assert keys(report) == [("revision-unscoped", *position(_BASE, "spec:", 2))]
    assert report["findings"][0]["file"] == "base/deploy.yaml"
    assert FIX_PROMISE not in report["findings"][0]["fix"]
    completed = run("fix", "--no-config", ".", cwd=folder)
    assert completed.returncode == 0 and "nothing to fix" in completed.stderr
    assert {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()} == before


@needs_helm
def test_fix_edits_the_values_line_a_template_prints(tmp_path: Path) -> None:
    folder = _tree(tmp_path, _RENDERED["values"])
    template = (folder / "charts/web/templates/deployment.yaml").read_bytes()
    _, report = run_json(".", cwd=folder)
    assert [(f["rule"], f["file"], f["line"]) for f in report["findings"]] == [
        ("revision-unscoped", "charts/web/templates/deployment.yaml", 16)
    ]
    assert FIX_PROMISE in report["findings"][0]["fix"]
    completed = run("fix", "--no-config", ".", cwd=folder)
    assert completed.returncode == 0, completed.stderr
    assert (
        folder / "charts/web/values.yaml"
    ).read_text() == _VALUES + "        matchLabelKeys: [pod-template-hash]\n"
    assert (folder / "charts/web/templates/deployment.yaml").read_bytes() == template
    code, after = run_json(".", cwd=folder)
    assert code == 0 and after["findings"] == []


@needs_helm
def test_a_values_key_a_variant_sets_too_is_not_promised(tmp_path: Path) -> None:
    """A `ci/*-values.yaml` variant that sets the value too: values.yaml is not the one place."""
    files = {**_RENDERED["values"], "charts/web/ci/ha-values.yaml": _VALUES}
    folder = _tree(tmp_path, files)
    _, report = run_json(".", cwd=folder)
    assert {f["rule"] for f in report["findings"]} == {"revision-unscoped"}
    # At the template's affinity, which prints the values' term.
    assert keys(report) == [("revision-unscoped", *position(_TEMPLATE, "affinity:"))]
    assert report["findings"][0]["file"] == "charts/web/templates/deployment.yaml"
    assert all(FIX_PROMISE not in f["fix"] for f in report["findings"])
    completed = run("fix", "--no-config", ".", cwd=folder)
    assert "nothing to fix" in completed.stderr
    assert (folder / "charts/web/values.yaml").read_text() == _VALUES


@needs_helm
def test_a_term_in_a_template_is_not_promised(tmp_path: Path) -> None:
    folder = _tree(tmp_path, _RENDERED["template-literal"])
    _, report = run_json(".", cwd=folder)
    assert [(f["rule"], f["file"], f["line"], f["column"]) for f in report["findings"]] == [
        ("revision-unscoped", "charts/web/templates/deployment.yaml", 18, 13)
    ]
    assert FIX_PROMISE not in report["findings"][0]["fix"]
    completed = run("fix", "--no-config", ".", cwd=folder)
    assert "nothing to fix" in completed.stderr
    assert (folder / "charts/web/templates/deployment.yaml").read_text() == _LITERAL_TEMPLATE


_EXPLICIT = _BASE.replace(
    "      containers:\n",
    "      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n"
    "TERM      containers:\n",
)


@pytest.mark.parametrize(
    ("term", "column"),
    [
        # every key explicit, the first on the dash's line
        (
            "            - ? labelSelector\n              : matchLabels:\n                  app: web\n"
            "              ? topologyKey\n              : kubernetes.io/hostname\n",
            15,
        ),
        # an explicit key last
        (
            "            - labelSelector:\n                matchLabels:\n                  app: web\n"
            "              ? topologyKey\n              : kubernetes.io/hostname\n",
            15,
        ),
        # the explicit `? labelSelector` last, its value a block mapping
        (
            "            - topologyKey: kubernetes.io/hostname\n              ? labelSelector\n"
            "              : matchLabels:\n                  app: web\n",
            15,
        ),
    ],
)
def test_fix_adds_the_key_beside_explicit_keys(term: str, column: int, tmp_path: Path) -> None:
    """A term written with YAML explicit keys (`? key` / `: value`, YAML 1.2 spec 8.2.2): the
    new entry goes at the column of the `?`, the mapping's indentation, and the file keeps its
    meaning but for the key (the hint promised it; fix did nothing before)."""
    text = _EXPLICIT.replace("TERM", term)
    found = lint_text(text, select=("revision-unscoped",)).findings
    assert [(f.rule, f.line, f.column) for f in found] == [("revision-unscoped", 18, column)]
    assert found[0].edit is not None and found[0].fix is not None and FIX_PROMISE in found[0].fix
    path = tmp_path / "deploy.yaml"
    path.write_text(text)
    completed = run("fix", "--no-config", str(path))
    assert completed.returncode == 0, completed.stderr
    fixed = text.replace(term, term + "              matchLabelKeys: [pod-template-hash]\n")
    assert path.read_text() == fixed
    check(fixed, select=("revision-unscoped",))
    (before,), (after,) = parse("a", text).documents, parse("b", fixed).documents
    term_after = after.data["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ][0]
    assert term_after.pop("matchLabelKeys") == ["pod-template-hash"]
    assert after.data == before.data


@needs_kustomize
def test_fix_of_a_rendered_unit_writes_nothing_outside_the_repository(tmp_path: Path) -> None:
    """An overlay's patch that is a symlink to a file outside the folder given: the build is
    refused (kaffinity.repo.sandbox), and fix writes neither there nor anywhere else."""
    outside = tmp_path / "outside" / "anti.yaml"
    outside.parent.mkdir()
    outside.write_text(_SMP)
    folder = _tree(
        tmp_path / "repo", {k: v for k, v in _RENDERED["smp"].items() if k != "overlays/prod/anti.yaml"}
    )
    (folder / "overlays/prod/anti.yaml").symlink_to(outside)
    before = {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}
    completed = run("fix", "--no-config", ".", cwd=folder)
    assert completed.returncode == 2 and "nothing to fix" in completed.stderr
    assert outside.read_text() == _SMP
    assert {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()} == before


@needs_kustomize
def test_fix_edits_the_patch_of_a_layer_below_the_overlay(tmp_path: Path) -> None:
    """The patch is in a kustomization the overlay builds on (argoproj/argo-cd manifests/ha:
    ha/base patches the Deployments of base/, and install overlays build on ha/base): the
    finding is at that patch, and fix edits it."""
    files = {
        "base/deploy.yaml": _BASE,
        "base/kustomization.yaml": "resources:\n  - deploy.yaml\n",
        "ha/base/kustomization.yaml": "resources:\n  - ../../base\npatches:\n  - path: anti.yaml\n",
        "ha/base/anti.yaml": _SMP,
        "ha/install/kustomization.yaml": "resources:\n  - ../base\nnamespace: argocd\n",
    }
    folder = _tree(tmp_path, files)
    _, report = run_json("ha/install", cwd=folder)
    assert [(f["rule"], f["file"], f["line"], f["column"]) for f in report["findings"]] == [
        ("revision-unscoped", "ha/base/anti.yaml", 11, 15)
    ]
    assert FIX_PROMISE in report["findings"][0]["fix"]
    completed = run("fix", "--no-config", "ha/install", cwd=folder)
    assert completed.returncode == 0, completed.stderr
    assert (
        folder / "ha/base/anti.yaml"
    ).read_text() == _SMP + "              matchLabelKeys: [pod-template-hash]\n"
    assert (folder / "base/deploy.yaml").read_text() == _BASE
    code, after = run_json("ha/install", cwd=folder)
    assert code == 0 and after["findings"] == []
