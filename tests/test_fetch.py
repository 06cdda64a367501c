"""kaffinity.repo.fetch against loopback servers (tests/remote.py): an HTTP Helm repository, an
OCI registry (CNCF distribution), a git remote; version constraints as Helm reads them; the
remote cache (reused, offline, guarded); hostile archives and indexes refused."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from kaffinity.load.parse import DEFAULT_LIMITS
from kaffinity.repo.fetch import charts as chart_fetching
from kaffinity.repo.fetch.cache import CACHE_ENV, Fetched, GitRef, NotFetched
from kaffinity.repo.fetch.charts import fetch_chart
from kaffinity.repo.fetch.git import fetch_git
from kaffinity.repo.sandbox import Sandbox
from kaffinity.repo.semver import is_exact, newest

from .remote import (
    GitRemote,
    Registry,
    bearer_proxy,
    chart_repository,
    git_daemon,
    git_remote,
    oci_registry,
    package_chart,
    push_chart,
    raw_archive,
    sha256_file,
    write_chart,
)

NETWORK = Sandbox(network=True, timeout=60)
OFFLINE = Sandbox(network=False, timeout=60)
POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec: {containers: [{name: c, image: nginx}]}\n"


@pytest.fixture(autouse=True)
def remote_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh remote cache per test, outside any repository; each test a run of its own."""
    folder = tmp_path / "remote-cache"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    new_run()
    return folder


def new_run() -> None:
    """What one run of kaffinity keeps in memory (the indexes it read) forgotten."""
    chart_fetching._INDEXES.clear()


def charts(folder: Path, name: str, *versions: str) -> list[Path]:
    return [write_chart(folder / v, name, v, templates={"pod.yaml": POD % f"{name}-{v}"}) for v in versions]


def fetched(result: Fetched | NotFetched) -> Fetched:
    assert isinstance(result, Fetched), result
    return result


def chart_name_and_version(path: str) -> tuple[str, str]:
    text = Path(path, "Chart.yaml").read_text(encoding="utf-8")
    fields = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    return fields["name"], fields["version"]


# -- versions as Helm chooses them (Masterminds/semver v3) ------------------------------------

VERSIONS = ["0.2.5", "0.3.1", "1.0.0", "1.2.3", "1.3.0-rc.1", "1.3.0", "2.0.0", "2.1.0-beta.1"]


@pytest.mark.parametrize(
    ("constraint", "chosen"),
    [
        (None, "2.0.0"),  # the newest stable: prereleases only when asked
        ("", "2.0.0"),
        ("*", "2.0.0"),
        ("^1.2", "1.3.0"),
        ("~1.2", "1.2.3"),
        ("1.x", "1.3.0"),
        ("1.2.x", "1.2.3"),
        (">=1.0 <2.0", "1.3.0"),
        (">=1.0, <2.0", "1.3.0"),
        ("^0.2", "0.2.5"),
        ("^0.3.0", "0.3.1"),
        ("1.0 - 1.2.3", "1.2.3"),
        ("^3 || ~0.3", "0.3.1"),
        (">2.0.0-0", "2.1.0-beta.1"),  # helm --devel
        ("~1.3.0-0", "1.3.0"),
        ("1.3.0-rc.1", "1.3.0-rc.1"),  # an exact prerelease
        ("!=2.0.0, >1", None),
        ("<=1.2", "1.2.3"),
        (">5", None),
    ],
)
def test_a_version_is_chosen_as_helm_chooses_it(constraint: str | None, chosen: str | None) -> None:
    assert newest(VERSIONS, constraint) == chosen


@pytest.mark.parametrize(
    ("text", "exact"),
    [
        *[("1.2.3", True), ("v1.2.3", True), ("1.2.3-rc.1", True), ("1.2.3+build.5", True), ("1.2", False)],
        *[
            ("1.2.x", False),
            ("^1.2.3", False),
            ("~1.2.3", False),
            (">=1.2.3", False),
            ("", False),
            ("*", False),
        ],
    ],
)
def test_only_an_exact_version_may_come_from_the_cache_offline(text: str, exact: bool) -> None:
    assert is_exact(text) is exact


# -- an HTTP Helm repository ------------------------------------------------------------------


@pytest.mark.parametrize("absolute", [False, True], ids=["relative-urls", "absolute-urls"])
def test_a_chart_is_fetched_from_an_http_repository(tmp_path: Path, absolute: bool) -> None:
    with chart_repository(
        tmp_path / "repo", charts(tmp_path / "src", "redis", "1.2.3", "1.3.0"), absolute_urls=absolute
    ) as repo:
        result = fetched(fetch_chart(repo.url, "redis", "~1.2", NETWORK))
        assert result.version == "1.2.3"
        assert chart_name_and_version(result.path) == ("redis", "1.2.3")
        assert (Path(result.path) / "templates" / "pod.yaml").is_file()
        assert repo.requests == ["/index.yaml", "/redis-1.2.3.tgz"]


def test_an_exact_version_in_the_cache_is_used_without_a_request(tmp_path: Path) -> None:
    with chart_repository(tmp_path / "repo", charts(tmp_path / "src", "redis", "1.2.3")) as repo:
        first = fetched(fetch_chart(repo.url, "redis", "1.2.3", NETWORK))
        asked = list(repo.requests)
        second = fetched(fetch_chart(repo.url, "redis", "1.2.3", NETWORK))
        assert second == first
        assert repo.requests == asked  # no request at all
        # A range needs the index: read once a run (this process), the archive from the cache.
        fetched(fetch_chart(repo.url, "redis", "^1", NETWORK))
        assert repo.requests == asked
        new_run()
        fetched(fetch_chart(repo.url, "redis", "^1", NETWORK))
        assert repo.requests == [*asked, "/index.yaml"]
        # Offline: the exact version is there; a range needs the index.
        assert fetched(fetch_chart(repo.url, "redis", "1.2.3", OFFLINE)) == first
        ranged = fetch_chart(repo.url, "redis", "^1", OFFLINE)
        assert isinstance(ranged, NotFetched) and ranged.offline


def test_offline_nothing_is_asked(tmp_path: Path) -> None:
    with chart_repository(tmp_path / "repo", charts(tmp_path / "src", "redis", "1.2.3")) as repo:
        result = fetch_chart(repo.url, "redis", "1.2.3", OFFLINE)
        assert isinstance(result, NotFetched) and result.offline
        assert repo.requests == []


def test_an_archive_whose_digest_is_not_the_index_s_is_refused(tmp_path: Path, remote_cache: Path) -> None:
    with chart_repository(tmp_path / "repo", charts(tmp_path / "src", "redis", "1.2.3")) as repo:
        repo.index["entries"]["redis"][0]["digest"] = "0" * 64
        repo.rewrite_index()
        result = fetch_chart(repo.url, "redis", "1.2.3", NETWORK)
        assert isinstance(result, NotFetched) and not result.offline
        assert "/redis-1.2.3.tgz" in repo.requests
    assert [name for name in os.listdir(remote_cache) if not name.startswith(".")] == []


@pytest.mark.parametrize(
    "members",
    [
        [
            ("redis/Chart.yaml", b"apiVersion: v2\nname: redis\nversion: 1.0.0\n", None),
            ("redis/../../evil", b"x", None),
        ],
        [
            ("redis/Chart.yaml", b"apiVersion: v2\nname: redis\nversion: 1.0.0\n", None),
            ("/etc/evil", b"x", None),
        ],
        [
            ("redis/Chart.yaml", b"apiVersion: v2\nname: redis\nversion: 1.0.0\n", None),
            ("redis/passwd", None, "/etc/passwd"),
        ],
        [("redis/Chart.yaml", b"apiVersion: v2\nname: other\nversion: 1.0.0\n", None)],
    ],
    ids=["dot-dot", "absolute", "symlink", "another-chart"],
)
def test_a_hostile_archive_is_refused(
    tmp_path: Path, remote_cache: Path, members: list[tuple[str, bytes | None, str | None]]
) -> None:
    folder = tmp_path / "repo"
    folder.mkdir()
    archive = raw_archive(folder / "redis-1.0.0.tgz", members)
    with chart_repository(folder, []) as repo:
        repo.index = {
            "apiVersion": "v1",
            "entries": {
                "redis": [
                    {
                        "name": "redis",
                        "version": "1.0.0",
                        "urls": ["redis-1.0.0.tgz"],
                        "digest": sha256_file(archive),
                    }
                ]
            },
        }
        repo.rewrite_index()
        result = fetch_chart(repo.url, "redis", "1.0.0", NETWORK)
    assert isinstance(result, NotFetched) and not result.offline
    assert not (tmp_path / "evil").exists()
    assert [name for name in os.listdir(remote_cache) if not name.startswith(".")] == []


def test_downloads_are_bounded(tmp_path: Path) -> None:
    small = replace(DEFAULT_LIMITS, file_size=64)
    with chart_repository(tmp_path / "repo", charts(tmp_path / "src", "redis", "1.2.3")) as repo:
        result = fetch_chart(repo.url, "redis", "1.2.3", NETWORK, limits=small)
        assert isinstance(result, NotFetched)
        assert repo.requests == ["/index.yaml", "/redis-1.2.3.tgz"]
        # A redirect loop stops at the limit of redirects.
        repo.routes["/loop/index.yaml"] = (302, {"Location": "/loop/index.yaml"}, b"")
        looped = fetch_chart(f"{repo.url}/loop", "other", "1.0.0", NETWORK)
        assert isinstance(looped, NotFetched)
        assert 2 <= repo.requests.count("/loop/index.yaml") <= 1 + 5 + 1


def test_a_redirect_to_a_file_url_is_refused(tmp_path: Path) -> None:
    with chart_repository(tmp_path / "repo", []) as repo:
        repo.routes["/index.yaml"] = (302, {"Location": "file:///etc/passwd"}, b"")
        result = fetch_chart(repo.url, "redis", "1.0.0", NETWORK)
    assert isinstance(result, NotFetched) and not result.offline


@pytest.mark.parametrize("url", ["file:///etc", "/etc", "ftp://127.0.0.1/x", "../charts"])
def test_only_http_https_and_oci_repositories_are_fetched(url: str) -> None:
    result = fetch_chart(url, "redis", "1.0.0", NETWORK)
    assert isinstance(result, NotFetched) and not result.offline


def test_a_cache_folder_that_is_a_symlink_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    monkeypatch.setenv(CACHE_ENV, str(link))
    with chart_repository(tmp_path / "repo", charts(tmp_path / "src", "redis", "1.2.3")) as repo:
        result = fetch_chart(repo.url, "redis", "1.2.3", NETWORK)
        assert isinstance(result, NotFetched)
        assert repo.requests == []
    assert list(real.iterdir()) == []


def test_the_cache_is_never_inside_the_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    monkeypatch.setenv(CACHE_ENV, str(checkout / ".cache"))
    with chart_repository(tmp_path / "repo", charts(tmp_path / "src", "redis", "1.2.3")) as repo:
        result = fetch_chart(repo.url, "redis", "1.2.3", replace(NETWORK, roots=(str(checkout),)))
        assert isinstance(result, NotFetched)
        assert repo.requests == []
    assert not (checkout / ".cache").exists()


# -- an OCI registry --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str]]]:
    """One registry for the module, with redis 1.2.3, 1.3.0 and 2.0.0-rc.1 pushed as helm push does."""
    folder = tmp_path_factory.mktemp("oci")
    with oci_registry(folder / "registry") as started:
        for chart in charts(folder / "src", "redis", "1.2.3", "1.3.0", "2.0.0-rc.1"):
            push_chart(started, package_chart(chart, folder / "out"))
        yield started.url, [str(started.log)]


def _logged(log: str) -> int:
    time.sleep(0.3)  # the registry writes its access log as requests end
    return sum(
        1
        for line in Path(log).read_text(errors="replace").splitlines()
        if '"GET /v2/' in line or '"HEAD /v2/' in line
    )


@pytest.mark.parametrize(
    ("constraint", "chosen"),
    [("~1.2", "1.2.3"), ("", "1.3.0"), ("1.3.0", "1.3.0"), (">=2.0.0-0", "2.0.0-rc.1")],
)
def test_a_chart_is_fetched_from_an_oci_registry(
    registry: tuple[str, list[str]], constraint: str, chosen: str
) -> None:
    url, _ = registry
    result = fetched(fetch_chart(url, "redis", constraint, NETWORK))
    assert result.version == chosen
    assert chart_name_and_version(result.path) == ("redis", chosen)


def test_an_oci_chart_in_the_cache_is_used_without_a_request(registry: tuple[str, list[str]]) -> None:
    url, (log,) = registry
    first = fetched(fetch_chart(url, "redis", "1.2.3", NETWORK))
    before = _logged(log)
    assert fetched(fetch_chart(url, "redis", "1.2.3", NETWORK)) == first
    assert fetched(fetch_chart(url, "redis", "1.2.3", OFFLINE)) == first
    assert _logged(log) == before


def test_a_missing_oci_chart_is_not_fetched(registry: tuple[str, list[str]]) -> None:
    url, _ = registry
    for name, version in (("nginx", "1.0.0"), ("redis", "9.9.9"), ("redis", "^9")):
        result = fetch_chart(url, name, version, NETWORK)
        assert isinstance(result, NotFetched) and not result.offline


# -- a git remote -----------------------------------------------------------------------------


@pytest.fixture
def remote(tmp_path: Path) -> GitRemote:
    return git_remote(
        tmp_path / "git",
        {
            "app/pod.yaml": POD % "one",
            ".githooks/post-checkout": "#!/bin/sh\ntouch /tmp/kaffinity-hook-ran\n",
        },
        tags=("v1.0.0",),
        later=[({"app/pod.yaml": POD % "two"}, ("v1.1.0", "v2.0.0-rc.1"))],
    )


def _pod_name(result: Fetched) -> str:
    text = Path(result.path, "app", "pod.yaml").read_text(encoding="utf-8")
    return text.split("name: ", 1)[1].split("}", 1)[0]


@pytest.mark.parametrize(
    ("ref", "commit", "pod"),
    [
        (GitRef(), "main", "two"),
        (GitRef(branch="main"), "main", "two"),
        (GitRef(tag="v1.0.0"), "v1.0.0", "one"),
        (GitRef(semver="~1.0"), "v1.0.0", "one"),
        (GitRef(semver=">=1.0.0"), "v1.1.0", "two"),
        (GitRef(name="refs/tags/v1.0.0"), "v1.0.0", "one"),
        (GitRef(commit="commit1", tag="v1.1.0"), "commit1", "one"),  # the commit wins (Flux's order)
    ],
)
def test_a_git_tree_is_fetched_at_its_ref(remote: GitRemote, ref: GitRef, commit: str, pod: str) -> None:
    if ref.commit:
        ref = replace(ref, commit=remote.commits[ref.commit])
    result = fetched(fetch_git(remote.url, ref, NETWORK, local=True))
    assert result.version == remote.commits[commit]
    assert _pod_name(result) == pod
    assert not Path(result.path, ".git").exists()


def test_git_over_the_git_daemon(remote: GitRemote) -> None:
    with git_daemon(remote) as url:
        result = fetched(fetch_git(url, GitRef(tag="v1.1.0"), NETWORK))
        assert result.version == remote.commits["v1.1.0"]
        old = fetched(fetch_git(url, GitRef(commit=remote.commits["commit1"]), NETWORK))
        assert _pod_name(old) == "one"
    # The daemon stopped: a commit in the cache is there offline, and online without asking.
    assert fetched(fetch_git(url, GitRef(commit=remote.commits["commit1"]), OFFLINE)) == old
    assert fetched(fetch_git(url, GitRef(commit=remote.commits["commit1"]), NETWORK)) == old
    branch = fetch_git(url, GitRef(branch="main"), OFFLINE)
    assert isinstance(branch, NotFetched) and branch.offline


def test_a_file_url_is_fetched_only_when_the_runner_says_so(remote: GitRemote) -> None:
    refused = fetch_git(remote.url, GitRef(), NETWORK)
    assert isinstance(refused, NotFetched) and not refused.offline
    for url in ("ext::sh -c touch% /tmp/x", "--upload-pack=touch /tmp/x", "/etc"):
        result = fetch_git(url, GitRef(), NETWORK)
        assert isinstance(result, NotFetched) and not result.offline


def test_nothing_of_the_fetched_repository_runs(remote: GitRemote, tmp_path: Path) -> None:
    marker = Path("/tmp/kaffinity-hook-ran")
    marker.unlink(missing_ok=True)
    result = fetched(fetch_git(remote.url, GitRef(tag="v1.0.0"), NETWORK, local=True))
    assert Path(result.path, ".githooks", "post-checkout").is_file()
    assert not marker.exists()


def test_a_git_ref_that_is_not_there(remote: GitRemote) -> None:
    for ref in (GitRef(tag="v9"), GitRef(branch="nope"), GitRef(semver="^5"), GitRef(commit="abc")):
        result = fetch_git(remote.url, ref, NETWORK, local=True)
        assert isinstance(result, NotFetched) and not result.offline


@pytest.mark.parametrize("redirect", [False, True], ids=["direct", "blobs-redirected"])
def test_an_anonymous_token_is_asked_for_when_the_registry_challenges(
    registry: tuple[str, list[str]], tmp_path: Path, redirect: bool
) -> None:
    """The distribution token flow helm and oras-go follow: a 401 with a Bearer challenge, a
    token from its realm, the request again with it; the token never follows a redirect."""
    url, (log,) = registry
    started = Registry(url, url.removeprefix("oci://").split("/", 1)[0], Path(log))
    with bearer_proxy(started, redirect_blobs=redirect) as proxy:
        result = fetched(fetch_chart(proxy.url, "redis", "~1.3", NETWORK))
        assert result.version == "1.3.0"
        paths = [path for path, _ in proxy.requests]
        assert any(path.startswith("/token?") for path in paths)
        assert "scope=repository%3Acharts%2Fredis%3Apull" in next(p for p in paths if p.startswith("/token?"))
        authorized = [path for path, auth in proxy.requests if auth == "Bearer anonymous-pull-token"]
        assert any("/tags/list" in path for path in authorized)
        assert any("/manifests/1.3.0" in path for path in authorized)
        storage = [(path, auth) for path, auth in proxy.requests if path.startswith("/storage/")]
        assert bool(storage) == redirect
        assert all(auth == "" for _, auth in storage)


def test_a_cache_folder_others_can_write_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kaffinity.cache's rule for its key folder: the user's own, writable by no one else."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv(CACHE_ENV, str(shared))
    with chart_repository(tmp_path / "repo", charts(tmp_path / "src", "redis", "1.2.3")) as repo:
        result = fetch_chart(repo.url, "redis", "1.2.3", NETWORK)
        assert isinstance(result, NotFetched)
        assert repo.requests == []
    assert list(shared.iterdir()) == []
