"""Which files are Kubernetes manifests: everything else YAML in a repository is skipped quietly.

A repository holds YAML for many tools (mkdocs, Docker Compose, GitHub workflows, Ansible,
OpenAPI specs, Helm values); none of it may fail a run. The rule, applied by
:func:`kaffinity.load.read.read` to every file walked or named (pre-commit names files explicitly):

1. **By name, without reading** (:func:`skip_reason_for_name`): a short list of files whose name
   their tool reserves: ``mkdocs.yml``, Docker Compose files, ``Chart.yaml`` and a chart's
   ``values*.yaml``, kustomizations (read as deployment units, never as objects:
   :func:`is_kustomization`), GitHub workflows, ``.pre-commit-config.yaml``, ``.gitlab-ci.yml``,
   ``package.json``, ``package-lock.json``, ``tsconfig.json``.
2. **By content, the real rule**: a file is a manifest when at least one of its documents is a
   Kubernetes object (a mapping with a string ``apiVersion`` and ``kind``, or the items of a
   ``List``). A file that parses with none is skipped.
3. **A file that does not parse** (or cannot be decoded) is a ``parse-error`` only when it is
   clearly meant as a manifest (:func:`looks_like_manifest`: ``apiVersion:`` and ``kind:`` keys at
   the start of a line, or JSON ``"apiVersion": "..."`` and ``"kind": "..."``); otherwise it is
   skipped. So ``mkdocs.yml`` with mkdocs-material's ``!!python/name:`` tags, a compose file with a
   tab or a duplicate key, an Ansible playbook that fails to parse: skipped. A manifest with a
   duplicate key, a tab or a Python tag stays a ``parse-error``.

What is always reported, whatever the content: a file that cannot be read (missing, permission
denied, a symlink loop), a file past the ``file-size`` limit (kaffinity refuses to read it, so it
cannot tell what it is), and anything wrong with stdin (piped to kaffinity on purpose). A file
skipped keeps its reason (:attr:`kaffinity.load.parse.SourceFile.skipped`); reports count them.

kube-linter does the same in effect: objects that do not decode are "invalid objects", which do
not fail a run unless ``--fail-on-invalid-resource`` is given (stackrox/kube-linter,
pkg/lintcontext/parse_yaml.go ``loadObjectFromYAMLReader``, pkg/command/lint/command.go).
"""

from __future__ import annotations

import os
import re

#: The names kustomize reads in a folder (sigs.k8s.io/kustomize/api/konfig
#: ``RecognizedKustomizationFileNames``).
KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def find_kustomization(folder: str) -> str | None:
    """The kustomization file of ``folder`` (the first of the names kustomize accepts), or None."""
    for name in KUSTOMIZATION_NAMES:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return os.path.normpath(path)
    return None


_BY_NAME = {
    "mkdocs.yml": "mkdocs configuration",
    "mkdocs.yaml": "mkdocs configuration",
    "Chart.yaml": "Helm chart metadata",
    ".pre-commit-config.yaml": "pre-commit configuration",
    ".pre-commit-hooks.yaml": "pre-commit hooks",
    ".gitlab-ci.yml": "GitLab CI configuration",
    "package.json": "npm package",
    "package-lock.json": "npm package",
    "tsconfig.json": "TypeScript configuration",
}
# Compose file names (compose-spec: compose.yaml, compose.yml, docker-compose.yaml,
# docker-compose.yml, and the override files next to them).
_COMPOSE = re.compile(r"(?:docker-)?compose(?:[.-][^/]*)?\.ya?ml\Z")
_VALUES = re.compile(r"values[^/]*\.ya?ml\Z")
# kuttl test steps (kuttl.dev docs, "Asserts and Errors"): NN-assert.yaml and NN-errors.yaml hold
# the state a test expects to find (or not) in the cluster, partial objects that are never applied.
_KUTTL_ASSERT = re.compile(r"\d+-(?:assert|errors)(?:-[^/]*)?\.ya?ml\Z")


def _top_level_key(key: str, other: str) -> re.Pattern[str]:
    """``key`` as a top-level key with a scalar value: in YAML block style at the start of a
    line (``apiVersion: v1``, the key possibly quoted); in JSON at most four spaces in (``jq``
    indents by two, ``kubectl -o json`` by four; keys nested deeper, such as an Azure template's
    resources, do not count), possibly after the opening brace and the ``other`` key."""
    # A scalar, or a template action (a chart template's `apiVersion: {{ template "x" . }}`).
    scalar = r"(?:[^\s#{\[]|\{\{)"
    yaml = rf"^(?:{key}|'{key}')[ \t]*:[ \t]*{scalar}"
    json = rf'^[ \t]{{0,4}}(?:\{{[ \t]*)?(?:"{other}"\s*:\s*"[^"\n]*"\s*,\s*)?"{key}"\s*:\s*{scalar}'
    return re.compile(f"{yaml}|{json}", re.M)


_API_VERSION = _top_level_key("apiVersion", "kind")
_KIND = _top_level_key("kind", "apiVersion")


def is_kustomization(path: str) -> bool:
    """Whether ``path`` names a kustomization file (``kustomization.yaml`` and its variants)."""
    return os.path.basename(path) in KUSTOMIZATION_NAMES


def skip_reason_for_name(path: str) -> str | None:
    """Why a file is no manifest, from its name alone; None when only its content can tell."""
    base = os.path.basename(path)
    if base in KUSTOMIZATION_NAMES:
        return "kustomization"
    reason = _BY_NAME.get(base)
    if reason is not None:
        return reason
    if _COMPOSE.match(base):
        return "Docker Compose file"
    if _KUTTL_ASSERT.match(base):
        return "kuttl test assertion"
    parts = os.path.normpath(path).replace(os.sep, "/").split("/")
    if len(parts) >= 3 and parts[-3:-1] == [".github", "workflows"]:
        return "GitHub workflow"
    if _VALUES.match(base) and os.path.isfile(os.path.join(os.path.dirname(path), "Chart.yaml")):
        return "Helm chart values"
    return None


def looks_like_manifest(text: str) -> bool:
    """Whether ``text`` is clearly meant as a Kubernetes manifest, even if it does not parse:
    it has top-level ``apiVersion`` and ``kind`` keys with values (YAML keys at the start of a
    line, JSON keys near it). A cheap scan of the text, for files whose parse failed.

    >>> looks_like_manifest("apiVersion: v1\\nkind: Pod\\nmetadata: {name: [\\n")
    True
    >>> looks_like_manifest('{\\n  "apiVersion": "v1",\\n  "kind": "Pod",\\n')
    True
    >>> looks_like_manifest("apiVersion: v2\\nname: chart\\n")  # Chart.yaml: no kind
    False
    >>> looks_like_manifest("- k8s:\\n    definition:\\n      apiVersion: v1\\n      kind: Pod\\n")
    False
    """
    return _API_VERSION.search(text) is not None and _KIND.search(text) is not None
