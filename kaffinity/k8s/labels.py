"""Name and label syntax, as k8s.io/apimachinery ``pkg/util/validation`` checks it.

Each function returns the list of problems (empty when valid), worded like upstream's messages.
"""

from __future__ import annotations

import re

#: The well-known node labels of the topology domains (API doc "Well-Known Labels, Annotations
#: and Taints"): hostname ⊂ zone ⊂ region.
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
#: The label the Deployment controller gives each revision's ReplicaSet and pods
#: (``pkg/controller/deployment/util``: ``DefaultDeploymentUniqueLabelKey``).
POD_TEMPLATE_HASH = "pod-template-hash"

_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")

_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation "
    "is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
    "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def qualified_name(value: str) -> list[str]:
    """``IsQualifiedName``: label keys, topology keys, matchLabelKeys entries."""
    parts = value.split("/")
    if len(parts) == 1:
        name, prefix = parts[0], None
    elif len(parts) == 2:
        prefix, name = parts
    else:
        return [f"a qualified name {_QUALIFIED_NAME_MSG} with an optional DNS subdomain prefix and '/' "
                "(e.g. 'example.com/MyName')"]  # fmt: skip
    errors: list[str] = []
    if prefix is not None:
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors += [f"prefix part {message}" for message in dns1123_subdomain(prefix)]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME.fullmatch(name):
        errors.append(f"name part {_QUALIFIED_NAME_MSG}")
    return errors


def label_value(value: str) -> list[str]:
    """``IsValidLabelValue``: empty, or up to 63 characters of ``[-A-Za-z0-9_.]`` with alnum ends."""
    errors: list[str] = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if value and not _QUALIFIED_NAME.fullmatch(value):
        errors.append(_LABEL_VALUE_MSG)
    return errors


def dns1123_subdomain(value: str) -> list[str]:
    """``IsDNS1123Subdomain``: node names, label key prefixes."""
    return _dns(value, 253, _DNS1123_SUBDOMAIN, _SUBDOMAIN_MSG)


def dns1123_label(value: str) -> list[str]:
    """``IsDNS1123Label``: namespace names."""
    return _dns(value, 63, _DNS1123_LABEL, _LABEL_MSG)


def _dns(value: str, limit: int, pattern: re.Pattern[str], message: str) -> list[str]:
    errors = [f"must be no more than {limit} characters"] if len(value) > limit else []
    return errors if pattern.fullmatch(value) else [*errors, message]
