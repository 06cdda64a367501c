"""``.kaffinity.yaml``: discovery upward from the working directory, validation, frozen Settings.

The file is validated against ``schemas/config.schema.json``; an unknown key, a wrong type or an
unknown rule name is an error naming it, at its line. Command-line flags override the file.

The file is part of the checkout, so it is input (issue 31, docs/configuration.md): the search
stops at the git work tree's top and skips another user's file; a limit may be lowered, not
raised (``--limit``, ``KAFFINITY_LIMITS`` raise one); every path stays inside the repository.

The package: :mod:`~kaffinity.config.settings` (``Settings``, ``ConfigError``, the versions
kaffinity knows), :mod:`~kaffinity.config.discovery` (finding the file),
:mod:`~kaffinity.config.file` (reading it into ``Settings``), :mod:`~kaffinity.config.problems`
(what is wrong with it, in words), :mod:`~kaffinity.config.limits` (limits by name, sizes) and
:mod:`~kaffinity.config.versions` (Kubernetes versions and feature gates).
"""

from kaffinity.config.discovery import CONFIG_NAMES, find_config, repository_root
from kaffinity.config.file import load_settings
from kaffinity.config.limits import LIMIT_NAMES, LIMITS_ENV, MAX_DEPTH, parse_limits, parse_size, with_limits
from kaffinity.config.settings import (
    DEFAULT_KUBE_VERSION,
    KUBE_VERSIONS,
    ConfigError,
    Settings,
    error_at,
    validate_rule_names,
)
from kaffinity.config.versions import (
    kube_version_option,
    normalize_version,
    parse_feature_gates,
    unknown_version,
    validate_gates,
    validate_kube_version,
    validate_target,
)

__all__ = [
    "CONFIG_NAMES",
    "DEFAULT_KUBE_VERSION",
    "KUBE_VERSIONS",
    "LIMITS_ENV",
    "LIMIT_NAMES",
    "MAX_DEPTH",
    "ConfigError",
    "Settings",
    "error_at",
    "find_config",
    "kube_version_option",
    "load_settings",
    "normalize_version",
    "parse_feature_gates",
    "parse_limits",
    "parse_size",
    "repository_root",
    "unknown_version",
    "validate_gates",
    "validate_kube_version",
    "validate_rule_names",
    "validate_target",
    "with_limits",
]
