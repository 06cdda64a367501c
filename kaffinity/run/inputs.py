"""The inputs of a run, resolved once from the options: the paths, stdin (its own object), the
context manifests, the settings (config file, flags, policies' names), the sandbox rendering
runs in, the ``--report`` targets. A bad value is a :class:`~kaffinity.run.notes.RunError`
(exit 2) in kaffinity's one error style; the notes said on the way (the config found, a gate
not modelled) go to the run's :class:`~kaffinity.run.notes.Notes`."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, BinaryIO, Optional

from kaffinity.load.display import quote_name
from kaffinity.run.notes import Notes, RunError, error_line

if TYPE_CHECKING:
    from collections.abc import Mapping

    from kaffinity.config import Settings
    from kaffinity.policy.known import PolicyStream
    from kaffinity.policy.load import Loaded
    from kaffinity.repo.sandbox import Sandbox
    from kaffinity.rules.base import Rule


def names(values: Optional[list[str]]) -> Optional[tuple[str, ...]]:
    """Comma-separated names of repeatable options (``--select a,b --select c``), in one tuple."""
    if values is None:
        return None
    return tuple(name.strip() for value in values for name in value.split(",") if name.strip())


def shown_path(path: str) -> str:
    """A configured (absolute) path as the user would write it: relative below the working folder."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


@dataclass(frozen=True)
class Stdin:
    """Input read from stdin (``-`` among the paths): whether it is, and ``--stdin-filename``,
    the name it is linted under (``<stdin>`` without one)."""

    given: bool = False
    filename: Optional[str] = None

    @classmethod
    def of(cls, paths: Optional[list[str]], filename: Optional[str]) -> Stdin:
        from kaffinity.load.parse import STDIN

        return cls(STDIN in (paths or ()), filename)

    @property
    def name(self) -> str:
        from kaffinity.load.parse import STDIN_NAME

        return self.filename or STDIN_NAME


@dataclass(frozen=True)
class BufferedStdin:
    """stdin's bytes up to the size limit (``data``; the loader then reads the same bytes from a
    new ``sys.stdin``) and the stream's rest (``rest``: past the limit, not read yet)."""

    data: Optional[bytes]
    rest: Optional[BinaryIO]


def buffer_stdin(stdin: Stdin, file_size: int) -> BufferedStdin:
    """With ``-`` among the paths, the bytes of stdin up to the size limit, kept so that ``fix``
    can write back exactly what it read; the loader reads them from a new ``sys.stdin``."""
    import io

    from kaffinity.load.read import _read_up_to

    rest = sys.stdin.buffer if sys.stdin is not None else None
    if not (stdin.given and rest is not None):
        return BufferedStdin(None, rest)
    data = _read_up_to(rest, file_size + 1)
    sys.stdin = io.TextIOWrapper(io.BytesIO(data))
    return BufferedStdin(data, rest)


@dataclass(frozen=True)
class ContextManifests:
    """The manifests the cross-workload rules read but that are not reported on: ``--context``,
    else ``context:`` in the config (``given``), else with ``--changed`` the git repository's
    manifests (``listed``: one git call)."""

    given: tuple[str, ...] = ()
    listed: tuple[str, ...] = ()

    @property
    def paths(self) -> tuple[str, ...]:
        return self.given or self.listed


def context_manifests(
    paths: Optional[list[str]], context: Optional[list[str]], settings: Settings, changed: bool
) -> ContextManifests:
    """The context manifests of a run, resolved once: for the stream's decision and for loading."""
    given = tuple(context) if context else tuple(shown_path(path) for path in settings.context)
    listed = repository_context(paths) if changed and not given else ()
    return ContextManifests(given, listed)


def repository_context(paths: Optional[list[str]]) -> tuple[str, ...]:
    """The manifests of the git repository of the first file named (pre-commit runs at its root
    anyway); none outside a repository."""
    from kaffinity.load.repository import repository_manifests

    start = next((path for path in paths or () if path != "-" and os.path.exists(path)), ".")
    folder = start if os.path.isdir(start) else os.path.dirname(start) or "."
    return tuple(repository_manifests(folder) or ())


#: The policies of one command's run, by the paths they were read from: read once, for the
#: settings' rule names and for the rules.
PolicyMemo = dict[tuple[str, ...], "Loaded"]


def policies(paths: tuple[str, ...], memo: PolicyMemo) -> Loaded | None:
    """The policies under ``paths`` (None: none given), read once per run. The policy engine is
    imported only when a policy is given."""
    if not paths:
        return None
    if paths not in memo:
        from kaffinity.policy.check import reserved_names
        from kaffinity.policy.load import load_policies

        memo[paths] = load_policies(paths, reserved_names())
    return memo[paths]


def policy_names(paths: tuple[str, ...], memo: PolicyMemo) -> list[str]:
    """The names of the policies under ``paths`` (their problems are reported when they run)."""
    loaded = policies(paths, memo)
    return loaded.names if loaded is not None else []


def with_policies(
    rules: tuple[Rule, ...], settings: Settings, memo: PolicyMemo, stream: Optional[PolicyStream] = None
) -> tuple[tuple[Rule, ...], list[str]]:
    """The rules with one more per policy of ``settings.policies``, and the policies' problems
    (file:line:column: error: ...). ``stream``: the policies the single-object stage ran
    (:mod:`kaffinity.policy.streamed`)."""
    loaded = policies(settings.policies, memo)
    if loaded is None:
        return rules, []
    from kaffinity.policy.check import policy_rules

    made, errors = policy_rules(loaded, settings, stream)
    return (*rules, *made), [*loaded.errors, *errors]


@dataclass(frozen=True)
class SettingsOptions:
    """The options every command reads its settings from (the config file, then the flags)."""

    config: Optional[str] = None
    no_config: bool = False
    kube_version: Optional[str] = None
    feature_gates: Optional[str] = None
    proposals: Optional[bool] = None
    select: Optional[list[str]] = None
    ignore: Optional[list[str]] = None
    namespace: Optional[str] = None
    exclude: Optional[list[str]] = None
    policies: Optional[list[str]] = None
    limits: Optional[list[str]] = None
    memo: PolicyMemo = field(default_factory=dict, compare=False)


def settings_from(options: SettingsOptions, notes: Notes) -> Settings:
    """Settings from the config file and the flags (flags win); a RunError (exit 2) on a bad
    value. The names of the policies (``--policy``, else ``policies:``) count as rule names
    (read once, into ``options.memo``). Limits: the config's, then ``KAFFINITY_LIMITS``, then
    ``--limit``."""
    from kaffinity.config import (
        ConfigError,
        find_config,
        load_settings,
        parse_feature_gates,
        validate_rule_names,
        validate_target,
        with_limits,
    )
    from kaffinity.load.files import anchor_patterns
    from kaffinity.load.parse import make_room
    from kaffinity.rules import CATEGORIES, RULES

    config, no_config, read = options.config, options.no_config, options.memo
    make_room()  # the config and the policies are read with the default limits
    rule_names = [rule.name for rule in RULES]
    try:
        found: list[str] = []
        config_path = None if no_config else (config or find_config(".", found))
        for note in found:
            notes.note(note)
        if config is not None and not no_config and not os.path.isfile(config):
            # A pipe (`--config <(...)`) or a device is read as a file (bounded by the size limit).
            what = (
                "is a folder"
                if os.path.isdir(config)
                else "not found"
                if not os.path.exists(config)
                else None
            )
            if what is not None:
                raise ConfigError([f"kaffinity: error: {quote_name(config)}: config file {what}"])
        categories = sorted({*CATEGORIES, "policy"})
        given = options.policies

        def named(paths: tuple[str, ...]) -> list[str]:
            return policy_names(tuple(given) if given else paths, read)

        settings: Settings = with_limits(
            load_settings(config_path, rule_names, categories, named), options.limits
        )
        if given:
            settings = replace(settings, policies=tuple(given))
        known = [*rule_names, *policy_names(settings.policies, read)]
        selected, ignored = names(options.select), names(options.ignore)
        for option, chosen in (("--select", selected), ("--ignore", ignored)):
            if chosen:
                validate_rule_names(chosen, option, known, categories)
        feature_gates, exclude = options.feature_gates, options.exclude
        settings = settings.overridden(
            kube_version=options.kube_version,
            feature_gates=None
            if feature_gates is None
            else {**settings.feature_gates, **parse_feature_gates(feature_gates)},
            proposals=options.proposals,
            select=selected or None,
            ignore=ignored,
            namespace=options.namespace,
            exclude=(*settings.exclude, *anchor_patterns(exclude, ".")) if exclude else None,
        )
        validate_target(settings.kube_version, settings.feature_gates)
        note_unmodelled_gates(settings.feature_gates, notes)
        make_room(settings.limits.depth)  # no stage recurses out of stack on input it accepts
    except ConfigError as error:
        raise RunError(*(error_line(message) for message in error.messages)) from None
    return settings


def note_unmodelled_gates(gates: Mapping[str, bool], notes: Notes) -> None:
    """A gate kaffinity does not model (nor a typo of one: refused before) is ignored: say so."""
    from kaffinity.k8s.gates import GATES

    for name in gates:
        if name not in GATES:
            notes.note(
                f"feature gate {name} is not one kaffinity models (the gates of the "
                "scheduling fields): ignored"
            )


@dataclass(frozen=True)
class RenderOptions:
    """What rendering may do, as the flags say (None: the environment's, else the default)."""

    allow_network: Optional[bool] = None
    timeout: Optional[float] = None
    budget: Optional[float] = None
    memory: Optional[str] = None
    offline: Optional[bool] = None


def sandbox(options: RenderOptions) -> Sandbox:
    """What rendering may do: these flags, else the environment (kaffinity.repo.sandbox); a bad
    value is a usage error (exit 2). ``--offline`` (or ``KAFFINITY_OFFLINE``) beats any allowance."""
    from kaffinity.repo.sandbox import SandboxError, sandbox_from

    try:
        return sandbox_from(
            options.allow_network, options.timeout, options.budget, options.memory, offline=options.offline
        )
    except SandboxError as error:
        raise RunError(f"kaffinity: error: {error}") from None


def size_option(value: str) -> int:
    """``--max-file-size``: a size in bytes; a usage error (exit 2) when it is none."""
    from kaffinity.config import parse_size

    try:
        return parse_size(value)
    except ValueError as error:
        raise RunError(f"--max-file-size: {error}") from None


def report_targets(values: list[str] | tuple[str, ...]) -> list[tuple[str, str]]:
    """``--report FORMAT=FILE`` values; a bad one is a usage error (exit 2)."""
    from kaffinity.report import FORMATS

    targets = []
    for value in values:
        fmt, sep, target = value.partition("=")
        if not sep or not target or fmt not in FORMATS:
            raise RunError(
                f"kaffinity: error: --report '{value}' is not FORMAT=FILE with FORMAT one of "
                f"{', '.join(FORMATS)}",
            )
        targets.append((fmt, target))
    return targets
