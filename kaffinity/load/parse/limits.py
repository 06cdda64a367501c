"""What one input may cost (:class:`Limits`), and room for data nested as deep as they allow:
the interpreter's recursion limit and the C stack (:func:`make_room`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limits:
    """What one input may cost (``limits:`` in ``.kaffinity.yaml``, ``--max-file-size``).

    Past a limit, the input is a ``parse-error`` naming the limit; the other files are linted.
    """

    #: Bytes per file (or stdin). Parsing costs about 5x a file's size in memory, and the largest
    #: real manifests (CRD bundles) are a few MB; a `kubectl get -o yaml` dump may need more.
    file_size: int = 32 * 1024 * 1024
    #: Levels of nesting: no manifest comes close, and libyaml's composer recurses in C.
    depth: int = 400
    #: Nodes that aliases may add to one file, its documents together: an alias bomb ("billion
    #: laughs") is refused, as go-yaml refuses "excessive aliasing". Per file, not per document
    #: (go-yaml's count): every node an alias adds is walked by the schema and the rules, so
    #: many documents each under a per-document limit made a 224 KB file cost 80 s.
    alias_nodes: int = 1_000_000
    #: Pods one placement may create (replicas, Job parallelism, one DaemonSet pod per eligible
    #: node, summed over the workloads of a deployment unit): past it the unit is not placed.
    #: Kubernetes supports "no more than 150,000 total pods" ("Considerations for large clusters").
    pods: int = 150_000
    #: Nodes a cluster file may declare (Node objects and ClusterTopology pools, in total): 5,000
    #: is Kubernetes' documented largest cluster ("Considerations for large clusters"); the
    #: default leaves a margin for the few clusters run past it.
    nodes: int = 15_000
    #: Findings one run may report; past it, the rest are dropped and a notice says so.
    findings: int = 100_000


DEFAULT_LIMITS = Limits()


@contextmanager
def _frames_for(levels: int) -> Iterator[None]:
    """Room on the interpreter's stack for :class:`_Builder` to recurse ``levels`` deep (two
    frames a level): a file under ``limits.depth`` is never refused as too deep because of the
    interpreter's default recursion limit (1,000 frames: about 480 levels). The limit is put
    back afterwards; ``limits.depth`` itself is capped (10,000) well inside the C stack."""
    needed = 2 * levels + _FRAMES_IN_USE
    before = sys.getrecursionlimit()
    if needed <= before:
        yield
        return
    sys.setrecursionlimit(needed)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


#: Frames below the builder: the command, the engine, a worker or a test runner.
_FRAMES_IN_USE = 400
#: Frames that one level of nesting may take in code kaffinity does not own that walks parsed
#: data recursively: jsonschema validates through three to five generator frames a level (more
#: through a ``$ref``), ``repr`` (jsonschema's messages) one, cel-expr-python's conversion and
#: the JSON encoder count their C levels against the same limit. kaffinity's own walks over
#: parsed data are loops.
_FRAMES_PER_LEVEL = 8


def make_room(depth: int = DEFAULT_LIMITS.depth) -> None:
    """Raise the interpreter's recursion limit (never lower it) so that data nested as deep as
    the loader accepts (``limits.depth``) cannot exhaust it in any stage: without this, a
    manifest 350 levels deep made a policy's validation fail with RecursionError (the default
    limit is 1,000 frames). On Python 3.11 and later a call between Python functions takes no C
    stack, and ``limits.depth`` is capped at 10,000; what C code needs is made room for too
    (:func:`_c_stack_for`)."""
    needed = _FRAMES_PER_LEVEL * depth + _FRAMES_IN_USE
    if needed > sys.getrecursionlimit():
        sys.setrecursionlimit(needed)
    _c_stack_for(depth)


#: C stack a level of nesting may take in C and C++ code that recurses over the data:
#: cel-expr-python converts an object to CEL values recursively (measured: about 1.6 KiB a
#: level, so the usual 8 MiB stack ended the process with SIGSEGV near 5,000 levels), as do
#: ``repr`` and generators resumed in C (jsonschema).
_STACK_PER_LEVEL = 4 << 10
_STACK_BASE = 8 << 20


def _c_stack_for(depth: int) -> None:
    """Let the main thread's C stack grow as deep as ``depth`` levels need. Linux checks a
    growing stack against the soft ``RLIMIT_STACK`` when it grows, so raising the limit (up
    to the hard one) takes effect at once; elsewhere, or when it cannot be raised, it stays."""
    try:
        import resource
    except ImportError:  # Windows: the stack size is fixed in the executable
        return
    needed = _STACK_BASE + _STACK_PER_LEVEL * depth
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
        if soft != resource.RLIM_INFINITY and soft < needed:
            wanted = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
            resource.setrlimit(resource.RLIMIT_STACK, (wanted, hard))
    except (ValueError, OSError):
        return
