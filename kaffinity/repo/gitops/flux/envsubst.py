"""postBuild substitution as kustomize-controller runs it: ``${VAR}`` forms as drone/envsubst parses
them (fluxcd/pkg kustomize_varsub.go, ``SubstituteVariables``), the variables of a Kustomization
(``postBuild.substitute``, then ``substituteFrom`` ConfigMaps and Secrets), and a HelmRelease a
Kustomization deploys read with them substituted."""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from kaffinity.load.source import Document
from kaffinity.repo.gitops.flux.index import (
    SUBSTITUTE_KEY,
    VARIABLE_NAME,
    Index,
    as_mapping,
    namespace_of,
    object_data,
    spec_of,
)
from kaffinity.repo.gitops.flux.values import plain
from kaffinity.repo.gitops.releases import NotRendered

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
class Variables:
    """What a Kustomization's postBuild substitutes."""

    values: Mapping[str, str]
    sealed: frozenset[str]
    #: spec.postBuild is set: kustomize-controller substitutes (when there is a variable).
    enabled: bool


def post_build(doc: Document, index: Index) -> Variables | NotRendered:
    """The variables of a Kustomization's postBuild: ``substituteFrom`` in order (ConfigMaps and
    Secrets of its namespace; ``optional`` ones may be missing), then ``substitute`` over them
    (kustomize_varsub.go ``loadVars``, ``SubstituteVariables``); newlines removed from values."""
    post = spec_of(doc.data).get("postBuild")
    if not isinstance(post, dict):
        return Variables({}, frozenset(), enabled=False)
    namespace = namespace_of(doc.data)
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
        data = object_data(found)
        values.update({key: value.replace("\n", "") for key, value in data.values.items()})
        sealed.update(data.sealed)
    for key, value in as_mapping(post.get("substitute")).items():
        values[str(key)] = str(value).replace("\n", "") if not isinstance(value, bool) else json.dumps(value)
    for key in (*values, *sealed):
        if not VARIABLE_NAME.match(key):
            return NotRendered(
                f"postBuild variable {key!r} is not a valid name (^[_[:alpha:]][_[:alpha:][:digit:]]*$)"
            )
    return Variables(values, frozenset(sealed - set(values)), enabled=True)


def _substituted(text: str, variables: Variables) -> str:
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


def as_built(text: str, variables: Variables, index: Index) -> str:
    """The build's output as kustomize-controller applies it: substituted (postBuild), and, when
    it holds ``{{``, each object written as JSON: a HelmRelease's values may hold Helm actions
    for the chart's own ``tpl`` (``hostnames: ["{{ .Release.Name }}.example.com"]``, as
    bjw-s app-template reads them), which kaffinity's loader would otherwise take for an
    unrendered template and drop the whole output."""
    from kaffinity.repo.kustomize.mapping import raw_documents

    text = _substituted(text, variables)
    if "{{" not in text:
        return text
    documents = raw_documents(text, index.inputs.limits)
    if not documents:
        return text
    return "\n---\n".join(json.dumps(plain(data)) for data in documents if data is not None) + "\n"


# --- a HelmRelease a Kustomization deploys ------------------------------------------------------


def substituted_release(
    doc: Document, variables: Mapping[str, str], sealed: frozenset[str] = frozenset()
) -> Document:
    """``doc`` with a Kustomization's postBuild variables substituted, as the object reaches the
    cluster: in its YAML text, as kustomize-controller substitutes (``replicaCount: ${N}``
    becomes a number). Positions are lost where the text changed: the object keeps its span."""
    from kaffinity.load.parse import parse_data

    text = _yaml_text(plain(doc.data))
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
