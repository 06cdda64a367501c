"""Load manifests from files, directories and stdin, keeping the position of every key and item.

Parsing uses ruamel's C composer (``ruamel.yaml.cyaml.CSafeLoader`` from ``ruamel.yaml.clib``):
libyaml builds the node tree in C and every node's ``start_mark`` carries line and column. We
then turn nodes into :class:`~kaffinity.load.source.PosDict` / :class:`~kaffinity.load.source.PosList`
ourselves, resolving plain scalars the way Kubernetes reads YAML (sigs.k8s.io/yaml on top of
go-yaml v2, i.e. YAML 1.1: ``yes``/``on`` are booleans, ``017`` is octal, non-string keys become
strings as in the YAML-to-JSON conversion). The round-trip loader is kept for writing files back.

Bad input never raises: a file that cannot be read, decoded or parsed yields a
:class:`LoadProblem` with the parser's line, and the documents before the error are kept.

The package, in the order a text goes through it: :mod:`~kaffinity.load.parse.limits` (what an
input may cost, room on the stacks), :mod:`~kaffinity.load.parse.results` (``SourceFile``,
``LoadProblem``, ``LoadError`` and their positions), :mod:`~kaffinity.load.parse.scalars`
(go-yaml's scalars and sigs.k8s.io/yaml's keys), :mod:`~kaffinity.load.parse.builder` (nodes to
trees with positions: tags, duplicate and merge keys, aliases), :mod:`~kaffinity.load.parse.goyaml`
(what libyaml refuses and go-yaml reads), :mod:`~kaffinity.load.parse.reader` (the documents of a
text), :mod:`~kaffinity.load.parse.templates` (unrendered Helm templates),
:mod:`~kaffinity.load.parse.objects` (:func:`parse`: a file's objects, Lists flattened).
"""

from kaffinity.load.parse.limits import DEFAULT_LIMITS, Limits, make_room
from kaffinity.load.parse.objects import gc_paused, parse
from kaffinity.load.parse.reader import compose_nodes, parse_data
from kaffinity.load.parse.results import (
    MANIFEST_SUFFIXES,
    STDIN,
    STDIN_NAME,
    LoadError,
    LoadProblem,
    SourceFile,
    decode,
)
from kaffinity.load.parse.scalars import resolve_plain

__all__ = [
    "DEFAULT_LIMITS",
    "MANIFEST_SUFFIXES",
    "STDIN",
    "STDIN_NAME",
    "Limits",
    "LoadError",
    "LoadProblem",
    "SourceFile",
    "compose_nodes",
    "decode",
    "gc_paused",
    "make_room",
    "parse",
    "parse_data",
    "resolve_plain",
]
