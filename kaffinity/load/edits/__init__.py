"""Minimal text edits to YAML files: every byte outside the inserted text stays as it was.

Dumping a file back (even with ruamel's round-trip mode) re-indents and re-quotes most real
manifests, so ``kaffinity fix`` and ``kaffinity expand --format yaml`` splice text instead. The
node to change is found with ruamel's C composer, whose marks give exact character offsets, and
the new text is rendered to match its surroundings:

- A new entry of a *block mapping* goes on new line(s) right after the line on which the last
  entry's content ends (a trailing comment stays on that line; comment and blank lines after it
  stay after the insertion), at the column of the mapping's keys. A block scalar (``|``, ``>``)
  as last value ends at the start of a later line: the entry is inserted there.
- New items of a *block sequence* go on new lines after the last item's content, their dash at
  the column of the existing dashes, content after ``- ``.
- In *flow* collections ``, key: value`` / ``, item`` is inserted right after the last value;
  an empty ``{}`` / ``[]`` is filled in (``{key: value}``). An empty ``{}`` that is the value of
  a block mapping key on the same line (``labelSelector: {}``) becomes a block mapping on the
  following lines, one mapping step deeper than the key.

Rendering conventions for new values:

- Block context: a mapping is written as ``key: value`` lines, nested mappings indented by the
  document's mapping step (detected, default 2); a list of scalars given directly as the new
  entry's value is written in flow style (``matchLabelKeys: [pod-template-hash]``), every other
  list as ``- item`` lines; a block list under a key has its dashes at the key's column
  (kubectl style) or indented, as the document's existing block lists under keys mostly are
  (default: the key's column). Mappings in lists are compact: ``- key: app`` with the other
  keys aligned after the ``- ``. Empty collections are ``{}`` / ``[]``.
- Flow context: ``{k: v, ...}`` / ``[a, b]``; in a JSON document (flow root) or a flow
  collection whose existing scalars are double-quoted, everything is written as JSON.
- Scalars are plain when that is unambiguous (it reads back as the same string under YAML 1.1
  as Kubernetes reads it, and holds no indicator character), otherwise double-quoted.
- Newlines follow the file (``\\r\\n`` if the line written after uses it); a file without a
  trailing newline keeps having none.
- ``comment`` becomes a trailing `` # comment`` on the first inserted line; flow insertions have
  no line of their own and drop it.

Every edit is checked before it is returned: the edited document must load (with the project's
loader) as exactly the original data plus the change, or the function returns None. Only that
document is loaded again, so that a file with many edits costs linear time. Edits are
refused (None) also when the path breaks, a node on the way or at the end is shared through a
YAML alias, the target has a merge key (``<<``), is of the wrong kind, or the layout is odd.
A document that is a Kubernetes object (``apiVersion`` and ``kind``) is checked by loading it
the way ``kaffinity lint`` does; a document the loader keeps no object of (a JSON 6902 patch's operations,
a chart's values file) by the same loader's builder, every document kept.

The package: :mod:`~kaffinity.load.edits.text` (:class:`Edit`, :func:`apply`),
:mod:`~kaffinity.load.edits.nodes` (finding the node, a document's layout),
:mod:`~kaffinity.load.edits.writer` (new values in the document's style),
:mod:`~kaffinity.load.edits.verify` (every edit checked) and
:mod:`~kaffinity.load.edits.entries` (the edits themselves).
"""

from kaffinity.load.edits.entries import add_entry, append_items, fill_null
from kaffinity.load.edits.nodes import YamlNode, compose, find_node
from kaffinity.load.edits.text import Edit, apply, line_of
from kaffinity.load.edits.verify import same_data, verify

__all__ = [
    "Edit",
    "YamlNode",
    "add_entry",
    "append_items",
    "apply",
    "compose",
    "fill_null",
    "find_node",
    "line_of",
    "same_data",
    "verify",
]
