"""What is checked before a tool renders a unit (kaffinity.repo.sandbox says why).

- :func:`check_kustomization`: every field of every kustomization (and Component) in the build
  tree that can hold a path or a URL, as kustomize's types.Kustomization has them (resources,
  bases, components, crds, patches and patchesStrategicMerge/patchesJson6902, configMapGenerator
  and secretGenerator files/envs/env, generators, transformers, validators, configurations,
  replacements, openapi.path, helmCharts and helmGlobals): a URL is refused unless the network
  is allowed (kustomize fetches ``http(s)://`` files itself: api/internal/loader/fileloader.go
  ``IsRemoteFile``; and clones git remotes: api/internal/git/repospec.go), ``helmCharts`` too
  (kustomize runs helm, which pulls charts); a local path must lead inside the repository, be a
  regular file or folder, within ``file-size``, and a YAML file must pass kaffinity's own alias
  and nesting limits (a 454-byte alias bomb in a patch drove kubectl kustomize to 2.3 GiB).
- :func:`check_chart`: the chart walked with ``lstat`` (Helm's loader follows symlinks),
  values files inside the repository and within the limits, no remote ``$ref`` in a
  values.schema.json (Helm's schema validation would fetch or read it).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kaffinity.load.manifests import find_kustomization
from kaffinity.load.parse import Limits
from kaffinity.load.source import PosDict, PosList, Span, unpack
from kaffinity.repo.sandbox import inside, path_problem, walk_problem

#: Fields whose items are paths (or URLs), wherever they stand in a kustomization or a
#: generator/transformer configuration.
_LIST_KEYS = frozenset(
    (
        "resources",
        "bases",
        "components",
        "crds",
        "patchesStrategicMerge",
        "configurations",
        "generators",
        "transformers",
        "validators",
        "files",
        "envs",
        "additionalValuesFiles",
    )
)
#: Fields whose value is one path (or URL): patches[].path, replacements[].path, openapi.path,
#: configMapGenerator[].env, helmCharts[].valuesFile, helmGlobals.chartHome/configHome.
_SCALAR_KEYS = frozenset(("path", "env", "valuesFile", "chartHome", "configHome"))
#: Entries that are other kustomizations (a folder) or resource files.
RESOURCE_KEYS = frozenset(("resources", "bases", "components", "crds"))
#: Entries that are configuration files kustomize reads, which may name files in turn.
_CONFIG_KEYS = frozenset(("generators", "transformers", "validators", "configurations"))
#: Entries whose files are data, not YAML (configMapGenerator files, env files).
_DATA_KEYS = frozenset(("files", "envs", "env"))
#: kustomize's own remote forms (repospec.go parseHostSpec, and the go-getter forms it took):
#: a scheme, ``git::``, ``gh:``, scp-like ``git@host:``, the hosts it implies https for.
_REMOTE_PREFIXES = ("git::", "gh:", "git@", "github.com/", "github.com:", "gitlab.com/", "bitbucket.org/")
_SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:")


_NETWORK_OFF = "the network is off (--allow-network allows it)"


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a unit is not rendered: ``message``, at ``file`` (and ``span``). ``remote``: a remote
    resource or base (read as written with a note, as before: building it needs the network)."""

    message: str
    file: str
    span: Span | None = None
    remote: bool = False


def is_remote(entry: str, folder: str = ".") -> bool:
    """Whether kustomize would fetch ``entry`` rather than read a local path."""
    text = entry.strip()
    lower = text.lower()
    if "://" in lower or lower.startswith(_REMOTE_PREFIXES) or "_git/" in lower:
        return True
    if _SCP_LIKE.match(text):
        return True
    first, slash, _ = text.partition("/")
    # host.tld/org/repo: a host's name where a local folder would be (none exists by that name).
    return bool(
        slash
        and "." in first.strip(".")
        and not first.startswith(".")
        and not os.path.lexists(os.path.join(folder, first))
    )


def check_kustomization(
    directory: str, roots: Sequence[str], limits: Limits, *, network: bool
) -> Refusal | None:
    """The first reason the kustomization in ``directory`` (and every one it uses) may not be
    handed to kustomize, or None."""
    return _Scan(roots, limits, network).kustomization(directory)


class _Scan:
    """One walk over a build tree, without recursion (a chain of a thousand kustomizations, a
    configuration naming itself, deeply nested data: each is a task on one stack, each file
    read once)."""

    def __init__(self, roots: Sequence[str], limits: Limits, network: bool) -> None:
        self.roots = roots
        self.limits = limits
        self.network = network
        self.seen: set[str] = set()
        #: Folders of kustomizations, and (data, folder, file, span) to look through.
        self.tasks: list[str | tuple[Any, str, str, Span | None]] = []

    def kustomization(self, directory: str) -> Refusal | None:
        self.tasks.append(directory)
        while self.tasks:
            task = self.tasks.pop()
            refusal = self.folder(task) if isinstance(task, str) else self.fields(*task)
            if refusal is not None:
                return refusal
        return None

    def first_time(self, path: str) -> bool:
        real = os.path.realpath(path)
        if real in self.seen:
            return False
        self.seen.add(real)
        return True

    def folder(self, directory: str) -> Refusal | None:
        path = find_kustomization(directory)
        if path is None or not self.first_time(path):
            return None  # none: kustomize says so
        problem = path_problem(path, self.roots, self.limits.file_size)
        if problem is not None:
            return Refusal(f"cannot render: {problem}", path)
        text, refusal = self.text(path, path, None)
        if refusal is not None:
            return refusal
        data = _first_document(text, self.limits)
        if isinstance(data, Refusal):
            return Refusal(data.message, path, data.span)
        if isinstance(data, PosDict):  # else kustomize says what is wrong with it
            self.tasks.append((data, os.path.dirname(path) or ".", path, None))
        return None

    def text(self, path: str, where: str, span: Span | None) -> tuple[str, Refusal | None]:
        from kaffinity.load.read import read_text

        _, text, problem = read_text(path, self.limits)
        if problem is not None:
            return "", Refusal(f"cannot render: {path}: {problem.message}", where, span)
        return text, None

    def fields(self, data: Any, folder: str, file: str, inherited: Span | None) -> Refusal | None:
        """Check the paths and URLs in ``data`` (a kustomization, or a configuration it names:
        positions then are those of the entry naming it, ``inherited``), in document order."""
        stack = [data]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                for index, (key, value) in enumerate(node.items()):
                    span = inherited or _span(node, index)
                    refusal = self.field(key, value, folder, file, span, inherited)
                    if refusal is not None:
                        return refusal
                stack.extend(reversed(node.values()))
            elif isinstance(node, list):
                stack.extend(reversed(node))
        return None

    def field(
        self, key: str, value: Any, folder: str, file: str, span: Span | None, inherited: Span | None
    ) -> Refusal | None:
        if key == "helmCharts" and value and not self.network:
            return Refusal(
                f"cannot render: helmCharts makes kustomize run helm, which pulls charts; {_NETWORK_OFF}",
                file,
                span,
            )
        if key == "patch" and isinstance(value, str):
            return _limits_of(value, self.limits, file, span)
        if key in _LIST_KEYS and isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, str):
                    refusal = self.entry(key, item, folder, file, inherited or _span(value, index))
                    if refusal is not None:
                        return refusal
        elif key in _SCALAR_KEYS and isinstance(value, str):
            return self.entry(key, value, folder, file, span)
        return None

    def entry(self, key: str, entry: str, folder: str, file: str, span: Span | None) -> Refusal | None:
        if key in _CONFIG_KEYS and "\n" in entry:  # an inline configuration
            data = _first_document(entry, self.limits)
            if isinstance(data, Refusal):
                return Refusal(data.message, file, span)
            self.tasks.append((data, folder, file, span))
            return None
        if key == "files" and "=" in entry:
            entry = entry.split("=", 1)[1]  # key=path
        if not entry.strip():
            return None
        if is_remote(entry, folder):
            return None if self.network else _remote(key, entry, file, span)
        path = os.path.normpath(os.path.join(folder, entry))
        problem = path_problem(path, self.roots, self.limits.file_size)
        if problem is not None:
            return Refusal(f"cannot render: {key}: {problem}", file, span)
        if os.path.isdir(path):
            if key in RESOURCE_KEYS:
                self.tasks.append(path)
            return None
        if not os.path.isfile(path) or key in _DATA_KEYS or not self.first_time(path):
            return None
        text, refusal = self.text(path, file, span)
        if refusal is not None:
            return refusal
        if key in _CONFIG_KEYS:
            data = _first_document(text, self.limits, every=True)
            if isinstance(data, Refusal):
                return Refusal(f"cannot render: {path}: {data.message}", file, span)
            self.tasks.append((data, folder, file, span))
            return None
        return _limits_of(text, self.limits, file, span, path)


def _remote(key: str, entry: str, file: str, span: Span | None) -> Refusal:
    if key in RESOURCE_KEYS:
        return Refusal(f"{key} names a remote resource: {entry}", file, span, remote=True)
    return Refusal(
        f"cannot render: {key} names a URL ({entry}), which kustomize would fetch; {_NETWORK_OFF}",
        file,
        span,
    )


def _span(container: Any, index: int) -> Span | None:
    positions = getattr(container, "pos", None)
    if positions is None or index >= len(positions) or positions[index] is None:
        return getattr(container, "span", None)
    return unpack(positions[index])


def _first_document(text: str, limits: Limits, *, every: bool = False, strict: bool = True) -> Any:
    """The first document of ``text`` with positions (``every``: all of them, as a list), or a
    :class:`Refusal` past kaffinity's limits. ``strict``: YAML kaffinity cannot read is refused
    too (a kustomization or a configuration: what it names cannot be checked, and go-yaml reads
    some YAML 1.2 that libyaml refuses, such as ``[http://host:1/x]``); else None (the tool
    says why)."""
    from kaffinity.load.parse import LoadError
    from kaffinity.load.parse.reader import _documents, _parse_errors

    try:
        documents = [data for data, _ in _documents(text, limits)]
    except LoadError as error:
        return Refusal(f"cannot render: {error.message}", "", error.span)
    except _parse_errors() as error:
        if not strict:
            return None
        mark = getattr(error, "problem_mark", None)
        span = Span(mark.line + 1, mark.column + 1) if mark is not None else None
        reason = getattr(error, "problem", None) or type(error).__name__
        return Refusal(f"cannot render: kaffinity cannot read it to check it ({reason})", "", span)
    if every:
        out = PosList(Span(1, 1))
        out.extend(documents)
        out.pos.extend([None] * len(documents))  # type: ignore[list-item]
        return out
    return documents[0] if documents else None


def _limits_of(
    text: str, limits: Limits, file: str, span: Span | None, path: str | None = None
) -> Refusal | None:
    """A refusal when ``text`` (a file a tool reads) is past kaffinity's own alias or nesting limit."""
    data = _first_document(text, limits, every=True, strict=False)
    if isinstance(data, Refusal):
        if path is None:
            return Refusal(data.message, file, span)
        return Refusal(data.message.replace("cannot render: ", f"cannot render: {path}: ", 1), file, span)
    return None


def check_chart(
    chart_dir: str, values_files: Sequence[str], roots: Sequence[str], limits: Limits, *, network: bool
) -> Refusal | None:
    """The first reason the chart in ``chart_dir`` may not be handed to Helm, or None."""
    chart_file = os.path.join(chart_dir, "Chart.yaml")
    if not inside(chart_dir, roots):
        return Refusal(f"cannot render: the chart {chart_dir} is outside the repository", chart_file)
    walked = walk_problem(chart_dir, roots, limits.file_size)
    if walked is not None:
        where, why = walked  # named in the message; never read (it may lead anywhere)
        return Refusal(f"cannot render: {where} {why}", chart_file)
    # The YAML Helm parses itself: the values files named, and every chart's and subchart's
    # Chart.yaml and values.yaml (the walk above kept the chart inside the repository).
    own = [
        os.path.join(folder, name)
        for folder, _, names in os.walk(chart_dir)
        for name in ("Chart.yaml", "values.yaml")
        if name in names
    ]
    for values in (*own, *values_files):
        problem = path_problem(values, roots, limits.file_size)
        if problem is not None:
            return Refusal(f"cannot render: {problem}", chart_file)
        if os.path.isfile(values):
            from kaffinity.load.read import read_text

            _, text, read_problem = read_text(values, limits)
            if read_problem is not None:
                return Refusal(f"cannot render: {values}: {read_problem.message}", values)
            refusal = _limits_of(text, limits, values, None)
            if refusal is not None:
                return refusal
    for folder, _, names in os.walk(chart_dir):
        if "values.schema.json" in names:
            refusal = _schema_refs(os.path.join(folder, "values.schema.json"), limits, network=network)
            if refusal is not None:
                return refusal
    return None


def _schema_refs(schema: str, limits: Limits, *, network: bool) -> Refusal | None:
    """A values.schema.json whose ``$ref`` leads out of the file: Helm's schema validation
    (pkg/chart/v2/util/jsonschema.go) loads what a reference names, over HTTP or from a file
    (``file:///etc/passwd``; a relative reference resolves against no base at all), and its
    errors quote what it read. Only ``#...`` references stay inside the schema; others are
    refused unless the network is allowed, and ``file:`` ones always. Read as JSON, so no
    ``\\u0024ref`` escape hides one."""
    import json

    from kaffinity.load.read import read_text

    _, text, problem = read_text(schema, limits)
    if problem is not None:
        return Refusal(f"cannot render: {problem.message}", schema)
    try:
        data = json.loads(text)
    except ValueError:
        return None  # Helm says so
    pending = [data]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                local = ref.lower().startswith("file:") or "://" not in ref
                if local or not network:
                    line = text[: max(text.find(ref), 0)].count("\n") + 1
                    return Refusal(
                        f"cannot render: $ref {ref!r} leads out of the schema, which Helm would "
                        + ("read from the disk" if local else f"fetch; {_NETWORK_OFF}"),
                        schema,
                        Span(line, 1),
                    )
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return None
