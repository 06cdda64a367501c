"""Reading a config file into :class:`~kaffinity.config.settings.Settings`
(:func:`load_settings`): parsed strictly, validated (:mod:`kaffinity.config.problems`), its
paths made relative to its folder."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from kaffinity.config.discovery import repository_root
from kaffinity.config.limits import parse_size
from kaffinity.config.problems import _outside_errors, _validate
from kaffinity.config.settings import DEFAULT_KUBE_VERSION, ConfigError, Settings, error_at
from kaffinity.config.versions import _version_as_written
from kaffinity.findings import Severity
from kaffinity.k8s.model import WorkloadKind
from kaffinity.load.parse import DEFAULT_LIMITS, Limits
from kaffinity.load.source import Document, Span


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
