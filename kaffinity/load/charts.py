"""Files that are other tools' templates, classified by where they are (and, failing that, by
what they hold): a Helm chart's ``templates/``, an Ansible role's ``templates/``, Jinja
(``*.j2``), cookiecutter and envsubst files. None of them is a manifest as written, so none is
parsed as one, and none is ever a ``parse-error``.

**Helm charts**, as Helm reads a chart folder (helm.sh/helm/v3):

- a chart is a folder holding ``Chart.yaml`` (pkg/chart/loader ``LoadDir``/``LoadFiles``);
- every file under its ``templates/`` is a template, whatever its name or depth
  (``LoadFiles``: ``strings.HasPrefix(f.Name, "templates/")``): ``_helpers.tpl`` (partials,
  pkg/engine renders but never outputs files whose name starts with ``_``), ``NOTES.txt``
  (pkg/action keeps it out of the manifests), ``templates/tests/`` (test hooks);
- ``crds/`` files are installed as they are, never templated (pkg/chart ``Chart.CRDObjects``):
  plain YAML, linted as manifests;
- files the chart's ``.helmignore`` matches are not part of the chart (pkg/chart/loader
  ``LoadDir`` applies internal/ignore ``Rules``, plus ``AddDefaults``: ``templates/.?*``);
- ``charts/<sub>/`` holds subcharts, charts themselves (each with its ``Chart.yaml``).

A template comes back skipped (:data:`HELM_TEMPLATE`); the chart gets one ``helm-template``
finding at its ``Chart.yaml`` when it is not rendered (:func:`with_chart_notes`), never one per
template.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from dataclasses import replace

from kaffinity.load.parse import DEFAULT_LIMITS, Limits, LoadProblem, SourceFile
from kaffinity.load.source import Span

#: The skip reason of a file under a chart's ``templates/``.
HELM_TEMPLATE = "Helm chart template"
ANSIBLE_TEMPLATE = "Ansible role template"
JINJA_TEMPLATE = "Jinja template"
#: A file that parses only once its ``{{ }}``/``{% %}`` actions are taken out (Jinja, gomplate,
#: Go templates of other tools; Helm's own are found first: kaffinity.load.parse).
TEXT_TEMPLATE = "template ({{ }} or {% %} actions where YAML structure should be)"
COOKIECUTTER_TEMPLATE = "cookiecutter template"
ENVSUBST_TEMPLATE = "envsubst template"
CHART_FILE = "Helm chart file"

_JINJA_SUFFIXES = (".j2", ".jinja", ".jinja2")
# The standard folders of an Ansible role besides templates/ (docs.ansible.com, "Roles", Role
# directory structure: "You must include at least one of these directories in each role").
_ROLE_FOLDERS = ("tasks", "handlers", "defaults", "vars", "meta")
_COOKIECUTTER = re.compile(r"\{\{\s*cookiecutter\.")


def _regular(path: str) -> bool:
    """Whether ``path`` is a regular file and no symlink: the checkout is attacker input, so a
    chart's ``Chart.yaml`` or ``.helmignore`` linked elsewhere (or a FIFO, which would block) is
    never read here (docs/security.md)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _parts(path: str) -> list[str]:
    return os.path.normpath(path).replace(os.sep, "/").split("/")


def _join(parts: Sequence[str]) -> str:
    return "/".join(parts) or "."


def template_reason(path: str) -> str | None:
    """Why the file at ``path`` is another tool's template, from where it is alone; None when it
    is not one (or only its content can tell: :func:`content_reason`). A few ``stat`` calls, for
    paths under a folder named ``templates`` only."""
    parts = _parts(path)
    if _COOKIECUTTER.search(path):
        return COOKIECUTTER_TEMPLATE
    if parts[-1].endswith(_JINJA_SUFFIXES):
        return JINJA_TEMPLATE
    if "templates" not in parts[:-1]:
        return None
    for index in range(len(parts) - 2, -1, -1):  # the innermost folder named templates first
        if parts[index] != "templates":
            continue
        root = parts[:index]
        if os.path.isfile(os.path.join(_join(root), "Chart.yaml")):
            if _helmignored(_join(root), parts[index:]):
                return None  # not part of the chart: a file like any other
            return HELM_TEMPLATE
        if _is_role(root):
            return ANSIBLE_TEMPLATE
    return None


def _is_role(root: Sequence[str]) -> bool:
    """Whether ``root`` is an Ansible role: a folder of ``roles/``, or one with another of the
    standard role folders beside its ``templates/``."""
    if len(root) >= 2 and root[-2] == "roles":
        return True
    folder = _join(root)
    return any(os.path.isdir(os.path.join(folder, name)) for name in _ROLE_FOLDERS)


def chart_template_root(path: str) -> str | None:
    """The chart folder whose ``templates/`` holds ``path`` (as a chart is read, so not when its
    ``.helmignore`` leaves the file out), else None."""
    parts = _parts(path)
    for index in range(len(parts) - 2, -1, -1):
        if parts[index] == "templates" and os.path.isfile(os.path.join(_join(parts[:index]), "Chart.yaml")):
            return None if _helmignored(_join(parts[:index]), parts[index:]) else _join(parts[:index])
    return None


def content_reason(text: str, broken: bool) -> str | None:
    """Why ``text`` is another tool's template, from what it holds: cookiecutter's variables
    anywhere; ``${VAR}`` (envsubst, Flux's post-build substitution), or ``{{ }}``/``{% %}``
    actions (Jinja, other tools' Go templates) where YAML structure should be, only when the
    file does not parse (``broken``: a parse-error, not Helm's actions, which
    kaffinity.load.parse reports as ``helm-template``) and does once they are taken out. A
    manifest holding ``${VAR}`` or ``{{ }}`` inside a value parses, and is linted."""
    if "cookiecutter" in text and _COOKIECUTTER.search(text):
        return COOKIECUTTER_TEMPLATE
    if not broken:
        return None
    # A line holding only substitutions is structure (emptied); elsewhere each is a value.
    if "${" in text and _ENVSUBST.search(text) and _parses(_ENVSUBST.sub("x", _ENVSUBST_LINE.sub("", text))):
        return ENVSUBST_TEMPLATE
    if ("{%" in text or "{{" in text) and _parses(_without_jinja(text)):
        return TEXT_TEMPLATE
    return None


def _without_jinja(text: str) -> str:
    """``text`` with its Jinja lines (a statement, comment or expression alone on a line)
    emptied and its other expressions made a word: one pass with ``str.find``, linear whatever
    the text (a regular expression would go quadratic on many unclosed ``{{``)."""
    out: list[str] = []
    for line in text.split("\n"):
        stripped = line.strip()
        closing = _JINJA_PAIRS.get(stripped[:2])
        if closing is not None and stripped.find(closing, 2) == len(stripped) - 2:
            out.append("")
            continue
        out.append(_jinja_words(line))
    return "\n".join(out)


_JINJA_PAIRS = {"{{": "}}", "{%": "%}", "{#": "#}"}


def _jinja_words(line: str) -> str:
    parts: list[str] = []
    start = 0
    while True:
        found = [(index, key) for key in _JINJA_PAIRS if (index := line.find(key, start)) >= 0]
        if not found:
            break
        index, key = min(found)
        end = line.find(_JINJA_PAIRS[key], index + 2)
        if end < 0:
            break
        parts.append(line[start:index])
        parts.append("x")
        start = end + 2
    parts.append(line[start:])
    return "".join(parts)


# A default value stops at the next `$` or `{`: a `${` never closed on a long line must not make
# the search quadratic.
_VARIABLE = r"\$\{[A-Za-z_][A-Za-z0-9_]*(?:[:=+?-][^}\n${]*)?\}"
_ENVSUBST = re.compile(_VARIABLE)
_ENVSUBST_LINE = re.compile(rf"^[ \t]*(?:-[ \t]+)?(?:{_VARIABLE}[ \t]*)+$", re.M)


def _parses(text: str) -> bool:
    from kaffinity.load.parse import parse

    return not parse("", text).problems


# --- .helmignore ---------------------------------------------------------------------------


#: One element of a glob: ``*``, ``?``, a character class (negated, its characters and ranges),
#: or a literal character.
_Token = tuple[str, bool, tuple[tuple[str, str], ...]]
_STAR: _Token = ("*", False, ())
_ANY: _Token = ("?", False, ())


class _Rule:
    __slots__ = ("base", "must_dir", "negate", "segments")

    def __init__(self, negate: bool, must_dir: bool, segments: list[list[_Token]], base: bool) -> None:
        self.negate = negate
        self.must_dir = must_dir
        self.segments = segments
        self.base = base  # no slash in the rule: the base name is matched

    def matches(self, path: str) -> bool:
        names = [path.rsplit("/", 1)[-1]] if self.base else path.split("/")
        return len(names) == len(self.segments) and all(
            _match_segment(tokens, name) for tokens, name in zip(self.segments, names, strict=True)
        )


def _glob(pattern: str) -> list[list[_Token]] | None:
    """Go's ``filepath.Match`` pattern, one token list per ``/``-separated segment (``*``, ``?``
    and classes never match ``/``; ``[^...]`` negates; ``\\`` escapes), or None if Go would
    refuse it. Matched segment by segment without regular expressions: a hostile ``.helmignore``
    cannot make matching slow."""
    segments: list[list[_Token]] = [[]]
    index = 0
    while index < len(pattern):
        char = pattern[index]
        tokens = segments[-1]
        if char == "/":
            segments.append([])
        elif char == "*":
            if not tokens or tokens[-1] is not _STAR:
                tokens.append(_STAR)
        elif char == "?":
            tokens.append(_ANY)
        elif char == "\\":
            index += 1
            if index == len(pattern):
                return None
            tokens.append(("=", False, ((pattern[index], pattern[index]),)))
        elif char == "[":
            found = _class(pattern, index + 1)
            if found is None:
                return None
            token, index = found
            tokens.append(token)
        else:
            tokens.append(("=", False, ((char, char),)))
        index += 1
    return segments


def _class(pattern: str, index: int) -> tuple[_Token, int] | None:
    """The character class that starts at ``index`` (after its ``[``) and the index of its
    ``]``, or None when it is not closed."""
    negated = pattern[index : index + 1] == "^"
    index += negated
    ranges: list[tuple[str, str]] = []

    def character() -> str | None:
        nonlocal index
        if pattern[index] == "\\":
            index += 1
            if index == len(pattern):
                return None
        return pattern[index]

    while index < len(pattern) and (pattern[index] != "]" or not ranges):
        low = character()
        if low is None:
            return None
        high: str | None = low
        if pattern[index + 1 : index + 2] == "-" and pattern[index + 2 : index + 3] not in ("", "]"):
            index += 2
            high = character()
        if high is None:
            return None
        ranges.append((low, high))
        index += 1
    if index == len(pattern):
        return None
    return ("[", negated, tuple(ranges)), index


def _one(token: _Token, char: str) -> bool:
    kind, negated, ranges = token
    if kind == "?":
        return True
    inside = any(low <= char <= high for low, high in ranges)
    return inside != negated


def _match_segment(tokens: Sequence[_Token], name: str) -> bool:
    """Whether ``name`` (no ``/``) matches ``tokens``: the classic wildcard walk that goes back
    only to the last ``*``, linear in practice and never worse than length times length."""
    position = index = 0
    star, mark = -1, 0
    while position < len(name):
        if index < len(tokens) and tokens[index] is _STAR:
            star, mark = index, position
            index += 1
        elif index < len(tokens) and _one(tokens[index], name[position]):
            index += 1
            position += 1
        elif star >= 0:
            mark += 1
            position, index = mark, star + 1
        else:
            return False
    while index < len(tokens) and tokens[index] is _STAR:
        index += 1
    return index == len(tokens)


#: The rules of the charts read, by .helmignore path and what ``lstat`` says of it (a template
#: is classified one at a time: the file is read once per chart, and again when it changes).
_RULES: dict[str, tuple[tuple[int, int, int], list[_Rule]]] = {}


def _helmignore_rules(chart: str) -> list[_Rule]:
    path = os.path.join(chart, ".helmignore")
    try:
        info = os.lstat(path)
        stamp = (info.st_ino, info.st_size, info.st_mtime_ns)
    except OSError:
        stamp = (0, 0, 0)
    cached = _RULES.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    if len(_RULES) > 1000:
        _RULES.clear()
    rules = _read_helmignore(chart)
    _RULES[path] = (stamp, rules)
    return rules


def _read_helmignore(chart: str) -> list[_Rule]:
    """The rules of ``chart``'s ``.helmignore`` and Helm's default, in order: a transcription
    of helm.sh/helm/v3 internal/ignore ``Rules.parseRule`` (blank lines and ``#`` comments
    skipped, ``!`` negates, a trailing ``/`` matches folders only, a leading ``/`` or a ``/``
    inside matches the path from the chart's root, else the base name). A file with ``**`` in
    a rule makes Helm refuse the chart: then no rule is read here (rendering says why)."""
    lines: list[str] = []
    path = os.path.join(chart, ".helmignore")
    try:
        if _regular(path):
            with open(path, encoding="utf-8", errors="replace") as handle:
                lines = handle.read(1 << 20).splitlines()
    except OSError:
        pass
    rules: list[_Rule] = []
    for raw in [*lines, "templates/.?*"]:  # AddDefaults: dotfiles in templates/
        rule = raw.strip()
        if not rule or rule.startswith("#"):
            continue
        if "**" in rule:
            return []
        negate = rule.startswith("!")
        rule = rule[1:] if negate else rule
        must_dir = rule.endswith("/")
        rule = rule.removesuffix("/")
        base = "/" not in rule
        rule = rule.removeprefix("/")
        segments = _glob(rule)
        if segments is None:
            return []
        rules.append(_Rule(negate, must_dir, segments, base))
    return rules


def _ignores(rules: Sequence[_Rule], path: str, folder: bool) -> bool:
    """helm.sh/helm/v3 internal/ignore ``Rules.Ignore``, as Helm evaluates it: in order, the
    first match decides; a negated rule that does not match ignores the path."""
    for rule in rules:
        if rule.negate:
            if rule.must_dir and not folder:
                return True
            if not rule.matches(path):
                return True
            continue
        if rule.must_dir and not folder:
            continue
        if rule.matches(path):
            return True
    return False


def _helmignored(chart: str, relative: Sequence[str]) -> bool:
    """Whether the chart ``chart`` leaves out the file at ``relative`` (its path parts from the
    chart's root): ``LoadDir``'s walk skips a folder its rules ignore, and what is below it."""
    rules = _helmignore_rules(chart)
    if not rules:
        return False
    for end in range(1, len(relative)):
        if _ignores(rules, "/".join(relative[:end]), folder=True):
            return True
    return _ignores(rules, "/".join(relative), folder=False)


def chart_templates(chart: str) -> list[str]:
    """The templates of ``chart`` that make manifests, as Helm loads them (``.helmignore``
    applied): every file under ``templates/`` but partials (``_*``) and ``NOTES.txt``."""
    top = os.path.join(chart, "templates")
    rules = _helmignore_rules(chart)
    found: list[str] = []
    for root, dirs, files in os.walk(top):
        relative = os.path.relpath(root, chart).replace(os.sep, "/")
        dirs[:] = sorted(d for d in dirs if not _ignores(rules, f"{relative}/{d}", folder=True))
        for name in sorted(files):
            if name.startswith("_") or name == "NOTES.txt":
                continue
            if not _ignores(rules, f"{relative}/{name}", folder=False):
                found.append(os.path.join(root, name))
    return found


# --- one finding per chart -------------------------------------------------------------------


def _chart_text(path: str, limits: Limits) -> str:
    """The text of a ``Chart.yaml`` (for the report's line and comment suppressions), or ""
    when it cannot be read or is past the size limit (the finding is then at line 1)."""
    if not _regular(path):
        return ""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(limits.file_size + 1)
    except OSError:
        return ""
    if len(raw) > limits.file_size:
        return ""
    return raw.decode("utf-8", "replace").removeprefix("\ufeff")


_NAME = re.compile(r"^name[ \t]*:", re.M)


def is_library(chart: str, limits: Limits = DEFAULT_LIMITS) -> bool:
    """Whether ``chart``'s ``Chart.yaml`` says ``type: library``: partials other charts use, never
    installed (helm.sh/helm/v3 pkg/action/install.go: "library charts are not installable";
    ``helm template`` refuses them too), so never rendered as a unit of its own."""
    from kaffinity.load.parse import parse_data

    data, problem = parse_data(_chart_text(os.path.join(chart, "Chart.yaml"), limits))
    return problem is None and isinstance(data, dict) and data.get("type") == "library"


def top_chart(chart: str) -> str:
    """The chart ``chart`` is rendered with: itself, or the chart whose ``charts/`` holds it (an
    in-tree subchart is rendered only as a dependency of its parent, with the parent's values:
    helm.sh/helm/v3 pkg/chart/loader ``LoadFiles``, pkg/chartutil ``ProcessDependencies``)."""
    while True:
        folder = os.path.dirname(chart)
        if os.path.basename(folder) != "charts":
            return chart
        parent = os.path.dirname(folder) or "."
        if parent == chart or not os.path.isfile(os.path.join(parent, "Chart.yaml")):
            return chart
        chart = parent


def unit_templates(chart: str) -> list[str]:
    """The templates that make manifests of ``chart`` and of its in-tree subcharts (folders of
    its ``charts/`` with a ``Chart.yaml``, at any depth), rendered together."""
    found: list[str] = []
    pending = [chart]
    while pending:
        current = pending.pop()
        found.extend(chart_templates(current))
        folder = os.path.join(current, "charts")
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in reversed(names):
            sub = os.path.join(folder, name)
            if not os.path.islink(sub) and os.path.isfile(os.path.join(sub, "Chart.yaml")):
                pending.append(sub)
    return found


def chart_note(chart: str, limits: Limits = DEFAULT_LIMITS) -> SourceFile | None:
    """``chart``'s ``Chart.yaml`` carrying the chart's one ``helm-template`` problem (at its
    ``name:`` line, else line 1): its templates are not linted until the chart is rendered.
    None when the chart has no template that makes manifests."""
    count = len(unit_templates(chart))
    if not count:
        return None
    path = os.path.join(chart, "Chart.yaml") if chart != "." else "Chart.yaml"
    text = _chart_text(path, limits)
    match = _NAME.search(text)
    line = text.count("\n", 0, match.start()) + 1 if match is not None else 1
    templates = "template is" if count == 1 else "templates are"
    message = (
        f"chart not rendered: its {count} {templates} not linted (rendering needs helm or "
        "helm-python-sdk and is off with --no-render; where it failed, a finding here says why); "
        "or lint `helm template RELEASE CHART | kaffinity lint -`"
    )
    found = LoadProblem("helm-template", message, Span(line, 1))
    return SourceFile(path, text, (), (found,))


def with_chart_notes(files: Sequence[SourceFile], limits: Limits = DEFAULT_LIMITS) -> list[SourceFile]:
    """``files`` with one ``helm-template`` problem per chart read (its ``Chart.yaml``, or one of
    its templates, named or found in a folder), carried by the chart's ``Chart.yaml``
    (:func:`chart_note`): in place of that file when it was read, else added. An in-tree
    subchart is counted with its parent (:func:`top_chart`), as it is rendered."""
    charts: dict[str, None] = {}
    for file in files:
        if file.skipped == HELM_TEMPLATE:
            root = chart_template_root(file.name)
            if root is not None:
                charts[top_chart(os.path.normpath(root))] = None
        elif file.skipped is not None and os.path.basename(file.name) == "Chart.yaml":
            charts[top_chart(os.path.normpath(os.path.dirname(file.name) or "."))] = None
    if not charts:
        return list(files)
    notes = {chart: chart_note(chart, limits) for chart in charts}
    out: list[SourceFile] = []
    placed: set[str] = set()
    for file in files:
        if os.path.basename(file.name) == "Chart.yaml" and file.skipped is not None:
            chart = os.path.normpath(os.path.dirname(file.name) or ".")
            note = notes.get(chart)
            if note is not None and chart not in placed:
                placed.add(chart)
                out.append(replace(note, name=file.name))
                continue
        out.append(file)
    out.extend(note for chart, note in notes.items() if note is not None and chart not in placed)
    return out


def rendered_with(chart: str, rendered: set[str]) -> bool:
    """Whether ``chart`` (a folder) was rendered: itself, or a chart whose ``charts/`` holds it
    (Helm renders in-tree subcharts with their parent: pkg/chart/loader ``LoadFiles``).
    ``rendered``: absolute paths."""
    folder = os.path.abspath(chart)
    while True:
        if folder in rendered:
            return True
        parent = os.path.dirname(folder)
        if os.path.basename(parent) != "charts" or os.path.dirname(parent) == parent:
            return False
        folder = os.path.dirname(parent)


def named_template(file: SourceFile, name: str) -> SourceFile:
    """Stdin ``file`` as the template ``--stdin-filename`` names (skipped, as the file on disk
    would be), unless it is rendered output (``# Source:`` comments) or ``name`` is no template."""
    from kaffinity.load.parse import STDIN_NAME

    if file.name != STDIN_NAME or "# Source: " in file.text:
        return file
    reason = template_reason(name)
    return SourceFile(name, "", (), (), reason) if reason is not None else file


def charts_of_templates(files: Sequence[SourceFile]) -> set[str]:
    """The ``Chart.yaml`` of each chart whose templates are among ``files``: where their one
    finding goes (``--changed`` reports on it when a template changed)."""
    found: set[str] = set()
    for file in files:
        if file.skipped == HELM_TEMPLATE:
            root = chart_template_root(file.name)
            if root is not None:
                found.add(os.path.join(top_chart(os.path.normpath(root)), "Chart.yaml"))
    return found
