"""ApplicationSets (argo-cd applicationset/generators): the ``list``, ``git`` (``directories`` and
``files``, when its ``repoURL`` is this repository), ``matrix`` and ``merge`` generators evaluated
and the template rendered with each parameter set (:mod:`kaffinity.repo.gitops.argo.template`).
Other generators (clusters, scmProvider, pullRequest, clusterDecisionResource, plugin) need a
cluster or an API: :class:`Unevaluated` says so."""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from collections.abc import Iterator, Mapping
from typing import Any

from kaffinity.load.parse import Limits
from kaffinity.repo.gitops.argo.readers import (
    as_list,
    as_mapping,
    deep_merge,
    flatten,
    plain,
    read_confined,
    scalar_text,
)
from kaffinity.repo.gitops.releases import this_repository

#: Parameter sets one ApplicationSet may generated_applications.
MAX_GENERATED = 500


_UNEVALUATED_GENERATORS = ("clusters", "scmProvider", "pullRequest", "clusterDecisionResource", "plugin")


# --- ApplicationSets -----------------------------------------------------------------------------


class Unevaluated(Exception):
    """A generator or template kaffinity cannot evaluate from the repository alone."""


def generated_applications(spec: Mapping[str, Any], root: str, limits: Limits) -> Iterator[Mapping[str, Any]]:
    """The Applications an ApplicationSet generates (applicationset/controllers
    ``generateApplications``: each generator's parameter sets, the template rendered with each)."""
    from kaffinity.repo.gitops.argo.template import TemplateError, fast_render, go_render, render_value

    template = spec.get("template")
    if not isinstance(template, Mapping):
        raise Unevaluated("it has no template")
    go = bool(spec.get("goTemplate"))
    missing_error = any(
        "missingkey=error" in str(option) for option in as_list(spec.get("goTemplateOptions"))
    )
    generators = spec.get("generators")
    if not isinstance(generators, list) or not generators:
        raise Unevaluated("it has no generators")
    if spec.get("templatePatch"):
        raise Unevaluated("its templatePatch is not evaluated by kaffinity")
    count = 0
    for generator in generators:
        if not isinstance(generator, Mapping):
            continue
        local_template = generator.get("template") if isinstance(generator.get("template"), Mapping) else None
        effective = deep_merge(plain(template), plain(local_template)) if local_template else plain(template)
        for params in _params(generator, root, limits, go, depth=0):
            count += 1
            if count > MAX_GENERATED:
                raise Unevaluated(f"it generates more than {MAX_GENERATED} Applications")

            def render(text: str, params: Mapping[str, Any] = params) -> str:
                return (
                    go_render(text, params, missing_error=missing_error) if go else fast_render(text, params)
                )

            try:
                application = render_value(effective, render)
            except TemplateError as error:
                raise Unevaluated(f"its template: {error}") from None
            yield application


def _params(
    generator: Mapping[str, Any], root: str, limits: Limits, go: bool, depth: int
) -> list[dict[str, Any]]:
    if depth > 2:
        raise Unevaluated("its generators nest deeper than kaffinity evaluates")
    for key in _UNEVALUATED_GENERATORS:
        if key in generator:
            raise Unevaluated(
                f"its {key} generator needs a cluster or an API, which kaffinity does not query"
            )
    selector = generator.get("selector")
    if isinstance(generator.get("list"), Mapping):
        found = _list_params(generator["list"], go)
    elif isinstance(generator.get("git"), Mapping):
        found = _git_params(generator["git"], root, limits, go)
    elif isinstance(generator.get("matrix"), Mapping):
        found = _matrix_params(generator["matrix"], root, limits, go, depth)
    elif isinstance(generator.get("deep_merge"), Mapping):
        found = _merge_params(generator["deep_merge"], root, limits, go, depth)
    else:
        raise Unevaluated(
            f"its generator {', '.join(map(str, generator)) or '{}'} is not evaluated by kaffinity"
        )
    if isinstance(selector, Mapping) and selector:
        found = [params for params in found if _selected(selector, params)]
    return found


def _list_params(generator: Mapping[str, Any], go: bool) -> list[dict[str, Any]]:
    """applicationset/generators/list.go: each element; without Go templates, its ``values``
    flattened as ``values.<key>`` and other values as they are."""
    if generator.get("elementsYaml"):
        raise Unevaluated("its list generator's elementsYaml is not evaluated by kaffinity")
    found = []
    for element in as_list(generator.get("elements")):
        if not isinstance(element, Mapping):
            continue
        if go:
            found.append(plain(element))
            continue
        params: dict[str, Any] = {}
        for key, value in element.items():
            if key == "values" and isinstance(value, Mapping):
                params.update({f"values.{k}": scalar_text(v) for k, v in value.items()})
            else:
                params[str(key)] = value if isinstance(value, str) else scalar_text(value)
        found.append(params)
    return found


def _git_params(generator: Mapping[str, Any], root: str, limits: Limits, go: bool) -> list[dict[str, Any]]:
    """applicationset/generators/git.go: directories (``path.Match`` on each folder of the
    repository, ``exclude`` winning) and files (the doublestar glob; each file's object, or each
    item of its list, flattened unless Go templates)."""
    url = str(generator.get("repoURL") or "")
    if not url or this_repository(url, root) is None:
        raise Unevaluated(f"its git generator reads {url or 'a repository'}, which is not this checkout")
    prefix = str(generator.get("pathParamPrefix") or "")
    values = as_mapping(generator.get("values"))
    found: list[dict[str, Any]] = []
    if generator.get("directories"):
        items = [item for item in generator["directories"] if isinstance(item, Mapping)]
        for folder in _all_folders(root):
            included = any(
                _path_match(str(item.get("path", "")), folder) and not item.get("exclude") for item in items
            )
            excluded = any(
                _path_match(str(item.get("path", "")), folder) and item.get("exclude") for item in items
            )
            if included and not excluded:
                found.append(_path_params(folder, None, prefix, go))
    elif generator.get("files"):
        from kaffinity.load.parse import parse_data

        items = [item for item in generator["files"] if isinstance(item, Mapping)]
        files = sorted(
            {
                path
                for path in _all_files(root)
                if any(
                    _doublestar(str(item.get("path", "")), path) and not item.get("exclude") for item in items
                )
                and not any(
                    _doublestar(str(item.get("path", "")), path) and item.get("exclude") for item in items
                )
            }
        )
        for path in files:
            text = read_confined(os.path.join(root, path), root, limits)
            data, problem = parse_data(text or "")
            if problem is not None or data is None:
                raise Unevaluated(f"its git files generator cannot read {path}")
            objects = data if isinstance(data, list) else [data]
            for obj in objects:
                if not isinstance(obj, Mapping):
                    continue
                params = plain(obj) if go else {k: scalar_text(v) for k, v in flatten(plain(obj)).items()}
                params.update(_path_params(posixpath.dirname(path), path, prefix, go))
                found.append(params)
    else:
        raise Unevaluated("its git generator names neither directories nor files")
    if values:
        from kaffinity.repo.gitops.argo.template import fast_render, go_render

        for params in found:
            rendered = {
                str(key): (go_render(str(value), params) if go else fast_render(str(value), params))
                for key, value in values.items()
            }
            if go:
                params["values"] = rendered
            else:
                params.update({f"values.{key}": value for key, value in rendered.items()})
    return found


def _path_params(folder: str, file: str | None, prefix: str, go: bool) -> dict[str, Any]:
    from kaffinity.repo.gitops.argo.template import sanitize_name

    base = posixpath.basename(folder)
    if go:
        value: dict[str, Any] = {
            "path": folder,
            "basename": base,
            "basenameNormalized": sanitize_name(base),
            "segments": folder.split("/"),
        }
        if file is not None:
            value["filename"] = posixpath.basename(file)
            value["filenameNormalized"] = sanitize_name(posixpath.basename(file))
        if prefix:
            return {prefix: {"path": value}}
        return {"path": value}
    name = f"{prefix}.path" if prefix else "path"
    params = {name: folder, f"{name}.basename": base, f"{name}.basenameNormalized": sanitize_name(base)}
    if file is not None:
        params[f"{name}.filename"] = posixpath.basename(file)
        params[f"{name}.filenameNormalized"] = sanitize_name(posixpath.basename(file))
    for index, segment in enumerate(folder.split("/")):
        if segment:
            params[f"{name}[{index}]"] = segment
    return params


def _matrix_params(
    generator: Mapping[str, Any], root: str, limits: Limits, go: bool, depth: int
) -> list[dict[str, Any]]:
    """applicationset/generators/matrix.go: two generators; the second rendered with each
    parameter set of the first, the sets merged."""
    from kaffinity.repo.gitops.argo.template import fast_render, go_render, render_value

    children = [child for child in as_list(generator.get("generators")) if isinstance(child, Mapping)]
    if len(children) != 2:
        raise Unevaluated("its matrix generator does not have two generators")
    found = []
    for first in _params(children[0], root, limits, go, depth + 1):

        def render(text: str, params: Mapping[str, Any] = first) -> str:
            return go_render(text, params) if go else fast_render(text, params)

        second = render_value(plain(children[1]), render)
        for other in _params(second, root, limits, go, depth + 1):
            found.append(deep_merge(first, other) if go else {**first, **other})
            if len(found) > MAX_GENERATED:
                raise Unevaluated(f"it generates more than {MAX_GENERATED} Applications")
    return found


def _merge_params(
    generator: Mapping[str, Any], root: str, limits: Limits, go: bool, depth: int
) -> list[dict[str, Any]]:
    """applicationset/generators/deep_merge.go: the first generator's sets, each overridden by the
    sets of the others that agree on every ``mergeKeys`` value."""
    keys = [str(key) for key in as_list(generator.get("mergeKeys"))]
    children = [child for child in as_list(generator.get("generators")) if isinstance(child, Mapping)]
    if not keys or not children:
        raise Unevaluated("its deep_merge generator has no mergeKeys or generators")
    base = _params(children[0], root, limits, go, depth + 1)
    for child in children[1:]:
        others = _params(child, root, limits, go, depth + 1)
        for index, params in enumerate(base):
            merged = params
            for other in others:
                if all(_lookup(params, key) == _lookup(other, key) for key in keys):
                    merged = deep_merge(merged, other) if go else {**merged, **other}
            base[index] = merged
    return base


def _lookup(params: Mapping[str, Any], key: str) -> Any:
    if key in params:
        return params[key]
    value: Any = params
    for part in key.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _selected(selector: Mapping[str, Any], params: Mapping[str, Any]) -> bool:
    """A generator's label ``selector`` over its parameter sets (matchLabels; matchExpressions
    In/NotIn/Exists/DoesNotExist)."""
    for key, value in as_mapping(selector.get("matchLabels")).items():
        if str(_lookup(params, str(key))) != str(value):
            return False
    for expression in as_list(selector.get("matchExpressions")):
        if not isinstance(expression, Mapping):
            return False
        key, operator = str(expression.get("key")), str(expression.get("operator"))
        actual = _lookup(params, key)
        values = [str(value) for value in as_list(expression.get("values"))]
        if operator == "In" and str(actual) not in values:
            return False
        if operator == "NotIn" and actual is not None and str(actual) in values:
            return False
        if operator == "Exists" and actual is None:
            return False
        if operator == "DoesNotExist" and actual is not None:
            return False
    return True


#: The walks of a checkout in one call of :func:`releases` (a matrix evaluates its git
#: generator once per parameter set of the other).
WALKS: dict[tuple[str, str], list[str]] = {}


def _all_folders(root: str) -> list[str]:
    """Every folder of the checkout (relative, ``/``-separated), hidden ones left out, as the
    repo-server's ``GetGitDirectories`` lists them."""
    if ("folders", root) in WALKS:
        return WALKS["folders", root]
    found: list[str] = WALKS.setdefault(("folders", root), [])
    for current, folders, _ in os.walk(root):
        folders[:] = sorted(
            name
            for name in folders
            if not name.startswith(".") and not os.path.islink(os.path.join(current, name))
        )
        for name in folders:
            found.append(os.path.relpath(os.path.join(current, name), root).replace(os.sep, "/"))
    return found


def _all_files(root: str) -> list[str]:
    if ("files", root) in WALKS:
        return WALKS["files", root]
    found: list[str] = WALKS.setdefault(("files", root), [])
    for current, folders, names in os.walk(root):
        folders[:] = sorted(
            name
            for name in folders
            if not name.startswith(".") and not os.path.islink(os.path.join(current, name))
        )
        found.extend(
            os.path.relpath(os.path.join(current, name), root).replace(os.sep, "/") for name in sorted(names)
        )
    return found


def _path_match(pattern: str, path: str) -> bool:
    """Go's ``path.Match``: ``*``, ``?`` and ``[...]`` within one segment."""
    parts, names = pattern.split("/"), path.split("/")
    return len(parts) == len(names) and all(
        fnmatch.fnmatchcase(name, part) for part, name in zip(parts, names, strict=True)
    )


def _doublestar(pattern: str, path: str) -> bool:
    """bmatcuk/doublestar ``Match`` (git files generator): ``**`` spans folders."""
    regex = ""
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            regex += "(?:[^/]*/)*"
            index += 3
        elif pattern.startswith("**", index):
            regex += ".*"
            index += 2
        elif pattern[index] == "*":
            regex += "[^/]*"
            index += 1
        elif pattern[index] == "?":
            regex += "[^/]"
            index += 1
        else:
            regex += re.escape(pattern[index])
            index += 1
    return re.fullmatch(regex, path) is not None
