"""The cache of repeated runs (``kaffinity.cache``): never a different answer, never a crash.

A warm run reports exactly what a cold one and one without the cache report; an entry is used
only for the same file name, bytes, kaffinity version and settings; a truncated, corrupt or
foreign entry is a miss, and so is one authenticated but of the wrong shape; runs at the same
time share the folder; the folder prunes itself. (What a hostile checkout does to the cache:
``tests/test_security_cache.py``.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kaffinity import cache as cache_module
from kaffinity.cache import MAGIC, Cache, decode, encode
from tests.kit import LintRun, lint_json, run

#: The secret of the suite's runs (tests/conftest.py): entries written here are theirs.
SECRET = os.environ.get("KAFFINITY_CACHE_KEY", "the test suite's cache key").encode()
#: Where an entry's payload starts: the magic line, the key's, the HMAC's.
HEADER = len(MAGIC) + 41 + 65

WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: DoNotSchedule
          labelSelector: {matchLabels: {app: web}}
          matchLabelKeys: [pod-template-hash]
"""
#: A field that kube-apiserver 1.27 drops (matchLabelKeys is beta from 1.27, on by default),
#: and one the schema refuses: the findings depend on the settings and the content.
BROKEN = WEB.replace("replicas: 3", 'replicas: "3"')


def _entries(cache: Path) -> list[Path]:
    return sorted(path for path in cache.rglob("*") if path.is_file() and len(path.name) == 40)


def _age(cache: Path) -> None:
    """Make every entry an hour old: written by an earlier run, not this one."""
    hour_ago = time.time() - 3600
    for entry in _entries(cache):
        os.utime(entry, (hour_ago, hour_ago))


def _signed(entry: Path, payload: bytes) -> None:
    """Write ``payload`` at ``entry`` as the run that owns the key would (a valid HMAC)."""
    cache = Cache(str(entry.parents[3]), entry.parent.parent.name, SECRET)
    assert cache.version == entry.parents[2].name
    entry.unlink()
    cache.put(entry.name, payload)
    cache.flush()
    assert cache.error is None and cache.get(entry.name) == payload


def _rules(stdout: str) -> list[tuple[str, int]]:
    return [(finding["rule"], finding["line"]) for finding in json.loads(stdout)["findings"]]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "web.yaml").write_text(WEB)
    (folder / "api.yaml").write_text(WEB.replace("web", "api"))
    return folder


def test_warm_runs_report_what_cold_and_uncached_runs_report(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    uncached = run("lint", "--no-config", "--format", "json", "--no-cache", str(repo))
    assert not cache.exists()
    cold = lint_json("--cache-dir", str(cache), str(repo))
    entries = _entries(cache)
    assert len(entries) == 2  # one per file
    inodes = [path.stat().st_ino for path in entries]
    warm = lint_json("--cache-dir", str(cache), str(repo))
    assert cold == warm == LintRun(uncached.returncode, uncached.stdout, uncached.stderr)
    assert [path.stat().st_ino for path in _entries(cache)] == inodes  # read, not written again
    # As ruff's: neither git nor backups take it.
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")


def test_an_edited_file_is_linted_again(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert lint_json("--cache-dir", str(cache), str(repo)).code == 0
    (repo / "web.yaml").write_text(BROKEN)
    broken = lint_json("--cache-dir", str(cache), str(repo))
    assert broken.code == 1
    assert ("schema", 5) in _rules(broken.stdout)
    (repo / "web.yaml").write_text(WEB)  # back as it was: its first entry serves again
    assert lint_json("--cache-dir", str(cache), str(repo)).code == 0


def test_a_renamed_file_is_reported_under_its_new_name(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (repo / "web.yaml").write_text(BROKEN)
    lint_json("--cache-dir", str(cache), str(repo))
    (repo / "web.yaml").rename(repo / "moved.yaml")
    moved = lint_json("--cache-dir", str(cache), str(repo))
    assert {finding["file"] for finding in moved.report["findings"]} == {str(repo / "moved.yaml")}


def test_settings_and_kubernetes_version_have_their_own_entries(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (repo / "web.yaml").write_text(BROKEN)
    default = _rules(lint_json("--cache-dir", str(cache), str(repo)).stdout)
    older = _rules(
        lint_json(
            "--cache-dir",
            str(cache),
            "--kube-version",
            "1.27",
            "--feature-gates",
            "MatchLabelKeysInPodTopologySpread=false",
            str(repo),
        ).stdout
    )
    assert ("gated-field-dropped", 16) in older and ("gated-field-dropped", 16) not in default
    ignored = _rules(lint_json("--cache-dir", str(cache), "--ignore", "schema", str(repo)).stdout)
    assert ("schema", 5) in default and ("schema", 5) not in ignored
    assert (
        _rules(lint_json("--cache-dir", str(cache), str(repo)).stdout) == default
    )  # and the first settings' entries still serve
    versions = [path for path in cache.iterdir() if path.is_dir()]
    assert len(versions) == 1  # one kaffinity version
    assert len([path for path in versions[0].iterdir() if path.is_dir()]) == 3  # three fingerprints


def test_another_kaffinity_version_never_reads_the_entries(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    lint_json("--cache-dir", str(cache), str(repo))
    (old,) = [path for path in cache.iterdir() if path.is_dir()]
    import kaffinity

    monkeypatch.setattr(kaffinity, "__version__", "99.0.0")
    newer = Cache(str(cache), "fingerprint", SECRET)
    assert newer.folder != str(old / "fingerprint") and not newer.folder.startswith(str(old))
    newer.put(Cache.key("web.yaml", b"x"), b"payload")
    newer.prune()
    assert not old.exists()  # never trusted across versions: deleted
    assert [path.name for path in cache.iterdir() if path.is_dir()] == ["99.0.0-" + str(cache_module.FORMAT)]


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated (a run killed while... a disk full)
        lambda data: b"",
        lambda data: data[:HEADER] + b"garbage",  # a header, then another payload: its HMAC fails
        lambda data: MAGIC + b"0" * 40 + b"\n" + data[len(MAGIC) + 41 :],  # another key's header
        lambda data: b"kaffinity-cache\n" + data[len(MAGIC) :],  # the format of before (pickles)
        lambda data: data[:HEADER] + data[HEADER:].replace(b'"web"', b'"wex"'),  # edited: HMAC fails
    ],
    ids=["truncated", "empty", "garbage", "wrong-key", "old-format", "edited"],
)
def test_a_damaged_entry_is_a_miss_never_a_crash(repo: Path, tmp_path: Path, damage: object) -> None:
    cache = tmp_path / "cache"
    (repo / "web.yaml").write_text(BROKEN)
    expected = lint_json("--cache-dir", str(cache), str(repo))
    for entry in _entries(cache):
        entry.write_bytes(damage(entry.read_bytes()))  # type: ignore[operator]
    assert lint_json("--cache-dir", str(cache), str(repo)) == expected
    assert lint_json("--cache-dir", str(cache), str(repo)) == expected  # and the entries were written again
    for entry in _entries(cache):
        assert entry.read_bytes().startswith(MAGIC)


@pytest.mark.parametrize(
    "payload",
    [
        b"garbage",
        b"[]",
        __import__("pickle").dumps({"not": "an entry"}),
        # JSON of the right outline with a wrong type inside (a line that is a string)
        None,
    ],
    ids=["garbage", "empty-list", "pickle", "wrong-type"],
)
def test_an_authenticated_entry_of_the_wrong_shape_is_a_miss(
    repo: Path, tmp_path: Path, payload: bytes | None
) -> None:
    """Validated on load: an entry with a good HMAC but not what kaffinity writes is a miss,
    and is written again (whoever holds the key wrote it: a bug, or an older build)."""
    cache = tmp_path / "cache"
    (repo / "web.yaml").write_text(BROKEN)
    expected = lint_json("--cache-dir", str(cache), str(repo))
    changed = 0
    for entry in _entries(cache):
        good = entry.read_bytes()[HEADER:]
        bad = good.replace(b'"schema",0,', b'"schema","0",', 1) if payload is None else payload
        changed += bad != good
        _signed(entry, bad)
    assert changed
    assert lint_json("--cache-dir", str(cache), str(repo)) == expected
    for entry in _entries(cache):
        assert decode(entry.read_bytes()[HEADER:]) is not None  # written again


def test_an_entry_decodes_to_what_was_checked(repo: Path) -> None:
    """The format rebuilds equal objects: documents (their trees, positions, spans), findings
    (their objects, related places, edits), suppression comments, problems."""
    from kaffinity.config import Settings
    from kaffinity.engine.single import file_result, single_object_rules
    from kaffinity.load.read import from_bytes, read_bytes
    from kaffinity.rules import RULES

    settings = Settings()
    text = BROKEN.replace("spec:\n  replicas", "spec:  # kaffinity: ignore[api-warning]\n  replicas")
    text += "---\napiVersion: v1\nkind: List\nitems:\n"
    text += "- {apiVersion: v1, kind: Namespace, metadata: {name: a}}\n---\n"
    text += "{apiVersion: v1, kind: ConfigMap, metadata: {name: b, name: c},\n"
    text += " data: {x: -1.5e-3, y: 1e3, z: null}}\n"  # .inf: a parse-error, as kubectl refuses it
    (repo / "all.yaml").write_text(text)
    name, raw, problem = read_bytes(str(repo / "all.yaml"), settings.limits)
    checked = file_result(
        from_bytes(str(repo / "all.yaml"), name, raw, problem, settings.limits),
        settings,
        single_object_rules(RULES, settings),
    )
    assert checked.findings and checked.comments and len(checked.file.documents) == 3
    assert any(doc.duplicate_keys for doc in checked.file.documents)
    payload = encode(checked)
    assert payload is not None
    again = decode(payload)
    assert again == checked
    for before, after in zip(checked.file.documents, again.file.documents, strict=True):
        assert after == before and after.duplicate_keys == before.duplicate_keys
        assert after.data is after.root if not after.prefix else after.data is after.root["items"][0]
        assert list(after.root.pos) == list(before.root.pos) and after.root.span == before.root.span
    for (_, _, finding), (_, _, same) in zip(checked.findings, again.findings, strict=True):
        assert (finding.object, finding.related, finding.edit, finding.fix, finding.severity) == (
            same.object,
            same.related,
            same.edit,
            same.fix,
            same.severity,
        )


def test_damaged_entries_with_jobs(tmp_path: Path) -> None:
    """The workers send a cached entry as it is (authenticated, decoded here); a damaged one
    is checked again here."""
    folder = tmp_path / "many"
    folder.mkdir()
    for index in range(70):
        (folder / f"w{index:02}.yaml").write_text(
            (BROKEN if index % 7 == 0 else WEB).replace("web", f"w{index}")
        )
    cache = tmp_path / "cache"
    expected = lint_json("--cache-dir", str(cache), "--jobs", "2", str(folder))
    assert expected.code == 1
    for entry in _entries(cache)[::3]:
        entry.write_bytes(entry.read_bytes()[:-20])
    assert lint_json("--cache-dir", str(cache), "--jobs", "2", str(folder)) == expected
    assert lint_json("--cache-dir", str(cache), "--jobs", "1", str(folder)) == expected


@pytest.mark.slow
def test_runs_at_the_same_time_share_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    for index in range(80):
        (folder / f"w{index:02}.yaml").write_text(
            (BROKEN if index % 5 == 0 else WEB).replace("web", f"w{index}")
        )
    cache = tmp_path / "cache"
    command = [
        sys.executable,
        "-m",
        "kaffinity",
        "lint",
        "--no-config",
        "-f",
        "json",
        "--cache-dir",
        str(cache),
    ]
    processes = [
        subprocess.Popen(
            [*command, "--jobs", str(1 + index % 2), str(folder)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for index in range(4)
    ]
    results = [process.communicate(timeout=120) for process in processes]
    assert {process.returncode for process in processes} == {1}
    assert len({stdout for stdout, _ in results}) == 1
    assert all(stderr == b"" for _, stderr in results)
    assert not [path for path in cache.rglob(".tmp-*")]  # every write finished or was removed
    uncached = subprocess.run([*command, "--no-cache", str(folder)], capture_output=True, check=False)
    assert uncached.stdout == results[0][0]


def test_a_cache_that_cannot_be_written_is_noted_and_the_run_goes_on(repo: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    done = lint_json("--cache-dir", str(blocked), str(repo))
    assert done.code == 0 and done.report["summary"]["files"] == 2
    stderr = done.stderr
    assert stderr.startswith(f"kaffinity: note: the cache is off: the cache folder {blocked} is not a folder")
    assert len(stderr.splitlines()) == 1


def test_no_cache_writes_nothing(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run("lint", "--no-config", "--no-cache", "--cache-dir", str(cache), str(repo))
    assert not cache.exists()
    config = repo / ".kaffinity.yaml"
    config.write_text("cache: false\n")
    run("lint", "--config", str(config), "--cache-dir", str(cache), str(repo))
    assert not cache.exists()


def test_the_folder_by_flag_environment_config_default(repo: Path, tmp_path: Path) -> None:
    env = {"KAFFINITY_CACHE_DIR": ""}
    config = repo / ".kaffinity.yaml"
    config.write_text("cache-dir: build/lint-cache\n")
    run("lint", str(repo), cwd=repo, env=env)
    assert _entries(repo / "build" / "lint-cache")  # cache-dir:, relative to the config file
    run("lint", str(repo), cwd=repo, env={"KAFFINITY_CACHE_DIR": str(tmp_path / "from-env")})
    assert _entries(tmp_path / "from-env")  # the environment over the config
    run(
        "lint",
        "--cache-dir",
        str(tmp_path / "from-flag"),
        str(repo),
        cwd=repo,
        env={"KAFFINITY_CACHE_DIR": str(tmp_path / "x")},
    )
    assert _entries(tmp_path / "from-flag")  # the flag over both
    config.unlink()
    run("lint", ".", cwd=repo, env=env)
    assert _entries(repo / ".kaffinity_cache")  # the default, here
    # Hidden: never read as input.
    completed = run("lint", "--format", "json", ".", cwd=repo, env=env)
    assert json.loads(completed.stdout)["summary"]["files"] == 2


def test_pruning_drops_entries_of_files_gone(tmp_path: Path) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    for index in range(30):
        (folder / f"w{index:02}.yaml").write_text(WEB.replace("web", f"w{index}"))
    cache = tmp_path / "cache"
    lint_json("--cache-dir", str(cache), str(folder))
    assert len(_entries(cache)) == 30
    _age(cache)
    for path in sorted(folder.iterdir())[:27]:
        path.unlink()
    (folder / "new.yaml").write_text(WEB.replace("web", "new"))
    lint_json("--cache-dir", str(cache), str(folder))
    assert len(_entries(cache)) == 4  # the 27 unused outnumbered the 4 used twice: deleted


def test_pruning_keeps_what_the_workers_read(tmp_path: Path) -> None:
    """``--jobs`` workers read most entries, each with its own copy of the cache: an entry read
    anywhere in the run is in use, and stays."""
    folder = tmp_path / "many"
    folder.mkdir()
    for index in range(90):
        (folder / f"w{index:02}.yaml").write_text(WEB.replace("web", f"w{index}"))
    cache = tmp_path / "cache"
    lint_json("--cache-dir", str(cache), "--jobs", "4", str(folder))
    assert len(_entries(cache)) == 90
    _age(cache)
    (folder / "w00.yaml").write_text(WEB.replace("web", "edited"))  # one entry written: pruning runs
    lint_json("--cache-dir", str(cache), "--jobs", "4", str(folder))
    assert len(_entries(cache)) == 91  # the old w00 entry is the only one unused: too few to prune


def test_changed_reads_its_context_from_the_cache(repo: Path, tmp_path: Path) -> None:
    """Pre-commit: after one run, ``--changed`` parses the changed file only (the context's
    entries are those of the full run, or of an earlier ``--changed``)."""
    cache = tmp_path / "cache"
    for index in range(5):
        (repo / f"more{index}.yaml").write_text(WEB.replace("web", f"more{index}"))
    full = lint_json("--cache-dir", str(cache), str(repo))
    written = len(_entries(cache))
    (repo / "web.yaml").write_text(BROKEN)
    completed = run(
        "lint",
        "--no-config",
        "--format",
        "json",
        "--cache-dir",
        str(cache),
        "--context",
        str(repo),
        "--changed",
        str(repo / "web.yaml"),
    )
    assert completed.returncode == 1
    assert {finding["file"] for finding in json.loads(completed.stdout)["findings"]} == {
        str(repo / "web.yaml")
    }
    assert len(_entries(cache)) == written + 1  # only the edited file was linted again
    assert full.code == 0


def test_an_entry_is_written_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails half-way leaves no entry and no temporary file behind."""
    cache = Cache(str(tmp_path / "cache"), "f", SECRET)
    key = Cache.key("a.yaml", b"data")

    def broken(source: str, target: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    cache.put(key, b"payload")
    cache.flush()
    assert cache.error is not None and "No space left on device" in cache.error
    assert cache.get(key) is None
    assert [path for path in (tmp_path / "cache").rglob("*") if path.is_file() and "tmp" in path.name] == []


def test_a_cache_with_writes_pending_goes_to_workers_without_them(tmp_path: Path) -> None:
    """--jobs sends the cache with every task: after writes started here, it still pickles, and
    the copy writes with its own thread."""
    import pickle

    cache = Cache(str(tmp_path / "cache"), "f", SECRET)
    cache.put(Cache.key("a.yaml", b"a"), b"first")
    cache.later(Cache.key("c.yaml", b"c"), object())  # type: ignore[arg-type]
    copy = pickle.loads(pickle.dumps(cache))
    assert copy.written == 0 and copy._writer is None and copy._later == [] and copy._children == []
    cache._later = []
    copy.put(Cache.key("b.yaml", b"b"), b"second")
    copy.flush()
    cache.flush()
    assert cache.get(Cache.key("a.yaml", b"a")) == b"first"
    assert cache.get(Cache.key("b.yaml", b"b")) == b"second"


@pytest.mark.parametrize(
    "payload",
    [
        b"{}",  # an object with no position member
        b"[{}]",
        b"[[]]",
        b'{"":[1,2,[-1]]}',  # a negative position
        b'{"":[1,2,[1.5]]}',
        b'{"":["1",2,[]]}',
        b'{"a":[1],"":[1,1,[]]}',  # a JSON array as a value of a tree
        b'{"":[1,1,[],[[1]]]}',
        b'{"a":1,"":[1,1,[],[]]}',  # a list's object with keys
        b"[" * 100_000,  # deeper than the decoder goes
        b"\xff\xfe",
        b'["a","",null,true,[],[],[],[],[],[],[1]]',  # notices that are not strings
        b'["a","",null,true,[],[["a",0,5,[1,1],[],[]]],[],[],[],[],[]]',  # a document's root not there
        b'["a","",null,true,[],[],[],[["r",null,"f",1,1,"r","m","bogus","c","",null,[],null,null,[]]],[],[],[]]',
    ],
)
def test_an_entry_of_the_wrong_shape_decodes_to_nothing(payload: bytes) -> None:
    assert decode(payload) is None


def test_the_smallest_entry_decodes() -> None:
    """The control of the test above: the same outline, of the right shape, is an entry."""
    checked = decode(b'["a","",null,true,[{"":[1,1,[]]}],[["a",0,0,[1,1],[],[]]],[],[],[],[],["n"]]')
    assert checked is not None
    assert checked.file.name == "a" and checked.notices == ("n",)
    assert checked.file.documents[0].data == {} and checked.file.documents[0].span == (1, 1)


def _checked(repo: Path) -> tuple[str, object]:
    """The key and the single-object stage's result of ``repo``'s web.yaml."""
    from kaffinity.config import Settings
    from kaffinity.engine.single import file_result, single_object_rules
    from kaffinity.load.read import from_bytes, read_bytes
    from kaffinity.rules import RULES

    settings = Settings()
    (repo / "web.yaml").write_text(BROKEN)
    name, raw, problem = read_bytes(str(repo / "web.yaml"), settings.limits)
    checked = file_result(
        from_bytes(str(repo / "web.yaml"), name, raw, problem, settings.limits),
        settings,
        single_object_rules(RULES, settings),
    )
    return Cache.key(name, raw), checked


def test_entries_kept_for_later_are_written_by_another_process(repo: Path, tmp_path: Path) -> None:
    """A run's own entries are encoded and written after the single-object stage, by a forked
    process on Linux (off the run's path); flush waits for it: then they read as put writes them."""
    key, checked = _checked(repo)
    cache = Cache(str(tmp_path / "cache"), "f", SECRET)
    cache.later(key, checked)  # type: ignore[arg-type]
    assert cache.get(key) is None
    cache.write_later()
    assert bool(cache._children) == sys.platform.startswith("linux")
    cache.flush()
    assert not cache._children and cache.error is None and cache.written == 1
    assert cache.get(key) == encode(checked)  # type: ignore[arg-type]
    assert len(_entries(tmp_path / "cache")) == 1


def test_a_writer_process_that_cannot_write_says_why(repo: Path, tmp_path: Path) -> None:
    key, checked = _checked(repo)
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    cache = Cache(str(blocked), "f", SECRET)
    cache.later(key, checked)  # type: ignore[arg-type]
    cache.write_later()
    cache.flush()
    assert cache.error is not None and str(blocked) in cache.error
    assert blocked.read_text() == "not a folder"
