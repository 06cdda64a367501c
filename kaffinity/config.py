"""``.kaffinity.yaml``: discovery upward from the working directory, validation, frozen Settings.

The file is validated against ``schemas/config.schema.json``; an unknown key, a wrong type or an
unknown rule name is an error naming it, at its line. Command-line flags override the file.

The file is part of the checkout, so it is input (issue 31, docs/configuration.md): the search
stops at the git work tree's top and skips another user's file; a limit may be lowered, not
raised (``--limit``, ``KAFFINITY_LIMITS`` raise one); every path stays inside the repository.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kaffinity.findings import Severity
from kaffinity.k8s.model import WorkloadKind
from kaffinity.load.display import quote_name
from kaffinity.load.parse import DEFAULT_LIMITS, Limits
from kaffinity.load.repository import within
from kaffinity.load.source import Document, Span, unpack
from kaffinity.repo.sandbox import DEFAULT_SANDBOX, Sandbox

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

CONFIG_NAMES = (".kaffinity.yaml", ".kaffinity.yml")
#: The Kubernetes minors kaffinity knows; the newest is the default target.
KUBE_VERSIONS = tuple(f"1.{minor}" for minor in range(27, 38))
DEFAULT_KUBE_VERSION = KUBE_VERSIONS[-1]


class ConfigError(Exception):
    """A problem with the configuration or with flags: one line each, exit code 2."""

    def __init__(self, messages: Sequence[str]) -> None:
        super().__init__("\n".join(messages))
        self.messages = tuple(messages)


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything that shapes a run, from the config file and the flags."""

    kube_version: str = DEFAULT_KUBE_VERSION
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    #: Honour the fields of proposals no release accepts (KEP-4328, pod selector Gt/Lt).
    proposals: bool = False
    select: tuple[str, ...] = ("all",)
    ignore: tuple[str, ...] = ()
    severity: Mapping[str, Severity] = field(default_factory=dict)
    fail_on: Severity | None = Severity.ERROR
    #: The lowest severity the report shows (``min-severity:``, ``--min-severity``).
    min_severity: Severity = Severity.INFO
    namespace: str = "default"
    exclude: tuple[str, ...] = ()
    cluster: str | None = None
    #: The input is complete (``--closed``): nothing outside it can satisfy a selector.
    closed: bool = False
    #: Run the offline scheduler when a cluster is declared (``--no-simulate`` turns it off).
    simulate: bool = True
    context: tuple[str, ...] = ()
    #: Policy files and folders (``--policy``, ``policies:``): kaffinity.io/v1alpha1 Policy objects.
    policies: tuple[str, ...] = ()
    base_dir: str = "."
    #: Plan the text edits of fixable findings (``kaffinity fix``); a lint only describes them.
    plan_fixes: bool = False
    #: Processes that parse files (``--jobs``); None: one per core.
    jobs: int | None = None
    limits: Limits = DEFAULT_LIMITS
    #: Deployment units (kaffinity.repo.units): "auto", "one", or (name, path prefixes) pairs.
    units: str | tuple[tuple[str, tuple[str, ...]], ...] = "auto"
    #: Build kustomize overlays, render Helm charts and GitOps releases before linting: on by
    #: default (issue 32); ``--no-render`` or ``render: false`` reads the files as written. Where
    #: no tool can render a unit, the unit is read as written and counted (a note, the summary).
    render: bool = True
    #: Values files per chart folder, for rendering.
    helm_values: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Custom workload kinds configured (``workloads``), read before kaffinity's own
    #: (:data:`kaffinity.k8s.model.CUSTOM_WORKLOADS`).
    workload_kinds: tuple[WorkloadKind, ...] = ()
    #: Leave out what git ignores when walking a folder in a git work tree (``--no-gitignore``).
    gitignore: bool = True
    #: Keep what the single-object stage found in each file for the next run (:mod:`kaffinity.cache`;
    #: ``cache: false``, ``--no-cache``).
    cache: bool = True
    #: The cache's folder (``cache-dir:``, relative to the config file; ``--cache-dir``;
    #: ``KAFFINITY_CACHE_DIR``); None: ``.kaffinity_cache`` beside the config file, else in the
    #: working directory.
    cache_dir: str | None = None
    #: What rendering may do (network, time, memory): the command line's and the environment's
    #: only (``--allow-network``, ``--render-*``; kaffinity.repo.sandbox), never the config's.
    sandbox: Sandbox = DEFAULT_SANDBOX
    #: The baseline file whose findings ``lint`` leaves out (``baseline:``, relative to the config
    #: file; ``--baseline``): kaffinity.report.baseline.
    baseline: str | None = None

    def overridden(self, **changes: Any) -> Settings:
        """These settings with the given (non-None) values replaced: flags over the file."""
        return replace(self, **{key: value for key, value in changes.items() if value is not None})


def find_config(start: str = ".", notes: list[str] | None = None) -> str | None:
    """The nearest ``.kaffinity.yaml`` in ``start`` or a folder above it, up to the root of the
    git work tree holding ``start`` (the first folder with a ``.git`` file or folder): a config
    in a shared folder above the repository (``/tmp``, a home folder, ``C:\\``) never applies to
    it. A config owned by another user is ignored, with a note in ``notes``: git refuses such a
    repository since CVE-2022-24765 (setup.c ``ensure_valid_ownership``). ``--config`` is used
    as given, found by no search."""
    folder = os.path.abspath(start)
    while True:
        for name in CONFIG_NAMES:
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate):
                problem = _untrusted(candidate)
                if problem is None:
                    return candidate
                if notes is not None:
                    notes.append(
                        f"{os.path.relpath(candidate)}: ignored: {problem} (pass --config to use it)"
                    )
                return None
        if os.path.lexists(os.path.join(folder, ".git")):  # a work tree's top: .git folder or file
            return None
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _untrusted(path: str) -> str | None:
    """Why a config found by the search may not be used, or None. As git's
    ``is_path_owned_by_current_uid`` (git-compat-util.h): the file must belong to the user
    running kaffinity; run as root, the user that ran sudo (``SUDO_UID``) is that user too.
    git judges a symlink by its own owner (lstat); here a symlink must lead to a file inside its
    repository, and that file's owner is judged. No owner check where the platform has no uids
    (Windows)."""
    real = os.path.realpath(path)
    root = repository_root(path)
    if not within(real, os.path.realpath(root)):
        return f"it links outside its repository ({quote_name(root)})"
    if not hasattr(os, "geteuid"):
        return None
    try:
        owner = os.stat(real).st_uid
    except OSError:
        return None  # read (and reported) as any unreadable config
    euid = os.geteuid()
    if owner == euid:
        return None
    sudo = os.environ.get("SUDO_UID", "")
    if euid == 0 and sudo.isdigit() and int(sudo) == owner:
        return None
    return f"owned by another user (uid {owner}, not {euid})"


def repository_root(config: str) -> str:
    """The folder a config's paths must stay in: the top of the git work tree holding the config
    file (the nearest folder upward with a ``.git`` entry, as git's discovery in setup.c looks
    for one; no git call), else the config's own folder."""
    from kaffinity.load.repository import work_tree

    start = os.path.dirname(os.path.abspath(config))
    return work_tree(start) or start


def load_settings(
    path: str | None,
    rule_names: Sequence[str],
    categories: Sequence[str],
    policy_names: Callable[[tuple[str, ...]], Collection[str]] | None = None,
) -> Settings:
    """Read and validate a config file; no file gives the defaults. ``policy_names``: the names
    of the policies in the given files (``policies:``, resolved), which ``select``, ``ignore``
    and ``severity`` may name too; the caller knows how policies are read."""
    if path is None:
        return Settings()
    from kaffinity.load.parse import parse_data
    from kaffinity.load.read import read_text
    from kaffinity.load.source import PosDict

    display = os.path.relpath(path)
    _, text, problem = read_text(path)
    data: Any = None
    if problem is None:
        data, problem = parse_data(text, strict=True)  # a key twice: which one was meant?
    if problem is not None:
        raise ConfigError([error_at(display, problem.span, problem.message)])
    if data is None:
        data = PosDict(Span(1, 1))
    if isinstance(data, dict):
        _version_as_written(data, text)
    doc = Document(display, 0, data, data, Span(1, 1))
    base = os.path.dirname(os.path.abspath(path))
    # Before anything is read from them (the policies' names, below): the paths that leave the
    # repository.
    outside = _outside_errors(doc, base, repository_root(path)) if isinstance(data, dict) else []
    if policy_names is not None:
        given = data.get("policies") if isinstance(data, dict) else None
        listed = given if isinstance(given, list) else []
        paths = tuple(os.path.normpath(os.path.join(base, p)) for p in listed if isinstance(p, str))
        rule_names = [*rule_names, *policy_names(paths if not outside else ())]
    errors = [*_validate(doc, rule_names, categories), *outside]
    if errors:
        raise ConfigError(errors)
    return _settings(data, base)


def _validate(doc: Document, rule_names: Sequence[str], categories: Sequence[str]) -> list[str]:
    """Every problem of the config, in order: unknown keys, the schema's errors (by path), the
    Kubernetes version and its feature gates, then unknown rule names."""
    from kaffinity.load.resources import schema

    data = doc.data
    if not isinstance(data, dict):
        return [error_at(doc.file, doc.span, "the configuration must be a mapping of settings")]
    schema_doc = schema("config.schema.json")
    known = list(schema_doc["properties"])
    names = {*rule_names, *categories, "all"}
    return [
        *(
            error_at(doc.file, doc.locate((key,)), f"unknown key '{key}'{_did_you_mean(key, known)}")
            for key in data
            if key not in known
        ),
        *_schema_errors(doc, schema_doc),
        *_file_size_errors(doc),
        *_version_errors(doc),
        *_rule_name_errors(doc, names),
        *_severity_errors(doc, names),
    ]


def _schema_errors(doc: Document, schema_doc: Mapping[str, Any]) -> list[str]:
    """The schema's errors by path (an unknown key is said once, above)."""
    from jsonschema import Draft202012Validator

    from kaffinity.load.schema_words import said, shown

    validator = Draft202012Validator(schema_doc)
    errors = []
    for found in sorted(validator.iter_errors(doc.data), key=lambda e: [str(p) for p in e.absolute_path]):
        if found.validator == "additionalProperties" and not found.absolute_path:
            continue
        error = _closest(found)
        path = tuple(error.absolute_path)
        where = ".".join(str(item) for item in path)
        message = _pattern_message(path, error.instance) if error.validator == "pattern" else None
        if len(path) == 2 and path[0] == "limits":  # file-size: oneOf an integer or a quantity
            alternatives = error.context if error.validator == "oneOf" else None
            over = next((e for e in alternatives or [error] if e.validator == "maximum"), None)
            if over is not None:
                message = _raised_message(str(path[1]), over.instance, over.validator_value)
            elif path[1] == "file-size":
                message = f"expected bytes or a quantity such as 16Mi or 10M, got {shown(error.instance)}"
        errors.append(error_at(doc.file, doc.locate(path), f"{where}: {message or said(error)}"))
    return errors


def _closest(found: ValidationError) -> ValidationError:
    """Of a oneOf / anyOf that failed, the alternative that came closest, when one did: its error
    lies deeper in the value."""
    if found.validator in ("oneOf", "anyOf") and found.context:
        deepest = max(found.context, key=lambda inner: len(inner.absolute_path))
        if len(deepest.absolute_path) > len(found.absolute_path):
            return deepest
    return found


#: The limits by their names in ``limits:`` and ``--limit``, as :class:`Limits` fields.
LIMIT_NAMES = {
    "file-size": "file_size",
    "depth": "depth",
    "alias-nodes": "alias_nodes",
    "pods": "pods",
    "nodes": "nodes",
    "findings": "findings",
}
#: The most ``--limit depth`` may give: libyaml's composer recurses in C, one frame per level.
MAX_DEPTH = 10_000
LIMITS_ENV = "KAFFINITY_LIMITS"


def _raised_message(name: str, value: Any, default: Any) -> str:
    """A config that raises a limit: the checkout may lower a limit, never raise it (issue 31);
    the person running kaffinity raises it."""
    return (
        f"{value} is more than the default, {default}: a configuration file may "
        f"lower a limit, not raise it (raise it on the command line, --limit {name}={value}, or "
        f"in {LIMITS_ENV})"
    )


#: ``limits.file-size`` as a string: the schema's pattern.
_SIZE = re.compile(r"[0-9]+(\.[0-9]+)?(k|M|G|T|Ki|Mi|Gi|Ti)?")


def _file_size_errors(doc: Document) -> list[str]:
    """``limits.file-size`` written as a quantity (the schema checks the integers): a size, at
    most the default."""
    limits = doc.data.get("limits")
    value = limits.get("file-size") if isinstance(limits, dict) else None
    if not isinstance(value, str) or _SIZE.fullmatch(value) is None:  # else the schema's error
        return []
    where = doc.locate(("limits", "file-size"))
    try:
        size = parse_size(value)
    except ValueError as error:
        return [error_at(doc.file, where, f"limits.file-size: {error}")]
    if size > DEFAULT_LIMITS.file_size:
        return [error_at(doc.file, where, f"limits.file-size: {_raised_message('file-size', value, '32Mi')}")]
    return []


#: The settings that name paths read (or, ``cache-dir``, written): each must stay in the
#: repository. ``exclude`` and ``units`` only match paths, never reach one.
_PATH_KEYS = ("cluster", "cache-dir", "context", "policies", "helm-values", "baseline")


def _outside_errors(doc: Document, base: str, root: str) -> list[str]:
    """The paths of the config that resolve outside ``root`` (symlinks followed, as
    ``os.path.realpath``): a checkout decides which files of the repository are read, not
    which files of the machine (issue 31). The same paths on the command line are read."""
    data = doc.data
    real_root = os.path.realpath(root)
    found: list[tuple[tuple[Any, ...], str]] = []
    for key in _PATH_KEYS:
        value = data.get(key)
        if isinstance(value, str):
            found.append(((key,), value))
        elif isinstance(value, list):
            found.extend(((key, index), item) for index, item in enumerate(value) if isinstance(item, str))
        elif isinstance(value, dict):  # helm-values: chart folder -> values files
            for chart, files in value.items():
                found.append(((key, chart), str(chart)))
                if isinstance(files, list):
                    found.extend(
                        ((key, chart, index), item)
                        for index, item in enumerate(files)
                        if isinstance(item, str)
                    )
    errors = []
    for where, value in found:
        resolved = os.path.realpath(os.path.join(base, value))
        if not within(resolved, real_root):
            shown = ".".join(str(step) for step in where)
            option = _PATH_OPTIONS[where[0]]
            errors.append(
                error_at(
                    doc.file,
                    doc.locate(where),
                    f"{shown}: {quote_name(value)} is outside the repository ({quote_name(root)}): "
                    f"a path outside it is read only when given on the command line{option}",
                )
            )
    return errors


_PATH_OPTIONS = {
    "cluster": " (--cluster)",
    "cache-dir": " (--cache-dir, KAFFINITY_CACHE_DIR)",
    "context": " (--context)",
    "policies": " (--policy)",
    "helm-values": "",
    "baseline": " (--baseline)",
}


def _version_errors(doc: Document) -> list[str]:
    """An unknown ``kube-version``, else the problems of the feature gates for it."""
    data = doc.data
    version = data.get("kube-version", DEFAULT_KUBE_VERSION)
    if not isinstance(version, str):
        return []
    if version not in KUBE_VERSIONS:
        return [error_at(doc.file, doc.locate(("kube-version",)), unknown_version(version))]
    gates = data.get("feature-gates")
    if not isinstance(gates, dict):
        return []
    from kaffinity.k8s.gates import gate_problems

    valid = {name: value for name, value in gates.items() if isinstance(value, bool)}
    return [
        error_at(doc.file, doc.locate(("feature-gates", name)), message)
        for name, message in gate_problems(version, valid)
    ]


def _rule_name_errors(doc: Document, names: set[str]) -> list[str]:
    """Names in ``select`` and ``ignore`` that are no rule, category or ``all``."""
    return [
        error_at(doc.file, doc.locate((key, index)), _unknown_rule(name, names))
        for key in ("select", "ignore")
        for index, name in enumerate(doc.data.get(key) or [])
        if isinstance(name, str) and name not in names
    ]


def _severity_errors(doc: Document, names: set[str]) -> list[str]:
    """``severity`` keys that are no rule or category (``all`` has no one severity)."""
    severity = doc.data.get("severity")
    if not isinstance(severity, dict):
        return []
    errors = []
    for name in severity:
        at = doc.locate(("severity", name))
        if name == "all":  # a rule's or a category's severity only: each rule has its own default
            errors.append(
                error_at(
                    doc.file, at, "severity: 'all' cannot be given one severity; name rules or categories"
                )
            )
        elif name not in names:
            errors.append(error_at(doc.file, at, _unknown_rule(name, names - {"all"})))
    return errors


def _pattern_message(path: tuple[Any, ...], value: Any) -> str | None:
    """A readable message for a ``workloads`` value that does not match its pattern."""
    if len(path) != 3 or path[0] != "workloads":
        return None
    if path[2] == "apiVersion":
        return (
            f"'{value}' is not the group/version of a custom resource (example.com/v1, or "
            "example.com/* for every version); the built-in kinds need no entry"
        )
    if path[2] == "kind":
        return f"'{value}' is not a kind (a name such as MyApp)"
    return f"'{value}' is not a dotted path of field names (such as spec.template)"


def _settings(data: Mapping[str, Any], base: str) -> Settings:
    from kaffinity.load.files import anchor_patterns

    def paths(values: Sequence[str]) -> tuple[str, ...]:
        return tuple(os.path.normpath(os.path.join(base, value)) for value in values)

    fail_on = data.get("fail-on", "error")
    cluster = data.get("cluster")
    return Settings(
        kube_version=data.get("kube-version", DEFAULT_KUBE_VERSION),
        feature_gates=dict(data.get("feature-gates") or {}),
        proposals=bool(data.get("proposals", False)),
        select=tuple(data.get("select") or ("all",)),
        ignore=tuple(data.get("ignore") or ()),
        severity={name: Severity(level) for name, level in (data.get("severity") or {}).items()},
        fail_on=None if fail_on == "none" else Severity(fail_on),
        min_severity=Severity(data.get("min-severity", "info")),
        namespace=data.get("namespace", "default"),
        exclude=anchor_patterns(data.get("exclude") or (), base),
        cluster=paths([cluster])[0] if isinstance(cluster, str) else None,
        closed=bool(data.get("closed", False)),
        simulate=bool(data.get("simulate", True)),
        gitignore=bool(data.get("gitignore", True)),
        cache=bool(data.get("cache", True)),
        cache_dir=paths([data["cache-dir"]])[0] if isinstance(data.get("cache-dir"), str) else None,
        baseline=paths([data["baseline"]])[0] if isinstance(data.get("baseline"), str) else None,
        context=paths(data.get("context") or ()),
        policies=paths(data.get("policies") or ()),
        jobs=_jobs(data.get("jobs")),
        limits=_limits(data.get("limits") or {}),
        units=_units(data.get("units", "auto"), paths),
        render=bool(data.get("render", True)),
        helm_values={
            paths([chart])[0]: paths(files) for chart, files in (data.get("helm-values") or {}).items()
        },
        workload_kinds=tuple(_workload_kind(entry) for entry in data.get("workloads") or ()),
        base_dir=base,
    )


def _jobs(value: Any) -> int | None:
    """``jobs:`` up to the number of cores, the default: more processes are the work the
    person running kaffinity may ask for (``--jobs``), not the checkout (issue 31)."""
    if not isinstance(value, int):
        return None
    from kaffinity.load.parallel import default_jobs

    return min(value, default_jobs())


def _units(value: Any, paths: Any) -> str | tuple[tuple[str, tuple[str, ...]], ...]:
    if isinstance(value, str):
        return value
    return tuple((str(unit["name"]), tuple(paths(unit["paths"]))) for unit in value)


def _workload_kind(entry: Mapping[str, Any]) -> WorkloadKind:
    """One ``workloads`` entry (validated by the schema) as a custom workload kind."""

    def dotted(name: str) -> tuple[str, ...] | None:
        value = entry.get(name)
        return tuple(value.split(".")) if isinstance(value, str) else None

    group, _, version = str(entry["apiVersion"]).rpartition("/")
    template, replicas = dotted("template"), dotted("replicas")
    assert template is not None  # required by the schema
    return WorkloadKind(
        group,
        str(entry["kind"]),
        None if version == "*" else (version,),
        template,
        (replicas,) if replicas is not None else (),
        1,
        selector=dotted("selector"),
    )


def _limits(data: Mapping[str, Any]) -> Limits:
    file_size = data.get("file-size")
    return Limits(
        file_size=DEFAULT_LIMITS.file_size if file_size is None else parse_size(file_size),
        depth=data.get("depth", DEFAULT_LIMITS.depth),
        alias_nodes=data.get("alias-nodes", DEFAULT_LIMITS.alias_nodes),
        pods=data.get("pods", DEFAULT_LIMITS.pods),
        nodes=data.get("nodes", DEFAULT_LIMITS.nodes),
        findings=data.get("findings", DEFAULT_LIMITS.findings),
    )


def parse_limits(values: Sequence[str], source: str) -> dict[str, int]:
    """``NAME=VALUE`` items (``--limit pods=300000``, repeatable, or comma-separated as in
    ``KAFFINITY_LIMITS=pods=300000,file-size=64Mi``) as :class:`Limits` fields; any value,
    above the defaults too: the person running kaffinity decides (``depth`` at most
    :data:`MAX_DEPTH`). ``source`` names the option or variable in the errors."""
    changes: dict[str, int] = {}
    errors = []
    for item in (part.strip() for value in values for part in value.split(",")):
        if not item:
            continue
        name, sep, text = (part.strip() for part in item.partition("="))
        if not sep or name not in LIMIT_NAMES:
            known = ", ".join(LIMIT_NAMES)
            errors.append(f"{source}: '{item}' is not NAME=VALUE with NAME one of {known}")
            continue
        if name == "file-size":
            try:
                changes["file_size"] = parse_size(text)
            except ValueError as error:
                errors.append(f"{source}: file-size: {error}")
            continue
        most = MAX_DEPTH if name == "depth" else 2**63 - 1
        number = int(text) if text.isascii() and text.isdigit() and len(text) < 20 else 0
        if not 1 <= number <= most:
            errors.append(f"{source}: {name}: '{text}' is not a whole number from 1 to {most}")
            continue
        changes[LIMIT_NAMES[name]] = number
    if errors:
        raise ConfigError(errors)
    return changes


def with_limits(settings: Settings, options: Sequence[str] | None) -> Settings:
    """``settings`` with the limits of ``KAFFINITY_LIMITS``, then of ``--limit`` (the command
    line over the environment, both over the config file): the only ways above the defaults."""
    changes: dict[str, int] = {}
    errors: list[str] = []
    for values, source in (([os.environ.get(LIMITS_ENV, "")], LIMITS_ENV), (options or (), "--limit")):
        try:
            changes.update(parse_limits(values, source))
        except ConfigError as error:
            errors.extend(error.messages)
    if errors:
        raise ConfigError(errors)
    return replace(settings, limits=replace(settings.limits, **changes)) if changes else settings


def parse_size(value: int | str) -> int:
    """Bytes from a Kubernetes quantity (``64Mi``, ``512Ki``, ``2G``, ``1048576``); ValueError
    for anything else, and for less than one byte."""
    from kaffinity.k8s.quantity import parse_quantity

    size = parse_quantity(value)
    if size is None or size < 1:
        raise ValueError(f"'{value}' is not a size such as 64Mi, 512Ki or 1048576")
    # Capped at int64 (more than any file): int() of 1e1000000 would have a million digits.
    return min(int(size), 2**63 - 1) if size.adjusted() < 19 else 2**63 - 1


#: A Kubernetes version as people write it: ``1.30``, ``v1.30``, ``1.30.2``, ``v1.30.2``.
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?$")


def normalize_version(text: str) -> str:
    """The minor version (``1.30``) a version written as kubectl or kubeconform accept it names
    (``v1.30``, ``1.30.2``, ``v1.30.2``); anything else as it is, for the error to quote."""
    match = _VERSION.match(text.strip())
    return f"{int(match.group(1))}.{int(match.group(2))}" if match else text


def _version_as_written(data: dict[str, Any], text: str) -> None:
    """``kube-version`` as its text reads: YAML reads an unquoted ``1.30`` as the number 1.3, so
    the version is taken from the file's own characters (``1.30``, never ``1.3``, unless the
    text is ``1.3``), then normalised."""
    value = data.get("kube-version")
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return
    if not isinstance(value, str):
        position = data.key_position("kube-version") if hasattr(data, "key_position") else None
        line = text.splitlines()[unpack(position).line - 1] if position is not None else ""
        written = re.search(r"kube-version\s*:\s*([^\s,#}]+)", line)
        value = written.group(1) if written else str(value)
    data["kube-version"] = normalize_version(value)


def unknown_version(version: str) -> str:
    return f"kube-version '{version}' is not one kaffinity knows ({KUBE_VERSIONS[0]} to {KUBE_VERSIONS[-1]})"


def kube_version_option(value: str | None) -> str | None:
    """``--kube-version`` as written (``v1.30``, ``1.30.2``): the minor it names."""
    return normalize_version(value) if value is not None else None


def check_kube_version(version: str) -> None:
    if version not in KUBE_VERSIONS:
        raise ConfigError([f"--kube-version: {unknown_version(version)}"])


def parse_feature_gates(value: str) -> dict[str, bool]:
    """``Name=true,Other=false`` (kube-apiserver's ``--feature-gates`` syntax)."""
    gates: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in value.split(","))):
        name, sep, flag = item.partition("=")
        if not sep or flag.lower() not in ("true", "false") or not name:
            raise ConfigError([f"--feature-gates: '{item}' is not Name=true or Name=false"])
        gates[name.strip()] = flag.lower() == "true"
    return gates


def check_rule_names(
    names: Sequence[str], option: str, rule_names: Sequence[str], categories: Sequence[str]
) -> None:
    known = {*rule_names, *categories, "all"}
    bad = [f"{option}: {_unknown_rule(name, known)}" for name in names if name not in known]
    if bad:
        raise ConfigError(bad)


def _unknown_rule(name: str, known: set[str]) -> str:
    return f"unknown rule or category '{name}'{_did_you_mean(name, sorted(known))}"


def _did_you_mean(name: str, candidates: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, candidates, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def error_at(file: str, span: Span | None, message: str) -> str:
    """An error in kaffinity's two styles (docs/output.md): ``file:line:column: error: message``
    at a position, as compilers and linters write it (GNU Coding Standards, "Formatting Error
    Messages"); ``kaffinity: error: file: message`` without one ("program: message" there)."""
    if span is None:
        return f"kaffinity: error: {file}: {message}"
    return f"{file}:{span.line}:{span.column}: error: {message}"


def check_target(version: str, gates: Mapping[str, bool]) -> None:
    """A version kaffinity knows, and gates that version's kube-apiserver would start with."""
    check_kube_version(version)
    check_gates(version, gates)


def check_gates(version: str, gates: Mapping[str, bool]) -> None:
    """Refuse the gates :func:`kaffinity.k8s.gates.gate_problems` finds (flags and config file
    alike)."""
    from kaffinity.k8s.gates import gate_problems

    errors = [f"feature gates: {message}" for _, message in gate_problems(version, gates)]
    if errors:
        raise ConfigError(errors)
