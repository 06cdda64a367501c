"""Flux releases: ``Kustomization`` and ``HelmRelease`` (toolkit.fluxcd.io) as units.

A Flux repository holds what the controllers build, not the pods themselves:

- a ``Kustomization`` (kustomize.toolkit.fluxcd.io) names a folder of a source (``spec.sourceRef``:
  a ``GitRepository``, ``OCIRepository``, ``Bucket`` or ``ExternalArtifact``; ``spec.path``)
  that kustomize-controller builds: a ``kustomization.yaml`` is generated when the folder has
  none (fluxcd/pkg kustomize/kustomize_generator.go, ``generateKustomization``: every ``.yaml``/
  ``.yml`` file below it, a sub-folder with a kustomization of its own as one resource), the
  Kustomization's ``targetNamespace``, ``patches``, ``images``, ``components``,
  ``namePrefix``/``nameSuffix`` and ``commonMetadata`` are added (``Generator.WriteFile``), and
  ``postBuild`` substitutes variables in each object built (kustomize_varsub.go,
  ``SubstituteVariables``);
- a ``HelmRelease`` (helm.toolkit.fluxcd.io) names a chart (``spec.chart.spec`` with a
  ``HelmRepository``, ``GitRepository`` or ``Bucket`` source, or ``spec.chartRef`` to an
  ``OCIRepository`` or ``HelmChart``) that helm-controller renders with ``valuesFrom`` then
  ``values`` (helm-controller internal/chartutil/values.go, ``ChartValuesFromReferences``), and
  post-renders with kustomize (``postRenderers[].kustomize``: patches, images).

Each is rendered here as its controller would, with kaffinity's own confined renderers
(:func:`kaffinity.repo.render.render_kustomization`, :func:`~kaffinity.repo.render.render_chart`).
A source is *this repository* when it is a ``GitRepository`` whose URL is a remote of the
checkout (``.git/config``, read as a file), or the ``flux-system`` GitRepository that ``flux
bootstrap`` writes (fluxcd/flux2 pkg/manifestgen/sync: ``flux-system/flux-system`` syncs the
repository it is committed to); anything else is remote and fetched only when the network is
allowed (:mod:`kaffinity.repo.fetch`). docs/repositories.md ("Flux") says what is and is not done.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kaffinity.load.source import Document
from kaffinity.repo.releases import NotRendered, Release, ReleaseContext

KUSTOMIZE_GROUP = "kustomize.toolkit.fluxcd.io/"
HELM_GROUP = "helm.toolkit.fluxcd.io/"
SOURCE_GROUPS = ("source.toolkit.fluxcd.io/", "source.extensions.fluxcd.io/")
#: kustomize-controller's opt-out of substitution, as a label or an annotation (kustomize_varsub.go).
SUBSTITUTE_KEY = "kustomize.toolkit.fluxcd.io/substitute"
#: Variable names postBuild accepts (kustomize_varsub.go, ``varsubRegex``).
_VARIABLE_NAME = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")
#: helm-controller's longest release name (internal/release/name.go ``ShortenName``).
_RELEASE_NAME_MAX = 53
_DEFAULT_VALUES_KEY = "values.yaml"


def releases(context: ReleaseContext) -> Iterator[Release]:
    """The Flux releases among ``context.documents``: each ``Kustomization`` and ``HelmRelease``,
    named ``Kustomization <namespace>/<name>``; where two different objects of one name are
    found (a cluster folder per environment, an overlay per environment), each name is followed
    by where it comes from (the folder of its file, or the overlay that rendered it). A
    HelmRelease below the folder of a Kustomization of this repository is read as that
    Kustomization deploys it: its postBuild variables substituted, in its targetNamespace."""
    index = _Index(context)
    scopes = _scopes(context, index)
    index.place(scopes)
    found: list[tuple[Document, Document]] = []  # (as deployed, as found)
    for doc in context.documents:
        if _is_kustomization(doc.data):
            found.append((doc, doc))
        elif _is_helm_release(doc.data):
            found.append((_in_scope(doc, scopes), doc))
    names = {id(doc): _release_name(doc) for doc, _ in found}
    contents: dict[str, set[str]] = {}
    for doc, _ in found:
        contents.setdefault(names[id(doc)], set()).add(_content(doc))
    seen: set[tuple[str, str]] = set()
    for doc, original in found:
        name = names[id(doc)]
        key = (name, _content(doc))
        if key in seen:
            continue  # the same object from two units (a base two overlays share unchanged)
        seen.add(key)
        if len(contents[name]) > 1:
            name = f"{name} ({_where(original, context)})"
        if _is_kustomization(doc.data):
            yield _kustomization_release(doc, name, index)
        else:
            yield _helm_release(doc, name, index)


def _content(doc: Document) -> str:
    return json.dumps(doc.data, sort_keys=True, default=str)


@dataclass(frozen=True, slots=True)
class _Scope:
    """The folder a Kustomization of this repository builds, and what it does to its objects."""

    folder: str
    variables: _Variables
    namespace: str | None


def _scopes(context: ReleaseContext, index: _Index) -> list[_Scope]:
    scopes = []
    for doc in context.documents:
        if not _is_kustomization(doc.data):
            continue
        folder = _local_folder(doc, index)
        variables = _post_build(doc, index)
        if folder is None or isinstance(variables, NotRendered):
            continue
        scopes.append(
            _Scope(os.path.realpath(folder), variables, _string(_spec(doc.data).get("targetNamespace")))
        )
    return sorted(scopes, key=lambda scope: -len(scope.folder))


def _scope_namespace(doc: Document, scopes: Sequence[_Scope]) -> str | None:
    real = os.path.realpath(doc.file)
    for scope in scopes:
        if _within(real, scope.folder):
            return scope.namespace
    return None


def _in_scope(doc: Document, scopes: Sequence[_Scope]) -> Document:
    real = os.path.realpath(doc.file)
    for scope in scopes:
        if _within(real, scope.folder):
            if scope.variables.enabled and (scope.variables.values or scope.variables.sealed):
                doc = substituted_release(doc, scope.variables.values, scope.variables.sealed)
            if scope.namespace and _namespace(doc.data) != scope.namespace:
                data = dict(doc.data)
                data["metadata"] = {**_metadata(data), "namespace": scope.namespace}
                doc = replace(doc, data=data, root=data, prefix=())
            return doc
    return doc


def _where(doc: Document, context: ReleaseContext) -> str:
    unit = context.units.get(id(doc))
    return unit or os.path.dirname(os.path.normpath(doc.file)) or "."


def _api(data: Any) -> str:
    value = data.get("apiVersion") if isinstance(data, dict) else None
    return value if isinstance(value, str) else ""


def _is_kustomization(data: Any) -> bool:
    return _api(data).startswith(KUSTOMIZE_GROUP) and data.get("kind") == "Kustomization"


def _is_helm_release(data: Any) -> bool:
    return _api(data).startswith(HELM_GROUP) and data.get("kind") == "HelmRelease"


def _metadata(data: Any) -> Mapping[str, Any]:
    metadata = data.get("metadata") if isinstance(data, dict) else None
    return metadata if isinstance(metadata, dict) else {}


def _namespace(data: Any) -> str:
    namespace = _metadata(data).get("namespace")
    return namespace if isinstance(namespace, str) and namespace else "default"


def _object_name(data: Any) -> str:
    name = _metadata(data).get("name")
    return name if isinstance(name, str) else ""


def _release_name(doc: Document) -> str:
    return f"{doc.data.get('kind')} {_namespace(doc.data)}/{_object_name(doc.data)}"


def _spec(data: Any) -> Mapping[str, Any]:
    spec = data.get("spec") if isinstance(data, dict) else None
    return spec if isinstance(spec, dict) else {}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# --- what the repository holds -----------------------------------------------------------------


class _Index:
    """The objects releases refer to (sources, ConfigMaps, Secrets), by kind, namespace and
    name, and where this repository is."""

    def __init__(self, context: ReleaseContext) -> None:
        self.context = context
        self.objects: dict[tuple[str, str, str], Document] = {}
        for doc in context.documents:
            data = doc.data
            kind = data.get("kind") if isinstance(data, dict) else None
            if not isinstance(kind, str):
                continue
            api = _api(data)
            if (kind in ("ConfigMap", "Secret") and api == "v1") or api.startswith(SOURCE_GROUPS):
                self.objects.setdefault((kind, _namespace(data), _object_name(data)), doc)

    def place(self, scopes: Sequence[_Scope]) -> None:
        """Objects a Kustomization of this repository deploys into its targetNamespace are
        found there too (a ConfigMap a configMapGenerator made, with no namespace of its own)."""
        for (kind, _, name), doc in list(self.objects.items()):
            namespace = _scope_namespace(doc, scopes)
            if namespace is not None:
                self.objects.setdefault((kind, namespace, name), doc)

    def get(self, kind: str, namespace: str, name: str) -> Document | None:
        return self.objects.get((kind, namespace, name))

    def root(self, doc: Document) -> str:
        from kaffinity.repo.sandbox import repository_root

        if self.context.roots:
            real = os.path.realpath(doc.file)
            for root in self.context.roots:
                top = repository_root(root)
                if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
                    return top
        return repository_root(doc.file)

    def this(self, kind: str, namespace: str, name: str, root: str) -> tuple[bool, str]:
        """Whether the source ``kind namespace/name`` is this repository, and the guess made
        when it is taken for it without its URL being a remote of the checkout (a note says
        so): a GitRepository whose url is a remote of the checkout
        (:func:`kaffinity.repo.releases.this_repository`), or ``flux-system/flux-system``, the
        source ``flux bootstrap`` writes to sync the repository it commits into."""
        from kaffinity.repo.releases import this_repository

        if kind != "GitRepository":
            return False, ""
        bootstrap = (namespace, name) == ("flux-system", "flux-system")
        source = self.get(kind, namespace, name)
        url = _string(_spec(source.data).get("url")) if source is not None else None
        how = this_repository(url, root) if url is not None else None
        if how == "remote":
            return True, ""
        if how == "folder":
            return (
                True,
                f"GitRepository {namespace}/{name} ({url}) taken for this repository by its folder's name",
            )
        if bootstrap:
            where = f" ({url} is not a remote of the checkout)" if url else " (not in the repository)"
            return (
                True,
                f"GitRepository flux-system/flux-system{where} taken for this repository, "
                "which flux bootstrap syncs",
            )
        return False, ""


@dataclass(frozen=True, slots=True)
class _Tree:
    """Where a source's files are: a folder (the checkout's root, or a fetched tree)."""

    path: str
    local: bool


def _source_tree(
    kind: str, name: str, namespace: str, index: _Index, owner: Document, context: ReleaseContext
) -> _Tree | NotRendered:
    """The folder of a Kustomization's or chart's source, fetched when remote (and allowed)."""
    from kaffinity.repo.fetch import GitRef, NotFetched, fetch_git

    root = index.root(owner)
    if kind == "ExternalArtifact":
        return _artifact_tree(name, namespace, index, owner, context)
    if index.this(kind, namespace, name, root)[0]:
        return _Tree(root, local=True)
    source = index.get(kind, namespace, name)
    if source is None:
        return NotRendered(f"its source {kind} {namespace}/{name} is not in the repository")
    if kind != "GitRepository":
        return NotRendered(f"its source {kind} {namespace}/{name} is an artifact kaffinity does not fetch")
    spec = _spec(source.data)
    url = _string(spec.get("url"))
    if url is None:
        return NotRendered(f"its source GitRepository {namespace}/{name} has no url")
    ref = _mapping(spec.get("ref"))
    fetched = fetch_git(
        url,
        GitRef(
            branch=_string(ref.get("branch")),
            tag=_string(ref.get("tag")),
            semver=_string(ref.get("semver")),
            commit=_string(ref.get("commit")),
            name=_string(ref.get("name")),
        ),
        context.sandbox,
    )
    if isinstance(fetched, NotFetched):
        return NotRendered(fetched.reason, remote=fetched.offline)
    return _Tree(fetched.path, local=False)


def _artifact_tree(
    name: str, namespace: str, index: _Index, owner: Document, context: ReleaseContext
) -> _Tree | NotRendered:
    """An ``ExternalArtifact`` an ``ArtifactGenerator`` (source.extensions.fluxcd.io) composes
    from this repository: the artifact's folders are the repository's folders its ``copy``
    rules name (``from: "@repo/apps/**"``, ``to: "@artifact/"``). Read back as a folder of the
    checkout when every rule copies a whole folder of this repository and keeps its layout
    below it (the flux2-kustomize-helm-example layout); anything else is not rendered."""
    for doc in index.context.documents:
        data = doc.data
        if not (_api(data).startswith(SOURCE_GROUPS) and data.get("kind") == "ArtifactGenerator"):
            continue
        if _namespace(data) != namespace:
            continue
        spec = _spec(data)
        for artifact in spec.get("artifacts") or ():
            if not isinstance(artifact, dict) or artifact.get("name") != name:
                continue
            return _ArtifactMap.of(spec, artifact, namespace, index, owner, context)
    return NotRendered(f"its source ExternalArtifact {namespace}/{name} is not in the repository")


@dataclass(frozen=True, slots=True)
class _ArtifactMap:
    """An artifact's folders as folders of this repository: (artifact prefix, repository folder)."""

    root: str
    folders: tuple[tuple[str, str], ...]

    @staticmethod
    def of(
        spec: Mapping[str, Any],
        artifact: Mapping[str, Any],
        namespace: str,
        index: _Index,
        owner: Document,
        context: ReleaseContext,
    ) -> _Tree | NotRendered:
        aliases: dict[str, _Tree | NotRendered] = {}
        for source in spec.get("sources") or ():
            if isinstance(source, dict) and isinstance(source.get("alias"), str):
                aliases[source["alias"]] = _source_tree(
                    str(source.get("kind")),
                    str(source.get("name")),
                    _string(source.get("namespace")) or namespace,
                    index,
                    owner,
                    context,
                )
        folders: list[tuple[str, str]] = []
        for rule in artifact.get("copy") or ():
            origin = str(_mapping(rule).get("from") or "")
            target = str(_mapping(rule).get("to") or "")
            match = re.match(r"^@([^/]+)/(.*?)/?\*\*$", origin)
            if not match or not target.startswith("@artifact/"):
                return NotRendered(f"its artifact copies {origin!r}, which kaffinity does not compose")
            tree = aliases.get(match.group(1))
            if tree is None:
                return NotRendered(
                    f"its artifact copies from @{match.group(1)}, not a source of its generator"
                )
            if isinstance(tree, NotRendered):
                return tree
            inside = os.path.normpath(target[len("@artifact/") :] or ".")
            folders.append((inside, os.path.normpath(os.path.join(tree.path, match.group(2)))))
        # Every rule must keep the repository's layout: the artifact's root is one folder of it.
        roots = set()
        for inside, folder in folders:
            if inside == ".":
                roots.add(folder)
            elif folder.endswith(os.sep + inside):
                roots.add(folder[: -len(inside) - 1])
            else:
                roots.add("")  # renamed on the way: not a folder of the repository
        if len(roots) != 1 or "" in roots:
            return NotRendered("its artifact composes folders of several places, which kaffinity does not")
        return _Tree(roots.pop(), local=True)


# --- values and variables from ConfigMaps and Secrets ---------------------------------------------


@dataclass(frozen=True, slots=True)
class _Data:
    """A ConfigMap's or Secret's data, decoded; ``sealed``: keys whose values are encrypted
    (SOPS), known by name only."""

    values: Mapping[str, str]
    sealed: frozenset[str]


def _object_data(doc: Document) -> _Data:
    data = doc.data
    values: dict[str, str] = {}
    sealed: set[str] = set()
    encrypted = isinstance(data.get("sops"), dict)
    if data.get("kind") == "Secret":
        for key, value in _mapping(data.get("data")).items():
            if encrypted or not isinstance(value, str):
                sealed.add(key)
                continue
            try:
                values[key] = base64.b64decode(value, validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                sealed.add(key)
    for key, value in _mapping(data.get("stringData" if data.get("kind") == "Secret" else "data")).items():
        if encrypted and isinstance(value, str) and value.startswith("ENC["):
            sealed.add(key)
        elif isinstance(value, str | int | float | bool):
            values[key] = value if isinstance(value, str) else json.dumps(value)
    return _Data(values, frozenset(sealed - set(values)))


# --- postBuild: envsubst as kustomize-controller runs it -----------------------------------------


class SubstitutionError(ValueError):
    """``${`` that drone/envsubst cannot parse, or (strict) a variable with no value."""


_IDENT = re.compile(r"[\w-]+")  # drone/envsubst parse/scan.go acceptIdent: letters, digits, _ and -


def envsubst(
    text: str,
    variables: Mapping[str, str],
    *,
    sealed: frozenset[str] = frozenset(),
    strict: bool = False,
) -> str:
    """``text`` with ``${...}`` expanded as Flux's postBuild does (github.com/drone/envsubst,
    which fluxcd/pkg kustomize_varsub.go calls): ``${var}``, ``${var:=default}``,
    ``${var:-default}``, ``${var=default}`` (an unset and an empty variable alike: the lookup
    gives ""), ``${#var}``, ``${var^}``/``^^``/``,``/``,,``, ``${var:offset[:length]}``,
    ``${var#p}``/``##``/``%``/``%%`` and ``${var/p/r}``/``//`` (glob patterns); ``$$`` is a
    ``$``, and ``\\/`` and ``\\\\`` drop the backslash (parse/scan.go ``scanEscaped``). A bare
    ``$var`` is text. An unknown variable is "" (``strict``: an error, as the
    StrictPostBuildSubstitutions feature gate makes it); one in ``sealed`` (an encrypted
    Secret's key: its value is unknown here) leaves the expression as written."""
    out: list[str] = []
    position = 0
    while position < len(text):
        char = text[position]
        if char == "$" and text.startswith("${", position):
            value, position = _expression(text, position + 2, variables, sealed, strict)
            out.append(value)
            continue
        if char == "$" and text.startswith("$$", position):
            out.append("$")
            position += 2
            continue
        if char == "\\" and position + 1 < len(text) and text[position + 1] in "/\\":
            out.append(text[position + 1])
            position += 2
            continue
        out.append(char)
        position += 1
    return "".join(out)


def _expression(
    text: str, start: int, variables: Mapping[str, str], sealed: frozenset[str], strict: bool
) -> tuple[str, int]:
    """The value of the expression whose name starts at ``start`` (after ``${``), and where the
    text resumes."""
    length = text.startswith("#", start)
    match = _IDENT.match(text, start + length)
    if match is None:
        raise SubstitutionError(f"bad substitution at {text[start - 2 : start + 20]!r}")
    name = match.group(0)
    position = match.end()
    if length:
        end = _close(text, position)
        return str(len(variables.get(name, ""))), end
    operator, args, end = _operator(text, position, variables, sealed, strict)
    if name in sealed and name not in variables:
        return text[start - 2 : end], end
    value = variables.get(name)
    if value is None and strict and operator not in (":=", ":-", "="):
        raise SubstitutionError(f"variable not set (strict mode): {name!r}")
    return _apply(value or "", operator, args), end


def _close(text: str, position: int) -> int:
    if not text.startswith("}", position):
        raise SubstitutionError(f"bad substitution at {text[max(position - 10, 0) : position + 10]!r}")
    return position + 1


def _operator(
    text: str, position: int, variables: Mapping[str, str], sealed: frozenset[str], strict: bool
) -> tuple[str, list[str], int]:
    """The function after a name (parse.go ``parseFunc``): its operator, its arguments
    (expanded), and the position after the closing ``}``."""
    rest = text[position:]
    for operator in (
        ":=",
        ":-",
        ":?",
        ":+",
        "=",
        "^^",
        ",,",
        "^",
        ",",
        "##",
        "#",
        "%%",
        "%",
        "//",
        "/#",
        "/%",
        "/",
        ":",
    ):
        if rest.startswith(operator):
            break
    else:
        return "", [], _close(text, position)
    position += len(operator)
    args: list[str] = []
    if operator in ("^^", ",,", "^", ","):
        return operator, args, _close(text, position)
    current: list[str] = []
    separators = "/" if operator.startswith("/") else ":" if operator == ":" else ""
    while True:
        if position >= len(text):
            raise SubstitutionError("bad substitution: no closing }")
        char = text[position]
        if char == "}":
            args.append("".join(current))
            return operator, args, position + 1
        if text.startswith("${", position):
            value, position = _expression(text, position + 2, variables, sealed, strict)
            current.append(value)
            continue
        if char in separators and len(args) < 1:
            args.append("".join(current))
            current = []
            position += 1
            continue
        current.append(char)
        position += 1


def _apply(value: str, operator: str, args: list[str]) -> str:
    """drone/envsubst funcs.go, for the operators it knows (``:?`` and ``:+`` it does not: the
    value is kept)."""
    if operator in (":=", ":-", "="):
        return value or "".join(args)
    if operator in ("^", "^^", ",", ",,"):
        change = str.upper if operator[0] == "^" else str.lower
        return change(value) if len(operator) == 2 else change(value[:1]) + value[1:]
    if operator == ":":
        try:
            offset = int(args[0].strip() or "0")
            size = int(args[1].strip()) if len(args) > 1 else None
        except ValueError:
            return value
        offset = max(len(value) + offset, 0) if offset < 0 else offset
        return value[offset : offset + size] if size is not None else value[offset:]
    if operator in ("#", "##", "%", "%%"):
        return _remove(value, operator, args[0] if args else "")
    if operator.startswith("/"):
        pattern = args[0] if args else ""
        replacement = args[1] if len(args) > 1 else ""
        if not pattern:
            return value
        if operator == "//":
            return value.replace(pattern, replacement)
        if operator == "/#":
            return replacement + value[len(pattern) :] if value.startswith(pattern) else value
        if operator == "/%":
            return value[: -len(pattern)] + replacement if value.endswith(pattern) else value
        return value.replace(pattern, replacement, 1)
    return value


def _remove(value: str, operator: str, pattern: str) -> str:
    cuts = range(len(value) + 1)
    if operator.startswith("#"):
        order = cuts if operator == "#" else reversed(cuts)
        for cut in order:
            if fnmatch.fnmatchcase(value[:cut], pattern):
                return value[cut:]
    else:
        order = reversed(cuts) if operator == "%" else cuts
        for cut in order:
            if fnmatch.fnmatchcase(value[cut:], pattern):
                return value[:cut]
    return value


@dataclass(frozen=True, slots=True)
class _Variables:
    """What a Kustomization's postBuild substitutes."""

    values: Mapping[str, str]
    sealed: frozenset[str]
    #: spec.postBuild is set: kustomize-controller substitutes (when there is a variable).
    enabled: bool


def _post_build(doc: Document, index: _Index) -> _Variables | NotRendered:
    """The variables of a Kustomization's postBuild: ``substituteFrom`` in order (ConfigMaps and
    Secrets of its namespace; ``optional`` ones may be missing), then ``substitute`` over them
    (kustomize_varsub.go ``loadVars``, ``SubstituteVariables``); newlines removed from values."""
    post = _spec(doc.data).get("postBuild")
    if not isinstance(post, dict):
        return _Variables({}, frozenset(), enabled=False)
    namespace = _namespace(doc.data)
    values: dict[str, str] = {}
    sealed: set[str] = set()
    for reference in post.get("substituteFrom") or ():
        if not isinstance(reference, dict):
            continue
        kind, name = str(reference.get("kind")), str(reference.get("name"))
        found = index.get(kind, namespace, name) if kind in ("ConfigMap", "Secret") else None
        if found is None:
            if reference.get("optional") is True:
                continue
            return NotRendered(f"postBuild.substituteFrom {kind} {namespace}/{name} is not in the repository")
        data = _object_data(found)
        values.update({key: value.replace("\n", "") for key, value in data.values.items()})
        sealed.update(data.sealed)
    for key, value in _mapping(post.get("substitute")).items():
        values[str(key)] = str(value).replace("\n", "") if not isinstance(value, bool) else json.dumps(value)
    for key in (*values, *sealed):
        if not _VARIABLE_NAME.match(key):
            return NotRendered(
                f"postBuild variable {key!r} is not a valid name (^[_[:alpha:]][_[:alpha:][:digit:]]*$)"
            )
    return _Variables(values, frozenset(sealed - set(values)), enabled=True)


def _substituted(text: str, variables: _Variables) -> str:
    """Built output with each object substituted, except those labelled or annotated
    ``kustomize.toolkit.fluxcd.io/substitute: disabled``."""
    if not variables.enabled or not (variables.values or variables.sealed):
        return text
    disabled = re.compile(rf"^\s+{re.escape(SUBSTITUTE_KEY)}:\s*[\"']?disabled[\"']?\s*$", re.M)
    parts = re.split(r"(?m)^---[ \t]*\n", text)
    out = [
        part if disabled.search(part) else envsubst(part, variables.values, sealed=variables.sealed)
        for part in parts
    ]
    return "---\n".join(out)


def _as_built(text: str, variables: _Variables, index: _Index) -> str:
    """The build's output as kustomize-controller applies it: substituted (postBuild), and, when
    it holds ``{{``, each object written as JSON: a HelmRelease's values may hold Helm actions
    for the chart's own ``tpl`` (``hostnames: ["{{ .Release.Name }}.example.com"]``, as
    bjw-s app-template reads them), which kaffinity's loader would otherwise take for an
    unrendered template and drop the whole output."""
    from kaffinity.repo.kustomize.mapping import raw_documents

    text = _substituted(text, variables)
    if "{{" not in text:
        return text
    documents = raw_documents(text, index.context.limits)
    if not documents:
        return text
    return "\n---\n".join(json.dumps(_plain(data)) for data in documents if data is not None) + "\n"


# --- Kustomization -----------------------------------------------------------------------------


def _kustomization_release(doc: Document, name: str, index: _Index) -> Release:
    spec = _spec(doc.data)
    files: tuple[str, ...] = ()
    folder, guess = _local_source(doc, index)
    if isinstance(folder, str):
        files = _built_files(folder, doc, index)

    def render(timeout: float) -> Any:
        return _render_kustomization(doc, spec, index, timeout)

    return Release(name, "flux", doc, render, files, note=guess)


def _local_folder(doc: Document, index: _Index) -> str | None:
    """The Kustomization's folder when its source is this repository (no fetch)."""
    return _local_source(doc, index)[0]


def _local_source(doc: Document, index: _Index) -> tuple[str | None, str]:
    """The Kustomization's folder when its source is this repository, and the guess made."""
    spec = _spec(doc.data)
    reference = _mapping(spec.get("sourceRef"))
    kind = str(reference.get("kind") or "GitRepository")
    name = str(reference.get("name") or "")
    namespace = _string(reference.get("namespace")) or _namespace(doc.data)
    root = index.root(doc)
    if kind == "ExternalArtifact":
        return _local_artifact(doc, name, namespace, index)
    local, guess = index.this(kind, namespace, name, root)
    if not local:
        return None, ""
    return _inside(root, str(spec.get("path") or "./")), guess


def _local_artifact(doc: Document, name: str, namespace: str, index: _Index) -> tuple[str | None, str]:
    """An ExternalArtifact's folder when its generator copies from this repository only (so
    nothing is fetched in finding it), and the guess made in taking its sources for it."""
    root = index.root(doc)
    guesses: list[str] = []
    for generator in index.context.documents:
        data = generator.data
        if not (_api(data).startswith(SOURCE_GROUPS) and data.get("kind") == "ArtifactGenerator"):
            continue
        for source in _spec(data).get("sources") or ():
            if not isinstance(source, dict):
                continue
            where = _string(source.get("namespace")) or _namespace(data)
            local, guess = index.this(str(source.get("kind")), where, str(source.get("name")), root)
            if not local:
                return None, ""
            guesses.append(guess)
    tree = _artifact_tree(name, namespace, index, doc, index.context)
    if isinstance(tree, NotRendered):
        return None, ""
    path = str(_spec(doc.data).get("path") or "./")
    return _inside(tree.path, path), next((guess for guess in guesses if guess), "")


def _inside(root: str, path: str) -> str | None:
    """A source's path (``./apps``, ``/apps``: both from the source's root) when it stays inside
    the root (kaffinity.repo.sandbox.joined_inside)."""
    from kaffinity.repo.sandbox import joined_inside

    return joined_inside(root, path.lstrip("/"))


def _built_files(folder: str, doc: Document, index: _Index) -> tuple[str, ...]:
    """The repository files a local Kustomization's build reads objects from (so they belong
    to its unit once it is rendered), named as the documents name their files."""
    from kaffinity.load.manifests import find_kustomization

    if not os.path.isdir(folder):
        return ()
    if find_kustomization(folder) is None:
        paths = [path for path, is_folder in _generated_resources(folder) if not is_folder]
        folders = [path for path, is_folder in _generated_resources(folder) if is_folder]
    else:
        paths, folders = [], [folder]
    if folders:
        from kaffinity.repo.kustomizations import closure, find_kustomizations

        found = find_kustomizations([], folders, index.context.limits)
        for child in folders:
            if child in found or os.path.normpath(child) in found:
                paths.extend(closure(os.path.normpath(child), found))
    relative = not os.path.isabs(doc.file)
    return tuple(
        dict.fromkeys(
            os.path.normpath(os.path.relpath(path) if relative else os.path.abspath(path)) for path in paths
        )
    )


def _generated_resources(folder: str) -> list[tuple[str, bool]]:
    """What kustomize-controller's generated kustomization lists for a folder without one
    (fluxcd/pkg kustomize_generator.go ``generateKustomization``): each ``.yaml``/``.yml`` file
    below it, and a sub-folder holding a kustomization as one entry (not walked into); hidden
    entries are left out, as source-controller's default ignore rules leave out ``.git/`` and
    ``.github/`` (fluxcd/pkg sourceignore)."""
    from kaffinity.load.manifests import KUSTOMIZATION_NAMES

    found: list[tuple[str, bool]] = []
    for current, dirs, names in os.walk(folder):
        dirs.sort()
        kept = []
        for child in dirs:
            if child.startswith("."):
                continue
            path = os.path.join(current, child)
            if any(os.path.isfile(os.path.join(path, name)) for name in KUSTOMIZATION_NAMES):
                found.append((path, True))
            else:
                kept.append(child)
        dirs[:] = kept
        for name in sorted(names):
            if name.endswith((".yaml", ".yml")) and not name.startswith("."):
                found.append((os.path.join(current, name), False))
    return found


def _patches(container: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``patches`` (inline patch and target), and v1beta2's / v2beta1's older
    ``patchesStrategicMerge`` and ``patchesJson6902`` as patches of their own (fluxcd/pkg
    kustomize_generator.go ``getPatchesStrategicMerge``, ``getPatchesJson6902``)."""
    patches = [
        {key: value for key, value in patch.items() if key in ("patch", "target")}
        for patch in container.get("patches") or ()
        if isinstance(patch, dict)
    ]
    for merge in container.get("patchesStrategicMerge") or ():
        if isinstance(merge, dict):
            patches.append({"patch": json.dumps(merge)})
    for entry in container.get("patchesJson6902") or ():
        if isinstance(entry, dict):
            patches.append({"patch": json.dumps(entry.get("patch")), "target": entry.get("target")})
    return patches


def _wrapper_fields(spec: Mapping[str, Any], folder: str, tree: _Tree) -> dict[str, Any] | NotRendered:
    """What kustomize-controller adds to the folder's kustomization (kustomize_generator.go
    ``WriteFile``; kustomize-controller's generator adds components, namePrefix/nameSuffix and
    commonMetadata), as fields of kaffinity's wrapper kustomization."""
    fields: dict[str, Any] = {}
    if _string(spec.get("targetNamespace")):
        fields["namespace"] = spec["targetNamespace"]
    for key in ("namePrefix", "nameSuffix"):
        if _string(spec.get(key)):
            fields[key] = spec[key]
    patches = _patches(spec)
    if patches:
        fields["patches"] = patches
    images = [
        {key: image[key] for key in ("name", "newName", "newTag", "digest") if key in image}
        for image in spec.get("images") or ()
        if isinstance(image, dict)
    ]
    if images:
        fields["images"] = images
    components = []
    for component in spec.get("components") or ():
        if not isinstance(component, str):
            continue
        path = _inside(tree.path, os.path.join(os.path.relpath(folder, tree.path), component))
        if path is None or not os.path.isdir(path):
            return NotRendered(f"its component {component} is not a folder of its source")
        components.append(os.path.realpath(path))
    if components:
        fields["components"] = components  # real paths: made relative to the scratch kustomization
    common = _mapping(spec.get("commonMetadata"))
    if _mapping(common.get("labels")):
        fields["labels"] = [
            {"pairs": dict(common["labels"]), "includeSelectors": False, "includeTemplates": False}
        ]
    if _mapping(common.get("annotations")):
        fields["commonAnnotations"] = dict(common["annotations"])
    return fields


def _render_kustomization(doc: Document, spec: Mapping[str, Any], index: _Index, timeout: float) -> Any:
    from kaffinity.load.manifests import find_kustomization
    from kaffinity.repo.kustomize.build import render_kustomization

    reference = _mapping(spec.get("sourceRef"))
    tree = _source_tree(
        str(reference.get("kind") or "GitRepository"),
        str(reference.get("name") or ""),
        _string(reference.get("namespace")) or _namespace(doc.data),
        index,
        doc,
        index.context,
    )
    if isinstance(tree, NotRendered):
        return tree
    folder = _inside(tree.path, str(spec.get("path") or "./"))
    if folder is None:
        return NotRendered(f"its path {spec.get('path')} leads outside its source")
    if not os.path.isdir(folder):
        return NotRendered(f"its path {spec.get('path')} is not a folder of its source")
    variables = _post_build(doc, index)
    if isinstance(variables, NotRendered):
        return variables
    fields = _wrapper_fields(spec, folder, tree)
    if isinstance(fields, NotRendered):
        return fields
    sandbox = index.context.sandbox
    if not tree.local:
        sandbox = replace(sandbox, roots=(*sandbox.roots, os.path.realpath(tree.path)))
    if find_kustomization(folder) is not None and "components" not in fields:
        try:
            return render_kustomization(
                _shown(folder, doc),
                index.context.limits,
                timeout=timeout,
                sandbox=sandbox,
                wrapper_fields=fields,
                transform=lambda text: _as_built(text, variables, index),
            )
        except SubstitutionError as error:
            return _failure(doc, f"postBuild substitution failed: {error}", index)
    return _render_generated(doc, folder, tree, fields, variables, index, timeout, sandbox)


def _render_generated(
    doc: Document,
    folder: str,
    tree: _Tree,
    fields: Mapping[str, Any],
    variables: _Variables,
    index: _Index,
    timeout: float,
    sandbox: Any,
) -> Any:
    """A folder without a kustomization, built as kustomize-controller builds it: a generated
    kustomization listing its files (or, for a folder with a kustomization and
    ``spec.components``, a kustomization of the folder and the components). Written in a
    scratch folder outside the repository (the checkout is never written): files are copied
    there (kustomize reads resource files only below the kustomization; folders are named by
    relative paths, as kustomize wants them), built, and each object pointed back at the file it
    was copied from (same text, same positions)."""
    from kaffinity.load.manifests import find_kustomization
    from kaffinity.load.parse import SourceFile
    from kaffinity.repo.kustomize.build import render_kustomization
    from kaffinity.repo.sandbox import path_problem

    limits = index.context.limits
    entries = [(folder, True)] if find_kustomization(folder) is not None else _generated_resources(folder)
    if not entries:
        return NotRendered(f"its path {os.path.relpath(folder, tree.path)} holds no manifests")
    fields = dict(fields)
    components = fields.pop("components", [])
    roots = (*sandbox.roots, os.path.realpath(tree.path))
    with tempfile.TemporaryDirectory(prefix="kaffinity-flux-") as scratch:
        real = os.path.realpath(scratch)
        copies: dict[str, str] = {}
        resources: list[str] = []
        for path, is_folder in entries:
            problem = path_problem(path, roots, limits.file_size)
            if problem is not None:
                return _failure(doc, f"cannot render: {problem}", index)
            if is_folder:
                resources.append(os.path.relpath(os.path.realpath(path), real))
                continue
            relative = os.path.relpath(path, folder)
            copy = os.path.join(real, "files", relative)
            os.makedirs(os.path.dirname(copy), exist_ok=True)
            shutil.copyfile(path, copy)
            copies[copy] = path
            resources.append(os.path.join("files", relative))
        with open(os.path.join(real, "kustomization.yaml"), "w", encoding="utf-8") as handle:
            json.dump(
                {
                    "apiVersion": "kustomize.config.k8s.io/v1beta1",
                    "kind": "Kustomization",
                    "resources": resources,
                    **({"components": [os.path.relpath(c, real) for c in components]} if components else {}),
                },
                handle,
            )
        try:
            rendered = render_kustomization(
                real,
                limits,
                timeout=timeout,
                sandbox=replace(sandbox, roots=(*roots, real)),
                wrapper_fields=fields,
                transform=lambda text: _as_built(text, variables, index),
            )
        except SubstitutionError as error:
            return _failure(doc, f"postBuild substitution failed: {error}", index)
    scratch_problems = [problem for name, problem in rendered.problems if _within(name, real)]
    if scratch_problems:  # the scratch kustomization is gone: the Kustomization is what failed
        shown = _shown(folder, doc).rstrip(os.sep) + os.sep
        message = scratch_problems[0].message.replace(os.path.join(real, "files") + os.sep, shown)
        return _failure(doc, message.replace("'files/", f"'{shown}"), index)
    as_given = not os.path.isabs(doc.file)

    def back(name: str) -> str:
        original = copies.get(os.path.realpath(name)) or copies.get(name) or name
        if not as_given or not os.path.isabs(original):
            return original
        return _shown(original, doc)

    files = []
    for file in rendered.files:
        name = back(file.name)
        documents = tuple(replace(item, file=name) for item in file.documents)
        files.append(SourceFile(name, file.text, documents, file.problems, file.skipped))
    return replace(rendered, unit=folder, files=tuple(files), patches={})


def _failure(doc: Document, message: str, index: _Index) -> Any:
    """A release that its controller would fail to apply: a ``parse-error`` at its object."""
    from kaffinity.load.parse import LoadProblem, SourceFile
    from kaffinity.load.read import read_text
    from kaffinity.repo.rendered import RENDER_PROBLEM, Rendered

    _, text, _ = read_text(doc.file, index.context.limits)
    problem = LoadProblem(RENDER_PROBLEM, message, doc.span)
    return Rendered(doc.file, None, (SourceFile(doc.file, text, (), (problem,)),))


# --- HelmRelease ---------------------------------------------------------------------------------


def release_name(data: Any) -> str:
    """The Helm release name helm-controller gives a HelmRelease: ``spec.releaseName``, else
    ``[<targetNamespace>-]<name>`` (api/v2 ``GetReleaseName``), shortened past 53 characters to
    40 and a hash (internal/release/name.go ``ShortenName``)."""
    spec = _spec(data)
    name = _string(spec.get("releaseName"))
    if name is None:
        target = _string(spec.get("targetNamespace"))
        name = f"{target}-{_object_name(data)}" if target else _object_name(data)
    if len(name) <= _RELEASE_NAME_MAX:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()
    return name[: _RELEASE_NAME_MAX - 13] + "-" + digest[:12]


def merge_values(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` merged into ``base`` (mappings merged key by key, anything else replaced),
    as helm-controller's pkg/runtime/transform ``MergeMaps``."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_values(out[key], value)
        else:
            out[key] = value
    return out


def _helm_release(doc: Document, name: str, index: _Index) -> Release:
    def render(timeout: float) -> Any:
        rendered = _render_helm_release(doc, index, timeout)
        if not isinstance(rendered, NotRendered) and rendered.ok:
            places = _values_places(doc, rendered, index)
            rendered = replace(rendered, patches={**rendered.patches, **places})
        return rendered

    return Release(name, "flux", doc, render, note=_chart_guess(doc, index))


def _chart_guess(doc: Document, index: _Index) -> str:
    """The guess made in reading a HelmRelease's chart from this repository (a note says so)."""
    template = _mapping(_mapping(_spec(doc.data).get("chart")).get("spec"))
    reference = _mapping(template.get("sourceRef"))
    if reference.get("kind") != "GitRepository":
        return ""
    namespace = _string(reference.get("namespace")) or _namespace(doc.data)
    return index.this("GitRepository", namespace, str(reference.get("name") or ""), index.root(doc))[1]


@dataclass(frozen=True, slots=True)
class _Chart:
    folder: str
    values_files: tuple[str, ...]


def _chart(doc: Document, index: _Index) -> _Chart | NotRendered:
    """The chart a HelmRelease names, on disk (fetched when remote and allowed)."""
    spec = _spec(doc.data)
    namespace = _namespace(doc.data)
    reference = _mapping(spec.get("chartRef"))
    if reference:
        kind = str(reference.get("kind"))
        name = str(reference.get("name"))
        ref_namespace = _string(reference.get("namespace")) or namespace
        source = index.get(kind, ref_namespace, name)
        if source is None:
            return NotRendered(f"its chartRef {kind} {ref_namespace}/{name} is not in the repository")
        if kind == "OCIRepository":
            return _oci_chart(source, index)
        if kind == "HelmChart":
            return _chart_template(_spec(source.data), _namespace(source.data), doc, index)
        return NotRendered(f"its chartRef kind {kind} is not a chart source")
    template = _mapping(_mapping(spec.get("chart")).get("spec"))
    if not template:
        return NotRendered("it names no chart (spec.chart.spec or spec.chartRef)")
    return _chart_template(template, namespace, doc, index)


def _chart_template(
    template: Mapping[str, Any], namespace: str, doc: Document, index: _Index
) -> _Chart | NotRendered:
    """A chart from ``spec.chart.spec`` (or a HelmChart's spec): chart, version, sourceRef,
    valuesFiles (paths in the source: the chart's for a Helm repository, the source's root for
    a git one; source-controller internal/helm/chart builder)."""
    from kaffinity.repo.fetch import NotFetched, fetch_chart

    chart = _string(template.get("chart"))
    reference = _mapping(template.get("sourceRef"))
    kind = str(reference.get("kind") or "HelmRepository")
    name = str(reference.get("name") or "")
    ref_namespace = _string(reference.get("namespace")) or namespace
    if chart is None:
        return NotRendered("its chart has no name")
    listed = [item for item in template.get("valuesFiles") or () if isinstance(item, str)]
    if _string(template.get("valuesFile")):
        listed.append(template["valuesFile"])
    version = _string(template.get("version"))
    if kind == "HelmRepository":
        source = index.get(kind, ref_namespace, name)
        if source is None:
            return NotRendered(f"its source HelmRepository {ref_namespace}/{name} is not in the repository")
        url = _string(_spec(source.data).get("url"))
        if url is None:
            return NotRendered(f"its source HelmRepository {ref_namespace}/{name} has no url")
        fetched = fetch_chart(url, chart, version, index.context.sandbox)
        if isinstance(fetched, NotFetched):
            return NotRendered(fetched.reason, remote=fetched.offline)
        return _with_values(fetched.path, fetched.path, listed)
    tree = _source_tree(kind, name, ref_namespace, index, doc, index.context)
    if isinstance(tree, NotRendered):
        return tree
    folder = _inside(tree.path, chart)
    if folder is None or not os.path.isfile(os.path.join(folder, "Chart.yaml")):
        return NotRendered(f"its chart {chart} is not a chart folder of its source")
    return _with_values(folder, tree.path, listed)


def _with_values(folder: str, base: str, listed: Sequence[str]) -> _Chart | NotRendered:
    files = []
    for item in listed:
        path = _inside(base, item)
        if path is None or not os.path.isfile(path):
            return NotRendered(f"its values file {item} is not in its source")
        files.append(path)
    return _Chart(folder, tuple(files))


def _oci_chart(source: Document, index: _Index) -> _Chart | NotRendered:
    """An OCIRepository holding a chart (``oci://host/path/<chart>``, ``ref.tag``/``semver``)."""
    from kaffinity.repo.fetch import NotFetched, fetch_chart

    spec = _spec(source.data)
    url = _string(spec.get("url"))
    if url is None or not url.startswith("oci://"):
        return NotRendered(f"its OCIRepository {_object_name(source.data)} has no oci:// url")
    ref = _mapping(spec.get("ref"))
    version = _string(ref.get("tag")) or _string(ref.get("semver"))
    repository, _, chart = url.rstrip("/").rpartition("/")
    fetched = fetch_chart(repository, chart, version, index.context.sandbox)
    if isinstance(fetched, NotFetched):
        return NotRendered(fetched.reason, remote=fetched.offline)
    return _Chart(fetched.path, ())


def release_values(doc: Document, index: _Index) -> dict[str, Any] | NotRendered:
    """The values helm-controller gives the chart: each ``valuesFrom`` in order (a ConfigMap's
    or Secret's ``valuesKey``, default ``values.yaml``, merged; or set at ``targetPath``), then
    ``spec.values`` (internal/chartutil/values.go ``ChartValuesFromReferences``)."""
    from kaffinity.load.parse import parse_data

    spec = _spec(doc.data)
    namespace = _namespace(doc.data)
    values: dict[str, Any] = {}
    for reference in spec.get("valuesFrom") or ():
        if not isinstance(reference, dict):
            continue
        kind, name = str(reference.get("kind")), str(reference.get("name"))
        optional = reference.get("optional") is True
        found = index.get(kind, namespace, name) if kind in ("ConfigMap", "Secret") else None
        if found is None:
            if optional:
                continue
            return NotRendered(f"its valuesFrom {kind} {namespace}/{name} is not in the repository")
        data = _object_data(found)
        key = _string(reference.get("valuesKey")) or _DEFAULT_VALUES_KEY
        if key not in data.values:
            if key in data.sealed or optional:
                continue  # encrypted (SOPS): its values are unknown here, the rest renders
            return NotRendered(f"its valuesFrom {kind} {namespace}/{name} has no key {key}")
        target = _string(reference.get("targetPath"))
        if target is not None:
            values = _set_path(values, target, data.values[key])
            continue
        parsed, problem = parse_data(data.values[key])
        if problem is not None:
            return NotRendered(
                f"its valuesFrom {kind} {namespace}/{name} key {key} is not YAML: {problem.message}"
            )
        if isinstance(parsed, dict):
            values = merge_values(values, _plain(parsed))
    inline = spec.get("values")
    if isinstance(inline, dict):
        values = merge_values(values, _plain(inline))
    return values


def _plain(value: Any) -> Any:
    """Loaded data as plain dicts and lists (JSON for the values file)."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _set_path(values: dict[str, Any], path: str, value: str) -> dict[str, Any]:
    """``value`` set at the dotted ``path`` as helm-controller's ``ReplacePathValue`` sets it
    (internal/chartutil/values.go): quoted, a string; else as ``helm --set path=value`` types
    it (strvals ``ParseInto``): true/false, integers, null, anything else a string."""
    typed: Any = value
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        typed = value.strip("'\"")  # quoted: a string (helm-controller ReplacePathValue)
    elif value in ("true", "false"):
        typed = value == "true"
    elif value == "null":
        typed = None
    elif re.fullmatch(r"-?[1-9][0-9]*|0", value):
        typed = int(value)
    keys = [key for key in re.split(r"(?<!\\)\.", path) if key]
    update: Any = typed
    for key in reversed(keys):
        update = {key.replace("\\.", "."): update}
    return merge_values(values, update) if isinstance(update, dict) else values


def _render_helm_release(doc: Document, index: _Index, timeout: float) -> Any:
    from kaffinity.repo.helm.chart import render_chart

    chart = _chart(doc, index)
    if isinstance(chart, NotRendered):
        return chart
    values = release_values(doc, index)
    if isinstance(values, NotRendered):
        return values
    spec = _spec(doc.data)
    namespace = _string(spec.get("targetNamespace")) or _namespace(doc.data)
    sandbox = index.context.sandbox
    root = index.root(doc)
    if not _within(chart.folder, root):
        sandbox = replace(sandbox, roots=(*sandbox.roots, root, os.path.realpath(chart.folder)))
    rendered = render_chart(
        _shown(chart.folder, doc),
        chart.values_files,
        release_name(doc.data),
        namespace,
        index.context.limits,
        timeout=timeout,
        sandbox=sandbox,
        values_objects=[values] if values else [],
        kube_version=index.context.kube_version,
    )
    if not rendered.ok:
        return rendered
    rendered = _without_hooks(rendered, spec)
    _in_namespace(rendered, namespace)
    patches = _post_renderers(spec)
    if not patches:
        return rendered
    return _post_render(doc, rendered, patches, index, timeout)


_VALUES_REFERENCE = re.compile(r"\.Values\.([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*)")


def _values_places(doc: Document, rendered: Any, index: _Index) -> dict[int, tuple[tuple[str, Any], ...]]:
    """Where the HelmRelease's ``spec.values`` set what a template line reads: a field rendered
    from ``replicas: {{ .Values.replicaCount }}`` is reported at ``replicaCount:`` of the
    HelmRelease when its values set it (through :meth:`Rendered.patch_place`, as an overlay's
    patch is), else on the template. Only a line that reads one value, directly, is followed."""
    from kaffinity.load.source import COLUMN_BITS, PosDict, locate_depth

    values_path = ("spec", "values")
    if not isinstance(_spec(doc.data).get("values"), dict):
        return {}
    written = _as_written(doc, index)
    if written is None:
        return {}
    places: dict[int, tuple[tuple[str, Any], ...]] = {}
    for file in rendered.files:
        lines = file.text.splitlines()
        for item in file.documents:
            tree: PosDict = PosDict(item.span)
            for path, line in _key_lines(item.root, ()):
                if not 0 < line <= len(lines):
                    continue
                references = set(_VALUES_REFERENCE.findall(lines[line - 1]))
                if len(references) != 1:
                    continue
                steps = values_path + tuple(references.pop().split("."))
                # The file's line, if the file's value is the one rendered (not an overlay's).
                if _dig(written.data, steps, _MISSING) != _dig(doc.data, steps, None):
                    continue
                depth, span = locate_depth(written.root, written.prefix + steps, written.span)
                if depth == len(written.prefix + steps):
                    _put(tree, path, span.line << COLUMN_BITS | span.column)
            if tree:
                places[id(item)] = ((written.file, tree),)
    return places


_MISSING = object()


def _dig(data: Any, path: Sequence[str], default: Any) -> Any:
    for step in path:
        if not isinstance(data, dict) or step not in data:
            return default
        data = data[step]
    return data


def _as_written(doc: Document, index: _Index) -> Document | None:
    """The HelmRelease as its file spells it (a rendered overlay's object keeps the base's file
    name): the document of that kind and name, with the file's own positions."""
    from kaffinity.load.read import read

    if not os.path.isfile(doc.file):
        return None
    for candidate in read(doc.file, index.context.limits).documents:
        data = candidate.data
        if _is_helm_release(data) and _object_name(data) == _object_name(doc.data):
            return candidate
    return None


def _key_lines(node: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], int]]:
    """Each data path of a position tree and the line recorded for it."""
    from kaffinity.load.source import COLUMN_BITS, PosDict, PosList

    if isinstance(node, PosDict):
        for (key, child), position in zip(node.items(), node.pos, strict=False):
            if position is not None:
                yield (*path, key), position >> COLUMN_BITS
            yield from _key_lines(child, (*path, key))
    elif isinstance(node, PosList):
        for number, (child, position) in enumerate(zip(node, node.pos, strict=False)):
            if position is not None:
                yield (*path, number), position >> COLUMN_BITS
            yield from _key_lines(child, (*path, number))


def _put(tree: Any, path: tuple[Any, ...], position: int) -> None:
    """Record ``position`` at ``path`` of a position tree, making the nodes on the way."""
    from kaffinity.load.source import PosDict, PosList

    node = tree
    for number, step in enumerate(path):
        last = number == len(path) - 1
        if isinstance(step, str) and isinstance(node, PosDict):
            if step not in node:
                nxt = (
                    PosList(node.span)
                    if not last and isinstance(path[number + 1], int)
                    else PosDict(node.span)
                )
                node[step] = nxt
                node.pos.append(None)  # type: ignore[arg-type]
            if last:
                node.pos[list(node).index(step)] = position
            node = node[step]
        elif isinstance(step, int) and isinstance(node, PosList):
            while len(node) <= step:
                node.append(PosDict(node.span))
                node.pos.append(None)  # type: ignore[arg-type]
            if last:
                node.pos[step] = position
            elif not last and isinstance(path[number + 1], int) and not isinstance(node[step], PosList):
                node[step] = PosList(node.span)
            node = node[step]
        else:
            return


def _shown(path: str, doc: Document) -> str:
    """``path`` named as the documents name their files: relative to the working folder when
    the release's own file is (so findings name ``charts/x/templates/y.yaml``)."""
    if os.path.isabs(doc.file):
        return path
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _in_namespace(rendered: Any, namespace: str) -> None:
    """Namespaced objects the chart writes no namespace for are created in the release's
    namespace (helm-controller installs with the release's namespace: Helm's kube client sets
    it on each namespaced object that has none)."""
    from kaffinity.k8s.model import CLUSTER_SCOPED
    from kaffinity.load.source import PosDict

    for item in rendered.documents:
        metadata = item.data.get("metadata") if isinstance(item.data, dict) else None
        if (
            not isinstance(metadata, dict)
            or item.data.get("kind") in CLUSTER_SCOPED
            or metadata.get("namespace")
        ):
            continue
        metadata["namespace"] = namespace
        if isinstance(metadata, PosDict) and len(metadata.pos) == len(metadata) - 1:
            metadata.pos.append(metadata.pos[-1] if len(metadata.pos) else 0)


def _within(path: str, root: str) -> bool:
    from kaffinity.repo.sandbox import inside

    return inside(path, (root,))


def _without_hooks(rendered: Any, spec: Mapping[str, Any]) -> Any:
    """What helm-controller leaves in the cluster of the chart's hooks: test hooks
    (``helm.sh/hook: test``) only run when ``spec.test.enable`` asks, as ``helm test`` after the
    release, never on install (helm-controller internal/action/test.go); ``install.disableHooks``
    (and ``upgrade.disableHooks``) install without any hook (Helm's ``--no-hooks``)."""
    from kaffinity.load.parse import SourceFile

    disabled = _mapping(spec.get("install")).get("disableHooks") is True

    def dropped(item: Document) -> bool:
        annotations = _metadata(item.data).get("annotations")
        hook = annotations.get("helm.sh/hook") if isinstance(annotations, dict) else None
        if not isinstance(hook, str):
            return False
        return disabled or any(kind.strip().startswith("test") for kind in hook.split(","))

    if not any(dropped(item) for item in rendered.documents):
        return rendered
    files = tuple(
        SourceFile(file.name, file.text, tuple(d for d in file.documents if not dropped(d)), file.problems)
        for file in rendered.files
    )
    return replace(rendered, files=files)


def _post_renderers(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The kustomize fields of ``postRenderers[].kustomize`` (helm-controller
    internal/postrender/kustomize.go: patches, images; v2beta1's patchesStrategicMerge and
    patchesJson6902), all renderers in order."""
    patches: list[Any] = []
    images: list[Any] = []
    for renderer in spec.get("postRenderers") or ():
        kustomize = _mapping(_mapping(renderer).get("kustomize"))
        patches.extend(_patches(kustomize))
        images.extend(image for image in kustomize.get("images") or () if isinstance(image, dict))
    fields: dict[str, Any] = {}
    if patches:
        fields["patches"] = patches
    if images:
        fields["images"] = images
    return fields


def _post_render(
    doc: Document, rendered: Any, fields: Mapping[str, Any], index: _Index, timeout: float
) -> Any:
    """The chart's output run through kustomize with the post-renderer's patches, as
    helm-controller does; each object keeps its template's positions (aligned with what the
    patch changed)."""
    from kaffinity.load.parse import SourceFile
    from kaffinity.repo.kustomize.build import render_kustomization
    from kaffinity.repo.origins import repoint

    originals = [item for file in rendered.files for item in file.documents]
    with tempfile.TemporaryDirectory(prefix="kaffinity-postrender-") as scratch:
        real = os.path.realpath(scratch)
        with open(os.path.join(real, "rendered.yaml"), "w", encoding="utf-8") as handle:
            handle.write("\n---\n".join(json.dumps(_plain(item.data)) for item in originals))
        with open(os.path.join(real, "kustomization.yaml"), "w", encoding="utf-8") as handle:
            json.dump({"resources": ["rendered.yaml"], **fields}, handle)
        sandbox = replace(index.context.sandbox, roots=(real,))
        patched = render_kustomization(real, index.context.limits, timeout=timeout, sandbox=sandbox)
    if not patched.ok:
        problem = patched.problems[0][1]
        return _failure(doc, f"postRenderers: {problem.message}", index)
    by_key = {_key(item.data): item for item in originals}
    texts = {file.name: file.text for file in rendered.files}
    mapped: dict[str, list[Document]] = {}
    for item in patched.documents:
        original = by_key.get(_key(item.data))
        if original is None:  # a patch renamed it: kept at the release
            mapped.setdefault(doc.file, []).append(
                replace(item, file=doc.file, root=item.data, span=doc.span)
            )
            continue
        mapped.setdefault(original.file, []).append(repoint(item, original))
    if doc.file in mapped and doc.file not in texts:
        from kaffinity.load.read import read_text

        texts[doc.file] = read_text(doc.file, index.context.limits)[1]
    files = tuple(SourceFile(name, texts.get(name, ""), tuple(items), ()) for name, items in mapped.items())
    return replace(rendered, files=files)


def _key(data: Any) -> tuple[str, str, str]:
    return (str(data.get("kind")), str(_metadata(data).get("namespace") or ""), _object_name(data))


# --- a HelmRelease a Kustomization deploys ------------------------------------------------------


def substituted_release(
    doc: Document, variables: Mapping[str, str], sealed: frozenset[str] = frozenset()
) -> Document:
    """``doc`` with a Kustomization's postBuild variables substituted, as the object reaches the
    cluster: in its YAML text, as kustomize-controller substitutes (``replicaCount: ${N}``
    becomes a number). Positions are lost where the text changed: the object keeps its span."""
    from kaffinity.load.parse import parse_data

    text = _yaml_text(_plain(doc.data))
    if "${" not in text:
        return doc
    try:
        data, problem = parse_data(envsubst(text, variables, sealed=sealed))
    except SubstitutionError:
        return doc
    if problem is not None or not isinstance(data, dict):
        return doc
    return replace(doc, data=data, root=data, prefix=())


def _yaml_text(data: Any) -> str:
    import io

    from ruamel.yaml import YAML

    stream = io.StringIO()
    writer = YAML(typ="safe", pure=True)
    writer.default_flow_style = False
    writer.width = 1 << 20
    writer.dump(data, stream)
    return stream.getvalue()
