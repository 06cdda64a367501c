"""``lint --changed`` reads, for the rules that read every manifest, only the namespaces the
change reaches (``kaffinity.graph.reach``): its report is byte for byte the one of the whole
repository as context. Compared here with the reach turned off, on generated repositories
(``benchmarks/generate.py``), as generated and without their all-namespaces terms (so that the
reach is a part), and on cross-namespace cases written for it, with a previous version in git.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kaffinity.graph import reach
from tests.kit import lint_json, manifest, term, workload

_SEEN: list[tuple[int, int]] = []


def _counting(original: Any) -> Any:
    def counted(documents: Any, changed: Any, settings: Any) -> Any:
        found = original(documents, changed, settings)
        _SEEN.append((len(documents), len(documents) if found is None else len(found)))
        return found

    return counted


def _both(monkeypatch: pytest.MonkeyPatch, context: Path, changed: Path, *more: str) -> tuple[Any, Any]:
    """The report with the reach, and without it (every document); and how many documents the
    reach kept of how many."""
    args = ("--context", str(context), "--changed", str(changed), "--no-cache", *more)
    with monkeypatch.context() as patch:
        patch.setattr(reach, "reached", _counting(reach.reached))
        restricted = lint_json(*args)
    with monkeypatch.context() as patch:
        patch.setattr(reach, "reached", lambda documents, changed, settings: None)
        whole = lint_json(*args)
    return restricted, whole


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A generated repository of four namespaces, and a copy without ``namespaceSelector: {}``."""
    from benchmarks.generate import generate

    folder = tmp_path_factory.mktemp("generated")
    generate(str(folder), 200, seed=2)
    manifests = folder / "manifests"
    local = folder / "local"
    shutil.copytree(manifests, local)
    for path in local.rglob("*.yaml"):
        lines = path.read_text().splitlines(True)
        path.write_text("".join(line for line in lines if "namespaceSelector: {}" not in line))
    return manifests, local


def _picks(folder: Path) -> list[Path]:
    """Files of each kind the report relates differently: anti-affinity, spread, a budget, a
    Namespace, cross-namespace terms, and files nothing selects."""
    files = sorted(folder.rglob("*.yaml"))
    wanted = ("podAntiAffinity", "topologySpreadConstraints", "kind: PodDisruptionBudget", "kind: Namespace")
    picks = {next(path for path in files if word in path.read_text()) for word in wanted}
    picks.update(path for path in files if "namespaceSelector" in path.read_text())
    picks.update(files[::9])
    return sorted(picks)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["generated", "local"])
def test_the_reach_reports_what_the_whole_repository_reports(
    generated: tuple[Path, Path], variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = generated[0] if variant == "generated" else generated[1]
    _SEEN.clear()
    reported = 0
    for path in _picks(folder):
        restricted, whole = _both(monkeypatch, folder, path)
        assert (restricted.code, restricted.stdout) == (whole.code, whole.stdout)
        assert restricted.stderr == whole.stderr
        reported += len(restricted.report["findings"])
    assert reported  # the picks have findings to compare
    if variant == "local":  # every term in its own namespace: the reach is one namespace's
        assert _SEEN and all(kept < total / 2 for total, kept in _SEEN)


A = {"app": "a"}
B = {"app": "b"}


def _cross(folder: Path) -> dict[str, Path]:
    """Five namespaces: ``one``'s Deployment keeps away from ``two``'s pods (``namespaces:``),
    ``three``'s requires ``one``'s pods wherever they are (``namespaceSelector: {}``), ``four``
    is on its own, and ``two``'s budget covers its pods."""
    files = {
        "one": [
            workload(
                "a",
                namespace="one",
                labels=A,
                anti=[term(B, namespaces=["two"])],
            )
        ],
        "two": [
            workload("b", namespace="two", labels=B, replicas=2),
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "b", "namespace": "two"},
                "spec": {"minAvailable": 2, "selector": {"matchLabels": B}},
            },
        ],
        "three": [
            workload(
                "c",
                namespace="three",
                labels={"app": "c"},
                affinity=[term(A, namespaceSelector={})],
            )
        ],
        "four": [workload("d", namespace="four", labels={"app": "d"}, affinity=[term({"app": "none"})])],
        "namespaces": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            for name in ("one", "two", "three", "four")
        ],
    }
    paths = {}
    for name, objects in files.items():
        path = folder / f"{name}.yaml"
        path.write_text(manifest(objects))
        paths[name] = path
    return paths


def test_cross_namespace_terms_are_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "repo"
    folder.mkdir()
    paths = _cross(folder)
    _SEEN.clear()
    for path in paths.values():
        restricted, whole = _both(monkeypatch, folder, path)
        assert (restricted.code, restricted.stdout) == (whole.code, whole.stdout)
    # one: one, two (its term), three (selects one's pods); four: its own; namespaces: all
    kept = [kept for _, kept in _SEEN]
    total = _SEEN[0][0]
    assert kept[list(paths).index("four")] == 1 + 4  # d, and the four Namespaces
    assert kept[list(paths).index("one")] == total - 1  # all but four's Deployment


def test_the_previous_version_is_reached_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Deployment moved out of ``two``: the budget there that selected its pods at ``HEAD``
    is reported (cause ``budget``) as over the whole repository."""
    folder = tmp_path / "repo"
    folder.mkdir()
    paths = _cross(folder)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run([*git, "-C", str(folder), "add", "."], check=True)
    subprocess.run([*git, "-C", str(folder), "commit", "-qm", "x"], check=True)
    paths["two"].write_text(paths["two"].read_text().replace("namespace: two", "namespace: four", 1))
    _SEEN.clear()
    restricted, whole = _both(monkeypatch, folder, paths["two"])
    assert (restricted.code, restricted.stdout) == (whole.code, whole.stdout)
    assert _SEEN[0][1] < _SEEN[0][0]


_LABELS = ({"app": "a"}, {"app": "b"}, {"tier": "data"}, {"app": "a", "tier": "data"})
_NAMESPACES = ("n0", "n1", "n2", "n3")


def _term_of(draw: Any, st: Any) -> dict[str, Any]:
    """A term: own namespace, a list of namespaces, or a namespace selector (every one, or by label)."""
    scope = draw(st.sampled_from(("own", "list", "all", "labelled")))
    more: dict[str, Any] = {}
    if scope == "list":
        more["namespaces"] = sorted(draw(st.sets(st.sampled_from(_NAMESPACES), min_size=1, max_size=2)))
    elif scope == "all":
        more["namespaceSelector"] = {}
    elif scope == "labelled":
        more["namespaceSelector"] = {"matchLabels": {"team": draw(st.sampled_from(("x", "y")))}}
    return term(draw(st.sampled_from(_LABELS)), **more)


def _repository(draw: Any) -> dict[str, list[dict[str, Any]]]:
    """A few namespaces (labelled ``team: x`` or ``y``), each with one or two workloads of
    random labels and cross-namespace terms, and sometimes a budget."""
    from hypothesis import strategies as st

    files: dict[str, list[dict[str, Any]]] = {
        "namespaces": [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": name, "labels": {"team": draw(st.sampled_from(("x", "y")))}},
            }
            for name in _NAMESPACES
        ]
    }
    for namespace in _NAMESPACES:
        objects: list[dict[str, Any]] = []
        for index in range(draw(st.integers(1, 2))):
            labels = draw(st.sampled_from(_LABELS))
            terms = draw(st.lists(st.builds(lambda: None), max_size=2))
            required = [_term_of(draw, st) for _ in terms]
            preferred = [_term_of(draw, st) for _ in range(draw(st.integers(0, 1)))]
            kind = "anti" if draw(st.booleans()) else "affinity"
            objects.append(
                workload(
                    f"w{index}",
                    namespace=namespace,
                    labels=labels,
                    replicas=draw(st.integers(1, 3)),
                    preferred=preferred,
                    **{kind: required},
                )
            )
        if draw(st.booleans()):
            objects.append(
                {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": "budget", "namespace": namespace},
                    "spec": {"minAvailable": 2, "selector": {"matchLabels": draw(st.sampled_from(_LABELS))}},
                }
            )
        files[namespace] = objects
    return files


def test_the_reach_of_generated_cross_namespace_repositories(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A property, over small repositories of cross-namespace terms: whatever file changes, the
    report with the reach is the one over the whole repository."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(
        derandomize=True,
        max_examples=6,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(st.data())
    def check(data: Any) -> None:
        files = _repository(data.draw)
        folder = tmp_path_factory.mktemp("drawn")
        for name, objects in files.items():
            (folder / f"{name}.yaml").write_text(manifest(objects))
        for name in files:
            restricted, whole = _both(monkeypatch, folder, folder / f"{name}.yaml")
            assert (restricted.code, restricted.stdout) == (whole.code, whole.stdout)

    _SEEN.clear()
    check()
    assert any(kept < total for total, kept in _SEEN)  # some changes reach a part
