"""A hostile checkout against the cache (issue 31): nothing in ``.kaffinity_cache`` runs, hides a
finding, exhausts memory, or makes kaffinity read, write or delete outside the cache.

Every run here has its own home, ``XDG_CACHE_HOME`` and key (never the real ones), and lints a
checkout in ``tmp_path`` whose cache is wherever the attack puts it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import pickle
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

import kaffinity
from kaffinity.cache import FORMAT, MAGIC, Cache, decode, encode
from tests.kit import LintRun, lint_json, run

BROKEN = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: "3"
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: other}}
    spec:
      containers: [{name: web, image: nginx, ports: [{containerPort: "80"}]}]
"""
CLEAN = BROKEN.replace('replicas: "3"', "replicas: 3").replace("app: other", "app: web").replace('"80"', "80")
HEADER = len(MAGIC) + 41 + 65
VERSION = f"{kaffinity.__version__}-{FORMAT}"


class _Marker:
    """A pickle that creates a file when it is loaded: what a committed entry ran before."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, ...]:
        return (open, (str(self.path), "w"))


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """The environment of a user with their own home: the key is made in it."""
    folder = tmp_path / "home"
    folder.mkdir()
    return {
        "HOME": str(folder),
        "XDG_CACHE_HOME": str(folder / ".cache"),
        "KAFFINITY_CACHE_KEY": "",
        "KAFFINITY_CACHE_DIR": "",
    }


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    folder = tmp_path / "checkout"
    folder.mkdir()
    (folder / "web.yaml").write_text(BROKEN)
    (folder / "api.yaml").write_text(CLEAN.replace("web", "api"))
    return folder


def _rules(done: LintRun) -> list[tuple[str, str, int]]:
    return sorted((finding["file"], finding["rule"], finding["line"]) for finding in done.report["findings"])


def _entries(cache: Path) -> list[Path]:
    return sorted(path for path in cache.rglob("*") if path.is_file() and len(path.name) == 40)


def _tree(folder: Path) -> dict[str, tuple[int, int, float]]:
    """Everything below ``folder`` (not following symlinks): its kind, size and time."""
    found = {}
    for path in [folder, *folder.rglob("*")]:
        info = path.lstat()
        found[str(path.relative_to(folder))] = (stat.S_IFMT(info.st_mode), info.st_size, info.st_mtime)
    return found


def _outside(tmp_path: Path) -> Path:
    """A folder outside the checkout, that the attacks aim at: home files, another tool's cache,
    names like kaffinity's, and kaffinity's own tag."""
    folder = tmp_path / "outside"
    (folder / ".ssh").mkdir(parents=True)
    (folder / ".ssh" / "id_ed25519").write_text("secret")
    (folder / "pip" / "http").mkdir(parents=True)
    (folder / "pip" / "http" / "data").write_text("pip")
    old = folder / "0.0.1-3" / ("a" * 32) / "aa"
    old.mkdir(parents=True)
    (old / ("a" * 40)).write_text("not kaffinity's")
    (folder / "CACHEDIR.TAG").write_text(
        "Signature: 8a477f597d28d172789f06886806bc55\n"
        "# This file is a cache directory tag created by kaffinity.\n"
        "# For information about cache directory tags see https://bford.info/cachedir/\n"
    )
    hour_ago = os_time() - 3600 * 24 * 90
    for path in [folder, *folder.rglob("*")]:
        os.utime(path, (hour_ago, hour_ago), follow_symlinks=False)
    return folder


def os_time() -> float:
    import time

    return time.time()


def _key(home: dict[str, str]) -> bytes:
    text = (Path(home["XDG_CACHE_HOME"]) / "kaffinity" / "cache-key").read_text().strip()
    return bytes.fromhex(text)


# --- 1. a committed entry runs no code --------------------------------------------------------------


def _plant_pickles(cache: Path, marker: Path) -> int:
    """Replace every entry with a pickle that creates ``marker``: with the new header and a wrong
    HMAC, with no HMAC (the header of before), and at the path of the format before (version
    ``-3``, its header: what the old scheme computed and read)."""
    bomb = pickle.dumps(_Marker(marker))
    planted = 0
    for entry in _entries(cache):
        key = entry.name.encode()
        if planted % 2:
            entry.write_bytes(MAGIC + key + b"\n" + b"0" * 64 + b"\n" + bomb)
        else:
            entry.write_bytes(MAGIC + key + b"\n" + bomb)
        old = cache / f"{kaffinity.__version__}-3" / entry.parent.parent.name / entry.parent.name / entry.name
        old.parent.mkdir(parents=True, exist_ok=True)
        old.write_bytes(b"kaffinity-cache\n" + key + b"\n" + bomb)
        planted += 1
    return planted


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_committed_entry_that_would_run_code_is_a_miss(
    tmp_path: Path, home: dict[str, str], jobs: str
) -> None:
    """The review's first attack: pickled entries placed where kaffinity reads them. The marker
    is never made, the findings are reported, exit 1; with --jobs 2 the workers read them too."""
    folder = tmp_path / "checkout"
    folder.mkdir()
    for index in range(70):  # --jobs starts workers from 64 files
        (folder / f"w{index:02}.yaml").write_text(
            (BROKEN if index % 7 == 0 else CLEAN).replace("web", f"w{index}")
        )
    expected = lint_json("--jobs", jobs, ".", cwd=folder, env=home)
    assert expected.code == 1 and len(_rules(expected)) >= 10
    marker = tmp_path / "ran"
    cache = folder / ".kaffinity_cache"
    assert _plant_pickles(cache, marker) == 70
    again = lint_json("--jobs", jobs, ".", cwd=folder, env=home)
    assert not marker.exists()
    assert (again.code, again.stdout, again.stderr) == (1, expected.stdout, expected.stderr)
    # The entries were written again, authenticated; the old format's folder pruned.
    assert all(entry.read_bytes()[HEADER : HEADER + 1] == b"[" for entry in _entries(cache / VERSION))
    assert not (cache / f"{kaffinity.__version__}-3").exists()


def test_the_github_format_reads_no_pickle_either(
    checkout: Path, home: dict[str, str], tmp_path: Path
) -> None:
    """As the review ran it: ``kaffinity lint --format github .``."""
    first = run("lint", "--no-config", "--format", "github", ".", cwd=checkout, env=home)
    marker = tmp_path / "ran"
    _plant_pickles(checkout / ".kaffinity_cache", marker)
    second = run("lint", "--no-config", "--format", "github", ".", cwd=checkout, env=home)
    assert not marker.exists()
    assert second.returncode == first.returncode == 1
    assert second.stdout == first.stdout and "::error" in second.stdout


# --- 3. a forged entry hides nothing -------------------------------------------------------------


def test_a_well_formed_entry_forged_without_the_key_hides_nothing(
    checkout: Path, home: dict[str, str], tmp_path: Path
) -> None:
    """The entry of the broken file replaced by the same without its findings (well-formed JSON, its header
    right), authenticated with any key but the user's: a miss, every finding reported. The same
    entry with the user's key would hide them (so the key is what stands in the way)."""
    expected = lint_json(".", cwd=checkout, env=home)
    assert expected.code == 1
    broken = [rule for rule in _rules(expected) if rule[0] == "web.yaml"]
    assert broken
    cache = checkout / ".kaffinity_cache"
    (entry,) = [path for path in _entries(cache) if b'"web.yaml"' in path.read_bytes()[HEADER : HEADER + 20]]
    honest = decode(entry.read_bytes()[HEADER:])
    assert honest is not None and honest.file.name == "web.yaml" and honest.findings
    from dataclasses import replace

    forged = encode(replace(honest, findings=()))
    assert forged is not None
    fingerprint = entry.parent.parent.name
    for secret in (b"the attacker's guess at a key", b"", hashlib.sha256(b"kaffinity").digest()):
        attacker = Cache(str(tmp_path / "attacker"), fingerprint, secret)
        attacker.put(entry.name, forged)
        attacker.flush()
        (made,) = _entries(tmp_path / "attacker")
        shutil.copyfile(made, entry)
        shutil.rmtree(tmp_path / "attacker")
        completed = lint_json(".", cwd=checkout, env=home)
        assert (completed.code, _rules(completed)) == (1, _rules(expected))
    # The control: signed with the user's own key, the forged entry is taken (a hit).
    own = Cache(str(cache), fingerprint, _key(home))
    entry.unlink()
    own.put(entry.name, forged)
    own.flush()
    assert [rule for rule in _rules(lint_json(".", cwd=checkout, env=home)) if rule[0] == "web.yaml"] == []


def test_an_entry_is_bound_to_its_settings(checkout: Path, home: dict[str, str]) -> None:
    """An authenticated entry copied into another fingerprint's folder (other settings: made with
    ``--ignore schema``, under the same key) is a miss: the HMAC covers the fingerprint."""
    expected = lint_json(".", cwd=checkout, env=home)
    assert any(rule[1] == "schema" for rule in _rules(expected))
    cache = checkout / ".kaffinity_cache" / VERSION
    (default,) = list(cache.iterdir())
    lint_json("--ignore", "schema", ".", cwd=checkout, env=home)
    (ignoring,) = [path for path in cache.iterdir() if path != default]
    copied = 0
    for entry in _entries(ignoring):
        shutil.copyfile(entry, default / entry.parent.name / entry.name)
        copied += 1
    assert copied == 2
    completed = lint_json(".", cwd=checkout, env=home)
    assert _rules(completed) == _rules(expected)


# --- 3. an entry that is not a file, or too large -----------------------------------------------


def test_an_entry_that_is_a_symlink_fifo_or_huge_is_a_miss(checkout: Path, home: dict[str, str]) -> None:
    """A symlink to /dev/zero (read to the end, it ran the runner out of memory), a named pipe
    (would block) and a regular entry past the size cap, though authenticated: misses."""
    expected = lint_json("--max-file-size", "1Ki", ".", cwd=checkout, env=home)
    assert expected.code == 1
    cache = checkout / ".kaffinity_cache"
    web, api = _entries(cache)
    web.unlink()
    web.symlink_to("/dev/zero")
    api.unlink()
    os.mkfifo(api)
    completed = lint_json("--max-file-size", "1Ki", ".", cwd=checkout, env=home)
    assert (completed.code, completed.stdout) == (1, expected.stdout)
    # Too large: the cap is 4 times the file size limit, at least 1 MiB.
    for entry in _entries(cache):
        entry.unlink()
    lint_json("--max-file-size", "1Ki", ".", cwd=checkout, env=home)
    # What the run uses: max_entry() of a 1 KiB file size limit, 1 MiB.
    owner = Cache(str(cache), _entries(cache)[0].parent.parent.name, _key(home), max_size=1 << 20)
    big = None
    for entry in _entries(cache):
        payload = entry.read_bytes()[HEADER:]
        checked = decode(payload)
        assert checked is not None
        if checked.findings:
            big = entry
            # Valid JSON, clean, with the right HMAC: but 2 MiB.
            from dataclasses import replace

            forged = encode(replace(checked, findings=(), notices=("x" * (2 << 20),)))
            assert forged is not None
            entry.unlink()
            mac = hmac.new(
                _key(home),
                MAGIC
                + VERSION.encode()
                + b"\0"
                + entry.parent.parent.name.encode()
                + b"\0"
                + entry.name.encode()
                + b"\0"
                + forged,
                hashlib.sha256,
            ).hexdigest()
            entry.write_bytes(MAGIC + entry.name.encode() + b"\n" + mac.encode() + b"\n" + forged)
            assert owner.get(entry.name) is None  # past the cap of 1 MiB
            owner.max_size = 8 << 20
            assert owner.get(entry.name) == forged  # the same entry under a larger cap: a hit
    assert big is not None
    completed = lint_json("--max-file-size", "1Ki", ".", cwd=checkout, env=home)
    assert (completed.code, completed.stdout) == (1, expected.stdout)


# --- 2. nothing outside the cache is deleted or written ------------------------------------------


def test_a_cache_folder_that_is_a_symlink_is_not_used(
    checkout: Path, home: dict[str, str], tmp_path: Path
) -> None:
    outside = _outside(tmp_path)
    before = _tree(outside)
    (checkout / ".kaffinity_cache").symlink_to(outside)
    completed = lint_json(".", cwd=checkout, env=home)
    assert completed.code == 1 and _rules(completed)
    assert completed.stderr.startswith("kaffinity: note: the cache is off: ")
    assert ".kaffinity_cache is a symlink" in completed.stderr and len(completed.stderr.splitlines()) == 1
    assert _tree(outside) == before
    # Named by KAFFINITY_CACHE_DIR (relative: in the checkout), not used either.
    completed = lint_json(".", cwd=checkout, env={**home, "KAFFINITY_CACHE_DIR": ".kaffinity_cache"})
    assert "is a symlink" in completed.stderr
    assert _tree(outside) == before


def test_a_relative_cache_folder_below_a_committed_symlink_is_not_used(
    checkout: Path, home: dict[str, str], tmp_path: Path
) -> None:
    """``KAFFINITY_CACHE_DIR=build/cache`` or ``--cache-dir build/cache`` run in a checkout whose
    ``build`` is a symlink out of it: nothing written there."""
    outside = _outside(tmp_path)
    before = _tree(outside)
    (checkout / "build").symlink_to(outside)
    for env, args in (({"KAFFINITY_CACHE_DIR": "build/cache"}, ()), ({}, ("--cache-dir", "build/cache"))):
        completed = lint_json(*args, ".", cwd=checkout, env={**home, **env})
        assert completed.code == 1 and _rules(completed)
        assert "build is a symlink" in completed.stderr and len(completed.stderr.splitlines()) == 1
        assert _tree(outside) == before


def test_a_cache_folder_named_on_the_command_line_may_be_a_symlink(
    checkout: Path, home: dict[str, str], tmp_path: Path
) -> None:
    """The person running kaffinity chooses: ``--cache-dir`` naming a symlink (to a larger
    disk) is used, its target becomes the cache."""
    disk = tmp_path / "disk"
    disk.mkdir()  # empty: kaffinity adopts it
    link = tmp_path / "link"
    link.symlink_to(disk)
    first = lint_json("--cache-dir", str(link), ".", cwd=checkout, env=home)
    assert first.stderr == "" and (disk / "CACHEDIR.TAG").exists() and len(_entries(disk)) == 2
    inodes = [path.stat().st_ino for path in _entries(disk)]
    second = lint_json("--cache-dir", str(link), ".", cwd=checkout, env=home)
    assert second.stdout == first.stdout and [path.stat().st_ino for path in _entries(disk)] == inodes


def test_a_shard_or_version_folder_that_is_a_symlink_is_never_followed(
    checkout: Path, home: dict[str, str], tmp_path: Path
) -> None:
    """In kaffinity's own cache folder, a shard that is a symlink to a folder of old entry-named
    files, and another version's folder that is a symlink: nothing there is read, written or
    deleted (pruning runs: a file was edited, and the entries are old)."""
    lint_json(".", cwd=checkout, env=home)
    cache = checkout / ".kaffinity_cache"
    outside = _outside(tmp_path)
    shard_target = outside / "0.0.1-3" / ("a" * 32) / "aa"
    # The shard of the file that does not change: read by the next run.
    (entry,) = [path for path in _entries(cache) if b"api.yaml" in path.read_bytes()]
    shard = entry.parent
    for name in os.listdir(shard):
        (shard_target / name).write_bytes((shard / name).read_bytes())
        os.utime(shard_target / name, (0, 0))
    shutil.rmtree(shard)
    shard.symlink_to(shard_target)
    (cache / "0.0.1-3").symlink_to(outside / "0.0.1-3")
    (cache / "0.0.2-3").symlink_to(outside)
    before = _tree(outside)
    (checkout / "web.yaml").write_text(BROKEN.replace("web", "edited"))
    completed = lint_json(".", cwd=checkout, env=home)
    assert completed.code == 1 and _rules(completed)
    assert _tree(outside) == before
    assert "is a symlink" in completed.stderr
    assert (cache / "0.0.1-3").is_symlink() and (cache / "0.0.2-3").is_symlink() and shard.is_symlink()


def test_a_foreign_folder_is_never_used_nor_pruned(
    checkout: Path, home: dict[str, str], tmp_path: Path
) -> None:
    """``KAFFINITY_CACHE_DIR=~/.cache``, ``--cache-dir ~``: a folder that holds other files and
    no kaffinity tag is refused with a note; none of its folders is deleted, nothing is written."""
    outside = _outside(tmp_path)
    (outside / "CACHEDIR.TAG").unlink()
    before = _tree(outside)
    for env, args in (({"KAFFINITY_CACHE_DIR": str(outside)}, ()), ({}, ("--cache-dir", str(outside)))):
        completed = lint_json(*args, ".", cwd=checkout, env={**home, **env})
        assert completed.code == 1 and _rules(completed)
        assert "holds files kaffinity did not make" in completed.stderr
        assert _tree(outside) == before


def test_a_config_cache_dir_outside_the_repository_deletes_nothing(
    checkout: Path, home: dict[str, str], tmp_path: Path
) -> None:
    """``cache-dir: ../outside`` in the checkout's config, where the folder even holds kaffinity's
    tag: nothing there is deleted or written (whether the config is refused or the cache off)."""
    outside = _outside(tmp_path)
    before = _tree(outside)
    (checkout / ".kaffinity.yaml").write_text("cache-dir: ../outside\n")
    run_ = run("lint", "--format", "json", ".", cwd=checkout, env=home)
    assert run_.returncode in (1, 2)
    assert _tree(outside) == before


def test_pruning_deletes_only_kaffinitys_names(checkout: Path, home: dict[str, str]) -> None:
    """In kaffinity's own folder: another version's entries go; names kaffinity does not make stay,
    and so do the folders that hold them, and the folder itself."""
    lint_json(".", cwd=checkout, env=home)
    cache = checkout / ".kaffinity_cache"
    old = cache / "0.0.1-3" / ("b" * 32) / "bb"
    old.mkdir(parents=True)
    (old / ("b" * 40)).write_text("old entry")
    (old / "notes.txt").write_text("not kaffinity's")
    gone = cache / "0.0.1-2" / ("c" * 32) / "cc"
    gone.mkdir(parents=True)
    (gone / ("c" * 40)).write_text("old entry")
    (cache / "keep").mkdir()
    (cache / "notes.txt").write_text("mine")
    (checkout / "web.yaml").write_text(CLEAN)
    lint_json(".", cwd=checkout, env=home)
    assert not (old / ("b" * 40)).exists() and (old / "notes.txt").exists()
    assert not (cache / "0.0.1-2").exists()
    assert (cache / "keep").is_dir() and (cache / "notes.txt").read_text() == "mine"
    assert (cache / "CACHEDIR.TAG").exists() and _entries(cache / VERSION)


# --- a cache folder that git tracks --------------------------------------------------------------


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_cache_folder_that_git_tracks_is_not_used(checkout: Path, home: dict[str, str]) -> None:
    """A branch that commits its cache (``git add -f``, or without the cache's ``.gitignore``): the
    folder is not read, written or pruned; one note says why."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=checkout, check=True)
    lint_json(".", cwd=checkout, env=home)
    cache = checkout / ".kaffinity_cache"
    (cache / ".gitignore").unlink()
    subprocess.run([*git, "add", "-A"], cwd=checkout, check=True)
    subprocess.run([*git, "commit", "-qm", "cache"], cwd=checkout, check=True)
    before = _tree(cache)
    (checkout / "api.yaml").write_text(CLEAN.replace("web", "edited"))
    completed = lint_json(".", cwd=checkout, env=home)
    assert completed.code == 1 and _rules(completed)
    assert completed.stderr.startswith("kaffinity: note: the cache is off: git tracks ")
    assert len(completed.stderr.splitlines()) == 1
    assert _tree(cache) == before  # nothing read (reads touch), written or deleted
    status = subprocess.run(
        ["git", "status", "--porcelain", ".kaffinity_cache"], cwd=checkout, capture_output=True, check=True
    )
    assert status.stdout == b""


# --- the key -------------------------------------------------------------------------------------


def test_the_key_is_made_private_and_kept(checkout: Path, home: dict[str, str]) -> None:
    first = lint_json(".", cwd=checkout, env=home)
    key = Path(home["XDG_CACHE_HOME"]) / "kaffinity" / "cache-key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert len(_key(home)) == 32
    entries = _entries(checkout / ".kaffinity_cache")
    inodes = [path.stat().st_ino for path in entries]
    second = lint_json(".", cwd=checkout, env=home)
    assert (first.stdout, first.stderr) == (second.stdout, second.stderr) == (first.stdout, "")
    assert [path.stat().st_ino for path in _entries(checkout / ".kaffinity_cache")] == inodes  # hits
    # With KAFFINITY_CACHE_KEY (a CI runner's secret) the key file is not read: other entries.
    ci = lint_json(".", cwd=checkout, env={**home, "KAFFINITY_CACHE_KEY": "a secret of the CI runner"})
    assert ci.stdout == first.stdout
    assert [path.stat().st_ino for path in _entries(checkout / ".kaffinity_cache")] != inodes


def _bad_mode(key: Path) -> None:
    key.chmod(0o644)


def _symlink(key: Path) -> None:
    other = key.parent / "elsewhere"
    key.rename(other)
    key.symlink_to(other)


def _folder_open(key: Path) -> None:
    key.parent.chmod(0o777)


def _not_a_file(key: Path) -> None:
    key.unlink()
    key.mkdir()


def _garbled(key: Path) -> None:
    key.write_text("not a key")


def _other_owner(key: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    os.chown(key, 12345, 12345)


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (_bad_mode, "readable or writable by others"),
        (_symlink, "is a symlink"),
        (_folder_open, "writable by others"),
        (_not_a_file, "not a regular file"),
        (_garbled, "not 64 hex digits"),
        (_other_owner, "belongs to another user"),
    ],
    ids=["mode-0644", "symlink", "folder-0777", "folder-as-key", "garbled", "other-owner"],
)
def test_a_key_file_others_could_touch_turns_the_cache_off(
    checkout: Path, home: dict[str, str], damage: object, says: str
) -> None:
    first = lint_json(".", cwd=checkout, env=home)
    assert first.code == 1 and first.stderr == ""
    key = Path(home["XDG_CACHE_HOME"]) / "kaffinity" / "cache-key"
    damage(key)  # type: ignore[operator]
    before = _tree(checkout / ".kaffinity_cache")
    completed = lint_json(".", cwd=checkout, env=home)
    assert (completed.code, completed.stdout) == (first.code, first.stdout)
    assert completed.stderr.startswith("kaffinity: note: the cache is off: the cache's key ")
    assert says in completed.stderr and len(completed.stderr.splitlines()) == 1
    assert _tree(checkout / ".kaffinity_cache") == before  # neither read nor written


def test_a_short_environment_key_turns_the_cache_off(checkout: Path, home: dict[str, str]) -> None:
    completed = lint_json(".", cwd=checkout, env={**home, "KAFFINITY_CACHE_KEY": "short"})
    assert completed.code == 1 and _rules(completed)
    assert "KAFFINITY_CACHE_KEY is shorter than 16 characters" in completed.stderr
    assert not (checkout / ".kaffinity_cache").exists()
    assert not (Path(home["XDG_CACHE_HOME"]) / "kaffinity").exists()
