"""Small readers the Argo CD modules share: a spec's values read leniently (wrong types read as
absent), paths kept inside the checkout, the release's default namespace."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from kaffinity.load.parse import Limits
from kaffinity.load.source import Document
from kaffinity.repo.rendered import Rendered
from kaffinity.repo.sandbox import Sandbox

# --- small helpers -------------------------------------------------------------------------------


def checkout_root(doc: Document, sandbox: Sandbox) -> str:
    from kaffinity.repo.sandbox import repository_root

    if sandbox.roots:
        real = os.path.realpath(doc.file)
        for root in sandbox.roots:
            if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
                return root
        return sandbox.roots[0]
    return repository_root(doc.file)


def default_namespace(outcome: Rendered, namespace: str) -> None:
    """Argo CD applies each namespaced object that names no namespace in
    ``spec.destination.namespace`` (argo-cd controller/sync.go hands it to gitops-engine's
    ``sync.NewSyncContext`` as the namespace of such objects): so are the objects read."""
    from kaffinity.k8s.model.kinds import CLUSTER_SCOPED

    for doc in outcome.documents:
        data = doc.data
        if not isinstance(data, dict) or data.get("kind") in CLUSTER_SCOPED:
            continue
        metadata = data.get("metadata")
        if isinstance(metadata, dict) and not metadata.get("namespace"):
            metadata["namespace"] = namespace


def shown_path(root: str, like: str) -> str:
    """``root`` relative to the working folder when ``like`` (a document's file) is relative
    and ``root`` is at or below the working folder; else as it is."""
    if os.path.isabs(like):
        return root
    relative = os.path.relpath(root)
    return root if relative == ".." or relative.startswith(".." + os.sep) else relative


def inside_top(top: str, relative: str) -> str | None:
    """``top/relative`` when it stays inside ``top`` (kaffinity.repo.sandbox.joined_inside)."""
    from kaffinity.repo.sandbox import joined_inside

    return joined_inside(top, relative)


def read_confined(path: str | None, top: str, limits: Limits) -> str | None:
    from kaffinity.load.read import read_text

    if path is None or inside_top(top, os.path.relpath(path, top)) is None or not os.path.isfile(path):
        return None
    _, text, problem = read_text(path, limits)
    return None if problem is not None else text


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_strings(value: Any) -> list[str]:
    return (
        [str(item) for item in value if isinstance(item, (str, int, float))]
        if isinstance(value, list)
        else []
    )


def plain(value: Any) -> Any:
    """Kaffinity's positioned data as plain JSON data."""
    return json.loads(json.dumps(value, default=str))


def scalar_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def as_int(value: Any) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """jeremywohl/flatten DotStyle (git files generator): ``a.b.c``, lists as ``a.0``."""
    flat: dict[str, Any] = {}
    items: Sequence[tuple[Any, Any]]
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    else:
        return {prefix: value}
    for key, item in items:
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(item, (Mapping, list)) and item:
            flat.update(flatten(item, name))
        else:
            flat[name] = item
    return flat


def deep_merge(base: Any, override: Any) -> Any:
    """Helm's ``mergeMaps`` (pkg/cli/values): maps merged key by key, anything else replaced."""
    if not isinstance(base, dict) or not isinstance(override, dict):
        return override
    merged = dict(base)
    for key, value in override.items():
        merged[key] = deep_merge(merged[key], value) if isinstance(merged.get(key), dict) else value
    return merged


def image_entry(entry: str) -> dict[str, str]:
    """``kustomize edit set image`` syntax (Argo's ``images``): ``name=newName:tag``,
    ``name:tag``, ``name@digest``, ``name=newName@digest``."""
    name, _, new = entry.partition("=")
    image: dict[str, str] = {}
    target = new or name
    digest = ""
    if "@" in target:
        target, _, digest = target.partition("@")
    tag = ""
    slash = target.rfind("/")
    colon = target.rfind(":")
    if colon > slash:
        target, tag = target[:colon], target[colon + 1 :]
    if new:
        image["name"] = name.partition(":")[0].partition("@")[0]
        image["newName"] = target
    else:
        image["name"] = target
    if tag:
        image["newTag"] = tag
    if digest:
        image["digest"] = digest
    return image
