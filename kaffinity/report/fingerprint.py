"""Finding fingerprints: one finding's identity across commits, whatever moved around it.

A fingerprint is a hash of what makes a finding the finding it is, and of nothing that a move,
a reformat or a reorder changes:

- the rule;
- the deployment units, for the rules that read a whole unit (``Rule.needs_all_manifests``:
  graph, topology, rollout, and the policies that read facts of the unit); empty for the rules
  that read one object, and when the input is one unit;
- the object: API group (not its version), kind, namespace and name (``ObjectRef``);
- the field path, with each index of a keyed list replaced by the item's identity
  (``containers[name=web]``, ``topologySpreadConstraints[topologyKey=zone,...]``:
  :func:`kaffinity.findings.stable_path`), and kept where the index is the identity (terms,
  tolerations);
- the value that decides the finding: the value at that path as canonical JSON (keys sorted), a
  term, a selector, ``replicas: 3`` (:func:`kaffinity.findings.anchor_of`). Where the path is the
  whole object or a whole part of it (a pod spec, a container, metadata) or the value is larger
  than 1 KiB, the message stands for it, with the positions it names (``line 3``,
  ``file.yaml:3:5``), the finding's own file names and the repository's top folder taken out:
  the message of a finding may name other objects it affects, which change when they do.

A finding on no object (a file that does not parse, a chart that does not render) has no
identity but its file: its fingerprint is the rule, the file (named from the top of its git work
tree: :func:`repository_name`) and the message as above. Unit names are named from the top too.

No line, column or file of an object goes in: inserting ten lines above a Deployment, changing
its indentation, the order of its keys, flow or block style, or the order of the documents in the
file, keeps its findings' fingerprints; changing the value a finding is about changes it.

**Collisions.** Two findings may hash alike: a rule that says two things of one field of one
object (the value decides, not the words), or one problem on copies of an object read as two.
They are told apart as GitHub code scanning tells alike lines apart (``primaryLocationLineHash``
is ``hash:occurrence``; "SARIF support for code scanning", docs.github.com): in report order,
the n-th finding of a hash is ``hash:n``. A baseline keeps each hash with its count; a run shows
the findings of a hash beyond the count known. So two distinct findings always have distinct
fingerprints, and two copies of one are counted, not merged.

The SARIF report writes the fingerprint as ``partialFingerprints["kaffinity/v1"]`` (SARIF 2.1.0
section 3.27.17: the property names are versioned hierarchical strings, section 3.5.4.2; the
``v1`` is bumped whenever what goes into the hash changes). ``primaryLocationLineHash`` is left
to GitHub's upload-sarif, which computes it and warns on a value it did not compute
(github/codeql-action issue 4052).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from kaffinity.findings import Finding
from kaffinity.load.repository import work_tree

if TYPE_CHECKING:
    from kaffinity.rules.base import Rule

#: The key of the fingerprint in SARIF ``partialFingerprints`` and in baseline files; bumped when
#: what goes into a fingerprint changes (a baseline of another version is refused).
FINGERPRINT_VERSION = "kaffinity/v1"

#: ``file.yaml:12:3`` / ``file.yaml:12``: a place in a file, as messages quote related places.
_PLACE = re.compile(r"(\.(?:ya?ml|json|tpl)|<file>)(?::\d+){1,2}\b")
#: ``line 12``, ``column 3``, ``lines 3-5``, ``line 12, column 3`` (a parser's words).
_POSITION = re.compile(r"\b(line|lines|column|columns|offset|index)\s+\d+(?:\s*-\s*\d+)?", re.IGNORECASE)
_SPACE = re.compile(r"\s+")


def normalized_message(finding: Finding) -> str:
    """The message with what a move changes taken out: places (``:12:3``), ``line N`` and
    ``column N``, and the names of the finding's own file and its related places' files."""
    text = finding.message
    names = sorted(
        {finding.file, *(related.file for related in finding.related)} - {""}, key=len, reverse=True
    )
    for name in names:
        text = text.replace(name, "<file>")
    for top in _tops(finding.file):  # a folder named from the top (helm dependency build DIR)
        text = text.replace(top + os.sep, "")
    text = _PLACE.sub(r"\1", text)
    text = _POSITION.sub(lambda match: match.group(1).lower(), text)
    return _SPACE.sub(" ", text).strip()


@lru_cache(maxsize=1024)
def _top(folder: str) -> str:
    """The top of the git work tree holding ``folder``, else the working directory."""
    return work_tree(folder) or os.getcwd()


def _tops(name: str) -> list[str]:
    """How the top of the work tree holding ``name`` may be spelled in a message: absolute, and
    relative when the working directory is outside it (``../repo``)."""
    path = os.path.abspath(name)
    if not name or not os.path.lexists(path):
        return []
    top = _top(os.path.dirname(path))
    relative = os.path.relpath(top)
    return [top, relative] if relative.startswith("..") else [top]


def repository_name(name: str) -> str:
    """A file or unit name as the repository knows it: relative to the top of its git work tree
    (``k8s/app.yaml`` whether it was linted as ``./k8s/app.yaml``, ``app.yaml`` from ``k8s/``
    or ``/home/me/repo/k8s/app.yaml``, and in the tree of ``--new-from-rev``), with ``/``.
    A unit of a chart rendered with a values file, ``charts/web (ci/test-values.yaml)``, keeps
    its values part. A name that is not a path on disk (``<stdin>``, ``(other files)``) is kept."""
    head, space, rest = name.partition(" (")
    path = os.path.abspath(head)
    if not head or not os.path.lexists(path):
        return name
    relative = os.path.relpath(path, _top(path if os.path.isdir(path) else os.path.dirname(path)))
    return relative.replace(os.sep, "/") + space + rest


def _group(api_version: str) -> str:
    """The API group of ``apiVersion`` (``apps`` of ``apps/v1``; ``""`` for core ``v1``): a
    version bump of the same object keeps its findings."""
    return api_version.rpartition("/")[0]


def fingerprint_of(finding: Finding, unit_scoped: bool) -> str:
    """The hash of one finding (32 hexadecimal digits, 128 bits of SHA-256), without its
    occurrence number. ``unit_scoped``: the rule reads a whole deployment unit, so the units
    are part of what it found."""
    obj = finding.object
    units = sorted(map(repository_name, finding.units)) if unit_scoped else []
    if obj is None or not obj.kind or obj.kind == "None":
        parts: list[object] = [
            FINGERPRINT_VERSION,
            finding.rule,
            units,
            "file",
            repository_name(finding.file),
        ]
    else:
        path, tab, value = (finding.anchor or finding.path).partition("\t")
        parts = [FINGERPRINT_VERSION, finding.rule, units, _group(obj.api_version), obj.kind]
        parts += [obj.namespace or "", obj.name, path]
        if tab:  # the value the finding is about decides, not the words around it
            parts.append(value)
            return _digest(parts)
    parts.append(normalized_message(finding))
    return _digest(parts)


def _digest(parts: list[object]) -> str:
    data = json.dumps(parts, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(data.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def fingerprints(findings: Sequence[Finding], unit_scoped: Collection[str]) -> list[str]:
    """Each finding's fingerprint, ``hash:occurrence`` (occurrences counted in the order given,
    the report's): ``unit_scoped`` names the rules whose findings belong to their units."""
    seen: Counter[str] = Counter()
    out = []
    for finding in findings:
        digest = fingerprint_of(finding, finding.rule in unit_scoped)
        seen[digest] += 1
        out.append(f"{digest}:{seen[digest]}")
    return out


def unit_scoped_rules(rules: Iterable[Rule]) -> frozenset[str]:
    """The names of the rules that read a whole deployment unit (``needs_all_manifests``; a
    streamed ValidatingAdmissionPolicy, ``unit_objects``, admits each unit's objects)."""
    return frozenset(rule.name for rule in rules if rule.needs_all_manifests or rule.unit_objects)
