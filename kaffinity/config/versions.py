"""Kubernetes versions as people write them (``v1.30``, ``1.30.2``) and the feature gates a
version's kube-apiserver would start with (``--kube-version``, ``--feature-gates``, the config's
``kube-version`` and ``feature-gates``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kaffinity.config.settings import KUBE_VERSIONS, ConfigError
from kaffinity.load.source import unpack

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


def validate_kube_version(version: str) -> None:
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


def validate_target(version: str, gates: Mapping[str, bool]) -> None:
    """A version kaffinity knows, and gates that version's kube-apiserver would start with."""
    validate_kube_version(version)
    validate_gates(version, gates)


def validate_gates(version: str, gates: Mapping[str, bool]) -> None:
    """Refuse the gates :func:`kaffinity.k8s.gates.gate_problems` finds (flags and config file
    alike)."""
    from kaffinity.k8s.gates import gate_problems

    errors = [f"feature gates: {message}" for _, message in gate_problems(version, gates)]
    if errors:
        raise ConfigError(errors)
