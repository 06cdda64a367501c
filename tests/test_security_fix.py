"""Issue 31 (hostile pull requests), for ``kaffinity fix`` and parsed data:

- ``fix`` writes only inside the paths given (or the repository): a symlink in the checkout
  that leads elsewhere is refused, with one error line and exit code 2, the other files fixed;
  it writes atomically (a temporary file renamed over the file, the mode kept) and never over
  an edit saved while it ran;
- data nested just under the loader's depth limit never exhausts the interpreter's stack in any
  command (exit code 3 was a ``RecursionError`` in the defaulting of a policy's object);
- aliases cost in proportion to the file: a document Kubernetes' YAML decoder refuses for
  "excessive aliasing" is a parse-error at once, not a million nodes walked by every rule.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kaffinity.load.parse import DEFAULT_LIMITS, parse

from .kit import EXAMPLES, POLICY_EXAMPLES, REPO, no_internal_error, run

# A Deployment whose required anti-affinity term `kaffinity fix` completes (revision-unscoped).
FIXABLE = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: NAME}
spec:
  replicas: 3
  selector: {matchLabels: {app: NAME}}
  template:
    metadata: {labels: {app: NAME}}
    spec:
      containers: [{name: c, image: "nginx:1.27"}]
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: NAME}}
              topologyKey: kubernetes.io/hostname
"""
ADDED = "matchLabelKeys"


def _fixable(name: str) -> str:
    return FIXABLE.replace("NAME", name)


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    """A checkout (``repo/deploy``, with one fixable file) and a folder outside it."""
    deploy = tmp_path / "repo" / "deploy"
    deploy.mkdir(parents=True)
    (deploy / "web.yaml").write_text(_fixable("web"))
    outside = tmp_path / "outside"
    outside.mkdir()
    return deploy, outside


# -- fix: symlinks ---------------------------------------------------------------------------------


def test_fix_leaves_a_symlink_to_a_file_outside_the_paths_given(tmp_path: Path) -> None:
    """The folder walk does not follow a link out of the repository (kaffinity.load.files), so
    ``fix`` neither reads nor writes the file it leads to; the other files are still fixed."""
    deploy, outside = _tree(tmp_path)
    secret = outside / "secret.yaml"
    secret.write_text(_fixable("secret"))
    (deploy / "link.yaml").symlink_to(secret)
    before = secret.read_bytes()
    completed = run("fix", "--no-config", "deploy", cwd=deploy.parent)
    assert completed.returncode == 0, completed.stderr
    assert secret.read_bytes() == before  # not written through the link
    assert (deploy / "link.yaml").is_symlink()
    assert "link.yaml" not in completed.stderr
    assert ADDED in (deploy / "web.yaml").read_text()  # the other file is still fixed


def test_fix_leaves_a_symlinked_folder_that_leads_outside(tmp_path: Path) -> None:
    deploy, outside = _tree(tmp_path)
    (outside / "more").mkdir()
    target = outside / "more" / "api.yaml"
    target.write_text(_fixable("api"))
    (deploy / "more").symlink_to(outside / "more")
    before = target.read_bytes()
    completed = run("fix", "--no-config", "deploy", cwd=deploy.parent)
    assert completed.returncode == 0, completed.stderr
    assert target.read_bytes() == before
    assert ADDED in (deploy / "web.yaml").read_text()


def test_writing_refuses_a_path_that_leads_outside_the_roots(tmp_path: Path) -> None:
    """The writer's own check, behind the walk's: a file reached through a link whose real
    path is outside every root allowed is refused (a link swapped in after the walk)."""
    from kaffinity.expand.fixes import WriteRefused, allowed_roots, write_fixed

    deploy, outside = _tree(tmp_path)
    secret = outside / "secret.yaml"
    text = _fixable("secret")
    secret.write_text(text)
    (deploy / "link.yaml").symlink_to(secret)
    with pytest.raises(WriteRefused, match="outside"):
        write_fixed(str(deploy / "link.yaml"), text, text + "# fixed\n", allowed_roots([str(deploy)]))
    assert secret.read_text() == text


def test_fix_writes_the_target_of_a_symlink_inside_and_keeps_the_link(tmp_path: Path) -> None:
    deploy, _ = _tree(tmp_path)
    (deploy / "base").mkdir()
    target = deploy / "base" / "api.yaml"
    target.write_text(_fixable("api"))
    (deploy / "api.yaml").symlink_to(Path("base") / "api.yaml")
    completed = run("fix", "--no-config", "deploy", cwd=deploy.parent)
    assert completed.returncode == 0, completed.stderr
    assert (deploy / "api.yaml").is_symlink()
    assert ADDED in target.read_text()


def test_fix_writes_through_a_symlink_to_elsewhere_in_the_repository(tmp_path: Path) -> None:
    """Outside the folder given but inside its git work tree (``.git`` above it): written."""
    deploy, _ = _tree(tmp_path)
    (deploy.parent / ".git").mkdir()
    (deploy.parent / "base").mkdir()
    target = deploy.parent / "base" / "api.yaml"
    target.write_text(_fixable("api"))
    (deploy / "api.yaml").symlink_to(target)
    completed = run("fix", "--no-config", "deploy", cwd=deploy.parent)
    assert completed.returncode == 0, completed.stderr
    assert ADDED in target.read_text()


def test_fix_writes_a_symlink_named_on_the_command_line(tmp_path: Path) -> None:
    """A path the user names is the user's choice, wherever it leads."""
    deploy, outside = _tree(tmp_path)
    target = outside / "named.yaml"
    target.write_text(_fixable("named"))
    (deploy / "named.yaml").symlink_to(target)
    completed = run("fix", "--no-config", str(deploy / "named.yaml"), cwd=deploy.parent)
    assert completed.returncode == 0, completed.stderr
    assert ADDED in target.read_text()


# -- fix: how it writes --------------------------------------------------------------------------


def test_fix_writes_atomically_and_keeps_the_mode(tmp_path: Path) -> None:
    deploy, _ = _tree(tmp_path)
    path = deploy / "web.yaml"
    path.chmod(0o640)
    inode = path.stat().st_ino
    completed = run("fix", "--no-config", str(path))
    assert completed.returncode == 0, completed.stderr
    assert ADDED in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert path.stat().st_ino != inode  # a new file renamed over the old one, not rewritten in place
    assert sorted(entry.name for entry in deploy.iterdir()) == ["web.yaml"]  # no temporary file left


def test_fix_refuses_a_file_changed_since_it_was_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deploy, _ = _tree(tmp_path)
    path = deploy / "web.yaml"
    other = deploy / "api.yaml"
    other.write_text(_fixable("api"))
    saved = _fixable("web") + "# saved by the editor while kaffinity ran\n"

    from kaffinity.expand import fixes

    planned = fixes.fix_files

    def edit_then_plan(*args: Any, **kwargs: Any) -> Any:
        result = planned(*args, **kwargs)
        path.write_text(saved)  # after the file was read and its fix planned
        return result

    monkeypatch.setattr(fixes, "fix_files", edit_then_plan)
    result = run("fix", "--no-config", str(deploy))
    assert result.returncode == 2
    assert path.read_text() == saved  # the edit is kept
    assert f"kaffinity: error: {path}: not written: the file changed since it was read" in result.stderr
    assert ADDED in other.read_text()


def test_fix_diff_never_writes(tmp_path: Path) -> None:
    deploy, _ = _tree(tmp_path)
    path = deploy / "web.yaml"
    before = path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_ino
    completed = run("fix", "--no-config", "--diff", str(path))
    assert completed.returncode == 1 and ADDED in completed.stdout
    assert (path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_ino) == before


# -- nesting just under the depth limit -----------------------------------------------------------

# Levels above `fieldsV1` in a document: the root, metadata, managedFields, its item.
_ABOVE = 4


def _nested(levels: int) -> str:
    return "{a: " * levels + "1" + "}" * levels


def _deep_objects(levels: int) -> str:
    """A valid Deployment and Pod (``metadata.managedFields[].fieldsV1`` is free-form JSON in the
    API) and an invalid one (deep values where the schema wants strings), ``levels`` deep."""
    fields = _nested(levels - _ABOVE)
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {{app: web}}
  managedFields:
  - manager: kubectl
    fieldsV1: {fields}
spec:
  replicas: 3
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{{name: web, image: "nginx:1.27"}}]
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {{matchLabels: {{app: web}}}}
            topologyKey: kubernetes.io/hostname
---
apiVersion: v1
kind: Pod
metadata:
  name: p
  managedFields:
  - manager: kubectl
    fieldsV1: {fields}
spec:
  containers: [{{name: a, image: "nginx:1.27"}}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: bad
  annotations: {{x: {_nested(levels - 3)}}}
  managedFields:
  - manager: kubectl
    fieldsV1: {fields}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: bad}}}}
  template:
    metadata: {{labels: {{app: bad}}}}
    spec:
      nodeSelector: {{disk: {_nested(levels - 5)}}}
      containers: [{{name: web, image: "nginx:1.27", env: [{_nested(levels - 7)}]}}]
"""


_POLICIES = ("admission.yaml", "facts.yaml", "scheduling.yaml")
_COMMANDS = {
    "lint with the shipped policies": (
        "lint",
        *(arg for name in _POLICIES for arg in ("--policy", str(POLICY_EXAMPLES / name))),
    ),
    "lint with a cluster, JSON": (
        "lint",
        "--cluster",
        str(EXAMPLES / "clusters" / "topology.yaml"),
        "-f",
        "json",
    ),
    "lint in two processes, SARIF": ("lint", "--jobs", "2", "--no-cache", "-f", "sarif"),
    "place": ("place", "--cluster", str(EXAMPLES / "clusters" / "topology.yaml"), "-f", "json"),
    "graph": ("graph", "-f", "json"),
    "expand": ("expand", "-f", "yaml"),
    "fix --diff": ("fix", "--diff"),
    "fix": ("fix",),
}


def test_the_deep_file_is_just_under_the_limit() -> None:
    """What the tests below lint is the deepest the loader accepts: one level more is refused."""
    limit = DEFAULT_LIMITS.depth
    assert not parse("deep.yaml", _deep_objects(limit)).problems
    (problem,) = {p.message for p in parse("deeper.yaml", _deep_objects(limit + 1)).problems}
    assert problem == f"nesting deeper than {limit} levels (limits: depth)"


@pytest.mark.parametrize("command", sorted(_COMMANDS))
def test_no_command_runs_out_of_stack_just_under_the_depth_limit(tmp_path: Path, command: str) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(_deep_objects(DEFAULT_LIMITS.depth))
    name, *options = _COMMANDS[command]
    completed = run(name, "--no-config", *options, str(path), cwd=tmp_path)  # run: exit 3 fails
    assert completed.returncode in (0, 1, 2), completed.stderr
    assert "(limits: depth)" not in completed.stdout + completed.stderr


@pytest.mark.slow
def test_a_raised_depth_limit_is_as_safe(tmp_path: Path) -> None:
    """``limits: depth`` raised to the most the config accepts, by the person running kaffinity:
    the stages keep up with it (past about 5,000 levels, cel-expr-python's conversion of the
    object ended the process with SIGSEGV on the usual 8 MiB stack)."""
    depth = 10_000
    config = tmp_path / "limits.yaml"
    config.write_text(f"limits:\n  depth: {depth}\n")
    path = tmp_path / "deep.yaml"
    path.write_text(_deep_objects(depth))
    for command in ("lint with the shipped policies", "place", "fix --diff"):
        name, *options = _COMMANDS[command]
        completed = run(name, "--config", str(config), *options, str(path), cwd=tmp_path)
        assert completed.returncode in (0, 1, 2), completed.stderr
        assert "(limits: depth)" not in completed.stdout + completed.stderr


# -- aliases ---------------------------------------------------------------------------------------


def _aliased_term(expressions: int, aliases: int) -> str:
    """A Deployment whose anti-affinity term (``expressions`` long) is aliased ``aliases`` times."""
    lines = "".join(
        f"              - {{key: example.com/a-rather-long-label-key-number-{i}, operator: In, "
        f"values: [value-{i}]}}\n"
        for i in range(expressions)
    )
    return (
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
      containers: [{name: web, image: "nginx:1.27"}]
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - &t
            topologyKey: kubernetes.io/hostname
            labelSelector:
              matchExpressions:
"""
        + lines
        + "          - *t\n" * aliases
    )


_MEASURE = """\
import resource, subprocess, sys, time
start = time.monotonic()
completed = subprocess.run([sys.executable, "-m", "kaffinity", *sys.argv[1:]], capture_output=True, text=True)
print(completed.returncode, time.monotonic() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(completed.stdout)
print(completed.stderr, file=sys.stderr)
"""


def _measured(*args: str) -> tuple[int, float, int, str, str]:
    """Exit code, seconds and peak memory (KiB) of one kaffinity run in a process of its own."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    completed = subprocess.run(
        [sys.executable, "-c", _MEASURE, *args],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    first, _, stdout = completed.stdout.partition("\n")
    code, seconds, peak = first.split()
    no_internal_error(int(code), completed.stderr)
    return int(code), float(seconds), int(peak), stdout, completed.stderr


def test_an_aliased_term_is_refused_as_kubernetes_refuses_it(tmp_path: Path) -> None:
    """199 expressions aliased 990 times: a 36 KB file expanding to a million nodes. go-yaml
    (``allowedAliasRatio``) refuses it; kaffinity said nothing after building 198,000
    requirements (4 s, 154 MiB; 14 s and 350 MiB with the cache)."""
    path = tmp_path / "aliased.yaml"
    path.write_text(_aliased_term(199, 990))
    started = time.monotonic()
    code, seconds, peak, stdout, stderr = _measured("lint", "--no-config", "-f", "json", str(path))
    assert code == 2, stderr
    report = json.loads(stdout)
    assert [(f["rule"], f["line"], f["column"]) for f in report["findings"]] == [("parse-error", 14, 13)]
    assert "excessive aliasing" in report["findings"][0]["message"]
    assert seconds < 20 and time.monotonic() - started < 30
    assert peak < 110 * 1024, f"{peak} KiB"


def test_aliases_kubernetes_accepts_are_linted_once_per_place(tmp_path: Path) -> None:
    """Within go-yaml's ratio (99% of the nodes from aliases) a file is linted; an alias is the
    same place in the file, so its findings are those of the anchored term alone."""
    reports = []
    for aliases in (1, 20):
        path = tmp_path / f"aliased-{aliases}.yaml"
        path.write_text(_aliased_term(3, aliases))
        completed = run("lint", "--no-config", "-f", "json", str(path))
        reports.append(
            [(f["rule"], f["line"], f["column"]) for f in json.loads(completed.stdout)["findings"]]
        )
    assert reports[0] == reports[1]
    assert reports[0] and not [rule for rule, _, _ in reports[0] if rule == "parse-error"]


def test_a_recursive_anchor_is_a_parse_error_at_its_line() -> None:
    (problem,) = parse("r.yaml", "apiVersion: v1\nkind: ConfigMap\ndata: &x {a: *x}\n").problems
    assert (problem.rule, problem.span) == ("parse-error", (3, 7))
    assert "recursive anchor" in problem.message


def test_the_alias_ratio_is_go_yamls() -> None:
    """The boundary of go-yaml's ``allowedAliasRatio`` under 400,000 decodes: at most 99% of
    them may come from aliases. go-yaml decodes here: the document and its mapping (2), `kind`
    and `apiVersion` with their values (4), `base` (1) and its anchored sequence of 199 items
    (200), `list` and its sequence (2), then per alias 1 + 200, the 200 being alias decodes:
    refused when 200 k / (209 + 201 k) > 0.99, from k = 205 on."""

    def document(aliases: int) -> str:
        anchored = ", ".join(str(i) for i in range(199))
        return (
            f"kind: ConfigMap\napiVersion: v1\nbase: &b [{anchored}]\nlist: [{', '.join(['*b'] * aliases)}]\n"
        )

    assert not parse("a.yaml", document(204)).problems
    (problem,) = parse("a.yaml", document(205)).problems
    assert (problem.rule, problem.span) == ("parse-error", (3, 7))
    assert "41,000 of the 41,414 nodes" in problem.message


def test_the_walks_over_parsed_data_do_not_recurse() -> None:
    """kaffinity's own copies and comparisons of parsed data are loops: data 5,000 levels deep
    goes through each under the interpreter's default recursion limit."""
    from kaffinity.k8s.compact import _copied
    from kaffinity.k8s.defaults import plain as defaulted_copy
    from kaffinity.load.edits.verify import _plain, _same
    from kaffinity.load.parse.reader import _documents
    from kaffinity.policy.cel.convert import plain as cel_copy
    from kaffinity.repo.units.variants import _frozen

    text = "a: " + "[" * 5000 + "{b: 1}" + "]" * 5000 + "\n"
    ((tree, _),) = list(_documents(text, replace(DEFAULT_LIMITS, depth=6000)))
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        for copy in (defaulted_copy, cel_copy, _plain, _copied):
            assert _same(_plain(copy(tree)), _plain(tree))
        assert hash(_frozen(tree)) == hash(_frozen(_plain(tree)))  # keys: hashed, not compared
    finally:
        sys.setrecursionlimit(before)


def test_compaction_shares_what_aliases_share() -> None:
    from kaffinity.k8s.compact import compact_file

    compact = compact_file(parse("a.yaml", _aliased_term(3, 20)))
    spec = compact.documents[0].data["spec"]["template"]["spec"]
    terms = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert len(terms) == 21 and len({id(term) for term in terms}) == 1


def test_a_diff_of_a_file_with_line_separators_applies(tmp_path: Path) -> None:
    """``fix --diff`` counts lines as ``patch`` does (at ``\\n`` only): U+2028 or U+0085 in a
    comment is not a line break, so the diff applies and gives what ``fix`` writes."""
    source = (EXAMPLES / "revision-unscoped" / "fail.yaml").read_text(encoding="utf-8")
    # YAML 1.1 ends a line at U+2028 and U+0085 too: each part is a comment of its own. Put
    # beside the term the fix completes, in the diff's context.
    lines = source.split("\n")
    at = 1 + next(
        number for number, line in enumerate(lines) if "topologyKey: kubernetes.io/hostname" in line
    )
    indent = lines[at - 1][: len(lines[at - 1]) - len(lines[at - 1].lstrip())]
    lines.insert(at, f"{indent}# a note\u2028{indent}# with a separator\x85{indent}# and a next line")
    text = "\n".join(lines)
    (tmp_path / "m.yaml").write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    diff = run("fix", "--diff", "--no-config", "m.yaml", cwd=tmp_path)
    assert diff.returncode == 1, diff.stderr
    # git apply as a patch tool (no repository needed), the target named: the diff's headers
    # say "(as written)" and "(fixed)".
    body = diff.stdout.split("\n", 2)[2]
    (tmp_path / "fix.patch").write_text(f"--- a/m.yaml\n+++ b/m.yaml\n{body}", encoding="utf-8")
    applied = subprocess.run(
        ["git", "apply", "fix.patch"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert applied.returncode == 0, applied.stderr
    patched = (tmp_path / "m.yaml").read_text(encoding="utf-8")
    (tmp_path / "m.yaml").write_text(text, encoding="utf-8")
    assert run("fix", "--no-config", "m.yaml", cwd=tmp_path).returncode == 0
    assert patched == (tmp_path / "m.yaml").read_text(encoding="utf-8") != text
