"""Unrendered Helm templates told from manifests: a file that fails to parse because of its
template actions (and parses without them) is a chart template, reported as ``helm-template``;
Go templates rendered into values (Prometheus rules) and objects that carry templates as content
(a Flux HelmRelease's values...) are not."""

from __future__ import annotations

import re
from typing import Any

from kaffinity.load.parse.reader import _documents, _parse_errors

# Actions that only a Helm chart's templates contain; Go templates also live, rendered, inside
# string values (Prometheus and Alertmanager rules: `{{ $labels.pod }}`), which must not count.
_HELM_ACTION = re.compile(
    r"\{\{-?\s*(?:\.Values\b|\.Release\b|\.Chart\b|\.Capabilities\b|\.Files\b|\$\.Values\b"
    r"|include\s|template\s|tpl\s|toYaml\s|if\s|else\b|end\b|range\s|with\s|define\s)"
)
_ACTION = re.compile(r"\{\{.*?\}\}", re.S)
_ITEM_ACTION = re.compile(r"^([ \t]*-[ \t]+)\{\{[^\n]*?\}\}[ \t]*$", re.M)
_ACTION_LINE = re.compile(r"^[ \t]*\{\{[^\n]*?\}\}[ \t]*$", re.M)


def _blank_comments(text: str) -> str:
    """``text`` with its Go template comments (``{{/* ... */}}``, ``{{- /* ... */ -}}``: "must
    start and end at the delimiters", text/template) reduced to their line breaks. One pass
    with ``str.find``: linear whatever the text."""
    out: list[str] = []
    emitted = search = 0
    while (start := text.find("/*", search)) >= 0:
        opening = text.rfind("{{", max(0, start - 4), start)
        if opening < 0 or text[opening + 2 : start] not in ("", "-", "- ", " "):
            search = start + 2
            continue
        end = text.find("*/", start + 2)
        if end < 0:
            break
        close = text.find("}}", end + 2, end + 6)
        if close < 0 or text[end + 2 : close] not in ("", "-", " -", " "):
            search = end + 2
            continue
        out.append(text[emitted:opening])
        out.append("\n" * text.count("\n", opening, close))
        emitted = search = close + 2
    out.append(text[emitted:])
    return "".join(out)


def _parses_without_actions(text: str) -> bool:
    """Whether ``text`` is valid YAML once its template actions are taken out.

    A chart template fails to parse because of its actions; rendered output that merely holds
    templates inside strings (and is broken elsewhere) still fails without them, and is then a
    plain parse error. Lines holding only an action are emptied; other actions become a word.
    """
    if _HELM_ACTION.search(text) is None:
        return False
    # Comments (`{{/* licence */}}` at the top, `{{- /* ... */}}` in the body) hold no value:
    # only their lines are kept. An action that is a whole list item (`- {{ toYaml $c | nindent
    # 8 | trim }}`, more keys of the item below it) stands for a mapping.
    stripped = _blank_comments(text)
    stripped = _ITEM_ACTION.sub(r"\1helm: helm", stripped)
    stripped = _ACTION_LINE.sub("", stripped)
    stripped = _ACTION.sub(lambda match: "helm" + "\n" * match.group().count("\n"), stripped)
    try:
        for _ in _documents(stripped):
            pass
    except _parse_errors():
        return False
    return True


#: API groups of objects whose values hold templates rendered later, as content: a Flux
#: HelmRelease's ``spec.values`` (charts pass them to ``tpl``, `{{ .Release.Name }}` in a URL),
#: an Argo CD Application's Helm values and an ApplicationSet's Go template, a k3s HelmChart's
#: ``valuesContent``. Such an object is a manifest, never an unrendered chart template.
_TEMPLATE_CARRIERS = ("helm.toolkit.fluxcd.io/", "argoproj.io/", "helm.cattle.io/")


def _carries_templates(data: Any) -> bool:
    api_version = data.get("apiVersion") if isinstance(data, dict) else None
    return isinstance(api_version, str) and api_version.startswith(_TEMPLATE_CARRIERS)
