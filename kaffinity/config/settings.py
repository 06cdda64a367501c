"""The settings of a run (:class:`Settings`), the Kubernetes versions kaffinity knows, and the
one error of configuration and flags (:class:`ConfigError`, in kaffinity's error style:
:func:`error_at`)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kaffinity.findings import Severity
from kaffinity.k8s.model import WorkloadKind
from kaffinity.load.parse import DEFAULT_LIMITS, Limits
from kaffinity.load.source import Span
from kaffinity.repo.sandbox import DEFAULT_SANDBOX, Sandbox

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


def validate_rule_names(
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
