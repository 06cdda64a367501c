"""Variants: where two files define the same object with different content, the folder that tells
them apart is a variant, and every variant a unit with the shared files around it (kube-apiserver
stores one object per name, so two copies never run at once); test fixtures are units of their
own."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kaffinity.k8s.compact import Sources
from kaffinity.load.parse import SourceFile
from kaffinity.load.source import Document
from kaffinity.repo.units.unit import Identity, Unit

# --- variants ------------------------------------------------------------------------------


def identity(doc: Document, default_namespace: str) -> Identity | None:
    """What makes an object one object in a cluster: group, kind, namespace and name."""
    data = doc.data
    if not isinstance(data, Mapping):
        return None
    kind, api_version = data.get("kind"), data.get("apiVersion")
    metadata = data.get("metadata")
    if not isinstance(kind, str) or not isinstance(api_version, str) or not isinstance(metadata, Mapping):
        return None
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        return None  # generateName: a new object each time
    # As kaffinity.k8s.model.build.object_ref names it: namespaced kinds default to the default namespace.
    namespace = "" if kind in _CLUSTER_SCOPED else metadata.get("namespace")
    if not isinstance(namespace, str) or (not namespace and kind not in _CLUSTER_SCOPED):
        namespace = default_namespace
    return (api_version.rpartition("/")[0], kind, namespace, name)


_CLUSTER_SCOPED = frozenset(("Namespace", "Node"))


#: What the units of a layout may hold together, as a multiple of the input's objects (plus a
#: floor): past it, the remaining variants are read without the shared files around them, so
#: a folder of a thousand fixtures that all define the same object stays linear.
UNIT_BUDGET_FACTOR, UNIT_BUDGET_FLOOR = 20, 20_000

Versions = dict[str, dict[Identity, int]]


#: Folders of test data, and golden files: each file is a test case of its own, never deployed
#: with the files around it (istio's operator/pkg/helm/testdata/output/*.golden.yaml).
FIXTURE_FOLDERS = frozenset(("testdata", "fixtures", "__fixtures__", "golden", "__snapshots__"))
_GOLDEN = (".golden.yaml", ".golden.yml", ".golden.json")


def is_fixture(path: str) -> bool:
    """A test fixture: a golden file, or a file in a test-data folder."""
    parts = os.path.normpath(path).split(os.sep)
    return path.endswith(_GOLDEN) or any(part in FIXTURE_FOLDERS for part in parts[:-1])


def variant_units(
    files: Sequence[SourceFile], default_namespace: str, notes: list[str], whole: Sources
) -> list[Unit]:
    """Units of the files no kustomization or chart claims: each test fixture on its own;
    variants where two files define the same object differently, the shared files around them,
    and the rest."""
    fixtures = [file for file in files if is_fixture(file.name)]
    if fixtures:
        others = [file for file in files if not is_fixture(file.name)]
        return _fixture_units(fixtures) + variant_units(others, default_namespace, notes, whole)
    if not files:
        return []
    paths = [os.path.normpath(file.name) for file in files]
    versions = _versions(files, paths, default_namespace, whole)
    if not versions:
        return [Unit("", "files", tuple(doc for file in files for doc in file.documents))]
    leaves, refined = _leaves(versions)
    final = leaves - refined
    tree = _tree(paths, leaves, final, refined)
    by_path = dict(zip(paths, files, strict=True))
    needs = _single_needs(final, tree, by_path, default_namespace)
    total = sum(len(file.documents) for file in files)
    units, placed = _variant_group_units(
        final, versions, needs, tree, by_path, total, default_namespace, notes
    )
    rest = [path for path in paths if path not in placed]
    if rest:
        units.append(Unit("(other files)", "files", tuple(d for p in rest for d in by_path[p].documents)))
    return units


def _fixture_units(fixtures: Sequence[SourceFile]) -> list[Unit]:
    """Each test fixture with objects on its own."""
    return [
        Unit(os.path.normpath(file.name), "fixture", file.documents, (os.path.normpath(file.name),))
        for file in fixtures
        if file.documents
    ]


def _single_needs(
    final: set[str], tree: _Tree, by_path: Mapping[str, SourceFile], default_namespace: str
) -> dict[str, _Needs]:
    """What each variant that is one file needs from the files around it."""
    return {
        leaf: _needs(by_path[leaf], default_namespace)
        for leaf in final
        if tree.members[leaf] == [leaf] and leaf in by_path
    }


def _leaves(versions: Versions) -> tuple[set[str], set[str]]:
    """The variants (files or folders that define an object differently from another), and those
    refined: a folder leaf with leaves inside it (a repository that varies against another one,
    whose own files vary too), whose other files are shared by the leaves inside it."""
    leaves: set[str] = set()
    for component in _components(versions):
        _split(sorted(component), _common_folder(component), versions, leaves)
    refined = {
        ancestor
        for leaf in leaves
        for ancestor in _ancestors(leaf)
        if ancestor in leaves and ancestor != leaf
    }
    return leaves, refined


def _tree(paths: Sequence[str], leaves: set[str], final: set[str], refined: set[str]) -> _Tree:
    """Each file's deepest variant, the files of each final variant, and the others by folder."""
    owner: dict[str, str] = {}
    for path in paths:
        found = _deepest_prefix(path, leaves)
        if found is not None:
            owner[path] = found
    members: dict[str, list[str]] = defaultdict(list)
    free_by_folder: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        if owner.get(path) in final:
            members[owner[path]].append(path)
        else:
            free_by_folder[os.path.dirname(path) or "."].append(path)
    return _Tree(owner, members, free_by_folder, refined)


def _variant_group_units(
    final: set[str],
    versions: Versions,
    needs: dict[str, _Needs],
    tree: _Tree,
    by_path: Mapping[str, SourceFile],
    total: int,
    default_namespace: str,
    notes: list[str],
) -> tuple[list[Unit], set[str]]:
    """A unit per group of variants, with the files they share while the units hold at most
    ``UNIT_BUDGET_FACTOR`` times the input's objects (a note says how many went without); the
    units and the files they placed."""
    budget = UNIT_BUDGET_FACTOR * total + UNIT_BUDGET_FLOOR
    units: list[Unit] = []
    placed: set[str] = set()
    alone = 0
    for scope, group in _variants(final, tree.members, versions, needs):
        shared = _shared(scope, group, tree, needs, by_path, default_namespace)
        chosen = [path for leaf in group for path in tree.members[leaf]]
        docs = [doc for path in chosen for doc in by_path[path].documents]
        context = [doc for path in shared for doc in by_path[path].documents]
        if budget - len(docs) - len(context) < 0:
            context, alone = [], alone + 1
        else:
            placed.update(shared)
        budget -= len(docs) + len(context)
        placed.update(chosen)
        units.append(Unit(_name(group), "variant", (*docs, *context)))
    if alone:
        notes.append(
            f"{alone} variant(s) read without the files they share with the others: the units "
            f"would hold more than {UNIT_BUDGET_FACTOR} times the input's objects"
        )
    return units, placed


@dataclass(frozen=True, slots=True)
class _Tree:
    """Where the variants are: each file's deepest variant (``owner``), each final variant's
    files (``members``), the files of no final variant by folder, and the refined variants."""

    owner: Mapping[str, str]
    members: Mapping[str, list[str]]
    free_by_folder: Mapping[str, list[str]]
    refined: set[str]


def _shared(
    scope: str,
    group: Sequence[str],
    tree: _Tree,
    needs: dict[str, _Needs],
    by_path: Mapping[str, SourceFile],
    default_namespace: str,
) -> list[str]:
    """The shared files of a variant (see :func:`_related_folders`)."""
    files_of_its_own = tree.members[group[0]] == [group[0]]
    beside: list[str] = []
    if files_of_its_own:
        beside = [
            path
            for path in tree.free_by_folder.get(scope, ())
            if (leaf := tree.owner.get(path)) is None or (leaf in tree.refined and under_folder(scope, leaf))
        ]
        for path in beside:
            if path not in needs:
                needs[path] = _needs(by_path[path], default_namespace)
    joining = _alongside(group, beside, needs)
    return [
        path
        for folder in _related_folders(
            scope, tree.free_by_folder, tree.owner, tree.refined, beside=not files_of_its_own, joining=joining
        )
        for path in folder
    ]


def _name(group: Sequence[str]) -> str:
    """A variant's name: its folder or file; of files grouped side by side, what their names
    share (``k/c1-*``) and how many they are."""
    if len(group) == 1:
        return group[0]
    return f"{os.path.commonprefix(list(group))}* ({len(group)} files)"  # noqa: RUF071 - by character: c1-*


def _related_folders(
    scope: str,
    free_by_folder: Mapping[str, list[str]],
    owner: Mapping[str, str],
    refined: set[str],
    *,
    beside: bool,
    joining: set[str] | frozenset[str] = frozenset(),
) -> Iterator[list[str]]:
    """The shared files of a variant that varies in folder ``scope`` (the files of no variant;
    of a refined folder leaf, only the files of the leaves it contains):

    - a variant *folder* (``beside``: ``envs/prod``) shares the files of ``scope`` itself
      (``envs/common.yaml``) and of the folders above it, not those of the folders beside it
      (in a repository of samples, ``ai-ml/a`` and ``ai-ml/b`` are other samples);
    - a variant *file* shares the files of the folders above and below ``scope``, not those
      beside it in its own folder: files side by side that vary are alternatives, and so, as
      far as anything can tell, are the files next to them (a folder of test cases holds one
      deployment per file, and a budget of one case must not count the pods of another),
      except those ``joining`` it (:func:`_alongside`)."""
    for folder, paths in free_by_folder.items():
        above = under_folder(scope, folder)  # scope itself, or a folder above it
        if not (above or (not beside and under_folder(folder, scope))):
            continue
        alongside = folder == scope and not beside
        kept = [
            path
            for path in paths
            if ((leaf := owner.get(path)) is None or (leaf in refined and under_folder(scope, leaf)))
            and (not alongside or path in joining)
        ]
        if kept:
            yield kept


def _ancestors(path: str) -> Iterator[str]:
    current = path
    while True:
        yield current
        parent = os.path.dirname(current)
        if not parent or parent == current:
            return
        current = parent


def _variants(
    leaves: Iterable[str],
    members: Mapping[str, list[str]],
    versions: Versions,
    needs: Mapping[str, _Needs],
) -> Iterator[tuple[str, list[str]]]:
    """The variants, as (the folder they vary in, their leaves). A folder leaf (``envs/prod``)
    is one variant. Files that vary side by side in one folder are variants of their own,
    except where one needs another's pods: a required pod affinity is a dependency (its pods
    cannot start alone), so ``c1-router.yaml`` (affinity to app=mysql) goes with
    ``c1-mysql.yaml`` and ``c2-router.yaml`` with ``c2-mysql.yaml``, in name order and never
    two versions of an object in one variant. Nothing else groups files: fixtures side by side
    (a folder of test cases) are separate deployments."""
    by_folder: dict[str, list[str]] = defaultdict(list)
    for leaf in sorted(leaves):
        if members[leaf] == [leaf]:  # a file
            by_folder[os.path.dirname(leaf) or "."].append(leaf)
        else:
            yield os.path.dirname(leaf) or ".", [leaf]
    for folder, side_by_side in sorted(by_folder.items()):
        groups: list[tuple[list[str], dict[Identity, int]]] = []  # leaves, and the versions they hold
        for leaf in side_by_side:
            held = versions.get(leaf, {})
            for group, chosen in groups:
                if all(chosen.get(key, version) == version for key, version in held.items()) and any(
                    _depends(needs.get(leaf), needs.get(other)) for other in group
                ):
                    group.append(leaf)
                    chosen.update(held)
                    break
            else:
                groups.append(([leaf], dict(held)))
        for group, _ in groups:
            yield folder, group


@dataclass(frozen=True, slots=True)
class _Needs:
    """What a file's workloads require of other pods (required pod affinity: namespace and
    selector) and the pods they create (namespace and labels)."""

    requires: tuple[tuple[str, Any], ...]
    pods: tuple[tuple[str, Mapping[str, str]], ...]
    #: The disruption budgets' selectors (namespace and selector).
    budgets: tuple[tuple[str, Any], ...] = ()


def _needs(file: SourceFile, default_namespace: str) -> _Needs:
    from kaffinity.k8s.model import PodDisruptionBudget, Workload, build_object

    requires: list[tuple[str, Any]] = []
    pods: list[tuple[str, Mapping[str, str]]] = []
    budgets: list[tuple[str, Any]] = []
    for doc in file.documents:
        workload = build_object(doc, default_namespace)
        if isinstance(workload, PodDisruptionBudget):
            budgets.append((workload.ref.namespace or default_namespace, workload.selector))
        if not isinstance(workload, Workload):
            continue
        namespace = workload.ref.namespace or default_namespace
        pods.append((namespace, dict(workload.pod.labels)))
        affinity = workload.pod.affinity
        terms = affinity.pod_affinity.required if affinity and affinity.pod_affinity else ()
        for term in terms:
            for scope in term.namespaces or (namespace,):
                requires.append((scope, term.label_selector))
    return _Needs(tuple(requires), tuple(pods), tuple(budgets))


def _alongside(group: Sequence[str], beside: Sequence[str], needs: Mapping[str, _Needs]) -> set[str]:
    """The files beside a variant file that go with it: those that read its pods (a required
    affinity or a disruption budget that selects them: ``mysql-pdb.yaml`` beside
    ``c1-mysql.yaml`` and ``c2-mysql.yaml`` is for either), and, for each pod affinity it
    requires, the files whose pods it needs; of several such files (``c1-mysql.yaml`` and
    ``c2-mysql.yaml`` for ``c1-router.yaml``), those whose names share the most with the
    variant's: they are alternatives, and the closest name is the one meant."""
    from kaffinity.k8s.selectors import selector_matches

    def provides(path: str, scope: str, selector: Any) -> bool:
        return any(
            namespace == scope and selector_matches(selector, labels)
            for namespace, labels in needs[path].pods
        )

    chosen: set[str] = set()
    for leaf in group:
        mine = needs.get(leaf)
        if mine is None:
            continue
        for path in beside:
            readers = needs[path].requires + needs[path].budgets
            if any(
                scope == namespace and selector_matches(selector, labels)
                for scope, selector in readers
                for namespace, labels in mine.pods
            ):
                chosen.add(path)
        for scope, selector in mine.requires:
            providers = [path for path in beside if provides(path, scope, selector)]
            if not providers:
                continue
            name = os.path.basename(leaf)
            closeness = {
                path: len(os.path.commonprefix([name, os.path.basename(path)]))  # noqa: RUF071 - by character
                for path in providers
            }
            best = max(closeness.values())
            chosen.update(path for path in providers if closeness[path] == best)
    return chosen


def _depends(one: _Needs | None, other: _Needs | None) -> bool:
    """Whether either needs the other's pods (a required pod affinity that they match)."""
    from kaffinity.k8s.selectors import selector_matches

    if one is None or other is None:
        return False
    return any(
        scope == namespace and selector_matches(selector, labels)
        for first, second in ((one, other), (other, one))
        for scope, selector in first.requires
        for namespace, labels in second.pods
    )


def _versions(
    files: Sequence[SourceFile], paths: Sequence[str], default_namespace: str, whole: Sources
) -> Versions:
    """For each file that defines an object some other file defines with different content:
    which version of each such object it holds (objects the same everywhere are left out)."""
    where: dict[Identity, list[tuple[str, Document]]] = defaultdict(list)
    for path, file in zip(paths, files, strict=True):
        for doc in file.documents:
            key = identity(doc, default_namespace)
            if key is not None:
                where[key].append((path, doc))
    seen: dict[Identity, dict[Any, int]] = defaultdict(dict)
    held: dict[str, dict[Identity, int]] = defaultdict(dict)
    for key, occurrences in where.items():
        if len({path for path, _ in occurrences}) < 2:
            continue  # defined in one file only (once, or again within that file)
        contents = seen[key]
        for path, doc in occurrences:
            held[path][key] = contents.setdefault(_frozen(whole.data(doc)), len(contents))
    varying = {key for key, contents in seen.items() if len(contents) > 1}
    out: Versions = {}
    for path, objects in held.items():
        mine = {key: version for key, version in objects.items() if key in varying}
        if mine:
            out[path] = mine
    return out


def _frozen(value: Any) -> Any:
    """A hashable copy of loaded data: equal for equal content, whatever the positions. Built
    without recursion (data nests as deep as ``limits.depth``): children before parents."""
    if not isinstance(value, dict | list):
        return value
    done: dict[int, Any] = {}
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in done:
            continue
        children = node.values() if isinstance(node, dict) else node
        if not ready:
            stack.append((node, True))
            stack.extend((child, False) for child in children if isinstance(child, dict | list))
            continue
        if isinstance(node, dict):
            done[id(node)] = frozenset((key, done.get(id(item), item)) for key, item in node.items())
        else:
            done[id(node)] = tuple(done.get(id(item), item) for item in node)
    return done[id(value)]


def _components(versions: Versions) -> Iterator[set[str]]:
    """Files linked by the objects they define in different versions (union-find)."""
    parent: dict[str, str] = {path: path for path in versions}

    def root(path: str) -> str:
        while parent[path] != path:
            parent[path] = parent[parent[path]]
            path = parent[path]
        return path

    first: dict[Identity, str] = {}
    for path in sorted(versions):
        for key in versions[path]:
            other = first.setdefault(key, path)
            a, b = root(path), root(other)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[str, set[str]] = defaultdict(set)
    for path in versions:
        groups[root(path)].add(path)
    for head in sorted(groups):
        yield groups[head]


def _split(paths: Sequence[str], folder: str, versions: Versions, leaves: set[str]) -> None:
    """Group conflicting ``paths`` by the first path component below ``folder``. Sibling folders
    that vary (``envs/prod`` and ``envs/staging``) are variants; a folder whose files vary only
    against files beside it is looked into, and its varying files are the variants. A group
    whose files still hold two versions of an object is split again one level down."""
    groups: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        relative = os.path.relpath(path, folder)
        head = relative.split(os.sep, 1)[0]
        groups[os.path.normpath(os.path.join(folder, head))].append(path)
    folders = [key for key, group in groups.items() if group != [key]]
    for key, group in groups.items():
        inside = group != [key]
        if key != folder and inside and (len(folders) < 2 or _varies(group, versions)):
            _split(group, key, versions, leaves)
        else:
            leaves.add(key)


def _varies(paths: Iterable[str], versions: Versions) -> bool:
    chosen: dict[Identity, int] = {}
    for path in paths:
        for key, version in versions.get(path, {}).items():
            if chosen.setdefault(key, version) != version:
                return True
    return False


def _common_folder(paths: Iterable[str]) -> str:
    folders = [os.path.dirname(path) or "." for path in paths]
    try:
        return os.path.commonpath(folders) or "."
    except ValueError:  # absolute and relative paths mixed
        return "."


def under_folder(path: str, folder: str) -> bool:
    if folder in (".", ""):
        return not path.startswith("..")
    return path == folder or path.startswith(folder + os.sep)


def _deepest_prefix(path: str, leaves: set[str]) -> str | None:
    current = path
    while True:
        if current in leaves:
            return current
        parent = os.path.dirname(current)
        if not parent or parent == current:
            return None
        current = parent
